//! The session's ports: where its reads and writes go ([`Backend`]: AWS, or a fake), the apply
//! lock, and the person or job an apply answers to ([`Console`]); and what passes between them.

use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;
use reconcile_core::engine::{ApplyEvents, ApplyReport, DesiredResources};
use reconcile_core::{Account, Desired, Plan, ReconcileError, Reconciler};
use reconcile_ecr::usage::Usage;

use super::Interrupts;
use crate::error::CliError;

/// Where a session's reads and writes go: AWS ([`crate::aws::Aws`]), or a fake in the tests.
#[async_trait]
pub trait Backend: Send + Sync {
    /// The account and region the credentials are for.
    async fn identify(&self) -> Result<Account, CliError>;
    /// Who the credentials are: the caller's ARN (`arn:aws:sts::ID:assumed-role/NAME/SESSION`
    /// for a role).
    async fn caller(&self) -> Result<String, CliError>;
    /// Whether the live role `name` trusts GitHub's OIDC provider: `None` when these credentials
    /// may not read it.
    async fn trusts_github(&self, account: &Account, name: &str) -> Result<Option<bool>, CliError>;
    /// A reconciler per AWS resource crate; ECR's prunes when `prune` says how, and each deletes
    /// its own kinds for `destroy`.
    fn reconcilers(
        &self,
        account: &Account,
        desired: &Desired,
        prune: Option<reconcile_core::Prune>,
        destroy: Option<reconcile_core::Destroy>,
    ) -> Vec<Box<dyn Reconciler>>;
    /// Who made each difference in `planned`'s plan, from the account's change history of the
    /// last `days`, put into the plan. Never fails the run: what could not be told is said there.
    async fn attribute(&self, planned: &mut Planned, desired: &Desired, days: u32);
    /// What the registry holds and costs, for the drift check's summary.
    async fn registry(&self, account: &Account, desired: &Desired) -> Result<Usage, CliError>;
    /// What `plan`'s changes do to the monthly bill (its cost line), read only for the changes
    /// that touch it. Never fails the run: what could not be read is said in the figure.
    async fn costs(&self, plan: &Plan, desired: &Desired, account: &Account) -> Vec<reconcile_core::plan::CostFigure>;
    /// What each difference of a drift check's `plan` that changes what the registry or the cache
    /// keeps costs while it stays, from what `registry` read and what the bucket measured.
    /// Never fails the run, like [`Backend::costs`].
    async fn drift_costs(&self, plan: &Plan, registry: &Usage, desired: &Desired) -> DriftCosts;
    /// The apply lock, when desired.toml declares a place for one.
    fn lock(&self, account: &Account, desired: &Desired) -> Option<Box<dyn ApplyLock + '_>>;
    /// The most changes applied at once.
    fn parallelism(&self) -> usize;
    /// What was sent so far, for the log.
    fn requests(&self) -> String;
    /// The error that `errors` of the backend's services are, for the person at the terminal.
    fn failed(&self, errors: Vec<ReconcileError>) -> CliError;
}

/// The apply lock: two applies never run at once.
#[async_trait]
pub trait ApplyLock: Send + Sync {
    /// Takes it, waiting up to `wait` for another apply to let go. `Ok(true)` when this run
    /// holds it and must release it; `Ok(false)` when there is nowhere to keep one yet.
    async fn take(&self, wait: Duration) -> Result<bool, CliError>;
    /// Lets go of this run's lock; one it does not hold (anyone else's) is left alone.
    async fn release(&self) -> Result<(), CliError>;
    /// Extends the lease of the lock this run holds, if it still does: `Ok(false)` when it does
    /// not (its lease ran out and another apply broke it, or `reconcile unlock` did).
    async fn renew(&self) -> Result<bool, CliError>;
    /// How often [`ApplyLock::renew`] is due: a fraction of the lease, so that a renewal that
    /// fails is tried again before the lease runs out.
    fn renew_every(&self) -> Duration;
    /// Whether the lease this run last wrote has run out, by this host's clock.
    fn expired(&self) -> bool;
}

/// The person or job an apply answers to.
pub trait Console: Send + Sync {
    /// Shows the plan apply is about to carry out (or refuses).
    fn plan(&self, plan: &Plan) -> Result<(), CliError>;
    /// Asks whether to apply it.
    fn approve(&self) -> BoxFuture<'static, Result<bool, CliError>>;
    /// SIGINT and SIGTERM from now on. Until then they end the process at once, which is right
    /// while nothing is held.
    fn interrupts(&self) -> Result<Interrupts, CliError>;
    /// Where apply reports each change as it starts and finishes it.
    fn events(&self) -> &dyn ApplyEvents;
    /// Called every tick while changes are applied (a spinner).
    fn tick(&self);
    /// A line among the progress.
    fn line(&self, text: &str);
    /// A line on stderr, whatever the format.
    fn warn(&self, text: &str);
    /// The progress is over (a spinner is cleared).
    fn finish(&self);
    /// What apply did.
    fn report(&self, plan: &Plan, report: &ApplyReport) -> Result<(), CliError>;
}

/// Where an apply's plan comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanFrom<'a> {
    /// Made now, under the lock.
    Fresh,
    /// A saved plan (`plan --out`) to carry out exactly, if it still holds.
    Saved(&'a Path),
}

/// What an apply is asked to do.
#[derive(Debug, Clone, Copy)]
pub struct ApplyRequest<'a> {
    pub plan: PlanFrom<'a>,
    pub auto_approve: bool,
    pub allow_delete: bool,
    /// How long to wait for another apply's lock.
    pub lock_timeout: Duration,
    /// The plan it shows is a public page's (a GitHub Actions job's log): what desired.toml
    /// does not declare is counted, not named. What it applies is the same.
    pub shown_in_public: bool,
}

/// A drift check's findings: the plan (with what is undeclared and who made each difference),
/// and what the registry holds.
pub struct Drift {
    pub planned: Planned,
    pub registry: Usage,
    pub costs: DriftCosts,
}

/// A monthly figure for each difference that has one, by its address.
pub type DriftCosts = std::collections::BTreeMap<reconcile_core::Address, reconcile_core::plan::CostFigure>;

/// A complete plan and what it was made from, for what comes next.
pub struct Planned {
    pub plan: Plan,
    pub reconcilers: Vec<Box<dyn Reconciler>>,
    pub resources: DesiredResources,
    pub account: Account,
}
