//! Where reconcile talks to people on GitHub: one comment kept up to date on a pull request with
//! its plan, a commit status on its head, and one issue that says whether the account has
//! drifted now.
//!
//! Each is found by what cannot be forged from outside: the pull request by its head commit and
//! head repository (as the `workflow_run` event gives them, never a number a pull request's own
//! artifact claims), a comment or issue by a hidden marker and by who wrote it (the token's own
//! login, or, for a workflow's token, which has none to ask for, the GitHub Actions bot by its
//! user id: never any bot). Everything is read
//! through [`Api`]: pages followed, rate limits waited out, passing failures retried.

use http::{Method, StatusCode};
use reconcile_core::ReconcileError;
use serde_json::json;

use crate::api::Api;
pub use crate::threads::{DRIFT_STATE_LIMIT, Drift};
use crate::threads::{
    Me, Step, decide, drift_issue_path, duplicated, existing_issue, hidden, own_comment, pull_request_of, sharing_head,
    status_description,
};

/// A repository's pull requests, comments, statuses and issues, as one identity.
pub struct Conversation {
    api: Api,
    /// Who the token writes as.
    me: Me,
    /// What seals the drift issue, so that no other workflow's issue is taken for it.
    key: Option<Vec<u8>>,
}

/// The pull request a head commit of a head repository belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub number: Option<u64>,
    /// Other open pull requests, from other head repositories, whose head is the same commit: a
    /// commit status is the commit's, so theirs too.
    pub sharing: Vec<u64>,
}

/// What became of the comment or the issue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Created(u64),
    Updated(u64),
    /// It already said this.
    Unchanged(u64),
    Closed(u64),
    Reopened(u64),
    /// Closed as not planned by a maintainer, and the drift is what they acknowledged.
    Acknowledged(u64),
    /// Another check opened this issue at the same time: the one this run opened is closed as
    /// its duplicate.
    Duplicated(u64),
    /// Nothing to say: no drift, and no open issue about one.
    Nothing,
}

impl Conversation {
    /// The conversation on the repository `api` is rooted at, as the token's identity.
    pub async fn connect(api: Api) -> Result<Conversation, ReconcileError> {
        let answer = api.send_any(Method::GET, "/user", None, "learn who the token is").await?;
        let login = answer.status.is_success().then(|| answer.json()["login"].as_str().map(str::to_owned)).flatten();
        Ok(Conversation { api, me: login.map_or(Me::ActionsBot, Me::Login), key: None })
    }

    /// Seals the drift issue's body with `key` (a secret only the drift workflow is given), and
    /// takes only an issue sealed with it for the drift issue.
    pub fn sealing_with(self, key: Option<Vec<u8>>) -> Conversation {
        Conversation { key, ..self }
    }

    /// The open pull request whose head is commit `sha` of `head_repository` (`owner/name`: a
    /// fork's, or this repository's own), and the others whose head is that commit too.
    pub async fn pull_request(&self, sha: &str, head_repository: &str) -> Result<Head, ReconcileError> {
        let path = self.api.path("/pulls?state=open&per_page=100");
        let pulls = self.api.list(&path, None, "list the open pull requests").await?;
        Ok(Head {
            number: pull_request_of(&pulls, sha, head_repository),
            sharing: sharing_head(&pulls, sha, head_repository),
        })
    }

