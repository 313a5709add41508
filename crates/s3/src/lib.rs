//! The S3 reconciler: `s3_bucket.<key>` (name, Block Public Access, default encryption, tags)
//! and `s3_bucket_lifecycle.<key>` (the lifecycle rules, compared as a set).
//!
//! A bucket is made with its tags, this deployment's mark among them, in the one `CreateBucket`
//! (`CreateBucketConfiguration.Tags`), so an apply killed right after leaves a bucket that is
//! recognisably its own. Creation first asks `HeadBucket`, because in us-east-1 a second
//! `CreateBucket` succeeds silently (and resets the bucket's ACLs): one found made since the plan
//! was read is converged when it carries this deployment's mark, and refused otherwise. A bucket
//! is deleted only by `destroy`.

mod describe;
mod generate;
mod lifecycle;
pub mod lock;
mod section;
mod spec;
pub mod storage;
mod terraform;

use std::collections::BTreeMap;

use async_trait::async_trait;
use aws_sdk_s3 as s3;
use reconcile_aws::{Parallelism, absent_if, after_create, failed, gone_if, has_code, visible_tags};
use reconcile_core::plan::{Action, Change, DesiredResource, Finding, Impact, Observed, Severity};
use reconcile_core::reconciler::{Assessment, Observations};
use reconcile_core::spec::attributes;
use reconcile_core::{Account, Address, Applied, Destroy, Progress, ReconcileError, Reconciler, ResourceKind};

pub use describe::{DESCRIPTION, client, reconciler};
pub use lifecycle::{desired_rule, observed_rule};
pub use section::{APPLY_LOCK_KEY, Bucket, CLAIM, S3, S3LifecycleRule, declared};
pub use spec::desired;
use spec::{BlockPublicAccess, BucketLifecycleSpec, BucketSpec, OWNER_ENFORCED, SSE_S3, VERSIONING_OFF};

/// Finding code: the bucket's policy or ACL grants access outside the account. Stable; never
/// reused.
pub const FOREIGN_BUCKET_ACCESS: &str = "S103";

/// `s3_bucket.<key>`: a bucket's name, protection, encryption and tags.
pub const BUCKET: ResourceKind = ResourceKind::new("s3_bucket", 200);
/// `s3_bucket_lifecycle.<key>`: a bucket's lifecycle rules.
pub const BUCKET_LIFECYCLE: ResourceKind = ResourceKind::new("s3_bucket_lifecycle", 210);

reconcile_core::resource_kinds! {
    /// The kinds this crate owns.
    pub enum S3Kind {
        Bucket = crate::BUCKET,
        Lifecycle = crate::BUCKET_LIFECYCLE,
    }
}

pub struct S3Reconciler {
    client: s3::Client,
    account: Account,
    parallelism: Parallelism,
    /// `reconcile destroy`: the declared bucket is deleted, its objects only if it says so.
    destroy: Option<Destroy>,
    /// The objects each bucket this plan deletes holds, as `assess` counted them: what
    /// `refusal` refuses on.
    held: std::sync::Mutex<BTreeMap<Address, u64>>,
}

impl S3Reconciler {
    pub fn new(client: s3::Client, account: Account) -> S3Reconciler {
        S3Reconciler { client, account, parallelism: Parallelism::default(), destroy: None, held: Default::default() }
    }

    /// Deletes the declared bucket a destroy plans to, its objects as `destroy` allows.
    pub fn destroying(mut self, destroy: Destroy) -> S3Reconciler {
        self.destroy = Some(destroy);
        self
    }

    /// At most `parallelism` requests in flight at once.
    pub fn with_parallelism(mut self, parallelism: Parallelism) -> S3Reconciler {
        self.parallelism = parallelism;
        self
    }
}

/// Who made the bucket being converged: this apply, a moment ago (so it has nothing but what
/// `CreateBucket` gives), or anyone else.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Made {
    Now,
    ByOthers,
}

/// Whether a bucket of that name answers, and where.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Head {
    Missing,
    Ours,
}

