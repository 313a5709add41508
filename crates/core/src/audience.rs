//! Whose resources a plan may show, and to whom.
//!
//! reconcile tells its own resources by the tag it gives them (`managed-by = reconcile`). Two
//! rules follow from it:
//!
//! - **Adoption is explicit.** A declared resource that exists in the account without that tag
//!   was made by someone else; declaring it would take it over (its policy deleted, its tags
//!   replaced), so the plan refuses it ([`NOT_OURS`]) until desired.toml says `adopt = true` on
//!   that resource, and then says what adopting removes.
//! - **A public plan shows only what reconcile manages.** A pull request's plan is posted where
//!   anyone reads it, from a desired.toml anyone wrote. [`publish`] keeps of it only what belongs
//!   to reconcile, judged from the account (the tag) and from the default branch's desired.toml
//!   (trusted), never from the pull request's: a resource the pull request names that exists and
//!   is neither becomes an error finding ([`NOT_OURS_PUBLIC`]) with nothing of its live state,
//!   and what the account holds beyond desired.toml is counted, not named.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::address::Address;
use crate::plan::{DesiredResources, Finding, NEEDS_AN_ADMINISTRATOR, Observed, Plan, Severity};

/// The tag key reconcile marks its resources with.
pub const OWNERSHIP_KEY: &str = "managed-by";
/// Its value, unless desired.toml gives every resource another.
pub const OWNERSHIP_VALUE: &str = "reconcile";
pub use crate::plan::ADOPT;

/// Finding code: a declared resource exists without reconcile's tag; refuses unless the resource
/// sets `adopt = true`. Stable; never reused.
pub const NOT_OURS: &str = "W601";
/// Finding code: in a public plan, a resource the pull request declares exists and is not
/// reconcile's: nothing of it is shown. Stable; never reused.
pub const NOT_OURS_PUBLIC: &str = "W602";

/// What `key = value` tag `fields` (a canonical map) carries.
fn tag<'a>(fields: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    fields.get("tags")?.get(key)?.as_str()
}

/// A declared resource that exists without the ownership tag desired.toml gives it: one finding
/// each, an error unless it sets `adopt = true`, naming what adopting it removes (its live fields
/// that desired.toml sets otherwise, and its tags desired.toml does not keep: by name only).
pub fn adoption_findings(resources: &DesiredResources, observed: &BTreeMap<Address, Observed>) -> Vec<Finding> {
    let mut findings = Vec::new();
    for resource in resources.values() {
        let Some(wanted) = tag(&resource.attributes, OWNERSHIP_KEY) else { continue };
        let Some(Observed::Present(live)) = observed.get(&resource.address) else { continue };
        if tag(live, OWNERSHIP_KEY) == Some(wanted) {
            continue;
        }
        let mut removed: Vec<String> = resource
            .attributes
            .iter()
            .filter(|(field, value)| *field != "tags" && live.get(*field).is_some_and(|v| v != *value && !v.is_null()))
            .map(|(field, _)| format!("its `{field}` as it is"))
            .collect();
        let kept = resource.attributes.get("tags").and_then(Value::as_object);
        let dropped: Vec<String> = live
            .get("tags")
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(|tags| tags.keys())
            .filter(|key| !kept.is_some_and(|kept| kept.contains_key(*key)))
            .map(|key| format!("`{key}`"))
            .collect();
        if !dropped.is_empty() {
            removed.push(format!("its tags {}", dropped.join(", ")));
        }
        let removes = if removed.is_empty() { "nothing but its ownership".to_owned() } else { removed.join("; ") };
        let adopted = resource.overrides(ADOPT);
        let consequence = if adopted {
            format!("adopting it (`{ADOPT} = true`) removes {removes}")
        } else {
            format!(
                "declaring it takes it over, which would remove {removes}; nothing is changed until desired.toml sets \
                 `{ADOPT} = true` on it"
            )
        };
        findings.push(Finding {
            code: NOT_OURS.to_owned(),
            severity: if adopted { Severity::Warning } else { Severity::Error },
            address: Some(resource.address.clone()),
            message: format!(
                "`{}` exists without reconcile's tag `{OWNERSHIP_KEY} = {wanted}`: reconcile did not make it; {consequence}",
                resource.remote_name
            ),
            overridden_by: adopted.then(|| ADOPT.to_owned()),
        });
    }
    findings
}

