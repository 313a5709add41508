//! `reconcile comment`: the trusted half of planning a pull request. The plan made from a pull
//! request's artifact is kept as one comment on that pull request, and what the pull request's
//! own check and the plan concluded is set as a commit status on its head, for branch
//! protection to require. The pull request is found from the head commit and head repository
//! the `workflow_run` event gives, never from anything the artifact says.

use std::path::PathBuf;

use reconcile_github::conversation::{Conversation, Outcome};
use reconcile_render::comment::GITHUB_COMMENT_LIMIT;

use crate::error::CliError;
use crate::exit;
use crate::github::{COMMENT_TOKENS, conversation_in, split_repository};
use crate::output::out;

/// The marker the plan comment is found by.
pub const PLAN_MARKER: &str = "reconcile:plan";

/// The commit status's context: what branch protection requires.
pub const STATUS_CONTEXT: &str = "reconcile plan";

pub struct Request {
    pub head_sha: String,
    pub head_repository: String,
    /// The plan to comment; `None`: the pull request changes no file reconcile reads.
    pub plan: Option<Planned>,
    pub repository: Option<String>,
}

/// A plan made of the pull request, and what its checks concluded.
pub struct Planned {
    pub body: PathBuf,
    pub plan_exit_code: u8,
    pub check_conclusion: String,
    /// checkov's JSON report on the plan's Terraform view, if a gate ran.
    pub checks: Option<PathBuf>,
}

/// The most failed checks the comment lists one by one; the rest are counted.
const LISTED_CHECKS: usize = 50;

/// The comment's section of policy checks: checkov's counts and its failed checks, each value
/// from the report (written by checkov from a plan the pull request chose) a code span.
/// What could not be read is said, never taken for a pass; at most `room` characters.
fn checks_section(path: &std::path::Path, room: usize) -> String {
    use reconcile_core::markdown::cell;
    let title = "\n#### Policy checks (checkov, on `plan --format terraform-json`)\n\n";
    let text = crate::files::read_capped(path);
    // The gate was expected (a plan was saved) and wrote nothing: it failed or never ran.
    if text.as_ref().map_or_else(|_| !path.exists(), |text| text.trim().is_empty()) {
        return format!(
            "{title}**The policy checks did not report**: checkov's step wrote no report (it failed before one, or \
             did not run; the workflow run says why). No check is known to pass.\n"
        );
    }
    let report = text.and_then(|text| serde_json::from_str::<serde_json::Value>(&text).map_err(|e| e.to_string()));
    let report = match report {
        // One framework's report is an object; several are a list of them.
        Ok(serde_json::Value::Array(reports)) => {
            reports.into_iter().find(|r| r["check_type"] == "terraform_plan").unwrap_or_default()
        }
        Ok(report) => report,
        Err(why) => {
            return format!(
                "{title}**The checks' report could not be read** ({}): no check is known to pass.\n",
                cell(&why)
            );
        }
    };
    let count = |key: &str| report["summary"][key].as_u64().unwrap_or(0);
    let failed: Vec<&serde_json::Value> =
        report["results"]["failed_checks"].as_array().map(|c| c.iter().collect()).unwrap_or_default();
    let mut out = format!(
        "{title}{} resources: {} checks passed, **{} failed**, {} skipped; what the repository's `.checkov.yaml` \
         skips (each with its reason) is not run.\n",
        count("resource_count"),
        count("passed"),
        count("failed"),
        count("skipped")
    );
    if report.get("summary").is_none() {
        out = format!("{title}**The checks' report has no summary**: no check is known to pass.\n");
    }
    if !failed.is_empty() {
        out.push_str("\n| Check | Resource | What it asks |\n|---|---|---|\n");
        for check in failed.iter().take(LISTED_CHECKS) {
            let field = |key: &str| check[key].as_str().unwrap_or_default().to_owned();
            out.push_str(&format!(
                "| {} | {} | {} |\n",
                cell(&field("check_id")),
                cell(&field("resource_address")),
                cell(&field("check_name"))
            ));
        }
        if failed.len() > LISTED_CHECKS {
            out.push_str(&format!(
                "\n…and {} more: the workflow run has the whole report.\n",
                failed.len() - LISTED_CHECKS
            ));
        }
    }
    if out.len() > room {
        return format!(
            "{title}{} failed: the list is longer than the comment holds; the workflow run has it.\n",
            count("failed")
        );
    }
    out
}

/// A commit as GitHub names one: 40 hex digits.
pub fn check_commit(flag: &str, sha: &str) -> Result<(), CliError> {
    if sha.len() == 40 && sha.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(());
    }
    Err(CliError::Input(vec![format!("{flag}: `{}` is not a commit (40 hex digits)", sha.escape_debug())]))
}

