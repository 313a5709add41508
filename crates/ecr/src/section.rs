//! The `[ecr]` section of desired.toml: repositories, their settings and tags, and named
//! lifecycle policies. This crate claims it ([`CLAIM`]); [`declared`] is what it holds, and
//! `generate.rs` writes it for `import --generate`.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use crate::expiry::{Count, Policy, RuleAction, TagStatus as EvaluatedStatus};
use reconcile_core::desired::{Claim, DesiredError, DesiredFinding, Locator, Read, Section, convert_tags, schema_of};
use reconcile_core::plan::Severity;
use reconcile_core::{Address, Desired};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toml::Spanned;

/// `[ecr]`, listed first of the resources' sections where the file's keys are.
pub const CLAIM: Claim = Claim {
    name: "ecr",
    after: Some("bake_variables"),
    types: Section::types::<RawEcr>,
    publishes: Claim::NOTHING,
    read,
    schema: schema_of::<RawEcr>,
};

fn read(section: &Section) -> Read {
    let raw: RawEcr = match section.parse() {
        Ok(raw) => raw,
        Err(errors) => return Read::refused(errors.0),
    };
    let (mut errors, mut findings) = (Vec::new(), Vec::new());
    let ecr = convert(&section.locator(), &raw, &mut errors, &mut findings);
    Read { findings, ..Read::model(ecr, errors) }
}

/// The repositories and policies desired.toml declares: none when it has no `[ecr]`.
pub fn declared(desired: &Desired) -> &Ecr {
    static NONE: Ecr = Ecr { repositories: Vec::new() };
    desired.section(CLAIM.name).and_then(Section::model::<Ecr>).unwrap_or(&NONE)
}

/// Finding code: a lifecycle rule can expire (or archive) tagged images; one such rule once
/// expired the live `latest-<arch>-nightly` tag. An error unless the repository sets
/// [`ALLOW_TAGGED_EXPIRY`]. Stable; never reused.
pub const TAGGED_EXPIRY: &str = "W301";
/// Finding code: untagged images expire by age, so a quiet fortnight empties the cache.
pub const AGE_BASED_UNTAGGED_EXPIRY: &str = "W302";
/// Finding code: fewer than [`MIN_UNTAGGED_KEPT`] untagged images are kept.
pub const FEW_UNTAGGED_KEPT: &str = "W303";
/// Finding code: no rule ever expires untagged images, so they accumulate without bound.
pub const UNTAGGED_NEVER_EXPIRE: &str = "W304";
/// The repository key that allows a lifecycle rule over tagged images.
pub const ALLOW_TAGGED_EXPIRY: &str = "allow_tagged_expiry";

/// The fewest untagged images a policy should keep: a run in flight may still read the
/// generation the next push orphans, and its cache import the one before.
pub const MIN_UNTAGGED_KEPT: u64 = 3;

/// ECR's limit on the text of a lifecycle policy.
const MAX_POLICY_CHARS: usize = 30_720;
/// ECR's limit of wildcards in one `tagPatternList` entry.
const MAX_WILDCARDS: usize = 4;

/// The ECR section: repositories, each with its lifecycle policy.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Ecr {
    /// Sorted by name.
    pub repositories: Vec<EcrRepository>,
}

impl Ecr {
    /// The declared repositories' names.
    pub fn names(&self) -> BTreeSet<&str> {
        self.repositories.iter().map(|r| r.name.as_str()).collect()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct EcrRepository {
    pub name: String,
    pub image_tag_mutability: TagMutability,
    pub scan_on_push: bool,
    /// How ECR encrypts its images at rest, fixed when the repository is made.
    pub encryption_type: EncryptionType,
    /// The KMS key of `KMS`/`KMS_DSSE`; `None`: AWS's managed key for ECR (not compared).
    pub kms_key: Option<String>,
    pub tags: BTreeMap<String, String>,
    pub lifecycle_policy: LifecyclePolicy,
    /// Allows its lifecycle policy to expire tagged images (`allow_tagged_expiry = true`).
    pub allow_tagged_expiry: bool,
    /// Takes over a repository that exists without reconcile's tag (`adopt = true`).
    pub adopt: bool,
}

/// A named ECR lifecycle policy, already converted to the JSON document ECR takes.
#[derive(Debug, Clone, PartialEq)]
pub struct LifecyclePolicy {
    /// The key under `[ecr.lifecycle_policies]`.
    pub name: String,
    pub document: serde_json::Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
pub enum TagMutability {
    #[serde(rename = "MUTABLE")]
    Mutable,
    #[serde(rename = "IMMUTABLE")]
    Immutable,
}

/// ECR's encryption types. AWS makes a repository with `AES256` when none is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
pub enum EncryptionType {
    #[serde(rename = "AES256")]
    Aes256,
    #[serde(rename = "KMS")]
    Kms,
    #[serde(rename = "KMS_DSSE")]
    KmsDsse,
}

impl EncryptionType {
    pub fn as_str(self) -> &'static str {
        match self {
            EncryptionType::Aes256 => "AES256",
            EncryptionType::Kms => "KMS",
            EncryptionType::KmsDsse => "KMS_DSSE",
        }
    }
}

impl TagMutability {
    pub fn as_str(self) -> &'static str {
        match self {
            TagMutability::Mutable => "MUTABLE",
            TagMutability::Immutable => "IMMUTABLE",
        }
    }
}

#[derive(Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
struct RawEcr {
    #[serde(default)]
    defaults: RawRepository,
    #[serde(default)]
    lifecycle_policies: BTreeMap<String, RawLifecyclePolicy>,
    /// `None` when the file has no `[ecr.repositories]` at all; an empty one is a mistake.
    #[serde(default)]
    #[schemars(with = "Option<BTreeMap<String, RawRepository>>")]
    repositories: Option<Spanned<BTreeMap<String, Spanned<RawRepository>>>>,
}

#[derive(Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
struct RawRepository {
    #[schemars(with = "Option<String>")]
    lifecycle_policy: Option<Spanned<String>>,
    image_tag_mutability: Option<TagMutability>,
    scan_on_push: Option<bool>,
    /// How ECR encrypts the repository's images at rest: `AES256` (AWS's default), `KMS` or
    /// `KMS_DSSE`. ECR sets it only when it makes the repository: a change is a replacement,
    /// which reconcile never carries out (the repository's images would go with it).
    encryption_type: Option<EncryptionType>,
    /// The ARN of the KMS key for `KMS` or `KMS_DSSE`; unset: AWS's managed key for ECR.
    #[schemars(with = "Option<String>")]
    kms_key: Option<Spanned<String>>,
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, String>")]
    tags: BTreeMap<String, Spanned<String>>,
    /// Allows this repository's lifecycle policy to expire tagged images. Only on a repository,
    /// never in `[ecr.defaults]`: it is a decision about one repository's live tags.
    #[schemars(with = "Option<bool>")]
    allow_tagged_expiry: Option<Spanned<bool>>,
    /// Takes over this repository though it exists without this deployment's mark (someone else
    /// made it): its policy and tags become desired.toml's. Only on a repository.
    #[schemars(with = "Option<bool>")]
    adopt: Option<Spanned<bool>>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawLifecyclePolicy {
    #[schemars(with = "Vec<RawLifecycleRule>")]
    rules: Spanned<Vec<Spanned<RawLifecycleRule>>>,
}

// ECR's own JSON names, so the file reads like the AWS documentation.
#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawLifecycleRule {
    rule_priority: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    selection: RawSelection,
    action: RawRuleAction,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawSelection {
    tag_status: TagStatus,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tag_prefix_list: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tag_pattern_list: Vec<String>,
    count_type: CountType,
    #[serde(skip_serializing_if = "Option::is_none")]
    count_unit: Option<CountUnit>,
    count_number: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    storage_class: Option<StorageClass>,
}

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawRuleAction {
    #[serde(rename = "type")]
    kind: ActionType,
    #[serde(skip_serializing_if = "Option::is_none")]
    target_storage_class: Option<StorageClass>,
}

#[derive(Deserialize, Serialize, Clone, Copy, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum TagStatus {
    Tagged,
    Untagged,
    Any,
}

#[derive(Deserialize, Serialize, Clone, Copy, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
enum CountType {
    ImageCountMoreThan,
    SinceImagePushed,
    SinceImagePulled,
    SinceImageTransitioned,
}

#[derive(Deserialize, Serialize, Clone, Copy, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum CountUnit {
    Days,
}

