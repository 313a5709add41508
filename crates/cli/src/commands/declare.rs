//! `reconcile declare`: the repositories the bake file names and desired.toml lacks, written
//! into desired.toml (or, with `--check`, the diff that would be). No AWS call.

use std::path::Path;

use crate::error::CliError;
use crate::exit;
use crate::output::{err, out};
use crate::session::{Inputs, Load};
use reconcile_core::{Account, engine};

pub fn run(path: &Path, bake: Option<&Path>, check: bool, account: Option<&str>) -> Result<u8, CliError> {
    if let Some(id) = account
        && !(id.len() == 12 && id.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(CliError::Input(vec![format!("--account: `{id}` is not an AWS account id (12 digits)")]));
    }
    // desired.toml and the bake file read and checked as validate reads them: a bad one stops
    // here, and nothing is written.
    let inputs = Inputs::load(path, Load { bake, ..Load::default() })?;
    let Some(bake) = &inputs.bake else {
        return Err(CliError::Input(vec![format!(
            "{}: declare needs a bake file: --bake FILE, or `bake` in desired.toml",
            path.display()
        )]));
    };
    let declaration = crate::declare::declare(&inputs.desired_text, &inputs.desired, bake, account)
        .map_err(|why| CliError::Input(vec![format!("{}: {}", path.display(), bake.redact(&why))]))?;
    for skipped in &declaration.skipped {
        err(&format!("skipped {skipped}"));
    }
    if declaration.added.is_empty() {
        if !check {
            err(&format!("{} declares every repository of this account that {} names.", path.display(), bake.name));
        }
        return Ok(exit::OK);
    }
    // What would be written is held to what plan holds desired.toml to, before it is shown or
    // written: an edit that would be refused later is refused now.
    held_as_plan_holds(path, &inputs, &declaration.text, account)?;
    // In the file's own line endings, so a CRLF file's diff is the added lines only.
    let crlf = inputs.desired_text.matches("\r\n").count() * 2 > inputs.desired_text.matches('\n').count();
    let text = if crlf { declaration.text.replace("\r\n", "\n").replace('\n', "\r\n") } else { declaration.text };
    if check {
        let name = path.display().to_string();
        let diff = similar::TextDiff::from_lines(&inputs.desired_text, &text);
        out(&diff.unified_diff().context_radius(3).header(&name, &name).to_string())?;
        return Ok(exit::CHANGES);
    }
    crate::files::rewrite(path, &inputs.desired_text, &text)?;
    err(&format!("Declared in {}:", path.display()));
    for added in &declaration.added {
        err(&format!("  {}", added.line));
    }
    Ok(exit::OK)
}

/// Refuses (exit 3, nothing written) an edited desired.toml that plan would refuse and the file
/// as read would not: one over the file limit, one whose derived policies are over IAM's size
/// limits, one with an error finding the file did not have.
fn held_as_plan_holds(path: &Path, inputs: &Inputs, text: &str, account: Option<&str>) -> Result<(), CliError> {
    let refused =
        |why: String| CliError::RefusedInput(format!("{}: declaring them {why}; nothing was written", path.display()));
    if text.len() as u64 > crate::files::FILE_LIMIT {
        return Err(refused(format!("would make it larger than {} MiB", crate::files::FILE_LIMIT >> 20)));
    }
    let desired = crate::catalog::parse_desired(path, text)
        .map_err(|errors| refused(format!("would make it invalid: {errors}")))?;
    let stand_in = Account::new("000000000000", &desired.region);
    crate::session::desired_resources(&crate::catalog::CATALOG, &desired, &stand_in, true).map_err(|errors| {
        refused(format!(
            "would make what it derives invalid: {}",
            errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
        ))
    })?;
    let before = inputs.findings(account);
    let bake = inputs
        .bake
        .as_ref()
        .map(|bake| crate::session::bake_check(bake, &desired, account).findings)
        .unwrap_or_default();
    let new: Vec<String> = engine::desired_findings(&desired, bake)
        .into_iter()
        .filter(|finding| finding.refuses())
        .filter(|finding| !before.iter().any(|b| b.code == finding.code && b.address == finding.address))
        .map(|finding| format!("[{}] {}", finding.code, finding.message))
        .collect();
    if !new.is_empty() {
        return Err(refused(format!("would bring error findings: {}", new.join("; "))));
    }
    Ok(())
}
