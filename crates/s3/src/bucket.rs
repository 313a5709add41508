//! `s3_bucket.<key>`: the cache bucket's settings and tags. Every fact about one of its fields is
//! stated here: its row in [`FIELDS`], its place in the spec, how S3's answers give it, how create
//! and the setters write it, and how the Terraform view shows it; desired.toml's `[s3]` section
//! (section.rs) is the only other file that names one. The provider splits a bucket into one
//! resource per configuration, and so does the mapping:
//!
//! | reconcile | provider resource | arguments |
//! |---|---|---|
//! | `s3_bucket.<key>` | `aws_s3_bucket.bucket["<key>"]` | `bucket`, `force_destroy` (false), `tags`, `tags_all`; `grant` (ACL grants beyond the owner's, as `{id, permissions}`) and `replication_configuration`, the provider's deprecated in-bucket forms, only while set |
//! | its `block_public_access` | `aws_s3_bucket_public_access_block.bucket["<key>"]` | `bucket`, the four settings |
//! | its `encryption` (unless `none`) | `aws_s3_bucket_server_side_encryption_configuration.bucket["<key>"]` | `bucket`, `rule[0].apply_server_side_encryption_by_default[0].sse_algorithm` |
//! | its `object_ownership` | `aws_s3_bucket_ownership_controls.bucket["<key>"]` | `bucket`, `rule[0].object_ownership` |
//! | its `versioning` | `aws_s3_bucket_versioning.bucket["<key>"]` | `bucket`, `versioning_configuration[0].status` (`Off` is `Disabled`) |
//! | its `policy` (only while one is set) | `aws_s3_bucket_policy.bucket["<key>"]` | `bucket`, `policy` (JSON string) |
//! | its `access_logging` (only while on) | `aws_s3_bucket_logging.bucket["<key>"]` | `bucket`, `target_bucket`, `target_prefix` |
//! | its `website` (only while on) | `aws_s3_bucket_website_configuration.bucket["<key>"]` | `bucket` |
//!
//! ACL grants and replication, which reconcile only ever clears, are mapped onto the bucket's
//! deprecated arguments only while set, so that drift in them shows in the bucket's change.

use std::collections::BTreeMap;

use aws_sdk_s3 as s3;
use reconcile_aws::{absent_if, failed, gone_if, has_code, visible_tags};
use reconcile_core::fields::{Field, Fields};
use reconcile_core::plan::{Change, Finding, Observed, Severity};
use reconcile_core::spec::attributes;
use reconcile_core::terraform::{Provider, ProviderResource, policy_string, tags};
use reconcile_core::{Account, Address, Applied, Desired, ReconcileError};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::{FOREIGN_BUCKET_ACCESS, Head, Made, S3Reconciler};

/// A bucket's fields: its name names it (Terraform's `bucket`); each setting is its own call.
pub const FIELDS: Fields = Fields {
    kind: crate::BUCKET,
    fields: &[
        Field::identity("name").in_terraform("bucket"),
        Field::in_place("block_public_access").set_by(&["PutBucketPublicAccessBlock", "DeleteBucketPublicAccessBlock"]),
        Field::in_place("encryption").set_by(&["PutBucketEncryption", "DeleteBucketEncryption"]),
        Field::in_place("tags").set_by(&["PutBucketTagging", "DeleteBucketTagging"]),
        Field::in_place("policy").set_by(&["PutBucketPolicy", "DeleteBucketPolicy"]),
        Field::in_place("object_ownership").set_by(&["PutBucketOwnershipControls", "DeleteBucketOwnershipControls"]),
        Field::in_place("acl_grants").set_by(&["PutBucketAcl"]),
        Field::in_place("versioning").set_by(&["PutBucketVersioning"]),
        Field::in_place("replication").set_by(&["PutBucketReplication", "DeleteBucketReplication"]),
        Field::in_place("website").set_by(&["PutBucketWebsite", "DeleteBucketWebsite"]),
        Field::in_place("access_logging").set_by(&["PutBucketLogging"]),
    ],
};

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

/// What `import --generate` reads of a bucket desired.toml does not declare (inventory.rs), and
/// section.rs's `generate` reads back as this type: the bucket as the plan reads it (the mark
/// taken out of its tags) and its lifecycle rules in canonical form (`None` when it has no
/// lifecycle configuration). The inventory's `Found::live` is its map.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct FoundBucket {
    #[serde(flatten)]
    pub spec: BucketSpec,
    pub lifecycle_rules: Option<Vec<Value>>,
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

