//! GitHub's REST API as this crate uses it: octocrab for the connection, the token, the API
//! root and the pinned API version; here only what GitHub documents about its answers, once
//! for every endpoint: rate limits waited out, pagination by `Link`, and an error that says
//! what failed and what to do.

use std::time::Duration;

use http::{HeaderMap, Method, StatusCode};
use octocrab::Octocrab;
use reconcile_core::{Address, ErrorKind, ReconcileError};
use serde_json::Value;

/// The REST API version every request asks for (`X-GitHub-Api-Version`), so a new default
/// version cannot change an answer under us.
pub const API_VERSION: &str = "2022-11-28";

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
fn github(error: ReconcileError) -> ReconcileError {
    let reason = error.reason.clone();
    error.with_source(GithubError(reason))
}

/// A repository's API, authenticated.
#[derive(Clone)]
pub struct Api {
    octocrab: Octocrab,
    /// `/repos/{owner}/{name}`.
    root: String,
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

impl Api {
    /// A client for `owner/name` at the API root `api` (`GITHUB_API_URL`), with `token`.
    pub fn new(api: &str, token: &str, owner: &str, name: &str) -> Result<Api, ReconcileError> {
        let failed = |why: String| github(ReconcileError::new(None, "set up the GitHub client", why));
        let octocrab = Octocrab::builder()
            .base_uri(api)
            .map_err(|error| failed(format!("`{api}` is not a URL: {error}")))?
            .personal_token(token.to_owned())
            .add_header(http::HeaderName::from_static("x-github-api-version"), API_VERSION.to_owned())
            .add_header(http::header::ACCEPT, "application/vnd.github+json".to_owned())
            .set_connect_timeout(Some(Duration::from_secs(5)))
            .set_read_timeout(Some(Duration::from_secs(20)))
            .build()
            .map_err(|error| failed(error.to_string()))?;
        Ok(Api { octocrab, root: format!("/repos/{owner}/{name}") })
    }

    /// `path` under the repository, such as `/actions/variables`.
    pub fn path(&self, path: &str) -> String {
        format!("{}{path}", self.root)
    }

    /// Sends one request, waiting out rate limits. Every answer comes back, errors included:
    /// the caller decides what a 404 means; [`Api::expect`] turns the rest into errors.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        address: Option<&Address>,
        what: &str,
    ) -> Result<Answer, ReconcileError> {
        let mut waits = 0;
        loop {
            let response = match method {
                Method::GET => self.octocrab._get(path).await,
                Method::POST => self.octocrab._post(path, body).await,
                Method::PATCH => self.octocrab._patch(path, body).await,
                Method::PUT => self.octocrab._put(path, body).await,
                Method::DELETE => self.octocrab._delete(path, body).await,
                _ => unreachable!("only the methods above are used"),
            };
            let response = response.map_err(|error| {
                github(
                    ReconcileError::new(address, what, format!("GitHub did not answer: {}", error_chain(&error)))
                        .with_kind(ErrorKind::Unreachable),
                )
            })?;
            let status = response.status();
            let headers = response.headers().clone();
            let body = self.octocrab.body_to_string(response).await.unwrap_or_default();
            let answer = Answer { status, headers, body };
            match rate_limited(&answer) {
                Some(wait) if waits < RATE_LIMIT_WAITS && wait <= LONGEST_WAIT => {
                    waits += 1;
                    tracing::warn!("GitHub's rate limit: waiting {}s before asking again ({what})", wait.as_secs());
                    tokio::time::sleep(wait).await;
                }
                Some(wait) => {
                    return Err(github(
                        ReconcileError::new(
                            address,
                            what,
                            format!(
                                "GitHub's rate limit held after {waits} waits (it asks for {}s more); run again later",
                                wait.as_secs()
                            ),
                        )
                        .with_kind(ErrorKind::Throttled),
                    ));
                }
                None => return Ok(answer),
            }
        }
    }

    /// [`Api::send`], with every answer but a success (or one of `accepted`) an error.
    pub async fn expect(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        address: Option<&Address>,
        what: &str,
        accepted: &[StatusCode],
    ) -> Result<Answer, ReconcileError> {
        let answer = self.send(method, path, body, address, what).await?;
        if answer.status.is_success() || accepted.contains(&answer.status) {
            Ok(answer)
        } else {
            Err(failure(&answer, address, what))
        }
    }

    /// Every item of a paginated list: `key` of each page's object (or the page itself when it
    /// is an array), following `Link: <...>; rel="next"` until there is none.
    pub async fn list(&self, path: &str, key: Option<&str>, what: &str) -> Result<Vec<Value>, ReconcileError> {
        let mut items = Vec::new();
        let mut next = Some(path.to_owned());
        while let Some(page) = next.take() {
            let answer = self.expect(Method::GET, &page, None, None, what, &[]).await?;
            let json = answer.json();
            let page_items = match key {
                Some(key) => json.get(key).cloned(),
                None => Some(json),
            };
            items.extend(page_items.and_then(|v| v.as_array().cloned()).unwrap_or_default());
            next = answer.headers.get(http::header::LINK).and_then(|v| v.to_str().ok()).and_then(next_page);
        }
        Ok(items)
    }
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
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs();
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

fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    reconcile_core::reconciler::error_chain(error)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(
            failure(&answer(422, &[], r#"{"message":"bad"}"#), None, "x").reason,
            "GitHub answered 422 Unprocessable Entity: bad"
        );
    }
}
