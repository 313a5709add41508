//! Trying a call again, one policy for every retry reconcile makes itself: waiting out AWS's
//! eventual consistency (a role CodeBuild cannot assume yet, a bucket S3 does not show yet) and
//! a GitHub request failed in passing (a 5xx, no answer). The AWS SDK's own retries are set
//! from the same policy ([`Backoff::requests`]). Backoff doubles up to a cap; a request's wait
//! is fully jittered from a seeded generator ([`Jitter`]), so a test replays the same waits.
//!
//! Runtime-agnostic: the caller passes its own `sleep`, so `core` stays free of tokio.

use std::time::Duration;

/// How long, and how often, to try again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub first_delay: Duration,
    pub max_delay: Duration,
    /// Stop retrying once the waits (before jitter) would pass this.
    pub give_up_after: Duration,
    /// Whether each wait is a random part of the delay (full jitter), so clients that failed
    /// together do not come back together.
    pub jitter: bool,
}

impl Backoff {
    /// For a resource that was just created and is not visible everywhere yet: the Terraform AWS
    /// provider waits up to 2 minutes for the same.
    pub const AFTER_CREATE: Backoff = Backoff {
        first_delay: Duration::from_secs(1),
        max_delay: Duration::from_secs(10),
        give_up_after: Duration::from_secs(120),
        jitter: false,
    };

    /// For a request that failed in passing, `attempts` in all: the AWS SDK's standard backoff,
    /// `base` doubled each time up to four times `base`, with full jitter.
    pub fn requests(base: Duration, attempts: u32) -> Backoff {
        let max_delay = base.saturating_mul(4);
        // The waits before the cap (base, twice base), then the cap for every other retry.
        let retries = attempts.saturating_sub(1);
        let doubling = [base, base.saturating_mul(2)].into_iter().take(retries as usize);
        let give_up_after = doubling
            .fold(Duration::ZERO, Duration::saturating_add)
            .saturating_add(max_delay.saturating_mul(retries.saturating_sub(2)));
        Backoff { first_delay: base, max_delay, give_up_after, jitter: true }
    }
}

/// Where a jittered wait's fraction comes from: splitmix64 over a seed.
#[derive(Debug, Clone)]
pub struct Jitter(u64);

impl Jitter {
    pub fn seeded(seed: u64) -> Jitter {
        Jitter(seed)
    }

