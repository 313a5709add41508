//! Waiting out AWS's eventual consistency: retry one call while its error is one that time
//! fixes (a role CodeBuild cannot assume yet, a bucket S3 does not show yet), with backoff,
//! for a bounded time.
//!
//! Runtime-agnostic: the caller passes its own `sleep`, so `core` stays free of tokio.

use std::time::Duration;

/// How long, and how often, to try again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub first_delay: Duration,
    pub max_delay: Duration,
    /// Stop retrying once this much time has been spent waiting.
    pub give_up_after: Duration,
}

impl Backoff {
    /// For a resource that was just created and is not visible everywhere yet: the Terraform AWS
    /// provider waits up to 2 minutes for the same.
    pub const AFTER_CREATE: Backoff = Backoff {
        first_delay: Duration::from_secs(1),
        max_delay: Duration::from_secs(10),
        give_up_after: Duration::from_secs(120),
    };
}

/// Calls `call` until it succeeds, fails with an error `transient` does not accept, or the
/// backoff runs out. `transient` is told the delay about to be waited, so it can say so.
pub async fn retry<T, E, F, Fut, S, SFut>(
    backoff: Backoff,
    mut call: F,
    mut transient: impl FnMut(&E, Duration) -> bool,
    sleep: S,
) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    S: Fn(Duration) -> SFut,
    SFut: Future<Output = ()>,
{
    let mut delay = backoff.first_delay;
    let mut waited = Duration::ZERO;
    loop {
        match call().await {
            Err(error) if waited + delay <= backoff.give_up_after && transient(&error, delay) => {
                sleep(delay).await;
                waited += delay;
                delay = (delay * 2).min(backoff.max_delay);
            }
            result => return result,
        }
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
}
