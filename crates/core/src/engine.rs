//! The engine: makes a plan from every reconciler, and carries a plan out in dependency order
//! with bounded concurrency.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use futures::future::join_all;

use crate::address::{Address, ResourceKind};
use crate::desired::{Desired, Topic};
use crate::plan::{Action, Change, DesiredResource, Finding, MarkOrder, Observed, Plan, Severity};
use crate::reconciler::{Account, Applied, Observations, ReconcileError, Reconciler};

pub use crate::plan::{DesiredResources, NEEDS_AN_ADMINISTRATOR};

/// Finding code: a declared resource could not be read (its service kept failing), so apply
/// leaves it, and everything that depends on it, alone. Stable; never reused.
pub const UNREADABLE: &str = "E101";

/// What a plan does when one reconciler cannot read its resources.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenUnreadable {
    /// Fail: `plan` and `drift` report the truth or nothing.
    Fail,
    /// Plan the rest, with an [`UNREADABLE`] error finding per resource it could not read:
    /// `apply` changes what does not depend on them, and reports them failed. Fails all the same
    /// when nothing at all could be read.
    PlanTheRest,
}

/// Every desired resource of every resource crate, keyed by address, with what they ask of
/// each other resolved: a resource [`DesiredResource::last`] depends on every other one, so it
/// is applied only once everything else succeeded, and one that grants by the mark on every one
/// reached through it ([`MarkOrder`]).
pub fn desired_resources(resources: impl IntoIterator<Item = DesiredResource>) -> DesiredResources {
    let mut resources: DesiredResources = resources.into_iter().map(|r| (r.address.clone(), r)).collect();
    let reached: Vec<Address> =
        resources.values().filter(|r| r.mark == MarkOrder::Reached).map(|r| r.address.clone()).collect();
    for resource in resources.values_mut().filter(|r| r.mark == MarkOrder::Grants) {
        resource.depends_on.extend(reached.iter().cloned());
    }
    let last: Vec<Address> = resources.values().filter(|r| r.last).map(|r| r.address.clone()).collect();
    for address in last {
        let others: Vec<Address> = resources.keys().filter(|other| **other != address).cloned().collect();
        resources.get_mut(&address).expect("listed above").depends_on = others;
    }
    resources
}

/// desired.toml's own findings and `more` (the bake cross-check's, say), ranked: what a run
/// that reads no account reports.
pub fn desired_findings(desired: &Desired, more: impl IntoIterator<Item = Finding>) -> Vec<Finding> {
    let mut findings: Vec<Finding> = desired.findings.iter().map(|finding| finding.to_finding()).chain(more).collect();
    Finding::rank(&mut findings);
    findings
}

/// How to make a plan, beyond what it is made from.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    pub when_unreadable: WhenUnreadable,
    /// Findings from beyond the reconcilers (the bake cross-check, a GitHub side not checked),
    /// ranked with theirs.
    pub findings: Vec<Finding>,
    /// A destroy plan: delete what desired.toml declares and reconcile made
    /// ([`crate::destroy`]), instead of making the account match it.
    pub destroy: bool,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions { when_unreadable: WhenUnreadable::Fail, findings: Vec::new(), destroy: false }
    }
}

/// Observes every desired resource (all reconcilers at once) and diffs. Never writes.
pub async fn plan(
    reconcilers: &[Box<dyn Reconciler>],
    desired: &Desired,
    resources: &DesiredResources,
    account: &Account,
) -> Result<Plan, Vec<ReconcileError>> {
    plan_with(reconcilers, desired, resources, account, PlanOptions::default()).await
}

