//! The repository variables that wire the nightly's GitHub repository to the account: one
//! derivation, for `reconcile outputs` (the lines a person pastes) and for the GitHub
//! reconciler (which sets them).

use crate::desired::Desired;
use crate::reconciler::Account;

/// The variable that turns the nightly on: set last, after every other change succeeded.
pub const NIGHTLY_ENABLED: &str = "NIGHTLY_ENABLED";

/// The derived variables desired.toml implies, in the order they are set, `NIGHTLY_ENABLED`
/// last: `CODEBUILD_PROJECT` only when a project is declared, `NIGHTLY_ARCHES` only when
/// `[nightly] arches` is, the CI roles' ARNs (`RECONCILE_PLAN_ROLE_ARN`, ...) only when `[ci]`
/// is.
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
    for role in desired.ci.iter().flat_map(|ci| &ci.roles) {
        let arn = format!("arn:{}:iam::{}:role/{}", account.partition, account.id, role.name);
        variables.push((role.purpose.variable(), arn));
    }
    variables.push((NIGHTLY_ENABLED, desired.nightly.enabled.to_string()));
    variables
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn desired(extra: &str) -> Desired {
        let text = format!(
            "region = \"cn-north-1\"\n{extra}\n[iam.roles.codebuild]\nname = \"r\"\ntrusted_services = \
             [\"codebuild.amazonaws.com\"]\npolicy_name = \"p\"\n[codebuild.projects.runner]\nname = \"rocm-bake\"\n\
             source_location = \"https://github.com/ROCm/rocm-bake\"\nservice_role = \"codebuild\"\nbuild_timeout_hours = 4\n"
        );
        Desired::parse(Path::new("desired.toml"), &text).expect("valid")
    }

    #[test]
    fn the_variables_are_derived_in_order_with_the_switch_last() {
        let account = Account::new("123456789012", "cn-north-1");
        let names = |d: &Desired| derived(d, &account).into_iter().map(|(n, v)| format!("{n}={v}")).collect::<Vec<_>>();
        assert_eq!(
            names(&desired("")),
            [
                "CODEBUILD_PROJECT=rocm-bake",
                "ECR_REGISTRY=123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn",
                "AWS_REGION=cn-north-1",
                "NIGHTLY_ENABLED=true",
            ]
        );
        assert_eq!(
            names(&desired("[nightly]\narches = \"gfx1201\"\nenabled = false\n"))[3..],
            ["NIGHTLY_ARCHES=gfx1201", "NIGHTLY_ENABLED=false"]
        );
        let aws = Account::new("123456789012", "us-east-1");
        assert_eq!(derived(&desired(""), &aws)[1].1, "123456789012.dkr.ecr.us-east-1.amazonaws.com");
    }
}
