//! The protocol of a plan someone reads: shown to its audience (in public, only what reconcile
//! manages: see `reconcile_core::audience`), priced, with what resolves a refusal, and whether
//! it fails a pull request's status. `reconcile plan` saves and prints what this returns.

use std::collections::BTreeSet;
use std::path::Path;

use reconcile_core::audience::{self, Public};
use reconcile_core::engine::DesiredResources;
use reconcile_core::{Account, Desired, NextStep, Plan, Severity};

use super::{Backend, Inputs, Session, refuse_on};
use crate::error::CliError;

/// What was last applied, by address: the desired fields drift is found against.
pub type LastApplied = std::collections::BTreeMap<reconcile_core::Address, serde_json::Map<String, serde_json::Value>>;

/// Who reads the plan.
pub enum Audience {
    /// Whoever runs it: everything the credentials read may be shown.
    Private,
    /// Anyone: see [`audience::publish`]; `base` is the default branch's desired.toml (before
    /// the merge this desired.toml is, when `merged`: see [`Public::merged`]).
    Public { base: Option<Box<Desired>>, merged: bool },
}

impl Audience {
    /// Public (`crate::args::public_output`) with `base`, or private. The base is read (and
    /// checked) before any AWS call, like desired.toml.
    pub fn from(public: bool, base: Option<&Path>, merged: bool) -> Result<Audience, CliError> {
        if !public {
            return Ok(Audience::Private);
        }
        let base =
            base.map(|path| crate::files::load_desired(path).map(|(desired, _)| Box::new(desired))).transpose()?;
        Ok(Audience::Public { base, merged })
    }

    /// The default branch's plan of itself (the apply workflow's), which no one reviews: given
    /// itself as its base, or the base it was just merged onto.
    fn is_the_default_branch(&self, desired: &Desired) -> bool {
        matches!(self, Audience::Public { merged: true, .. }) || self.is_its_own_base(desired)
    }

    /// Whether `desired` is this public plan's own base (the default branch's plan of itself),
    /// as against a pull request's, whose base is another file.
    pub fn is_its_own_base(&self, desired: &Desired) -> bool {
        match self {
            Audience::Public { base: Some(base), .. } => {
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
    /// `review`: a pull request's, as against the default branch's plan of itself (the apply
    /// workflow's), which no one reviews.
    fn public(
        base: Option<&Desired>,
        account: &Account,
        planned: &reconcile_core::engine::DesiredResources,
        review: bool,
        merged: bool,
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
        let deployment = Some(base.deployment.clone());
        let public = Public { base: Some(declared), deployment, review, merged, ..Public::default() };
        Ok((public, Some(last_applied)))
    }
}

/// A plan as its audience sees it.
pub struct Shown {
    pub plan: Plan,
    /// The desired resources it was made from.
    pub resources: DesiredResources,
    /// What was last applied, for the Terraform view's drift (a public plan's base).
    pub last_applied: Option<LastApplied>,
    /// Why apply would refuse it, if it would: such a plan is printed, never saved.
    pub refused: Result<(), CliError>,
}

impl<B: Backend> Session<B> {
    /// The plan (see [`Session::plan`]) as `audience` may see it, with what its changes do to the
    /// bill (a destroy's is not estimated) and, when refused, what resolves it.
    pub async fn shown_plan(&self, attribute: Option<u32>, audience: &Audience) -> Result<Shown, CliError> {
        let planned = self.plan(attribute).await?;
        let (mut plan, last_applied) = match audience {
            Audience::Private => (planned.plan, None),
            Audience::Public { base, merged } => {
                let review = !audience.is_the_default_branch(&self.inputs().desired);
                let (public, last_applied) =
                    Audience::public(base.as_deref(), &planned.account, &planned.resources, review, *merged)?;
                (audience::publish(planned.plan, &planned.resources, &public), last_applied)
            }
        };
        if !plan.destroy {
            plan.costs = self.costs(&plan, &planned.account).await;
        }
        let refused = refuse_on(&plan.findings);
        plan.next_steps = next_steps(self.inputs(), &plan, audience.is_public());
        Ok(Shown { plan, resources: planned.resources, last_applied, refused })
    }
}

impl Audience {
    pub fn is_public(&self) -> bool {
        matches!(self, Audience::Public { .. })
    }

    /// The error findings for which a pull request's status fails: those of a public plan,
    /// which the pipeline would not carry out as it stands, but the counts of what desired.toml
    /// does not declare (no pull request's doing). The default branch's own plan (its
    /// desired.toml is its base, or was just merged onto it: the apply workflow's) is no pull
    /// request's: drift it finds (D103, say) is what its apply puts back.
    pub fn failing<'p>(&self, plan: &'p Plan, desired: &Desired) -> Vec<&'p str> {
        if !self.is_public() || self.is_the_default_branch(desired) {
            return Vec::new();
        }
        plan.findings
            .iter()
            .filter(|f| f.severity == Severity::Error && !reconcile_core::audience::is_counted(f))
            .map(|f| f.code.as_str())
            .collect()
    }
}

/// What resolves a refused plan's findings, which it leads with: the lines a new bake target
/// needs in desired.toml (W401), the command that imports what exists without the mark (W601; a
/// public plan names nothing of what is not ours).
fn next_steps(inputs: &Inputs, plan: &Plan, public: bool) -> Vec<NextStep> {
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
