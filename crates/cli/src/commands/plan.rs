//! `reconcile plan`: what apply would change, in text, JSON or Markdown; saved for review with
//! `--out`. Never writes to AWS. What a plan shows its audience, and when it fails a pull
//! request, is the session's (`session::plan`); this saves and prints it.

use std::io::IsTerminal;
use std::path::Path;

use reconcile_render::saved;

use crate::args::{ColorChoice, PlanFormat};
use crate::aws::Aws;
use crate::error::CliError;
use crate::exit;
use crate::output::{Output, color_on, print_plan};
pub use crate::session::Audience;
use crate::session::{Session, Shown};
use crate::terraform;

pub struct Request<'a> {
    pub format: PlanFormat,
    pub detailed_exitcode: bool,
    pub out: Option<&'a Path>,
    pub attribute: Option<u32>,
    pub audience: Audience,
}

/// `reconcile plan`.
pub async fn exec(args: crate::args::PlanArgs, context: &super::Context) -> Result<u8, CliError> {
    let crate::args::PlanArgs {
        format,
        detailed_exitcode,
        out,
        attribute,
        public,
        private,
        base,
        merged,
        destroy,
        since,
        bake,
        prune,
    } = args;
    let load = crate::session::Load { bake: bake.bake.as_deref(), prune: prune.prune, destroy, ..Default::default() };
    let inputs = context.inputs(load)?;
    let public = crate::args::public_output(public || base.is_some(), private);
    let audience = Audience::from(public, base.as_deref(), merged)?;
    let session = context.session(inputs, crate::aws::Purpose::Read).await?;
    let attribute = attribute.then_some(since.since_days);
    let request = Request { format, detailed_exitcode, out: out.as_deref(), attribute, audience };
    run(&session, context.color, request).await
}

pub async fn run(session: &Session<Aws>, color: ColorChoice, request: Request<'_>) -> Result<u8, CliError> {
    let Request { format, detailed_exitcode, out, attribute, audience } = request;
    let Shown { plan, resources, last_applied, refused } = session.shown_plan(attribute, &audience).await?;
    // Terraform's view of the plan only when it is saved or printed: it holds every resource's
    // values over again (half a gigabyte for 5,000 repositories), for nothing in a text plan.
    let view = || terraform::view(&plan, &resources, last_applied.as_ref());
    // Saved before it is printed, so a reader that goes away cannot lose it; never when refused,
    // so a refused plan cannot be applied. Compact, each resource's values once: `show` derives
    // the Terraform view again.
    if let (Some(path), Ok(())) = (out, &refused) {
        let mut saved = saved::to_json(&plan, &session.inputs().desired_text, session.made_with());
        let declared = terraform::declared(&plan, &resources);
        // A base that declares what this plan does (the apply workflow's own) is not kept twice:
        // the view takes desired.toml as last applied without one.
        let same = |applied: &&std::collections::BTreeMap<_, _>| {
            plan.observed.keys().all(|address| applied.get(address) == declared.get(address))
        };
        let kept = saved::SavedView {
            last_applied: last_applied.as_ref().filter(|applied| !same(applied)).cloned(),
            declared,
            made_at: reconcile_core::time::date_time(reconcile_core::time::now()),
        };
        saved::keep_view(&mut saved, &kept);
        crate::files::write_atomically(path, &(saved.to_string() + "\n"))?;
    }
    let output = Output::new(color_on(color, std::io::stdout().is_terminal()));
    match format.common() {
        Some(format) => print_plan(&output, &plan, format, "plan")?,
        None => crate::output::out(&(reconcile_render::terraform::to_line(&view()) + "\n"))?,
    }
    refused?;
    let failing = audience.failing(&plan, &session.inputs().desired);
    if !failing.is_empty() {
        crate::output::err(&format!(
            "This public plan holds error findings ({}): exit 3, so the pull request's status fails.",
            failing.join(", ")
        ));
        return Ok(exit::REFUSED);
    }
    if let Some(path) = out {
        // Apply checks the GitHub side a saved plan names, and refuses a plan made without it.
        if reconcile_github::declared(&session.inputs().desired).is_some() && !session.checks_github() {
            crate::output::err(&format!(
                "Saved the plan to {}, but apply cannot carry it out: desired.toml declares [github] and this run \
                 did not check it (no GITHUB_TOKEN or GH_TOKEN, or another repository than \
                 RECONCILE_GITHUB_REPOSITORY); plan again with the token to save one apply takes.",
                path.display()
            ));
        } else {
            // Only `destroy` carries out a destroy plan (apply refuses one).
            let command = if plan.destroy { "destroy" } else { "apply" };
            crate::output::err(&format!(
                "Saved the plan to {}: `reconcile {command} {}` carries out exactly it.",
                path.display(),
                path.display()
            ));
        }
    }
    Ok(if detailed_exitcode && plan.has_changes() { exit::CHANGES } else { exit::OK })
}
