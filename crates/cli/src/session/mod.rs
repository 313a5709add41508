//! One run of `reconcile`: what it is made from (desired.toml, the bake file, the GitHub side,
//! the flags) and the protocol of a plan, a drift check and an apply, in one place.
//!
//! Commands parse their arguments, open a session and print what it returns. The session reaches
//! AWS only through a [`Backend`] (the real one is [`crate::aws::Aws`]), the person or job running
//! it only through a [`Console`], and hears of SIGINT and SIGTERM through [`Interrupts`], so its
//! unit tests run the whole protocol against core's fake reconciler.
//!
//! An apply is, in this order: look (a plan without the lock: with nothing to do, nothing is
//! written, not even the lock), preflight (every refusal, so a refused plan takes no lock), lock,
//! plan again under the lock (what is applied is what is printed), approve, apply, release. From
//! the lock on, a signal at any step (waiting for the lock, planning, the prompt, applying) ends
//! the run and the lock is released, on every path.

mod apply;
mod inputs;
mod plan;
mod ports;
mod put_back;
mod saved;
mod signals;
#[cfg(test)]
mod tests;

use reconcile_core::engine::{self, PlanOptions, WhenUnreadable};
use reconcile_core::{Account, Reconciler};

use inputs::input;
pub use inputs::{Inputs, Load, bake_check, desired_resources, refuse_on};
pub use plan::{Audience, Shown};
pub use ports::{ApplyLock, ApplyRequest, Backend, Console, Drift, DriftCosts, PlanFrom, Planned};
pub use put_back::PutBackReport;
pub use signals::Interrupts;

use crate::error::CliError;
use crate::github::GithubSide;

/// One run.
pub struct Session<B> {
    backend: B,
    inputs: Inputs,
    github: GithubSide,
    when_unreadable: WhenUnreadable,
}

impl<B: Backend> Session<B> {
    /// `when_unreadable`: whether a service that cannot be read fails the plan (plan, drift) or
    /// only its own resources and what depends on them (apply).
    pub fn new(backend: B, inputs: Inputs, github: GithubSide, when_unreadable: WhenUnreadable) -> Session<B> {
        Session { backend, inputs, github, when_unreadable }
    }

    pub fn inputs(&self) -> &Inputs {
        &self.inputs
    }

    /// What `plan`'s changes do to the monthly bill (see [`Backend::costs`]).
    pub async fn costs(&self, plan: &reconcile_core::Plan, account: &Account) -> Vec<reconcile_core::plan::CostFigure> {
        self.backend.costs(plan, &self.inputs.desired, account).await
    }

    /// Whether the GitHub side is planned (a token, for the repository desired.toml names).
    pub fn checks_github(&self) -> bool {
        self.github.is_checked()
    }

    /// A complete plan: every reconciler's observations diffed, with the findings of
    /// desired.toml, the bake file and the GitHub side, ranked once, by the engine; with
    /// `attribute`, who made each difference in the last so many days. Never writes.
    pub async fn plan(&self, attribute: Option<u32>) -> Result<Planned, CliError> {
        let account = self.backend.identify().await?;
        let mut planned = self.plan_in(account, self.inputs.prune.clone()).await?;
        if let Some(days) = attribute {
            self.backend.attribute(&mut planned, &self.inputs.desired, days).await;
        }
        Ok(planned)
    }

    /// The scheduled drift check: the plan with what the account holds that desired.toml does
    /// not declare, who made each difference in the last `since_days`, and what the registry
    /// holds and costs (which only informs). Never writes.
    pub async fn drift(&self, since_days: u32) -> Result<Drift, CliError> {
        let account = self.backend.identify().await?;
        let mut planned = self.plan_in(account, self.inputs.prune.clone()).await?;
        engine::survey(&planned.reconcilers, &planned.resources, &mut planned.plan)
            .await
            .map_err(|errors| self.backend.failed(errors))?;
        self.backend.attribute(&mut planned, &self.inputs.desired, since_days).await;
        let registry = self.backend.registry(&planned.account, &self.inputs.desired).await?;
        let costs = self.backend.drift_costs(&planned.plan, &registry, &self.inputs.desired).await;
        tracing::info!("drift: {}", self.backend.requests());
        Ok(Drift { planned, registry, costs })
    }

    pub(super) async fn plan_in(
        &self,
        account: Account,
        prune: Option<reconcile_core::Prune>,
    ) -> Result<Planned, CliError> {
        self.plan_of(&self.inputs, account, prune).await
    }

    /// The plan `inputs` (this run's, or another desired.toml's) make of the account.
    pub async fn plan_of(
        &self,
        inputs: &Inputs,
        account: Account,
        prune: Option<reconcile_core::Prune>,
    ) -> Result<Planned, CliError> {
        let desired = &inputs.desired;
        let resources = desired_resources(&crate::catalog::CATALOG, desired, &account, self.github.is_checked())
            .map_err(|errors| self.backend.failed(errors))?;
        let mut reconcilers = self.backend.reconcilers(&account, desired, prune, inputs.destroy);
        reconcilers.extend(self.github.reconciler(desired));
        // What the bake file names is what to make, not what to delete.
        let bake = if inputs.destroy.is_some() { Vec::new() } else { inputs.bake_findings(Some(&account.id)) };
        let findings = self.github.finding().into_iter().chain(bake).collect();
        let options =
            PlanOptions { when_unreadable: self.when_unreadable, findings, destroy: inputs.destroy.is_some() };
        let mut plan = engine::plan_with(&reconcilers, desired, &resources, &account, options)
            .await
            .map_err(|errors| self.backend.failed(errors))?;
        plan.made_by = Some(crate::PLANNED_BY.to_owned());
        tracing::info!("plan: {}", self.backend.requests());
        Ok(Planned { plan, reconcilers, resources, account })
    }

    /// What the account holds that `planned`'s desired.toml does not declare, as every
    /// reconciler of the plan reads it for `import --generate`. Never writes.
    pub async fn inventory(&self, planned: &Planned) -> Result<Vec<reconcile_core::generate::Found>, CliError> {
        let reads = planned.reconcilers.iter().map(|reconciler| {
            let kinds = reconciler.kinds();
            let desired: Vec<&reconcile_core::DesiredResource> =
                planned.resources.values().filter(|r| kinds.contains(&r.address.kind)).collect();
            async move { reconciler.inventory(&desired).await }
        });
        let mut found = Vec::new();
        let mut errors = Vec::new();
        for read in futures::future::join_all(reads).await {
            match read {
                Ok(more) => found.extend(more),
                Err(error) => errors.push(error),
            }
        }
        if !errors.is_empty() {
            return Err(self.backend.failed(errors));
        }
        Ok(found)
    }

    /// AWS's reconcilers, and GitHub's when it can be checked.
    pub(super) fn reconcilers(
        &self,
        account: &Account,
        prune: Option<reconcile_core::Prune>,
    ) -> Vec<Box<dyn Reconciler>> {
        let mut reconcilers = self.backend.reconcilers(account, &self.inputs.desired, prune, self.inputs.destroy);
        reconcilers.extend(self.github.reconciler(&self.inputs.desired));
        reconcilers
    }
}
