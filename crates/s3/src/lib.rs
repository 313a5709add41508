//! The S3 reconciler: `s3_bucket.<key>` (name, Block Public Access, default encryption, tags)
//! and `s3_bucket_lifecycle.<key>` (the lifecycle rules, compared as a set).
//!
//! Buckets that exist are adopted as they are: creation first asks `HeadBucket`, because in
//! us-east-1 a second `CreateBucket` succeeds silently (and resets the bucket's ACLs). A bucket
//! is never deleted.

mod lifecycle;

use std::collections::BTreeMap;

use async_trait::async_trait;
use aws_sdk_s3 as s3;
use aws_sdk_s3::error::ProvideErrorMetadata;
use reconcile_core::desired::Desired;
use reconcile_core::json::{object, string_map};
use reconcile_core::plan::{Action, Change, DesiredResource, Observed};
use reconcile_core::reconciler::Observations;
use reconcile_core::retry::{Backoff, retry};
use reconcile_core::{Account, Address, Progress, ReconcileError, Reconciler, ResourceKind};
use serde_json::{Map, Value, json};

pub use lifecycle::{desired_rule, observed_rule};

/// The one default encryption the reconciler sets: SSE-S3.
const SSE_S3: &str = "AES256";

pub struct S3Reconciler {
    client: s3::Client,
    account: Account,
}

impl S3Reconciler {
    pub fn new(client: s3::Client, account: Account) -> S3Reconciler {
        S3Reconciler { client, account }
    }
}

fn block_public_access(on: bool) -> Value {
    json!({
        "block_public_acls": on,
        "block_public_policy": on,
        "ignore_public_acls": on,
        "restrict_public_buckets": on,
    })
}

/// Whether a bucket of that name answers, and where.
enum Head {
    Missing,
    Ours,
}

#[async_trait]
impl Reconciler for S3Reconciler {
    fn kinds(&self) -> &'static [ResourceKind] {
        &[ResourceKind::S3Bucket, ResourceKind::S3BucketLifecycle]
    }

    fn desired(&self, desired: &Desired, account: &Account) -> Result<Vec<DesiredResource>, ReconcileError> {
        let mut resources = Vec::new();
        for bucket in &desired.s3.buckets {
            let name = bucket.name.render(&account.id, &account.region);
            let bucket_address = Address::new(ResourceKind::S3Bucket, &bucket.key);
            resources.push(DesiredResource {
                address: bucket_address.clone(),
                attributes: object(json!({
                    "name": name,
                    "block_public_access": block_public_access(bucket.block_public_access),
                    "encryption": SSE_S3,
                    "tags": bucket.tags,
                })),
                depends_on: Vec::new(),
            });
            if let Some(rules) = &bucket.lifecycle_rules {
                let mut rules: Vec<Value> = rules.iter().map(desired_rule).collect();
                lifecycle::sort_rules(&mut rules);
                resources.push(DesiredResource {
                    address: Address::new(ResourceKind::S3BucketLifecycle, &bucket.key),
                    attributes: object(json!({ "bucket": name, "rules": rules })),
                    depends_on: vec![bucket_address],
                });
            }
        }
        Ok(resources)
    }

    async fn observe(&self, desired: &[&DesiredResource]) -> Result<Observations, ReconcileError> {
        // Group both kinds by bucket: one HeadBucket serves both. Each carries the bucket's name,
        // `name` on the bucket and `bucket` on its lifecycle.
        let mut buckets: BTreeMap<&str, Vec<&Address>> = BTreeMap::new();
        for resource in desired {
            let fields = &resource.attributes;
            let name = fields.get("name").or_else(|| fields.get("bucket")).and_then(Value::as_str).unwrap_or_default();
            buckets.entry(name).or_default().push(&resource.address);
        }
        let reads: Vec<_> =
            buckets.into_iter().map(|(name, addresses)| self.observe_bucket_and_lifecycle(name, addresses)).collect();
        let mut observations = Observations::default();
        for result in reconcile_core::engine::bounded(8, reads).await {
            observations.resources.extend(result?);
        }
        Ok(observations)
    }

    async fn apply(&self, change: &Change, _progress: &dyn Progress) -> Result<(), ReconcileError> {
        let address = &change.address;
        match (address.kind, change.action) {
            (ResourceKind::S3Bucket, Action::Create) => self.create_bucket(change).await,
            (ResourceKind::S3Bucket, Action::Update) => self.converge_bucket(change, change.before.as_ref()).await,
            (ResourceKind::S3Bucket, Action::Delete) => Err(ReconcileError::never(address, "delete bucket")),
            (_, Action::Create | Action::Update) => self.put_lifecycle(change).await,
            (_, Action::Delete) => self.delete_lifecycle(change).await,
            // This reconciler's diff never plans one: everything it manages changes in place.
            (_, Action::Replace) => Err(ReconcileError::never(address, "replace")),
        }
    }
}

