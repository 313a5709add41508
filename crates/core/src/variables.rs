//! The repository variables that wire the nightly's GitHub repository to the account: one
//! derivation, for `reconcile outputs` (the lines a person pastes) and for the GitHub
//! reconciler (which sets them).

use crate::desired::Desired;
use crate::reconciler::Account;

/// The variable that turns the nightly on: set last, after every other change succeeded.
pub const NIGHTLY_ENABLED: &str = "NIGHTLY_ENABLED";

/// The derived variables desired.toml implies, in the order they are set, `NIGHTLY_ENABLED`
/// last: `CODEBUILD_PROJECT` only when a project is declared, `NIGHTLY_ARCHES` only when
/// `[nightly] arches` is.
pub fn derived(desired: &Desired, account: &Account) -> Vec<(&'static str, String)> {
    let domain = if account.partition == "aws-cn" { "amazonaws.com.cn" } else { "amazonaws.com" };
    let mut variables = Vec::new();
    if let Some(project) = desired.codebuild.projects.first() {
        variables.push(("CODEBUILD_PROJECT", project.name.clone()));
    }
    variables.push(("ECR_REGISTRY", format!("{}.dkr.ecr.{}.{domain}", account.id, account.region)));
    variables.push(("AWS_REGION", account.region.clone()));
    if let Some(arches) = &desired.nightly.arches {
        variables.push(("NIGHTLY_ARCHES", arches.clone()));
    }
    variables.push((NIGHTLY_ENABLED, "true".to_owned()));
    variables
}
