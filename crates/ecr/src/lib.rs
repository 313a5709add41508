//! The ECR reconciler: `ecr_repository.<name>` (tag mutability, scan on push, tags) and
//! `ecr_lifecycle_policy.<name>` (the policy document, compared semantically).
//!
//! It creates missing repositories (marked as this deployment's in the same call), corrects their
//! settings and tags, and puts lifecycle policies. It deletes a repository only when pruning
//! ([`Prune`], `--prune`), and then only one desired.toml does not declare that carries this
//! deployment's mark, or when destroying ([`Destroy`]: a declared one, counting its images
//! first); its images go with it only with `--force-delete-images`.
//!
//! Every plan reads the lifecycle policy of every repository in the account, declared or not,
//! and reports any that can expire tagged images (D103); for every policy it creates or
//! changes, it reads the repository's images and says what the policy will expire.

mod describe;
pub mod expiry;
mod generate;
mod impact;
mod lifecycle;
mod price;
mod repository;
mod runner;
mod section;
mod spec;
mod undeclared;
pub mod usage;

use std::collections::{BTreeMap, BTreeSet};

use crate::expiry::{Expiry, Image, Policy};
use async_trait::async_trait;
use aws_sdk_ecr as ecr;
use reconcile_aws::{Parallelism, absent_if, failed};
use reconcile_core::plan::{Action, Change, DesiredResource, Finding, Impact, Observed, Severity};
use reconcile_core::reconciler::{Assessment, Observations};
use reconcile_core::{Account, Address, Applied, Destroy, Progress, ReconcileError, Reconciler, ResourceKind};

pub use describe::{DESCRIPTION, ecr_reconciler, reconciler};
use lifecycle::{LifecyclePolicySpec, live_tagged_expiry};
pub use lifecycle::{canonical_policy, canonical_policy_text};
pub use price::{CLAIM as USAGE_CLAIM, PRICE_PER_GB_MONTH, price_per_gb_month};
use repository::{RepositorySpec, RepositoryState};
pub use runner::creatable;
pub use section::{
    AGE_BASED_UNTAGGED_EXPIRY, ALLOW_TAGGED_EXPIRY, CLAIM, Ecr, EcrRepository, EncryptionType, FEW_UNTAGGED_KEPT,
    LifecyclePolicy, TAGGED_EXPIRY, TagMutability, UNTAGGED_NEVER_EXPIRE, declared,
};
pub use spec::desired;
use undeclared::{Undeclared, marked_undeclared};

/// Finding code: a repository desired.toml does not declare. Stable; never reused.
pub const UNDECLARED_REPOSITORY: &str = "D101";
/// Finding code: a repository desired.toml does not declare, with no lifecycle policy at all,
/// so untagged images accumulate without bound. Stable; never reused.
pub const UNDECLARED_REPOSITORY_WITHOUT_POLICY: &str = "D102";

/// Finding code: a repository policy grants access outside the account. Stable; never reused.
pub const FOREIGN_REPOSITORY_ACCESS: &str = "S102";
/// Finding code: a live lifecycle policy, on any repository of the account, can expire tagged
/// images (the old 14-day `tagStatus any` rule expired the live nightly tag). Stable.
pub const LIVE_TAGGED_EXPIRY: &str = "D103";
/// Finding code: `--prune` leaves an undeclared repository alone because it does not carry this
/// deployment's mark. Stable; never reused.
pub const NOT_PRUNED: &str = "D104";
/// Finding code: a lifecycle policy the plan puts expires tagged images when it first runs.
/// An error about desired.toml unless the repository allows it. Stable; never reused.
pub const EXPIRES_TAGGED_NOW: &str = "W305";
/// Finding code: an undeclared repository's lifecycle policy could not be read with these
/// credentials (the plan role reads only reconcile's repositories). Stable; never reused.
pub const UNDECLARED_POLICY_UNREAD: &str = "E108";
/// Finding code: a repository desired.toml does not declare carries this deployment's mark: left
/// from a declaration since removed (an administrator's `apply --prune` deletes it), or marked by
/// someone who may tag it (ECR authorizes a create's tags as tagging one that exists), which the
/// mark alone cannot tell apart. The drift check says who wrote it when CloudTrail knows. Stable;
/// never reused.
pub const MARKED_UNDECLARED: &str = "D109";

/// ECR's answers for "there is no such repository" and "it has no lifecycle policy".
pub(crate) const REPOSITORY_NOT_FOUND: &str = "RepositoryNotFoundException";
pub(crate) const NO_POLICY: [&str; 2] = ["LifecyclePolicyNotFoundException", REPOSITORY_NOT_FOUND];
const NO_REPOSITORY_POLICY: [&str; 2] = ["RepositoryPolicyNotFoundException", REPOSITORY_NOT_FOUND];

/// `ecr_repository.<name>`: a repository's settings and tags.
pub const REPOSITORY: ResourceKind = ResourceKind::new("ecr_repository", 300);
/// `ecr_lifecycle_policy.<name>`: a repository's lifecycle policy.
pub const LIFECYCLE_POLICY: ResourceKind = ResourceKind::new("ecr_lifecycle_policy", 310);

reconcile_core::resource_kinds! {
    /// The kinds this crate owns.
    pub enum EcrKind {
        Repository = crate::REPOSITORY,
        LifecyclePolicy = crate::LIFECYCLE_POLICY,
    }
}