impl S3Reconciler {
    async fn observe_bucket_and_lifecycle(
        &self,
        name: &str,
        addresses: Vec<&Address>,
    ) -> Result<BTreeMap<Address, Observed>, ReconcileError> {
        let mut observed = BTreeMap::new();
        let head = self.head(addresses[0], name).await?;
        for address in addresses {
            let state = match head {
                Head::Missing => Observed::Absent,
                Head::Ours if address.kind == ResourceKind::S3Bucket => self.observe_bucket(address, name).await?,
                Head::Ours => self.observe_lifecycle(address, name).await?,
            };
            observed.insert(address.clone(), state);
        }
        Ok(observed)
    }

    async fn head(&self, address: &Address, name: &str) -> Result<Head, ReconcileError> {
        match self.client.head_bucket().bucket(name).send().await {
            Ok(output) => match output.bucket_region() {
                Some(region) if region != self.account.region => Err(ReconcileError::new(
                    Some(address),
                    "find bucket",
                    format!("bucket `{name}` is in {region}, not in desired.toml's region {}", self.account.region),
                )),
                _ => Ok(Head::Ours),
            },
            // HeadBucket has no error body: a missing bucket is a bare 404.
            Err(error) if error.as_service_error().is_some_and(|e| e.is_not_found()) => Ok(Head::Missing),
            Err(error) if error.raw_response().is_some_and(|r| r.status().as_u16() == 403) => Err(ReconcileError::new(
                Some(address),
                "find bucket",
                format!(
                    "bucket name `{name}` exists but this account may not read it: another account owns it, \
                         or the credentials lack s3:ListBucket"
                ),
            )),
            Err(error) => Err(ReconcileError::of(address, "find bucket")(error)),
        }
    }

    async fn observe_bucket(&self, address: &Address, name: &str) -> Result<Observed, ReconcileError> {
        let tags = match self.client.get_bucket_tagging().bucket(name).send().await {
            Ok(output) => output.tag_set().iter().map(|t| (t.key().to_owned(), t.value().to_owned())).collect(),
            Err(error) if error.code() == Some("NoSuchTagSet") => BTreeMap::new(),
            Err(error) => return Err(ReconcileError::of(address, "read bucket tags")(error)),
        };
        let tags: BTreeMap<String, String> =
            tags.into_iter().filter(|(k, _): &(String, String)| !k.starts_with("aws:")).collect();

        let block = match self.client.get_public_access_block().bucket(name).send().await {
            Ok(output) => {
                let config = output.public_access_block_configuration();
                let flag = |f: fn(&s3::types::PublicAccessBlockConfiguration) -> Option<bool>| {
                    config.and_then(f).unwrap_or(false)
                };
                json!({
                    "block_public_acls": flag(|c| c.block_public_acls()),
                    "block_public_policy": flag(|c| c.block_public_policy()),
                    "ignore_public_acls": flag(|c| c.ignore_public_acls()),
                    "restrict_public_buckets": flag(|c| c.restrict_public_buckets()),
                })
            }
            // Real AWS turns it on for new buckets; the emulator and old buckets may have none.
            Err(error) if error.code() == Some("NoSuchPublicAccessBlockConfiguration") => block_public_access(false),
            Err(error) => return Err(ReconcileError::of(address, "read Block Public Access")(error)),
        };

        let encryption = match self.client.get_bucket_encryption().bucket(name).send().await {
            Ok(output) => output
                .server_side_encryption_configuration()
                .and_then(|c| c.rules().first())
                .and_then(|r| r.apply_server_side_encryption_by_default())
                .map_or_else(|| "none".to_owned(), |d| d.sse_algorithm().as_str().to_owned()),
            Err(error) if error.code() == Some("ServerSideEncryptionConfigurationNotFoundError") => "none".to_owned(),
            Err(error) => return Err(ReconcileError::of(address, "read default encryption")(error)),
        };

        Ok(Observed::Present(object(json!({
            "name": name,
            "block_public_access": block,
            "encryption": encryption,
            "tags": tags,
        }))))
    }

