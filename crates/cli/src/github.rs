//! The GitHub side of a run: whether desired.toml has one, whether there is a token to check it
//! with (`GITHUB_TOKEN`, or `GH_TOKEN` as the `gh` CLI reads it), and where its API is
//! (`GITHUB_API_URL`, which GitHub Actions sets; api.github.com otherwise).

use reconcile_core::address::{Address, ResourceKind};
use reconcile_core::desired::Desired;
use reconcile_core::engine::DesiredResources;
use reconcile_core::{Finding, Severity};

use crate::error::CliError;

pub(crate) enum GithubSide {
    /// No `[github]` in desired.toml.
    Undeclared,
    /// `[github]`, but no token: planned without it, saying so.
    Unchecked,
    Checked(reconcile_github::Api),
}

impl GithubSide {
    pub(crate) fn connect(desired: &Desired) -> Result<GithubSide, CliError> {
        let Some(github) = &desired.github else { return Ok(GithubSide::Undeclared) };
        let token = ["GITHUB_TOKEN", "GH_TOKEN"]
            .into_iter()
            .find_map(|name| std::env::var(name).ok().filter(|token| !token.trim().is_empty()));
        let Some(token) = token else { return Ok(GithubSide::Unchecked) };
        let api = std::env::var("GITHUB_API_URL").unwrap_or_else(|_| "https://api.github.com".to_owned());
        let api = reconcile_github::Api::new(&api, token.trim(), &github.owner, &github.repository)
            .map_err(|error| CliError::Input(vec![error.to_string()]))?;
        Ok(GithubSide::Checked(api))
    }

    /// The reconciler, when there is a token.
    pub(crate) fn reconciler(&self, desired: &Desired) -> Option<Box<dyn reconcile_core::Reconciler>> {
        let GithubSide::Checked(api) = self else { return None };
        let webhook = desired
            .codebuild
            .projects
            .iter()
            .find(|p| p.webhook.is_some())
            .map(|p| Address::new(ResourceKind::CodebuildWebhook, &p.key));
        Some(Box::new(reconcile_github::GithubReconciler::new(api.clone(), &desired.region, webhook)))
    }

    /// Leaves the GitHub resources out when they cannot be checked, and makes `NIGHTLY_ENABLED`,
    /// the nightly's on switch, wait for every other change of the plan, AWS and GitHub: it is
    /// skipped when any of them fails.
    pub(crate) fn shape(&self, resources: &mut DesiredResources) {
        if matches!(self, GithubSide::Unchecked) {
            resources.retain(|address, _| !is_github(address.kind));
        }
        let last = Address::new(ResourceKind::GithubVariable, reconcile_core::variables::NIGHTLY_ENABLED);
        let others: Vec<Address> = resources.keys().filter(|address| **address != last).cloned().collect();
        if let Some(switch) = resources.get_mut(&last) {
            switch.depends_on = others;
        }
    }

    /// The one-line warning a plan carries when the GitHub side was not checked.
    pub(crate) fn finding(&self) -> Option<Finding> {
        matches!(self, GithubSide::Unchecked).then(|| Finding {
            code: reconcile_github::NOT_CHECKED.to_owned(),
            severity: Severity::Warning,
            address: None,
            message: "the GitHub side ([github]: variables, fork approval, workflow permissions, the runner's hook) \
                      was not checked: set GITHUB_TOKEN or GH_TOKEN"
                .to_owned(),
            overridden_by: None,
        })
    }
}

fn is_github(kind: ResourceKind) -> bool {
    matches!(
        kind,
        ResourceKind::GithubVariable | ResourceKind::GithubForkPrApproval | ResourceKind::GithubWorkflowPermissions
    )
}