pub struct EcrReconciler {
    client: ecr::Client,
    account: Account,
    prune: Option<Prune>,
    /// `reconcile destroy`: declared repositories are deleted, their images only if it says so.
    destroy: Option<Destroy>,
    /// The images each repository this plan deletes holds, as `assess` counted them: what
    /// `refusal` refuses on.
    held: std::sync::Mutex<BTreeMap<Address, u64>>,
    parallelism: Parallelism,
    /// What this run read already, when it only reads (see [`ReadOnce`]).
    read_once: Option<std::sync::Arc<ReadOnce>>,
    /// This deployment's mark (its key and value), which the drift check looks for on what
    /// desired.toml does not declare.
    mark: Option<(String, String)>,
    /// What a GB-month of storage costs (desired.toml's `price_per_gb_month`), for what a
    /// policy's expiry saves.
    price_per_gb_month: f64,
}

/// What `--prune` asks of the reconciler: its marker is the deployment's mark
/// ([`reconcile_core::Desired::mark`]).
pub use reconcile_core::Prune;

impl EcrReconciler {
    pub fn new(client: ecr::Client, account: Account) -> EcrReconciler {
        EcrReconciler {
            client,
            account,
            prune: None,
            destroy: None,
            held: Default::default(),
            parallelism: Parallelism::default(),
            price_per_gb_month: PRICE_PER_GB_MONTH,
            read_once: None,
            mark: None,
        }
    }

    /// Whose mark is this deployment's (desired.toml's): the drift check names an undeclared
    /// repository carrying it ([`MARKED_UNDECLARED`]).
    pub fn marked_as(mut self, mark: (String, String)) -> EcrReconciler {
        self.mark = Some(mark);
        self
    }

    /// Shares `read` with the run's other ECR reconcilers: for a run that only reads (plan,
    /// drift, usage), in which the registry cannot change under it by its own hand.
    pub fn reading_once(mut self, read: std::sync::Arc<ReadOnce>) -> EcrReconciler {
        self.read_once = Some(read);
        self
    }

    /// Prices what a policy's expiry frees at `price_per_gb_month` (desired.toml's).
    pub fn with_price(mut self, price_per_gb_month: f64) -> EcrReconciler {
        self.price_per_gb_month = price_per_gb_month;
        self
    }

    /// At most `parallelism` requests in flight at once.
    pub fn with_parallelism(mut self, parallelism: Parallelism) -> EcrReconciler {
        self.parallelism = parallelism;
        self
    }

    /// Also plans deleting every undeclared repository that carries the marker.
    pub fn pruning(mut self, prune: Prune) -> EcrReconciler {
        self.prune = Some(prune);
        self
    }

    /// Deletes the declared repositories a destroy plans to, their images as `destroy` allows.
    pub fn destroying(mut self, destroy: Destroy) -> EcrReconciler {
        self.destroy = Some(destroy);
        self
    }

    /// Whether a repository that still holds images may be deleted with them.
    fn force_delete_images(&self) -> bool {
        self.prune.as_ref().is_some_and(|p| p.force_delete_images)
            || self.destroy.is_some_and(|d| d.force_delete_images)
    }

    /// How many images the repository `change` deletes holds: as observed (a prune's), or as
    /// counted when the plan was assessed (a destroy's); `None` when neither is known.
    fn images_held(&self, change: &Change) -> Option<u64> {
        let observed =
            change.before.as_ref().and_then(|before| before.get("images")).and_then(serde_json::Value::as_u64);
        observed.or_else(|| self.held.lock().expect("never poisoned").get(&change.address).copied())
    }

    fn repository_arn(&self, name: &str) -> String {
        reconcile_aws::arn(&self.account, "ecr", &format!("repository/{name}"))
    }
}

/// What a run that only reads has read of the registry: the listing and every lifecycle policy,
/// each read once however many of its steps ask (drift plans, surveys the undeclared
/// repositories and sums up the registry: three readings of every policy, otherwise). An apply
/// never shares one: it plans again under its lock, and must read afresh.
#[derive(Default)]
pub struct ReadOnce {
    repositories: std::sync::Mutex<Option<Vec<ecr::types::Repository>>>,
    policies: std::sync::Mutex<BTreeMap<String, Observed>>,
}

/// The registry's host: `<account>.dkr.ecr.<region>.amazonaws.com` (`.com.cn` in China),
/// the nightly's `ECR_REGISTRY`.
pub fn registry(account: &Account) -> String {
    format!("{}.dkr.ecr.{}.{}", account.id, account.region, reconcile_aws::dns_suffix(&account.partition))
}

/// What an update of a lifecycle policy does, for a plan's cost line: the policy documents
/// before and after.
pub fn policy_change(change: &Change) -> Option<(&serde_json::Value, &serde_json::Value)> {
    if change.address.kind != LIFECYCLE_POLICY || change.action != Action::Update {
        return None;
    }
    Some((change.before.as_ref()?.get("policy")?, change.after.as_ref()?.get("policy")?))
}

/// What a repository holds by the nightly's naming: BuildKit's caches (`<image>-cache`), or
/// images; a new one is priced as its siblings of the same kind.
pub fn holds(name: &str) -> &'static str {
    if name.ends_with("-cache") { "cache" } else { "image" }
}

/// Whether `change` is pruning: deleting a repository, which only a plan made with `--prune`
/// holds (an undeclared repository is otherwise never a change).
pub fn prunes(change: &Change) -> bool {
    matches!(EcrKind::of(&change.address), Ok(EcrKind::Repository)) && change.action == Action::Delete
}