impl BucketSpec {
    /// What desired.toml asks of `bucket`, named `name` in this account, with this deployment's
    /// mark among its tags.
    pub(crate) fn declared(bucket: &crate::Bucket, name: String, desired: &Desired) -> BucketSpec {
        BucketSpec {
            name,
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
        }
    }
}

/// The name of the bucket a change deletes, as observed.
pub(crate) fn bucket_name(change: &Change) -> Result<String, ReconcileError> {
    let before = reconcile_core::spec::before::<BucketSpec>(change)?;
    before
        .map(|b| b.name)
        .ok_or_else(|| ReconcileError::new(Some(&change.address), "delete bucket", "the change has no observed fields"))
}

/// A bucket ACL's grants beyond its owner's full control, as `<grantee> <permission>`, sorted.
pub(crate) fn foreign_grants(acl: &s3::operation::get_bucket_acl::GetBucketAclOutput) -> Vec<String> {
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
pub(crate) fn grants_someone(change: &Change) -> bool {
    let grants = change.before.as_ref().and_then(|before| before.get("acl_grants"));
    grants.and_then(serde_json::Value::as_array).is_some_and(|grants| !grants.is_empty())
}

/// The change's bucket spec, if it asks only for what apply can do: the settings reconcile
/// manages as off can be turned off, never on. Checked before any call.
pub(crate) fn bucket_spec(change: &Change) -> Result<BucketSpec, ReconcileError> {
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
pub(crate) fn default_encryption(
    output: &s3::operation::get_bucket_encryption::GetBucketEncryptionOutput,
) -> Option<String> {
    let rule = output.server_side_encryption_configuration()?.rules().first()?;
    Some(rule.apply_server_side_encryption_by_default()?.sse_algorithm().as_str().to_owned())
}

/// Block Public Access as S3 answers it, a flag it leaves out being off.
pub(crate) fn public_access(config: &s3::types::PublicAccessBlockConfiguration) -> BlockPublicAccess {
    BlockPublicAccess {
        block_public_acls: config.block_public_acls().unwrap_or(false),
        block_public_policy: config.block_public_policy().unwrap_or(false),
        ignore_public_acls: config.ignore_public_acls().unwrap_or(false),
        restrict_public_buckets: config.restrict_public_buckets().unwrap_or(false),
    }
}

/// Replication as a plan shows it: the role, and where its rules copy to, sorted.
pub(crate) fn replication_of(config: &s3::types::ReplicationConfiguration) -> serde_json::Value {
    let mut destinations: Vec<&str> =
        config.rules().iter().filter_map(|r| r.destination().map(|d| d.bucket())).collect();
    destinations.sort_unstable();
    serde_json::json!({ "role": config.role(), "destinations": destinations })
}

impl S3Reconciler {
    pub(crate) async fn observe_bucket(&self, address: &Address, name: &str) -> Result<Observed, ReconcileError> {
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

    pub(crate) async fn create_bucket(&self, change: &Change) -> Result<Applied, ReconcileError> {
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
    pub(crate) async fn made_by_this_deployment(
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
    pub(crate) async fn converge_bucket(
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

    pub(crate) async fn reset_acl(&self, address: &Address, name: &str) -> Result<(), ReconcileError> {
        self.client
            .put_bucket_acl()
            .bucket(name)
            .acl(s3::types::BucketCannedAcl::Private)
            .send()
            .await
            .map_err(failed(Some(address), "reset the bucket ACL to private"))?;
        Ok(())
    }

    pub(crate) async fn set_object_ownership(
        &self,
        address: &Address,
        after: &BucketSpec,
    ) -> Result<(), ReconcileError> {
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

    pub(crate) async fn set_policy(&self, address: &Address, after: &BucketSpec) -> Result<(), ReconcileError> {
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
    pub(crate) async fn suspend_versioning(&self, address: &Address, name: &str) -> Result<(), ReconcileError> {
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

    pub(crate) async fn set_block_public_access(
        &self,
        address: &Address,
        after: &BucketSpec,
    ) -> Result<(), ReconcileError> {
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
    pub(crate) async fn set_encryption(&self, address: &Address, after: &BucketSpec) -> Result<(), ReconcileError> {
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
    pub(crate) async fn set_tags(&self, address: &Address, after: &BucketSpec) -> Result<(), ReconcileError> {
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

    /// S103 when the live bucket policy or ACL lets anyone outside the account in.
    pub(crate) fn foreign_access(
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

pub(crate) const TERRAFORM_ADDRESS: &[(&str, &str, &str)] = &[("bucket", "aws_s3_bucket.bucket", "id")];

/// One of the bucket's configurations, a resource of its own whose `id` is the bucket's name.
pub(crate) fn part(kind: &'static str, values: Value) -> ProviderResource {
    let id = values.get("bucket").cloned().unwrap_or(Value::Null);
    ProviderResource::new(Provider::Aws, kind, "bucket", values)
        .referring(TERRAFORM_ADDRESS)
        .computing(json!({ "id": id }))
}

pub(crate) fn terraform(account: &Account, _key: &str, fields: &Map<String, Value>) -> Vec<ProviderResource> {
    let name = fields.get("name").cloned().unwrap_or(Value::Null);
    let bucket_name = name.as_str().unwrap_or_default();
    let field = |key: &str| fields.get(key).cloned().unwrap_or(Value::Null);
    let values = bucket_values(&name, fields);
    let domain = reconcile_aws::dns_suffix(&account.partition);
    let mut resources = vec![
        ProviderResource::new(Provider::Aws, "aws_s3_bucket", "bucket", values)
            .forcing_new(FIELDS.forcing_new(&[]))
            .computing(json!({
                "arn": format!("arn:{}:s3:::{bucket_name}", account.partition),
                "id": name,
                "bucket_domain_name": format!("{bucket_name}.s3.{domain}"),
                "bucket_regional_domain_name": format!("{bucket_name}.s3.{}.{domain}", account.region),
                "region": account.region,
            })),
    ];
    if let Some(Value::Object(block)) = fields.get("block_public_access") {
        let mut values = block.clone();
        values.insert("bucket".to_owned(), name.clone());
        resources.push(part("aws_s3_bucket_public_access_block", Value::Object(values)));
    }
    match fields.get("encryption").and_then(Value::as_str) {
        Some("none") | None => {}
        Some(algorithm) => resources.push(part(
            "aws_s3_bucket_server_side_encryption_configuration",
            json!({
                "bucket": name,
                "rule": [{
                    "apply_server_side_encryption_by_default": [{ "sse_algorithm": algorithm, "kms_master_key_id": "" }],
                    "bucket_key_enabled": false,
                }],
            }),
        )),
    }
    if fields.contains_key("object_ownership") {
        resources.push(part(
            "aws_s3_bucket_ownership_controls",
            json!({ "bucket": name, "rule": [{ "object_ownership": field("object_ownership") }] }),
        ));
    }
    if let Some(versioning) = fields.get("versioning").and_then(Value::as_str) {
        let status = if versioning == VERSIONING_OFF { "Disabled" } else { versioning };
        resources.push(part(
            "aws_s3_bucket_versioning",
            json!({ "bucket": name, "versioning_configuration": [{ "status": status, "mfa_delete": "" }] }),
        ));
    }
    if let Some(policy) = fields.get("policy").filter(|p| !p.is_null()) {
        resources.push(part("aws_s3_bucket_policy", json!({ "bucket": name, "policy": policy_string(policy) })));
    }
    if let Some(logging) = fields.get("access_logging").and_then(Value::as_str) {
        let (target, prefix) = logging.split_once('/').unwrap_or((logging, ""));
        resources.push(part(
            "aws_s3_bucket_logging",
            json!({ "bucket": name, "target_bucket": target, "target_prefix": prefix }),
        ));
    }
    if fields.get("website") == Some(&Value::Bool(true)) {
        resources.push(part("aws_s3_bucket_website_configuration", json!({ "bucket": name })));
    }
    resources
}

/// `aws_s3_bucket`'s own arguments: its name, tags, grants and replication.
pub(crate) fn bucket_values(name: &Value, fields: &Map<String, Value>) -> Value {
    let (tags, tags_all) = tags(fields);
    let mut values = json!({ "bucket": name, "force_destroy": false, "tags": tags, "tags_all": tags_all });
    let grants: Vec<Value> = fields
        .get("acl_grants")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|grant| {
            let (grantee, permission) = grant.rsplit_once(' ').unwrap_or((grant, ""));
            json!({ "id": grantee, "permissions": [permission] })
        })
        .collect();
    if !grants.is_empty() {
        values["grant"] = Value::Array(grants);
    }
    if let Some(replication) = fields.get("replication").filter(|r| !r.is_null()) {
        values["replication_configuration"] = json!([replication]);
    }
    values
}
