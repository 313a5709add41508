//! The mark itself: the tag reconcile writes on everything it makes or takes over, and the keys
//! it keeps for itself. What it decides is [`crate::ownership`]'s; this module is below both the
//! desired-state model and the plan model, which read it.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// The tag key of the mark. Its value is the deployment's name.
pub const MARK_KEY: &str = "reconcile:deployment";
/// Tag keys reconcile keeps for itself (compared without case, as IAM's condition keys are):
/// desired.toml's `tags` may not use them.
pub const RESERVED_PREFIX: &str = "reconcile:";
/// The deployment's name when desired.toml does not give one (`deployment = "..."`). Two
/// deployments of reconcile in one account must each name themselves.
pub const DEFAULT_DEPLOYMENT: &str = "default";
/// reconcile's ownership tag before the mark: desired.toml's own `managed-by = reconcile`.
pub const LEGACY_KEY: &str = "managed-by";
pub const LEGACY_VALUE: &str = "reconcile";

/// Whether `key` is one of reconcile's own tag keys, which desired.toml may not write.
pub fn is_reserved(key: &str) -> bool {
    key.get(..RESERVED_PREFIX.len()).is_some_and(|prefix| prefix.eq_ignore_ascii_case(RESERVED_PREFIX))
}

/// `tags` with the deployment's mark.
pub fn marked(tags: &BTreeMap<String, String>, deployment: &str) -> BTreeMap<String, String> {
    let mut tags = tags.clone();
    tags.insert(MARK_KEY.to_owned(), deployment.to_owned());
    tags
}

/// The deployment a resource's canonical fields (desired or observed) are marked as.
pub fn mark(fields: &Map<String, Value>) -> Option<&str> {
    fields.get("tags")?.get(MARK_KEY)?.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_keys_are_reconciles_in_any_case() {
        for key in ["reconcile:deployment", "Reconcile:Deployment", "RECONCILE:anything", "reconcile:"] {
            assert!(is_reserved(key), "{key}");
        }
        for key in ["reconcile", "managed-by", "reconcile-deployment", "my:reconcile:x", "é"] {
            assert!(!is_reserved(key), "{key}");
        }
    }
}
