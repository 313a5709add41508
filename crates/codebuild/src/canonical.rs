//! The project and webhook as typed specs in canonical form, and the one place they meet the
//! canonical map: what desired.toml asks for, what observe saw, and what apply reads back.
//!
//! Only what desired.toml declares is compared (see `reconcile_core::plan::diff`), so the
//! fields AWS fills in on its own (badge, `encryptionKey`, `lastModified`, ...) are simply not
//! fields here; what AWS fills into a field that is compared is folded away by
//! [`SERVER_OWNED`].
//! A webhook's server-owned fields (`payloadUrl`, `secret`, `status`, `lastModifiedSecret`)
//! are never read at all, so the secret cannot reach a plan; its `url` (the hook's address on
//! the source provider) is kept beside its fields, shown and never compared.

use std::collections::BTreeMap;

use crate::section::{Project, Webhook};
use aws_sdk_codebuild as codebuild;
use reconcile_core::spec::attributes;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What CodeBuild fills in on a project by itself, so that none of it is drift, and apply never
/// takes it away. One place, each with its source.
pub(crate) mod server_owned {
    /// The variable CodeBuild adds, `true`, to the environment of every project it creates
    /// (terraform-provider-aws issue 37051, pulumi-aws PR 3843). Any other value is drift.
    pub const AUTO_DISCOVER: (&str, &str) = ("CODEBUILD_CONFIG_AUTO_DISCOVER", "true");
    // Not fields here, so never compared (listed so nobody makes them fields unaware): the
    // `gitCloneDepth`, `insecureSsl` and `reportBuildStatus` CodeBuild fills in on a secondary
    // source (only a secondary source's identifier, type, location and buildspec are read), and
    // the default KMS key (`encryptionKey`, `alias/aws/s3`), which `BatchGetProjects` answers
    // whether or not one was set (the Terraform provider suppresses it the same way).
}

/// `codebuild_project.<key>`: every project field reconcile sets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ProjectSpec {
    pub name: String,
    pub description: String,
    pub source_type: String,
    pub source_location: String,
    pub artifacts_type: String,
    pub environment_type: String,
    pub compute_type: String,
    pub image: String,
    pub privileged_mode: bool,
    pub image_pull_credentials_type: String,
    pub service_role: String,
    pub timeout_in_minutes: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued_timeout_in_minutes: Option<i32>,
    pub cloudwatch_logs: LogsSpec,
    pub tags: BTreeMap<String, String>,
    /// The connection the source is reached through (`source.auth` of type `CODECONNECTIONS`);
    /// none: the region's GitHub source credential of the account.
    pub source_auth: Option<String>,
    // What follows is not declared in desired.toml: each has one desired value, "none", because
    // each, set out of band, changes what runs on the runner, where, or who can see it. A plan
    // shows any other value as drift, and apply clears it.
    /// A buildspec in the source runs commands outside the workflow the runner serves.
    pub buildspec: String,
    pub insecure_ssl: bool,
    /// Environment variables reach every job (`ACTIONS_RUNNER_HOOK_JOB_STARTED` runs a script).
    pub environment_variables: Vec<EnvironmentVariable>,
    pub certificate: String,
    pub registry_credential: Option<String>,
    pub fleet: Option<String>,
    pub vpc_config: Option<VpcSpec>,
    pub secondary_sources: Vec<Value>,
    pub secondary_artifacts: Vec<Value>,
    pub file_system_locations: Vec<Value>,
    pub cache: CacheSpec,
    /// Batch builds run as their own service role.
    pub build_batch_service_role: Option<String>,
    pub s3_logs: S3LogsSpec,
    pub project_visibility: String,
}

