//! `reconcile plan`: what apply would change, in text, JSON or Markdown; saved for review with
//! `--out`. Never writes to AWS.

use std::io::IsTerminal;
use std::path::Path;

use reconcile_core::{json, saved};

use crate::args::{ColorChoice, Format};
use crate::aws::Aws;
use crate::error::CliError;
use crate::exit;
use crate::output::{Output, color_on, print_plan};
use crate::session::{Session, refuse_on};

pub async fn run(
    session: &Session<Aws>,
    color: ColorChoice,
    format: Format,
    detailed_exitcode: bool,
    out: Option<&Path>,
    attribute: Option<u32>,
) -> Result<u8, CliError> {
    let plan = session.plan(attribute).await?.plan;
    let refused = refuse_on(&plan.findings);
    // Saved before it is printed, so a reader that goes away cannot lose it; never when refused,
    // so a refused plan cannot be applied.
    if let (Some(path), Ok(())) = (out, &refused) {
        let saved = json::to_pretty(&saved::to_json(&plan, &session.inputs().desired_text, session.made_with()));
        crate::files::write_atomically(path, &(saved + "\n"))?;
    }
    let output = Output::new(color_on(color, std::io::stdout().is_terminal()));
    print_plan(&output, &plan, format, "plan")?;
    // Refused for repositories the bake file names and desired.toml lacks: the lines that fix it.
    let inputs = session.inputs();
    if refused.is_err()
        && plan.findings.iter().any(|f| f.code == reconcile_bake::UNDECLARED_BAKE_REPOSITORY)
        && let Some(bake) = &inputs.bake
        && let Some(hint) = crate::declare::hint(&inputs.desired_text, &inputs.desired, bake, Some(&plan.account))
    {
        match format {
            Format::Markdown => {
                let markdown = crate::declare::hint_markdown(&hint);
                crate::output::out(&markdown)?;
                crate::output::step_summary(&markdown)?;
            }
            _ => crate::output::err_lines(&crate::declare::hint_text(&hint)),
        }
    }
    refused?;
    if let Some(path) = out {
        crate::output::err(&format!(
            "Saved the plan to {}: `reconcile apply {}` carries out exactly it.",
            path.display(),
            path.display()
        ));
    }
    Ok(if detailed_exitcode && plan.has_changes() { exit::CHANGES } else { exit::OK })
}
