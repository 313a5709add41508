//! `codebuild_project.<key>`: the runner project. Every fact about one of its fields is stated
//! here: its row in [`FIELDS`], its place in the spec (in canonical form), how CodeBuild's answer
//! gives it, how create and update write it, and how the Terraform view shows it; desired.toml's
//! `[codebuild]` section (section.rs) is the only other file that names one.
//!
//! Only what desired.toml declares is compared (see `reconcile_core::plan::diff`), so the
//! fields AWS fills in on its own (badge, `encryptionKey`, `lastModified`, ...) are simply not
//! fields here; what AWS fills into a field that is compared is folded away by
//! [`server_owned`]. A plain-text environment variable's value is never read (observe writes a
//! placeholder), so neither the plan nor the Terraform view holds one.
//!
//! | reconcile | provider resource | arguments |
//! |---|---|---|
//! | `codebuild_project.<key>` | `aws_codebuild_project.runner["<key>"]` | `name`, `description`, `service_role`, `build_timeout`, `queued_timeout`, `project_visibility`, `artifacts[0].type`, `environment[0].{type,compute_type,image,privileged_mode,image_pull_credentials_type,certificate,environment_variable[],registry_credential[],fleet[]}`, `source[0].{type,location,buildspec,insecure_ssl,auth[]}`, `logs_config[0].{cloudwatch_logs[0],s3_logs[0]}`, `cache[0]`, `vpc_config[]`, `secondary_sources`, `secondary_artifacts`, `file_system_locations`, `build_batch_config[0].service_role`, `tags`, `tags_all` |

use std::collections::BTreeMap;

use aws_sdk_codebuild as codebuild;
use reconcile_aws::{failed, has_code};
use reconcile_core::desired::{Desired, Topic};
use reconcile_core::fields::{Field, Fields};
use reconcile_core::plan::{Action, Change, DesiredResource};
use reconcile_core::spec::attributes;
use reconcile_core::terraform::{Provider, ProviderResource};
use reconcile_core::{Account, Address, Applied, Progress, ReconcileError};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::section::{Project, declared};
use crate::webhook::desired_webhook;
use crate::{ALREADY_EXISTS, CodebuildReconciler, PROJECT};

/// Sets every managed project field on a `CreateProject` or `UpdateProject` request: their
/// builders are different types with the same setters.
macro_rules! with_project_fields {
    ($request:expr, $spec:expr) => {
        $request
            .name(&$spec.name)
            .description(&$spec.description)
            .source(source($spec))
            .artifacts(artifacts($spec))
            .service_role(&$spec.service_role)
            .timeout_in_minutes($spec.timeout_in_minutes)
            .set_queued_timeout_in_minutes($spec.queued_timeout_in_minutes)
            .logs_config(logs($spec))
            .cache(cache($spec))
            .set_tags(Some(tags($spec)))
    };
}

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

/// desired.toml's key for the CodeConnections connection a project names, as messages name it.
pub(crate) const CONNECTION_KEY: &str = "source_auth";

