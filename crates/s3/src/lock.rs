//! The apply lock: one object in the managed bucket, written only if absent (an S3 conditional
//! write, `If-None-Match: *`), so that a scheduled job and a manual apply never change the
//! account at the same time.
//!
//! The object says who holds it (the caller's ARN, the host, the CI run when there is one), since
//! when, and until when: past that lease, the next apply may break it, saying whose it breaks.

use std::time::Duration;

use aws_sdk_s3 as s3;
use reconcile_aws::{absent_if, failed, has_code};
use reconcile_core::ReconcileError;
use serde::{Deserialize, Serialize};

/// Where the lock lives in the bucket.
pub const LOCK_KEY: &str = "reconcile/apply.lock";

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
        write!(f, "{} on {}", self.who, self.host)?;
        if let Some(run) = &self.run {
            write!(f, " ({run})")?;
        }
        write!(f, ", since {} (lease until {})", timestamp(self.since), timestamp(self.until))
    }
}

fn timestamp(seconds: i64) -> String {
    aws_smithy_types::DateTime::from_secs(seconds)
        .fmt(aws_smithy_types::date_time::Format::DateTime)
        .unwrap_or_else(|_| seconds.to_string())
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
    Written,
    /// Someone holds it (or two writers raced and the other won).
    Exists,
    NoBucket,
}

/// The apply lock in one bucket.
pub struct Lock {
    client: s3::Client,
    bucket: String,
}

impl Lock {
    pub fn new(client: s3::Client, bucket: &str) -> Lock {
        Lock { client, bucket: bucket.to_owned() }
    }

    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// Takes the lock for `holder`, waiting up to `wait` for another holder to let go (polling
    /// every `poll`). A lock past its lease, or one `gone` says was left by a process that no
    /// longer runs, is broken.
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
            match self.write(&body).await? {
                Write::Written => return Ok(Taken::Held),
                Write::NoBucket => return Ok(Taken::NoBucket),
                Write::Exists => {}
            }
            let Some(current) = self.holder().await? else { continue };
            if current.until < holder.since || gone(&current) {
                self.release().await?;
                // Someone else may break it first and hold it now: then wait for them like anyone.
                if let Write::Written = self.write(&body).await? {
                    return Ok(Taken::Broke(current));
                }
            }
            if started.elapsed() + poll > wait {
                match self.holder().await? {
                    Some(current) => return Ok(Taken::Busy(current)),
                    None => continue,
                }
            }
            tokio::time::sleep(poll).await;
        }
    }

    /// Writes the lock object only if there is none (S3's conditional write).
    async fn write(&self, body: &[u8]) -> Result<Write, ReconcileError> {
        let put = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(LOCK_KEY)
            .if_none_match("*")
            .content_type("application/json")
            .body(body.to_vec().into())
            .send()
            .await;
        match put {
            Ok(_) => Ok(Write::Written),
            Err(error) if has_code(&error, &["NoSuchBucket"]) => Ok(Write::NoBucket),
            Err(error) if has_code(&error, &["PreconditionFailed", "ConditionalRequestConflict"]) => Ok(Write::Exists),
            Err(error) => Err(failed(None, "take the apply lock")(error)),
        }
    }

    /// Who holds the lock now, if anyone.
    pub async fn holder(&self) -> Result<Option<Holder>, ReconcileError> {
        let response = self.client.get_object().bucket(&self.bucket).key(LOCK_KEY).send().await;
        let Some(object) =
            absent_if(response, &["NoSuchKey", "NoSuchBucket"]).map_err(failed(None, "read the apply lock"))?
        else {
            return Ok(None);
        };
        let bytes = object
            .body
            .collect()
            .await
            .map_err(|error| ReconcileError::new(None, "read the apply lock", error.to_string()))?
            .into_bytes();
        // A lock nobody can read is still a lock: held by someone unknown, for ever, until broken
        // by hand with `reconcile unlock`.
        Ok(Some(serde_json::from_slice(&bytes).unwrap_or_else(|_| Holder {
            who: "an unreadable lock".to_owned(),
            host: "unknown".to_owned(),
            run: None,
            pid: None,
            since: 0,
            until: i64::MAX,
        })))
    }

    /// Lets the lock go (or breaks it): deleting an absent lock is success.
    pub async fn release(&self) -> Result<(), ReconcileError> {
        let response = self.client.delete_object().bucket(&self.bucket).key(LOCK_KEY).send().await;
        absent_if(response, &["NoSuchKey", "NoSuchBucket"]).map_err(failed(None, "release the apply lock"))?;
        Ok(())
    }
}
