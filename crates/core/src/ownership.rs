//! Whose a resource is: the mark reconcile writes on everything it makes or takes over.
//!
//! Every ownership decision (a declared resource that exists is ours or is refused, a public
//! plan shows it or not, `--prune` and `destroy` may delete it, the runner's and CI roles' IAM
//! conditions reach it, the live suite's sweeper takes it) reads one tag, [`MARK_KEY`], whose
//! value names the deployment: desired.toml's `deployment`. desired.toml's `tags` can never set
//! it (any key under [`RESERVED_PREFIX`] is refused where it is written), so a value a pull
//! request writes decides nothing, and another deployment's resources (the same key, another
//! value) are not this one's. AWS resources are made with it in the same call wherever the API
//! takes tags at creation, so an interrupted apply leaves nothing half ours.
//!
//! What exists without the mark is taken over explicitly, as Terraform's `import` blocks do:
//! listed in desired.toml's `import` (or `adopt = true` on the resource), reviewed in a plan
//! that shows it as an import, and only then marked. A resource carrying reconcile's old
//! ownership tag (`managed-by = reconcile`, from desired.toml's tags before the mark existed)
//! is re-marked without being listed: that is an account reconcile made, upgraded; but for what
//! there is one of per account, which every deployment shares and the old tag names none of.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::address::{Address, ResourceKind};
use crate::desired::{Desired, DesiredError};
use crate::plan::{ADOPT, DesiredResources, Finding, Observed, Severity, Takeover};

/// Finding code: a declared resource exists without this deployment's mark (made by hand, by
/// another tool, or by another deployment); refuses unless it is imported. Stable; never reused.
pub const NOT_OURS: &str = "W601";
/// Finding code: re-marking a resource reconcile made before the mark also removes its old
/// `managed-by = reconcile` tag, which the live IAM policies grant the builds by until the same
/// apply changes them: a build running meanwhile would lose its push. Stable; never reused.
pub const LEGACY_TAG_REMOVED: &str = "W606";
/// Finding code: a resource there is one of per account (GitHub's OIDC provider) exists and is
/// not this deployment's (another deployment's, or made by hand or another tool): this
/// deployment uses it as it is, and never changes, takes over or deletes it. Stable.
pub const SHARED: &str = "W607";
/// Finding code: a resource there is one of per account exists, is not this deployment's, and
/// lacks something desired.toml needs of it (an audience of GitHub's OIDC provider): reconcile
/// does not change what is not its own, so its owner must. Stable; never reused.
pub const SHARED_LACKS: &str = "W608";
/// Finding code: a resource desired.toml does not declare carries another deployment's mark:
/// that deployment's (two deployments share an account), which its own drift check answers for,
/// so it is counted, never this one's drift. Stable; never reused.
pub const ANOTHER_DEPLOYMENTS: &str = "W609";

/// Finding code: desired.toml imports a resource that carries another deployment's mark, and
/// does not list it in `handed_over`: taking it would refuse that deployment's CI applies from
/// then on (W601) and take its builds' push, so it is an error naming that deployment. Stable;
/// never reused.
pub const TAKEN_FROM_ANOTHER: &str = "W610";

/// The override `handed_over` sets on a resource: imported though another deployment's mark is
/// on it, that deployment having given it up.
pub const HANDED_OVER: &str = "handed_over";

/// The deployment other than `ours` whose mark `tags` carry, if any: a value that can name a
/// deployment (anything else in the mark's place is no deployment's, and stays drift).
pub fn other_deployment<'t>(tags: &'t std::collections::BTreeMap<String, String>, ours: &str) -> Option<&'t str> {
    let theirs = tags.get(MARK_KEY)?;
    (theirs != ours && crate::desired::check_deployment(theirs).is_ok()).then_some(theirs.as_str())
}

/// [`ANOTHER_DEPLOYMENTS`] for the undeclared resource at `address` (`what`: "repository
/// `scratch`"), which carries deployment `theirs`'s mark.
pub fn another_deployments(address: Address, what: &str, theirs: &str) -> Finding {
    Finding {
        code: ANOTHER_DEPLOYMENTS.to_owned(),
        severity: Severity::Warning,
        address: Some(address),
        message: format!(
            "{what} is not in desired.toml and carries deployment `{theirs}`'s mark: it is that deployment's, whose \
             own drift check answers for it, not this one's drift"
        ),
        overridden_by: None,
    }
}

