//! `reconcile usage`: what every repository of the registry holds, frees and costs, and, against
//! earlier reports (`--since`), how fast it grows. Never writes.

use std::path::PathBuf;

use anyhow::Context;
use reconcile_core::json;
use reconcile_ecr::usage;

use crate::args::Format;
use crate::aws::{Aws, Purpose};
use crate::error::CliError;
use crate::exit;
use crate::files::{Repository, read_capped};
use crate::output::out;
use crate::output::step_summary;
use crate::session::Inputs;

/// `public`: name only the repositories a public page may ([`Inputs::public_repositories`]),
/// in this report and in the earlier ones it is compared with, and count the rest.
pub async fn run(
    inputs: &Inputs,
    format: Format,
    since: &[PathBuf],
    public: bool,
    limits: crate::aws::Limits,
) -> Result<u8, CliError> {
    let desired = &inputs.desired;
    // Earlier reports are read first: a bad one stops before any AWS call.
    let mut earlier = earlier_reports(&inputs.repository, since)?;
    let aws = Aws::load(&desired.region, Purpose::Read, limits).await;
    let account = aws.account().await.map_err(|error| aws.failed(vec![error]))?;
    let mut report = crate::registry::registry_usage(&aws, &account, desired).await?;
    if public {
        let named = inputs.public_repositories(&account);
        let shown = |name: &str| named.contains(name);
        report = report.publish(&shown);
        earlier = earlier.into_iter().map(|usage| usage.publish(&shown)).collect();
    }
    // Growth is only growth against this registry, up to now.
    for (file, earlier) in since_files(&inputs.repository, since)?.iter().zip(&earlier) {
        let why =
            if (earlier.account.as_str(), earlier.region.as_str()) != (account.id.as_str(), account.region.as_str()) {
                format!(
                    "it is a report of account {} in {}, not of account {} in {}",
                    earlier.account, earlier.region, account.id, account.region
                )
            } else if earlier.generated_at > report.generated_at {
                format!("it is dated {}, after now", reconcile_core::time::date_time(earlier.generated_at))
            } else {
                continue;
            };
        return Err(CliError::Input(vec![format!("{}: {why}", file.display())]));
    }
    tracing::info!("usage: {}", aws.requests());
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

/// The report files `--since` names: files, or directories of `.json` files, in name order;
/// inside the repository, only where they stay inside it.
fn since_files(repository: &Repository, since: &[PathBuf]) -> Result<Vec<PathBuf>, CliError> {
    let mut found = Vec::new();
    for path in since {
        if path.is_dir() {
            let mut files: Vec<_> = std::fs::read_dir(path)
                .with_context(|| format!("failed to read the directory {}", path.display()))?
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|p| p.extension().is_some_and(|e| e == "json"))
                .collect();
            files.sort();
            found.extend(files);
        } else {
            found.push(path.clone());
        }
    }
    for file in &found {
        repository.typed(file).map_err(|why| CliError::Input(vec![format!("{}: {why}", file.display())]))?;
    }
    Ok(found)
}

/// The earlier reports, in the order of [`since_files`].
fn earlier_reports(repository: &Repository, since: &[PathBuf]) -> Result<Vec<usage::Usage>, CliError> {
    let mut earlier = Vec::new();
    for file in since_files(repository, since)? {
        {
            let real =
                repository.typed(&file).map_err(|why| CliError::Input(vec![format!("{}: {why}", file.display())]))?;
            let text = read_capped(&real).map_err(|why| CliError::Input(vec![format!("{}: {why}", file.display())]))?;
            let report = serde_json::from_str(&text)
                .map_err(|e| e.to_string())
                .and_then(|value| usage::from_json(&value))
                .map_err(|why| CliError::Input(vec![format!("{}: {why}", file.display())]))?;
            earlier.push(report);
        }
    }
    Ok(earlier)
}
