//! What a resource policy (an ECR repository's, an S3 bucket's) grants outside the account.
//!
//! Pure and deliberately simple: conditions are not evaluated, so a grant to `*` narrowed by a
//! condition is still reported. That errs towards showing a reviewer a policy they should read.

use serde_json::Value;

/// The principals that `policy` allows and that are not `account_id`: `*`, another account's
/// id or ARN, a federated identity, and everyone an `Allow` with `NotPrincipal` leaves in. AWS
/// service principals (`codebuild.amazonaws.com`) act for this account and are not counted.
pub fn foreign_principals(policy: &Value, account_id: &str) -> Vec<String> {
    let statements = match &policy["Statement"] {
        Value::Array(statements) => statements.iter().collect(),
        statement @ Value::Object(_) => vec![statement],
        _ => Vec::new(),
    };
    let mut foreign = Vec::new();
    for statement in statements.into_iter().filter(|s| s["Effect"] == "Allow") {
        if !statement["NotPrincipal"].is_null() {
            foreign.push("everyone but the NotPrincipal".to_owned());
        }
        match &statement["Principal"] {
            Value::String(principal) if principal == "*" => foreign.push("*".to_owned()),
            Value::Object(principals) => {
                for (kind, value) in principals {
                    let names: Vec<&str> = match value {
                        Value::String(name) => vec![name.as_str()],
                        Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
                        _ => Vec::new(),
                    };
                    for name in names {
                        let outside = match kind.as_str() {
                            "AWS" => name == "*" || account_of(name) != Some(account_id),
                            "Service" => false,
                            _ => true,
                        };
                        if outside {
                            foreign.push(name.to_owned());
                        }
                    }
                }
            }
            _ => {}
        }
    }
    foreign.sort();
    foreign.dedup();
    foreign
}

/// The account of an AWS principal: a bare 12-digit id, or the id in its ARN.
fn account_of(principal: &str) -> Option<&str> {
    if principal.len() == 12 && principal.chars().all(|c| c.is_ascii_digit()) {
        return Some(principal);
    }
    principal.strip_prefix("arn:")?.split(':').nth(3)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(principal: Value) -> Vec<String> {
        let policy = json!({"Statement": [{"Effect": "Allow", "Principal": principal, "Action": "ecr:*"}]});
        foreign_principals(&policy, "123456789012")
    }

    #[test]
    fn grants_outside_the_account_are_found_and_inside_ones_are_not() {
        assert_eq!(check(json!("*")), ["*"]);
        assert_eq!(check(json!({"AWS": "*"})), ["*"]);
        assert_eq!(check(json!({"AWS": "arn:aws:iam::999999999999:root"})), ["arn:aws:iam::999999999999:root"]);
        assert_eq!(check(json!({"AWS": ["999999999999", "123456789012"]})), ["999999999999"]);
        assert_eq!(check(json!({"Federated": "cognito-identity.amazonaws.com"})), ["cognito-identity.amazonaws.com"]);
        assert!(check(json!({"AWS": "arn:aws:iam::123456789012:role/ci"})).is_empty());
        assert!(check(json!({"Service": "codebuild.amazonaws.com"})).is_empty());
        // A bare string principal is `*` or nothing AWS accepts; an ARN written bare is no grant
        // to the world.
        assert!(check(json!("arn:aws:iam::123456789012:root")).is_empty());
        let deny = json!({"Statement": {"Effect": "Deny", "Principal": "*", "Action": "*"}});
        assert!(foreign_principals(&deny, "123456789012").is_empty());
        let not = json!({"Statement": {"Effect": "Allow", "NotPrincipal": {"AWS": "123456789012"}, "Action": "*"}});
        assert_eq!(foreign_principals(&not, "123456789012"), ["everyone but the NotPrincipal"]);
    }

    #[test]
    fn a_bare_principal_is_an_account_only_when_it_is_twelve_digits() {
        assert_eq!(account_of("123456789012"), Some("123456789012"));
        assert_eq!(account_of("abcdefghijkl"), None);
        assert_eq!(account_of("1234567890123"), None);
        assert_eq!(account_of("arn:aws:iam::999999999999:role/x"), Some("999999999999"));
    }
}