#[derive(Deserialize, Serialize, Clone, Copy, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum StorageClass {
    Standard,
    Archive,
}

#[derive(Deserialize, Serialize, Clone, Copy, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum ActionType {
    Expire,
    Transition,
}

/// What desired.toml's `[ecr]` already says, for `import --generate`: whether it has any of
/// it, its defaults, and its named policies in canonical form.
pub(crate) struct Existing {
    pub any: bool,
    pub defaults: Defaults,
    pub policies: Vec<(String, serde_json::Value)>,
}

pub(crate) fn existing(desired: &Desired) -> Existing {
    let raw: Option<RawEcr> = desired.section(CLAIM.name).and_then(|section| section.parse().ok());
    let Some(raw) = raw else {
        return Existing { any: false, defaults: Default::default(), policies: Vec::new() };
    };
    let d = &raw.defaults;
    let defaults = Defaults {
        policy: d.lifecycle_policy.as_ref().map(|p| p.get_ref().clone()),
        mutability: d.image_tag_mutability.map(|m| m.as_str().to_owned()),
        scan_on_push: d.scan_on_push,
        encryption: d.encryption_type.map(|e| e.as_str().to_owned()),
        kms_key: d.kms_key.as_ref().map(|k| k.get_ref().clone()),
        tags: d.tags.iter().map(|(k, v)| (k.clone(), v.get_ref().clone())).collect(),
    };
    let policies = raw
        .lifecycle_policies
        .iter()
        .map(|(name, policy)| {
            let rules: Vec<serde_json::Value> =
                policy.rules.get_ref().iter().filter_map(|rule| serde_json::to_value(rule.get_ref()).ok()).collect();
            (name.clone(), crate::canonical_policy(&serde_json::json!({ "rules": rules })))
        })
        .collect();
    let any = raw.repositories.is_some() || !raw.lifecycle_policies.is_empty() || {
        let d = &raw.defaults;
        d.lifecycle_policy.is_some()
            || d.image_tag_mutability.is_some()
            || d.scan_on_push.is_some()
            || d.encryption_type.is_some()
            || d.kms_key.is_some()
            || !d.tags.is_empty()
    };
    Existing { any, defaults, policies }
}

/// Whether a live lifecycle policy (canonical) can be written as `[ecr.lifecycle_policies]`
/// rules: only `rules`, each of the fields desired.toml knows.
pub(crate) fn expressible(policy: &serde_json::Value) -> Result<(), String> {
    let Some(object) = policy.as_object() else { return Err("it is not a JSON object".to_owned()) };
    if let Some(other) = object.keys().find(|key| *key != "rules") {
        return Err(format!("it has `{other}` besides its rules"));
    }
    let rules = object.get("rules").cloned().unwrap_or(serde_json::Value::Null);
    serde_json::from_value::<Vec<RawLifecycleRule>>(rules).map(|_| ()).map_err(|e| e.to_string())
}

/// Checks the `[ecr]` section and converts it to the model.
fn convert(
    locate: &Locator<'_>,
    raw: &RawEcr,
    errors: &mut Vec<DesiredError>,
    findings: &mut Vec<DesiredFinding>,
) -> Ecr {
    let (policies, analyses) = lifecycle_policies(locate, raw, errors);
    let mut used_policies = BTreeSet::new();
    let empty = BTreeMap::new();
    let declared = match &raw.repositories {
        Some(repositories) if repositories.get_ref().is_empty() => {
            errors.push(locate.error(
                Some(repositories.span()),
                "ecr.repositories",
                "`[ecr.repositories]` declares no repository: list the nightly's repositories, or leave the table out",
            ));
            &empty
        }
        Some(repositories) => repositories.get_ref(),
        None => &empty,
    };
    let defaults = &raw.defaults;
    refuse_one_repositorys_decisions(locate, defaults, errors);
    let mut repositories = Vec::new();
    for (name, repository) in declared {
        let key_path = format!("ecr.repositories.{name}");
        if let Err(why) = check_repository_name(name) {
            errors.push(locate.error(Some(repository.span()), &key_path, why));
        }
        let repository_ref = repository.get_ref();
        let lifecycle_policy = lifecycle_policy_of(locate, raw, &policies, (&key_path, repository), errors);
        let encryption_type =
            repository_ref.encryption_type.or(defaults.encryption_type).unwrap_or(EncryptionType::Aes256);
        let kms_key = kms_key_of(locate, defaults, (name, &key_path, repository_ref), encryption_type, errors);
        let tags = tags_of(locate, defaults, (&key_path, repository), errors);
        let allow_tagged_expiry = repository_ref.allow_tagged_expiry.as_ref().is_some_and(|a| *a.get_ref());
        if let Some(policy) = &lifecycle_policy {
            used_policies.insert(policy.name.clone());
            if let Some(tagged) = analyses.get(&policy.name).and_then(|a| a.tagged.as_ref()) {
                findings.push(tagged_expiry(locate, name, &policy.name, tagged, allow_tagged_expiry));
            }
        }

        if let Some(lifecycle_policy) = lifecycle_policy {
            repositories.push(EcrRepository {
                name: name.clone(),
                image_tag_mutability: repository_ref
                    .image_tag_mutability
                    .or(defaults.image_tag_mutability)
                    .unwrap_or(TagMutability::Mutable),
                scan_on_push: repository_ref.scan_on_push.or(defaults.scan_on_push).unwrap_or(false),
                encryption_type,
                kms_key: kms_key.map(|key| key.get_ref().clone()),
                tags,
                lifecycle_policy,
                allow_tagged_expiry,
                adopt: repository_ref.adopt.as_ref().is_some_and(|a| *a.get_ref()),
            });
        }
    }

    // Said once per policy, however many repositories use it.
    for name in &used_policies {
        findings.extend(analyses.get(name).into_iter().flat_map(|analysis| {
            analysis.warnings.iter().map(|(code, span, path, message)| {
                DesiredFinding::warning(code, None, locate.error(Some(span.clone()), path, message.clone()))
            })
        }));
    }

    Ecr { repositories }
}

/// `[ecr.lifecycle_policies]`, each checked: the documents of those that pass, by name, and
/// what each means for the nightly.
fn lifecycle_policies(
    locate: &Locator<'_>,
    raw: &RawEcr,
    errors: &mut Vec<DesiredError>,
) -> (BTreeMap<String, serde_json::Value>, BTreeMap<String, PolicyAnalysis>) {
    let mut policies = BTreeMap::new();
    let mut analyses = BTreeMap::new();
    for (name, policy) in &raw.lifecycle_policies {
        let key_path = format!("ecr.lifecycle_policies.{name}");
        if let Some((document, analysis)) = lifecycle_document(locate, &key_path, policy, errors) {
            policies.insert(name.clone(), document);
            analyses.insert(name.clone(), analysis);
        }
    }
    (policies, analyses)
}

