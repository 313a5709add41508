//! The run protocol against core's fake reconciler, a fake backend, a fake lock and a fake
//! console: the order of an apply's steps and that the lock is released on every path out of
//! it (`apply.rs`), a saved plan carried out or refused (`saved.rs`), and the drift check's
//! steps behind the backend (`drift.rs`).

mod apply;
mod drift;
mod saved;

use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use reconcile_core::fake::FakeReconciler;
use reconcile_core::{Address, Observed};
use tokio::sync::Notify;

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;
use reconcile_core::engine::{ApplyEvents, ApplyReport, WhenUnreadable};
use reconcile_core::plan::Attribution;
use reconcile_core::{Account, Desired, Plan, ReconcileError, Reconciler};
use reconcile_ecr::usage::Usage;

use super::*;
use crate::error::CliError;
use crate::exit;
use crate::files;
use crate::github::GithubSide;

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
    /// Whether this run's lock is lost while it applies (renewing it says so), and whether its
    /// lease runs out unrenewed.
    lock_lost: (bool, bool),
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

    fn reconcilers(
        &self,
        _: &Account,
        _: &Desired,
        _: Option<reconcile_core::Prune>,
        _: Option<reconcile_core::Destroy>,
    ) -> Vec<Box<dyn Reconciler>> {
        let n = self.plans.fetch_add(1, Ordering::SeqCst) + 1;
        let mut fake = FakeReconciler::new(&self.log);
        (self.setup)(n, &mut fake);
        vec![Box::new(fake)]
    }

    async fn attribute(&self, planned: &mut Planned, _: &Desired, days: u32) {
        record(&self.log, &format!("attribute {days} days"));
        for change in &planned.plan.changes {
            planned.plan.attributions.insert(change.address.clone(), Attribution::NoneFound { days });
        }
    }

    async fn costs(&self, _: &Plan, _: &Desired, _: &Account) -> Vec<reconcile_core::plan::CostFigure> {
        record(&self.log, "read what the plan costs");
        Vec::new()
    }

    async fn drift_costs(&self, _: &Plan, _: &Usage, _: &Desired) -> crate::session::DriftCosts {
        crate::session::DriftCosts::new()
    }

    async fn registry(&self, account: &Account, _: &Desired) -> Result<Usage, CliError> {
        record(&self.log, "read the registry");
        Ok(Usage::new(&account.id, &account.region, 0, 0.10, Vec::new()))
    }

    fn lock(&self, _: &Account, _: &Desired) -> Option<Box<dyn ApplyLock + '_>> {
        let busy = self.lock?;
        let (lost, lease_out) = self.lock_lost;
        Some(Box::new(FakeLock { log: Arc::clone(&self.log), busy, locked: Arc::clone(&self.locked), lost, lease_out }))
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
    /// Whether this run lost it while applying (another apply broke it when its lease ran out).
    lost: bool,
    /// Whether its lease ran out by this host's clock, no renewal having gone through.
    lease_out: bool,
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

    async fn renew(&self) -> Result<bool, CliError> {
        record(&self.log, "renew");
        Ok(!self.lost)
    }

    fn renew_every(&self) -> Duration {
        Duration::from_millis(50)
    }

    fn expired(&self) -> bool {
        self.lease_out
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

fn new_rig(desired: &str, answer: Answer, setup: impl Fn(usize, &mut FakeReconciler) + Send + Sync + 'static) -> Rig {
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
        lock_lost: (false, false),
        locked: Arc::clone(&locked),
        caller: ("arn:aws:sts::123456789012:assumed-role/administrator/session", Some(false)),
    };
    let parsed = crate::catalog::parse_desired(Path::new("desired.toml"), desired).expect("a valid desired.toml");
    let inputs = Inputs {
        repository: files::Repository::of(Path::new("Cargo.toml")).unwrap(),
        desired: parsed,
        desired_text: desired.to_owned(),
        bake: None,
        prune: None,
        destroy: None,
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
    ApplyRequest {
        plan: PlanFrom::Fresh,
        auto_approve,
        allow_delete,
        lock_timeout: Duration::ZERO,
        shown_in_public: false,
    }
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

/// What the fake observes when every resource `desired` declares that `kept` keeps is present as
/// declared (the rest absent).
fn present_as_declared(
    desired: &str,
    kept: impl Fn(&Address) -> bool,
) -> std::collections::BTreeMap<Address, Observed> {
    let parsed = crate::catalog::parse_desired(Path::new("desired.toml"), desired).unwrap();
    let account = Account::new("123456789012", "us-east-1");
    desired_resources(&crate::catalog::CATALOG, &parsed, &account, false)
        .unwrap()
        .into_iter()
        .filter(|(address, _)| kept(address))
        .map(|(address, resource)| (address, Observed::Present(resource.attributes)))
        .collect()
}
