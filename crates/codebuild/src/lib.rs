//! The CodeBuild reconciler: `codebuild_project.<key>`, the runner project, and
//! `codebuild_webhook.<key>`, its webhook (what makes it a runner: `WORKFLOW_JOB_QUEUED`).
//!
//! The project runs as the reconciled IAM role, so it depends on the role and its policy, and
//! creating or updating it waits out IAM's propagation delay: right after the role is created
//! or its trust changes, CodeBuild answers that it may not assume it. A webhook whose scope or
//! manual-creation flag differs cannot be updated and is replaced. A project is deleted only by
//! `reconcile destroy`, its webhook first.
//!
//! CodeBuild refuses a GitHub project, and its webhook, when it has no way to reach GitHub in
//! the region: neither the account's source credential (`ImportSourceCredentials`) nor an
//! `AVAILABLE` connection the project names. A plan that would create or change them says so
//! (E103), and apply refuses it before its first write, rather than failing after every other.

pub mod builds;
mod canonical;
mod describe;
mod generate;
mod section;
mod terraform;

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_codebuild as codebuild;
use aws_sdk_codebuild::error::ProvideErrorMetadata;
use reconcile_aws::{BATCH_SIZE, failed, gone_if, has_code};
use reconcile_core::desired::{Desired, Topic};
use reconcile_core::plan::{Action, Change, DesiredResource, Finding, Observed, Severity};
use reconcile_core::reconciler::{Assessment, Observations};
use reconcile_core::retry::Backoff;
use reconcile_core::{Account, Address, Applied, Progress, ReconcileError, Reconciler, ResourceKind};

use canonical::{ProjectSpec, WebhookSpec};
pub use canonical::{desired_project, desired_webhook, observed_project, observed_webhook};
pub use describe::{DESCRIPTION, reconciler};
pub use section::{
    CLAIM, Codebuild, NOT_A_RUNNER, ONLY_EVENT_FILTER, PULL_REQUEST_BUILDS, Project, Webhook, WebhookFilter,
    WebhookScope, declared, log_group,
};

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

/// How long to wait for a new or changed role to become usable by CodeBuild: up to 3 minutes,
/// because the Terraform provider's 2 are known not to be enough.
pub const IAM_PROPAGATION: Backoff = Backoff {
    first_delay: Duration::from_secs(1),
    max_delay: Duration::from_secs(20),
    give_up_after: Duration::from_secs(180),
    jitter: false,
};

/// CodeBuild's answers for "there is no such webhook" and "it already exists".
const NOT_FOUND: &str = "ResourceNotFoundException";
const ALREADY_EXISTS: &str = "ResourceAlreadyExistsException";

/// `codebuild_project.<key>`: a project, the runner.
pub const PROJECT: ResourceKind = ResourceKind::new("codebuild_project", 400);
/// `codebuild_webhook.<key>`: a project's webhook.
pub const WEBHOOK: ResourceKind = ResourceKind::new("codebuild_webhook", 410);

reconcile_core::resource_kinds! {
    /// The kinds this crate owns.
    pub enum CodebuildKind {
        Project = crate::PROJECT,
        Webhook = crate::WEBHOOK,
    }
}

/// Finding code: CodeBuild has no way to reach GitHub in the region (no source credential, and
/// no `AVAILABLE` connection named), so it refuses the project and its webhook. Stable; never
/// reused.
pub const NO_WAY_TO_GITHUB: &str = "E103";

pub struct CodebuildReconciler {
    client: codebuild::Client,
    account: Account,
    iam_wait: Backoff,
    /// For the connections desired.toml names (`source_auth`).
    connections: Option<aws_sdk_codeconnections::Client>,
    /// Why CodeBuild cannot reach GitHub for a project (by key), once a plan found it: what
    /// apply refuses.
    unreachable: Mutex<BTreeMap<String, String>>,
}

impl CodebuildReconciler {
    pub fn new(client: codebuild::Client, account: Account, iam_wait: Backoff) -> CodebuildReconciler {
        CodebuildReconciler { client, account, iam_wait, connections: None, unreachable: Mutex::default() }
    }

    /// Reads the connections projects name through `client`.
    pub fn with_connections(mut self, client: aws_sdk_codeconnections::Client) -> CodebuildReconciler {
        self.connections = Some(client);
        self
    }