/// One environment variable. A plain-text value is never shown: plans go into pull-request
/// comments, and such values are sometimes secrets (every variable is drift anyway).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(crate) struct EnvironmentVariable {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct VpcSpec {
    pub vpc_id: String,
    pub subnets: Vec<String>,
    pub security_group_ids: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CacheSpec {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct S3LogsSpec {
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
}

impl ProjectSpec {
    /// Whether every field that reconcile only ever clears is clear: apply can send nothing else.
    pub fn only_clears(&self) -> bool {
        self.buildspec.is_empty()
            && self.environment_variables.is_empty()
            && self.certificate.is_empty()
            && self.registry_credential.is_none()
            && self.fleet.is_none()
            && self.vpc_config.is_none()
            && self.secondary_sources.is_empty()
            && self.secondary_artifacts.is_empty()
            && self.file_system_locations.is_empty()
            && self.cache.kind == NO_CACHE
            && self.build_batch_service_role.is_none()
            && self.s3_logs.status == DISABLED
    }
}

pub(crate) const NO_CACHE: &str = "NO_CACHE";
pub(crate) const DISABLED: &str = "DISABLED";
pub(crate) const PRIVATE: &str = "PRIVATE";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct LogsSpec {
    pub status: String,
    pub group_name: Option<String>,
}

/// A live project, as CodeBuild answers it: any field may be missing.
#[derive(Debug, Serialize)]
struct ProjectState<'a> {
    name: Option<&'a str>,
    arn: Option<&'a str>,
    description: &'a str,
    source_type: Option<&'a str>,
    source_location: Option<&'a str>,
    artifacts_type: Option<&'a str>,
    environment_type: Option<&'a str>,
    compute_type: Option<&'a str>,
    image: Option<&'a str>,
    privileged_mode: bool,
    image_pull_credentials_type: &'a str,
    service_role: Option<&'a str>,
    timeout_in_minutes: Option<i32>,
    queued_timeout_in_minutes: Option<i32>,
    cloudwatch_logs: LogsState<'a>,
    tags: BTreeMap<String, String>,
    source_auth: Option<&'a str>,
    buildspec: &'a str,
    insecure_ssl: bool,
    environment_variables: Vec<EnvironmentVariable>,
    certificate: &'a str,
    registry_credential: Option<&'a str>,
    fleet: Option<&'a str>,
    vpc_config: Option<VpcSpec>,
    secondary_sources: Vec<Value>,
    secondary_artifacts: Vec<Value>,
    file_system_locations: Vec<Value>,
    cache: CacheSpec,
    build_batch_service_role: Option<&'a str>,
    s3_logs: S3LogsSpec,
    project_visibility: &'a str,
    /// What desired.toml does not set and apply leaves as it is: shown (Terraform's plan
    /// carries them), never compared.
    badge_enabled: bool,
    concurrent_build_limit: Option<i32>,
    source_version: &'a str,
}

#[derive(Debug, Serialize)]
struct LogsState<'a> {
    status: &'a str,
    group_name: Option<&'a str>,
}

