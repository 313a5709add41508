//! `desired.toml`: what the account must hold.
//!
//! The file's serde schema (the `Raw*` types) is a boundary: it is parsed, checked and then
//! converted into the model types ([`Desired`] and friends), which the rest of the program
//! uses and which never carry serde's quirks. Every error names the file, the line and column,
//! and the key path, and parsing never touches the network.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use toml::Spanned;

/// The whole desired state of the account, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Desired {
    /// The file it was read from, for messages.
    pub path: PathBuf,
    /// The region every resource lives in. It wins over the environment's region.
    pub region: String,
    pub ecr: Ecr,
}

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
}

/// A named ECR lifecycle policy, already converted to the JSON document ECR takes.
#[derive(Debug, Clone, PartialEq)]
pub struct LifecyclePolicy {
    /// The key under `[ecr.lifecycle_policies]`.
    pub name: String,
    pub document: serde_json::Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
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

/// One problem in a desired-state file, located as precisely as the file allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredError {
    pub file: PathBuf,
    /// 1-based; 0 when the problem has no place in the file (an unreadable file).
    pub line: usize,
    /// 1-based, counted in characters.
    pub column: usize,
    /// Dotted key path such as `ecr.repositories.pytorch.lifecycle_policy`; empty for the root.
    pub key_path: String,
    pub message: String,
}

impl fmt::Display for DesiredError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.column)?;
        }
        if !self.key_path.is_empty() {
            write!(f, ": `{}`", self.key_path)?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Every problem found in a desired-state file; never empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredErrors(pub Vec<DesiredError>);

impl fmt::Display for DesiredErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (idx, error) in self.0.iter().enumerate() {
            if idx > 0 {
                writeln!(f)?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for DesiredErrors {}

impl Desired {
    /// Parses and validates the text of a desired-state file. `path` is only used in messages.
    pub fn parse(path: &Path, text: &str) -> Result<Desired, DesiredErrors> {
        let locate = Locator { path, text };
        let raw = parse_raw(text).map_err(|error| DesiredErrors(vec![locate.toml_error(error)]))?;
        let mut errors = Vec::new();
        let desired = convert(&locate, raw, &mut errors);
        if errors.is_empty() {
            Ok(desired)
        } else {
            errors.sort_by(|a, b| (a.line, a.column).cmp(&(b.line, b.column)));
            Err(DesiredErrors(errors))
        }
    }
}

fn parse_raw(text: &str) -> Result<RawDesired, (Option<Range<usize>>, String, String)> {
    let deserializer = toml::Deserializer::parse(text)
        .map_err(|e| (e.span(), String::new(), e.message().to_owned()))?;
    serde_path_to_error::deserialize(deserializer).map_err(|error| {
        // `Spanned` shows up in serde's path as a private field; the user never wrote it.
        let key_path = error
            .path()
            .iter()
            .map(ToString::to_string)
            .filter(|segment| !segment.starts_with("$__serde_spanned"))
            .collect::<Vec<_>>()
            .join(".")
            .replace(".[", "[");
        let inner = error.into_inner();
        (inner.span(), key_path, inner.message().to_owned())
    })
}

// The file's schema. Field names are the file's keys; `deny_unknown_fields` everywhere, because
// a misspelt key silently ignored is a resource silently left unmanaged.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDesired {
    region: Spanned<String>,
    #[serde(default)]
    ecr: RawEcr,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawEcr {
    #[serde(default)]
    defaults: RawRepository,
    #[serde(default)]
    lifecycle_policies: BTreeMap<String, RawLifecyclePolicy>,
    #[serde(default)]
    repositories: BTreeMap<String, Spanned<RawRepository>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawRepository {
    lifecycle_policy: Option<Spanned<String>>,
    image_tag_mutability: Option<TagMutability>,
    scan_on_push: Option<bool>,
    #[serde(default)]
    tags: BTreeMap<String, Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLifecyclePolicy {
    rules: Vec<Spanned<RawLifecycleRule>>,
}

// ECR's own JSON names, so the file reads like the AWS documentation.
#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawLifecycleRule {
    rule_priority: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    selection: RawSelection,
    action: RawRuleAction,
}

#[derive(Deserialize, Serialize)]
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

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawRuleAction {
    #[serde(rename = "type")]
    kind: ActionType,
    #[serde(skip_serializing_if = "Option::is_none")]
    target_storage_class: Option<StorageClass>,
}

#[derive(Deserialize, Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum TagStatus {
    Tagged,
    Untagged,
    Any,
}

#[derive(Deserialize, Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
enum CountType {
    ImageCountMoreThan,
    SinceImagePushed,
    SinceImagePulled,
    SinceImageTransitioned,
}

#[derive(Deserialize, Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum CountUnit {
    Days,
}

#[derive(Deserialize, Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum StorageClass {
    Standard,
    Archive,
}

#[derive(Deserialize, Serialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum ActionType {
    Expire,
    Transition,
}

