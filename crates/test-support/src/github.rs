//! The local GitHub API stand-in (`tests/github/server.py`), started once per test process like
//! the AWS emulator, with a repository of its own for each test.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdin};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::{Server, workspace_root};

pub struct GithubServer {
    endpoint: String,
    address: String,
    _child: Mutex<Child>,
    _stdin: Mutex<ChildStdin>,
}

static SERVER: OnceLock<GithubServer> = OnceLock::new();
static NEXT_REPOSITORY: AtomicU64 = AtomicU64::new(0);

/// The GitHub stand-in of this test process, started on first use.
pub fn github() -> &'static GithubServer {
    SERVER.get_or_init(GithubServer::start)
}

impl GithubServer {
    fn start() -> GithubServer {
        let script = workspace_root().join("tests/github/server.py");
        let Server { endpoint, address, child, stdin } = Server::start("the GitHub stand-in", &script, &[]);
        GithubServer { endpoint, address, _child: Mutex::new(child), _stdin: Mutex::new(stdin) }
    }

    /// A stand-in of its own, for a test that needs the repositories' names to be the ones its
    /// files say (`ROCm/rocm-bake`) with no other test's state in them; it stops when dropped.
    pub fn separate() -> GithubServer {
        GithubServer::start()
    }

    /// `http://127.0.0.1:PORT`, for `GITHUB_API_URL`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// A repository no other test uses, `owner/name`.
    pub fn new_repository(&self) -> String {
        let n = NEXT_REPOSITORY.fetch_add(1, Ordering::Relaxed);
        format!("rocm-test-{}/rocm-bake-{n}", std::process::id())
    }

    /// One request, as a client would send it (`token` for `Authorization`); the status and the
    /// JSON body.
    pub fn call(&self, method: &str, path: &str, token: &str, body: &serde_json::Value) -> (u16, serde_json::Value) {
        let body = if body.is_null() { String::new() } else { body.to_string() };
        let mut stream = TcpStream::connect(&self.address).expect("the GitHub stand-in is listening");
        write!(
            stream,
            "{method} {path} HTTP/1.0\r\nHost: {}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            self.address,
            body.len()
        )
        .expect("write");
        let mut response = String::new();
        stream.read_to_string(&mut response).expect("read");
        let status = response.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        let json = response
            .split_once("\r\n\r\n")
            .and_then(|(_, body)| serde_json::from_str(body).ok())
            .unwrap_or(serde_json::Value::Null);
        (status, json)
    }

    /// Every request to `repository` so far, in order: `method`, `path`, `status`, `at`.
    pub fn log(&self, repository: &str) -> Vec<serde_json::Value> {
        match self.call("GET", &format!("/_test/log?repository={repository}"), "test", &serde_json::Value::Null) {
            (200, serde_json::Value::Array(entries)) => entries,
            other => panic!("the GitHub stand-in's log: {other:?}"),
        }
    }

    /// Makes `token` lack `permissions` (`actions_variables`, `administration`, `repository_hooks`).
    pub fn deny(&self, token: &str, permissions: &[&str]) {
        let body = serde_json::json!({ "token": token, "permissions": permissions });
        assert_eq!(self.call("POST", "/_test/deny", "test", &body).0, 204);
    }

    /// The next `count` requests to `repository` answer with the server error `status` (502: a
    /// backend down behind GitHub's front end).
    pub fn fail(&self, repository: &str, count: u32, status: u16) {
        let body = serde_json::json!({ "repository": repository, "count": count, "status": status });
        assert_eq!(self.call("POST", "/_test/fail", "test", &body).0, 204);
    }

    /// The next `count` writes (POST, PATCH) to `repository` are made and never answered: the
    /// connection closes instead, as when an answer is lost on its way.
    pub fn lose_answer(&self, repository: &str, count: u32) {
        let body = serde_json::json!({ "repository": repository, "count": count });
        assert_eq!(self.call("POST", "/_test/lose-answer", "test", &body).0, 204);
    }