    /// Keeps one comment of ours, found by `marker`, on issue or pull request `number` saying
    /// `body`: made, edited, or left when it already says it.
    pub async fn keep_comment(&self, number: u64, marker: &str, body: &str) -> Result<Outcome, ReconcileError> {
        let body = format!("{}\n{body}", hidden(marker));
        let path = self.api.path(&format!("/issues/{number}/comments?per_page=100"));
        let comments = self.api.list(&path, None, "list the pull request's comments").await?;
        let ours = own_comment(&comments, &self.me, marker);
        match ours.and_then(|comment| comment["id"].as_u64().map(|id| (id, comment["body"].as_str() == Some(&body)))) {
            Some((id, true)) => Ok(Outcome::Unchanged(id)),
            Some((id, false)) => {
                let path = self.api.path(&format!("/issues/comments/{id}"));
                self.api
                    .expect(Method::PATCH, &path, Some(&json!({ "body": body })), None, "edit the comment", &[])
                    .await?;
                Ok(Outcome::Updated(id))
            }
            None => {
                let path = self.api.path(&format!("/issues/{number}/comments"));
                let made = self
                    .api
                    .expect(
                        Method::POST,
                        &path,
                        Some(&json!({ "body": body })),
                        None,
                        "comment on the pull request",
                        &[],
                    )
                    .await?;
                Ok(Outcome::Created(made.json()["id"].as_u64().unwrap_or_default()))
            }
        }
    }

    /// A commit status on `sha`: `state` is `success`, `failure`, `error` or `pending`.
    pub async fn set_status(
        &self,
        sha: &str,
        state: &str,
        context: &str,
        description: &str,
    ) -> Result<(), ReconcileError> {
        let body = json!({ "state": state, "context": context, "description": status_description(description) });
        let path = self.api.path(&format!("/statuses/{sha}"));
        self.api.expect(Method::POST, &path, Some(&body), None, "set the commit status", &[]).await?;
        Ok(())
    }

    /// Keeps the one drift issue (labelled `label`, ours) true to `now`: opened on drift, its
    /// body replaced when the drift changed (with a comment saying what changed since), left
    /// alone when it did not, closed with a note when the account is clean again, reopened when
    /// it drifts again. `put_back`, what this check put back itself, is said in the comment of
    /// an update or a close, or in a comment of its own on an open issue whose drift is otherwise
    /// the same (a new issue says it in its report).
    pub async fn keep_drift_issue(
        &self,
        label: &str,
        now: Option<&Drift>,
        put_back: Option<&str>,
    ) -> Result<Outcome, ReconcileError> {
        let with_put_back = |note: String| match put_back {
            Some(said) => format!("{note}\n\n{said}"),
            None => note,
        };
        let path = drift_issue_path(label, &self.me);
        let issues = self.api.list(&self.api.path(&path), None, "list the drift issues").await?;
        let mut existing = existing_issue(&issues, &self.me, self.key.as_deref());
        if let Some(issue) = existing.as_mut().filter(|issue| issue.acknowledged)
            && let Err(why) = self.acknowledger(issue.number).await?
        {
            issue.acknowledged = false;
            issue.not_acknowledged = Some(why);
        }
        match decide(existing.as_ref(), now) {
            Step::Nothing => Ok(Outcome::Nothing),
            Step::Unchanged(number) => {
                if let Some(said) = put_back {
                    self.comment(number, said).await?;
                }
                Ok(Outcome::Unchanged(number))
            }
            Step::Acknowledged(number) => Ok(Outcome::Acknowledged(number)),
            Step::Open => {
                let drift = now.expect("a drift to open an issue about");
                // Sealed as opened, before GitHub gives the number: should its answer be lost,
                // the next check knows the issue for this check's (`existing_issue`).
                let opened = drift.body(self.key.as_deref().map(|key| (key, crate::threads::OPENED)));
                let body = json!({ "title": drift.title(), "body": opened, "labels": [label] });
                let made = self
                    .api
                    .expect(Method::POST, &self.api.path("/issues"), Some(&body), None, "open the drift issue", &[])
                    .await?;
                let made = made.json()["number"].as_u64().unwrap_or_default();
                // The seal binds the issue's number, which GitHub gives only once it is made.
                if let Some(key) = self.key.as_deref() {
                    let sealed = json!({ "body": drift.body(Some((key, made))) });
                    let path = self.api.path(&format!("/issues/{made}"));
                    self.api.expect(Method::PATCH, &path, Some(&sealed), None, "seal the drift issue", &[]).await?;
                }
                // Another check opened one meanwhile: the older one is the issue, this one closed
                // as its duplicate (which no later run takes for the drift issue).
                let issues = self.api.list(&self.api.path(&path), None, "list the drift issues").await?;
                if let Some(older) = duplicated(&issues, &self.me, self.key.as_deref(), made) {
                    self.close_as_duplicate(made, older).await?;
                    return Ok(Outcome::Duplicated(older));
                }
                Ok(Outcome::Created(made))
            }
            Step::Update { number, reopen, note } => {
                let drift = now.expect("a drift to update an issue with");
                let mut body = json!({
                    "title": drift.title(),
                    "body": drift.body(self.key.as_deref().map(|key| (key, number))),
                });
                if reopen {
                    body["state"] = json!("open");
                }
                let path = self.api.path(&format!("/issues/{number}"));
                self.api.expect(Method::PATCH, &path, Some(&body), None, "update the drift issue", &[]).await?;
                self.comment(number, &with_put_back(note)).await?;
                Ok(if reopen { Outcome::Reopened(number) } else { Outcome::Updated(number) })
            }
            Step::Close { number, note } => {
                self.comment(number, &with_put_back(note)).await?;
                let body = json!({ "state": "closed", "state_reason": "completed" });
                let path = self.api.path(&format!("/issues/{number}"));
                self.api.expect(Method::PATCH, &path, Some(&body), None, "close the drift issue", &[]).await?;
                Ok(Outcome::Closed(number))
            }
        }
    }

