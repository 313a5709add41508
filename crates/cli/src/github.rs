//! The GitHub side of a run: whether desired.toml has one, whether there is a token to check it
//! with (`GITHUB_TOKEN`, or `GH_TOKEN` as the `gh` CLI reads it), and where its API is
//! (`GITHUB_API_URL`, which GitHub Actions sets; api.github.com otherwise).

use reconcile_core::desired::Desired;
use reconcile_core::{Finding, Reconciler};
use reconcile_github::Api;

use crate::error::CliError;

/// Where the drift issue's token comes from, first found first: a token of its own (the drift
/// job's workflow token, which may write issues), else the one the GitHub side reads with.
pub const ISSUE_TOKENS: &[&str] = &["RECONCILE_ISSUE_TOKEN", "GITHUB_TOKEN", "GH_TOKEN"];

/// Where a pull request comment's token comes from.
pub const COMMENT_TOKENS: &[&str] = &["GITHUB_TOKEN", "GH_TOKEN"];

/// The first of `names` set in the environment to something.
fn token(names: &[&str]) -> Option<String> {
    names.iter().find_map(|name| std::env::var(name).ok().map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()))
}

/// The API root: `GITHUB_API_URL` (which GitHub Actions sets), api.github.com otherwise.
fn api_root() -> String {
    std::env::var("GITHUB_API_URL").unwrap_or_else(|_| "https://api.github.com".to_owned())
}

/// The API of the repository where people are told things (a pull request comment, the drift
/// issue): `repository`, else `$GITHUB_REPOSITORY` (the workflow's own), else desired.toml's
/// `[github]`; with the first token of `tokens` that is set.
pub fn conversation(desired: &Desired, repository: Option<&str>, tokens: &[&str]) -> Result<Api, CliError> {
    conversation_in(Some(desired), repository, tokens)
}

/// The same, with no desired.toml to fall back on.
pub fn conversation_in(desired: Option<&Desired>, repository: Option<&str>, tokens: &[&str]) -> Result<Api, CliError> {
    let from_env = std::env::var("GITHUB_REPOSITORY").ok().filter(|r| !r.is_empty());
    let declared = desired.and_then(reconcile_github::declared).map(|g| format!("{}/{}", g.owner, g.repository));
    let Some(repository) = repository.map(str::to_owned).or(from_env).or(declared) else {
        return Err(CliError::Input(vec![
            "no GitHub repository to write to: give --repository, or set GITHUB_REPOSITORY".to_owned(),
        ]));
    };
    let (owner, name) = split_repository(&repository).map_err(|why| CliError::Input(vec![why]))?;
    let Some(token) = token(tokens) else {
        return Err(CliError::Input(vec![format!("no GitHub token to write with: set {}", tokens.join(" or "))]));
    };
    Api::new(&api_root(), &token, owner, name)
        .map(|api| api.with_retry_base(crate::aws::retry_base()))
        .map_err(|error| CliError::Input(vec![error.to_string()]))
}

/// The shortest key that seals the drift issue: 128 bits, as hex.
const ISSUE_KEY_LENGTH: usize = 32;

/// The key that seals the drift issue (`RECONCILE_ISSUE_KEY`, a secret only the drift workflow
/// is given), if set; one too short to keep a forger out is refused before any call.
pub fn issue_key() -> Result<Option<Vec<u8>>, CliError> {
    match std::env::var("RECONCILE_ISSUE_KEY").ok().filter(|key| !key.is_empty()) {
        None => Ok(None),
        Some(key) if key.len() < ISSUE_KEY_LENGTH => Err(CliError::Input(vec![format!(
            "RECONCILE_ISSUE_KEY is {} characters: a key that seals the drift issue needs at least \
             {ISSUE_KEY_LENGTH} random ones (`openssl rand -hex 32`)",
            key.len()
        )])),
        Some(key) => Ok(Some(key.into_bytes())),
    }
}

/// `owner/name` as GitHub allows them: an owner of letters, digits and `-` (not first), a name of
/// letters, digits, `-`, `_` and `.` (not `.` or `..`).
pub fn split_repository(repository: &str) -> Result<(&str, &str), String> {
    let owner_ok = |p: &str| {
        !p.is_empty()
            && p.len() <= 39
            && !p.starts_with('-')
            && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
    };
    let name_ok =
        |p: &str| !p.is_empty() && p.len() <= 100 && p.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    match repository.split_once('/') {
        Some((owner, name)) if owner_ok(owner) && name_ok(name) && name != "." && name != ".." => Ok((owner, name)),
        _ => Err(format!("`{}` is not a GitHub repository (owner/name)", repository.escape_debug())),
    }
}

pub enum GithubSide {
    /// No `[github]` in desired.toml.
    Undeclared,
    /// `[github]`, but no token: planned without it, saying so.
    Unchecked,
    /// `[github]` names another repository than the one this run plans for
    /// (`RECONCILE_GITHUB_REPOSITORY`): planned without it, saying so.
    Elsewhere {
        declared: String,
        expected: String,
    },
    Checked(reconcile_github::Api),
}

impl GithubSide {
    pub fn connect(desired: &Desired) -> Result<GithubSide, CliError> {
        let Some(github) = reconcile_github::declared(desired) else { return Ok(GithubSide::Undeclared) };
        // A pull request's desired.toml may name any repository: the trusted workflow that plans
        // it says which one its token is for, and the token is used on no other.
        let declared = format!("{}/{}", github.owner, github.repository);
        if let Some(expected) = std::env::var("RECONCILE_GITHUB_REPOSITORY").ok().filter(|r| !r.is_empty())
            && !expected.eq_ignore_ascii_case(&declared)
        {
            return Ok(GithubSide::Elsewhere { declared, expected });
        }
        let Some(token) = token(COMMENT_TOKENS) else { return Ok(GithubSide::Unchecked) };
        let api = reconcile_github::Api::new(&api_root(), &token, &github.owner, &github.repository)
            .map_err(|error| CliError::Input(vec![error.to_string()]))?
            .with_retry_base(crate::aws::retry_base());
        Ok(GithubSide::Checked(api))
    }

    /// Whether the GitHub resources are planned: not when they cannot be checked.
    pub fn is_checked(&self) -> bool {
        !matches!(self, GithubSide::Unchecked | GithubSide::Elsewhere { .. })
    }

    /// The reconciler, when there is a token.
    pub fn reconciler(&self, desired: &Desired) -> Option<Box<dyn Reconciler>> {
        let GithubSide::Checked(api) = self else { return None };
        let hooks_to = reconcile_codebuild::webhooks_url(&desired.region);
        Some(Box::new(reconcile_github::GithubReconciler::new(api.clone(), desired, &hooks_to)))
    }

    /// The one-line warning a plan carries when the GitHub side was not checked.
    pub fn finding(&self) -> Option<Finding> {
        match self {
            GithubSide::Unchecked => Some(reconcile_github::not_checked()),
            GithubSide::Elsewhere { declared, expected } => {
                Some(reconcile_github::not_this_repository(declared, expected))
            }
            GithubSide::Undeclared | GithubSide::Checked(_) => None,
        }
    }
}
