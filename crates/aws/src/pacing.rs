//! How a run meets AWS's throttling: it slows down to the rate AWS answers, and never fails
//! because of it until one request has been throttled past a generous deadline.
//!
//! AWS throttles each account's control-plane calls per service, at rates it mostly does not
//! publish and shares with every other client of the account. The SDK's own retries give up
//! after a small number of attempts, stop retrying at all once a shared retry quota runs dry,
//! and its adaptive mode starts so low after the first throttle that a plan takes twice as long
//! as it must: under a busy bucket a plan of 82 ECR reads failed in 12 seconds. [`Pacing`]
//! replaces what decides the waits, on every client of the run:
//!
//! - each service has a gate: no limit until AWS first throttles it, then a send rate that
//!   comes down, at most once a second while AWS goes on throttling, to what AWS answered in the
//!   last second, and climbs a half a second once a second passes without a throttle;
//! - a read that can be sent again ([`Pacing::read`], which [`crate::Parallelism::send`] uses) is
//!   sent, each time, only when its gate lets it at the rate of that moment: the SDK hands a
//!   throttled answer back to it rather than waiting. Anything else the SDK sends again itself, at
//!   the gate's next free slot, which it takes when throttled: a slot taken is kept if the rate
//!   later comes down, so a wave of throttled reads all given slots at a first rate four times
//!   AWS's would mostly be throttled again (at 5 a second, nearly three throttled answers for
//!   each answer);
//! - a throttled request is sent again for as long as [`Pacing::deadline`] allows since its
//!   first attempt, however many attempts that takes (the SDK's retry quota never runs dry: each
//!   service's [`Pacing::partition`] has none);
//! - any other failure worth retrying (a 5xx, a timeout, a dropped connection) is retried as
//!   before: a few attempts within a few seconds ([`Transient`]), backing off with full jitter,
//!   so an endpoint that never answers still fails the run within a minute.
//!
//! It is an interceptor (it learns each attempt's operation from the SDK's metadata) and a
//! retry classifier that runs after the SDK's own (it only ever narrows their verdict, or says
//! when to send again), so it is installed on every client with [`configure!`](crate::configure);
//! what it counted is [`Pacing::summary`], for `-v`, and what it gave up on, [`Pacing::gave_up`],
//! for the error.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_smithy_runtime::client::retries::{ClientRateLimiter, RetryPartition, TokenBucket};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::interceptors::context::{
    BeforeTransmitInterceptorContextRef, FinalizerInterceptorContextRef, InterceptorContext,
};
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::retries::classifiers::{
    ClassifyRetry, RetryAction, RetryClassifierPriority, RetryReason,
};
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;
use aws_smithy_types::retry::ErrorKind;

/// How long one request may go on being throttled before the run fails, unless told otherwise
/// (`--throttle-deadline`): minutes, far past what a busy bucket takes to let a plan through.
pub const DEFAULT_THROTTLE_DEADLINE: Duration = Duration::from_secs(300);

/// What bounds the retries of a failure that is not throttling: at most `attempts` attempts,
/// and none started past `within` after the first attempt; each after a wait of up to `base`,
/// doubled each time up to four times `base` (the SDK's standard backoff), fully jittered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transient {
    pub attempts: u32,
    pub within: Duration,
    pub base: Duration,
}

impl Transient {
    /// The most the wait after the `attempts`th attempt may be, before jitter.
    fn backoff(&self, attempts: u32) -> Duration {
        let doubled = self.base.saturating_mul(1 << attempts.saturating_sub(1).min(2));
        doubled.min(self.base.saturating_mul(4))
    }
}

/// The run's pacing: shared by every client it builds (a clone shares everything).
#[derive(Clone)]
pub struct Pacing {
    deadline: Duration,
    transient: Transient,
    state: Arc<Mutex<State>>,
}

impl fmt::Debug for Pacing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pacing").field("deadline", &self.deadline).field("transient", &self.transient).finish()
    }
}

