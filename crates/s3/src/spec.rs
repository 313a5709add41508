//! What desired.toml asks of S3 as resources: each declared bucket and its lifecycle
//! configuration, in their kinds' specs (bucket.rs, lifecycle.rs).

use reconcile_core::desired::Desired;
use reconcile_core::plan::DesiredResource;
use reconcile_core::spec::attributes;
use reconcile_core::{Account, Address, ReconcileError};

use crate::bucket::BucketSpec;
use crate::lifecycle::BucketLifecycleSpec;

/// The buckets and lifecycle configurations desired.toml asks for. Pure: no client, no AWS.
pub fn desired(desired: &Desired, account: &Account) -> Result<Vec<DesiredResource>, ReconcileError> {
    let mut resources = Vec::new();
    for bucket in &crate::section::declared(desired).buckets {
        let name = bucket.name.render(&account.id, &account.region);
        let bucket_address = Address::new(crate::BUCKET, &bucket.key);
        let spec = BucketSpec::declared(bucket, name.clone(), desired);
        resources.push(DesiredResource::new(bucket_address.clone(), &name, attributes(&spec)).adopted(bucket.adopt));
        if let Some(rules) = &bucket.lifecycle_rules {
            let spec = BucketLifecycleSpec::declared(&name, rules);
            let address = Address::new(crate::BUCKET_LIFECYCLE, &bucket.key);
            resources.push(DesiredResource::new(address, &name, attributes(&spec)).under(&bucket_address));
        }
    }
    Ok(resources)
}
