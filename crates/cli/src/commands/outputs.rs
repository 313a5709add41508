//! `reconcile outputs`: the `gh variable set` lines that wire the nightly's GitHub repository to
//! the account, from the same derivation the GitHub reconciler sets them from.

use anyhow::Context;
use reconcile_core::{Desired, json};

use crate::args::OutputsFormat;
use crate::aws::Aws;
use crate::error::CliError;
use crate::exit;
use crate::output::out;

/// The repository variables that wire the nightly's GitHub repository to this account, in the
/// runbook's order: `NIGHTLY_ENABLED` last, because setting it turns the nightly on.
pub async fn run(aws: &Aws, desired: &Desired, format: OutputsFormat) -> Result<u8, CliError> {
    reconcile_codebuild::declared(desired)
        .projects
        .first()
        .context("desired.toml declares no CodeBuild project, so there is no CODEBUILD_PROJECT to print")?;
    let account = aws.account().await.map_err(|error| aws.failed(vec![error]))?;
    // The same derivation the GitHub reconciler sets them from.
    let variables = reconcile_core::variables::derived(desired, &account, &crate::CATALOG);
    match format {
        OutputsFormat::Text => {
            let width = variables.iter().map(|(name, _)| name.len()).max().unwrap_or(0);
            for (name, value) in &variables {
                out(&format!("gh variable set {name:<width$} --body {}\n", shell_quoted(value)?))?;
            }
            if !reconcile_ecr::declared(desired).repositories.is_empty() {
                out(&ensure_ecr(desired, &account)?)?;
            }
        }
        OutputsFormat::Json => {
            let list: Vec<serde_json::Value> =
                variables.iter().map(|(name, value)| serde_json::json!({ "name": name, "value": value })).collect();
            out(&format!("{}\n", json::to_pretty(&serde_json::Value::Array(list))))?;
        }
    }
    Ok(exit::OK)
}

/// What the nightly's `--ensure-ecr` runs to make a missing repository, as comments beside the
/// variables: the one create the runner's role allows, of exactly the repositories it names (the
/// declared ones, as its inline policy does), with this deployment's mark in the same call (the
/// mark and nothing else); any other is refused at once, before the build.
fn ensure_ecr(desired: &Desired, account: &reconcile_core::Account) -> Result<String, CliError> {
    let names = reconcile_ecr::creatable(desired, account);
    if names.is_empty() {
        return Ok(format!(
            "# The nightly's --ensure-ecr may make no repository: desired.toml declares {} of them, more than the \
             runner's role can name,\n# so the apply role makes each one (a bake target added is applied before \
             the nightly pushes to it).\n",
            reconcile_ecr::declared(desired).repositories.len()
        ));
    }
    let (key, value) = desired.mark();
    let tag = shell_quoted(&format!("Key={key},Value={value}"))?;
    let mut lines = format!(
        "# The nightly's --ensure-ecr may make only these {} repositories, missing ones, each with this deployment's \
         mark,\n# the only create its role allows (any other name, or an untagged create, is refused with \
         AccessDenied at once, before the build):\n",
        names.len()
    );
    for name in &names {
        lines.push_str(&format!("#   {name}\n"));
    }
    lines.push_str(&format!(
        "#   aws ecr create-repository --region {} --repository-name \"$REPOSITORY\" --tags {tag}\n",
        shell_quoted(&desired.region)?
    ));
    Ok(lines)
}

/// `value` as one word for a POSIX shell: as it is when every character is inert, else in single
/// quotes. These lines are meant to be pasted into a shell, so a value such as
/// `gfx1201; rm -rf / $(id)` must stay a value. Control characters cannot be quoted safely for
/// every terminal, so they are refused.
fn shell_quoted(value: &str) -> Result<String, CliError> {
    if value.chars().any(char::is_control) {
        return Err(CliError::Other(anyhow::anyhow!("a variable's value holds a control character: {value:?}")));
    }
    let inert = |c: char| c.is_ascii_alphanumeric() || "-_./:@%+=,".contains(c);
    if !value.is_empty() && value.chars().all(inert) {
        return Ok(value.to_owned());
    }
    Ok(format!("'{}'", value.replace('\'', r"'\''")))
}