pub use crate::mark::{
    DEFAULT_DEPLOYMENT, LEGACY_KEY, LEGACY_VALUE, MARK_KEY, RESERVED_PREFIX, is_reserved, mark, marked,
};

/// Whose a live resource is, to the deployment `ours`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner<'a> {
    Ours,
    /// Another deployment of reconcile's: its mark, with another name.
    Deployment(&'a str),
    /// reconcile's, from before the mark: `managed-by = reconcile`.
    Legacy,
    /// Nobody reconcile knows: made by hand, or by another tool.
    Unmarked,
}

pub fn owner<'a>(live: &'a Map<String, Value>, ours: &str) -> Owner<'a> {
    match mark(live) {
        Some(mark) if mark == ours => Owner::Ours,
        Some(other) => Owner::Deployment(other),
        None if live.get("tags").and_then(|tags| tags.get(LEGACY_KEY)).and_then(Value::as_str)
            == Some(LEGACY_VALUE) =>
        {
            Owner::Legacy
        }
        None => Owner::Unmarked,
    }
}

/// Whether a resource found already made when apply came to create it (`live` its tags) is this
/// deployment's, as `wanted` (the tags the create would have sent) marks it: made meanwhile by
/// an apply of this deployment interrupted after its create, or by the nightly's
/// `--ensure-ecr` as reconcile's; converged then, and refused otherwise.
pub fn made_by_this_deployment(live: &BTreeMap<String, String>, wanted: &BTreeMap<String, String>) -> bool {
    wanted.get(MARK_KEY).is_some_and(|ours| live.get(MARK_KEY) == Some(ours))
}

/// What apply does with `name`, found made since the plan was read when it came to create it
/// (`operation` on `address`; `live` its tags, `wanted` the create's): goes on to converge it when
/// it is this deployment's ([`made_by_this_deployment`]), and refuses otherwise, since converging
/// it would take it over unreviewed.
pub fn made_meanwhile(
    live: &BTreeMap<String, String>,
    wanted: &BTreeMap<String, String>,
    address: &Address,
    operation: &str,
    name: &str,
) -> Result<(), crate::ReconcileError> {
    if made_by_this_deployment(live, wanted) {
        return Ok(());
    }
    Err(crate::ReconcileError::new(
        Some(address),
        operation,
        format!(
            "`{name}` was made since the plan was read, without this deployment's mark ({MARK_KEY}): reconcile does \
             not take over what it did not make unless desired.toml imports it; plan again"
        ),
    )
    .with_kind(crate::ErrorKind::InvalidChange))
}

