//! The AWS plumbing every resource crate shares, so each behaviour exists once: telling a
//! not-found from a failure, classifying a failure for the binary (access denied, no
//! credentials, unreachable, throttled), reading tags without AWS's own, waiting out eventual
//! consistency after a create, the concurrency and batch limits, and building ARNs.
//!
//! It knows the SDK's generic error types (smithy's `SdkError` and error metadata), never a
//! service's: the resource crates pass their service's error codes in.

mod build;
mod pacing;

use std::collections::BTreeMap;
use std::error::Error;
use std::time::Duration;

use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_runtime_api::http::Response;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;
use reconcile_core::retry::{Backoff, retry};
use reconcile_core::{Account, Address, ErrorKind, ReconcileError};

pub use build::{BuildFn, Clients, Shared};
pub use pacing::{DEFAULT_THROTTLE_DEADLINE, GaveUp, Pacing, Throttled, Transient, resent};

/// The most pages one paginated read asks for: ten million ECR images at ECR's largest page.
pub const MAX_PAGES: usize = 10_000;

/// A paginated read's pages (the SDK's paginators stop on a token repeated at once, not on one
/// that comes round again, and never on a count): call [`Pages::page`] with each page's token.
#[derive(Debug)]
pub struct Pages(reconcile_core::pages::Pages);

impl Default for Pages {
    fn default() -> Pages {
        Pages(reconcile_core::pages::Pages::new(MAX_PAGES))
    }
}

impl Pages {
    /// Counts a page, whose next token is `token`: the token to ask for the next page with
    /// (`None` when there is none), or an error (what was being read, and that the rest was
    /// not) when no further page may be asked for. Part of a list would read as the whole (a
    /// repository not listed is one to create), so it is never used as one.
    pub fn page(
        &mut self,
        token: Option<&str>,
        address: Option<&Address>,
        what: &str,
    ) -> Result<Option<String>, ReconcileError> {
        match self.0.next(token) {
            Ok(next) => Ok(next),
            Err(stop) => Err(ReconcileError::new(address, what, format!("{stop}; the rest is not read"))),
        }
    }
}

/// How many requests to one service a run has in flight at once, unless `--parallelism` says
/// otherwise: enough that the 27-repository account's 81 ECR reads go out in one wave. AWS
/// publishes no rate for the control-plane reads used (docs/performance.md); throttling is met
/// by the SDK's adaptive retry mode, which slows the client down rather than failing.
pub const DEFAULT_PARALLELISM: usize = 100;

/// At most so many requests to one service in flight: each reconciler holds one, and every
/// read it makes waits for a permit, however its reads are nested or joined; and, once AWS has
/// throttled the service, for its gate ([`Pacing::turn`]), so that a wave of reads goes out at
/// the rate AWS answers rather than all at once again.
#[derive(Debug, Clone)]
pub struct Parallelism {
    permits: std::sync::Arc<tokio::sync::Semaphore>,
    gate: Option<(Pacing, &'static str)>,
}

impl Parallelism {
    pub fn new(limit: usize) -> Parallelism {
        Parallelism { permits: std::sync::Arc::new(tokio::sync::Semaphore::new(limit.max(1))), gate: None }
    }

    /// Its requests go out at `service`'s gate of `pacing` too.
    pub fn paced(mut self, pacing: &Pacing, service: &'static str) -> Parallelism {
        self.gate = Some((pacing.clone(), service));
        self
    }

    /// Makes and sends a read once fewer than the limit are in flight, when the gate lets it,
    /// and sends it again the same way while AWS throttles it ([`Pacing::read`]). Made only
    /// then: an SDK request future is kilobytes, and thousands waiting would hold them all.
    /// `request` is `Fn`, so that a paginator's `next` (which after an error ends the listing,
    /// and would read as its end) cannot be sent again: that is [`Parallelism::send_once`]'s.
    pub async fn send<F: Future>(&self, request: impl Fn() -> F) -> F::Output {
        // The semaphore is never closed, so acquiring only waits.
        let _permit = self.permits.acquire().await.ok();
        match &self.gate {
            Some((pacing, service)) => pacing.read(service, request).await,
            None => request().await,
        }
    }