#[derive(Default)]
struct State {
    /// The requests under way, by the id [`Tracked`] gives each (its attempts share it).
    requests: HashMap<u64, Request>,
    next_id: u64,
    /// What each service's requests met, by the SDK's service name.
    services: BTreeMap<String, Throttled>,
    /// One retry partition per service, for every client of it.
    partitions: HashMap<&'static str, RetryPartition>,
    /// Each service's send rate, by its lowercase name (`ecr`, `s3`).
    gates: HashMap<String, Gate>,
    /// Where each wait's jitter comes from.
    jitter: Option<reconcile_core::retry::Jitter>,
    /// The last request given up on because it was throttled past the deadline.
    gave_up: Option<GaveUp>,
}

/// One request under way, as far as throttling goes.
struct Request {
    service: String,
    /// When it was first throttled, if it was.
    first_throttle: Option<Instant>,
}

/// One request, in its own configuration (which its attempts share): what the retry classifier
/// needs of it, which it cannot read there itself.
#[derive(Debug, Clone)]
struct Tracked {
    id: u64,
    /// Its service's key (`ecr`).
    service: String,
    /// `service:Operation`, as IAM names the action.
    operation: String,
    /// When its first attempt was sent.
    started: Instant,
    attempts: u32,
}

impl aws_smithy_types::config_bag::Storable for Tracked {
    type Storer = aws_smithy_types::config_bag::StoreReplace<Tracked>;
}

thread_local! {
    /// The request whose attempt just ended on this thread: the SDK runs its last interceptor
    /// hook of an attempt (`read_after_attempt`, which sees the request's configuration) and then
    /// its retry classifiers (which see only the answer) in the same poll of the request's
    /// future, with nothing in between that yields, so this hands one to the other.
    static ENDED: std::cell::RefCell<Option<Tracked>> = const { std::cell::RefCell::new(None) };
}

/// A read its caller sends again when AWS throttles it ([`Pacing::read`]): what its attempts
/// share, which the retry classifier finds in the task that awaits the request.
#[derive(Debug)]
struct Resend {
    /// When its first attempt was sent: the throttle deadline counts from here.
    started: Instant,
    attempts: u32,
    /// When AWS first throttled it, if it has.
    first_throttle: Option<Instant>,
    /// Whether the attempt that just ended was throttled and may be sent again.
    again: bool,
}

tokio::task_local! {
    static RESEND: Arc<Mutex<Resend>>;
}

/// Whether the request being made is a read sent again after AWS throttled it (the SDK counts
/// it as a new operation; it is a retry).
pub fn resent() -> bool {
    RESEND.try_with(|resend| lock(resend).attempts > 1).unwrap_or(false)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What throttling did to one service's requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Throttled {
    /// Answers that were throttling.
    pub answers: u64,
    /// How long requests waited, in all, from their first throttled answer to their last answer.
    pub waited: Duration,
}

/// A request the run gave up on: throttled for `after` since its first attempt, over `attempts`
/// attempts, past the deadline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GaveUp {
    /// `service:Operation`, as IAM names the action (`ecr:GetRepositoryPolicy`).
    pub operation: String,
    pub after: Duration,
    pub attempts: u32,
    pub deadline: Duration,
}

impl fmt::Display for GaveUp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "AWS throttled {} for {:.1} s over {} attempts, past the throttle deadline of {} s \
             (--throttle-deadline, RECONCILE_THROTTLE_DEADLINE)",
            self.operation,
            self.after.as_secs_f64(),
            self.attempts,
            self.deadline.as_secs()
        )
    }
}

