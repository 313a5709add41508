//! What desired.toml asks of ECR as resources: each declared repository and its lifecycle
//! policy, in their kinds' specs (repository.rs, lifecycle.rs).

use reconcile_core::desired::Desired;
use reconcile_core::plan::{DesiredResource, MarkOrder};
use reconcile_core::spec::attributes;
use reconcile_core::{Account, Address, ReconcileError};

use crate::lifecycle::{LifecyclePolicySpec, canonical_policy};
use crate::repository::RepositorySpec;

/// The repositories and lifecycle policies desired.toml asks for. Pure: no client, no AWS.
pub fn desired(desired: &Desired, _account: &Account) -> Result<Vec<DesiredResource>, ReconcileError> {
    let mut resources = Vec::new();
    for repository in &crate::declared(desired).repositories {
        let repository_address = Address::new(crate::REPOSITORY, &repository.name);
        let spec = RepositorySpec::declared(repository, desired);
        resources.push(
            DesiredResource::new(repository_address.clone(), &repository.name, attributes(&spec))
                .adopted(repository.adopt)
                // The builds reach it through its mark: marked before a grant by the mark changes.
                .ordered_by_mark(MarkOrder::Reached),
        );
        let policy = LifecyclePolicySpec { policy: canonical_policy(&repository.lifecycle_policy.document) };
        let policy_address = Address::new(crate::LIFECYCLE_POLICY, &repository.name);
        let mut policy =
            DesiredResource::new(policy_address, &repository.name, attributes(&policy)).under(&repository_address);
        if repository.allow_tagged_expiry {
            policy.overrides.push(crate::ALLOW_TAGGED_EXPIRY);
        }
        resources.push(policy);
    }
    Ok(resources)
}
