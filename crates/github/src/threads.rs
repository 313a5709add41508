//! What reconcile's comments, statuses and drift issue say, and how its own are told apart,
//! purely: `conversation.rs` sends and reads, this decides. The drift issue's state machine
//! (`decide`) works over what the last body stored of the drift (percent-encoded in a hidden
//! comment, or only a fingerprint when too many).

use serde_json::Value;

/// The marker the drift issue is found by (with its author and label).
pub(crate) const DRIFT_MARKER: &str = "reconcile:drift";

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
    /// The issue's body: its markers, what it differs in (hidden), and the report; sealed with
    /// a key, as the body of the issue of that number, when there is one ([`seal`]).
    pub(crate) fn body(&self, sealed: Option<(&[u8], u64)>) -> String {
        let body = format!("{}\n{}\n{}", hidden(DRIFT_MARKER), stored(&self.items), self.report);
        match sealed {
            Some((key, number)) => seal(&body, key, number),
            None => body,
        }
    }

    /// The issue's title: [`DRIFT_TITLE`], and the codes of its security findings (`S...`) when
    /// it has any, so that the most dangerous drift shows in the list of issues too.
    pub fn title(&self) -> String {
        let mut codes: Vec<&str> = self
            .items
            .iter()
            .filter_map(|item| item.split(' ').next())
            .filter(|code| code.len() == 4 && code.starts_with('S') && code[1..].bytes().all(|b| b.is_ascii_digit()))
            .collect();
        codes.sort_unstable();
        codes.dedup();
        match codes.as_slice() {
            [] => DRIFT_TITLE.to_owned(),
            [one] => format!("{DRIFT_TITLE}, with security finding {one}"),
            many => format!("{DRIFT_TITLE}, with security findings {}", many.join(", ")),
        }
    }

    /// How much of an issue's body is not the report (its seal included).
    pub fn overhead(items: &[String]) -> usize {
        hidden(DRIFT_MARKER).len() + stored(items).len() + 2 + SEAL_LENGTH
    }
}

/// The hidden last line of a sealed drift issue's body.
const SEAL: &str = "reconcile:drift-seal";
/// How long that line is: `\n<!-- reconcile:drift-seal ` and 64 hex digits, ` -->`.
const SEAL_LENGTH: usize = 1 + 5 + SEAL.len() + 1 + 64 + 4;

/// `body`, sealed with `key` (a secret only the drift workflow is given) as the body of issue
/// `number`: HMAC-SHA256 of the number and the body, in hex, in a hidden last line. Every
/// workflow token of a repository writes issues as the same bot, so a marker and an author do
/// not tell reconcile's drift issue from one another workflow opened with a body whoever drives
/// it chose; a seal does, and binding the number keeps a sealed body copied into another issue
/// (it is public) from being taken for the drift issue there.
pub(crate) fn seal(body: &str, key: &[u8], number: u64) -> String {
    format!("{body}\n{}", hidden(&format!("{SEAL} {}", mac(number, body, key))))
}

/// Whether `body` ends with a seal made with `key` over the rest of it, as issue `number`'s.
pub(crate) fn sealed_with(body: &str, key: &[u8], number: u64) -> bool {
    let Some((rest, last)) = body.rsplit_once('\n') else { return false };
    let Some(hex) = last.strip_prefix(&format!("<!-- {SEAL} ")).and_then(|l| l.strip_suffix(" -->")) else {
        return false;
    };
    let wanted: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| hex.get(i..i + 2).and_then(|pair| u8::from_str_radix(pair, 16).ok()))
        .collect();
    let Some(wanted) = wanted else { return false };
    // Compared in constant time: a forger learns nothing from how long a wrong one took.
    use hmac::Mac;
    let mut check = <hmac::Hmac<sha2::Sha256>>::new_from_slice(key).expect("HMAC takes a key of any length");
    check.update(&sealed_text(number, rest));
    check.verify_slice(&wanted).is_ok()
}

fn mac(number: u64, body: &str, key: &[u8]) -> String {
    use hmac::Mac;
    let mut mac = <hmac::Hmac<sha2::Sha256>>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(&sealed_text(number, body));
    mac.finalize().into_bytes().iter().map(|byte| format!("{byte:02x}")).collect()
}

