//! What `import --generate` reads of CodeBuild: the projects desired.toml does not declare, as
//! a plan observes them, with their webhooks and the roles they run as (section.rs writes them).

use std::collections::BTreeSet;

use reconcile_aws::failed;
use reconcile_core::ReconcileError;
use reconcile_core::generate::Found;
use reconcile_core::mark::MARK_KEY;
use reconcile_core::plan::DesiredResource;
use serde_json::Value;

use reconcile_core::spec::attributes;
use serde::{Deserialize, Serialize};

use crate::project::observed_project;
use crate::webhook::observed_webhook;
use crate::{CodebuildReconciler, PROJECT};

/// What `import --generate` reads of a project desired.toml does not declare, as this crate
/// writes it into `Found::live` and section.rs's `generate` reads it back: the project as a plan
/// observes it (which generate reads as the plan's record, `ProjectSpec`: a project that is not
/// one, such as a pipeline's, is left out, said), and its webhook's, when it has one.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct FoundProject {
    pub project: Value,
    pub webhook: Option<Value>,
}

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
                    Some(Value::Object(observed_webhook(&name, webhook)))
                }
                _ => None,
            };
            let needs = project.service_role().and_then(|arn| arn.rsplit('/').next()).map(str::to_owned);
            let live = attributes(&FoundProject { project: Value::Object(observed), webhook });
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