impl ProjectSpec {
    /// The CodeConnections connection the project names (`source_auth`), if any.
    pub(crate) fn connection(&self) -> Option<&str> {
        self.source_auth.as_deref()
    }

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

/// The nightly's runner project as desired.toml declares it, for tests.
/// A project's fields: all but its visibility `UpdateProject` sets.
pub const FIELDS: Fields = Fields {
    kind: crate::PROJECT,
    fields: &[
        Field::identity("name"),
        Field::in_place("artifacts_type"),
        Field::in_place("build_batch_service_role"),
        Field::in_place("buildspec"),
        Field::in_place("cache"),
        Field::in_place("certificate"),
        Field::in_place("cloudwatch_logs"),
        Field::in_place(COMPUTE_TYPE),
        Field::in_place("description"),
        Field::in_place("environment_type"),
        Field::in_place("environment_variables"),
        Field::in_place("file_system_locations"),
        Field::in_place("fleet"),
        Field::in_place("image"),
        Field::in_place("image_pull_credentials_type"),
        Field::in_place("insecure_ssl"),
        Field::in_place("privileged_mode"),
        Field::in_place("project_visibility").set_by(&["UpdateProjectVisibility"]),
        Field::in_place("queued_timeout_in_minutes"),
        Field::in_place("registry_credential"),
        Field::in_place("s3_logs"),
        Field::in_place("secondary_artifacts"),
        Field::in_place("secondary_sources"),
        Field::in_place("service_role"),
        Field::in_place("source_auth"),
        Field::in_place("source_location"),
        Field::in_place("source_type"),
        Field::in_place("tags"),
        Field::in_place("timeout_in_minutes"),
        Field::in_place("vpc_config"),
    ],
};

/// The field a project's compute is in, as a plan shows it.
pub const COMPUTE_TYPE: &str = "compute_type";
/// What an update of a project does to its compute type, for a plan's cost line: the values
/// before and after (`None` when unset), when it changes it.
pub fn compute_type_change(change: &Change) -> Option<(Option<String>, Option<String>)> {
    if change.address.kind != PROJECT || change.action != Action::Update {
        return None;
    }
    let read = |fields: Option<&serde_json::Map<String, serde_json::Value>>| {
        fields.and_then(|f| f.get(COMPUTE_TYPE)).and_then(serde_json::Value::as_str).map(str::to_owned)
    };
    let (before, after) = (read(change.before.as_ref()), read(change.after.as_ref()));
    (before != after).then_some((before, after))
}
/// The project and its webhook desired.toml asks for. Pure: no client, no AWS.
pub fn desired(desired: &Desired, account: &Account) -> Result<Vec<DesiredResource>, ReconcileError> {
    let mut resources = Vec::new();
    for project in &declared(desired).projects {
        let project_address = Address::new(crate::PROJECT, &project.key);
        let role = desired.referred(Topic::Role).find(|r| r.key == project.service_role).ok_or_else(|| {
            ReconcileError::new(
                Some(&project_address),
                "find the service role",
                format!("no role `{}` under [iam.roles]", project.service_role),
            )
        })?;
        let role_arn = reconcile_aws::arn(account, "iam", &format!("role/{}", role.value));
        // The role must be usable, and allow what the build does, before the project runs as it.
        let role_addresses = role.addresses.clone();
        resources.push(
            DesiredResource::new(
                project_address.clone(),
                &project.name,
                desired_project(project, &role_arn, desired.marked(&project.tags)),
            )
            .depending_on(role_addresses)
            .adopted(project.adopt),
        );
        if let Some(webhook) = &project.webhook {
            let address = Address::new(crate::WEBHOOK, &project.key);
            resources.push(
                DesiredResource::new(address, &project.name, desired_webhook(&project.name, webhook))
                    .under(&project_address),
            );
        }
    }
    Ok(resources)
}
/// The change's project spec, if it asks only for what apply can send: the fields reconcile
/// manages as "none" can be cleared, never set.
pub(crate) fn project_spec(change: &Change) -> Result<ProjectSpec, ReconcileError> {
    let spec: ProjectSpec = reconcile_core::spec::after(change)?;
    if !spec.only_clears() {
        return Err(ReconcileError::new(
            Some(&change.address),
            "read the change's desired fields",
            "it sets a field reconcile only ever clears (buildspec, environment variables, VPC, secondary sources, \
             ...)",
        )
        .with_kind(reconcile_core::ErrorKind::InvalidChange));
    }
    Ok(spec)
}
/// What the plan saw of the project's fields reconcile only clears.
#[derive(serde::Deserialize)]
pub(crate) struct OutOfBand {
    secondary_sources: Vec<serde_json::Value>,
    secondary_artifacts: Vec<serde_json::Value>,
    file_system_locations: Vec<serde_json::Value>,
    vpc_config: Option<serde_json::Value>,
    build_batch_service_role: Option<String>,
    project_visibility: String,
}
pub(crate) fn source(spec: &ProjectSpec) -> codebuild::types::ProjectSource {
    // No buildspec: the source object replaces the live one whole, which clears any (and an auth
    // desired.toml does not name).
    let auth = spec.source_auth.as_ref().map(|connection| {
        codebuild::types::SourceAuth::builder()
            .r#type(codebuild::types::SourceAuthType::Codeconnections)
            .resource(connection)
            .build()
            .expect("type is set")
    });
    codebuild::types::ProjectSource::builder()
        .r#type(spec.source_type.as_str().into())
        .location(&spec.source_location)
        .insecure_ssl(spec.insecure_ssl)
        .set_auth(auth)
        .build()
        .expect("type is set")
}
pub(crate) fn cache(spec: &ProjectSpec) -> codebuild::types::ProjectCache {
    codebuild::types::ProjectCache::builder().r#type(spec.cache.kind.as_str().into()).build().expect("type is set")
}
pub(crate) fn artifacts(spec: &ProjectSpec) -> codebuild::types::ProjectArtifacts {
    codebuild::types::ProjectArtifacts::builder()
        .r#type(spec.artifacts_type.as_str().into())
        .build()
        .expect("type is set")
}
/// The whole environment: it replaces the live one, which clears any variable, certificate,
/// registry credential or fleet set out of band; with `server_owned`, the variable CodeBuild
/// adds by itself, as it was.
pub(crate) fn environment(spec: &ProjectSpec, server_owned: bool) -> codebuild::types::ProjectEnvironment {
    let (name, value) = server_owned::AUTO_DISCOVER;
    let variables = server_owned.then(|| {
        vec![
            codebuild::types::EnvironmentVariable::builder()
                .name(name)
                .value(value)
                .r#type(codebuild::types::EnvironmentVariableType::Plaintext)
                .build()
                .expect("name and value are set"),
        ]
    });
    codebuild::types::ProjectEnvironment::builder()
        .set_environment_variables(variables)
        .r#type(spec.environment_type.as_str().into())
        .compute_type(spec.compute_type.as_str().into())
        .image(&spec.image)
        .privileged_mode(spec.privileged_mode)
        .image_pull_credentials_type(spec.image_pull_credentials_type.as_str().into())
        .build()
        .expect("type, compute type and image are set")
}
pub(crate) fn logs(spec: &ProjectSpec) -> codebuild::types::LogsConfig {
    codebuild::types::LogsConfig::builder()
        .s3_logs(
            codebuild::types::S3LogsConfig::builder()
                .status(spec.s3_logs.status.as_str().into())
                .build()
                .expect("status is set"),
        )
        .cloud_watch_logs(
            codebuild::types::CloudWatchLogsConfig::builder()
                .status(spec.cloudwatch_logs.status.as_str().into())
                .set_group_name(spec.cloudwatch_logs.group_name.clone())
                .build()
                .expect("status is set"),
        )
        .build()
}
pub(crate) fn tags(spec: &ProjectSpec) -> Vec<codebuild::types::Tag> {
    spec.tags.iter().map(|(key, value)| codebuild::types::Tag::builder().key(key).value(value).build()).collect()
}

impl CodebuildReconciler {
    pub(crate) async fn create_project(
        &self,
        change: &Change,
        progress: &dyn Progress,
    ) -> Result<Applied, ReconcileError> {
        let address = &change.address;
        let spec = project_spec(change)?;
        let request = || {
            let builder =
                with_project_fields!(self.client.create_project(), &spec).environment(environment(&spec, false));
            async move { builder.send().await }
        };
        match self.waiting_for_iam(address, progress, request).await {
            Ok(_) => Ok(Applied::Done),
            // Made since the plan was read: brought to the desired state if this deployment made
            // it (an apply killed after its create), refused otherwise.
            Err(error) if has_code(&error, &[ALREADY_EXISTS]) => {
                let live = self
                    .client
                    .batch_get_projects()
                    .names(&spec.name)
                    .send()
                    .await
                    .map_err(failed(Some(address), "read project"))?;
                let tags = reconcile_aws::visible_tags(
                    live.projects()
                        .iter()
                        .flat_map(|p| p.tags())
                        .filter_map(|t| Some((t.key()?, t.value().unwrap_or_default()))),
                );
                reconcile_core::ownership::made_meanwhile(&tags, &spec.tags, address, "create project", &spec.name)?;
                self.update_project(change, progress).await?;
                Ok(Applied::Adopted)
            }
            Err(error) => Err(failed(Some(address), "create project")(error)),
        }
    }

