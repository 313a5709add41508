//! `reconcile show PLAN_FILE`: a saved plan, printed as `plan` would print it. Reads no AWS and
//! no desired.toml: what the file holds is what was reviewed.

use std::path::Path;

use reconcile_core::json;
use reconcile_render::{saved, terraform};

use crate::args::PlanFormat;
use crate::catalog::CATALOG;
use crate::error::CliError;
use crate::output::{Output, out, print_plan};

pub fn run(path: &Path, format: PlanFormat) -> Result<u8, CliError> {
    let text = crate::files::read_capped_to(path, crate::files::PLAN_LIMIT)
        .map_err(|why| CliError::Input(vec![format!("failed to read the plan {}: {why}", path.display())]))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|error| CliError::Input(vec![format!("{}: not a saved plan: {error}", path.display())]))?;
    drop(text);
    let saved = saved::from_json(&value, &CATALOG.kinds())
        .map_err(|why| CliError::Input(vec![format!("{}: {why}", path.display())]))?;
    match format.common() {
        // The changes as they were saved; a saved plan keeps no findings but its JSON's.
        Some(crate::args::Format::Json) => out(&format!("{}\n", json::to_pretty(&without_fingerprints(value))))?,
        Some(format) => print_plan(&Output::new(false), &saved.plan, format, "plan")?,
        None => match (value.get(crate::terraform::SAVED_KEY), &saved.view) {
            // Saved with the view itself, by an earlier reconcile: as it was saved.
            (Some(view), _) => out(&(terraform::to_line(view) + "\n"))?,
            (None, Some(view)) => {
                let derived = crate::terraform::saved_view(&saved.plan, view, without_fingerprints(value));
                out(&(terraform::to_line(&derived) + "\n"))?;
            }
            (None, None) => {
                return Err(CliError::Input(vec![format!(
                    "{}: this plan was saved by an earlier reconcile, without its Terraform view: plan again with \
                     `--out`",
                    path.display()
                )]));
            }
        },
    }
    Ok(crate::exit::OK)
}

/// The native JSON plan a saved plan holds, without what only apply needs.
fn without_fingerprints(mut value: serde_json::Value) -> serde_json::Value {
    if let Some(fields) = value.as_object_mut() {
        for key in saved::SAVED_ONLY.iter().chain([&crate::terraform::SAVED_KEY]) {
            fields.remove(*key);
        }
    }
    value
}
