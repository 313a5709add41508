//! The S3 reconciler: `s3_bucket.<key>` (name, Block Public Access, default encryption, tags)
//! and `s3_bucket_lifecycle.<key>` (the lifecycle rules, compared as a set).
//!
//! A bucket is made with its tags, this deployment's mark among them, in the one `CreateBucket`
//! (`CreateBucketConfiguration.Tags`), so an apply killed right after leaves a bucket that is
//! recognisably its own. Creation first asks `HeadBucket`, because in us-east-1 a second
//! `CreateBucket` succeeds silently (and resets the bucket's ACLs): one found made since the plan
//! was read is converged when it carries this deployment's mark, and refused otherwise. A bucket
//! is deleted only by `destroy`.

mod bucket;
mod delete;
mod describe;
mod inventory;
mod lifecycle;
pub mod lock;
mod section;
mod spec;
pub mod storage;

use std::collections::BTreeMap;

use async_trait::async_trait;
use aws_sdk_s3 as s3;
use reconcile_aws::{Parallelism, absent_if, failed};
use reconcile_core::plan::{Action, Change, DesiredResource, Impact, Observed};
use reconcile_core::reconciler::{Assessment, Observations};
use reconcile_core::{Account, Address, Applied, Destroy, Progress, ReconcileError, Reconciler, ResourceKind};

use bucket::{BucketSpec, bucket_name, grants_someone};
use delete::Version;
pub use describe::{DESCRIPTION, client, reconciler};
pub use lifecycle::{desired_rule, expiry_change, observed_rule};
pub use section::{APPLY_LOCK_KEY, Bucket, CLAIM, S3, S3LifecycleRule, declared};
pub use spec::desired;

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
pub(crate) enum Made {
    Now,
    ByOthers,
}

/// Whether a bucket of that name answers, and where.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Head {
    Missing,
    Ours,
}

#[async_trait]
impl Reconciler for S3Reconciler {
    fn fields(&self) -> &'static [reconcile_core::fields::Fields] {
        crate::describe::DESCRIPTION.fields
    }

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
}

#[cfg(test)]
mod tests {
    //! Error paths the emulator cannot produce, against a mocked client.

    use super::*;
    use crate::bucket::{BlockPublicAccess, OWNER_ENFORCED, SSE_S3, VERSIONING_OFF, foreign_grants};
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
