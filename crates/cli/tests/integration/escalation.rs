//! The apply role can never become more than it is: the attack an attacker's review found (put
//! `*` on the runner's role, make it trust the apply role, assume it, rewrite the rest) replayed
//! against the emulator as the apply role, with the emulator refusing what the role's live
//! policies do not allow (`permissions::enforced`); the same with `apply_role` renamed in
//! desired.toml; and, over every role of the account as it stands after the bootstrap, the
//! escalation analysis (`reconcile_iam::reach`): no CI role, nor any role it reaches through a
//! project it may change, can widen who assumes a role, widen one past its boundary, move a
//! boundary or assume a role.

use aws_sdk_iam::Client as Iam;
use reconcile_iam::evaluate::{Context, Principal, Request};
use reconcile_iam::reach::{Model, Project, Role};
use reconcile_test_support::{TestAccount, emulator};
use serde_json::json;

use crate::ci::CI;
use crate::permissions::{enforced, live_policies};
use crate::support::{DesiredFile, desired_file, reconcile, small_account_with_runner};

/// The account of the nightly, bootstrapped by an administrator: its repositories carry
/// reconcile's tag, so the runner's policies grant them by it.
async fn bootstrapped(repositories: &[&str]) -> (TestAccount, DesiredFile) {
    let account = emulator().new_account().await;
    let desired = desired_file(&tagged(repositories));
    let applied = reconcile(&account, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);
    (account, desired)
}

fn tagged(repositories: &[&str]) -> String {
    format!("{}{CI}", small_account_with_runner(repositories)).replacen(
        "tags = { project = \"rocm-bake\" }",
        "tags = { project = \"rocm-bake\", managed-by = \"reconcile\" }",
        1,
    )
}

/// Whether an SDK call was refused as AWS refuses one: access denied.
fn denied<T, E: std::fmt::Debug>(result: Result<T, E>) -> bool {
    match result {
        Ok(_) => false,
        Err(error) => format!("{error:?}").contains("AccessDenied"),
    }
}