    /// [`Parallelism::send`] for a request that cannot be made again (a paginator's next
    /// page): it waits for the gate once, and the SDK sends it again when throttled.
    pub async fn send_once<F: Future>(&self, request: impl FnOnce() -> F) -> F::Output {
        let _permit = self.permits.acquire().await.ok();
        if let Some((pacing, service)) = &self.gate {
            pacing.turn(service).await;
        }
        request().await
    }
}

impl Default for Parallelism {
    fn default() -> Parallelism {
        Parallelism::new(DEFAULT_PARALLELISM)
    }
}

/// How many names one batched read takes: `ecr:DescribeRepositories` and
/// `codebuild:BatchGetProjects` both take at most 100.
pub const BATCH_SIZE: usize = 100;

/// The error codes with which AWS says the caller lacks a permission.
const ACCESS_DENIED: [&str; 4] = ["AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "Forbidden"];

/// The error codes with which AWS says the credentials themselves are bad or expired.
const UNAUTHENTICATED: [&str; 9] = [
    "ExpiredToken",
    "ExpiredTokenException",
    "InvalidClientTokenId",
    "UnrecognizedClientException",
    "SignatureDoesNotMatch",
    "InvalidAccessKeyId",
    "InvalidSignatureException",
    "AuthFailure",
    "MissingAuthenticationToken",
];

/// The error codes with which AWS says to slow down.
pub const THROTTLED: [&str; 6] = [
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "TooManyRequestsException",
    "SlowDown",
    "RequestLimitExceeded",
];

/// The error's code, or `NotFound` for a bare 404 (S3's `HeadBucket` answers with no body).
fn code<E: ProvideErrorMetadata>(error: &SdkError<E, Response>) -> Option<&str> {
    error.code().or_else(|| (error.raw_response()?.status().as_u16() == 404).then_some("NotFound"))
}

/// Whether `error` is the service answering with one of `codes`.
pub fn has_code<E: ProvideErrorMetadata>(error: &SdkError<E, Response>, codes: &[&str]) -> bool {
    code(error).is_some_and(|code| codes.contains(&code))
}

/// `Ok(None)` where the service answered with one of `codes`, which mean "there is none":
/// absence is a value, not an error. Every other failure stays one.
#[expect(clippy::result_large_err, reason = "the SDK's own error, handed back as the SDK returns it")]
pub fn absent_if<T, E: ProvideErrorMetadata>(
    result: Result<T, SdkError<E, Response>>,
    codes: &[&str],
) -> Result<Option<T>, SdkError<E, Response>> {
    match result {
        Ok(output) => Ok(Some(output)),
        Err(error) if has_code(&error, codes) => Ok(None),
        Err(error) => Err(error),
    }
}

/// `Ok(())` where the service answered with one of `codes`: for deletes, where "already gone"
/// is success.
#[expect(clippy::result_large_err, reason = "the SDK's own error, handed back as the SDK returns it")]
pub fn gone_if<T, E: ProvideErrorMetadata>(
    result: Result<T, SdkError<E, Response>>,
    codes: &[&str],
) -> Result<(), SdkError<E, Response>> {
    absent_if(result, codes).map(|_| ())
}

/// What kind of failure `error` is, for the binary to say what to do about it.
pub fn classify<E>(error: &SdkError<E, Response>) -> ErrorKind
where
    E: ProvideErrorMetadata + Error + 'static,
{
    if caused_by_credentials(error) {
        return ErrorKind::Unauthenticated;
    }
    match error {
        SdkError::TimeoutError(_) => ErrorKind::Timeout,
        SdkError::DispatchFailure(failure) if failure.is_timeout() => ErrorKind::Timeout,
        SdkError::DispatchFailure(_) => ErrorKind::Unreachable,
        SdkError::ServiceError(_) | SdkError::ResponseError(_) => match code(error) {
            Some(code) if ACCESS_DENIED.contains(&code) => ErrorKind::AccessDenied,
            Some(code) if UNAUTHENTICATED.contains(&code) => ErrorKind::Unauthenticated,
            Some(code) if THROTTLED.contains(&code) => ErrorKind::Throttled,
            // A 403 with no readable code (a JSON service behind a proxy that answers in XML).
            None if error.raw_response().is_some_and(|r| r.status().as_u16() == 403) => ErrorKind::AccessDenied,
            _ => ErrorKind::Other,
        },
        _ => ErrorKind::Other,
    }
}

/// Whether the failure came from the credential chain: none found, or none loadable.
fn caused_by_credentials(error: &(dyn Error + 'static)) -> bool {
    let mut next: Option<&(dyn Error + 'static)> = Some(error);
    while let Some(error) = next {
        if error.downcast_ref::<aws_credential_types::provider::error::CredentialsError>().is_some() {
            return true;
        }
        next = error.source();
    }
    false
}

/// For `map_err`: `operation` on `address` (or on the service as a whole) failed with the SDK
/// error; the error is classified, its whole chain of causes becomes the reason, and it stays
/// the typed source.
pub fn failed<'a, E>(
    address: Option<&'a Address>,
    operation: &'a str,
) -> impl FnOnce(SdkError<E, Response>) -> ReconcileError + 'a
where
    E: ProvideErrorMetadata + Error + Send + Sync + 'static,
{
    move |error| {
        let kind = classify(&error);
        let reason = match (kind, error.message()) {
            // The service's own words say who may not do what, or that the session expired.
            (ErrorKind::AccessDenied | ErrorKind::Unauthenticated | ErrorKind::Throttled, Some(message)) => {
                message.to_owned()
            }
            // Below the SDK's wrappers, the one cause that says what happened: `Connection
            // refused (os error 111)`, `no credentials found in chain`.
            (ErrorKind::Unauthenticated | ErrorKind::Unreachable | ErrorKind::Timeout, None) => innermost(&error),
            _ => reconcile_core::reconciler::error_chain(&error),
        };
        ReconcileError::new(address, operation, reason).with_kind(kind).with_source(error)
    }
}

/// The deepest cause's words, first line only (the credential chain lists every provider it
/// tried, one a line).
fn innermost(error: &(dyn Error + 'static)) -> String {
    let mut last = error;
    while let Some(cause) = last.source() {
        last = cause;
    }
    let words = last.to_string();
    let first = words.lines().next().unwrap_or_default();
    first.trim_end_matches("Attempted:").trim_end().trim_end_matches('.').to_owned()
}

/// The tags as desired.toml can name them: `aws:` tags belong to AWS, cannot be set or removed,
/// and are never shown as drift.
pub fn visible_tags<K: AsRef<str>, V: AsRef<str>>(tags: impl IntoIterator<Item = (K, V)>) -> BTreeMap<String, String> {
    tags.into_iter()
        .filter(|(key, _)| !key.as_ref().starts_with("aws:"))
        .map(|(key, value)| (key.as_ref().to_owned(), value.as_ref().to_owned()))
        .collect()
}

/// Calls `call` until it stops failing with one of `codes` that mean "just made, not visible
/// everywhere yet" (a repository, bucket or role right after its create), for as long as
/// [`Backoff::AFTER_CREATE`] allows.
pub async fn after_create<T, E, F, Fut>(call: F, codes: &[&str]) -> Result<T, SdkError<E, Response>>
where
    E: ProvideErrorMetadata,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, SdkError<E, Response>>>,
{
    waiting(Backoff::AFTER_CREATE, call, |error, _| has_code(error, codes)).await
}

/// Calls `call` while `transient` accepts its error, with `backoff`, sleeping on tokio's clock.
pub async fn waiting<T, E, F, Fut>(
    backoff: Backoff,
    call: F,
    transient: impl FnMut(&E, Duration) -> bool,
) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    retry(backoff, call, transient, tokio::time::sleep).await
}

/// The domain AWS's endpoints are under in `partition`: `amazonaws.com.cn` in China.
pub fn dns_suffix(partition: &str) -> &'static str {
    if partition == "aws-cn" { "amazonaws.com.cn" } else { "amazonaws.com" }
}

/// An ARN in the account's partition: `arn:<partition>:<service>:<region>:<account>:<resource>`,
/// with no region for IAM (global), and neither region nor account for S3 (bucket names are
/// global).
pub fn arn(account: &Account, service: &str, resource: &str) -> String {
    let (region, id) = match service {
        "iam" => ("", account.id.as_str()),
        "s3" => ("", ""),
        _ => (account.region.as_str(), account.id.as_str()),
    };
    format!("arn:{}:{service}:{region}:{id}:{resource}", account.partition)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_smithy_runtime_api::client::result::ServiceError;
    use aws_smithy_types::body::SdkBody;
    use aws_smithy_types::error::ErrorMetadata;

    #[derive(Debug)]
    struct Failure(ErrorMetadata);

    impl std::fmt::Display for Failure {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "{}", self.0.message().unwrap_or("service error"))
        }
    }

