//! An apply's steps in order, and the lock released on every path out.

use super::*;

#[tokio::test]
async fn an_apply_looks_then_locks_plans_again_asks_applies_reports_and_releases() {
    let rig = new_rig(DESIRED, Answer::Yes, nothing);
    assert_eq!(rig.apply(request(false, false)).await.unwrap(), exit::OK);
    assert_eq!(
        rig.log(),
        [
            "observe",
            "listen",
            "lock",
            "observe",
            "show plan",
            "ask",
            "apply ecr_repository.pytorch",
            "apply ecr_lifecycle_policy.pytorch",
            "report",
            "release",
        ]
    );
}

#[tokio::test]
async fn an_apply_with_nothing_to_do_takes_no_lock_and_listens_for_nothing() {
    let present = present_as_declared(DESIRED, |_| true);
    let rig = new_rig(DESIRED, Answer::Yes, move |_, fake| fake.observed = present.clone());
    assert_eq!(rig.apply(request(false, false)).await.unwrap(), exit::OK);
    assert_eq!(rig.log(), ["observe", "show plan", "report"]);
}

#[tokio::test]
async fn a_refused_plan_takes_no_lock() {
    // An error finding about desired.toml: a rule that expires tagged images.
    let tagged = DESIRED.replace(
        r#"selection = { tagStatus = "untagged", countType = "imageCountMoreThan", countNumber = 3 }"#,
        r#"selection = { tagStatus = "any", countType = "imageCountMoreThan", countNumber = 3 }"#,
    );
    let rig = new_rig(&tagged, Answer::Yes, nothing);
    let error = rig.apply(request(true, false)).await.unwrap_err();
    assert_eq!(error.exit_code(), exit::REFUSED, "{:?}", error.render());
    assert_eq!(rig.log(), ["observe", "show plan"]);

    // A delete, without --allow-delete.
    let stray = Address::new(reconcile_ecr::REPOSITORY, "stray");
    let rig = new_rig(DESIRED, Answer::Yes, move |_, fake| {
        fake.observed.insert(stray.clone(), Observed::Present(serde_json::Map::new()));
    });
    let error = rig.apply(request(true, false)).await.unwrap_err();
    assert_eq!(error.exit_code(), exit::REFUSED);
    assert!(error.render()[0].contains("pass --allow-delete to allow it"), "{:?}", error.render());
    assert_eq!(rig.log(), ["observe", "show plan"]);
}

#[tokio::test]
async fn an_administrators_change_is_left_by_any_caller_github_can_be_from_the_account_not_the_file() {
    let admins = |_: usize, fake: &mut FakeReconciler| {
        fake.administrators.insert("pytorch".to_owned(), "what every build may do");
    };
    let ci = format!(
        "{DESIRED}[github]\nrepository = \"ROCm/rocm-bake\"\n[ci]\nplan_role = \"p\"\ndrift_role = \"d\"\n\
         apply_role = \"reconcile-apply\"\nenvironment = \"prod\"\n"
    );
    for (desired, caller, trust, ci_caller) in [
        // A role of the account that trusts GitHub, whatever desired.toml names (or not).
        (DESIRED, "arn:aws:sts::123456789012:assumed-role/renamed/s", Some(true), true),
        // The apply role desired.toml names, in another case: one name to IAM.
        (ci.as_str(), "arn:aws:sts::123456789012:assumed-role/Reconcile-Apply/s", Some(false), true),
        // A role that may not read its own trust cannot be told apart from a CI role.
        (DESIRED, "arn:aws:sts::123456789012:assumed-role/narrow/s", None, true),
        // An administrator: a role GitHub cannot assume, or a user.
        (DESIRED, "arn:aws:sts::123456789012:assumed-role/admin/s", Some(false), false),
        (DESIRED, "arn:aws:iam::123456789012:user/alice", None, false),
    ] {
        let mut rig = new_rig(desired, Answer::Yes, admins);
        rig.session.backend.caller = (caller, trust);
        let code = rig.apply(request(true, false)).await.unwrap();
        let log = rig.log();
        let sent = |address: &str| log.iter().any(|line| line == &format!("apply {address}"));
        if ci_caller {
            // The administrator's change is never sent, and as it is the plan's only one, nothing
            // is locked either; exit 2: the account still differs. (The rest of a plan is made:
            // `put_back.rs` runs the apply workflow so.)
            assert_eq!(code, exit::CHANGES, "{caller}: {log:?}");
            assert!(!sent("ecr_repository.pytorch"), "{caller}: {log:?}");
            assert!(!log.contains(&"lock".to_owned()) && log.contains(&"report".to_owned()), "{caller}: {log:?}");
        } else {
            assert_eq!(code, exit::OK, "{caller}");
            assert!(sent("ecr_repository.pytorch"), "{caller}: {log:?}");
        }
    }
}

