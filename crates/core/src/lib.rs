//! The core of `reconcile`: what the account should hold, what a plan is, and how plans are
//! made and carried out.
//!
//! This crate knows nothing of AWS, terminals, environment variables or exit codes, nor how a
//! plan looks written down (reconcile-render's). Resource crates implement [`Reconciler`]; the
//! binary wires them to AWS clients and to the terminal.

pub mod address;
pub mod audience;
pub mod describe;
pub mod desired;
pub mod destroy;
pub mod engine;
// Always compiled, though only tests use it: a feature that turned it on for other crates' tests
// made the tests' build of core differ from the one `cargo build --bin reconcile` makes (see
// scripts/test.sh), and the linker drops it from the binary.
#[doc(hidden)]
pub mod fake;
pub mod fields;
pub mod generate;
pub mod json;
pub mod mark;
pub mod markdown;
pub mod ownership;
pub mod pages;
pub mod plan;
pub mod policy;
pub mod put_back;
pub mod reconciler;
pub mod redact;
pub mod retry;
pub mod schedule;
pub mod spec;
pub mod terraform;
pub mod text;
pub mod time;
pub mod units;
pub mod variables;

pub use address::{Address, ResourceKind};
pub use desired::{Desired, DesiredError, DesiredErrors};
pub use plan::{Action, Change, DesiredResource, Finding, Impact, NextStep, Observed, Plan, Severity};
pub use reconciler::{Account, Applied, Destroy, ErrorKind, Progress, Prune, ReconcileError, Reconciler};