    /// The next fraction, in [0, 1).
    pub fn next_fraction(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Calls `call` until it succeeds, fails with an error `transient` does not accept, or the
/// backoff runs out. `transient` is told the delay about to be waited, so it can say so.
pub async fn retry<T, E, F, Fut, S, SFut>(
    backoff: Backoff,
    call: F,
    mut transient: impl FnMut(&E, Duration) -> bool,
    sleep: S,
) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    S: Fn(Duration) -> SFut,
    SFut: Future<Output = ()>,
{
    let again = |result: &Result<T, E>, wait| matches!(result, Err(error) if transient(error, wait));
    retry_while(backoff, &mut Jitter::seeded(0), call, again, sleep).await
}

/// Calls `call` again while `again` says its answer (an error, or an answer that is one in
/// passing, such as a 502) is worth another try and the backoff has not run out. `again` is
/// told the wait about to be made.
pub async fn retry_while<T, F, Fut, S, SFut>(
    backoff: Backoff,
    jitter: &mut Jitter,
    mut call: F,
    mut again: impl FnMut(&T, Duration) -> bool,
    sleep: S,
) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = T>,
    S: Fn(Duration) -> SFut,
    SFut: Future<Output = ()>,
{
    let mut delay = backoff.first_delay;
    let mut waited = Duration::ZERO;
    loop {
        let result = call().await;
        if waited + delay > backoff.give_up_after {
            return result;
        }
        let wait = if backoff.jitter { delay.mul_f64(jitter.next_fraction()) } else { delay };
        if !again(&result, wait) {
            return result;
        }
        sleep(wait).await;
        waited += delay;
        delay = (delay * 2).min(backoff.max_delay);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::{Cell, RefCell};

    fn run<T>(future: impl Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(future)
    }

    #[test]
    fn transient_errors_are_retried_with_doubling_delays_until_success() {
        let calls = Cell::new(0);
        let slept = RefCell::new(Vec::new());
        let backoff = Backoff {
            first_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(3),
            give_up_after: Duration::from_secs(60),
            jitter: false,
        };
        let result: Result<&str, &str> = run(retry(
            backoff,
            || {
                calls.set(calls.get() + 1);
                async { if calls.get() < 5 { Err("not yet") } else { Ok("done") } }
            },
            |error, _| *error == "not yet",
            |delay| {
                slept.borrow_mut().push(delay.as_secs());
                async {}
            },
        ));
        assert_eq!(result, Ok("done"));
        assert_eq!(*slept.borrow(), [1, 2, 3, 3]);
    }

    #[test]
    fn other_errors_and_exhausted_backoff_end_the_retries() {
        let backoff = Backoff {
            first_delay: Duration::from_secs(4),
            max_delay: Duration::from_secs(4),
            give_up_after: Duration::from_secs(8),
            jitter: false,
        };
        let calls = Cell::new(0);
        let result: Result<(), &str> = run(retry(
            backoff,
            || {
                calls.set(calls.get() + 1);
                async { Err("not yet") }
            },
            |_, _| true,
            |_| async {},
        ));
        assert_eq!((result, calls.get()), (Err("not yet"), 3), "two waits of 4s fit in 8s");
        let result: Result<(), &str> =
            run(retry(backoff, || async { Err("denied") }, |e, _| *e == "not yet", |_| async {}));
        assert_eq!(result, Err("denied"));
    }

    #[test]
    fn a_requests_backoff_doubles_to_four_times_its_base_and_makes_its_attempts() {
        let base = Duration::from_millis(100);
        let backoff = Backoff::requests(base, 8);
        assert_eq!((backoff.first_delay, backoff.max_delay), (base, Duration::from_millis(400)));
        // 100 + 200 + 400 * 5: seven waits, eight attempts.
        assert_eq!(backoff.give_up_after, Duration::from_millis(2300));
        assert_eq!(Backoff::requests(base, 1).give_up_after, Duration::ZERO);
        assert_eq!(Backoff::requests(base, 0).give_up_after, Duration::ZERO);
        assert_eq!(Backoff::requests(base, 2).give_up_after, base);
        assert_eq!(Backoff::requests(base, 3).give_up_after, Duration::from_millis(300));
        assert_eq!(Backoff::requests(Duration::MAX, u32::MAX).max_delay, Duration::MAX, "no overflow");
        let calls = Cell::new(0);
        let slept = RefCell::new(Vec::new());
        let answer = run(retry_while(
            backoff,
            &mut Jitter::seeded(7),
            || {
                calls.set(calls.get() + 1);
                async { 502 }
            },
            |status, _| *status == 502,
            |wait| {
                slept.borrow_mut().push(wait);
                async {}
            },
        ));
        assert_eq!((answer, calls.get()), (502, 8));
        let nominal = [100, 200, 400, 400, 400, 400, 400];
        let slept = slept.borrow();
        for (wait, nominal) in slept.iter().zip(nominal) {
            assert!(*wait < Duration::from_millis(nominal), "{wait:?} is a part of {nominal}ms");
        }
        assert!(slept.windows(2).any(|w| w[0] != w[1]), "jittered: {slept:?}");
    }

    #[test]
    fn jitter_is_a_fraction_replayed_from_its_seed() {
        let fractions = |seed| {
            let mut jitter = Jitter::seeded(seed);
            (0..1000).map(|_| jitter.next_fraction()).collect::<Vec<f64>>()
        };
        // splitmix64's published first outputs for seed 0 (0xe220a8397b1dcdaf, ...), 53 bits each.
        let mut zero = Jitter::seeded(0);
        let published = [0xe220_a839_7b1d_cdaf_u64, 0x6e78_9e6a_a1b9_65f4, 0x06c4_5d18_8009_454f];
        for output in published {
            assert_eq!(zero.next_fraction(), (output >> 11) as f64 / (1u64 << 53) as f64);
        }
        let first = fractions(42);
        assert_eq!(first, fractions(42));
        assert_ne!(first, fractions(43));
        assert!(first.iter().all(|f| (0.0..1.0).contains(f)));
        let mean = first.iter().sum::<f64>() / 1000.0;
        assert!((0.4..0.6).contains(&mean), "{mean}");
    }
}
