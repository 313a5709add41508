//! `s3_bucket_lifecycle.<key>`: a bucket's lifecycle rules, their field table, reads and writes,
//! Terraform mapping and the cost line's expiry change, and their canonical form, in which two
//! rules that mean the same are equal.
//!
//! A rule's filter may come back absent, as `{}`, as `{Prefix: ""}` or as the legacy rule-level
//! `Prefix`; all of them mean "the whole bucket" or "this prefix" and become `"prefix"`. Fields
//! this reconciler does not declare (transitions, tag filters, ...) are kept, so a rule that
//! does more than desired.toml says is drift rather than invisible.
//!
//! | reconcile | provider resource | arguments |
//! |---|---|---|
//! | `s3_bucket_lifecycle.<key>` | `aws_s3_bucket_lifecycle_configuration.bucket["<key>"]` | `bucket`, `rule[].{id,status,filter[0].prefix,expiration[0].days,abort_incomplete_multipart_upload[0].days_after_initiation}`; a live rule's other fields as reconcile reads them |

use crate::section::S3LifecycleRule;
use aws_sdk_s3 as s3;
use reconcile_aws::{absent_if, after_create, failed, gone_if};
use reconcile_core::fields::{Field, Fields};
use reconcile_core::json::{object, to_compact};
use reconcile_core::plan::{Action, Change, Observed};
use reconcile_core::spec::attributes;
use reconcile_core::terraform::ProviderResource;
use reconcile_core::{Account, Address, Applied, ReconcileError};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// `s3_bucket_lifecycle.<key>`: the bucket's lifecycle rules, in canonical form and order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct BucketLifecycleSpec {
    pub bucket: String,
    pub rules: Vec<Value>,
}

/// A bucket's lifecycle configuration: its rules, on the bucket it names.
pub const FIELDS: Fields = Fields {
    kind: crate::BUCKET_LIFECYCLE,
    fields: &[
        Field::identity("bucket"),
        Field::in_place("rules").set_by(&["PutBucketLifecycle", "DeleteBucketLifecycle"]),
    ],
};

impl BucketLifecycleSpec {
    /// The rules desired.toml declares for the bucket `bucket`, in canonical form and order.
    pub(crate) fn declared(bucket: &str, rules: &[S3LifecycleRule]) -> BucketLifecycleSpec {
        let mut rules: Vec<Value> = rules.iter().map(desired_rule).collect();
        sort_rules(&mut rules);
        BucketLifecycleSpec { bucket: bucket.to_owned(), rules }
    }
}

/// What an update of a bucket's lifecycle does to its shortest expiry, for a plan's cost line:
/// the bucket, and the days before and after, when both expire something and they differ.
pub fn expiry_change(change: &Change) -> Option<(String, u64, u64)> {
    if change.address.kind != crate::BUCKET_LIFECYCLE || change.action != Action::Update {
        return None;
    }
    let spec = |fields: Option<&serde_json::Map<String, serde_json::Value>>| -> Option<BucketLifecycleSpec> {
        serde_json::from_value(serde_json::Value::Object(fields?.clone())).ok()
    };
    let days = |spec: &BucketLifecycleSpec| {
        spec.rules.iter().filter_map(|rule| rule.get("expiration_days").and_then(serde_json::Value::as_u64)).min()
    };
    let (before, after) = (spec(change.before.as_ref())?, spec(change.after.as_ref())?);
    let (from, to) = (days(&before)?, days(&after)?);
    (from != to).then(|| (after.bucket.clone(), from, to))
}

impl crate::S3Reconciler {
    pub(crate) async fn observe_lifecycle(&self, address: &Address, name: &str) -> Result<Observed, ReconcileError> {
        let response =
            self.parallelism.send(|| self.client.get_bucket_lifecycle_configuration().bucket(name).send()).await;
        match absent_if(response, &["NoSuchLifecycleConfiguration"])
            .map_err(failed(Some(address), "read lifecycle configuration"))?
        {
            Some(output) if !output.rules().is_empty() => {
                let mut rules: Vec<_> = output.rules().iter().map(observed_rule).collect();
                sort_rules(&mut rules);
                Ok(Observed::Present(attributes(&BucketLifecycleSpec { bucket: name.to_owned(), rules })))
            }
            _ => Ok(Observed::Absent),
        }
    }