/// Turns byte spans into file, line and column.
struct Locator<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Locator<'_> {
    fn error(
        &self,
        span: Option<Range<usize>>,
        key_path: &str,
        message: impl Into<String>,
    ) -> DesiredError {
        let (line, column) = match span {
            Some(span) => line_column(self.text, span.start),
            None => (1, 1),
        };
        DesiredError {
            file: self.path.to_owned(),
            line,
            column,
            key_path: key_path.to_owned(),
            message: message.into(),
        }
    }

    fn toml_error(
        &self,
        (span, key_path, message): (Option<Range<usize>>, String, String),
    ) -> DesiredError {
        // toml's messages can span lines; the location is ours to print, so keep one line.
        let message = message.trim().replace('\n', " ");
        self.error(span, &key_path, message)
    }
}

fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |idx| idx + 1);
    (line, text[line_start..offset].chars().count() + 1)
}

fn convert(locate: &Locator<'_>, raw: RawDesired, errors: &mut Vec<DesiredError>) -> Desired {
    if !is_region(raw.region.get_ref()) {
        errors.push(locate.error(
            Some(raw.region.span()),
            "region",
            format!(
                "`{}` is not an AWS region name such as `us-east-1`",
                raw.region.get_ref()
            ),
        ));
    }

    let mut policies = BTreeMap::new();
    for (name, policy) in &raw.ecr.lifecycle_policies {
        let key_path = format!("ecr.lifecycle_policies.{name}");
        if let Some(document) = lifecycle_document(locate, &key_path, policy, errors) {
            policies.insert(name.clone(), document);
        }
    }

    let defaults = &raw.ecr.defaults;
    let mut repositories = Vec::new();
    for (name, repository) in &raw.ecr.repositories {
        let key_path = format!("ecr.repositories.{name}");
        if let Err(why) = check_repository_name(name) {
            errors.push(locate.error(Some(repository.span()), &key_path, why));
        }
        let repository_ref = repository.get_ref();
        let policy_ref = repository_ref
            .lifecycle_policy
            .as_ref()
            .map(|p| (p, format!("{key_path}.lifecycle_policy")))
            .or_else(|| {
                defaults
                    .lifecycle_policy
                    .as_ref()
                    .map(|p| (p, "ecr.defaults.lifecycle_policy".to_owned()))
            });
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
                    if !raw
                        .ecr
                        .lifecycle_policies
                        .contains_key(policy_name.get_ref())
                    {
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
        for (section, section_tags) in [
            ("ecr.defaults", &defaults.tags),
            (key_path.as_str(), &repository_ref.tags),
        ] {
            for (key, value) in section_tags {
                match check_tag(key, value.get_ref()) {
                    Ok(()) => {
                        tags.insert(key.clone(), value.get_ref().clone());
                    }
                    Err(why) => errors.push(locate.error(
                        Some(value.span()),
                        &format!("{section}.tags.{key}"),
                        why,
                    )),
                }
            }
        }
        if tags.len() > 50 {
            errors.push(locate.error(
                Some(repository.span()),
                &key_path,
                format!(
                    "{} tags, more than the 50 ECR allows on a repository",
                    tags.len()
                ),
            ));
        }

        if let Some(lifecycle_policy) = lifecycle_policy {
            repositories.push(EcrRepository {
                name: name.clone(),
                image_tag_mutability: repository_ref
                    .image_tag_mutability
                    .or(defaults.image_tag_mutability)
                    .unwrap_or(TagMutability::Mutable),
                scan_on_push: repository_ref
                    .scan_on_push
                    .or(defaults.scan_on_push)
                    .unwrap_or(false),
                tags,
                lifecycle_policy,
            });
        }
    }

    Desired {
        path: locate.path.to_owned(),
        region: raw.region.into_inner(),
        ecr: Ecr { repositories },
    }
}

/// Checks a lifecycle policy against the rules ECR enforces and converts it to ECR's JSON.
fn lifecycle_document(
    locate: &Locator<'_>,
    key_path: &str,
    policy: &RawLifecyclePolicy,
    errors: &mut Vec<DesiredError>,
) -> Option<serde_json::Value> {
    let n_errors = errors.len();
    if policy.rules.is_empty() {
        errors.push(locate.error(
            None,
            &format!("{key_path}.rules"),
            "a lifecycle policy needs at least one rule",
        ));
    }
    let mut priorities = BTreeSet::new();
    let max_priority = policy
        .rules
        .iter()
        .map(|r| r.get_ref().rule_priority)
        .max()
        .unwrap_or(0);
    for (rule_idx, rule) in policy.rules.iter().enumerate() {
        let span = Some(rule.span());
        let rule_path = format!("{key_path}.rules[{rule_idx}]");
        let rule = rule.get_ref();
        let selection = &rule.selection;
        let mut problems = Vec::new();
        if rule.rule_priority == 0 {
            problems.push("`rulePriority` must be 1 or more".to_owned());
        }
        if !priorities.insert(rule.rule_priority) {
            problems.push(format!(
                "`rulePriority` {} is used by another rule",
                rule.rule_priority
            ));
        }
        if selection.count_number == 0 {
            problems.push("`selection.countNumber` must be 1 or more".to_owned());
        }
        let has_tag_lists =
            !selection.tag_prefix_list.is_empty() || !selection.tag_pattern_list.is_empty();
        match selection.tag_status {
            TagStatus::Tagged if !has_tag_lists => problems.push(
                "a `tagged` selection needs `tagPrefixList` or `tagPatternList`".to_owned(),
            ),
            TagStatus::Tagged
                if !selection.tag_prefix_list.is_empty() && !selection.tag_pattern_list.is_empty() =>
            {
                problems.push("use `tagPrefixList` or `tagPatternList`, not both".to_owned())
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
        match (selection.count_type, selection.count_unit) {
            (CountType::ImageCountMoreThan, Some(_)) => {
                problems.push("`imageCountMoreThan` takes no `countUnit`".to_owned())
            }
            (CountType::ImageCountMoreThan, None) | (_, Some(CountUnit::Days)) => {}
            (_, None) => {
                problems.push("an age-based `countType` needs `countUnit = \"days\"`".to_owned())
            }
        }
        match (rule.action.kind, rule.action.target_storage_class) {
            (ActionType::Transition, None) => {
                problems.push("a `transition` action needs `targetStorageClass`".to_owned())
            }
            (ActionType::Expire, Some(_)) => {
                problems.push("an `expire` action takes no `targetStorageClass`".to_owned())
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
        .iter()
        .map(|rule| serde_json::to_value(rule.get_ref()).expect("lifecycle rules always serialize"))
        .collect();
    Some(serde_json::json!({ "rules": rules }))
}

fn is_region(region: &str) -> bool {
    let parts: Vec<&str> = region.split('-').collect();
    parts.len() >= 3
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        })
        && parts
            .last()
            .is_some_and(|p| p.chars().all(|c| c.is_ascii_digit()))
}

/// ECR's repository name rule: lowercase path components of `[a-z0-9]` runs joined by single
/// `.`, `_` or `-`, separated by `/`, 2 to 256 characters.
fn check_repository_name(name: &str) -> Result<(), String> {
    let valid_component = |component: &str| {
        !component.is_empty()
            && component.split(['.', '_', '-']).all(|run| {
                !run.is_empty()
                    && run
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            })
    };
    if !(2..=256).contains(&name.len()) {
        return Err(format!(
            "repository name `{name}` must be 2 to 256 characters long"
        ));
    }
    if !name.split('/').all(valid_component) {
        return Err(format!(
            "repository name `{name}` is not valid in ECR: lowercase letters and digits, \
             separated by single `.`, `_`, `-` or `/`"
        ));
    }
    Ok(())
}

fn check_tag(key: &str, value: &str) -> Result<(), String> {
    if key.is_empty() || key.chars().count() > 128 {
        return Err("a tag key must be 1 to 128 characters long".to_owned());
    }
    if key.starts_with("aws:") {
        return Err("tag keys starting with `aws:` are reserved for AWS".to_owned());
    }
    if value.chars().count() > 256 {
        return Err("a tag value must be at most 256 characters long".to_owned());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: &str = r#"
[ecr.lifecycle_policies.keep-3-untagged]
rules = [
  { rulePriority = 1, selection = { tagStatus = "untagged", countType = "imageCountMoreThan", countNumber = 3 }, action = { type = "expire" } },
]
"#;

    fn parse(text: &str) -> Result<Desired, DesiredErrors> {
        Desired::parse(Path::new("desired.toml"), text)
    }

    fn errors(text: &str) -> String {
        parse(text)
            .expect_err("the file should be refused")
            .to_string()
    }

    #[test]
    fn a_minimal_file_parses_with_defaults_filled_in() {
        let text = format!(
            "region = \"us-east-1\"\n[ecr.defaults]\nlifecycle_policy = \"keep-3-untagged\"\ntags = {{ project = \"rocm\" }}\n{POLICY}\n[ecr.repositories]\npytorch = {{}}\npytorch-cache = {{ tags = {{ kind = \"cache\" }} }}\n"
        );
        let desired = parse(&text).unwrap();
        assert_eq!(desired.region, "us-east-1");
        let names: Vec<&str> = desired
            .ecr
            .repositories
            .iter()
            .map(|r| r.name.as_str())
            .collect();
        assert_eq!(names, ["pytorch", "pytorch-cache"]);
        let cache = &desired.ecr.repositories[1];
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
             `lifecycle_policy`, `image_tag_mutability`, `scan_on_push`, `tags`"
        );
    }

    #[test]
    fn wrong_types_and_bad_enum_values_name_their_key() {
        let text = "region = \"us-east-1\"\n[ecr.repositories.pytorch]\nimage_tag_mutability = \"SOMETIMES\"\n";
        let message = errors(text);
        assert!(message.starts_with("desired.toml:3:24: `ecr.repositories.pytorch.image_tag_mutability`: unknown variant `SOMETIMES`"), "{message}");
        let message = errors("region = 5\n");
        assert!(
            message.starts_with(
                "desired.toml:1:10: `region`: invalid type: integer `5`, expected a string"
            ),
            "{message}"
        );
    }

    #[test]
    fn syntax_errors_are_located() {
        assert!(errors("region = \"us-east-1\n").starts_with("desired.toml:1:"));
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
    fn line_column_counts_characters() {
        assert_eq!(line_column("ab\ncdé f", 8), (2, 5));
        assert_eq!(line_column("x", 0), (1, 1));
    }
}
