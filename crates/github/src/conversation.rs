//! Where reconcile talks to people on GitHub: one comment kept up to date on a pull request with
//! its plan, a commit status on its head, and one issue that says whether the account has
//! drifted now.
//!
//! Each is found by what cannot be forged from outside: the pull request by its head commit and
//! head repository (as the `workflow_run` event gives them, never a number a pull request's own
//! artifact claims), a comment or issue by a hidden marker and by who wrote it (the token's own
//! login, or, for a workflow's token, which has none to ask for, a bot). Everything is read
//! through [`Api`]: pages followed, rate limits waited out, passing failures retried.

use http::Method;
use reconcile_core::ReconcileError;
use serde_json::{Value, json};

use crate::api::Api;

/// A repository's pull requests, comments, statuses and issues, as one identity.
pub struct Conversation {
    api: Api,
    /// The token's login, when GitHub says it (a personal token); `None` for a workflow's or an
    /// app's token, whose comments are a bot's.
    me: Option<String>,
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
    /// Nothing to say: no drift, and no open issue about one.
    Nothing,
}

impl Conversation {
    /// The conversation on the repository `api` is rooted at, as the token's identity.
    pub async fn connect(api: Api) -> Result<Conversation, ReconcileError> {
        let answer = api.send_any(Method::GET, "/user", None, "learn who the token is").await?;
        let me = answer.status.is_success().then(|| answer.json()["login"].as_str().map(str::to_owned)).flatten();
        Ok(Conversation { api, me })
    }

    /// Whether `author` (a comment's or issue's `user`) is this token's identity.
    fn is_mine(&self, author: &Value) -> bool {
        let login = author["login"].as_str().unwrap_or_default();
        match &self.me {
            Some(me) => login.eq_ignore_ascii_case(me),
            None => author["type"] == "Bot" && login.ends_with("[bot]"),
        }
    }

    /// The open pull request whose head is commit `sha` of `head_repository` (`owner/name`: a
    /// fork's, or this repository's own).
    pub async fn pull_request(&self, sha: &str, head_repository: &str) -> Result<Option<u64>, ReconcileError> {
        let path = self.api.path("/pulls?state=open&per_page=100");
        let pulls = self.api.list(&path, None, "list the open pull requests").await?;
        Ok(pulls
            .iter()
            .find(|pull| {
                pull["head"]["sha"].as_str() == Some(sha)
                    && pull["head"]["repo"]["full_name"]
                        .as_str()
                        .is_some_and(|r| r.eq_ignore_ascii_case(head_repository))
            })
            .and_then(|pull| pull["number"].as_u64()))
    }

    /// Keeps one comment of ours, found by `marker`, on issue or pull request `number` saying
    /// `body`: made, edited, or left when it already says it.
    pub async fn keep_comment(&self, number: u64, marker: &str, body: &str) -> Result<Outcome, ReconcileError> {
        let body = format!("{}\n{body}", hidden(marker));
        let path = self.api.path(&format!("/issues/{number}/comments?per_page=100"));
        let comments = self.api.list(&path, None, "list the pull request's comments").await?;
        let ours = comments.iter().rev().find(|comment| {
            self.is_mine(&comment["user"]) && comment["body"].as_str().is_some_and(|b| b.starts_with(&hidden(marker)))
        });
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
        // GitHub cuts a status's description at 140 characters; it is cut here, at a character.
        let description: String = description.chars().take(140).collect();
        let body = json!({ "state": state, "context": context, "description": description });
        let path = self.api.path(&format!("/statuses/{sha}"));
        self.api.expect(Method::POST, &path, Some(&body), None, "set the commit status", &[]).await?;
        Ok(())
    }

