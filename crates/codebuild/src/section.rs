//! The `[codebuild]` section: the runner project and its webhook. This crate claims it
//! ([`CLAIM`]); [`declared`] is what it holds, and [`generate`] writes it for `import --generate`.
//!
//! What would make the nightly fail hours later is refused here instead: Lambda compute (no
//! Docker builds, no privileged mode, nothing over 15 minutes), privileged mode off (BuildKit
//! needs a daemon), timeouts CodeBuild does not accept, a role that is not declared.

use std::collections::BTreeMap;

use reconcile_core::desired::{
    Case, Claim, DesiredError, DesiredFinding, Locator, Read, Reference, Section, Topic, check_key, check_tag,
    check_unique_names, schema_of,
};
use reconcile_core::generate::{Entry, Found, Generated, key_for};
use reconcile_core::{Account, Address, Desired};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use toml::Spanned;

use crate::inventory::FoundProject;
use crate::project::ProjectSpec;
use crate::webhook::{Filter, WebhookSpec};

/// `[codebuild]`, listed after `[iam]` where the file's keys are. It publishes its projects (the
/// first is the runner whose name the repository variables carry) and their webhooks (whose
/// hook GitHub's crate checks); a project's role is one `[iam]` publishes.
pub const CLAIM: Claim = Claim {
    name: "codebuild",
    after: Some("iam"),
    types: Section::types::<RawCodebuild>,
    publishes: |section| {
        let projects = section.parse::<RawCodebuild>().map(|raw| raw.projects).unwrap_or_default();
        let mut references = Vec::new();
        for (key, project) in &projects {
            let name = project.get_ref().name.get_ref();
            references.push(Reference::new(Topic::Project, key, name));
            if project.get_ref().webhook.is_some() {
                let webhook = Reference::new(Topic::Webhook, key, name);
                references.push(webhook.at(Address::new(crate::WEBHOOK, key)));
            }
        }
        references
    },
    read,
    schema: schema_of::<RawCodebuild>,
};

fn read(section: &Section) -> Read {
    let raw: RawCodebuild = match section.parse() {
        Ok(raw) => raw,
        Err(errors) => return Read::refused(errors.0),
    };
    let role_keys: Vec<&str> = section.referred(Topic::Role).map(|role| role.key.as_str()).collect();
    let (mut errors, mut findings) = (Vec::new(), Vec::new());
    let codebuild = convert(&section.locator(), &raw, &role_keys, &mut errors, &mut findings);
    Read { findings, ..Read::model(codebuild, errors) }
}

