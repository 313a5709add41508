//! Whose resources a plan may show, and to whom.
//!
//! A pull request's plan is posted where anyone reads it, from a desired.toml anyone wrote.
//! [`publish`] keeps of it only what the default branch's desired.toml (trusted) declares, under
//! the same key and name: a resource the pull request names that exists and is not declared
//! there becomes an error finding ([`NOT_OURS_PUBLIC`]) with nothing of its live state, even if
//! it carries this deployment's mark ([`crate::ownership`]), which whoever may tag it could have
//! written; and what the account holds beyond desired.toml is counted, not named. The mark, with
//! the deployment's name the default branch gives (never the pull request's), says which of what
//! the pull request prunes may be shown. Taking over what is not ours is [`crate::ownership`]'s.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::address::Address;
use crate::ownership::{MARK_KEY, mark};
use crate::plan::{
    DesiredResources, Finding, NEEDS_AN_ADMINISTRATOR, Observed, Plan, Severity, needs_an_administrator,
};

pub use crate::ownership::NOT_OURS;
pub use crate::plan::ADOPT;

/// Finding code: in a public plan, a resource the pull request declares exists and is not
/// reconcile's: nothing of it is shown. Stable; never reused.
pub const NOT_OURS_PUBLIC: &str = "W602";
/// Finding code: in a public plan, the pull request names another deployment than the default
/// branch's (`deployment`): every resource would be marked as that one's. Stable; never reused.
pub const ANOTHER_DEPLOYMENT: &str = "W605";

/// What a public plan may show: the resources the default branch's desired.toml declares, by
/// address and the name AWS knows them by (`None`: it was not given, so no resource that exists
/// is shown), the deployment whose mark says which of what a pull request prunes is shown (the
/// default branch's: `None` when there is none to read it from, and then none is), and the
/// undeclared resources it may still name (the drift issue's: the repositories the nightly's own
/// bake file pushes to).
pub struct Public {
    pub base: Option<BTreeSet<(Address, String)>>,
    pub deployment: Option<String>,
    pub named: BTreeSet<Address>,
    /// A pull request's review, where a change only an administrator applies fails the status.
    pub review: bool,
    /// The default branch's plan of itself just after a merge onto `base` (the apply workflow's):
    /// what `base` did not declare is hidden as in review unless it carries the mark and would
    /// not change (see [`hidden`]), so a declaration merged despite its W602 changes nothing.
    pub merged: bool,
}

impl Default for Public {
    fn default() -> Public {
        Public { base: None, deployment: None, named: BTreeSet::new(), review: true, merged: false }
    }
}

/// The declared resource `address` belongs to (itself, its parent's parent, or the declared
/// resource it is a member of); `None` for what desired.toml does not declare.
pub(crate) fn root<'a>(resources: &'a DesiredResources, address: &Address) -> Option<&'a Address> {
    let mut resource = resources.get(address).or_else(|| resources.get(&address.declared()))?;
    while let Some(parent) = resource.parent.as_ref().and_then(|parent| resources.get(parent)) {
        resource = parent;
    }
    Some(&resource.address)
}

