//! The apply protocol: look, preflight, lock, plan again under the lock, approve, apply,
//! release; from the lock on a signal at any step ends the run and the lock is released.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use reconcile_core::engine::{self, ApplyOptions, ApplyReport, Refusal};
use reconcile_core::{Account, Reconciler};
use reconcile_render::saved::SavedPlan;

use super::{ApplyLock, ApplyRequest, Backend, Console, Interrupts, PlanFrom, Planned, Session, input, refuse_on};
use crate::error::CliError;
use crate::exit;
use crate::files;

/// How long letting go of the lock may take after an interruption: whoever sent the signal
/// wants out.
const RELEASE_AFTER_INTERRUPT: Duration = Duration::from_secs(5);

impl<B: Backend> Session<B> {
    /// Every refusal of a plan before its first write: error findings about desired.toml, the
    /// engine's preflight of what will be carried out (deletes without `--allow-delete`, a
    /// reconciler's own refusal), and a destroy as a CI role of what only an administrator
    /// deletes. What an apply as a CI role leaves for an administrator is not refused: it is left.
    async fn preflight(&self, planned: &Planned, allow_delete: bool) -> Result<Left, CliError> {
        refuse_on(&planned.plan.findings)?;
        let left = self.left_for_administrators(&planned.account, &planned.reconcilers, &planned.plan).await?;
        engine::preflight(&planned.reconcilers, &planned.plan, allow_delete, &left.changes).map_err(refused)?;
        Ok(left)
    }

    /// The changes of `plan` this apply leaves for an administrator: none unless the caller is
    /// CI (a session of a role desired.toml names in `[ci]`, compared as IAM compares names,
    /// without case, or of any live role that trusts GitHub's OIDC provider), and then every
    /// change only an administrator makes, which the CI role's policy grants none of. Who the
    /// caller is comes from the account, so renaming or removing a CI role in desired.toml
    /// changes nothing. A destroy is one decision, so a CI role's destroy of any of them is
    /// refused whole.
    async fn left_for_administrators(
        &self,
        account: &Account,
        reconcilers: &[Box<dyn Reconciler>],
        plan: &reconcile_core::Plan,
    ) -> Result<Left, CliError> {
        let administrators = engine::administrator_changes(reconcilers, &plan.changes, &plan.takeovers);
        if administrators.is_empty() {
            return Ok(Left::default());
        }
        let Some(who) = self.ci_caller(account).await? else { return Ok(Left::default()) };
        if self.inputs.destroy.is_some() {
            return Err(CliError::Refused(format!(
                "this destroy deletes {}, and these credentials are {who}: a CI role never makes these changes (the \
                 apply role's policy grants none of them); an administrator destroys",
                reconcile_core::plan::grouped(&administrators).join("; "),
            )));
        }
        Ok(Left { who, changes: administrators })
    }

    /// Whether this caller leaves every change of the saved plan `file` for an administrator,
    /// refusing it first when it may not make it at all, then when it cannot be checked.
    async fn leaves_everything(&self, account: &Account, file: &SavedPlan, path: &Path) -> Result<bool, CliError> {
        let reconcilers = self.reconcilers(account, None);
        let left = self.left_for_administrators(account, &reconcilers, &file.plan).await?;
        self.admit_saved(file, path)?;
        Ok(!left.changes.is_empty() && left.changes.len() == file.plan.changes.len())
    }

    /// A first look, without the lock: an apply with nothing to do writes nothing, not even a
    /// lock object, so a scheduled apply of an account that matches stays read-only; every
    /// refusal comes before the lock, so a refused plan takes none, nor one whose every change is
    /// left for an administrator. `Some` when the apply ends here.
    async fn look(
        &self,
        console: &dyn Console,
        account: &Account,
        request: ApplyRequest<'_>,
    ) -> Option<Result<u8, CliError>> {
        let look = match self.plan_in(account.clone(), self.inputs.prune.clone()).await {
            Ok(look) => look,
            Err(error) => return Some(Err(error)),
        };
        if !look.plan.has_changes() {
            return Some(self.carry_out(console, &look, request, &mut Interrupts::none(), None).await);
        }
        match self.preflight(&look, request.allow_delete).await {
            Err(refusal) => Some(console.plan(&self.shown(&look, request.shown_in_public)).and(Err(refusal))),
            Ok(left) if left.changes.len() == look.plan.changes.len() => {
                Some(self.carry_out(console, &look, request, &mut Interrupts::none(), None).await)
            }
            Ok(_) => None,
        }
    }