    /// E103 for each of the desired projects CodeBuild cannot reach GitHub for, remembered for
    /// apply's refusal. Read only: `ListSourceCredentials` once, and each named connection.
    async fn way_to_github(&self, desired: &[&DesiredResource]) -> Result<Vec<Finding>, ReconcileError> {
        let projects: Vec<(&DesiredResource, ProjectSpec)> = desired
            .iter()
            .filter(|r| r.address.kind == crate::PROJECT)
            .map(|r| Ok((*r, reconcile_core::spec::desired::<ProjectSpec>(r)?)))
            .collect::<Result<_, ReconcileError>>()?;
        let mut credential = None;
        let mut findings = Vec::new();
        for (resource, spec) in projects {
            let why = match &spec.source_auth {
                Some(connection) => self.unusable_connection(&resource.address, connection).await?,
                None => {
                    if credential.is_none() {
                        credential = Some(self.has_github_credential(&resource.address).await?);
                    }
                    (credential == Some(false)).then(|| {
                        let region = &self.account.region;
                        format!(
                            "CodeBuild has no way to reach GitHub in {region}: the account has no GitHub source \
                             credential there, and the project names no connection (`source_auth`), so CodeBuild \
                             refuses to create the project (\"No Access token found\") and its webhook; import one \
                             (`aws codebuild import-source-credentials --region {region} --server-type GITHUB \
                             --auth-type PERSONAL_ACCESS_TOKEN --token <token>`), or name a CodeConnections connection \
                             to GitHub in `source_auth` once it is AVAILABLE"
                        )
                    })
                }
            };
            let mut unreachable = self.unreachable.lock().expect("never poisoned");
            match why {
                Some(why) => {
                    unreachable.insert(resource.address.name.clone(), why.clone());
                    findings.push(Finding {
                        code: NO_WAY_TO_GITHUB.to_owned(),
                        severity: Severity::Error,
                        address: Some(resource.address.clone()),
                        message: why,
                        overridden_by: None,
                    });
                }
                None => {
                    unreachable.remove(&resource.address.name);
                }
            }
        }
        Ok(findings)
    }

    /// Whether the account has a GitHub source credential in the region.
    async fn has_github_credential(&self, address: &Address) -> Result<bool, ReconcileError> {
        let output = self
            .client
            .list_source_credentials()
            .send()
            .await
            .map_err(failed(Some(address), "list CodeBuild's source credentials"))?;
        Ok(output
            .source_credentials_infos()
            .iter()
            .any(|info| info.server_type().is_some_and(|t| *t == codebuild::types::ServerType::Github)))
    }

    /// Why the connection `arn` cannot carry the project to GitHub, if it cannot.
    async fn unusable_connection(&self, address: &Address, arn: &str) -> Result<Option<String>, ReconcileError> {
        let Some(connections) = &self.connections else {
            return Err(ReconcileError::new(Some(address), "read the connection", "no CodeConnections client"));
        };
        let response = connections.get_connection().connection_arn(arn).send().await;
        let connection = reconcile_aws::absent_if(response, &[NOT_FOUND])
            .map_err(failed(Some(address), "read the connection desired.toml names"))?;
        let status = connection.as_ref().and_then(|c| c.connection()).and_then(|c| c.connection_status());
        Ok(match status {
            None => Some(format!(
                "the connection `{arn}` desired.toml names (`source_auth`) does not exist in the account, so CodeBuild \
                 cannot reach GitHub through it; create it and complete it in the console, or name another"
            )),
            Some(status) if *status == aws_sdk_codeconnections::types::ConnectionStatus::Available => None,
            Some(status) => Some(format!(
                "the connection `{arn}` desired.toml names (`source_auth`) is {}, not AVAILABLE: a connection made by \
                 API waits for its handshake, completed once in the console (Developer Tools > Settings > \
                 Connections > Update pending connection); until then CodeBuild refuses the project and its webhook",
                status.as_str()
            )),
        })
    }
}

/// CodeBuild's answer while the role has not propagated. Only this is retried.
fn is_iam_propagation<E: ProvideErrorMetadata>(error: &E) -> bool {
    error.code() == Some("InvalidInputException")
        && error.message().is_some_and(|m| m.contains("not authorized to perform: sts:AssumeRole"))
}

/// Where CodeBuild's webhooks post in `region`: the start of the URL a repository's hook to a
/// project has.
pub fn webhooks_url(region: &str) -> String {
    let domain = reconcile_aws::dns_suffix(&Account::new("", region).partition);
    format!("https://codebuild.{region}.{domain}/webhooks")
}

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