/// The least rate a gate slows a service to, in requests a second.
const MIN_RATE: f64 = 0.5;
/// How often, at most, a gate lowers its rate: the throttled answers to one wave are one signal.
const LOWER_EVERY: Duration = Duration::from_secs(1);
/// How much a gate's rate climbs in a second of answers: a half, and at least one request. A
/// first rate set while a wave was still being sent can be a fraction of what AWS allows; at a
/// tenth a second a plan took twice what the rate allows, at a half it climbs back in seconds,
/// and a climb past the rate costs one throttled second.
const CLIMB: f64 = 0.5;
/// How much it climbs in a second once it is within a tenth of what AWS last answered in a
/// throttled second: a tenth. Past that point each climb is a probe, and a probe past the rate
/// costs a second of throttled answers; far below it, the climb is [`CLIMB`]'s.
const PROBE: f64 = 0.1;
/// The least a throttle lowers a gate's rate by: a tenth.
const LOWER: f64 = 0.9;
/// At the first throttle, the share of the last second's sends the rate is at the least.
const FIRST_SHARE: f64 = 4.0;
/// The least first rate, in requests a second. A first throttle can come back while the wave is
/// still being sent (a busy machine), when what was sent and answered says little; a first
/// rate set too high costs a second of throttled answers before it comes down to what AWS
/// answers, one set too low seconds of waiting while it climbs back (a plan took 10 s where the
/// rate allowed 3). AWS's published control-plane rates are tens a second.
const FIRST_FLOOR: f64 = 10.0;

/// One service's send rate while AWS throttles it (additive increase, multiplicative decrease,
/// as TCP): none until the first throttle, which sets it to what AWS answered in the last
/// second, or a quarter of what was sent, whichever is more; then, at most every [`LOWER_EVERY`] while throttled answers come, lowered to what AWS
/// answered in the last second (a tenth below the rate at the least, half of it at the most, and
/// half when nothing was answered); raised by [`CLIMB`] a second while answers come, and by
/// [`PROBE`] once it is near what AWS answered when it last throttled. Requests are sent at its slots, one every `1 / rate` seconds. Pure: every method is told
/// the time.
#[derive(Debug, Clone)]
pub(crate) struct Gate {
    /// Requests a second, once AWS has throttled; `None` before.
    rate: Option<f64>,
    /// The next free slot.
    next: Instant,
    lowered: Option<Instant>,
    /// The last throttled answer: the rate climbs only in a second without one.
    last_throttle: Option<Instant>,
    raised: Instant,
    /// What AWS answered in the last second when it last lowered the rate for a throttle (after
    /// the first): about what AWS allows.
    capacity: Option<f64>,
    /// What was sent, and what AWS answered (not throttling), in the last second.
    sent: VecDeque<Instant>,
    answers: VecDeque<Instant>,
}

/// `times`, with what is more than a second before `now` dropped.
fn last_second(times: &mut VecDeque<Instant>, now: Instant) -> usize {
    while times.front().is_some_and(|at| now.duration_since(*at) > Duration::from_secs(1)) {
        times.pop_front();
    }
    times.len()
}

impl Gate {
    pub(crate) fn new(now: Instant) -> Gate {
        Gate {
            rate: None,
            next: now,
            lowered: None,
            last_throttle: None,
            raised: now,
            capacity: None,
            sent: VecDeque::new(),
            answers: VecDeque::new(),
        }
    }

    /// The rate it sends at, once AWS has throttled.
    #[cfg(test)]
    fn rate(&self) -> Option<f64> {
        self.rate
    }

    /// A request was sent at `now`.
    pub(crate) fn sent(&mut self, now: Instant) {
        self.sent.push_back(now);
        last_second(&mut self.sent, now);
    }

    /// AWS throttled a request at `now`: the rate comes down to what AWS answered in the last
    /// second, unless it did less than [`LOWER_EVERY`] ago.
    pub(crate) fn throttled(&mut self, now: Instant) {
        self.last_throttle = Some(now);
        if self.lowered.is_some_and(|at| now.duration_since(at) < LOWER_EVERY) {
            return;
        }
        let answered = last_second(&mut self.answers, now) as f64;
        let lowered = match self.rate {
            // The first: what AWS answered of that wave may not all be in yet (a throttle is
            // answered sooner than a read), so at least a quarter of what was sent.
            None => answered.max(last_second(&mut self.sent, now) as f64 / FIRST_SHARE).max(FIRST_FLOOR),
            // Never below half of what it was: the answers counted may not all be in yet.
            Some(current) if answered >= 1.0 => {
                self.capacity = Some(answered);
                answered.max(current / 2.0).min(current * LOWER)
            }
            Some(current) => current / 2.0,
        };
        self.rate = Some(lowered.max(MIN_RATE));
        self.lowered = Some(now);
        self.raised = now;
    }

