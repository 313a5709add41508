//! The runner's role policies, derived from the rest of the desired state: its inline policy
//! (what each crate says a build needs of its resources, [`Access::runner`]: push and pull on
//! the declared repositories, the compiler cache's objects, the logs of the projects that run
//! as the role) and its permissions boundary (the most the role may ever do, whatever its
//! inline policy says). Never a hand-kept list of ARNs.
//!
//! Too long for IAM's limit, the inline policy is asked for again in fewer characters (ECR's
//! crate then groups the repositories a build pushes to by name prefix; those it may make stay
//! named exactly); the boundary is what a crate grants whatever is declared (ECR's: the whole
//! registry, by this deployment's mark).
//!
//! [`Access::runner`]: reconcile_core::describe::Access::runner

use reconcile_core::Account;
use reconcile_core::describe::{Catalog, Runner};
use reconcile_core::desired::Desired;

use crate::section::Role;
use reconcile_core::json::to_compact;
use serde_json::{Value, json};

/// IAM's limit on the total size of a role's inline policies, in characters without whitespace.
pub const INLINE_POLICY_LIMIT: usize = 10_240;

/// IAM's limit on a managed policy (a permissions boundary), in characters without whitespace.
pub const MANAGED_POLICY_LIMIT: usize = 6_144;

/// The derived inline policy of `role`, or why it cannot be one.
pub fn inline_policy(desired: &Desired, catalog: &Catalog, role: &Role, account: &Account) -> Result<Value, String> {
    let said = |over_by| build(desired, catalog, account, &Runner { role: &role.key, boundary: false, over_by });
    let whole = said(0);
    // Too long as each crate says it first: each says it again in fewer characters where it can
    // (repositories sharing a name prefix as one `prefix*` pattern), until it fits.
    let over_by = size(&whole).saturating_sub(INLINE_POLICY_LIMIT);
    let policy = if over_by == 0 { whole } else { said(over_by) };
    let n_characters = size(&policy);
    if !fits(n_characters) {
        return Err(format!(
            "the derived inline policy `{}` of role `{}` would be {n_characters} characters, over IAM's limit of \
             {INLINE_POLICY_LIMIT} for a role's inline policies, with the repositories a build pushes to grouped by \
             every shared name prefix (those it may make are named exactly); split the repositories across roles",
            role.inline_policy(),
            role.name,
        ));
    }
    Ok(policy)
}

/// The permissions boundary of `role`: what its inline policy grants, with the repositories by
/// this deployment's mark over the region's whole registry, so that it never changes when a
/// repository is declared. Only an administrator puts it; the role is
/// never without it.
pub fn boundary_policy(desired: &Desired, catalog: &Catalog, role: &Role, account: &Account) -> Result<Value, String> {
    let policy = build(desired, catalog, account, &Runner { role: &role.key, boundary: true, over_by: 0 });
    let n_characters = size(&policy);
    if n_characters > MANAGED_POLICY_LIMIT {
        return Err(format!(
            "the derived permissions boundary `{}` of role `{}` would be {n_characters} characters, over IAM's limit \
             of {MANAGED_POLICY_LIMIT} for a managed policy",
            boundary_name(role),
            role.name
        ));
    }
    Ok(policy)
}

/// The name of the managed policy that is `role`'s permissions boundary.
pub fn boundary_name(role: &Role) -> String {
    format!("{}-boundary", role.name)
}

/// Whether a policy of this many characters is within IAM's limit for a role's inline policies.
fn fits(n_characters: usize) -> bool {
    n_characters <= INLINE_POLICY_LIMIT
}

/// Size as IAM counts it: the compact form, which has no whitespace outside strings.
pub fn size(policy: &Value) -> usize {
    to_compact(policy).chars().count()
}

/// The crates whose statements a runner's policies begin with, in the order a build needs them:
/// it logs in to the registry and pulls and pushes, then reads and writes the compiler cache. Any
/// other crate's follow in the catalog's order. Named, not ranked, so that a policy keeps its
/// order whatever the order of the catalog, whose order the CI roles' policies follow.
const RUNNER_FIRST: [&str; 2] = ["ecr", "s3"];

fn build(desired: &Desired, catalog: &Catalog, account: &Account, runner: &Runner<'_>) -> Value {
    let mut crates: Vec<_> = catalog.0.to_vec();
    crates.sort_by_key(|description| {
        RUNNER_FIRST.iter().position(|name| *name == description.name).unwrap_or(RUNNER_FIRST.len())
    });
    let statements: Vec<Value> =
        crates.iter().flat_map(|description| (description.access.runner)(desired, account, runner)).collect();
    json!({ "Version": "2012-10-17", "Statement": statements })
}