/// What a seal is made over: the issue's number, then its body (the number first and ended, so
/// no two numbers and bodies make the same text).
fn sealed_text(number: u64, body: &str) -> Vec<u8> {
    format!("drift issue #{number}\n{body}").into_bytes()
}

/// What an issue of ours says, of the drift it was about.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Existing {
    pub(crate) number: u64,
    open: bool,
    /// Closed as "not planned" by a person with write access to the repository: the drift it
    /// stores is acknowledged.
    pub(crate) acknowledged: bool,
    /// Closed as "not planned" by someone who may not acknowledge drift: who, and why not.
    pub(crate) not_acknowledged: Option<String>,
    /// `None` when it does not say (too many to keep, or not ours to read).
    items: Option<Items>,
    /// Opened by a check that never heard GitHub's answer, so never sealed: taken as the drift
    /// issue (and sealed by the next write), rather than opening another beside it.
    unsealed: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Items {
    All(Vec<String>),
    /// Only their fingerprint and count.
    Counted(String, usize),
}

/// What to do with the issue.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Step {
    Nothing,
    Unchanged(u64),
    /// Closed as not planned, and the drift is still what was acknowledged: left closed.
    Acknowledged(u64),
    Open,
    Update {
        number: u64,
        reopen: bool,
        note: String,
    },
    Close {
        number: u64,
        note: String,
    },
}

