//! What `reconcile destroy` deletes: every resource desired.toml declares that exists and
//! carries this deployment's mark ([`crate::ownership`]), in the reverse of the order apply
//! makes them.
//!
//! Ownership is judged from the account, per declared resource (its root: a lifecycle policy is
//! its repository's, a role's inline policy its role's): a root that exists without this
//! deployment's mark was not made (nor taken over) by it, or is another deployment's, so the
//! whole destroy is refused ([`NOT_OURS_TO_DESTROY`]) rather than deleting around it. A declared
//! resource reconcile does not mark (the GitHub side's settings carry no tags) cannot be told
//! apart, and one every deployment in the account shares may still be used by another: both are
//! left alone, with a note ([`NOT_DESTROYED`]).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::address::Address;
use crate::audience::root;
use crate::ownership::{MARK_KEY, mark};
use crate::plan::{Action, Change, DesiredResources, Finding, Observed, Severity};

/// Finding code: destroy would delete a declared resource that exists without this deployment's
/// mark: the destroy is refused. Stable; never reused.
pub const NOT_OURS_TO_DESTROY: &str = "W603";
/// Finding code: a declared resource destroy leaves as it is: one reconcile does not mark (the
/// GitHub side's settings, which carry no tags), or one every deployment in the account shares
/// (GitHub's OIDC provider). Stable; never reused.
pub const NOT_DESTROYED: &str = "W604";

