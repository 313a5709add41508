//! The `[s3]` section: buckets (the sccache bucket), their protection, tags and lifecycle rules.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::Deserialize;
use toml::Spanned;

use super::{DesiredError, Locator, Template, convert_tags};

#[derive(Debug, Clone, PartialEq, Default)]
pub struct S3 {
    /// Sorted by key.
    pub buckets: Vec<Bucket>,
}

/// Where the apply lock is kept, in the bucket [`S3::lock_bucket`] names. The runner's role may
/// not touch it (its derived policy denies the key), since the runner runs the nightly's code.
pub const APPLY_LOCK_KEY: &str = "reconcile/apply.lock";

impl S3 {
    /// The bucket that holds the apply lock: the first declared.
    pub fn lock_bucket(&self) -> Option<&Bucket> {
        self.buckets.first()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Bucket {
    /// The key under `[s3.buckets]`; the address name.
    pub key: String,
    /// The bucket name, which may use `${account_id}` and `${region}`.
    pub name: Template,
    /// All four Block Public Access settings on.
    pub block_public_access: bool,
    /// Default encryption; only SSE-S3 (`AES256`) is supported.
    pub encryption: String,
    pub tags: BTreeMap<String, String>,
    /// `None`: the bucket's lifecycle configuration is not managed.
    pub lifecycle_rules: Option<Vec<S3LifecycleRule>>,
    /// Takes over a bucket that exists without reconcile's tag (`adopt = true`).
    pub adopt: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct S3LifecycleRule {
    pub id: String,
    pub enabled: bool,
    /// `""` is the whole bucket.
    pub prefix: String,
    pub expiration_days: u32,
    pub abort_incomplete_multipart_upload_days: Option<u32>,
}

#[derive(Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawS3 {
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, RawBucket>")]
    buckets: BTreeMap<String, Spanned<RawBucket>>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawBucket {
    #[schemars(with = "String")]
    name: Spanned<String>,
    #[serde(default = "yes")]
    block_public_access: bool,
    #[schemars(with = "Option<String>")]
    encryption: Option<Spanned<String>>,
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, String>")]
    tags: BTreeMap<String, Spanned<String>>,
    #[schemars(with = "Option<Vec<RawS3LifecycleRule>>")]
    lifecycle_rules: Option<Spanned<Vec<Spanned<RawS3LifecycleRule>>>>,
    /// Takes it over though it exists without reconcile's `managed-by` tag (someone else made it).
    #[serde(default)]
    adopt: bool,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawS3LifecycleRule {
    id: String,
    #[serde(default)]
    status: RuleStatus,
    #[serde(default)]
    prefix: String,
    expiration_days: u32,
    abort_incomplete_multipart_upload_days: Option<u32>,
}

#[derive(Deserialize, Default, Clone, Copy, PartialEq, Eq, JsonSchema)]
enum RuleStatus {
    #[default]
    Enabled,
    Disabled,
}

/// Checks the `[s3]` section and converts it to the model.
pub(super) fn convert(locate: &Locator<'_>, raw: &RawS3, errors: &mut Vec<DesiredError>) -> S3 {
    let mut buckets = Vec::new();
    for (key, bucket) in &raw.buckets {
        let key_path = format!("s3.buckets.{key}");
        let raw_bucket = bucket.get_ref();
        let name_path = format!("{key_path}.name");
        let name = match Template::parse(raw_bucket.name.get_ref()) {
            Ok(template) => {
                if let Err(why) = check_bucket_name(&template.example()) {
                    errors.push(locate.error(Some(raw_bucket.name.span()), &name_path, why));
                }
                template
            }
            Err(why) => {
                errors.push(locate.error(Some(raw_bucket.name.span()), &name_path, why));
                Template::literal(raw_bucket.name.get_ref())
            }
        };
        if let Some(encryption) = &raw_bucket.encryption
            && encryption.get_ref() != "AES256"
        {
            errors.push(locate.error(
                Some(encryption.span()),
                &format!("{key_path}.encryption"),
                format!("encryption `{}` is not supported; use `AES256` (SSE-S3)", encryption.get_ref()),
            ));
        }
        let mut tags = BTreeMap::new();
        convert_tags(locate, &key_path, &raw_bucket.tags, &mut tags, errors);
        let lifecycle_rules = raw_bucket.lifecycle_rules.as_ref().map(|rules| {
            let rules_path = format!("{key_path}.lifecycle_rules");
            if rules.get_ref().is_empty() {
                errors.push(locate.error(
                    Some(rules.span()),
                    &rules_path,
                    "give at least one rule, or leave `lifecycle_rules` out to leave the bucket's lifecycle unmanaged",
                ));
            }
            let mut ids = BTreeSet::new();
            let mut converted = Vec::new();
            for (rule_idx, rule) in rules.get_ref().iter().enumerate() {
                let rule_path = format!("{rules_path}[{rule_idx}]");
                let raw_rule = rule.get_ref();
                let mut problems = Vec::new();
                if raw_rule.id.is_empty() || raw_rule.id.chars().count() > 255 {
                    problems.push("`id` must be 1 to 255 characters long".to_owned());
                }
                if !ids.insert(raw_rule.id.clone()) {
                    problems.push(format!("`id` `{}` is used by another rule", raw_rule.id));
                }
                if raw_rule.expiration_days == 0 {
                    problems.push("`expiration_days` must be 1 or more".to_owned());
                }
                if raw_rule.abort_incomplete_multipart_upload_days == Some(0) {
                    problems.push("`abort_incomplete_multipart_upload_days` must be 1 or more".to_owned());
                }
                for problem in problems {
                    errors.push(locate.error(Some(rule.span()), &rule_path, problem));
                }
                converted.push(S3LifecycleRule {
                    id: raw_rule.id.clone(),
                    enabled: raw_rule.status == RuleStatus::Enabled,
                    prefix: raw_rule.prefix.clone(),
                    expiration_days: raw_rule.expiration_days,
                    abort_incomplete_multipart_upload_days: raw_rule.abort_incomplete_multipart_upload_days,
                });
            }
            converted
        });
        buckets.push(Bucket {
            key: key.clone(),
            name,
            block_public_access: raw_bucket.block_public_access,
            encryption: "AES256".to_owned(),
            tags,
            lifecycle_rules,
            adopt: raw_bucket.adopt,
        });
    }
    // Compared as AWS will see them: after the templates are filled in.
    let names = raw
        .buckets
        .iter()
        .zip(&buckets)
        .map(|((key, raw_bucket), bucket)| (key.as_str(), bucket.name.example(), raw_bucket.get_ref().name.span()))
        .collect();
    super::check_unique_names(locate, "s3.buckets", "bucket name", names, super::Case::Sensitive, errors);
    S3 { buckets }
}

/// S3's bucket naming rules for general purpose buckets.
fn check_bucket_name(name: &str) -> Result<(), String> {
    let valid_chars = name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.');
    let alphanumeric = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !(3..=63).contains(&name.len()) {
        return Err(format!("bucket name `{name}` must be 3 to 63 characters long"));
    }
    if !valid_chars || !alphanumeric(name.chars().next()) || !alphanumeric(name.chars().last()) || name.contains("..") {
        return Err(format!(
            "bucket name `{name}` is not valid in S3: lowercase letters, digits, `-` and `.`, \
             starting and ending with a letter or digit"
        ));
    }
    // S3's bucket naming rules reserve these forms (S3 User Guide, "General purpose bucket
    // naming rules").
    if name.split('.').count() == 4 && name.split('.').all(|part| part.parse::<u8>().is_ok()) {
        return Err(format!("bucket name `{name}` is formatted as an IP address, which S3 does not allow"));
    }
    let reserved_prefixes = ["xn--", "sthree-", "amzn-s3-demo-"];
    let reserved_suffixes = ["-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"];
    if let Some(prefix) = reserved_prefixes.iter().find(|prefix| name.starts_with(*prefix)) {
        return Err(format!("bucket name `{name}` starts with `{prefix}`, which S3 reserves"));
    }
    if let Some(suffix) = reserved_suffixes.iter().find(|suffix| name.ends_with(*suffix)) {
        return Err(format!("bucket name `{name}` ends with `{suffix}`, which S3 reserves"));
    }
    Ok(())
}
