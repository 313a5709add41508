//! S3's kinds as the AWS provider's resources (`plan --format terraform-json`). The provider
//! splits a bucket into one resource per configuration, and so does this mapping.
//!
//! | reconcile | provider resource | arguments |
//! |---|---|---|
//! | `s3_bucket.<key>` | `aws_s3_bucket.bucket["<key>"]` | `bucket`, `force_destroy` (false), `tags`, `tags_all`; `grant` (ACL grants beyond the owner's, as `{id, permissions}`) and `replication_configuration`, the provider's deprecated in-bucket forms, only while set |
//! | its `block_public_access` | `aws_s3_bucket_public_access_block.bucket["<key>"]` | `bucket`, the four settings |
//! | its `encryption` (unless `none`) | `aws_s3_bucket_server_side_encryption_configuration.bucket["<key>"]` | `bucket`, `rule[0].apply_server_side_encryption_by_default[0].sse_algorithm` |
//! | its `object_ownership` | `aws_s3_bucket_ownership_controls.bucket["<key>"]` | `bucket`, `rule[0].object_ownership` |
//! | its `versioning` | `aws_s3_bucket_versioning.bucket["<key>"]` | `bucket`, `versioning_configuration[0].status` (`Off` is `Disabled`) |
//! | its `policy` (only while one is set) | `aws_s3_bucket_policy.bucket["<key>"]` | `bucket`, `policy` (JSON string) |
//! | its `access_logging` (only while on) | `aws_s3_bucket_logging.bucket["<key>"]` | `bucket`, `target_bucket`, `target_prefix` |
//! | its `website` (only while on) | `aws_s3_bucket_website_configuration.bucket["<key>"]` | `bucket` |
//! | `s3_bucket_lifecycle.<key>` | `aws_s3_bucket_lifecycle_configuration.bucket["<key>"]` | `bucket`, `rule[].{id,status,filter[0].prefix,expiration[0].days,abort_incomplete_multipart_upload[0].days_after_initiation}`; a live rule's other fields as reconcile reads them |
//!
//! ACL grants and replication, which reconcile only ever clears, are mapped onto the bucket's
//! deprecated arguments only while set, so that drift in them shows in the bucket's change.

use reconcile_core::Account;
use reconcile_core::terraform::{Mapping, Provider, ProviderResource, policy_string, tags};
use serde_json::{Map, Value, json};

pub const MAPPINGS: &[Mapping] = &[
    Mapping { kind: crate::BUCKET, map: bucket, unmapped: "" },
    Mapping { kind: crate::BUCKET_LIFECYCLE, map: lifecycle, unmapped: "" },
];

const BUCKET: &[(&str, &str, &str)] = &[("bucket", "aws_s3_bucket.bucket", "id")];

/// One of the bucket's configurations, a resource of its own whose `id` is the bucket's name.
fn part(kind: &'static str, values: Value) -> ProviderResource {
    let id = values.get("bucket").cloned().unwrap_or(Value::Null);
    ProviderResource::new(Provider::Aws, kind, "bucket", values).referring(BUCKET).computing(json!({ "id": id }))
}

fn bucket(account: &Account, _key: &str, fields: &Map<String, Value>) -> Vec<ProviderResource> {
    let name = fields.get("name").cloned().unwrap_or(Value::Null);
    let bucket_name = name.as_str().unwrap_or_default();
    let field = |key: &str| fields.get(key).cloned().unwrap_or(Value::Null);
    let values = bucket_values(&name, fields);
    let domain = reconcile_aws::dns_suffix(&account.partition);
    let mut resources = vec![
        ProviderResource::new(Provider::Aws, "aws_s3_bucket", "bucket", values)
            .forcing_new(crate::describe::BUCKET_FIELDS.forcing_new(&[]))
            .computing(json!({
                "arn": format!("arn:{}:s3:::{bucket_name}", account.partition),
                "id": name,
                "bucket_domain_name": format!("{bucket_name}.s3.{domain}"),
                "bucket_regional_domain_name": format!("{bucket_name}.s3.{}.{domain}", account.region),
                "region": account.region,
            })),
    ];
    if let Some(Value::Object(block)) = fields.get("block_public_access") {
        let mut values = block.clone();
        values.insert("bucket".to_owned(), name.clone());
        resources.push(part("aws_s3_bucket_public_access_block", Value::Object(values)));
    }
    match fields.get("encryption").and_then(Value::as_str) {
        Some("none") | None => {}
        Some(algorithm) => resources.push(part(
            "aws_s3_bucket_server_side_encryption_configuration",
            json!({
                "bucket": name,
                "rule": [{
                    "apply_server_side_encryption_by_default": [{ "sse_algorithm": algorithm, "kms_master_key_id": "" }],
                    "bucket_key_enabled": false,
                }],
            }),
        )),
    }
    if fields.contains_key("object_ownership") {
        resources.push(part(
            "aws_s3_bucket_ownership_controls",
            json!({ "bucket": name, "rule": [{ "object_ownership": field("object_ownership") }] }),
        ));
    }
    if let Some(versioning) = fields.get("versioning").and_then(Value::as_str) {
        let status = if versioning == crate::spec::VERSIONING_OFF { "Disabled" } else { versioning };
        resources.push(part(
            "aws_s3_bucket_versioning",
            json!({ "bucket": name, "versioning_configuration": [{ "status": status, "mfa_delete": "" }] }),
        ));
    }
    if let Some(policy) = fields.get("policy").filter(|p| !p.is_null()) {
        resources.push(part("aws_s3_bucket_policy", json!({ "bucket": name, "policy": policy_string(policy) })));
    }
    if let Some(logging) = fields.get("access_logging").and_then(Value::as_str) {
        let (target, prefix) = logging.split_once('/').unwrap_or((logging, ""));
        resources.push(part(
            "aws_s3_bucket_logging",
            json!({ "bucket": name, "target_bucket": target, "target_prefix": prefix }),
        ));
    }
    if fields.get("website") == Some(&Value::Bool(true)) {
        resources.push(part("aws_s3_bucket_website_configuration", json!({ "bucket": name })));
    }
    resources
}

/// `aws_s3_bucket`'s own arguments: its name, tags, grants and replication.
fn bucket_values(name: &Value, fields: &Map<String, Value>) -> Value {
    let (tags, tags_all) = tags(fields);
    let mut values = json!({ "bucket": name, "force_destroy": false, "tags": tags, "tags_all": tags_all });
    let grants: Vec<Value> = fields
        .get("acl_grants")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|grant| {
            let (grantee, permission) = grant.rsplit_once(' ').unwrap_or((grant, ""));
            json!({ "id": grantee, "permissions": [permission] })
        })
        .collect();
    if !grants.is_empty() {
        values["grant"] = Value::Array(grants);
    }
    if let Some(replication) = fields.get("replication").filter(|r| !r.is_null()) {
        values["replication_configuration"] = json!([replication]);
    }
    values
}

fn lifecycle(_: &Account, _key: &str, fields: &Map<String, Value>) -> Vec<ProviderResource> {
    let rules: Vec<Value> =
        fields.get("rules").and_then(Value::as_array).map(|rules| rules.iter().map(rule).collect()).unwrap_or_default();
    vec![part("aws_s3_bucket_lifecycle_configuration", json!({ "bucket": fields.get("bucket"), "rule": rules }))]
}

/// One canonical rule in the provider's shape; what the provider shape here does not name is
/// kept under reconcile's name, so a live rule that does more still differs.
fn rule(rule: &Value) -> Value {
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
