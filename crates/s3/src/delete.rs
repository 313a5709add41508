//! Deleting a bucket, which only `destroy` and `--prune` plan: its object versions listed and,
//! when asked, deleted first (S3 deletes no bucket that holds any).

use aws_sdk_s3 as s3;
use reconcile_aws::{absent_if, failed, gone_if};
use reconcile_core::plan::Change;
use reconcile_core::{Address, Applied, ReconcileError};

use crate::bucket::bucket_name;
use crate::{S3Reconciler, lock};

/// One version (or delete marker) of an object.
pub(crate) struct Version {
    pub key: String,
    id: Option<String>,
    pub size: u64,
}

impl S3Reconciler {
    /// Every version and delete marker in bucket `name`, paginated to the end.
    pub(crate) async fn versions(&self, address: &Address, name: &str) -> Result<Vec<Version>, ReconcileError> {
        const OPERATION: &str = "list the bucket's object versions";
        let mut versions = Vec::new();
        let mut pages = reconcile_aws::Pages::default();
        let (mut key_marker, mut version_marker): (Option<String>, Option<String>) = (None, None);
        loop {
            let response = self
                .parallelism
                .send(|| {
                    self.client
                        .list_object_versions()
                        .bucket(name)
                        .set_key_marker(key_marker.clone())
                        .set_version_id_marker(version_marker.clone())
                        .send()
                })
                .await;
            let Some(page) = absent_if(response, &["NoSuchBucket"]).map_err(failed(Some(address), OPERATION))? else {
                return Ok(versions);
            };
            versions.extend(page.versions().iter().map(|v| Version {
                key: v.key().unwrap_or_default().to_owned(),
                id: v.version_id().map(str::to_owned),
                size: v.size().unwrap_or(0).max(0) as u64,
            }));
            versions.extend(page.delete_markers().iter().map(|m| Version {
                key: m.key().unwrap_or_default().to_owned(),
                id: m.version_id().map(str::to_owned),
                size: 0,
            }));
            if !page.is_truncated().unwrap_or(false) {
                return Ok(versions);
            }
            // Both markers together are one page's token.
            let token = format!(
                "{}\u{0}{}",
                page.next_key_marker().unwrap_or_default(),
                page.next_version_id_marker().unwrap_or_default()
            );
            pages.page(Some(&token), Some(address), OPERATION)?;
            key_marker = page.next_key_marker().map(str::to_owned);
            version_marker = page.next_version_id_marker().map(str::to_owned);
        }
    }

    /// Empties the bucket (every version; with objects besides reconcile's lock only when
    /// `--empty-buckets` allows: objects written since the plan counted them are not deleted
    /// without it) and deletes it.
    pub(crate) async fn delete_bucket(&self, change: &Change) -> Result<Applied, ReconcileError> {
        const OPERATION: &str = "delete bucket";
        let address = &change.address;
        let name = bucket_name(change)?;
        let versions = self.versions(address, &name).await?;
        let allowed = self.destroy.is_some_and(|d| d.empty_buckets);
        let others = versions.iter().filter(|v| v.key != lock::LOCK_KEY).count();
        if others > 0 && !allowed {
            return Err(ReconcileError::new(
                Some(address),
                OPERATION,
                format!("the bucket holds {others} object(s); pass --empty-buckets to delete them with it"),
            ));
        }
        for batch in versions.chunks(1000) {
            let objects = batch
                .iter()
                .map(|v| s3::types::ObjectIdentifier::builder().key(&v.key).set_version_id(v.id.clone()).build())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|error| ReconcileError::new(Some(address), OPERATION, error.to_string()))?;
            let delete = s3::types::Delete::builder()
                .set_objects(Some(objects))
                .quiet(true)
                .build()
                .map_err(|error| ReconcileError::new(Some(address), OPERATION, error.to_string()))?;
            let response = self.client.delete_objects().bucket(&name).delete(delete).send().await;
            let output = response.map_err(failed(Some(address), "empty the bucket"))?;
            if let Some(error) = output.errors().first() {
                return Err(ReconcileError::new(
                    Some(address),
                    "empty the bucket",
                    format!(
                        "{} object(s) could not be deleted, the first `{}`: {}",
                        output.errors().len(),
                        error.key().unwrap_or_default(),
                        error.message().unwrap_or("no reason given")
                    ),
                ));
            }
        }
        let response = self.client.delete_bucket().bucket(&name).send().await;
        gone_if(response, &["NoSuchBucket"]).map_err(failed(Some(address), OPERATION))?;
        Ok(Applied::Done)
    }
}
