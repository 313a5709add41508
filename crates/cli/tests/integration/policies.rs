//! The CI roles' policies, held to what reconcile actually sends: every request the read
//! commands make is allowed by the derived read-only policy and every action it allows is used;
//! every write a sequence of applies makes (as the apply role, through every kind of change) is
//! allowed by the derived apply policy on its resource, and it allows no write never made (and
//! every run of the suite is held to it: `permissions::Watch`). parliament, the IAM policy
//! linter, finds nothing in either; its community auditors, nothing in the read-only one.

use std::collections::BTreeSet;
use std::process::Command;

use aws_sdk_iam::Client as Iam;
use reconcile_test_support::{TestAccount, emulator, emulator_python, workspace_root};
use serde_json::{Value, json};

use crate::ci::CI;
use crate::permissions::{Administrators, Watch, actions, allowing, apply_policy, list, not_allowed, permission};
use crate::support::{desired_file, real_desired, reconcile, reconcile_in, small_account_with_runner};

/// What parliament (at every severity; with its community auditors when `community`) finds in
/// `policy`: each finding's issue and detail.
fn parliament(policy: &Value, community: bool) -> Vec<String> {
    let parliament = emulator_python().with_file_name("parliament");
    let output = Command::new(&parliament)
        .args(["--json", "--minimum_severity", "INFO", "--string", &policy.to_string()])
        .args(community.then_some("--include-community-auditors"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    // It exits 1 when it finds something, and says why on stderr when it fails.
    assert!(output.status.code().is_some_and(|c| c <= 1), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let finding: Value = serde_json::from_str(line).unwrap();
            let mut actions: Vec<&str> = finding["location"]["actions"]
                .as_array()
                .map(|actions| actions.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            actions.sort_unstable();
            format!(
                "{}: {}{}",
                finding["issue"].as_str().unwrap(),
                finding["detail"].as_str().unwrap(),
                actions.join(" ")
            )
        })
        .collect()
}

fn printed_policy(account: &TestAccount, desired: &std::path::Path, which: &str) -> Value {
    let printed = reconcile(account, desired, &["policy", which, "--account", &account.id]);
    assert_eq!(printed.code, 0, "{}", printed.stderr);
    serde_json::from_str(&printed.stdout).unwrap()
}

#[tokio::test]
async fn the_read_only_policy_is_derived_allows_every_read_and_nothing_else_and_passes_parliament() {
    // docs/read-only-policy.json is the derivation's, for the project's desired.toml.
    let documented: Value =
        serde_json::from_str(&std::fs::read_to_string(workspace_root().join("docs/read-only-policy.json")).unwrap())
            .unwrap();
    let derived = reconcile(
        &emulator().new_account().await,
        &real_desired(),
        &["policy", "read-only", "--account", "123456789012"],
    );
    assert_eq!(serde_json::from_str::<Value>(&derived.stdout).unwrap(), documented, "{}", derived.stderr);
    assert_eq!(parliament(&documented, true), Vec::<String>::new());
    // docs/plan-policy.json, the plan role's: what reconcile manages only.
    let plan: Value =
        serde_json::from_str(&std::fs::read_to_string(workspace_root().join("docs/plan-policy.json")).unwrap())
            .unwrap();
    let derived =
        reconcile(&emulator().new_account().await, &real_desired(), &["policy", "plan", "--account", "123456789012"]);
    assert_eq!(serde_json::from_str::<Value>(&derived.stdout).unwrap(), plan, "{}", derived.stderr);

    // Everything the read-only commands send, on the account as it stood (so the plan has
    // policies to put, and reads the images they would expire), once the CI identities exist.
    let account = emulator().new_account().await;
    let copy = crate::support::real_copy();
    let desired = copy.path.clone();
    account.seed_2026_11_11(&desired);
    crate::support::import(&account, &desired);
    assert_eq!(reconcile(&account, &desired, &["apply", "--auto-approve"]).code, 0);
    let policy = printed_policy(&account, &desired, "read-only");
    // Something for the drift check to find, and to say who did.
    let ecr = aws_sdk_ecr::Client::new(&account.sdk_config());
    crate::support::put_lifecycle_policy(&ecr, "pytorch", crate::support::OLD_14_DAY_POLICY).await;
    someone_elses_role_that_trusts_github(&account).await;
    let plan_role = account.assume("rocm-bake-reconcile-plan").await;
    account.seed_builds(
        "us-east-1",
        &json!([{ "project": "rocm-bake", "start": 1_796_000_000, "end": 1_796_002_040, "computeType": "BUILD_GENERAL1_XLARGE" }]),
    );
    account.bucket_size(
        "us-east-1",
        &format!("rocm-bake-sccache-{}", account.id),
        "StandardStorage",
        &reconcile_core::time::day(
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64 - 86_400,
        ),
        1 << 30,
    );
    for args in [&["plan"][..], &["drift"], &["usage"], &["outputs"], &["plan", "--prune"], &["cost", "--days", "90"]] {
        let run = reconcile(&plan_role, &desired, args);
        assert!(run.code == 0 || run.code == 2, "{args:?}: {}", run.stderr);
    }
    // A pull request's plan that moves the runner to 2xlarge: the plan role reads the runner's
    // last nights for its cost line, as its derived policy lets it.
    let yesterday = reconcile_core::time::now().div_euclid(86_400) * 86_400 - 86_400 + 2 * 3600;
    account.seed_builds(
        "us-east-1",
        &json!([{ "project": "rocm-bake", "start": yesterday, "end": yesterday + 2040, "computeType": "BUILD_GENERAL1_XLARGE" }]),
    );
    let bigger = desired.with_file_name("bigger.toml");
    let text = std::fs::read_to_string(&desired).unwrap();
    std::fs::write(&bigger, text.replace("BUILD_GENERAL1_XLARGE", "BUILD_GENERAL1_2XLARGE")).unwrap();
    let run = reconcile(&plan_role, &bigger, &["plan", "--private", "--format", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let cost: Value = serde_json::from_str::<Value>(&run.stdout).unwrap()["cost"].clone();
    assert!(cost["causes"][0]["monthly_usd"].as_f64().is_some_and(|usd| usd > 0.0), "{cost}");
    let mut used = BTreeSet::new();
    for request in plan_role.requests() {
        assert!(!request.is_write(), "{request}");
        let Some((action, resource)) = permission(&request) else { continue };
        assert!(allowing(&policy, &action, &resource).is_some(), "{action} on {resource} is not allowed");
        used.insert(action);
    }
    assert_eq!(used, actions(&policy), "every read allowed, and nothing allowed that is never read");
}

/// How many writes `who` has sent, the lock's included.
fn every_write(who: &TestAccount) -> usize {
    who.requests().iter().filter(|request| request.is_write()).count()
}

/// A role another workflow made that trusts GitHub: whose it is is read from its tags.
async fn someone_elses_role_that_trusts_github(account: &TestAccount) {
    let provider = format!("arn:aws:iam::{}:oidc-provider/token.actions.githubusercontent.com", account.id);
    let trust = json!({ "Version": "2012-10-17", "Statement": [{
        "Effect": "Allow",
        "Principal": { "Federated": provider },
        "Action": "sts:AssumeRoleWithWebIdentity",
        "Condition": { "StringLike": { "token.actions.githubusercontent.com:sub": "repo:someone/else:*" } },
    }] });
    aws_sdk_iam::Client::new(&account.sdk_config())
        .create_role()
        .role_name("someone-elses-deploy")
        .assume_role_policy_document(trust.to_string())
        .send()
        .await
        .unwrap();
}

#[tokio::test]
async fn the_apply_policy_allows_every_write_apply_makes_and_no_other() {
    // Made by the administrator, then changed out of band in every way apply undoes, and applied
    // as the apply role, three times: settings, then resources gone, then an undeclared one to
    // prune; every request of the apply role held by the emulator to its live policy as IAM
    // would (conditions included). The apply role's requests are everything it needed.
    let account = emulator().new_account().await;
    let text = format!("{}{CI}", small_account_with_runner(&["pytorch", "pytorch-cache"]));
    let desired = desired_file(&text);
    let admin = reconcile(&account, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(admin.code, 0, "{}{}", admin.stdout, admin.stderr);
    someone_elses_role_that_trusts_github(&account).await;
    let policy = printed_policy(&account, &desired.path, "apply");
    // parliament finds nothing, at every severity: no escalation (no write in IAM at all), no
    // mismatched condition type, no bucket write that could open the cache's objects or delete
    // them (its ACL and expiry are an administrator's). Its community auditors name what the role
    // is for: it passes the runner's role to CodeBuild, removes a bucket policy and keeps public
    // access blocked. In the runner's policy and its boundary, only the registry login, whose
    // answer is a credential by design.
    assert_eq!(parliament(&policy, false), Vec::<String>::new());
    assert_eq!(
        parliament(&policy, true),
        ["PERMISSIONS_MANAGEMENT_ACTIONS: iam:passrole s3:deletebucketpolicy s3:putbucketpublicaccessblock"]
    );
    for runners in ["runner", "boundary"] {
        let derived = printed_policy(&account, &desired.path, runners);
        assert_eq!(parliament(&derived, false), Vec::<String>::new(), "{runners}");
        assert_eq!(parliament(&derived, true), ["CREDENTIALS_EXPOSURE: ecr:getauthorizationtoken"], "{runners}");
    }
    let (apply_role, gate) = crate::permissions::enforced(&account, "rocm-bake-reconcile-apply").await;
    let apply = |args: &[&str]| {
        let run = reconcile(&apply_role, &desired.path, args);
        assert_eq!(run.code, 0, "{args:?}: {}{}", run.stdout, run.stderr);
        let again = reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]);
        assert_eq!(again.code, 0, "converged: {}", again.stdout);
    };

    // The cache opened to everyone and its expiry gone: the apply role leaves both, naming them,
    // sends nothing (they are the plan's only changes), and an administrator applies them.
    crate::hostile::open_and_unexpire_the_cache(&account).await;
    let writes = every_write(&apply_role);
    let left = reconcile(&apply_role, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(left.code, 2, "{}{}", left.stdout, left.stderr);
    assert!(
        left.stderr.contains("the apply role `rocm-bake-reconcile-apply`")
            && left.stderr.contains(
                "leaves `s3_bucket.sccache` (an ACL that grants someone else: who reaches the bucket); \
             `s3_bucket_lifecycle.sccache` (a bucket's expiry, which deletes its objects) and makes the rest"
            ),
        "{}",
        left.stderr
    );
    assert!(left.stdout.contains("Warning [W501] this plan changes `s3_bucket.sccache`"), "{}", left.stdout);
    assert_eq!(every_write(&apply_role), writes, "no write");
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);

    // The runner's role changed by hand in every way: what only an administrator puts back is
    // left, never sent (the apply role's every request is held to its live policy here).
    crate::hostile::vandalise_the_runners_role(&account).await;
    let left = reconcile(&apply_role, &desired.path, &["apply", "--auto-approve", "--allow-delete"]);
    assert_eq!(left.code, 2, "{}{}", left.stdout, left.stderr);
    assert!(
        left.stderr.contains(
            "leaves `iam_role_policy.codebuild/legacy`, `iam_role.codebuild` (the runner's role, its permissions \
             boundary, or an inline policy on it desired.toml does not derive: what every build may do)"
        ),
        "{}",
        left.stderr
    );
    assert!(left.stdout.contains("Left for an administrator: iam_role.codebuild"), "{}", left.stdout);
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve", "--allow-delete"]).code, 0);
    // Its derived inline policy alone changed by hand: the apply role puts it back, within the
    // boundary the role still carries.
    let narrow =
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:ListAllMyBuckets","Resource":"*"}]}"#;
    Iam::new(&account.sdk_config())
        .put_role_policy()
        .role_name("rocm-bake-codebuild")
        .policy_name("rocm-bake-nightly")
        .policy_document(narrow)
        .send()
        .await
        .unwrap();
    apply(&["apply", "--auto-approve"]);

    crate::hostile::vandalise_all_but_iam(&account).await;
    apply(&["apply", "--auto-approve", "--allow-delete"]);
    crate::hostile::remove_everything(&account).await;
    apply(&["apply", "--auto-approve"]);
    let ecr = aws_sdk_ecr::Client::new(&account.sdk_config());
    crate::hostile::remake_the_webhook_by_hand(&account).await;
    apply(&["apply", "--auto-approve", "--allow-delete"]);
    // One this deployment made and desired.toml no longer declares: pruned by an administrator
    // (the mark alone cannot tell it from another team's someone marked), never the apply role.
    ecr.create_repository().repository_name("retired-wheel").tags(crate::support::ecr_mark()).send().await.unwrap();
    let writes = every_write(&apply_role);
    let left = reconcile(&apply_role, &desired.path, &["apply", "--auto-approve", "--prune", "--allow-delete"]);
    assert_eq!(left.code, 2, "{}{}", left.stdout, left.stderr);
    assert!(left.stderr.contains("leaves `ecr_repository.retired-wheel` (deleting a repository"), "{}", left.stderr);
    assert_eq!(every_write(&apply_role), writes, "no write");
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve", "--prune", "--allow-delete"]).code, 0);

    // The lock, read as `unlock` reads it (apply itself reads it only when another holds it).
    let unlock = reconcile(&apply_role, &desired.path, &["unlock"]);
    assert_eq!(unlock.code, 0, "{}", unlock.stderr);

    let mut used = BTreeSet::new();
    for request in apply_role.requests() {
        let Some((action, resource)) = permission(&request) else { continue };
        let statement = allowing(&policy, &action, &resource);
        assert!(statement.is_some(), "{action} on {resource} is not allowed");
        used.insert(action);
    }
    assert_eq!(gate.refused(), Vec::<String>::new(), "the live policy allowed every request");
    // PassRole is not a request of its own: IAM checks it inside CreateProject and UpdateProject
    // (and the gate checked it there).
    used.insert("iam:PassRole".to_owned());
    assert_eq!(used, actions(&policy), "every request allowed, and nothing allowed that is never made");
    let reads = actions(&printed_policy(&account, &desired.path, "read-only"));
    let writes: BTreeSet<String> = actions(&policy).difference(&reads).cloned().collect();

    assert!(!actions(&policy).contains("ecr:DeleteRepository"), "a repository is never the apply role's to delete");
    // Nothing written in IAM but passing the runner's role, only it, to CodeBuild only, and
    // putting its inline policy while it carries its boundary.
    let iam = Iam::new(&account.sdk_config());
    let provider = format!("arn:aws:iam::{}:oidc-provider/token.actions.githubusercontent.com", account.id);
    for statement in policy["Statement"].as_array().unwrap().iter().filter(|s| s["Effect"] == "Allow") {
        let resources = list(&statement["Resource"]);
        let writes_here: Vec<String> = list(&statement["Action"]).into_iter().filter(|a| writes.contains(a)).collect();
        if writes_here.is_empty() {
            continue;
        }
        for resource in &resources {
            assert!(!resource.contains("rocm-bake-reconcile-") && *resource != provider, "{statement:#}");
        }
        let runner = format!("arn:aws:iam::{}:role/rocm-bake-codebuild", account.id);
        if writes_here.contains(&"iam:PutRolePolicy".to_owned()) {
            assert_eq!(writes_here, ["iam:PutRolePolicy"], "{statement:#}");
            assert_eq!(resources, std::slice::from_ref(&runner));
            assert_eq!(
                statement["Condition"],
                json!({ "ArnEquals": { "iam:PermissionsBoundary": format!("arn:aws:iam::{}:policy/rocm-bake-codebuild-boundary", account.id) } })
            );
            continue;
        }
        assert!(writes_here.iter().all(|w| !w.starts_with("iam:") || w == "iam:PassRole"), "{statement:#}");
        if writes_here.contains(&"iam:PassRole".to_owned()) {
            assert_eq!(writes_here, ["iam:PassRole"], "{statement:#}");
            assert_eq!(resources, [format!("arn:aws:iam::{}:role/rocm-bake-codebuild", account.id)]);
            assert_eq!(
                statement["Condition"],
                json!({ "StringEquals": { "iam:PassedToService": "codebuild.amazonaws.com" } })
            );
        }
    }
    assert!(iam.get_role().role_name("rocm-bake-reconcile-apply").send().await.is_ok());
}

#[tokio::test]
async fn every_run_of_the_suite_has_its_writes_held_to_the_apply_policy_derived_for_it() {
    // What every run of the binary in this suite goes through (`reconcile_in`, the terminal's
    // apply, the tests that start it themselves): the watch sees the run's writes, not a test's
    // own calls with the same keys, and a policy short of one of them names it.
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account_with_runner(&["pytorch"]));
    let env = account.env();
    let watch = Watch::start(&env);
    let ecr = aws_sdk_ecr::Client::new(&account.sdk_config());
    ecr.create_repository().repository_name("made-by-hand").send().await.unwrap();
    let run = reconcile_in(&env, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let writes = watch.writes();
    let seen: BTreeSet<String> = writes.iter().map(ToString::to_string).collect();
    let bucket = format!("s3:PUT /rocm-bake-sccache-{}/", account.id);
    for made in ["ecr:CreateRepository", "codebuild:CreateProject", "iam:CreateRole", &bucket] {
        assert!(seen.contains(made), "{made}: {seen:?}");
    }
    assert!(writes.iter().all(|w| w.resource != "made-by-hand"), "{seen:?}");
    // Making the bucket with its expiry, and everything in IAM but the runner's inline policy, is
    // an administrator's, set aside; the rest is allowed.
    let administrators = Administrators::of(&desired.path, None, &account.id);
    let (theirs, writes): (Vec<_>, Vec<_>) = writes.into_iter().partition(|write| administrators.write(write));
    // (Changes are applied concurrently: sorted.)
    let mut theirs: Vec<String> = theirs.iter().map(|write| permission(write).unwrap().0).collect();
    theirs.sort();
    assert_eq!(theirs, ["iam:CreatePolicy", "iam:CreateRole", "s3:CreateBucket", "s3:PutLifecycleConfiguration"]);
    let policy = apply_policy(&desired.path, None, &account.id);
    assert_eq!(not_allowed(&writes, &policy), Vec::<String>::new());
    let mut short = policy.clone();
    short["Statement"].as_array_mut().unwrap().retain(|statement| statement["Sid"] != "TheRunnerProject");
    assert_eq!(
        not_allowed(&writes, &short),
        [format!("codebuild:CreateProject on arn:aws:codebuild:us-east-1:{}:project/rocm-bake", account.id)]
    );
}
