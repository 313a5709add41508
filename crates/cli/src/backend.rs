//! AWS as a session's [`Backend`]: the account from STS, the reconcilers with their counted
//! clients, the apply lock in the managed bucket.

use reconcile_core::{Account, Desired, ReconcileError, Reconciler};
use reconcile_ecr::usage::Usage;

use crate::aws::Aws;
use crate::error::CliError;
use crate::lock::AwsLock;
use crate::session::{ApplyLock, Backend, DriftCosts, Planned};

#[async_trait::async_trait]
impl Backend for Aws {
    async fn identify(&self) -> Result<Account, CliError> {
        self.account().await.map_err(|error| self.failed(vec![error]))
    }

    async fn caller(&self) -> Result<String, CliError> {
        self.caller_arn().await.map_err(|error| self.failed(vec![error]))
    }

    async fn trusts_github(&self, account: &Account, name: &str) -> Result<Option<bool>, CliError> {
        reconcile_iam::role_trusts_github(&self.iam(), account, name).await.map_err(|error| self.failed(vec![error]))
    }

    fn reconcilers(
        &self,
        account: &Account,
        desired: &Desired,
        prune: Option<reconcile_core::Prune>,
        destroy: Option<reconcile_core::Destroy>,
    ) -> Vec<Box<dyn Reconciler>> {
        Aws::reconcilers(self, &crate::catalog::CRATES, account, desired, prune, destroy)
    }

    async fn attribute(&self, planned: &mut Planned, desired: &Desired, days: u32) {
        crate::attribution::attribute(self, planned, desired, days).await;
    }

    async fn registry(&self, account: &Account, desired: &Desired) -> Result<Usage, CliError> {
        crate::registry::registry_usage(self, account, desired).await
    }

    async fn costs(
        &self,
        plan: &reconcile_core::Plan,
        desired: &Desired,
        account: &Account,
    ) -> Vec<reconcile_core::plan::CostFigure> {
        crate::costs::costs(self, plan, desired, account).await
    }

    async fn drift_costs(&self, plan: &reconcile_core::Plan, registry: &Usage, desired: &Desired) -> DriftCosts {
        crate::costs::drift(self, plan, registry, desired).await
    }

    fn lock(&self, account: &Account, desired: &Desired) -> Option<Box<dyn ApplyLock + '_>> {
        AwsLock::of(self, desired, account).map(|lock| Box::new(lock) as Box<dyn ApplyLock>)
    }

    fn parallelism(&self) -> usize {
        self.parallelism
    }

    fn requests(&self) -> String {
        Aws::requests(self)
    }

    fn failed(&self, errors: Vec<ReconcileError>) -> CliError {
        Aws::failed(self, errors)
    }
}
