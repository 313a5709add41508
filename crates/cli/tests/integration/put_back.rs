//! Drift put back: the apply workflow, dispatched after the drift check found six changes made by
//! hand (the drift-check page's, on the workflows' small account: its two repositories stand for
//! `vllm-cache` and `pytorch-cache`), makes every change the apply role may make and leaves each administrator's change as it
//! is, naming it with the command an administrator runs; after that command (and the undeclared
//! repository deleted, as its finding says), the next check closes the issue; a drift a maintainer
//! closes as not planned passes every step of the next run, until a new one reopens it.

use aws_sdk_ecr as ecr;
use aws_sdk_iam as iam;
use serde_json::{Value, json};

use crate::support::reconcile_in;
use crate::workflows::{World, step};
use reconcile_test_support::github::github;

/// The old 14-day rule that expired the nightly's live tag.
const FOURTEEN_DAYS: &str = r#"{"rules":[{"rulePriority":1,"description":"Expire images older than 14 days","selection":{"tagStatus":"any","countType":"sinceImagePushed","countUnit":"days","countNumber":14},"action":{"type":"expire"}}]}"#;

/// The six changes of the drift-check page, made by hand as an administrator would.
async fn six_changes_by_hand(world: &World) {
    let config = world.account.sdk_config();
    let ecr = ecr::Client::new(&config);
    ecr.delete_lifecycle_policy().repository_name("pytorch").send().await.unwrap();
    ecr.put_lifecycle_policy()
        .repository_name("pytorch-cache")
        .lifecycle_policy_text(FOURTEEN_DAYS)
        .send()
        .await
        .unwrap();
    ecr.create_repository().repository_name("scratch").send().await.unwrap();
    crate::support::cache_expires_after(&world.account, 7).await;
    let iam = iam::Client::new(&config);
    let (role, policy) = ("rocm-bake-codebuild", "rocm-bake-nightly");
    let live = iam.get_role_policy().role_name(role).policy_name(policy).send().await.unwrap();
    let text = reconcile_iam::percent_decode(live.policy_document());
    let mut document: Value = serde_json::from_str(&text).unwrap();
    document["Statement"]
        .as_array_mut()
        .unwrap()
        .push(json!({ "Effect": "Allow", "Action": "ecr:*", "Resource": "*" }));
    iam.put_role_policy()
        .role_name(role)
        .policy_name(policy)
        .policy_document(document.to_string())
        .send()
        .await
        .unwrap();
    iam.update_role().role_name(role).description("edited by hand").send().await.unwrap();
}

/// The last comment on the drift issue.
fn last_comment(world: &World) -> String {
    let comments = github().state(&world.repository.name)["comments"].as_array().unwrap().clone();
    comments.last().unwrap()["body"].as_str().unwrap().to_owned()
}

/// What the drift check's run says of the issue, and the issues it keeps.
fn drift_run(world: &World, schedule: &str) -> (Value, Vec<Value>) {
    let (_, report, _) = world.run(
        world.repository.path(),
        "nightly-drift.yml",
        "schedule",
        json!({ "schedule": schedule }),
        "refs/heads/main",
        "3333333333333333333333333333333333333333",
        false,
        true,
    );
    let issues = github().state(&world.repository.name)["issues"].as_array().unwrap().clone();
    (report, issues)
}

