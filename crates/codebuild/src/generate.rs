//! `import --generate` for CodeBuild: every project of the account that desired.toml does not
//! declare, read as a plan reads a declared one ([`CodebuildReconciler::inventory_of`]), and
//! written as `[codebuild.projects.<key>]` with its webhook ([`generate`]). Its role is written
//! with it (IAM's lines, which come first): the project names it by its key. Nothing secret is
//! read or written: the webhook's secret is never asked for, and a variable's plain-text value
//! is never kept.

use std::collections::BTreeSet;

use reconcile_aws::failed;
use reconcile_core::desired::{Desired, Reference, Topic};
use reconcile_core::generate::{Entry, Found, Generated, key_for};
use reconcile_core::mark::MARK_KEY;
use reconcile_core::plan::DesiredResource;
use reconcile_core::{Account, ReconcileError};
use serde_json::{Map, Value, json};

use crate::canonical::{observed_project, observed_webhook};
use crate::{CodebuildReconciler, PROJECT};

impl CodebuildReconciler {
    /// The projects `desired` does not declare, each as a plan observes it (`project`) with its
    /// webhook (`webhook`, null when it has none), its tags without the mark, and the role it
    /// runs as among what it needs.
    pub(crate) async fn inventory_of(&self, desired: &[&DesiredResource]) -> Result<Vec<Found>, ReconcileError> {
        let declared: BTreeSet<&str> = desired.iter().map(|r| r.remote_name.as_str()).collect();
        let mut pages = self.client.list_projects().into_paginator().send();
        let mut names = Vec::new();
        while let Some(page) = pages.next().await {
            let page = page.map_err(failed(None, "list CodeBuild projects"))?;
            names.extend(page.projects().iter().filter(|name| !declared.contains(name.as_str())).cloned());
        }
        let mut found = Vec::new();
        for (name, project) in self.projects(&names).await? {
            let mut observed = observed_project(&project);
            let deployment = observed
                .get_mut("tags")
                .and_then(Value::as_object_mut)
                .and_then(|tags| tags.remove(MARK_KEY))
                .and_then(|value| value.as_str().map(str::to_owned));
            let webhook = match project.webhook() {
                Some(webhook) if webhook.url().is_some() || !webhook.filter_groups().is_empty() => {
                    Value::Object(observed_webhook(&name, webhook))
                }
                _ => Value::Null,
            };
            let needs = project.service_role().and_then(|arn| arn.rsplit('/').next()).map(str::to_owned);
            let mut live = Map::new();
            live.insert("project".into(), Value::Object(observed));
            live.insert("webhook".into(), webhook);
            found.push(Found {
                kind: PROJECT,
                name,
                deployment,
                by_default: true,
                needs: needs.into_iter().collect(),
                live,
            });
        }
        Ok(found)
    }
}

/// desired.toml's lines for the projects in `found`. A project whose role is neither declared
/// nor written with it is left out (desired.toml names a project's role by its key).
pub fn generate(found: &[&Found], desired: &Desired, account: &Account, references: &[Reference]) -> Generated {
    let mut generated = Generated::default();
    let mut taken: Vec<String> = crate::section::declared(desired).projects.iter().map(|p| p.key.clone()).collect();
    for found in found {
        let Some(project) = found.live.get("project").and_then(Value::as_object) else { continue };
        let text = |key: &str| project.get(key).and_then(Value::as_str).unwrap_or_default();
        let role_name = text("service_role").rsplit('/').next().unwrap_or_default();
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
        if !text("description").is_empty() {
            push("description", json!(text("description")));
        }
        push("source_location", json!(text("source_location")));
        push("environment_type", json!(text("environment_type")));
        push("compute_type", json!(text("compute_type")));
        push("image", json!(text("image")));
        push("privileged_mode", json!(project.get("privileged_mode").and_then(Value::as_bool).unwrap_or(false)));
        push("service_role", json!(role.key));
        let minutes = project.get("timeout_in_minutes").and_then(Value::as_u64).unwrap_or(60);
        // desired.toml says hours; a timeout of another length is kept to the hour above, which the
        // proof then names as a change.
        push("build_timeout_hours", json!(minutes.div_ceil(60)));
        if let Some(queued) = project.get("queued_timeout_in_minutes").and_then(Value::as_u64) {
            push("queued_timeout_minutes", json!(queued));
        }
        if let Some(auth) = project.get("source_auth").and_then(Value::as_str) {
            push("source_auth", json!(auth));
        }
        if let Some(tags) = project.get("tags").and_then(Value::as_object).filter(|tags| !tags.is_empty()) {
            push("tags", Value::Object(tags.clone()));
        }
        if let Some(webhook) = found.live.get("webhook").and_then(Value::as_object) {
            let webhook_table = ["codebuild", "projects", key.as_str(), "webhook"];
            let groups: Vec<Value> = webhook
                .get("filter_groups")
                .and_then(Value::as_array)
                .map(|groups| groups.iter().map(filter_group).collect())
                .unwrap_or_default();
            if webhook.get("build_type").and_then(Value::as_str).is_some_and(|t| t != "BUILD") {
                generated.push(&found.name, Entry::new(&webhook_table, "build_type", webhook["build_type"].clone()));
            }
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
            if webhook.get("manual_creation").and_then(Value::as_bool) == Some(true) {
                push("manual_creation", json!(true));
            }
            if let Some(scope) = webhook.get("scope_configuration").filter(|s| !s.is_null()) {
                let scope: Map<String, Value> = scope
                    .as_object()
                    .into_iter()
                    .flatten()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                push("scope", Value::Object(scope));
            }
        }
    }
    generated
}

/// A filter group as desired.toml writes it: `exclude_matched_pattern` only when true.
fn filter_group(group: &Value) -> Value {
    let filters = group.as_array().map(Vec::as_slice).unwrap_or_default();
    Value::Array(
        filters
            .iter()
            .map(|filter| {
                let mut out = Map::new();
                out.insert("type".into(), filter.get("type").cloned().unwrap_or(Value::Null));
                out.insert("pattern".into(), filter.get("pattern").cloned().unwrap_or(Value::Null));
                if filter.get("exclude_matched_pattern").and_then(Value::as_bool) == Some(true) {
                    out.insert("exclude_matched_pattern".into(), json!(true));
                }
                Value::Object(out)
            })
            .collect(),
    )
}
