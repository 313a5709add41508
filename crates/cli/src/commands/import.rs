//! `reconcile import`: every resource desired.toml declares that exists without this
//! deployment's mark (made by a setup script, by hand, by another tool), listed in desired.toml's
//! `import` for the next plan to show as imports and apply to take over; the imports already
//! done taken off. Reads the account, never writes to it; `--check` prints the diff instead.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use reconcile_core::Address;
use reconcile_core::generate::{Found, matches};
use reconcile_core::ownership::{Owner, mark, owner};
use reconcile_core::plan::{Action, Observed};

use crate::aws::Aws;
use crate::error::CliError;
use crate::exit;
use crate::output::{err, out};
use crate::session::{Inputs, Load, Planned, Session};

/// What a plan's declared resources ask of `import`: list the unmarked ones, take off the ones
/// done; those carrying another deployment's mark are left out (and said, when `say`).
struct Takeovers {
    wanted: Vec<Address>,
    done: Vec<Address>,
    left_out: usize,
}

fn takeovers(planned: &Planned, say: bool) -> Takeovers {
    let (mut wanted, mut done, mut left_out) = (Vec::new(), Vec::new(), 0);
    for resource in planned.resources.values() {
        let Some(ours) = mark(&resource.attributes) else { continue };
        let address = resource.address.clone();
        match planned.plan.observed.get(&address) {
            Some(Observed::Present(live)) => match owner(live, ours) {
                // One per account, someone else's: used as it is, never taken over.
                Owner::Unmarked | Owner::Deployment(_) | Owner::Legacy if resource.shared => {
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
                    if say {
                        err(&format!(
                            "left out {address}: it carries deployment `{other}`'s mark, not `{ours}`'s; once that \
                             deployment gives it up, list it in `import` and `handed_over` to take it"
                        ));
                    }
                }
                // The plan re-marks it: no import needed.
                Owner::Legacy => {}
            },
            // Nothing to take over: the plan makes it, marked.
            _ => done.push(address),
        }
    }
    Takeovers { wanted, done, left_out }
}

