//! Helpers for canonical JSON: the form in which documents are compared, shown and fingerprinted.
//!
//! Whether `serde_json::Map` keeps insertion order depends on a cargo feature that any crate in
//! the build can turn on (the AWS SDK's HTTP client does), so nothing here relies on it: every
//! text form is written with object keys sorted ([`sorted_keys`]). What remains for a canonical
//! form is the order of arrays that AWS treats as sets, which each resource crate knows and
//! sorts with [`sort_set`]. Map equality ignores key order in both feature modes.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// Sorts an array that means a set and drops duplicates, so that order and repetition do not
/// count as a difference.
pub fn sort_set(values: &mut Vec<Value>) {
    values.sort_by_key(to_compact);
    values.dedup();
}

/// The fields of a JSON object built with `json!({...})`.
///
/// # Panics
/// When `value` is not an object, which is a bug in the caller.
pub fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("expected a JSON object, got {other}"),
    }
}

/// What to do to tags to go from `current` to `desired`: keys to remove, and pairs to set.
pub fn tag_changes(
    current: &BTreeMap<String, String>,
    desired: &BTreeMap<String, String>,
) -> (Vec<String>, BTreeMap<String, String>) {
    let remove = current.keys().filter(|k| !desired.contains_key(*k)).cloned().collect();
    let set =
        desired.iter().filter(|(k, v)| current.get(*k) != Some(*v)).map(|(k, v)| (k.clone(), v.clone())).collect();
    (remove, set)
}

/// The value with every object's keys in sorted order, whatever the map type keeps.
pub fn sorted_keys(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k.clone(), sorted_keys(v))).collect::<Map<_, _>>())
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted_keys).collect()),
        scalar => scalar.clone(),
    }
}

/// A JSON document AWS returned as text, in canonical form (keys sorted); text that does not
/// parse is kept as a string, so it still shows, and still differs from anything desired.
pub fn parse_document(text: &str) -> Value {
    serde_json::from_str(text).map_or_else(|_| Value::String(text.to_owned()), |value| sorted_keys(&value))
}

/// The compact canonical text of a value: sorted keys, no whitespace.
pub fn to_compact(value: &Value) -> String {
    serde_json::to_string(&sorted_keys(value)).expect("a serde_json::Value always serializes")
}

/// The pretty canonical text of a value, as shown in plans and diffs and printed as JSON: with
/// the control characters JSON escapes, the bidirectional controls escaped too (a reader's terminal or
/// browser would reorder the text around them), as `\u202e`: the same string to a parser.
pub fn to_pretty(value: &Value) -> String {
    escape_bidi(serde_json::to_string_pretty(&sorted_keys(value)).expect("a serde_json::Value always serializes"))
}

/// JSON text with the bidirectional controls escaped as `\u202e`: the same string to a parser.
pub fn escape_bidi(text: String) -> String {
    if !text.chars().any(crate::text::is_bidi) {
        return text;
    }
    // Outside its strings JSON holds only ASCII, so each is inside a string, where the escape
    // means the character itself.
    text.chars().map(|c| if crate::text::is_bidi(c) { format!("\\u{:04x}", c as u32) } else { c.to_string() }).collect()
}

/// A stable fingerprint of a value's canonical form: SHA-256, in hex.
///
/// Cryptographic because whoever can write the account chooses the values it fingerprints (a policy
/// widened in the drift issue, a resource a saved plan touches), and could find two values of a
/// non-cryptographic hash that collide before writing the one that hides behind the other.
pub fn fingerprint(value: &Value) -> String {
    fingerprint_text(&to_compact(value))
}

/// The same fingerprint of a text, such as a desired-state file.
pub fn fingerprint_text(text: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(text.as_bytes()).iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretty_text_escapes_bidirectional_controls_and_means_the_same() {
        let value = json!({ "b": "x\u{202e}y", "a": 1 });
        let text = to_pretty(&value);
        assert_eq!(text, "{\n  \"a\": 1,\n  \"b\": \"x\\u202ey\"\n}");
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), value);
        assert_eq!(to_pretty(&json!("plain")), "\"plain\"");
    }
    use serde_json::json;

    #[test]
    fn sets_compare_equal_whatever_their_order() {
        let mut a = vec![json!("b"), json!({"x": 1}), json!("a"), json!("b")];
        let mut b = vec![json!("a"), json!("b"), json!({"x": 1})];
        sort_set(&mut a);
        sort_set(&mut b);
        assert_eq!(a, b);
    }

    #[test]
    fn tag_changes_remove_stale_keys_and_set_changed_values() {
        let map = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let (remove, set) =
            tag_changes(&map(&[("a", "1"), ("b", "2"), ("c", "3")]), &map(&[("a", "1"), ("b", "9"), ("d", "4")]));
        assert_eq!(remove, ["c"]);
        assert_eq!(set, map(&[("b", "9"), ("d", "4")]));
    }

    #[test]
    fn text_forms_sort_keys_at_every_depth() {
        let value: Value = serde_json::from_str(r#"{"b": {"z": 1, "a": [{"y": 1, "x": 2}]}, "a": 0}"#).unwrap();
        assert_eq!(to_compact(&value), r#"{"a":0,"b":{"a":[{"x":2,"y":1}],"z":1}}"#);
    }

    #[test]
    fn a_document_aws_returned_is_read_in_canonical_form_or_kept_as_text() {
        assert_eq!(parse_document(r#"{"b": 1, "a": {"d": 2, "c": 3}}"#).to_string(), r#"{"a":{"c":3,"d":2},"b":1}"#);
        assert_eq!(parse_document("not json"), json!("not json"));
    }

    #[test]
    fn the_fingerprint_is_sha_256() {
        // FIPS 180-2's test vectors.
        assert_eq!(fingerprint_text(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(fingerprint_text("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn fingerprints_ignore_key_order_and_see_values() {
        let a: Value = serde_json::from_str(r#"{"a": 1, "b": [1, 2]}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"b": [1, 2], "a": 1}"#).unwrap();
        assert_eq!(fingerprint(&a), fingerprint(&b));
        assert_ne!(fingerprint(&a), fingerprint(&json!({"a": 1, "b": [2, 1]})));
    }
}
