//! What `import --generate` reads of CodeBuild: the projects desired.toml does not declare, as
//! a plan observes them, with their webhooks and the roles they run as (section.rs writes them).

use std::collections::BTreeSet;

use reconcile_aws::failed;
use reconcile_core::ReconcileError;
use reconcile_core::generate::Found;
use reconcile_core::mark::MARK_KEY;
use reconcile_core::plan::DesiredResource;
use serde_json::{Map, Value};

use crate::project::observed_project;
use crate::webhook::observed_webhook;
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