#[async_trait]
impl Reconciler for EcrReconciler {
    fn kinds(&self) -> &'static [ResourceKind] {
        EcrKind::KINDS
    }

    async fn observe(&self, desired: &[&DesiredResource]) -> Result<Observations, ReconcileError> {
        let names: BTreeSet<&str> = desired.iter().map(|r| r.remote_name.as_str()).collect();
        // The whole account in one paginated read: the declared repositories, and the others,
        // whose lifecycle policies are checked too.
        let (live, undeclared): (BTreeMap<String, RepositoryState>, BTreeMap<String, RepositoryState>) = self
            .list_all_repositories()
            .await?
            .iter()
            .filter_map(|repository| self.live_repository(repository))
            .partition(|(name, _)| names.contains(name.as_str()));

        // One read per (resource, repository that exists); a missing repository needs no more.
        // Collected first: a lazy iterator here would put a closure over borrows into the
        // future, which the compiler cannot prove `Send` for every lifetime.
        let reads: Vec<_> = desired
            .iter()
            .filter_map(|resource| live.get(&resource.remote_name).map(|repo| self.observe_one(resource, repo)))
            .collect();
        let others: Vec<_> = undeclared.iter().map(|(name, repo)| self.observe_undeclared(name, repo)).collect();
        // All of them in one wave: the parallelism bounds the requests in flight.
        let (observed, others) =
            futures::future::join(futures::future::join_all(reads), futures::future::join_all(others)).await;

        let mut result: BTreeMap<Address, Observed> =
            desired.iter().map(|resource| (resource.address.clone(), Observed::Absent)).collect();
        let mut findings = Vec::new();
        for entry in observed {
            let (address, observed) = entry?;
            if let Observed::Present(fields) = &observed {
                let field = |name: &str| fields.get(name).unwrap_or(&serde_json::Value::Null);
                match EcrKind::of(&address)? {
                    EcrKind::Repository => {
                        findings.extend(self.foreign_access(&address, crate::repository::policy(fields)));
                    }
                    EcrKind::LifecyclePolicy => {
                        let allowed = desired.iter().any(|r| r.address == address && r.overrides(ALLOW_TAGGED_EXPIRY));
                        if !allowed {
                            findings.extend(live_tagged_expiry(&address, field("policy"), true));
                        }
                    }
                }
            }
            result.insert(address, observed);
        }
        for other in others {
            let Undeclared { finding, pruned } = other?;
            findings.extend(finding);
            match pruned {
                Some(Ok((address, observed))) => {
                    result.insert(address, observed);
                }
                Some(Err(finding)) => findings.push(finding),
                None => {}
            }
        }
        Ok(Observations { resources: result, findings, replace: Vec::new() })
    }

    async fn inventory(
        &self,
        desired: &[&DesiredResource],
    ) -> Result<Vec<reconcile_core::generate::Found>, ReconcileError> {
        self.inventory_of(desired).await
    }

    /// Every repository in the account that desired.toml does not declare; loudly those without
    /// a lifecycle policy (two such cache repositories once held 347 GB before anyone noticed),
    /// and those carrying this deployment's mark (a declaration removed, or a mark someone else
    /// wrote: [`MARKED_UNDECLARED`]).
    async fn survey(&self, desired: &[&DesiredResource]) -> Result<Vec<Finding>, ReconcileError> {
        let undeclared = self.undeclared(desired).await?;
        // The policy and, when there is a mark to look for, the tags: one wave.
        let reads: Vec<_> = undeclared
            .iter()
            .map(|(name, repository)| async move {
                let address = Address::new(crate::LIFECYCLE_POLICY, name);
                let tags = async {
                    match &self.mark {
                        Some(_) => self.tags(&Address::new(crate::REPOSITORY, name), &repository.arn).await.map(Some),
                        None => Ok(None),
                    }
                };
                let (policy, tags) = futures::join!(self.observe_lifecycle_policy(&address, name), tags);
                (name, policy, tags)
            })
            .collect();
        let mut findings = Vec::new();
        for (name, policy, tags) in futures::future::join_all(reads).await {
            let address = Address::new(crate::REPOSITORY, name);
            let (policy, tags) = (policy?, tags?);
            // Another deployment's (two share the account): its drift check's, not this one's. But
            // not when it has no lifecycle policy: whoever may tag a repository can write any
            // deployment's mark, and a repository that grows without bound is the account's bill
            // (the seeds' 347 GB), so D102 stays, whatever the mark says.
            if let (Some((_, ours)), Some(tags), Observed::Present(_)) = (&self.mark, &tags, &policy)
                && let Some(theirs) = reconcile_core::ownership::other_deployment(tags, ours)
            {
                let what = format!("repository `{name}`");
                findings.push(reconcile_core::ownership::another_deployments(address, &what, theirs));
                continue;
            }
            let finding = match policy {
                Observed::Absent => Finding {
                    code: UNDECLARED_REPOSITORY_WITHOUT_POLICY.to_owned(),
                    severity: Severity::Error,
                    address: Some(address.clone()),
                    message: format!(
                        "repository `{name}` is not in desired.toml and has NO lifecycle policy: its untagged \
                         images accumulate without bound; declare it, or delete it"
                    ),
                    overridden_by: None,
                },
                Observed::Present(_) => Finding {
                    code: UNDECLARED_REPOSITORY.to_owned(),
                    severity: Severity::Warning,
                    address: Some(address.clone()),
                    message: format!("repository `{name}` is not in desired.toml; declare it, or delete it"),
                    overridden_by: None,
                },
            };
            findings.push(finding);
            if let (Some((key, value)), Some(tags)) = (&self.mark, tags)
                && tags.get(key) == Some(value)
            {
                findings.push(marked_undeclared(address, name, key, value));
            }
        }
        Ok(findings)
    }

    /// What each lifecycle policy the plan puts will expire when it first runs, from the
    /// repository's images (read only for those repositories, all at once).
    async fn assess(
        &self,
        changes: &[&Change],
        desired: &BTreeMap<Address, DesiredResource>,
    ) -> Result<Assessment, ReconcileError> {
        let created: BTreeSet<&str> = changes
            .iter()
            .filter(|c| c.address.kind == crate::REPOSITORY && c.action == Action::Create)
            .map(|c| c.address.name.as_str())
            .collect();
        let policies: Vec<&Change> = changes
            .iter()
            .copied()
            .filter(|c| {
                c.address.kind == crate::LIFECYCLE_POLICY && matches!(c.action, Action::Create | Action::Update)
            })
            .collect();
        // A declared repository a destroy deletes: what it holds, said before it goes.
        let deleted: Vec<&Change> = changes
            .iter()
            .copied()
            .filter(|c| prunes(c) && c.before.as_ref().is_some_and(|before| !before.contains_key("images")))
            .collect();
        let counts = futures::future::join_all(deleted.iter().map(|change| async move {
            let images = self.images(&change.address, &change.address.name).await?;
            Ok::<_, ReconcileError>((change.address.clone(), images))
        }))
        .await;
        let mut assessment = Assessment::default();
        for count in counts {
            let (address, images) = count?;
            let bytes = images.iter().map(|image| image.size).sum();
            self.held.lock().expect("never poisoned").insert(address.clone(), images.len() as u64);
            assessment.impacts.insert(address, Impact::contents("images", images.len() as u64, bytes));
        }
        // A repository the plan creates holds nothing yet.
        let reads: Vec<_> = policies
            .iter()
            .map(|change| {
                let new = created.contains(change.address.name.as_str());
                async move {
                    let name = change.address.name.as_str();
                    let images = if new { Ok(Vec::new()) } else { self.images(&change.address, name).await };
                    (*change, images)
                }
            })
            .collect();
        let now = reconcile_core::time::now();
        for (change, images) in futures::future::join_all(reads).await {
            let address = &change.address;
            let after: LifecyclePolicySpec = reconcile_core::spec::after(change)?;
            let policy = Policy::parse(&after.policy)
                .map_err(|why| ReconcileError::new(Some(address), "evaluate the lifecycle policy", why))?;
            let expiry = Expiry::of(&policy, &images?, now);
            if !expiry.tagged.is_empty() {
                let allowed = desired.get(address).is_some_and(|r| r.overrides(ALLOW_TAGGED_EXPIRY));
                assessment.findings.push(Finding {
                    code: EXPIRES_TAGGED_NOW.to_owned(),
                    severity: if allowed { Severity::Warning } else { Severity::Error },
                    address: Some(address.clone()),
                    message: format!(
                        "the new lifecycle policy expires tagged images when it first runs: {}",
                        expiry.tagged.join(", ")
                    ),
                    overridden_by: allowed.then(|| ALLOW_TAGGED_EXPIRY.to_owned()),
                });
            }
            assessment.impacts.insert(address.clone(), impact::impact(&expiry, self.price_per_gb_month));
        }
        Ok(assessment)
    }

    /// Taking a repository's lifecycle policy away (a destroy's) lets its images pile up without
    /// bound: the seeds' 347 GB. Deleting a repository (a prune's, a destroy's): see below. Never
    /// the apply role's.
    fn administrators_only(&self, change: &Change) -> Option<&'static str> {
        match (change.address.kind, change.action) {
            (crate::LIFECYCLE_POLICY, Action::Delete) => {
                Some("removing a repository's lifecycle policy, after which its images accumulate without bound")
            }
            // Destroyed or pruned: the mark alone cannot tell a repository this deployment made
            // from one someone else marked (ECR authorizes a create's tags as tagging one that
            // exists), and the images go with it.
            (crate::REPOSITORY, Action::Delete | Action::Replace) => {
                Some("deleting a repository, which the mark alone cannot tell from another team's someone marked")
            }
            _ => None,
        }
    }

    /// A repository whose encryption differs is a replacement (ECR sets it only on creation),
    /// as its table says; `refusal` then refuses it.
    fn fields(&self) -> &'static [reconcile_core::fields::Fields] {
        crate::describe::DESCRIPTION.fields
    }

    fn refusal(&self, change: &Change) -> Option<String> {
        // A replacement is for what the kind's table says ECR sets only at create: named from it.
        if change.action == Action::Replace {
            let fields: Vec<String> = change
                .field_changes()
                .iter()
                .filter(|field| crate::repository::FIELDS.create_only().contains(&field.name))
                .map(|field| format!("`{}`", field.name))
                .collect();
            let them = if fields.len() == 1 { "it" } else { "them" };
            let fields = fields.join(" and ");
            return Some(format!(
                "ECR cannot change a repository's {fields} (it sets {them} only when it makes one), and replacing the \
                 repository deletes every image in it, which reconcile never does: move its images to a repository \
                 made as declared, delete this one by hand, and apply again (or declare the {fields} it has)"
            ));
        }
        if !prunes(change) {
            return None;
        }
        change.before.as_ref()?;
        let images = self.images_held(change).unwrap_or(0);
        (images > 0 && !self.force_delete_images()).then(|| {
            format!("the repository still holds {images} image(s); pass --force-delete-images to delete them with it")
        })
    }

    async fn apply(&self, change: &Change, _progress: &dyn Progress) -> Result<Applied, ReconcileError> {
        let address = &change.address;
        match (EcrKind::of(address)?, change.action) {
            (EcrKind::Repository, Action::Create) => self.create_repository(change).await,
            (EcrKind::Repository, Action::Update) => {
                let before = reconcile_core::spec::before::<RepositorySpec>(change)?;
                let current_tags = before.as_ref().map(|b| b.tags.clone()).unwrap_or_default();
                self.converge_repository(change, before.as_ref(), &current_tags).await?;
                Ok(Applied::Done)
            }
            (EcrKind::Repository, Action::Delete) if self.prune.is_some() || self.destroy.is_some() => {
                self.delete_repository(change).await
            }
            (EcrKind::Repository, Action::Delete | Action::Replace) => {
                Err(ReconcileError::never(address, "delete repository"))
            }
            (EcrKind::LifecyclePolicy, Action::Create | Action::Update) => self.put_lifecycle_policy(change).await,
            (EcrKind::LifecyclePolicy, Action::Delete) => self.delete_lifecycle_policy(address).await,
            // This reconciler's diff never plans one: a policy changes in place.
            (EcrKind::LifecyclePolicy, Action::Replace) => Err(ReconcileError::never(address, "replace")),
        }
    }
}