    /// Keeps the one drift issue (labelled `label`, ours) true to `now`: opened on drift, its
    /// body replaced when the drift changed (with a comment saying what changed since), left
    /// alone when it did not, closed with a note when the account is clean again, reopened when
    /// it drifts again.
    pub async fn keep_drift_issue(&self, label: &str, now: Option<&Drift>) -> Result<Outcome, ReconcileError> {
        let mut path = format!("/issues?state=all&per_page=100&labels={}", query(label));
        if let Some(me) = &self.me {
            path.push_str(&format!("&creator={}", query(me)));
        }
        let issues = self.api.list(&self.api.path(&path), None, "list the drift issues").await?;
        let existing = issues
            .iter()
            .filter(|issue| issue.get("pull_request").is_none() && self.is_mine(&issue["user"]))
            .filter(|issue| issue["body"].as_str().is_some_and(|b| b.starts_with(&hidden(DRIFT_MARKER))))
            .max_by_key(|issue| issue["number"].as_u64())
            .map(|issue| Existing {
                number: issue["number"].as_u64().unwrap_or_default(),
                open: issue["state"] == "open",
                items: issue["body"].as_str().and_then(stored_items),
            });
        match decide(existing.as_ref(), now) {
            Step::Nothing => Ok(Outcome::Nothing),
            Step::Unchanged(number) => Ok(Outcome::Unchanged(number)),
            Step::Open => {
                let drift = now.expect("a drift to open an issue about");
                let body = json!({ "title": DRIFT_TITLE, "body": drift.body(), "labels": [label] });
                let made = self
                    .api
                    .expect(Method::POST, &self.api.path("/issues"), Some(&body), None, "open the drift issue", &[])
                    .await?;
                Ok(Outcome::Created(made.json()["number"].as_u64().unwrap_or_default()))
            }
            Step::Update { number, reopen, note } => {
                let drift = now.expect("a drift to update an issue with");
                let mut body = json!({ "body": drift.body() });
                if reopen {
                    body["state"] = json!("open");
                }
                let path = self.api.path(&format!("/issues/{number}"));
                self.api.expect(Method::PATCH, &path, Some(&body), None, "update the drift issue", &[]).await?;
                self.comment(number, &note).await?;
                Ok(if reopen { Outcome::Reopened(number) } else { Outcome::Updated(number) })
            }
            Step::Close { number, note } => {
                self.comment(number, &note).await?;
                let body = json!({ "state": "closed", "state_reason": "completed" });
                let path = self.api.path(&format!("/issues/{number}"));
                self.api.expect(Method::PATCH, &path, Some(&body), None, "close the drift issue", &[]).await?;
                Ok(Outcome::Closed(number))
            }
        }
    }

    async fn comment(&self, number: u64, body: &str) -> Result<(), ReconcileError> {
        let path = self.api.path(&format!("/issues/{number}/comments"));
        self.api
            .expect(Method::POST, &path, Some(&json!({ "body": body })), None, "comment on the drift issue", &[])
            .await?;
        Ok(())
    }
}

/// The marker the drift issue is found by (with its author and label).
const DRIFT_MARKER: &str = "reconcile:drift";

/// The drift issue's title; it is never what finds the issue.
pub const DRIFT_TITLE: &str = "AWS account drift";

/// Room the drift issue's body keeps, beside the report, for its markers and what it differs
/// in (which the next run compares against): more than that, and only how many is kept.
pub const DRIFT_STATE_LIMIT: usize = 16 * 1024;

/// What the account differs in now: each difference as one short line (`update
/// iam_role.codebuild: description`, `S104 iam_ci_role.plan`), and the report to show.
#[derive(Debug, Clone, PartialEq)]
pub struct Drift {
    pub items: Vec<String>,
    pub report: String,
}

impl Drift {
    /// The issue's body: its markers, what it differs in (hidden), and the report.
    fn body(&self) -> String {
        format!("{}\n{}\n{}", hidden(DRIFT_MARKER), stored(&self.items), self.report)
    }

    /// How much of an issue's body is not the report.
    pub fn overhead(items: &[String]) -> usize {
        hidden(DRIFT_MARKER).len() + stored(items).len() + 2
    }
}

/// What an issue of ours says, of the drift it was about.
#[derive(Debug, Clone, PartialEq)]
struct Existing {
    number: u64,
    open: bool,
    /// `None` when it does not say (too many to keep, or not ours to read).
    items: Option<Items>,
}

#[derive(Debug, Clone, PartialEq)]
enum Items {
    All(Vec<String>),
    /// Only their fingerprint and count.
    Counted(String, usize),
}

/// What to do with the issue.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Nothing,
    Unchanged(u64),
    Open,
    Update { number: u64, reopen: bool, note: String },
    Close { number: u64, note: String },
}