pub async fn run(session: &Session<Aws>, path: &Path, check: bool) -> Result<u8, CliError> {
    let planned = session.plan(None).await?;
    let inputs = session.inputs();
    let Takeovers { wanted, done, left_out } = takeovers(&planned, true);
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
        return show_diff(path, &inputs.desired_text, &listing.text);
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

/// `reconcile import --generate [PATTERN...]`: desired.toml's declarations of what the account
/// holds and desired.toml does not declare (those whose names match a pattern, or every
/// repository, bucket and project and the roles they run as), with their imports, proven before
/// they are written: the plan of the result changes nothing but the imports. A resource whose
/// live value desired.toml cannot say is left out, and why is said.
pub async fn generate(session: &Session<Aws>, path: &Path, patterns: &[String], check: bool) -> Result<u8, CliError> {
    let inputs = session.inputs();
    let planned = session.plan(None).await?;
    let account = planned.account.clone();
    let ours = inputs.desired.deployment.as_str();
    let found = session.inventory(&planned).await?;
    let (mine, others): (Vec<&Found>, Vec<&Found>) = found.iter().partition(|f| f.deployment.is_none());
    let named_others = others.iter().filter(|f| f.deployment.as_deref() != Some(ours) && matches(&f.name, patterns));
    let named_others = named_others.count();
    if named_others > 0 {
        err(&format!(
            "left out {named_others} resource(s) that carry another deployment's mark: they are that deployment's"
        ));
    }
    // What carries this deployment's mark and desired.toml does not declare (D109): the mark
    // proves nothing of who wrote it (whoever may tag it could have), so it is never declared
    // on its word; a person who knows it is this deployment's declares it.
    for marked in others.iter().filter(|f| f.deployment.as_deref() == Some(ours) && matches(&f.name, patterns)) {
        err(&format!(
            "left out {}: it carries this deployment's mark and desired.toml does not declare it (D109): marked by \
             someone who may tag it, or left from a declaration since removed, which the mark cannot tell apart; \
             declare it by hand once you know it is this deployment's",
            Address::new(marked.kind, &marked.name)
        ));
    }
    let mut chosen: BTreeSet<usize> = (0..mine.len())
        .filter(|&at| matches(&mine[at].name, patterns) && (!patterns.is_empty() || mine[at].by_default))
        .collect();
    // What a chosen resource needs declared with it (a project's role), until nothing is added.
    loop {
        let needed: BTreeSet<usize> = chosen
            .iter()
            .flat_map(|&at| mine[at].needs.iter())
            .filter_map(|name| mine.iter().position(|f| &f.name == name && !f.by_default))
            .filter(|at| !chosen.contains(at))
            .collect();
        if needed.is_empty() {
            break;
        }
        chosen.extend(needed);
    }
    if chosen.is_empty() {
        if !check {
            err(&format!(
                "{}: the account holds nothing undeclared to generate{}.",
                path.display(),
                match patterns {
                    [] => String::new(),
                    _ => format!(" whose name matches {}", patterns.join(" or ")),
                }
            ));
        }
        return Ok(exit::OK);
    }
    let before: BTreeSet<(String, Option<Address>)> =
        planned.plan.findings.iter().filter(|f| f.refuses()).map(|f| (f.code.clone(), f.address.clone())).collect();
    let mut excluded: BTreeMap<String, String> = BTreeMap::new();
    for _round in 0..4 {
        let set: Vec<&Found> = chosen.iter().map(|&at| mine[at]).filter(|f| !excluded.contains_key(&f.name)).collect();
        if set.is_empty() {
            break;
        }
        let generation = crate::generate::generate(&inputs.desired_text, &inputs.desired, &account, &set)
            .map_err(|why| CliError::Input(vec![format!("{}: {why}", path.display())]))?;
        if let Err(errors) = crate::catalog::parse_desired(path, &generation.text) {
            for error in &errors.0 {
                let owners = crate::generate::owners_of(&generation, &error.key_path);
                let owners: Vec<(String, String)> = match owners.is_empty() {
                    false => owners.into_iter().map(|owner| (owner.to_owned(), error.message.clone())).collect(),
                    // A line no one resource owns (a tag every repository shares, written once
                    // in `[ecr.defaults]`): those that desired.toml refuses written alone.
                    true => refused_alone(path, inputs, &account, &set),
                };
                if owners.is_empty() {
                    return Err(CliError::RefusedInput(format!(
                        "{}: what was generated would be invalid: {error}; nothing was written",
                        path.display()
                    )));
                }
                for (owner, why) in owners {
                    excluded.insert(owner, format!("desired.toml would refuse it: {why}"));
                }
            }
            continue;
        }
        let first = Inputs::from_text(path, &generation.text, Load::default())?;
        let listed = session.plan_of(&first, account.clone(), None).await?;
        let Takeovers { wanted, done, .. } = takeovers(&listed, false);
        let listing = crate::import::list(&generation.text, &wanted, &done)
            .map_err(|why| CliError::Input(vec![format!("{}: {why}", path.display())]))?;
        let second = Inputs::from_text(path, &listing.text, Load::default())?;
        let proved = session.plan_of(&second, account.clone(), None).await?;
        let mut notes = generation.notes.clone();
        let names: BTreeSet<&str> = set.iter().map(|f| f.name.as_str()).collect();
        let refused = proof(&proved, &names, &generation, &before, &mut notes)?;
        if !refused.is_empty() {
            excluded.extend(refused);
            continue;
        }
        let mut left_out: Vec<(String, String)> = generation.left_out.clone();
        left_out.extend(excluded.iter().map(|(name, why)| (format!("`{name}`"), why.clone())));
        for (what, why) in &left_out {
            err(&format!("left out {what}: {why}"));
        }
        for note in &notes {
            err(&format!("note: {note}"));
        }
        if check {
            return show_diff(path, &inputs.desired_text, &listing.text);
        }
        crate::files::rewrite(path, &inputs.desired_text, &listing.text)?;
        let written: BTreeSet<&str> = generation.owners.iter().map(|(_, owner)| owner.as_str()).collect();
        err(&format!(
            "Declared in {} ({} resource(s)); listed in `import` ({} address(es)): `reconcile plan` shows only \
             imports, and the next apply (an administrator's) marks them as deployment `{ours}`'s.",
            path.display(),
            written.len(),
            listing.added.len(),
        ));
        return Ok(exit::OK);
    }
    let why: Vec<String> = excluded.iter().map(|(name, why)| format!("`{name}`: {why}")).collect();
    Err(CliError::RefusedInput(format!(
        "{}: no declaration of what was chosen plans only imports ({}); nothing was written",
        path.display(),
        why.join("; ")
    )))
}

/// Each of `set` whose declaration, generated alone (with what it needs), desired.toml refuses,
/// with the first reason.
fn refused_alone(
    path: &Path,
    inputs: &Inputs,
    account: &reconcile_core::Account,
    set: &[&Found],
) -> Vec<(String, String)> {
    set.iter()
        .filter_map(|found| {
            // With what it needs (a project's role), which is declared with it.
            let with: Vec<&Found> =
                set.iter().copied().filter(|f| f.name == found.name || found.needs.contains(&f.name)).collect();
            let alone = crate::generate::generate(&inputs.desired_text, &inputs.desired, account, &with).ok()?;
            let errors = crate::catalog::parse_desired(path, &alone.text).err()?;
            Some((found.name.clone(), errors.0.first()?.message.clone()))
        })
        .collect()
}

/// What the plan of a generated desired.toml does beyond imports to what was written (`names`),
/// by the resource each change or new refusal was written for; a derived resource's change is a
/// note instead, and an import that also sets what the user's desired.toml already said
/// ([`Generation::applied`](crate::generate::Generation)) the takeover's. What desired.toml
/// declared already is its own business, as in any plan.
fn proof(
    planned: &Planned,
    names: &BTreeSet<&str>,
    generation: &crate::generate::Generation,
    before: &BTreeSet<(String, Option<Address>)>,
    notes: &mut Vec<String>,
) -> Result<BTreeMap<String, String>, CliError> {
    let mut refused = BTreeMap::new();
    let derived = &generation.derived;
    let written = |address: &Address| {
        crate::generate::owner_of_address(&planned.resources, address).filter(|owner| names.contains(owner.as_str()))
    };
    let applies = |owner: &str, field: &reconcile_core::plan::FieldChange<'_>| {
        generation
            .applied
            .iter()
            .any(|(name, name_of_field, added)| name == owner && *name_of_field == field.name && field.only_adds(added))
    };
    for change in &planned.plan.changes {
        if planned.plan.takeovers.contains_key(&change.address) {
            let owner = planned.resources.get(&change.address).map(|r| r.remote_name.as_str());
            let takeover = change.field_changes().iter().all(|field| {
                field.only_the_mark() || (change.action == Action::Update && owner.is_some_and(|o| applies(o, field)))
            });
            if change.action == Action::Update && takeover {
                continue;
            }
        }
        // What a taken-over resource's import makes under it of what the user's file says.
        let made_under = |owner: &str| {
            generation
                .applied
                .iter()
                .any(|(name, kind, added)| name == owner && *kind == change.address.kind.as_str() && added.is_empty())
        };
        if change.action == Action::Create && written(&change.address).is_some_and(|owner| made_under(&owner)) {
            continue;
        }
        let fields: Vec<&str> =
            change.field_changes().iter().filter(|field| !field.only_the_mark()).map(|field| field.name).collect();
        let what = format!("{} {}", change.action.as_str(), change.address);
        if derived.contains(&change.address) {
            notes.push(format!(
                "the plan will {what}: what is live differs from what reconcile derives ({}); review it",
                fields.join(", ")
            ));
            continue;
        }
        let Some(owner) = written(&change.address) else { continue };
        refused.entry(owner).or_insert_with(|| {
            format!("the plan would {what} ({}): desired.toml cannot say its live value", fields.join(", "))
        });
    }
    for finding in planned.plan.findings.iter().filter(|f| f.refuses()) {
        if before.contains(&(finding.code.clone(), finding.address.clone())) {
            continue;
        }
        match finding.address.as_ref() {
            Some(address) => {
                let Some(owner) = written(address) else { continue };
                refused.entry(owner).or_insert_with(|| format!("[{}] {}", finding.code, finding.message));
            }
            None => {
                return Err(CliError::RefusedInput(format!(
                    "what was generated would be refused: [{}] {}; nothing was written",
                    finding.code, finding.message
                )));
            }
        }
    }
    Ok(refused)
}

/// `--check`: the diff that would be written to desired.toml, and exit 2 (there is one).
fn show_diff(path: &Path, before: &str, after: &str) -> Result<u8, CliError> {
    let name = path.display().to_string();
    let diff = similar::TextDiff::from_lines(before, after);
    out(&diff.unified_diff().context_radius(3).header(&name, &name).to_string())?;
    Ok(exit::CHANGES)
}
