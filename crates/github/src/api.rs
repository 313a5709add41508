//! GitHub's REST API as this crate uses it: octocrab for the connection, the token, the API
//! root and the pinned API version; here the requests, once for every endpoint: rate limits
//! waited out, pages followed, failures turned into errors, as `answers.rs` reads each answer.

use std::time::Duration;

use http::{Method, StatusCode};
use octocrab::Octocrab;
use reconcile_core::{Address, ErrorKind, ReconcileError};
use serde_json::Value;

use reconcile_core::retry::{Backoff, Jitter, retry_while};

use crate::answers::{ATTEMPTS, Answer, failure, github, keep_waiting, next_page, rate_limited, retryable};

/// The most pages a list reads: 10,000 items at 100 a page, far more than a repository's
/// variables, a pull request's comments or a label's issues.
pub const MAX_PAGES: usize = 100;

/// The REST API version every request asks for (`X-GitHub-Api-Version`), so a new default
/// version cannot change an answer under us.
pub const API_VERSION: &str = "2022-11-28";

/// A repository's API, authenticated.
#[derive(Clone)]
pub struct Api {
    octocrab: Octocrab,
    /// `/repos/{owner}/{name}`.
    root: String,
    /// How a request GitHub failed in passing is sent again.
    retry: Backoff,
    /// Each request's jitter is seeded from this and how many requests came before it.
    seed: u64,
    sent: std::sync::Arc<std::sync::atomic::AtomicU64>,
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
        // Different processes wait differently; within one, each request's waits follow from the seed.
        let seed = u64::from(std::process::id())
            ^ std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos() as u64;
        Ok(Api {
            octocrab,
            root: format!("/repos/{owner}/{name}"),
            retry: Backoff::requests(Duration::from_secs(1), ATTEMPTS),
            seed,
            sent: Default::default(),
        })
    }

    /// Retries start after `base` (1 s unless told; the fault tests shorten it).
    pub fn with_retry_base(mut self, base: Duration) -> Api {
        self.retry = Backoff::requests(base, ATTEMPTS);
        self
    }

    /// `path` under the repository, such as `/actions/variables`.
    pub fn path(&self, path: &str) -> String {
        format!("{}{path}", self.root)
    }

    /// Sends one request, waiting out rate limits, and sending an idempotent one again (with
    /// backoff) when GitHub fails it in passing: a 5xx, or no answer. Every answer comes back,
    /// errors included: [`Api::expect`] decides which are errors.
    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        address: Option<&Address>,
        what: &str,
    ) -> Result<Answer, ReconcileError> {
        let sent = self.sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut jitter = Jitter::seeded(self.seed.wrapping_add(sent.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
        let again = |result: &Result<Answer, ReconcileError>, wait: Duration| {
            let status = match result {
                Ok(answer) => Some(answer.status),
                Err(error) if error.kind == ErrorKind::Unreachable => None,
                Err(_) => return false,
            };
            if !retryable(&method, status) {
                return false;
            }
            let failure = status.map_or_else(|| "no answer".to_owned(), |status| status.to_string());
            tracing::warn!("GitHub failed ({failure}): trying again in {}ms ({what})", wait.as_millis());
            true
        };
        let call = || self.send_once(method.clone(), path, body, address, what);
        retry_while(self.retry, &mut jitter, call, again, tokio::time::sleep).await
    }

    /// One request, waiting out rate limits.
    async fn send_once(
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
                let chain = reconcile_core::reconciler::error_chain(&error);
                // No answer in time is not retried (it took its whole timeout already); a
                // connection refused or dropped is.
                let kind = if chain.to_ascii_lowercase().contains("timed out") || chain.contains("timeout") {
                    ErrorKind::Timeout
                } else {
                    ErrorKind::Unreachable
                };
                github(ReconcileError::new(address, what, format!("GitHub did not answer: {chain}")).with_kind(kind))
            })?;
            let status = response.status();
            let headers = response.headers().clone();
            let body = self.octocrab.body_to_string(response).await.unwrap_or_default();
            let answer = Answer { status, headers, body };
            match rate_limited(&answer) {
                Some(wait) if keep_waiting(waits, wait) => {
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

    /// [`Api::send`] to a path of the API's own (not under the repository), whatever it answers.
    pub async fn send_any(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        what: &str,
    ) -> Result<Answer, ReconcileError> {
        self.send(method, path, body, None, what).await
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
    /// is an array), following `Link: <...>; rel="next"` until there is none, at most
    /// [`MAX_PAGES`] pages and never the same page twice.
    pub async fn list(&self, path: &str, key: Option<&str>, what: &str) -> Result<Vec<Value>, ReconcileError> {
        let mut items = Vec::new();
        let mut next = Some(path.to_owned());
        let mut pages = reconcile_core::pages::Pages::new(MAX_PAGES);
        while let Some(page) = next.take() {
            let answer = self.expect(Method::GET, &page, None, None, what, &[]).await?;
            let json = answer.json();
            let page_items = match key {
                Some(key) => json.get(key).cloned(),
                None => Some(json),
            };
            items.extend(page_items.and_then(|v| v.as_array().cloned()).unwrap_or_default());
            let link = answer.headers.get(http::header::LINK).and_then(|v| v.to_str().ok()).and_then(next_page);
            // Part of a list reads as the whole (a comment not found is made again): an error.
            next = pages.next(link.as_deref()).map_err(|stop| {
                ReconcileError::new(None, what, format!("{stop} (GitHub's `Link` header); the rest is not read"))
            })?;
        }
        Ok(items)
    }
}