    async fn observe_lifecycle(&self, address: &Address, name: &str) -> Result<Observed, ReconcileError> {
        match self.client.get_bucket_lifecycle_configuration().bucket(name).send().await {
            Ok(output) if output.rules().is_empty() => Ok(Observed::Absent),
            Ok(output) => {
                let mut rules: Vec<Value> = output.rules().iter().map(observed_rule).collect();
                lifecycle::sort_rules(&mut rules);
                Ok(Observed::Present(object(json!({ "bucket": name, "rules": rules }))))
            }
            Err(error) if error.code() == Some("NoSuchLifecycleConfiguration") => Ok(Observed::Absent),
            Err(error) => Err(ReconcileError::of(address, "read lifecycle configuration")(error)),
        }
    }

    async fn create_bucket(&self, change: &Change) -> Result<(), ReconcileError> {
        let address = &change.address;
        let name = change.after_str("name")?;
        // Made since the plan was read: adopt it, never "create" it again (see the module doc).
        if let Head::Ours = self.head(address, name).await? {
            return self.converge_bucket(change, None).await;
        }
        let mut request = self.client.create_bucket().bucket(name);
        // us-east-1 refuses an explicit LocationConstraint; every other region requires one.
        if self.account.region != "us-east-1" {
            request = request.create_bucket_configuration(
                s3::types::CreateBucketConfiguration::builder()
                    .location_constraint(self.account.region.as_str().into())
                    .build(),
            );
        }
        match request.send().await {
            Ok(_) => {}
            Err(error) if error.as_service_error().is_some_and(|e| e.is_bucket_already_owned_by_you()) => {}
            Err(error) if error.as_service_error().is_some_and(|e| e.is_bucket_already_exists()) => {
                return Err(ReconcileError::new(
                    Some(address),
                    "create bucket",
                    format!("the name `{name}` is taken by another AWS account; bucket names are global"),
                ));
            }
            Err(error) => return Err(ReconcileError::of(address, "create bucket")(error)),
        }
        self.converge_bucket(change, None).await
    }

    /// Makes the bucket's settings and tags match the change, touching only what differs from
    /// `before` (everything, when `before` is unknown).
    async fn converge_bucket(
        &self,
        change: &Change,
        before: Option<&Map<String, Value>>,
    ) -> Result<(), ReconcileError> {
        let address = &change.address;
        let after = change.after_fields()?;
        let name = change.after_str("name")?;
        let differs = |field: &str| before.is_none_or(|b| b.get(field) != after.get(field));

        if differs("block_public_access") {
            let flags = after.get("block_public_access");
            let flag = |key: &str| flags.and_then(|f| f.get(key)).and_then(Value::as_bool).unwrap_or(true);
            let config = s3::types::PublicAccessBlockConfiguration::builder()
                .block_public_acls(flag("block_public_acls"))
                .block_public_policy(flag("block_public_policy"))
                .ignore_public_acls(flag("ignore_public_acls"))
                .restrict_public_buckets(flag("restrict_public_buckets"))
                .build();
            self.client
                .put_public_access_block()
                .bucket(name)
                .public_access_block_configuration(config)
                .send()
                .await
                .map_err(ReconcileError::of(address, "set Block Public Access"))?;
        }
        if differs("encryption") {
            let by_default = s3::types::ServerSideEncryptionByDefault::builder()
                .sse_algorithm(s3::types::ServerSideEncryption::Aes256)
                .build()
                .map_err(ReconcileError::of(address, "build the encryption configuration"))?;
            let config = s3::types::ServerSideEncryptionConfiguration::builder()
                .rules(
                    s3::types::ServerSideEncryptionRule::builder()
                        .apply_server_side_encryption_by_default(by_default)
                        .build(),
                )
                .build()
                .map_err(ReconcileError::of(address, "build the encryption configuration"))?;
            self.client
                .put_bucket_encryption()
                .bucket(name)
                .server_side_encryption_configuration(config)
                .send()
                .await
                .map_err(ReconcileError::of(address, "set default encryption"))?;
        }
        let desired_tags = string_map(after.get("tags"));
        if differs("tags") {
            // S3 tagging replaces the whole set.
            if desired_tags.is_empty() {
                self.client
                    .delete_bucket_tagging()
                    .bucket(name)
                    .send()
                    .await
                    .map_err(ReconcileError::of(address, "remove bucket tags"))?;
            } else {
                let tag_set = desired_tags
                    .iter()
                    .map(|(k, v)| s3::types::Tag::builder().key(k).value(v).build())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(ReconcileError::of(address, "build bucket tags"))?;
                let tagging = s3::types::Tagging::builder()
                    .set_tag_set(Some(tag_set))
                    .build()
                    .map_err(ReconcileError::of(address, "build bucket tags"))?;
                self.client
                    .put_bucket_tagging()
                    .bucket(name)
                    .tagging(tagging)
                    .send()
                    .await
                    .map_err(ReconcileError::of(address, "set bucket tags"))?;
            }
        }
        Ok(())
    }