#[tokio::test]
async fn the_four_call_attack_as_the_apply_role_is_refused_at_its_first_step_and_every_other() {
    let (account, desired) = bootstrapped(&["pytorch", "pytorch-cache"]).await;
    let iam = Iam::new(&account.sdk_config());
    let runner = "rocm-bake-codebuild";
    let boundary = format!("arn:aws:iam::{}:policy/rocm-bake-codebuild-boundary", account.id);
    // The bootstrap left the runner's role bounded.
    let role = iam.get_role().role_name(runner).send().await.unwrap().role.unwrap();
    assert_eq!(role.permissions_boundary().and_then(|b| b.permissions_boundary_arn()), Some(boundary.as_str()));
    let before = live_policies(&account, runner).await;

    let (apply, gate) = enforced(&account, "rocm-bake-reconcile-apply").await;
    let as_apply = Iam::new(&apply.sdk_config());
    let everything =
        json!({ "Version": "2012-10-17", "Statement": [{ "Effect": "Allow", "Action": "*", "Resource": "*" }] });
    // 1. `*` on the runner's role: the apply role puts the runner's inline policy (a bake target
    // added names a repository there), so IAM allows it, but only while the role carries its
    // boundary, which only an administrator writes: the role may do no more than before.
    as_apply
        .put_role_policy()
        .role_name(runner)
        .policy_name("rocm-bake-nightly")
        .policy_document(everything.to_string())
        .send()
        .await
        .expect("putting the runner's inline policy, bounded");
    let (policies, bounded) = live_policies(&account, runner).await;
    assert_eq!(bounded, before.1, "the boundary is as it was");
    let rewritten = Principal { policies: &policies, boundary: bounded.as_ref().map(|(_, document)| document) };
    let none = Context::new();
    let lock = format!("arn:aws:s3:::rocm-bake-sccache-{}/reconcile/apply.lock", account.id);
    for (action, resource) in [
        ("iam:PutRolePolicy", format!("arn:aws:iam::{}:role/{runner}", account.id)),
        ("sts:AssumeRole", format!("arn:aws:iam::{}:role/rocm-bake-reconcile-apply", account.id)),
        ("s3:PutObject", lock),
        ("ecr:DeleteRepository", format!("arn:aws:ecr:us-east-1:{}:repository/pytorch", account.id)),
    ] {
        assert!(!rewritten.allows(Request { action, resource: &resource, context: &none }), "{action}");
    }
    // 2. The runner's role made to trust the apply role, or GitHub's provider for any repository.
    let trust_apply = json!({ "Version": "2012-10-17", "Statement": [{ "Effect": "Allow",
        "Principal": { "AWS": format!("arn:aws:iam::{}:role/rocm-bake-reconcile-apply", account.id) },
        "Action": "sts:AssumeRole" }] });
    assert!(denied(
        as_apply.update_assume_role_policy().role_name(runner).policy_document(trust_apply.to_string()).send().await
    ));
    // 3. Assuming it.
    let sts = aws_sdk_sts::Client::new(&apply.sdk_config());
    let assumed = sts
        .assume_role()
        .role_arn(format!("arn:aws:iam::{}:role/{runner}", account.id))
        .role_session_name("attacker")
        .send()
        .await;
    assert!(denied(assumed), "assuming any role is refused");
    // 4. Rewriting the apply role, a CI trust, the boundary and the bucket's expiry.
    assert!(denied(
        as_apply
            .put_role_policy()
            .role_name("rocm-bake-reconcile-apply")
            .policy_name("reconcile")
            .policy_document(everything.to_string())
            .send()
            .await
    ));
    assert!(denied(
        as_apply
            .update_assume_role_policy()
            .role_name("rocm-bake-reconcile-plan")
            .policy_document(trust_apply.to_string())
            .send()
            .await
    ));
    assert!(denied(as_apply.delete_role_permissions_boundary().role_name(runner).send().await));
    assert!(denied(
        as_apply
            .create_policy_version()
            .policy_arn(&boundary)
            .policy_document(everything.to_string())
            .set_as_default(true)
            .send()
            .await
    ));
    assert!(denied(
        as_apply.create_role().role_name("escape").assume_role_policy_document(trust_apply.to_string()).send().await
    ));
    let s3 = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(&apply.sdk_config()).force_path_style(true).build(),
    );
    assert!(denied(s3.delete_bucket_lifecycle().bucket(format!("rocm-bake-sccache-{}", account.id)).send().await));
    let refused = gate.refused();
    assert_eq!(refused.len(), 8, "{refused:#?}");
    assert!(refused[0].starts_with("iam:UpdateAssumeRolePolicy: User: "), "{}", refused[0]);
    assert!(refused[0].contains("with an explicit deny"), "{}", refused[0]);
    assert!(
        refused
            .iter()
            .any(|r| r.starts_with("iam:PutRolePolicy: User: ") && r.contains("role/rocm-bake-reconcile-apply")),
        "{refused:#?}"
    );
    // Nothing else moved: the boundary, and (below) every other role.
    assert_eq!(live_policies(&account, runner).await.1, before.1);
    drop(gate);

    // With `apply_role` renamed in desired.toml (as a merged pull request could), reconcile
    // itself, as the apply role (ungated now, so that it can plan the renamed role: what is
    // tested is its own check), knows its caller from the account, as a role that trusts
    // GitHub, and leaves the administrator's changes, never sending one. IAM would refuse each
    // of them anyway, as above.
    let renamed = std::fs::read_to_string(&desired.path)
        .unwrap()
        .replace("apply_role = \"rocm-bake-reconcile-apply\"", "apply_role = \"rocm-bake-reconcile-deploy\"");
    std::fs::write(&desired.path, renamed).unwrap();
    let left_run = reconcile(&apply, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(left_run.code, 2, "{}{}", left_run.stdout, left_run.stderr);
    assert!(
        left_run.stderr.contains("These credentials are role `rocm-bake-reconcile-apply` (arn:aws:sts::")
            && left_run.stderr.contains("which trusts GitHub's OIDC provider: a CI role never makes a change only"),
        "{}",
        left_run.stderr
    );
    assert!(left_run.stdout.contains("Left for an administrator: iam_ci_role.apply"), "{}", left_run.stdout);
    let writes: Vec<String> =
        apply.requests().iter().filter(|r| r.is_write() && r.is_reconciles()).map(ToString::to_string).collect();
    // What it may make it makes: the runner's inline policy, widened by the attack above, put
    // back under the lock; nothing of the administrator's.
    let bucket = format!("rocm-bake-sccache-{}", account.id);
    assert_eq!(
        writes,
        [
            format!("s3:PUT /{bucket}/reconcile/apply.lock"),
            "iam:PutRolePolicy".to_owned(),
            format!("s3:DELETE /{bucket}/reconcile/apply.lock")
        ],
        "{}",
        left_run.stdout
    );
    assert!(left_run.stdout.contains("iam_role_policy.codebuild"), "{}", left_run.stdout);
}

