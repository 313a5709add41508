//! The IAM resources as typed specs, and the one place they meet the canonical map: what
//! desired.toml asks for, what observe saw, and what apply reads back from a change.

use std::collections::BTreeMap;

use reconcile_core::describe::Catalog;
use reconcile_core::desired::Desired;
use reconcile_core::plan::{DesiredResource, MarkOrder};
use reconcile_core::spec::attributes;
use reconcile_core::{Account, Address, ReconcileError};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::ci;
use crate::derive::{boundary_name, boundary_policy, inline_policy};
use crate::policy::canonical;

/// `iam_role.<key>`: the role's settings and tags that reconcile manages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RoleSpec {
    pub name: String,
    /// The trust policy, in canonical form.
    pub assume_role_policy: Value,
    pub description: String,
    pub max_session_duration: i32,
    pub tags: BTreeMap<String, String>,
    /// The runner's roles: their derived boundary (`iam_role_boundary.<key>`), which no one
    /// but an administrator puts or removes. The CI roles: none. A boundary set out of band can
    /// silently take away what a role needs; one removed leaves the role unbounded.
    pub permissions_boundary: Option<String>,
}

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

/// A live role: its spec, and what IAM tells besides, shown but never compared.
#[derive(Debug, Serialize)]
pub(crate) struct RoleState {
    pub arn: String,
    pub path: String,
    /// IAM's own id of the role (`AROA...`), which Terraform's state calls `unique_id`.
    pub unique_id: String,
    #[serde(flatten)]
    pub spec: RoleSpec,
}

/// `iam_role_policy.<key>`: one inline policy of the role, in canonical form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RolePolicySpec {
    pub role: String,
    pub policy_name: String,
    pub document: Value,
}

/// `iam_oidc_provider.github`: GitHub Actions' identity provider. Its thumbprints are not
/// managed: IAM verifies GitHub's tokens against its own trusted certificate authorities and
/// ignores them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ProviderSpec {
    /// The host, as IAM answers it (no `https://`).
    pub url: String,
    /// The audiences it accepts, sorted.
    pub client_ids: Vec<String>,
    pub tags: BTreeMap<String, String>,
}

/// The address name of the OIDC provider.
pub const PROVIDER_KEY: &str = "github";

/// The name of a CI role's one inline policy.
pub const CI_POLICY_NAME: &str = "reconcile";

/// The trust policy for a role that the given services assume.
pub fn trust_policy(services: &[String]) -> Value {
    json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Principal": { "Service": services },
            "Action": "sts:AssumeRole",
        }],
    })
}

/// The ARN of the managed policy `name`.
pub fn policy_arn(account: &Account, name: &str) -> String {
    reconcile_aws::arn(account, "iam", &format!("policy/{name}"))
}

/// The roles and their derived inline policies desired.toml asks for. Pure: no client, no AWS.
pub fn desired(
    desired: &Desired,
    account: &Account,
    catalog: &Catalog,
) -> Result<Vec<DesiredResource>, ReconcileError> {
    let mut resources = Vec::new();
    for role in &crate::declared(desired).roles {
        resources.extend(runner_role(desired, account, catalog, role)?);
    }
    if let Some(declared) = crate::declared_ci(desired) {
        resources.extend(ci_roles(desired, account, catalog, declared)?);
    }
    Ok(resources)
}

