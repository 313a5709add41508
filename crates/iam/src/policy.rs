//! IAM policy documents: decoding what IAM returns, and the canonical form in which two
//! documents that mean the same are equal.
//!
//! The equivalence is the one the Terraform AWS provider uses (awspolicyequivalence):
//! statements are a multiset; a string equals a one-element list; `Action`, `NotAction`,
//! `Resource`, `NotResource` and each `Principal` and `Condition` value list are sets;
//! `Effect` is case-insensitive; an account id principal equals its `:root` ARN; condition
//! values compare as strings. `Version`, `Sid` and `Id` compare exactly, and the case of
//! action names counts.

use reconcile_core::json::{sort_set, to_compact};
use serde_json::{Map, Value};

/// Undoes IAM's percent-encoding (RFC 3986, so `+` stays `+`). The Rust SDK hands the encoded
/// text through unchanged.
pub fn percent_decode(text: &str) -> String {
    let hex = |b: u8| (b as char).to_digit(16);
    let mut decoded = Vec::with_capacity(text.len());
    // Walks the bytes by slice pattern, so every step consumes input: no index to get wrong,
    // and a hostile string cannot make it loop.
    let mut rest = text.as_bytes();
    while let Some((&first, tail)) = rest.split_first() {
        let escape = match tail {
            [high, low, after @ ..] if first == b'%' => hex(*high).zip(hex(*low)).map(|pair| (pair, after)),
            _ => None,
        };
        match escape {
            // Two hex digits make at most 255: the byte always fits.
            Some(((high, low), after)) => {
                decoded.push((high * 16 + low) as u8);
                rest = after;
            }
            None => {
                decoded.push(first);
                rest = tail;
            }
        }
    }
    String::from_utf8(decoded).unwrap_or_else(|_| text.to_owned())
}

/// Parses a policy as IAM returns it (percent-encoded or not) into canonical form. Text that is
/// not JSON is kept as a string, so it shows as a difference instead of failing the plan.
pub fn canonical_text(text: &str, partition: &str) -> Value {
    let decoded = if text.trim_start().starts_with('{') { text.to_owned() } else { percent_decode(text) };
    match serde_json::from_str::<Value>(&decoded) {
        Ok(value) => canonical(&value, partition),
        Err(_) => Value::String(decoded),
    }
}

/// The canonical form of a policy document.
pub fn canonical(policy: &Value, partition: &str) -> Value {
    let Value::Object(policy) = policy else { return policy.clone() };
    let mut policy = policy.clone();
    if let Some(statements) = policy.get_mut("Statement") {
        let mut list = match statements.take() {
            Value::Array(list) => list,
            single => vec![single],
        };
        for statement in &mut list {
            if let Value::Object(statement) = statement {
                canonical_statement(statement, partition);
            }
        }
        // A multiset: sorted, duplicates kept.
        list.sort_by_key(to_compact);
        *statements = Value::Array(list);
    }
    Value::Object(policy)
}

fn canonical_statement(statement: &mut Map<String, Value>, partition: &str) {
    for key in ["Action", "NotAction", "Resource", "NotResource"] {
        if let Some(value) = statement.get_mut(key) {
            *value = string_set(value.take());
        }
    }
    if let Some(Value::String(effect)) = statement.get_mut("Effect") {
        match effect.to_ascii_lowercase().as_str() {
            "allow" => *effect = "Allow".to_owned(),
            "deny" => *effect = "Deny".to_owned(),
            _ => {}
        }
    }
    for key in ["Principal", "NotPrincipal"] {
        if let Some(Value::Object(principals)) = statement.get_mut(key) {
            for (kind, value) in principals.iter_mut() {
                let mut set = string_set(value.take());
                if kind == "AWS"
                    && let Value::Array(items) = &mut set
                {
                    for item in items.iter_mut() {
                        if let Value::String(id) = item
                            && id.len() == 12
                            && id.bytes().all(|b| b.is_ascii_digit())
                        {
                            *item = Value::String(format!("arn:{partition}:iam::{id}:root"));
                        }
                    }
                    sort_set(items);
                }
                *value = set;
            }
        }
    }
    if let Some(Value::Object(conditions)) = statement.get_mut("Condition") {
        for operator in conditions.values_mut() {
            if let Value::Object(keys) = operator {
                for value in keys.values_mut() {
                    *value = string_set(value.take());
                }
            }
        }
    }
}

