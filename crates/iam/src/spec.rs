//! What desired.toml asks of IAM as resources: each runner role with its boundary and inline
//! policy, and `[ci]`'s identity provider and roles, in their kinds' specs (role.rs,
//! role_policy.rs, boundary.rs, oidc_provider.rs).

use reconcile_core::describe::Catalog;
use reconcile_core::desired::Desired;
use reconcile_core::plan::{DesiredResource, MarkOrder};
use reconcile_core::spec::attributes;
use reconcile_core::{Account, Address, ReconcileError};

use crate::boundary::BoundarySpec;
use crate::ci;
use crate::derive::{boundary_name, boundary_policy, inline_policy};
use crate::oidc_provider::{PROVIDER_KEY, ProviderSpec};
use crate::policy::canonical;
use crate::role::RoleSpec;
use crate::role_policy::{RolePolicySpec, inline_policy_resource};

/// The name of a CI role's one inline policy.
pub const CI_POLICY_NAME: &str = "reconcile";

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
    let boundary_address = Address::new(crate::ROLE_BOUNDARY, &role.key);
    let boundary = boundary_policy(desired, catalog, role, account)
        .map_err(|why| ReconcileError::new(Some(&boundary_address), "derive the permissions boundary", why))?;
    let boundary_arn = policy_arn(account, &boundary_name(role));
    let spec = BoundarySpec::declared(role, canonical(&boundary, &account.partition), desired);
    // The boundary, the role that carries it and its inline policy grant the builds what
    // carries the mark: changed only once every repository the plan marks is marked.
    resources.push(
        DesiredResource::new(boundary_address.clone(), &boundary_arn, attributes(&spec))
            .adopted(role.adopt)
            .ordered_by_mark(MarkOrder::Grants),
    );
    let spec = RoleSpec::runner(role, account, boundary_arn, desired)?;
    resources.push(
        DesiredResource::new(role_address.clone(), &role.name, attributes(&spec))
            .depending_on([boundary_address])
            .adopted(role.adopt)
            .ordered_by_mark(MarkOrder::Grants),
    );
    let policy_address = Address::new(crate::ROLE_POLICY, &role.key);
    let document = inline_policy(desired, catalog, role, account)
        .map_err(|why| ReconcileError::new(Some(&policy_address), "derive the inline policy", why))?;
    let spec = RolePolicySpec::runner(role, canonical(&document, &account.partition));
    resources.push(inline_policy_resource(policy_address, &spec, &role_address));
    Ok(resources)
}

/// `[ci]`: GitHub's identity provider (shared in the account) and each CI role with its policy.
fn ci_roles(
    desired: &Desired,
    account: &Account,
    catalog: &Catalog,
    declared: &crate::section::ci::Ci,
) -> Result<Vec<DesiredResource>, ReconcileError> {
    let mut resources = Vec::new();
    let provider_address = Address::new(crate::OIDC_PROVIDER, PROVIDER_KEY);
    let provider = ProviderSpec::github(declared, desired);
    // One per account: another deployment's, or one made by hand, is used as it is.
    resources.push(
        DesiredResource::new(provider_address.clone(), ci::provider_arn(account), attributes(&provider))
            .shared_in_the_account(),
    );
    for role in &declared.roles {
        let key = role.purpose.key();
        let role_address = Address::new(crate::CI_ROLE, key);
        let spec = RoleSpec::ci(role, declared, account, desired)?;
        resources.push(
            DesiredResource::new(role_address.clone(), &role.name, attributes(&spec))
                .depending_on([provider_address.clone()]),
        );
        let policy_address = Address::new(crate::CI_ROLE_POLICY, key);
        let document = ci::policy(role.purpose, desired, account, catalog)
            .map_err(|why| ReconcileError::new(Some(&policy_address), "derive the inline policy", why))?;
        let spec = RolePolicySpec::ci(role, canonical(&document, &account.partition));
        resources.push(inline_policy_resource(policy_address, &spec, &role_address));
    }
    Ok(resources)
}
