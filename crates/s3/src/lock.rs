//! The apply lock: one object in the managed bucket, written only if absent (an S3 conditional
//! write, `If-None-Match: *`), so that a scheduled job and a manual apply never change the
//! account at the same time.
//!
//! The object says who holds it (the caller's ARN, the host, the CI run when there is one), since
//! when, and until when: past that lease, the next apply may break it, saying whose it breaks.
//!
//! Every change to a lock someone else wrote is conditional on the ETag that was read: breaking
//! one overwrites it `If-Match` that ETag (two applies breaking the same lock cannot both win:
//! S3 lets exactly one conditional write through), and letting go deletes `If-Match` the ETag
//! this process wrote (a lock that was broken and taken by another apply meanwhile is theirs, and
//! stays). The runner's role, which runs code from the nightly's repository, may not touch the
//! lock's key at all: the role's derived policy denies it (`reconcile_iam`).

use std::sync::Mutex;
use std::time::Duration;

use aws_sdk_s3 as s3;
use reconcile_aws::{absent_if, failed, has_code};
use reconcile_core::ReconcileError;
use serde::{Deserialize, Serialize};

/// Where the lock lives in the bucket.
pub const LOCK_KEY: &str = crate::section::APPLY_LOCK_KEY;

/// Who holds the lock, as written in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// The caller's ARN, from STS.
    pub who: String,
    pub host: String,
    /// The CI run's URL, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// The process on `host`, so that a lock left by a killed apply on the same host can be
    /// told from one that is still held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Seconds since the epoch.
    pub since: i64,
    /// Seconds since the epoch; past it, the lock may be broken.
    pub until: i64,
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use reconcile_core::time::date_time;
        write!(f, "{} on {}", self.who, self.host)?;
        if let Some(pid) = self.pid {
            write!(f, " (process {pid})")?;
        }
        if let Some(run) = &self.run {
            write!(f, " ({run})")?;
        }
        if self.until == i64::MAX {
            return write!(f, ", with no end to its lease");
        }
        write!(f, ", since {} (lease until {})", date_time(self.since), date_time(self.until))
    }
}

/// What trying to take the lock came to.
#[derive(Debug)]
pub enum Taken {
    /// Ours, until released.
    Held,
    /// Ours, after breaking one whose lease had run out.
    Broke(Holder),
    /// The bucket does not exist yet (the first apply): there is nowhere to put a lock.
    NoBucket,
    /// Someone else's, still after waiting as long as allowed.
    Busy(Holder),
}

/// What one conditional write of the lock came to.
enum Write {
    /// Written; its ETag.
    Written(String),
    /// The condition failed: someone holds it, or someone else broke it first.
    Lost,
    NoBucket,
}

/// The lock object as it is now: who holds it, and the ETag that names exactly this write.
#[derive(Debug, Clone)]
pub struct Current {
    pub holder: Holder,
    pub etag: String,
}

/// The apply lock in one bucket.
pub struct Lock {
    client: s3::Client,
    bucket: String,
    /// The ETag of the lock this process wrote, once it did: what it may let go of.
    ours: Mutex<Option<String>>,
}

impl Lock {
    pub fn new(client: s3::Client, bucket: &str) -> Lock {
        Lock { client, bucket: bucket.to_owned(), ours: Mutex::new(None) }
    }

    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// Takes the lock for `holder`, waiting up to `wait` for another holder to let go (polling
    /// every `poll`). A lock past its lease, or one `gone` says was left by a process that no
    /// longer runs, is broken: overwritten on condition that it is still the one read.
    pub async fn take(
        &self,
        holder: &Holder,
        wait: Duration,
        poll: Duration,
        gone: &(dyn Fn(&Holder) -> bool + Sync),
    ) -> Result<Taken, ReconcileError> {
        let started = tokio::time::Instant::now();
        let body = serde_json::to_vec_pretty(holder).expect("a holder serializes");
        loop {
            match self.write(&body, None).await? {
                Write::Written(etag) => return Ok(self.held(etag, Taken::Held)),
                Write::NoBucket => return Ok(Taken::NoBucket),
                Write::Lost => {}
            }
            let Some(current) = self.current().await? else { continue };
            // Our own write, whose answer was lost (S3 committed it and the SDK's retry met the
            // condition it had just made true): ours, not another apply's to wait for.
            if current.holder == *holder {
                return Ok(self.held(current.etag, Taken::Held));
            }
            if current.holder.until < holder.since || gone(&current.holder) {
                match self.write(&body, Some(&current.etag)).await? {
                    Write::Written(etag) => return Ok(self.held(etag, Taken::Broke(current.holder))),
                    Write::NoBucket => return Ok(Taken::NoBucket),
                    // Someone else broke it first, or its holder let go: wait like anyone.
                    Write::Lost => {}
                }
            }
            if started.elapsed() + poll > wait {
                match self.current().await? {
                    Some(current) => return Ok(Taken::Busy(current.holder)),
                    None => continue,
                }
            }
            tokio::time::sleep(poll).await;
        }
    }

    fn held(&self, etag: String, taken: Taken) -> Taken {
        *self.ours.lock().expect("never poisoned") = Some(etag);
        taken
    }