/// A string, number, bool or list of them as a sorted list of strings.
fn string_set(value: Value) -> Value {
    let items = match value {
        Value::Array(items) => items,
        single => vec![single],
    };
    let mut items: Vec<Value> = items
        .into_iter()
        .map(|item| match item {
            Value::Bool(b) => Value::String(b.to_string()),
            Value::Number(n) => Value::String(n.to_string()),
            other => other,
        })
        .collect();
    sort_set(&mut items);
    Value::Array(items)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn same(a: &str, b: &str) -> bool {
        canonical_text(a, "aws") == canonical_text(b, "aws")
    }

    const POLICY: &str = r#"{"Version":"2012-10-17","Statement":[
        {"Sid":"Push","Effect":"Allow","Action":["ecr:PutImage","ecr:BatchGetImage"],"Resource":["arn:aws:ecr:us-east-1:123456789012:repository/a","arn:aws:ecr:us-east-1:123456789012:repository/b"]},
        {"Effect":"Allow","Action":"ecr:GetAuthorizationToken","Resource":"*"}]}"#;

    #[test]
    fn percent_decoding_keeps_plus_signs() {
        assert_eq!(percent_decode("%7B%22a%22%3A%20%22b+c%2A%22%7D"), r#"{"a": "b+c*"}"#);
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%4"), "%4", "a cut-off escape stays as it is");
        assert_eq!(percent_decode("a%41"), "aA", "an escape at the very end decodes");
        assert_eq!(percent_decode("%zz%2"), "%zz%2");
    }

    #[test]
    fn encoded_pretty_printed_and_reordered_documents_are_equal() {
        let reordered = r#"{
            "Statement": {"Resource": ["*"], "Action": ["ecr:GetAuthorizationToken"], "Effect": "allow"},
            "Version": "2012-10-17"
        }"#;
        let reordered: Value = serde_json::from_str(reordered).unwrap();
        let mut full = canonical(&serde_json::from_str(POLICY).unwrap(), "aws");
        let second = json!({"Sid":"Push","Effect":"ALLOW","Resource":["arn:aws:ecr:us-east-1:123456789012:repository/b","arn:aws:ecr:us-east-1:123456789012:repository/a"],"Action":["ecr:BatchGetImage","ecr:PutImage","ecr:PutImage"]});
        let expected =
            canonical(&json!({"Version": "2012-10-17", "Statement": [second, reordered["Statement"].clone()]}), "aws");
        assert_eq!(full, expected);
        full["Version"] = json!("2008-10-17");
        assert_ne!(full, expected, "Version compares exactly");

        let encoded: String = POLICY
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        assert!(same(&encoded, POLICY));
    }

    #[test]
    fn principals_and_conditions_are_sets_of_strings() {
        let a = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"123456789012","Service":["b.amazonaws.com","a.amazonaws.com"]},"Action":"sts:AssumeRole","Condition":{"Bool":{"aws:SecureTransport":true}}}]}"#;
        let b = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["arn:aws:iam::123456789012:root"],"Service":["a.amazonaws.com","b.amazonaws.com"]},"Action":["sts:AssumeRole"],"Condition":{"Bool":{"aws:SecureTransport":["true"]}}}]}"#;
        assert!(same(a, b));
    }

    #[test]
    fn effects_compare_without_case_and_deny_is_never_allow() {
        let deny = POLICY.replace(r#""Effect":"Allow","Action":"ecr:Get"#, r#""Effect":"Deny","Action":"ecr:Get"#);
        assert_ne!(deny, POLICY);
        assert!(same(&deny, &deny.replace(r#""Effect":"Deny""#, r#""Effect":"deny""#)));
        assert!(same(&deny, &deny.replace(r#""Effect":"Deny""#, r#""Effect":"DENY""#)));
        assert!(!same(&deny, POLICY));
    }

    #[test]
    fn a_missing_action_or_another_sid_is_a_difference() {
        assert!(!same(POLICY, &POLICY.replace(r#""ecr:PutImage","#, "")));
        assert!(!same(POLICY, &POLICY.replace(r#""Sid":"Push""#, r#""Sid":"Pull""#)));
        assert!(!same(POLICY, &POLICY.replace("ecr:PutImage", "ECR:PutImage")));
        assert!(!same(POLICY, &POLICY.replace(r#""Resource":"*""#, r#""Resource":"arn:aws:s3:::x""#)));
    }
}
