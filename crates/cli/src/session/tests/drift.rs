//! The drift check's steps and `plan --attribute`, behind the backend: what the fake records is
//! what the real one does (survey, attribution, the registry, a put-back's lock and writes), in
//! order.

use super::*;

#[tokio::test]
async fn a_drift_check_plans_surveys_attributes_and_reads_the_registry_and_writes_nothing() {
    let rig = new_rig(DESIRED, Answer::Never, nothing);
    let drift = rig.session.drift(7).await.unwrap();
    assert_eq!(rig.log(), ["observe", "survey", "attribute 7 days", "read the registry"]);
    // Every difference carries what the history said of it.
    let changed: Vec<&Address> = drift.planned.plan.changes.iter().map(|c| &c.address).collect();
    assert!(!changed.is_empty());
    for address in changed {
        assert_eq!(drift.planned.plan.attributions.get(address), Some(&Attribution::NoneFound { days: 7 }));
    }
    assert_eq!(drift.registry.account, "123456789012");
}

#[tokio::test]
async fn a_plan_asks_who_made_the_drift_only_when_told_to() {
    let rig = new_rig(DESIRED, Answer::Never, nothing);
    let plain = rig.session.plan(None).await.unwrap();
    assert!(plain.plan.attributions.is_empty());
    assert_eq!(rig.log(), ["observe"]);
    let attributed = rig.session.plan(Some(3)).await.unwrap();
    assert!(!attributed.plan.attributions.is_empty());
    assert_eq!(rig.log(), ["observe", "observe", "attribute 3 days"]);
}

/// Every declared resource present as desired, but the lifecycle policy, absent (deleted by hand).
fn drifted(desired: &str, lifecycle: bool) -> impl Fn(usize, &mut FakeReconciler) + Send + Sync + 'static {
    let present = present_as_declared(desired, |address| lifecycle || address.kind.as_str() != "ecr_lifecycle_policy");
    move |_, fake| fake.observed = present.clone()
}

#[tokio::test]
async fn a_put_back_takes_the_lock_plans_again_under_it_and_makes_only_what_the_kinds_named_put_back() {
    let rig = new_rig(DESIRED, Answer::Never, drifted(DESIRED, false));
    let drift = rig.session.drift(7).await.unwrap();
    let named: Vec<&reconcile_core::describe::PutBack> = reconcile_ecr::DESCRIPTION.access.put_back.iter().collect();
    let report = rig.session.put_back(&drift.planned, &named).await;
    let made: Vec<String> = report.made.iter().map(|(address, ..)| address.to_string()).collect();
    assert_eq!(made, ["ecr_lifecycle_policy.pytorch"]);
    assert!(report.failed.is_empty() && report.trouble.is_none(), "{report:?}");
    assert_eq!(
        rig.log(),
        [
            "observe",
            "survey",
            "attribute 7 days",
            "read the registry",
            "lock",
            "observe",
            "apply ecr_lifecycle_policy.pytorch",
            "release"
        ]
    );
}

#[tokio::test]
async fn nothing_of_a_kind_not_named_nor_a_resource_made_is_put_back_and_no_lock_is_taken() {
    // The repository itself is missing: its lifecycle policy belongs to it, so neither is put back.
    let rig = new_rig(DESIRED, Answer::Never, nothing);
    let drift = rig.session.drift(7).await.unwrap();
    let named: Vec<&reconcile_core::describe::PutBack> = reconcile_ecr::DESCRIPTION.access.put_back.iter().collect();
    let report = rig.session.put_back(&drift.planned, &named).await;
    assert!(report.made.is_empty() && report.trouble.is_none(), "{report:?}");
    // The policy deleted, but no kind named.
    let unnamed = new_rig(DESIRED, Answer::Never, drifted(DESIRED, false));
    let drift = unnamed.session.drift(7).await.unwrap();
    let report = unnamed.session.put_back(&drift.planned, &[]).await;
    assert!(report.made.is_empty(), "{report:?}");
    for log in [rig.log(), unnamed.log()] {
        assert!(!log.iter().any(|event| event == "lock" || event.starts_with("apply")), "{log:?}");
    }
}