/// The deletes of a destroy, and the findings that refuse or qualify it. `observed` holds what
/// was read for every declared resource (and the undeclared members found inside them, which go
/// with them). Each delete waits for the deletes of everything that depended on it: a webhook
/// before its project, a role's policies before the role, every role before its boundary.
pub fn changes(resources: &DesiredResources, observed: &BTreeMap<Address, Observed>) -> (Vec<Change>, Vec<Finding>) {
    let mut findings = Vec::new();
    let mut refused: BTreeSet<&Address> = BTreeSet::new();
    let mut untagged: BTreeSet<&Address> = BTreeSet::new();
    for resource in resources.values().filter(|r| r.parent.is_none()) {
        // One per account: whoever made it, another deployment or team may use it still.
        if resource.shared {
            untagged.insert(&resource.address);
            if let Some(Observed::Present(_)) = observed.get(&resource.address) {
                findings.push(Finding {
                    code: NOT_DESTROYED.to_owned(),
                    severity: Severity::Warning,
                    address: Some(resource.address.clone()),
                    message: format!(
                        "`{}` is one per account and every deployment in it shares it: destroy leaves it as it is \
                         (delete it by hand once no role trusts it)",
                        resource.remote_name
                    ),
                    overridden_by: None,
                });
            }
            continue;
        }
        let Some(wanted) = mark(&resource.attributes) else {
            untagged.insert(&resource.address);
            findings.push(Finding {
                code: NOT_DESTROYED.to_owned(),
                severity: Severity::Warning,
                address: Some(resource.address.clone()),
                message: format!(
                    "reconcile does not mark it (`{MARK_KEY}`), so whether reconcile made it cannot be told: \
                     destroy leaves it as it is"
                ),
                overridden_by: None,
            });
            continue;
        };
        let Some(Observed::Present(live)) = observed.get(&resource.address) else { continue };
        if mark(live) != Some(wanted) {
            refused.insert(&resource.address);
            findings.push(Finding {
                code: NOT_OURS_TO_DESTROY.to_owned(),
                severity: Severity::Error,
                address: Some(resource.address.clone()),
                message: format!(
                    "`{}` exists without this deployment's mark `{MARK_KEY} = {wanted}`{}: destroy never deletes \
                     what this deployment did not make or take over, so nothing is destroyed; delete it by hand, or \
                     take it out of desired.toml",
                    resource.remote_name,
                    match crate::ownership::owner(live, wanted) {
                        crate::ownership::Owner::Deployment(other) => format!(" (it is deployment `{other}`'s)"),
                        crate::ownership::Owner::Legacy => " (it carries reconcile's old `managed-by` tag: plan and apply re-mark it first)".to_owned(),
                        _ => String::new(),
                    }
                ),
                overridden_by: None,
            });
        }
    }

    let deleted: Vec<(&Address, &serde_json::Map<String, Value>)> = observed
        .iter()
        .filter_map(|(address, observation)| match observation {
            Observed::Present(fields) => Some((address, fields)),
            Observed::Absent => None,
        })
        .filter(|(address, _)| {
            root(resources, address).is_some_and(|root| !refused.contains(root) && !untagged.contains(root))
        })
        .collect();
    let in_plan: BTreeSet<&Address> = deleted.iter().map(|(address, _)| *address).collect();
    // What each resource is made after (a member is made after the resource it is in): reversed,
    // what each delete waits for.
    let made_after = |address: &Address| -> Vec<Address> {
        match resources.get(address) {
            Some(resource) => resource.depends_on.iter().chain(&resource.parent).cloned().collect(),
            // An undeclared member (a role's other inline policy) is in the resource it is found in.
            None => [address.declared()].into_iter().chain(root(resources, address).cloned()).collect(),
        }
    };
    let mut waits: BTreeMap<&Address, BTreeSet<Address>> = BTreeMap::new();
    for (address, _) in &deleted {
        for dependency in made_after(address) {
            if let Some(dependency) = in_plan.get(&dependency) {
                waits.entry(dependency).or_default().insert((*address).clone());
            }
        }
    }
    let changes = deleted
        .into_iter()
        .map(|(address, fields)| Change {
            address: address.clone(),
            action: Action::Delete,
            before: Some(fields.clone()),
            after: None,
            depends_on: waits.remove(address).unwrap_or_default().into_iter().collect(),
        })
        .collect();
    (changes, findings)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::address::ResourceKind;
    use crate::plan::DesiredResource;

    fn resource(kind: ResourceKind, name: &str, tagged: bool) -> DesiredResource {
        let attributes = if tagged { json!({"tags": {MARK_KEY: "rocm-bake"}}) } else { json!({"name": name}) };
        DesiredResource::new(Address::new(kind, name), name, attributes.as_object().cloned().unwrap())
    }

    fn present(tags: Value) -> Observed {
        Observed::Present(json!({ "tags": tags }).as_object().cloned().unwrap())
    }

    #[test]
    fn deletes_wait_for_what_was_made_after_them_and_members_go_before_their_resource() {
        let role = resource(crate::fake::kinds::IAM_ROLE, "runner", true);
        let mut policy = resource(crate::fake::kinds::IAM_ROLE_POLICY, "runner", false);
        policy.parent = Some(role.address.clone());
        policy.depends_on = vec![role.address.clone()];
        let mut project = resource(crate::fake::kinds::CODEBUILD_PROJECT, "nightly", true);
        project.depends_on = vec![role.address.clone()];
        let gone = resource(crate::fake::kinds::ECR_REPOSITORY, "gone", true);
        let resources = crate::engine::desired_resources([role.clone(), policy.clone(), project.clone(), gone]);
        let member = Address::member(crate::fake::kinds::IAM_ROLE_POLICY, "runner", "extra");
        let observed = BTreeMap::from([
            (role.address.clone(), present(json!({MARK_KEY: "rocm-bake"}))),
            (policy.address.clone(), Observed::Present(Default::default())),
            (member.clone(), Observed::Present(Default::default())),
            (project.address.clone(), present(json!({MARK_KEY: "rocm-bake"}))),
            (Address::new(crate::fake::kinds::ECR_REPOSITORY, "gone"), Observed::Absent),
        ]);
        let (changes, findings) = changes(&resources, &observed);
        assert!(findings.is_empty(), "{findings:?}");
        let waits: BTreeMap<String, BTreeSet<String>> = changes
            .iter()
            .map(|c| {
                assert_eq!(c.action, Action::Delete);
                (c.address.to_string(), c.depends_on.iter().map(ToString::to_string).collect())
            })
            .collect();
        assert_eq!(
            waits,
            BTreeMap::from([
                (
                    role.address.to_string(),
                    [&project.address, &policy.address, &member].map(ToString::to_string).into()
                ),
                (policy.address.to_string(), [member.to_string()].into()),
                (member.to_string(), BTreeSet::new()),
                (project.address.to_string(), BTreeSet::new()),
            ])
        );
    }

    #[test]
    fn an_unmarked_declared_resource_refuses_the_destroy_and_nothing_of_it_is_deleted() {
        // Unmarked, reconcile's old tag (not re-marked yet), a tag a file could write, another
        // deployment's mark: none of them this deployment's.
        for tags in [
            json!({"team": "other"}),
            json!({"managed-by": "reconcile"}),
            json!({"managed-by": "rocm-bake"}),
            json!({MARK_KEY: "team-x"}),
        ] {
            unmarked_refuses(tags);
        }
    }

    fn unmarked_refuses(tags: Value) {
        let role = resource(crate::fake::kinds::IAM_ROLE, "theirs", true);
        let mut policy = resource(crate::fake::kinds::IAM_ROLE_POLICY, "theirs", false);
        policy.parent = Some(role.address.clone());
        let setting = resource(crate::fake::kinds::GITHUB_VARIABLE, "REGISTRY", false);
        let resources = crate::engine::desired_resources([role.clone(), policy.clone(), setting.clone()]);
        let observed = BTreeMap::from([
            (role.address.clone(), present(tags)),
            (policy.address.clone(), Observed::Present(Default::default())),
            (setting.address.clone(), Observed::Present(Default::default())),
        ]);
        let (changes, findings) = changes(&resources, &observed);
        assert!(changes.is_empty(), "{changes:?}");
        let codes: Vec<(&str, Severity, String)> =
            findings.iter().map(|f| (f.code.as_str(), f.severity, f.address.as_ref().unwrap().to_string())).collect();
        assert_eq!(
            codes,
            vec![
                (NOT_OURS_TO_DESTROY, Severity::Error, role.address.to_string()),
                (NOT_DESTROYED, Severity::Warning, setting.address.to_string()),
            ]
        );
        assert!(findings[0].refuses() && !findings[1].refuses());
    }

    #[test]
    fn what_is_one_per_account_is_left_whoever_made_it() {
        for (tags, refused) in
            [(json!({MARK_KEY: "rocm-bake"}), false), (json!({MARK_KEY: "team-x"}), false), (json!({}), false)]
        {
            let provider = resource(crate::fake::kinds::IAM_ROLE, "github", true).shared_in_the_account();
            let resources = crate::engine::desired_resources([provider.clone()]);
            let observed = BTreeMap::from([(provider.address.clone(), present(tags.clone()))]);
            let (changes, findings) = changes(&resources, &observed);
            assert!(changes.is_empty(), "{tags}: {changes:?}");
            assert_eq!(findings.len(), 1, "{findings:?}");
            assert_eq!((findings[0].code.as_str(), findings[0].refuses()), (NOT_DESTROYED, refused));
            assert!(findings[0].message.contains("every deployment in it shares it"), "{}", findings[0].message);
        }
        // Absent: nothing to say.
        let provider = resource(crate::fake::kinds::IAM_ROLE, "github", true).shared_in_the_account();
        let resources = crate::engine::desired_resources([provider.clone()]);
        let (changes, findings) = changes(&resources, &BTreeMap::from([(provider.address.clone(), Observed::Absent)]));
        assert!(changes.is_empty() && findings.is_empty());
    }
}