    /// AWS answered a request at `now`: the rate climbs for the time since it last did, unless AWS
    /// throttled in the last second.
    pub(crate) fn answered(&mut self, now: Instant) {
        self.answers.push_back(now);
        last_second(&mut self.answers, now);
        let Some(rate) = self.rate else { return };
        if self.last_throttle.is_some_and(|at| now.duration_since(at) < LOWER_EVERY) {
            // Still throttled: no climb, and the next is counted from here.
            self.raised = now;
            return;
        }
        let seconds = now.duration_since(self.raised).as_secs_f64();
        if seconds < 1.0 {
            return;
        }
        let step = match self.capacity {
            Some(capacity) if rate >= capacity * LOWER => rate * PROBE,
            _ => (rate * CLIMB).max(1.0),
        };
        self.rate = Some(rate + step * seconds);
        self.raised = now;
    }

    /// How long from `now` until the next free slot, which it takes; nothing while no throttle
    /// has set a rate.
    pub(crate) fn slot(&mut self, now: Instant) -> Duration {
        let Some(rate) = self.rate else { return Duration::ZERO };
        let slot = self.next.max(now);
        self.next = slot + Duration::from_secs_f64(1.0 / rate);
        slot.duration_since(now)
    }

    /// Takes the slot at `now` if it is free, or says how long until the next one, taking
    /// nothing: who waits asks again then, at the rate of that moment.
    pub(crate) fn take(&mut self, now: Instant) -> Option<Duration> {
        let rate = self.rate?;
        if now < self.next {
            return Some(self.next - now);
        }
        let interval = Duration::from_secs_f64(1.0 / rate);
        // Woken a little late, it keeps the cadence; after a pause, no burst is saved up.
        self.next = if now - self.next < interval { self.next + interval } else { now + interval };
        None
    }
}

/// What to do with a request's latest failure, decided purely (see [`decide`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// As the SDK's own classifiers said.
    AsClassified,
    /// No more attempts: a transient failure past its bounds.
    Stop,
    /// No more attempts: throttled past the deadline.
    GiveUp,
}

/// What a request's latest answer, which the SDK's classifiers judged `kind` (`None`: nothing
/// to retry), calls for, `elapsed` after its first attempt and on its `attempts`th attempt.
fn decide(
    kind: Option<ErrorKind>,
    elapsed: Duration,
    attempts: u32,
    deadline: Duration,
    transient: Transient,
) -> Verdict {
    match kind {
        None => Verdict::AsClassified,
        Some(ErrorKind::ThrottlingError) if elapsed >= deadline => Verdict::GiveUp,
        Some(ErrorKind::ThrottlingError) => Verdict::AsClassified,
        Some(_) if attempts >= transient.attempts || elapsed >= transient.within => Verdict::Stop,
        Some(_) => Verdict::AsClassified,
    }
}

impl Pacing {
    pub fn new(deadline: Duration, transient: Transient) -> Pacing {
        Pacing { deadline, transient, state: Arc::default() }
    }

