//! What GitHub's answers mean, as its REST reference documents them: a rate limit and how long
//! to wait, the next page, and the one-line error for a failure. Pure: no client, no network,
//! so every decision is a unit test (and examined by mutation testing).

use std::time::Duration;

use http::{HeaderMap, Method, StatusCode};
use reconcile_core::{Address, ErrorKind, ReconcileError};
use serde_json::Value;

/// How many times one request waits out a rate limit before it fails.
const RATE_LIMIT_WAITS: u32 = 5;

/// The longest one wait: GitHub's primary limit resets within the hour, but a run that would
/// sleep longer than this is better failed, saying why.
const LONGEST_WAIT: Duration = Duration::from_secs(15 * 60);

/// The source of every error this crate returns: it says the failure was GitHub's, so the
/// binary prints it as it is rather than as an AWS failure.
#[derive(Debug)]
pub struct GithubError(pub String);

impl std::fmt::Display for GithubError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GitHub: {}", self.0)
    }
}

impl std::error::Error for GithubError {}

/// Marks `error` as GitHub's.
pub(crate) fn github(error: ReconcileError) -> ReconcileError {
    let reason = error.reason.clone();
    error.with_source(GithubError(reason))
}

/// A GitHub answer: its status, headers and body.
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

/// How many times one request is sent at most when GitHub fails it in passing (a 5xx, a
/// dropped connection): as many as AWS's reads get.
pub const ATTEMPTS: u32 = 8;

/// Whether a request that GitHub failed in passing (`status`, or no answer at all: `None`) is
/// sent again: only one that means the same sent twice (GET, PUT, DELETE; not POST, which
/// creates, nor PATCH), and only for a server error or no answer.
pub fn retryable(method: &Method, status: Option<StatusCode>) -> bool {
    let idempotent = matches!(*method, Method::GET | Method::PUT | Method::DELETE);
    idempotent && status.is_none_or(|status| status.is_server_error())
}

/// Whether to wait `wait` once more, after `waits` waits already.
pub fn keep_waiting(waits: u32, wait: Duration) -> bool {
    waits < RATE_LIMIT_WAITS && wait <= LONGEST_WAIT
}

/// The path and query of a `Link` header's `rel="next"` URL. Only the path is followed: the
/// pages are the API root's, and the token goes nowhere else.
pub fn next_page(link: &str) -> Option<String> {
    link.split(',').find_map(|part| {
        let (url, params) = part.split_once(';')?;
        params.split(';').any(|p| p.trim() == "rel=\"next\"").then_some(())?;
        let url = url.trim().strip_prefix('<')?.strip_suffix('>')?;
        let uri: http::Uri = url.parse().ok()?;
        uri.path_and_query().map(|p| p.as_str().to_owned())
    })
}

/// How long GitHub asks us to wait, when the answer is a rate limit: a `retry-after` (secondary
/// limits), or `x-ratelimit-remaining: 0` until `x-ratelimit-reset` (the primary limit), on a
/// 403 or 429. A secondary limit without either header: a minute, as GitHub's docs say.
pub fn rate_limited(answer: &Answer) -> Option<Duration> {
    if answer.status != StatusCode::FORBIDDEN && answer.status != StatusCode::TOO_MANY_REQUESTS {
        return None;
    }
    let header =
        |name: &str| answer.headers.get(name).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if let Some(seconds) = header("retry-after") {
        return Some(Duration::from_secs(seconds));
    }
    if header("x-ratelimit-remaining") == Some(0) {
        let now = reconcile_core::time::now().max(0) as u64;
        return Some(Duration::from_secs(header("x-ratelimit-reset").unwrap_or(now + 60).saturating_sub(now).max(1)));
    }
    let message = answer.json()["message"].as_str().unwrap_or_default().to_ascii_lowercase();
    (answer.status == StatusCode::TOO_MANY_REQUESTS || message.contains("secondary rate limit"))
        .then(|| Duration::from_secs(60))
}

