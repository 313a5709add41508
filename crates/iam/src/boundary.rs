//! `iam_role_boundary.<key>`: the managed policy that is a runner role's permissions boundary,
//! derived (see `derive`). Its field table, spec, reads and writes and its Terraform mapping are
//! here.
//!
//! | reconcile | provider resource | arguments |
//! |---|---|---|
//! | `iam_role_boundary.<key>` | `aws_iam_policy.boundary["<key>"]` | `name`, `description` (replaces), `path` (`/`), `policy` (JSON string), `tags`, `tags_all` |

use std::collections::BTreeMap;

use reconcile_aws::{absent_if, failed, gone_if, has_code, visible_tags};
use reconcile_core::fields::{Field, Fields};
use reconcile_core::json::to_compact;
use reconcile_core::plan::{Change, DesiredResource, Observed};
use reconcile_core::spec::attributes;
use reconcile_core::terraform::{Provider, ProviderResource, policy_string, tags};
use reconcile_core::{Account, Address, Applied, ReconcileError};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::spec::policy_arn;
use crate::terraform::{arn, field};
use crate::{IamReconciler, NO_SUCH_ENTITY, policy, retag, tag_list};

/// The boundary's fields: IAM sets a managed policy's description only when it makes it.
pub const FIELDS: Fields = Fields {
    kind: crate::ROLE_BOUNDARY,
    fields: &[
        Field::identity("name"),
        Field::in_place("document").set_by(&["CreatePolicyVersion", "SetDefaultPolicyVersion"]),
        Field::create_only("description").set_by(&["CreatePolicy"]),
        Field::in_place("tags").set_by(&["TagPolicy", "UntagPolicy"]),
    ],
};

/// `iam_role_boundary.<key>`: the managed policy that is a runner role's permissions boundary,
/// its default version's document in canonical form, and its description, which IAM sets only
/// when it makes the policy (a different one is a replacement, which apply refuses).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct BoundarySpec {
    pub name: String,
    /// A plan saved before reconcile compared it has none: what reconcile always made.
    #[serde(default = "boundary_description")]
    pub description: String,
    pub document: Value,
    pub tags: BTreeMap<String, String>,
}

fn boundary_description() -> String {
    crate::section::BOUNDARY_DESCRIPTION.to_owned()
}

impl BoundarySpec {
    /// The boundary of the runner's role `role`, `document` derived.
    pub(crate) fn declared(
        role: &crate::section::Role,
        document: Value,
        desired: &reconcile_core::Desired,
    ) -> BoundarySpec {
        BoundarySpec {
            name: crate::derive::boundary_name(role),
            description: role.boundary_description.clone(),
            document,
            tags: desired.marked(&role.tags),
        }
    }
}

impl IamReconciler {
    /// The boundary's default version and tags: `GetPolicy`, then the version it names.
    pub(crate) async fn observe_boundary(
        &self,
        desired: &DesiredResource,
    ) -> Result<(Address, Observed), ReconcileError> {
        let address = &desired.address;
        let arn = desired.remote_name.as_str();
        let response = self.parallelism.send(|| self.client.get_policy().policy_arn(arn).send()).await;
        let Some(live) = absent_if(response, &[NO_SUCH_ENTITY])
            .map_err(failed(Some(address), "read the permissions boundary"))?
            .and_then(|output| output.policy)
        else {
            return Ok((address.clone(), Observed::Absent));
        };
        let version = live.default_version_id().unwrap_or("v1");
        let document = self
            .parallelism
            .send(|| self.client.get_policy_version().policy_arn(arn).version_id(version).send())
            .await
            .map_err(failed(Some(address), "read the permissions boundary's document"))?
            .policy_version
            .and_then(|version| version.document)
            .map_or(Value::Null, |text| policy::canonical_text(&text, &self.account.partition));
        let spec = BoundarySpec {
            name: live.policy_name().unwrap_or_default().to_owned(),
            description: live.description().unwrap_or_default().to_owned(),
            document,
            tags: visible_tags(live.tags().iter().map(|t| (t.key(), t.value()))),
        };
        Ok((address.clone(), Observed::Present(attributes(&spec))))
    }

    pub(crate) async fn create_boundary(&self, change: &Change) -> Result<Applied, ReconcileError> {
        let address = &change.address;
        let after: BoundarySpec = reconcile_core::spec::after(change)?;
        let tags = tag_list(&after.tags);
        let response = self
            .client
            .create_policy()
            .policy_name(&after.name)
            .set_description((!after.description.is_empty()).then(|| after.description.clone()))
            .policy_document(to_compact(&after.document))
            .set_tags((!tags.is_empty()).then_some(tags))
            .send()
            .await;
        match response {
            Ok(_) => Ok(Applied::Done),
            // Made since the plan was read: converged if this deployment made it (an apply
            // killed after its create), refused otherwise.
            Err(error) if has_code(&error, &["EntityAlreadyExists"]) => {
                let live = self.live_boundary(address, &policy_arn(&self.account, &after.name)).await?;
                let operation = "create the permissions boundary";
                reconcile_core::ownership::made_meanwhile(&live.tags, &after.tags, address, operation, &after.name)?;
                self.converge_boundary(change, Some(&live)).await?;
                Ok(Applied::Adopted)
            }
            Err(error) => Err(failed(Some(address), "create the permissions boundary")(error)),
        }
    }

