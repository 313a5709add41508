//! `[github]`: the nightly's GitHub repository. Its repository variables, the fork pull-request
//! approval policy and the default workflow permissions are reconciled like the AWS side; they
//! are what keeps a stranger's pull request off the runner, and they live outside the workflow
//! file.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use toml::Spanned;

use super::{DesiredError, GITHUB_VARIABLE_LIMIT, Locator};

/// The repository variables the nightly reads, derived from the rest of desired.toml and the
/// account, in the order they are set: `NIGHTLY_ENABLED`, the off switch, last.
pub const DERIVED_VARIABLES: [&str; 8] = [
    "CODEBUILD_PROJECT",
    "ECR_REGISTRY",
    "AWS_REGION",
    "NIGHTLY_ARCHES",
    "RECONCILE_PLAN_ROLE_ARN",
    "RECONCILE_DRIFT_ROLE_ARN",
    "RECONCILE_APPLY_ROLE_ARN",
    "NIGHTLY_ENABLED",
];

/// GitHub's three fork pull-request approval policies, most permissive first.
pub const APPROVAL_POLICIES: [&str; 3] =
    ["first_time_contributors_new_to_github", "first_time_contributors", "all_external_contributors"];

#[derive(Debug, Clone, PartialEq)]
pub struct Github {
    pub owner: String,
    pub repository: String,
    /// Which fork pull requests wait for a maintainer's approval before any workflow runs:
    /// `all_external_contributors` unless desired.toml says otherwise, because GitHub's default
    /// lets an author who had one pull request merged run anything after it, unapproved.
    pub fork_pr_approval: String,
    /// `read` or `write`: what `GITHUB_TOKEN` may do in a workflow that does not say.
    pub default_workflow_permissions: String,
    /// Whether a workflow's `GITHUB_TOKEN` may approve pull requests.
    pub actions_can_approve_pull_requests: bool,
    /// Variables declared by hand, beside the derived ones: name (as GitHub stores it, upper
    /// case) to value.
    pub variables: BTreeMap<String, String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGithub {
    /// The nightly's repository, `owner/name`.
    #[schemars(with = "String")]
    repository: Spanned<String>,
    /// `all_external_contributors` (default), `first_time_contributors` or
    /// `first_time_contributors_new_to_github`.
    #[schemars(with = "Option<String>")]
    fork_pr_approval: Option<Spanned<String>>,
    /// `read` (default) or `write`.
    #[schemars(with = "Option<String>")]
    default_workflow_permissions: Option<Spanned<String>>,
    /// Default false.
    actions_can_approve_pull_requests: Option<bool>,
    /// More repository variables, `NAME = "value"`.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, String>")]
    variables: BTreeMap<Spanned<String>, Spanned<String>>,
}

pub(super) fn convert(locate: &Locator<'_>, raw: &RawGithub, errors: &mut Vec<DesiredError>) -> Github {
    let (owner, repository) = match raw.repository.get_ref().split_once('/') {
        Some((owner, name)) if is_github_name(owner) && is_github_name(name) => (owner.to_owned(), name.to_owned()),
        _ => {
            errors.push(locate.error(
                Some(raw.repository.span()),
                "github.repository",
                format!("`{}` is not a GitHub repository of the form `owner/name`", raw.repository.get_ref()),
            ));
            (String::new(), String::new())
        }
    };
    let one_of = |value: &Option<Spanned<String>>, key: &str, allowed: &[&str], default: &str| match value {
        Some(value) if !allowed.contains(&value.get_ref().as_str()) => {
            let message = format!("`{}` is not one of {}", value.get_ref(), allowed.join(", "));
            (default.to_owned(), Some(locate.error(Some(value.span()), &format!("github.{key}"), message)))
        }
        Some(value) => (value.get_ref().clone(), None),
        None => (default.to_owned(), None),
    };
    let (fork_pr_approval, error) =
        one_of(&raw.fork_pr_approval, "fork_pr_approval", &APPROVAL_POLICIES, "all_external_contributors");
    errors.extend(error);
    let (default_workflow_permissions, error) =
        one_of(&raw.default_workflow_permissions, "default_workflow_permissions", &["read", "write"], "read");
    errors.extend(error);

    let mut variables = BTreeMap::new();
    for (name, value) in &raw.variables {
        let key = format!("github.variables.{}", name.get_ref());
        // GitHub's rules: letters, digits and underscores, not starting with a digit or with
        // GITHUB_; names are case-insensitive and stored in upper case.
        let upper = name.get_ref().to_ascii_uppercase();
        let problem = if upper.is_empty()
            || upper.starts_with(|c: char| c.is_ascii_digit())
            || !upper.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            Some("a variable name has only letters, digits and underscores, and does not start with a digit".to_owned())
        } else if upper.starts_with("GITHUB_") {
            Some("GitHub reserves variable names that start with GITHUB_".to_owned())
        } else if DERIVED_VARIABLES.contains(&upper.as_str()) {
            Some(format!("{upper} is derived from the rest of desired.toml; it cannot be declared here too"))
        } else if variables.contains_key(&upper) {
            Some(format!("{upper} is declared twice (GitHub variable names ignore case)"))
        } else if value.get_ref().len() > GITHUB_VARIABLE_LIMIT {
            Some(format!("a repository variable holds at most {GITHUB_VARIABLE_LIMIT} bytes"))
        } else {
            None
        };
        match problem {
            Some(problem) => errors.push(locate.error(Some(name.span()), &key, problem)),
            None => {
                variables.insert(upper, value.get_ref().clone());
            }
        }
    }
    Github {
        owner,
        repository,
        fork_pr_approval,
        default_workflow_permissions,
        actions_can_approve_pull_requests: raw.actions_can_approve_pull_requests.unwrap_or(false),
        variables,
    }
}

/// GitHub's owner and repository names: letters, digits, `-`, `_` and `.`, at most 100.
fn is_github_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && name != "."
        && name != ".."
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}
