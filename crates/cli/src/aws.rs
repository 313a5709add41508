//! AWS wiring: the standard configuration chain, the account, the clients and a count of
//! every request sent.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use std::time::Duration;

use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextRef;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;
use reconcile_core::{Account, ReconcileError, Reconciler};

/// How long one request may take. Without them, an endpoint that accepts the connection and
/// never answers hangs a run for ever (and burns a CI job): connecting gets 3 s, each attempt
/// 10 s (AWS's control-plane reads answer in well under one), and a whole operation, retries
/// included, 25 s. Waits for eventual consistency are separate operations, so they are not cut
/// short by this.
fn timeouts() -> TimeoutConfig {
    TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(3))
        .read_timeout(Duration::from_secs(10))
        .operation_attempt_timeout(Duration::from_secs(10))
        .operation_timeout(Duration::from_secs(25))
        .build()
}

/// Counts every HTTP request sent to AWS, retries included, by service and operation.
#[derive(Debug, Clone, Default)]
pub struct RequestCounter {
    counts: Arc<Mutex<BTreeMap<String, u64>>>,
}

impl fmt::Display for RequestCounter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let counts = self.counts.lock().expect("never poisoned");
        write!(f, "{} AWS requests", counts.values().sum::<u64>())?;
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
}

pub struct Aws {
    pub sdk: SdkConfig,
    pub requests: RequestCounter,
    /// Where requests go, for messages: the overridden endpoint, or AWS in the region.
    pub endpoint: String,
}

impl Aws {
    /// Loads the standard chain (credentials, endpoint, retries), with desired.toml's region.
    /// Only commands that talk to AWS call it: `validate` never reads the AWS configuration.
    pub async fn load(region: &str) -> Aws {
        let sdk = aws_config::defaults(BehaviorVersion::latest())
            .region(Region::new(region.to_owned()))
            .timeout_config(timeouts())
            .load()
            .await;
        let endpoint = match sdk.endpoint_url() {
            Some(url) => format!("the AWS endpoint {url}"),
            None => format!("AWS in {region}"),
        };
        Aws { sdk, requests: RequestCounter::default(), endpoint }
    }

    /// The account the credentials belong to.
    pub async fn account(&self) -> Result<Account, ReconcileError> {
        const OPERATION: &str = "learn the account from STS GetCallerIdentity";
        let config = aws_sdk_sts::config::Builder::from(&self.sdk).interceptor(self.requests.clone()).build();
        let identity = aws_sdk_sts::Client::from_conf(config)
            .get_caller_identity()
            .send()
            .await
            .map_err(reconcile_aws::failed(None, OPERATION))?;
        let id = identity.account().ok_or_else(|| ReconcileError::new(None, OPERATION, "STS returned no account"))?;
        let region = self.sdk.region().map_or_else(String::new, |r| r.to_string());
        Ok(Account::new(id, region))
    }

    /// One reconciler per resource crate, each with its own counted client. Building them
    /// makes no request.
    /// The ECR reconciler alone, for what only it can tell (`usage`).
    pub fn ecr(&self, account: &Account) -> reconcile_ecr::EcrReconciler {
        let ecr = aws_sdk_ecr::config::Builder::from(&self.sdk).interceptor(self.requests.clone()).build();
        reconcile_ecr::EcrReconciler::new(aws_sdk_ecr::Client::from_conf(ecr), account.clone())
    }

    /// One reconciler per resource crate; ECR's also prunes when `prune` says how.
    pub fn reconcilers(&self, account: &Account, prune: Option<reconcile_ecr::Prune>) -> Vec<Box<dyn Reconciler>> {
        let ecr = aws_sdk_ecr::config::Builder::from(&self.sdk).interceptor(self.requests.clone()).build();
        // An endpoint override (an emulator) cannot serve virtual-hosted bucket names.
        let s3 = aws_sdk_s3::config::Builder::from(&self.sdk)
            .interceptor(self.requests.clone())
            .force_path_style(self.sdk.endpoint_url().is_some())
            .build();
        let iam = aws_sdk_iam::config::Builder::from(&self.sdk).interceptor(self.requests.clone()).build();
        let codebuild = aws_sdk_codebuild::config::Builder::from(&self.sdk).interceptor(self.requests.clone()).build();
        vec![
            Box::new(reconcile_iam::IamReconciler::new(aws_sdk_iam::Client::from_conf(iam), account.clone())),
            Box::new(reconcile_s3::S3Reconciler::new(aws_sdk_s3::Client::from_conf(s3), account.clone())),
            Box::new(match prune {
                Some(prune) => reconcile_ecr::EcrReconciler::new(aws_sdk_ecr::Client::from_conf(ecr), account.clone())
                    .pruning(prune),
                None => reconcile_ecr::EcrReconciler::new(aws_sdk_ecr::Client::from_conf(ecr), account.clone()),
            }),
            Box::new(reconcile_codebuild::CodebuildReconciler::new(
                aws_sdk_codebuild::Client::from_conf(codebuild),
                account.clone(),
                reconcile_codebuild::IAM_PROPAGATION,
            )),
        ]
    }
}
