//! The ECR resources as typed specs, and the one place they meet the canonical map: what
//! desired.toml asks for, what observe saw, and what apply reads back from a change.

use std::collections::BTreeMap;

use reconcile_core::desired::Desired;
use reconcile_core::plan::{DesiredResource, MarkOrder};
use reconcile_core::spec::attributes;
use reconcile_core::{Account, Address, ReconcileError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::lifecycle::canonical_policy;

/// `ecr_repository.<name>`: the settings and tags reconcile manages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RepositorySpec {
    pub image_tag_mutability: String,
    pub scan_on_push: bool,
    /// Set only when the repository is made: a difference is a replacement ([`crate::diff`]).
    pub encryption_type: String,
    /// Compared only when desired.toml names a key; live, the key `KMS` encryption uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kms_key: Option<String>,
    pub tags: BTreeMap<String, String>,
    /// Not declared in desired.toml: none. The role reaches the repositories through its own
    /// policy; a repository policy could only grant someone else (S102 when outside the account).
    pub repository_policy: Option<Value>,
}

/// A live repository: its spec, and what AWS tells besides, shown but never compared.
#[derive(Debug, Serialize)]
pub(crate) struct RepositoryState {
    pub arn: String,
    /// How many images it holds and their bytes: read only for a repository `--prune` would
    /// delete, so the plan says what the delete destroys and apply can refuse it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub images: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_bytes: Option<u64>,
    #[serde(flatten)]
    pub spec: RepositorySpec,
}

/// `ecr_lifecycle_policy.<name>`: the policy document in canonical form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct LifecyclePolicySpec {
    pub policy: Value,
}

/// The repositories and lifecycle policies desired.toml asks for. Pure: no client, no AWS.
pub fn desired(desired: &Desired, _account: &Account) -> Result<Vec<DesiredResource>, ReconcileError> {
    let mut resources = Vec::new();
    for repository in &crate::declared(desired).repositories {
        let repository_address = Address::new(crate::REPOSITORY, &repository.name);
        let spec = RepositorySpec {
            image_tag_mutability: repository.image_tag_mutability.as_str().to_owned(),
            scan_on_push: repository.scan_on_push,
            encryption_type: repository.encryption_type.as_str().to_owned(),
            kms_key: repository.kms_key.clone(),
            tags: desired.marked(&repository.tags),
            repository_policy: None,
        };
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