/// What each declared resource that exists without this deployment's mark is to the plan: an
/// import (listed, or `adopt = true`: a warning that says what taking it over removes), a
/// re-mark (reconcile's old tag), or a refusal ([`NOT_OURS`], an error); with the findings.
/// Only the resources desired.toml marks (the AWS ones) are judged; the GitHub side's carry no
/// tags.
pub fn takeovers(
    resources: &DesiredResources,
    observed: &BTreeMap<Address, Observed>,
) -> (Vec<Finding>, BTreeMap<Address, Takeover>) {
    let mut findings = Vec::new();
    let mut takeovers = BTreeMap::new();
    for resource in resources.values() {
        let Some(ours) = mark(&resource.attributes) else { continue };
        let Some(Observed::Present(live)) = observed.get(&resource.address) else { continue };
        let imported = resource.overrides(ADOPT);
        let name = &resource.remote_name;
        if used_as_it_is(resource, live, ours) {
            continue;
        }
        let whose = match owner(live, ours) {
            Owner::Ours => continue,
            Owner::Legacy => {
                takeovers.insert(resource.address.clone(), Takeover::Remark);
                if wanted_tags(resource).is_some_and(|tags| !tags.contains_key(LEGACY_KEY)) {
                    findings.push(Finding {
                        code: LEGACY_TAG_REMOVED.to_owned(),
                        severity: Severity::Error,
                        address: Some(resource.address.clone()),
                        message: format!(
                            "re-marking `{name}` as deployment `{ours}`'s would also remove its `{LEGACY_KEY} = \
                             {LEGACY_VALUE}` tag, which the live IAM policies grant the builds by until this apply \
                             changes them: keep `{LEGACY_KEY} = \"{LEGACY_VALUE}\"` in its tags for this apply, and \
                             remove it in a later one"
                        ),
                        overridden_by: None,
                    });
                }
                continue;
            }
            Owner::Deployment(other) if imported && !resource.overrides(HANDED_OVER) => {
                findings.push(Finding {
                    code: TAKEN_FROM_ANOTHER.to_owned(),
                    severity: Severity::Error,
                    address: Some(resource.address.clone()),
                    message: format!(
                        "`{name}` carries deployment `{other}`'s mark: importing it takes it from that deployment, \
                         whose CI applies are refused from then on and whose builds lose their push to it; once \
                         `{other}` gives it up, list `{}` in desired.toml's `handed_over` too",
                        resource.address
                    ),
                    overridden_by: None,
                });
                continue;
            }
            Owner::Deployment(other) => format!("carries deployment `{other}`'s mark, not `{ours}`'s"),
            Owner::Unmarked => {
                format!("exists without reconcile's mark (`{MARK_KEY} = {ours}`): reconcile did not make it")
            }
        };
        let removed = what_taking_over_removes(resource, live);
        let message = if imported {
            takeovers.insert(resource.address.clone(), Takeover::Import);
            // The plan shows the import; a finding says only what it takes away.
            let Some(removed) = removed else { continue };
            format!("`{name}` {whose}; importing it marks it as `{ours}`'s and removes {removed}")
        } else {
            format!(
                "`{name}` {whose}; taking it over would remove {}; nothing is changed until desired.toml lists `{}` \
                 in `import` (`reconcile import` writes the list), or sets `{ADOPT} = true` on it",
                removed.as_deref().unwrap_or("nothing else"),
                resource.address
            )
        };
        findings.push(Finding {
            code: NOT_OURS.to_owned(),
            severity: if imported { Severity::Warning } else { Severity::Error },
            address: Some(resource.address.clone()),
            message,
            overridden_by: None,
        });
    }
    (findings, takeovers)
}

/// Whether the shared `resource` (one per account), as it is `live`, is used as it is: it is
/// another deployment's, or nobody's or reconcile's from before the mark and not imported (an
/// import takes it over, as any other). An old `managed-by = reconcile` tag on what every
/// deployment in the account shares says only that some deployment made it, not which: the
/// first to plan would re-mark it as its own, and the others lose it.
fn used_as_it_is(resource: &crate::plan::DesiredResource, live: &Map<String, Value>, ours: &str) -> bool {
    resource.shared
        && match owner(live, ours) {
            Owner::Deployment(_) => true,
            Owner::Unmarked | Owner::Legacy => !resource.overrides(ADOPT),
            Owner::Ours => false,
        }
}

/// The shared resources (one per account: [`crate::plan::DesiredResource::shared`]) that exist
/// and are not this deployment's, which it uses as they are: no change is planned for them, and
/// a finding says whose each is ([`SHARED`]), or what of what desired.toml needs it lacks
/// ([`SHARED_LACKS`], an error: the runs that rely on it would fail).
pub fn shared(
    resources: &DesiredResources,
    observed: &BTreeMap<Address, Observed>,
) -> (Vec<Finding>, BTreeSet<Address>) {
    let mut findings = Vec::new();
    let mut used = BTreeSet::new();
    for resource in resources.values().filter(|resource| resource.shared) {
        let Some(ours) = mark(&resource.attributes) else { continue };
        let Some(Observed::Present(live)) = observed.get(&resource.address) else { continue };
        if !used_as_it_is(resource, live, ours) {
            continue;
        }
        used.insert(resource.address.clone());
        let whose = match owner(live, ours) {
            Owner::Deployment(other) => format!("deployment `{other}`'s"),
            Owner::Legacy => format!(
                "made by a reconcile from before the mark (`{LEGACY_KEY} = {LEGACY_VALUE}`), which says no deployment: \
                 import it to take it over"
            ),
            _ => "made by hand or by another tool (it carries no mark)".to_owned(),
        };
        let name = &resource.remote_name;
        let lacking: Vec<String> = resource
            .attributes
            .iter()
            .filter(|(field, value)| *field != "tags" && live.get(*field) != Some(*value))
            .map(|(field, _)| format!("`{field}`"))
            .collect();
        let (code, severity, message) = if lacking.is_empty() {
            (
                SHARED,
                Severity::Warning,
                format!(
                    "`{name}` is one per account, and {whose}: every deployment in the account shares it, so this \
                     one uses it as it is, and never changes, takes over or deletes it"
                ),
            )
        } else {
            (
                SHARED_LACKS,
                Severity::Error,
                format!(
                    "`{name}` is one per account, {whose}, and its {} is not what this deployment needs: reconcile \
                     never changes what another deployment or person owns, so whoever owns it must change it (the \
                     plan's `after` says how)",
                    lacking.join(", ")
                ),
            )
        };
        findings.push(Finding {
            code: code.to_owned(),
            severity,
            address: Some(resource.address.clone()),
            message,
            overridden_by: None,
        });
    }
    (findings, used)
}

