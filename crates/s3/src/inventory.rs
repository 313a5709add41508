//! What `import --generate` reads of S3: the buckets desired.toml does not declare, each read
//! whole as a plan observes it (section.rs writes them).

use std::collections::BTreeSet;

use reconcile_core::generate::Found;
use reconcile_core::mark::MARK_KEY;
use reconcile_core::plan::{DesiredResource, Observed};
use reconcile_core::{Address, ReconcileError};
use serde_json::Value;

use crate::bucket::{BucketSpec, FoundBucket};
use crate::{BUCKET, BUCKET_LIFECYCLE, S3Reconciler};

impl S3Reconciler {
    // `import --generate`'s reading: see section.rs for its writing.
    /// The buckets in this region `desired` does not declare, each with its settings (the
    /// bucket's canonical form), its tags without the mark, and its lifecycle rules (null when
    /// it has none). A bucket this account may not read is not its own, and is passed over.
    pub(crate) async fn inventory_of(&self, desired: &[&DesiredResource]) -> Result<Vec<Found>, ReconcileError> {
        let declared: BTreeSet<&str> = desired.iter().map(|r| r.remote_name.as_str()).collect();
        let listed = self
            .parallelism
            .send(|| self.client.list_buckets().send())
            .await
            .map_err(reconcile_aws::failed(None, "list S3 buckets"))?;
        let names: Vec<String> = listed
            .buckets()
            .iter()
            .filter_map(|bucket| bucket.name())
            .filter(|name| !declared.contains(name))
            .map(str::to_owned)
            .collect();
        let reads: Vec<_> = names.iter().map(|name| self.read_whole(name)).collect();
        let mut found = Vec::new();
        for read in futures::future::join_all(reads).await {
            if let Some(one) = read? {
                found.push(one);
            }
        }
        Ok(found)
    }

    async fn read_whole(&self, name: &str) -> Result<Option<Found>, ReconcileError> {
        let address = Address::new(BUCKET, name);
        let head = self.parallelism.send(|| self.client.head_bucket().bucket(name).send()).await;
        match head {
            Ok(output) if output.bucket_region().is_none_or(|region| region == self.account.region) => {}
            // Another region's, gone since the listing, or not this account's to read.
            _ => return Ok(None),
        }
        let lifecycle_address = Address::new(BUCKET_LIFECYCLE, name);
        let (bucket, lifecycle) =
            futures::join!(self.observe_bucket(&address, name), self.observe_lifecycle(&lifecycle_address, name));
        let Observed::Present(live) = bucket? else { return Ok(None) };
        let mut spec: BucketSpec = serde_json::from_value(Value::Object(live))
            .map_err(|error| ReconcileError::new(Some(&address), "read the bucket", error.to_string()))?;
        let lifecycle_rules = match lifecycle? {
            Observed::Present(fields) => fields.get("rules").and_then(Value::as_array).cloned(),
            Observed::Absent => None,
        };
        let deployment = spec.tags.remove(MARK_KEY);
        let live = reconcile_core::spec::attributes(&FoundBucket { spec, lifecycle_rules });
        Ok(Some(Found { kind: BUCKET, name: name.to_owned(), deployment, by_default: true, needs: Vec::new(), live }))
    }
}