pub(crate) fn decide(existing: Option<&Existing>, now: Option<&Drift>) -> Step {
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
            if issue.open && unchanged && !issue.unsealed {
                return Step::Unchanged(issue.number);
            }
            if !issue.open && issue.acknowledged && unchanged {
                return Step::Acknowledged(issue.number);
            }
            let note = if issue.unsealed {
                format!(
                    "The drift check that opened this issue never heard GitHub's answer, so it did not seal it; it \
                     is the drift issue, sealed now. The drift:\n\n{}",
                    changes(None, &drift.items)
                )
            } else if issue.open {
                format!(
                    "The drift changed since this issue last said:\n\n{}",
                    changes(issue.items.as_ref(), &drift.items)
                )
            } else if let Some(why) = &issue.not_acknowledged {
                format!(
                    "This issue was closed as not planned by {why}: only a person with write access to the \
                     repository acknowledges drift, so it is open again:\n\n{}",
                    changes(issue.items.as_ref(), &drift.items)
                )
            } else if issue.acknowledged {
                format!(
                    "The drift differs from what was acknowledged when this issue was closed as not planned, so it \
                     is open again:\n\n{}",
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
/// code span that its content cannot close), in words: what each difference is about (its
/// address, field or finding code), never the fingerprint of its values, which only tells a
/// changed value from the same one. A difference about the same thing with other values is
/// changed, not new and resolved; resolved is only what is gone from the drift.
fn changes(before: Option<&Items>, now: &[String]) -> String {
    let item = |text: &str| format!("- {}", reconcile_core::markdown::code(about(text)));
    match before {
        Some(Items::All(before)) => {
            let was: Vec<&str> = before.iter().map(|i| about(i)).collect();
            let is: Vec<&str> = now.iter().map(|i| about(i)).collect();
            let gone: Vec<String> = before.iter().filter(|i| !is.contains(&about(i))).map(|i| item(i)).collect();
            let new: Vec<String> = now.iter().filter(|i| !was.contains(&about(i))).map(|i| item(i)).collect();
            let changed: Vec<String> = now
                .iter()
                .filter(|i| !before.contains(i) && was.contains(&about(i)))
                .map(|i| format!("{}: its values changed", item(i)))
                .collect();
            let mut parts = Vec::new();
            for (title, items) in [("New", &new), ("Changed", &changed), ("Resolved", &gone)] {
                if !items.is_empty() {
                    parts.push(format!("{title} ({}):\n{}\n", items.len(), items.join("\n")));
                }
            }
            if parts.is_empty() { "The same differences, described anew.".to_owned() } else { parts.join("\n") }
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

/// What a difference is about: the item without the fingerprint of its values (32 hex digits
/// last, `Plan::differences`' form), when it has one.
fn about(item: &str) -> &str {
    match item.rsplit_once(' ') {
        Some((about, print)) if print.len() == 32 && print.bytes().all(|b| b.is_ascii_hexdigit()) => about,
        _ => item,
    }
}

/// A hidden HTML comment: `<!-- name -->`.
pub(crate) fn hidden(name: &str) -> String {
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
pub(crate) fn stored_items(body: &str) -> Option<Items> {
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
pub(crate) fn query(value: &str) -> String {
    encode(value).replace('/', "%2F").replace(':', "%3A").replace('@', "%40")
}

/// The GitHub Actions bot's user id: what a workflow's token writes as, in every repository.
pub(crate) const ACTIONS_BOT_ID: u64 = 41_898_282;

/// Who the token writes as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Me {
    /// A person's (or a machine user's) token: its login, as `GET /user` says it.
    Login(String),
    /// A workflow's token, which `GET /user` does not answer: the GitHub Actions bot, by its
    /// user id (another app's bot, or another workflow's issue, is not ours by a `[bot]` login).
    ActionsBot,
}

/// Whether `author` (a comment's or issue's `user`) is the token's identity.
pub(crate) fn is_author(me: &Me, author: &Value) -> bool {
    match me {
        Me::Login(me) => author["login"].as_str().is_some_and(|login| login.eq_ignore_ascii_case(me)),
        Me::ActionsBot => author["type"] == "Bot" && author["id"].as_u64() == Some(ACTIONS_BOT_ID),
    }
}

/// The number of the pull request among `pulls` whose head is commit `sha` of
/// `head_repository` (`owner/name`: a fork's, or this repository's own).
pub(crate) fn pull_request_of(pulls: &[Value], sha: &str, head_repository: &str) -> Option<u64> {
    pulls
        .iter()
        .find(|pull| {
            pull["head"]["sha"].as_str() == Some(sha)
                && pull["head"]["repo"]["full_name"].as_str().is_some_and(|r| r.eq_ignore_ascii_case(head_repository))
        })
        .and_then(|pull| pull["number"].as_u64())
}

/// The other open pull requests among `pulls` whose head is commit `sha` too, from another head
/// repository than `head_repository`: a status on the commit would be theirs as well.
pub(crate) fn sharing_head(pulls: &[Value], sha: &str, head_repository: &str) -> Vec<u64> {
    pulls
        .iter()
        .filter(|pull| {
            pull["head"]["sha"].as_str() == Some(sha)
                && !pull["head"]["repo"]["full_name"].as_str().is_some_and(|r| r.eq_ignore_ascii_case(head_repository))
        })
        .filter_map(|pull| pull["number"].as_u64())
        .collect()
}

/// The last of `comments` written by `me` that starts with `marker`.
pub(crate) fn own_comment<'a>(comments: &'a [Value], me: &Me, marker: &str) -> Option<&'a Value> {
    comments.iter().rev().find(|comment| {
        is_author(me, &comment["user"]) && comment["body"].as_str().is_some_and(|b| b.starts_with(&hidden(marker)))
    })
}

/// A commit status's description: GitHub cuts one at 140 characters; it is cut here, at a
/// character.
pub(crate) fn status_description(description: &str) -> String {
    description.chars().take(140).collect()
}

/// The issues, open or closed, labelled `label` (and made by `me`, when known), to find the
/// drift issue among.
pub(crate) fn drift_issue_path(label: &str, me: &Me) -> String {
    let mut path = format!("/issues?state=all&per_page=100&labels={}", query(label));
    if let Me::Login(me) = me {
        path.push_str(&format!("&creator={}", query(me)));
    }
    path
}

/// Our drift issues among `issues` (not pull requests, `me`'s, with the marker and, with a
/// `key`, sealed with it; not closed as a duplicate of another), newest first.
fn ours<'a>(issues: &'a [Value], me: &'a Me, key: Option<&'a [u8]>) -> impl Iterator<Item = &'a Value> {
    let mut ours: Vec<&Value> = issues
        .iter()
        .filter(|issue| issue.get("pull_request").is_none() && is_author(me, &issue["user"]))
        .filter(|issue| issue["body"].as_str().is_some_and(|b| b.starts_with(&hidden(DRIFT_MARKER))))
        .filter(|issue| {
            key.is_none_or(|key| {
                let number = issue["number"].as_u64();
                issue["body"].as_str().zip(number).is_some_and(|(body, number)| sealed_with(body, key, number))
            })
        })
        .filter(|issue| issue["state_reason"] != "duplicate")
        .collect();
    ours.sort_by_key(|issue| std::cmp::Reverse(issue["number"].as_u64()));
    ours.into_iter()
}

/// The number an issue's body is sealed as before GitHub has given it one ([`OPENED`]).
pub(crate) const OPENED: u64 = 0;

/// The drift issue among `issues`: the newest of ours; or, with a key, a newer open one of
/// `me`'s sealed as [`OPENED`] (as a check opens one, before it knows the number), which a check
/// opened and never heard GitHub's answer for, so never sealed as its own number. It is taken as
/// the drift issue (rewritten, sealed, or closed), never a second opened beside it.
pub(crate) fn existing_issue(issues: &[Value], me: &Me, key: Option<&[u8]>) -> Option<Existing> {
    let sealed = ours(issues, me, key).next();
    let newest = sealed.and_then(|issue| issue["number"].as_u64()).unwrap_or_default();
    let orphan = key.and_then(|key| {
        ours(issues, me, None)
            .filter(|issue| issue["state"] == "open" && issue["number"].as_u64().unwrap_or_default() > newest)
            .find(|issue| issue["body"].as_str().is_some_and(|body| sealed_with(body, key, OPENED)))
    });
    if let Some(orphan) = orphan {
        return Some(Existing {
            number: orphan["number"].as_u64().unwrap_or_default(),
            open: true,
            acknowledged: false,
            not_acknowledged: None,
            items: None,
            unsealed: true,
        });
    }
    sealed.map(|issue| Existing {
        number: issue["number"].as_u64().unwrap_or_default(),
        open: issue["state"] == "open",
        // Claimed by the close; `Conversation` asks who closed it before it counts.
        acknowledged: issue["state"] == "closed" && issue["state_reason"] == "not_planned",
        not_acknowledged: None,
        items: issue["body"].as_str().and_then(stored_items),
        unsealed: false,
    })
}

/// Who closed an issue (`issue` as `GET /issues/{n}` answers it, with `closed_by`), when that
/// is a person, whose permission on the repository is then asked; else why the close
/// acknowledges nothing. A bot (the workflow token's `github-actions[bot]`, which actions/stale
/// closes with, or another app's) is nobody's acknowledgement.
pub(crate) fn closer(issue: &Value) -> Result<String, String> {
    let by = &issue["closed_by"];
    let login = by["login"].as_str().filter(|login| !login.is_empty());
    match (login, by["type"].as_str()) {
        (Some(login), Some("User")) => Ok(login.to_owned()),
        (Some(login), _) => Err(format!("`{login}`, a bot")),
        (None, _) => Err("someone GitHub does not name".to_owned()),
    }
}

/// Whether a collaborator's permission (`GET /collaborators/{user}/permission`'s answer) lets
/// them write to the repository: `admin` or `write` (a maintainer's is `write`, with the role
/// `maintain`); `triage`'s and `read`'s are `read`.
pub(crate) fn may_write(permission: &Value) -> bool {
    matches!(permission["permission"].as_str(), Some("admin" | "write"))
        || matches!(permission["role_name"].as_str(), Some("admin" | "maintain" | "write"))
}

/// After opening issue `made`: the older open drift issue of ours it duplicates, when another
/// run opened one meanwhile (two drift checks at once).
pub(crate) fn duplicated(issues: &[Value], me: &Me, key: Option<&[u8]>, made: u64) -> Option<u64> {
    ours(issues, me, key)
        .filter(|issue| issue["state"] == "open")
        .filter_map(|issue| issue["number"].as_u64())
        .filter(|number| *number < made)
        .min()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn drift(items: &[&str]) -> Drift {
        Drift { items: items.iter().map(|i| (*i).to_owned()).collect(), report: "report".to_owned() }
    }

    fn issue(open: bool, items: &[&str]) -> Existing {
        Existing {
            number: 7,
            open,
            acknowledged: false,
            not_acknowledged: None,
            items: Some(Items::All(items.iter().map(|i| (*i).to_owned()).collect())),
            unsealed: false,
        }
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
        let unreadable = Existing {
            number: 7,
            open: true,
            acknowledged: false,
            not_acknowledged: None,
            items: None,
            unsealed: false,
        };
        assert!(matches!(decide(Some(&unreadable), Some(&a)), Step::Update { reopen: false, .. }));
    }

    #[test]
    fn a_sealed_body_is_told_from_one_another_workflow_wrote() {
        let key = b"0123456789abcdef0123456789abcdef";
        let body = drift(&["update ecr_repository.pytorch: tags 0a"]).body(Some((key, 4)));
        assert!(sealed_with(&body, key, 4));
        assert!(body.len() <= Drift::overhead(&drift(&["update ecr_repository.pytorch: tags 0a"]).items) + 6);
        assert!(!sealed_with(&body, b"another key, as long as the other", 4), "another key");
        assert!(!sealed_with(&body, key, 14), "another issue's: a copy of the body");
        assert!(!sealed_with(&body.replacen("report", "all is well", 1), key, 4), "its text changed");
        assert!(!sealed_with(&drift(&["a"]).body(None), key, 4), "none");
        let truncated = &body[..body.len() - 6];
        assert!(!sealed_with(truncated, key, 4));
        // Among issues by the same bot with the label and the marker, with a key only the sealed
        // one is ours; without one, the newest (as before a key was given).
        let me = Me::ActionsBot;
        let bot = json!({ "login": "github-actions[bot]", "type": "Bot", "id": ACTIONS_BOT_ID });
        let issue = |number: u64, body: &str| json!({ "number": number, "state": "open", "state_reason": null, "body": body, "user": bot });
        let forged = drift(&["an outsider's"]).body(None);
        let issues = [issue(9, &forged), issue(4, &body)];
        assert_eq!(existing_issue(&issues, &me, Some(key)).map(|e| e.number), Some(4));
        assert_eq!(existing_issue(&issues, &me, None).map(|e| e.number), Some(9));
        assert_eq!(duplicated(&[issue(3, &forged), issue(4, &body)], &me, Some(key), 5), Some(4));
        // The sealed body copied, whole, into a newer issue (another workflow's, by the same bot,
        // with the label): not ours, the real one still is.
        let copied = [issue(12, &body), issue(4, &body)];
        assert_eq!(existing_issue(&copied, &me, Some(key)).map(|e| e.number), Some(4));
        // One a check opened (sealed as it opens one, before GitHub gives the number) and never
        // heard the answer for: the drift issue, to be sealed, not one to open another beside.
        let opened = drift(&["a"]).body(Some((key, OPENED)));
        let lost = [issue(4, &body), issue(11, &opened), issue(12, &forged)];
        let found = existing_issue(&lost, &me, Some(key)).unwrap();
        assert_eq!((found.number, found.unsealed, found.open), (11, true, true));
        let Step::Update { number: 11, reopen: false, note } = decide(Some(&found), Some(&drift(&["a"]))) else {
            panic!("an update, which seals it")
        };
        assert!(note.contains("never heard GitHub's answer"), "{note}");
        assert_eq!(decide(Some(&found), None), Step::Close { number: 11, note: decide_close_note() });
    }

    /// What closing an issue says when the account matches again.
    fn decide_close_note() -> String {
        match decide(Some(&issue(true, &["a"])), None) {
            Step::Close { note, .. } => note,
            step => panic!("{step:?}"),
        }
    }

    #[test]
    fn only_a_person_with_write_access_acknowledges_drift() {
        let closed_by = |login: &str, kind: &str| json!({ "closed_by": { "login": login, "type": kind } });
        assert_eq!(closer(&closed_by("alice", "User")), Ok("alice".to_owned()));
        assert_eq!(closer(&closed_by("github-actions[bot]", "Bot")), Err("`github-actions[bot]`, a bot".to_owned()));
        assert!(closer(&closed_by("", "User")).is_err());
        assert!(closer(&json!({ "closed_by": null })).is_err());
        for (permission, role, writes) in [
            ("admin", "admin", true),
            ("write", "maintain", true),
            ("write", "write", true),
            ("read", "triage", false),
            ("read", "read", false),
            ("none", "none", false),
        ] {
            assert_eq!(may_write(&json!({ "permission": permission, "role_name": role })), writes, "{role}");
        }
        assert!(!may_write(&json!({})));
        // Either says so: a custom role on write, or a role name alone.
        assert!(may_write(&json!({ "permission": "write", "role_name": "release-manager" })));
        assert!(may_write(&json!({ "role_name": "maintain" })));
        // A close that is not an acknowledgement: the same drift reopens it, saying why.
        let a = drift(&["update iam_role.codebuild: description 0a1b2c3d"]);
        let by_a_bot = Existing {
            not_acknowledged: Some("`github-actions[bot]`, a bot".to_owned()),
            ..issue(false, &["update iam_role.codebuild: description 0a1b2c3d"])
        };
        let Step::Update { number: 7, reopen: true, note } = decide(Some(&by_a_bot), Some(&a)) else { panic!() };
        assert!(
            note.starts_with("This issue was closed as not planned by `github-actions[bot]`, a bot: only"),
            "{note}"
        );
    }

    #[test]
    fn a_close_as_not_planned_acknowledges_the_drift_as_it_stands() {
        let (was, now) = ("0a1b2c3d".repeat(4), "9f8e7d6c".repeat(4));
        let a = drift(&[&format!("update iam_role.codebuild: description {was}")]);
        let acknowledged = Existing {
            acknowledged: true,
            ..issue(false, &[&format!("update iam_role.codebuild: description {was}")])
        };
        assert_eq!(decide(Some(&acknowledged), Some(&a)), Step::Acknowledged(7), "the same drift: left closed");
        assert_eq!(decide(Some(&acknowledged), None), Step::Nothing);
        let widened = drift(&[&format!("update iam_role.codebuild: description {now}"), "D101 ecr_repository.scratch"]);
        let Step::Update { number: 7, reopen: true, note } = decide(Some(&acknowledged), Some(&widened)) else {
            panic!()
        };
        // In words: the same field with other values is changed, not new and resolved.
        assert_eq!(
            note,
            "The drift differs from what was acknowledged when this issue was closed as not planned, so it is open \
             again:\n\nNew (1):\n- `D101 ecr_repository.scratch`\n\nChanged (1):\n- `update iam_role.codebuild: \
             description`: its values changed\n"
        );
    }

    #[test]
    fn a_security_finding_is_in_the_title() {
        assert_eq!(drift(&["update a.b: c", "D101 x"]).title(), "AWS account drift");
        let one = drift(&["S105 iam_role_policy.codebuild 0123", "update a.b: c"]);
        assert_eq!(one.title(), "AWS account drift, with security finding S105");
        let two = drift(&["S105 iam_role_policy.codebuild 0123", "S104 iam_ci_role.plan", "S105 x"]);
        assert_eq!(two.title(), "AWS account drift, with security findings S104, S105");
    }

    #[test]
    fn a_counted_finding_whose_count_changed_is_changed_and_only_what_is_gone_is_resolved() {
        let (one, two) = ("1".repeat(32), "2".repeat(32));
        let open = issue(true, &[&format!("D102 {one}"), &format!("update iam_role.codebuild: description {one}")]);
        let more = drift(&[&format!("D102 {two}"), &format!("update iam_role.codebuild: description {one}")]);
        let Step::Update { note, .. } = decide(Some(&open), Some(&more)) else { panic!() };
        assert_eq!(
            note,
            "The drift changed since this issue last said:\n\nChanged (1):\n- `D102`: its values changed\n"
        );
        let fewer = drift(&[&format!("D102 {two}")]);
        let Step::Update { note, .. } = decide(Some(&open), Some(&fewer)) else { panic!() };
        assert!(note.ends_with("Resolved (1):\n- `update iam_role.codebuild: description`\n"), "{note}");
        assert!(!note.contains(&one) && !note.contains(&two), "no fingerprint: {note}");
    }

    #[test]
    fn what_the_body_stores_reads_back_and_nothing_in_it_ends_the_comment() {
        let items: Vec<String> = ["update a.b: c", "D101 ecr_repository.x--y", "S102 e-->x <script>", "100% ünïcode"]
            .map(str::to_owned)
            .to_vec();
        let body = Drift { items: items.clone(), report: "report".to_owned() }.body(None);
        let state = body.lines().nth(1).unwrap();
        assert_eq!(state.matches("-->").count(), 1, "{state}");
        assert!(!state.contains('<') || state.starts_with("<!--"), "{state}");
        assert_eq!(stored_items(&body), Some(Items::All(items)));
        assert_eq!(stored_items(&drift(&[]).body(None)), Some(Items::All(Vec::new())));
        // Too many to keep: their fingerprint and count.
        let many: Vec<String> = (0..3000).map(|n| format!("D101 ecr_repository.repository-{n}")).collect();
        let body = Drift { items: many.clone(), report: String::new() }.body(None);
        assert_eq!(stored_items(&body), Some(Items::Counted(fingerprint_of(&many), 3000)));
        assert!(Drift::overhead(&many) < DRIFT_STATE_LIMIT);
        let open = Existing {
            number: 3,
            open: true,
            acknowledged: false,
            not_acknowledged: None,
            items: stored_items(&body),
            unsealed: false,
        };
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

    #[test]
    fn only_the_tokens_own_comments_and_issues_are_ours() {
        let user = |login: &str, kind: &str| json!({ "login": login, "type": kind });
        let login = |me: &str| Me::Login(me.to_owned());
        assert!(is_author(&login("Reconcile-Bot"), &user("reconcile-bot", "User")), "logins without case");
        assert!(!is_author(&login("reconcile-bot"), &user("someone", "User")));
        let actions = json!({ "login": "github-actions[bot]", "type": "Bot", "id": ACTIONS_BOT_ID });
        assert!(is_author(&Me::ActionsBot, &actions));
        assert!(!is_author(&Me::ActionsBot, &user("github-actions[bot]", "Bot")), "the login alone proves nothing");
        assert!(!is_author(
            &Me::ActionsBot,
            &json!({ "login": "github-actions[bot]", "type": "User", "id": ACTIONS_BOT_ID })
        ));
        assert!(
            !is_author(&Me::ActionsBot, &json!({ "login": "other-app[bot]", "type": "Bot", "id": 1234 })),
            "another app"
        );
        let comment = |id: u64, login: &str, body: &str| json!({ "id": id, "user": user(login, "User"), "body": body });
        let comments = [
            comment(1, "me", "<!-- m -->\nold"),
            comment(2, "mallory", "<!-- m -->\nforged"),
            comment(3, "me", "<!-- m -->\nnewer"),
            comment(4, "me", "no marker"),
        ];
        assert_eq!(own_comment(&comments, &login("me"), "m").map(|c| c["id"].clone()), Some(json!(3)));
        assert_eq!(own_comment(&comments, &login("mallory2"), "m"), None);
        assert_eq!(own_comment(&comments, &login("me"), "other"), None);
    }

    #[test]
    fn the_pull_request_is_found_by_its_head_commit_and_repository_only() {
        let pull = |number: u64, sha: &str, repo: &str| json!({ "number": number, "head": { "sha": sha, "repo": { "full_name": repo } } });
        let pulls =
            [pull(1, "abc", "ROCm/rocm-bake"), pull(2, "abc", "fork/rocm-bake"), pull(3, "def", "Fork/Rocm-Bake")];
        assert_eq!(pull_request_of(&pulls, "abc", "fork/rocm-bake"), Some(2));
        assert_eq!(pull_request_of(&pulls, "def", "fork/rocm-bake"), Some(3), "repository names without case");
        assert_eq!(pull_request_of(&pulls, "abc", "other/rocm-bake"), None);
        assert_eq!(pull_request_of(&pulls, "xyz", "ROCm/rocm-bake"), None);
        assert_eq!(sharing_head(&pulls, "abc", "fork/rocm-bake"), vec![1]);
        assert_eq!(sharing_head(&pulls, "def", "fork/rocm-bake"), Vec::<u64>::new());
    }

    #[test]
    fn the_drift_issue_is_the_newest_of_ours_with_the_marker() {
        let issue = |number: u64, login: &str, state: &str, body: &str| json!({ "number": number, "state": state, "body": body, "user": { "login": login, "type": "User" } });
        let me = Me::Login("me".to_owned());
        let body = drift(&["a"]).body(None);
        let mut pull = issue(9, "me", "open", &body);
        pull["pull_request"] = json!({});
        let issues = [
            issue(2, "me", "closed", &body),
            issue(5, "me", "open", &body),
            issue(6, "mallory", "open", &body),
            issue(7, "me", "open", "no marker"),
            pull,
        ];
        assert_eq!(
            existing_issue(&issues, &me, None),
            Some(Existing {
                number: 5,
                open: true,
                acknowledged: false,
                not_acknowledged: None,
                items: Some(Items::All(vec!["a".to_owned()])),
                unsealed: false,
            })
        );
        assert_eq!(existing_issue(&issues[..1], &me, None).map(|e| e.open), Some(false));
        assert_eq!(existing_issue(&issues, &Me::Login("nobody".to_owned()), None), None);
        // Closed as not planned: acknowledged; closed as a duplicate: never the drift issue.
        let mut not_planned = issues[0].clone();
        not_planned["state_reason"] = json!("not_planned");
        assert_eq!(existing_issue(&[not_planned.clone()], &me, None).map(|e| e.acknowledged), Some(true));
        // Closed as completed is fixed, not acknowledged; so is an open one whatever its reason
        // says (reopened after being closed as not planned).
        assert_eq!(existing_issue(&issues[..1], &me, None).map(|e| e.acknowledged), Some(false));
        not_planned["state"] = json!("open");
        assert_eq!(existing_issue(&[not_planned], &me, None).map(|e| e.acknowledged), Some(false));
        let mut duplicate = issue(8, "me", "closed", &body);
        duplicate["state_reason"] = json!("duplicate");
        assert_eq!(existing_issue(&[issues[1].clone(), duplicate], &me, None).map(|e| e.number), Some(5));
        // Two runs at once opened 5 and 10: 10 is the duplicate, 5 none.
        let both = [issues[1].clone(), issue(10, "me", "open", &body)];
        assert_eq!(duplicated(&both, &me, None, 10), Some(5));
        assert_eq!(duplicated(&both, &me, None, 5), None);
        assert_eq!(drift_issue_path("drift/aws", &Me::ActionsBot), "/issues?state=all&per_page=100&labels=drift%2Faws");
        assert_eq!(
            drift_issue_path("drift", &Me::Login("a@b:c".to_owned())),
            "/issues?state=all&per_page=100&labels=drift&creator=a%40b%3Ac"
        );
        assert_eq!(query("a b&c"), "a%20b%26c");
    }

    #[test]
    fn a_status_description_is_cut_at_140_characters() {
        assert_eq!(status_description("short"), "short");
        let long = "é".repeat(150);
        assert_eq!(status_description(&long).chars().count(), 140);
    }

    #[test]
    fn the_body_keeps_its_markers_and_a_long_list_is_cut_at_fifty() {
        assert_eq!(hidden("x"), "<!-- x -->");
        assert_eq!(encode("Az09._-:/@[]"), "Az09._-:/@[]");
        assert_eq!(encode("a b>"), "a%20b%3E");
        let items = vec!["ab".to_owned()];
        let body = Drift { items: items.clone(), report: "R".to_owned() }.body(None);
        assert_eq!(body, "<!-- reconcile:drift -->\n<!-- reconcile:drift-items ab -->\nR");
        // The overhead is a sealed body's, the report aside.
        let sealed = Drift { items: items.clone(), report: "R".to_owned() }.body(Some((b"key", 123_456_789)));
        assert_eq!(Drift::overhead(&items), sealed.len() - 1);
        // Sixteen KiB of items are kept whole.
        let wide = vec!["x".repeat(16_000)];
        assert_eq!(
            stored_items(&Drift { items: wide.clone(), report: String::new() }.body(None)),
            Some(Items::All(wide))
        );
        let listed = |n: usize| changes(None, &(0..n).map(|i| format!("i{i}")).collect::<Vec<_>>());
        assert!(!listed(50).contains("more"), "{}", listed(50));
        assert!(listed(51).ends_with("\n- and 1 more"), "{}", listed(51));
        assert_eq!(listed(51).matches("\n- `").count(), 49 + 1);
    }
}