/// The error for an answer that is not a success, in one line that says what to do.
pub fn failure(answer: &Answer, address: Option<&Address>, what: &str) -> ReconcileError {
    let message = answer.json()["message"].as_str().unwrap_or_default().to_owned();
    let (kind, reason) = match answer.status {
        StatusCode::UNAUTHORIZED => (
            ErrorKind::Unauthenticated,
            "GitHub does not accept the token (GITHUB_TOKEN or GH_TOKEN): it is wrong or expired".to_owned(),
        ),
        StatusCode::FORBIDDEN | StatusCode::NOT_FOUND => {
            // GitHub names the fine-grained permission an endpoint needs in this header.
            let needed = answer.headers.get("x-accepted-github-permissions").and_then(|v| v.to_str().ok());
            let reason = match (answer.status, needed) {
                (_, Some(needed)) => {
                    format!(
                        "the token lacks the permission GitHub asks for: {} ({message})",
                        needed.replace(',', " or")
                    )
                }
                (StatusCode::NOT_FOUND, None) => {
                    format!("GitHub answers 404: the repository does not exist, or the token cannot see it ({message})")
                }
                _ => format!("GitHub refuses: {message}"),
            };
            (ErrorKind::AccessDenied, reason)
        }
        status => (ErrorKind::Other, format!("GitHub answered {status}: {message}")),
    };
    github(ReconcileError::new(address, what, reason).with_kind(kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_requests_that_mean_the_same_twice_are_retried_and_only_after_a_passing_failure() {
        for method in [Method::GET, Method::PUT, Method::DELETE] {
            assert!(retryable(&method, None), "{method}: no answer");
            assert!(retryable(&method, Some(StatusCode::BAD_GATEWAY)), "{method}");
            assert!(retryable(&method, Some(StatusCode::INTERNAL_SERVER_ERROR)), "{method}");
            assert!(!retryable(&method, Some(StatusCode::NOT_FOUND)), "{method}");
            assert!(!retryable(&method, Some(StatusCode::OK)), "{method}");
        }
        for method in [Method::POST, Method::PATCH] {
            assert!(!retryable(&method, None), "{method}");
            assert!(!retryable(&method, Some(StatusCode::BAD_GATEWAY)), "{method}");
        }
    }

    fn answer(status: u16, headers: &[(&str, &str)], body: &str) -> Answer {
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.insert(http::HeaderName::from_bytes(name.as_bytes()).unwrap(), value.parse().unwrap());
        }
        Answer { status: StatusCode::from_u16(status).unwrap(), headers: map, body: body.to_owned() }
    }

    #[test]
    fn the_next_page_is_the_path_of_rel_next() {
        let link = r#"<https://api.github.com/repositories/1/actions/variables?per_page=30&page=2>; rel="next", <https://api.github.com/repositories/1/actions/variables?per_page=30&page=3>; rel="last""#;
        assert_eq!(next_page(link).as_deref(), Some("/repositories/1/actions/variables?per_page=30&page=2"));
        let last = r#"<https://api.github.com/x?page=1>; rel="prev", <https://api.github.com/x?page=1>; rel="first""#;
        assert_eq!(next_page(last), None);
    }

    #[test]
    fn rate_limits_are_told_apart_from_a_missing_permission() {
        assert_eq!(rate_limited(&answer(403, &[("retry-after", "7")], "{}")), Some(Duration::from_secs(7)));
        assert_eq!(rate_limited(&answer(429, &[("retry-after", "1")], "{}")), Some(Duration::from_secs(1)));
        let primary = answer(403, &[("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", "1")], "{}");
        assert_eq!(rate_limited(&primary), Some(Duration::from_secs(1)));
        let secondary = answer(403, &[], r#"{"message":"You have exceeded a secondary rate limit"}"#);
        assert_eq!(rate_limited(&secondary), Some(Duration::from_secs(60)));
        let denied = answer(403, &[("x-accepted-github-permissions", "actions_variables=write")], "{}");
        assert_eq!(rate_limited(&denied), None);
        assert_eq!(rate_limited(&answer(200, &[("retry-after", "1")], "{}")), None);
    }

    #[test]
    fn a_rate_limit_is_waited_out_five_times_and_never_longer_than_a_quarter_of_an_hour() {
        assert!(keep_waiting(0, Duration::from_secs(1)));
        assert!(keep_waiting(4, Duration::from_secs(900)));
        assert!(!keep_waiting(5, Duration::from_secs(1)));
        assert!(!keep_waiting(0, Duration::from_secs(901)));
        // Out of calls but not of budget: the primary limit without a reset time waits a minute.
        let no_reset = answer(403, &[("x-ratelimit-remaining", "0")], "{}");
        assert_eq!(rate_limited(&no_reset), Some(Duration::from_secs(60)));
    }

    #[test]
    fn a_failure_says_it_is_githubs() {
        let error = github(ReconcileError::new(None, "list", "GitHub answered 500"));
        let source = error.source.as_ref().unwrap();
        assert!(source.is::<GithubError>());
        assert_eq!(source.to_string(), "GitHub: GitHub answered 500");
    }

    #[test]
    fn a_missing_permission_is_named() {
        let denied = answer(
            403,
            &[("x-accepted-github-permissions", "actions_variables=write")],
            r#"{"message":"Resource not accessible by personal access token"}"#,
        );
        let error = failure(&denied, None, "set variable NIGHTLY_ENABLED");
        assert_eq!(error.kind, ErrorKind::AccessDenied);
        assert_eq!(
            error.to_string(),
            "failed to set variable NIGHTLY_ENABLED: the token lacks the permission GitHub asks for: \
             actions_variables=write (Resource not accessible by personal access token)"
        );
        assert_eq!(failure(&answer(401, &[], "{}"), None, "x").kind, ErrorKind::Unauthenticated);
        let hidden = failure(&answer(404, &[], r#"{"message":"Not Found"}"#), None, "list the variables");
        assert_eq!(hidden.kind, ErrorKind::AccessDenied);
        assert_eq!(
            hidden.reason,
            "GitHub answers 404: the repository does not exist, or the token cannot see it (Not Found)"
        );
        assert_eq!(failure(&answer(403, &[], r#"{"message":"no"}"#), None, "x").reason, "GitHub refuses: no");
        assert_eq!(
            failure(&answer(422, &[], r#"{"message":"bad"}"#), None, "x").reason,
            "GitHub answered 422 Unprocessable Entity: bad"
        );
    }
}