impl EcrReconciler {
    async fn list_all_repositories(&self) -> Result<Vec<ecr::types::Repository>, ReconcileError> {
        let Some(read) = &self.read_once else { return self.list_repositories().await };
        if let Some(listed) = read.repositories.lock().expect("never poisoned").clone() {
            return Ok(listed);
        }
        let listed = self.list_repositories().await?;
        *read.repositories.lock().expect("never poisoned") = Some(listed.clone());
        Ok(listed)
    }

    async fn list_repositories(&self) -> Result<Vec<ecr::types::Repository>, ReconcileError> {
        // ECR's largest page (100 when not asked): 5,000 repositories are five requests, not 50.
        let mut pages = self.client.describe_repositories().max_results(1000).into_paginator().send();
        let mut repositories = Vec::new();
        let mut read = reconcile_aws::Pages::default();
        while let Some(page) = self.parallelism.send_once(|| pages.next()).await {
            let page = page.map_err(failed(None, "list ECR repositories"))?;
            read.page(page.next_token(), None, "list ECR repositories")?;
            repositories.extend(page.repositories.unwrap_or_default());
        }
        Ok(repositories)
    }

    /// Every image of a repository, as the lifecycle evaluator takes them; none when the
    /// repository does not exist.
    async fn images(&self, address: &Address, name: &str) -> Result<Vec<Image>, ReconcileError> {
        // ECR's largest page: a 10,000-image repository is ten requests. Each page asked for by
        // its token rather than through the SDK's paginator, so that a throttled page is sent
        // again when the gate lets it (`Parallelism::send`).
        let mut images = Vec::new();
        let mut read = reconcile_aws::Pages::default();
        let mut token: Option<String> = None;
        loop {
            let page = self
                .parallelism
                .send(|| {
                    let request = self.client.describe_images().repository_name(name).max_results(1000);
                    request.set_next_token(token.clone()).send()
                })
                .await;
            let page = match absent_if(page, &[REPOSITORY_NOT_FOUND]) {
                Ok(Some(page)) => page,
                Ok(None) => return Ok(Vec::new()),
                Err(error) => return Err(failed(Some(address), "list the repository's images")(error)),
            };
            token = read.page(page.next_token(), Some(address), "list the repository's images")?;
            images.extend(page.image_details().iter().map(|detail| {
                Image {
                    digest: detail.image_digest().unwrap_or_default().to_owned(),
                    tags: detail.image_tags().to_vec(),
                    pushed_at: detail.image_pushed_at().map_or(0, |t| t.secs()),
                    size: detail.image_size_in_bytes().map_or(0, |s| s.max(0) as u64),
                    last_pulled_at: detail.last_recorded_pull_time().map(|t| t.secs()),
                    archived_at: detail
                        .image_status()
                        .filter(|s| s.as_str() == "ARCHIVED")
                        .and(detail.last_archived_at().map(|t| t.secs())),
                }
            }));
            if token.is_none() {
                return Ok(images);
            }
        }
    }