#[tokio::test]
async fn sigint_at_the_approval_prompt_releases_the_lock() {
    let rig = new_rig(DESIRED, Answer::Never, nothing);
    let signal = async {
        rig.console.asked.notified().await;
        rig.signals.send(exit::INTERRUPTED).unwrap();
    };
    let (result, ()) = tokio::join!(rig.apply(request(false, false)), signal);
    assert!(matches!(result, Err(CliError::Interrupted(exit::INTERRUPTED))), "{result:?}");
    assert_eq!(rig.log(), ["observe", "listen", "lock", "observe", "show plan", "ask", "release"]);
}

#[tokio::test]
async fn sigterm_while_planning_under_the_lock_releases_it() {
    // The plan under the lock (the second) never answers.
    let rig = new_rig(DESIRED, Answer::Yes, |n, fake| fake.hang_after = (n == 2).then_some(0));
    let signal = async {
        rig.locked.notified().await;
        rig.signals.send(exit::TERMINATED).unwrap();
    };
    let (result, ()) = tokio::join!(rig.apply(request(true, false)), signal);
    assert!(matches!(result, Err(CliError::Interrupted(exit::TERMINATED))), "{result:?}");
    assert_eq!(rig.log(), ["observe", "listen", "lock", "observe", "release"]);
}

#[tokio::test]
async fn a_signal_while_waiting_for_the_lock_lets_go_of_it_if_it_was_written() {
    let rig = rig_with_lock(DESIRED, Answer::Yes, Some(true), nothing);
    let signal = async {
        rig.locked.notified().await;
        rig.signals.send(exit::INTERRUPTED).unwrap();
    };
    let (result, ()) = tokio::join!(rig.apply(request(true, false)), signal);
    assert!(matches!(result, Err(CliError::Interrupted(exit::INTERRUPTED))), "{result:?}");
    assert_eq!(rig.log(), ["observe", "listen", "lock", "release"]);
}

#[tokio::test]
async fn a_second_signal_while_applying_stops_at_once_and_releases_the_lock() {
    let rig = new_rig(DESIRED, Answer::Yes, |_, fake| fake.hang = vec!["pytorch".to_owned()]);
    let signals = async {
        rig.locked.notified().await;
        rig.signals.send(exit::INTERRUPTED).unwrap();
        rig.signals.send(exit::INTERRUPTED).unwrap();
    };
    let (result, ()) = tokio::join!(rig.apply(request(true, false)), signals);
    assert!(matches!(result, Err(CliError::Interrupted(exit::INTERRUPTED))), "{result:?}");
    let log = rig.log();
    assert_eq!(log.last().map(String::as_str), Some("release"), "{log:?}");
    assert!(!log.contains(&"report".to_owned()), "stopped at once: {log:?}");
}