    /// `UpdateProject` patches what it is sent: send every managed field (tags replace the whole
    /// set, so they are always sent in full), and the empty forms that clear what reconcile
    /// allows none of (the Terraform provider clears them the same way).
    pub(crate) async fn update_project(&self, change: &Change, progress: &dyn Progress) -> Result<(), ReconcileError> {
        let address = &change.address;
        let spec = project_spec(change)?;
        // What was seen set out of band is cleared with its empty form; what was not seen is
        // left out of the request. A project adopted unseen gets every empty form.
        let seen = reconcile_core::spec::before::<OutOfBand>(change)?;
        let set = |field: fn(&OutOfBand) -> bool| seen.as_ref().is_none_or(field);
        // The environment replaces the live one whole: what CodeBuild put there itself stays.
        let keep_server_owned = self.has_server_owned_variable(address, &spec.name).await?;
        let request = || {
            let mut builder = with_project_fields!(self.client.update_project(), &spec)
                .environment(environment(&spec, keep_server_owned));
            if set(|s| !s.secondary_sources.is_empty()) {
                builder = builder.set_secondary_sources(Some(Vec::new()));
            }
            if set(|s| !s.secondary_artifacts.is_empty()) {
                builder = builder.set_secondary_artifacts(Some(Vec::new()));
            }
            if set(|s| !s.file_system_locations.is_empty()) {
                builder = builder.set_file_system_locations(Some(Vec::new()));
            }
            if set(|s| s.vpc_config.is_some()) {
                builder = builder.vpc_config(codebuild::types::VpcConfig::builder().build());
            }
            if set(|s| s.build_batch_service_role.is_some()) {
                builder = builder.build_batch_config(codebuild::types::ProjectBuildBatchConfig::builder().build());
            }
            async move { builder.send().await }
        };
        self.waiting_for_iam(address, progress, request).await.map_err(failed(Some(address), "update project"))?;
        // Visibility has an API of its own; only a project seen to be public needs the call (an
        // adopted one is looked at again by the next plan).
        if seen.is_some_and(|s| s.project_visibility != spec.project_visibility) {
            let arn = reconcile_aws::arn(&self.account, "codebuild", &format!("project/{}", spec.name));
            self.client
                .update_project_visibility()
                .project_arn(arn)
                .project_visibility(spec.project_visibility.as_str().into())
                .send()
                .await
                .map_err(failed(Some(address), "make the project private"))?;
        }
        Ok(())
    }

