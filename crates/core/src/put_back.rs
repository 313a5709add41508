//! Drift put back by the scheduled check (`[drift] put_back`): which changes of its plan the
//! put-back role makes in the run that finds them, and why it leaves each other one. Pure: the
//! apply itself is the engine's, with every change not chosen left.
//!
//! A change is put back only when every one of these holds: its kind is named; its action is one
//! the kind puts back (a setting written again, never a delete, a replacement, or a resource
//! made); it is not an administrator's (no takeover, nothing a reconciler keeps for one); and
//! nothing it depends on has a change of its own (it is a setting of a resource that exists, as
//! it is). The put-back role's policy allows exactly those writes, so IAM holds the same line.

use crate::describe::PutBack;
use crate::engine::administrator_changes;
use crate::{Address, Plan, Reconciler};

/// What the put-back leaves of `plan`, each change with why, when the kinds `named` are put
/// back; every other change of the plan is put back.
pub fn left(reconcilers: &[Box<dyn Reconciler>], plan: &Plan, named: &[&PutBack]) -> Vec<(Address, String)> {
    // Looked up once per change: a drift of thousands of repositories stays linear.
    let administrators: std::collections::BTreeMap<Address, String> =
        administrator_changes(reconcilers, &plan.changes, &plan.takeovers).into_iter().collect();
    let changed: std::collections::BTreeSet<&Address> = plan.changes.iter().map(|c| &c.address).collect();
    plan.changes
        .iter()
        .filter_map(|change| {
            let address = &change.address;
            let why = match named.iter().find(|kind| kind.kind == address.kind) {
                None => format!("`{}` is not a kind `[drift] put_back` names", address.kind.as_str()),
                Some(kind) if !kind.actions.contains(&change.action) => {
                    format!("a {}, which the drift check never puts back", change.action.as_str())
                }
                Some(_) => {
                    if let Some(why) = administrators.get(address) {
                        format!("an administrator's change ({why})")
                    } else if let Some(other) = change.depends_on.iter().find(|on| changed.contains(on)) {
                        format!("`{other}`, which it belongs to, has a change of its own")
                    } else {
                        return None;
                    }
                }
            };
            Some((address.clone(), why))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ResourceKind;
    use crate::fake::FakeReconciler;
    use crate::plan::{Action, Change};

    const SETTING: ResourceKind = crate::fake::kinds::ECR_LIFECYCLE_POLICY;

    fn change(name: &str, action: Action, depends_on: &[&str]) -> Change {
        Change {
            address: Address::new(SETTING, name),
            action,
            before: None,
            after: None,
            depends_on: depends_on.iter().map(|on| Address::new(SETTING, *on)).collect(),
        }
    }

    #[test]
    fn only_a_named_kinds_setting_of_a_resource_that_exists_is_put_back_and_never_an_administrators() {
        static NAMED: PutBack = PutBack { kind: SETTING, actions: &[Action::Update], writes: |_, _| Vec::new() };
        let fake = FakeReconciler {
            administrators: [("admins".to_owned(), "an administrator's")].into(),
            ..FakeReconciler::default()
        };
        let reconcilers: Vec<Box<dyn Reconciler>> = vec![Box::new(fake)];
        let plan = Plan {
            changes: vec![
                change("drifted", Action::Update, &[]),
                change("made", Action::Create, &[]),
                change("admins", Action::Update, &[]),
                change("belongs", Action::Update, &["made"]),
                change("gone", Action::Delete, &[]),
            ],
            ..Plan::new("1", "us-east-1")
        };
        let left = left(&reconcilers, &plan, &[&NAMED]);
        let names: Vec<(&str, &str)> = left.iter().map(|(a, why)| (a.name.as_str(), why.as_str())).collect();
        assert_eq!(
            names,
            [
                ("made", "a create, which the drift check never puts back"),
                ("admins", "an administrator's change (an administrator's)"),
                ("belongs", "`ecr_lifecycle_policy.made`, which it belongs to, has a change of its own"),
                ("gone", "a delete, which the drift check never puts back"),
            ]
        );
        let nothing = super::left(&reconcilers, &plan, &[]);
        assert_eq!(nothing.len(), 5, "nothing is put back of a kind not named: {nothing:?}");
        assert!(nothing[0].1.contains("is not a kind `[drift] put_back` names"), "{nothing:?}");
    }
}
