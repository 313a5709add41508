//! `reconcile declare`: the repositories the bake file names and desired.toml lacks, written
//! into desired.toml (or, with `--check`, the diff that would be). No AWS call.

use std::path::Path;

use crate::error::CliError;
use crate::exit;
use crate::output::{err, out};
use crate::session::Inputs;

pub fn run(path: &Path, bake: Option<&Path>, check: bool, account: Option<&str>) -> Result<u8, CliError> {
    if let Some(id) = account
        && !(id.len() == 12 && id.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(CliError::Input(vec![format!("--account: `{id}` is not an AWS account id (12 digits)")]));
    }
    // desired.toml and the bake file read and checked as validate reads them: a bad one stops
    // here, and nothing is written.
    let inputs = Inputs::load(path, bake, false, false)?;
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
    if check {
        let name = path.display().to_string();
        let diff = similar::TextDiff::from_lines(&inputs.desired_text, &declaration.text);
        out(&diff.unified_diff().context_radius(3).header(&name, &name).to_string())?;
        return Ok(exit::ERROR);
    }
    crate::files::write_atomically(path, &declaration.text)?;
    err(&format!("Declared in {}:", path.display()));
    for added in &declaration.added {
        err(&format!("  {}", added.line));
    }
    Ok(exit::OK)
}