/// `plan` as it may be shown in public: see the module's documentation. `resources` are the
/// pull request's desired resources the plan was made from.
pub fn publish(mut plan: Plan, resources: &DesiredResources, public: &Public) -> Plan {
    // Every field of a plan, named: one added to `Plan` does not compile here until this says
    // what a public plan shows of it.
    let Plan {
        // Where and by what it was planned, and whether it destroys: shown as they are.
        account: _,
        region: _,
        made_by: _,
        destroy: _,
        // Each filtered below to what is shown (and a prune of the default branch's deployment).
        changes: _,
        observed: _,
        impacts: _,
        attributions: _,
        attribution_note: _,
        administrators: _,
        takeovers: _,
        findings: _,
        // Made after this, from what is shown: the cost line (the binary's `costs`) and what
        // resolves a refusal (the binary names no import command in public).
        costs: _,
        next_steps: _,
    } = &plan;
    let ours = |live: &Map<String, Value>| public.deployment.as_deref().is_some_and(|ours| mark(live) == Some(ours));
    let hidden = hidden(&plan, resources, public, &ours);
    // Shown: what belongs to a declared resource that is not hidden.
    let shown = |address: &Address| root(resources, address).is_some_and(|root| !hidden.contains_key(root));
    // A prune deletes what carries the pull request's mark: shown only when that is the default
    // branch's deployment's (else another team's repository, W605).
    let pruned: BTreeSet<Address> = plan
        .changes
        .iter()
        .filter(|c| root(resources, &c.address).is_none() && c.before.as_ref().is_some_and(ours))
        .map(|c| c.address.clone())
        .collect();
    let shown_or_pruned = |address: &Address| shown(address) || pruned.contains(address);
    keep_shown(&mut plan, resources, &shown, &shown_or_pruned, &ours);
    // A prune by its address alone: what the repository holds (its tags: an owner's address,
    // say) is no pull request reader's, whoever marked it.
    for change in plan.changes.iter_mut().filter(|c| pruned.contains(&c.address)) {
        change.before = Some(Map::new());
        plan.observed.insert(change.address.clone(), Observed::Present(Map::new()));
    }
    let findings = std::mem::take(&mut plan.findings);
    plan.findings = public_findings(findings, resources, public, &shown, &hidden);
    plan
}

/// Hidden: what exists and the default branch does not declare (under the same key and name),
/// even carrying the default branch's deployment's mark, which anyone who can tag the resource
/// could have written (ECR authorizes a create's tags as tagging one that exists); by address,
/// whether it carries that mark. Just after a merge ([`Public::merged`]), not what carries the
/// mark and is already as desired.toml says (imported by an administrator before the merge, as
/// a pull request's failing W501 asks): nothing of it changes, so a forged mark takes nothing.
fn hidden(
    plan: &Plan,
    resources: &DesiredResources,
    public: &Public,
    ours: &dyn Fn(&Map<String, Value>) -> bool,
) -> BTreeMap<Address, bool> {
    resources
        .values()
        .filter(|resource| resource.parent.is_none())
        .filter_map(|resource| match plan.observed.get(&resource.address) {
            Some(Observed::Present(live)) => {
                let named = (resource.address.clone(), resource.remote_name.clone());
                let declared = public.base.as_ref().is_some_and(|base| base.contains(&named));
                let changes = || plan.changes.iter().any(|c| root(resources, &c.address) == Some(&resource.address));
                let trusted = declared || (public.merged && ours(live) && !changes());
                (!trusted).then(|| (resource.address.clone(), ours(live)))
            }
            _ => None,
        })
        .collect()
}

/// `plan` cut down to what is `shown` (and what a prune of the default branch's deployment
/// deletes: `shown_or_pruned`), and its attributions said as in public.
fn keep_shown(
    plan: &mut Plan,
    resources: &DesiredResources,
    shown: &dyn Fn(&Address) -> bool,
    shown_or_pruned: &dyn Fn(&Address) -> bool,
    ours: &dyn Fn(&Map<String, Value>) -> bool,
) {
    plan.changes.retain(|change| shown_or_pruned(&change.address));
    plan.observed.retain(|address, _| shown_or_pruned(address));
    // What is one per account and someone else's is used as it is: nothing of it is shown.
    plan.observed.retain(|address, observed| match (resources.get(address), observed) {
        (Some(resource), Observed::Present(live)) if resource.shared => ours(live),
        _ => true,
    });
    plan.impacts.retain(|address, _| shown(address));
    plan.takeovers.retain(|address, _| shown(address));
    plan.attributions.retain(|address, _| shown(address));
    for attribution in plan.attributions.values_mut() {
        *attribution = attribution.clone().public();
    }
    // What only an administrator changes, of what is shown: a hidden resource's would tell
    // whether its live value is what the pull request guessed.
    plan.administrators.retain(|(address, _)| shown_or_pruned(address));
    let administrators = (!plan.administrators.is_empty()).then(|| needs_an_administrator(&plan.administrators));
    let findings = std::mem::take(&mut plan.findings);
    plan.findings = findings
        .into_iter()
        .filter_map(|finding| match finding.code == NEEDS_AN_ADMINISTRATOR {
            true => administrators.clone(),
            false => Some(finding),
        })
        .collect();
    if plan.attributions.is_empty() {
        plan.attribution_note = None;
    }
}