    impl Error for Failure {}

    impl ProvideErrorMetadata for Failure {
        fn meta(&self) -> &ErrorMetadata {
            &self.0
        }
    }

    fn service_error(status: u16, code: Option<&str>, message: &str) -> SdkError<Failure, Response> {
        let mut meta = ErrorMetadata::builder().message(message);
        if let Some(code) = code {
            meta = meta.code(code);
        }
        let response = Response::new(status.try_into().unwrap(), SdkBody::empty());
        SdkError::ServiceError(ServiceError::builder().source(Failure(meta.build())).raw(response).build())
    }

    #[test]
    fn endpoints_are_under_amazonaws_com_and_in_china_com_cn() {
        assert_eq!(dns_suffix(&Account::new("1", "cn-north-1").partition), "amazonaws.com.cn");
        assert_eq!(dns_suffix(&Account::new("1", "us-gov-west-1").partition), "amazonaws.com");
        assert_eq!(dns_suffix("aws"), "amazonaws.com");
    }

    #[test]
    fn codes_decide_the_kind_and_a_bare_404_is_not_found() {
        let denied = service_error(400, Some("AccessDeniedException"), "User: u is not authorized");
        assert_eq!(classify(&denied), ErrorKind::AccessDenied);
        assert_eq!(classify(&service_error(403, None, "")), ErrorKind::AccessDenied);
        assert_eq!(classify(&service_error(400, Some("ThrottlingException"), "")), ErrorKind::Throttled);
        assert_eq!(classify(&service_error(400, Some("ExpiredToken"), "")), ErrorKind::Unauthenticated);
        assert_eq!(classify(&service_error(400, Some("ValidationException"), "")), ErrorKind::Other);
        assert!(has_code(&service_error(404, None, ""), &["NotFound"]));
        assert!(!has_code(&service_error(500, None, ""), &["NotFound"]));
    }