/// A repository's tags (at `key_path`): `[ecr.defaults]`'s, then its own, at most ECR's 50.
fn tags_of(
    locate: &Locator<'_>,
    defaults: &RawRepository,
    (key_path, repository): (&str, &Spanned<RawRepository>),
    errors: &mut Vec<DesiredError>,
) -> BTreeMap<String, String> {
    let mut tags = BTreeMap::new();
    for (section, section_tags) in [("ecr.defaults", &defaults.tags), (key_path, &repository.get_ref().tags)] {
        convert_tags(locate, section, section_tags, &mut tags, errors);
    }
    if tags.len() > 50 {
        errors.push(locate.error(
            Some(repository.span()),
            key_path,
            format!("{} tags, more than the 50 ECR allows on a repository", tags.len()),
        ));
    }
    tags
}

/// `allow_tagged_expiry` and `adopt` in `[ecr.defaults]`: each is a decision about one
/// repository, refused for them all.
fn refuse_one_repositorys_decisions(locate: &Locator<'_>, defaults: &RawRepository, errors: &mut Vec<DesiredError>) {
    if let Some(allow) = &defaults.allow_tagged_expiry {
        errors.push(locate.error(
            Some(allow.span()),
            "ecr.defaults.allow_tagged_expiry",
            "`allow_tagged_expiry` is a decision about one repository's live tags: set it on each repository \
             it is meant for, not in `[ecr.defaults]`",
        ));
    }
    if let Some(adopt) = &defaults.adopt {
        errors.push(locate.error(
            Some(adopt.span()),
            "ecr.defaults.adopt",
            "`adopt` takes over one repository someone else made: set it on that repository, not in `[ecr.defaults]`",
        ));
    }
}

/// The lifecycle policy a repository (at `key_path`) uses, its own or `[ecr.defaults]`'s, from
/// the policies that passed their checks; `None`, saying why, when it has none or names none.
fn lifecycle_policy_of(
    locate: &Locator<'_>,
    raw: &RawEcr,
    policies: &BTreeMap<String, serde_json::Value>,
    (key_path, repository): (&str, &Spanned<RawRepository>),
    errors: &mut Vec<DesiredError>,
) -> Option<LifecyclePolicy> {
    let policy_ref =
        repository.get_ref().lifecycle_policy.as_ref().map(|p| (p, format!("{key_path}.lifecycle_policy"))).or_else(
            || raw.defaults.lifecycle_policy.as_ref().map(|p| (p, "ecr.defaults.lifecycle_policy".to_owned())),
        );
    let Some((policy_name, policy_key)) = policy_ref else {
        errors.push(locate.error(
            Some(repository.span()),
            key_path,
            "repository has no lifecycle policy: set `lifecycle_policy` here or in `[ecr.defaults]` \
             (without one, untagged images accumulate without bound)",
        ));
        return None;
    };
    if let Some(document) = policies.get(policy_name.get_ref()) {
        return Some(LifecyclePolicy {
            name: policy_name.get_ref().clone(),
            document: serde_json::Value::clone(document),
        });
    }
    // A policy that failed its own checks was reported there already.
    if !raw.lifecycle_policies.contains_key(policy_name.get_ref()) {
        errors.push(locate.error(
            Some(policy_name.span()),
            &policy_key,
            format!("no lifecycle policy named `{}` in `[ecr.lifecycle_policies]`", policy_name.get_ref()),
        ));
    }
    None
}

/// The KMS key repository `name` (at `key_path`) is encrypted with, its own or
/// `[ecr.defaults]`'s: refused with AES256, which takes none, and when it is not an ARN.
fn kms_key_of<'a>(
    locate: &Locator<'_>,
    defaults: &'a RawRepository,
    (name, key_path, repository): (&str, &str, &'a RawRepository),
    encryption_type: EncryptionType,
    errors: &mut Vec<DesiredError>,
) -> Option<&'a Spanned<String>> {
    let (key, key_at) = match (&repository.kms_key, &defaults.kms_key) {
        (Some(key), _) => (key, format!("{key_path}.kms_key")),
        (None, Some(key)) => (key, "ecr.defaults.kms_key".to_owned()),
        (None, None) => return None,
    };
    if encryption_type == EncryptionType::Aes256 {
        errors.push(locate.error(
            Some(key.span()),
            &key_at,
            format!(
                "repository `{name}` is encrypted with AES256, which takes no KMS key: set \
                 `encryption_type = \"KMS\"` (or `KMS_DSSE`) with it, or remove the key"
            ),
        ));
    } else if !key.get_ref().starts_with("arn:") {
        errors.push(locate.error(
            Some(key.span()),
            &key_at,
            format!("`{}` is not a KMS key's ARN (ECR answers with the ARN, so only it compares)", key.get_ref()),
        ));
    }
    Some(key)
}

/// The finding of repository `name` using lifecycle policy `policy`, one of whose rules can
/// expire a tagged image (`tagged`: its key path, place and what it does): an error unless the
/// repository allows it.
fn tagged_expiry(
    locate: &Locator<'_>,
    name: &str,
    policy: &str,
    (rule_path, span, why): &(String, Range<usize>, String),
    allowed: bool,
) -> DesiredFinding {
    let (severity, overridden_by, consequence) = if allowed {
        (Severity::Warning, Some(ALLOW_TAGGED_EXPIRY), "")
    } else {
        (
            Severity::Error,
            None,
            ": one such rule once expired the live nightly tag; expire only untagged images, or set \
             `allow_tagged_expiry = true` on the repository if it must",
        )
    };
    DesiredFinding {
        code: TAGGED_EXPIRY,
        severity,
        address: Some(Address::new(crate::LIFECYCLE_POLICY, name)),
        location: locate.error(
            Some(span.clone()),
            rule_path,
            format!("repository `{name}` uses lifecycle policy `{policy}`, whose {why}{consequence}"),
        ),
        overridden_by,
    }
}

