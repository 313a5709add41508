//! The `[s3]` section of desired.toml: buckets (the sccache bucket), their protection, tags and
//! lifecycle rules. This crate claims it ([`CLAIM`]); [`declared`] is what it holds, and
//! [`generate`] writes it for `import --generate`.

use std::collections::{BTreeMap, BTreeSet};

use reconcile_core::desired::{
    Case, Claim, DesiredError, Locator, Reference, Section, Template, check_key, check_unique_names, convert_tags,
    schema_of,
};
use reconcile_core::generate::{Entry, Found, Generated, key_for, templated};
use reconcile_core::{Account, Desired};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use toml::Spanned;

/// `[s3]`, listed after `[ecr]` where the file's keys are.
pub const CLAIM: Claim = Claim {
    name: "s3",
    after: Some("ecr"),
    types: Section::types::<RawS3>,
    publishes: Claim::NOTHING,
    read: |section| section.read(|locate, raw: RawS3, errors| convert(locate, &raw, errors)),
    schema: schema_of::<RawS3>,
};

/// The buckets desired.toml declares: none when it has no `[s3]`.
pub fn declared(desired: &Desired) -> &S3 {
    static NONE: S3 = S3 { buckets: Vec::new() };
    desired.section(CLAIM.name).and_then(Section::model::<S3>).unwrap_or(&NONE)
}

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
struct RawS3 {
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
    /// Takes it over though it exists without this deployment's mark (someone else made it).
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
fn convert(locate: &Locator<'_>, raw: &RawS3, errors: &mut Vec<DesiredError>) -> S3 {
    let mut buckets = Vec::new();
    for (key, bucket) in &raw.buckets {
        let key_path = format!("s3.buckets.{key}");
        if let Err(why) = check_key(key) {
            errors.push(locate.error(Some(bucket.span()), &key_path, why));
        }
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
        let lifecycle_rules =
            raw_bucket.lifecycle_rules.as_ref().map(|rules| lifecycle_rules(locate, &key_path, rules, errors));
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
    check_unique_names(locate, "s3.buckets", "bucket name", names, Case::Sensitive, errors);
    S3 { buckets }
}

/// A bucket's `lifecycle_rules` (under `key_path`), checked: at least one, each id unique, each
/// count of days 1 or more.
fn lifecycle_rules(
    locate: &Locator<'_>,
    key_path: &str,
    rules: &Spanned<Vec<Spanned<RawS3LifecycleRule>>>,
    errors: &mut Vec<DesiredError>,
) -> Vec<S3LifecycleRule> {
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

// `import --generate`'s half of the section: the buckets the account holds and desired.toml does
// not declare, as `[s3.buckets.<key>]` with their names templated on the account.

/// desired.toml's lines for the buckets in `found`: `name` (the account id as `${account_id}`),
/// `block_public_access` when it is off, `tags`, and `lifecycle_rules` when every rule is one
/// desired.toml can say (otherwise the lifecycle is left unmanaged, and that is said).
pub fn generate(found: &[&Found], desired: &Desired, account: &Account, _references: &[Reference]) -> Generated {
    let mut generated = Generated::default();
    let account = account.id.clone();
    let mut taken: Vec<String> = declared(desired).buckets.iter().map(|b| b.key.clone()).collect();
    for found in found {
        let live: crate::bucket::FoundBucket = match serde_json::from_value(Value::Object(found.live.clone())) {
            Ok(live) => live,
            Err(why) => {
                generated.left_out.push((format!("bucket `{}`", found.name), format!("it could not be read ({why})")));
                continue;
            }
        };
        let key = key_for(&found.name, desired, &account, "bucket", &taken);
        taken.push(key.clone());
        let table = ["s3", "buckets", key.as_str()];
        let name = if account.is_empty() { found.name.clone() } else { templated(&found.name, &account) };
        generated.push(&found.name, Entry::new(&table, "name", json!(name)));
        let blocked = live.spec.block_public_access;
        if !(blocked.block_public_acls
            || blocked.block_public_policy
            || blocked.ignore_public_acls
            || blocked.restrict_public_buckets)
        {
            generated.push(&found.name, Entry::new(&table, "block_public_access", json!(false)));
        }
        if !live.spec.tags.is_empty() {
            generated.push(&found.name, Entry::new(&table, "tags", json!(live.spec.tags)));
        }
        if let Some(rules) = &live.lifecycle_rules {
            match rules.iter().map(rule).collect::<Result<Vec<Value>, String>>() {
                Ok(rules) => generated
                    .push(&found.name, Entry::new(&table, "lifecycle_rules", Value::Array(rules)).ordered(&RULE_ORDER)),
                Err(why) => generated.notes.push(format!(
                    "bucket `{}`: its lifecycle rules are left unmanaged (no `lifecycle_rules`): {why}",
                    found.name
                )),
            }
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
    use std::path::Path;

    use super::*;

    fn parse(text: &str) -> Result<Desired, String> {
        Desired::parse_claimed(Path::new("desired.toml"), text, &[&CLAIM]).map_err(|errors| errors.to_string())
    }

    fn errors(text: &str) -> String {
        parse(text).expect_err("refused")
    }

    #[test]
    fn an_unknown_template_variable_is_an_error_and_known_ones_are_filled_in() {
        let text = "region = \"us-east-1\"\n[s3.buckets.sccache]\nname = \"rocm-bake-sccache-${acount_id}\"\n";
        assert_eq!(
            errors(text),
            "desired.toml:3:8: `s3.buckets.sccache.name`: unknown template variable `${acount_id}` in \
             `rocm-bake-sccache-${acount_id}`; known: `${account_id}`, `${region}`"
        );
        let desired = parse(&text.replace("acount_id", "account_id")).unwrap();
        assert_eq!(
            declared(&desired).buckets[0].name.render("123456789012", "us-east-1"),
            "rocm-bake-sccache-123456789012"
        );
    }

    #[test]
    fn what_aws_would_refuse_is_refused_before_it_with_cores_own_problems() {
        let text = r#"
region = "us-est-1"
[s3.buckets.a]
name = "192.168.1.1"
[s3.buckets.b]
name = "xn--cache"
[s3.buckets.c]
name = "cache-s3alias"
[s3.buckets.d]
name = "ok-bucket"
tags = { team = "rocm;rm" }
"#;
        insta::assert_snapshot!(errors(text), @r"
        desired.toml:2:10: `region`: `us-est-1` is not an AWS region name such as `us-east-1`
        desired.toml:4:8: `s3.buckets.a.name`: bucket name `192.168.1.1` is formatted as an IP address, which S3 does not allow
        desired.toml:6:8: `s3.buckets.b.name`: bucket name `xn--cache` starts with `xn--`, which S3 reserves
        desired.toml:8:8: `s3.buckets.c.name`: bucket name `cache-s3alias` ends with `-s3alias`, which S3 reserves
        desired.toml:11:17: `s3.buckets.d.tags.team`: tags may hold only letters, digits, spaces and `_ . : / = + - @`, not `;`
        ");
    }

    /// The one refusal of a file declaring bucket `a` with these lines.
    fn refusal(lines: &str) -> String {
        let said = errors(&format!("region = \"us-east-1\"\n[s3.buckets.a]\n{lines}\n"));
        assert_eq!(said.lines().count(), 1, "{said}");
        said.splitn(4, ':').nth(3).unwrap().trim().to_owned()
    }

    #[test]
    fn a_bucket_is_read_with_its_defaults_and_the_first_holds_the_lock() {
        let desired = parse(
            "region = \"us-east-1\"\n[s3.buckets.b]\nname = \"bbb\"\nblock_public_access = false\n[s3.buckets.a]\nname = \"aaa\"\nencryption = \"AES256\"\nlifecycle_rules = [{ id = \"x\", status = \"Disabled\", prefix = \"p/\", expiration_days = 3, abort_incomplete_multipart_upload_days = 1 }, { id = \"y\", expiration_days = 30 }]\n",
        )
        .unwrap();
        let s3 = declared(&desired);
        let [a, b] = s3.buckets.as_slice() else { panic!("two buckets") };
        assert_eq!((a.key.as_str(), a.block_public_access, a.encryption.as_str()), ("a", true, "AES256"));
        assert!(!b.block_public_access && b.lifecycle_rules.is_none());
        let rules = a.lifecycle_rules.as_ref().unwrap();
        assert_eq!(
            rules[0],
            S3LifecycleRule {
                id: "x".into(),
                enabled: false,
                prefix: "p/".into(),
                expiration_days: 3,
                abort_incomplete_multipart_upload_days: Some(1)
            }
        );
        assert!(rules[1].enabled && rules[1].prefix.is_empty());
        assert_eq!(s3.lock_bucket().map(|b| b.key.as_str()), Some("a"));
        assert!(declared(&parse("region = \"us-east-1\"\n").unwrap()).lock_bucket().is_none());
    }

    #[test]
    fn what_s3_would_refuse_of_a_bucket_and_its_rules_is_refused_with_its_key() {
        let name = "name = \"cache-b\"\n";
        assert_eq!(
            refusal(&format!("{name}encryption = \"aws:kms\"")),
            "`s3.buckets.a.encryption`: encryption `aws:kms` is not supported; use `AES256` (SSE-S3)"
        );
        let rule = |rule: &str| refusal(&format!("{name}lifecycle_rules = [{rule}]"));
        let id_length = "`s3.buckets.a.lifecycle_rules[0]`: `id` must be 1 to 255 characters long";
        assert_eq!(rule("{ id = \"\", expiration_days = 1 }"), id_length);
        assert_eq!(rule(&format!("{{ id = \"{}\", expiration_days = 1 }}", "i".repeat(256))), id_length);
        assert!(parse(&format!("region = \"us-east-1\"\n[s3.buckets.a]\n{name}lifecycle_rules = [{{ id = \"{}\", expiration_days = 1 }}]\n", "i".repeat(255))).is_ok());
        assert_eq!(
            refusal(&format!(
                "{name}lifecycle_rules = [{{ id = \"x\", expiration_days = 1 }}, {{ id = \"x\", expiration_days = 2 }}]"
            )),
            "`s3.buckets.a.lifecycle_rules[1]`: `id` `x` is used by another rule"
        );
        assert_eq!(
            rule("{ id = \"x\", expiration_days = 0 }"),
            "`s3.buckets.a.lifecycle_rules[0]`: `expiration_days` must be 1 or more"
        );
        assert_eq!(
            rule("{ id = \"x\", expiration_days = 1, abort_incomplete_multipart_upload_days = 0 }"),
            "`s3.buckets.a.lifecycle_rules[0]`: `abort_incomplete_multipart_upload_days` must be 1 or more"
        );
        assert_eq!(
            refusal(&format!("{name}lifecycle_rules = []")),
            "`s3.buckets.a.lifecycle_rules`: give at least one rule, or leave `lifecycle_rules` out to leave the \
             bucket's lifecycle unmanaged"
        );
    }

    #[test]
    fn a_bucket_name_follows_s3s_rules() {
        for good in ["abc", "a-b.c", "0ab", &"a".repeat(63), "rocm-bake-sccache-${account_id}"] {
            assert!(check_bucket_name(&Template::parse(good).unwrap().example()).is_ok(), "{good}");
        }
        let invalid = |name: &str| {
            format!(
                "bucket name `{name}` is not valid in S3: lowercase letters, digits, `-` and `.`, starting and ending \
                 with a letter or digit"
            )
        };
        for bad in ["Abc", "ab_c", "-abc", "abc-", ".abc", "abc.", "a..b"] {
            assert_eq!(check_bucket_name(bad), Err(invalid(bad)), "{bad}");
        }
        for length in ["ab", &"a".repeat(64)] {
            assert_eq!(
                check_bucket_name(length),
                Err(format!("bucket name `{length}` must be 3 to 63 characters long"))
            );
        }
        // Four dot-separated numbers are an IP address; three, or four with a letter, are not.
        assert!(check_bucket_name("10.0.0.1").unwrap_err().contains("IP address"));
        assert!(check_bucket_name("10.0.0").is_ok() && check_bucket_name("10.0.0.a1").is_ok());
    }

    #[test]
    fn one_bucket_name_under_two_keys_is_refused_naming_both() {
        let text = r#"
region = "us-east-1"
[s3.buckets.one]
name = "cache-${account_id}"
[s3.buckets.two]
name = "cache-${account_id}"
"#;
        insta::assert_snapshot!(errors(text), @r"
        desired.toml:6:8: `s3.buckets.two.name`: bucket name `cache-123456789012` is also declared by `s3.buckets.one` (line 4); one AWS name can be declared only once
        ");
    }

    #[test]
    fn its_type_errors_are_said_with_cores_and_nothing_else_then() {
        let text = "region = \"us-east-1\"\n[nightly]\nenabled = \"yes\"\n[s3.buckets.a]\nname = 3\nadopt = \"no\"\n[s3.buckets.b]\nname = \"xn--b\"\n";
        let said = errors(text);
        let lines: Vec<&str> = said.lines().collect();
        assert_eq!(lines.len(), 3, "{said}");
        assert!(lines[0].starts_with("desired.toml:3:11: `nightly.enabled`: invalid type: string"), "{said}");
        assert!(lines[1].starts_with("desired.toml:5:8: `s3.buckets.a.name`: invalid type: integer `3`"), "{said}");
        assert!(lines[2].starts_with("desired.toml:6:9: `s3.buckets.a.adopt`: invalid type: string"), "{said}");
        // A file without `[s3]` declares no bucket; one the claim is not given is refused.
        assert!(declared(&parse("region = \"us-east-1\"\n").unwrap()).buckets.is_empty());
        let unclaimed =
            Desired::parse(Path::new("desired.toml"), "region = \"us-east-1\"\n[s3.buckets.a]\nname = \"a-b-c\"\n")
                .unwrap_err()
                .to_string();
        assert!(unclaimed.starts_with("desired.toml:2:2: `s3`: unknown field `s3`"), "{unclaimed}");
    }
}

#[cfg(test)]
mod generate_tests {
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