#[tokio::test]
async fn the_apply_workflow_puts_back_what_the_apply_role_may_and_names_each_administrators_change_with_its_command() {
    let world = World::bootstrap().await;
    six_changes_by_hand(&world).await;
    // The hourly check finds it, and leaves the usage and cost reports to the night's.
    let (drift, issues) = drift_run(&world, "17 0,2-23 * * *");
    assert_eq!(drift["conclusion"], "failure", "{drift:#}");
    for skipped in ["Registry usage and growth", "What the nights cost"] {
        assert_eq!(step(&drift, skipped)["outcome"], "skipped", "{drift:#}");
    }
    assert_eq!((issues.len(), issues[0]["state"].as_str()), (1, Some("open")), "{issues:#?}");
    // The most dangerous first: the runner's widened policy is a security finding, in the title
    // too; then the 14-day rule that can expire the live tag.
    assert_eq!(issues[0]["title"], "AWS account drift, with security finding S105", "{issues:#?}");
    let body = issues[0]["body"].as_str().unwrap();
    let at = |text: &str| body.find(text).unwrap_or_else(|| panic!("{text}: {body}"));
    assert!(at("Error `S105` `iam_role_policy.codebuild`") < at("Error `D103` `ecr_lifecycle_policy.pytorch-cache`"));
    assert!(body.contains("allows more than desired.toml derives: `ecr:*` on `*`"), "{body}");
    // What the two lifecycle drifts cost while they stay: this account has no image pushed, and
    // says so (the demo's history prices them: `cost::a_drift_that_changes_what_is_kept_...`).
    let costs = &body[at("### What it costs while it stays")..at("### What to do")];
    for repository in ["pytorch", "pytorch-cache"] {
        assert!(
            costs.contains(&format!("- `ecr_lifecycle_policy.{repository}`: registry: about +$0.00 a month")),
            "{costs}"
        );
    }
    assert!(costs.contains("with nothing pushed in the last 30 days"), "{costs}");
    // Each difference with its answer.
    let answers = &body[at("### What to do")..];
    assert!(
        answers.contains(
            "- `iam_role_policy.codebuild`, `ecr_lifecycle_policy.pytorch`, `ecr_lifecycle_policy.pytorch-cache`: the \
             apply workflow puts them back as desired.toml declares: `gh workflow run apply-after-merge.yml`"
        ),
        "{answers}"
    );
    assert!(
        answers.contains(
            "- `iam_role.codebuild`, `s3_bucket_lifecycle.sccache`: an administrator's (W501), which the apply \
             workflow leaves: from a terminal on the default branch, with their own credentials, `reconcile apply`"
        ),
        "{answers}"
    );
    assert!(answers.contains("`reconcile explain S105`") && answers.contains("close this issue as not planned"));
    let log = step(&drift, "Drift check, and the drift issue")["stdout"].as_str().unwrap().to_owned();
    assert!(log.contains("What to do:\n  - `iam_role_policy.codebuild`, "), "the job log says it too: {log}");

    // A second undeclared repository: the counted finding changed, said in words; nothing resolved.
    let ecr = ecr::Client::new(&world.account.sdk_config());
    ecr.create_repository().repository_name("scratch-two").send().await.unwrap();
    drift_run(&world, "17 0,2-23 * * *");
    let said = last_comment(&world);
    assert_eq!(said, "The drift changed since this issue last said:\n\nChanged (1):\n- `D102`: its values changed\n");
    ecr.delete_repository().repository_name("scratch-two").send().await.unwrap();

    // Put back as the drift-check page says: the apply workflow, dispatched.
    let (_, apply, _) = world.run(
        world.repository.path(),
        "apply-after-merge.yml",
        "workflow_dispatch",
        json!({ "inputs": {} }),
        "refs/heads/main",
        "3333333333333333333333333333333333333333",
        false,
        true,
    );
    assert_eq!(step(&apply, "Plan")["outcome"], "success", "the default branch's plan is saved: {apply:#}");
    let applied = step(&apply, "Apply the saved plan");
    let said = format!("{}{}", applied["stdout"].as_str().unwrap(), applied["stderr"].as_str().unwrap());
    // Exit 2: the account still differs, by what only an administrator changes.
    assert_eq!(applied["outcome"], "failure", "{said}");
    assert!(said.contains("**Apply complete: 3 resources changed.**"), "{said}");
    for left in ["`s3_bucket_lifecycle.sccache`: a bucket's expiry", "`iam_role.codebuild`: the runner's role"] {
        assert!(said.contains(left), "{left} is named as left: {said}");
    }
    assert!(
        said.contains("An administrator applies them from a terminal on the default branch, with their own credentials: `reconcile apply`"),
        "{said}"
    );
    assert!(!said.contains("error finding(s) about desired.toml") && !said.contains("pull request"), "{said}");

    // The next check names what the apply workflow put back as resolved, and nothing else.
    drift_run(&world, "17 0,2-23 * * *");
    let said = last_comment(&world);
    // (`scratch-two` is gone again: the counted D102 changed back.)
    assert_eq!(
        said,
        "The drift changed since this issue last said:\n\nChanged (1):\n- `D102`: its values changed\n\nResolved \
         (5):\n- `D103 ecr_lifecycle_policy.pytorch-cache`\n- `S105 iam_role_policy.codebuild`\n- `create \
         ecr_lifecycle_policy.pytorch`\n- `update ecr_lifecycle_policy.pytorch-cache: policy`\n- `update \
         iam_role_policy.codebuild: document`\n"
    );

    // What the apply role may put back is as desired.toml says; the administrator's two are left.
    let mut env = world.account.env();
    env.extend([("GITHUB_API_URL", github().endpoint().to_owned()), ("GITHUB_TOKEN", world.reader.clone())]);
    let desired = world.repository.path().join("desired.toml");
    let plan = reconcile_in(&env, &desired, &["plan", "--format", "json"]);
    assert_eq!(
        crate::support::json_changes(&plan.stdout),
        ["update iam_role.codebuild", "update s3_bucket_lifecycle.sccache"],
        "{}",
        plan.stdout
    );
    // The administrator's command, then the undeclared repository deleted as D101 says.
    let admin = reconcile_in(&env, &desired, &["apply", "--auto-approve"]);
    assert_eq!(admin.code, 0, "{}{}", admin.stdout, admin.stderr);
    assert!(admin.stdout.contains("Apply complete! Resources: 0 created, 2 updated, 0 deleted."), "{}", admin.stdout);
    let ecr = ecr::Client::new(&world.account.sdk_config());
    ecr.delete_repository().repository_name("scratch").send().await.unwrap();
    let (drift, issues) = drift_run(&world, "17 1 * * *");
    assert_eq!(drift["conclusion"], "success", "{drift:#}");
    assert_eq!(step(&drift, "Registry usage and growth")["outcome"], "success", "{drift:#}");
    assert_eq!((issues.len(), issues[0]["state"].as_str()), (1, Some("closed")), "{issues:#?}");

    // A drift a maintainer acknowledges: they close the reopened issue as not planned, and the
    // next scheduled run passes, every step, and leaves it closed; a new drift fails the run and
    // reopens it.
    ecr.create_repository().repository_name("scratch").send().await.unwrap();
    let (drift, issues) = drift_run(&world, "17 0,2-23 * * *");
    assert_eq!((drift["conclusion"].as_str(), issues[0]["state"].as_str()), (Some("failure"), Some("open")));
    let number = issues[0]["number"].as_u64().unwrap();
    let (status, _) = github().call(
        "PATCH",
        &format!("/repos/{}/issues/{number}", world.repository.name),
        &world.reader,
        &json!({ "state": "closed", "state_reason": "not_planned" }),
    );
    assert_eq!(status, 200);
    let (drift, issues) = drift_run(&world, "17 1 * * *");
    assert_eq!(drift["conclusion"], "success", "{drift:#}");
    for ran in drift["steps"].as_array().unwrap() {
        assert!(["success", "skipped"].contains(&ran["outcome"].as_str().unwrap()), "{ran:#}");
    }
    assert_eq!(issues[0]["state"], "closed", "{issues:#?}");
    ecr.create_repository().repository_name("scratch-two").send().await.unwrap();
    let (drift, issues) = drift_run(&world, "17 0,2-23 * * *");
    assert_eq!((drift["conclusion"].as_str(), issues[0]["state"].as_str()), (Some("failure"), Some("open")));
}

