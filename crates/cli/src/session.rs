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

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use async_trait::async_trait;
use futures::future::BoxFuture;
use reconcile_core::engine::{
    self, ApplyEvents, ApplyOptions, ApplyReport, DesiredResources, PlanOptions, Refusal, WhenUnreadable,
};
use reconcile_core::saved::{self, SavedPlan};
use reconcile_core::{Account, Desired, DesiredResource, Finding, Plan, ReconcileError, Reconciler};

use crate::error::CliError;
use crate::exit;
use crate::files;
use crate::github::GithubSide;
use reconcile_bake::BakeFile;

/// What a run is made from besides AWS, read and checked before any AWS call (or even the AWS
/// configuration): bad input stops here, every problem at once.
pub struct Inputs {
    /// Where desired.toml is: what it names is read only inside it.
    pub repository: files::Repository,
    pub desired: Desired,
    /// desired.toml as read, which a saved plan fingerprints.
    pub desired_text: String,
    pub bake: Option<BakeFile>,
    /// `--prune`: how the ECR reconciler recognizes what it may delete.
    pub prune: Option<reconcile_ecr::Prune>,
}

impl Inputs {
    /// Reads desired.toml (and the bake file: `bake`, or desired.toml's own), and checks what is
    /// derived from it (the role's policy and its size) with a stand-in account: ids are always
    /// 12 digits, so sizes hold.
    pub fn load(path: &Path, bake: Option<&Path>, prune: bool, force_delete_images: bool) -> Result<Inputs, CliError> {
        let repository = files::Repository::of(path)?;
        let (desired, desired_text) = files::load_desired(path)?;
        let stand_in = Account::new("000000000000", &desired.region);
        desired_resources(&desired, &stand_in, true).map_err(|errors| {
            CliError::Input(errors.iter().map(|error| format!("{}: {error}", path.display())).collect())
        })?;
        let bake = match (bake, &desired.bake) {
            (Some(typed), _) => {
                let real = repository.typed(typed).map_err(|why| input(format!("{}: {why}", typed.display())))?;
                Some(load_bake(typed, &real, &desired)?)
            }
            (None, Some(named)) => {
                let real = repository.named(&named.path).map_err(|why| {
                    CliError::Input(vec![
                        named.error(format!("the bake file {}: {why}", named.path.display())).to_string(),
                    ])
                })?;
                Some(load_bake(&named.path, &real, &desired)?)
            }
            (None, None) => None,
        };
        let prune = match prune {
            true => Some(reconcile_ecr::Prune {
                marker: reconcile_ecr::prune_marker(&desired).map_err(|why| CliError::Input(vec![why]))?,
                force_delete_images,
            }),
            false => None,
        };
        Ok(Inputs { repository, desired, desired_text, bake, prune })
    }

    /// What the bake cross-check finds, for `account` when it is known (any account's registry
    /// in the region otherwise).
    pub fn bake_findings(&self, account: Option<&str>) -> Vec<Finding> {
        self.bake.iter().flat_map(|bake| bake.check(&self.desired, account).findings).collect()
    }

    /// What the files themselves hold for a reviewer (desired.toml's findings and the bake
    /// cross-check's), ranked.
    pub fn findings(&self, account: Option<&str>) -> Vec<Finding> {
        engine::desired_findings(&self.desired, self.bake_findings(account))
    }
}

fn input(line: String) -> CliError {
    CliError::Input(vec![line])
}

/// Reads the bake file at `real` (given as `name`): its variables from the environment as bake
/// resolves them, but only those desired.toml lists, and none at all with
/// `BUILDX_BAKE_DISABLE_VARS_ENV_LOOKUP=1`, as bake.
fn load_bake(name: &Path, real: &Path, desired: &Desired) -> Result<BakeFile, CliError> {
    let name = name.display().to_string();
    let text = files::read_capped(real).map_err(|why| input(format!("{name}: failed to read the bake file: {why}")))?;
    let env = |variable: &str| {
        if std::env::var_os("BUILDX_BAKE_DISABLE_VARS_ENV_LOOKUP").is_some_and(|v| v == "1") {
            return None;
        }
        std::env::var(variable).ok()
    };
    let bake = BakeFile::read(&name, &text, &desired.bake_variables, &env).map_err(|error| match error {
        reconcile_bake::Error::Refusal(why) => CliError::RefusedInput(format!("{name}: {why}")),
        reconcile_bake::Error::Unreadable(why) => input(format!("{name}: {why}")),
    })?;
    // Whatever any part of the run prints, these values are not in it.
    crate::output::never_show(bake.redactor());
    Ok(bake)
}

type DesiredFn = fn(&Desired, &Account) -> Result<Vec<DesiredResource>, ReconcileError>;