    async fn observe_one(
        &self,
        resource: &DesiredResource,
        repository: &RepositoryState,
    ) -> Result<(Address, Observed), ReconcileError> {
        let address = &resource.address;
        let name = &resource.remote_name;
        let observed = match EcrKind::of(address)? {
            EcrKind::LifecyclePolicy => self.observe_lifecycle_policy(address, name).await?,
            EcrKind::Repository => {
                let (tags, policy) = futures::future::join(
                    self.tags(address, &repository.arn),
                    self.parallelism.send(|| self.client.get_repository_policy().repository_name(name).send()),
                )
                .await;
                let tags = tags?;
                let policy = absent_if(policy, &NO_REPOSITORY_POLICY)
                    .map_err(failed(Some(address), "read repository policy"))?
                    .and_then(|output| output.policy_text().map(reconcile_core::json::parse_document));
                Observed::Present(reconcile_core::spec::attributes(&repository.with(tags, policy)))
            }
        };
        Ok((address.clone(), observed))
    }
}

impl EcrReconciler {
    /// What every repository of the account holds and what its policies reclaim, for
    /// `reconcile usage`: one paginated listing, then each repository's images (paginated) and
    /// lifecycle policy, repositories read concurrently so a large one holds up no other.
    /// `declared` is each declared repository's policy document.
    pub async fn usage(
        &self,
        declared: &BTreeMap<String, serde_json::Value>,
        now: i64,
        progress: &(dyn Fn(usize, usize) + Sync),
    ) -> Result<Vec<usage::RepositoryUsage>, ReconcileError> {
        let names: Vec<String> =
            self.list_all_repositories().await?.iter().filter_map(|r| r.repository_name().map(str::to_owned)).collect();
        let read = &std::sync::atomic::AtomicUsize::new(0);
        let total = names.len();
        progress(0, total);
        let reads: Vec<_> = names
            .iter()
            .map(|name| async move {
                let address = Address::new(crate::REPOSITORY, name);
                let policy_address = Address::new(crate::LIFECYCLE_POLICY, name);
                let (images, policy) = futures::future::join(
                    self.images(&address, name),
                    self.observe_lifecycle_policy(&policy_address, name),
                )
                .await;
                let live = match policy? {
                    Observed::Present(fields) => {
                        Some(Policy::parse(fields.get("policy").unwrap_or(&serde_json::Value::Null)).map_err(
                            |why| ReconcileError::new(Some(&policy_address), "evaluate the live policy", why),
                        )?)
                    }
                    Observed::Absent => None,
                };
                let declared = match declared.get(name) {
                    Some(document) => Some(Policy::parse(document).map_err(|why| {
                        ReconcileError::new(Some(&policy_address), "evaluate the declared policy", why)
                    })?),
                    None => None,
                };
                let usage = usage::RepositoryUsage::of(name, &images?, live.as_ref(), declared.as_ref(), now);
                progress(read.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1, total);
                Ok(usage)
            })
            .collect();
        futures::future::join_all(reads).await.into_iter().collect()
    }