/// The put-back role, as desired.toml names it in `[ci]`.
const PUT_BACK_ROLE: &str = "rocm-bake-reconcile-put-back";

/// The workflows' account, with lifecycle policies put back by the drift check as its own role.
async fn putting_back_lifecycle_policies() -> World {
    World::bootstrap_with(|text| {
        *text = text.replacen(
            "environment = \"aws-production\"",
            &format!("environment = \"aws-production\"\nput_back_role = \"{PUT_BACK_ROLE}\""),
            1,
        );
        text.push_str("\n[drift]\nput_back = [\"ecr_lifecycle_policy\"]\n");
    })
    .await
}

/// What the next plan of the workflows' account changes, planned by an administrator.
fn changes_left(world: &World) -> Vec<String> {
    let mut env = world.account.env();
    env.extend([("GITHUB_API_URL", github().endpoint().to_owned()), ("GITHUB_TOKEN", world.reader.clone())]);
    let plan = reconcile_in(&env, &world.repository.path().join("desired.toml"), &["plan", "--format", "json"]);
    assert!(plan.code == 0 || plan.code == 2, "{}", plan.stderr);
    crate::support::json_changes(&plan.stdout)
}

#[tokio::test]
async fn the_scheduled_check_puts_back_the_named_kinds_in_the_run_that_finds_them_as_a_role_that_may_do_nothing_else() {
    let mut world = putting_back_lifecycle_policies().await;
    assert!(world.variable("RECONCILE_PUT_BACK_ROLE_ARN").ends_with(&format!(":role/{PUT_BACK_ROLE}")));
    six_changes_by_hand(&world).await;
    let (drift, issues) = drift_run(&world, "17 0,2-23 * * *");
    let check = step(&drift, "Drift check, and the drift issue");
    let log = check["stderr"].as_str().unwrap();
    // In the run that found them: both lifecycle policies, and nothing else.
    assert!(log.contains("Put back ecr_lifecycle_policy.pytorch (made again) at "), "{drift:#}");
    assert!(log.contains("Put back ecr_lifecycle_policy.pytorch-cache (set back) at "), "{drift:#}");
    assert_eq!(log.matches("Put back ").count(), 2, "{log}");
    assert_eq!(
        changes_left(&world),
        ["update iam_role.codebuild", "update iam_role_policy.codebuild", "update s3_bucket_lifecycle.sccache"],
        "what the put-back role may not put back is left as it is"
    );
    // The rest is still drift; the issue says what was put back.
    assert_eq!(drift["conclusion"], "failure", "{drift:#}");
    assert_eq!((issues.len(), issues[0]["state"].as_str()), (1, Some("open")), "{issues:#?}");
    let body = issues[0]["body"].as_str().unwrap();
    assert!(body.contains("### Put back by this check"), "{body}");
    for address in ["`ecr_lifecycle_policy.pytorch`", "`ecr_lifecycle_policy.pytorch-cache`"] {
        assert!(body.contains(&format!("- {address} (")), "{address}: {body}");
    }
    // The undeclared repository is not this deployment's to police: still reported, untouched.
    let ecr = ecr::Client::new(&world.account.sdk_config());
    assert!(ecr.get_lifecycle_policy().repository_name("scratch").send().await.is_err());

    // Drift of the same kind again, with the switch off: nothing is written.
    ecr.delete_lifecycle_policy().repository_name("pytorch").send().await.unwrap();
    world.set_variable("RECONCILE_PUT_BACK", "off");
    let (off, issues) = drift_run(&world, "17 0,2-23 * * *");
    let log = step(&off, "Drift check, and the drift issue")["stderr"].as_str().unwrap().to_owned();
    assert!(log.contains("RECONCILE_PUT_BACK is `off`: this check puts nothing back."), "{log}");
    assert!(!log.contains("Put back "), "{log}");
    assert!(changes_left(&world).contains(&"create ecr_lifecycle_policy.pytorch".to_owned()));
    assert_eq!(issues.len(), 1, "{issues:#?}");
    let comments = github().state(&world.repository.name)["comments"].to_string();
    assert!(comments.contains("ecr_lifecycle_policy.pytorch"), "the update says the new drift: {comments}");
}