fn wanted_tags(resource: &crate::plan::DesiredResource) -> Option<&Map<String, Value>> {
    resource.attributes.get("tags").and_then(Value::as_object)
}

/// What taking `resource` over removes of what `live` holds: its live fields that desired.toml
/// sets otherwise, and its tags desired.toml does not keep; by name only, never a value. `None`
/// when nothing.
fn what_taking_over_removes(resource: &crate::plan::DesiredResource, live: &Map<String, Value>) -> Option<String> {
    let mut removed: Vec<String> = resource
        .attributes
        .iter()
        .filter(|(field, value)| *field != "tags" && live.get(*field).is_some_and(|v| v != *value && !v.is_null()))
        .map(|(field, _)| format!("its `{field}` as it is"))
        .collect();
    let kept = wanted_tags(resource);
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
    (!removed.is_empty()).then(|| removed.join("; "))
}

/// desired.toml's `import` list applied to `resources`: each address it lists is taken over as
/// `adopt = true` would. An address that is not a declared resource reconcile marks (a typo, a
/// lifecycle policy, which goes with its repository, a GitHub setting) is an error at its line.
pub fn import(desired: &Desired, resources: &mut DesiredResources, known: &[ResourceKind]) -> Vec<DesiredError> {
    let mut errors = list(&desired.imports, resources, known, &[ADOPT]);
    errors.extend(list(&desired.handed_over, resources, known, &[ADOPT, HANDED_OVER]));
    errors
}

