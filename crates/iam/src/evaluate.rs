//! IAM's evaluation of identity-based policies, for one request: whether a principal whose
//! policies (and permissions boundary) are these may make it.
//!
//! What AWS documents as its policy evaluation logic, for requests inside one account: an
//! explicit `Deny` in any policy wins; otherwise the request needs an `Allow` in an identity
//! policy and, when the principal has a permissions boundary, an `Allow` in the boundary too
//! (the effective permissions are the intersection). A statement applies when its `Action` (or
//! `NotAction`), its `Resource` (or `NotResource`) and every condition match.
//!
//! Used to prove what derived policies can and cannot do (the escalation analysis, `reach`) and,
//! in the tests, to refuse at the emulator what a role's policy does not allow. So where it does
//! not know something (a condition operator it does not read, such as the numeric and date
//! ones), it answers the way that allows the most: an `Allow` whose condition it cannot read is
//! taken to apply, a `Deny` whose condition it cannot read is taken not to. Nothing it says a
//! policy refuses rests on a condition it did not read.

use std::collections::BTreeMap;

use serde_json::Value;

/// The request context: condition keys (compared without regard to case, as IAM does) and their
/// values. A key that is absent is absent from the request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Context {
    keys: BTreeMap<String, Vec<String>>,
}

impl Context {
    pub fn new() -> Context {
        Context::default()
    }

    /// With `key` set to `values` (several for a multivalued key such as `aws:TagKeys`).
    pub fn with(mut self, key: &str, values: &[&str]) -> Context {
        self.keys.insert(key.to_ascii_lowercase(), values.iter().map(|v| (*v).to_owned()).collect());
        self
    }

    fn get(&self, key: &str) -> Option<&[String]> {
        self.keys.get(&key.to_ascii_lowercase()).map(Vec::as_slice)
    }
}

/// One request: an action (`iam:PutRolePolicy`) on a resource ARN, in a context.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub action: &'a str,
    pub resource: &'a str,
    pub context: &'a Context,
}

/// What IAM answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allowed,
    /// A statement denies it.
    Denied,
    /// Nothing allows it (or the boundary does not).
    NotAllowed,
}

/// A principal, as IAM sees it for authorization: its identity policies and its permissions
/// boundary.
#[derive(Debug, Clone, Copy)]
pub struct Principal<'a> {
    pub policies: &'a [Value],
    pub boundary: Option<&'a Value>,
}

impl Principal<'_> {
    pub fn decide(&self, request: Request<'_>) -> Decision {
        let documents = self.policies.iter().chain(self.boundary);
        if documents.into_iter().any(|policy| applies(policy, "Deny", request)) {
            return Decision::Denied;
        }
        let allowed = self.policies.iter().any(|policy| applies(policy, "Allow", request))
            && self.boundary.is_none_or(|boundary| applies(boundary, "Allow", request));
        if allowed { Decision::Allowed } else { Decision::NotAllowed }
    }

    pub fn allows(&self, request: Request<'_>) -> bool {
        self.decide(request) == Decision::Allowed
    }
}

/// Whether a statement of `policy` with this effect applies to `request`.
fn applies(policy: &Value, effect: &str, request: Request<'_>) -> bool {
    statements(policy).any(|statement| {
        statement.get("Effect").and_then(Value::as_str).is_some_and(|e| e.eq_ignore_ascii_case(effect))
            && names(statement, "Action", "NotAction", request.action, |pattern, action| {
                matches(&pattern.to_ascii_lowercase(), &action.to_ascii_lowercase())
            })
            && names(statement, "Resource", "NotResource", request.resource, matches)
            && match conditions(statement.get("Condition"), request.context) {
                Truth::True => true,
                Truth::False => false,
                // Read the way that allows the most.
                Truth::Unknown => effect == "Allow",
            }
    })
}

fn statements(policy: &Value) -> impl Iterator<Item = &serde_json::Map<String, Value>> {
    let list: Vec<&Value> = match policy.get("Statement") {
        Some(Value::Array(list)) => list.iter().collect(),
        Some(one) => vec![one],
        None => Vec::new(),
    };
    list.into_iter().filter_map(Value::as_object)
}