/// The projects desired.toml declares: none when it has no `[codebuild]`.
pub fn declared(desired: &Desired) -> &Codebuild {
    static NONE: Codebuild = Codebuild { projects: Vec::new() };
    desired.section(CLAIM.name).and_then(Section::model::<Codebuild>).unwrap_or(&NONE)
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Codebuild {
    /// Sorted by key.
    pub projects: Vec<Project>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Project {
    /// The key under `[codebuild.projects]`; the address name.
    pub key: String,
    pub name: String,
    pub description: String,
    /// `https://github.com/OWNER/REPO`.
    pub source_location: String,
    /// `LINUX_CONTAINER` or `ARM_CONTAINER`: EC2 compute.
    pub environment_type: String,
    pub compute_type: String,
    pub image: String,
    pub privileged_mode: bool,
    /// The key of the role under `[iam.roles]`.
    pub service_role: String,
    pub build_timeout_minutes: u32,
    pub queued_timeout_minutes: Option<u32>,
    pub tags: BTreeMap<String, String>,
    /// The CodeConnections connection the project reaches GitHub through (`source_auth`);
    /// `None`: the region's GitHub source credential of the account.
    pub source_auth: Option<String>,
    pub webhook: Option<Webhook>,
    /// Takes over a project that exists without reconcile's tag (`adopt = true`).
    pub adopt: bool,
}

impl Project {
    /// The CloudWatch Logs group the project writes to, and the role is scoped to.
    pub fn log_group(&self) -> String {
        log_group(&self.name)
    }

    /// The CodeConnections connection it reaches GitHub through, when it names one: what a
    /// plan may read of CodeConnections.
    pub fn connection(&self) -> Option<&str> {
        self.source_auth.as_deref()
    }

    /// Whether it runs as the role declared under `[iam.roles.<role>]`: what may be passed to it,
    /// and whose builds write its logs.
    pub fn runs_as(&self, role: &str) -> bool {
        self.service_role == role
    }
}

/// The CloudWatch Logs group of the project with this name: CodeBuild's own convention.
pub fn log_group(project_name: &str) -> String {
    format!("/aws/codebuild/{project_name}")
}

#[derive(Debug, Clone, PartialEq)]
pub struct Webhook {
    pub build_type: String,
    /// A build starts when every filter of any one group passes.
    pub filter_groups: Vec<Vec<WebhookFilter>>,
    pub manual_creation: bool,
    pub scope: Option<WebhookScope>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct WebhookFilter {
    pub kind: String,
    pub pattern: String,
    pub exclude_matched_pattern: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct WebhookScope {
    pub name: String,
    pub scope: String,
    pub domain: Option<String>,
}

/// `https://github.com/OWNER/REPO`, optionally ending in `.git`: what a runner project's source
/// must be (GitHub's rules for owner and repository names).
fn is_github_repository_url(url: &str) -> bool {
    let Some(path) = url.strip_prefix("https://github.com/") else { return false };
    let path = path.strip_suffix(".git").unwrap_or(path);
    let Some((owner, repository)) = path.split_once('/') else { return false };
    let owner_ok = !owner.is_empty()
        && owner.len() <= 39
        && owner.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        && !owner.starts_with('-');
    let repository_ok = !repository.is_empty()
        && repository.len() <= 100
        && repository.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && repository != "."
        && repository != "..";
    owner_ok && repository_ok
}

/// `arn:<partition>:codeconnections:<region>:<account>:connection/<id>` (or the older
/// `codestar-connections` service's).
fn is_connection_arn(arn: &str) -> bool {
    let parts: Vec<&str> = arn.splitn(6, ':').collect();
    let [arn, partition, service, region, account, resource] = parts.as_slice() else { return false };
    *arn == "arn"
        && ["aws", "aws-cn", "aws-us-gov"].contains(partition)
        && ["codeconnections", "codestar-connections"].contains(service)
        && !region.is_empty()
        && account.len() == 12
        && account.chars().all(|c| c.is_ascii_digit())
        && resource
            .strip_prefix("connection/")
            .is_some_and(|id| !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
}

/// Whether a webhook filter's pattern is a regular expression CodeBuild (Java's syntax) takes.
/// Parsed for its syntax only; look-around and back-references, which Java has and this parser
/// does not, are accepted.
fn check_pattern(pattern: &str) -> Result<(), String> {
    use regex_syntax::ast::ErrorKind;
    match regex_syntax::ast::parse::Parser::new().parse(pattern) {
        Ok(_) => Ok(()),
        Err(error)
            if matches!(error.kind(), ErrorKind::UnsupportedLookAround | ErrorKind::UnsupportedBackreference) =>
        {
            Ok(())
        }
        Err(error) => Err(error.kind().to_string()),
    }
}

/// The default image per environment type: the CodeBuild standard images.
fn default_image(environment_type: &str) -> &'static str {
    match environment_type {
        "ARM_CONTAINER" => "aws/codebuild/amazonlinux-aarch64-standard:3.0",
        _ => "aws/codebuild/amazonlinux-x86_64-standard:5.0",
    }
}

const EC2_ENVIRONMENT_TYPES: [&str; 2] = ["LINUX_CONTAINER", "ARM_CONTAINER"];
const EC2_COMPUTE_TYPES: [&str; 5] = [
    "BUILD_GENERAL1_SMALL",
    "BUILD_GENERAL1_MEDIUM",
    "BUILD_GENERAL1_LARGE",
    "BUILD_GENERAL1_XLARGE",
    "BUILD_GENERAL1_2XLARGE",
];
const LAMBDA_REFUSAL: &str = "Lambda compute cannot run the nightly: it allows no Docker builds, no privileged mode, \
                              no caching and nothing over 15 minutes; use EC2 compute (LINUX_CONTAINER or \
                              ARM_CONTAINER with a BUILD_GENERAL1_* compute type)";
const FILTER_TYPES: [&str; 11] = [
    "EVENT",
    "ACTOR_ACCOUNT_ID",
    "HEAD_REF",
    "BASE_REF",
    "FILE_PATH",
    "COMMIT_MESSAGE",
    "TAG_NAME",
    "RELEASE_NAME",
    "REPOSITORY_NAME",
    "ORGANIZATION_NAME",
    "WORKFLOW_NAME",
];
const EVENTS: [&str; 9] = [
    "PUSH",
    "PULL_REQUEST_CREATED",
    "PULL_REQUEST_UPDATED",
    "PULL_REQUEST_CLOSED",
    "PULL_REQUEST_REOPENED",
    "PULL_REQUEST_MERGED",
    "RELEASED",
    "PRERELEASED",
    "WORKFLOW_JOB_QUEUED",
];

/// Warning code: a webhook filter group has nothing but its EVENT filter. Stable; never reused.
pub const ONLY_EVENT_FILTER: &str = "W201";
/// Warning code: no filter group takes `WORKFLOW_JOB_QUEUED`, so the project is no runner.
pub const NOT_A_RUNNER: &str = "W202";
/// Warning code: a filter group takes a pull-request event, so CodeBuild builds pull requests
/// itself, gated by the webhook's `pullRequestBuildPolicy`, which reconcile does not manage.
pub const PULL_REQUEST_BUILDS: &str = "W203";

#[derive(Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct RawCodebuild {
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, RawProject>")]
    projects: BTreeMap<String, Spanned<RawProject>>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawProject {
    #[schemars(with = "String")]
    name: Spanned<String>,
    #[serde(default)]
    description: String,
    #[schemars(with = "String")]
    source_location: Spanned<String>,
    #[serde(default = "linux_container")]
    #[schemars(with = "String")]
    environment_type: Spanned<String>,
    #[schemars(with = "Option<String>")]
    compute_type: Option<Spanned<String>>,
    image: Option<String>,
    /// The ARN of a CodeConnections (or CodeStar Connections) connection to GitHub; without it,
    /// the region's GitHub source credential of the account (`import-source-credentials`).
    #[schemars(with = "Option<String>")]
    source_auth: Option<Spanned<String>>,
    #[serde(default = "privileged")]
    #[schemars(with = "bool")]
    privileged_mode: Spanned<bool>,
    #[schemars(with = "String")]
    service_role: Spanned<String>,
    #[schemars(with = "u32")]
    build_timeout_hours: Spanned<u32>,
    #[schemars(with = "Option<u32>")]
    queued_timeout_minutes: Option<Spanned<u32>>,
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, String>")]
    tags: BTreeMap<String, Spanned<String>>,
    #[schemars(with = "Option<RawWebhook>")]
    webhook: Option<Spanned<RawWebhook>>,
    /// Takes it over though it exists without this deployment's mark (someone else made it).
    #[serde(default)]
    adopt: bool,
}

fn linux_container() -> Spanned<String> {
    Spanned::new(0..0, "LINUX_CONTAINER".to_owned())
}

fn privileged() -> Spanned<bool> {
    Spanned::new(0..0, true)
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawWebhook {
    #[serde(default = "build")]
    build_type: String,
    #[schemars(with = "Vec<Vec<RawFilter>>")]
    filter_groups: Vec<Spanned<Vec<RawFilter>>>,
    #[serde(default)]
    manual_creation: bool,
    scope: Option<RawScope>,
}

fn build() -> String {
    "BUILD".to_owned()
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawFilter {
    #[serde(rename = "type")]
    kind: String,
    pattern: String,
    #[serde(default)]
    exclude_matched_pattern: bool,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawScope {
    name: String,
    scope: String,
    domain: Option<String>,
}

/// Checks the `[codebuild]` section and converts it to the model.
fn convert(
    locate: &Locator<'_>,
    raw: &RawCodebuild,
    role_keys: &[&str],
    errors: &mut Vec<DesiredError>,
    findings: &mut Vec<DesiredFinding>,
) -> Codebuild {
    let mut projects = Vec::new();
    for (key, project) in &raw.projects {
        let key_path = format!("codebuild.projects.{key}");
        if let Err(why) = check_key(key) {
            errors.push(locate.error(Some(project.span()), &key_path, why));
        }
        let webhook_path = format!("{key_path}.webhook");
        let mut at = ProjectErrors { locate, key_path, project: project.span(), errors };
        let mut converted = convert_project(&mut at, key, project.get_ref(), role_keys);
        converted.webhook = project
            .get_ref()
            .webhook
            .as_ref()
            .map(|webhook| convert_webhook(locate, &webhook_path, key, webhook, errors, findings));
        projects.push(converted);
    }
    let names = raw
        .projects
        .iter()
        .map(|(key, project)| (key.as_str(), project.get_ref().name.get_ref().clone(), project.get_ref().name.span()))
        .collect();
    check_unique_names(locate, "codebuild.projects", "project name", names, Case::Sensitive, errors);
    Codebuild { projects }
}

/// Where a project's problems are said: at a field's place, or the project's when it has none.
struct ProjectErrors<'a, 'l> {
    locate: &'a Locator<'l>,
    key_path: String,
    project: std::ops::Range<usize>,
    errors: &'a mut Vec<DesiredError>,
}

impl ProjectErrors<'_, '_> {
    fn push(&mut self, span: Option<std::ops::Range<usize>>, field: &str, message: String) {
        let span = span.filter(|s| !s.is_empty()).or_else(|| Some(self.project.clone()));
        self.errors.push(self.locate.error(span, &format!("{}.{field}", self.key_path), message));
    }
}

/// One project, checked field by field, and its model (its webhook is the caller's).
fn convert_project(
    error: &mut ProjectErrors<'_, '_>,
    key: &str,
    raw_project: &RawProject,
    role_keys: &[&str],
) -> Project {
    check_names(error, raw_project);
    let environment_type = raw_project.environment_type.get_ref();
    let compute_type = check_compute(error, raw_project);
    let build_timeout_minutes = raw_project.build_timeout_hours.get_ref().saturating_mul(60);
    if !(5..=2160).contains(&build_timeout_minutes) {
        error.push(
            Some(raw_project.build_timeout_hours.span()),
            "build_timeout_hours",
            format!(
                "{} hours is outside what CodeBuild allows, 5 to 2160 minutes (1 to 36 whole hours here)",
                raw_project.build_timeout_hours.get_ref()
            ),
        );
    }
    if let Some(queued) = &raw_project.queued_timeout_minutes
        && !(5..=480).contains(queued.get_ref())
    {
        error.push(Some(queued.span()), "queued_timeout_minutes", "must be 5 to 480 minutes".to_owned());
    }
    let service_role = raw_project.service_role.get_ref();
    if !role_keys.contains(&service_role.as_str()) {
        error.push(
            Some(raw_project.service_role.span()),
            "service_role",
            format!("no role `{service_role}` under `[iam.roles]`: name the key of the role the project runs as"),
        );
    }
    let mut tags = BTreeMap::new();
    for (tag_key, value) in &raw_project.tags {
        match check_tag(tag_key, value.get_ref()) {
            Ok(()) => {
                tags.insert(tag_key.clone(), value.get_ref().clone());
            }
            Err(why) => error.push(Some(value.span()), &format!("tags.{tag_key}"), why),
        }
    }
    if let Some(auth) = &raw_project.source_auth
        && !is_connection_arn(auth.get_ref())
    {
        error.push(
            Some(auth.span()),
            "source_auth",
            format!(
                "`{}` is not the ARN of a connection: arn:aws:codeconnections:REGION:ACCOUNT:connection/ID",
                auth.get_ref()
            ),
        );
    }
    Project {
        key: key.to_owned(),
        name: raw_project.name.get_ref().clone(),
        description: raw_project.description.clone(),
        source_location: raw_project.source_location.get_ref().clone(),
        environment_type: environment_type.clone(),
        image: raw_project.image.clone().unwrap_or_else(|| default_image(environment_type).to_owned()),
        compute_type,
        privileged_mode: *raw_project.privileged_mode.get_ref(),
        service_role: service_role.clone(),
        build_timeout_minutes,
        queued_timeout_minutes: raw_project.queued_timeout_minutes.as_ref().map(|q| *q.get_ref()),
        tags,
        source_auth: raw_project.source_auth.as_ref().map(|auth| auth.get_ref().clone()),
        webhook: None,
        adopt: raw_project.adopt,
    }
}

/// What names and describes a project: its name, description, image and source.
fn check_names(error: &mut ProjectErrors<'_, '_>, raw_project: &RawProject) {
    let name = raw_project.name.get_ref();
    let valid_name = name.len() >= 2
        && name.len() <= 255
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !valid_name {
        error.push(
            Some(raw_project.name.span()),
            "name",
            format!(
                "`{name}` is not a CodeBuild project name: 2 to 255 letters, digits, `-` and `_`, starting with a letter or digit"
            ),
        );
    }
    if raw_project.description.chars().count() > 255 {
        error.push(None, "description", "CodeBuild takes a description of at most 255 characters".to_owned());
    }
    if raw_project.image.as_ref().is_some_and(|image| image.trim().is_empty()) {
        error.push(
            None,
            "image",
            "the image must name a container image; leave it out for the standard one".to_owned(),
        );
    }
    if !is_github_repository_url(raw_project.source_location.get_ref()) {
        error.push(
            Some(raw_project.source_location.span()),
            "source_location",
            "a runner project's source is its GitHub repository, `https://github.com/OWNER/REPO`".to_owned(),
        );
    }
}

/// What a project builds on: an EC2 environment and compute type, in privileged mode; its
/// compute type.
fn check_compute(error: &mut ProjectErrors<'_, '_>, raw_project: &RawProject) -> String {
    let environment_type = raw_project.environment_type.get_ref();
    if environment_type.contains("LAMBDA") {
        error.push(Some(raw_project.environment_type.span()), "environment_type", LAMBDA_REFUSAL.to_owned());
    } else if !EC2_ENVIRONMENT_TYPES.contains(&environment_type.as_str()) {
        error.push(
            Some(raw_project.environment_type.span()),
            "environment_type",
            format!("`{environment_type}` is not supported: use LINUX_CONTAINER or ARM_CONTAINER"),
        );
    }
    let compute_type =
        raw_project.compute_type.as_ref().map_or("BUILD_GENERAL1_XLARGE", |c| c.get_ref().as_str()).to_owned();
    if compute_type.starts_with("BUILD_LAMBDA") {
        error.push(raw_project.compute_type.as_ref().map(Spanned::span), "compute_type", LAMBDA_REFUSAL.to_owned());
    } else if !EC2_COMPUTE_TYPES.contains(&compute_type.as_str()) {
        error.push(
            raw_project.compute_type.as_ref().map(Spanned::span),
            "compute_type",
            format!("`{compute_type}` is not an EC2 compute type: use one of {}", EC2_COMPUTE_TYPES.join(", ")),
        );
    }
    if !raw_project.privileged_mode.get_ref() {
        error.push(
            Some(raw_project.privileged_mode.span()),
            "privileged_mode",
            "privileged mode must be on: BuildKit needs a Docker daemon, and CodeBuild runs one only in \
             privileged mode"
                .to_owned(),
        );
    }
    compute_type
}

fn convert_webhook(
    locate: &Locator<'_>,
    key_path: &str,
    project_key: &str,
    webhook: &Spanned<RawWebhook>,
    errors: &mut Vec<DesiredError>,
    findings: &mut Vec<DesiredFinding>,
) -> Webhook {
    let raw = webhook.get_ref();
    let address = Address::new(crate::WEBHOOK, project_key);
    if !["BUILD", "BUILD_BATCH", "RUNNER_BUILDKITE_BUILD"].contains(&raw.build_type.as_str()) {
        errors.push(locate.error(
            Some(webhook.span()),
            &format!("{key_path}.build_type"),
            format!("`{}` is not a webhook build type: BUILD, BUILD_BATCH or RUNNER_BUILDKITE_BUILD", raw.build_type),
        ));
    }
    if raw.filter_groups.is_empty() {
        errors.push(locate.error(
            Some(webhook.span()),
            &format!("{key_path}.filter_groups"),
            "a runner's webhook needs a filter group with `EVENT` = `WORKFLOW_JOB_QUEUED`",
        ));
    }
    let mut runner = false;
    let mut pull_requests = false;
    let mut filter_groups = Vec::new();
    for (group_idx, group) in raw.filter_groups.iter().enumerate() {
        let group_path = format!("{key_path}.filter_groups[{group_idx}]");
        let takes = check_filter_group(locate, (&group_path, group), &address, errors, findings);
        runner |= takes.runner;
        pull_requests |= takes.pull_requests;
        filter_groups.push(
            group
                .get_ref()
                .iter()
                .map(|f| WebhookFilter {
                    kind: f.kind.clone(),
                    pattern: f.pattern.clone(),
                    exclude_matched_pattern: f.exclude_matched_pattern,
                })
                .collect(),
        );
    }
    if !runner && !raw.filter_groups.is_empty() {
        findings.push(DesiredFinding::warning(
            NOT_A_RUNNER,
            Some(address),
            locate.error(
                Some(webhook.span()),
                &format!("{key_path}.filter_groups"),
                "no filter group takes `WORKFLOW_JOB_QUEUED`, so GitHub Actions jobs will never reach this runner",
            ),
        ));
    }
    if pull_requests {
        findings.push(DesiredFinding::warning(
            PULL_REQUEST_BUILDS,
            Some(Address::new(crate::WEBHOOK, project_key)),
            locate.error(
                Some(webhook.span()),
                &format!("{key_path}.filter_groups"),
                "a filter group takes a pull-request event, so CodeBuild builds pull requests itself, outside the \
                 runner's workflow jobs; those builds are gated by the webhook's pullRequestBuildPolicy, which \
                 reconcile does not manage: take only WORKFLOW_JOB_QUEUED, or set the policy by hand",
            ),
        ));
    }
    Webhook {
        build_type: raw.build_type.clone(),
        filter_groups,
        manual_creation: raw.manual_creation,
        scope: raw.scope.as_ref().map(|s| WebhookScope {
            name: s.name.clone(),
            scope: s.scope.clone(),
            domain: s.domain.clone(),
        }),
    }
}

/// What a webhook's filter group lets through: the runner's jobs, pull requests.
struct Takes {
    runner: bool,
    pull_requests: bool,
}

/// One filter group at `group_path`: known filter types and events, exactly one `EVENT`
/// filter, valid patterns; warned about when the event is all it filters on.
fn check_filter_group(
    locate: &Locator<'_>,
    (group_path, group): (&str, &Spanned<Vec<RawFilter>>),
    address: &Address,
    errors: &mut Vec<DesiredError>,
    findings: &mut Vec<DesiredFinding>,
) -> Takes {
    let mut takes = Takes { runner: false, pull_requests: false };
    let mut n_events = 0;
    for webhook_filter in group.get_ref() {
        if !FILTER_TYPES.contains(&webhook_filter.kind.as_str()) {
            errors.push(locate.error(
                Some(group.span()),
                group_path,
                format!("`{}` is not a webhook filter type: {}", webhook_filter.kind, FILTER_TYPES.join(", ")),
            ));
        }
        if webhook_filter.kind == "EVENT" {
            n_events += 1;
            for event in webhook_filter.pattern.split(',').map(str::trim) {
                if !EVENTS.contains(&event) {
                    errors.push(locate.error(
                        Some(group.span()),
                        group_path,
                        format!("`{event}` is not a webhook event: {}", EVENTS.join(", ")),
                    ));
                }
                takes.runner |= event == "WORKFLOW_JOB_QUEUED" && !webhook_filter.exclude_matched_pattern;
                takes.pull_requests |= event.starts_with("PULL_REQUEST_") && !webhook_filter.exclude_matched_pattern;
            }
        }
        if webhook_filter.pattern.trim().is_empty() {
            errors.push(locate.error(Some(group.span()), group_path, "a filter needs a pattern"));
        } else if webhook_filter.kind != "EVENT"
            && let Err(why) = check_pattern(&webhook_filter.pattern)
        {
            errors.push(locate.error(
                Some(group.span()),
                group_path,
                format!(
                    "the {} pattern `{}` is not a valid regular expression: {why}",
                    webhook_filter.kind, webhook_filter.pattern
                ),
            ));
        }
    }
    if n_events != 1 {
        errors.push(locate.error(
            Some(group.span()),
            group_path,
            format!("a filter group needs exactly one `EVENT` filter, not {n_events}"),
        ));
    } else if group.get_ref().len() == 1 {
        findings.push(DesiredFinding::warning(
            ONLY_EVENT_FILTER,
            Some(address.clone()),
            locate.error(
                Some(group.span()),
                group_path,
                "this filter group has only its EVENT filter, so a pull request from any fork can start a \
                 build on the runner, under its IAM role; add filters a fork cannot edit, such as \
                 REPOSITORY_NAME or ACTOR_ACCOUNT_ID",
            ),
        ));
    }
    takes
}

// `import --generate`'s half of the section: the projects the account holds and desired.toml
// does not declare, as `[codebuild.projects.<key>]` with their webhooks. Nothing secret is read or
// written: the webhook's secret is never asked for, and a variable's plain-text value is never kept.

/// desired.toml's lines for the projects in `found`. A project whose role is neither declared
/// nor written with it is left out (desired.toml names a project's role by its key).
pub fn generate(found: &[&Found], desired: &Desired, account: &Account, references: &[Reference]) -> Generated {
    let mut generated = Generated::default();
    let mut taken: Vec<String> = declared(desired).projects.iter().map(|p| p.key.clone()).collect();
    for found in found {
        let (project, webhook) = match read_found(found) {
            Ok(read) => read,
            Err(why) => {
                generated.left_out.push((format!("project `{}`", found.name), why));
                continue;
            }
        };
        let role_name = project.service_role.rsplit('/').next().unwrap_or_default();
        let Some(role) = references.iter().find(|r| r.topic == Topic::Role && r.value == role_name) else {
            generated.left_out.push((
                format!("project `{}`", found.name),
                format!("it runs as role `{role_name}`, which is neither declared nor a service role to write"),
            ));
            continue;
        };
        let key = key_for(&found.name, desired, &account.id, "runner", &taken);
        taken.push(key.clone());
        let table = ["codebuild", "projects", key.as_str()];
        let mut push = |key: &str, value: Value| generated.push(&found.name, Entry::new(&table, key, value));
        push("name", json!(found.name));
        if !project.description.is_empty() {
            push("description", json!(project.description));
        }
        push("source_location", json!(project.source_location));
        push("environment_type", json!(project.environment_type));
        push("compute_type", json!(project.compute_type));
        push("image", json!(project.image));
        push("privileged_mode", json!(project.privileged_mode));
        push("service_role", json!(role.key));
        // desired.toml says hours; a timeout of another length is kept to the hour above, which the
        // proof then names as a change.
        push("build_timeout_hours", json!(project.timeout_in_minutes.max(0).unsigned_abs().div_ceil(60)));
        if let Some(queued) = project.queued_timeout_in_minutes {
            push("queued_timeout_minutes", json!(queued));
        }
        if let Some(auth) = &project.source_auth {
            push("source_auth", json!(auth));
        }
        if !project.tags.is_empty() {
            push("tags", json!(project.tags));
        }
        if let Some(webhook) = webhook {
            let webhook_table = ["codebuild", "projects", key.as_str(), "webhook"];
            if webhook.build_type != "BUILD" {
                generated.push(&found.name, Entry::new(&webhook_table, "build_type", json!(webhook.build_type)));
            }
            let groups: Vec<Value> = webhook.filter_groups.iter().map(|group| filter_group(group)).collect();
            generated.push(
                &found.name,
                Entry::new(&webhook_table, "filter_groups", Value::Array(groups)).ordered(&[
                    "type",
                    "pattern",
                    "exclude_matched_pattern",
                ]),
            );
            let mut push =
                |key: &str, value: Value| generated.push(&found.name, Entry::new(&webhook_table, key, value));
            if webhook.manual_creation {
                push("manual_creation", json!(true));
            }
            if let Some(scope) = &webhook.scope_configuration {
                let mut written = Map::new();
                written.insert("name".into(), json!(scope.name));
                written.insert("scope".into(), json!(scope.scope));
                if let Some(domain) = &scope.domain {
                    written.insert("domain".into(), json!(domain));
                }
                push("scope", Value::Object(written));
            }
        }
    }
    generated
}

/// A project as the inventory read it (`FoundProject`), as the plan's records: the project's
/// and its webhook's, when it has one; `Err` (why) for a project that is not a runner's.
fn read_found(found: &Found) -> Result<(ProjectSpec, Option<WebhookSpec>), String> {
    let read: FoundProject = serde_json::from_value(Value::Object(found.live.clone())).map_err(|e| e.to_string())?;
    let project = serde_json::from_value(read.project)
        .map_err(|error| format!("it is not a project reconcile can declare ({error})"))?;
    let webhook = read
        .webhook
        .map(serde_json::from_value)
        .transpose()
        .map_err(|error| format!("its webhook could not be read ({error})"))?;
    Ok((project, webhook))
}

/// A filter group as desired.toml writes it: `exclude_matched_pattern` only when true.
fn filter_group(group: &[Filter]) -> Value {
    Value::Array(
        group
            .iter()
            .map(|filter| {
                let mut out = Map::new();
                out.insert("type".into(), json!(filter.kind));
                out.insert("pattern".into(), json!(filter.pattern));
                if filter.exclude_matched_pattern {
                    out.insert("exclude_matched_pattern".into(), json!(true));
                }
                Value::Object(out)
            })
            .collect(),
    )
}
#[cfg(test)]
mod tests {
    //! The `[codebuild]` section: the runner project's defaults, what CodeBuild (or the nightly)
    //! would refuse, and the webhook's filters, each with its key.

    use super::*;
    use reconcile_core::desired::testing::{Files, IAM};

    const FILES: Files = Files(&[&CLAIM, &IAM]);

    fn parse(text: &str) -> Result<Desired, String> {
        FILES.parse(text)
    }

    fn refusals(text: &str) -> Vec<String> {
        FILES.refusals(text)
    }

    fn findings(text: &str) -> Vec<String> {
        FILES.findings(text)
    }

    fn each_refused_as(cases: impl IntoIterator<Item = (String, String)>) {
        FILES.each_refused_as(cases);
    }

    const ROLE: &str =
        "[iam.roles.codebuild]\nname = \"rocm-bake-codebuild\"\ntrusted_services = [\"codebuild.amazonaws.com\"]\n";

    /// A file with the role and one project `runner`, its keys `project` (TOML lines) and, when
    /// given, a webhook of `filter_groups`.
    fn file(project: &str, filter_groups: Option<&str>) -> String {
        let webhook =
            filter_groups.map(|groups| format!("[codebuild.projects.runner.webhook]\nfilter_groups = {groups}\n"));
        format!(
            "region = \"us-east-1\"\n{ROLE}[codebuild.projects.runner]\nname = \"rocm-bake\"\nsource_location = \"https://github.com/ROCm/rocm-bake\"\nservice_role = \"codebuild\"\nbuild_timeout_hours = 4\n{project}\n{}",
            webhook.unwrap_or_default()
        )
    }

    const RUNNER: &str = r#"[[{ type = "EVENT", pattern = "WORKFLOW_JOB_QUEUED" }, { type = "REPOSITORY_NAME", pattern = "^rocm-bake$" }]]"#;

    #[test]
    fn a_runner_project_is_filled_in_with_ec2_defaults() {
        let desired = parse(&file("tags = { project = \"rocm\" }", Some(RUNNER))).unwrap();
        let project = &declared(&desired).projects[0];
        assert_eq!(project.key, "runner");
        assert_eq!(project.name, "rocm-bake");
        assert_eq!(project.description, "");
        assert_eq!(project.environment_type, "LINUX_CONTAINER");
        assert_eq!(project.compute_type, "BUILD_GENERAL1_XLARGE");
        assert_eq!(project.image, "aws/codebuild/amazonlinux-x86_64-standard:5.0");
        assert!(project.privileged_mode);
        assert_eq!(project.service_role, "codebuild");
        assert_eq!(project.build_timeout_minutes, 240);
        assert_eq!(project.queued_timeout_minutes, None);
        assert_eq!(project.tags["project"], "rocm");
        assert_eq!(project.log_group(), "/aws/codebuild/rocm-bake");
        let webhook = project.webhook.as_ref().unwrap();
        assert_eq!(
            (webhook.build_type.as_str(), webhook.manual_creation, webhook.scope.as_ref()),
            ("BUILD", false, None)
        );
        assert_eq!(
            webhook.filter_groups,
            [[
                WebhookFilter {
                    kind: "EVENT".into(),
                    pattern: "WORKFLOW_JOB_QUEUED".into(),
                    exclude_matched_pattern: false
                },
                WebhookFilter {
                    kind: "REPOSITORY_NAME".into(),
                    pattern: "^rocm-bake$".into(),
                    exclude_matched_pattern: false
                },
            ]]
        );
        assert!(desired.findings.is_empty());

        let arm = parse(&file(
            "environment_type = \"ARM_CONTAINER\"\ncompute_type = \"BUILD_GENERAL1_LARGE\"\nqueued_timeout_minutes = 480\ndescription = \"the runner\"",
            None,
        ))
        .unwrap();
        let project = &declared(&arm).projects[0];
        assert_eq!(project.image, "aws/codebuild/amazonlinux-aarch64-standard:3.0");
        assert_eq!(project.compute_type, "BUILD_GENERAL1_LARGE");
        assert_eq!(project.queued_timeout_minutes, Some(480));
        assert_eq!(project.description, "the runner");
        assert!(project.webhook.is_none());
        let own = parse(&file("image = \"public.ecr.aws/x/y:1\"", None)).unwrap();
        assert_eq!(declared(&own).projects[0].image, "public.ecr.aws/x/y:1");

        let scoped = parse(&file(
            "",
            Some(r#"[[{ type = "EVENT", pattern = "WORKFLOW_JOB_QUEUED" }, { type = "REPOSITORY_NAME", pattern = "x", exclude_matched_pattern = true }]]
build_type = "BUILD_BATCH"
manual_creation = true
scope = { name = "ROCm", scope = "GITHUB_ORGANIZATION", domain = "github.com" }"#),
        ))
        .unwrap();
        let webhook = declared(&scoped).projects[0].webhook.clone().unwrap();
        assert_eq!((webhook.build_type.as_str(), webhook.manual_creation), ("BUILD_BATCH", true));
        assert!(webhook.filter_groups[0][1].exclude_matched_pattern);
        assert_eq!(
            webhook.scope,
            Some(WebhookScope {
                name: "ROCm".into(),
                scope: "GITHUB_ORGANIZATION".into(),
                domain: Some("github.com".into())
            })
        );
    }

    #[test]
    fn what_would_stop_the_nightly_is_refused_naming_the_key() {
        let long_description = format!("description = \"{}\"", "é".repeat(256));
        let cases = [
            ("environment_type = \"LINUX_LAMBDA_CONTAINER\"", format!("`codebuild.projects.runner.environment_type`: {LAMBDA_REFUSAL}")),
            ("environment_type = \"WINDOWS_CONTAINER\"", "`codebuild.projects.runner.environment_type`: `WINDOWS_CONTAINER` is not supported: use LINUX_CONTAINER or ARM_CONTAINER".to_owned()),
            ("compute_type = \"BUILD_LAMBDA_4GB\"", format!("`codebuild.projects.runner.compute_type`: {LAMBDA_REFUSAL}")),
            ("compute_type = \"BUILD_GENERAL1_HUGE\"", "`codebuild.projects.runner.compute_type`: `BUILD_GENERAL1_HUGE` is not an EC2 compute type: use one of BUILD_GENERAL1_SMALL, BUILD_GENERAL1_MEDIUM, BUILD_GENERAL1_LARGE, BUILD_GENERAL1_XLARGE, BUILD_GENERAL1_2XLARGE".to_owned()),
            ("privileged_mode = false", "`codebuild.projects.runner.privileged_mode`: privileged mode must be on: BuildKit needs a Docker daemon, and CodeBuild runs one only in privileged mode".to_owned()),
            ("queued_timeout_minutes = 4", "`codebuild.projects.runner.queued_timeout_minutes`: must be 5 to 480 minutes".to_owned()),
            ("queued_timeout_minutes = 481", "`codebuild.projects.runner.queued_timeout_minutes`: must be 5 to 480 minutes".to_owned()),
            ("tags = { \"aws:x\" = \"y\" }", "`codebuild.projects.runner.tags.aws:x`: tag keys starting with `aws:` are reserved for AWS".to_owned()),
            (long_description.as_str(), "`codebuild.projects.runner.description`: CodeBuild takes a description of at most 255 characters".to_owned()),
        ];
        each_refused_as(cases.into_iter().map(|(key, expected)| (file(key, None), expected)));
        // At the limits: 255 characters of description, 5 and 480 minutes queued, every EC2 type.
        assert!(parse(&file(&format!("description = \"{}\"", "é".repeat(255)), None)).is_ok());
        for queued in [5, 480] {
            assert!(parse(&file(&format!("queued_timeout_minutes = {queued}"), None)).is_ok());
        }
        for compute in EC2_COMPUTE_TYPES {
            assert!(parse(&file(&format!("compute_type = \"{compute}\""), None)).is_ok(), "{compute}");
        }
    }

    #[test]
    fn the_build_timeout_is_whole_hours_within_codebuilds_range() {
        let timeout =
            |hours: u32| file("", None).replace("build_timeout_hours = 4", &format!("build_timeout_hours = {hours}"));
        assert_eq!(declared(&parse(&timeout(1)).unwrap()).projects[0].build_timeout_minutes, 60);
        assert_eq!(declared(&parse(&timeout(36)).unwrap()).projects[0].build_timeout_minutes, 2160);
        for hours in [0, 37, u32::MAX] {
            assert_eq!(
                refusals(&timeout(hours)),
                [format!(
                    "`codebuild.projects.runner.build_timeout_hours`: {hours} hours is outside what CodeBuild allows, 5 to 2160 minutes (1 to 36 whole hours here)"
                )]
            );
        }
    }

    #[test]
    fn the_name_source_and_role_are_checked() {
        let named = |name: &str| file("", None).replace("name = \"rocm-bake\"", &format!("name = \"{name}\""));
        for good in ["ab", "a_b-c", "9x", &"a".repeat(255)] {
            assert!(parse(&named(good)).is_ok(), "{good}");
        }
        for bad in ["a", "-ab", "_ab", "a.b", "a b", &"a".repeat(256)] {
            assert_eq!(
                refusals(&named(bad)),
                [format!(
                    "`codebuild.projects.runner.name`: `{bad}` is not a CodeBuild project name: 2 to 255 letters, digits, `-` and `_`, starting with a letter or digit"
                )],
                "{bad}"
            );
        }
        let role = file("", None).replace("service_role = \"codebuild\"", "service_role = \"builder\"");
        assert_eq!(
            refusals(&role),
            [
                "`codebuild.projects.runner.service_role`: no role `builder` under `[iam.roles]`: name the key of the role the project runs as"
            ]
        );
        assert_eq!(
            refusals(&file("image = \"  \"", None)),
            [
                "`codebuild.projects.runner.image`: the image must name a container image; leave it out for the standard one"
            ]
        );
    }

    #[test]
    fn the_source_is_a_github_repository_url() {
        for good in [
            "https://github.com/ROCm/rocm-bake",
            "https://github.com/ROCm/rocm-bake.git",
            "https://github.com/a/b_c.d",
            &format!("https://github.com/{}/{}", "o".repeat(39), "r".repeat(100)),
        ] {
            assert!(is_github_repository_url(good), "{good}");
        }
        for bad in [
            "http://github.com/ROCm/rocm-bake",
            "https://gitlab.com/ROCm/rocm-bake",
            "https://github.com/ROCm",
            "https://github.com//rocm-bake",
            "https://github.com/ROCm/",
            "https://github.com/-ROCm/x",
            "https://github.com/RO_Cm/x",
            "https://github.com/ROCm/a/b",
            "https://github.com/ROCm/.",
            "https://github.com/ROCm/..",
            "https://github.com/ROCm/..git",
            &format!("https://github.com/{}/x", "o".repeat(40)),
            &format!("https://github.com/o/{}", "r".repeat(101)),
        ] {
            assert!(!is_github_repository_url(bad), "{bad}");
        }
    }

    #[test]
    fn webhook_filters_are_checked_as_codebuild_checks_them() {
        let refused = |groups: &str| refusals(&file("", Some(groups)));
        let path = "`codebuild.projects.runner.webhook.filter_groups[0]`";
        assert_eq!(
            refused(r#"[[{ type = "EVENT", pattern = "WORKFLOW_JOB_QUEUED" }, { type = "COLOUR", pattern = "x" }]]"#),
            [format!("{path}: `COLOUR` is not a webhook filter type: {}", FILTER_TYPES.join(", "))]
        );
        assert_eq!(
            refused(
                r#"[[{ type = "EVENT", pattern = "WORKFLOW_JOB_QUEUED, PUSHED" }, { type = "REPOSITORY_NAME", pattern = "x" }]]"#
            ),
            [format!("{path}: `PUSHED` is not a webhook event: {}", EVENTS.join(", "))]
        );
        assert_eq!(
            refused(
                r#"[[{ type = "EVENT", pattern = "WORKFLOW_JOB_QUEUED" }, { type = "REPOSITORY_NAME", pattern = " " }]]"#
            ),
            [format!("{path}: a filter needs a pattern")]
        );
        assert_eq!(
            refused(
                r#"[[{ type = "EVENT", pattern = "WORKFLOW_JOB_QUEUED" }, { type = "HEAD_REF", pattern = "(main" }]]"#
            ),
            [format!("{path}: the HEAD_REF pattern `(main` is not a valid regular expression: unclosed group")]
        );
        assert_eq!(
            refused(r#"[[{ type = "REPOSITORY_NAME", pattern = "x" }]]"#),
            [format!("{path}: a filter group needs exactly one `EVENT` filter, not 0")]
        );
        assert_eq!(
            refused(r#"[[{ type = "EVENT", pattern = "WORKFLOW_JOB_QUEUED" }, { type = "EVENT", pattern = "PUSH" }]]"#),
            [format!("{path}: a filter group needs exactly one `EVENT` filter, not 2")]
        );
        assert_eq!(
            refused("[]"),
            [
                "`codebuild.projects.runner.webhook.filter_groups`: a runner's webhook needs a filter group with `EVENT` = `WORKFLOW_JOB_QUEUED`"
            ]
        );
        let typed = file("", Some(RUNNER)).replace("filter_groups =", "build_type = \"NIGHTLY\"\nfilter_groups =");
        assert_eq!(
            refusals(&typed),
            [
                "`codebuild.projects.runner.webhook.build_type`: `NIGHTLY` is not a webhook build type: BUILD, BUILD_BATCH or RUNNER_BUILDKITE_BUILD"
            ]
        );
        // Java's look-around and back-references are accepted; an EVENT's pattern is a list of
        // events, not a regular expression.
        assert!(parse(&file("", Some(r#"[[{ type = "EVENT", pattern = "WORKFLOW_JOB_QUEUED" }, { type = "HEAD_REF", pattern = "^(?!refs/heads/x)(a)\\1$" }]]"#))).is_ok());
        assert_eq!(check_pattern("(?=a)"), Ok(()));
        assert_eq!(check_pattern("(a)\\1"), Ok(()));
        assert_eq!(check_pattern("["), Err("unclosed character class".to_owned()));
    }

    #[test]
    fn a_webhook_a_fork_can_trigger_or_that_no_job_reaches_is_warned_about() {
        assert_eq!(findings(&file("", Some(RUNNER))), Vec::<String>::new());
        // Each is about the webhook.
        let warned = parse(&file("", Some(r#"[[{ type = "EVENT", pattern = "WORKFLOW_JOB_QUEUED" }]]"#))).unwrap();
        assert_eq!(warned.findings[0].address, Some(Address::new(crate::WEBHOOK, "runner")));
        assert_eq!(
            findings(&file("", Some(r#"[[{ type = "EVENT", pattern = "WORKFLOW_JOB_QUEUED" }]]"#))),
            [
                "W201 warning codebuild.projects.runner.webhook.filter_groups[0]: this filter group has only its EVENT filter, so a pull request from any fork can start a build on the runner, under its IAM role; add filters a fork cannot edit, such as REPOSITORY_NAME or ACTOR_ACCOUNT_ID"
            ]
        );
        let not_a_runner =
            "no filter group takes `WORKFLOW_JOB_QUEUED`, so GitHub Actions jobs will never reach this runner";
        assert_eq!(
            findings(&file(
                "",
                Some(r#"[[{ type = "EVENT", pattern = "PUSH" }, { type = "REPOSITORY_NAME", pattern = "x" }]]"#)
            )),
            [format!("W202 warning codebuild.projects.runner.webhook.filter_groups: {not_a_runner}")]
        );
        // Excluding the event is not taking it.
        assert_eq!(
            findings(&file(
                "",
                Some(
                    r#"[[{ type = "EVENT", pattern = "WORKFLOW_JOB_QUEUED", exclude_matched_pattern = true }, { type = "REPOSITORY_NAME", pattern = "x" }]]"#
                )
            )),
            [format!("W202 warning codebuild.projects.runner.webhook.filter_groups: {not_a_runner}")]
        );
        // Pull requests built by CodeBuild itself: the policy that gates them is not managed.
        assert_eq!(
            findings(&file(
                "",
                Some(
                    r#"[[{ type = "EVENT", pattern = "WORKFLOW_JOB_QUEUED, PULL_REQUEST_CREATED" }, { type = "REPOSITORY_NAME", pattern = "x" }]]"#
                )
            )),
            [
                "W203 warning codebuild.projects.runner.webhook.filter_groups: a filter group takes a pull-request event, so CodeBuild builds pull requests itself, outside the runner's workflow jobs; those builds are gated by the webhook's pullRequestBuildPolicy, which reconcile does not manage: take only WORKFLOW_JOB_QUEUED, or set the policy by hand"
            ]
        );
        assert_eq!(
            findings(&file("", Some(r#"[[{ type = "EVENT", pattern = "WORKFLOW_JOB_QUEUED, PULL_REQUEST_CREATED", exclude_matched_pattern = false }, { type = "REPOSITORY_NAME", pattern = "x" }], [{ type = "EVENT", pattern = "PULL_REQUEST_MERGED", exclude_matched_pattern = true }, { type = "REPOSITORY_NAME", pattern = "x" }]]"#))).len(),
            1,
            "said once, and an excluded event is not taken"
        );
        // One of several events, after a comma, is taken.
        assert_eq!(
            findings(&file(
                "",
                Some(
                    r#"[[{ type = "EVENT", pattern = "PUSH, WORKFLOW_JOB_QUEUED" }, { type = "REPOSITORY_NAME", pattern = "x" }]]"#
                )
            )),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_connection_is_named_by_its_arn() {
        let connection = "arn:aws:codeconnections:us-east-1:123456789012:connection/0a1b-2c3d";
        let named = parse(&file(&format!("source_auth = \"{connection}\""), None)).unwrap();
        assert_eq!(declared(&named).projects[0].source_auth.as_deref(), Some(connection));
        assert_eq!(declared(&parse(&file("", None)).unwrap()).projects[0].source_auth, None);
        for good in [connection, "arn:aws-cn:codestar-connections:cn-north-1:123456789012:connection/abc"] {
            assert!(is_connection_arn(good), "{good}");
        }
        for bad in [
            "arn:aws:iam::123456789012:role/x",
            "arn:aws:codeconnections:us-east-1:123456789012:host/abc",
            "arn:aws:codeconnections:us-east-1:12345:connection/abc",
            "arn:aws:codeconnections:us-east-1:12345678901x:connection/abc",
            "arn:aws:codeconnections::123456789012:connection/abc",
            "arn:aws:codeconnections:us-east-1:123456789012:connection/",
            "arn:aws:codeconnections:us-east-1:123456789012:connection/a b",
            "arn:evil:codeconnections:us-east-1:123456789012:connection/abc",
            "nra:aws:codeconnections:us-east-1:123456789012:connection/abc",
            "arn:aws:codeconnections",
        ] {
            assert!(!is_connection_arn(bad), "{bad}");
        }
        assert_eq!(
            refusals(&file("source_auth = \"ghp_token\"", None)),
            [
                "`codebuild.projects.runner.source_auth`: `ghp_token` is not the ARN of a connection: arn:aws:codeconnections:REGION:ACCOUNT:connection/ID"
            ]
        );
    }

    #[test]
    fn two_projects_with_one_name_are_refused() {
        let text = format!(
            "{}[codebuild.projects.other]\nname = \"rocm-bake\"\nsource_location = \"https://github.com/ROCm/x\"\nservice_role = \"codebuild\"\nbuild_timeout_hours = 1\n",
            file("", None)
        );
        assert_eq!(
            refusals(&text),
            [
                "`codebuild.projects.other.name`: project name `rocm-bake` is also declared by `codebuild.projects.runner` (line 6); one AWS name can be declared only once"
            ]
        );
    }

    #[test]
    fn a_project_aws_would_refuse_is_refused_before_it() {
        let text = format!(
            r#"
region = "us-east-1"
[iam.roles.codebuild]
name = "rocm-bake-codebuild"
trusted_services = ["codebuild.amazonaws.com"]
[codebuild.projects.runner]
name = "rocm-bake"
description = "{}"
image = " "
source_location = "https://github.com/ROCm"
service_role = "codebuild"
build_timeout_hours = 4
[codebuild.projects.runner.webhook]
filter_groups = [[{{ type = "EVENT", pattern = "WORKFLOW_JOB_QUEUED" }}, {{ type = "HEAD_REF", pattern = "^refs/heads/(main" }}]]
[codebuild.projects.other]
name = "rocm-bake"
source_location = "https://github.com/ROCm/rocm-bake.git"
service_role = "codebuild"
build_timeout_hours = 4
"#,
            "d".repeat(256)
        );
        assert_eq!(
            parse(&text).unwrap_err(),
            "desired.toml:6:1: `codebuild.projects.runner.description`: CodeBuild takes a description of at most 255 characters\ndesired.toml:6:1: `codebuild.projects.runner.image`: the image must name a container image; leave it out for the standard one\ndesired.toml:10:19: `codebuild.projects.runner.source_location`: a runner project's source is its GitHub repository, `https://github.com/OWNER/REPO`\ndesired.toml:14:18: `codebuild.projects.runner.webhook.filter_groups[0]`: the HEAD_REF pattern `^refs/heads/(main` is not a valid regular expression: unclosed group\ndesired.toml:16:8: `codebuild.projects.other.name`: project name `rocm-bake` is also declared by `codebuild.projects.runner` (line 7); one AWS name can be declared only once"
        );
    }
}
