//! The CodeBuild reconciler: `codebuild_project.<key>`, the runner project, and
//! `codebuild_webhook.<key>`, its webhook (what makes it a runner: `WORKFLOW_JOB_QUEUED`).
//!
//! The project runs as the reconciled IAM role, so it depends on the role and its policy, and
//! creating or updating it waits out IAM's propagation delay: right after the role is created
//! or its trust changes, CodeBuild answers that it may not assume it. A webhook whose scope or
//! manual-creation flag differs cannot be updated and is replaced. Projects are never deleted.

mod canonical;

use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_codebuild as codebuild;
use aws_sdk_codebuild::error::ProvideErrorMetadata;
use reconcile_core::desired::Desired;
use reconcile_core::json::string_map;
use reconcile_core::plan::{Action, Change, DesiredResource, Observed};
use reconcile_core::reconciler::Observations;
use reconcile_core::retry::{Backoff, retry};
use reconcile_core::{Account, Address, Progress, ReconcileError, Reconciler, ResourceKind};
use serde_json::{Map, Value};

pub use canonical::{desired_project, desired_webhook, observed_project, observed_webhook};

/// Sets every managed project field on a `CreateProject` or `UpdateProject` request: their
/// builders are different types with the same setters.
macro_rules! with_project_fields {
    ($request:expr, $fields:expr) => {
        $request
            .name(str_field($fields, "name"))
            .description(str_field($fields, "description"))
            .source(source($fields))
            .artifacts(artifacts())
            .environment(environment($fields))
            .service_role(str_field($fields, "service_role"))
            .set_timeout_in_minutes(int_field($fields, "timeout_in_minutes"))
            .set_queued_timeout_in_minutes(int_field($fields, "queued_timeout_in_minutes"))
            .logs_config(logs($fields))
            .set_tags(Some(tags($fields)))
    };
}

/// How long to wait for a new or changed role to become usable by CodeBuild: up to 3 minutes,
/// because the Terraform provider's 2 are known not to be enough.
pub const IAM_PROPAGATION: Backoff = Backoff {
    first_delay: Duration::from_secs(1),
    max_delay: Duration::from_secs(20),
    give_up_after: Duration::from_secs(180),
};

pub struct CodebuildReconciler {
    client: codebuild::Client,
    iam_wait: Backoff,
}

impl CodebuildReconciler {
    pub fn new(client: codebuild::Client, iam_wait: Backoff) -> CodebuildReconciler {
        CodebuildReconciler { client, iam_wait }
    }
}

/// CodeBuild's answer while the role has not propagated. Only this is retried.
fn is_iam_propagation<E: ProvideErrorMetadata>(error: &E) -> bool {
    error.code() == Some("InvalidInputException")
        && error.message().is_some_and(|m| m.contains("not authorized to perform: sts:AssumeRole"))
}

/// Fields `UpdateWebhook` cannot change: a difference in them replaces the webhook.
const WEBHOOK_REPLACE_FIELDS: [&str; 2] = ["manual_creation", "scope_configuration"];