    /// The next `count` requests to `repository` answer with a rate limit, `secondary`
    /// (`retry-after: 1`) or `primary` (`x-ratelimit-remaining: 0`, reset in a second).
    pub fn rate_limit(&self, repository: &str, count: u32, kind: &str) {
        let body = serde_json::json!({ "repository": repository, "count": count, "kind": kind });
        assert_eq!(self.call("POST", "/_test/rate-limit", "test", &body).0, 204);
    }

    /// Makes `token` a workflow's `GITHUB_TOKEN` (no login; what it writes is a bot's), read
    /// only for a fork's pull request.
    pub fn workflow_token(&self, token: &str, read_only: bool) {
        let body = serde_json::json!({ "token": token, "workflow": true, "read_only": read_only });
        assert_eq!(self.call("POST", "/_test/token", "test", &body).0, 204);
    }

    /// Makes `token` a person's, `login`.
    pub fn person_token(&self, token: &str, login: &str) {
        let body = serde_json::json!({ "token": token, "login": login });
        assert_eq!(self.call("POST", "/_test/token", "test", &body).0, 204);
    }

    /// Makes `token` the person `login`'s, whose permission on every repository is `permission`
    /// (`read`, `triage`, `write`, `maintain`, `admin`), as the collaborators API answers it.
    pub fn person_token_with(&self, token: &str, login: &str, permission: &str) {
        let body = serde_json::json!({ "token": token, "login": login, "permission": permission });
        assert_eq!(self.call("POST", "/_test/token", "test", &body).0, 204);
    }

    /// Makes the next issue opened on `repository` come just after `issue` (`title`, `body`,
    /// `labels`), opened with `token` as if by another run at the same moment.
    pub fn race(&self, repository: &str, token: &str, issue: &serde_json::Value) {
        let mut issue = issue.clone();
        issue["token"] = serde_json::Value::from(token);
        let body = serde_json::json!({ "repository": repository, "issue": issue });
        assert_eq!(self.call("POST", "/_test/race", "test", &body).0, 204);
    }

    /// Makes the next `count` closes of an issue of `repository` as a duplicate answer 422.
    pub fn refuse_duplicate(&self, repository: &str, count: u32) {
        let body = serde_json::json!({ "repository": repository, "count": count });
        assert_eq!(self.call("POST", "/_test/refuse-duplicate", "test", &body).0, 204);
    }

    /// Makes commit `sha` of `repository` hold `files` (path and text) and symbolic `links`
    /// (path and target), for the contents API.
    pub fn commit(&self, repository: &str, sha: &str, files: &[(&str, &str)], links: &[(&str, &str)]) {
        let map = |pairs: &[(&str, &str)]| {
            pairs.iter().map(|(k, v)| ((*k).to_owned(), serde_json::Value::from(*v))).collect::<serde_json::Map<_, _>>()
        };
        let body =
            serde_json::json!({ "repository": repository, "sha": sha, "files": map(files), "links": map(links) });
        assert_eq!(self.call("POST", "/_test/commit", "test", &body).0, 204);
    }

    /// Registers `token` as another GitHub App's: it writes as the bot `login` of user `id`.
    pub fn app_token(&self, token: &str, login: &str, id: u64) {
        let body = serde_json::json!({ "token": token, "login": login, "type": "Bot", "id": id });
        assert_eq!(self.call("POST", "/_test/token", "test", &body).0, 204);
    }

    /// Opens a pull request on `repository` whose head is commit `sha` of `head_repository`
    /// (`owner/name`: a fork's, or the repository itself). Its number.
    pub fn pull_request(&self, repository: &str, sha: &str, head_repository: &str) -> u64 {
        let body = serde_json::json!({
            "repository": repository, "head_sha": sha, "head_repository": head_repository, "head_ref": "topic",
        });
        let (status, answer) = self.call("POST", "/_test/pull", "test", &body);
        assert_eq!(status, 201, "{answer}");
        answer["number"].as_u64().expect("a number")
    }

    /// `repository`'s pull requests and issues, comments, statuses and OIDC subject template.
    pub fn state(&self, repository: &str) -> serde_json::Value {
        let (status, state) =
            self.call("GET", &format!("/_test/state?repository={repository}"), "test", &serde_json::Value::Null);
        assert_eq!(status, 200, "{state}");
        state
    }
}
