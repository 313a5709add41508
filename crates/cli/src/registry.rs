//! What the registry holds and costs, read for `usage` and for the summary `drift` ends with,
//! with a progress line on a terminal. The figures are `reconcile_ecr::usage`'s.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use reconcile_core::{Account, Desired};
use reconcile_ecr::usage::Usage;

use crate::aws::Aws;
use crate::error::CliError;

/// Reads what every repository of the registry holds (see `EcrReconciler::usage`), with a
/// progress line on a terminal once it takes more than a second.
pub async fn registry_usage(aws: &Aws, account: &Account, desired: &Desired) -> Result<Usage, CliError> {
    let declared = reconcile_ecr::declared(desired)
        .repositories
        .iter()
        .map(|r| (r.name.clone(), r.lifecycle_policy.document.clone()))
        .collect();
    let now = reconcile_core::time::now();
    let (done, total) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let progress = |read: usize, of: usize| {
        done.store(read, Ordering::Relaxed);
        total.store(of, Ordering::Relaxed);
    };
    let ecr = reconcile_ecr::ecr_reconciler(&aws.clients(account, desired, None, None));
    let reading = ecr.usage(&declared, now, &progress);
    tokio::pin!(reading);
    let terminal = std::io::stderr().is_terminal();
    let started = std::time::Instant::now();
    let mut ticks = tokio::time::interval(Duration::from_millis(250));
    let mut shown = false;
    let repositories = loop {
        tokio::select! {
            result = &mut reading => break result,
            _ = ticks.tick() => {
                if terminal && started.elapsed() > Duration::from_secs(1) {
                    crate::output::progress(Some(&format!(
                        "reading the registry: {} of {} repositories",
                        done.load(Ordering::Relaxed),
                        total.load(Ordering::Relaxed)
                    )));
                    shown = true;
                }
            }
        }
    };
    if shown {
        crate::output::progress(None);
    }
    let repositories = repositories.map_err(|error| aws.failed(vec![error]))?;
    Ok(Usage::new(&account.id, &account.region, now, reconcile_ecr::price_per_gb_month(desired), repositories))
}