#[async_trait]
impl Reconciler for S3Reconciler {
    fn kinds(&self) -> &'static [ResourceKind] {
        S3Kind::KINDS
    }

    async fn inventory(
        &self,
        desired: &[&DesiredResource],
    ) -> Result<Vec<reconcile_core::generate::Found>, ReconcileError> {
        self.inventory_of(desired).await
    }

    async fn observe(&self, desired: &[&DesiredResource]) -> Result<Observations, ReconcileError> {
        // Group both kinds by bucket: one HeadBucket serves both.
        let mut buckets: BTreeMap<&str, Vec<&Address>> = BTreeMap::new();
        for resource in desired {
            buckets.entry(resource.remote_name.as_str()).or_default().push(&resource.address);
        }
        let reads: Vec<_> =
            buckets.into_iter().map(|(name, addresses)| self.observe_bucket_and_lifecycle(name, addresses)).collect();
        let mut observations = Observations::default();
        for result in futures::future::join_all(reads).await {
            observations.resources.extend(result?);
        }
        for (address, observed) in &observations.resources {
            if let (crate::BUCKET, Observed::Present(fields)) = (address.kind, observed) {
                observations.findings.extend(self.foreign_access(address, fields));
            }
        }
        Ok(observations)
    }

    async fn apply(&self, change: &Change, _progress: &dyn Progress) -> Result<Applied, ReconcileError> {
        let address = &change.address;
        match (S3Kind::of(address)?, change.action) {
            (S3Kind::Bucket, Action::Create) => self.create_bucket(change).await,
            (S3Kind::Bucket, Action::Update) => {
                let before = reconcile_core::spec::before::<BucketSpec>(change)?;
                self.converge_bucket(change, before.as_ref(), Made::ByOthers).await?;
                Ok(Applied::Done)
            }
            (S3Kind::Bucket, Action::Delete) if self.destroy.is_some() => self.delete_bucket(change).await,
            (S3Kind::Bucket, Action::Delete | Action::Replace) => Err(ReconcileError::never(address, "delete bucket")),
            (S3Kind::Lifecycle, Action::Create | Action::Update) => self.put_lifecycle(change).await,
            (S3Kind::Lifecycle, Action::Delete) => self.delete_lifecycle(change).await,
            // This reconciler's diff never plans one: a lifecycle configuration changes in place.
            (S3Kind::Lifecycle, Action::Replace) => Err(ReconcileError::never(address, "replace")),
        }
    }

    /// A bucket's expiry deletes its objects, and an ACL reset is a write of who may reach
    /// them: neither is the apply role's (parliament's resource-policy escalation: either could
    /// be turned to delete, or to open, the compiler cache the nightly builds from).
    /// What each bucket a destroy deletes holds (every version, reconcile's own lock aside).
    async fn assess(
        &self,
        changes: &[&Change],
        _desired: &BTreeMap<Address, DesiredResource>,
    ) -> Result<Assessment, ReconcileError> {
        let deleted = changes.iter().filter(|c| c.address.kind == crate::BUCKET && c.action == Action::Delete);
        let counts = futures::future::join_all(deleted.map(|change| async move {
            let name = bucket_name(change)?;
            let versions = self.versions(&change.address, &name).await?;
            Ok::<_, ReconcileError>((change.address.clone(), versions))
        }))
        .await;
        let mut assessment = Assessment::default();
        for count in counts {
            let (address, versions) = count?;
            let held: Vec<&Version> = versions.iter().filter(|v| v.key != lock::LOCK_KEY).collect();
            let bytes = held.iter().map(|v| v.size).sum();
            self.held.lock().expect("never poisoned").insert(address.clone(), held.len() as u64);
            assessment.impacts.insert(address, Impact::contents("objects", held.len() as u64, bytes));
        }
        Ok(assessment)
    }

    fn refusal(&self, change: &Change) -> Option<String> {
        if change.address.kind != crate::BUCKET || change.action != Action::Delete {
            return None;
        }
        let objects = self.held.lock().expect("never poisoned").get(&change.address).copied().unwrap_or(0);
        let allowed = self.destroy.is_some_and(|d| d.empty_buckets);
        (objects > 0 && !allowed).then(|| {
            format!(
                "the bucket still holds {objects} object(s) (versions and delete markers counted); pass \
                 --empty-buckets to delete them with it"
            )
        })
    }

    fn administrators_only(&self, change: &Change) -> Option<&'static str> {
        match S3Kind::of(&change.address).ok()? {
            S3Kind::Lifecycle => Some("a bucket's expiry, which deletes its objects"),
            S3Kind::Bucket if change.action == Action::Delete => Some("deleting a bucket, and the objects in it"),
            S3Kind::Bucket if change.action == Action::Update && grants_someone(change) => {
                Some("an ACL that grants someone else: who reaches the bucket")
            }
            S3Kind::Bucket => None,
        }
    }
}

/// One version (or delete marker) of an object.
struct Version {
    key: String,
    id: Option<String>,
    size: u64,
}

/// The name of the bucket a change deletes, as observed.
/// What an update of a bucket's lifecycle does to its shortest expiry, for a plan's cost line:
/// the bucket, and the days before and after, when both expire something and they differ.
pub fn expiry_change(change: &Change) -> Option<(String, u64, u64)> {
    if change.address.kind != BUCKET_LIFECYCLE || change.action != Action::Update {
        return None;
    }
    let spec = |fields: Option<&serde_json::Map<String, serde_json::Value>>| -> Option<BucketLifecycleSpec> {
        serde_json::from_value(serde_json::Value::Object(fields?.clone())).ok()
    };
    let days = |spec: &BucketLifecycleSpec| {
        spec.rules.iter().filter_map(|rule| rule.get("expiration_days").and_then(serde_json::Value::as_u64)).min()
    };
    let (before, after) = (spec(change.before.as_ref())?, spec(change.after.as_ref())?);
    let (from, to) = (days(&before)?, days(&after)?);
    (from != to).then(|| (after.bucket.clone(), from, to))
}

fn bucket_name(change: &Change) -> Result<String, ReconcileError> {
    let before = reconcile_core::spec::before::<BucketSpec>(change)?;
    before
        .map(|b| b.name)
        .ok_or_else(|| ReconcileError::new(Some(&change.address), "delete bucket", "the change has no observed fields"))
}

/// A bucket ACL's grants beyond its owner's full control, as `<grantee> <permission>`, sorted.
fn foreign_grants(acl: &s3::operation::get_bucket_acl::GetBucketAclOutput) -> Vec<String> {
    let owner = acl.owner().and_then(|o| o.id());
    let mut grants: Vec<String> = acl
        .grants()
        .iter()
        .filter_map(|grant| {
            let grantee = grant.grantee()?;
            let permission = grant.permission().map_or("?", |p| p.as_str());
            let who = grantee.uri().or(grantee.id()).or(grantee.email_address()).unwrap_or("?");
            let owners_own = grantee.id().is_some() && grantee.id() == owner && permission == "FULL_CONTROL";
            (!owners_own).then(|| format!("{who} {permission}"))
        })
        .collect();
    grants.sort();
    grants
}

/// Whether the bucket as observed has an ACL grant beyond its owner's, which apply resets.
fn grants_someone(change: &Change) -> bool {
    let grants = change.before.as_ref().and_then(|before| before.get("acl_grants"));
    grants.and_then(serde_json::Value::as_array).is_some_and(|grants| !grants.is_empty())
}

