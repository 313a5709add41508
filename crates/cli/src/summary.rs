//! The GitHub Actions job summary (`$GITHUB_STEP_SUMMARY`): every Markdown report is also
//! appended there when a run is in a job.

use std::io::Write;
use std::path::Path;

use anyhow::Context;

use crate::error::CliError;

/// Appends Markdown to the job summary, when running in one.
pub fn step_summary(markdown: &str) -> Result<(), CliError> {
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) else { return Ok(()) };
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .with_context(|| format!("failed to open $GITHUB_STEP_SUMMARY ({})", Path::new(&path).display()))?;
    writeln!(file, "{markdown}").context("failed to write $GITHUB_STEP_SUMMARY")?;
    Ok(())
}