/// [`plan`], choosing what an unreadable service does to it and adding findings from elsewhere:
/// the plan is complete when it returns, its findings ranked once, here.
pub async fn plan_with(
    reconcilers: &[Box<dyn Reconciler>],
    desired: &Desired,
    resources: &DesiredResources,
    account: &Account,
    options: PlanOptions,
) -> Result<Plan, Vec<ReconcileError>> {
    let wanted: Vec<&DesiredResource> = resources.values().collect();
    let mut findings: Vec<Finding> =
        desired.findings.iter().map(|finding| finding.to_finding()).chain(options.findings).collect();
    let mut observations = observe_all(reconcilers, &wanted, options.when_unreadable, &mut findings).await?;
    findings.extend(std::mem::take(&mut observations.findings));
    let mut observed = observations.resources;
    let mut changes = Vec::new();
    let mut takeovers = BTreeMap::new();
    if options.destroy {
        // What a reconciler found undeclared (a repository to prune) is not the destroy's.
        observed.retain(|address, _| crate::audience::root(resources, address).is_some());
        let (deletes, refusals) = crate::destroy::changes(resources, &observed);
        changes = deletes;
        findings.extend(refusals);
    } else {
        let (found, taken) = crate::ownership::takeovers(resources, &observed);
        findings.extend(found);
        takeovers = taken;
        // What is one per account and someone else's: used as it is, never changed.
        let (found, used) = crate::ownership::shared(resources, &observed);
        findings.extend(found);
        let replace: BTreeSet<Address> = observations.replace.iter().map(|r| r.address.clone()).collect();
        for (address, observation) in &observed {
            if used.contains(address) {
                continue;
            }
            let replaced = replace.contains(address);
            if let Some(change) = change_for(reconcilers, address, resources.get(address), observation, replaced) {
                changes.push(change);
            }
        }
        // A replacement's finding, unless the plan creates the resource anyway, which repairs it.
        for replacement in observations.replace {
            let created = changes.iter().any(|c| c.address == replacement.address && c.action == Action::Create);
            if !created {
                findings.push(replacement.finding);
            }
        }
    }

    crate::plan::order(&mut changes);
    let impacts = assess(reconcilers, &changes, resources, &mut findings).await?;
    // Only what a change is made for: the takeover of a resource the plan does not change is
    // no takeover.
    takeovers.retain(|address, _| changes.iter().any(|change| &change.address == address));
    let administrators = administrator_changes(reconcilers, &changes, &takeovers);
    if desired.referred(Topic::CiRole).next().is_some() && !administrators.is_empty() {
        findings.push(crate::plan::needs_an_administrator(&administrators));
    }
    Finding::rank(&mut findings);
    let destroy = options.destroy;
    Ok(Plan {
        changes,
        findings,
        observed,
        impacts,
        destroy,
        takeovers,
        administrators,
        ..Plan::new(&account.id, &account.region)
    })
}

/// What every reconciler observes of `wanted`; when one cannot read and `when_unreadable`
/// says so, what the others observed, with an error finding on each resource left unread.
async fn observe_all(
    reconcilers: &[Box<dyn Reconciler>],
    wanted: &[&DesiredResource],
    when_unreadable: WhenUnreadable,
    findings: &mut Vec<Finding>,
) -> Result<Observations, Vec<ReconcileError>> {
    match observe(reconcilers, wanted).await {
        Ok(observations) => Ok(observations),
        Err(errors) if when_unreadable == WhenUnreadable::Fail => Err(errors),
        Err(_) => {
            let (observations, unreadable) = observe_each(reconcilers, wanted).await;
            if observations.resources.is_empty() {
                return Err(unreadable.into_iter().map(|(_, error)| error).collect());
            }
            for (kinds, error) in unreadable {
                findings.extend(wanted.iter().filter(|r| kinds.contains(&r.address.kind)).map(|r| Finding {
                    code: UNREADABLE.to_owned(),
                    severity: Severity::Error,
                    address: Some(r.address.clone()),
                    message: format!(
                        "could not be read, so apply leaves it, and everything that depends on it, alone: {error}"
                    ),
                    overridden_by: None,
                }));
            }
            Ok(observations)
        }
    }
}

/// What the changes will do beyond their fields, each reconciler for its own, all at once: the
/// impacts, and the findings added to `findings`.
async fn assess(
    reconcilers: &[Box<dyn Reconciler>],
    changes: &[Change],
    resources: &DesiredResources,
    findings: &mut Vec<Finding>,
) -> Result<BTreeMap<Address, crate::plan::Impact>, Vec<ReconcileError>> {
    let assessments =
        join_all(
            reconcilers.iter().map(|reconciler| {
                let share: Vec<&Change> =
                    changes.iter().filter(|c| reconciler.kinds().contains(&c.address.kind)).collect();
                async move {
                    if share.is_empty() { Ok(Default::default()) } else { reconciler.assess(&share, resources).await }
                }
            }),
        )
        .await;
    let mut impacts = BTreeMap::new();
    let mut errors = Vec::new();
    for assessment in assessments {
        match assessment {
            Ok(assessment) => {
                impacts.extend(assessment.impacts);
                findings.extend(assessment.findings);
            }
            Err(error) => errors.push(error),
        }
    }
    if errors.is_empty() { Ok(impacts) } else { Err(errors) }
}

