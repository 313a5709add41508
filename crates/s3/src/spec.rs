//! The S3 resources as typed specs, and the one place they meet the canonical map: what
//! desired.toml asks for, what observe saw, and what apply reads back from a change.

use std::collections::BTreeMap;

use reconcile_core::desired::Desired;
use reconcile_core::plan::DesiredResource;
use reconcile_core::spec::attributes;
use reconcile_core::{Account, Address, ReconcileError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::lifecycle::{self, desired_rule};

/// The one default encryption the reconciler sets: SSE-S3.
pub(crate) const SSE_S3: &str = "AES256";

/// `s3_bucket.<key>`: the settings and tags reconcile manages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct BucketSpec {
    pub name: String,
    pub block_public_access: BlockPublicAccess,
    /// The default encryption algorithm, or `none`.
    pub encryption: String,
    pub tags: BTreeMap<String, String>,
    // What follows is not declared in desired.toml; each has the one value a private compiler
    // cache needs, and any other, set out of band, is drift that apply reverts.
    /// The bucket policy: none (the role reaches the bucket through its own policy). One that
    /// grants outside the account is also an S103 finding.
    pub policy: Option<Value>,
    /// `BucketOwnerEnforced`: ACLs off, as AWS makes new buckets. No controls at all reads as
    /// `ObjectWriter`, the old default.
    pub object_ownership: String,
    /// ACL grants beyond the owner's full control, as `<grantee> <permission>`: none.
    pub acl_grants: Vec<String>,
    /// `Off` (never enabled, or suspended): versioning would keep every overwritten cache object
    /// past the 30-day expiry, which expires only current versions.
    pub versioning: String,
    /// Replication copies every object to another bucket, possibly another account's: none.
    pub replication: Option<Value>,
    /// Website hosting: off.
    pub website: bool,
    /// Server access logging, as `<target bucket>/<prefix>`: none.
    pub access_logging: Option<String>,
}

/// A bucket's Object Ownership when ACLs are disabled: what reconcile keeps.
pub(crate) const OWNER_ENFORCED: &str = "BucketOwnerEnforced";
/// Versioning never enabled, or suspended.
pub(crate) const VERSIONING_OFF: &str = "Off";

/// The four Block Public Access settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct BlockPublicAccess {
    pub block_public_acls: bool,
    pub block_public_policy: bool,
    pub ignore_public_acls: bool,
    pub restrict_public_buckets: bool,
}

impl BlockPublicAccess {
    pub fn all(on: bool) -> BlockPublicAccess {
        BlockPublicAccess {
            block_public_acls: on,
            block_public_policy: on,
            ignore_public_acls: on,
            restrict_public_buckets: on,
        }
    }
}

/// `s3_bucket_lifecycle.<key>`: the bucket's lifecycle rules, in canonical form and order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct BucketLifecycleSpec {
    pub bucket: String,
    pub rules: Vec<Value>,
}

/// The buckets and lifecycle configurations desired.toml asks for. Pure: no client, no AWS.
pub fn desired(desired: &Desired, account: &Account) -> Result<Vec<DesiredResource>, ReconcileError> {
    let mut resources = Vec::new();
    for bucket in &crate::section::declared(desired).buckets {
        let name = bucket.name.render(&account.id, &account.region);
        let bucket_address = Address::new(crate::BUCKET, &bucket.key);
        let spec = BucketSpec {
            name: name.clone(),
            block_public_access: BlockPublicAccess::all(bucket.block_public_access),
            encryption: SSE_S3.to_owned(),
            tags: desired.marked(&bucket.tags),
            policy: None,
            object_ownership: OWNER_ENFORCED.to_owned(),
            acl_grants: Vec::new(),
            versioning: VERSIONING_OFF.to_owned(),
            replication: None,
            website: false,
            access_logging: None,
        };
        resources.push(DesiredResource::new(bucket_address.clone(), &name, attributes(&spec)).adopted(bucket.adopt));
        if let Some(rules) = &bucket.lifecycle_rules {
            let mut rules: Vec<Value> = rules.iter().map(desired_rule).collect();
            lifecycle::sort_rules(&mut rules);
            let spec = BucketLifecycleSpec { bucket: name.clone(), rules };
            let address = Address::new(crate::BUCKET_LIFECYCLE, &bucket.key);
            resources.push(DesiredResource::new(address, &name, attributes(&spec)).under(&bucket_address));
        }
    }
    Ok(resources)
}