    /// How long one request may go on being throttled.
    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    /// The retry partition every client of `service` (`ecr`, `s3`, ...) is built with: one
    /// adaptive send-rate limiter for the run, and a retry quota that never runs dry (retries
    /// are bounded by [`Pacing`]'s time instead).
    pub fn partition(&self, service: &'static str) -> RetryPartition {
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        state
            .partitions
            .entry(service)
            .or_insert_with(|| {
                // The SDK's own start (its measured rate and time buckets from now): the
                // builder's default counts from the epoch, and would throttle to 0.5 a second.
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0.0, |since| since.as_secs_f64());
                RetryPartition::custom(format!("reconcile-{service}"))
                    .token_bucket(TokenBucket::unlimited())
                    .client_rate_limiter(ClientRateLimiter::new(now))
                    .build()
            })
            .clone()
    }

    /// Waits until `service`'s gate lets a request go, and takes that slot: at once until AWS
    /// has throttled the service.
    pub async fn turn(&self, service: &str) {
        loop {
            let now = Instant::now();
            let wait =
                self.with(|state| state.gates.entry(service.to_owned()).or_insert_with(|| Gate::new(now)).take(now));
            match wait {
                None => return,
                Some(wait) => tokio::time::sleep(wait).await,
            }
        }
    }

    /// Sends a read to `service` (`request` makes and sends it; it can be called again) when the
    /// gate lets it, and again, each time when the gate lets it, for as long as AWS throttles
    /// it and the deadline allows; then its last answer is returned.
    pub async fn read<F: Future>(&self, service: &str, request: impl Fn() -> F) -> F::Output {
        let resend =
            Arc::new(Mutex::new(Resend { started: Instant::now(), attempts: 0, first_throttle: None, again: false }));
        loop {
            self.turn(service).await;
            {
                let mut resend = lock(&resend);
                // The deadline counts from the first attempt, not from the wait for it: a read
                // queued behind a slow gate still gets its retries.
                if resend.attempts == 0 {
                    resend.started = Instant::now();
                }
                resend.attempts += 1;
                resend.again = false;
            }
            let output = RESEND.scope(Arc::clone(&resend), request()).await;
            if !lock(&resend).again {
                return output;
            }
        }
    }

    /// What throttling did, by service.
    pub fn throttled(&self) -> BTreeMap<String, Throttled> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner).services.clone()
    }

    /// The last request given up on because it was throttled past the deadline.
    pub fn gave_up(&self) -> Option<GaveUp> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner).gave_up.clone()
    }

    /// One line for `-v`: how often each service throttled and how long requests waited, or
    /// `None` when nothing was throttled.
    pub fn summary(&self) -> Option<String> {
        let throttled = self.throttled();
        let parts: Vec<String> = throttled
            .iter()
            .filter(|(_, t)| t.answers > 0)
            .map(|(service, t)| {
                format!("{service} {} throttled answer(s), {:.1} s waited", t.answers, t.waited.as_secs_f64())
            })
            .collect();
        (!parts.is_empty()).then(|| format!("throttling: {}", parts.join("; ")))
    }

    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
    }
}

/// A service's key: its SDK name, lowercase, with no spaces (`ecr`, `s3`, `codebuild`).
fn key(service: &str) -> String {
    service.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_lowercase()
}

impl Intercept for Pacing {
    fn name(&self) -> &'static str {
        "Pacing"
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let now = Instant::now();
        let tracked = match cfg.load::<Tracked>() {
            Some(tracked) => Tracked { attempts: tracked.attempts + 1, ..tracked.clone() },
            None => {
                let (service, name) = cfg.load::<Metadata>().map_or_else(
                    || ("unknown".to_owned(), "unknown".to_owned()),
                    |m| (key(m.service()), m.name().to_owned()),
                );
                let id = self.with(|state| {
                    state.next_id += 1;
                    state.requests.insert(state.next_id, Request { service: service.clone(), first_throttle: None });
                    state.next_id
                });
                Tracked { id, operation: format!("{service}:{name}"), service, started: now, attempts: 1 }
            }
        };
        self.with(|state| state.gates.entry(tracked.service.clone()).or_insert_with(|| Gate::new(now)).sent(now));
        cfg.interceptor_state().store_put(tracked);
        Ok(())
    }

    fn read_after_attempt(
        &self,
        _context: &FinalizerInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let tracked = cfg.load::<Tracked>().cloned();
        ENDED.with(|ended| *ended.borrow_mut() = tracked);
        Ok(())
    }
}

impl ClassifyRetry for Pacing {
    fn classify_retry(&self, _ctx: &InterceptorContext) -> RetryAction {
        RetryAction::NoActionIndicated
    }

