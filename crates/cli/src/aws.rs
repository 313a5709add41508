//! AWS wiring: the standard configuration chain, the account, the clients and a count of
//! every request sent.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use std::time::Duration;

use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::{
    BeforeTransmitInterceptorContextRef, FinalizerInterceptorContextRef,
};
use aws_smithy_runtime_api::client::interceptors::{Intercept, SharedInterceptor};
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;
use reconcile_core::{Account, Desired, ReconcileError, Reconciler};

use crate::error::CliError;

/// How hard a run may press AWS: requests in flight to each service (`--parallelism`), and how
/// long one request may go on being throttled (`--throttle-deadline`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub parallelism: usize,
    pub throttle_deadline: Duration,
}

#[cfg(test)]
impl Limits {
    /// `parallelism` requests at once, throttled for as long as the default allows.
    pub fn of(parallelism: usize) -> Limits {
        Limits { parallelism, throttle_deadline: reconcile_aws::DEFAULT_THROTTLE_DEADLINE }
    }
}

/// How long one request may take. Without them, an endpoint that accepts the connection and
/// never answers hangs a run for ever (and burns a CI job): connecting gets 3 s and each attempt
/// 10 s (AWS's control-plane reads answer in well under one). A whole operation may go on while
/// AWS throttles it, up to the throttle deadline (with room for its last attempt); any other
/// failure stops it far sooner ([`transient`]). Waits for eventual consistency are separate
/// operations, so they are not cut short by this.
fn timeouts(throttle_deadline: Duration) -> TimeoutConfig {
    TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(3))
        .read_timeout(Duration::from_secs(10))
        .operation_attempt_timeout(Duration::from_secs(10))
        .operation_timeout(throttle_deadline + Duration::from_secs(15))
        .build()
}

/// What a run does with AWS, which decides how hard it retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// plan, drift, usage, outputs: a failure costs a re-run of a read.
    Read,
    /// apply: a failure leaves a change half made, so it retries longer.
    Apply,
    /// `drift --put-back`: a drift check that writes, then reads again what it wrote, so it
    /// retries as an apply does and reads nothing once for the run.
    PutBack,
}

/// Attempts per request at a failure that is not throttling, the first included (throttling, 5xx,
/// timeouts and dropped connections are retried: the SDK's HTTP client classifies hyper's
/// "connection closed before message completed" as transient since aws-smithy-http-client 1.5),
/// and how long since the first attempt a retry may still start: what the operation timeout was
/// before throttling was bounded by time ([`reconcile_aws::Pacing`]). Terraform's AWS provider
/// allows 25 attempts of anything; these are fewer because they are also bounded in time.
/// `AWS_MAX_ATTEMPTS`, the standard variable, wins when set.
const READ_ATTEMPTS: u32 = 8;
const APPLY_ATTEMPTS: u32 = 12;

/// What bounds the retries of a failure that is not throttling, for `purpose`.
fn transient(purpose: Purpose) -> reconcile_aws::Transient {
    let attempts = std::env::var("AWS_MAX_ATTEMPTS").ok().and_then(|n| n.parse().ok()).unwrap_or(match purpose {
        Purpose::Read => READ_ATTEMPTS,
        Purpose::Apply | Purpose::PutBack => APPLY_ATTEMPTS,
    });
    let within = match purpose {
        Purpose::Read => Duration::from_secs(25),
        // More attempts, with longer backoff between them, need more room.
        Purpose::Apply | Purpose::PutBack => Duration::from_secs(60),
    };
    reconcile_aws::Transient { attempts: attempts.max(1), within, base: retry_base() }
}

/// The first retry's delay, before jitter and doubling, for AWS and GitHub alike: the SDK's 1 s,
/// or `RECONCILE_RETRY_BASE_DELAY_MS` (the fault-injection tests shorten it).
pub fn retry_base() -> Duration {
    let ms = std::env::var("RECONCILE_RETRY_BASE_DELAY_MS").ok().and_then(|ms| ms.parse().ok()).unwrap_or(1000);
    Duration::from_millis(ms)
}