/// What a public plan may show: the resources the default branch's desired.toml declares, by
/// address and the name AWS knows them by (`None`: it was not given, so only the tag counts),
/// the tag that marks reconcile's, and the undeclared resources it may still name (the drift
/// issue's: the repositories the nightly's own bake file pushes to).
pub struct Public {
    pub base: Option<BTreeSet<(Address, String)>>,
    pub marker: (String, String),
    pub named: BTreeSet<Address>,
    /// A pull request's review, where a change only an administrator applies fails the status.
    pub review: bool,
}

impl Default for Public {
    fn default() -> Public {
        Public {
            base: None,
            marker: (OWNERSHIP_KEY.to_owned(), OWNERSHIP_VALUE.to_owned()),
            named: BTreeSet::new(),
            review: true,
        }
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
    let (key, value) = &public.marker;
    let hidden: BTreeSet<Address> = resources
        .values()
        .filter(|resource| resource.parent.is_none())
        .filter(|resource| match plan.observed.get(&resource.address) {
            Some(Observed::Present(live)) => {
                let named = (resource.address.clone(), resource.remote_name.clone());
                let declared = public.base.as_ref().is_some_and(|base| base.contains(&named));
                !declared && tag(live, key) != Some(value.as_str())
            }
            _ => false,
        })
        .map(|resource| resource.address.clone())
        .collect();
    // Shown: what belongs to a declared resource that is not hidden.
    let shown = |address: &Address| root(resources, address).is_some_and(|root| !hidden.contains(root));
    let pruned: BTreeSet<Address> =
        plan.changes.iter().filter(|c| root(resources, &c.address).is_none()).map(|c| c.address.clone()).collect();
    plan.changes.retain(|change| shown(&change.address) || pruned.contains(&change.address));
    plan.observed.retain(|address, _| shown(address) || pruned.contains(address));
    plan.impacts.retain(|address, _| shown(address));
    plan.attributions.retain(|address, _| shown(address));
    if plan.attributions.is_empty() {
        plan.attribution_note = None;
    }

    let mut counted: BTreeMap<(String, Severity), usize> = BTreeMap::new();
    let mut findings = Vec::new();
    for finding in std::mem::take(&mut plan.findings) {
        match &finding.address {
            // The apply job refuses it after merge: in review it is an error, so the status fails.
            None if public.review && finding.code == NEEDS_AN_ADMINISTRATOR => findings.push(Finding {
                severity: Severity::Error,
                message: format!(
                    "{}; the apply job refuses it after merge, so this pull request's plan fails until an \
                     administrator applies it",
                    finding.message
                ),
                ..finding
            }),
            None => findings.push(finding),
            Some(address) if shown(address) => findings.push(finding),
            Some(address) if root(resources, address).is_some() => {} // a hidden resource's: said below
            // About the pull request's own files (a bake target it does not declare): its to see.
            Some(_) if finding.code.starts_with('W') => findings.push(finding),
            Some(address) if public.named.contains(&address.declared()) => findings.push(finding),
            Some(_) => *counted.entry((finding.code, finding.severity)).or_default() += 1,
        }
    }
    for ((code, _), count) in counted {
        findings.push(Finding {
            code,
            severity: Severity::Warning,
            address: None,
            message: format!(
                "{count} finding(s) of this code about what desired.toml does not declare: a public plan names \
                 none of them; the drift check's job log does"
            ),
            overridden_by: None,
        });
    }
    for address in hidden {
        findings.push(Finding {
            code: NOT_OURS_PUBLIC.to_owned(),
            severity: Severity::Error,
            message: format!(
                "`{address}` exists in the account and is not reconcile's (it has no `{key} = {value}` tag and the \
                 default branch's desired.toml does not declare it): a public plan shows nothing of it, and a pull \
                 request cannot take it over; a maintainer adopts one (`{ADOPT} = true`) and plans it privately"
            ),
            address: Some(address),
            overridden_by: None,
        });
    }
    Finding::rank(&mut findings);
    plan.findings = findings;
    plan
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
            map(json!({ "scan_on_push": false, "tags": { "managed-by": "reconcile" } })),
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
        Observed::Present(map(json!({ "scan_on_push": true, "tags": { "managed-by": "reconcile" } })))
    }