    fn classify_retry_v2(&self, _ctx: &InterceptorContext, previous: &RetryAction) -> RetryAction {
        let Some(tracked) = ENDED.with(|ended| ended.borrow_mut().take()) else {
            return RetryAction::NoActionIndicated;
        };
        let kind = match previous {
            RetryAction::RetryIndicated(RetryReason::RetryableError { kind, .. }) => Some(*kind),
            _ => None,
        };
        let throttled = kind == Some(ErrorKind::ThrottlingError);
        // A read its caller sends again: the deadline counts from its caller's first attempt.
        let resend = RESEND.try_with(Arc::clone).ok();
        let now = Instant::now();
        let started = match &resend {
            Some(resend) if throttled => lock(resend).started,
            _ => tracked.started,
        };
        let elapsed = now - started;
        let verdict = decide(kind, elapsed, tracked.attempts, self.deadline, self.transient);
        self.with(|state| {
            let gate = state.gates.entry(tracked.service.clone()).or_insert_with(|| Gate::new(now));
            match kind {
                Some(ErrorKind::ThrottlingError) => gate.throttled(now),
                // An answer, even an error one: the service is taking requests.
                None => gate.answered(now),
                Some(_) => {}
            }
            let Some(request) = state.requests.get_mut(&tracked.id) else { return RetryAction::NoActionIndicated };
            if throttled {
                request.first_throttle.get_or_insert(now);
                if let Some(resend) = &resend {
                    lock(resend).first_throttle.get_or_insert(now);
                }
                state.services.entry(tracked.service.clone()).or_default().answers += 1;
            }
            match (kind, verdict, &resend) {
                // Handed back to its caller, who sends it again when the gate lets it.
                (Some(ErrorKind::ThrottlingError), Verdict::AsClassified, Some(resend)) => {
                    lock(resend).again = true;
                    state.requests.remove(&tracked.id);
                    return RetryAction::RetryForbidden;
                }
                // Sent again at the gate's next free slot.
                (Some(ErrorKind::ThrottlingError), Verdict::AsClassified, None) => {
                    let wait = state.gates.get_mut(&tracked.service).expect("made above").slot(now);
                    return RetryAction::retryable_error_with_explicit_delay(ErrorKind::ThrottlingError, wait);
                }
                // Sent again after the usual backoff, fully jittered.
                (Some(kind), Verdict::AsClassified, _) => {
                    let fraction = state
                        .jitter
                        .get_or_insert_with(|| reconcile_core::retry::Jitter::seeded(tracked.id))
                        .next_fraction();
                    let wait = self.transient.backoff(tracked.attempts).mul_f64(fraction);
                    return RetryAction::retryable_error_with_explicit_delay(kind, wait);
                }
                _ => {}
            }
            self.ended(state, &tracked, resend.as_deref(), verdict, (now, elapsed))
        })
    }

    fn name(&self) -> &'static str {
        "reconcile's pacing: throttling bounded by time"
    }

    /// After every classifier the SDK runs, whose verdict it only ever narrows.
    fn priority(&self) -> RetryClassifierPriority {
        RetryClassifierPriority::run_after(RetryClassifierPriority::run_after(
            RetryClassifierPriority::transient_error_classifier(),
        ))
    }
}

impl Pacing {
    /// The request `tracked` is over (`elapsed` after its first attempt, at `now`): what it
    /// waited counts, a throttle past the deadline is remembered, and it is forgotten.
    fn ended(
        &self,
        state: &mut State,
        tracked: &Tracked,
        resend: Option<&Mutex<Resend>>,
        verdict: Verdict,
        (now, elapsed): (Instant, Duration),
    ) -> RetryAction {
        let request = state.requests.remove(&tracked.id).expect("looked up above");
        let (first_throttle, attempts) = match resend {
            Some(resend) => {
                let resend = lock(resend);
                (resend.first_throttle, resend.attempts)
            }
            None => (request.first_throttle, tracked.attempts),
        };
        if let Some(throttled) = first_throttle {
            state.services.entry(request.service).or_default().waited += now - throttled;
        }
        match verdict {
            Verdict::AsClassified => RetryAction::NoActionIndicated,
            Verdict::Stop => RetryAction::RetryForbidden,
            Verdict::GiveUp => {
                state.gave_up = Some(GaveUp {
                    operation: tracked.operation.clone(),
                    after: elapsed,
                    attempts,
                    deadline: self.deadline,
                });
                RetryAction::RetryForbidden
            }
        }
    }
}