#[cfg(test)]
mod tests {
    use reconcile_core::describe::Description;

    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::testing::{CATALOG, described};

    fn desired() -> Desired {
        crate::testing::parse(
            "region = \"us-east-1\"\n[s3.buckets.sccache]\nname = \"rocm-bake-sccache-${account_id}\"\n[iam.roles.codebuild]\nname = \"rocm-bake-codebuild\"\ntrusted_services = [\"codebuild.amazonaws.com\"]\n[ecr.repositories]\npytorch = {}\n",
        )
    }

    fn account() -> Account {
        Account::new("123456789012", "us-east-1")
    }

    #[test]
    fn the_policy_holds_what_each_crate_asks_the_registrys_first() {
        let desired = desired();
        let role = &crate::declared(&desired).roles[0];
        let policy = inline_policy(&desired, &CATALOG, role, &account()).unwrap();
        insta::assert_snapshot!(reconcile_core::json::to_pretty(&policy));
        let boundary = boundary_policy(&desired, &CATALOG, role, &account()).unwrap();
        let resources: Vec<&Value> =
            boundary["Statement"].as_array().unwrap().iter().map(|s| &s["Resource"][0]).collect();
        assert_eq!(resources, [&json!("boundary"), &json!("boundary")], "{boundary}");
    }

    /// A crate whose statement is 12,000 characters long, less what it is asked to save.
    fn long(_: &Desired, _: &Account, runner: &Runner<'_>) -> Vec<Value> {
        vec![json!({ "Sid": "Long", "Resource": ["x".repeat(12_000 - runner.over_by)] })]
    }

    #[test]
    fn an_inline_policy_over_the_limit_is_asked_for_again_saving_exactly_the_excess() {
        static SAVING: Description = described("ecr", &[], long);
        static NEVER: Description =
            described("ecr", &[], |desired, account, _| long(desired, account, &Runner::default()));
        static SAVES: Catalog = Catalog(&[&SAVING]);
        static NEVER_SAVES: Catalog = Catalog(&[&NEVER]);
        let desired = desired();
        let role = &crate::declared(&desired).roles[0];
        let policy = inline_policy(&desired, &SAVES, role, &account()).unwrap();
        assert_eq!(size(&policy), INLINE_POLICY_LIMIT, "the limit itself fits");
        let refused = inline_policy(&desired, &NEVER_SAVES, role, &account()).unwrap_err();
        assert!(
            refused
                .starts_with("the derived inline policy `rocm-bake-codebuild` of role `rocm-bake-codebuild` would be")
                && refused.contains("over IAM's limit of 10240"),
            "{refused}"
        );
    }

    #[test]
    fn the_limit_itself_fits() {
        assert!(fits(INLINE_POLICY_LIMIT));
        assert!(!fits(INLINE_POLICY_LIMIT + 1));
    }

    #[test]
    fn a_boundary_has_a_name_and_a_limit() {
        let desired = desired();
        let role = crate::declared(&desired).roles[0].clone();
        assert_eq!(boundary_name(&role), "rocm-bake-codebuild-boundary");
        // Exactly IAM's limit for a managed policy fits; a character more does not. The boundary
        // grows with what a crate's runner statement says, here a run of `x` of a set length.
        static LENGTH: AtomicUsize = AtomicUsize::new(0);
        static GROWING: Description = described("s3", &[], |_, _, runner| {
            assert!(runner.boundary && runner.role == "codebuild", "{runner:?}");
            vec![json!({ "Sid": "Growing", "Resource": ["x".repeat(LENGTH.load(Ordering::SeqCst))] })]
        });
        static GROWS: Catalog = Catalog(&[&GROWING]);
        let sized = |length: usize| {
            LENGTH.store(length, Ordering::SeqCst);
            boundary_policy(&desired, &GROWS, &role, &account()).map(|policy| size(&policy))
        };
        let at_limit = MANAGED_POLICY_LIMIT - sized(0).unwrap();
        assert_eq!(sized(at_limit), Ok(MANAGED_POLICY_LIMIT));
        let refused = sized(at_limit + 1).unwrap_err();
        assert!(
            refused.contains("`rocm-bake-codebuild-boundary`") && refused.contains("over IAM's limit"),
            "{refused}"
        );
    }
}
