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
mod describe;
mod inventory;
mod project;
mod section;
mod source;
mod webhook;

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_codebuild as codebuild;
use aws_sdk_codebuild::error::ProvideErrorMetadata;
use reconcile_aws::{BATCH_SIZE, failed, gone_if};
use reconcile_core::plan::{Action, Change, DesiredResource, Finding, Observed};
use reconcile_core::reconciler::{Assessment, Observations};
use reconcile_core::retry::Backoff;
use reconcile_core::{Account, Address, Applied, Progress, ReconcileError, Reconciler, ResourceKind};

pub use describe::{DESCRIPTION, reconciler};
use project::ProjectSpec;
pub use project::{COMPUTE_TYPE, compute_type_change, desired, desired_project, observed_project};
pub use section::{
    CLAIM, Codebuild, NOT_A_RUNNER, ONLY_EVENT_FILTER, PULL_REQUEST_BUILDS, Project, Webhook, WebhookFilter,
    WebhookScope, declared, log_group,
};
use webhook::WebhookSpec;
pub use webhook::{desired_webhook, observed_webhook};

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
    /// For the connections desired.toml names.
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

    /// What `UpdateWebhook` cannot change replaces the webhook: the table says so.
    fn fields(&self) -> &'static [reconcile_core::fields::Fields] {
        crate::describe::DESCRIPTION.fields
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
        let desired =
            desired_project(&project::test_project(), "arn:aws:iam::123456789012:role/r", project::test_project().tags);
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
                    && project::is_server_owned(&variables[0])
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

    #[tokio::test]
    async fn a_project_made_meanwhile_is_converged_only_when_it_carries_this_deployments_mark() {
        use aws_sdk_codebuild::operation::create_project::CreateProjectError;
        use reconcile_core::ownership::MARK_KEY;
        let wanted = BTreeMap::from([(MARK_KEY.to_owned(), "rocm-bake".to_owned()), ("project".into(), "x".into())]);
        let desired = desired_project(&project::test_project(), "arn:aws:iam::123456789012:role/r", wanted);
        for (mark, converged) in [(Some("rocm-bake"), true), (Some("team-x"), false), (None, false)] {
            let create = mock!(codebuild::Client::create_project).then_error(|| {
                CreateProjectError::ResourceAlreadyExistsException(
                    ResourceAlreadyExistsException::builder()
                        .meta(ErrorMetadata::builder().code(ALREADY_EXISTS).build())
                        .build(),
                )
            });
            let live = mock!(codebuild::Client::batch_get_projects).then_output(move || {
                let tag = mark.map(|value| codebuild::types::Tag::builder().key(MARK_KEY).value(value).build());
                let project =
                    codebuild::types::Project::builder().name("rocm-bake").set_tags(Some(tag.into_iter().collect()));
                codebuild::operation::batch_get_projects::BatchGetProjectsOutput::builder()
                    .projects(project.build())
                    .build()
            });
            let update = mock!(codebuild::Client::update_project)
                .match_requests(|request| request.tags().len() == 2)
                .then_output(|| codebuild::operation::update_project::UpdateProjectOutput::builder().build());
            let client = mock_client!(aws_sdk_codebuild, RuleMode::MatchAny, [&create, &live, &update]);
            let reconciler =
                CodebuildReconciler::new(client, Account::new("123456789012", "us-east-1"), IAM_PROPAGATION);
            let change = Change {
                address: Address::new(crate::PROJECT, "runner"),
                action: Action::Create,
                before: None,
                after: Some(desired.clone()),
                depends_on: vec![],
            };
            let applied = reconciler.apply(&change, &Silent).await;
            if converged {
                assert_eq!(applied.unwrap(), Applied::Adopted);
                assert_eq!(update.num_calls(), 1, "brought to the desired state, its tags whole");
            } else {
                let error = applied.unwrap_err();
                assert!(error.to_string().contains("without this deployment's mark"), "{error}");
                assert_eq!(update.num_calls(), 0, "{mark:?}");
            }
        }
    }
}
