//! `import --generate`'s half of the `[ecr]` section: the repositories the account holds and
//! desired.toml does not declare (`EcrReconciler::inventory_of`), written as a person would write
//! them ([`generate`]): what they share in `[ecr.defaults]` (when the file has no `[ecr]` yet),
//! each distinct policy once under a name, each repository with what is its own.

use std::collections::{BTreeMap, BTreeSet};

use reconcile_core::desired::Reference;
use reconcile_core::generate::{Entry, Found, Generated};
use reconcile_core::{Account, Desired};
use serde_json::{Map, Value, json};

use crate::expiry::Policy;
use crate::repository::{FoundRepository, RepositorySpec};
use crate::section::Defaults;

/// One repository as `EcrReconciler::inventory_of` read it: its record, typed as the plan's.
struct Live<'a> {
    name: &'a str,
    spec: RepositorySpec,
    policy: Value,
}

impl<'a> Live<'a> {
    /// The repository's record; `Err` (why) for one this crate's inventory did not write.
    fn of(found: &'a Found) -> Result<Live<'a>, String> {
        let record: FoundRepository =
            serde_json::from_value(Value::Object(found.live.clone())).map_err(|error| error.to_string())?;
        Ok(Live { name: &found.name, spec: record.spec, policy: record.lifecycle_policy })
    }
}

/// desired.toml's lines for the repositories in `found`.
pub fn generate(found: &[&Found], desired: &Desired, _account: &Account, _references: &[Reference]) -> Generated {
    let mut generated = Generated::default();
    let existing = crate::section::existing(desired);
    // Each distinct policy once: the file's own names first, then new ones.
    let mut policies: Vec<(String, Value)> = existing.policies.clone();
    let mut new_policies: Vec<String> = Vec::new();
    let mut repositories: Vec<(Live<'_>, String)> = Vec::new();
    // A repository with no lifecycle policy takes the one the user's `[ecr.defaults]` names, made
    // by its import (the plan shows what it expires); with none named, it is left out.
    let default_policy = existing.any.then(|| existing.defaults.policy.clone()).flatten();
    let mut given_the_default: Vec<String> = Vec::new();
    for found in found {
        let live = match Live::of(found) {
            Ok(live) => live,
            Err(why) => {
                generated
                    .left_out
                    .push((format!("repository `{}`", found.name), format!("it could not be read ({why})")));
                continue;
            }
        };
        if live.policy.is_null()
            && let Some(policy) = &default_policy
        {
            given_the_default.push(live.name.to_owned());
            generated.applied.push((live.name.to_owned(), crate::LIFECYCLE_POLICY.as_str(), Map::new()));
            repositories.push((live, policy.clone()));
            continue;
        }
        if live.policy.is_null() {
            generated.left_out.push((
                format!("repository `{}`", live.name),
                "it has no lifecycle policy, which desired.toml cannot declare (without one its untagged images \
                 accumulate without bound): declare it yourself with the policy it should have, or name one in \
                 `[ecr.defaults]`, which its import then makes"
                    .to_owned(),
            ));
            continue;
        }
        if let Err(why) = crate::section::expressible(&live.policy) {
            generated.left_out.push((
                format!("repository `{}`", live.name),
                format!("its lifecycle policy cannot be written in desired.toml ({why})"),
            ));
            continue;
        }
        let name = match policies.iter().find(|(_, document)| document == &live.policy) {
            Some((name, _)) => name.clone(),
            None => {
                let taken: Vec<&str> = policies.iter().map(|(name, _)| name.as_str()).collect();
                let name = policy_name(&live.policy, &taken);
                policies.push((name.clone(), live.policy.clone()));
                new_policies.push(name.clone());
                name
            }
        };
        repositories.push((live, name));
    }
    if repositories.is_empty() {
        return generated;
    }
    // A file with no `[ecr]` yet gets what the repositories share as its defaults; otherwise
    // each repository says what differs from the defaults the file has.
    let defaults = if existing.any {
        existing.defaults
    } else {
        let defaults = shared(&repositories);
        let mut entries = Vec::new();
        if let Some(policy) = &defaults.policy {
            entries.push(("lifecycle_policy", json!(policy)));
        }
        if let Some(mutability) = &defaults.mutability {
            entries.push(("image_tag_mutability", json!(mutability)));
        }
        if let Some(scan) = defaults.scan_on_push {
            entries.push(("scan_on_push", json!(scan)));
        }
        if !defaults.tags.is_empty() {
            entries.push(("tags", json!(defaults.tags)));
        }
        for (key, value) in entries {
            generated.entries.push(Entry::new(&["ecr", "defaults"], key, value));
        }
        defaults
    };
    for name in &new_policies {
        let Some((_, document)) = policies.iter().find(|(n, _)| n == name) else { continue };
        let rules = document.get("rules").cloned().unwrap_or(Value::Array(Vec::new()));
        generated.entries.push(Entry::new(&["ecr", "lifecycle_policies", name], "rules", rules).ordered(&RULE_ORDER));
    }
    let mut lacking_defaults: BTreeSet<String> = BTreeSet::new();
    for (live, policy) in &repositories {
        let mut own = Map::new();
        if defaults.policy.as_deref() != Some(policy.as_str()) {
            own.insert("lifecycle_policy".into(), json!(policy));
        }
        if defaults.mutability.as_deref().unwrap_or("MUTABLE") != live.spec.image_tag_mutability {
            own.insert("image_tag_mutability".into(), json!(live.spec.image_tag_mutability));
        }
        if defaults.scan_on_push.unwrap_or(false) != live.spec.scan_on_push {
            own.insert("scan_on_push".into(), json!(live.spec.scan_on_push));
        }
        if defaults.encryption.as_deref().unwrap_or(crate::repository::AES256) != live.spec.encryption_type {
            own.insert("encryption_type".into(), json!(live.spec.encryption_type));
        }
        if let Some(key) = live.spec.kms_key.as_deref()
            && defaults.kms_key.as_deref() != Some(key)
        {
            own.insert("kms_key".into(), json!(key));
        }
        let tags: BTreeMap<&String, &String> =
            live.spec.tags.iter().filter(|(key, value)| defaults.tags.get(*key) != Some(*value)).collect();
        // A default tag it lacks cannot be left off in desired.toml: the user's file says it,
        // so its import sets it.
        let lacking: Map<String, Value> = defaults
            .tags
            .iter()
            .filter(|(key, _)| !live.spec.tags.contains_key(*key))
            .map(|(key, value)| (key.clone(), json!(value)))
            .collect();
        if !lacking.is_empty() {
            lacking_defaults.extend(lacking.keys().cloned());
            generated.applied.push((live.name.to_owned(), "tags", lacking));
        }
        if !tags.is_empty() {
            own.insert("tags".into(), json!(tags));
        }
        let mut entry =
            Entry::new(&["ecr", "repositories"], live.name, Value::Object(own.clone())).ordered(&REPOSITORY_ORDER);
        // Kept as it is, so the plan changes nothing; said, so the review decides.
        if Policy::parse(&live.policy).ok().is_some_and(|p| p.rule_over_tagged_images().is_some()) {
            own.insert(crate::ALLOW_TAGGED_EXPIRY.into(), json!(true));
            entry = Entry::new(&["ecr", "repositories"], live.name, Value::Object(own))
                .ordered(&REPOSITORY_ORDER)
                .commented(format!("Kept as found: lifecycle policy `{policy}` can expire tagged images (W301)."));
            generated.notes.push(format!(
                "repository `{}` keeps lifecycle policy `{policy}`, which can expire tagged images: it is written with \
                 `allow_tagged_expiry = true` so the plan changes nothing; a rule over tagged images once expired the \
                 live nightly tag, so decide in review whether it stays",
                live.name
            ));
        }
        generated.push(live.name, entry);
    }
    if !given_the_default.is_empty()
        && let Some(policy) = &default_policy
    {
        generated.notes.push(format!(
            "{} repositor(ies) have no lifecycle policy, so their untagged images accumulate without bound: their \
             import makes `[ecr.defaults]`'s `{policy}` theirs, as the plan shows with what it expires ({})",
            given_the_default.len(),
            given_the_default.iter().map(|name| format!("`{name}`")).collect::<Vec<_>>().join(", ")
        ));
    }
    if !lacking_defaults.is_empty() {
        let keys: Vec<String> = lacking_defaults.iter().map(|key| format!("`{key}`")).collect();
        generated.notes.push(format!(
            "{} of the repositories lack tag(s) {} that `[ecr.defaults]` gives them: their import sets them, as the \
             plan shows",
            generated.applied.iter().filter(|(_, field, _)| *field == "tags").count(),
            keys.join(", ")
        ));
    }
    generated
}

/// A rule's fields in the order ECR's documentation and desired.toml write them.
const RULE_ORDER: [&str; 13] = [
    "rulePriority",
    "description",
    "selection",
    "action",
    "tagStatus",
    "tagPrefixList",
    "tagPatternList",
    "countType",
    "countUnit",
    "countNumber",
    "storageClass",
    "type",
    "targetStorageClass",
];

/// A repository's keys in the order desired.toml's reference gives them.
const REPOSITORY_ORDER: [&str; 7] = [
    "lifecycle_policy",
    "image_tag_mutability",
    "scan_on_push",
    "encryption_type",
    "kms_key",
    "allow_tagged_expiry",
    "tags",
];

/// The values every repository shares (tags), or most do (the policy and settings, when more
/// than one has them).
fn shared(repositories: &[(Live<'_>, String)]) -> Defaults {
    fn most<T: Ord + Clone>(values: impl Iterator<Item = T>) -> Option<T> {
        let mut counts: BTreeMap<T, usize> = BTreeMap::new();
        for value in values {
            *counts.entry(value).or_default() += 1;
        }
        let (value, count) = counts.into_iter().max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0)))?;
        (count > 1).then_some(value)
    }
    let mut tags = repositories.first().map(|(live, _)| live.spec.tags.clone()).unwrap_or_default();
    for (live, _) in repositories {
        tags.retain(|key, value| live.spec.tags.get(key) == Some(value));
    }
    Defaults {
        policy: most(repositories.iter().map(|(_, policy)| policy.clone())),
        mutability: most(repositories.iter().map(|(live, _)| live.spec.image_tag_mutability.clone())),
        scan_on_push: most(repositories.iter().map(|(live, _)| live.spec.scan_on_push)),
        encryption: None,
        kms_key: None,
        tags,
    }
}

/// A name that says what a policy does, when it is one common rule; `policy-N` otherwise.
fn policy_name(policy: &Value, taken: &[&str]) -> String {
    let rules = policy.get("rules").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let said = match rules {
        [rule] => {
            let selection = &rule["selection"];
            let status = selection["tagStatus"].as_str().unwrap_or("any");
            let count = selection["countNumber"].as_u64().unwrap_or(0);
            match (rule["action"]["type"].as_str(), selection["countType"].as_str()) {
                (Some("expire"), Some("imageCountMoreThan")) => Some(format!("keep-{count}-{status}")),
                (Some("expire"), Some("sinceImagePushed")) => Some(format!("expire-{status}-after-{count}-days")),
                _ => None,
            }
        }
        _ => None,
    };
    let base = said.unwrap_or_else(|| "policy".to_owned());
    let mut name = base.clone();
    let mut n = if base == "policy" { 1 } else { 2 };
    if base == "policy" {
        name = format!("policy-{n}");
    }
    while taken.contains(&name.as_str()) {
        n += 1;
        name = format!("{base}-{n}");
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(name: &str, policy: Value, tags: Value) -> Found {
        let spec = RepositorySpec {
            image_tag_mutability: "MUTABLE".into(),
            scan_on_push: false,
            encryption_type: "AES256".into(),
            kms_key: None,
            tags: serde_json::from_value(tags).unwrap(),
            repository_policy: None,
        };
        let live = reconcile_core::spec::attributes(&FoundRepository { spec, lifecycle_policy: policy });
        Found { kind: crate::REPOSITORY, name: name.into(), deployment: None, by_default: true, needs: vec![], live }
    }

    fn keep(count: u64) -> Value {
        crate::canonical_policy(
            &json!({"rules": [{"rulePriority": 1, "selection": {"tagStatus": "untagged", "countType": "imageCountMoreThan", "countNumber": count}, "action": {"type": "expire"}}]}),
        )
    }

    #[test]
    fn shared_values_go_to_the_defaults_each_policy_is_named_once_and_none_is_left_out() {
        let desired = Desired::parse(std::path::Path::new("desired.toml"), "region = \"us-east-1\"\n").expect("valid");
        let any14 = crate::canonical_policy(
            &json!({"rules": [{"rulePriority": 1, "selection": {"tagStatus": "any", "countType": "sinceImagePushed", "countUnit": "days", "countNumber": 14}, "action": {"type": "expire"}}]}),
        );
        let all = [
            found("a", keep(3), json!({"project": "p"})),
            found("a-cache", keep(3), json!({"project": "p", "kind": "cache"})),
            found("b-cache", any14, json!({"project": "p"})),
            found("c", Value::Null, json!({})),
        ];
        let generated =
            generate(&all.iter().collect::<Vec<_>>(), &desired, &Account::new("123456789012", "us-east-1"), &[]);
        let lines: Vec<String> =
            generated.entries.iter().map(|e| format!("[{}] {} = {}", e.table.join("."), e.key, e.value)).collect();
        assert_eq!(
            lines,
            [
                r#"[ecr.defaults] lifecycle_policy = "keep-3-untagged""#,
                r#"[ecr.defaults] image_tag_mutability = "MUTABLE""#,
                r#"[ecr.defaults] scan_on_push = false"#,
                r#"[ecr.defaults] tags = {"project":"p"}"#,
                r#"[ecr.lifecycle_policies.keep-3-untagged] rules = [{"rulePriority":1,"selection":{"tagStatus":"untagged","countType":"imageCountMoreThan","countNumber":3},"action":{"type":"expire"}}]"#,
                r#"[ecr.lifecycle_policies.expire-any-after-14-days] rules = [{"rulePriority":1,"selection":{"tagStatus":"any","countType":"sinceImagePushed","countUnit":"days","countNumber":14},"action":{"type":"expire"}}]"#,
                r#"[ecr.repositories] a = {}"#,
                r#"[ecr.repositories] a-cache = {"tags":{"kind":"cache"}}"#,
                r#"[ecr.repositories] b-cache = {"lifecycle_policy":"expire-any-after-14-days","allow_tagged_expiry":true}"#,
            ]
        );
        assert_eq!(generated.left_out.len(), 1, "{:?}", generated.left_out);
        assert!(generated.left_out[0].1.contains("no lifecycle policy"));
        assert_eq!(generated.notes.len(), 1);
    }
}