#[async_trait]
impl Reconciler for CodebuildReconciler {
    fn kinds(&self) -> &'static [ResourceKind] {
        CodebuildKind::KINDS
    }

    async fn inventory(
        &self,
        desired: &[&DesiredResource],
    ) -> Result<Vec<reconcile_core::generate::Found>, ReconcileError> {
        self.inventory_of(desired).await
    }

    async fn observe(&self, desired: &[&DesiredResource]) -> Result<Observations, ReconcileError> {
        let mut observations = Observations::default();
        let mut names: Vec<String> = desired.iter().map(|r| r.remote_name.clone()).collect();
        names.sort();
        names.dedup();
        let live = self.projects(&names).await?;
        for resource in desired {
            let name = &resource.remote_name;
            let observed = match (live.get(name), CodebuildKind::of(&resource.address)?) {
                (None, _) => Observed::Absent,
                (Some(project), CodebuildKind::Project) => Observed::Present(observed_project(project)),
                (Some(project), CodebuildKind::Webhook) => match project.webhook() {
                    // A project that never had one answers without a webhook, or with an empty one.
                    Some(webhook) if webhook.url().is_some() || !webhook.filter_groups().is_empty() => {
                        Observed::Present(observed_webhook(name, webhook))
                    }
                    _ => Observed::Absent,
                },
            };
            observations.resources.insert(resource.address.clone(), observed);
        }
        Ok(observations)
    }

    /// Whether CodeBuild can reach GitHub, when the plan creates or changes a project or its
    /// webhook (it refuses them otherwise).
    async fn assess(
        &self,
        changes: &[&Change],
        desired: &BTreeMap<Address, DesiredResource>,
    ) -> Result<Assessment, ReconcileError> {
        let touched = changes.iter().any(|c| c.action != Action::Delete);
        if !touched {
            return Ok(Assessment::default());
        }
        let projects: Vec<&DesiredResource> = desired.values().collect();
        Ok(Assessment { impacts: BTreeMap::new(), findings: self.way_to_github(&projects).await? })
    }

    /// For the drift check: whether CodeBuild can reach GitHub at all, changes or not.
    async fn survey(&self, desired: &[&DesiredResource]) -> Result<Vec<Finding>, ReconcileError> {
        self.way_to_github(desired).await
    }

    /// A project or webhook CodeBuild would refuse for want of a way to GitHub.
    fn refusal(&self, change: &Change) -> Option<String> {
        if change.action == Action::Delete {
            return None;
        }
        self.unreachable.lock().expect("never poisoned").get(&change.address.name).cloned()
    }

    /// Deleting the runner's project (a destroy's) stops the nightly: not the apply role's.
    fn administrators_only(&self, change: &Change) -> Option<&'static str> {
        (change.address.kind == crate::PROJECT && change.action == Action::Delete)
            .then_some("deleting the runner's project, which stops the nightly")
    }

    fn diff(&self, address: &Address, desired: Option<&DesiredResource>, observed: &Observed) -> Option<Change> {
        // What `UpdateWebhook` cannot change replaces the webhook.
        let replacing = crate::describe::WEBHOOK_FIELDS.create_only();
        reconcile_core::plan::diff_replacing(address, desired, observed, crate::WEBHOOK, &replacing)
    }

    async fn apply(&self, change: &Change, progress: &dyn Progress) -> Result<Applied, ReconcileError> {
        let address = &change.address;
        match (CodebuildKind::of(address)?, change.action) {
            (CodebuildKind::Project, Action::Create) => self.create_project(change, progress).await,
            (CodebuildKind::Project, Action::Update) => {
                self.update_project(change, progress).await?;
                Ok(Applied::Done)
            }
            // Only a destroy plans one: a declared project is otherwise never deleted.
            (CodebuildKind::Project, Action::Delete) => {
                let before = reconcile_core::spec::before::<ProjectSpec>(change)?.ok_or_else(|| {
                    ReconcileError::new(Some(address), "delete project", "the change has no observed fields")
                })?;
                let response = self.client.delete_project().name(&before.name).send().await;
                gone_if(response, &[NOT_FOUND]).map_err(failed(Some(address), "delete project"))?;
                Ok(Applied::Done)
            }
            (CodebuildKind::Project, Action::Replace) => Err(ReconcileError::never(address, "replace project")),
            (CodebuildKind::Webhook, Action::Create) => self.create_webhook(change).await,
            (CodebuildKind::Webhook, Action::Update) => {
                self.update_webhook(change).await?;
                Ok(Applied::Done)
            }
            (CodebuildKind::Webhook, Action::Replace) => {
                let after: WebhookSpec = reconcile_core::spec::after(change)?;
                self.delete_webhook(address, &after.project).await?;
                self.create_webhook(change).await?;
                Ok(Applied::Done)
            }
            (CodebuildKind::Webhook, Action::Delete) => {
                let before = reconcile_core::spec::before::<WebhookSpec>(change)?.ok_or_else(|| {
                    ReconcileError::new(Some(address), "delete webhook", "the change has no observed fields")
                })?;
                self.delete_webhook(address, &before.project).await?;
                Ok(Applied::Done)
            }
        }
    }
}