/// Every reconciler observes its share of `wanted`, all at once; the observations of those that
/// succeeded, and for each that failed, its kinds and its error.
async fn observe_each(
    reconcilers: &[Box<dyn Reconciler>],
    wanted: &[&DesiredResource],
) -> (Observations, Vec<(&'static [ResourceKind], ReconcileError)>) {
    let results = join_all(reconcilers.iter().map(|reconciler| {
        let share: Vec<&DesiredResource> =
            wanted.iter().copied().filter(|r| reconciler.kinds().contains(&r.address.kind)).collect();
        async move {
            let result = if share.is_empty() { Ok(Observations::default()) } else { reconciler.observe(&share).await };
            (reconciler.kinds(), result)
        }
    }))
    .await;
    let mut all = Observations::default();
    let mut failed = Vec::new();
    for (kinds, result) in results {
        match result {
            Ok(observations) => {
                all.resources.extend(observations.resources);
                all.findings.extend(observations.findings);
                all.replace.extend(observations.replace);
            }
            Err(error) => failed.push((kinds, error)),
        }
    }
    (all, failed)
}

/// Every reconciler observes its share of `wanted`, all at once.
async fn observe(
    reconcilers: &[Box<dyn Reconciler>],
    wanted: &[&DesiredResource],
) -> Result<Observations, Vec<ReconcileError>> {
    observe_with(reconcilers, wanted, &[]).await
}

/// [`observe`], asking also the reconcilers of `kinds` when none of their kinds is wanted.
async fn observe_with(
    reconcilers: &[Box<dyn Reconciler>],
    wanted: &[&DesiredResource],
    kinds: &[ResourceKind],
) -> Result<Observations, Vec<ReconcileError>> {
    let results = join_all(reconcilers.iter().map(|reconciler| {
        let share: Vec<&DesiredResource> =
            wanted.iter().copied().filter(|r| reconciler.kinds().contains(&r.address.kind)).collect();
        let asked = !share.is_empty() || kinds.iter().any(|kind| reconciler.kinds().contains(kind));
        async move { if asked { reconciler.observe(&share).await } else { Ok(Observations::default()) } }
    }))
    .await;
    let mut all = Observations::default();
    let mut errors = Vec::new();
    for result in results {
        match result {
            Ok(observations) => {
                all.resources.extend(observations.resources);
                all.findings.extend(observations.findings);
                all.replace.extend(observations.replace);
            }
            Err(error) => errors.push(error),
        }
    }
    for resource in wanted {
        if errors.is_empty() && !all.resources.contains_key(&resource.address) {
            errors.push(ReconcileError::new(
                Some(&resource.address),
                "observe",
                "the reconciler returned no observation",
            ));
        }
    }
    if errors.is_empty() { Ok(all) } else { Err(errors) }
}

/// The drift check: `plan` with what the account holds that desired.toml does not declare,
/// from every reconciler that can tell, as findings ranked with the plan's. Read only.
pub async fn survey(
    reconcilers: &[Box<dyn Reconciler>],
    resources: &DesiredResources,
    plan: &mut Plan,
) -> Result<(), Vec<ReconcileError>> {
    let results = join_all(reconcilers.iter().map(|reconciler| {
        let share: Vec<&DesiredResource> =
            resources.values().filter(|r| reconciler.kinds().contains(&r.address.kind)).collect();
        async move { reconciler.survey(&share).await }
    }))
    .await;
    let mut errors = Vec::new();
    for result in results {
        match result {
            Ok(found) => plan.findings.extend(found),
            Err(error) => errors.push(error),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Finding::rank(&mut plan.findings);
    Ok(())
}

/// The change the reconciler of `address`'s kind makes of a desired resource and what was
/// observed (its own `diff`, which may refine the action), a replacement when its kind's table
/// says so ([`replacing`]). `None` when nothing differs, or no reconciler owns the kind.
pub fn diff_one(
    reconcilers: &[Box<dyn Reconciler>],
    address: &Address,
    desired: Option<&DesiredResource>,
    observed: &Observed,
) -> Option<Change> {
    let reconciler = reconciler_for(reconcilers, address.kind)?;
    Some(replacing(reconciler.diff(address, desired, observed)?, reconciler.fields()))
}

/// `change`, a replacement if it updates a field its kind's table (among `tables`) says AWS
/// sets only when it makes the resource: no crate has to ask for it, so a field marked
/// create-only is never planned as an update AWS refuses. The kind's `refusal` then says
/// whether the replacement may be applied.
pub fn replacing(mut change: Change, tables: &[crate::fields::Fields]) -> Change {
    let table = tables.iter().find(|table| table.kind == change.address.kind);
    let create_only = |name: &str| {
        table.and_then(|table| table.get(name)).is_some_and(|f| f.mutability == crate::fields::Mutability::CreateOnly)
    };
    if change.action == Action::Update && change.field_changes().iter().any(|field| create_only(field.name)) {
        change.action = Action::Replace;
    }
    change
}

/// The change for one address: its reconciler's diff, made a replacement when one was asked
/// for (`replaced`). A create stays a create: creating the resource is the repair.
pub fn change_for(
    reconcilers: &[Box<dyn Reconciler>],
    address: &Address,
    desired: Option<&DesiredResource>,
    observed: &Observed,
    replaced: bool,
) -> Option<Change> {
    let change = diff_one(reconcilers, address, desired, observed);
    if !replaced {
        return change;
    }
    match (change, desired, observed) {
        (Some(change), _, _) if change.action == Action::Create => Some(change),
        (Some(mut change), _, _) if change.action == Action::Update => {
            change.action = Action::Replace;
            Some(change)
        }
        // A delete (or a replacement already) stays what it is.
        (Some(change), _, _) => Some(change),
        (None, Some(desired), Observed::Present(fields)) => Some(Change {
            address: address.clone(),
            action: Action::Replace,
            before: Some(desired.attributes.keys().filter_map(|k| Some((k.clone(), fields.get(k)?.clone()))).collect()),
            after: Some(desired.attributes.clone()),
            depends_on: desired.depends_on.clone(),
        }),
        (None, _, _) => None,
    }
}

pub use crate::schedule::{ApplyEvents, Outcome};

fn reconciler_for(reconcilers: &[Box<dyn Reconciler>], kind: ResourceKind) -> Option<&dyn Reconciler> {
    reconcilers.iter().find(|r| r.kinds().contains(&kind)).map(|r| r.as_ref())
}

/// The result of one apply, one entry per change of the plan, in plan order.
#[derive(Debug, Default)]
pub struct ApplyReport {
    pub results: Vec<(Address, Action, Outcome, Duration)>,
    /// Declared resources the plan could not read, so nothing was done to them ([`UNREADABLE`]).
    pub unreadable: Vec<Address>,
}

impl ApplyReport {
    pub fn succeeded(&self) -> bool {
        self.unreadable.is_empty()
            && self
                .results
                .iter()
                .all(|(_, _, outcome, _)| matches!(outcome, Outcome::Applied | Outcome::Adopted | Outcome::Left { .. }))
    }

    /// The changes left for an administrator, each with why.
    pub fn left(&self) -> Vec<(&Address, &str)> {
        self.results
            .iter()
            .filter_map(|(address, _, outcome, _)| match outcome {
                Outcome::Left { why } => Some((address, why.as_str())),
                _ => None,
            })
            .collect()
    }
}

/// The resources a plan could not read.
pub fn unreadable(plan: &Plan) -> Vec<Address> {
    plan.findings.iter().filter(|f| f.code == UNREADABLE).filter_map(|f| f.address.clone()).collect()
}

/// Why apply refused to start.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("the plan deletes or replaces {} resource(s) ({}); pass --allow-delete to allow it", .0.len(), .0.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))]
    DeleteNotAllowed(Vec<Address>),
    #[error("no reconciler handles {0}")]
    NoReconciler(Address),
    /// A reconciler's own check, such as a repository to delete that still holds images.
    #[error("{}", .0.join("; "))]
    Refused(Vec<String>),
}

#[derive(Debug, Clone, Copy)]
pub struct ApplyOptions<'a> {
    pub allow_delete: bool,
    /// The changes not carried out, each with why: those only an administrator makes, when the
    /// caller is a CI role. What depends on a left update goes on (the resource exists, as it
    /// was); what depends on a left create, replacement or delete is skipped.
    pub left: &'a [(Address, String)],
    pub concurrency: usize,
    /// Set when the run is interrupted: no change starts after it is, the running ones finish.
    pub stop: Option<&'a std::sync::atomic::AtomicBool>,
}

impl ApplyOptions<'_> {
    fn stopped(&self) -> bool {
        self.stop.is_some_and(|stop| stop.load(std::sync::atomic::Ordering::SeqCst))
    }
}