/// One list of addresses (`import`, `handed_over`) applied to `resources`: each declared resource
/// reconcile marks it names gets `overrides`; anything else is an error at its line.
fn list(
    entries: &[crate::desired::Import],
    resources: &mut DesiredResources,
    known: &[ResourceKind],
    overrides: &[&'static str],
) -> Vec<DesiredError> {
    let mut errors = Vec::new();
    let mut seen = BTreeSet::new();
    for entry in entries {
        let error = |why: String| entry.at.clone().with_message(why);
        let address = match Address::parse(&entry.address, known) {
            Ok(address) => address,
            Err(why) => {
                errors.push(error(why));
                continue;
            }
        };
        if !seen.insert(address.clone()) {
            errors.push(error(format!("`{address}` is listed twice")));
            continue;
        }
        match resources.get_mut(&address) {
            None => errors
                .push(error(format!("`{address}` is not declared in this file: only a declared resource is imported"))),
            Some(resource) if mark(&resource.attributes).is_none() => {
                let whole = resource
                    .parent
                    .as_ref()
                    .map(|parent| format!(": it goes with `{parent}`, import that"))
                    .unwrap_or_else(|| ": reconcile does not mark it".to_owned());
                errors.push(error(format!("`{address}` is not a resource reconcile takes over{whole}")));
            }
            Some(resource) => {
                for &key in overrides {
                    if !resource.overrides(key) {
                        resource.overrides.push(key);
                    }
                }
            }
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::plan::DesiredResource;

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    fn repository(name: &str, adopt: bool) -> DesiredResource {
        let address = Address::new(crate::fake::kinds::ECR_REPOSITORY, name);
        DesiredResource::new(
            address,
            name,
            map(json!({ "scan_on_push": false, "tags": { MARK_KEY: "rocm-bake", "project": "rocm-bake" } })),
        )
        .adopted(adopt)
    }

    const THEIRS: &str = "partner-123456789012 owner@example.com";

    fn live(tags: Value) -> Observed {
        Observed::Present(map(json!({ "scan_on_push": true, "repository_policy": THEIRS, "tags": tags })))
    }

    fn judge(resource: DesiredResource, observed: Observed) -> (Vec<Finding>, BTreeMap<Address, Takeover>) {
        let observed = BTreeMap::from([(resource.address.clone(), observed)]);
        takeovers(&crate::engine::desired_resources([resource]), &observed)
    }

    #[test]
    fn a_resource_is_ours_by_this_deployments_mark_alone() {
        let ours = map(json!({ "tags": { MARK_KEY: "rocm-bake" } }));
        let other = map(json!({ "tags": { MARK_KEY: "team-x", LEGACY_KEY: LEGACY_VALUE } }));
        let legacy = map(json!({ "tags": { LEGACY_KEY: LEGACY_VALUE } }));
        let written = map(json!({ "tags": { LEGACY_KEY: "terraform" } }));
        assert_eq!(owner(&ours, "rocm-bake"), Owner::Ours);
        assert_eq!(owner(&ours, "team-x"), Owner::Deployment("rocm-bake"));
        assert_eq!(owner(&other, "rocm-bake"), Owner::Deployment("team-x"), "a mark wins over the old tag");
        assert_eq!(owner(&legacy, "rocm-bake"), Owner::Legacy);
        assert_eq!(owner(&written, "rocm-bake"), Owner::Unmarked);
        assert_eq!(owner(&map(json!({})), "rocm-bake"), Owner::Unmarked);
        assert_eq!(marked(&BTreeMap::new(), "x"), BTreeMap::from([(MARK_KEY.to_owned(), "x".to_owned())]));
    }

    #[test]
    fn what_was_made_meanwhile_is_this_deployments_only_by_its_mark() {
        let tags = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
        };
        let wanted = tags(&[(MARK_KEY, "rocm-bake"), ("team", "ml")]);
        assert!(made_by_this_deployment(&tags(&[(MARK_KEY, "rocm-bake")]), &wanted));
        assert!(!made_by_this_deployment(&tags(&[(MARK_KEY, "team-x")]), &wanted));
        assert!(!made_by_this_deployment(&tags(&[("team", "ml"), (LEGACY_KEY, LEGACY_VALUE)]), &wanted));
        assert!(!made_by_this_deployment(&BTreeMap::new(), &wanted));
        // Nothing to compare with: a create that marks nothing claims nothing.
        assert!(!made_by_this_deployment(&BTreeMap::new(), &BTreeMap::new()));
        // What apply does with it: converges ours, refuses anyone else's, saying why.
        let address = Address::new(crate::fake::kinds::ECR_REPOSITORY, "vllm");
        assert!(made_meanwhile(&tags(&[(MARK_KEY, "rocm-bake")]), &wanted, &address, "create", "vllm").is_ok());
        let refused = made_meanwhile(&tags(&[("team", "x")]), &wanted, &address, "create", "vllm").unwrap_err();
        assert_eq!(refused.kind, crate::ErrorKind::InvalidChange);
        assert!(refused.to_string().contains("`vllm` was made since the plan was read, without"), "{refused}");
    }

    #[test]
    fn an_unmarked_resource_is_refused_until_imported_and_says_what_importing_removes() {
        let (findings, takeovers) = judge(repository("skunkworks", false), live(json!({ "owner": THEIRS })));
        assert_eq!(takeovers, BTreeMap::new());
        assert_eq!((findings[0].code.as_str(), findings[0].severity), (NOT_OURS, Severity::Error));
        assert!(findings[0].refuses());
        let message = &findings[0].message;
        assert!(message.contains("its `scan_on_push` as it is; its tags `owner`"), "{message}");
        assert!(message.contains("lists `ecr_repository.skunkworks` in `import`"), "{message}");
        assert!(!message.contains(THEIRS), "names, never values");

        let (findings, takeovers) = judge(repository("skunkworks", true), live(json!({ "owner": THEIRS })));
        assert_eq!(takeovers.values().collect::<Vec<_>>(), [&Takeover::Import]);
        assert_eq!(findings[0].severity, Severity::Warning);
        assert!(
            findings[0].message.starts_with("`skunkworks` exists without reconcile's mark"),
            "{}",
            findings[0].message
        );
        assert!(findings[0].message.contains("importing it marks it as `rocm-bake`'s and removes its `scan_on_push`"));
        // An import that takes nothing away is the plan's to show, and says nothing more.
        let same = Observed::Present(map(json!({ "scan_on_push": false, "tags": { "project": "rocm-bake" } })));
        let (findings, takeovers) = judge(repository("pytorch", true), same);
        assert_eq!((findings, takeovers.len()), (vec![], 1));

        // Another deployment's is refused the same way, and says whose it is.
        let (findings, _) = judge(repository("skunkworks", false), live(json!({ MARK_KEY: "team-x" })));
        assert!(findings[0].refuses());
        assert!(findings[0].message.contains("carries deployment `team-x`'s mark"), "{}", findings[0].message);

        // A tag desired.toml could write decides nothing.
        let (findings, _) = judge(repository("skunkworks", false), live(json!({ LEGACY_KEY: "terraform" })));
        assert!(findings[0].refuses());
    }

    /// GitHub's OIDC provider as desired.toml wants it: one per account.
    fn provider(adopt: bool) -> DesiredResource {
        let address = Address::new(crate::fake::kinds::ECR_REPOSITORY, "github");
        DesiredResource::new(
            address,
            "arn:aws:iam::123456789012:oidc-provider/token.actions.githubusercontent.com",
            map(json!({ "client_ids": ["sts.amazonaws.com"], "tags": { MARK_KEY: "rocm-bake" } })),
        )
        .adopted(adopt)
        .shared_in_the_account()
    }

    fn share(resource: DesiredResource, live: Value) -> (Vec<Finding>, BTreeSet<Address>, BTreeMap<Address, Takeover>) {
        let observed = BTreeMap::from([(resource.address.clone(), Observed::Present(map(live)))]);
        let resources = crate::engine::desired_resources([resource]);
        let (found, used) = shared(&resources, &observed);
        let (mut taken_found, taken) = takeovers(&resources, &observed);
        taken_found.extend(found);
        (taken_found, used, taken)
    }

    #[test]
    fn what_is_one_per_account_is_used_as_it_is_when_someone_elses_and_never_taken_over() {
        let needed = json!(["sts.amazonaws.com"]);
        // Another deployment's: used, said so, never a W601 nor an import.
        let (findings, used, taken) =
            share(provider(false), json!({ "client_ids": needed, "tags": { MARK_KEY: "team-x", "owner": THEIRS } }));
        assert_eq!(used.len(), 1);
        assert!(taken.is_empty());
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert_eq!((findings[0].code.as_str(), findings[0].severity), (SHARED, Severity::Warning));
        assert!(findings[0].message.contains("deployment `team-x`'s"), "{}", findings[0].message);
        assert!(!findings[0].message.contains(THEIRS));
        // Listed in `import` changes nothing for another deployment's.
        let (findings, used, taken) =
            share(provider(true), json!({ "client_ids": needed, "tags": { MARK_KEY: "team-x" } }));
        assert_eq!((findings[0].code.as_str(), used.len(), taken.len()), (SHARED, 1, 0));
        // Made by hand: used as it is, unless imported, which takes it over as any other.
        let (findings, used, _) = share(provider(false), json!({ "client_ids": needed, "tags": {} }));
        assert_eq!((findings[0].code.as_str(), used.len()), (SHARED, 1));
        assert!(findings[0].message.contains("made by hand or by another tool"), "{}", findings[0].message);
        let (findings, used, taken) = share(provider(true), json!({ "client_ids": needed, "tags": {} }));
        assert_eq!((findings.len(), used.len()), (0, 0), "{findings:?}");
        assert_eq!(taken.values().collect::<Vec<_>>(), [&Takeover::Import]);
        // Lacking what this deployment needs: an error, and still not changed.
        let (findings, used, _) = share(provider(false), json!({ "client_ids": [], "tags": { MARK_KEY: "team-x" } }));
        assert_eq!((findings[0].code.as_str(), findings[0].severity, used.len()), (SHARED_LACKS, Severity::Error, 1));
        assert!(
            findings[0].message.contains("its `client_ids` is not what this deployment needs"),
            "{}",
            findings[0].message
        );
        // Ours: managed as any other, with no finding.
        let (findings, used, taken) =
            share(provider(false), json!({ "client_ids": [], "tags": { MARK_KEY: "rocm-bake" } }));
        assert_eq!((findings.len(), used.len(), taken.len()), (0, 0, 0));
        // Not shared: another deployment's is W601, as before.
        let mut repository = provider(false);
        repository.shared = false;
        let (findings, used, _) = share(repository, json!({ "client_ids": needed, "tags": { MARK_KEY: "team-x" } }));
        assert_eq!((findings[0].code.as_str(), used.len()), (NOT_OURS, 0));
    }

    #[test]
    fn reconciles_old_tag_is_re_marked_and_refused_only_if_the_same_apply_drops_it() {
        let kept = {
            let mut resource = repository("pytorch", false);
            resource.attributes["tags"][LEGACY_KEY] = json!(LEGACY_VALUE);
            resource
        };
        let (findings, takeovers) = judge(kept, live(json!({ LEGACY_KEY: LEGACY_VALUE })));
        assert_eq!(findings, vec![]);
        assert_eq!(takeovers.values().collect::<Vec<_>>(), [&Takeover::Remark]);
        let (findings, takeovers) = judge(repository("pytorch", false), live(json!({ LEGACY_KEY: LEGACY_VALUE })));
        assert_eq!(takeovers.values().collect::<Vec<_>>(), [&Takeover::Remark]);
        assert_eq!((findings[0].code.as_str(), findings[0].refuses()), (LEGACY_TAG_REMOVED, true));
    }

    #[test]
    fn the_import_list_takes_over_declared_marked_resources_and_refuses_the_rest_at_their_line() {
        let text = "region = \"us-east-1\"\nimport = [\"ecr_repository.pytorch\", \"ecr_lifecycle_policy.pytorch\", \
                    \"ecr_repository.nope\", \"ecr_repository.pytorch\", \"no_such_kind.x\"]\n";
        let desired = Desired::parse(std::path::Path::new("desired.toml"), text).unwrap();
        let repository = repository("pytorch", false);
        let policy = DesiredResource::new(
            Address::new(crate::fake::kinds::ECR_LIFECYCLE_POLICY, "pytorch"),
            "pytorch",
            map(json!({ "policy": {} })),
        )
        .under(&repository.address);
        let mut resources = crate::engine::desired_resources([repository.clone(), policy]);
        let known = [crate::fake::kinds::ECR_REPOSITORY, crate::fake::kinds::ECR_LIFECYCLE_POLICY];
        let errors: Vec<String> = import(&desired, &mut resources, &known).iter().map(ToString::to_string).collect();
        assert!(resources[&repository.address].overrides(ADOPT));
        assert_eq!(errors.len(), 4, "{errors:#?}");
        assert!(errors[0].starts_with("desired.toml:2:37: `import[1]`: `ecr_lifecycle_policy.pytorch` is not a resource reconcile takes over: it goes with `ecr_repository.pytorch`"), "{}", errors[0]);
        assert!(errors[1].contains("`import[2]`: `ecr_repository.nope` is not declared in this file"), "{}", errors[1]);
        assert!(errors[2].contains("`import[3]`: `ecr_repository.pytorch` is listed twice"), "{}", errors[2]);
        assert!(errors[3].contains("`import[4]`: "), "{}", errors[3]);
    }

    #[test]
    fn ours_absent_or_unmarked_in_desired_toml_is_nothing_to_judge() {
        for observed in [live(json!({ MARK_KEY: "rocm-bake" })), Observed::Absent] {
            assert_eq!(judge(repository("pytorch", false), observed), (vec![], BTreeMap::new()));
        }
        let address = Address::new(crate::fake::kinds::ECR_REPOSITORY, "x");
        let unmarked = DesiredResource::new(address, "x", map(json!({ "tags": {} })));
        assert_eq!(judge(unmarked, live(json!({}))), (vec![], BTreeMap::new()));
    }
}