impl CodebuildReconciler {
    /// Runs `call` until CodeBuild stops answering that it cannot assume the role yet, saying
    /// so on `progress`, for as long as `iam_wait` allows.
    async fn waiting_for_iam<T, E, F, Fut>(&self, address: &Address, progress: &dyn Progress, call: F) -> Result<T, E>
    where
        E: ProvideErrorMetadata,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let transient = |error: &E, delay: Duration| {
            let waiting = is_iam_propagation(error);
            if waiting {
                progress.note(
                    address,
                    &format!(
                        "waiting for IAM: CodeBuild cannot assume the service role yet (a new or changed role \
                         takes a while to propagate); retrying in {}s",
                        delay.as_secs_f64()
                    ),
                );
            }
            waiting
        };
        reconcile_aws::waiting(self.iam_wait, call, transient).await
    }

    /// The projects of `names` that exist, by name (BatchGetProjects leaves out the others).
    async fn projects(&self, names: &[String]) -> Result<BTreeMap<String, codebuild::types::Project>, ReconcileError> {
        let mut live = BTreeMap::new();
        for batch in names.chunks(BATCH_SIZE) {
            let output = self
                .client
                .batch_get_projects()
                .set_names(Some(batch.to_vec()))
                .send()
                .await
                .map_err(failed(None, "read CodeBuild projects"))?;
            for project in output.projects() {
                if let Some(name) = project.name() {
                    live.insert(name.to_owned(), project.clone());
                }
            }
        }
        Ok(live)
    }

    async fn create_project(&self, change: &Change, progress: &dyn Progress) -> Result<Applied, ReconcileError> {
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
    async fn update_project(&self, change: &Change, progress: &dyn Progress) -> Result<(), ReconcileError> {
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
    async fn has_server_owned_variable(&self, address: &Address, name: &str) -> Result<bool, ReconcileError> {
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
            .any(canonical::is_server_owned))
    }

    async fn create_webhook(&self, change: &Change) -> Result<Applied, ReconcileError> {
        let address = &change.address;
        let spec: WebhookSpec = reconcile_core::spec::after(change)?;
        let response = self
            .client
            .create_webhook()
            .project_name(&spec.project)
            .build_type(spec.build_type.as_str().into())
            .set_filter_groups(Some(filter_groups(&spec)))
            .manual_creation(spec.manual_creation)
            .set_scope_configuration(scope(address, &spec)?)
            .send()
            .await;
        // The response holds the webhook's secret: it is dropped here, never printed or kept.
        match response {
            Ok(_) => Ok(Applied::Done),
            Err(error) if has_code(&error, &[ALREADY_EXISTS]) => {
                self.update_webhook(change).await?;
                Ok(Applied::Adopted)
            }
            Err(error) => Err(failed(Some(address), "create webhook")(error)),
        }
    }

    async fn update_webhook(&self, change: &Change) -> Result<(), ReconcileError> {
        let address = &change.address;
        let spec: WebhookSpec = reconcile_core::spec::after(change)?;
        self.client
            .update_webhook()
            .project_name(&spec.project)
            .build_type(spec.build_type.as_str().into())
            .set_filter_groups(Some(filter_groups(&spec)))
            .send()
            .await
            .map_err(failed(Some(address), "update webhook"))?;
        Ok(())
    }

    async fn delete_webhook(&self, address: &Address, project: &str) -> Result<(), ReconcileError> {
        let response = self.client.delete_webhook().project_name(project).send().await;
        gone_if(response, &[NOT_FOUND]).map_err(failed(Some(address), "delete webhook"))
    }
}

