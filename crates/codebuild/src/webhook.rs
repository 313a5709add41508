//! `codebuild_webhook.<key>`: the project's webhook, its filter groups and settings, as desired
//! and as observed, with its field table, its reads and writes and its Terraform mapping. Its
//! server-owned fields (`payloadUrl`, `secret`, `status`, `lastModifiedSecret`) are never read at
//! all, so the secret cannot reach a plan; its `url` (the hook's address on the source provider)
//! is kept beside its fields, shown and never compared.
//!
//! | reconcile | provider resource | arguments |
//! |---|---|---|
//! | `codebuild_webhook.<key>` | `aws_codebuild_webhook.runner["<key>"]` | `project_name`, `build_type`, `manual_creation` (replaces), `scope_configuration[]` (replaces), `filter_group[].filter[].{type,pattern,exclude_matched_pattern}` |

use aws_sdk_codebuild as codebuild;
use reconcile_aws::{failed, gone_if, has_code};
use reconcile_core::fields::{Field, Fields};
use reconcile_core::plan::Change;
use reconcile_core::spec::attributes;
use reconcile_core::terraform::{Provider, ProviderResource};
use reconcile_core::{Account, Address, Applied, ReconcileError};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::section::Webhook;
use crate::{ALREADY_EXISTS, CodebuildReconciler, NOT_FOUND};

/// A webhook's fields: how it is made and where it reports `UpdateWebhook` cannot change.
pub const FIELDS: Fields = Fields {
    kind: crate::WEBHOOK,
    fields: &[
        Field::identity("project").in_terraform("project_name"),
        Field::in_place("build_type"),
        Field::in_place("filter_groups"),
        Field::create_only("manual_creation"),
        Field::create_only("scope_configuration"),
    ],
};

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

pub(crate) fn filter_groups(spec: &WebhookSpec) -> Vec<Vec<codebuild::types::WebhookFilter>> {
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

pub(crate) fn scope(
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

impl CodebuildReconciler {
    pub(crate) async fn create_webhook(&self, change: &Change) -> Result<Applied, ReconcileError> {
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

    pub(crate) async fn update_webhook(&self, change: &Change) -> Result<(), ReconcileError> {
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

    pub(crate) async fn delete_webhook(&self, address: &Address, project: &str) -> Result<(), ReconcileError> {
        let response = self.client.delete_webhook().project_name(project).send().await;
        gone_if(response, &[NOT_FOUND]).map_err(failed(Some(address), "delete webhook"))
    }
}

pub(crate) fn terraform(_: &Account, _key: &str, fields: &Map<String, Value>) -> Vec<ProviderResource> {
    let groups: Vec<Value> = fields
        .get("filter_groups")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|group| {
            let filters: Vec<Value> = group
                .as_array()
                .into_iter()
                .flatten()
                .map(|f| json!({ "type": f["type"], "pattern": f["pattern"], "exclude_matched_pattern": f["exclude_matched_pattern"] }))
                .collect();
            json!({ "filter": filters })
        })
        .collect();
    vec![
        ProviderResource::new(
            Provider::Aws,
            "aws_codebuild_webhook",
            "runner",
            json!({
                "project_name": fields.get("project"),
                "build_type": fields.get("build_type"),
                "manual_creation": fields.get("manual_creation"),
                "scope_configuration": crate::project::block(fields.get("scope_configuration")),
                "filter_group": groups,
            }),
        )
        .forcing_new(FIELDS.forcing_new(&[]))
        .referring(&[("project_name", "aws_codebuild_project.runner", "name")])
        // The hook's URL on the source provider, as CodeBuild answers it (never its secret).
        .computing(json!({ "id": fields.get("project"), "url": fields.get("url") })),
    ]
}