/// Whether the statement's `positive` element names `value`, or its `negative` one does not.
/// A statement with neither applies to nothing.
fn names(
    statement: &serde_json::Map<String, Value>,
    positive: &str,
    negative: &str,
    value: &str,
    matches: impl Fn(&str, &str) -> bool,
) -> bool {
    if let Some(patterns) = statement.get(positive) {
        return strings(patterns).iter().any(|pattern| matches(pattern, value));
    }
    if let Some(patterns) = statement.get(negative) {
        return !strings(patterns).iter().any(|pattern| matches(pattern, value));
    }
    false
}

fn strings(value: &Value) -> Vec<String> {
    match value {
        Value::Array(items) => items.iter().flat_map(strings).collect(),
        Value::String(text) => vec![text.clone()],
        Value::Bool(flag) => vec![flag.to_string()],
        Value::Number(number) => vec![number.to_string()],
        _ => Vec::new(),
    }
}

/// IAM's wildcard match: `*` any run of characters (none included), `?` any one character.
pub fn matches(pattern: &str, text: &str) -> bool {
    let (pattern, text): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    // The classic two-cursor walk, with one backtrack point: linear in practice, never
    // exponential, whatever the pattern.
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == '?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((star_p, star_t)) => {
                    p = star_p + 1;
                    t = star_t + 1;
                    star = Some((star_p, star_t + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|c| *c == '*')
}

/// Three-valued: a condition this evaluator cannot read is neither true nor false.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Truth {
    True,
    False,
    Unknown,
}

impl Truth {
    fn and(self, other: Truth) -> Truth {
        match (self, other) {
            (Truth::False, _) | (_, Truth::False) => Truth::False,
            (Truth::True, Truth::True) => Truth::True,
            _ => Truth::Unknown,
        }
    }

    fn of(value: bool) -> Truth {
        if value { Truth::True } else { Truth::False }
    }
}

/// Every operator block, and every key in it, must hold.
fn conditions(condition: Option<&Value>, context: &Context) -> Truth {
    let Some(condition) = condition else { return Truth::True };
    let Some(blocks) = condition.as_object() else { return Truth::Unknown };
    let mut truth = Truth::True;
    for (operator, keys) in blocks {
        let Some(keys) = keys.as_object() else { return Truth::Unknown };
        for (key, values) in keys {
            truth = truth.and(condition_holds(operator, context.get(key), &strings(values)));
        }
    }
    truth
}

/// One operator on one key: `ForAnyValue:` and `ForAllValues:` for multivalued keys,
/// `...IfExists` (true when the key is absent), and negated operators, which hold when the key
/// is absent.
fn condition_holds(operator: &str, present: Option<&[String]>, wanted: &[String]) -> Truth {
    let (set, operator) = match operator.split_once(':') {
        Some((set, operator)) => (Some(set), operator),
        None => (None, operator),
    };
    let (operator, if_exists) = match operator.strip_suffix("IfExists") {
        Some(base) => (base, true),
        None => (operator, false),
    };
    if operator == "Null" {
        // `"true"`: the key must be absent.
        let absent = present.is_none_or(<[String]>::is_empty);
        return Truth::of(wanted.iter().any(|w| w.eq_ignore_ascii_case(&absent.to_string())));
    }
    let Some((compare, negated)) = comparison(operator) else { return Truth::Unknown };
    let Some(present) = present else {
        // `ForAllValues` holds of a key the request does not carry, as of an empty set (IAM's
        // documented trap, which is why a policy pairs it with another condition on the key).
        return Truth::of(if_exists || (negated && set.is_none()) || set == Some("ForAllValues"));
    };
    let one = |value: &str| wanted.iter().any(|w| compare(w, value));
    match set {
        // Some value of the request's matches (for a negated operator: some does not).
        Some("ForAnyValue") => Truth::of(present.iter().any(|v| one(v) != negated)),
        // Every value of the request's matches (an empty set matches).
        Some("ForAllValues") => Truth::of(present.iter().all(|v| one(v) != negated)),
        Some(_) => Truth::Unknown,
        None => {
            let matched = present.iter().any(|v| one(v));
            Truth::of(matched != negated)
        }
    }
}