/// So many attempts that time runs out first: what bounds a request's attempts is time, in
/// [`reconcile_aws::Pacing`] (its classifier forbids a retry the bounds do not allow). Not more:
/// the SDK's identity cache sums a backoff over every allowed attempt on each request (at a
/// hundred thousand, that was 3 ms of CPU a request, most of a plan's).
const UNBOUNDED_ATTEMPTS: u32 = 1_000;

/// The SDK's retries, in standard mode: how long each wait is [`reconcile_aws::Pacing`] says (a
/// throttled request's at its service's gate, any other's the standard backoff from
/// [`retry_base`], fully jittered), up to a cap that only the throttle deadline bounds. (The
/// SDK's adaptive mode paces too, but starts so low after a throttle that a plan takes twice as
/// long as the rate allows.)
fn retry_config(throttle_deadline: Duration) -> aws_config::retry::RetryConfig {
    aws_config::retry::RetryConfig::standard()
        .with_max_attempts(UNBOUNDED_ATTEMPTS)
        .with_initial_backoff(retry_base())
        .with_max_backoff(throttle_deadline)
}

/// Counts every HTTP request sent to AWS, retries included, by service and operation, how
/// many of them were retries, and how many AWS answered with throttling.
#[derive(Debug, Clone, Default)]
pub struct RequestCounter {
    counts: Arc<Mutex<BTreeMap<String, u64>>>,
    operations: Arc<std::sync::atomic::AtomicU64>,
    throttled: Arc<std::sync::atomic::AtomicU64>,
}

impl RequestCounter {
    /// Requests sent again after a transient failure (throttling, 5xx, a dropped connection).
    pub fn retries(&self) -> u64 {
        let sent: u64 = self.counts.lock().expect("never poisoned").values().sum();
        sent.saturating_sub(self.operations.load(std::sync::atomic::Ordering::Relaxed))
    }
}

impl fmt::Display for RequestCounter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let retries = self.retries();
        let counts = self.counts.lock().expect("never poisoned");
        write!(f, "{} AWS requests", counts.values().sum::<u64>())?;
        let throttled = self.throttled.load(std::sync::atomic::Ordering::Relaxed);
        match (retries, throttled) {
            (0, 0) => {}
            (_, 0) => write!(f, " ({retries} of them retries)")?,
            _ => write!(f, " ({retries} of them retries, {throttled} answered with throttling)")?,
        }
        for (idx, (operation, count)) in counts.iter().enumerate() {
            write!(f, "{}{operation} {count}", if idx == 0 { ": " } else { ", " })?;
        }
        Ok(())
    }
}