#[async_trait]
impl Reconciler for CodebuildReconciler {
    fn kinds(&self) -> &'static [ResourceKind] {
        &[ResourceKind::CodebuildProject, ResourceKind::CodebuildWebhook]
    }

    fn desired(&self, desired: &Desired, account: &Account) -> Result<Vec<DesiredResource>, ReconcileError> {
        let mut resources = Vec::new();
        for project in &desired.codebuild.projects {
            let project_address = Address::new(ResourceKind::CodebuildProject, &project.key);
            let role = desired.iam.roles.iter().find(|r| r.key == project.service_role).ok_or_else(|| {
                ReconcileError::new(
                    Some(&project_address),
                    "find the service role",
                    format!("no role `{}` under [iam.roles]", project.service_role),
                )
            })?;
            let role_arn = format!("arn:{}:iam::{}:role/{}", account.partition, account.id, role.name);
            resources.push(DesiredResource {
                address: project_address.clone(),
                attributes: desired_project(project, &role_arn),
                // The role must be usable, and allow what the build does, before the project runs as it.
                depends_on: vec![
                    Address::new(ResourceKind::IamRole, &role.key),
                    Address::new(ResourceKind::IamRolePolicy, &role.key),
                ],
            });
            if let Some(webhook) = &project.webhook {
                resources.push(DesiredResource {
                    address: Address::new(ResourceKind::CodebuildWebhook, &project.key),
                    attributes: desired_webhook(&project.name, webhook),
                    depends_on: vec![project_address],
                });
            }
        }
        Ok(resources)
    }

    async fn observe(&self, desired: &[&DesiredResource]) -> Result<Observations, ReconcileError> {
        let mut observations = Observations::default();
        let project_name = |resource: &DesiredResource| {
            let fields = &resource.attributes;
            fields.get("name").or_else(|| fields.get("project")).and_then(Value::as_str).unwrap_or_default().to_owned()
        };
        let mut names: Vec<String> = desired.iter().map(|r| project_name(r)).collect();
        names.sort();
        names.dedup();
        let mut live = std::collections::BTreeMap::new();
        // BatchGetProjects takes 100 names and leaves out the ones that do not exist.
        for batch in names.chunks(100) {
            let output =
                self.client.batch_get_projects().set_names(Some(batch.to_vec())).send().await.map_err(|error| {
                    ReconcileError::new(
                        None,
                        "read CodeBuild projects",
                        reconcile_core::reconciler::error_chain(&error),
                    )
                })?;
            for project in output.projects() {
                if let Some(name) = project.name() {
                    live.insert(name.to_owned(), project.clone());
                }
            }
        }
        for resource in desired {
            let name = project_name(resource);
            let observed = match (live.get(&name), resource.address.kind) {
                (None, _) => Observed::Absent,
                (Some(project), ResourceKind::CodebuildProject) => Observed::Present(observed_project(project)),
                (Some(project), _) => match project.webhook() {
                    // A project that never had one answers without a webhook, or with an empty one.
                    Some(webhook) if webhook.url().is_some() || !webhook.filter_groups().is_empty() => {
                        Observed::Present(observed_webhook(&name, webhook))
                    }
                    _ => Observed::Absent,
                },
            };
            observations.resources.insert(resource.address.clone(), observed);
        }
        Ok(observations)
    }

    fn diff(&self, address: &Address, desired: Option<&DesiredResource>, observed: &Observed) -> Option<Change> {
        let mut change = reconcile_core::plan::diff(address, desired, observed)?;
        if address.kind == ResourceKind::CodebuildWebhook
            && change.action == Action::Update
            && change.field_changes().iter().any(|f| WEBHOOK_REPLACE_FIELDS.contains(&f.name))
        {
            change.action = Action::Replace;
        }
        Some(change)
    }

    async fn apply(&self, change: &Change, progress: &dyn Progress) -> Result<(), ReconcileError> {
        let address = &change.address;
        match (address.kind, change.action) {
            (ResourceKind::CodebuildProject, Action::Create) => self.create_project(change, progress).await,
            (ResourceKind::CodebuildProject, Action::Update) => self.update_project(change, progress).await,
            (ResourceKind::CodebuildProject, _) => Err(ReconcileError::never(address, "delete or replace project")),
            (_, Action::Create) => self.create_webhook(change).await,
            (_, Action::Update) => self.update_webhook(change).await,
            (_, Action::Replace) => {
                self.delete_webhook(address, change.after_str("project")?).await?;
                self.create_webhook(change).await
            }
            (_, Action::Delete) => {
                let project = change.before.as_ref().and_then(|b| b.get("project")).and_then(Value::as_str);
                self.delete_webhook(address, project.unwrap_or_default()).await
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
        retry(self.iam_wait, call, transient, tokio::time::sleep).await
    }

    async fn create_project(&self, change: &Change, progress: &dyn Progress) -> Result<(), ReconcileError> {
        let address = &change.address;
        let fields = change.after_fields()?;
        let request = || {
            let builder = with_project_fields!(self.client.create_project(), fields);
            async move { builder.send().await }
        };
        match self.waiting_for_iam(address, progress, request).await {
            Ok(_) => Ok(()),
            // Made since the plan was read: bring it to the desired state instead.
            Err(error) if error.as_service_error().is_some_and(|e| e.is_resource_already_exists_exception()) => {
                self.update_project(change, progress).await
            }
            Err(error) => Err(ReconcileError::of(address, "create project")(error)),
        }
    }

    /// `UpdateProject` patches what it is sent: send every managed field (tags replace the whole
    /// set, so they are always sent in full).
    async fn update_project(&self, change: &Change, progress: &dyn Progress) -> Result<(), ReconcileError> {
        let address = &change.address;
        let fields = change.after_fields()?;
        let request = || {
            let builder = with_project_fields!(self.client.update_project(), fields);
            async move { builder.send().await }
        };
        self.waiting_for_iam(address, progress, request)
            .await
            .map_err(ReconcileError::of(address, "update project"))?;
        Ok(())
    }

    async fn create_webhook(&self, change: &Change) -> Result<(), ReconcileError> {
        let address = &change.address;
        let fields = change.after_fields()?;
        let response = self
            .client
            .create_webhook()
            .project_name(str_field(fields, "project"))
            .set_build_type(fields.get("build_type").and_then(Value::as_str).map(Into::into))
            .set_filter_groups(Some(filter_groups(fields)))
            .manual_creation(fields.get("manual_creation").and_then(Value::as_bool).unwrap_or(false))
            .set_scope_configuration(scope(fields))
            .send()
            .await;
        // The response holds the webhook's secret: it is dropped here, never printed or kept.
        match response {
            Ok(_) => Ok(()),
            Err(error) if error.as_service_error().is_some_and(|e| e.is_resource_already_exists_exception()) => {
                self.update_webhook(change).await
            }
            Err(error) => Err(ReconcileError::of(address, "create webhook")(error)),
        }
    }

    async fn update_webhook(&self, change: &Change) -> Result<(), ReconcileError> {
        let address = &change.address;
        let fields = change.after_fields()?;
        self.client
            .update_webhook()
            .project_name(str_field(fields, "project"))
            .set_build_type(fields.get("build_type").and_then(Value::as_str).map(Into::into))
            .set_filter_groups(Some(filter_groups(fields)))
            .send()
            .await
            .map_err(ReconcileError::of(address, "update webhook"))?;
        Ok(())
    }

    async fn delete_webhook(&self, address: &Address, project: &str) -> Result<(), ReconcileError> {
        match self.client.delete_webhook().project_name(project).send().await {
            Ok(_) => Ok(()),
            Err(error) if error.as_service_error().is_some_and(|e| e.is_resource_not_found_exception()) => Ok(()),
            Err(error) => Err(ReconcileError::of(address, "delete webhook")(error)),
        }
    }
}

fn str_field<'a>(fields: &'a Map<String, Value>, name: &str) -> &'a str {
    fields.get(name).and_then(Value::as_str).unwrap_or_default()
}