    pub(crate) async fn put_lifecycle(&self, change: &Change) -> Result<Applied, ReconcileError> {
        let address = &change.address;
        let after: BucketLifecycleSpec = reconcile_core::spec::after(change)?;
        let rules = after
            .rules
            .iter()
            .map(sdk_rule)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|why| ReconcileError::new(Some(address), "build lifecycle rules", why))?;
        let configuration = s3::types::BucketLifecycleConfiguration::builder()
            .set_rules(Some(rules))
            .build()
            .map_err(ReconcileError::of(address, "build lifecycle rules"))?;
        // Right after the bucket is created, S3 may not show it everywhere yet.
        let request = || {
            self.client
                .put_bucket_lifecycle_configuration()
                .bucket(&after.bucket)
                .lifecycle_configuration(configuration.clone())
                .send()
        };
        after_create(request, &["NoSuchBucket"]).await.map_err(failed(Some(address), "put lifecycle configuration"))?;
        Ok(Applied::Done)
    }

    pub(crate) async fn delete_lifecycle(&self, change: &Change) -> Result<Applied, ReconcileError> {
        let address = &change.address;
        let before = reconcile_core::spec::before::<BucketLifecycleSpec>(change)?.ok_or_else(|| {
            ReconcileError::new(Some(address), "delete lifecycle configuration", "the change has no observed fields")
        })?;
        let response = self.client.delete_bucket_lifecycle().bucket(&before.bucket).send().await;
        gone_if(response, &["NoSuchLifecycleConfiguration", "NoSuchBucket"])
            .map_err(failed(Some(address), "delete lifecycle configuration"))?;
        Ok(Applied::Done)
    }
}

pub(crate) fn terraform(_: &Account, _key: &str, fields: &Map<String, Value>) -> Vec<ProviderResource> {
    let rules: Vec<Value> = fields
        .get("rules")
        .and_then(Value::as_array)
        .map(|rules| rules.iter().map(provider_rule).collect())
        .unwrap_or_default();
    vec![crate::bucket::part(
        "aws_s3_bucket_lifecycle_configuration",
        json!({ "bucket": fields.get("bucket"), "rule": rules }),
    )]
}