impl Intercept for RequestCounter {
    fn name(&self) -> &'static str {
        "RequestCounter"
    }

    fn read_before_execution(
        &self,
        _context: &aws_smithy_runtime_api::client::interceptors::context::BeforeSerializationInterceptorContextRef<'_>,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        // A read sent again after a throttle is a new operation to the SDK, and a retry here.
        if !reconcile_aws::resent() {
            self.operations.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(())
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let operation =
            cfg.load::<Metadata>().map_or_else(|| "unknown".to_owned(), |m| format!("{}:{}", m.service(), m.name()));
        *self.counts.lock().expect("never poisoned").entry(operation).or_default() += 1;
        Ok(())
    }

    fn read_after_attempt(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let s3 = cfg.load::<Metadata>().is_some_and(|m| m.service() == "S3");
        if context.response().is_some_and(|response| throttling(response, s3)) {
            self.throttled.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(())
    }
}

/// Whether AWS answered "slow down": a 429, S3's 503 (its `SlowDown`, which a `HEAD` answer has no
/// body to name), or an error whose code (JSON protocols' `x-amzn-errortype` header, or the code
/// in the error body, which the SDK has read by now) is one of the throttling codes.
fn throttling(response: &aws_smithy_runtime_api::http::Response, s3: bool) -> bool {
    let status = response.status().as_u16();
    if status < 400 {
        return false;
    }
    if s3 && status == 503 {
        return true;
    }
    let header = response.headers().get("x-amzn-errortype").unwrap_or_default();
    let body = response.body().bytes().map(String::from_utf8_lossy).unwrap_or_default();
    status == 429 || reconcile_aws::THROTTLED.iter().any(|code| header.starts_with(code) || body.contains(code))
}

pub struct Aws {
    pub sdk: SdkConfig,
    pub requests: RequestCounter,
    /// Where requests go, for messages: the overridden endpoint, or AWS in the region.
    pub endpoint: String,
    /// Who the credentials are (account id, caller ARN), asked of STS once a run.
    identity: tokio::sync::OnceCell<(String, String)>,
    /// Requests in flight at once to each service: `--parallelism`.
    pub parallelism: usize,
    /// How the run meets throttling, shared by every client it builds.
    pub pacing: reconcile_aws::Pacing,
    /// For a run that only reads: what a crate reads once, shared by every reconciler of it
    /// the run builds (ECR's repositories).
    read_once: Option<reconcile_aws::Shared>,
}

impl Aws {
    /// Loads the standard chain (credentials, endpoint, retries), with desired.toml's region.
    /// Only commands that talk to AWS call it: `validate` never reads the AWS configuration.
    pub async fn load(region: &str, purpose: Purpose, limits: Limits) -> Aws {
        let sdk = aws_config::defaults(BehaviorVersion::latest())
            .region(Region::new(region.to_owned()))
            // `app/reconcile` in every request's user agent: CloudTrail records it, and drift
            // attribution tells reconcile's own changes apart by it.
            .app_name(aws_config::AppName::new("reconcile").expect("a valid app name"))
            .timeout_config(timeouts(limits.throttle_deadline))
            .retry_config(retry_config(limits.throttle_deadline))
            .load()
            .await;
        let endpoint = match sdk.endpoint_url() {
            Some(url) => format!("the AWS endpoint {url}"),
            None => format!("AWS in {region}"),
        };
        let read_once = (purpose == Purpose::Read).then(reconcile_aws::Shared::default);
        Aws {
            sdk,
            requests: RequestCounter::default(),
            endpoint,
            identity: tokio::sync::OnceCell::new(),
            parallelism: limits.parallelism,
            pacing: reconcile_aws::Pacing::new(limits.throttle_deadline, transient(purpose)),
            read_once,
        }
    }

    /// The account the credentials belong to.
    pub async fn account(&self) -> Result<Account, ReconcileError> {
        let (id, _) = self.identity().await?;
        let region = self.sdk.region().map_or_else(String::new, |r| r.to_string());
        Ok(Account::new(id, region))
    }

    /// An IAM client, counted.
    pub fn iam(&self) -> aws_sdk_iam::Client {
        aws_sdk_iam::Client::from_conf(reconcile_aws::configure!(
            aws_sdk_iam::config::Builder::from(&self.sdk),
            self.requests,
            self.pacing,
            "iam"
        ))
    }

    /// The caller's ARN, for the apply lock.
    pub async fn caller_arn(&self) -> Result<String, ReconcileError> {
        Ok(self.identity().await?.1.clone())
    }

    /// STS's answer, read once: the account and the caller's ARN.
    async fn identity(&self) -> Result<&(String, String), ReconcileError> {
        const OPERATION: &str = "learn the account from STS GetCallerIdentity";
        self.identity
            .get_or_try_init(|| async {
                let config = reconcile_aws::configure!(
                    aws_sdk_sts::config::Builder::from(&self.sdk),
                    self.requests,
                    self.pacing,
                    "sts"
                );
                let identity = aws_sdk_sts::Client::from_conf(config)
                    .get_caller_identity()
                    .send()
                    .await
                    .map_err(reconcile_aws::failed(None, OPERATION))?;
                let id = identity
                    .account()
                    .ok_or_else(|| ReconcileError::new(None, OPERATION, "STS returned no account"))?;
                Ok((id.to_owned(), identity.arn().unwrap_or("an unknown caller").to_owned()))
            })
            .await
    }

    /// What a resource crate builds its reconciler and clients from.
    pub fn clients<'a>(
        &'a self,
        account: &'a Account,
        desired: &'a Desired,
        prune: Option<reconcile_core::Prune>,
        destroy: Option<reconcile_core::Destroy>,
    ) -> reconcile_aws::Clients<'a> {
        reconcile_aws::Clients {
            sdk: &self.sdk,
            interceptor: SharedInterceptor::new(self.requests.clone()),
            pacing: &self.pacing,
            account,
            desired,
            parallelism: self.parallelism,
            prune,
            destroy,
            shared: self.read_once.as_ref(),
        }
    }

    /// A CodeBuild client on its own, for the runner's builds (`cost`).
    pub fn codebuild(&self) -> aws_sdk_codebuild::Client {
        let config = reconcile_aws::configure!(
            aws_sdk_codebuild::config::Builder::from(&self.sdk),
            self.requests,
            self.pacing,
            "codebuild"
        );
        aws_sdk_codebuild::Client::from_conf(config)
    }

    /// CloudWatch, for S3's daily storage metric (`cost`).
    pub fn cloudwatch(&self) -> aws_sdk_cloudwatch::Client {
        let config = reconcile_aws::configure!(
            aws_sdk_cloudwatch::config::Builder::from(&self.sdk),
            self.requests,
            self.pacing,
            "cloudwatch"
        );
        aws_sdk_cloudwatch::Client::from_conf(config)
    }

    /// CloudTrail's event history in `region` (IAM's is in us-east-1).
    pub fn cloudtrail(&self, region: &str) -> aws_sdk_cloudtrail::Client {
        let config = reconcile_aws::configure!(
            aws_sdk_cloudtrail::config::Builder::from(&self.sdk).region(Region::new(region.to_owned())),
            self.requests,
            self.pacing,
            "cloudtrail"
        );
        aws_sdk_cloudtrail::Client::from_conf(config)
    }

    /// The Price List API, served from us-east-1 whatever the account's region.
    pub fn pricing(&self) -> aws_sdk_pricing::Client {
        let config = reconcile_aws::configure!(
            aws_sdk_pricing::config::Builder::from(&self.sdk).region(Region::new("us-east-1")),
            self.requests,
            self.pacing,
            "pricing"
        );
        aws_sdk_pricing::Client::from_conf(config)
    }

    /// Cost Explorer: one global endpoint, in us-east-1.
    pub fn cost_explorer(&self) -> aws_sdk_costexplorer::Client {
        let config = reconcile_aws::configure!(
            aws_sdk_costexplorer::config::Builder::from(&self.sdk).region(Region::new("us-east-1")),
            self.requests,
            self.pacing,
            "ce"
        );
        aws_sdk_costexplorer::Client::from_conf(config)
    }

    /// The failure of `errors`, rendered for where requests went.
    pub fn failed(&self, errors: Vec<ReconcileError>) -> CliError {
        // A request throttled past the deadline: said as what, for how long, how many times.
        let gave_up = self.pacing.gave_up();
        let errors = errors
            .into_iter()
            .map(|error| match (&gave_up, error.kind) {
                (Some(gave_up), reconcile_core::ErrorKind::Throttled) => {
                    ReconcileError { reason: format!("{gave_up}: {}", error.reason), ..error }
                }
                _ => error,
            })
            .collect();
        CliError::aws(&self.endpoint)(errors)
    }

    /// What the run's requests were, and what throttling did to them: the `-v` line.
    pub fn requests(&self) -> String {
        match self.pacing.summary() {
            Some(throttling) => format!("{}; {throttling}", self.requests),
            None => self.requests.to_string(),
        }
    }

    /// The reconciler of each AWS crate in `crates` (the catalog's), each with its own counted
    /// client. Building them makes no request.
    pub fn reconcilers(
        &self,
        crates: &[crate::catalog::Crate],
        account: &Account,
        desired: &Desired,
        prune: Option<reconcile_core::Prune>,
        destroy: Option<reconcile_core::Destroy>,
    ) -> Vec<Box<dyn Reconciler>> {
        let clients = self.clients(account, desired, prune, destroy);
        crates.iter().filter_map(|entry| entry.aws).map(|build| build(&clients)).collect()
    }
}