fn int_field(fields: &Map<String, Value>, name: &str) -> Option<i32> {
    fields.get(name).and_then(Value::as_i64).and_then(|n| i32::try_from(n).ok())
}

fn source(fields: &Map<String, Value>) -> codebuild::types::ProjectSource {
    codebuild::types::ProjectSource::builder()
        .r#type(str_field(fields, "source_type").into())
        .location(str_field(fields, "source_location"))
        .build()
        .expect("type is set")
}

fn artifacts() -> codebuild::types::ProjectArtifacts {
    codebuild::types::ProjectArtifacts::builder()
        .r#type(codebuild::types::ArtifactsType::NoArtifacts)
        .build()
        .expect("type is set")
}

fn environment(fields: &Map<String, Value>) -> codebuild::types::ProjectEnvironment {
    codebuild::types::ProjectEnvironment::builder()
        .r#type(str_field(fields, "environment_type").into())
        .compute_type(str_field(fields, "compute_type").into())
        .image(str_field(fields, "image"))
        .privileged_mode(fields.get("privileged_mode").and_then(Value::as_bool).unwrap_or(false))
        .image_pull_credentials_type(str_field(fields, "image_pull_credentials_type").into())
        .build()
        .expect("type, compute type and image are set")
}

fn logs(fields: &Map<String, Value>) -> codebuild::types::LogsConfig {
    let cloudwatch = fields.get("cloudwatch_logs");
    let group = cloudwatch.and_then(|c| c.get("group_name")).and_then(Value::as_str);
    codebuild::types::LogsConfig::builder()
        .cloud_watch_logs(
            codebuild::types::CloudWatchLogsConfig::builder()
                .status(codebuild::types::LogsConfigStatusType::Enabled)
                .set_group_name(group.map(str::to_owned))
                .build()
                .expect("status is set"),
        )
        .build()
}

