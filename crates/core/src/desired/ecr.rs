//! The `[ecr]` section: repositories, their settings and tags, and named lifecycle policies.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toml::Spanned;

use super::{DesiredError, DesiredFinding, Locator, check_tag};
use crate::lifecycle::{Count, Policy, RuleAction, TagStatus as EvaluatedStatus};
use crate::plan::Severity;
use crate::{Address, ResourceKind};

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

#[derive(Debug, Clone, PartialEq)]
pub struct EcrRepository {
    pub name: String,
    pub image_tag_mutability: TagMutability,
    pub scan_on_push: bool,
    pub tags: BTreeMap<String, String>,
    pub lifecycle_policy: LifecyclePolicy,
    /// Allows its lifecycle policy to expire tagged images (`allow_tagged_expiry = true`).
    pub allow_tagged_expiry: bool,
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
pub(super) struct RawEcr {
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
pub(super) struct RawRepository {
    #[schemars(with = "Option<String>")]
    lifecycle_policy: Option<Spanned<String>>,
    image_tag_mutability: Option<TagMutability>,
    scan_on_push: Option<bool>,
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, String>")]
    tags: BTreeMap<String, Spanned<String>>,
    /// Allows this repository's lifecycle policy to expire tagged images. Only on a repository,
    /// never in `[ecr.defaults]`: it is a decision about one repository's live tags.
    #[schemars(with = "Option<bool>")]
    allow_tagged_expiry: Option<Spanned<bool>>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLifecyclePolicy {
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

/// Checks the `[ecr]` section and converts it to the model.
pub(super) fn convert(
    locate: &Locator<'_>,
    raw: &RawEcr,
    errors: &mut Vec<DesiredError>,
    findings: &mut Vec<DesiredFinding>,
) -> Ecr {
    let mut policies = BTreeMap::new();
    let mut analyses = BTreeMap::new();
    for (name, policy) in &raw.lifecycle_policies {
        let key_path = format!("ecr.lifecycle_policies.{name}");
        if let Some((document, analysis)) = lifecycle_document(locate, &key_path, policy, errors) {
            policies.insert(name.clone(), document);
            analyses.insert(name.clone(), analysis);
        }
    }
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
    if let Some(allow) = &defaults.allow_tagged_expiry {
        errors.push(locate.error(
            Some(allow.span()),
            "ecr.defaults.allow_tagged_expiry",
            "`allow_tagged_expiry` is a decision about one repository's live tags: set it on each repository \
             it is meant for, not in `[ecr.defaults]`",
        ));
    }
    let mut repositories = Vec::new();
    for (name, repository) in declared {
        let key_path = format!("ecr.repositories.{name}");
        if let Err(why) = check_repository_name(name) {
            errors.push(locate.error(Some(repository.span()), &key_path, why));
        }
        let repository_ref = repository.get_ref();
        let policy_ref =
            repository_ref.lifecycle_policy.as_ref().map(|p| (p, format!("{key_path}.lifecycle_policy"))).or_else(
                || defaults.lifecycle_policy.as_ref().map(|p| (p, "ecr.defaults.lifecycle_policy".to_owned())),
            );
        let lifecycle_policy = match policy_ref {
            None => {
                errors.push(locate.error(
                    Some(repository.span()),
                    &key_path,
                    "repository has no lifecycle policy: set `lifecycle_policy` here or in `[ecr.defaults]` \
                     (without one, untagged images accumulate without bound)",
                ));
                None
            }
            Some((policy_name, policy_key)) => match policies.get(policy_name.get_ref()) {
                Some(document) => Some(LifecyclePolicy {
                    name: policy_name.get_ref().clone(),
                    document: serde_json::Value::clone(document),
                }),
                None => {
                    // A policy that failed its own checks was reported there already.
                    if !raw.lifecycle_policies.contains_key(policy_name.get_ref()) {
                        errors.push(locate.error(
                            Some(policy_name.span()),
                            &policy_key,
                            format!(
                                "no lifecycle policy named `{}` in `[ecr.lifecycle_policies]`",
                                policy_name.get_ref()
                            ),
                        ));
                    }
                    None
                }
            },
        };

        let mut tags = BTreeMap::new();
        for (section, section_tags) in [("ecr.defaults", &defaults.tags), (key_path.as_str(), &repository_ref.tags)] {
            for (key, value) in section_tags {
                match check_tag(key, value.get_ref()) {
                    Ok(()) => {
                        tags.insert(key.clone(), value.get_ref().clone());
                    }
                    Err(why) => errors.push(locate.error(Some(value.span()), &format!("{section}.tags.{key}"), why)),
                }
            }
        }
        if tags.len() > 50 {
            errors.push(locate.error(
                Some(repository.span()),
                &key_path,
                format!("{} tags, more than the 50 ECR allows on a repository", tags.len()),
            ));
        }

        let allow_tagged_expiry = repository_ref.allow_tagged_expiry.as_ref().is_some_and(|a| *a.get_ref());
        if let Some(policy) = &lifecycle_policy {
            used_policies.insert(policy.name.clone());
            if let Some((rule_path, span, why)) = analyses.get(&policy.name).and_then(|a| a.tagged.as_ref()) {
                let address = Address::new(ResourceKind::EcrLifecyclePolicy, name);
                let (severity, overridden_by, consequence) = if allow_tagged_expiry {
                    (Severity::Warning, Some(ALLOW_TAGGED_EXPIRY), "")
                } else {
                    (
                        Severity::Error,
                        None,
                        ": one such rule once expired the live nightly tag; expire only untagged images, or set \
                         `allow_tagged_expiry = true` on the repository if it must",
                    )
                };
                findings.push(DesiredFinding {
                    code: TAGGED_EXPIRY,
                    severity,
                    address: Some(address),
                    location: locate.error(
                        Some(span.clone()),
                        rule_path,
                        format!(
                            "repository `{name}` uses lifecycle policy `{}`, whose {why}{consequence}",
                            policy.name
                        ),
                    ),
                    overridden_by,
                });
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
                tags,
                lifecycle_policy,
                allow_tagged_expiry,
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
        let span = Some(rule.span());
        let rule_path = format!("{key_path}.rules[{rule_idx}]");
        let rule = rule.get_ref();
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
            TagStatus::Any if rule.rule_priority != max_priority => problems.push(
                "a rule with `tagStatus = \"any\"` must have the highest `rulePriority` of the policy".to_owned(),
            ),
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
        for problem in problems {
            errors.push(locate.error(span.clone(), &rule_path, problem));
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
