//! The binary's one list of resource crates. The session's desired resources, the sections of
//! desired.toml, the kinds a saved plan may hold, the AWS backend's reconcilers, the CI roles'
//! policies and drift attribution all go over it: a new resource crate is one line here
//! (docs/architecture.md, "Adding a kind"; the test-only crate in `example.rs` is that
//! walk, checked by the compiler and the tidy checks).

use std::path::Path;

use reconcile_core::Desired;
use reconcile_core::describe::{Catalog, Description};
use reconcile_core::desired::DesiredErrors;

/// One resource crate: what it says about itself, and how the AWS backend builds its reconciler.
#[derive(Clone, Copy)]
pub struct Crate {
    pub description: &'static Description,
    /// `None` for GitHub's, which the session builds when it holds a token.
    pub aws: Option<reconcile_aws::BuildFn>,
}

/// Every resource crate, in the order the session asks them for their desired resources.
pub const CRATES: [Crate; 5] = [
    Crate { description: &reconcile_iam::DESCRIPTION, aws: Some(reconcile_iam::reconciler) },
    Crate { description: &reconcile_s3::DESCRIPTION, aws: Some(reconcile_s3::reconciler) },
    Crate { description: &reconcile_ecr::DESCRIPTION, aws: Some(reconcile_ecr::reconciler) },
    Crate { description: &reconcile_codebuild::DESCRIPTION, aws: Some(reconcile_codebuild::reconciler) },
    Crate { description: &reconcile_github::DESCRIPTION, aws: None },
];

/// Their descriptions, for what goes over every kind.
pub const CATALOG: Catalog = Catalog(&descriptions(CRATES));

/// The descriptions of `crates`, in their order.
const fn descriptions<const N: usize>(crates: [Crate; N]) -> [&'static Description; N] {
    let mut out = [crates[0].description; N];
    let mut at = 1;
    while at < N {
        out[at] = crates[at].description;
        at += 1;
    }
    out
}

/// desired.toml at `path`, with every crate's own sections.
pub fn parse_desired(path: &Path, text: &str) -> Result<Desired, DesiredErrors> {
    let desired = Desired::parse_claimed(path, text, &CATALOG.claims())?;
    let errors = CATALOG.put_back_errors(&desired);
    if errors.is_empty() { Ok(desired) } else { Err(DesiredErrors(errors)) }
}

#[cfg(test)]
mod example;
#[cfg(test)]
mod runner_tests;
#[cfg(test)]
mod tests;
