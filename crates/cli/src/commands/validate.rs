//! `reconcile validate`: desired.toml and the bake file checked, with no AWS call (not even the
//! AWS configuration is read).

use std::path::Path;

use reconcile_core::{Finding, Severity};

use crate::error::CliError;
use crate::exit;
use crate::output::out;
use crate::session::{Inputs, Load, refuse_on};

pub fn run(path: &Path, bake: Option<&Path>) -> Result<u8, CliError> {
    let inputs = Inputs::load(path, Load { bake, ..Load::default() })?;
    let desired = &inputs.desired;
    if let Some(bake) = &inputs.bake {
        let check = crate::session::bake_check(bake, desired, None);
        if !check.accounts.is_empty() {
            let accounts: Vec<&str> = check.accounts.iter().map(String::as_str).collect();
            let line = format!(
                "{}: {} references to ECR in {} checked, naming account {}.",
                bake.name,
                check.checked,
                desired.region,
                accounts.join(", ")
            );
            crate::output::err(&line);
        }
    }
    let findings = inputs.findings(None);
    for finding in &findings {
        crate::output::err(&finding_line(finding));
    }
    if findings.iter().any(|f| f.code == reconcile_bake::UNDECLARED_BAKE_REPOSITORY)
        && let Some(bake) = &inputs.bake
        && let Some(hint) = crate::declare::hint(&inputs.desired_text, desired, bake, None)
    {
        crate::output::err_lines(&crate::declare::hint_text(&hint));
    }
    refuse_on(&findings)?;
    let ci = match reconcile_iam::declared_ci(desired) {
        Some(ci) => format!(", {} CI roles", ci.roles.len()),
        None => String::new(),
    };
    out(&format!(
        "{} is valid: region {}, {} ECR repositories, {} S3 buckets, {} IAM roles, {} CodeBuild projects{ci}.\n",
        path.display(),
        desired.region,
        reconcile_ecr::declared(desired).repositories.len(),
        reconcile_s3::declared(desired).buckets.len(),
        reconcile_iam::declared(desired).roles.len(),
        reconcile_codebuild::declared(desired).projects.len(),
    ))?;
    Ok(exit::OK)
}

/// A finding as one line of `validate`'s output.
pub(crate) fn finding_line(finding: &Finding) -> String {
    let severity = match finding.severity {
        Severity::Warning => "warning",
        Severity::Error => "error",
    };
    let overridden = finding
        .overridden_by
        .as_ref()
        .map(|key| format!(" (overridden: `{key} = true` on the resource)"))
        .unwrap_or_default();
    let more = reconcile_core::text::learn_more(&finding.code);
    format!("{severity}: [{}] {}{overridden} ({more})", finding.code, finding.message)
}