/// Why taking a resource over is an administrator's: the apply role could otherwise make any
/// resource of the account its own (and the builds', which reach what carries the mark) by
/// listing it in desired.toml, a pull request's file.
pub const TAKING_OVER: &str = "taking over a resource reconcile does not own yet: an import, or a re-mark";

/// The changes of `changes` only an administrator makes, in plan order, each with why: each
/// reconciler's own, and every takeover. Empty when the apply role may make them all.
pub fn administrator_changes(
    reconcilers: &[Box<dyn Reconciler>],
    changes: &[Change],
    takeovers: &BTreeMap<Address, crate::plan::Takeover>,
) -> Vec<(Address, String)> {
    changes
        .iter()
        .filter_map(|change| {
            let why = reconciler_for(reconcilers, change.address.kind)
                .and_then(|r| r.administrators_only(change))
                .or_else(|| takeovers.contains_key(&change.address).then_some(TAKING_OVER))?;
            Some((change.address.clone(), why.to_owned()))
        })
        .collect()
}

/// [`administrator_changes`], grouped by why: ``"`iam_ci_role.apply`, `iam_ci_role.plan` (the CI
/// identities: ...)"`` each.
pub fn administrators_only(
    reconcilers: &[Box<dyn Reconciler>],
    changes: &[Change],
    takeovers: &BTreeMap<Address, crate::plan::Takeover>,
) -> Vec<String> {
    crate::plan::grouped(&administrator_changes(reconcilers, changes, takeovers))
}

/// Everything apply checks before its first call: deletes allowed, a reconciler for every
/// change, and no reconciler's own refusal, of every change but those `left` for an
/// administrator (which are not carried out, so nothing of them needs allowing). Apply runs it
/// itself; the binary runs it earlier too, so that a refused plan takes no lock either.
pub fn preflight(
    reconcilers: &[Box<dyn Reconciler>],
    plan: &Plan,
    allow_delete: bool,
    left: &[(Address, String)],
) -> Result<(), Refusal> {
    let carried_out = || plan.changes.iter().filter(|c| !left.iter().any(|(address, _)| *address == c.address));
    let deletes: Vec<Address> =
        carried_out().filter(|c| c.action.is_destructive()).map(|c| c.address.clone()).collect();
    if !deletes.is_empty() && !allow_delete {
        return Err(Refusal::DeleteNotAllowed(deletes));
    }
    let mut refusals = Vec::new();
    for change in carried_out() {
        match reconciler_for(reconcilers, change.address.kind) {
            None => return Err(Refusal::NoReconciler(change.address.clone())),
            Some(reconciler) => {
                refusals.extend(reconciler.refusal(change).map(|why| format!("{}: {why}", change.address)));
            }
        }
    }
    if !refusals.is_empty() {
        return Err(Refusal::Refused(refusals));
    }

    Ok(())
}

