//! How IAM's tests read a desired.toml whose `[ecr]` and `[s3]` other crates read: stand-ins for
//! them, which claim the sections and say what a build needs of the registry and the cache, as
//! the catalog's descriptions do, so a derived policy holds what it takes from other crates.

use std::path::Path;

use reconcile_core::Desired;
use reconcile_core::describe::{Access, Catalog, Description, Runner, RunnerFn};
use reconcile_core::desired::testing::{CODEBUILD, GITHUB};
use reconcile_core::desired::{Claim, testing::stand_in};
use serde_json::{Value, json};

/// A section read by a crate the tests stand in for: accepted as it is, nothing kept.
const fn unread(name: &'static str) -> Claim {
    stand_in(name, Claim::NOTHING)
}

/// A crate named `name` reading `section`, whose builds need what `runner` says.
pub const fn described(name: &'static str, section: &'static [Claim], runner: RunnerFn) -> Description {
    Description {
        name,
        kinds: &[],
        sections: section,
        desired: |_, _, _| Ok(Vec::new()),
        access: Access { runner, ..Access::NONE },
        trail: &[],
        fields: &[],
        terraform: &[],
        generate: reconcile_core::describe::generates_nothing,
        variables: reconcile_core::describe::derives_no_variables,
    }
}

/// One statement that says which policy it is for.
pub fn statement(sid: &str, runner: &Runner) -> Vec<Value> {
    let resource = if runner.boundary { "boundary" } else { "inline" };
    vec![json!({ "Sid": sid, "Effect": "Allow", "Action": ["s3:GetObject"], "Resource": [resource] })]
}

static REGISTRY: Description = described("ecr", &[unread("ecr")], |_, _, runner| statement("TheRegistry", runner));
// Its Sid's length matters to the boundary's size test: every character of a project's name
// counts twice (its log group and the group's streams), so the rest must let the policy's size
// reach IAM's limit exactly.
static CACHE: Description = described("s3", &[unread("s3")], |_, _, runner| statement("TheCachesCrates", runner));

/// The stand-ins, the cache's first: the runner's policy puts the registry's first whatever the
/// catalog's order.
pub static CATALOG: Catalog = Catalog(&[&CACHE, &REGISTRY]);

/// `text` as desired.toml, with IAM's own sections, the stand-ins' and those of GitHub and
/// CodeBuild that IAM's refer to.
pub fn parse(text: &str) -> Desired {
    try_parse(text).expect("a valid desired.toml")
}

/// `text` as desired.toml, as [`parse`] reads it, or every error as printed.
pub fn try_parse(text: &str) -> Result<Desired, String> {
    let mut claims = CATALOG.claims();
    claims.extend([&crate::CLAIM, &crate::CI_CLAIM, &GITHUB, &CODEBUILD]);
    Desired::parse_claimed(Path::new("desired.toml"), text, &claims).map_err(|errors| errors.to_string())
}