    /// What each of `names` holds now, as (images, bytes); a repository that does not exist holds
    /// nothing. For a plan's cost line: only the repositories its changes are priced by, at once.
    pub async fn held(&self, names: &[String]) -> Result<Vec<(String, u64, u64)>, ReconcileError> {
        let reads = names.iter().map(|name| async move {
            let images = self.images(&Address::new(crate::REPOSITORY, name), name).await?;
            Ok::<_, ReconcileError>((name.clone(), images.len() as u64, images.iter().map(|i| i.size).sum()))
        });
        futures::future::join_all(reads).await.into_iter().collect()
    }

    /// Every image of every repository of the registry, as (pushed at, bytes), for what the
    /// registry stored day by day (`reconcile cost`): one paginated listing, then each
    /// repository's images, concurrently.
    pub async fn stored_images(&self) -> Result<Vec<(i64, u64)>, ReconcileError> {
        let names: Vec<String> =
            self.list_all_repositories().await?.iter().filter_map(|r| r.repository_name().map(str::to_owned)).collect();
        let reads = names.iter().map(|name| async move {
            let address = Address::new(crate::REPOSITORY, name);
            self.images(&address, name).await
        });
        let mut stored = Vec::new();
        for images in futures::future::join_all(reads).await {
            stored.extend(images?.iter().map(|image| (image.pushed_at, image.size)));
        }
        Ok(stored)
    }

    /// S102 when the repository's live policy lets anyone outside the account in.
    fn foreign_access(&self, address: &Address, policy: &serde_json::Value) -> Option<Finding> {
        let foreign = reconcile_core::policy::foreign_principals(policy, &self.account.id);
        (!foreign.is_empty()).then(|| Finding {
            code: FOREIGN_REPOSITORY_ACCESS.to_owned(),
            severity: Severity::Error,
            address: Some(address.clone()),
            message: format!(
                "the repository policy grants access outside account {} to {}: anyone it names can pull (or push) \
                 the nightly's images; {}",
                self.account.id,
                foreign.join(", "),
                if self.destroy.is_some() {
                    "destroy deletes it with the repository"
                } else {
                    "apply removes the policy"
                }
            ),
            overridden_by: None,
        })
    }
}

/// ECR's tag type. A tag's key and value are both required by the builder, and both are set
/// here, so a build error cannot happen; were it to, it is an error, never a dropped tag.
fn tag_list(tags: &BTreeMap<String, String>) -> Vec<ecr::types::Tag> {
    tags.iter()
        .map(|(key, value)| ecr::types::Tag::builder().key(key).value(value).build())
        .collect::<Result<_, _>>()
        .expect("key and value are set")
}

#[cfg(test)]
mod tests {
    //! Error paths the emulator cannot produce, against a mocked client.

    use super::*;
    use aws_sdk_ecr::operation::delete_lifecycle_policy::DeleteLifecyclePolicyError;
    use aws_sdk_ecr::operation::describe_repositories::DescribeRepositoriesOutput;
    use aws_sdk_ecr::operation::get_lifecycle_policy::{GetLifecyclePolicyError, GetLifecyclePolicyOutput};
    use aws_sdk_ecr::operation::list_tags_for_resource::ListTagsForResourceOutput;
    use aws_sdk_ecr::operation::put_lifecycle_policy::PutLifecyclePolicyError;
    use aws_sdk_ecr::types::error::{LifecyclePolicyNotFoundException, ServerException};
    use aws_smithy_mocks::{Rule, RuleMode, mock, mock_client};
    use aws_smithy_types::error::ErrorMetadata;
    use reconcile_core::json::object;
    use reconcile_core::reconciler::Silent;
    use serde_json::{Map, json};

    /// What a real ECR error carries: its code.
    fn code(code: &str) -> ErrorMetadata {
        ErrorMetadata::builder().code(code).build()
    }

    fn no_policy() -> LifecyclePolicyNotFoundException {
        LifecyclePolicyNotFoundException::builder().meta(code("LifecyclePolicyNotFoundException")).build()
    }

    fn reconciler(rules: &[&Rule]) -> EcrReconciler {
        let client = mock_client!(aws_sdk_ecr, RuleMode::MatchAny, rules);
        EcrReconciler::new(client, Account::new("123456789012", "us-east-1"))
    }

