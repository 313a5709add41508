//! `reconcile plan`: what apply would change, in text, JSON or Markdown; saved for review with
//! `--out`. Never writes to AWS. A public plan (a pull request's) shows only what reconcile
//! manages: see `reconcile_core::audience`.

use std::collections::BTreeSet;
use std::io::IsTerminal;
use std::path::Path;

use reconcile_core::audience::{self, Public};
use reconcile_core::{Account, Desired, NextStep, Plan, Severity, json, saved};

use crate::args::{ColorChoice, PlanFormat};
use crate::aws::Aws;
use crate::error::CliError;
use crate::exit;
use crate::output::{Output, color_on, print_plan};
use crate::session::{Inputs, Session, refuse_on};
use crate::terraform;

/// What was last applied, by address: the desired fields drift is found against.
type LastApplied = std::collections::BTreeMap<reconcile_core::Address, serde_json::Map<String, serde_json::Value>>;

/// Who reads the plan.
pub enum Audience {
    /// Whoever runs it: everything the credentials read may be shown.
    Private,
    /// Anyone: see [`audience::publish`]; `base` is the default branch's desired.toml.
    Public { base: Option<Box<Desired>> },
}

impl Audience {
    /// Public (`crate::args::public_output`) with `base`, or private. The base is read (and
    /// checked) before any AWS call, like desired.toml.
    pub fn from(public: bool, base: Option<&Path>) -> Result<Audience, CliError> {
        if !public {
            return Ok(Audience::Private);
        }
        let base =
            base.map(|path| crate::files::load_desired(path).map(|(desired, _)| Box::new(desired))).transpose()?;
        Ok(Audience::Public { base })
    }

    /// Whether `desired` is this public plan's own base (the default branch's plan of itself),
    /// as against a pull request's, whose base is another file.
    fn is_its_own_base(&self, desired: &Desired) -> bool {
        match self {
            Audience::Public { base: Some(base) } => {
                Desired { path: desired.path.clone(), ..(**base).clone() } == *desired
            }
            _ => false,
        }
    }

    /// What a public plan may show in `account`: the base's resources (address and the name AWS
    /// knows them by, so a pull request cannot point a declared key at another resource) and its
    /// deployment, whose mark makes a resource reconcile's. Without a base, nothing the pull
    /// request says makes anything reconcile's: no resource that exists is shown.
    /// With the base's desired fields in the account's region, of each resource the pull
    /// request names as the base does (`planned`): what was last applied, against which the
    /// Terraform view finds drift (not the pull request's own changes; and for a key pointed at
    /// another resource, no baseline, never another resource's fields).
    fn public(
        base: Option<&Desired>,
        account: &Account,
        planned: &reconcile_core::engine::DesiredResources,
    ) -> Result<(Public, Option<LastApplied>), CliError> {
        let Some(base) = base else { return Ok((Public::default(), Some(LastApplied::new()))) };
        let resources = crate::session::desired_resources(&crate::catalog::CATALOG, base, account, true)
            .map_err(|errors| CliError::Input(errors.iter().map(|e| format!("--base: {e}")).collect()))?;
        // What the default branch declares is in its region (of the account the plan reads): a
        // pull request that moves to another region names what is there under the same names,
        // someone else's.
        let in_region = || resources.values().filter(|_| base.region == account.region);
        let declared: BTreeSet<_> = in_region().map(|r| (r.address.clone(), r.remote_name.clone())).collect();
        let last_applied = in_region()
            .filter(|r| planned.values().any(|p| p.address == r.address && p.remote_name == r.remote_name))
            .map(|r| (r.address.clone(), r.attributes.clone()))
            .collect();
        let public = Public { base: Some(declared), deployment: Some(base.deployment.clone()), ..Public::default() };
        Ok((public, Some(last_applied)))
    }
}

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
        destroy,
        since,
        bake,
        prune,
    } = args;
    let load = crate::session::Load { bake: bake.bake.as_deref(), prune: prune.prune, destroy, ..Default::default() };
    let inputs = context.inputs(load)?;
    let public = crate::args::public_output(public || base.is_some(), private);
    let audience = Audience::from(public, base.as_deref())?;
    let session = context.session(inputs, crate::aws::Purpose::Read).await?;
    let attribute = attribute.then_some(since.since_days);
    let request = Request { format, detailed_exitcode, out: out.as_deref(), attribute, audience };
    run(&session, context.color, request).await
}