fn decide(existing: Option<&Existing>, now: Option<&Drift>) -> Step {
    match (existing, now) {
        (None, None) => Step::Nothing,
        (Some(issue), None) if !issue.open => Step::Nothing,
        (Some(issue), None) => Step::Close {
            number: issue.number,
            note: "The account matches desired.toml again: every difference this issue reported is gone. \
                   Closed by reconcile's drift check; it reopens this issue if the account drifts again."
                .to_owned(),
        },
        (None, Some(_)) => Step::Open,
        (Some(issue), Some(drift)) => {
            let unchanged = match &issue.items {
                Some(Items::All(items)) => *items == drift.items,
                Some(Items::Counted(fingerprint, _)) => *fingerprint == fingerprint_of(&drift.items),
                None => false,
            };
            if issue.open && unchanged {
                return Step::Unchanged(issue.number);
            }
            let note = if issue.open {
                format!(
                    "The drift changed since this issue last said:\n\n{}",
                    changes(issue.items.as_ref(), &drift.items)
                )
            } else {
                format!("The account drifted again, so this issue is open again:\n\n{}", changes(None, &drift.items))
            };
            Step::Update { number: issue.number, reopen: !issue.open, note }
        }
    }
}

/// What changed between what an issue said and `now`, as Markdown list items (each item in a
/// code span that its content cannot close).
fn changes(before: Option<&Items>, now: &[String]) -> String {
    let item = |text: &str| format!("- {}", reconcile_core::markdown::code(text));
    match before {
        Some(Items::All(before)) => {
            let gone: Vec<String> = before.iter().filter(|i| !now.contains(i)).map(|i| item(i)).collect();
            let new: Vec<String> = now.iter().filter(|i| !before.contains(i)).map(|i| item(i)).collect();
            let mut text = String::new();
            if !new.is_empty() {
                text.push_str(&format!("New ({}):\n{}\n", new.len(), new.join("\n")));
            }
            if !gone.is_empty() {
                text.push_str(&format!("\nResolved ({}):\n{}\n", gone.len(), gone.join("\n")));
            }
            if text.is_empty() { "The same differences, described anew.".to_owned() } else { text }
        }
        Some(Items::Counted(_, count)) => format!("Differences: {count} before, {} now.", now.len()),
        None => {
            let listed: Vec<String> = now.iter().take(50).map(|i| item(i)).collect();
            let more = now.len().saturating_sub(50);
            let more = if more > 0 { format!("\n- and {more} more") } else { String::new() };
            format!("Now ({}):\n{}{more}", now.len(), listed.join("\n"))
        }
    }
}

/// A hidden HTML comment: `<!-- name -->`.
fn hidden(name: &str) -> String {
    format!("<!-- {name} -->")
}

/// The items, hidden in the issue's body for the next run to compare with: percent-encoded
/// (nothing in them can end the HTML comment), or, when that would take more than
/// [`DRIFT_STATE_LIMIT`], their fingerprint and count.
fn stored(items: &[String]) -> String {
    let all: Vec<String> = items.iter().map(|item| encode(item)).collect();
    let all = all.join(" ");
    if all.len() <= DRIFT_STATE_LIMIT {
        format!("<!-- reconcile:drift-items {all} -->")
    } else {
        format!("<!-- reconcile:drift-count {} {} -->", fingerprint_of(items), items.len())
    }
}

/// What a body stored of its items; `None` when it stores nothing readable.
fn stored_items(body: &str) -> Option<Items> {
    let line = body.lines().nth(1)?;
    if let Some(rest) = line.strip_prefix("<!-- reconcile:drift-items ").and_then(|r| r.strip_suffix(" -->")) {
        return Some(Items::All(rest.split(' ').filter(|i| !i.is_empty()).map(decode).collect()));
    }
    if let Some(rest) = line.strip_prefix("<!-- reconcile:drift-items -->") {
        return rest.is_empty().then_some(Items::All(Vec::new()));
    }
    let rest = line.strip_prefix("<!-- reconcile:drift-count ")?.strip_suffix(" -->")?;
    let (fingerprint, count) = rest.split_once(' ')?;
    Some(Items::Counted(fingerprint.to_owned(), count.parse().ok()?))
}

fn fingerprint_of(items: &[String]) -> String {
    reconcile_core::json::fingerprint_text(&items.join("\n"))
}