    #[test]
    fn deleting_a_repository_empty_or_not_and_removing_a_lifecycle_policy_are_an_administrators() {
        let reconciler = reconciler(&[]).pruning(Prune {
            marker: ("reconcile:deployment".to_owned(), "rocm-bake".to_owned()),
            force_delete_images: true,
        });
        let change = |kind, action, images: u64| Change {
            address: Address::new(kind, "teamy/empty-staging"),
            action,
            before: Some(object(json!({ "images": images }))),
            after: None,
            depends_on: vec![],
        };
        for images in [0, 3] {
            for action in [Action::Delete, Action::Replace] {
                assert_eq!(
                    reconciler.administrators_only(&change(crate::REPOSITORY, action, images)),
                    Some("deleting a repository, which the mark alone cannot tell from another team's someone marked"),
                    "{action:?} of a repository holding {images}"
                );
            }
        }
        assert!(reconciler.administrators_only(&change(crate::LIFECYCLE_POLICY, Action::Delete, 0)).is_some());
        for action in [Action::Create, Action::Update] {
            assert_eq!(reconciler.administrators_only(&change(crate::REPOSITORY, action, 0)), None);
            assert_eq!(reconciler.administrators_only(&change(crate::LIFECYCLE_POLICY, action, 0)), None);
        }
    }

    fn one_repository() -> Rule {
        mock!(ecr::Client::describe_repositories).then_output(|| {
            DescribeRepositoriesOutput::builder()
                .repositories(
                    ecr::types::Repository::builder()
                        .repository_name("pytorch")
                        .repository_arn("arn:aws:ecr:us-east-1:123456789012:repository/pytorch")
                        .build(),
                )
                .build()
        })
    }

    fn no_tags() -> Rule {
        mock!(ecr::Client::list_tags_for_resource).then_output(|| ListTagsForResourceOutput::builder().build())
    }

    fn policy_address() -> Address {
        Address::new(crate::LIFECYCLE_POLICY, "pytorch")
    }

    /// What `observe` is given: the desired resources (only their addresses matter to ECR).
    fn wanted(addresses: &[Address]) -> Vec<DesiredResource> {
        addresses.iter().map(|address| DesiredResource::new(address.clone(), &address.name, Map::new())).collect()
    }

    async fn observe(reconciler: &EcrReconciler, addresses: &[Address]) -> Result<Observations, ReconcileError> {
        let wanted = wanted(addresses);
        reconciler.observe(&wanted.iter().collect::<Vec<_>>()).await
    }

    #[tokio::test]
    async fn an_observe_failure_names_the_resource_the_operation_and_the_cause() {
        let describe = one_repository();
        let tags = no_tags();
        let policy = mock!(ecr::Client::get_lifecycle_policy).then_error(|| {
            GetLifecyclePolicyError::ServerException(ServerException::builder().message("the sky fell").build())
        });
        let repository_policy = mock!(ecr::Client::get_repository_policy).then_error(|| {
            aws_sdk_ecr::operation::get_repository_policy::GetRepositoryPolicyError::RepositoryPolicyNotFoundException(
                aws_sdk_ecr::types::error::RepositoryPolicyNotFoundException::builder()
                    .meta(code("RepositoryPolicyNotFoundException"))
                    .build(),
            )
        });
        let reconciler = reconciler(&[&describe, &tags, &policy, &repository_policy]);
        let addresses = [Address::new(crate::REPOSITORY, "pytorch"), policy_address()];
        let error = observe(&reconciler, &addresses).await.unwrap_err();
        let message = error.to_string();
        assert!(message.starts_with("ecr_lifecycle_policy.pytorch: failed to read lifecycle policy: "), "{message}");
        assert!(message.contains("the sky fell"), "{message}");
    }

    #[tokio::test]
    async fn a_repository_without_a_policy_observes_as_absent() {
        let describe = one_repository();
        let policy = mock!(ecr::Client::get_lifecycle_policy)
            .then_error(|| GetLifecyclePolicyError::LifecyclePolicyNotFoundException(no_policy()));
        let reconciler = reconciler(&[&describe, &policy]);
        let observed = observe(&reconciler, &[policy_address()]).await.unwrap();
        assert_eq!(observed.resources[&policy_address()], Observed::Absent);
        assert_eq!(describe.num_calls(), 1);
        assert_eq!(policy.num_calls(), 1);
    }

    #[tokio::test]
    async fn a_present_policy_observes_in_canonical_form() {
        let describe = one_repository();
        let policy = mock!(ecr::Client::get_lifecycle_policy).then_output(|| {
            GetLifecyclePolicyOutput::builder()
                .lifecycle_policy_text(r#"{ "rules": [ { "selection": {"countNumber": 3, "tagStatus": "untagged", "countType": "imageCountMoreThan"}, "rulePriority": 1, "action": {"type": "expire"} } ] }"#)
                .build()
        });
        let reconciler = reconciler(&[&describe, &policy]);
        let observed = observe(&reconciler, &[policy_address()]).await.unwrap();
        let Observed::Present(fields) = &observed.resources[&policy_address()] else { panic!("present") };
        assert_eq!(
            reconcile_core::json::to_compact(&fields["policy"]),
            r#"{"rules":[{"action":{"type":"expire"},"rulePriority":1,"selection":{"countNumber":3,"countType":"imageCountMoreThan","tagStatus":"untagged"}}]}"#
        );
    }

    #[tokio::test]
    async fn deleting_a_policy_that_is_already_gone_succeeds() {
        let delete = mock!(ecr::Client::delete_lifecycle_policy)
            .then_error(|| DeleteLifecyclePolicyError::LifecyclePolicyNotFoundException(no_policy()));
        let reconciler = reconciler(&[&delete]);
        let change = Change {
            address: policy_address(),
            action: Action::Delete,
            before: Some(Map::new()),
            after: None,
            depends_on: vec![],
        };
        reconciler.apply(&change, &Silent).await.unwrap();
        assert_eq!(delete.num_calls(), 1);
    }

    #[tokio::test]
    async fn a_repository_delete_is_refused_without_any_call() {
        let describe = one_repository();
        let reconciler = reconciler(&[&describe]);
        let change = Change {
            address: Address::new(crate::REPOSITORY, "pytorch"),
            action: Action::Delete,
            before: Some(Map::new()),
            after: None,
            depends_on: vec![],
        };
        let error = reconciler.apply(&change, &Silent).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "ecr_repository.pytorch: failed to delete repository: reconcile never does this to `ecr_repository` \
             resources; do it by hand if it must be done"
        );
        assert_eq!(describe.num_calls(), 0);
    }