    /// Who closed issue `number` as not planned, if a person with write access to the
    /// repository (whose close acknowledges the drift); else why not. `closed_by` is only in the
    /// issue itself, not the list; a login that is no collaborator answers 404.
    async fn acknowledger(&self, number: u64) -> Result<Result<String, String>, ReconcileError> {
        let path = self.api.path(&format!("/issues/{number}"));
        let issue = self.api.expect(Method::GET, &path, None, None, "read who closed the drift issue", &[]).await?;
        let login = match crate::threads::closer(&issue.json()) {
            Ok(login) => login,
            Err(why) => return Ok(Err(why)),
        };
        let path = self.api.path(&format!("/collaborators/{}/permission", crate::threads::query(&login)));
        let what = "read the permission of who closed the drift issue";
        let answer = self.api.expect(Method::GET, &path, None, None, what, &[StatusCode::NOT_FOUND]).await?;
        Ok(if answer.status.is_success() && crate::threads::may_write(&answer.json()) {
            Ok(login)
        } else {
            Err(format!("`{login}`, who has no write access to the repository"))
        })
    }

    /// Closes issue `made`, which this check opened while another opened `older`. Its body
    /// first becomes a pointer to `older` without the marker, so no later check takes it for the
    /// drift issue however it ends up closed: as a duplicate, or, where GitHub refuses that
    /// reason (422), as not planned.
    async fn close_as_duplicate(&self, made: u64, older: u64) -> Result<(), ReconcileError> {
        let path = self.api.path(&format!("/issues/{made}"));
        let pointer = json!({
            "body": format!("A duplicate of #{older}, the drift issue, which another drift check opened at the same time.")
        });
        self.api
            .expect(Method::PATCH, &path, Some(&pointer), None, "point the duplicate drift issue at the other", &[])
            .await?;
        let what = "close the duplicate drift issue";
        let duplicate = json!({ "state": "closed", "state_reason": "duplicate" });
        let answer = self
            .api
            .expect(Method::PATCH, &path, Some(&duplicate), None, what, &[StatusCode::UNPROCESSABLE_ENTITY])
            .await?;
        if answer.status == StatusCode::UNPROCESSABLE_ENTITY {
            let not_planned = json!({ "state": "closed", "state_reason": "not_planned" });
            self.api.expect(Method::PATCH, &path, Some(&not_planned), None, what, &[]).await?;
        }
        Ok(())
    }

    async fn comment(&self, number: u64, body: &str) -> Result<(), ReconcileError> {
        let path = self.api.path(&format!("/issues/{number}/comments"));
        self.api
            .expect(Method::POST, &path, Some(&json!({ "body": body })), None, "comment on the drift issue", &[])
            .await?;
        Ok(())
    }
}