/// The findings a public plan shows: those about what is shown, about nothing, and about the
/// pull request's own files; those about what is not declared counted by code; one for each
/// hidden resource, and one for a pull request that names another deployment.
fn public_findings(
    all: Vec<Finding>,
    resources: &DesiredResources,
    public: &Public,
    shown: &dyn Fn(&Address) -> bool,
    hidden: &BTreeMap<Address, bool>,
) -> Vec<Finding> {
    let mut counted: BTreeMap<(String, Severity), usize> = BTreeMap::new();
    let mut findings = Vec::new();
    // The pull request's own deployment, as its resources are marked: another than the default
    // branch's would take every resource over in that one's name.
    let named: BTreeSet<&str> = resources.values().filter_map(|resource| mark(&resource.attributes)).collect();
    if let Some(base) = &public.deployment
        && let Some(other) = named.iter().find(|name| *name != base)
    {
        findings.push(Finding {
            code: ANOTHER_DEPLOYMENT.to_owned(),
            severity: Severity::Error,
            address: None,
            message: format!(
                "desired.toml names the deployment `{other}`, and the default branch's names `{base}`: applied, every \
                 resource would be marked as `{other}`'s; a maintainer renames a deployment, and plans it privately"
            ),
            overridden_by: None,
        });
    }
    for finding in all {
        match &finding.address {
            // The apply job leaves it after merge: in review it is an error, so the status fails.
            None if public.review && finding.code == NEEDS_AN_ADMINISTRATOR => findings.push(Finding {
                severity: Severity::Error,
                message: format!(
                    "{}; after merge the apply job would leave them, so this pull request's status fails until an \
                     administrator has applied them",
                    finding.message
                ),
                ..finding
            }),
            None => findings.push(finding),
            Some(address) if shown(address) => findings.push(finding),
            Some(address) if root(resources, address).is_some() => {} // a hidden resource's: said below
            // Another deployment's resources are no pull request's files: counted.
            Some(_) if finding.code == crate::ownership::ANOTHER_DEPLOYMENTS => {
                *counted.entry((finding.code, finding.severity)).or_default() += 1;
            }
            // About the pull request's own files (a bake target it does not declare): its to see.
            Some(_) if finding.code.starts_with('W') => findings.push(finding),
            Some(address) if public.named.contains(&address.declared()) => findings.push(finding),
            Some(_) => *counted.entry((finding.code, finding.severity)).or_default() += 1,
        }
    }
    // Each at the severity its code has (`explain` gives the same), so an error counted is an
    // error; what a pull request's status fails for is the reviewer's to say (`is_counted`).
    for ((code, severity), count) in counted {
        findings.push(Finding {
            code,
            severity,
            address: None,
            message: format!("{count} {COUNTED}"),
            overridden_by: None,
        });
    }
    findings.extend(hidden.iter().map(|(address, &marked)| not_ours(address, marked)));
    Finding::rank(&mut findings);
    findings
}

/// What a counted finding says after its count.
const COUNTED: &str = "finding(s) of this code about what desired.toml does not declare: no public plan, issue or \
                       job log names them; a maintainer's `reconcile drift --private` does";

/// Whether `finding` is a count of findings about what desired.toml does not declare, which a
/// public plan names nothing of: never a pull request's doing, so never why its status fails.
pub fn is_counted(finding: &Finding) -> bool {
    finding.address.is_none()
        && finding
            .message
            .split_once(' ')
            .is_some_and(|(count, rest)| count.bytes().all(|b| b.is_ascii_digit()) && rest == COUNTED)
}