    #[tokio::test]
    async fn a_policy_put_right_after_creation_waits_for_the_repository_to_show() {
        use aws_sdk_ecr::types::error::RepositoryNotFoundException;
        let put = mock!(ecr::Client::put_lifecycle_policy)
            .sequence()
            .error(|| {
                PutLifecyclePolicyError::RepositoryNotFoundException(
                    RepositoryNotFoundException::builder().meta(code(REPOSITORY_NOT_FOUND)).build(),
                )
            })
            .output(|| aws_sdk_ecr::operation::put_lifecycle_policy::PutLifecyclePolicyOutput::builder().build())
            .build();
        let change = Change {
            address: policy_address(),
            action: Action::Create,
            before: None,
            after: Some(object(json!({ "policy": {"rules": []} }))),
            depends_on: vec![],
        };
        reconciler(&[&put]).apply(&change, &Silent).await.unwrap();
        assert_eq!(put.num_calls(), 2);
    }

    #[tokio::test]
    async fn a_change_missing_a_field_fails_naming_it_and_calls_nothing() {
        let create = mock!(ecr::Client::create_repository)
            .then_output(|| ecr::operation::create_repository::CreateRepositoryOutput::builder().build());
        let put = mock!(ecr::Client::put_lifecycle_policy)
            .then_output(|| aws_sdk_ecr::operation::put_lifecycle_policy::PutLifecyclePolicyOutput::builder().build());
        let reconciler = reconciler(&[&create, &put]);
        let repository = Change {
            address: Address::new(crate::REPOSITORY, "pytorch"),
            action: Action::Create,
            before: None,
            after: Some(object(json!({ "scan_on_push": true, "tags": {} }))),
            depends_on: vec![],
        };
        let error = reconciler.apply(&repository, &Silent).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "ecr_repository.pytorch: failed to read the change's desired fields: missing field `image_tag_mutability`"
        );
        let policy = Change { address: policy_address(), after: Some(Map::new()), ..repository };
        let error = reconciler.apply(&policy, &Silent).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "ecr_lifecycle_policy.pytorch: failed to read the change's desired fields: missing field `policy`"
        );
        assert_eq!((create.num_calls(), put.num_calls()), (0, 0));
    }
    #[tokio::test]
    async fn a_repository_made_meanwhile_is_converged_only_when_it_carries_this_deployments_mark() {
        use aws_sdk_ecr::operation::create_repository::CreateRepositoryError;
        use aws_sdk_ecr::types::error::RepositoryAlreadyExistsException;
        for (mark, converged) in [(Some("rocm-bake"), true), (Some("team-x"), false), (None, false)] {
            let create = mock!(ecr::Client::create_repository).then_error(|| {
                CreateRepositoryError::RepositoryAlreadyExistsException(
                    RepositoryAlreadyExistsException::builder().meta(code("RepositoryAlreadyExistsException")).build(),
                )
            });
            let tags = mock!(ecr::Client::list_tags_for_resource).then_output(move || {
                let tag = mark.map(|value| {
                    ecr::types::Tag::builder().key(reconcile_core::ownership::MARK_KEY).value(value).build().unwrap()
                });
                ListTagsForResourceOutput::builder().set_tags(Some(tag.into_iter().collect())).build()
            });
            let mutability = mock!(ecr::Client::put_image_tag_mutability).then_output(|| {
                ecr::operation::put_image_tag_mutability::PutImageTagMutabilityOutput::builder().build()
            });
            let scanning = mock!(ecr::Client::put_image_scanning_configuration).then_output(|| {
                ecr::operation::put_image_scanning_configuration::PutImageScanningConfigurationOutput::builder().build()
            });
            let no_policy = mock!(ecr::Client::delete_repository_policy).then_error(|| {
                aws_sdk_ecr::operation::delete_repository_policy::DeleteRepositoryPolicyError::RepositoryPolicyNotFoundException(
                    aws_sdk_ecr::types::error::RepositoryPolicyNotFoundException::builder()
                        .meta(code("RepositoryPolicyNotFoundException"))
                        .build(),
                )
            });
            let tag = mock!(ecr::Client::tag_resource)
                .then_output(|| ecr::operation::tag_resource::TagResourceOutput::builder().build());
            let reconciler = reconciler(&[&create, &tags, &mutability, &scanning, &no_policy, &tag]);
            let change = Change {
                address: Address::new(crate::REPOSITORY, "pytorch"),
                action: Action::Create,
                before: None,
                after: Some(object(json!({
                    "image_tag_mutability": "MUTABLE",
                    "scan_on_push": false,
                    "encryption_type": "AES256",
                    "tags": { reconcile_core::ownership::MARK_KEY: "rocm-bake", "project": "rocm-bake" },
                    "repository_policy": null,
                }))),
                depends_on: vec![],
            };
            let applied = reconciler.apply(&change, &Silent).await;
            if converged {
                assert_eq!(applied.unwrap(), Applied::Adopted);
                assert_eq!((mutability.num_calls(), tag.num_calls()), (1, 1), "the project tag set");
            } else {
                let error = applied.unwrap_err();
                assert!(error.to_string().contains("without this deployment's mark"), "{error}");
                assert_eq!((mutability.num_calls(), scanning.num_calls(), tag.num_calls()), (0, 0, 0), "{mark:?}");
            }
        }
    }
}