impl S3Reconciler {
    async fn observe_bucket_and_lifecycle(
        &self,
        name: &str,
        addresses: Vec<&Address>,
    ) -> Result<BTreeMap<Address, Observed>, ReconcileError> {
        let head = self.head(addresses[0], name).await?;
        // The bucket's settings and its lifecycle configuration, read at once.
        let (bucket, lifecycle) = tokio::join!(
            async {
                match addresses.iter().find(|a| a.kind == crate::BUCKET) {
                    Some(address) if head == Head::Ours => Some(self.observe_bucket(address, name).await).transpose(),
                    _ => Ok(None),
                }
            },
            async {
                match addresses.iter().find(|a| a.kind == crate::BUCKET_LIFECYCLE) {
                    Some(address) if head == Head::Ours => {
                        Some(self.observe_lifecycle(address, name).await).transpose()
                    }
                    _ => Ok(None),
                }
            },
        );
        let (mut bucket, mut lifecycle) = (bucket?, lifecycle?);
        addresses
            .into_iter()
            .map(|address| {
                let state = match S3Kind::of(address)? {
                    S3Kind::Bucket => bucket.take(),
                    S3Kind::Lifecycle => lifecycle.take(),
                };
                Ok((address.clone(), state.unwrap_or(Observed::Absent)))
            })
            .collect::<Result<_, ReconcileError>>()
    }

    async fn head(&self, address: &Address, name: &str) -> Result<Head, ReconcileError> {
        // HeadBucket has no error body: a missing bucket is a bare 404, a foreign one a bare 403.
        match absent_if(self.parallelism.send(|| self.client.head_bucket().bucket(name).send()).await, &["NotFound"]) {
            Ok(None) => Ok(Head::Missing),
            Ok(Some(output)) => match output.bucket_region() {
                Some(region) if region != self.account.region => Err(ReconcileError::new(
                    Some(address),
                    "find bucket",
                    format!("bucket `{name}` is in {region}, not in desired.toml's region {}", self.account.region),
                )),
                _ => Ok(Head::Ours),
            },
            Err(error) if error.raw_response().is_some_and(|r| r.status().as_u16() == 403) => Err(ReconcileError::new(
                Some(address),
                "find bucket",
                format!(
                    "bucket name `{name}` exists but this account may not read it: another account owns it, \
                         or the credentials lack s3:ListBucket"
                ),
            )
            .with_kind(reconcile_core::ErrorKind::AccessDenied)),
            Err(error) => Err(failed(Some(address), "find bucket")(error)),
        }
    }

    async fn observe_bucket(&self, address: &Address, name: &str) -> Result<Observed, ReconcileError> {
        // Every setting is its own API: all ten reads go out at once, one round trip, not ten.
        let (c, p) = (&self.client, &self.parallelism);
        let (tagging, block, encryption, policy, ownership, acl, versioning, replication, website, logging) = tokio::join!(
            p.send(|| c.get_bucket_tagging().bucket(name).send()),
            p.send(|| c.get_public_access_block().bucket(name).send()),
            p.send(|| c.get_bucket_encryption().bucket(name).send()),
            p.send(|| c.get_bucket_policy().bucket(name).send()),
            p.send(|| c.get_bucket_ownership_controls().bucket(name).send()),
            p.send(|| c.get_bucket_acl().bucket(name).send()),
            p.send(|| c.get_bucket_versioning().bucket(name).send()),
            p.send(|| c.get_bucket_replication().bucket(name).send()),
            p.send(|| c.get_bucket_website().bucket(name).send()),
            p.send(|| c.get_bucket_logging().bucket(name).send()),
        );
        let tags = absent_if(tagging, &["NoSuchTagSet"])
            .map_err(failed(Some(address), "read bucket tags"))?
            .map(|output| visible_tags(output.tag_set().iter().map(|t| (t.key(), t.value()))))
            .unwrap_or_default();

        // Real AWS turns it on for new buckets; the emulator and old buckets may have none,
        // and an absent setting is off.
        let block_public_access = absent_if(block, &["NoSuchPublicAccessBlockConfiguration"])
            .map_err(failed(Some(address), "read Block Public Access"))?
            .and_then(|output| output.public_access_block_configuration().cloned())
            .map_or(BlockPublicAccess::all(false), |config| public_access(&config));

        let encryption = absent_if(encryption, &["ServerSideEncryptionConfigurationNotFoundError"])
            .map_err(failed(Some(address), "read default encryption"))?
            .and_then(|output| default_encryption(&output))
            .unwrap_or_else(|| "none".to_owned());

        let policy = absent_if(policy, &["NoSuchBucketPolicy"])
            .map_err(failed(Some(address), "read bucket policy"))?
            .and_then(|output| output.policy().map(reconcile_core::json::parse_document));

        let object_ownership = absent_if(ownership, &["OwnershipControlsNotFoundError"])
            .map_err(failed(Some(address), "read Object Ownership"))?
            .and_then(|output| {
                let rule = output.ownership_controls()?.rules().first()?;
                Some(rule.object_ownership().as_str().to_owned())
            })
            .unwrap_or_else(|| "ObjectWriter".to_owned());

        let acl_grants = foreign_grants(&acl.map_err(failed(Some(address), "read bucket ACL"))?);

        let versioning = versioning.map_err(failed(Some(address), "read versioning"))?;
        let versioning = match versioning.status() {
            Some(s3::types::BucketVersioningStatus::Enabled) => "Enabled".to_owned(),
            _ => VERSIONING_OFF.to_owned(),
        };

        let replication = absent_if(replication, &["ReplicationConfigurationNotFoundError"])
            .map_err(failed(Some(address), "read replication"))?
            .and_then(|output| output.replication_configuration().map(replication_of));

        let website = absent_if(website, &["NoSuchWebsiteConfiguration"])
            .map_err(failed(Some(address), "read website hosting"))?
            .is_some();

        let logging = logging.map_err(failed(Some(address), "read access logging"))?;
        let access_logging = logging.logging_enabled().map(|l| format!("{}/{}", l.target_bucket(), l.target_prefix()));

        let spec = BucketSpec {
            name: name.to_owned(),
            block_public_access,
            encryption,
            tags,
            policy,
            object_ownership,
            acl_grants,
            versioning,
            replication,
            website,
            access_logging,
        };
        Ok(Observed::Present(attributes(&spec)))
    }