#[tokio::test]
async fn every_failure_after_the_lock_releases_it() {
    // The plan under the lock fails (read twice: apply plans around what it cannot read, and
    // here it can read nothing).
    let rig = new_rig(DESIRED, Answer::Yes, |n, fake| fake.fail_after = (n == 2).then_some(0));
    let error = rig.apply(request(true, false)).await.unwrap_err();
    assert!(matches!(error, CliError::Aws { .. }), "{error:?}");
    assert_eq!(rig.log(), ["observe", "listen", "lock", "observe", "observe", "release"]);

    // A change fails.
    let rig = new_rig(DESIRED, Answer::Yes, |_, fake| fake.fail = vec!["pytorch".to_owned()]);
    let error = rig.apply(request(true, false)).await.unwrap_err();
    assert!(matches!(error, CliError::ApplyFailed), "{error:?}");
    assert_eq!(rig.log().last().map(String::as_str), Some("release"));

    // Turned down at the prompt.
    let rig = new_rig(DESIRED, Answer::No, nothing);
    let error = rig.apply(request(false, false)).await.unwrap_err();
    assert!(matches!(error, CliError::Cancelled), "{error:?}");
    assert_eq!(rig.log(), ["observe", "listen", "lock", "observe", "show plan", "ask", "release"]);

    // The account changed between the look and the locked plan, and now the plan is refused.
    let stray = Address::new(reconcile_ecr::REPOSITORY, "stray");
    let rig = new_rig(DESIRED, Answer::Yes, move |n, fake| {
        if n == 2 {
            fake.observed.insert(stray.clone(), Observed::Present(serde_json::Map::new()));
        }
    });
    let error = rig.apply(request(true, false)).await.unwrap_err();
    assert_eq!(error.exit_code(), exit::REFUSED);
    assert_eq!(rig.log(), ["observe", "listen", "lock", "observe", "show plan", "release"]);
}

#[tokio::test]
async fn without_a_place_for_a_lock_the_apply_runs_unlocked() {
    let rig = rig_with_lock(DESIRED, Answer::Yes, None, nothing);
    assert_eq!(rig.apply(request(true, false)).await.unwrap(), exit::OK);
    assert!(!rig.log().iter().any(|event| event == "lock" || event == "release"), "{:?}", rig.log());
}

#[tokio::test]
async fn an_apply_that_no_longer_holds_the_lock_starts_no_more_changes_and_says_so() {
    // The repository's write takes a while; meanwhile the lease's renewal finds the lock broken
    // (its lease ran out and another apply took it): its lifecycle policy, next, never starts.
    let mut rig = new_rig(DESIRED, Answer::Yes, slow_pytorch);
    rig.session.backend.lock_lost = (true, false);
    let error = rig.apply(request(true, false)).await.unwrap_err();
    assert!(error.render()[0].contains("lost the apply lock while it ran"), "{:?}", error.render());
    let log = rig.log();
    assert!(log.contains(&"renew".to_owned()), "{log:?}");
    assert!(log.contains(&"apply ecr_repository.pytorch".to_owned()), "{log:?}");
    assert!(!log.contains(&"apply ecr_lifecycle_policy.pytorch".to_owned()), "{log:?}");
    assert_eq!(log.last().map(String::as_str), Some("release"), "{log:?}");

    // Its lease ran out by this host's clock, every renewal having failed: the same, at once.
    let mut rig = new_rig(DESIRED, Answer::Yes, slow_pytorch);
    rig.session.backend.lock_lost = (false, true);
    let error = rig.apply(request(true, false)).await.unwrap_err();
    assert!(error.render()[0].contains("its lease ran out"), "{:?}", error.render());
    assert!(!rig.log().contains(&"apply ecr_lifecycle_policy.pytorch".to_owned()), "{:?}", rig.log());

    // Held throughout: renewed while the write runs, and every change made.
    let rig = new_rig(DESIRED, Answer::Yes, slow_pytorch);
    assert_eq!(rig.apply(request(true, false)).await.unwrap(), exit::OK);
    let log = rig.log();
    assert!(log.contains(&"renew".to_owned()) && log.contains(&"apply ecr_lifecycle_policy.pytorch".to_owned()));
}

/// The repository `pytorch`'s write takes a fifth of a second, four of the fake lock's renewals.
fn slow_pytorch(_: usize, fake: &mut FakeReconciler) {
    use futures::FutureExt;
    let done = tokio::time::sleep(Duration::from_millis(200)).boxed().shared();
    fake.slow = Some(("pytorch".to_owned(), done));
}