/// A role under `[iam.roles]`: its permissions boundary, the role, its inline policy.
fn runner_role(
    desired: &Desired,
    account: &Account,
    catalog: &Catalog,
    role: &crate::section::Role,
) -> Result<Vec<DesiredResource>, ReconcileError> {
    let mut resources = Vec::new();
    let role_address = Address::new(crate::ROLE, &role.key);
    let max_session_duration = i32::try_from(role.max_session_duration).map_err(|_| {
        ReconcileError::new(Some(&role_address), "read max_session_duration", "it is larger than IAM allows")
    })?;
    let boundary_address = Address::new(crate::ROLE_BOUNDARY, &role.key);
    let boundary = boundary_policy(desired, catalog, role, account)
        .map_err(|why| ReconcileError::new(Some(&boundary_address), "derive the permissions boundary", why))?;
    let boundary_arn = policy_arn(account, &boundary_name(role));
    let spec = BoundarySpec {
        name: boundary_name(role),
        description: role.boundary_description.clone(),
        document: canonical(&boundary, &account.partition),
        tags: desired.marked(&role.tags),
    };
    // The boundary, the role that carries it and its inline policy grant the builds what
    // carries the mark: changed only once every repository the plan marks is marked.
    resources.push(
        DesiredResource::new(boundary_address.clone(), &boundary_arn, attributes(&spec))
            .adopted(role.adopt)
            .ordered_by_mark(MarkOrder::Grants),
    );
    let spec = RoleSpec {
        name: role.name.clone(),
        assume_role_policy: canonical(&trust_policy(&role.trusted_services), &account.partition),
        description: role.description.clone(),
        max_session_duration,
        tags: desired.marked(&role.tags),
        permissions_boundary: Some(boundary_arn),
    };
    resources.push(
        DesiredResource::new(role_address.clone(), &role.name, attributes(&spec))
            .depending_on([boundary_address])
            .adopted(role.adopt)
            .ordered_by_mark(MarkOrder::Grants),
    );
    let policy_address = Address::new(crate::ROLE_POLICY, &role.key);
    let document = inline_policy(desired, catalog, role, account)
        .map_err(|why| ReconcileError::new(Some(&policy_address), "derive the inline policy", why))?;
    let spec = RolePolicySpec {
        role: role.name.clone(),
        policy_name: role.policy_name.clone(),
        document: canonical(&document, &account.partition),
    };
    resources.push(inline_policy_resource(policy_address, &spec, &role_address));
    Ok(resources)
}

/// A role's inline policy, under its role. It grants what carries the mark: changed only once
/// every repository the plan marks is marked.
fn inline_policy_resource(address: Address, spec: &RolePolicySpec, role_address: &Address) -> DesiredResource {
    DesiredResource::new(address, &spec.role, attributes(spec)).under(role_address).ordered_by_mark(MarkOrder::Grants)
}

/// `[ci]`: GitHub's identity provider (shared in the account) and each CI role with its policy.
fn ci_roles(
    desired: &Desired,
    account: &Account,
    catalog: &Catalog,
    declared: &crate::ci_section::Ci,
) -> Result<Vec<DesiredResource>, ReconcileError> {
    let mut resources = Vec::new();
    let provider_address = Address::new(crate::OIDC_PROVIDER, PROVIDER_KEY);
    let provider = ProviderSpec {
        url: crate::ci_section::GITHUB_OIDC_HOST.to_owned(),
        client_ids: vec![crate::ci_section::GITHUB_OIDC_AUDIENCE.to_owned()],
        tags: desired.marked(&declared.tags),
    };
    // One per account: another deployment's, or one made by hand, is used as it is.
    resources.push(
        DesiredResource::new(provider_address.clone(), ci::provider_arn(account), attributes(&provider))
            .shared_in_the_account(),
    );
    let max_session_duration = i32::try_from(declared.max_session_duration).map_err(|_| {
        ReconcileError::new(Some(&provider_address), "read max_session_duration", "it is larger than IAM allows")
    })?;
    for role in &declared.roles {
        let key = role.purpose.key();
        let role_address = Address::new(crate::CI_ROLE, key);
        let spec = RoleSpec {
            name: role.name.clone(),
            assume_role_policy: canonical(&ci::trust_policy(role, account), &account.partition),
            description: format!("reconcile's {key} role, assumed by {} only", role.subject),
            max_session_duration,
            tags: desired.marked(&declared.tags),
            permissions_boundary: None,
        };
        resources.push(
            DesiredResource::new(role_address.clone(), &role.name, attributes(&spec))
                .depending_on([provider_address.clone()]),
        );
        let policy_address = Address::new(crate::CI_ROLE_POLICY, key);
        let document = if role.purpose == crate::ci_section::CiPurpose::Plan {
            ci::plan_policy(desired, account, catalog)
        } else if role.purpose.reads_only() {
            ci::read_only_policy(desired, account, catalog)
        } else {
            ci::apply_policy(desired, account, catalog)
                .map_err(|why| ReconcileError::new(Some(&policy_address), "derive the inline policy", why))?
        };
        let spec = RolePolicySpec {
            role: role.name.clone(),
            policy_name: CI_POLICY_NAME.to_owned(),
            document: canonical(&document, &account.partition),
        };
        resources.push(inline_policy_resource(policy_address, &spec, &role_address));
    }
    Ok(resources)
}