fn tags(fields: &Map<String, Value>) -> Vec<codebuild::types::Tag> {
    string_map(fields.get("tags"))
        .into_iter()
        .map(|(key, value)| codebuild::types::Tag::builder().key(key).value(value).build())
        .collect()
}

fn filter_groups(fields: &Map<String, Value>) -> Vec<Vec<codebuild::types::WebhookFilter>> {
    let groups = fields.get("filter_groups").and_then(Value::as_array).cloned().unwrap_or_default();
    groups
        .iter()
        .map(|group| {
            group
                .as_array()
                .into_iter()
                .flatten()
                .map(|filter| {
                    codebuild::types::WebhookFilter::builder()
                        .r#type(filter["type"].as_str().unwrap_or_default().into())
                        .pattern(filter["pattern"].as_str().unwrap_or_default())
                        .exclude_matched_pattern(filter["exclude_matched_pattern"].as_bool().unwrap_or(false))
                        .build()
                        .expect("type and pattern are set")
                })
                .collect()
        })
        .collect()
}

fn scope(fields: &Map<String, Value>) -> Option<codebuild::types::ScopeConfiguration> {
    let scope = fields.get("scope_configuration").filter(|s| !s.is_null())?;
    codebuild::types::ScopeConfiguration::builder()
        .name(scope["name"].as_str().unwrap_or_default())
        .scope(scope["scope"].as_str().unwrap_or_default().into())
        .set_domain(scope["domain"].as_str().map(str::to_owned))
        .build()
        .ok()
}

#[cfg(test)]
mod tests {
    //! Paths the emulator cannot produce, against a mocked client.

    use super::*;
    use aws_sdk_codebuild::operation::create_webhook::CreateWebhookError;
    use aws_sdk_codebuild::types::error::ResourceAlreadyExistsException;
    use aws_smithy_mocks::{RuleMode, mock, mock_client};
    use reconcile_core::json::object;
    use reconcile_core::reconciler::Silent;
    use serde_json::json;

    #[tokio::test]
    async fn a_webhook_that_already_exists_is_updated_instead() {
        let create = mock!(codebuild::Client::create_webhook).then_error(|| {
            CreateWebhookError::ResourceAlreadyExistsException(ResourceAlreadyExistsException::builder().build())
        });
        let update = mock!(codebuild::Client::update_webhook)
            .match_requests(|request| request.filter_groups().len() == 1)
            .then_output(|| codebuild::operation::update_webhook::UpdateWebhookOutput::builder().build());
        let client = mock_client!(aws_sdk_codebuild, RuleMode::MatchAny, [&create, &update]);
        let reconciler = CodebuildReconciler::new(client, IAM_PROPAGATION);
        let change = Change {
            address: Address::new(ResourceKind::CodebuildWebhook, "runner"),
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
        reconciler.apply(&change, &Silent).await.unwrap();
        assert_eq!((create.num_calls(), update.num_calls()), (1, 1));
    }
}