#[tokio::test]
async fn the_put_back_roles_live_policies_allow_the_named_kinds_settings_on_this_deployments_resources_and_nothing_else()
 {
    use crate::permissions::{enforced, live_policies};
    use reconcile_iam::evaluate::{Context, Decision, Principal, Request};

    let world = putting_back_lifecycle_policies().await;
    let id = &world.account.id;
    let (policies, boundary) = live_policies(&world.account, PUT_BACK_ROLE).await;
    assert!(boundary.is_none());
    let principal = Principal { policies: &policies, boundary: None };
    let repository = |name: &str| format!("arn:aws:ecr:us-east-1:{id}:repository/{name}");
    let marked = |deployment: &str| Context::new().with("aws:ResourceTag/reconcile:deployment", &[deployment]);
    let decide =
        |action: &str, resource: &str, context: &Context| principal.decide(Request { action, resource, context });
    assert_eq!(decide("ecr:PutLifecyclePolicy", &repository("pytorch"), &marked("default")), Decision::Allowed);
    let role = format!("arn:aws:iam::{id}:role/rocm-bake-codebuild");
    for (action, resource, context) in [
        ("ecr:PutLifecyclePolicy", repository("scratch"), Context::new()),
        ("ecr:PutLifecyclePolicy", repository("teamb-pytorch"), marked("teamb")),
        ("ecr:DeleteRepository", repository("pytorch"), marked("default")),
        ("ecr:CreateRepository", repository("new"), Context::new()),
        ("ecr:DeleteLifecyclePolicy", repository("pytorch"), marked("default")),
        ("ecr:TagResource", repository("scratch"), Context::new()),
        ("iam:PutRolePolicy", role.clone(), Context::new()),
        ("iam:UpdateRole", role.clone(), Context::new()),
        ("iam:CreateRole", format!("arn:aws:iam::{id}:role/anything"), Context::new()),
        ("sts:AssumeRole", role.clone(), Context::new()),
        // Kinds `[drift] put_back` does not name: a webhook's filter, a bucket's expiry.
        ("codebuild:UpdateWebhook", format!("arn:aws:codebuild:us-east-1:{id}:project/rocm-bake"), Context::new()),
        ("s3:PutLifecycleConfiguration", format!("arn:aws:s3:::rocm-bake-sccache-{id}"), Context::new()),
    ] {
        assert_ne!(decide(action, &resource, &context), Decision::Allowed, "{action} on {resource}");
    }
    for action in ["iam:PutRolePolicy", "iam:UpdateRole", "iam:CreateRole", "iam:PassRole", "sts:AssumeRole"] {
        assert_eq!(decide(action, &role, &Context::new()), Decision::Denied, "{action}: explicitly");
    }

    // And the drift check's put-back runs under them, as IAM would hold it.
    let ecr = ecr::Client::new(&world.account.sdk_config());
    ecr.delete_lifecycle_policy().repository_name("pytorch-cache").send().await.unwrap();
    let (session, _gate) = enforced(&world.account, PUT_BACK_ROLE).await;
    let mut env = session.env();
    env.extend([
        ("GITHUB_API_URL", github().endpoint().to_owned()),
        ("GITHUB_TOKEN", world.reader.clone()),
        ("ECR_REGISTRY", format!("{id}.dkr.ecr.us-east-1.amazonaws.com")),
    ]);
    let run = reconcile_in(&env, &world.repository.path().join("desired.toml"), &["drift", "--put-back"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("Put back ecr_lifecycle_policy.pytorch-cache (made again)"), "{}", run.stderr);
    assert!(ecr.get_lifecycle_policy().repository_name("pytorch-cache").send().await.is_ok());
}
