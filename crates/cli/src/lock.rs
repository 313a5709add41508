//! The apply lock, as the binary uses it: which bucket holds it, who this run is, taking it
//! (waiting, breaking a stale one, saying so) and `reconcile unlock`. The lock object itself is
//! `reconcile_s3::lock`.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use reconcile_core::{Account, Desired};

use crate::aws::Aws;
use crate::error::CliError;
use crate::exit;
use crate::output::out;

/// The apply lock in the first bucket desired.toml declares, if it declares one.
pub fn apply_lock(aws: &Aws, desired: &Desired, account: &Account) -> Option<reconcile_s3::lock::Lock> {
    let bucket = desired.s3.buckets.first()?;
    Some(reconcile_s3::lock::Lock::new(aws.s3(), &bucket.name.render(&account.id, &account.region)))
}

/// Who this apply is, as the lock records it.
async fn lock_holder(aws: &Aws, lease: Duration) -> Result<reconcile_s3::lock::Holder, CliError> {
    let who = aws.caller_arn().await.map_err(|error| CliError::aws(&aws.endpoint)(vec![error]))?;
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map_or_else(|| "an unknown host".to_owned(), |h| h.trim().to_owned());
    let run = match (
        std::env::var("GITHUB_SERVER_URL"),
        std::env::var("GITHUB_REPOSITORY"),
        std::env::var("GITHUB_RUN_ID"),
    ) {
        (Ok(server), Ok(repository), Ok(run)) => Some(format!("{server}/{repository}/actions/runs/{run}")),
        _ => None,
    };
    let since = now_seconds();
    Ok(reconcile_s3::lock::Holder {
        who,
        host,
        run,
        pid: Some(std::process::id()),
        since,
        until: since + lease.as_secs() as i64,
    })
}

fn now_seconds() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

/// An apply that runs longer than this may have its lock broken by the next one.
const LOCK_LEASE: Duration = Duration::from_secs(60 * 60);

/// Takes the apply lock, or says (on stderr) why there is none. `Ok(true)` when it must be
/// released.
pub async fn take_lock(aws: &Aws, lock: &reconcile_s3::lock::Lock, wait: Duration) -> Result<bool, CliError> {
    use reconcile_s3::lock::Taken;
    let holder = lock_holder(aws, LOCK_LEASE).await?;
    // A lock left on this host by a process that is gone (an apply killed outright) is broken:
    // nobody else can hold it. One from another host waits for its lease, or `unlock`.
    let gone = |other: &reconcile_s3::lock::Holder| {
        other.host == holder.host && other.pid.is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists())
    };
    let take = |wait| lock.take(&holder, wait, Duration::from_secs(2), &gone);
    let mut taken = take(Duration::ZERO).await.map_err(|error| CliError::aws(&aws.endpoint)(vec![error]))?;
    if let (Taken::Busy(other), false) = (&taken, wait.is_zero()) {
        eprintln!("Waiting up to {}s for the apply lock of {other}.", wait.as_secs());
        taken = take(wait).await.map_err(|error| CliError::aws(&aws.endpoint)(vec![error]))?;
    }
    match taken {
        Taken::Held => Ok(true),
        Taken::Broke(old) => {
            eprintln!("Broke the apply lock of {old}: its lease had run out, or its process is gone.");
            Ok(true)
        }
        Taken::NoBucket => {
            eprintln!("The bucket {} does not exist yet, so this apply runs without a lock.", lock.bucket());
            Ok(false)
        }
        Taken::Busy(other) => Err(CliError::Other(anyhow::anyhow!(
            "another apply holds the lock in s3://{}/{}: {other}; wait for it (--lock-timeout SECONDS), or, if it \
             is gone, `reconcile unlock`",
            lock.bucket(),
            reconcile_s3::lock::LOCK_KEY
        ))),
    }
}

/// `reconcile unlock`: breaks the apply lock, saying whose it was.
pub async fn unlock(aws: &Aws, desired: &Desired) -> Result<u8, CliError> {
    let account = aws.account().await.map_err(|error| CliError::aws(&aws.endpoint)(vec![error]))?;
    let lock = apply_lock(aws, desired, &account)
        .context("desired.toml declares no bucket, so there is no apply lock to break")?;
    let holder = lock.holder().await.map_err(|error| CliError::aws(&aws.endpoint)(vec![error]))?;
    match holder {
        None => out(&format!("There is no apply lock in s3://{}/{}.\n", lock.bucket(), reconcile_s3::lock::LOCK_KEY))?,
        Some(holder) => {
            lock.release().await.map_err(|error| CliError::aws(&aws.endpoint)(vec![error]))?;
            out(&format!("Broke the apply lock of {holder}.\n"))?;
        }
    }
    Ok(exit::OK)
}
