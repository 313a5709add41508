//! Drift put back by the scheduled check (`drift --put-back`): of the drift it found, the changes
//! of the kinds `[drift] put_back` names that reconcile_core::put_back chooses, made under the
//! apply lock from a plan made again under it, and nothing else. It never fails the check: what
//! could not be put back is said, and stays drift.

use std::time::Duration;

use reconcile_core::describe::PutBack;
use reconcile_core::engine::{self, ApplyOptions};
use reconcile_core::schedule::Outcome;
use reconcile_core::{Action, Address};

use super::{Backend, Planned, Session};
use crate::error::CliError;

/// How long a put-back waits for an apply that holds the lock: the check runs again within the
/// hour, so it does not wait long.
const LOCK_WAIT: Duration = Duration::from_secs(60);

/// What a put-back did.
#[derive(Debug, Default)]
pub struct PutBackReport {
    /// Each change made, with when (seconds since the epoch).
    pub made: Vec<(Address, Action, i64)>,
    /// Each change tried that failed, with why.
    pub failed: Vec<(Address, String)>,
    /// What else went wrong: why nothing was tried though something could have been put back,
    /// or that the lock was not let go of.
    pub trouble: Option<String>,
}

impl<B: Backend> Session<B> {
    /// Puts back what `found` (the drift check's plan) differs in of the `kinds` named, as these
    /// credentials may. Takes the lock only when there is something to put back, and plans again
    /// under it: what is put back is what the account differs in then.
    pub async fn put_back(&self, found: &Planned, kinds: &[&PutBack]) -> PutBackReport {
        if left_of(found, kinds).is_none() {
            return PutBackReport::default();
        }
        let not_tried = |why: String| PutBackReport {
            trouble: Some(format!("nothing was put back: {why}")),
            ..PutBackReport::default()
        };
        if let Err(refused) = super::refuse_on(&found.plan.findings) {
            return not_tried(format!("the plan is refused: {}", said(&refused)));
        }
        let lock = self.backend.lock(&found.account, &self.inputs.desired);
        if let Some(lock) = &lock
            && let Err(error) = lock.take(LOCK_WAIT).await
        {
            return not_tried(format!("the apply lock could not be taken: {}", said(&error)));
        }
        let report = self.put_back_locked(found, kinds).await;
        let released = match &lock {
            Some(lock) => lock.release().await,
            None => Ok(()),
        };
        match (report, released) {
            (Ok(report), Ok(())) => report,
            (Ok(report), Err(error)) => {
                PutBackReport { trouble: Some(format!("the apply lock was not let go of: {}", said(&error))), ..report }
            }
            (Err(error), _) => not_tried(said(&error)),
        }
    }

    async fn put_back_locked(&self, found: &Planned, kinds: &[&PutBack]) -> Result<PutBackReport, CliError> {
        let planned = self.plan_in(found.account.clone(), self.inputs.prune.clone()).await?;
        let Some(left) = left_of(&planned, kinds) else { return Ok(PutBackReport::default()) };
        let options =
            ApplyOptions { allow_delete: false, left: &left, concurrency: self.backend.parallelism(), stop: None };
        let applied = engine::apply(&planned.reconcilers, &planned.plan, options, &reconcile_core::reconciler::Silent)
            .await
            .map_err(|refusal| CliError::Refused(refusal.to_string()))?;
        let mut report = PutBackReport::default();
        for (address, action, outcome, _) in applied.results {
            match outcome {
                Outcome::Applied | Outcome::Adopted => report.made.push((address, action, reconcile_core::time::now())),
                Outcome::Left { .. } => {}
                Outcome::Failed(error) => report.failed.push((address, error.to_string())),
                Outcome::Skipped { because } => report.failed.push((address, format!("`{because}` failed first"))),
                Outcome::NotStarted => report.failed.push((address, "not started".to_owned())),
            }
        }
        Ok(report)
    }
}

/// What a put-back of `kinds` leaves of `planned`, each change with why; `None` when it leaves
/// every change (nothing to put back).
fn left_of(planned: &Planned, kinds: &[&PutBack]) -> Option<Vec<(Address, String)>> {
    let left = reconcile_core::put_back::left(&planned.reconcilers, &planned.plan, kinds);
    (left.len() < planned.plan.changes.len()).then_some(left)
}

/// An error in one line, as `main` would print it.
fn said(error: &CliError) -> String {
    error.render().join("; ")
}
