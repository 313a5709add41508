//! The order an apply carries its changes out in: each change starts as soon as every change it
//! depends on has finished and a slot is free (as kube-rs's runner starts a reconcile), never
//! waiting for a whole wave; one whose dependency failed, or was skipped or never started, is
//! skipped; an interruption starts nothing more and lets what runs finish; a cycle fails what is
//! in it rather than hang.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::FuturesUnordered;

use crate::address::Address;
use crate::plan::Change;
use crate::reconciler::{Progress, ReconcileError};

/// What happened to one change during apply.
#[derive(Debug)]
pub enum Outcome {
    Applied,
    /// A create that found the resource already made, and converged it instead.
    Adopted,
    Failed(ReconcileError),
    /// Not attempted because a change it depends on failed or was skipped.
    Skipped {
        because: Address,
    },
    /// Not started because the run was interrupted (SIGINT, SIGTERM) before its turn.
    NotStarted,
    /// Not carried out: only an administrator makes it, and the caller is a CI role (why).
    Left {
        why: String,
    },
}

/// Told about every change as apply starts and finishes it.
pub trait ApplyEvents: Progress {
    fn started(&self, change: &Change);
    fn finished(&self, change: &Change, outcome: &Outcome, elapsed: Duration);
}

impl ApplyEvents for crate::reconciler::Silent {
    fn started(&self, _: &Change) {}
    fn finished(&self, _: &Change, _: &Outcome, _: Duration) {}
}

/// What one change waits on, as things stand.
enum Ready {
    Now,
    Waiting,
    /// It cannot run, and this is its outcome: skipped, as a change it depends on failed or was
    /// skipped; or left, as one it depends on is left for an administrator.
    Blocked(Outcome),
}