/// Percent-encodes every byte but letters, digits and `._-:/@[]` (so no `>`, nor anything else
/// that could end the HTML comment it is kept in, survives).
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'_' | b'-' | b':' | b'/' | b'@' | b'[' | b']' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut rest = bytes;
    while let Some((&first, tail)) = rest.split_first() {
        let hex = |b: u8| (b as char).to_digit(16);
        match tail {
            [high, low, after @ ..] if first == b'%' => match hex(*high).zip(hex(*low)) {
                Some((high, low)) => {
                    out.push((high * 16 + low) as u8);
                    rest = after;
                }
                None => {
                    out.push(first);
                    rest = tail;
                }
            },
            _ => {
                out.push(first);
                rest = tail;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A query parameter's value, encoded.
fn query(value: &str) -> String {
    encode(value).replace('/', "%2F").replace(':', "%3A").replace('@', "%40")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drift(items: &[&str]) -> Drift {
        Drift { items: items.iter().map(|i| (*i).to_owned()).collect(), report: "report".to_owned() }
    }

    fn issue(open: bool, items: &[&str]) -> Existing {
        Existing { number: 7, open, items: Some(Items::All(items.iter().map(|i| (*i).to_owned()).collect())) }
    }

    #[test]
    fn the_issue_says_whether_the_account_drifted_now() {
        let a = drift(&["update iam_role.codebuild: description", "S104 iam_ci_role.plan"]);
        assert_eq!(decide(None, None), Step::Nothing);
        assert_eq!(decide(None, Some(&a)), Step::Open);
        let open = issue(true, &["update iam_role.codebuild: description", "S104 iam_ci_role.plan"]);
        assert_eq!(decide(Some(&open), Some(&a)), Step::Unchanged(7), "the same drift: nothing said");
        let b = drift(&["S104 iam_ci_role.plan", "delete ecr_repository.stray"]);
        let Step::Update { number: 7, reopen: false, note } = decide(Some(&open), Some(&b)) else { panic!() };
        assert_eq!(
            note,
            "The drift changed since this issue last said:\n\nNew (1):\n- `delete ecr_repository.stray`\n\nResolved \
             (1):\n- `update iam_role.codebuild: description`\n"
        );
        let Step::Close { number: 7, .. } = decide(Some(&open), None) else { panic!() };
        let closed = issue(false, &["S104 iam_ci_role.plan"]);
        assert_eq!(decide(Some(&closed), None), Step::Nothing, "clean, and closed: nothing");
        let Step::Update { number: 7, reopen: true, note } = decide(Some(&closed), Some(&a)) else { panic!() };
        assert!(note.starts_with("The account drifted again, so this issue is open again:\n\nNow (2):\n"), "{note}");
        // An issue whose stored items cannot be read is updated, never taken for unchanged.
        let unreadable = Existing { number: 7, open: true, items: None };
        assert!(matches!(decide(Some(&unreadable), Some(&a)), Step::Update { reopen: false, .. }));
    }

    #[test]
    fn what_the_body_stores_reads_back_and_nothing_in_it_ends_the_comment() {
        let items: Vec<String> = ["update a.b: c", "D101 ecr_repository.x--y", "S102 e-->x <script>", "100% ünïcode"]
            .map(str::to_owned)
            .to_vec();
        let body = Drift { items: items.clone(), report: "report".to_owned() }.body();
        let state = body.lines().nth(1).unwrap();
        assert_eq!(state.matches("-->").count(), 1, "{state}");
        assert!(!state.contains('<') || state.starts_with("<!--"), "{state}");
        assert_eq!(stored_items(&body), Some(Items::All(items)));
        assert_eq!(stored_items(&drift(&[]).body()), Some(Items::All(Vec::new())));
        // Too many to keep: their fingerprint and count.
        let many: Vec<String> = (0..3000).map(|n| format!("D101 ecr_repository.repository-{n}")).collect();
        let body = Drift { items: many.clone(), report: String::new() }.body();
        assert_eq!(stored_items(&body), Some(Items::Counted(fingerprint_of(&many), 3000)));
        assert!(Drift::overhead(&many) < DRIFT_STATE_LIMIT);
        let open = Existing { number: 3, open: true, items: stored_items(&body) };
        assert_eq!(
            decide(Some(&open), Some(&Drift { items: many.clone(), report: String::new() })),
            Step::Unchanged(3)
        );
        let fewer = Drift { items: many[1..].to_vec(), report: String::new() };
        let Step::Update { note, .. } = decide(Some(&open), Some(&fewer)) else { panic!() };
        assert!(note.ends_with("Differences: 3000 before, 2999 now."), "{note}");
        // Hand-edited or foreign bodies read as nothing, never as a panic.
        for body in ["", "<!-- reconcile:drift -->", "<!-- reconcile:drift -->\n<!-- reconcile:drift-count x y -->"] {
            assert_eq!(stored_items(body), None, "{body:?}");
        }
        assert_eq!(decode("%zz%4"), "%zz%4");
    }
}
