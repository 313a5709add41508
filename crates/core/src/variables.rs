//! The repository variables that wire the nightly's GitHub repository to the account: one
//! derivation, for `reconcile outputs` (the lines a person pastes) and for the GitHub
//! reconciler (which sets them).

use crate::describe::Catalog;
use crate::desired::{Desired, Topic};
use crate::reconciler::Account;

/// The repository variables the nightly reads, derived from the rest of desired.toml and the
/// account, in the order they are set: `NIGHTLY_ENABLED`, the off switch, last.
pub const DERIVED_VARIABLES: [&str; 9] = [
    "CODEBUILD_PROJECT",
    "ECR_REGISTRY",
    "AWS_REGION",
    "NIGHTLY_ARCHES",
    "RECONCILE_PLAN_ROLE_ARN",
    "RECONCILE_DRIFT_ROLE_ARN",
    "RECONCILE_APPLY_ROLE_ARN",
    "RECONCILE_PUT_BACK_ROLE_ARN",
    "NIGHTLY_ENABLED",
];

/// The repository variable a maintainer sets to `off` (by hand, no commit) to stop the drift
/// check putting anything back; reconcile reads it from the environment, and never sets it.
pub const PUT_BACK_SWITCH: &str = "RECONCILE_PUT_BACK";

/// The variable that turns the nightly on: set last, after every other change succeeded.
pub const NIGHTLY_ENABLED: &str = "NIGHTLY_ENABLED";

/// The derived variables desired.toml implies, in the order they are set, `NIGHTLY_ENABLED`
/// last: `CODEBUILD_PROJECT` only when a project is declared, `NIGHTLY_ARCHES` only when
/// `[nightly] arches` is, the CI roles' ARNs (`RECONCILE_PLAN_ROLE_ARN`, ...) only when `[ci]`
/// is, and what the catalog's crates derive (`ECR_REGISTRY`, ECR's). Of the other sections, it
/// reads only what they publish ([`Topic::Project`], [`Topic::CiRole`]).
pub fn derived(desired: &Desired, account: &Account, catalog: &Catalog) -> Vec<(&'static str, String)> {
    let mut variables = Vec::new();
    if let Some(project) = desired.referred(Topic::Project).next() {
        variables.push(("CODEBUILD_PROJECT", project.value.clone()));
    }
    for description in catalog.0 {
        variables.extend((description.variables)(desired, account));
    }
    variables.push(("AWS_REGION", account.region.clone()));
    if let Some(arches) = &desired.nightly.arches {
        variables.push(("NIGHTLY_ARCHES", arches.clone()));
    }
    for role in desired.referred(Topic::CiRole) {
        let arn = format!("arn:{}:iam::{}:role/{}", account.partition, account.id, role.value);
        // One of the derived names: a crate cannot publish a variable core does not list.
        if let Some(name) = DERIVED_VARIABLES.iter().find(|name| **name == role.key) {
            variables.push((*name, arn));
        }
    }
    variables.push((NIGHTLY_ENABLED, desired.nightly.enabled.to_string()));
    // In the nightly's order, whoever derived them; a name core does not list is not derived.
    variables.retain(|(name, _)| DERIVED_VARIABLES.contains(name));
    variables.sort_by_key(|(name, _)| DERIVED_VARIABLES.iter().position(|listed| listed == name));
    variables
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    use crate::describe::{Access, Description, derives_no_variables, generates_nothing};
    use crate::desired::testing::{CI, CODEBUILD};

    /// A crate that derives the registry's host, as ECR's does, and one variable no crate may.
    const REGISTRY: Description = Description {
        name: "registry",
        kinds: &[],
        sections: &[],
        desired: |_, _, _| Ok(Vec::new()),
        access: Access::NONE,
        trail: &[],
        fields: &[],
        terraform: &[],
        generate: generates_nothing,
        variables: |_, account| vec![("UNLISTED", String::new()), ("ECR_REGISTRY", format!("{}.registry", account.id))],
    };
    static NONE: Description = Description { name: "none", variables: derives_no_variables, ..REGISTRY };
    static CATALOG: [&Description; 2] = [&NONE, &REGISTRY];

    /// A file with `extra` and the runner project, as CodeBuild's crate publishes it.
    fn desired(extra: &str) -> Desired {
        let text = format!(
            "region = \"cn-north-1\"\n{extra}\n[codebuild.projects.runner]\nname = \"rocm-bake\"\n\
             [codebuild.projects.second]\nname = \"other\"\n"
        );
        Desired::parse_claimed(Path::new("desired.toml"), &text, &[&CODEBUILD, &CI]).expect("valid")
    }

    #[test]
    fn the_variables_are_derived_in_order_with_the_switch_last() {
        let account = Account::new("123456789012", "cn-north-1");
        let derived = |d: &Desired, account: &Account| derived(d, account, &Catalog(&CATALOG));
        let names = |d: &Desired| derived(d, &account).into_iter().map(|(n, v)| format!("{n}={v}")).collect::<Vec<_>>();
        assert_eq!(
            names(&desired("")),
            [
                "CODEBUILD_PROJECT=rocm-bake",
                "ECR_REGISTRY=123456789012.registry",
                "AWS_REGION=cn-north-1",
                "NIGHTLY_ENABLED=true",
            ]
        );
        assert_eq!(
            names(&desired("[nightly]\narches = \"gfx1201\"\nenabled = false\n"))[3..],
            ["NIGHTLY_ARCHES=gfx1201", "NIGHTLY_ENABLED=false"]
        );
        // The CI roles' ARNs, from what `[ci]` publishes, before the switch.
        let ci = desired("[ci]\nplan_role = \"p\"\ndrift_role = \"d\"\napply_role = \"a\"\n");
        assert_eq!(
            names(&ci)[3..],
            [
                "RECONCILE_PLAN_ROLE_ARN=arn:aws-cn:iam::123456789012:role/p",
                "RECONCILE_DRIFT_ROLE_ARN=arn:aws-cn:iam::123456789012:role/d",
                "RECONCILE_APPLY_ROLE_ARN=arn:aws-cn:iam::123456789012:role/a",
                "NIGHTLY_ENABLED=true",
            ]
        );
    }
}
