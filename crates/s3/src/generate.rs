//! `import --generate` for S3: every bucket of the account in desired.toml's region that it does
//! not declare, read as a plan reads a declared one ([`S3Reconciler::inventory_of`]), and
//! written as `[s3.buckets.<key>]` with its name templated on the account ([`generate`]).

use std::collections::BTreeSet;

use reconcile_core::desired::{Desired, Reference};
use reconcile_core::generate::{Entry, Found, Generated, key_for, templated};
use reconcile_core::mark::MARK_KEY;
use reconcile_core::plan::{DesiredResource, Observed};
use reconcile_core::{Account, Address, ReconcileError};
use serde_json::{Map, Value, json};

use crate::{BUCKET, BUCKET_LIFECYCLE, S3Reconciler};

impl S3Reconciler {
    /// The buckets in this region `desired` does not declare, each with its settings (the
    /// bucket's canonical form), its tags without the mark, and its lifecycle rules (null when
    /// it has none). A bucket this account may not read is not its own, and is passed over.
    pub(crate) async fn inventory_of(&self, desired: &[&DesiredResource]) -> Result<Vec<Found>, ReconcileError> {
        let declared: BTreeSet<&str> = desired.iter().map(|r| r.remote_name.as_str()).collect();
        let listed = self
            .parallelism
            .send(|| self.client.list_buckets().send())
            .await
            .map_err(reconcile_aws::failed(None, "list S3 buckets"))?;
        let names: Vec<String> = listed
            .buckets()
            .iter()
            .filter_map(|bucket| bucket.name())
            .filter(|name| !declared.contains(name))
            .map(str::to_owned)
            .collect();
        let reads: Vec<_> = names.iter().map(|name| self.read_whole(name)).collect();
        let mut found = Vec::new();
        for read in futures::future::join_all(reads).await {
            if let Some(one) = read? {
                found.push(one);
            }
        }
        Ok(found)
    }

    async fn read_whole(&self, name: &str) -> Result<Option<Found>, ReconcileError> {
        let address = Address::new(BUCKET, name);
        let head = self.parallelism.send(|| self.client.head_bucket().bucket(name).send()).await;
        match head {
            Ok(output) if output.bucket_region().is_none_or(|region| region == self.account.region) => {}
            // Another region's, gone since the listing, or not this account's to read.
            _ => return Ok(None),
        }
        let lifecycle_address = Address::new(BUCKET_LIFECYCLE, name);
        let (bucket, lifecycle) =
            futures::join!(self.observe_bucket(&address, name), self.observe_lifecycle(&lifecycle_address, name));
        let Observed::Present(mut live) = bucket? else { return Ok(None) };
        let rules = match lifecycle? {
            Observed::Present(fields) => fields.get("rules").cloned().unwrap_or(Value::Null),
            Observed::Absent => Value::Null,
        };
        let deployment = live
            .get_mut("tags")
            .and_then(Value::as_object_mut)
            .and_then(|tags| tags.remove(MARK_KEY))
            .and_then(|value| value.as_str().map(str::to_owned));
        live.insert("lifecycle_rules".into(), rules);
        Ok(Some(Found { kind: BUCKET, name: name.to_owned(), deployment, by_default: true, needs: Vec::new(), live }))
    }
}

/// desired.toml's lines for the buckets in `found`: `name` (the account id as `${account_id}`),
/// `block_public_access` when it is off, `tags`, and `lifecycle_rules` when every rule is one
/// desired.toml can say (otherwise the lifecycle is left unmanaged, and that is said).
pub fn generate(found: &[&Found], desired: &Desired, account: &Account, _references: &[Reference]) -> Generated {
    let mut generated = Generated::default();
    let account = account.id.clone();
    let mut taken: Vec<String> = crate::section::declared(desired).buckets.iter().map(|b| b.key.clone()).collect();
    for found in found {
        let live = &found.live;
        let key = key_for(&found.name, desired, &account, "bucket", &taken);
        taken.push(key.clone());
        let table = ["s3", "buckets", key.as_str()];
        let name = if account.is_empty() { found.name.clone() } else { templated(&found.name, &account) };
        generated.push(&found.name, Entry::new(&table, "name", json!(name)));
        let blocked = live.get("block_public_access").and_then(Value::as_object);
        if blocked.is_some_and(|b| b.values().all(|v| v == &json!(false))) {
            generated.push(&found.name, Entry::new(&table, "block_public_access", json!(false)));
        }
        if let Some(tags) = live.get("tags").and_then(Value::as_object).filter(|tags| !tags.is_empty()) {
            generated.push(&found.name, Entry::new(&table, "tags", Value::Object(tags.clone())));
        }
        match live.get("lifecycle_rules").and_then(Value::as_array) {
            None => {}
            Some(rules) => match rules.iter().map(rule).collect::<Result<Vec<Value>, String>>() {
                Ok(rules) => generated
                    .push(&found.name, Entry::new(&table, "lifecycle_rules", Value::Array(rules)).ordered(&RULE_ORDER)),
                Err(why) => generated.notes.push(format!(
                    "bucket `{}`: its lifecycle rules are left unmanaged (no `lifecycle_rules`): {why}",
                    found.name
                )),
            },
        }
    }
    generated
}

/// A rule's keys as desired.toml's reference gives them.
const RULE_ORDER: [&str; 5] = ["id", "status", "prefix", "expiration_days", "abort_incomplete_multipart_upload_days"];

/// A live rule (canonical) as desired.toml's `lifecycle_rules` entry, or why it cannot be one.
fn rule(live: &Value) -> Result<Value, String> {
    let Some(fields) = live.as_object() else { return Err("a rule is not an object".into()) };
    let id = fields.get("id").and_then(Value::as_str).unwrap_or_default();
    if let Some(other) = fields.keys().find(|key| !RULE_ORDER.contains(&key.as_str())) {
        return Err(format!("rule `{id}` has `{other}`, which desired.toml cannot declare"));
    }
    if fields.get("expiration_days").and_then(Value::as_u64).is_none() {
        return Err(format!("rule `{id}` expires nothing by age, which desired.toml cannot declare"));
    }
    let mut out = Map::new();
    out.insert("id".into(), json!(id));
    if fields.get("status").and_then(Value::as_str) == Some("Disabled") {
        out.insert("status".into(), json!("Disabled"));
    }
    if let Some(prefix) = fields.get("prefix").and_then(Value::as_str).filter(|p| !p.is_empty()) {
        out.insert("prefix".into(), json!(prefix));
    }
    out.insert("expiration_days".into(), fields["expiration_days"].clone());
    if let Some(days) = fields.get("abort_incomplete_multipart_upload_days") {
        out.insert("abort_incomplete_multipart_upload_days".into(), days.clone());
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_desired_toml_can_say_is_written_as_it_would_be_and_another_is_refused_with_why() {
        let live = json!({"id": "x", "status": "Enabled", "prefix": "", "expiration_days": 30});
        assert_eq!(rule(&live), Ok(json!({"id": "x", "expiration_days": 30})));
        let transitions =
            json!({"id": "t", "status": "Enabled", "prefix": "", "expiration_days": 30, "transitions": []});
        assert_eq!(rule(&transitions), Err("rule `t` has `transitions`, which desired.toml cannot declare".into()));
    }
}
