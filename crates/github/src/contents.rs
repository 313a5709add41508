//! A file of one commit, read through GitHub's contents API as data: what the trusted
//! pull-request workflow plans is the pull request's head commit itself, never checked out, never
//! run, and never something the pull request's own workflow run handed on.

use base64::Engine;
use http::{Method, StatusCode};
use reconcile_core::ReconcileError;
use serde_json::Value;

use crate::answers::failure;
use crate::api::Api;
use crate::threads::query;

/// The file at `path` of commit `sha` of the repository `api` is rooted at, as text; `None` when
/// the commit has no such file. A link, a directory or a submodule is refused (the contents API
/// answers them as such, and a link could name anything), and so is a file over `limit` bytes
/// or one that is not UTF-8.
pub async fn file_at(api: &Api, path: &str, sha: &str, limit: u64) -> Result<Option<String>, ReconcileError> {
    let what = format!("read {path} of commit {sha}");
    let refused = |why: String| ReconcileError::new(None, &what, why);
    let encoded: Vec<String> = path.split('/').map(query).collect();
    let url = api.path(&format!("/contents/{}?ref={}", encoded.join("/"), query(sha)));
    let answer = api.expect(Method::GET, &url, None, None, &what, &[StatusCode::NOT_FOUND]).await?;
    if answer.status == StatusCode::NOT_FOUND {
        return Ok(None);
    }
    let json = answer.json();
    let kind = match &json {
        Value::Array(_) => "dir",
        other => other["type"].as_str().unwrap_or("unknown"),
    };
    if kind != "file" {
        return Err(refused(format!("it is a {kind}, not a file")));
    }
    if json["size"].as_u64().is_none_or(|size| size > limit) {
        return Err(refused(format!("it is larger than {limit} bytes (or says no size)")));
    }
    if json["encoding"] != "base64" {
        return Err(failure(&answer, None, &what));
    }
    let text: String = json["content"].as_str().unwrap_or_default().chars().filter(|c| !c.is_whitespace()).collect();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|error| refused(format!("its content is not base64: {error}")))?;
    if bytes.len() as u64 > limit {
        return Err(refused(format!("it is larger than {limit} bytes")));
    }
    String::from_utf8(bytes).map(Some).map_err(|_| refused("it is not UTF-8 text".to_owned()))
}