/// What a lifecycle policy's rules mean for the nightly, found once per policy.
#[derive(Default)]
struct PolicyAnalysis {
    /// The first rule that can expire or archive a tagged image: its key path, place and what it does.
    tagged: Option<(String, Range<usize>, String)>,
    /// Policy-wide warnings: code, place, key path, message.
    warnings: Vec<(&'static str, Range<usize>, String, String)>,
}

/// Reads the policy with the evaluator and finds what would hurt the nightly.
fn analyze(key_path: &str, policy: &RawLifecyclePolicy, document: &serde_json::Value) -> PolicyAnalysis {
    let mut analysis = PolicyAnalysis::default();
    let Ok(evaluated) = Policy::parse(document) else { return analysis };
    // Rules in the file's order, to point at the one the evaluator names.
    let place = |priority: u32| {
        let rules = policy.rules.get_ref();
        let idx = rules.iter().position(|r| r.get_ref().rule_priority == priority).unwrap_or(0);
        (format!("{key_path}.rules[{idx}]"), rules.get(idx).map_or(policy.rules.span(), |r| r.span()))
    };
    if let Some(rule) = evaluated.rule_over_tagged_images() {
        let (path, span) = place(rule.priority);
        let status = if rule.tag_status == EvaluatedStatus::Any { "any" } else { "tagged" };
        let verb = if rule.action == RuleAction::Transition { "archive" } else { "expire" };
        analysis.tagged =
            Some((path, span, format!("rule {} (`tagStatus = \"{status}\"`) can {verb} tagged images", rule.priority)));
    }
    match evaluated.untagged_rule() {
        None => analysis.warnings.push((
            UNTAGGED_NEVER_EXPIRE,
            policy.rules.span(),
            format!("{key_path}.rules"),
            "no rule expires untagged images, so they accumulate without bound (each push orphans one); add a \
             `tagStatus = \"untagged\"` rule with `countType = \"imageCountMoreThan\"`"
                .to_owned(),
        )),
        Some(rule) => {
            let (path, span) = place(rule.priority);
            match rule.count {
                Count::MoreThan(kept) if kept < MIN_UNTAGGED_KEPT => analysis.warnings.push((
                    FEW_UNTAGGED_KEPT,
                    span,
                    path,
                    format!(
                        "rule {} keeps only {kept} untagged image(s): a run in flight may still read the generation \
                         the next push orphans; keep at least {MIN_UNTAGGED_KEPT}",
                        rule.priority
                    ),
                )),
                Count::MoreThan(_) => {}
                Count::SincePushed(_) | Count::SincePulled(_) | Count::SinceTransitioned(_) => {
                    analysis.warnings.push((
                        AGE_BASED_UNTAGGED_EXPIRY,
                        span,
                        path,
                        format!(
                            "rule {} expires untagged images by age: a quiet fortnight with no nightly empties the \
                             cache; count them instead (`countType = \"imageCountMoreThan\"`)",
                            rule.priority
                        ),
                    ));
                }
            }
        }
    }
    analysis
}

/// Checks a lifecycle policy against the rules ECR enforces and converts it to ECR's JSON.
fn lifecycle_document(
    locate: &Locator<'_>,
    key_path: &str,
    policy: &RawLifecyclePolicy,
    errors: &mut Vec<DesiredError>,
) -> Option<(serde_json::Value, PolicyAnalysis)> {
    let n_errors = errors.len();
    let untagged_rules =
        policy.rules.get_ref().iter().filter(|r| r.get_ref().selection.tag_status == TagStatus::Untagged).count();
    if untagged_rules > 1 {
        errors.push(locate.error(
            Some(policy.rules.span()),
            &format!("{key_path}.rules"),
            format!("{untagged_rules} rules select untagged images; ECR allows only one"),
        ));
    }
    if policy.rules.get_ref().is_empty() {
        errors.push(locate.error(
            Some(policy.rules.span()),
            &format!("{key_path}.rules"),
            "a lifecycle policy needs at least one rule",
        ));
    }
    let mut priorities = BTreeSet::new();
    let max_priority = policy.rules.get_ref().iter().map(|r| r.get_ref().rule_priority).max().unwrap_or(0);
    for (rule_idx, rule) in policy.rules.get_ref().iter().enumerate() {
        let rule_path = format!("{key_path}.rules[{rule_idx}]");
        for problem in rule_problems(rule.get_ref(), &mut priorities, max_priority) {
            errors.push(locate.error(Some(rule.span()), &rule_path, problem));
        }
    }
    if errors.len() > n_errors {
        return None;
    }
    let rules: Vec<serde_json::Value> = policy
        .rules
        .get_ref()
        .iter()
        .map(|rule| serde_json::to_value(rule.get_ref()).expect("lifecycle rules always serialize"))
        .collect();
    let document = serde_json::json!({ "rules": rules });
    let length = serde_json::to_string(&document).map_or(0, |text| text.chars().count());
    if length > MAX_POLICY_CHARS {
        errors.push(locate.error(
            Some(policy.rules.span()),
            &format!("{key_path}.rules"),
            format!("the policy is {length} characters as sent to ECR, more than the {MAX_POLICY_CHARS} it accepts"),
        ));
        return None;
    }
    let analysis = analyze(key_path, policy, &document);
    Some((document, analysis))
}

/// What ECR would refuse of one rule, or what it would do unasked: its priority (unique among
/// `priorities`, the highest, `max_priority`, for an `any` rule), its selection and its action.
fn rule_problems(rule: &RawLifecycleRule, priorities: &mut BTreeSet<u32>, max_priority: u32) -> Vec<String> {
    let selection = &rule.selection;
    let mut problems = Vec::new();
    if rule.rule_priority == 0 {
        problems.push("`rulePriority` must be 1 or more".to_owned());
    }
    if !priorities.insert(rule.rule_priority) {
        problems.push(format!("`rulePriority` {} is used by another rule", rule.rule_priority));
    }
    if selection.count_number == 0 {
        problems.push("`selection.countNumber` must be 1 or more".to_owned());
    }
    let has_tag_lists = !selection.tag_prefix_list.is_empty() || !selection.tag_pattern_list.is_empty();
    match selection.tag_status {
        TagStatus::Tagged if !has_tag_lists => {
            problems.push("a `tagged` selection needs `tagPrefixList` or `tagPatternList`".to_owned());
        }
        TagStatus::Tagged if !selection.tag_prefix_list.is_empty() && !selection.tag_pattern_list.is_empty() => {
            problems.push("use `tagPrefixList` or `tagPatternList`, not both".to_owned());
        }
        TagStatus::Untagged | TagStatus::Any if has_tag_lists => problems.push(format!(
            "a `{}` selection takes no `tagPrefixList` or `tagPatternList`",
            if selection.tag_status == TagStatus::Any { "any" } else { "untagged" }
        )),
        TagStatus::Any if rule.rule_priority != max_priority => problems
            .push("a rule with `tagStatus = \"any\"` must have the highest `rulePriority` of the policy".to_owned()),
        _ => {}
    }
    for pattern in &selection.tag_pattern_list {
        if pattern.matches('*').count() > MAX_WILDCARDS {
            problems.push(format!(
                "`tagPatternList` entry `{pattern}` has more than {MAX_WILDCARDS} wildcards, ECR's limit"
            ));
        }
    }
    match (selection.count_type, selection.count_unit) {
        (CountType::ImageCountMoreThan, Some(_)) => {
            problems.push("`imageCountMoreThan` takes no `countUnit`".to_owned());
        }
        (CountType::ImageCountMoreThan, None) | (_, Some(CountUnit::Days)) => {}
        (_, None) => problems.push("an age-based `countType` needs `countUnit = \"days\"`".to_owned()),
    }
    match (rule.action.kind, rule.action.target_storage_class) {
        (ActionType::Transition, None) => {
            problems.push("a `transition` action needs `targetStorageClass`".to_owned());
        }
        (ActionType::Expire, Some(_)) => {
            problems.push("an `expire` action takes no `targetStorageClass`".to_owned());
        }
        _ => {}
    }
    problems
}

/// ECR's repository name rule: lowercase path components of `[a-z0-9]` runs joined by single
/// `.`, `_` or `-`, separated by `/`, 2 to 256 characters.
fn check_repository_name(name: &str) -> Result<(), String> {
    let valid_component = |component: &str| {
        !component.is_empty()
            && component
                .split(['.', '_', '-'])
                .all(|run| !run.is_empty() && run.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()))
    };
    if !(2..=256).contains(&name.len()) {
        return Err(format!("repository name `{name}` must be 2 to 256 characters long"));
    }
    if !name.split('/').all(valid_component) {
        return Err(format!(
            "repository name `{name}` is not valid in ECR: lowercase letters and digits, \
             separated by single `.`, `_`, `-` or `/`"
        ));
    }
    Ok(())
}

