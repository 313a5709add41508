//! `reconcile comment`: the trusted half of planning a pull request. The plan made from a pull
//! request's artifact is kept as one comment on that pull request, and what the pull request's
//! own check and the plan concluded is set as a commit status on its head, for branch
//! protection to require. The pull request is found from the head commit and head repository
//! the `workflow_run` event gives, never from anything the artifact says.

use std::path::PathBuf;

use reconcile_core::markdown::GITHUB_COMMENT_LIMIT;
use reconcile_github::conversation::{Conversation, Outcome};

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
    pub body: PathBuf,
    pub plan_exit_code: u8,
    pub check_conclusion: String,
    pub repository: Option<String>,
}

pub async fn run(request: Request) -> Result<u8, CliError> {
    let input = |why: String| CliError::Input(vec![why]);
    if !(request.head_sha.len() == 40 && request.head_sha.bytes().all(|b| b.is_ascii_hexdigit())) {
        return Err(input(format!(
            "--head-sha: `{}` is not a commit (40 hex digits)",
            request.head_sha.escape_debug()
        )));
    }
    split_repository(&request.head_repository).map_err(|why| input(format!("--head-repository: {why}")))?;
    if !request.check_conclusion.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') {
        return Err(input(format!(
            "--check-conclusion: `{}` is not a conclusion",
            request.check_conclusion.escape_debug()
        )));
    }
    let api = conversation_in(None, request.repository.as_deref(), COMMENT_TOKENS)?;
    // A plan that failed wrote nothing (or less than a plan): the comment says so instead.
    let plan = match crate::files::read_capped(&request.body) {
        Ok(text) if !text.trim().is_empty() && matches!(request.plan_exit_code, 0 | 2 | 3) => text,
        _ => failed_plan(request.plan_exit_code),
    };
    if plan.len() > GITHUB_COMMENT_LIMIT - 64 {
        return Err(input(format!(
            "{}: {} characters, more than a comment holds ({GITHUB_COMMENT_LIMIT})",
            request.body.display(),
            plan.len()
        )));
    }
    let conversation = Conversation::connect(api).await.map_err(failed)?;
    let Some(number) = conversation.pull_request(&request.head_sha, &request.head_repository).await.map_err(failed)?
    else {
        return Err(CliError::Other(anyhow::anyhow!(
            "no open pull request has commit {} of {} as its head (closed, or pushed to since): nothing to comment on",
            request.head_sha,
            request.head_repository
        )));
    };
    let comment = conversation.keep_comment(number, PLAN_MARKER, &plan).await.map_err(failed)?;
    let (state, description) = status(request.plan_exit_code, &request.check_conclusion);
    conversation.set_status(&request.head_sha, state, STATUS_CONTEXT, &description).await.map_err(failed)?;
    let what = match comment {
        Outcome::Created(_) => "commented on",
        Outcome::Updated(_) => "updated the comment on",
        _ => "left the comment as it was on",
    };
    out(&format!(
        "reconcile {what} pull request #{number}; commit status `{STATUS_CONTEXT}`: {state} ({description})\n"
    ))?;
    Ok(exit::OK)
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
}
