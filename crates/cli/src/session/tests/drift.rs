//! The drift check's steps and `plan --attribute`, behind the backend: what the fake records is
//! what the real one does (survey, attribution, the registry), in order.

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
