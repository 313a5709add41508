//! What the binary writes while it works: logs to stderr, apply progress to stdout.

use std::time::Duration;

use reconcile_core::engine::{ApplyEvents, Outcome};
use reconcile_core::plan::{Action, Change};
use reconcile_core::{Address, Progress};
use tracing_subscriber::EnvFilter;

/// Logs go to stderr, so stdout stays the plan (or its JSON) alone.
pub fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = EnvFilter::try_from_env("RECONCILE_LOG").unwrap_or_else(|_| EnvFilter::new(default));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_target(false).init();
}

/// Prints one line per resource as apply starts and finishes it, Terraform-style.
pub struct ApplyPrinter;

fn words(action: Action) -> (&'static str, &'static str, &'static str) {
    match action {
        Action::Create => ("Creating...", "Creation complete", "Creation failed"),
        Action::Update => ("Modifying...", "Modifications complete", "Modification failed"),
        Action::Replace => ("Replacing...", "Replacement complete", "Replacement failed"),
        Action::Delete => ("Destroying...", "Destruction complete", "Destruction failed"),
    }
}

impl Progress for ApplyPrinter {
    fn note(&self, address: &Address, message: &str) {
        println!("{address}: {message}");
    }
}

impl ApplyEvents for ApplyPrinter {
    fn started(&self, change: &Change) {
        println!("{}: {}", change.address, words(change.action).0);
    }

    fn finished(&self, change: &Change, outcome: &Outcome, elapsed: Duration) {
        let (_, done, failed) = words(change.action);
        let address = &change.address;
        match outcome {
            Outcome::Applied => println!("{address}: {done} after {:.1}s", elapsed.as_secs_f64()),
            Outcome::Failed(error) => {
                println!("{address}: {failed} after {:.1}s: {}", elapsed.as_secs_f64(), error_reason(error))
            }
            Outcome::Skipped { because } => {
                println!("{address}: Skipped, because {because} did not apply")
            }
        }
    }
}

fn error_reason(error: &reconcile_core::ReconcileError) -> String {
    format!("failed to {}: {}", error.operation, error.reason)
}