/// `reconcile comment`: a plan to post only when all of it was given.
pub async fn exec(args: crate::args::CommentArgs) -> Result<u8, CliError> {
    let crate::args::CommentArgs {
        head_sha,
        head_repository,
        body,
        plan_exit_code,
        check_conclusion,
        repository,
        checks,
        unchanged,
    } = args;
    let plan = match (unchanged, body, plan_exit_code, check_conclusion) {
        (false, Some(body), Some(plan_exit_code), Some(check_conclusion)) => {
            Some(Planned { body, plan_exit_code, check_conclusion, checks })
        }
        _ => None,
    };
    run(Request { head_sha, head_repository, plan, repository }).await
}

pub async fn run(request: Request) -> Result<u8, CliError> {
    let input = |why: String| CliError::Input(vec![why]);
    check_commit("--head-sha", &request.head_sha)?;
    split_repository(&request.head_repository).map_err(|why| input(format!("--head-repository: {why}")))?;
    if let Some(planned) = &request.plan
        && !planned.check_conclusion.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
    {
        return Err(input(format!(
            "--check-conclusion: `{}` is not a conclusion",
            planned.check_conclusion.escape_debug()
        )));
    }
    let api = conversation_in(None, request.repository.as_deref(), COMMENT_TOKENS)?;
    let plan = request.plan.as_ref().map(comment_body).transpose()?;
    let conversation = Conversation::connect(api).await.map_err(failed)?;
    let head = conversation.pull_request(&request.head_sha, &request.head_repository).await.map_err(failed)?;
    let Some(number) = head.number else {
        return Err(CliError::Other(anyhow::anyhow!(
            "no open pull request has commit {} of {} as its head (closed, or pushed to since): nothing to comment on",
            request.head_sha,
            request.head_repository
        )));
    };
    // A status is the commit's: with another pull request on the same commit it would be theirs
    // too (a fork can point a branch at any commit of the network), so none is set, and both
    // comments say why.
    let sharing = head.sharing.iter().map(|n| format!("#{n}")).collect::<Vec<_>>().join(", ");
    let shared = format!(
        "**No `{STATUS_CONTEXT}` status was set**: pull request {sharing} has this same head commit from another \
         repository, and a commit status belongs to every pull request of the commit. Push a commit of this pull \
         request's own to get one.\n\n"
    );
    let what = match (&plan, sharing.is_empty()) {
        (Some(plan), shared_head) => {
            let body = match shared_head {
                true => plan.clone(),
                false if shared.len() + plan.len() <= GITHUB_COMMENT_LIMIT - 64 => format!("{shared}{plan}"),
                false => format!(
                    "{shared}The plan is longer than a comment holds beside this note: the workflow run has it.\n"
                ),
            };
            match conversation.keep_comment(number, PLAN_MARKER, &body).await.map_err(failed)? {
                Outcome::Created(_) => "commented on",
                Outcome::Updated(_) => "updated the comment on",
                _ => "left the comment as it was on",
            }
        }
        (None, true) => "left any comment as it was on",
        (None, false) => {
            conversation.keep_comment(number, PLAN_MARKER, &shared).await.map_err(failed)?;
            "commented on"
        }
    };
    if !sharing.is_empty() {
        out(&format!(
            "reconcile {what} pull request #{number}; no commit status: pull request {sharing} from another \
             repository has the same head commit\n"
        ))?;
        return Ok(exit::OK);
    }
    let (state, description) = match &request.plan {
        Some(planned) => status(planned.plan_exit_code, &planned.check_conclusion),
        None => ("success", "no reconcile files changed".to_owned()),
    };
    conversation.set_status(&request.head_sha, state, STATUS_CONTEXT, &description).await.map_err(failed)?;
    out(&format!(
        "reconcile {what} pull request #{number}; commit status `{STATUS_CONTEXT}`: {state} ({description})\n"
    ))?;
    Ok(exit::OK)
}

/// The comment's plan: the plan's Markdown, with checkov's failed checks after it; a plan that
/// failed wrote nothing (or less than a plan), and the comment says so instead.
fn comment_body(planned: &Planned) -> Result<String, CliError> {
    let mut text = match crate::files::read_capped(&planned.body) {
        Ok(text) if !text.trim().is_empty() && matches!(planned.plan_exit_code, 0 | 2 | 3) => text,
        _ => failed_plan(planned.plan_exit_code),
    };
    if let Some(path) = &planned.checks {
        let room = GITHUB_COMMENT_LIMIT.saturating_sub(text.len() + 64);
        text.push_str(&checks_section(path, room));
    }
    if text.len() > GITHUB_COMMENT_LIMIT - 64 {
        return Err(CliError::Input(vec![format!(
            "{}: {} characters, more than a comment holds ({GITHUB_COMMENT_LIMIT})",
            planned.body.display(),
            text.len()
        )]));
    }
    Ok(text)
}