/// `codebuild_webhook.<key>`: the webhook's filters and settings, as desired and as observed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct WebhookSpec {
    pub project: String,
    pub build_type: String,
    pub filter_groups: Vec<Vec<Filter>>,
    pub manual_creation: bool,
    pub scope_configuration: Option<ScopeSpec>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Filter {
    #[serde(rename = "type")]
    pub kind: String,
    pub pattern: String,
    pub exclude_matched_pattern: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ScopeSpec {
    pub name: String,
    pub scope: String,
    pub domain: Option<String>,
}

/// The desired project's fields, with `tags` (desired.toml's, and the deployment's mark).
pub fn desired_project(project: &Project, role_arn: &str, tags: BTreeMap<String, String>) -> Map<String, Value> {
    attributes(&ProjectSpec {
        name: project.name.clone(),
        description: project.description.clone(),
        source_type: "GITHUB".to_owned(),
        source_location: project.source_location.clone(),
        artifacts_type: "NO_ARTIFACTS".to_owned(),
        environment_type: project.environment_type.clone(),
        compute_type: project.compute_type.clone(),
        image: project.image.clone(),
        privileged_mode: project.privileged_mode,
        image_pull_credentials_type: "CODEBUILD".to_owned(),
        service_role: role_arn.to_owned(),
        timeout_in_minutes: minutes(project.build_timeout_minutes),
        queued_timeout_in_minutes: project.queued_timeout_minutes.map(minutes),
        cloudwatch_logs: LogsSpec { status: "ENABLED".to_owned(), group_name: Some(project.log_group()) },
        tags,
        source_auth: project.source_auth.clone(),
        buildspec: String::new(),
        insecure_ssl: false,
        environment_variables: Vec::new(),
        certificate: String::new(),
        registry_credential: None,
        fleet: None,
        vpc_config: None,
        secondary_sources: Vec::new(),
        secondary_artifacts: Vec::new(),
        file_system_locations: Vec::new(),
        cache: CacheSpec { kind: NO_CACHE.to_owned(), location: None, modes: Vec::new() },
        build_batch_service_role: None,
        s3_logs: S3LogsSpec { status: DISABLED.to_owned(), location: None },
        project_visibility: PRIVATE.to_owned(),
    })
}

/// Validation bounds timeouts to hours; saturating keeps an absurd value absurd, not wrapped.
fn minutes(value: u32) -> i32 {
    i32::try_from(value).unwrap_or(i32::MAX)
}

/// The live project's fields, named as in [`desired_project`].
pub fn observed_project(project: &codebuild::types::Project) -> Map<String, Value> {
    let environment = project.environment();
    let logs = project.logs_config().and_then(|l| l.cloud_watch_logs());
    attributes(&ProjectState {
        name: project.name(),
        arn: project.arn(),
        description: project.description().unwrap_or_default(),
        source_type: project.source().map(|s| s.r#type().as_str()),
        source_location: project.source().and_then(|s| s.location()),
        artifacts_type: project.artifacts().map(|a| a.r#type().as_str()),
        environment_type: environment.map(|e| e.r#type().as_str()),
        compute_type: environment.map(|e| e.compute_type().as_str()),
        image: environment.map(|e| e.image()),
        privileged_mode: environment.and_then(|e| e.privileged_mode()).unwrap_or(false),
        image_pull_credentials_type: environment
            .and_then(|e| e.image_pull_credentials_type())
            .map_or("CODEBUILD", |t| t.as_str()),
        service_role: project.service_role(),
        timeout_in_minutes: project.timeout_in_minutes(),
        queued_timeout_in_minutes: project.queued_timeout_in_minutes(),
        // Logs are on unless turned off, and have no group until one is set.
        cloudwatch_logs: LogsState {
            status: logs.map_or("ENABLED", |l| l.status().as_str()),
            group_name: logs.and_then(|l| l.group_name()),
        },
        tags: reconcile_aws::visible_tags(
            project.tags().iter().filter_map(|t| Some((t.key()?, t.value().unwrap_or_default()))),
        ),
        // An auth that names a resource (a connection, a secret) is one of the project's own; a
        // bare `OAUTH` one is the account's credential, as none is.
        source_auth: project.source().and_then(|s| s.auth()).and_then(|auth| auth.resource()),
        buildspec: project.source().and_then(|s| s.buildspec()).unwrap_or_default(),
        insecure_ssl: project.source().and_then(|s| s.insecure_ssl()).unwrap_or(false),
        environment_variables: environment.map_or_else(Vec::new, |e| {
            let mut variables: Vec<EnvironmentVariable> = e
                .environment_variables()
                .iter()
                .filter(|v| !is_server_owned(v))
                .map(|v| {
                    let kind = v.r#type().map_or("PLAINTEXT", |t| t.as_str());
                    // Parameter and secret references name where the value is, not the value.
                    let value =
                        if kind == "PLAINTEXT" { "(plain text, not shown)".to_owned() } else { v.value().to_owned() };
                    EnvironmentVariable { name: v.name().to_owned(), kind: kind.to_owned(), value }
                })
                .collect();
            variables.sort();
            variables
        }),
        certificate: environment.and_then(|e| e.certificate()).unwrap_or_default(),
        registry_credential: environment.and_then(|e| e.registry_credential()).map(|c| c.credential()),
        fleet: environment.and_then(|e| e.fleet()).and_then(|f| f.fleet_arn()),
        vpc_config: project.vpc_config().and_then(|vpc| {
            let mut subnets = vpc.subnets().to_vec();
            subnets.sort();
            let mut groups = vpc.security_group_ids().to_vec();
            groups.sort();
            let vpc_id = vpc.vpc_id().unwrap_or_default().to_owned();
            // An empty VPC configuration is how one is removed: it is none.
            (!vpc_id.is_empty() || !subnets.is_empty() || !groups.is_empty()).then_some(VpcSpec {
                vpc_id,
                subnets,
                security_group_ids: groups,
            })
        }),
        secondary_sources: project
            .secondary_sources()
            .iter()
            .map(|s| {
                serde_json::json!({
                    "identifier": s.source_identifier(),
                    "type": s.r#type().as_str(),
                    "location": s.location(),
                    "buildspec": s.buildspec(),
                })
            })
            .collect(),
        secondary_artifacts: project
            .secondary_artifacts()
            .iter()
            .map(|a| {
                serde_json::json!({
                    "identifier": a.artifact_identifier(),
                    "type": a.r#type().as_str(),
                    "location": a.location(),
                })
            })
            .collect(),
        file_system_locations: project
            .file_system_locations()
            .iter()
            .map(|f| {
                serde_json::json!({
                    "identifier": f.identifier(),
                    "location": f.location(),
                    "mount_point": f.mount_point(),
                })
            })
            .collect(),
        cache: project.cache().map_or_else(
            || CacheSpec { kind: NO_CACHE.to_owned(), location: None, modes: Vec::new() },
            |cache| CacheSpec {
                kind: cache.r#type().as_str().to_owned(),
                location: cache.location().filter(|l| !l.is_empty()).map(str::to_owned),
                modes: cache.modes().iter().map(|m| m.as_str().to_owned()).collect(),
            },
        ),
        build_batch_service_role: project.build_batch_config().and_then(|b| b.service_role()),
        s3_logs: project.logs_config().and_then(|l| l.s3_logs()).map_or_else(
            || S3LogsSpec { status: DISABLED.to_owned(), location: None },
            |s3| S3LogsSpec {
                status: s3.status().as_str().to_owned(),
                location: s3.location().filter(|l| !l.is_empty()).map(str::to_owned),
            },
        ),
        project_visibility: project.project_visibility().map_or(PRIVATE, |v| v.as_str()),
        badge_enabled: project.badge().is_some_and(|b| b.badge_enabled()),
        concurrent_build_limit: project.concurrent_build_limit(),
        source_version: project.source_version().unwrap_or_default(),
    })
}

/// Whether CodeBuild put the variable there itself, as it is ([`server_owned::AUTO_DISCOVER`]).
pub(crate) fn is_server_owned(variable: &codebuild::types::EnvironmentVariable) -> bool {
    let plain = variable.r#type().is_none_or(|t| *t == codebuild::types::EnvironmentVariableType::Plaintext);
    (variable.name(), variable.value()) == server_owned::AUTO_DISCOVER && plain
}

/// The desired webhook's fields.
pub fn desired_webhook(project_name: &str, webhook: &Webhook) -> Map<String, Value> {
    let groups = webhook
        .filter_groups
        .iter()
        .map(|group| group.iter().map(|f| filter(&f.kind, &f.pattern, f.exclude_matched_pattern)).collect())
        .collect();
    attributes(&WebhookSpec {
        project: project_name.to_owned(),
        build_type: webhook.build_type.clone(),
        filter_groups: canonical_groups(groups),
        manual_creation: webhook.manual_creation,
        scope_configuration: webhook.scope.as_ref().map(|s| ScopeSpec {
            name: s.name.clone(),
            scope: s.scope.clone(),
            domain: s.domain.clone(),
        }),
    })
}

/// The live webhook's fields, named as in [`desired_webhook`].
pub fn observed_webhook(project_name: &str, webhook: &codebuild::types::Webhook) -> Map<String, Value> {
    let groups = webhook
        .filter_groups()
        .iter()
        .map(|group| {
            group
                .iter()
                .map(|f| filter(f.r#type().as_str(), f.pattern(), f.exclude_matched_pattern().unwrap_or(false)))
                .collect()
        })
        .collect();
    let mut fields = attributes(&WebhookSpec {
        project: project_name.to_owned(),
        build_type: webhook.build_type().map_or("BUILD", |t| t.as_str()).to_owned(),
        filter_groups: canonical_groups(groups),
        manual_creation: webhook.manual_creation().unwrap_or(false),
        scope_configuration: webhook.scope_configuration().map(|s| ScopeSpec {
            name: s.name().to_owned(),
            scope: s.scope().as_str().to_owned(),
            domain: s.domain().map(str::to_owned),
        }),
    });
    if let Some(url) = webhook.url().filter(|url| !url.is_empty()) {
        fields.insert("url".to_owned(), Value::String(url.to_owned()));
    }
    fields
}

/// One filter; an EVENT pattern is a comma-separated set of event names.
fn filter(kind: &str, pattern: &str, exclude_matched_pattern: bool) -> Filter {
    let pattern = if kind == "EVENT" {
        let mut events: Vec<&str> = pattern.split(',').map(str::trim).filter(|e| !e.is_empty()).collect();
        events.sort_unstable();
        events.dedup();
        events.join(",")
    } else {
        pattern.to_owned()
    };
    Filter { kind: kind.to_owned(), pattern, exclude_matched_pattern }
}

/// Groups are a set (any one passing starts a build), and so are the filters of a group (all
/// must pass). They are ordered the way a reader scans them, EVENT first and then by type and
/// pattern, so that a diff of two sets lines up the groups that differ least.
fn canonical_groups(groups: Vec<Vec<Filter>>) -> Vec<Vec<Filter>> {
    fn filter_key(filter: &Filter) -> (bool, String, String, bool) {
        (filter.kind != "EVENT", filter.kind.clone(), filter.pattern.clone(), filter.exclude_matched_pattern)
    }
    let mut groups: Vec<Vec<Filter>> = groups
        .into_iter()
        .map(|mut group| {
            group.sort_by_key(filter_key);
            group.dedup();
            group
        })
        .collect();
    groups.sort_by_key(|group| group.iter().map(filter_key).collect::<Vec<_>>());
    groups.dedup();
    groups
}

/// The nightly's runner project as desired.toml declares it, for tests.
#[cfg(test)]
pub(crate) fn test_project() -> Project {
    Project {
        key: "runner".into(),
        name: "rocm-bake".into(),
        description: "runner".into(),
        source_location: "https://github.com/ROCm/rocm-bake".into(),
        environment_type: "LINUX_CONTAINER".into(),
        compute_type: "BUILD_GENERAL1_XLARGE".into(),
        image: "aws/codebuild/standard:7.0".into(),
        privileged_mode: true,
        service_role: "codebuild".into(),
        build_timeout_minutes: 240,
        queued_timeout_minutes: None,
        tags: BTreeMap::from([("project".to_owned(), "rocm-bake".to_owned())]),
        source_auth: None,
        webhook: None,
        adopt: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::section::WebhookFilter;

    fn webhook(groups: Vec<Vec<(&str, &str)>>) -> Webhook {
        Webhook {
            build_type: "BUILD".into(),
            filter_groups: groups
                .into_iter()
                .map(|g| {
                    g.into_iter()
                        .map(|(kind, pattern)| WebhookFilter {
                            kind: kind.into(),
                            pattern: pattern.into(),
                            exclude_matched_pattern: false,
                        })
                        .collect()
                })
                .collect(),
            manual_creation: false,
            scope: None,
        }
    }

    #[test]
    fn groups_filters_and_events_are_sets() {
        let a = webhook(vec![
            vec![("EVENT", "WORKFLOW_JOB_QUEUED"), ("REPOSITORY_NAME", "^ROCm/rocm-bake$")],
            vec![("EVENT", "PUSH, PULL_REQUEST_MERGED")],
        ]);
        let b = webhook(vec![
            vec![("EVENT", "PULL_REQUEST_MERGED,PUSH")],
            vec![("REPOSITORY_NAME", "^ROCm/rocm-bake$"), ("EVENT", " WORKFLOW_JOB_QUEUED")],
        ]);
        assert_eq!(desired_webhook("p", &a), desired_webhook("p", &b));
    }

    #[test]
    fn a_removed_filter_or_another_pattern_is_a_difference() {
        let full = webhook(vec![vec![("EVENT", "WORKFLOW_JOB_QUEUED"), ("ACTOR_ACCOUNT_ID", "123")]]);
        let fewer = webhook(vec![vec![("EVENT", "WORKFLOW_JOB_QUEUED")]]);
        let other = webhook(vec![vec![("EVENT", "WORKFLOW_JOB_QUEUED"), ("ACTOR_ACCOUNT_ID", "124")]]);
        assert_ne!(desired_webhook("p", &full), desired_webhook("p", &fewer));
        assert_ne!(desired_webhook("p", &full), desired_webhook("p", &other));
    }

    fn spec() -> ProjectSpec {
        serde_json::from_value(Value::Object(desired_project(
            &test_project(),
            "arn:aws:iam::1:role/r",
            test_project().tags,
        )))
        .unwrap()
    }

    #[test]
    fn the_desired_project_is_what_desired_toml_says_and_clears_the_rest() {
        let fields = desired_project(&test_project(), "arn:aws:iam::1:role/r", test_project().tags);
        assert_eq!(fields["name"], "rocm-bake");
        assert_eq!(fields["service_role"], "arn:aws:iam::1:role/r");
        assert_eq!(fields["timeout_in_minutes"], 240);
        assert_eq!(fields["environment_variables"], serde_json::json!([]));
        assert_eq!(fields["vpc_config"], Value::Null);
        assert_eq!(fields["cache"], serde_json::json!({"type": "NO_CACHE"}));
        assert!(!fields.contains_key("queued_timeout_in_minutes"), "only when declared");
        assert!(spec().only_clears());
        assert_eq!((minutes(240), minutes(u32::MAX)), (240, i32::MAX));
    }

    #[test]
    fn a_spec_that_sets_any_field_reconcile_only_clears_is_refused() {
        let setters: [fn(&mut ProjectSpec); 12] = [
            |s| s.buildspec = "version: 0.2".into(),
            |s| {
                s.environment_variables =
                    vec![EnvironmentVariable { name: "A".into(), kind: "PLAINTEXT".into(), value: "b".into() }];
            },
            |s| s.certificate = "bucket/cert.pem".into(),
            |s| s.registry_credential = Some("arn:secret".into()),
            |s| s.fleet = Some("arn:fleet".into()),
            |s| s.vpc_config = Some(VpcSpec { vpc_id: "vpc-1".into(), subnets: vec![], security_group_ids: vec![] }),
            |s| s.secondary_sources = vec![Value::Null],
            |s| s.secondary_artifacts = vec![Value::Null],
            |s| s.file_system_locations = vec![Value::Null],
            |s| s.cache.kind = "LOCAL".into(),
            |s| s.build_batch_service_role = Some("arn:role".into()),
            |s| s.s3_logs.status = "ENABLED".into(),
        ];
        for (idx, set) in setters.iter().enumerate() {
            let mut spec = spec();
            set(&mut spec);
            assert!(!spec.only_clears(), "setter {idx}");
        }
    }

    #[test]
    fn a_live_project_shows_everything_set_on_it_and_hides_plain_text_values() {
        use codebuild::types::{
            EnvironmentVariable as Variable, EnvironmentVariableType, LogsConfig, LogsConfigStatusType, ProjectCache,
            ProjectEnvironment, ProjectSource, S3LogsConfig, VpcConfig,
        };
        let environment = ProjectEnvironment::builder()
            .r#type("LINUX_CONTAINER".into())
            .compute_type("BUILD_GENERAL1_XLARGE".into())
            .image("img")
            .environment_variables(Variable::builder().name("HOOK").value("/tmp/x.sh").build().unwrap())
            .environment_variables(
                Variable::builder()
                    .name("TOKEN")
                    .value("/ci/token")
                    .r#type(EnvironmentVariableType::ParameterStore)
                    .build()
                    .unwrap(),
            )
            .build()
            .unwrap();
        let live = codebuild::types::Project::builder()
            .name("rocm-bake")
            .source(ProjectSource::builder().r#type("GITHUB".into()).buildspec("evil").build().unwrap())
            .environment(environment)
            .vpc_config(VpcConfig::builder().vpc_id("vpc-1").subnets("s-2").subnets("s-1").build())
            .cache(ProjectCache::builder().r#type("S3".into()).location("").build().unwrap())
            .logs_config(
                LogsConfig::builder()
                    .s3_logs(
                        S3LogsConfig::builder().status(LogsConfigStatusType::Enabled).location("b/p").build().unwrap(),
                    )
                    .build(),
            )
            .build();
        let fields = observed_project(&live);
        assert_eq!(fields["buildspec"], "evil");
        assert_eq!(
            fields["environment_variables"],
            serde_json::json!([
                {"name": "HOOK", "type": "PLAINTEXT", "value": "(plain text, not shown)"},
                {"name": "TOKEN", "type": "PARAMETER_STORE", "value": "/ci/token"},
            ])
        );
        assert_eq!(
            fields["vpc_config"],
            serde_json::json!({"vpc_id": "vpc-1", "subnets": ["s-1", "s-2"], "security_group_ids": []})
        );
        assert_eq!(fields["cache"], serde_json::json!({"type": "S3"}), "an empty location is none");
        assert_eq!(fields["s3_logs"], serde_json::json!({"status": "ENABLED", "location": "b/p"}));
        assert_eq!(fields["project_visibility"], PRIVATE);

        // What CodeBuild answers for a project with none of it.
        let bare = codebuild::types::Project::builder()
            .name("rocm-bake")
            .vpc_config(VpcConfig::builder().build())
            .logs_config(
                LogsConfig::builder()
                    .s3_logs(
                        S3LogsConfig::builder().status(LogsConfigStatusType::Disabled).location("").build().unwrap(),
                    )
                    .build(),
            )
            .build();
        let fields = observed_project(&bare);
        assert_eq!(fields["vpc_config"], Value::Null, "an empty VPC configuration is none");
        assert_eq!(fields["s3_logs"], serde_json::json!({"status": "DISABLED"}));
        assert_eq!(fields["buildspec"], "");
        // A VPC named by its subnets or security groups alone is still a VPC.
        for vpc in
            [VpcConfig::builder().subnets("s-1").build(), VpcConfig::builder().security_group_ids("sg-1").build()]
        {
            let live = codebuild::types::Project::builder().name("p").vpc_config(vpc).build();
            assert_ne!(observed_project(&live)["vpc_config"], Value::Null);
        }
    }

    #[test]
    fn a_live_webhook_reads_as_the_desired_one_when_it_means_the_same() {
        use codebuild::types::{WebhookFilter as LiveFilter, WebhookFilterType};
        let live = codebuild::types::Webhook::builder()
            .filter_groups(vec![
                LiveFilter::builder().r#type(WebhookFilterType::RepositoryName).pattern("^a,,b$").build().unwrap(),
                LiveFilter::builder()
                    .r#type(WebhookFilterType::Event)
                    .pattern("PUSH, ,WORKFLOW_JOB_QUEUED")
                    .build()
                    .unwrap(),
            ])
            .build();
        let fields = observed_webhook("p", &live);
        assert_eq!(
            fields["filter_groups"],
            serde_json::json!([[
                {"type": "EVENT", "pattern": "PUSH,WORKFLOW_JOB_QUEUED", "exclude_matched_pattern": false},
                {"type": "REPOSITORY_NAME", "pattern": "^a,,b$", "exclude_matched_pattern": false},
            ]]),
            "EVENT first, its events a set; other patterns untouched"
        );
        assert_eq!(fields["build_type"], "BUILD");
        assert_eq!(fields["manual_creation"], false);
        // No hook address answered: none kept (never an empty one).
        assert_eq!(fields.get("url"), None);
        let hooked = codebuild::types::Webhook::builder().url("https://api.github.com/repos/o/r/hooks/1").build();
        assert_eq!(observed_webhook("p", &hooked)["url"], "https://api.github.com/repos/o/r/hooks/1");
        assert_eq!(observed_webhook("p", &codebuild::types::Webhook::builder().url("").build()).get("url"), None);
    }
}