/// The settings a repository takes when it says none: `[ecr.defaults]`, then ECR's own.
#[derive(Default)]
pub(crate) struct Defaults {
    pub policy: Option<String>,
    pub mutability: Option<String>,
    pub scan_on_push: Option<bool>,
    pub encryption: Option<String>,
    pub kms_key: Option<String>,
    pub tags: BTreeMap<String, String>,
}

#[cfg(test)]
mod tests {
    //! The `[ecr]` section: what it fills in, what it refuses (as ECR would, before ECR sees it)
    //! and what it warns about, each with its key.

    use super::*;
    use reconcile_core::desired::testing::Files;

    const FILES: Files = Files(&[&CLAIM]);

    fn parse(text: &str) -> Result<Desired, String> {
        FILES.parse(text)
    }

    fn refusals(text: &str) -> Vec<String> {
        FILES.refusals(text)
    }

    fn findings(text: &str) -> Vec<String> {
        FILES.findings(text)
    }

    fn errors(text: &str) -> String {
        parse(text).expect_err("the file should be refused")
    }

    const POLICY: &str = r#"
[ecr.lifecycle_policies.keep-3-untagged]
rules = [
  { rulePriority = 1, selection = { tagStatus = "untagged", countType = "imageCountMoreThan", countNumber = 3 }, action = { type = "expire" } },
]
"#;

    const KEEP_3: &str = r#"{ rulePriority = 1, selection = { tagStatus = "untagged", countType = "imageCountMoreThan", countNumber = 3 }, action = { type = "expire" } }"#;

    /// A file with one policy `p` of `rules`, the defaults `defaults` and the repositories
    /// `repositories` (TOML lines under `[ecr.repositories]`).
    fn file(rules: &[&str], defaults: &str, repositories: &str) -> String {
        format!(
            "region = \"us-east-1\"\n[ecr.defaults]\n{defaults}\n[ecr.lifecycle_policies.p]\nrules = [\n{}\n]\n[ecr.repositories]\n{repositories}\n",
            rules.join(",\n")
        )
    }

    fn rule(priority: u32, selection: &str, action: &str) -> String {
        format!("{{ rulePriority = {priority}, selection = {{ {selection} }}, action = {{ {action} }} }}")
    }

    #[test]
    fn the_declared_names_and_the_settings_as_aws_spells_them() {
        let desired = parse(&file(&[KEEP_3], "lifecycle_policy = \"p\"", "vllm = {}\npytorch = {}")).unwrap();
        assert_eq!(declared(&desired).names(), BTreeSet::from(["pytorch", "vllm"]));
        assert!(declared(&parse("region = \"us-east-1\"\n").unwrap()).names().is_empty());
        for (encryption, aws) in
            [(EncryptionType::Aes256, "AES256"), (EncryptionType::Kms, "KMS"), (EncryptionType::KmsDsse, "KMS_DSSE")]
        {
            assert_eq!(encryption.as_str(), aws);
        }
        assert_eq!(TagMutability::Mutable.as_str(), "MUTABLE");
        assert_eq!(TagMutability::Immutable.as_str(), "IMMUTABLE");
    }

    #[test]
    fn a_kms_key_needs_kms_encryption_and_an_arn() {
        let key = "arn:aws:kms:us-east-1:123456789012:key/k";
        let with = |defaults: &str, repository: &str| {
            file(&[KEEP_3], &format!("lifecycle_policy = \"p\"\n{defaults}"), repository)
        };
        let accepted =
            parse(&with("encryption_type = \"KMS\"", &format!("pytorch = {{ kms_key = \"{key}\" }}"))).unwrap();
        let pytorch = &declared(&accepted).repositories[0];
        assert_eq!((pytorch.encryption_type, pytorch.kms_key.as_deref()), (EncryptionType::Kms, Some(key)));
        assert_eq!(
            refusals(&with("", &format!("pytorch = {{ kms_key = \"{key}\" }}"))),
            [
                "`ecr.repositories.pytorch.kms_key`: repository `pytorch` is encrypted with AES256, which takes no KMS key: \
              set `encryption_type = \"KMS\"` (or `KMS_DSSE`) with it, or remove the key"
            ]
        );
        assert_eq!(
            refusals(&with("encryption_type = \"KMS_DSSE\"\nkms_key = \"alias/k\"", "pytorch = {}")),
            [
                "`ecr.defaults.kms_key`: `alias/k` is not a KMS key's ARN (ECR answers with the ARN, so only it compares)"
            ]
        );
    }

    #[test]
    fn a_repository_takes_its_settings_from_itself_then_the_defaults_then_ecr() {
        let text = file(
            &[KEEP_3],
            "lifecycle_policy = \"p\"\nimage_tag_mutability = \"IMMUTABLE\"\nscan_on_push = true\ntags = { project = \"rocm\", kind = \"image\" }",
            "ra = {}\nrb = { image_tag_mutability = \"MUTABLE\", scan_on_push = false, tags = { kind = \"cache\" } }",
        );
        let desired = parse(&text).unwrap();
        let [a, b] = declared(&desired).repositories.as_slice() else { panic!("two repositories") };
        assert_eq!((a.image_tag_mutability, a.scan_on_push), (TagMutability::Immutable, true));
        assert_eq!((b.image_tag_mutability, b.scan_on_push), (TagMutability::Mutable, false));
        assert_eq!(a.tags["kind"], "image");
        assert_eq!(b.tags["kind"], "cache", "the repository's own tag wins");
        assert_eq!(b.tags["project"], "rocm");
        assert!(!a.allow_tagged_expiry);
        assert_eq!(TagMutability::Immutable.as_str(), "IMMUTABLE");
        assert_eq!(TagMutability::Mutable.as_str(), "MUTABLE");

        // Without defaults: mutable, no scan, the repository's own policy.
        let text = file(&[KEEP_3], "", "ra = { lifecycle_policy = \"p\" }");
        let parsed = parse(&text).unwrap();
        let a = &declared(&parsed).repositories[0];
        assert_eq!(
            (a.image_tag_mutability, a.scan_on_push, a.lifecycle_policy.name.as_str()),
            (TagMutability::Mutable, false, "p")
        );
        assert!(a.tags.is_empty());
    }

    #[test]
    fn a_repository_names_its_policy_or_inherits_it_and_an_unknown_one_is_refused_where_it_is_named() {
        let text = format!(
            "{}\n[ecr.lifecycle_policies.q]\nrules = [{KEEP_3}]\n",
            file(&[KEEP_3], "lifecycle_policy = \"p\"", "ra = {}\nrb = { lifecycle_policy = \"q\" }")
        );
        let desired = parse(&text).unwrap();
        let names: Vec<&str> =
            declared(&desired).repositories.iter().map(|r| r.lifecycle_policy.name.as_str()).collect();
        assert_eq!(names, ["p", "q"]);

        let text = file(&[KEEP_3], "", "ra = { lifecycle_policy = \"nope\" }");
        let errors = parse(&text).unwrap_err();
        assert!(
            errors.contains("`ecr.repositories.ra.lifecycle_policy`: no lifecycle policy named `nope`"),
            "{errors}"
        );
        // A policy that failed its own checks is not said again as unknown.
        let text = file(
            &[&rule(
                0,
                "tagStatus = \"untagged\", countType = \"imageCountMoreThan\", countNumber = 3",
                "type = \"expire\"",
            )],
            "",
            "ra = { lifecycle_policy = \"p\" }",
        );
        assert_eq!(refusals(&text), ["`ecr.lifecycle_policies.p.rules[0]`: `rulePriority` must be 1 or more"]);
    }