    async fn put_lifecycle(&self, change: &Change) -> Result<(), ReconcileError> {
        let address = &change.address;
        let name = change.after_str("bucket")?;
        let rules = change.after_fields()?.get("rules").and_then(Value::as_array).cloned().unwrap_or_default();
        let rules = rules
            .iter()
            .map(lifecycle::sdk_rule)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|why| ReconcileError::new(Some(address), "build lifecycle rules", why))?;
        let configuration = s3::types::BucketLifecycleConfiguration::builder()
            .set_rules(Some(rules))
            .build()
            .map_err(ReconcileError::of(address, "build lifecycle rules"))?;
        // Right after the bucket is created, S3 may not show it everywhere yet.
        let request = || {
            self.client
                .put_bucket_lifecycle_configuration()
                .bucket(name)
                .lifecycle_configuration(configuration.clone())
                .send()
        };
        retry(Backoff::AFTER_CREATE, request, |error, _| error.code() == Some("NoSuchBucket"), tokio::time::sleep)
            .await
            .map_err(ReconcileError::of(address, "put lifecycle configuration"))?;
        Ok(())
    }

    async fn delete_lifecycle(&self, change: &Change) -> Result<(), ReconcileError> {
        let address = &change.address;
        let name = change.before.as_ref().and_then(|b| b.get("bucket")).and_then(Value::as_str).unwrap_or_default();
        match self.client.delete_bucket_lifecycle().bucket(name).send().await {
            Ok(_) => Ok(()),
            Err(error) if matches!(error.code(), Some("NoSuchLifecycleConfiguration" | "NoSuchBucket")) => Ok(()),
            Err(error) => Err(ReconcileError::of(address, "delete lifecycle configuration")(error)),
        }
    }
}

#[cfg(test)]
mod tests {
    //! Error paths the emulator cannot produce, against a mocked client.

    use super::*;
    use aws_sdk_s3::operation::create_bucket::CreateBucketError;
    use aws_sdk_s3::operation::head_bucket::HeadBucketError;
    use aws_sdk_s3::types::error::{BucketAlreadyExists, NotFound};
    use aws_smithy_mocks::{Rule, RuleMode, mock, mock_client};
    use aws_smithy_types::body::SdkBody;
    use reconcile_core::reconciler::Silent;

    fn reconciler(rules: &[&Rule]) -> S3Reconciler {
        let client = mock_client!(aws_sdk_s3, RuleMode::MatchAny, rules);
        S3Reconciler::new(client, Account::new("123456789012", "eu-west-1"))
    }

    fn create_change() -> Change {
        Change {
            address: Address::new(ResourceKind::S3Bucket, "sccache"),
            action: Action::Create,
            before: None,
            after: Some(object(json!({
                "name": "rocm-bake-sccache-123456789012",
                "block_public_access": block_public_access(true),
                "encryption": SSE_S3,
                "tags": {},
            }))),
            depends_on: vec![],
        }
    }

    /// The writes that bring a bucket's settings to `create_change()`: Block Public Access,
    /// encryption, and removing tags (it declares none).
    fn settings_writes() -> [Rule; 3] {
        [
            mock!(s3::Client::put_public_access_block)
                .then_output(|| s3::operation::put_public_access_block::PutPublicAccessBlockOutput::builder().build()),
            mock!(s3::Client::put_bucket_encryption)
                .then_output(|| s3::operation::put_bucket_encryption::PutBucketEncryptionOutput::builder().build()),
            mock!(s3::Client::delete_bucket_tagging)
                .then_output(|| s3::operation::delete_bucket_tagging::DeleteBucketTaggingOutput::builder().build()),
        ]
    }