/// The change's project spec, if it asks only for what apply can send: the fields reconcile
/// manages as "none" can be cleared, never set.
fn project_spec(change: &Change) -> Result<ProjectSpec, ReconcileError> {
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
struct OutOfBand {
    secondary_sources: Vec<serde_json::Value>,
    secondary_artifacts: Vec<serde_json::Value>,
    file_system_locations: Vec<serde_json::Value>,
    vpc_config: Option<serde_json::Value>,
    build_batch_service_role: Option<String>,
    project_visibility: String,
}

fn source(spec: &ProjectSpec) -> codebuild::types::ProjectSource {
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

fn cache(spec: &ProjectSpec) -> codebuild::types::ProjectCache {
    codebuild::types::ProjectCache::builder().r#type(spec.cache.kind.as_str().into()).build().expect("type is set")
}

fn artifacts(spec: &ProjectSpec) -> codebuild::types::ProjectArtifacts {
    codebuild::types::ProjectArtifacts::builder()
        .r#type(spec.artifacts_type.as_str().into())
        .build()
        .expect("type is set")
}

/// The whole environment: it replaces the live one, which clears any variable, certificate,
/// registry credential or fleet set out of band; with `server_owned`, the variable CodeBuild
/// adds by itself, as it was.
fn environment(spec: &ProjectSpec, server_owned: bool) -> codebuild::types::ProjectEnvironment {
    let (name, value) = canonical::server_owned::AUTO_DISCOVER;
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

fn logs(spec: &ProjectSpec) -> codebuild::types::LogsConfig {
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

fn tags(spec: &ProjectSpec) -> Vec<codebuild::types::Tag> {
    spec.tags.iter().map(|(key, value)| codebuild::types::Tag::builder().key(key).value(value).build()).collect()
}

fn filter_groups(spec: &WebhookSpec) -> Vec<Vec<codebuild::types::WebhookFilter>> {
    spec.filter_groups
        .iter()
        .map(|group| {
            group
                .iter()
                .map(|filter| {
                    codebuild::types::WebhookFilter::builder()
                        .r#type(filter.kind.as_str().into())
                        .pattern(&filter.pattern)
                        .exclude_matched_pattern(filter.exclude_matched_pattern)
                        .build()
                        .expect("type and pattern are set")
                })
                .collect()
        })
        .collect()
}

fn scope(
    address: &Address,
    spec: &WebhookSpec,
) -> Result<Option<codebuild::types::ScopeConfiguration>, ReconcileError> {
    let Some(scope) = &spec.scope_configuration else { return Ok(None) };
    codebuild::types::ScopeConfiguration::builder()
        .name(&scope.name)
        .scope(scope.scope.as_str().into())
        .set_domain(scope.domain.clone())
        .build()
        .map(Some)
        .map_err(ReconcileError::of(address, "build the webhook's scope configuration"))
}

#[cfg(test)]
mod tests {
    //! Paths the emulator cannot produce, against a mocked client.

    use super::*;
    use aws_sdk_codebuild::operation::create_webhook::CreateWebhookError;
    use aws_sdk_codebuild::types::error::ResourceAlreadyExistsException;
    use aws_smithy_mocks::{RuleMode, mock, mock_client};
    use aws_smithy_types::error::ErrorMetadata;
    use reconcile_core::json::object;
    use reconcile_core::reconciler::Silent;
    use serde_json::json;

    #[tokio::test]
    async fn a_webhook_that_already_exists_is_updated_instead() {
        let create = mock!(codebuild::Client::create_webhook).then_error(|| {
            CreateWebhookError::ResourceAlreadyExistsException(
                ResourceAlreadyExistsException::builder()
                    .meta(ErrorMetadata::builder().code(ALREADY_EXISTS).build())
                    .build(),
            )
        });
        let update = mock!(codebuild::Client::update_webhook)
            .match_requests(|request| request.filter_groups().len() == 1)
            .then_output(|| codebuild::operation::update_webhook::UpdateWebhookOutput::builder().build());
        let client = mock_client!(aws_sdk_codebuild, RuleMode::MatchAny, [&create, &update]);
        let reconciler = CodebuildReconciler::new(client, Account::new("123456789012", "us-east-1"), IAM_PROPAGATION);
        let change = Change {
            address: Address::new(crate::WEBHOOK, "runner"),
            action: Action::Create,
            before: None,
            after: Some(object(json!({
                "project": "rocm-bake",
                "build_type": "BUILD",
                "filter_groups": [[{"type": "EVENT", "pattern": "WORKFLOW_JOB_QUEUED", "exclude_matched_pattern": false}]],
                "manual_creation": false,
                "scope_configuration": null,
            }))),
            depends_on: vec![],
        };
        assert_eq!(reconciler.apply(&change, &Silent).await.unwrap(), Applied::Adopted);
        assert_eq!((create.num_calls(), update.num_calls()), (1, 1));
    }

    #[tokio::test]
    async fn a_change_missing_a_field_fails_naming_it_and_calls_nothing() {
        let create = mock!(codebuild::Client::create_project)
            .then_output(|| codebuild::operation::create_project::CreateProjectOutput::builder().build());
        let webhook = mock!(codebuild::Client::create_webhook)
            .then_output(|| codebuild::operation::create_webhook::CreateWebhookOutput::builder().build());
        let client = mock_client!(aws_sdk_codebuild, RuleMode::MatchAny, [&create, &webhook]);
        let reconciler = CodebuildReconciler::new(client, Account::new("123456789012", "us-east-1"), IAM_PROPAGATION);
        let project = Change {
            address: Address::new(crate::PROJECT, "runner"),
            action: Action::Create,
            before: None,
            // No service role: CodeBuild must never be sent an empty one.
            after: Some(object(json!({ "name": "rocm-bake", "description": "" }))),
            depends_on: vec![],
        };
        let error = reconciler.apply(&project, &Silent).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "codebuild_project.runner: failed to read the change's desired fields: missing field `source_type`"
        );
        let hook = Change {
            address: Address::new(crate::WEBHOOK, "runner"),
            after: Some(object(json!({ "project": "rocm-bake", "build_type": "BUILD", "manual_creation": false }))),
            ..project
        };
        let error = reconciler.apply(&hook, &Silent).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "codebuild_webhook.runner: failed to read the change's desired fields: missing field `filter_groups`"
        );
        assert_eq!((create.num_calls(), webhook.num_calls()), (0, 0));
    }

    #[tokio::test]
    async fn an_update_clears_only_what_was_seen_set() {
        let desired = desired_project(
            &canonical::test_project(),
            "arn:aws:iam::123456789012:role/r",
            canonical::test_project().tags,
        );
        let mut seen = desired.clone();
        seen.insert("vpc_config".into(), json!({"vpc_id": "vpc-1", "subnets": [], "security_group_ids": []}));
        let update = mock!(codebuild::Client::update_project)
            .match_requests(|request| {
                // What CodeBuild put in the environment itself is sent back, so it stays.
                let variables = request.environment().map(|e| e.environment_variables()).unwrap_or_default();
                request.vpc_config().is_some()
                    && request.secondary_sources.is_none()
                    && request.file_system_locations.is_none()
                    && request.build_batch_config().is_none()
                    && variables.len() == 1
                    && canonical::is_server_owned(&variables[0])
            })
            .then_output(|| codebuild::operation::update_project::UpdateProjectOutput::builder().build());
        let live = mock!(codebuild::Client::batch_get_projects).then_output(|| {
            let variable = codebuild::types::EnvironmentVariable::builder()
                .name("CODEBUILD_CONFIG_AUTO_DISCOVER")
                .value("true")
                .build()
                .unwrap();
            let environment = codebuild::types::ProjectEnvironment::builder()
                .r#type(codebuild::types::EnvironmentType::LinuxContainer)
                .compute_type(codebuild::types::ComputeType::BuildGeneral1Xlarge)
                .image("i")
                .environment_variables(variable)
                .build()
                .unwrap();
            let project = codebuild::types::Project::builder().name("rocm-bake").environment(environment).build();
            codebuild::operation::batch_get_projects::BatchGetProjectsOutput::builder().projects(project).build()
        });
        let client = mock_client!(aws_sdk_codebuild, RuleMode::MatchAny, [&update, &live]);
        let reconciler = CodebuildReconciler::new(client, Account::new("123456789012", "us-east-1"), IAM_PROPAGATION);
        let change = Change {
            address: Address::new(crate::PROJECT, "runner"),
            action: Action::Update,
            before: Some(seen),
            after: Some(desired),
            depends_on: vec![],
        };
        assert_eq!(reconciler.apply(&change, &Silent).await.unwrap(), Applied::Done);
        assert_eq!(update.num_calls(), 1);
    }
}
