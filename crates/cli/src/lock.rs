//! The apply lock, as the binary uses it: which bucket holds it, who this run is, taking it
//! (waiting, breaking a stale one, saying so), letting go of it, and `reconcile unlock`. The
//! lock object itself is `reconcile_s3::lock`.

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use anyhow::Context;
use reconcile_core::{Account, Desired};
use reconcile_s3::lock::{Holder, Lock, Taken};

use crate::aws::Aws;
use crate::error::CliError;
use crate::exit;
use crate::output::out;
use crate::session::ApplyLock;

/// An apply that runs longer than this may have its lock broken by the next one.
const LOCK_LEASE: Duration = Duration::from_secs(60 * 60);

/// The apply lock in the first bucket desired.toml declares.
pub struct AwsLock<'a> {
    aws: &'a Aws,
    lock: Lock,
    /// Who this run wrote into the lock, once it tried to: what it may release.
    ours: Mutex<Option<Holder>>,
}

impl<'a> AwsLock<'a> {
    /// The lock, if desired.toml declares a bucket to keep it in.
    pub fn of(aws: &'a Aws, desired: &Desired, account: &Account) -> Option<AwsLock<'a>> {
        let bucket = reconcile_s3::declared(desired).lock_bucket()?;
        let lock = Lock::new(
            reconcile_s3::client(&aws.clients(account, desired, None, None)),
            &bucket.name.render(&account.id, &account.region),
        );
        Some(AwsLock { aws, lock, ours: Mutex::new(None) })
    }
}

#[async_trait::async_trait]
impl ApplyLock for AwsLock<'_> {
    /// Takes the apply lock, or says (on stderr) why there is none.
    async fn take(&self, wait: Duration) -> Result<bool, CliError> {
        let aws = self.aws;
        let holder = lock_holder(aws, LOCK_LEASE).await?;
        *self.ours.lock().expect("never poisoned") = Some(holder.clone());
        // A lock left on this host by a process that is gone (an apply killed outright) is broken:
        // nobody else can hold it. One from another host waits for its lease, or `unlock`.
        let gone = |other: &Holder| other.host == holder.host && !alive(other);
        let take = |wait| self.lock.take(&holder, wait, Duration::from_secs(2), &gone);
        let mut taken = take(Duration::ZERO).await.map_err(|error| aws.failed(vec![error]))?;
        if let (Taken::Busy(other), false) = (&taken, wait.is_zero()) {
            crate::output::err(&format!("Waiting up to {}s for the apply lock of {other}.", wait.as_secs()));
            taken = take(wait).await.map_err(|error| aws.failed(vec![error]))?;
        }
        match taken {
            Taken::Held => Ok(true),
            Taken::Broke(old) => {
                crate::output::err(&format!(
                    "Broke the apply lock of {old}: its lease had run out, or its process is gone."
                ));
                Ok(true)
            }
            Taken::NoBucket => {
                crate::output::err(&format!(
                    "The bucket {} does not exist yet, so this apply runs without a lock.",
                    self.lock.bucket()
                ));
                Ok(false)
            }
            Taken::Busy(other) => Err(CliError::Other(anyhow::anyhow!(
                "another apply holds the lock in s3://{}/{}: {other}; wait for it (--lock-timeout SECONDS), or, if \
                 it is gone, `reconcile unlock`",
                self.lock.bucket(),
                reconcile_s3::lock::LOCK_KEY
            ))),
        }
    }

    async fn release(&self) -> Result<(), CliError> {
        let Some(ours) = self.ours.lock().expect("never poisoned").clone() else { return Ok(()) };
        self.lock.release(&ours).await.map_err(|error| self.aws.failed(vec![error]))
    }

    async fn renew(&self) -> Result<bool, CliError> {
        let Some(ours) = self.ours.lock().expect("never poisoned").clone() else { return Ok(false) };
        let renewed = Holder { until: reconcile_core::time::now() + LOCK_LEASE.as_secs() as i64, ..ours.clone() };
        let held = self.lock.renew(&ours, &renewed).await.map_err(|error| self.aws.failed(vec![error]))?;
        if held {
            *self.ours.lock().expect("never poisoned") = Some(renewed);
        }
        Ok(held)
    }

    fn renew_every(&self) -> Duration {
        LOCK_LEASE / 4
    }

    fn expired(&self) -> bool {
        self.ours.lock().expect("never poisoned").as_ref().is_none_or(|ours| ours.until < reconcile_core::time::now())
    }
}

/// Whether the process a holder names may still run: always, for one on another host (or of
/// no known process); on this host, while `/proc` has it.
fn alive(holder: &Holder) -> bool {
    holder.pid.is_none_or(|pid| Path::new(&format!("/proc/{pid}")).exists())
}

fn this_host() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map_or_else(|| "an unknown host".to_owned(), |h| h.trim().to_owned())
}

/// Who this apply is, as the lock records it.
async fn lock_holder(aws: &Aws, lease: Duration) -> Result<Holder, CliError> {
    let who = aws.caller_arn().await.map_err(|error| aws.failed(vec![error]))?;
    let host = this_host();
    let run = match (
        std::env::var("GITHUB_SERVER_URL"),
        std::env::var("GITHUB_REPOSITORY"),
        std::env::var("GITHUB_RUN_ID"),
    ) {
        (Ok(server), Ok(repository), Ok(run)) => Some(format!("{server}/{repository}/actions/runs/{run}")),
        _ => None,
    };
    let since = reconcile_core::time::now();
    Ok(Holder { who, host, run, pid: Some(std::process::id()), since, until: since + lease.as_secs() as i64 })
}

/// `reconcile unlock`: breaks the apply lock, saying whose it was; one whose process still runs
/// on this host only with `force`.
pub async fn unlock(aws: &Aws, desired: &Desired, force: bool) -> Result<u8, CliError> {
    let account = aws.account().await.map_err(|error| aws.failed(vec![error]))?;
    let lock = AwsLock::of(aws, desired, &account)
        .context("desired.toml declares no bucket, so there is no apply lock to break")?
        .lock;
    let current = lock.current().await.map_err(|error| aws.failed(vec![error]))?;
    let Some(current) = current else {
        out(&format!("There is no apply lock in s3://{}/{}.\n", lock.bucket(), reconcile_s3::lock::LOCK_KEY))?;
        return Ok(exit::OK);
    };
    let holder = &current.holder;
    if holder.host == this_host() && holder.pid.is_some() && alive(holder) && !force {
        return Err(CliError::RefusedUnlock(format!(
            "it is held by {holder}, whose process still runs on this host; let that apply finish (or stop it), \
             or pass --force"
        )));
    }
    // Only the lock that was read: one taken since is someone else's, and stays.
    if !lock.break_lock(&current.etag).await.map_err(|error| aws.failed(vec![error]))? {
        return Err(CliError::Other(anyhow::anyhow!(
            "the apply lock changed while it was being broken (another apply took or let go of it); run \
             `reconcile unlock` again to see whose it is now"
        )));
    }
    out(&format!("Broke the apply lock of {holder}.\n"))?;
    Ok(exit::OK)
}