    /// The boundary `arn` as it is now.
    pub(crate) async fn live_boundary(&self, address: &Address, arn: &str) -> Result<BoundarySpec, ReconcileError> {
        let desired = DesiredResource::new(address.clone(), arn, serde_json::Map::new());
        match self.observe_boundary(&desired).await?.1 {
            Observed::Present(fields) => serde_json::from_value(Value::Object(fields))
                .map_err(|e| ReconcileError::new(Some(address), "read the permissions boundary", e.to_string())),
            Observed::Absent => {
                Err(ReconcileError::new(Some(address), "update the permissions boundary", "it is gone"))
            }
        }
    }

    /// A new default version when the document differs (a managed policy keeps at most five:
    /// the oldest that is not the default goes first), and the tags.
    pub(crate) async fn converge_boundary(
        &self,
        change: &Change,
        before: Option<&BoundarySpec>,
    ) -> Result<(), ReconcileError> {
        let address = &change.address;
        let after: BoundarySpec = reconcile_core::spec::after(change)?;
        let arn = policy_arn(&self.account, &after.name);
        let before = match before {
            Some(before) => before.clone(),
            None => self.live_boundary(address, &arn).await?,
        };
        if before.document != after.document {
            let versions = self
                .client
                .list_policy_versions()
                .policy_arn(&arn)
                .send()
                .await
                .map_err(failed(Some(address), "list the permissions boundary's versions"))?;
            let mut old: Vec<_> = versions.versions().iter().filter(|v| !v.is_default_version()).collect();
            if versions.versions().len() >= 5 {
                old.sort_by_key(|v| v.create_date().map(|d| (d.secs(), d.subsec_nanos())));
                if let Some(oldest) = old.first().and_then(|v| v.version_id()) {
                    self.client
                        .delete_policy_version()
                        .policy_arn(&arn)
                        .version_id(oldest)
                        .send()
                        .await
                        .map_err(failed(Some(address), "delete the permissions boundary's oldest version"))?;
                }
            }
            self.client
                .create_policy_version()
                .policy_arn(&arn)
                .policy_document(to_compact(&after.document))
                .set_as_default(true)
                .send()
                .await
                .map_err(failed(Some(address), "put the permissions boundary's new version"))?;
        }
        let untag = |keys| self.client.untag_policy().policy_arn(&arn).set_tag_keys(Some(keys)).send();
        let tag = |tags| self.client.tag_policy().policy_arn(&arn).set_tags(Some(tags)).send();
        let operations = ("remove the permissions boundary's tags", "tag the permissions boundary");
        retag(address, &before.tags, &after.tags, operations, untag, tag).await
    }

    /// Deletes a permissions boundary (a destroy's, after the roles it bounds): its versions
    /// other than the default first, as IAM requires.
    pub(crate) async fn delete_boundary(&self, change: &Change) -> Result<Applied, ReconcileError> {
        const OPERATION: &str = "delete a permissions boundary";
        let address = &change.address;
        let before = reconcile_core::spec::before::<BoundarySpec>(change)?
            .ok_or_else(|| ReconcileError::new(Some(address), OPERATION, "the change has no observed fields"))?;
        let arn = policy_arn(&self.account, &before.name);
        let versions = self.client.list_policy_versions().policy_arn(&arn).send().await;
        let versions = absent_if(versions, &[NO_SUCH_ENTITY]).map_err(failed(Some(address), "list its versions"))?;
        for version in versions.iter().flat_map(|o| o.versions()).filter(|v| !v.is_default_version()) {
            let Some(id) = version.version_id() else { continue };
            let response = self.client.delete_policy_version().policy_arn(&arn).version_id(id).send().await;
            gone_if(response, &[NO_SUCH_ENTITY]).map_err(failed(Some(address), "delete an old version"))?;
        }
        let response = self.client.delete_policy().policy_arn(&arn).send().await;
        gone_if(response, &[NO_SUCH_ENTITY]).map_err(failed(Some(address), OPERATION))?;
        Ok(Applied::Done)
    }
}

pub(crate) fn terraform(account: &Account, _key: &str, fields: &Map<String, Value>) -> Vec<ProviderResource> {
    let (tags, tags_all) = tags(fields);
    let arn = arn(account, &format!("policy/{}", field(fields, "name").as_str().unwrap_or_default()));
    vec![
        ProviderResource::new(
            Provider::Aws,
            "aws_iam_policy",
            "boundary",
            json!({
                "name": field(fields, "name"),
                "description": field(fields, "description"),
                "path": "/",
                "policy": policy_string(&field(fields, "document")),
                "tags": tags,
                "tags_all": tags_all,
            }),
        )
        // Its path is always `/`.
        .forcing_new(FIELDS.forcing_new(&["path"]))
        .computing(json!({ "arn": arn, "id": arn })),
    ]
}