    /// Whether the live project carries the variable CodeBuild adds by itself.
    pub(crate) async fn has_server_owned_variable(
        &self,
        address: &Address,
        name: &str,
    ) -> Result<bool, ReconcileError> {
        let output = self
            .client
            .batch_get_projects()
            .names(name)
            .send()
            .await
            .map_err(failed(Some(address), "read the project's environment"))?;
        Ok(output
            .projects()
            .iter()
            .filter_map(|p| p.environment())
            .flat_map(|e| e.environment_variables())
            .any(is_server_owned))
    }
}

/// A nested block of zero or one: the provider's list form.
pub(crate) fn block(value: Option<&Value>) -> Value {
    match value {
        None | Some(Value::Null) => json!([]),
        Some(value) => json!([value]),
    }
}

pub(crate) fn terraform(account: &Account, _key: &str, fields: &Map<String, Value>) -> Vec<ProviderResource> {
    let field = |key: &str| fields.get(key).cloned().unwrap_or(Value::Null);
    let (tags, tags_all) = reconcile_core::terraform::tags(fields);
    let variables: Vec<Value> = fields
        .get("environment_variables")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|v| json!({ "name": v["name"], "type": v["type"], "value": v["value"] }))
        .collect();
    let auth =
        fields.get("source_auth").filter(|a| !a.is_null()).map(|a| json!({ "type": "CODECONNECTIONS", "resource": a }));
    let logs = fields.get("cloudwatch_logs").cloned().unwrap_or(Value::Null);
    let s3_logs = fields.get("s3_logs").cloned().unwrap_or(Value::Null);
    let batch = fields.get("build_batch_service_role").filter(|r| !r.is_null()).map(|r| json!({ "service_role": r }));
    let registry = fields
        .get("registry_credential")
        .filter(|c| !c.is_null())
        .map(|c| json!({ "credential": c, "credential_provider": "SECRETS_MANAGER" }));
    let fleet = fields.get("fleet").filter(|f| !f.is_null()).map(|f| json!({ "fleet_arn": f }));
    let name = fields.get("name").and_then(Value::as_str).unwrap_or_default();
    let arn = format!("arn:{}:codebuild:{}:{}:project/{name}", account.partition, account.region, account.id);
    vec![
        ProviderResource::new(
            Provider::Aws,
            "aws_codebuild_project",
            "runner",
            json!({
                "name": field("name"),
                "description": field("description"),
                "service_role": field("service_role"),
                "build_timeout": field("timeout_in_minutes"),
                "queued_timeout": field("queued_timeout_in_minutes"),
                "project_visibility": field("project_visibility"),
                "artifacts": [{ "type": field("artifacts_type") }],
                "environment": [{
                    "type": field("environment_type"),
                    "compute_type": field("compute_type"),
                    "image": field("image"),
                    "privileged_mode": field("privileged_mode"),
                    "image_pull_credentials_type": field("image_pull_credentials_type"),
                    "certificate": field("certificate"),
                    "environment_variable": variables,
                    "registry_credential": block(registry.as_ref()),
                    "fleet": block(fleet.as_ref()),
                }],
                "source": [{
                    "type": field("source_type"),
                    "location": field("source_location"),
                    "buildspec": field("buildspec"),
                    "insecure_ssl": field("insecure_ssl"),
                    "auth": block(auth.as_ref()),
                }],
                "logs_config": [{
                    "cloudwatch_logs": [{ "status": logs["status"], "group_name": logs["group_name"] }],
                    "s3_logs": [{ "status": s3_logs["status"], "location": s3_logs["location"] }],
                }],
                "cache": [{ "type": fields.get("cache").map(|c| c["type"].clone()), "location": fields.get("cache").map(|c| c["location"].clone()), "modes": fields.get("cache").and_then(|c| c.get("modes")).cloned().unwrap_or(json!([])) }],
                "vpc_config": block(fields.get("vpc_config")),
                "secondary_sources": field("secondary_sources"),
                "secondary_artifacts": field("secondary_artifacts"),
                "file_system_locations": field("file_system_locations"),
                "build_batch_config": block(batch.as_ref()),
                "tags": tags,
                "tags_all": tags_all,
            }),
        )
        .forcing_new(FIELDS.forcing_new(&[]))
        .referring(&[("service_role", "aws_iam_role.runner", "arn")])
        .computing(json!({ "arn": arn, "id": arn }))
        // What desired.toml does not set: AWS's default when it is made, then as read (apply
        // leaves it as it is).
        .leaving(json!({
            "badge_enabled": fields.get("badge_enabled").cloned().unwrap_or(json!(false)),
            "concurrent_build_limit": field("concurrent_build_limit"),
            "source_version": fields.get("source_version").cloned().unwrap_or(json!("")),
        })),
    ]
}

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
    use crate::section::{Webhook, WebhookFilter};
    use crate::webhook::observed_webhook;

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