type Compare = fn(&str, &str) -> bool;

/// The operators this evaluator reads: the comparison of a policy's value with a request's, and
/// whether the operator is the negation of it.
fn comparison(operator: &str) -> Option<(Compare, bool)> {
    let exactly: Compare = |wanted, value| wanted == value;
    let ignoring_case: Compare = |wanted, value| wanted.eq_ignore_ascii_case(value);
    let like: Compare = |wanted, value| matches(wanted, value);
    let boolean: Compare = |wanted, value| wanted.eq_ignore_ascii_case(value);
    Some(match operator {
        "StringEquals" | "ArnEquals" => (exactly, false),
        "StringNotEquals" | "ArnNotEquals" => (exactly, true),
        "StringEqualsIgnoreCase" => (ignoring_case, false),
        "StringNotEqualsIgnoreCase" => (ignoring_case, true),
        "StringLike" | "ArnLike" => (like, false),
        "StringNotLike" | "ArnNotLike" => (like, true),
        "Bool" => (boolean, false),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request<'a>(action: &'a str, resource: &'a str, context: &'a Context) -> Request<'a> {
        Request { action, resource, context }
    }

    #[test]
    fn wildcards_match_as_iam_matches_them() {
        for (pattern, text) in [
            ("*", ""),
            ("*", "anything"),
            ("arn:aws:iam::1:role/*", "arn:aws:iam::1:role/a/b"),
            ("a?c", "abc"),
            ("a*b*c", "aXXbYYc"),
            ("*-cache", "pytorch-cache"),
        ] {
            assert!(matches(pattern, text), "{pattern} {text}");
        }
        for (pattern, text) in [("a?c", "ac"), ("a*b", "ba"), ("role/x", "role/xy"), ("", "x"), ("*-cache", "cache")] {
            assert!(!matches(pattern, text), "{pattern} {text}");
        }
        // No exponential walk: a pathological pattern answers at once.
        let long = "a".repeat(10_000);
        assert!(!matches(&format!("{}b", "*a".repeat(50)), &long));
    }

    #[test]
    fn a_deny_wins_an_allow_is_needed_and_a_boundary_intersects() {
        let policy = json!({ "Statement": [
            { "Effect": "Allow", "Action": "iam:*", "Resource": "*" },
            { "Effect": "Deny", "Action": ["iam:UpdateAssumeRolePolicy"], "Resource": "arn:aws:iam::1:role/*" },
        ]});
        let boundary = json!({ "Statement": { "Effect": "Allow", "Action": "iam:Get*", "Resource": "*" } });
        let none = Context::new();
        let alone = Principal { policies: std::slice::from_ref(&policy), boundary: None };
        assert_eq!(alone.decide(request("iam:PutRolePolicy", "arn:aws:iam::1:role/r", &none)), Decision::Allowed);
        assert_eq!(alone.decide(request("IAM:putrolepolicy", "arn:aws:iam::1:role/r", &none)), Decision::Allowed);
        assert_eq!(
            alone.decide(request("iam:UpdateAssumeRolePolicy", "arn:aws:iam::1:role/r", &none)),
            Decision::Denied
        );
        assert_eq!(alone.decide(request("s3:GetObject", "arn:aws:s3:::b/k", &none)), Decision::NotAllowed);
        let bounded = Principal { policies: std::slice::from_ref(&policy), boundary: Some(&boundary) };
        assert_eq!(bounded.decide(request("iam:PutRolePolicy", "arn:aws:iam::1:role/r", &none)), Decision::NotAllowed);
        assert_eq!(bounded.decide(request("iam:GetRole", "arn:aws:iam::1:role/r", &none)), Decision::Allowed);
        // A deny in the boundary denies.
        let denying = json!({ "Statement": [{ "Effect": "Deny", "Action": "*", "Resource": "*" }] });
        let denied = Principal { policies: std::slice::from_ref(&policy), boundary: Some(&denying) };
        assert_eq!(denied.decide(request("iam:GetRole", "r", &none)), Decision::Denied);
    }

    #[test]
    fn not_action_and_not_resource_apply_to_everything_else() {
        let policy = json!({ "Statement": [
            { "Effect": "Allow", "NotAction": "iam:*", "NotResource": "arn:aws:s3:::secret/*" },
        ]});
        let none = Context::new();
        let principal = Principal { policies: std::slice::from_ref(&policy), boundary: None };
        assert!(principal.allows(request("s3:GetObject", "arn:aws:s3:::open/k", &none)));
        assert!(!principal.allows(request("s3:GetObject", "arn:aws:s3:::secret/k", &none)));
        assert!(!principal.allows(request("iam:GetRole", "arn:aws:s3:::open/k", &none)));
        // A statement naming neither applies to nothing.
        let empty = json!({ "Statement": [{ "Effect": "Allow", "Resource": "*" }] });
        assert!(!Principal { policies: std::slice::from_ref(&empty), boundary: None }.allows(request(
            "s3:GetObject",
            "x",
            &none
        )));
    }

    #[test]
    fn conditions_are_read_with_iams_rules_for_absent_keys_sets_and_cases() {
        let boundary = "arn:aws:iam::1:policy/b";
        let policy = json!({ "Statement": [{
            "Effect": "Allow", "Action": "iam:PutRolePolicy", "Resource": "*",
            "Condition": { "ArnEquals": { "iam:PermissionsBoundary": boundary } },
        }]});
        let principal = Principal { policies: std::slice::from_ref(&policy), boundary: None };
        let with = Context::new().with("IAM:PermissionsBoundary", &[boundary]);
        let other = Context::new().with("iam:PermissionsBoundary", &["arn:aws:iam::1:policy/other"]);
        assert!(principal.allows(request("iam:PutRolePolicy", "r", &with)));
        assert!(!principal.allows(request("iam:PutRolePolicy", "r", &other)));
        assert!(!principal.allows(request("iam:PutRolePolicy", "r", &Context::new())), "absent: no match");

        let holds = |operator: &str, present: Option<&[&str]>, wanted: &[&str]| {
            let present: Option<Vec<String>> = present.map(|p| p.iter().map(|v| (*v).to_owned()).collect());
            let wanted: Vec<String> = wanted.iter().map(|v| (*v).to_owned()).collect();
            condition_holds(operator, present.as_deref(), &wanted)
        };
        assert_eq!(holds("StringNotEquals", None, &["x"]), Truth::True, "a negated operator holds when absent");
        assert_eq!(holds("StringEqualsIfExists", None, &["x"]), Truth::True);
        assert_eq!(holds("StringEquals", Some(&["X"]), &["x"]), Truth::False);
        assert_eq!(holds("StringEqualsIgnoreCase", Some(&["X"]), &["x"]), Truth::True);
        assert_eq!(holds("StringNotEqualsIgnoreCase", Some(&["X"]), &["x"]), Truth::False);
        assert_eq!(holds("StringLike", Some(&["repo:o/r:pull_request"]), &["repo:o/*"]), Truth::True);
        assert_eq!(holds("StringNotLike", Some(&["repo:o/r"]), &["repo:o/*"]), Truth::False);
        assert_eq!(holds("ArnNotEquals", Some(&["a"]), &["b"]), Truth::True);
        assert_eq!(holds("Bool", Some(&["TRUE"]), &["true"]), Truth::True);
        assert_eq!(holds("Null", None, &["true"]), Truth::True);
        assert_eq!(holds("Null", Some(&["v"]), &["true"]), Truth::False);
        assert_eq!(holds("Null", Some(&["v"]), &["false"]), Truth::True);
        assert_eq!(holds("ForAnyValue:StringEquals", Some(&["a", "b"]), &["b"]), Truth::True);
        assert_eq!(holds("ForAllValues:StringEquals", Some(&["a", "b"]), &["b"]), Truth::False);
        assert_eq!(holds("ForAllValues:StringEquals", Some(&[]), &["b"]), Truth::True);
        assert_eq!(holds("ForAllValues:StringEquals", None, &["b"]), Truth::True, "absent: an empty set");
        assert_eq!(holds("ForAllValues:StringNotEquals", None, &["b"]), Truth::True);
        assert_eq!(holds("ForAnyValue:StringEquals", None, &["b"]), Truth::False);
        assert_eq!(holds("ForAnyValue:StringEquals", Some(&["b"]), &["b"]), Truth::True);
        assert_eq!(holds("ForAnyValue:StringEquals", Some(&["a"]), &["b"]), Truth::False);
        assert_eq!(holds("ForAllValues:StringEquals", Some(&["b"]), &["b"]), Truth::True);
        assert_eq!(holds("ForAllValues:StringNotEquals", Some(&["a"]), &["b"]), Truth::True);
        assert_eq!(holds("ForAnyValue:StringEquals", None, &["b"]), Truth::False);
        assert_eq!(holds("ForAnyValue:StringNotEquals", Some(&["a", "b"]), &["b"]), Truth::True);
        assert_eq!(holds("ForSomeValue:StringEquals", Some(&["a"]), &["a"]), Truth::Unknown);
        assert_eq!(holds("NumericLessThan", Some(&["1"]), &["2"]), Truth::Unknown);
    }

    #[test]
    fn what_it_cannot_read_it_reads_the_way_that_allows_most() {
        let policy = json!({ "Statement": [
            { "Effect": "Allow", "Action": "s3:GetObject", "Resource": "*",
              "Condition": { "NumericLessThan": { "s3:max-keys": "10" } } },
            { "Effect": "Deny", "Action": "s3:GetObject", "Resource": "*",
              "Condition": { "DateGreaterThan": { "aws:CurrentTime": "2020-01-01T00:00:00Z" } } },
        ]});
        let principal = Principal { policies: std::slice::from_ref(&policy), boundary: None };
        assert!(principal.allows(request("s3:GetObject", "arn:aws:s3:::b/k", &Context::new())));
        // A condition that is not an object cannot be read either.
        let odd = json!({ "Statement": [{ "Effect": "Deny", "Action": "*", "Resource": "*", "Condition": "x" }] });
        let both = [policy, odd];
        assert!(Principal { policies: &both, boundary: None }.allows(request("s3:GetObject", "k", &Context::new())));
        // A known condition that fails still decides.
        let tagged = json!({ "Statement": [{ "Effect": "Allow", "Action": "ecr:PutImage", "Resource": "*",
            "Condition": { "StringEquals": { "aws:ResourceTag/managed-by": "reconcile", "aws:RequestTag/x": "y" } } }]});
        let principal = Principal { policies: std::slice::from_ref(&tagged), boundary: None };
        let half = Context::new().with("aws:ResourceTag/managed-by", &["reconcile"]);
        assert!(!principal.allows(request("ecr:PutImage", "r", &half)), "every key must hold");
        let whole = half.with("aws:RequestTag/x", &["y"]);
        assert!(principal.allows(request("ecr:PutImage", "r", &whole)));
    }

    #[test]
    fn condition_values_may_be_booleans_or_numbers_and_every_true_key_is_true() {
        let context = Context::new().with("aws:SecureTransport", &["true"]).with("s3:max-keys", &["5"]);
        let condition = json!({ "Bool": { "aws:SecureTransport": true }, "StringEquals": { "s3:max-keys": 5 } });
        assert_eq!(conditions(Some(&condition), &context), Truth::True);
        let other = Context::new().with("aws:SecureTransport", &["false"]).with("s3:max-keys", &["5"]);
        assert_eq!(conditions(Some(&condition), &other), Truth::False);
        assert_eq!(Truth::True.and(Truth::True), Truth::True);
        assert_eq!(Truth::True.and(Truth::Unknown), Truth::Unknown);
        assert_eq!(Truth::Unknown.and(Truth::False), Truth::False);
    }
}
