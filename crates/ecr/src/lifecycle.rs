//! `ecr_lifecycle_policy.<name>`: a repository's lifecycle policy, its one field, its Terraform
//! resource, and its canonical form, in which two policies that mean the same are byte-for-byte
//! equal.
//!
//! | reconcile | provider resource | arguments |
//! |---|---|---|
//! | `ecr_lifecycle_policy.<name>` | `aws_ecr_lifecycle_policy.repository["<name>"]` | `repository`, `policy` (JSON string) |
//!
//! The policy is canonicalized as a JSON value rather than through a struct, so that a field
//! this code does not know about still counts as a difference: the Terraform provider's typed
//! comparison once missed `countNumber` and `tagPatternList` changes that way.

use std::cmp::Ordering;

use reconcile_aws::{absent_if, after_create, failed, gone_if};
use reconcile_core::fields::{Field, Fields};
use reconcile_core::json::sort_set;
use reconcile_core::plan::{Change, Finding, Observed, Severity};
use reconcile_core::terraform::{Provider, ProviderResource, policy_string};
use reconcile_core::{Account, Address, Applied, ReconcileError};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::expiry::Policy;
use crate::{LIVE_TAGGED_EXPIRY, NO_POLICY, REPOSITORY_NOT_FOUND};

/// `ecr_lifecycle_policy.<name>`: the policy document in canonical form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct LifecyclePolicySpec {
    pub policy: Value,
}

/// A lifecycle policy's one field.
pub const FIELDS: Fields =
    Fields { kind: crate::LIFECYCLE_POLICY, fields: &[Field::in_place("policy").set_by(&["PutLifecyclePolicy"])] };

pub(crate) fn terraform(account: &Account, name: &str, fields: &Map<String, Value>) -> Vec<ProviderResource> {
    vec![
        ProviderResource::new(
            Provider::Aws,
            "aws_ecr_lifecycle_policy",
            "repository",
            json!({
                "repository": name,
                "policy": policy_string(fields.get("policy").unwrap_or(&Value::Null)),
            }),
        )
        .referring(crate::repository::TERRAFORM_ADDRESS)
        .computing(json!({ "id": name, "registry_id": account.id })),
    ]
}

impl crate::EcrReconciler {
    pub(crate) async fn observe_lifecycle_policy(
        &self,
        address: &Address,
        name: &str,
    ) -> Result<Observed, ReconcileError> {
        let Some(read) = &self.read_once else { return self.read_lifecycle_policy(address, name).await };
        if let Some(observed) = read.policies.lock().expect("never poisoned").get(name) {
            return Ok(observed.clone());
        }
        let observed = self.read_lifecycle_policy(address, name).await?;
        read.policies.lock().expect("never poisoned").insert(name.to_owned(), observed.clone());
        Ok(observed)
    }

    pub(crate) async fn read_lifecycle_policy(
        &self,
        address: &Address,
        name: &str,
    ) -> Result<Observed, ReconcileError> {
        let response = self.parallelism.send(|| self.client.get_lifecycle_policy().repository_name(name).send()).await;
        match absent_if(response, &NO_POLICY).map_err(failed(Some(address), "read lifecycle policy"))? {
            Some(output) => {
                let text = output.lifecycle_policy_text().unwrap_or_default();
                let spec = LifecyclePolicySpec { policy: canonical_policy_text(text) };
                Ok(Observed::Present(reconcile_core::spec::attributes(&spec)))
            }
            None => Ok(Observed::Absent),
        }
    }

    pub(crate) async fn put_lifecycle_policy(&self, change: &Change) -> Result<Applied, ReconcileError> {
        let address = &change.address;
        let after: LifecyclePolicySpec = reconcile_core::spec::after(change)?;
        let text = reconcile_core::json::to_compact(&after.policy);
        // Right after the repository is created, ECR may not show it everywhere yet.
        let request =
            || self.client.put_lifecycle_policy().repository_name(&address.name).lifecycle_policy_text(&text).send();
        after_create(request, &[REPOSITORY_NOT_FOUND]).await.map_err(failed(Some(address), "put lifecycle policy"))?;
        Ok(Applied::Done)
    }

    pub(crate) async fn delete_lifecycle_policy(&self, address: &Address) -> Result<Applied, ReconcileError> {
        let response = self.client.delete_lifecycle_policy().repository_name(&address.name).send().await;
        gone_if(response, &NO_POLICY).map_err(failed(Some(address), "delete lifecycle policy"))?;
        Ok(Applied::Done)
    }
}

/// D103 when a live lifecycle policy can expire (or archive) tagged images.
pub(crate) fn live_tagged_expiry(address: &Address, policy: &serde_json::Value, declared: bool) -> Option<Finding> {
    let evaluated = Policy::parse(policy).ok()?;
    let rule = evaluated.rule_over_tagged_images()?;
    let fix = if declared {
        "apply replaces it with the declared policy"
    } else {
        "the repository is not in desired.toml: declare it, and apply replaces the policy"
    };
    Some(Finding {
        code: LIVE_TAGGED_EXPIRY.to_owned(),
        severity: Severity::Error,
        address: Some(address.clone()),
        message: format!(
            "the live lifecycle policy's rule {} selects tagged images, so it can expire a live tag such as the \
             nightly's; {fix}",
            rule.priority
        ),
        overridden_by: None,
    })
}