/// One canonical rule in the provider's shape; what the provider shape here does not name is
/// kept under reconcile's name, so a live rule that does more still differs.
fn provider_rule(rule: &Value) -> Value {
    let Value::Object(fields) = rule else { return rule.clone() };
    let mut out = Map::new();
    for (key, value) in fields {
        match key.as_str() {
            "id" | "status" => {
                out.insert(key.clone(), value.clone());
            }
            "prefix" => {
                out.insert("filter".to_owned(), json!([{ "prefix": value }]));
            }
            "expiration_days" => {
                out.insert("expiration".to_owned(), json!([{ "days": value }]));
            }
            "abort_incomplete_multipart_upload_days" => {
                out.insert("abort_incomplete_multipart_upload".to_owned(), json!([{ "days_after_initiation": value }]));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    Value::Object(out)
}

/// The canonical form of a rule from desired.toml.
pub fn desired_rule(rule: &S3LifecycleRule) -> Value {
    let mut fields = object(json!({
        "id": rule.id,
        "status": if rule.enabled { "Enabled" } else { "Disabled" },
        "prefix": rule.prefix,
        "expiration_days": rule.expiration_days,
    }));
    if let Some(days) = rule.abort_incomplete_multipart_upload_days {
        fields.insert("abort_incomplete_multipart_upload_days".to_owned(), json!(days));
    }
    Value::Object(fields)
}

/// The canonical form of a rule as S3 returns it.
pub fn observed_rule(rule: &s3::types::LifecycleRule) -> Value {
    let mut fields = Map::new();
    fields.insert("id".to_owned(), json!(rule.id().unwrap_or_default()));
    fields.insert("status".to_owned(), json!(rule.status().as_str()));

    let (prefix, filter) = observed_filter(rule);
    if let Some(filter) = filter {
        fields.insert("filter".to_owned(), Value::Object(filter));
    }
    fields.insert("prefix".to_owned(), json!(prefix));

    if let Some(expiration) = rule.expiration() {
        // S3 answers `Days: 0` and `ExpiredObjectDeleteMarker: false` for "not set".
        if let Some(days) = expiration.days().filter(|d| *d > 0) {
            fields.insert("expiration_days".to_owned(), json!(days));
        }
        if let Some(date) = expiration.date() {
            fields.insert("expiration_date".to_owned(), json!(date.to_string()));
        }
        if expiration.expired_object_delete_marker() == Some(true) {
            fields.insert("expired_object_delete_marker".to_owned(), json!(true));
        }
    }
    if let Some(days) = rule.abort_incomplete_multipart_upload().and_then(|a| a.days_after_initiation()) {
        fields.insert("abort_incomplete_multipart_upload_days".to_owned(), json!(days));
    }
    let transitions: Vec<Value> = rule
        .transitions()
        .iter()
        .map(|t| {
            json!({
                "days": t.days(),
                "date": t.date().map(ToString::to_string),
                "storage_class": t.storage_class().map(|c| c.as_str()),
            })
        })
        .collect();
    if !transitions.is_empty() {
        fields.insert("transitions".to_owned(), Value::Array(transitions));
    }
    let noncurrent: Vec<Value> = rule
        .noncurrent_version_transitions()
        .iter()
        .map(|t| json!({ "days": t.noncurrent_days(), "storage_class": t.storage_class().map(|c| c.as_str()) }))
        .collect();
    if !noncurrent.is_empty() {
        fields.insert("noncurrent_version_transitions".to_owned(), Value::Array(noncurrent));
    }
    if let Some(expiration) = rule.noncurrent_version_expiration() {
        fields.insert(
            "noncurrent_version_expiration".to_owned(),
            json!({ "days": expiration.noncurrent_days(), "newer_versions": expiration.newer_noncurrent_versions() }),
        );
    }
    Value::Object(fields)
}

/// A rule's prefix (its filter's, its `And`'s, or the rule-level one of old configurations),
/// and what else its filter selects by, if anything.
fn observed_filter(rule: &s3::types::LifecycleRule) -> (String, Option<Map<String, Value>>) {
    let filter = rule.filter();
    let mut prefix = filter.and_then(|f| f.prefix()).or(legacy_prefix(rule)).unwrap_or_default().to_owned();
    if let Some(filter) = filter {
        let mut other = Map::new();
        if let Some(tag) = filter.tag() {
            other.insert("tag".to_owned(), json!({ "key": tag.key(), "value": tag.value() }));
        }
        if let Some(size) = filter.object_size_greater_than() {
            other.insert("object_size_greater_than".to_owned(), json!(size));
        }
        if let Some(size) = filter.object_size_less_than() {
            other.insert("object_size_less_than".to_owned(), json!(size));
        }
        if let Some(and) = filter.and() {
            if let Some(and_prefix) = and.prefix() {
                prefix = and_prefix.to_owned();
            }
            let tags: Vec<Value> = and.tags().iter().map(|t| json!({ "key": t.key(), "value": t.value() })).collect();
            if !tags.is_empty() {
                other.insert("tags".to_owned(), Value::Array(tags));
            }
            if let Some(size) = and.object_size_greater_than() {
                other.insert("object_size_greater_than".to_owned(), json!(size));
            }
            if let Some(size) = and.object_size_less_than() {
                other.insert("object_size_less_than".to_owned(), json!(size));
            }
        }
        if !other.is_empty() {
            return (prefix, Some(other));
        }
    }
    (prefix, None)
}

/// The rule-level `Prefix` that rules written before filters existed still carry.
#[expect(deprecated, reason = "old configurations still come back with it, and it means the same as a filter prefix")]
fn legacy_prefix(rule: &s3::types::LifecycleRule) -> Option<&str> {
    rule.prefix()
}

/// Rules are a set: order them by id (and by content, for duplicate ids).
pub fn sort_rules(rules: &mut [Value]) {
    rules.sort_by_key(|rule| (rule.get("id").and_then(Value::as_str).unwrap_or_default().to_owned(), to_compact(rule)));
}

/// The SDK rule to send for a canonical desired rule. Always with its ID (S3 invents one
/// otherwise, which is drift forever) and with an explicit filter.
pub fn sdk_rule(rule: &Value) -> Result<s3::types::LifecycleRule, String> {
    let text = |key: &str| rule.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
    let number = |key: &str| rule.get(key).and_then(Value::as_i64).and_then(|n| i32::try_from(n).ok());
    let mut builder = s3::types::LifecycleRule::builder()
        .id(text("id"))
        .status(text("status").as_str().into())
        .filter(s3::types::LifecycleRuleFilter::builder().prefix(text("prefix")).build());
    if let Some(days) = number("expiration_days") {
        builder = builder.expiration(s3::types::LifecycleExpiration::builder().days(days).build());
    }
    if let Some(days) = number("abort_incomplete_multipart_upload_days") {
        builder = builder.abort_incomplete_multipart_upload(
            s3::types::AbortIncompleteMultipartUpload::builder().days_after_initiation(days).build(),
        );
    }
    builder.build().map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[expect(deprecated, reason = "the legacy rule-level prefix must still be read correctly")]
    fn expire_30(
        filter: Option<s3::types::LifecycleRuleFilter>,
        legacy_prefix: Option<&str>,
    ) -> s3::types::LifecycleRule {
        s3::types::LifecycleRule::builder()
            .id("expire-after-30-days")
            .status(s3::types::ExpirationStatus::Enabled)
            .set_filter(filter)
            .set_prefix(legacy_prefix.map(str::to_owned))
            .expiration(s3::types::LifecycleExpiration::builder().days(30).expired_object_delete_marker(false).build())
            .build()
            .unwrap()
    }

    fn desired() -> Value {
        desired_rule(&S3LifecycleRule {
            id: "expire-after-30-days".into(),
            enabled: true,
            prefix: String::new(),
            expiration_days: 30,
            abort_incomplete_multipart_upload_days: None,
        })
    }

    #[test]
    fn every_way_of_saying_the_whole_bucket_is_equal() {
        let empty_filter = s3::types::LifecycleRuleFilter::builder().build();
        let empty_prefix = s3::types::LifecycleRuleFilter::builder().prefix("").build();
        for rule in [
            expire_30(None, None),
            expire_30(Some(empty_filter), None),
            expire_30(Some(empty_prefix), None),
            expire_30(None, Some("")),
        ] {
            assert_eq!(observed_rule(&rule), desired(), "{rule:?}");
        }
    }

    #[test]
    fn what_desired_toml_does_not_say_is_a_difference() {
        let tagged = s3::types::LifecycleRuleFilter::builder()
            .tag(s3::types::Tag::builder().key("k").value("v").build().unwrap())
            .build();
        assert_ne!(observed_rule(&expire_30(Some(tagged), None)), desired());
        let other_prefix = s3::types::LifecycleRuleFilter::builder().prefix("logs/").build();
        assert_ne!(observed_rule(&expire_30(Some(other_prefix), None)), desired());
        let mut fourteen = expire_30(None, None);
        fourteen.expiration = Some(s3::types::LifecycleExpiration::builder().days(14).build());
        assert_ne!(observed_rule(&fourteen), desired());
    }

    #[test]
    fn the_rule_sent_round_trips_to_the_same_canonical_form() {
        assert_eq!(observed_rule(&sdk_rule(&desired()).unwrap()), desired());
    }

    #[test]
    fn a_legacy_rule_level_prefix_is_the_rule_prefix() {
        let legacy = observed_rule(&expire_30(None, Some("logs/")));
        assert_eq!(legacy["prefix"], "logs/");
        assert_ne!(legacy, desired(), "a rule for `logs/` is not one for the whole bucket");
    }

    #[test]
    fn an_and_filter_keeps_its_tags_and_its_prefix_and_nothing_empty() {
        let tag = s3::types::Tag::builder().key("k").value("v").build().unwrap();
        let with_tags = s3::types::LifecycleRuleAndOperator::builder().prefix("p/").tags(tag).build();
        let rule =
            observed_rule(&expire_30(Some(s3::types::LifecycleRuleFilter::builder().and(with_tags).build()), None));
        assert_eq!(rule["prefix"], "p/");
        assert_eq!(rule["filter"], json!({"tags": [{"key": "k", "value": "v"}]}));
        let prefix_only = s3::types::LifecycleRuleAndOperator::builder().prefix("p/").build();
        let rule =
            observed_rule(&expire_30(Some(s3::types::LifecycleRuleFilter::builder().and(prefix_only).build()), None));
        assert!(rule.get("filter").is_none(), "{rule}");
    }

    #[test]
    fn zero_days_is_no_expiration_by_age() {
        let mut rule = expire_30(None, None);
        rule.expiration =
            Some(s3::types::LifecycleExpiration::builder().days(0).expired_object_delete_marker(true).build());
        let observed = observed_rule(&rule);
        assert!(observed.get("expiration_days").is_none(), "{observed}");
        assert_eq!(observed["expired_object_delete_marker"], true);
    }

    #[test]
    fn rules_are_a_set() {
        let a = json!({"id": "a", "status": "Enabled"});
        let b = json!({"id": "b", "status": "Enabled"});
        let mut one = vec![b.clone(), a.clone()];
        let mut two = vec![a.clone(), b.clone()];
        sort_rules(&mut one);
        sort_rules(&mut two);
        assert_eq!(one, two);
        assert_eq!(one, [a, b]);
    }
}