    #[test]
    fn an_empty_repository_table_and_allow_tagged_expiry_in_the_defaults_are_refused() {
        let text = file(&[KEEP_3], "allow_tagged_expiry = true\nlifecycle_policy = \"p\"", "");
        assert_eq!(
            refusals(&text),
            [
                "`ecr.defaults.allow_tagged_expiry`: `allow_tagged_expiry` is a decision about one repository's live tags: set it on each repository it is meant for, not in `[ecr.defaults]`",
                "`ecr.repositories`: `[ecr.repositories]` declares no repository: list the nightly's repositories, or leave the table out",
            ]
        );
        // No table at all is no repository, and no mistake.
        let none = "region = \"us-east-1\"\n";
        assert!(declared(&parse(none).unwrap()).repositories.is_empty());
    }

    #[test]
    fn tags_are_checked_and_counted_as_ecr_counts_them() {
        let fifty: Vec<String> = (0..49).map(|n| format!("t{n} = \"v\"")).collect();
        let text = file(
            &[KEEP_3],
            &format!("lifecycle_policy = \"p\"\ntags = {{ {} }}", fifty.join(", ")),
            "ra = { tags = { own = \"x\" } }",
        );
        assert_eq!(declared(&parse(&text).unwrap()).repositories[0].tags.len(), 50, "50 is ECR's limit, and allowed");
        let text = text.replace("own = \"x\"", "own = \"x\", more = \"y\"");
        assert_eq!(refusals(&text), ["`ecr.repositories.ra`: 51 tags, more than the 50 ECR allows on a repository"]);
        let text = file(
            &[KEEP_3],
            "lifecycle_policy = \"p\"\ntags = { \"aws:x\" = \"y\" }",
            "ra = { tags = { \"bad;key\" = \"v\" } }",
        );
        assert_eq!(
            refusals(&text),
            [
                "`ecr.defaults.tags.aws:x`: tag keys starting with `aws:` are reserved for AWS",
                "`ecr.repositories.ra.tags.bad;key`: tags may hold only letters, digits, spaces and `_ . : / = + - @`, not `;`",
            ]
        );
    }

    #[test]
    fn repository_names_follow_ecrs_rule() {
        for good in ["ab", "a/b", "a.b_c-d", "rocm/pytorch-cache", &"a".repeat(256)] {
            assert_eq!(check_repository_name(good), Ok(()), "{good}");
        }
        for bad in ["a", &"a".repeat(257)] {
            assert!(check_repository_name(bad).unwrap_err().contains("must be 2 to 256 characters long"), "{bad}");
        }
        for bad in ["A1", "a//b", "a..b", "-ab", "ab-", "a_-b", "/ab", "ab/", "a b"] {
            assert!(check_repository_name(bad).unwrap_err().contains("is not valid in ECR"), "{bad}");
        }
    }

    #[test]
    fn a_rule_over_tagged_images_is_an_error_unless_the_repository_allows_it() {
        let any =
            rule(1, "tagStatus = \"any\", countType = \"imageCountMoreThan\", countNumber = 5", "type = \"expire\"");
        let text = file(&[&any], "lifecycle_policy = \"p\"", "ra = {}\nrb = { allow_tagged_expiry = true }");
        let desired = parse(&text).unwrap();
        let tagged: Vec<_> = desired.findings.iter().filter(|f| f.code == TAGGED_EXPIRY).collect();
        assert_eq!(tagged.len(), 2, "one per repository that uses it");
        let (a, b) = (tagged[0], tagged[1]);
        assert_eq!(a.address, Some(Address::new(crate::LIFECYCLE_POLICY, "ra")));
        assert_eq!((a.severity, a.overridden_by), (Severity::Error, None));
        assert_eq!(
            a.location.message,
            "repository `ra` uses lifecycle policy `p`, whose rule 1 (`tagStatus = \"any\"`) can expire tagged images: one \
             such rule once expired the live nightly tag; expire only untagged images, or set `allow_tagged_expiry = \
             true` on the repository if it must"
        );
        assert_eq!(a.location.key_path, "ecr.lifecycle_policies.p.rules[0]");
        assert_eq!((b.severity, b.overridden_by), (Severity::Warning, Some(ALLOW_TAGGED_EXPIRY)));
        assert_eq!(
            b.location.message,
            "repository `rb` uses lifecycle policy `p`, whose rule 1 (`tagStatus = \"any\"`) can expire tagged images"
        );
        assert!(declared(&desired).repositories[1].allow_tagged_expiry);
        assert!(!declared(&desired).repositories[0].allow_tagged_expiry);
        // `allow_tagged_expiry = false` allows nothing.
        let text = file(&[&any], "lifecycle_policy = \"p\"", "ra = { allow_tagged_expiry = false }");
        assert_eq!(parse(&text).unwrap().findings.iter().filter(|f| f.severity == Severity::Error).count(), 1);

        // A tagged rule that archives, pointed at by its place in the file.
        let archive = rule(
            2,
            "tagStatus = \"tagged\", tagPrefixList = [\"v\"], countType = \"imageCountMoreThan\", countNumber = 5",
            "type = \"transition\", targetStorageClass = \"archive\"",
        );
        let text = file(&[KEEP_3, &archive], "lifecycle_policy = \"p\"", "ra = {}");
        let found = findings(&text);
        assert_eq!(
            found,
            [
                "W301 error ecr.lifecycle_policies.p.rules[1]: repository `ra` uses lifecycle policy `p`, whose rule 2 (`tagStatus = \"tagged\"`) can archive tagged images: one such rule once expired the live nightly tag; expire only untagged images, or set `allow_tagged_expiry = true` on the repository if it must"
            ]
        );
    }

    #[test]
    fn untagged_images_kept_too_few_by_age_or_never_are_warned_about_once_per_policy() {
        let kept = |n: u32| {
            rule(
                1,
                &format!("tagStatus = \"untagged\", countType = \"imageCountMoreThan\", countNumber = {n}"),
                "type = \"expire\"",
            )
        };
        assert_eq!(findings(&file(&[&kept(3)], "lifecycle_policy = \"p\"", "ra = {}\nrb = {}")), Vec::<String>::new());
        assert_eq!(
            findings(&file(&[&kept(2)], "lifecycle_policy = \"p\"", "ra = {}\nrb = {}")),
            [
                "W303 warning ecr.lifecycle_policies.p.rules[0]: rule 1 keeps only 2 untagged image(s): a run in flight may still read the generation the next push orphans; keep at least 3"
            ]
        );
        for count_type in ["sinceImagePushed", "sinceImagePulled", "sinceImageTransitioned"] {
            let aged = rule(
                1,
                &format!(
                    "tagStatus = \"untagged\", countType = \"{count_type}\", countUnit = \"days\", countNumber = 14"
                ),
                "type = \"expire\"",
            );
            assert_eq!(
                findings(&file(&[&aged], "lifecycle_policy = \"p\"", "ra = {}")),
                [
                    "W302 warning ecr.lifecycle_policies.p.rules[0]: rule 1 expires untagged images by age: a quiet fortnight with no nightly empties the cache; count them instead (`countType = \"imageCountMoreThan\"`)"
                ],
                "{count_type}"
            );
        }
        let tagged_only = rule(
            1,
            "tagStatus = \"tagged\", tagPatternList = [\"pr-*\"], countType = \"imageCountMoreThan\", countNumber = 5",
            "type = \"expire\"",
        );
        let found = findings(&file(&[&tagged_only], "lifecycle_policy = \"p\"", "ra = { allow_tagged_expiry = true }"));
        assert_eq!(
            found[1],
            "W304 warning ecr.lifecycle_policies.p.rules: no rule expires untagged images, so they accumulate without bound (each push orphans one); add a `tagStatus = \"untagged\"` rule with `countType = \"imageCountMoreThan\"`"
        );
        assert!(found[0].starts_with("W301 warning "), "{found:?}");
        // A policy no repository uses is not warned about.
        let unused = format!(
            "{}\n[ecr.lifecycle_policies.unused]\nrules = [{}]\n",
            file(&[KEEP_3], "lifecycle_policy = \"p\"", "ra = {}"),
            kept(1)
        );
        assert_eq!(findings(&unused), Vec::<String>::new());
    }

