//! A reconciler with no service behind it, for the tests of what is built on the engine (its
//! scheduling, and the binary's run protocol): it owns the ECR kinds, observes what it is told
//! to, surveys nothing (but says it did), applies by writing to a log, and can fail, hang or be
//! slow on demand.
//!
//! Used only by tests (this crate's, reconcile-render's and the binary's), but compiled always: see
//! the note in lib.rs.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use crate::address::{Address, ResourceKind};
use crate::plan::{Change, DesiredResource, Observed};
use crate::reconciler::{Applied, Observations, Progress, ReconcileError, Reconciler};

/// What the fake does; every field has a harmless default.
#[derive(Default)]
pub struct FakeReconciler {
    /// Shared with whoever wants to see the order of events: `observe`, `apply <address>`.
    pub log: Arc<Mutex<Vec<String>>>,
    /// The names whose apply fails.
    pub fail: Vec<String>,
    /// The names whose apply never finishes (a write that hangs).
    pub hang: Vec<String>,
    /// The name whose apply finishes only when this does (a write that takes a while).
    pub slow: Option<(String, futures::future::Shared<futures::future::BoxFuture<'static, ()>>)>,
    /// What observe finds, by address; a desired address not here is absent. An address here
    /// that is not desired is found anyway, as something undeclared in the managed scope.
    pub observed: BTreeMap<Address, Observed>,
    /// The observes after this many never answer (a service that stopped answering).
    pub hang_after: Option<usize>,
    /// The observes after this many fail.
    pub fail_after: Option<usize>,
    /// How many observes were asked for so far.
    pub observes: AtomicUsize,
    /// The names whose change only an administrator makes, and why.
    pub administrators: BTreeMap<String, &'static str>,
    /// Its kinds' tables of fields (none: every field in place).
    pub fields: &'static [crate::fields::Fields],
}

impl FakeReconciler {
    pub fn new(log: &Arc<Mutex<Vec<String>>>) -> FakeReconciler {
        FakeReconciler { log: Arc::clone(log), ..FakeReconciler::default() }
    }

    fn record(&self, event: String) {
        self.log.lock().expect("never poisoned").push(event);
    }
}

/// The kinds the fake reconciler and core's tests stand for, named and ranked as their crates
/// declare them: core declares no kind.
pub mod kinds {
    use crate::ResourceKind;

    pub const IAM_ROLE_BOUNDARY: ResourceKind = ResourceKind::new("iam_role_boundary", 100);
    pub const IAM_ROLE: ResourceKind = ResourceKind::new("iam_role", 110);
    pub const IAM_ROLE_POLICY: ResourceKind = ResourceKind::new("iam_role_policy", 120).with_members();
    pub const IAM_CI_ROLE: ResourceKind = ResourceKind::new("iam_ci_role", 140);

    pub const S3_BUCKET: ResourceKind = ResourceKind::new("s3_bucket", 200);
    pub const S3_BUCKET_LIFECYCLE: ResourceKind = ResourceKind::new("s3_bucket_lifecycle", 210);
    pub const ECR_REPOSITORY: ResourceKind = ResourceKind::new("ecr_repository", 300);
    pub const ECR_LIFECYCLE_POLICY: ResourceKind = ResourceKind::new("ecr_lifecycle_policy", 310);
    pub const CODEBUILD_PROJECT: ResourceKind = ResourceKind::new("codebuild_project", 400);
    pub const CODEBUILD_WEBHOOK: ResourceKind = ResourceKind::new("codebuild_webhook", 410);
    pub const GITHUB_FORK_PR_APPROVAL: ResourceKind = ResourceKind::new("github_fork_pr_approval", 500);
    pub const GITHUB_VARIABLE: ResourceKind = ResourceKind::new("github_variable", 530);
}

#[async_trait]
impl Reconciler for FakeReconciler {
    fn fields(&self) -> &'static [crate::fields::Fields] {
        self.fields
    }

    fn kinds(&self) -> &'static [ResourceKind] {
        &[crate::fake::kinds::ECR_REPOSITORY, crate::fake::kinds::ECR_LIFECYCLE_POLICY]
    }

    async fn observe(&self, desired: &[&DesiredResource]) -> Result<Observations, ReconcileError> {
        let n = self.observes.fetch_add(1, Ordering::SeqCst);
        self.record("observe".to_owned());
        if self.hang_after.is_some_and(|after| n >= after) {
            std::future::pending::<()>().await;
        }
        if self.fail_after.is_some_and(|after| n >= after) {
            return Err(ReconcileError::new(None, "observe", "the service failed"));
        }
        let mut resources: BTreeMap<Address, Observed> = desired
            .iter()
            .map(|r| (r.address.clone(), self.observed.get(&r.address).cloned().unwrap_or(Observed::Absent)))
            .collect();
        for (address, observed) in &self.observed {
            resources.entry(address.clone()).or_insert_with(|| observed.clone());
        }
        Ok(resources.into())
    }

    async fn apply(&self, change: &Change, _: &dyn Progress) -> Result<Applied, ReconcileError> {
        self.record(format!("apply {}", change.address));
        if self.hang.contains(&change.address.name) {
            std::future::pending::<()>().await;
        }
        if let Some((name, done)) = &self.slow
            && *name == change.address.name
        {
            done.clone().await;
        }
        if self.fail.contains(&change.address.name) {
            return Err(ReconcileError::new(Some(&change.address), "create", "boom"));
        }
        Ok(if change.address.name == "adopted" { Applied::Adopted } else { Applied::Done })
    }

    async fn survey(&self, _: &[&DesiredResource]) -> Result<Vec<crate::Finding>, ReconcileError> {
        self.record("survey".to_owned());
        Ok(Vec::new())
    }

    fn administrators_only(&self, change: &Change) -> Option<&'static str> {
        self.administrators.get(&change.address.name).copied()
    }

    /// A fake's update sets nothing another fake resource needs.
    fn frees_its_dependents(&self, change: &Change) -> bool {
        change.action == crate::plan::Action::Update
    }
}