    fn missing() -> Rule {
        mock!(s3::Client::head_bucket).then_error(|| HeadBucketError::NotFound(NotFound::builder().build()))
    }

    #[tokio::test]
    async fn a_name_owned_by_another_account_is_a_clear_error() {
        let head = missing();
        let create = mock!(s3::Client::create_bucket)
            .then_error(|| CreateBucketError::BucketAlreadyExists(BucketAlreadyExists::builder().build()));
        let error = reconciler(&[&head, &create]).apply(&create_change(), &Silent).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "s3_bucket.sccache: failed to create bucket: the name `rocm-bake-sccache-123456789012` is taken by another \
             AWS account; bucket names are global"
        );
    }

    #[tokio::test]
    async fn outside_us_east_1_the_bucket_is_created_with_its_location_constraint() {
        let head = missing();
        let create = mock!(s3::Client::create_bucket)
            .match_requests(|request| {
                request.create_bucket_configuration().and_then(|c| c.location_constraint()).map(|l| l.as_str())
                    == Some("eu-west-1")
            })
            .then_output(|| s3::operation::create_bucket::CreateBucketOutput::builder().build());
        let [block, encryption, untag] = settings_writes();
        reconciler(&[&head, &create, &block, &encryption, &untag]).apply(&create_change(), &Silent).await.unwrap();
        assert_eq!(create.num_calls(), 1);
        assert_eq!((block.num_calls(), encryption.num_calls()), (1, 1));
    }

    #[tokio::test]
    async fn a_bucket_this_account_may_not_read_is_reported_as_such() {
        let head = mock!(s3::Client::head_bucket).then_http_response(|| {
            aws_smithy_runtime_api::http::Response::new(
                aws_smithy_runtime_api::http::StatusCode::try_from(403).unwrap(),
                SdkBody::empty(),
            )
        });
        let desired = DesiredResource {
            address: Address::new(ResourceKind::S3Bucket, "sccache"),
            attributes: object(json!({ "name": "someone-elses-bucket" })),
            depends_on: vec![],
        };
        let error = reconciler(&[&head]).observe(&[&desired]).await.unwrap_err();
        assert!(
            error.to_string().starts_with(
                "s3_bucket.sccache: failed to find bucket: bucket name `someone-elses-bucket` exists but this account \
                 may not read it"
            ),
            "{error}"
        );
    }

    #[tokio::test]
    async fn a_lifecycle_put_right_after_creation_waits_for_the_bucket_to_show() {
        let body = "<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message></Error>";
        let put = mock!(s3::Client::put_bucket_lifecycle_configuration)
            .sequence()
            .http_status(404, Some(body.to_owned()))
            .output(|| {
                s3::operation::put_bucket_lifecycle_configuration::PutBucketLifecycleConfigurationOutput::builder()
                    .build()
            })
            .build();
        let change = Change {
            address: Address::new(ResourceKind::S3BucketLifecycle, "sccache"),
            action: Action::Create,
            before: None,
            after: Some(object(json!({
                "bucket": "rocm-bake-sccache-123456789012",
                "rules": [{"id": "expire-after-30-days", "status": "Enabled", "prefix": "", "expiration_days": 30}],
            }))),
            depends_on: vec![],
        };
        reconciler(&[&put]).apply(&change, &Silent).await.unwrap();
        assert_eq!(put.num_calls(), 2);
    }

    #[tokio::test]
    async fn a_bucket_already_owned_by_this_account_is_adopted() {
        use aws_sdk_s3::types::error::BucketAlreadyOwnedByYou;
        let head = missing();
        let create = mock!(s3::Client::create_bucket)
            .then_error(|| CreateBucketError::BucketAlreadyOwnedByYou(BucketAlreadyOwnedByYou::builder().build()));
        let [block, encryption, untag] = settings_writes();
        reconciler(&[&head, &create, &block, &encryption, &untag]).apply(&create_change(), &Silent).await.unwrap();
        assert_eq!((block.num_calls(), encryption.num_calls(), untag.num_calls()), (1, 1, 1), "converged, not failed");
    }
}