pub async fn run(session: &Session<Aws>, color: ColorChoice, request: Request<'_>) -> Result<u8, CliError> {
    let Request { format, detailed_exitcode, out, attribute, audience } = request;
    let planned = session.plan(attribute).await?;
    let public = matches!(audience, Audience::Public { .. });
    let (plan, last_applied) = match &audience {
        Audience::Private => (planned.plan, None),
        Audience::Public { base } => {
            let (public, last_applied) = Audience::public(base.as_deref(), &planned.account, &planned.resources)?;
            (audience::publish(planned.plan, &planned.resources, &public), last_applied)
        }
    };
    let mut plan = plan;
    // What the changes the plan shows do to the bill (a destroy's is not estimated).
    if !plan.destroy {
        plan.costs = session.costs(&plan, &planned.account).await;
    }
    let refused = refuse_on(&plan.findings);
    plan.next_steps = next_steps(session.inputs(), &plan, public);
    // Terraform's view of the plan only when it is saved or printed: it holds every resource's
    // values over again (half a gigabyte for 5,000 repositories), for nothing in a text plan.
    let view = || terraform::view(&plan, &planned.resources, last_applied.as_ref());
    // Saved before it is printed, so a reader that goes away cannot lose it; never when refused,
    // so a refused plan cannot be applied.
    if let (Some(path), Ok(())) = (out, &refused) {
        let mut saved = saved::to_json(&plan, &session.inputs().desired_text, session.made_with());
        saved[terraform::SAVED_KEY] = view();
        crate::files::write_atomically(path, &(json::to_pretty(&saved) + "\n"))?;
    }
    let output = Output::new(color_on(color, std::io::stdout().is_terminal()));
    match format.common() {
        Some(format) => print_plan(&output, &plan, format, "plan")?,
        None => crate::output::out(&(reconcile_core::terraform::to_line(&view()) + "\n"))?,
    }
    refused?;
    // A pull request's status fails on what the pipeline would not carry out as it stands. The
    // default branch's own plan (its desired.toml is its base: the apply workflow's) is no pull
    // request's: drift it finds (D103, say) is what its apply puts back.
    let errors: Vec<&str> =
        plan.findings.iter().filter(|f| f.severity == Severity::Error).map(|f| f.code.as_str()).collect();
    if public && !errors.is_empty() && !audience.is_its_own_base(&session.inputs().desired) {
        crate::output::err(&format!(
            "This public plan holds error findings ({}): exit 3, so the pull request's status fails.",
            errors.join(", ")
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

/// What resolves a refused plan's findings, which it leads with: the lines a new bake target
/// needs in desired.toml (W401), the command that imports what exists without the mark (W601; a
/// public plan names nothing of what is not ours).
pub fn next_steps(inputs: &Inputs, plan: &Plan, public: bool) -> Vec<NextStep> {
    let mut steps = Vec::new();
    if !plan.refused() {
        return steps;
    }
    if plan.findings.iter().any(|f| f.code == reconcile_bake::UNDECLARED_BAKE_REPOSITORY && f.refuses())
        && let Some(bake) = &inputs.bake
        && let Some((lines, command)) =
            crate::declare::hint(&inputs.desired_text, &inputs.desired, bake, Some(&plan.account))
    {
        steps.push(NextStep {
            say: format!("`{command}` declares them; or add under `[ecr.repositories]` in desired.toml:"),
            lines,
        });
    }
    let unmarked =
        plan.findings.iter().filter(|f| f.code == reconcile_core::ownership::NOT_OURS && f.refuses()).count();
    if unmarked > 0 && !public {
        steps.push(NextStep {
            say: format!(
                "{unmarked} declared resource(s) exist without deployment `{}`'s mark. To take them over as \
                 Terraform's import does, `reconcile import` lists them in desired.toml's `import`; the next plan \
                 shows them as imports, and an administrator's apply marks them.",
                inputs.desired.deployment
            ),
            lines: Vec::new(),
        });
    }
    steps
}