#[tokio::test]
async fn no_role_of_the_bootstrapped_account_lets_a_ci_role_become_more_than_it_is() {
    let (account, _desired) = bootstrapped(&["pytorch", "pytorch-cache"]).await;
    let iam = Iam::new(&account.sdk_config());
    let mut roles = Vec::new();
    for role in iam.list_roles().send().await.unwrap().roles() {
        // ListRoles does not say which boundary a role has (neither does IAM's): GetRole does.
        let (policies, boundary) = live_policies(&account, role.role_name()).await;
        roles.push(Role { arn: role.arn().to_owned(), policies, boundary });
    }
    roles.sort_by(|a, b| a.arn.cmp(&b.arn));
    let names: Vec<&str> = roles.iter().map(|r| r.arn.rsplit('/').next().unwrap()).collect();
    assert_eq!(
        names,
        ["rocm-bake-codebuild", "rocm-bake-reconcile-apply", "rocm-bake-reconcile-drift", "rocm-bake-reconcile-plan"]
    );
    let codebuild = aws_sdk_codebuild::Client::new(&account.sdk_config());
    let projects = codebuild.batch_get_projects().names("rocm-bake").send().await.unwrap();
    let projects = projects
        .projects()
        .iter()
        .map(|p| Project { arn: p.arn().unwrap().to_owned(), service_role: p.service_role().unwrap().to_owned() })
        .collect();
    let model = Model { account: account.id.clone(), roles, projects };
    for role in ["plan", "drift", "apply"] {
        let from = format!("arn:aws:iam::{}:role/rocm-bake-reconcile-{role}", account.id);
        assert_eq!(model.escalations_through(&from), Vec::new(), "{role}");
    }
    // What each reaches: the apply role, the runner's role through the project, bounded.
    let reach = model.reach(&format!("arn:aws:iam::{}:role/rocm-bake-reconcile-apply", account.id));
    assert_eq!(reach.len(), 2, "{reach:#?}");
    assert_eq!(reach[1].role, format!("arn:aws:iam::{}:role/rocm-bake-codebuild", account.id));
    assert!(reach[1].how[0].starts_with("codebuild:UpdateProject on "), "{:?}", reach[1].how);
    for role in ["plan", "drift"] {
        assert_eq!(model.reach(&format!("arn:aws:iam::{}:role/rocm-bake-reconcile-{role}", account.id)).len(), 1);
    }
    // Had the runner's role no boundary, the apply role would still not reach past it: its
    // inline policy is the runner's, and only an administrator writes it. And had someone put
    // `*` on it, the boundary is what holds.
    let mut unbounded = model.clone();
    let runner = unbounded.roles.iter_mut().find(|r| r.arn.ends_with("/rocm-bake-codebuild")).unwrap();
    runner.policies = vec![json!({ "Statement": [{ "Effect": "Allow", "Action": "*", "Resource": "*" }] })];
    let apply = format!("arn:aws:iam::{}:role/rocm-bake-reconcile-apply", account.id);
    assert_eq!(unbounded.escalations_through(&apply), Vec::new(), "the boundary bounds a rewritten policy");
    unbounded.roles.iter_mut().find(|r| r.arn.ends_with("/rocm-bake-codebuild")).unwrap().boundary = None;
    assert!(!unbounded.escalations_through(&apply).is_empty(), "without the boundary, that path is open");
}

#[tokio::test]
async fn adding_a_bake_target_applies_as_the_apply_role_end_to_end_with_no_administrator() {
    let (account, desired) = bootstrapped(&["pytorch", "pytorch-cache"]).await;
    let (apply, gate) = enforced(&account, "rocm-bake-reconcile-apply").await;
    // The bake target's image and cache repositories, declared as `reconcile declare` writes them.
    let added = desired_file(&tagged(&["pytorch", "pytorch-cache", "vllm", "vllm-cache"]));
    let plan = reconcile(&apply, &added.path, &["plan"]);
    assert_eq!(plan.code, 0, "{}{}", plan.stdout, plan.stderr);
    assert!(!plan.stdout.contains("W501"), "nothing an administrator must apply: {}", plan.stdout);
    assert!(plan.stdout.contains("Plan: 4 to add, 1 to change, 0 to destroy."), "{}", plan.stdout);
    // In IAM, only the runner's inline policy, which now names them (within the boundary).
    let iam: Vec<&str> = plan.stdout.lines().filter(|l| l.trim_start().starts_with("# iam_")).collect();
    assert_eq!(iam, ["  # iam_role_policy.codebuild will be updated in place"], "{}", plan.stdout);
    let applied = reconcile(&apply, &added.path, &["apply", "--auto-approve"]);
    assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);
    assert_eq!(gate.refused(), Vec::<String>::new(), "every request was allowed by the live policy");
    let again = reconcile(&account, &added.path, &["plan", "--detailed-exitcode"]);
    assert_eq!(again.code, 0, "converged: {}", again.stdout);
    drop((desired, gate));
}
