//! What the registry holds and costs: `reconcile usage`, and the summary `drift` ends with. The
//! figures are `reconcile_core::usage`'s; this reads them from ECR and prints them.

use std::io::IsTerminal;

use anyhow::Context;
use reconcile_core::markdown::GITHUB_COMMENT_LIMIT;
use reconcile_core::{Account, Desired, Plan, json, render};

use crate::args::Format;
use crate::aws::Aws;
use crate::commands::{read_capped, step_summary};
use crate::error::CliError;
use crate::exit;
use crate::output::{Output, out};

/// `reconcile usage`: the registry's holdings, and their growth since earlier reports.
pub async fn usage(aws: &Aws, desired: &Desired, format: Format, since: &[std::path::PathBuf]) -> Result<u8, CliError> {
    use reconcile_core::usage;
    // Earlier reports are read first: a bad one stops before any AWS call.
    let mut earlier = Vec::new();
    for path in since {
        let files = if path.is_dir() {
            let mut files: Vec<_> = std::fs::read_dir(path)
                .with_context(|| format!("failed to read the directory {}", path.display()))?
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|p| p.extension().is_some_and(|e| e == "json"))
                .collect();
            files.sort();
            files
        } else {
            vec![path.clone()]
        };
        for file in files {
            let text = read_capped(&file).map_err(|why| CliError::Input(vec![format!("{}: {why}", file.display())]))?;
            let report = serde_json::from_str(&text)
                .map_err(|e| e.to_string())
                .and_then(|value| usage::from_json(&value))
                .map_err(|why| CliError::Input(vec![format!("{}: {why}", file.display())]))?;
            earlier.push(report);
        }
    }
    let account = aws.account().await.map_err(|error| CliError::aws(&aws.endpoint)(vec![error]))?;
    let report = registry_usage(aws, &account, desired).await?;
    tracing::info!("usage: {}", aws.requests);
    match format {
        Format::Text => out(&format!("{}{}", usage::text(&report), usage::growth_text(&earlier, &report)))?,
        Format::Json => {
            let mut value = usage::json(&report);
            if !earlier.is_empty() {
                value["growth"] = usage::growth(&earlier, &report)
                    .iter()
                    .map(|g| {
                        serde_json::json!({
                            "name": g.name, "status": g.status, "images": g.images, "bytes": g.bytes,
                            "untagged": g.untagged, "bytes_per_day": g.bytes_per_day.round(),
                            "untagged_grows_despite_policy": g.unbounded,
                        })
                    })
                    .collect();
            }
            out(&format!("{}\n", json::to_pretty(&value)))?;
        }
        Format::Markdown => {
            let comment = format!("{}{}", usage::markdown(&report), usage::growth_markdown(&earlier, &report));
            out(&comment)?;
            step_summary(&comment)?;
        }
    }
    Ok(exit::OK)
}

/// Reads what every repository of the registry holds (see `EcrReconciler::usage`), with a
/// progress line on a terminal once it takes more than a second.
pub async fn registry_usage(
    aws: &Aws,
    account: &Account,
    desired: &Desired,
) -> Result<reconcile_core::usage::Usage, CliError> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let declared =
        desired.ecr.repositories.iter().map(|r| (r.name.clone(), r.lifecycle_policy.document.clone())).collect();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
    let (done, total) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let progress = |read: usize, of: usize| {
        done.store(read, Ordering::Relaxed);
        total.store(of, Ordering::Relaxed);
    };
    let ecr = aws.ecr(account);
    let reading = ecr.usage(&declared, now, &progress);
    tokio::pin!(reading);
    let terminal = std::io::stderr().is_terminal();
    let started = std::time::Instant::now();
    let mut ticks = tokio::time::interval(std::time::Duration::from_millis(250));
    let mut shown = false;
    let repositories = loop {
        tokio::select! {
            result = &mut reading => break result,
            _ = ticks.tick() => {
                if terminal && started.elapsed() > std::time::Duration::from_secs(1) {
                    eprint!("\rreading the registry: {} of {} repositories", done.load(Ordering::Relaxed), total.load(Ordering::Relaxed));
                    shown = true;
                }
            }
        }
    };
    if shown {
        eprint!("\r\x1b[2K");
    }
    let repositories = repositories.map_err(|error| CliError::aws(&aws.endpoint)(vec![error]))?;
    Ok(reconcile_core::usage::Usage::new(&account.id, &account.region, now, desired.price_per_gb_month, repositories))
}

/// The drift check's output: the plan, then what the registry holds and costs.
pub fn print_drift(
    output: &Output,
    plan: &Plan,
    registry: &reconcile_core::usage::Usage,
    format: Format,
) -> Result<(), CliError> {
    use reconcile_core::usage;
    match format {
        Format::Text => {
            out(&output.paint(&render::styled_text(plan)))?;
            out(&format!("\n{}", usage::summary_text(registry, false)))?;
        }
        Format::Json => {
            let mut value = render::json(plan);
            value["usage"] = usage::summary(registry);
            out(&format!("{}\n", json::to_pretty(&value)))?;
        }
        Format::Markdown => {
            let comment = format!(
                "{}\n{}",
                reconcile_core::markdown::titled(plan, GITHUB_COMMENT_LIMIT - 4_000, "drift"),
                usage::summary_text(registry, true)
            );
            out(&comment)?;
            step_summary(&comment)?;
        }
    }
    Ok(())
}