/// W602 for a resource the pull request names that exists and is not reconcile's, saying
/// whether it carries this deployment's mark.
fn not_ours(address: &Address, marked: bool) -> Finding {
    let why = match marked {
        // Left from a declaration since removed, or marked by someone else: the mark alone
        // cannot say which, so it counts for nothing here.
        true => format!(
            "it carries this deployment's `{MARK_KEY}` mark, but the default branch's desired.toml does not \
             declare it: marked by someone else, or left from a declaration since removed"
        ),
        false => format!(
            "it carries no `{MARK_KEY}` mark of this deployment and the default branch's desired.toml does not \
             declare it"
        ),
    };
    Finding {
        code: NOT_OURS_PUBLIC.to_owned(),
        severity: Severity::Error,
        message: format!(
            "`{address}` exists in the account and is not reconcile's ({why}): a public plan shows nothing of \
             it, and neither a pull request nor the apply after its merge changes it; a maintainer imports one \
             and plans it privately"
        ),
        address: Some(address.clone()),
        overridden_by: None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    use crate::plan::{Action, Change, DesiredResource};

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    fn repository(name: &str, adopt: bool) -> (DesiredResource, DesiredResource) {
        let address = Address::new(crate::fake::kinds::ECR_REPOSITORY, name);
        let mut repository = DesiredResource::new(
            address.clone(),
            name,
            map(json!({ "scan_on_push": false, "tags": { MARK_KEY: "rocm-bake" } })),
        );
        if adopt {
            repository.overrides.push(ADOPT);
        }
        let policy = DesiredResource::new(
            Address::new(crate::fake::kinds::ECR_LIFECYCLE_POLICY, name),
            name,
            map(json!({ "policy": { "rules": [] } })),
        )
        .under(&address);
        (repository, policy)
    }

    fn resources(list: Vec<DesiredResource>) -> DesiredResources {
        crate::engine::desired_resources(list)
    }

    const THEIRS: &str = "partner-123456789012 owner@example.com";

    fn theirs() -> Observed {
        Observed::Present(map(json!({
            "scan_on_push": true,
            "repository_policy": THEIRS,
            "tags": { "owner": THEIRS },
        })))
    }

    fn ours() -> Observed {
        Observed::Present(map(json!({ "scan_on_push": true, "tags": { MARK_KEY: "rocm-bake" } })))
    }

    fn change(address: &Address, before: Option<Value>) -> Change {
        Change {
            address: address.clone(),
            action: if before.is_some() { Action::Update } else { Action::Create },
            before: before.map(map),
            after: Some(map(json!({ "scan_on_push": false }))),
            depends_on: Vec::new(),
        }
    }

    fn finding(code: &str, address: Option<Address>, message: &str) -> Finding {
        Finding {
            code: code.to_owned(),
            severity: Severity::Error,
            address,
            message: message.to_owned(),
            overridden_by: None,
        }
    }

    #[test]
    fn a_public_plan_keeps_nothing_of_what_is_not_reconciles_and_counts_what_is_undeclared() {
        let (theirs_repository, theirs_policy) = repository("skunkworks", false);
        let (ours_repository, ours_policy) = repository("pytorch", false);
        let (new_repository, _) = repository("vllm", false);
        let (base_repository, _) = repository("declared-on-main", false);
        // Another team's, marked with this deployment's mark by someone else.
        let (forged_repository, _) = repository("teamy-release", false);
        let (t, tp, o, n, b, f) = (
            theirs_repository.address.clone(),
            theirs_policy.address.clone(),
            ours_repository.address.clone(),
            new_repository.address.clone(),
            base_repository.address.clone(),
            forged_repository.address.clone(),
        );
        let resources = resources(vec![
            theirs_repository,
            theirs_policy,
            ours_repository,
            ours_policy,
            new_repository,
            base_repository,
            forged_repository,
        ]);
        let undeclared = Address::new(crate::fake::kinds::ECR_REPOSITORY, "secret-mi500-bringup");
        let mut plan = Plan::new("123456789012", "us-east-1");
        plan.observed = BTreeMap::from([
            (t.clone(), theirs()),
            (tp.clone(), Observed::Present(map(json!({ "policy": THEIRS })))),
            (o.clone(), ours()),
            (n.clone(), Observed::Absent),
            (b.clone(), Observed::Present(map(json!({ "scan_on_push": true, "tags": {} })))),
            (
                f.clone(),
                Observed::Present(map(json!({ "repository_policy": THEIRS, "tags": { MARK_KEY: "rocm-bake" } }))),
            ),
        ]);
        plan.changes = vec![
            change(&t, Some(json!({ "scan_on_push": true, "tags": THEIRS }))),
            change(&tp, Some(json!({ "policy": THEIRS }))),
            change(&o, Some(json!({ "scan_on_push": true }))),
            change(&n, None),
            change(&f, Some(json!({ "repository_policy": THEIRS }))),
        ];
        plan.findings = vec![
            finding("S102", Some(t.clone()), THEIRS),
            finding("D103", Some(tp.clone()), THEIRS),
            finding("D102", Some(undeclared.clone()), "secret-mi500-bringup"),
            finding("D101", Some(Address::new(crate::fake::kinds::ECR_REPOSITORY, "b")), "b"),
            finding("D102", Some(Address::new(crate::fake::kinds::ECR_REPOSITORY, "atom-wheel-cache")), "named"),
            finding("S102", Some(o.clone()), "ours, shown"),
            finding("W401", None, "about the files"),
            finding("W401", Some(Address::new(crate::fake::kinds::ECR_REPOSITORY, "sglang")), "a bake target's"),
            Finding { severity: Severity::Warning, ..finding("W501", None, "this plan changes `iam_role.codebuild`") },
        ];
        // Only an administrator changes ours and theirs: the public W501 names ours alone.
        plan.administrators = vec![(t.clone(), "a grant".to_owned()), (o.clone(), "a grant".to_owned())];
        let public = Public {
            base: Some(BTreeSet::from([(b.clone(), "declared-on-main".to_owned()), (o.clone(), "pytorch".to_owned())])),
            named: BTreeSet::from([Address::new(crate::fake::kinds::ECR_REPOSITORY, "atom-wheel-cache")]),
            deployment: Some("rocm-bake".to_owned()),
            ..Public::default()
        };
        let shown = publish(plan, &resources, &public);
        let text = format!("{shown:?}");
        assert!(!text.contains("partner") && !text.contains("secret-mi500"), "{text}");
        assert_eq!(shown.changes.iter().map(|c| c.address.clone()).collect::<Vec<_>>(), vec![o.clone(), n.clone()]);
        assert_eq!(shown.observed.keys().cloned().collect::<Vec<_>>(), vec![b, o.clone(), n]);
        let findings: Vec<(&str, Severity, Option<String>)> = shown
            .findings
            .iter()
            .map(|f| (f.code.as_str(), f.severity, f.address.as_ref().map(ToString::to_string)))
            .collect();
        assert_eq!(
            findings,
            vec![
                ("S102", Severity::Error, Some(o.to_string())),
                // Counted, at the severity of what they count.
                ("D101", Severity::Error, None),
                ("D102", Severity::Error, None),
                ("D102", Severity::Error, Some("ecr_repository.atom-wheel-cache".to_owned())),
                ("W401", Severity::Error, None),
                ("W401", Severity::Error, Some("ecr_repository.sglang".to_owned())),
                ("W501", Severity::Error, None),
                ("W602", Severity::Error, Some(t.to_string())),
                ("W602", Severity::Error, Some(f.to_string())),
            ]
        );
        assert!(is_counted(&shown.findings[1]) && is_counted(&shown.findings[2]));
        assert!(!is_counted(&shown.findings[0]) && !is_counted(&shown.findings[6]));
        // This deployment's mark alone, on what the default branch does not declare, shows nothing
        // and says why.
        assert!(
            shown.findings[7].message.contains("carries no `reconcile:deployment` mark"),
            "{}",
            shown.findings[7].message
        );
        assert!(
            shown.findings[8].message.contains("carries this deployment's `reconcile:deployment` mark, but the default branch's desired.toml does not declare it: marked by someone else"),
            "{}",
            shown.findings[8].message
        );
        assert!(shown.findings[1].message.starts_with("1 finding(s) of this code"));
        assert!(shown.findings[6].message.ends_with("until an administrator has applied them"));
        assert!(
            shown.findings[6].message.starts_with("this plan changes `ecr_repository.pytorch` (a grant), which"),
            "{}",
            shown.findings[6].message
        );
    }

    #[test]
    fn a_prune_is_shown_only_of_what_carries_the_default_branchs_deployments_mark() {
        let resources = resources(Vec::new());
        let prune = |name: &str, deployment: &str| Change {
            address: Address::new(crate::fake::kinds::ECR_REPOSITORY, name),
            action: Action::Delete,
            before: Some(map(json!({ "images": 3, "tags": { MARK_KEY: deployment, "owner": THEIRS } }))),
            after: None,
            depends_on: Vec::new(),
        };
        let mut plan = Plan::new("123456789012", "us-east-1");
        plan.changes = vec![prune("retired", "rocm-bake"), prune("team-x/private", "team-x")];
        for change in &plan.changes {
            plan.observed.insert(change.address.clone(), Observed::Present(change.before.clone().unwrap()));
        }
        let public = Public { deployment: Some("rocm-bake".to_owned()), ..Public::default() };
        let shown = publish(plan, &resources, &public);
        let names: Vec<&str> = shown.changes.iter().map(|c| c.address.name.as_str()).collect();
        assert_eq!(names, ["retired"]);
        assert_eq!(shown.observed.keys().map(|a| a.name.as_str()).collect::<Vec<_>>(), ["retired"]);
        // By its address alone: nothing it holds (its owner's address) is shown.
        assert_eq!(shown.changes[0].before, Some(Map::new()));
        assert_eq!(shown.observed.values().next(), Some(&Observed::Present(Map::new())));
    }

    #[test]
    fn just_after_a_merge_only_a_marked_resource_that_would_not_change_is_trusted_beyond_the_base() {
        let (in_sync, _) = repository("imported-before-merge", false);
        let (forged, _) = repository("teamy-release", false);
        let (unmarked, _) = repository("skunkworks", false);
        let addresses = [in_sync.address.clone(), forged.address.clone(), unmarked.address.clone()];
        let resources = resources(vec![in_sync, forged, unmarked]);
        let mut plan = Plan::new("123456789012", "us-east-1");
        plan.observed = BTreeMap::from([
            (addresses[0].clone(), ours()),
            (addresses[1].clone(), ours()),
            (addresses[2].clone(), theirs()),
        ]);
        plan.changes = vec![
            change(&addresses[1], Some(json!({ "scan_on_push": true }))),
            change(&addresses[2], Some(json!({ "scan_on_push": true }))),
        ];
        let public = Public {
            base: Some(BTreeSet::new()),
            deployment: Some("rocm-bake".to_owned()),
            review: false,
            merged: true,
            ..Public::default()
        };
        let shown = publish(plan.clone(), &resources, &public);
        assert!(shown.changes.is_empty(), "{:?}", shown.changes);
        assert_eq!(shown.observed.keys().collect::<Vec<_>>(), [&addresses[0]]);
        let w602: Vec<_> = shown.findings.iter().filter(|f| f.code == NOT_OURS_PUBLIC).map(|f| &f.address).collect();
        assert_eq!(w602, [&Some(addresses[2].clone()), &Some(addresses[1].clone())], "ranked by address");
        // In review, even the one as desired.toml says is hidden: a pull request's plan shows
        // nothing the default branch does not declare.
        let shown = publish(plan, &resources, &Public { merged: false, review: true, ..public });
        assert!(shown.observed.is_empty(), "{:?}", shown.observed);
    }
}