    #[test]
    fn every_rule_ecr_would_refuse_is_refused_naming_the_rule() {
        let untagged = "tagStatus = \"untagged\", countType = \"imageCountMoreThan\", countNumber = 3";
        let cases: Vec<(Vec<String>, Vec<&str>)> = vec![
            (
                vec![rule(1, untagged, "type = \"expire\""), rule(2, untagged, "type = \"expire\"")],
                vec!["`ecr.lifecycle_policies.p.rules`: 2 rules select untagged images; ECR allows only one"],
            ),
            (
                vec![rule(
                    1,
                    "tagStatus = \"untagged\", countType = \"imageCountMoreThan\", countNumber = 0",
                    "type = \"expire\"",
                )],
                vec!["`ecr.lifecycle_policies.p.rules[0]`: `selection.countNumber` must be 1 or more"],
            ),
            (
                vec![rule(
                    1,
                    "tagStatus = \"tagged\", countType = \"imageCountMoreThan\", countNumber = 3",
                    "type = \"expire\"",
                )],
                vec![
                    "`ecr.lifecycle_policies.p.rules[0]`: a `tagged` selection needs `tagPrefixList` or `tagPatternList`",
                ],
            ),
            (
                vec![rule(
                    1,
                    "tagStatus = \"tagged\", tagPrefixList = [\"a\"], tagPatternList = [\"b*\"], countType = \"imageCountMoreThan\", countNumber = 3",
                    "type = \"expire\"",
                )],
                vec!["`ecr.lifecycle_policies.p.rules[0]`: use `tagPrefixList` or `tagPatternList`, not both"],
            ),
            (
                vec![rule(
                    1,
                    "tagStatus = \"untagged\", tagPrefixList = [\"a\"], countType = \"imageCountMoreThan\", countNumber = 3",
                    "type = \"expire\"",
                )],
                vec![
                    "`ecr.lifecycle_policies.p.rules[0]`: a `untagged` selection takes no `tagPrefixList` or `tagPatternList`",
                ],
            ),
            (
                vec![rule(
                    1,
                    "tagStatus = \"any\", tagPatternList = [\"a*\"], countType = \"imageCountMoreThan\", countNumber = 3",
                    "type = \"expire\"",
                )],
                vec![
                    "`ecr.lifecycle_policies.p.rules[0]`: a `any` selection takes no `tagPrefixList` or `tagPatternList`",
                ],
            ),
            (
                vec![
                    rule(
                        1,
                        "tagStatus = \"any\", countType = \"imageCountMoreThan\", countNumber = 9",
                        "type = \"expire\"",
                    ),
                    rule(2, untagged, "type = \"expire\""),
                ],
                vec![
                    "`ecr.lifecycle_policies.p.rules[0]`: a rule with `tagStatus = \"any\"` must have the highest `rulePriority` of the policy",
                ],
            ),
            (
                vec![rule(
                    1,
                    "tagStatus = \"tagged\", tagPatternList = [\"a*b*c*d*e*\"], countType = \"imageCountMoreThan\", countNumber = 3",
                    "type = \"expire\"",
                )],
                vec![
                    "`ecr.lifecycle_policies.p.rules[0]`: `tagPatternList` entry `a*b*c*d*e*` has more than 4 wildcards, ECR's limit",
                ],
            ),
            (
                vec![rule(
                    1,
                    "tagStatus = \"untagged\", countType = \"imageCountMoreThan\", countUnit = \"days\", countNumber = 3",
                    "type = \"expire\"",
                )],
                vec!["`ecr.lifecycle_policies.p.rules[0]`: `imageCountMoreThan` takes no `countUnit`"],
            ),
            (
                vec![rule(
                    1,
                    "tagStatus = \"untagged\", countType = \"sinceImagePulled\", countNumber = 3",
                    "type = \"expire\"",
                )],
                vec!["`ecr.lifecycle_policies.p.rules[0]`: an age-based `countType` needs `countUnit = \"days\"`"],
            ),
            (
                vec![rule(1, untagged, "type = \"transition\"")],
                vec!["`ecr.lifecycle_policies.p.rules[0]`: a `transition` action needs `targetStorageClass`"],
            ),
            (
                vec![rule(1, untagged, "type = \"expire\", targetStorageClass = \"archive\"")],
                vec!["`ecr.lifecycle_policies.p.rules[0]`: an `expire` action takes no `targetStorageClass`"],
            ),
            (vec![], vec!["`ecr.lifecycle_policies.p.rules`: a lifecycle policy needs at least one rule"]),
        ];
        for (rules, expected) in cases {
            let rules: Vec<&str> = rules.iter().map(String::as_str).collect();
            let text = file(&rules, "", "");
            let text = text.replace("[ecr.repositories]\n", "");
            assert_eq!(refusals(&text), expected, "{rules:?}");
        }
        // At the limits: four wildcards, an `any` rule last, a transition with its class.
        let fine = [
            rule(
                1,
                "tagStatus = \"tagged\", tagPatternList = [\"a*b*c*d*\"], countType = \"imageCountMoreThan\", countNumber = 3",
                "type = \"transition\", targetStorageClass = \"archive\"",
            ),
            rule(2, untagged, "type = \"expire\""),
            rule(
                3,
                "tagStatus = \"any\", countType = \"sinceImagePushed\", countUnit = \"days\", countNumber = 900",
                "type = \"expire\"",
            ),
        ];
        let fine: Vec<&str> = fine.iter().map(String::as_str).collect();
        assert!(parse(&file(&fine, "", "").replace("[ecr.repositories]\n", "")).is_ok());
    }

    #[test]
    fn a_policy_longer_than_ecr_takes_is_refused_and_one_at_the_limit_is_not() {
        // One rule with a description long enough to bring the document to `length` characters.
        let sized = |length: usize| {
            let base = serde_json::json!({"rules": [{"rulePriority": 1, "description": "", "selection": {"tagStatus": "untagged", "countType": "imageCountMoreThan", "countNumber": 3}, "action": {"type": "expire"}}]});
            let padding = "d".repeat(length - serde_json::to_string(&base).unwrap().len());
            let rule = format!(
                "{{ rulePriority = 1, description = \"{padding}\", selection = {{ tagStatus = \"untagged\", countType = \"imageCountMoreThan\", countNumber = 3 }}, action = {{ type = \"expire\" }} }}"
            );
            file(&[&rule], "", "").replace("[ecr.repositories]\n", "")
        };
        assert!(parse(&sized(MAX_POLICY_CHARS)).is_ok());
        // A rule that is refused already: its policy's length is not said as well.
        let refused_rule = sized(MAX_POLICY_CHARS + 10).replace("rulePriority = 1", "rulePriority = 0");
        assert_eq!(refusals(&refused_rule), ["`ecr.lifecycle_policies.p.rules[0]`: `rulePriority` must be 1 or more"]);
        assert_eq!(
            refusals(&sized(MAX_POLICY_CHARS + 1)),
            [
                "`ecr.lifecycle_policies.p.rules`: the policy is 30721 characters as sent to ECR, more than the 30720 it accepts"
            ]
        );
    }

