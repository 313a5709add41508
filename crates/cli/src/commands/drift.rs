//! `reconcile drift`: the scheduled check. The plan and what the account holds undeclared, then
//! what the registry holds and costs; exit 2 when the account differs from desired.toml.

use std::io::IsTerminal;

use reconcile_core::markdown::GITHUB_COMMENT_LIMIT;
use reconcile_core::{Plan, json, render};
use reconcile_ecr::usage::{self, Usage};

use crate::args::{ColorChoice, Format};
use crate::aws::Aws;
use crate::error::CliError;
use crate::exit;
use crate::output::{Output, color_on, out};
use crate::session::Session;
use crate::summary::step_summary;

pub async fn run(session: &Session<Aws>, color: ColorChoice, format: Format, since_days: u32) -> Result<u8, CliError> {
    let mut drift = session.drift().await?;
    // Who made each difference, from CloudTrail: it only informs, too.
    crate::attribution::attribute(session.backend(), &mut drift, &session.inputs().desired, since_days).await;
    // What the registry holds and costs: it only informs, the exit code is drift's.
    let aws = session.backend();
    let registry = crate::registry::registry_usage(aws, &drift.account, &session.inputs().desired).await?;
    let plan = drift.plan;
    tracing::info!("drift: {}", aws.requests);
    let output = Output::new(color_on(color, std::io::stdout().is_terminal()));
    print(&output, &plan, &registry, format)?;
    Ok(if plan.account_differs() { exit::CHANGES } else { exit::OK })
}

/// The drift check's output: the plan, then what the registry holds and costs.
fn print(output: &Output, plan: &Plan, registry: &Usage, format: Format) -> Result<(), CliError> {
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
            // The registry's summary is bounded; the plan gets what is left of GitHub's limit.
            let summary = usage::summary_text(registry, true);
            let budget = GITHUB_COMMENT_LIMIT.saturating_sub(summary.len() + 1);
            let comment = format!("{}\n{summary}", reconcile_core::markdown::titled(plan, budget, "drift"));
            out(&comment)?;
            step_summary(&comment)?;
        }
    }
    Ok(())
}