    async fn observe_lifecycle(&self, address: &Address, name: &str) -> Result<Observed, ReconcileError> {
        let response =
            self.parallelism.send(|| self.client.get_bucket_lifecycle_configuration().bucket(name).send()).await;
        match absent_if(response, &["NoSuchLifecycleConfiguration"])
            .map_err(failed(Some(address), "read lifecycle configuration"))?
        {
            Some(output) if !output.rules().is_empty() => {
                let mut rules: Vec<_> = output.rules().iter().map(observed_rule).collect();
                lifecycle::sort_rules(&mut rules);
                Ok(Observed::Present(attributes(&BucketLifecycleSpec { bucket: name.to_owned(), rules })))
            }
            _ => Ok(Observed::Absent),
        }
    }

    async fn create_bucket(&self, change: &Change) -> Result<Applied, ReconcileError> {
        let address = &change.address;
        let after = bucket_spec(change)?;
        let name = after.name.as_str();
        // Made since the plan was read: converged if it is this deployment's, never "created"
        // again (see the module doc).
        if let Head::Ours = self.head(address, name).await? {
            self.made_by_this_deployment(address, name, &after).await?;
            self.converge_bucket(change, None, Made::ByOthers).await?;
            return Ok(Applied::Adopted);
        }
        let tags = after
            .tags
            .iter()
            .map(|(k, v)| s3::types::Tag::builder().key(k).value(v).build())
            .collect::<Result<Vec<_>, _>>()
            .map_err(ReconcileError::of(address, "build bucket tags"))?;
        let mut configuration = s3::types::CreateBucketConfiguration::builder().set_tags(Some(tags));
        // us-east-1 refuses an explicit LocationConstraint; every other region requires one.
        if self.account.region != "us-east-1" {
            configuration = configuration.location_constraint(self.account.region.as_str().into());
        }
        let request = self.client.create_bucket().bucket(name).create_bucket_configuration(configuration.build());
        let applied = match request.send().await {
            Ok(_) => Applied::Done,
            Err(error) if has_code(&error, &["BucketAlreadyOwnedByYou"]) => {
                self.made_by_this_deployment(address, name, &after).await?;
                Applied::Adopted
            }
            Err(error) if has_code(&error, &["BucketAlreadyExists"]) => {
                return Err(ReconcileError::new(
                    Some(address),
                    "create bucket",
                    format!("the name `{name}` is taken by another AWS account; bucket names are global"),
                ));
            }
            Err(error) => return Err(failed(Some(address), "create bucket")(error)),
        };
        let made = if applied == Applied::Done { Made::Now } else { Made::ByOthers };
        self.converge_bucket(change, None, made).await?;
        Ok(applied)
    }

    /// Refuses a bucket found made since the plan was read that does not carry this deployment's
    /// mark: converging it would take it over unreviewed.
    async fn made_by_this_deployment(
        &self,
        address: &Address,
        name: &str,
        after: &BucketSpec,
    ) -> Result<(), ReconcileError> {
        let tagging = self.client.get_bucket_tagging().bucket(name).send().await;
        let live = absent_if(tagging, &["NoSuchTagSet"])
            .map_err(failed(Some(address), "read bucket tags"))?
            .map(|output| visible_tags(output.tag_set().iter().map(|t| (t.key(), t.value()))))
            .unwrap_or_default();
        reconcile_core::ownership::made_meanwhile(&live, &after.tags, address, "create bucket", name)
    }

    /// Makes the bucket's settings and tags match the change, touching only what differs from
    /// `before` (everything, when `before` is unknown), one setting at a time in this order.
    async fn converge_bucket(
        &self,
        change: &Change,
        before: Option<&BucketSpec>,
        made: Made,
    ) -> Result<(), ReconcileError> {
        let address = &change.address;
        let after = bucket_spec(change)?;
        let name = after.name.as_str();
        // What a bucket created a moment ago cannot have yet is left alone; anything else is
        // written wherever it may differ.
        let differs = |field: fn(&BucketSpec) -> bool| made == Made::ByOthers && before.is_none_or(field);

        // ACL grants go before Object Ownership: S3 refuses to disable ACLs while one grants
        // to someone else. A bucket adopted unseen has its ACL read first: resetting one is an
        // administrator's write (`administrators_only`), so the apply role, which may adopt a
        // bucket that declares no expiry, makes it only where there is a grant to take away.
        let grants = match (made, before) {
            (Made::ByOthers, None) => {
                let acl = self.client.get_bucket_acl().bucket(name).send().await;
                !foreign_grants(&acl.map_err(failed(Some(address), "read bucket ACL"))?).is_empty()
            }
            _ => differs(|b| !b.acl_grants.is_empty()),
        };
        if grants {
            self.reset_acl(address, name).await?;
        }
        if differs(|b| b.object_ownership != OWNER_ENFORCED) {
            self.set_object_ownership(address, &after).await?;
        }
        if differs(|b| b.policy.is_some()) {
            self.set_policy(address, &after).await?;
        }
        if differs(|b| b.versioning != VERSIONING_OFF) {
            self.suspend_versioning(address, name).await?;
        }
        if differs(|b| b.replication.is_some()) {
            let response = self.client.delete_bucket_replication().bucket(name).send().await;
            gone_if(response, &["ReplicationConfigurationNotFoundError"])
                .map_err(failed(Some(address), "delete replication"))?;
        }
        if differs(|b| b.website) {
            let response = self.client.delete_bucket_website().bucket(name).send().await;
            gone_if(response, &["NoSuchWebsiteConfiguration"])
                .map_err(failed(Some(address), "turn off website hosting"))?;
        }
        if differs(|b| b.access_logging.is_some()) {
            self.client
                .put_bucket_logging()
                .bucket(name)
                .bucket_logging_status(s3::types::BucketLoggingStatus::builder().build())
                .send()
                .await
                .map_err(failed(Some(address), "turn off access logging"))?;
        }
        if before.is_none_or(|b| b.block_public_access != after.block_public_access) {
            self.set_block_public_access(address, &after).await?;
        }
        if before.is_none_or(|b| b.encryption != after.encryption) {
            self.set_encryption(address, &after).await?;
        }
        // A bucket made now has the tags it was made with.
        if made == Made::ByOthers && before.is_none_or(|b| b.tags != after.tags) {
            self.set_tags(address, &after).await?;
        }
        Ok(())
    }