    /// Writes the lock object: only if there is none (`If-None-Match: *`), or only over the
    /// one whose ETag is `over` (`If-Match`).
    async fn write(&self, body: &[u8], over: Option<&str>) -> Result<Write, ReconcileError> {
        let put = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(LOCK_KEY)
            .set_if_none_match(over.is_none().then(|| "*".to_owned()))
            .set_if_match(over.map(str::to_owned))
            .content_type("application/json")
            .body(body.to_vec().into())
            .send()
            .await;
        match put {
            Ok(output) => Ok(Write::Written(output.e_tag().unwrap_or_default().to_owned())),
            Err(error) if has_code(&error, &["NoSuchBucket"]) => Ok(Write::NoBucket),
            // `NoSuchKey`: what was to be overwritten was let go of meanwhile.
            Err(error) if has_code(&error, &["PreconditionFailed", "ConditionalRequestConflict", "NoSuchKey"]) => {
                Ok(Write::Lost)
            }
            Err(error) => Err(failed(None, "take the apply lock")(error)),
        }
    }

    /// Who holds the lock now, if anyone.
    pub async fn holder(&self) -> Result<Option<Holder>, ReconcileError> {
        Ok(self.current().await?.map(|current| current.holder))
    }

    /// The lock object now, if there is one.
    pub async fn current(&self) -> Result<Option<Current>, ReconcileError> {
        let response = self.client.get_object().bucket(&self.bucket).key(LOCK_KEY).send().await;
        let Some(object) =
            absent_if(response, &["NoSuchKey", "NoSuchBucket"]).map_err(failed(None, "read the apply lock"))?
        else {
            return Ok(None);
        };
        let etag = object.e_tag().unwrap_or_default().to_owned();
        let bytes = object
            .body
            .collect()
            .await
            .map_err(|error| ReconcileError::new(None, "read the apply lock", error.to_string()))?
            .into_bytes();
        // A lock nobody can read is still a lock: held by someone unknown, for ever, until broken
        // by hand with `reconcile unlock`.
        let holder = serde_json::from_slice(&bytes).unwrap_or_else(|_| Holder {
            who: "an unreadable lock".to_owned(),
            host: "unknown".to_owned(),
            run: None,
            pid: None,
            since: 0,
            until: i64::MAX,
        });
        Ok(Some(Current { holder, etag }))
    }

    /// Extends the lease of the lock this process holds as `holder` to `renewed` (the same holder,
    /// a later `until`): written only over the lock it wrote (`If-Match` its ETag). `false` when
    /// that is no longer the lock (broken and perhaps taken by another apply, or let go of).
    pub async fn renew(&self, holder: &Holder, renewed: &Holder) -> Result<bool, ReconcileError> {
        let ours = self.ours.lock().expect("never poisoned").clone();
        let Some(etag) = self.ours_or_named(ours, holder).await? else { return Ok(false) };
        let body = serde_json::to_vec_pretty(renewed).expect("a holder serializes");
        match self.write(&body, Some(&etag)).await? {
            Write::Written(etag) => {
                *self.ours.lock().expect("never poisoned") = Some(etag);
                Ok(true)
            }
            // Lost, or an answer lost after S3 wrote it: the lock says which.
            Write::Lost => match self.current().await? {
                Some(current) if current.holder == *renewed => {
                    *self.ours.lock().expect("never poisoned") = Some(current.etag);
                    Ok(true)
                }
                _ => Ok(false),
            },
            Write::NoBucket => Ok(false),
        }
    }

    /// Lets go of the lock this process holds as `holder`: deleted only if it is still the one
    /// it wrote. A lock someone else broke and took meanwhile stays theirs. When this process
    /// never learnt its lock's ETag (interrupted while writing it), the lock is let go of if it
    /// names `holder`.
    pub async fn release(&self, holder: &Holder) -> Result<(), ReconcileError> {
        let ours = self.ours.lock().expect("never poisoned").take();
        let Some(etag) = self.ours_or_named(ours, holder).await? else { return Ok(()) };
        self.delete(&etag, "release the apply lock").await.map(|_| ())
    }

    /// The ETag of the lock this process wrote: `ours` when it learnt it, else the lock's now
    /// if it names `holder` (a write whose answer never came); `None` when it is not ours.
    async fn ours_or_named(&self, ours: Option<String>, holder: &Holder) -> Result<Option<String>, ReconcileError> {
        if ours.is_some() {
            return Ok(ours);
        }
        Ok(self.current().await?.filter(|current| current.holder == *holder).map(|current| current.etag))
    }

    /// Breaks the lock whose ETag is `etag` (`reconcile unlock`): `false` when it is no longer
    /// that one (taken or let go of meanwhile).
    pub async fn break_lock(&self, etag: &str) -> Result<bool, ReconcileError> {
        self.delete(etag, "break the apply lock").await
    }

    /// Deletes the lock if its ETag is still `etag`; whether it was.
    async fn delete(&self, etag: &str, operation: &str) -> Result<bool, ReconcileError> {
        let response = self.client.delete_object().bucket(&self.bucket).key(LOCK_KEY).if_match(etag).send().await;
        match response {
            Ok(_) => Ok(true),
            Err(error)
                if has_code(
                    &error,
                    &["PreconditionFailed", "ConditionalRequestConflict", "NoSuchKey", "NoSuchBucket"],
                ) =>
            {
                Ok(false)
            }
            Err(error) => Err(failed(None, operation)(error)),
        }
    }
}