    #[test]
    fn a_file_with_its_defaults_fills_them_in() {
        let text = format!(
            "region = \"us-east-1\"\n[ecr.defaults]\nlifecycle_policy = \"keep-3-untagged\"\ntags = {{ project = \"rocm\" }}\n{POLICY}\n[ecr.repositories]\npytorch = {{}}\npytorch-cache = {{ tags = {{ kind = \"cache\" }} }}\n"
        );
        let desired = parse(&text).unwrap();
        assert_eq!(desired.region, "us-east-1");
        let names: Vec<&str> = declared(&desired).repositories.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["pytorch", "pytorch-cache"]);
        let cache = &declared(&desired).repositories[1];
        assert_eq!(cache.image_tag_mutability, TagMutability::Mutable);
        assert!(!cache.scan_on_push);
        assert_eq!(cache.tags.len(), 2);
        assert_eq!(cache.lifecycle_policy.name, "keep-3-untagged");
        assert_eq!(
            cache.lifecycle_policy.document,
            serde_json::json!({"rules": [{"rulePriority": 1, "selection": {"tagStatus": "untagged", "countType": "imageCountMoreThan", "countNumber": 3}, "action": {"type": "expire"}}]})
        );
    }

    #[test]
    fn unknown_keys_are_errors_with_line_column_and_key_path() {
        let text = "region = \"us-east-1\"\n[ecr.repositories.pytorch]\nlifecycle_polcy = \"x\"\n";
        assert_eq!(
            errors(text),
            "desired.toml:3:1: `ecr.repositories.pytorch.lifecycle_polcy`: unknown field `lifecycle_polcy`, expected one of \
             `lifecycle_policy`, `image_tag_mutability`, `scan_on_push`, `encryption_type`, `kms_key`, `tags`, \
             `allow_tagged_expiry`, `adopt`"
        );
    }

    #[test]
    fn wrong_types_and_bad_enum_values_name_their_key() {
        let text = "region = \"us-east-1\"\n[ecr.repositories.pytorch]\nimage_tag_mutability = \"SOMETIMES\"\n";
        let message = errors(text);
        assert!(
            message.starts_with(
                "desired.toml:3:24: `ecr.repositories.pytorch.image_tag_mutability`: unknown variant `SOMETIMES`"
            ),
            "{message}"
        );
    }

    #[test]
    fn a_repository_without_a_lifecycle_policy_is_refused() {
        let text = "region = \"us-east-1\"\n[ecr.repositories]\natom-wheel-cache = {}\n";
        assert_eq!(
            errors(text),
            "desired.toml:3:20: `ecr.repositories.atom-wheel-cache`: repository has no lifecycle policy: set \
             `lifecycle_policy` here or in `[ecr.defaults]` (without one, untagged images accumulate without bound)"
        );
    }

    #[test]
    fn semantic_errors_are_all_reported_and_located() {
        let text = format!(
            "region = \"mars\"\n{POLICY}\n[ecr.repositories]\nPyTorch = {{ lifecycle_policy = \"keep-3-untagged\" }}\nvllm = {{ lifecycle_policy = \"nope\", tags = {{ \"aws:x\" = \"y\" }} }}\n"
        );
        insta::assert_snapshot!(errors(&text), @r"
        desired.toml:1:10: `region`: `mars` is not an AWS region name such as `us-east-1`
        desired.toml:9:11: `ecr.repositories.PyTorch`: repository name `PyTorch` is not valid in ECR: lowercase letters and digits, separated by single `.`, `_`, `-` or `/`
        desired.toml:10:29: `ecr.repositories.vllm.lifecycle_policy`: no lifecycle policy named `nope` in `[ecr.lifecycle_policies]`
        desired.toml:10:56: `ecr.repositories.vllm.tags.aws:x`: tag keys starting with `aws:` are reserved for AWS
        ");
    }

    #[test]
    fn lifecycle_rules_are_checked_like_ecr_checks_them() {
        let text = r#"
region = "us-east-1"
[ecr.lifecycle_policies.bad]
rules = [
  { rulePriority = 1, selection = { tagStatus = "any", countType = "sinceImagePushed", countNumber = 14 }, action = { type = "expire" } },
  { rulePriority = 1, selection = { tagStatus = "tagged", countType = "imageCountMoreThan", countNumber = 0 }, action = { type = "transition" } },
]
"#;
        insta::assert_snapshot!(errors(text), @r#"
        desired.toml:5:3: `ecr.lifecycle_policies.bad.rules[0]`: an age-based `countType` needs `countUnit = "days"`
        desired.toml:6:3: `ecr.lifecycle_policies.bad.rules[1]`: `rulePriority` 1 is used by another rule
        desired.toml:6:3: `ecr.lifecycle_policies.bad.rules[1]`: `selection.countNumber` must be 1 or more
        desired.toml:6:3: `ecr.lifecycle_policies.bad.rules[1]`: a `tagged` selection needs `tagPrefixList` or `tagPatternList`
        desired.toml:6:3: `ecr.lifecycle_policies.bad.rules[1]`: a `transition` action needs `targetStorageClass`
        "#);
    }

    #[test]
    fn each_problem_is_said_once_where_it_is_and_with_its_key() {
        let shared = format!(
            "region = \"us-east-1\"\n[ecr.defaults]\nlifecycle_policy = \"nope\"\n{POLICY}\n[ecr.repositories]\npytorch = {{}}\nvllm = {{}}\n"
        );
        assert_eq!(
            errors(&shared),
            "desired.toml:3:20: `ecr.defaults.lifecycle_policy`: no lifecycle policy named `nope` in \
             `[ecr.lifecycle_policies]`"
        );
        let empty = "region = \"us-east-1\"\n[ecr.lifecycle_policies.p]\nrules = []\n";
        assert_eq!(
            errors(empty),
            "desired.toml:3:9: `ecr.lifecycle_policies.p.rules`: a lifecycle policy needs at least one rule"
        );
        let two_types = "region = \"us-east-1\"\n[ecr.repositories]\npytorch = { scan_on_push = \"yes\" }\nvllm = { scan_on_push = \"no\", image_tag_mutability = 3 }\n";
        insta::assert_snapshot!(errors(two_types), @r#"
        desired.toml:3:28: `ecr.repositories.pytorch.scan_on_push`: invalid type: string "yes", expected a boolean
        desired.toml:4:25: `ecr.repositories.vllm.scan_on_push`: invalid type: string "no", expected a boolean
        desired.toml:4:54: `ecr.repositories.vllm.image_tag_mutability`: wanted string or table
        "#);
        let twice = "region = \"us-east-1\"\n[ecr.repositories]\npytorch = {}\npytorch = {}\n";
        assert!(
            errors(twice).starts_with("desired.toml:4:1: `ecr.repositories.pytorch`: duplicate key"),
            "{}",
            errors(twice)
        );
    }
}