    async fn reset_acl(&self, address: &Address, name: &str) -> Result<(), ReconcileError> {
        self.client
            .put_bucket_acl()
            .bucket(name)
            .acl(s3::types::BucketCannedAcl::Private)
            .send()
            .await
            .map_err(failed(Some(address), "reset the bucket ACL to private"))?;
        Ok(())
    }

    async fn set_object_ownership(&self, address: &Address, after: &BucketSpec) -> Result<(), ReconcileError> {
        let rule = s3::types::OwnershipControlsRule::builder()
            .object_ownership(after.object_ownership.as_str().into())
            .build()
            .map_err(ReconcileError::of(address, "build Object Ownership"))?;
        let controls = s3::types::OwnershipControls::builder()
            .rules(rule)
            .build()
            .map_err(ReconcileError::of(address, "build Object Ownership"))?;
        self.client
            .put_bucket_ownership_controls()
            .bucket(&after.name)
            .ownership_controls(controls)
            .send()
            .await
            .map_err(failed(Some(address), "set Object Ownership"))?;
        Ok(())
    }

    async fn set_policy(&self, address: &Address, after: &BucketSpec) -> Result<(), ReconcileError> {
        match &after.policy {
            Some(policy) => {
                self.client
                    .put_bucket_policy()
                    .bucket(&after.name)
                    .policy(reconcile_core::json::to_compact(policy))
                    .send()
                    .await
                    .map_err(failed(Some(address), "set bucket policy"))?;
            }
            None => {
                let response = self.client.delete_bucket_policy().bucket(&after.name).send().await;
                gone_if(response, &["NoSuchBucketPolicy"]).map_err(failed(Some(address), "delete bucket policy"))?;
            }
        }
        Ok(())
    }

    /// Versioning once enabled can only be suspended, which stops new versions.
    async fn suspend_versioning(&self, address: &Address, name: &str) -> Result<(), ReconcileError> {
        let configuration =
            s3::types::VersioningConfiguration::builder().status(s3::types::BucketVersioningStatus::Suspended).build();
        self.client
            .put_bucket_versioning()
            .bucket(name)
            .versioning_configuration(configuration)
            .send()
            .await
            .map_err(failed(Some(address), "suspend versioning"))?;
        Ok(())
    }

    async fn set_block_public_access(&self, address: &Address, after: &BucketSpec) -> Result<(), ReconcileError> {
        let flags = after.block_public_access;
        let config = s3::types::PublicAccessBlockConfiguration::builder()
            .block_public_acls(flags.block_public_acls)
            .block_public_policy(flags.block_public_policy)
            .ignore_public_acls(flags.ignore_public_acls)
            .restrict_public_buckets(flags.restrict_public_buckets)
            .build();
        self.client
            .put_public_access_block()
            .bucket(&after.name)
            .public_access_block_configuration(config)
            .send()
            .await
            .map_err(failed(Some(address), "set Block Public Access"))?;
        Ok(())
    }

    /// SSE-S3, the only default encryption reconcile sets.
    async fn set_encryption(&self, address: &Address, after: &BucketSpec) -> Result<(), ReconcileError> {
        if after.encryption != SSE_S3 {
            return Err(ReconcileError::new(
                Some(address),
                "set default encryption",
                format!("reconcile sets only {SSE_S3} (SSE-S3), not `{}`", after.encryption),
            ));
        }
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
            .bucket(&after.name)
            .server_side_encryption_configuration(config)
            .send()
            .await
            .map_err(failed(Some(address), "set default encryption"))?;
        Ok(())
    }

    /// S3 tagging replaces the whole set.
    async fn set_tags(&self, address: &Address, after: &BucketSpec) -> Result<(), ReconcileError> {
        if after.tags.is_empty() {
            self.client
                .delete_bucket_tagging()
                .bucket(&after.name)
                .send()
                .await
                .map_err(failed(Some(address), "remove bucket tags"))?;
            return Ok(());
        }
        let tag_set = after
            .tags
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
            .bucket(&after.name)
            .tagging(tagging)
            .send()
            .await
            .map_err(failed(Some(address), "set bucket tags"))?;
        Ok(())
    }