/// Canonicalizes a lifecycle policy:
/// - rules sorted by `rulePriority` (ECR reorders them itself);
/// - `tagPrefixList` and `tagPatternList` compared as sets, and an empty list equal to none;
/// - absent optional fields equal to their defaults: `storageClass` `standard`, empty `description`;
/// - object keys sorted, whitespace gone (the serialization does that).
pub fn canonical_policy(policy: &Value) -> Value {
    let Value::Object(policy) = policy else {
        return policy.clone();
    };
    let mut policy = policy.clone();
    if let Some(Value::Array(rules)) = policy.get_mut("rules") {
        for rule in rules.iter_mut() {
            if let Value::Object(rule) = rule {
                canonical_rule(rule);
            }
        }
        rules.sort_by(|a, b| compare_priority(a, b).then_with(|| a.to_string().cmp(&b.to_string())));
    }
    Value::Object(policy)
}

/// Parses the policy text ECR returns. Text that is not JSON is kept as a string, so it shows
/// as a difference instead of failing the whole plan.
pub fn canonical_policy_text(text: &str) -> Value {
    match serde_json::from_str::<Value>(text) {
        Ok(value) => canonical_policy(&value),
        Err(_) => Value::String(text.to_owned()),
    }
}

fn canonical_rule(rule: &mut Map<String, Value>) {
    if rule.get("description").is_some_and(|d| d.as_str() == Some("")) {
        rule.remove("description");
    }
    if let Some(Value::Object(selection)) = rule.get_mut("selection") {
        for list in ["tagPrefixList", "tagPatternList"] {
            match selection.get_mut(list) {
                Some(Value::Array(items)) if items.is_empty() => {
                    selection.remove(list);
                }
                Some(Value::Array(items)) => sort_set(items),
                _ => {}
            }
        }
        if selection.get("storageClass").and_then(Value::as_str) == Some("standard") {
            selection.remove("storageClass");
        }
    }
}

fn compare_priority(a: &Value, b: &Value) -> Ordering {
    let priority = |rule: &Value| rule.get("rulePriority").and_then(Value::as_i64).unwrap_or(i64::MAX);
    priority(a).cmp(&priority(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn same(a: &str, b: &str) -> bool {
        canonical_policy_text(a) == canonical_policy_text(b)
    }

    const KEEP_3: &str = r#"{"rules":[{"rulePriority":1,"selection":{"tagStatus":"untagged","countType":"imageCountMoreThan","countNumber":3},"action":{"type":"expire"}}]}"#;

    #[test]
    fn reformatted_and_reordered_policies_are_equal() {
        let pretty = r#"
        {
          "rules": [
            { "action": { "type": "expire" },
              "selection": { "countNumber": 3, "countType": "imageCountMoreThan", "tagStatus": "untagged", "storageClass": "standard" },
              "description": "",
              "rulePriority": 1 }
          ]
        }"#;
        assert!(same(KEEP_3, pretty));
        // An empty tag list selects nothing more than none: ECR answers either way.
        let empty_lists =
            KEEP_3.replace("\"countNumber\":3}", "\"countNumber\":3,\"tagPrefixList\":[],\"tagPatternList\":[]}");
        assert_ne!(empty_lists, KEEP_3);
        assert!(same(KEEP_3, &empty_lists));
    }

    #[test]
    fn rules_are_ordered_by_priority_and_tag_lists_are_sets() {
        let a = r#"{"rules":[
            {"rulePriority":2,"selection":{"tagStatus":"untagged","countType":"imageCountMoreThan","countNumber":3},"action":{"type":"expire"}},
            {"rulePriority":1,"selection":{"tagStatus":"tagged","tagPrefixList":["b","a"],"countType":"imageCountMoreThan","countNumber":9},"action":{"type":"expire"}}]}"#;
        let b = r#"{"rules":[
            {"rulePriority":1,"selection":{"tagStatus":"tagged","tagPrefixList":["a","b"],"countType":"imageCountMoreThan","countNumber":9},"action":{"type":"expire"}},
            {"rulePriority":2,"selection":{"tagStatus":"untagged","countType":"imageCountMoreThan","countNumber":3},"action":{"type":"expire"}}]}"#;
        assert!(same(a, b));
        assert_eq!(canonical_policy_text(a)["rules"][0]["rulePriority"], json!(1));
    }

    #[test]
    fn every_real_change_is_a_difference() {
        let changed = [
            KEEP_3.replace("\"countNumber\":3", "\"countNumber\":4"),
            KEEP_3.replace("untagged", "any"),
            KEEP_3.replace("imageCountMoreThan", "sinceImagePushed"),
            KEEP_3.replace("\"countNumber\":3}", "\"countNumber\":3,\"tagPatternList\":[\"x*\"]}"),
            KEEP_3.replace("\"countNumber\":3}", "\"countNumber\":3,\"storageClass\":\"archive\"}"),
            KEEP_3.replace("{\"type\":\"expire\"}", "{\"type\":\"expire\",\"someFutureField\":1}"),
            KEEP_3.replace("\"rulePriority\":1", "\"rulePriority\":1,\"description\":\"x\""),
            KEEP_3.replace("\"rulePriority\":1", "\"rulePriority\":2"),
            "not json".to_owned(),
        ];
        for policy in changed {
            assert!(!same(KEEP_3, &policy), "{policy}");
        }
    }
}