    /// Who the caller is when it is a CI role, in words; `None` for anyone else.
    async fn ci_caller(&self, account: &Account) -> Result<Option<String>, CliError> {
        let caller = self.backend.caller().await?;
        // A user, or the account's root: not a role GitHub can assume.
        let Some(role) = role_of_session(&caller) else { return Ok(None) };
        let declared = reconcile_iam::declared_ci(&self.inputs.desired)
            .iter()
            .flat_map(|ci| &ci.roles)
            .find(|r| r.name.eq_ignore_ascii_case(role));
        Ok(match declared {
            Some(declared) => Some(format!("the {} role `{role}` ({caller})", declared.purpose.key())),
            None => match self.backend.trusts_github(account, role).await? {
                Some(false) => None,
                Some(true) => Some(format!("role `{role}` ({caller}), which trusts GitHub's OIDC provider")),
                None => Some(format!(
                    "role `{role}` ({caller}), which may not read its own trust, so it cannot be told apart from a CI \
                     role"
                )),
            },
        })
    }

    pub async fn apply(&self, console: &dyn Console, request: ApplyRequest<'_>) -> Result<u8, CliError> {
        // A saved plan is read before anything is locked: a file that is not one locks nothing.
        let saved = match request.plan {
            PlanFrom::Saved(path) => {
                let real =
                    self.inputs.repository.typed(path).map_err(|why| input(format!("{}: {why}", path.display())))?;
                Some((files::read_saved(path, &real)?, path))
            }
            PlanFrom::Fresh => None,
        };
        let account = self.backend.identify().await?;
        match &saved {
            // What the file says it changes is enough to refuse it before the lock; when this
            // caller may make none of it, it is checked and reported, and nothing is locked.
            Some((file, path)) => {
                if self.leaves_everything(&account, file, path).await? {
                    let (file, path) = saved.expect("matched above");
                    let planned = self.verify_saved(account, file, path).await?;
                    let request = ApplyRequest { auto_approve: true, ..request };
                    return self.carry_out(console, &planned, request, &mut Interrupts::none(), None).await;
                }
            }
            None => {
                if let Some(done) = self.look(console, &account, request).await {
                    return done;
                }
            }
        }
        // Then locked before the plan that is applied is made, as Terraform does: a plan read
        // while another apply was changing the account would be applied after it, stale.
        let mut interrupts = console.interrupts()?;
        let lock = self.backend.lock(&account, &self.inputs.desired);
        let held = match &lock {
            None => {
                tracing::info!("desired.toml declares no bucket, so this apply runs without a lock");
                false
            }
            Some(lock) => tokio::select! {
                held = lock.take(request.lock_timeout) => held?,
                code = interrupts.next() => {
                    // Taking it may have written it just before the signal: let go if ours.
                    let _ = tokio::time::timeout(RELEASE_AFTER_INTERRUPT, lock.release()).await;
                    return Err(CliError::Interrupted(code));
                }
            },
        };
        let held_lock = lock.as_deref().filter(|_| held);
        let result = self.apply_locked(console, account, saved, request, &mut interrupts, held_lock).await;
        match (&lock, held) {
            (Some(lock), true) => {
                let released = match &result {
                    Err(CliError::Interrupted(_)) => {
                        tokio::time::timeout(RELEASE_AFTER_INTERRUPT, lock.release()).await.unwrap_or_else(|_| {
                            Err(CliError::Other(anyhow::anyhow!(
                                "the apply lock was not released in time; `reconcile unlock` breaks it"
                            )))
                        })
                    }
                    _ => lock.release().await,
                };
                released.and(result)
            }
            _ => result,
        }
    }

