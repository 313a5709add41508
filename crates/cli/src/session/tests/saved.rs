//! A saved plan carried out by `apply FILE`: exactly, without asking (it was approved when it
//! was reviewed), under the lock; refused as stale, with the lock released, when the account
//! moved or the file was edited; refused before the lock when the file says it was made another
//! way than this apply would make it.

use super::*;

/// The plan this session makes now, saved as `plan --out` saves it, in a file outside the
/// repository (the operator's to name).
async fn saved(rig: &Rig, edit: impl Fn(&mut serde_json::Value)) -> (tempfile::TempDir, std::path::PathBuf) {
    let planned = rig.session.plan(None).await.unwrap();
    let mut json =
        reconcile_render::saved::to_json(&planned.plan, &rig.session.inputs().desired_text, rig.session.made_with());
    edit(&mut json);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.json");
    std::fs::write(&path, json.to_string()).unwrap();
    rig.log.lock().unwrap().clear();
    (dir, path)
}

fn from(path: &Path) -> ApplyRequest<'_> {
    ApplyRequest {
        plan: PlanFrom::Saved(path),
        auto_approve: false,
        allow_delete: false,
        lock_timeout: Duration::ZERO,
        shown_in_public: false,
    }
}

#[tokio::test]
async fn a_saved_plan_that_still_holds_is_applied_exactly_without_asking_under_the_lock() {
    let rig = new_rig(DESIRED, Answer::Never, nothing);
    let (_dir, path) = saved(&rig, |_| {}).await;
    assert_eq!(rig.apply(from(&path)).await.unwrap(), exit::OK);
    // No first look and no question: the file is the plan, checked against the account under
    // the lock.
    assert_eq!(
        rig.log(),
        [
            "listen",
            "lock",
            "observe",
            "show plan",
            "apply ecr_repository.pytorch",
            "apply ecr_lifecycle_policy.pytorch",
            "report",
            "release",
        ]
    );
}

#[tokio::test]
async fn a_saved_plan_the_account_moved_past_is_stale_and_the_lock_is_released() {
    // The second plan (the one under the lock) finds the repository made meanwhile.
    let rig = new_rig(DESIRED, Answer::Never, |n, fake| {
        if n >= 2 {
            let address = Address::new(reconcile_ecr::REPOSITORY, "pytorch");
            fake.observed.insert(address, Observed::Present(serde_json::Map::new()));
        }
    });
    let (_dir, path) = saved(&rig, |_| {}).await;
    let error = rig.apply(from(&path)).await.unwrap_err();
    assert_eq!(error.exit_code(), exit::STALE_PLAN, "{:?}", error.render());
    assert_eq!(rig.log(), ["listen", "lock", "observe", "release"]);
}

#[tokio::test]
async fn an_edited_saved_plan_is_stale_and_one_made_another_way_is_refused_before_the_lock() {
    // A change taken out of the file: what desired.toml and the account give now is more.
    let rig = new_rig(DESIRED, Answer::Never, nothing);
    let (_dir, path) = saved(&rig, |json| {
        json["resource_changes"].as_array_mut().unwrap().pop();
    })
    .await;
    let error = rig.apply(from(&path)).await.unwrap_err();
    assert_eq!(error.exit_code(), exit::STALE_PLAN, "{:?}", error.render());
    assert!(error.render().iter().any(|line| line.contains("stale")), "{:?}", error.render());
    assert_eq!(rig.log(), ["listen", "lock", "observe", "release"]);

    // Made with --prune, applied without: refused from the file alone, before any lock.
    let rig = new_rig(DESIRED, Answer::Never, nothing);
    let (_dir, path) = saved(&rig, |json| json["made_with"]["prune"] = true.into()).await;
    let error = rig.apply(from(&path)).await.unwrap_err();
    assert_eq!(error.exit_code(), exit::STALE_PLAN, "{:?}", error.render());
    assert!(error.render().iter().any(|line| line.contains("apply it with --prune too")), "{:?}", error.render());
    assert!(rig.log().is_empty(), "{:?}", rig.log());

    // Not a plan at all: nothing locked either.
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("plan.json");
    std::fs::write(&garbage, "not json").unwrap();
    let error = rig.apply(from(&garbage)).await.unwrap_err();
    assert_eq!(error.exit_code(), exit::ERROR, "{:?}", error.render());
    assert!(rig.log().is_empty(), "{:?}", rig.log());
}