/// Carries out every change of `plan` and nothing else.
///
/// A change runs once every change it depends on has succeeded; a change whose dependency failed
/// is skipped, and independent changes go on. Checks that could refuse the whole apply run
/// before the first call.
pub async fn apply(
    reconcilers: &[Box<dyn Reconciler>],
    plan: &Plan,
    options: ApplyOptions<'_>,
    events: &dyn ApplyEvents,
) -> Result<ApplyReport, Refusal> {
    preflight(reconcilers, plan, options.allow_delete, options.left)?;

    // What could not be read counts as failed, so that what depends on it is skipped.
    let unreadable = unreadable(plan);
    // A left update whose kind says it sets nothing a dependent needs: the resource exists,
    // ours, as it was, so what depends on it goes on. A left takeover's resource is not ours yet;
    // what depends on any other left change is left with it.
    // Asked of every change: whether it was left comes first, so an apply that leaves nothing
    // (an administrator's) never scans the plan once per change.
    let left_as_it_was = |address: &Address| {
        options.left.iter().any(|(left, _)| left == address)
            && !plan.takeovers.contains_key(address)
            && plan.changes.iter().any(|c| {
                c.address == *address
                    && c.action == Action::Update
                    && reconciler_for(reconcilers, c.address.kind).is_some_and(|r| r.frees_its_dependents(c))
            })
    };
    let in_plan: BTreeSet<&Address> =
        plan.changes.iter().map(|c| &c.address).filter(|a| !left_as_it_was(a)).chain(&unreadable).collect();
    let mut outcomes: BTreeMap<Address, (Outcome, Duration)> = unreadable
        .iter()
        .map(|address| {
            let failed = ReconcileError::new(Some(address), "read it", "its service kept failing");
            (address.clone(), (Outcome::Failed(failed), Duration::ZERO))
        })
        .collect();
    for (address, why) in options.left {
        if plan.changes.iter().any(|c| c.address == *address) {
            outcomes.insert(address.clone(), (Outcome::Left { why: why.clone() }, Duration::ZERO));
        }
    }
    // Each change starts as soon as what it depends on is done and a slot is free.
    let stopped = || options.stopped();
    crate::schedule::run(
        &plan.changes,
        &in_plan,
        &mut outcomes,
        options.concurrency,
        &stopped,
        events,
        |change| async move {
            // Started only when a slot frees, and never after an interruption (the scheduler's).
            let reconciler = reconciler_for(reconcilers, change.address.kind).expect("checked above");
            match reconciler.apply(change, events).await {
                Ok(Applied::Done) => Outcome::Applied,
                Ok(Applied::Adopted) => Outcome::Adopted,
                Err(error) => Outcome::Failed(error),
            }
        },
    )
    .await;

    let mut report = ApplyReport { unreadable, ..ApplyReport::default() };
    for change in &plan.changes {
        let (outcome, elapsed) = outcomes.remove(&change.address).expect("every change has an outcome");
        report.results.push((change.address.clone(), change.action, outcome, elapsed));
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeReconciler;
    use crate::plan::DesiredResource;
    use crate::reconciler::Silent;
    use serde_json::Map;
    use std::sync::{Arc, Mutex};

    #[test]
    fn a_resource_applied_last_depends_on_every_other_desired_resource() {
        let resource = |kind, name: &str| DesiredResource::new(Address::new(kind, name), name, Map::new());
        let switch = resource(crate::fake::kinds::GITHUB_VARIABLE, "NIGHTLY_ENABLED").applied_last();
        let mut policy = resource(crate::fake::kinds::ECR_LIFECYCLE_POLICY, "a");
        policy.depends_on = vec![Address::new(crate::fake::kinds::ECR_REPOSITORY, "a")];
        let resources = desired_resources([
            switch.clone(),
            resource(crate::fake::kinds::ECR_REPOSITORY, "a"),
            policy,
            resource(crate::fake::kinds::GITHUB_VARIABLE, "AWS_REGION"),
        ]);
        assert_eq!(
            resources[&switch.address].depends_on,
            [
                Address::new(crate::fake::kinds::ECR_REPOSITORY, "a"),
                Address::new(crate::fake::kinds::ECR_LIFECYCLE_POLICY, "a"),
                Address::new(crate::fake::kinds::GITHUB_VARIABLE, "AWS_REGION"),
            ]
        );
        let policy = &resources[&Address::new(crate::fake::kinds::ECR_LIFECYCLE_POLICY, "a")];
        assert_eq!(
            policy.depends_on,
            [Address::new(crate::fake::kinds::ECR_REPOSITORY, "a")],
            "the others keep theirs"
        );
        assert!(resources[&Address::new(crate::fake::kinds::ECR_REPOSITORY, "a")].depends_on.is_empty());
    }

    #[test]
    fn a_requested_replacement_replaces_what_exists_and_leaves_a_create_or_delete_alone() {
        let reconcilers: Vec<Box<dyn Reconciler>> = vec![Box::new(FakeReconciler::default())];
        let address = Address::new(crate::fake::kinds::ECR_REPOSITORY, "r");
        let fields = |value: &str| crate::json::object(serde_json::json!({ "a": value, "extra": 1 }));
        let mut desired =
            DesiredResource::new(address.clone(), "r", crate::json::object(serde_json::json!({ "a": "x" })));
        desired.depends_on = vec![Address::new(crate::fake::kinds::ECR_LIFECYCLE_POLICY, "p")];
        let same = Observed::Present(fields("x"));
        let action = |d: Option<&DesiredResource>, o: &Observed, replaced: bool| {
            change_for(&reconcilers, &address, d, o, replaced).map(|c| c.action)
        };
        // Nothing to change, but a replacement asked for: planned, with only managed fields before.
        let replaced = change_for(&reconcilers, &address, Some(&desired), &same, true).unwrap();
        assert_eq!(replaced.action, Action::Replace);
        assert_eq!(replaced.before, Some(crate::json::object(serde_json::json!({ "a": "x" }))));
        assert_eq!(replaced.after, Some(desired.attributes.clone()));
        assert_eq!(replaced.depends_on, desired.depends_on);
        assert_eq!(action(Some(&desired), &same, false), None);
        assert_eq!(action(Some(&desired), &Observed::Present(fields("y")), true), Some(Action::Replace));
        assert_eq!(action(Some(&desired), &Observed::Present(fields("y")), false), Some(Action::Update));
        assert_eq!(action(Some(&desired), &Observed::Absent, true), Some(Action::Create));
        assert_eq!(action(None, &same, true), Some(Action::Delete));
        assert_eq!(action(None, &Observed::Absent, true), None);
    }

    #[test]
    fn changes_only_an_administrator_makes_are_named_together_by_why_in_plan_order() {
        let fake = FakeReconciler {
            administrators: BTreeMap::from([("a", "why one"), ("b", "why two"), ("c", "why one")])
                .into_iter()
                .map(|(name, why)| (name.to_owned(), why))
                .collect(),
            ..FakeReconciler::default()
        };
        let reconcilers: Vec<Box<dyn Reconciler>> = vec![Box::new(fake)];
        let changes: Vec<Change> = ["a", "free", "b", "c"]
            .iter()
            .map(|name| change(crate::fake::kinds::ECR_REPOSITORY, name, Action::Update, &[]))
            .collect();
        let none = BTreeMap::new();
        assert_eq!(
            administrators_only(&reconcilers, &changes, &none),
            ["`ecr_repository.a`, `ecr_repository.c` (why one)", "`ecr_repository.b` (why two)"]
        );
        assert_eq!(administrators_only(&reconcilers, &changes[1..2], &none), Vec::<String>::new());
        // A kind no reconciler owns is not the apply role's business here (preflight refuses it).
        let github = change(crate::fake::kinds::GITHUB_VARIABLE, "a", Action::Update, &[]);
        assert_eq!(administrators_only(&reconcilers, &[github], &none), Vec::<String>::new());
        // A takeover is an administrator's whatever its reconciler says of the change.
        let takeovers = BTreeMap::from([
            (changes[1].address.clone(), crate::plan::Takeover::Import),
            (changes[3].address.clone(), crate::plan::Takeover::Remark),
        ]);
        assert_eq!(
            administrators_only(&reconcilers, &changes, &takeovers),
            [
                "`ecr_repository.a`, `ecr_repository.c` (why one)".to_owned(),
                format!("`ecr_repository.free` ({TAKING_OVER})"),
                "`ecr_repository.b` (why two)".to_owned(),
            ]
        );
        // Thirty imports: the first five named, the rest counted (the plan lists them).
        let many: Vec<Change> = (0..30)
            .map(|n| change(crate::fake::kinds::ECR_REPOSITORY, &format!("r{n:02}"), Action::Update, &[]))
            .collect();
        let all = many.iter().map(|c| (c.address.clone(), crate::plan::Takeover::Import)).collect();
        assert_eq!(
            administrators_only(&reconcilers, &many, &all),
            [format!(
                "`ecr_repository.r00`, `ecr_repository.r01`, `ecr_repository.r02`, `ecr_repository.r03`, \
                 `ecr_repository.r04` and 25 more ({TAKING_OVER})"
            )]
        );
    }

    #[test]
    fn what_grants_by_the_mark_waits_for_everything_reached_through_it() {
        let resource = |name: &str, order: MarkOrder| {
            DesiredResource::new(Address::new(crate::fake::kinds::ECR_REPOSITORY, name), name, Map::new())
                .ordered_by_mark(order)
        };
        let resources = desired_resources([
            resource("pytorch", MarkOrder::Reached),
            resource("vllm", MarkOrder::Reached),
            resource("policy", MarkOrder::Grants),
            resource("boundary", MarkOrder::Grants),
            resource("other", MarkOrder::Neither),
        ]);
        let waits = |name: &str| {
            let address = Address::new(crate::fake::kinds::ECR_REPOSITORY, name);
            resources[&address].depends_on.iter().map(|a| a.name.clone()).collect::<Vec<_>>()
        };
        assert_eq!(waits("policy"), ["pytorch", "vllm"]);
        assert_eq!(waits("boundary"), ["pytorch", "vllm"]);
        assert_eq!(waits("pytorch"), Vec::<String>::new());
        assert_eq!(waits("other"), Vec::<String>::new());
    }

    #[test]
    fn a_plan_says_an_administrator_must_apply_it_only_where_ci_is_declared() {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let resources = desired_resources(["a", "b"].map(|name| {
            DesiredResource::new(Address::new(crate::fake::kinds::ECR_REPOSITORY, name), name, Map::new())
        }));
        let w501 = |ci: &str| {
            let fake = FakeReconciler {
                administrators: BTreeMap::from([("a".to_owned(), "why")]),
                ..FakeReconciler::default()
            };
            let reconcilers: Vec<Box<dyn Reconciler>> = vec![Box::new(fake)];
            let text = format!("region = \"us-east-1\"\n{ci}");
            let claims = [&crate::desired::testing::CI, &crate::desired::testing::GITHUB];
            let desired = Desired::parse_claimed(std::path::Path::new("desired.toml"), &text, &claims).unwrap();
            let account = Account::new("123456789012", "us-east-1");
            let plan = runtime.block_on(plan(&reconcilers, &desired, &resources, &account)).unwrap();
            assert_eq!(plan.changes.len(), 2);
            plan.findings.into_iter().filter(|f| f.code == NEEDS_AN_ADMINISTRATOR).collect::<Vec<_>>()
        };
        assert_eq!(w501(""), []);
        let said = w501(
            "[github]\nrepository = \"ROCm/rocm-bake\"\n[ci]\nplan_role = \"p\"\ndrift_role = \"d\"\n\
             apply_role = \"a\"\nenvironment = \"aws-production\"\n",
        );
        assert_eq!(said.len(), 1);
        assert_eq!(said[0].severity, Severity::Warning);
        assert_eq!(
            said[0].message,
            "this plan changes `ecr_repository.a` (why), which the apply role never does: an apply as a CI role makes \
             every other change and leaves these, and an administrator applies them from a terminal with `reconcile \
             apply`"
        );
    }

    #[test]
    fn what_is_left_for_an_administrator_is_never_sent_nor_holds_back_the_rest_and_takes_its_dependents() {
        let role = Address::new(crate::fake::kinds::ECR_REPOSITORY, "role");
        let made = Address::new(crate::fake::kinds::ECR_REPOSITORY, "made");
        let gone = Address::new(crate::fake::kinds::ECR_REPOSITORY, "gone");
        let plan = plan_of(vec![
            change(crate::fake::kinds::ECR_REPOSITORY, "gone", Action::Delete, &[]),
            change(crate::fake::kinds::ECR_REPOSITORY, "role", Action::Update, &[]),
            change(crate::fake::kinds::ECR_REPOSITORY, "made", Action::Create, &[]),
            change(crate::fake::kinds::ECR_REPOSITORY, "other", Action::Update, &[]),
            change(crate::fake::kinds::ECR_LIFECYCLE_POLICY, "role", Action::Update, std::slice::from_ref(&role)),
            change(crate::fake::kinds::ECR_LIFECYCLE_POLICY, "made", Action::Create, std::slice::from_ref(&made)),
        ]);
        let left = [(role.clone(), "why".to_owned()), (made.clone(), "why".to_owned()), (gone, "why".to_owned())];
        // A left delete needs no --allow-delete: it is not carried out.
        let (report, log) = run_leaving(&plan, &[], false, &left);
        let report = report.unwrap();
        assert_eq!(
            log.iter().filter(|l| l.starts_with("apply")).cloned().collect::<BTreeSet<_>>(),
            BTreeSet::from(["apply ecr_lifecycle_policy.role".to_owned(), "apply ecr_repository.other".to_owned()]),
            "nothing left is sent; a left update's dependent goes on"
        );
        assert!(report.succeeded(), "{report:?}");
        assert_eq!(report.left().len(), 4, "the three, and what depends on the left create");
        let outcome = |address: &str| {
            report.results.iter().find(|(a, ..)| a.to_string() == address).map(|(_, _, o, _)| o).unwrap()
        };
        assert!(
            matches!(outcome("ecr_lifecycle_policy.made"), Outcome::Left { why } if why.contains(&made.to_string())),
            "{report:?}"
        );
        assert!(matches!(outcome("ecr_repository.role"), Outcome::Left { why } if *why == "why"));
        // Without anything left, the delete needs its flag as ever.
        assert!(matches!(run(&plan, &[], false).0, Err(Refusal::DeleteNotAllowed(_))));
        // A left update that takes the resource over (an import) holds back what depends on it:
        // the resource is not this deployment's until an administrator has applied it.
        let mut taken = plan.clone();
        taken.takeovers.insert(role.clone(), crate::plan::Takeover::Import);
        let (report, log) = run_leaving(&taken, &[], false, &left);
        assert!(!log.contains(&"apply ecr_lifecycle_policy.role".to_owned()), "{log:?}");
        let report = report.unwrap();
        let held = report.results.iter().find(|(a, ..)| a.to_string() == "ecr_lifecycle_policy.role").unwrap();
        assert!(matches!(&held.2, Outcome::Left { why } if why.contains(&role.to_string())), "{report:?}");
    }

    fn change(kind: ResourceKind, name: &str, action: Action, depends_on: &[Address]) -> Change {
        Change {
            address: Address::new(kind, name),
            action,
            before: None,
            after: Some(Map::new()),
            depends_on: depends_on.to_vec(),
        }
    }

    fn plan_of(changes: Vec<Change>) -> Plan {
        Plan { changes, ..Plan::new("1", "us-east-1") }
    }

    fn run(plan: &Plan, fail: &[&str], allow_delete: bool) -> (Result<ApplyReport, Refusal>, Vec<String>) {
        run_leaving(plan, fail, allow_delete, &[])
    }

    fn run_leaving(
        plan: &Plan,
        fail: &[&str],
        allow_delete: bool,
        left: &[(Address, String)],
    ) -> (Result<ApplyReport, Refusal>, Vec<String>) {
        let log = Arc::new(Mutex::new(Vec::new()));
        let fake = FakeReconciler { fail: fail.iter().map(|s| s.to_string()).collect(), ..FakeReconciler::new(&log) };
        let reconcilers: Vec<Box<dyn Reconciler>> = vec![Box::new(fake)];
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let options = ApplyOptions { allow_delete, left, concurrency: 4, stop: None };
        let result = runtime.block_on(apply(&reconcilers, plan, options, &Silent));
        let log = log.lock().unwrap().clone();
        (result, log)
    }

    #[test]
    fn dependents_wait_for_and_are_skipped_after_a_failed_dependency() {
        let repo_a = Address::new(crate::fake::kinds::ECR_REPOSITORY, "a");
        let repo_b = Address::new(crate::fake::kinds::ECR_REPOSITORY, "b");
        let plan = plan_of(vec![
            change(crate::fake::kinds::ECR_REPOSITORY, "a", Action::Create, &[]),
            change(crate::fake::kinds::ECR_REPOSITORY, "b", Action::Create, &[]),
            change(crate::fake::kinds::ECR_REPOSITORY, "adopted", Action::Create, &[]),
            change(crate::fake::kinds::ECR_LIFECYCLE_POLICY, "a", Action::Create, &[repo_a]),
            change(crate::fake::kinds::ECR_LIFECYCLE_POLICY, "b", Action::Create, std::slice::from_ref(&repo_b)),
        ]);
        let (report, log) = run(&plan, &["b"], false);
        // Both repositories go first, concurrently; a policy only after its repository.
        assert_eq!(&log[3..], ["apply ecr_lifecycle_policy.a"]);
        let report = report.unwrap();
        let summary: Vec<String> = report
            .results
            .iter()
            .map(|(address, _, outcome, _)| match outcome {
                Outcome::Applied => format!("{address} applied"),
                Outcome::Adopted => format!("{address} adopted"),
                Outcome::Failed(_) => format!("{address} failed"),
                Outcome::NotStarted => format!("{address} not started"),
                Outcome::Skipped { because } => format!("{address} skipped because {because}"),
                Outcome::Left { why } => format!("{address} left: {why}"),
            })
            .collect();
        assert_eq!(
            summary,
            [
                "ecr_repository.a applied",
                "ecr_repository.b failed",
                "ecr_repository.adopted adopted",
                "ecr_lifecycle_policy.a applied",
                "ecr_lifecycle_policy.b skipped because ecr_repository.b",
            ]
        );
        assert!(!report.succeeded());
    }

    #[test]
    fn deletes_are_refused_before_any_call_unless_allowed() {
        let plan = plan_of(vec![
            change(crate::fake::kinds::ECR_REPOSITORY, "a", Action::Create, &[]),
            change(crate::fake::kinds::ECR_LIFECYCLE_POLICY, "old", Action::Delete, &[]),
        ]);
        let (result, log) = run(&plan, &[], false);
        assert!(log.is_empty());
        assert_eq!(
            result.unwrap_err().to_string(),
            "the plan deletes or replaces 1 resource(s) (ecr_lifecycle_policy.old); pass --allow-delete to allow it"
        );
        let (result, _) = run(&plan, &[], true);
        assert!(result.unwrap().succeeded());
    }
}
