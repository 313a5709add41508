//! `iam_role_policy.<key>` and `iam_ci_role_policy.<key>`: a role's one inline policy, named on
//! its role, in canonical form; an undeclared one on a declared role is a member
//! (`<key>/<policy name>`), planned as a delete. Its field table, spec, reads and writes and its
//! Terraform mapping are here.
//!
//! | reconcile | provider resource | arguments |
//! |---|---|---|
//! | `iam_role_policy.<key>[/<name>]` | `aws_iam_role_policy.runner["<key>[/<name>]"]` | `name`, `role`, `policy` (JSON string) |
//! | `iam_ci_role_policy.<key>[/<name>]` | `aws_iam_role_policy.ci["<key>[/<name>]"]` | as `iam_role_policy` |

use reconcile_aws::{absent_if, after_create, failed, gone_if};
use reconcile_core::fields::{Field, Fields};
use reconcile_core::json::to_compact;
use reconcile_core::plan::{Change, DesiredResource, MarkOrder, Observed};
use reconcile_core::spec::attributes;
use reconcile_core::terraform::{Provider, ProviderResource, policy_string};
use reconcile_core::{Address, Applied, ReconcileError};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::terraform::{field, str_field};
use crate::{IamReconciler, NO_SUCH_ENTITY, policy};

/// An inline policy's fields: the role it is on and its name name it, as Terraform's `role`
/// and `name`.
const ROLE_POLICY: &[Field] = &[
    Field::identity("role"),
    Field::identity("policy_name").in_terraform("name"),
    Field::in_place("document").set_by(&["PutRolePolicy"]),
];

pub const FIELDS: Fields = Fields { kind: crate::ROLE_POLICY, fields: ROLE_POLICY };
pub const CI_ROLE_POLICY_FIELDS: Fields = Fields { kind: crate::CI_ROLE_POLICY, fields: ROLE_POLICY };

/// `iam_role_policy.<key>`: one inline policy of the role, in canonical form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RolePolicySpec {
    pub role: String,
    pub policy_name: String,
    pub document: Value,
}

impl RolePolicySpec {
    /// The runner's role `role`'s inline policy, `document` derived.
    pub(crate) fn runner(role: &crate::section::Role, document: Value) -> RolePolicySpec {
        RolePolicySpec { role: role.name.clone(), policy_name: role.policy_name.clone(), document }
    }

    /// The CI role `role`'s inline policy, [`crate::spec::CI_POLICY_NAME`].
    pub(crate) fn ci(role: &crate::section::ci::CiRole, document: Value) -> RolePolicySpec {
        RolePolicySpec { role: role.name.clone(), policy_name: crate::spec::CI_POLICY_NAME.to_owned(), document }
    }

    /// Whether it is the policy named `name`.
    pub(crate) fn is(&self, name: &str) -> bool {
        self.policy_name == name
    }
}

/// A role's inline policy, under its role. It grants what carries the mark: changed only once
/// every repository the plan marks is marked.
pub(crate) fn inline_policy_resource(
    address: Address,
    spec: &RolePolicySpec,
    role_address: &Address,
) -> DesiredResource {
    DesiredResource::new(address, &spec.role, attributes(spec)).under(role_address).ordered_by_mark(MarkOrder::Grants)
}

impl IamReconciler {
    pub(crate) async fn inline_policy_names(
        &self,
        address: &Address,
        role_name: &str,
    ) -> Result<Vec<String>, ReconcileError> {
        let mut pages = self.client.list_role_policies().role_name(role_name).into_paginator().send();
        let mut names = Vec::new();
        let mut read = reconcile_aws::Pages::default();
        while let Some(page) = self.parallelism.send_once(|| pages.next()).await {
            let page = page.map_err(failed(Some(address), "list inline policies"))?;
            read.page(page.marker(), Some(address), "list inline policies")?;
            names.extend(page.policy_names().to_vec());
        }
        Ok(names)
    }

    pub(crate) async fn observe_inline_policy(
        &self,
        address: &Address,
        role_name: &str,
        policy_name: &str,
    ) -> Result<Observed, ReconcileError> {
        let response = self
            .parallelism
            .send(|| self.client.get_role_policy().role_name(role_name).policy_name(policy_name).send())
            .await;
        let Some(output) =
            absent_if(response, &[NO_SUCH_ENTITY]).map_err(failed(Some(address), "read inline policy"))?
        else {
            return Ok(Observed::Absent);
        };
        let spec = RolePolicySpec {
            role: role_name.to_owned(),
            policy_name: policy_name.to_owned(),
            document: policy::canonical_text(output.policy_document(), &self.account.partition),
        };
        Ok(Observed::Present(attributes(&spec)))
    }

    pub(crate) async fn put_role_policy(&self, change: &Change) -> Result<Applied, ReconcileError> {
        let address = &change.address;
        let after: RolePolicySpec = reconcile_core::spec::after(change)?;
        let document = to_compact(&after.document);
        // Right after the role is created, IAM may not show it everywhere yet.
        let request = || {
            self.client
                .put_role_policy()
                .role_name(&after.role)
                .policy_name(&after.policy_name)
                .policy_document(&document)
                .send()
        };
        after_create(request, &[NO_SUCH_ENTITY]).await.map_err(failed(Some(address), "put inline policy"))?;
        Ok(Applied::Done)
    }

    pub(crate) async fn delete_role_policy(&self, change: &Change) -> Result<Applied, ReconcileError> {
        let address = &change.address;
        let before = reconcile_core::spec::before::<RolePolicySpec>(change)?.ok_or_else(|| {
            ReconcileError::new(Some(address), "delete inline policy", "the change has no observed fields")
        })?;
        let response =
            self.client.delete_role_policy().role_name(&before.role).policy_name(&before.policy_name).send().await;
        gone_if(response, &[NO_SUCH_ENTITY]).map_err(failed(Some(address), "delete inline policy"))?;
        Ok(Applied::Done)
    }
}

pub(crate) fn terraform(block: &'static str, fields: &Map<String, Value>) -> ProviderResource {
    let references: &'static [(&str, &str, &str)] = if block == "runner" {
        &[("role", "aws_iam_role.runner", "name")]
    } else {
        &[("role", "aws_iam_role.ci", "name")]
    };
    ProviderResource::new(
        Provider::Aws,
        "aws_iam_role_policy",
        block,
        json!({
            "name": field(fields, "policy_name"),
            "role": field(fields, "role"),
            "policy": policy_string(&field(fields, "document")),
        }),
    )
    .referring(references)
    .forcing_new(FIELDS.forcing_new(&[]))
    .computing(json!({ "id": format!("{}:{}", str_field(fields, "role"), str_field(fields, "policy_name")) }))
}