    /// Everything an apply does while it holds the lock: plan (or verify the saved plan), show,
    /// approve, apply. A signal at any step ends it.
    async fn apply_locked(
        &self,
        console: &dyn Console,
        account: Account,
        saved: Option<(SavedPlan, &Path)>,
        request: ApplyRequest<'_>,
        interrupts: &mut Interrupts,
        lock: Option<&dyn ApplyLock>,
    ) -> Result<u8, CliError> {
        // A saved plan was approved when it was reviewed.
        let request = ApplyRequest { auto_approve: request.auto_approve || saved.is_some(), ..request };
        let planning = async {
            match saved {
                Some((saved, path)) => self.verify_saved(account, saved, path).await,
                None => self.plan_in(account, self.inputs.prune.clone()).await,
            }
        };
        let planned = tokio::select! {
            planned = planning => planned?,
            code = interrupts.next() => return Err(CliError::Interrupted(code)),
        };
        self.carry_out(console, &planned, request, interrupts, lock).await
    }

    /// The plan as this apply shows it: whole, or as a public page may say it (its desired.toml
    /// is the default branch's after a merge, so everything it declares is shown).
    fn shown(&self, planned: &Planned, public: bool) -> reconcile_core::Plan {
        if !public {
            return planned.plan.clone();
        }
        let audience = self.inputs.public_audience(planned);
        reconcile_core::audience::publish(planned.plan.clone(), &planned.resources, &audience)
    }

    /// Shows the plan, refuses it or asks for approval, and applies it.
    async fn carry_out(
        &self,
        console: &dyn Console,
        planned: &Planned,
        request: ApplyRequest<'_>,
        interrupts: &mut Interrupts,
        lock: Option<&dyn ApplyLock>,
    ) -> Result<u8, CliError> {
        let plan = &planned.plan;
        console.plan(&self.shown(planned, request.shown_in_public))?;
        refuse_on(&plan.findings)?;
        if !plan.has_changes() {
            // A machine-readable report is still a report: one of nothing done (or of what could
            // not even be read).
            let report = ApplyReport { unreadable: engine::unreadable(plan), ..ApplyReport::default() };
            console.report(plan, &report)?;
            return if report.succeeded() { Ok(exit::OK) } else { Err(CliError::ApplyFailed) };
        }
        let left = self.preflight(planned, request.allow_delete).await?;
        if !left.changes.is_empty() {
            console.warn(&format!(
                "These credentials are {}: a CI role never makes a change only an administrator makes, so this apply \
                 leaves {} and makes the rest.",
                left.who,
                reconcile_core::plan::grouped(&left.changes).join("; ")
            ));
        }
        if left.changes.len() < plan.changes.len() && !request.auto_approve {
            let approved = tokio::select! {
                answer = console.approve() => answer?,
                code = interrupts.next() => return Err(CliError::Interrupted(code)),
            };
            if !approved {
                return Err(CliError::Cancelled);
            }
        }
        console.line("");
        self.run(console, planned, Carry { allow_delete: request.allow_delete, left: &left.changes, lock }, interrupts)
            .await
    }

