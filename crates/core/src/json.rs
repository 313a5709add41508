//! Helpers for canonical JSON: the form in which documents are compared, shown and fingerprinted.
//!
//! `serde_json::Map` here is a `BTreeMap` (the `preserve_order` feature is off on purpose), so
//! object keys are always sorted; what remains for a canonical form is the order of arrays
//! that AWS treats as sets, which each resource crate knows and sorts with [`sort_set`].

use serde_json::Value;

/// Sorts an array that means a set and drops duplicates, so that order and repetition do not
/// count as a difference.
pub fn sort_set(values: &mut Vec<Value>) {
    values.sort_by_key(to_compact);
    values.dedup();
}

/// The compact canonical text of a value: sorted keys, no whitespace.
pub fn to_compact(value: &Value) -> String {
    serde_json::to_string(value).expect("a serde_json::Value always serializes")
}

/// The pretty canonical text of a value, as shown in plans and diffs.
pub fn to_pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).expect("a serde_json::Value always serializes")
}

/// A short, stable fingerprint of a value's canonical form (64-bit FNV-1a, hex).
///
/// It only needs to notice change between a plan and its apply, not to resist an adversary,
/// so a dependency-free hash is enough.
pub fn fingerprint(value: &Value) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in to_compact(value).bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;
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
    fn fingerprints_ignore_key_order_and_see_values() {
        let a: Value = serde_json::from_str(r#"{"a": 1, "b": [1, 2]}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"b": [1, 2], "a": 1}"#).unwrap();
        assert_eq!(fingerprint(&a), fingerprint(&b));
        assert_ne!(fingerprint(&a), fingerprint(&json!({"a": 1, "b": [2, 1]})));
    }
}