    #[test]
    fn absence_is_a_value_and_every_other_failure_stays_one() {
        let missing: Result<(), _> = Err(service_error(404, Some("NoSuchEntity"), ""));
        assert!(matches!(absent_if(missing, &["NoSuchEntity"]), Ok(None)));
        let denied: Result<(), _> = Err(service_error(403, Some("AccessDenied"), ""));
        assert!(absent_if(denied, &["NoSuchEntity"]).is_err());
    }

    #[test]
    fn a_failure_keeps_its_kind_its_words_and_its_typed_source() {
        let address = Address::new(reconcile_core::ResourceKind::new("iam_role", 110), "codebuild");
        let message =
            "User: arn:aws:sts::1:assumed-role/ci/x is not authorized to perform: iam:GetRole on resource: role r";
        let error = failed(Some(&address), "read role")(service_error(403, Some("AccessDenied"), message));
        assert_eq!(error.kind, ErrorKind::AccessDenied);
        assert_eq!(error.to_string(), format!("iam_role.codebuild: failed to read role: {message}"));
        assert!(error.source.is_some());
    }

    #[test]
    fn aws_tags_are_hidden() {
        let tags = visible_tags([("aws:cloudformation:stack-name", "x"), ("team", "rocm")]);
        assert_eq!(tags, BTreeMap::from([("team".to_owned(), "rocm".to_owned())]));
    }

    #[test]
    fn arns_are_built_in_the_account_partition() {
        let account = Account::new("123456789012", "cn-north-1");
        assert_eq!(arn(&account, "ecr", "repository/a"), "arn:aws-cn:ecr:cn-north-1:123456789012:repository/a");
        assert_eq!(arn(&account, "iam", "role/r"), "arn:aws-cn:iam::123456789012:role/r");
        assert_eq!(arn(&account, "s3", "bucket"), "arn:aws-cn:s3:::bucket");
    }
}
