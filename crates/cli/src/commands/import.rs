//! `reconcile import`: every resource desired.toml declares that exists without this
//! deployment's mark (made by a setup script, by hand, by another tool), listed in desired.toml's
//! `import` for the next plan to show as imports and apply to take over; the imports already
//! done taken off. Reads the account, never writes to it; `--check` prints the diff instead.

use std::path::Path;

use reconcile_core::Address;
use reconcile_core::ownership::{Owner, mark, owner};
use reconcile_core::plan::Observed;

use crate::aws::Aws;
use crate::error::CliError;
use crate::exit;
use crate::output::{err, out};
use crate::session::Session;

pub async fn run(session: &Session<Aws>, path: &Path, check: bool) -> Result<u8, CliError> {
    let planned = session.plan(None).await?;
    let inputs = session.inputs();
    let (mut wanted, mut done): (Vec<Address>, Vec<Address>) = (Vec::new(), Vec::new());
    let mut left_out = 0;
    for resource in planned.resources.values() {
        let Some(ours) = mark(&resource.attributes) else { continue };
        let address = resource.address.clone();
        match planned.plan.observed.get(&address) {
            Some(Observed::Present(live)) => match owner(live, ours) {
                // One per account, someone else's: used as it is, never taken over.
                Owner::Unmarked | Owner::Deployment(_) if resource.shared => {
                    if resource.overrides(reconcile_core::plan::ADOPT) {
                        wanted.push(address);
                    } else {
                        done.push(address);
                    }
                }
                Owner::Unmarked => wanted.push(address),
                Owner::Ours => done.push(address),
                Owner::Deployment(other) => {
                    left_out += 1;
                    err(&format!(
                        "left out {address}: it carries deployment `{other}`'s mark, not `{ours}`'s; list it by hand \
                         to take it from that deployment"
                    ));
                }
                // The plan re-marks it: no import needed.
                Owner::Legacy => {}
            },
            // Nothing to take over: the plan makes it, marked.
            _ => done.push(address),
        }
    }
    let listing = crate::import::list(&inputs.desired_text, &wanted, &done)
        .map_err(|why| CliError::Input(vec![format!("{}: {why}", path.display())]))?;
    if listing.added.is_empty() && listing.removed.is_empty() {
        if !check {
            let others = match left_out {
                0 => String::new(),
                n => format!(", but for the {n} left out above, which carry another deployment's mark"),
            };
            err(&format!(
                "{}: every declared resource that exists carries deployment `{}`'s mark or is listed in `import` \
                 already{others}.",
                path.display(),
                inputs.desired.deployment
            ));
        }
        return Ok(exit::OK);
    }
    // What would be written is read as every command reads desired.toml before it is shown or
    // written: an edit that would be refused later is refused now.
    let desired = crate::catalog::parse_desired(path, &listing.text).map_err(|errors| {
        CliError::RefusedInput(format!(
            "{}: the list would make it invalid: {errors}; nothing was written",
            path.display()
        ))
    })?;
    let mut resources = planned.resources.clone();
    let wrong = reconcile_core::ownership::import(&desired, &mut resources, &crate::catalog::CATALOG.kinds());
    if !wrong.is_empty() {
        let wrong: Vec<String> = wrong.iter().map(ToString::to_string).collect();
        return Err(CliError::RefusedInput(format!("{}; nothing was written", wrong.join("; "))));
    }
    if check {
        let name = path.display().to_string();
        let diff = similar::TextDiff::from_lines(&inputs.desired_text, &listing.text);
        out(&diff.unified_diff().context_radius(3).header(&name, &name).to_string())?;
        return Ok(exit::ERROR);
    }
    crate::files::rewrite(path, &inputs.desired_text, &listing.text)?;
    if !listing.added.is_empty() {
        err(&format!(
            "Listed in {}'s `import` ({}): plan shows them as imports, and the next apply (an administrator's) marks \
             them as deployment `{}`'s:",
            path.display(),
            listing.added.len(),
            inputs.desired.deployment
        ));
        for address in &listing.added {
            err(&format!("  {address}"));
        }
    }
    if !listing.removed.is_empty() {
        err(&format!("Taken off {}'s `import`, done or nothing to import:", path.display()));
        for address in &listing.removed {
            err(&format!("  {address}"));
        }
    }
    Ok(exit::OK)
}