    /// The changes themselves. The first signal starts no more changes and lets the running ones
    /// finish; a second stops at once. The lock's lease is renewed while they run; a lock this
    /// run no longer holds (its lease ran out and another apply broke it) starts no more either.
    async fn run(
        &self,
        console: &dyn Console,
        planned: &Planned,
        carry: Carry<'_>,
        interrupts: &mut Interrupts,
    ) -> Result<u8, CliError> {
        let Carry { allow_delete, left, lock } = carry;
        let stop = AtomicBool::new(false);
        let options = ApplyOptions { allow_delete, left, concurrency: self.backend.parallelism(), stop: Some(&stop) };
        let applying = engine::apply(&planned.reconcilers, &planned.plan, options, console.events());
        tokio::pin!(applying);
        let mut ticks = tokio::time::interval(Duration::from_millis(120));
        // (Without a lock the renewals never come due: the guard below never lets them.)
        let every = lock.map_or(Duration::from_secs(24 * 60 * 60), |lock| lock.renew_every());
        let mut renewals = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        let mut interrupted: Option<u8> = None;
        let mut lost: Option<String> = None;
        let result = loop {
            tokio::select! {
                result = &mut applying => break result,
                _ = ticks.tick() => {
                    console.tick();
                    // A lease run out between renewals (each failed) starts nothing more, at once.
                    if lost.is_none() && lock.is_some_and(|lock| lock.expired()) {
                        lost = Some("its lease ran out, and no renewal went through".to_owned());
                        stop.store(true, Ordering::SeqCst);
                        console.warn("This apply's lock lease ran out unrenewed: starting no more changes; the running ones finish.");
                    }
                }
                _ = renewals.tick(), if lock.is_some() && lost.is_none() => {
                    lost = still_held(lock.expect("checked by the guard"), console).await.err();
                    if lost.is_some() {
                        stop.store(true, Ordering::SeqCst);
                    }
                }
                code = interrupts.next() => {
                    if interrupted.is_some() {
                        // A second interruption: whoever sent it wants out now, so the changes in
                        // flight are dropped where they stand.
                        console.warn("\nInterrupted again: stopping at once; changes in flight may be half made (apply again to finish).");
                        return Err(CliError::Interrupted(code));
                    }
                    interrupted = Some(code);
                    stop.store(true, Ordering::SeqCst);
                    console.line("Interrupted: starting no more changes, letting the running ones finish (interrupt again to stop at once).");
                }
            }
        };
        console.finish();
        let report = result.map_err(refused)?;
        tracing::info!("plan and apply: {}", self.backend.requests());
        console.line("");
        console.report(&planned.plan, &report)?;
        if let Some(why) = lost {
            return Err(CliError::Other(anyhow::anyhow!(
                "this apply lost the apply lock while it ran ({why}): no change started after that; plan and apply \
                 again"
            )));
        }
        match interrupted {
            Some(code) => Err(CliError::Interrupted(code)),
            // The account still differs, by what only an administrator changes.
            None if report.succeeded() && !report.left().is_empty() => Ok(exit::CHANGES),
            None if report.succeeded() => Ok(exit::OK),
            None => Err(CliError::ApplyFailed),
        }
    }
}

/// How the changes are carried out: deletes allowed or not, what is left for an administrator,
/// and the lock this run holds, if any.
struct Carry<'a> {
    allow_delete: bool,
    left: &'a [(reconcile_core::Address, String)],
    lock: Option<&'a dyn ApplyLock>,
}

/// Renews `lock`'s lease: `Err` with why when this run no longer holds it (broken by another
/// apply, or run out without a renewal), after which no change may start; a renewal that fails
/// while the lease still runs is said, and tried again at the next.
async fn still_held(lock: &dyn ApplyLock, console: &dyn Console) -> Result<(), String> {
    match lock.renew().await {
        Ok(true) => Ok(()),
        Ok(false) => Err("another apply broke it, its lease having run out, or `reconcile unlock` did".to_owned()),
        Err(error) if lock.expired() => {
            Err(format!("its lease ran out and could not be renewed: {}", error.render().join("; ")))
        }
        Err(error) => {
            console.warn(&format!(
                "The apply lock's lease could not be renewed; tried again before it runs out: {}",
                error.render().join("; ")
            ));
            Ok(())
        }
    }
    .inspect_err(|why| {
        console.warn(&format!(
            "This apply no longer holds the apply lock: {why}. Starting no more changes; the running ones finish."
        ));
    })
}

/// What an apply leaves for an administrator: who the CI caller is, in words, and each change
/// with why.
#[derive(Default)]
struct Left {
    who: String,
    changes: Vec<(reconcile_core::Address, String)>,
}

fn refused(refusal: Refusal) -> CliError {
    CliError::Refused(refusal.to_string())
}

/// The role of an assumed-role session's ARN: STS names one
/// `arn:PARTITION:sts::ACCOUNT:assumed-role/ROLE/SESSION`.
fn role_of_session(caller: &str) -> Option<&str> {
    let (prefix, rest) = caller.split_once(":assumed-role/")?;
    let (name, _session) = rest.split_once('/')?;
    (prefix.starts_with("arn:") && !name.is_empty()).then_some(name)
}