/// The commit status for a plan's exit code and the pull request's own check.
pub fn status(plan_exit_code: u8, check_conclusion: &str) -> (&'static str, String) {
    let plan = match plan_exit_code {
        exit::OK => "no changes",
        exit::CHANGES => "changes to review",
        exit::REFUSED => "refused by a safety check",
        _ => "the plan failed",
    };
    let checked = check_conclusion == "success";
    let state = if checked && matches!(plan_exit_code, exit::OK | exit::CHANGES) { "success" } else { "failure" };
    let description = if checked {
        format!("plan: {plan}")
    } else {
        format!("check: {check_conclusion} (validate, declare --check); plan: {plan}")
    };
    (state, description)
}

/// What the comment says when there is no plan to show.
fn failed_plan(code: u8) -> String {
    let run = match (
        std::env::var("GITHUB_SERVER_URL"),
        std::env::var("GITHUB_REPOSITORY"),
        std::env::var("GITHUB_RUN_ID"),
    ) {
        (Ok(server), Ok(repository), Ok(run))
            if run.bytes().all(|b| b.is_ascii_digit()) && split_repository(&repository).is_ok() =>
        {
            format!(" ({server}/{repository}/actions/runs/{run})")
        }
        _ => String::new(),
    };
    format!(
        "### reconcile plan\n\n**reconcile could not plan this pull request** (exit {code}): the workflow run's log \
         says why{}.\n",
        reconcile_core::markdown::prose(&run)
    )
}

fn failed(error: reconcile_core::ReconcileError) -> CliError {
    CliError::Other(anyhow::Error::new(error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_fails_unless_the_check_passed_and_the_plan_could_be_made() {
        assert_eq!(status(0, "success"), ("success", "plan: no changes".to_owned()));
        assert_eq!(status(2, "success"), ("success", "plan: changes to review".to_owned()));
        assert_eq!(status(3, "success"), ("failure", "plan: refused by a safety check".to_owned()));
        assert_eq!(status(1, "success"), ("failure", "plan: the plan failed".to_owned()));
        assert_eq!(
            status(2, "failure"),
            ("failure", "check: failure (validate, declare --check); plan: changes to review".to_owned())
        );
    }

    #[test]
    fn the_checks_section_quotes_every_value_of_the_report_and_never_takes_a_missing_one_for_a_pass() {
        let dir = tempfile::tempdir().unwrap();
        let report = dir.path().join("checks.json");
        let hostile = serde_json::json!({
            "check_type": "terraform_plan",
            "summary": { "resource_count": 3, "passed": 5, "failed": 2, "skipped": 0 },
            "results": { "failed_checks": [
                { "check_id": "CKV_AWS_163", "check_name": "Ensure | <b>x</b>", "resource_address": "aws_ecr_repository.repository[\"a`b\"]" },
                { "check_id": "CKV_X", "check_name": "[link](https://evil.example)", "resource_address": "r" },
            ]},
        });
        std::fs::write(&report, serde_json::json!([hostile]).to_string()).unwrap();
        let section = checks_section(&report, 10_000);
        assert!(section.contains("3 resources: 5 checks passed, **2 failed**"), "{section}");
        assert!(
            section.contains("| `CKV_AWS_163` | ``aws_ecr_repository.repository[\"a`b\"]`` | `Ensure \\| <b>x</b>` |"),
            "{section}"
        );
        assert!(section.contains("| `[link](https://evil.example)` |"), "{section}");
        // Cut to the room the comment has.
        assert!(checks_section(&report, 100).contains("2 failed: the list is longer than the comment holds"));
        // Unreadable, or not a report: said, never a pass.
        std::fs::write(&report, "not json").unwrap();
        assert!(checks_section(&report, 10_000).contains("**The checks' report could not be read**"));
        std::fs::write(&report, "{}").unwrap();
        assert!(checks_section(&report, 10_000).contains("**The checks' report has no summary**"));
        // Expected and not written (an empty file, or none): the gate did not report.
        std::fs::write(&report, "\n").unwrap();
        assert!(checks_section(&report, 10_000).contains("**The policy checks did not report**"));
        std::fs::remove_file(&report).unwrap();
        assert!(checks_section(&report, 10_000).contains("**The policy checks did not report**"));
    }
}