    async fn put_lifecycle(&self, change: &Change) -> Result<Applied, ReconcileError> {
        let address = &change.address;
        let after: BucketLifecycleSpec = reconcile_core::spec::after(change)?;
        let rules = after
            .rules
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
                .bucket(&after.bucket)
                .lifecycle_configuration(configuration.clone())
                .send()
        };
        after_create(request, &["NoSuchBucket"]).await.map_err(failed(Some(address), "put lifecycle configuration"))?;
        Ok(Applied::Done)
    }

    /// Every version and delete marker in bucket `name`, paginated to the end.
    async fn versions(&self, address: &Address, name: &str) -> Result<Vec<Version>, ReconcileError> {
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
    async fn delete_bucket(&self, change: &Change) -> Result<Applied, ReconcileError> {
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

    async fn delete_lifecycle(&self, change: &Change) -> Result<Applied, ReconcileError> {
        let address = &change.address;
        let before = reconcile_core::spec::before::<BucketLifecycleSpec>(change)?.ok_or_else(|| {
            ReconcileError::new(Some(address), "delete lifecycle configuration", "the change has no observed fields")
        })?;
        let response = self.client.delete_bucket_lifecycle().bucket(&before.bucket).send().await;
        gone_if(response, &["NoSuchLifecycleConfiguration", "NoSuchBucket"])
            .map_err(failed(Some(address), "delete lifecycle configuration"))?;
        Ok(Applied::Done)
    }
}

impl S3Reconciler {
    /// S103 when the live bucket policy or ACL lets anyone outside the account in.
    fn foreign_access(
        &self,
        address: &Address,
        fields: &serde_json::Map<String, serde_json::Value>,
    ) -> Option<Finding> {
        let policy = fields.get("policy").unwrap_or(&serde_json::Value::Null);
        let mut foreign = reconcile_core::policy::foreign_principals(policy, &self.account.id);
        let grants = fields.get("acl_grants").and_then(serde_json::Value::as_array).into_iter().flatten();
        // Any grant left is to someone other than the owner: a group (everyone, any AWS user,
        // the log delivery group) or another canonical user.
        foreign.extend(grants.filter_map(serde_json::Value::as_str).map(|grant| format!("ACL grant {grant}")));
        (!foreign.is_empty()).then(|| Finding {
            code: FOREIGN_BUCKET_ACCESS.to_owned(),
            severity: Severity::Error,
            address: Some(address.clone()),
            message: format!(
                "the bucket grants access outside account {} to {}: the compiler cache feeds every nightly build; {}",
                self.account.id,
                foreign.join(", "),
                if self.destroy.is_some() {
                    "destroy deletes them with the bucket"
                } else {
                    "apply removes the grants"
                }
            ),
            overridden_by: None,
        })
    }
}

/// The change's bucket spec, if it asks only for what apply can do: the settings reconcile
/// manages as off can be turned off, never on. Checked before any call.
fn bucket_spec(change: &Change) -> Result<BucketSpec, ReconcileError> {
    let after: BucketSpec = reconcile_core::spec::after(change)?;
    let address = &change.address;
    if after.policy.is_some()
        || after.object_ownership != OWNER_ENFORCED
        || after.versioning != VERSIONING_OFF
        || after.replication.is_some()
        || after.website
        || after.access_logging.is_some()
        || !after.acl_grants.is_empty()
    {
        return Err(ReconcileError::new(
            Some(address),
            "read the change's desired fields",
            "it sets a bucket setting reconcile only ever turns off",
        )
        .with_kind(reconcile_core::ErrorKind::InvalidChange));
    }
    Ok(after)
}

/// The bucket's default encryption algorithm, if it has one.
fn default_encryption(output: &s3::operation::get_bucket_encryption::GetBucketEncryptionOutput) -> Option<String> {
    let rule = output.server_side_encryption_configuration()?.rules().first()?;
    Some(rule.apply_server_side_encryption_by_default()?.sse_algorithm().as_str().to_owned())
}

/// Block Public Access as S3 answers it, a flag it leaves out being off.
fn public_access(config: &s3::types::PublicAccessBlockConfiguration) -> BlockPublicAccess {
    BlockPublicAccess {
        block_public_acls: config.block_public_acls().unwrap_or(false),
        block_public_policy: config.block_public_policy().unwrap_or(false),
        ignore_public_acls: config.ignore_public_acls().unwrap_or(false),
        restrict_public_buckets: config.restrict_public_buckets().unwrap_or(false),
    }
}

/// Replication as a plan shows it: the role, and where its rules copy to, sorted.
fn replication_of(config: &s3::types::ReplicationConfiguration) -> serde_json::Value {
    let mut destinations: Vec<&str> =
        config.rules().iter().filter_map(|r| r.destination().map(|d| d.bucket())).collect();
    destinations.sort_unstable();
    serde_json::json!({ "role": config.role(), "destinations": destinations })
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
    use aws_smithy_types::error::ErrorMetadata;
    use reconcile_core::json::object;
    use reconcile_core::reconciler::Silent;
    use serde_json::{Map, json};

    /// What a real S3 error carries: its code.
    fn code(code: &str) -> ErrorMetadata {
        ErrorMetadata::builder().code(code).build()
    }

    fn reconciler(rules: &[&Rule]) -> S3Reconciler {
        let client = mock_client!(aws_sdk_s3, RuleMode::MatchAny, rules);
        S3Reconciler::new(client, Account::new("123456789012", "eu-west-1"))
    }

    fn create_change() -> Change {
        Change {
            address: Address::new(crate::BUCKET, "sccache"),
            action: Action::Create,
            before: None,
            after: Some(object(json!({
                "name": "rocm-bake-sccache-123456789012",
                "block_public_access": BlockPublicAccess::all(true),
                "encryption": SSE_S3,
                "tags": { reconcile_core::ownership::MARK_KEY: "rocm-bake" },
                "policy": null,
                "object_ownership": OWNER_ENFORCED,
                "acl_grants": [],
                "versioning": VERSIONING_OFF,
                "replication": null,
                "website": false,
                "access_logging": null,
            }))),
            depends_on: vec![],
        }
    }

    /// The writes that turn off, on a bucket someone else made, everything reconcile keeps off.
    fn everything_off() -> Vec<Rule> {
        vec![
            // Only ever the canned `private` ACL, sent as `x-amz-acl`: a reset grants no one.
            mock!(s3::Client::put_bucket_acl)
                .match_requests(|request| {
                    request.acl() == Some(&s3::types::BucketCannedAcl::Private)
                        && request.access_control_policy().is_none()
                        && request.grant_read().is_none()
                        && request.grant_write().is_none()
                        && request.grant_full_control().is_none()
                })
                .then_output(|| s3::operation::put_bucket_acl::PutBucketAclOutput::builder().build()),
            mock!(s3::Client::put_bucket_ownership_controls).then_output(|| {
                s3::operation::put_bucket_ownership_controls::PutBucketOwnershipControlsOutput::builder().build()
            }),
            mock!(s3::Client::delete_bucket_policy)
                .then_output(|| s3::operation::delete_bucket_policy::DeleteBucketPolicyOutput::builder().build()),
            mock!(s3::Client::put_bucket_versioning)
                .then_output(|| s3::operation::put_bucket_versioning::PutBucketVersioningOutput::builder().build()),
            mock!(s3::Client::delete_bucket_replication).then_output(|| {
                s3::operation::delete_bucket_replication::DeleteBucketReplicationOutput::builder().build()
            }),
            mock!(s3::Client::delete_bucket_website)
                .then_output(|| s3::operation::delete_bucket_website::DeleteBucketWebsiteOutput::builder().build()),
            mock!(s3::Client::put_bucket_logging)
                .then_output(|| s3::operation::put_bucket_logging::PutBucketLoggingOutput::builder().build()),
        ]
    }

    /// The writes that bring a bucket's settings to `create_change()`: Block Public Access,
    /// encryption, and removing tags (it declares none).
    fn settings_writes() -> [Rule; 3] {
        [
            mock!(s3::Client::put_public_access_block)
                .then_output(|| s3::operation::put_public_access_block::PutPublicAccessBlockOutput::builder().build()),
            mock!(s3::Client::put_bucket_encryption)
                .then_output(|| s3::operation::put_bucket_encryption::PutBucketEncryptionOutput::builder().build()),
            mock!(s3::Client::put_bucket_tagging)
                .then_output(|| s3::operation::put_bucket_tagging::PutBucketTaggingOutput::builder().build()),
        ]
    }

    /// A bucket's tags as `GetBucketTagging` answers, the mark of `deployment` among them.
    fn tagged(deployment: Option<&'static str>) -> Rule {
        mock!(s3::Client::get_bucket_tagging).then_output(move || {
            let tags = deployment.map(|value| {
                s3::types::Tag::builder().key(reconcile_core::ownership::MARK_KEY).value(value).build().unwrap()
            });
            s3::operation::get_bucket_tagging::GetBucketTaggingOutput::builder()
                .set_tag_set(Some(tags.into_iter().collect()))
                .build()
                .unwrap()
        })
    }

    fn missing() -> Rule {
        mock!(s3::Client::head_bucket)
            .then_error(|| HeadBucketError::NotFound(NotFound::builder().meta(code("NotFound")).build()))
    }

    #[test]
    fn a_buckets_expiry_and_an_acl_reset_are_an_administrators() {
        let reconciler = reconciler(&[]);
        let made = create_change();
        assert_eq!(reconciler.administrators_only(&made), None, "a new bucket has no grant to reset");
        let mut opened = create_change();
        opened.action = Action::Update;
        opened.before = made.after.clone();
        assert_eq!(reconciler.administrators_only(&opened), None, "encryption, tags and the like are the apply role's");
        opened.before.as_mut().unwrap().insert("acl_grants".into(), json!(["AllUsers READ"]));
        assert_eq!(
            reconciler.administrators_only(&opened),
            Some("an ACL that grants someone else: who reaches the bucket")
        );
        for action in [Action::Create, Action::Update, Action::Delete] {
            let expiry =
                Change { address: Address::new(crate::BUCKET_LIFECYCLE, "sccache"), action, ..create_change() };
            assert_eq!(reconciler.administrators_only(&expiry), Some("a bucket's expiry, which deletes its objects"));
        }
    }

    #[tokio::test]
    async fn a_name_owned_by_another_account_is_a_clear_error() {
        let head = missing();
        let create = mock!(s3::Client::create_bucket).then_error(|| {
            CreateBucketError::BucketAlreadyExists(
                BucketAlreadyExists::builder().meta(code("BucketAlreadyExists")).build(),
            )
        });
        let error = reconciler(&[&head, &create]).apply(&create_change(), &Silent).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "s3_bucket.sccache: failed to create bucket: the name `rocm-bake-sccache-123456789012` is taken by another \
             AWS account; bucket names are global"
        );
    }

    #[tokio::test]
    async fn outside_us_east_1_the_bucket_is_created_with_its_location_constraint_and_its_mark() {
        let head = missing();
        let create = mock!(s3::Client::create_bucket)
            .match_requests(|request| {
                let configuration = request.create_bucket_configuration();
                let marked = configuration.is_some_and(|c| {
                    c.tags().iter().any(|t| t.key() == reconcile_core::ownership::MARK_KEY && t.value() == "rocm-bake")
                });
                configuration.and_then(|c| c.location_constraint()).map(|l| l.as_str()) == Some("eu-west-1") && marked
            })
            .then_output(|| s3::operation::create_bucket::CreateBucketOutput::builder().build());
        let [block, encryption, tagging] = settings_writes();
        reconciler(&[&head, &create, &block, &encryption, &tagging]).apply(&create_change(), &Silent).await.unwrap();
        assert_eq!(create.num_calls(), 1);
        assert_eq!((block.num_calls(), encryption.num_calls()), (1, 1));
        assert_eq!(tagging.num_calls(), 0, "made with its tags: nothing left to tag");
    }

    #[tokio::test]
    async fn a_bucket_this_account_may_not_read_is_reported_as_such() {
        let head = mock!(s3::Client::head_bucket).then_http_response(|| {
            aws_smithy_runtime_api::http::Response::new(
                aws_smithy_runtime_api::http::StatusCode::try_from(403).unwrap(),
                SdkBody::empty(),
            )
        });
        let desired = DesiredResource::new(Address::new(crate::BUCKET, "sccache"), "someone-elses-bucket", Map::new());
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
            address: Address::new(crate::BUCKET_LIFECYCLE, "sccache"),
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
        // Its ACL grants everyone reading, then only its owner's full control: read first, and
        // reset only when it grants someone (an ACL write is an administrator's).
        for (everyone, acl_writes) in [(Some("READ"), 1), (None, 0)] {
            let head = missing();
            let create = mock!(s3::Client::create_bucket).then_error(|| {
                CreateBucketError::BucketAlreadyOwnedByYou(
                    BucketAlreadyOwnedByYou::builder().meta(code("BucketAlreadyOwnedByYou")).build(),
                )
            });
            let [block, encryption, untag] = settings_writes();
            let off = everything_off();
            let acl = mock!(s3::Client::get_bucket_acl).then_output(move || acl_granting(everyone));
            let ours = tagged(Some("rocm-bake"));
            let mut rules = vec![&head, &create, &block, &encryption, &untag, &acl, &ours];
            rules.extend(off.iter());
            let applied = reconciler(&rules).apply(&create_change(), &Silent).await.unwrap();
            assert_eq!(applied, Applied::Adopted);
            assert_eq!((block.num_calls(), encryption.num_calls(), untag.num_calls()), (1, 1, 1), "converged");
            assert_eq!(acl.num_calls(), 1);
            // `off[0]` is the ACL reset; made by someone else, so everything else reconcile
            // keeps off is turned off, once each.
            assert_eq!(off[0].num_calls(), acl_writes, "{everyone:?}");
            assert!(off[1..].iter().all(|rule| rule.num_calls() == 1));
        }
    }

    #[tokio::test]
    async fn a_bucket_made_meanwhile_without_this_deployments_mark_is_not_taken_over() {
        use aws_sdk_s3::types::error::BucketAlreadyOwnedByYou;
        for mark in [None, Some("team-x")] {
            let head = missing();
            let create = mock!(s3::Client::create_bucket).then_error(|| {
                CreateBucketError::BucketAlreadyOwnedByYou(
                    BucketAlreadyOwnedByYou::builder().meta(code("BucketAlreadyOwnedByYou")).build(),
                )
            });
            let theirs = tagged(mark);
            let [block, encryption, tagging] = settings_writes();
            let error = reconciler(&[&head, &create, &theirs, &block, &encryption, &tagging])
                .apply(&create_change(), &Silent)
                .await
                .unwrap_err();
            assert!(
                error.to_string().contains("was made since the plan was read, without this deployment's mark"),
                "{error}"
            );
            assert_eq!(error.kind, reconcile_core::ErrorKind::InvalidChange);
            assert_eq!((block.num_calls(), encryption.num_calls(), tagging.num_calls()), (0, 0, 0), "{mark:?}");
        }
    }

    #[tokio::test]
    async fn an_update_resets_the_acl_only_when_it_grants_someone() {
        for (grants, resets) in [(json!(["http://acs.amazonaws.com/groups/global/AllUsers READ"]), 1), (json!([]), 0)] {
            let put = mock!(s3::Client::put_bucket_acl)
                .then_output(|| s3::operation::put_bucket_acl::PutBucketAclOutput::builder().build());
            let mut change = create_change();
            change.action = Action::Update;
            change.before = change.after.clone();
            change.before.as_mut().unwrap().insert("acl_grants".into(), grants);
            reconciler(&[&put]).apply(&change, &Silent).await.unwrap();
            assert_eq!(put.num_calls(), resets);
        }
    }

    #[test]
    fn only_the_owners_full_control_is_not_a_foreign_grant() {
        use s3::types::{Grant, Grantee, Owner, Permission, Type};
        let user = |id: &str| Grantee::builder().r#type(Type::CanonicalUser).id(id).build().unwrap();
        let grant =
            |grantee: Grantee, permission: Permission| Grant::builder().grantee(grantee).permission(permission).build();
        let acl = s3::operation::get_bucket_acl::GetBucketAclOutput::builder()
            .owner(Owner::builder().id("owner").build())
            .grants(grant(user("owner"), Permission::FullControl))
            .grants(grant(user("owner"), Permission::Read))
            .grants(grant(user("another-account"), Permission::FullControl))
            .grants(grant(user("another-account"), Permission::Read))
            .build();
        assert_eq!(
            foreign_grants(&acl),
            ["another-account FULL_CONTROL", "another-account READ", "owner READ"],
            "sorted; only the owner's own full control left out"
        );
        assert_eq!(
            foreign_grants(&acl_granting(Some("FULL_CONTROL"))),
            ["http://acs.amazonaws.com/groups/global/AllUsers FULL_CONTROL"]
        );
    }

    /// A bucket ACL: its owner's full control, and everyone's `everyone` permission if any.
    fn acl_granting(everyone: Option<&str>) -> s3::operation::get_bucket_acl::GetBucketAclOutput {
        use s3::types::{Grant, Grantee, Owner, Permission, Type};
        let owner = Grantee::builder().r#type(Type::CanonicalUser).id("owner").build().unwrap();
        let mut acl = s3::operation::get_bucket_acl::GetBucketAclOutput::builder()
            .owner(Owner::builder().id("owner").build())
            .grants(Grant::builder().grantee(owner).permission(Permission::FullControl).build());
        if let Some(permission) = everyone {
            let all = Grantee::builder()
                .r#type(Type::Group)
                .uri("http://acs.amazonaws.com/groups/global/AllUsers")
                .build()
                .unwrap();
            acl = acl.grants(Grant::builder().grantee(all).permission(Permission::from(permission)).build());
        }
        acl.build()
    }

    #[tokio::test]
    async fn a_change_missing_a_field_fails_naming_it_and_calls_nothing() {
        let head = missing();
        let [block, encryption, untag] = settings_writes();
        let reconciler = reconciler(&[&head, &block, &encryption, &untag]);
        let mut change = create_change();
        change.after.as_mut().unwrap().remove("block_public_access");
        let error = reconciler.apply(&change, &Silent).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "s3_bucket.sccache: failed to read the change's desired fields: missing field `block_public_access`"
        );
        let lifecycle = Change {
            address: Address::new(crate::BUCKET_LIFECYCLE, "sccache"),
            after: Some(object(json!({ "rules": [] }))),
            ..create_change()
        };
        let error = reconciler.apply(&lifecycle, &Silent).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "s3_bucket_lifecycle.sccache: failed to read the change's desired fields: missing field `bucket`"
        );
        assert_eq!((head.num_calls(), block.num_calls(), encryption.num_calls()), (0, 0, 0));
    }
}