/// Carries out `changes` through `apply`, at most `concurrency` at once, into `outcomes` (which
/// may hold outcomes already: what could not be read counts as failed). A dependency outside the
/// plan (not in `in_plan`) is already as it should be.
pub async fn run<'a, F, Fut>(
    changes: &'a [Change],
    in_plan: &BTreeSet<&Address>,
    outcomes: &mut BTreeMap<Address, (Outcome, Duration)>,
    concurrency: usize,
    stopped: &(dyn Fn() -> bool + Sync),
    events: &dyn ApplyEvents,
    apply: F,
) where
    F: Fn(&'a Change) -> Fut,
    Fut: Future<Output = Outcome>,
{
    let mut pending: Vec<&Change> = changes.iter().filter(|c| !outcomes.contains_key(&c.address)).collect();
    let mut running = FuturesUnordered::new();
    loop {
        // Skip what cannot run and start what can, until neither changes anything: a skip can
        // break what depends on it in turn.
        let mut moved = true;
        while moved {
            moved = false;
            let mut waiting = Vec::new();
            for change in pending {
                match ready(change, in_plan, outcomes) {
                    Ready::Blocked(outcome) => {
                        events.finished(change, &outcome, Duration::ZERO);
                        outcomes.insert(change.address.clone(), (outcome, Duration::ZERO));
                        moved = true;
                    }
                    Ready::Now if running.len() < concurrency.max(1) && !stopped() => {
                        events.started(change);
                        let start = Instant::now();
                        let work = apply(change);
                        running.push(async move {
                            let outcome = work.await;
                            (change, outcome, start.elapsed())
                        });
                    }
                    _ => waiting.push(change),
                }
            }
            pending = waiting;
        }
        match running.next().await {
            Some((change, outcome, elapsed)) => {
                events.finished(change, &outcome, elapsed);
                outcomes.insert(change.address.clone(), (outcome, elapsed));
            }
            None if stopped() => {
                for change in pending {
                    events.finished(change, &Outcome::NotStarted, Duration::ZERO);
                    outcomes.insert(change.address.clone(), (Outcome::NotStarted, Duration::ZERO));
                }
                return;
            }
            None => {
                // Nothing runs and nothing can start: what is left waits on itself.
                for change in pending {
                    let outcome = Outcome::Failed(ReconcileError::new(
                        Some(&change.address),
                        "schedule",
                        "its dependencies form a cycle",
                    ));
                    events.finished(change, &outcome, Duration::ZERO);
                    outcomes.insert(change.address.clone(), (outcome, Duration::ZERO));
                }
                return;
            }
        }
    }
}

fn ready(change: &Change, in_plan: &BTreeSet<&Address>, outcomes: &BTreeMap<Address, (Outcome, Duration)>) -> Ready {
    let mut waiting = false;
    for dependency in change.depends_on.iter().filter(|d| in_plan.contains(d)) {
        match outcomes.get(dependency) {
            None => waiting = true,
            Some((Outcome::Applied | Outcome::Adopted, _)) => {}
            Some((Outcome::Left { .. }, _)) => {
                let why = format!("it depends on {dependency}, which is left for an administrator");
                return Ready::Blocked(Outcome::Left { why });
            }
            Some(_) => return Ready::Blocked(Outcome::Skipped { because: dependency.clone() }),
        }
    }
    if waiting { Ready::Waiting } else { Ready::Now }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::kinds::{ECR_LIFECYCLE_POLICY, ECR_REPOSITORY};
    use crate::plan::Action;
    use std::sync::Mutex;

    /// Records when each change started and finished, in milliseconds since the run began.
    struct Clock {
        began: Instant,
        log: Mutex<Vec<(String, &'static str, u128)>>,
    }

    impl crate::reconciler::Progress for Clock {
        fn note(&self, _: &Address, _: &str) {}
    }

    impl ApplyEvents for Clock {
        fn started(&self, change: &Change) {
            self.log.lock().unwrap().push((change.address.to_string(), "started", self.began.elapsed().as_millis()));
        }
        fn finished(&self, change: &Change, _: &Outcome, _: Duration) {
            self.log.lock().unwrap().push((change.address.to_string(), "finished", self.began.elapsed().as_millis()));
        }
    }

    fn change(kind: crate::ResourceKind, name: &str, depends_on: &[Address]) -> Change {
        Change {
            address: Address::new(kind, name),
            action: Action::Create,
            before: None,
            after: Some(serde_json::Map::new()),
            depends_on: depends_on.to_vec(),
        }
    }

    fn at(clock: &Clock, address: &str, what: &str) -> u128 {
        clock.log.lock().unwrap().iter().find(|(a, w, _)| a == address && *w == what).map(|(_, _, t)| *t).unwrap()
    }

    #[tokio::test]
    async fn a_dependent_starts_when_its_own_dependency_finishes_not_when_the_slowest_does() {
        let slow = change(ECR_REPOSITORY, "slow", &[]);
        let fast = change(ECR_REPOSITORY, "fast", &[]);
        let policy = change(ECR_LIFECYCLE_POLICY, "fast", std::slice::from_ref(&fast.address));
        let changes = vec![slow, fast, policy];
        let in_plan: BTreeSet<&Address> = changes.iter().map(|c| &c.address).collect();
        let mut outcomes = BTreeMap::new();
        let clock = Clock { began: Instant::now(), log: Mutex::default() };
        run(&changes, &in_plan, &mut outcomes, 8, &|| false, &clock, |change| {
            let pause = if change.address.name == "slow" { 400 } else { 20 };
            async move {
                tokio::time::sleep(Duration::from_millis(pause)).await;
                Outcome::Applied
            }
        })
        .await;
        let (policy_started, slow_finished) =
            (at(&clock, "ecr_lifecycle_policy.fast", "started"), at(&clock, "ecr_repository.slow", "finished"));
        assert!(policy_started < 200, "started at {policy_started} ms");
        assert!(policy_started < slow_finished, "{:?}", clock.log.lock().unwrap());
        assert!(outcomes.values().all(|(o, _)| matches!(o, Outcome::Applied)));
    }

    #[tokio::test]
    async fn a_failure_skips_what_depends_on_it_a_cycle_fails_and_the_slots_are_a_ceiling() {
        let failing = change(ECR_REPOSITORY, "a", &[]);
        let dependent = change(ECR_LIFECYCLE_POLICY, "a", std::slice::from_ref(&failing.address));
        let one = change(ECR_REPOSITORY, "x", &[Address::new(ECR_REPOSITORY, "y")]);
        let two = change(ECR_REPOSITORY, "y", &[Address::new(ECR_REPOSITORY, "x")]);
        let free: Vec<Change> = (0..4).map(|n| change(ECR_REPOSITORY, &format!("free{n}"), &[])).collect();
        let mut changes = vec![failing, dependent, one, two];
        changes.extend(free);
        let in_plan: BTreeSet<&Address> = changes.iter().map(|c| &c.address).collect();
        let mut outcomes = BTreeMap::new();
        let clock = Clock { began: Instant::now(), log: Mutex::default() };
        let running = std::sync::atomic::AtomicUsize::new(0);
        let most = std::sync::atomic::AtomicUsize::new(0);
        let (running, most) = (&running, &most);
        run(&changes, &in_plan, &mut outcomes, 2, &|| false, &clock, |change| async move {
            let now = running.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            most.fetch_max(now, std::sync::atomic::Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(10)).await;
            running.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            match change.address.name.as_str() {
                "a" => Outcome::Failed(ReconcileError::new(Some(&change.address), "create", "no")),
                _ => Outcome::Applied,
            }
        })
        .await;
        assert!(most.load(std::sync::atomic::Ordering::SeqCst) <= 2);
        let outcome = |kind, name: &str| &outcomes[&Address::new(kind, name)].0;
        assert!(matches!(outcome(ECR_LIFECYCLE_POLICY, "a"), Outcome::Skipped { because } if because.name == "a"));
        assert!(matches!(outcome(ECR_REPOSITORY, "x"), Outcome::Failed(e) if e.reason.contains("cycle")));
        assert!(matches!(outcome(ECR_REPOSITORY, "free3"), Outcome::Applied));
    }

    #[tokio::test]
    async fn once_stopped_nothing_more_starts_and_what_runs_finishes() {
        let first = change(ECR_REPOSITORY, "first", &[]);
        let later = change(ECR_LIFECYCLE_POLICY, "first", std::slice::from_ref(&first.address));
        let changes = vec![first, later];
        let in_plan: BTreeSet<&Address> = changes.iter().map(|c| &c.address).collect();
        let mut outcomes = BTreeMap::new();
        let clock = Clock { began: Instant::now(), log: Mutex::default() };
        let stop = std::sync::atomic::AtomicBool::new(false);
        let stopped = || stop.load(std::sync::atomic::Ordering::SeqCst);
        let stop = &stop;
        run(&changes, &in_plan, &mut outcomes, 4, &stopped, &clock, |_| async move {
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
            Outcome::Applied
        })
        .await;
        assert!(matches!(outcomes[&changes[0].address].0, Outcome::Applied));
        assert!(matches!(outcomes[&changes[1].address].0, Outcome::NotStarted));
    }
}