/// Every desired resource of every resource crate (GitHub's when `github`), keyed by address.
/// Pure: no AWS.
pub fn desired_resources(
    desired: &Desired,
    account: &Account,
    github: bool,
) -> Result<DesiredResources, Vec<ReconcileError>> {
    let mut crates: Vec<DesiredFn> =
        vec![reconcile_iam::desired, reconcile_s3::desired, reconcile_ecr::desired, reconcile_codebuild::desired];
    if github {
        crates.push(reconcile_github::desired);
    }
    let mut resources = Vec::new();
    let mut errors = Vec::new();
    for desired_of in crates {
        match desired_of(desired, account) {
            Ok(list) => resources.extend(list),
            Err(error) => errors.push(error),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(engine::desired_resources(resources))
}

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
    /// A reconciler per AWS resource crate; ECR's prunes when `prune` says how.
    fn reconcilers(
        &self,
        account: &Account,
        desired: &Desired,
        prune: Option<reconcile_ecr::Prune>,
    ) -> Vec<Box<dyn Reconciler>>;
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

/// The signals a run was sent, as the exit codes a shell gives them (130 for SIGINT, 143 for
/// SIGTERM).
pub struct Interrupts {
    receiver: Option<tokio::sync::mpsc::UnboundedReceiver<u8>>,
}

impl Interrupts {
    /// SIGINT and SIGTERM, from now on, for the rest of the process.
    pub fn signals() -> Result<Interrupts, CliError> {
        use tokio::signal::unix::{SignalKind, signal};
        let listen = |kind| signal(kind).context("failed to listen for SIGINT and SIGTERM");
        let (mut interrupt, mut terminate) = (listen(SignalKind::interrupt())?, listen(SignalKind::terminate())?);
        let (sender, interrupts) = Interrupts::channel();
        tokio::spawn(async move {
            loop {
                let code = tokio::select! {
                    _ = interrupt.recv() => exit::INTERRUPTED,
                    _ = terminate.recv() => exit::TERMINATED,
                };
                if sender.send(code).is_err() {
                    break;
                }
            }
        });
        Ok(interrupts)
    }

    /// Interrupts sent by hand, for tests: each code sent is one signal.
    pub fn channel() -> (tokio::sync::mpsc::UnboundedSender<u8>, Interrupts) {
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        (sender, Interrupts { receiver: Some(receiver) })
    }

    /// None, ever: for what runs before the lock, when a signal ends the process anyway.
    pub fn none() -> Interrupts {
        Interrupts { receiver: None }
    }

    /// The next signal's exit code; never, when none can come.
    pub async fn next(&mut self) -> u8 {
        match &mut self.receiver {
            Some(receiver) => match receiver.recv().await {
                Some(code) => code,
                None => std::future::pending().await,
            },
            None => std::future::pending().await,
        }
    }
}

/// What an apply is asked to do.
#[derive(Debug, Clone, Copy)]
pub struct ApplyRequest<'a> {
    /// A saved plan to carry out exactly, instead of a new one.
    pub saved: Option<&'a Path>,
    pub auto_approve: bool,
    pub allow_delete: bool,
    /// How long to wait for another apply's lock.
    pub lock_timeout: Duration,
}

/// A complete plan and what it was made from, for what comes next.
pub struct Planned {
    pub plan: Plan,
    pub reconcilers: Vec<Box<dyn Reconciler>>,
    pub resources: DesiredResources,
    pub account: Account,
}

/// How long letting go of the lock may take after an interruption: whoever sent the signal
/// wants out.
const RELEASE_AFTER_INTERRUPT: Duration = Duration::from_secs(5);

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

    pub fn backend(&self) -> &B {
        &self.backend
    }

    pub fn inputs(&self) -> &Inputs {
        &self.inputs
    }

    /// A complete plan: every reconciler's observations diffed, with the findings of
    /// desired.toml, the bake file and the GitHub side, ranked once, by the engine. Never writes.
    pub async fn plan(&self) -> Result<Planned, CliError> {
        let account = self.backend.identify().await?;
        self.plan_in(account, self.inputs.prune.clone()).await
    }

    /// The scheduled drift check: [`Session::plan`] with what the account holds that
    /// desired.toml does not declare. Never writes.
    pub async fn drift(&self) -> Result<Planned, CliError> {
        let mut planned = self.plan().await?;
        engine::survey(&planned.reconcilers, &planned.resources, &mut planned.plan)
            .await
            .map_err(|errors| self.backend.failed(errors))?;
        Ok(planned)
    }

    async fn plan_in(&self, account: Account, prune: Option<reconcile_ecr::Prune>) -> Result<Planned, CliError> {
        let desired = &self.inputs.desired;
        let resources = self.resources(&account)?;
        let reconcilers = self.reconcilers(&account, prune);
        let findings = self.github.finding().into_iter().chain(self.inputs.bake_findings(Some(&account.id))).collect();
        let options = PlanOptions { when_unreadable: self.when_unreadable, findings };
        let mut plan = engine::plan_with(&reconcilers, desired, &resources, &account, options)
            .await
            .map_err(|errors| self.backend.failed(errors))?;
        plan.made_by = Some(crate::PLANNED_BY.to_owned());
        tracing::info!("plan: {}", self.backend.requests());
        Ok(Planned { plan, reconcilers, resources, account })
    }

    fn resources(&self, account: &Account) -> Result<DesiredResources, CliError> {
        desired_resources(&self.inputs.desired, account, self.github.is_checked())
            .map_err(|errors| self.backend.failed(errors))
    }

    /// AWS's reconcilers, and GitHub's when it can be checked.
    fn reconcilers(&self, account: &Account, prune: Option<reconcile_ecr::Prune>) -> Vec<Box<dyn Reconciler>> {
        let mut reconcilers = self.backend.reconcilers(account, &self.inputs.desired, prune);
        reconcilers.extend(self.github.reconciler(&self.inputs.desired));
        reconcilers
    }

    /// The saved plan at `path`, if it still holds: made for this account, desired.toml and
    /// every resource it touches as they were, and its changes exactly the ones desired.toml and
    /// the account give now (planned again the way it was made), none edited, added or left out.
    /// Never writes. The plan returned is the one made now, with its findings and impacts.
    pub async fn verify_saved(&self, account: Account, saved: SavedPlan, path: &Path) -> Result<Planned, CliError> {
        let stale = |reasons: Vec<String>| CliError::Stale { path: path.to_owned(), reasons };
        if saved.plan.account != account.id || saved.plan.region != account.region {
            return Err(stale(vec![format!(
                "it was made for account {} in {}, but these credentials are for account {} in {}",
                saved.plan.account, saved.plan.region, account.id, account.region
            )]));
        }
        // desired.toml's own refusals hold for a saved plan too (a refused plan is never saved).
        refuse_on(&self.inputs.findings(Some(&account.id)))?;
        self.admit_saved(&saved, path)?;
        let now = self.plan_in(account, self.inputs.prune.clone()).await?;
        let mut reasons = saved::staleness(&saved, &self.inputs.desired_text, &now.plan.observed);
        // Only when nothing moved can the changes be derived again and compared with the file's.
        if reasons.is_empty() {
            reasons = saved::tampering(&saved, &now.plan.changes);
        }
        if !reasons.is_empty() {
            return Err(stale(reasons));
        }
        Ok(now)
    }

    /// What can be told of a saved plan from the file and this run alone, before anything is
    /// locked or read. Nothing in the file decides how it is checked: it is planned again the way
    /// desired.toml and this apply say (the GitHub side whenever desired.toml declares one, so the
    /// token is needed; `--prune` only when this apply is given it), and the file must say it was
    /// made that way too, or it is not the plan this apply would make.
    fn admit_saved(&self, saved: &SavedPlan, path: &Path) -> Result<(), CliError> {
        let declared = !matches!(self.github, GithubSide::Undeclared);
        if declared && !self.github.is_checked() {
            return Err(CliError::Input(vec![format!(
                "{}: desired.toml declares [github], so a saved plan is checked with the GitHub side too, which \
                 needs a token: set GITHUB_TOKEN or GH_TOKEN",
                path.display()
            )]));
        }
        let stale = |reason: String| CliError::Stale { path: path.to_owned(), reasons: vec![reason] };
        if saved.made_with.github != declared {
            return Err(stale(if declared {
                "it says it was made without the GitHub side, but desired.toml declares [github]: plan again with a \
                 token (a plan made without one, or an edited file, is not the whole plan)"
                    .to_owned()
            } else {
                "it says it was made with the GitHub side, but desired.toml declares no [github]: the plan file was \
                 edited"
                    .to_owned()
            }));
        }
        let pruning = self.inputs.prune.is_some();
        if saved.made_with.prune != pruning {
            return Err(stale(if pruning {
                "this apply was given --prune, but the plan was made without it: plan again with --prune".to_owned()
            } else {
                "it was made with --prune: apply it with --prune too (deleting repositories is this command's to \
                 ask for, not the file's)"
                    .to_owned()
            }));
        }
        if saved.plan.changes.iter().any(reconcile_ecr::prunes) && !pruning {
            return Err(stale(
                "it deletes a repository, but was not made with --prune: the plan file was edited".to_owned(),
            ));
        }
        Ok(())
    }

    /// How a plan made by this session is made, for saving it.
    pub fn made_with(&self) -> saved::MadeWith {
        saved::MadeWith { prune: self.inputs.prune.is_some(), github: matches!(self.github, GithubSide::Checked(_)) }
    }

    /// Every refusal of a plan before its first write: error findings about desired.toml, the
    /// engine's preflight (deletes without `--allow-delete`, a reconciler's own refusal), and a
    /// change only an administrator makes asked of the apply role itself (one that could widen
    /// its own trust or permissions, or delete or open the cache's objects).
    async fn preflight(&self, planned: &Planned, allow_delete: bool) -> Result<(), CliError> {
        refuse_on(&planned.plan.findings)?;
        engine::preflight(&planned.reconcilers, &planned.plan, allow_delete).map_err(refused)?;
        self.refuse_administrators_only(&planned.account, &planned.reconcilers, &planned.plan.changes).await
    }

    /// Refuses the changes only an administrator makes when these credentials are the apply
    /// role's.
    /// Refuses `changes` when one of them is only an administrator's and the caller is CI: a
    /// session of a role desired.toml names in `[ci]` (compared as IAM compares names, without
    /// case), or of any live role that trusts GitHub's OIDC provider. Who the caller is comes from
    /// the account, so renaming or removing a CI role in desired.toml changes nothing.
    async fn refuse_administrators_only(
        &self,
        account: &Account,
        reconcilers: &[Box<dyn Reconciler>],
        changes: &[reconcile_core::Change],
    ) -> Result<(), CliError> {
        let administrators = engine::administrators_only(reconcilers, changes);
        if administrators.is_empty() {
            return Ok(());
        }
        let caller = self.backend.caller().await?;
        // A user, or the account's root: not a role GitHub can assume.
        let Some(role) = role_of_session(&caller) else { return Ok(()) };
        let declared =
            self.inputs.desired.ci.iter().flat_map(|ci| &ci.roles).find(|r| r.name.eq_ignore_ascii_case(role));
        let who = match declared {
            Some(declared) => format!("the {} role `{role}` ({caller})", declared.purpose.key()),
            None => match self.backend.trusts_github(account, role).await? {
                Some(false) => return Ok(()),
                Some(true) => format!("role `{role}` ({caller}), which trusts GitHub's OIDC provider"),
                None => format!(
                    "role `{role}` ({caller}), which may not read its own trust, so it cannot be told apart from a CI \
                     role"
                ),
            },
        };
        Err(CliError::Refused(format!(
            "this plan changes {}, and these credentials are {who}: a CI role never makes these changes (the apply \
             role's policy grants none of them); an administrator applies this plan",
            administrators.join("; "),
        )))
    }

    pub async fn apply(&self, console: &dyn Console, request: ApplyRequest<'_>) -> Result<u8, CliError> {
        // A saved plan is read before anything is locked: a file that is not one locks nothing.
        let saved = match request.saved {
            Some(path) => {
                let real =
                    self.inputs.repository.typed(path).map_err(|why| input(format!("{}: {why}", path.display())))?;
                Some(files::read_saved(path, &real)?)
            }
            None => None,
        };
        let account = self.backend.identify().await?;
        if let (Some(saved), Some(path)) = (&saved, request.saved) {
            // What the file says it changes is enough to refuse it before the lock: first whether
            // this caller may make such changes at all, then whether it can be checked.
            self.refuse_administrators_only(&account, &self.reconcilers(&account, None), &saved.plan.changes).await?;
            self.admit_saved(saved, path)?;
        }
        if saved.is_none() {
            // A first look, without the lock: an apply with nothing to do writes nothing, not
            // even a lock object, so a scheduled apply of an account that matches stays read-only.
            let look = self.plan_in(account.clone(), self.inputs.prune.clone()).await?;
            if !look.plan.has_changes() {
                return self.carry_out(console, &look, request, &mut Interrupts::none()).await;
            }
            // Every refusal before the lock: a refused plan takes none.
            if let Err(refusal) = self.preflight(&look, request.allow_delete).await {
                console.plan(&look.plan)?;
                return Err(refusal);
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
        let result = self.apply_locked(console, account, saved, request, &mut interrupts).await;
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
        saved: Option<SavedPlan>,
        request: ApplyRequest<'_>,
        interrupts: &mut Interrupts,
    ) -> Result<u8, CliError> {
        let planning = async {
            match (saved, request.saved) {
                (Some(saved), Some(path)) => self.verify_saved(account, saved, path).await,
                _ => self.plan_in(account, self.inputs.prune.clone()).await,
            }
        };
        let planned = tokio::select! {
            planned = planning => planned?,
            code = interrupts.next() => return Err(CliError::Interrupted(code)),
        };
        // A saved plan was approved when it was reviewed.
        let request = ApplyRequest { auto_approve: request.auto_approve || request.saved.is_some(), ..request };
        self.carry_out(console, &planned, request, interrupts).await
    }

    /// Shows the plan, refuses it or asks for approval, and applies it.
    async fn carry_out(
        &self,
        console: &dyn Console,
        planned: &Planned,
        request: ApplyRequest<'_>,
        interrupts: &mut Interrupts,
    ) -> Result<u8, CliError> {
        let plan = &planned.plan;
        console.plan(plan)?;
        refuse_on(&plan.findings)?;
        if !plan.has_changes() {
            // A machine-readable report is still a report: one of nothing done (or of what could
            // not even be read).
            let report = ApplyReport { unreadable: engine::unreadable(plan), ..ApplyReport::default() };
            console.report(plan, &report)?;
            return if report.succeeded() { Ok(exit::OK) } else { Err(CliError::ApplyFailed) };
        }
        self.preflight(planned, request.allow_delete).await?;
        if !request.auto_approve {
            let approved = tokio::select! {
                answer = console.approve() => answer?,
                code = interrupts.next() => return Err(CliError::Interrupted(code)),
            };
            if !approved {
                return Err(CliError::Cancelled);
            }
        }
        console.line("");
        self.run(console, planned, request.allow_delete, interrupts).await
    }

    /// The changes themselves. The first signal starts no more changes and lets the running ones
    /// finish; a second stops at once.
    async fn run(
        &self,
        console: &dyn Console,
        planned: &Planned,
        allow_delete: bool,
        interrupts: &mut Interrupts,
    ) -> Result<u8, CliError> {
        let stop = AtomicBool::new(false);
        let options = ApplyOptions { allow_delete, concurrency: self.backend.parallelism(), stop: Some(&stop) };
        let applying = engine::apply(&planned.reconcilers, &planned.plan, options, console.events());
        tokio::pin!(applying);
        let mut ticks = tokio::time::interval(Duration::from_millis(120));
        let mut interrupted: Option<u8> = None;
        let result = loop {
            tokio::select! {
                result = &mut applying => break result,
                _ = ticks.tick() => console.tick(),
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
        match interrupted {
            Some(code) => Err(CliError::Interrupted(code)),
            None if report.succeeded() => Ok(exit::OK),
            None => Err(CliError::ApplyFailed),
        }
    }
}

fn refused(refusal: Refusal) -> CliError {
    CliError::Refused(refusal.to_string())
}

/// Whether `caller` is a session of the role named `role`: STS names an assumed role's session
/// `arn:PARTITION:sts::ACCOUNT:assumed-role/ROLE/SESSION`.
/// The role of an assumed-role session's ARN (`arn:aws:sts::ID:assumed-role/NAME/SESSION`).
fn role_of_session(caller: &str) -> Option<&str> {
    let (prefix, rest) = caller.split_once(":assumed-role/")?;
    let (name, _session) = rest.split_once('/')?;
    (prefix.starts_with("arn:") && !name.is_empty()).then_some(name)
}

/// Refuses (exit 3) when an error finding is about desired.toml itself.
pub fn refuse_on(findings: &[Finding]) -> Result<(), CliError> {
    let refusing: Vec<String> = findings
        .iter()
        .filter(|finding| finding.refuses())
        .map(|finding| match &finding.address {
            Some(address) => format!("{} on {address}", finding.code),
            None => finding.code.clone(),
        })
        .collect();
    if refusing.is_empty() { Ok(()) } else { Err(CliError::RefusedFindings(refusing)) }
}

#[cfg(test)]
mod tests {
    //! The run protocol against core's fake reconciler, a fake lock and a fake console: the
    //! order of its steps, and that the lock is released on every path out of it.

    use std::sync::atomic::AtomicUsize;
    use std::sync::{Arc, Mutex};

    use reconcile_core::fake::FakeReconciler;
    use reconcile_core::{Address, Observed, ResourceKind};
    use tokio::sync::Notify;

    use super::*;

    type Log = Arc<Mutex<Vec<String>>>;

    /// Sets up the fake reconciler of the plan with the given number (the first look is 1).
    type Setup = Box<dyn Fn(usize, &mut FakeReconciler) + Send + Sync>;

    fn record(log: &Log, event: &str) {
        log.lock().unwrap().push(event.to_owned());
    }

    const DESIRED: &str = r#"region = "us-east-1"

[ecr.defaults]
lifecycle_policy = "keep-3"

[ecr.lifecycle_policies.keep-3]
rules = [{ rulePriority = 1, selection = { tagStatus = "untagged", countType = "imageCountMoreThan", countNumber = 3 }, action = { type = "expire" } }]

[ecr.repositories]
pytorch = {}
"#;

    /// AWS as the fake reconciler: each plan gets a fresh one, set up by `setup` with the
    /// plan's number (the first look is 1).
    struct FakeBackend {
        log: Log,
        plans: AtomicUsize,
        setup: Setup,
        /// Whether there is a lock, and whether someone else holds it for ever.
        lock: Option<bool>,
        locked: Arc<Notify>,
        /// Who the credentials are, and whether their role trusts GitHub (`None`: unreadable).
        caller: (&'static str, Option<bool>),
    }

    #[async_trait]
    impl Backend for FakeBackend {
        async fn identify(&self) -> Result<Account, CliError> {
            Ok(Account::new("123456789012", "us-east-1"))
        }

        async fn caller(&self) -> Result<String, CliError> {
            Ok(self.caller.0.to_owned())
        }

        async fn trusts_github(&self, _: &Account, name: &str) -> Result<Option<bool>, CliError> {
            record(&self.log, &format!("read role {name}"));
            Ok(self.caller.1)
        }

        fn reconcilers(&self, _: &Account, _: &Desired, _: Option<reconcile_ecr::Prune>) -> Vec<Box<dyn Reconciler>> {
            let n = self.plans.fetch_add(1, Ordering::SeqCst) + 1;
            let mut fake = FakeReconciler::new(&self.log);
            (self.setup)(n, &mut fake);
            vec![Box::new(fake)]
        }

        fn lock(&self, _: &Account, _: &Desired) -> Option<Box<dyn ApplyLock + '_>> {
            let busy = self.lock?;
            Some(Box::new(FakeLock { log: Arc::clone(&self.log), busy, locked: Arc::clone(&self.locked) }))
        }

        fn parallelism(&self) -> usize {
            4
        }

        fn requests(&self) -> String {
            String::new()
        }

        fn failed(&self, errors: Vec<ReconcileError>) -> CliError {
            CliError::Aws { errors, endpoint: "the fake".to_owned() }
        }
    }

    struct FakeLock {
        log: Log,
        busy: bool,
        locked: Arc<Notify>,
    }

    #[async_trait]
    impl ApplyLock for FakeLock {
        async fn take(&self, _: Duration) -> Result<bool, CliError> {
            record(&self.log, "lock");
            self.locked.notify_one();
            if self.busy {
                std::future::pending::<()>().await;
            }
            Ok(true)
        }

        async fn release(&self) -> Result<(), CliError> {
            record(&self.log, "release");
            Ok(())
        }
    }

    /// What the person at the prompt answers.
    #[derive(Clone, Copy)]
    enum Answer {
        Yes,
        No,
        /// Never: they walk away, or press Ctrl-C.
        Never,
    }

    struct FakeConsole {
        log: Log,
        answer: Answer,
        asked: Arc<Notify>,
        interrupts: Mutex<Option<Interrupts>>,
    }

    impl Console for FakeConsole {
        fn plan(&self, _: &Plan) -> Result<(), CliError> {
            record(&self.log, "show plan");
            Ok(())
        }

        fn approve(&self) -> BoxFuture<'static, Result<bool, CliError>> {
            record(&self.log, "ask");
            self.asked.notify_one();
            let answer = self.answer;
            Box::pin(async move {
                match answer {
                    Answer::Yes => Ok(true),
                    Answer::No => Ok(false),
                    Answer::Never => std::future::pending().await,
                }
            })
        }

        fn interrupts(&self) -> Result<Interrupts, CliError> {
            record(&self.log, "listen");
            Ok(self.interrupts.lock().unwrap().take().expect("asked once"))
        }

        fn events(&self) -> &dyn ApplyEvents {
            &reconcile_core::reconciler::Silent
        }

        fn tick(&self) {}

        fn line(&self, _: &str) {}

        fn warn(&self, _: &str) {}

        fn finish(&self) {}

        fn report(&self, _: &Plan, _: &ApplyReport) -> Result<(), CliError> {
            record(&self.log, "report");
            Ok(())
        }
    }

    /// A session over `desired`, its backend set up by `setup`, and a console answering `answer`,
    /// with the sender of its interrupts.
    struct Rig {
        session: Session<FakeBackend>,
        console: FakeConsole,
        signals: tokio::sync::mpsc::UnboundedSender<u8>,
        log: Log,
        locked: Arc<Notify>,
    }

    fn new_rig(
        desired: &str,
        answer: Answer,
        setup: impl Fn(usize, &mut FakeReconciler) + Send + Sync + 'static,
    ) -> Rig {
        rig_with_lock(desired, answer, Some(false), setup)
    }

    fn rig_with_lock(
        desired: &str,
        answer: Answer,
        lock: Option<bool>,
        setup: impl Fn(usize, &mut FakeReconciler) + Send + Sync + 'static,
    ) -> Rig {
        let log = Log::default();
        let locked = Arc::new(Notify::new());
        let backend = FakeBackend {
            log: Arc::clone(&log),
            plans: AtomicUsize::new(0),
            setup: Box::new(setup),
            lock,
            locked: Arc::clone(&locked),
            caller: ("arn:aws:sts::123456789012:assumed-role/administrator/session", Some(false)),
        };
        let parsed = Desired::parse(Path::new("desired.toml"), desired).expect("a valid desired.toml");
        let inputs = Inputs {
            repository: files::Repository::of(Path::new("Cargo.toml")).unwrap(),
            desired: parsed,
            desired_text: desired.to_owned(),
            bake: None,
            prune: None,
        };
        let (signals, interrupts) = Interrupts::channel();
        let console = FakeConsole {
            log: Arc::clone(&log),
            answer,
            asked: Arc::new(Notify::new()),
            interrupts: Mutex::new(Some(interrupts)),
        };
        let session = Session::new(backend, inputs, GithubSide::Undeclared, WhenUnreadable::PlanTheRest);
        Rig { session, console, signals, log, locked }
    }

    fn request(auto_approve: bool, allow_delete: bool) -> ApplyRequest<'static> {
        ApplyRequest { saved: None, auto_approve, allow_delete, lock_timeout: Duration::ZERO }
    }

    impl Rig {
        async fn apply(&self, request: ApplyRequest<'_>) -> Result<u8, CliError> {
            self.session.apply(&self.console, request).await
        }

        fn log(&self) -> Vec<String> {
            self.log.lock().unwrap().clone()
        }
    }

    fn nothing(_: usize, _: &mut FakeReconciler) {}

    #[tokio::test]
    async fn an_apply_looks_then_locks_plans_again_asks_applies_reports_and_releases() {
        let rig = new_rig(DESIRED, Answer::Yes, nothing);
        assert_eq!(rig.apply(request(false, false)).await.unwrap(), exit::OK);
        assert_eq!(
            rig.log(),
            [
                "observe",
                "listen",
                "lock",
                "observe",
                "show plan",
                "ask",
                "apply ecr_repository.pytorch",
                "apply ecr_lifecycle_policy.pytorch",
                "report",
                "release",
            ]
        );
    }

    #[tokio::test]
    async fn an_apply_with_nothing_to_do_takes_no_lock_and_listens_for_nothing() {
        let desired = Desired::parse(Path::new("desired.toml"), DESIRED).unwrap();
        let account = Account::new("123456789012", "us-east-1");
        let present: std::collections::BTreeMap<Address, Observed> = desired_resources(&desired, &account, false)
            .unwrap()
            .into_iter()
            .map(|(address, resource)| (address, Observed::Present(resource.attributes)))
            .collect();
        let rig = new_rig(DESIRED, Answer::Yes, move |_, fake| fake.observed = present.clone());
        assert_eq!(rig.apply(request(false, false)).await.unwrap(), exit::OK);
        assert_eq!(rig.log(), ["observe", "show plan", "report"]);
    }

    #[tokio::test]
    async fn a_refused_plan_takes_no_lock() {
        // An error finding about desired.toml: a rule that expires tagged images.
        let tagged = DESIRED.replace(
            r#"selection = { tagStatus = "untagged", countType = "imageCountMoreThan", countNumber = 3 }"#,
            r#"selection = { tagStatus = "any", countType = "imageCountMoreThan", countNumber = 3 }"#,
        );
        let rig = new_rig(&tagged, Answer::Yes, nothing);
        let error = rig.apply(request(true, false)).await.unwrap_err();
        assert_eq!(error.exit_code(), exit::REFUSED, "{:?}", error.render());
        assert_eq!(rig.log(), ["observe", "show plan"]);

        // A delete, without --allow-delete.
        let stray = Address::new(ResourceKind::EcrRepository, "stray");
        let rig = new_rig(DESIRED, Answer::Yes, move |_, fake| {
            fake.observed.insert(stray.clone(), Observed::Present(serde_json::Map::new()));
        });
        let error = rig.apply(request(true, false)).await.unwrap_err();
        assert_eq!(error.exit_code(), exit::REFUSED);
        assert!(error.render()[0].contains("pass --allow-delete to allow it"), "{:?}", error.render());
        assert_eq!(rig.log(), ["observe", "show plan"]);
    }

    #[tokio::test]
    async fn an_administrators_change_is_refused_to_any_caller_github_can_be_from_the_account_not_the_file() {
        let admins = |_: usize, fake: &mut FakeReconciler| {
            fake.administrators.insert("pytorch".to_owned(), "what every build may do");
        };
        let ci = format!(
            "{DESIRED}[github]\nrepository = \"ROCm/rocm-bake\"\n[ci]\nplan_role = \"p\"\ndrift_role = \"d\"\n\
             apply_role = \"reconcile-apply\"\nenvironment = \"prod\"\n"
        );
        for (desired, caller, trust, refused) in [
            // A role of the account that trusts GitHub, whatever desired.toml names (or not).
            (DESIRED, "arn:aws:sts::123456789012:assumed-role/renamed/s", Some(true), Some("which trusts GitHub")),
            // The apply role desired.toml names, in another case: one name to IAM.
            (
                ci.as_str(),
                "arn:aws:sts::123456789012:assumed-role/Reconcile-Apply/s",
                Some(false),
                Some("the apply role"),
            ),
            // A role that may not read its own trust cannot be told apart from a CI role.
            (DESIRED, "arn:aws:sts::123456789012:assumed-role/narrow/s", None, Some("may not read its own trust")),
            // An administrator: a role GitHub cannot assume, or a user.
            (DESIRED, "arn:aws:sts::123456789012:assumed-role/admin/s", Some(false), None),
            (DESIRED, "arn:aws:iam::123456789012:user/alice", None, None),
        ] {
            let mut rig = new_rig(desired, Answer::Yes, admins);
            rig.session.backend.caller = (caller, trust);
            let result = rig.apply(request(true, false)).await;
            match refused {
                Some(said) => {
                    let error = result.unwrap_err();
                    assert_eq!(error.exit_code(), exit::REFUSED, "{caller}");
                    assert!(error.render()[0].contains(said), "{caller}: {:?}", error.render());
                    assert!(!rig.log().contains(&"lock".to_owned()), "{caller}: no lock: {:?}", rig.log());
                }
                None => assert_eq!(result.unwrap(), exit::OK, "{caller}"),
            }
        }
    }

    #[tokio::test]
    async fn sigint_at_the_approval_prompt_releases_the_lock() {
        let rig = new_rig(DESIRED, Answer::Never, nothing);
        let signal = async {
            rig.console.asked.notified().await;
            rig.signals.send(exit::INTERRUPTED).unwrap();
        };
        let (result, ()) = tokio::join!(rig.apply(request(false, false)), signal);
        assert!(matches!(result, Err(CliError::Interrupted(exit::INTERRUPTED))), "{result:?}");
        assert_eq!(rig.log(), ["observe", "listen", "lock", "observe", "show plan", "ask", "release"]);
    }

    #[tokio::test]
    async fn sigterm_while_planning_under_the_lock_releases_it() {
        // The plan under the lock (the second) never answers.
        let rig = new_rig(DESIRED, Answer::Yes, |n, fake| fake.hang_after = (n == 2).then_some(0));
        let signal = async {
            rig.locked.notified().await;
            rig.signals.send(exit::TERMINATED).unwrap();
        };
        let (result, ()) = tokio::join!(rig.apply(request(true, false)), signal);
        assert!(matches!(result, Err(CliError::Interrupted(exit::TERMINATED))), "{result:?}");
        assert_eq!(rig.log(), ["observe", "listen", "lock", "observe", "release"]);
    }

    #[tokio::test]
    async fn a_signal_while_waiting_for_the_lock_lets_go_of_it_if_it_was_written() {
        let rig = rig_with_lock(DESIRED, Answer::Yes, Some(true), nothing);
        let signal = async {
            rig.locked.notified().await;
            rig.signals.send(exit::INTERRUPTED).unwrap();
        };
        let (result, ()) = tokio::join!(rig.apply(request(true, false)), signal);
        assert!(matches!(result, Err(CliError::Interrupted(exit::INTERRUPTED))), "{result:?}");
        assert_eq!(rig.log(), ["observe", "listen", "lock", "release"]);
    }

    #[tokio::test]
    async fn a_second_signal_while_applying_stops_at_once_and_releases_the_lock() {
        let rig = new_rig(DESIRED, Answer::Yes, |_, fake| fake.hang = vec!["pytorch".to_owned()]);
        let signals = async {
            rig.locked.notified().await;
            rig.signals.send(exit::INTERRUPTED).unwrap();
            rig.signals.send(exit::INTERRUPTED).unwrap();
        };
        let (result, ()) = tokio::join!(rig.apply(request(true, false)), signals);
        assert!(matches!(result, Err(CliError::Interrupted(exit::INTERRUPTED))), "{result:?}");
        let log = rig.log();
        assert_eq!(log.last().map(String::as_str), Some("release"), "{log:?}");
        assert!(!log.contains(&"report".to_owned()), "stopped at once: {log:?}");
    }

    #[tokio::test]
    async fn every_failure_after_the_lock_releases_it() {
        // The plan under the lock fails (read twice: apply plans around what it cannot read, and
        // here it can read nothing).
        let rig = new_rig(DESIRED, Answer::Yes, |n, fake| fake.fail_after = (n == 2).then_some(0));
        let error = rig.apply(request(true, false)).await.unwrap_err();
        assert!(matches!(error, CliError::Aws { .. }), "{error:?}");
        assert_eq!(rig.log(), ["observe", "listen", "lock", "observe", "observe", "release"]);

        // A change fails.
        let rig = new_rig(DESIRED, Answer::Yes, |_, fake| fake.fail = vec!["pytorch".to_owned()]);
        let error = rig.apply(request(true, false)).await.unwrap_err();
        assert!(matches!(error, CliError::ApplyFailed), "{error:?}");
        assert_eq!(rig.log().last().map(String::as_str), Some("release"));

        // Turned down at the prompt.
        let rig = new_rig(DESIRED, Answer::No, nothing);
        let error = rig.apply(request(false, false)).await.unwrap_err();
        assert!(matches!(error, CliError::Cancelled), "{error:?}");
        assert_eq!(rig.log(), ["observe", "listen", "lock", "observe", "show plan", "ask", "release"]);

        // The account changed between the look and the locked plan, and now the plan is refused.
        let stray = Address::new(ResourceKind::EcrRepository, "stray");
        let rig = new_rig(DESIRED, Answer::Yes, move |n, fake| {
            if n == 2 {
                fake.observed.insert(stray.clone(), Observed::Present(serde_json::Map::new()));
            }
        });
        let error = rig.apply(request(true, false)).await.unwrap_err();
        assert_eq!(error.exit_code(), exit::REFUSED);
        assert_eq!(rig.log(), ["observe", "listen", "lock", "observe", "show plan", "release"]);
    }

    #[tokio::test]
    async fn without_a_place_for_a_lock_the_apply_runs_unlocked() {
        let rig = rig_with_lock(DESIRED, Answer::Yes, None, nothing);
        assert_eq!(rig.apply(request(true, false)).await.unwrap(), exit::OK);
        assert!(!rig.log().iter().any(|event| event == "lock" || event == "release"), "{:?}", rig.log());
    }
}