/// Builds a service's client configuration from the run's: `builder` (its
/// `config::Builder::from(sdk)`) with the request counter `interceptor` and `pacing`, as an
/// interceptor, a retry classifier and the service's retry partition. Every client of a run is
/// built with it, so every request is counted and paced alike.
#[macro_export]
macro_rules! configure {
    ($builder:expr, $interceptor:expr, $pacing:expr, $service:literal) => {
        $builder
            .interceptor($interceptor.clone())
            .interceptor($pacing.clone())
            .retry_classifier($pacing.clone())
            .retry_partition($pacing.partition($service))
            .build()
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRANSIENT: Transient =
        Transient { attempts: 8, within: Duration::from_secs(25), base: Duration::from_secs(1) };
    const DEADLINE: Duration = Duration::from_secs(300);

    fn at(seconds: u64, attempts: u32, kind: Option<ErrorKind>) -> Verdict {
        decide(kind, Duration::from_secs(seconds), attempts, DEADLINE, TRANSIENT)
    }

    #[test]
    fn throttling_is_retried_until_the_deadline_however_many_attempts_that_takes() {
        let throttled = Some(ErrorKind::ThrottlingError);
        assert_eq!(at(0, 1, throttled), Verdict::AsClassified);
        assert_eq!(at(299, 500, throttled), Verdict::AsClassified, "no count bounds it");
        assert_eq!(at(300, 2, throttled), Verdict::GiveUp);
        assert_eq!(at(301, 2, throttled), Verdict::GiveUp);
    }

    #[test]
    fn any_other_failure_is_retried_a_few_times_within_a_few_seconds() {
        for kind in [ErrorKind::TransientError, ErrorKind::ServerError, ErrorKind::ClientError] {
            assert_eq!(at(0, 1, Some(kind)), Verdict::AsClassified);
            assert_eq!(at(24, 7, Some(kind)), Verdict::AsClassified);
            assert_eq!(at(24, 8, Some(kind)), Verdict::Stop, "out of attempts");
            assert_eq!(at(25, 2, Some(kind)), Verdict::Stop, "out of time");
        }
        // Nothing to retry: nothing to decide.
        assert_eq!(at(1000, 1000, None), Verdict::AsClassified);
    }

    #[test]
    fn a_request_given_up_on_says_what_for_how_long_and_how_many_times() {
        let gave_up = GaveUp {
            operation: "ecr:GetRepositoryPolicy".to_owned(),
            after: Duration::from_millis(3_250),
            attempts: 7,
            deadline: Duration::from_secs(3),
        };
        assert_eq!(
            gave_up.to_string(),
            "AWS throttled ecr:GetRepositoryPolicy for 3.2 s over 7 attempts, past the throttle deadline of 3 s \
             (--throttle-deadline, RECONCILE_THROTTLE_DEADLINE)"
        );
    }

    #[test]
    fn every_client_of_a_service_shares_its_partition_and_the_summary_names_only_what_was_throttled() {
        let pacing = Pacing::new(DEADLINE, TRANSIENT);
        assert_eq!(pacing.partition("ecr"), pacing.clone().partition("ecr"));
        assert_ne!(pacing.partition("ecr"), pacing.partition("s3"));
        assert_eq!(pacing.summary(), None);
        pacing.with(|state| {
            state.services.insert("ecr".to_owned(), Throttled { answers: 3, waited: Duration::from_millis(1500) });
            state.services.insert("s3".to_owned(), Throttled::default());
        });
        assert_eq!(pacing.summary().as_deref(), Some("throttling: ecr 3 throttled answer(s), 1.5 s waited"));
        assert_eq!(key("CodeBuild"), "codebuild");
        assert_eq!(key("Cost Explorer"), "costexplorer");
    }

    #[test]
    fn a_transient_failure_backs_off_as_the_sdk_does() {
        let waits: Vec<u64> = (1..=5).map(|attempt| TRANSIENT.backoff(attempt).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 4, 4]);
    }

    #[test]
    fn a_gate_lets_everything_through_until_the_first_throttle_then_sends_at_what_aws_answers() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let mut gate = Gate::new(start);
        assert_eq!(gate.slot(start), Duration::ZERO, "no rate before a throttle");
        // A wave of 82 sent within a tenth of a second; the first throttled answer comes before
        // any other: a quarter of the rate it was sent at; the rest of that wave's throttles do
        // not lower it again.
        for ms in 0..82 {
            gate.sent(at(ms));
        }
        gate.throttled(at(100));
        assert_eq!(gate.rate(), Some(20.5));
        gate.throttled(at(900));
        assert_eq!(gate.rate(), Some(20.5), "one signal a second");
        // Slots a 20.5th of a second apart, each taken by the one asking.
        let first = gate.slot(at(1000));
        let second = gate.slot(at(1000));
        assert_eq!(first, Duration::ZERO);
        assert!((second.as_secs_f64() - 1.0 / 20.5).abs() < 1e-6, "{second:?}");
        // A second later, AWS answered 5 in the last second: down to that, but never below half.
        for ms in [1100, 1300, 1500, 1700, 1900] {
            gate.answered(at(ms));
        }
        gate.throttled(at(2000));
        assert_eq!(gate.rate(), Some(10.25));
        // Answered 9 in the last second of the next: down to 9.
        for ms in [2100, 2200, 2300, 2400, 2500, 2600, 2700, 2800, 2900] {
            gate.answered(at(ms));
        }
        gate.throttled(at(3001));
        assert_eq!(gate.rate(), Some(9.0));
        // Answers raise it: near what AWS answered when it throttled (9), a tenth a second of
        // them; a throttle takes it down a tenth at the least, however many were answered.
        gate.answered(at(4001));
        assert_eq!(gate.rate(), Some(9.9));
        for ms in 4002..4030 {
            gate.answered(at(ms));
        }
        gate.throttled(at(4500));
        assert_eq!(gate.rate(), Some(9.9 * LOWER));
        // Nothing answered for a second: halved, never below the least rate.
        for step in 0..10 {
            gate.throttled(at(5000 + step * 1100));
        }
        assert_eq!(gate.rate(), Some(MIN_RATE));
        let mut climbing = Gate::new(start);
        climbing.rate = Some(20.0);
        climbing.answered(at(500));
        assert_eq!(climbing.rate(), Some(20.0), "not yet a second");
        climbing.answered(at(2000));
        assert_eq!(climbing.rate(), Some(40.0));
        // Far below what AWS answered when it last throttled, a half a second; near it, a tenth.
        climbing.capacity = Some(100.0);
        climbing.answered(at(3000));
        assert_eq!(climbing.rate(), Some(60.0));
        climbing.capacity = Some(60.0);
        climbing.answered(at(4000));
        assert_eq!(climbing.rate(), Some(66.0));
        // Answers before any throttle set no rate.
        let mut open = Gate::new(start);
        open.answered(at(5000));
        assert_eq!(open.rate(), None);
        // What AWS answered of the wave, when more than a quarter of it, is the first rate.
        for ms in 5001..5031 {
            open.sent(at(ms));
            open.answered(at(ms));
        }
        open.throttled(at(5100));
        assert_eq!(open.rate(), Some(31.0));
        // Waiting without taking: whoever asks when the slot is free takes it, at the rate of
        // that moment, so a rate lowered while many wait holds every one of them to it.
        let mut waited = Gate::new(start);
        assert_eq!(waited.take(start), None, "no rate before a throttle");
        waited.rate = Some(10.0);
        waited.next = at(0);
        assert_eq!(waited.take(at(0)), None);
        assert_eq!(waited.take(at(0)), Some(Duration::from_millis(100)), "nothing taken by asking");
        assert_eq!(waited.take(at(50)), Some(Duration::from_millis(50)));
        waited.rate = Some(2.0);
        assert_eq!(waited.take(at(101)), None, "woken late, it keeps the cadence");
        assert_eq!(waited.take(at(101)), Some(Duration::from_millis(499)), "the next at the lowered rate");
        assert_eq!(waited.take(at(5000)), None);
        assert_eq!(waited.take(at(5000)), Some(Duration::from_millis(500)), "no burst saved up by a pause");
        // A throttle back while the wave is still being sent, 4 in: never below the floor.
        let mut early = Gate::new(start);
        for ms in 0..4 {
            early.sent(at(ms));
        }
        early.throttled(at(60));
        assert_eq!(early.rate(), Some(FIRST_FLOOR));
    }
}
