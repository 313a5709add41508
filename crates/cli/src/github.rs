//! The GitHub side of a run: whether desired.toml has one, whether there is a token to check it
//! with (`GITHUB_TOKEN`, or `GH_TOKEN` as the `gh` CLI reads it), and where its API is
//! (`GITHUB_API_URL`, which GitHub Actions sets; api.github.com otherwise).

use reconcile_core::desired::Desired;
use reconcile_core::{Finding, Reconciler};

use crate::error::CliError;

pub enum GithubSide {
    /// No `[github]` in desired.toml.
    Undeclared,
    /// `[github]`, but no token: planned without it, saying so.
    Unchecked,
    Checked(reconcile_github::Api),
}

impl GithubSide {
    pub fn connect(desired: &Desired) -> Result<GithubSide, CliError> {
        let Some(github) = &desired.github else { return Ok(GithubSide::Undeclared) };
        let token = ["GITHUB_TOKEN", "GH_TOKEN"]
            .into_iter()
            .find_map(|name| std::env::var(name).ok().filter(|token| !token.trim().is_empty()));
        let Some(token) = token else { return Ok(GithubSide::Unchecked) };
        let api = std::env::var("GITHUB_API_URL").unwrap_or_else(|_| "https://api.github.com".to_owned());
        let api = reconcile_github::Api::new(&api, token.trim(), &github.owner, &github.repository)
            .map_err(|error| CliError::Input(vec![error.to_string()]))?
            .with_retry_base(crate::aws::retry_base());
        Ok(GithubSide::Checked(api))
    }

    /// Whether the GitHub resources are planned: not when they cannot be checked.
    pub fn is_checked(&self) -> bool {
        !matches!(self, GithubSide::Unchecked)
    }

    /// The reconciler, when there is a token.
    pub fn reconciler(&self, desired: &Desired) -> Option<Box<dyn Reconciler>> {
        let GithubSide::Checked(api) = self else { return None };
        Some(Box::new(reconcile_github::GithubReconciler::new(api.clone(), desired)))
    }

    /// The one-line warning a plan carries when the GitHub side was not checked.
    pub fn finding(&self) -> Option<Finding> {
        matches!(self, GithubSide::Unchecked).then(reconcile_github::not_checked)
    }
}