    #[test]
    fn a_declared_resource_without_the_tag_is_refused_until_adopted_and_says_what_adopting_removes() {
        let (declared, _) = repository("skunkworks", false);
        let address = declared.address.clone();
        let observed = BTreeMap::from([(address.clone(), theirs())]);
        let findings = adoption_findings(&resources(vec![declared]), &observed);
        assert_eq!(findings.len(), 1);
        assert_eq!((findings[0].code.as_str(), findings[0].severity), (NOT_OURS, Severity::Error));
        assert!(findings[0].refuses());
        assert!(
            findings[0].message.contains("its `scan_on_push` as it is; its tags `owner`"),
            "{}",
            findings[0].message
        );
        assert!(!findings[0].message.contains(THEIRS), "names, never values");

        let (adopted, _) = repository("skunkworks", true);
        let findings = adoption_findings(&resources(vec![adopted]), &observed);
        assert_eq!((findings[0].severity, findings[0].overridden_by.as_deref()), (Severity::Warning, Some(ADOPT)));
        assert!(findings[0].message.starts_with("`skunkworks` exists without reconcile's tag"));

        // Ours, absent, or declared without the tag: nothing to say.
        let (pytorch, _) = repository("pytorch", false);
        for observed in [ours(), Observed::Absent] {
            let observed = BTreeMap::from([(pytorch.address.clone(), observed)]);
            assert_eq!(adoption_findings(&resources(vec![pytorch.clone()]), &observed), vec![]);
        }
        let untagged = DesiredResource::new(address.clone(), "skunkworks", map(json!({ "tags": {} })));
        assert_eq!(adoption_findings(&resources(vec![untagged]), &BTreeMap::from([(address, theirs())])), vec![]);
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
        let (t, tp, o, n, b) = (
            theirs_repository.address.clone(),
            theirs_policy.address.clone(),
            ours_repository.address.clone(),
            new_repository.address.clone(),
            base_repository.address.clone(),
        );
        let resources = resources(vec![
            theirs_repository,
            theirs_policy,
            ours_repository,
            ours_policy,
            new_repository,
            base_repository,
        ]);
        let undeclared = Address::new(crate::fake::kinds::ECR_REPOSITORY, "secret-mi500-bringup");
        let mut plan = Plan::new("123456789012", "us-east-1");
        plan.observed = BTreeMap::from([
            (t.clone(), theirs()),
            (tp.clone(), Observed::Present(map(json!({ "policy": THEIRS })))),
            (o.clone(), ours()),
            (n.clone(), Observed::Absent),
            (b.clone(), Observed::Present(map(json!({ "scan_on_push": true, "tags": {} })))),
        ]);
        plan.changes = vec![
            change(&t, Some(json!({ "scan_on_push": true, "tags": THEIRS }))),
            change(&tp, Some(json!({ "policy": THEIRS }))),
            change(&o, Some(json!({ "scan_on_push": true }))),
            change(&n, None),
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
        let public = Public {
            base: Some(BTreeSet::from([(b.clone(), "declared-on-main".to_owned())])),
            named: BTreeSet::from([Address::new(crate::fake::kinds::ECR_REPOSITORY, "atom-wheel-cache")]),
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
                ("D102", Severity::Error, Some("ecr_repository.atom-wheel-cache".to_owned())),
                ("W401", Severity::Error, None),
                ("W401", Severity::Error, Some("ecr_repository.sglang".to_owned())),
                ("W501", Severity::Error, None),
                ("W602", Severity::Error, Some(t.to_string())),
                ("D101", Severity::Warning, None),
                ("D102", Severity::Warning, None),
            ]
        );
        assert!(shown.findings[6].message.starts_with("1 finding(s) of this code"));
        assert!(shown.findings[4].message.ends_with("until an administrator applies it"));
    }
}
