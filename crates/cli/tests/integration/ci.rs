//! The CI identities (`[ci]`): GitHub's OIDC provider and the plan, drift and apply roles, each
//! trusting exactly one kind of run of the `[github]` repository; what each may do derived from
//! desired.toml; the apply role never changing them.

use aws_sdk_iam::Client as Iam;
use reconcile_core::json::to_pretty;
use reconcile_test_support::{TestAccount, emulator};
use serde_json::{Value, json};

use crate::support::{DesiredFile, desired_file, reconcile, small_account_with_runner};

/// The `[github]` and `[ci]` sections of the nightly's desired.toml.
pub const CI: &str = r#"
[github]
repository = "ROCm/rocm-bake"

[ci]
plan_role = "rocm-bake-reconcile-plan"
drift_role = "rocm-bake-reconcile-drift"
apply_role = "rocm-bake-reconcile-apply"
environment = "aws-production"
tags = { project = "rocm-bake", managed-by = "reconcile" }
"#;

const PROVIDER_HOST: &str = "token.actions.githubusercontent.com";

/// The subject GitHub mints, with the template reconcile manages (`repo`, `context`,
/// `job_workflow_ref`), for a job of `workflow` on the default branch of `repository` in `context`.
pub fn subject(repository: &str, context: &str, workflow: &str) -> String {
    format!("repo:{repository}:{context}:job_workflow_ref:{repository}/.github/workflows/{workflow}@refs/heads/main")
}

fn desired_with_ci() -> DesiredFile {
    desired_file(&format!("{}{CI}", small_account_with_runner(&["pytorch", "pytorch-cache"])))
}

/// The role's trust policy, as IAM answers it, decoded.
async fn trust_of(iam: &Iam, role: &str) -> Value {
    let role = iam.get_role().role_name(role).send().await.unwrap().role.unwrap();
    let text = reconcile_iam::percent_decode(role.assume_role_policy_document().unwrap());
    serde_json::from_str(&text).unwrap()
}

async fn inline_policy_of(iam: &Iam, role: &str) -> Value {
    let names = iam.list_role_policies().role_name(role).send().await.unwrap().policy_names;
    assert_eq!(names, ["reconcile"], "one inline policy, the derived one");
    let policy = iam.get_role_policy().role_name(role).policy_name("reconcile").send().await.unwrap();
    serde_json::from_str(&reconcile_iam::percent_decode(policy.policy_document())).unwrap()
}

/// Applies desired.toml with the CI identities to an empty account, as the administrator who
/// bootstraps it.
async fn bootstrapped() -> (TestAccount, DesiredFile) {
    let account = emulator().new_account().await;
    let desired = desired_with_ci();
    let applied = reconcile(&account, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);
    (account, desired)
}

#[tokio::test]
async fn an_empty_account_gets_the_provider_and_three_roles_each_trusting_exactly_its_runs() {
    let account = emulator().new_account().await;
    let desired = desired_with_ci();
    let plan = reconcile(&account, &desired.path, &["plan"]);
    for address in [
        "iam_oidc_provider.github",
        "iam_ci_role.plan",
        "iam_ci_role.drift",
        "iam_ci_role.apply",
        "iam_ci_role_policy.plan",
        "iam_ci_role_policy.drift",
        "iam_ci_role_policy.apply",
    ] {
        assert!(plan.stdout.contains(&format!("+ {address}")), "{address} created: {}", plan.stdout);
    }
    assert!(plan.stdout.contains("W501"), "{}", plan.stdout);
    let applied = reconcile(&account, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);
    let again = reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]);
    assert_eq!(again.code, 0, "a second plan is clean: {}{}", again.stdout, again.stderr);

    let iam = Iam::new(&account.sdk_config());
    let provider_arn = format!("arn:aws:iam::{}:oidc-provider/{PROVIDER_HOST}", account.id);
    let provider = iam.get_open_id_connect_provider().open_id_connect_provider_arn(&provider_arn).send().await.unwrap();
    assert_eq!(provider.url(), Some(PROVIDER_HOST));
    assert_eq!(provider.client_id_list(), ["sts.amazonaws.com"]);

    for (role, subject) in [
        ("rocm-bake-reconcile-plan", subject("ROCm/rocm-bake", "ref:refs/heads/main", "pull-request-plan.yml")),
        ("rocm-bake-reconcile-drift", subject("ROCm/rocm-bake", "ref:refs/heads/main", "nightly-drift.yml")),
        ("rocm-bake-reconcile-apply", subject("ROCm/rocm-bake", "environment:aws-production", "apply-after-merge.yml")),
    ] {
        let trust = trust_of(&iam, role).await;
        assert_eq!(trust["Version"], "2012-10-17", "{role}");
        let statements = trust["Statement"].as_array().unwrap();
        assert_eq!(statements.len(), 1, "{role}: one statement");
        let statement = statements[0].as_object().unwrap();
        assert_eq!(
            statement.keys().collect::<Vec<_>>(),
            ["Action", "Condition", "Effect", "Principal"],
            "{role}: nothing else"
        );
        assert_eq!(statement["Effect"], "Allow", "{role}");
        // As reconcile writes them: every value a list.
        assert_eq!(statement["Principal"], json!({ "Federated": [provider_arn] }), "{role}");
        assert_eq!(statement["Action"], json!(["sts:AssumeRoleWithWebIdentity"]), "{role}");
        assert_eq!(
            statement["Condition"],
            json!({ "StringEquals": {
                "token.actions.githubusercontent.com:aud": ["sts.amazonaws.com"],
                "token.actions.githubusercontent.com:sub": [subject],
            }}),
            "{role}: the audience and exactly one subject, compared for equality"
        );
    }

    // Each role's one inline policy is what `reconcile policy` prints for the account.
    for (role, which) in [
        ("rocm-bake-reconcile-plan", "plan"),
        ("rocm-bake-reconcile-drift", "read-only"),
        ("rocm-bake-reconcile-apply", "apply"),
    ] {
        let printed = reconcile(&account, &desired.path, &["policy", which, "--account", &account.id]);
        assert_eq!(printed.code, 0, "{}", printed.stderr);
        let derived: Value = serde_json::from_str(&printed.stdout).unwrap();
        let live = inline_policy_of(&iam, role).await;
        assert_eq!(
            reconcile_iam::canonical(&live, "aws"),
            reconcile_iam::canonical(&derived, "aws"),
            "{role}: {}",
            to_pretty(&live)
        );
    }

    // And the workflows find their ARNs in repository variables.
    let outputs = reconcile(&account, &desired.path, &["outputs"]);
    for (variable, role) in [
        ("RECONCILE_PLAN_ROLE_ARN", "rocm-bake-reconcile-plan"),
        ("RECONCILE_DRIFT_ROLE_ARN", "rocm-bake-reconcile-drift"),
        ("RECONCILE_APPLY_ROLE_ARN", "rocm-bake-reconcile-apply"),
    ] {
        let line = format!("gh variable set {variable:<24} --body arn:aws:iam::{}:role/{role}", account.id);
        assert!(outputs.stdout.contains(&line), "{line}\n{}", outputs.stdout);
    }
}

#[tokio::test]
async fn a_trust_widened_to_the_whole_organisation_is_a_security_finding_and_drift_and_apply_narrows_it() {
    let (account, desired) = bootstrapped().await;
    let iam = Iam::new(&account.sdk_config());
    let mut widened = trust_of(&iam, "rocm-bake-reconcile-plan").await;
    let condition = widened["Statement"][0]["Condition"].take();
    widened["Statement"][0]["Condition"] = json!({
        "StringEquals": { "token.actions.githubusercontent.com:aud": condition["StringEquals"]["token.actions.githubusercontent.com:aud"] },
        "StringLike": { "token.actions.githubusercontent.com:sub": "repo:ROCm/*" },
    });
    iam.update_assume_role_policy()
        .role_name("rocm-bake-reconcile-plan")
        .policy_document(widened.to_string())
        .send()
        .await
        .unwrap();

    let drift = reconcile(&account, &desired.path, &["drift"]);
    assert_eq!(drift.code, 2, "{}{}", drift.stdout, drift.stderr);
    assert!(drift.stdout.contains("S104"), "{}", drift.stdout);
    assert!(
        drift.stdout.contains("it matches the subject by StringLike `repo:ROCm/*`"),
        "the finding says how: {}",
        drift.stdout
    );
    assert!(drift.stdout.contains("~ iam_ci_role.plan"), "{}", drift.stdout);

    let applied = reconcile(&account, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);
    let narrowed = trust_of(&iam, "rocm-bake-reconcile-plan").await;
    assert_eq!(
        narrowed["Statement"][0]["Condition"]["StringEquals"]["token.actions.githubusercontent.com:sub"],
        json!([subject("ROCm/rocm-bake", "ref:refs/heads/main", "pull-request-plan.yml")])
    );
    assert!(narrowed["Statement"][0]["Condition"].get("StringLike").is_none());
    assert_eq!(reconcile(&account, &desired.path, &["drift"]).code, 0);

    // Each way of trusting more is named (no audience, another principal); one exact subject of
    // another repository is the change the plan makes, named as such (D108).
    for (what, statement, says) in [
        (
            "another repository",
            json!({ "Effect": "Allow", "Principal": { "Federated": format!("arn:aws:iam::{}:oidc-provider/{PROVIDER_HOST}", account.id) },
                    "Action": "sts:AssumeRoleWithWebIdentity",
                    "Condition": { "StringEquals": { "token.actions.githubusercontent.com:aud": "sts.amazonaws.com",
                                                     "token.actions.githubusercontent.com:sub": "repo:someone/else:pull_request" } } }),
            "this plan changes whom CI role `rocm-bake-reconcile-drift` trusts: after it, the runs whose subject is \
             `repo:ROCm/rocm-bake:ref:refs/heads/main:job_workflow_ref:ROCm/rocm-bake/.github/workflows/\
             nightly-drift.yml@refs/heads/main` can act as it (desired.toml), where `repo:someone/else:pull_request` \
             can now (the account)",
        ),
        (
            "no audience",
            json!({ "Effect": "Allow", "Principal": { "Federated": format!("arn:aws:iam::{}:oidc-provider/{PROVIDER_HOST}", account.id) },
                    "Action": "sts:AssumeRoleWithWebIdentity",
                    "Condition": { "StringEquals": { "token.actions.githubusercontent.com:sub": subject("ROCm/rocm-bake", "ref:refs/heads/main", "nightly-drift.yml") } } }),
            "it does not require the audience `sts.amazonaws.com`",
        ),
        (
            "another principal",
            json!({ "Effect": "Allow", "Principal": { "AWS": "arn:aws:iam::210987654321:root" }, "Action": "sts:AssumeRole" }),
            "it trusts AWS principal `arn:aws:iam::210987654321:root`",
        ),
    ] {
        let trust = json!({ "Version": "2012-10-17", "Statement": [statement] });
        iam.update_assume_role_policy()
            .role_name("rocm-bake-reconcile-drift")
            .policy_document(trust.to_string())
            .send()
            .await
            .unwrap();
        let drift = reconcile(&account, &desired.path, &["drift"]);
        assert_eq!(drift.code, 2, "{what}");
        assert!(drift.stdout.contains(says), "{what}: {}", drift.stdout);
    }
}

#[tokio::test]
async fn the_apply_role_leaves_a_change_to_a_ci_identity_and_sends_nothing_of_it() {
    let (account, desired) = bootstrapped().await;
    let iam = Iam::new(&account.sdk_config());
    iam.tag_role()
        .role_name("rocm-bake-reconcile-apply")
        .tags(aws_sdk_iam::types::Tag::builder().key("owner").value("someone").build().unwrap())
        .send()
        .await
        .unwrap();
    let apply_role = account.assume("rocm-bake-reconcile-apply").await;
    let left = reconcile(&apply_role, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(left.code, 2, "left for an administrator: {}{}", left.stdout, left.stderr);
    assert!(left.stderr.contains("leaves `iam_ci_role.apply` (the CI identities"), "{}", left.stderr);
    assert!(left.stderr.contains("the apply role `rocm-bake-reconcile-apply`"), "{}", left.stderr);
    assert!(left.stdout.contains("W501"), "the plan said so: {}", left.stdout);
    assert!(left.stdout.contains("Left for an administrator: iam_ci_role.apply (the CI identities"), "{}", left.stdout);
    let writes: Vec<String> = apply_role.requests().iter().filter(|r| r.is_write()).map(ToString::to_string).collect();
    assert!(writes.is_empty(), "its only change is left: no write, not even the lock: {writes:?}");

    // A plan that touches no CI identity, the apply role applies.
    aws_sdk_ecr::Client::new(&account.sdk_config())
        .delete_lifecycle_policy()
        .repository_name("pytorch")
        .send()
        .await
        .unwrap();
    iam.untag_role().role_name("rocm-bake-reconcile-apply").tag_keys("owner").send().await.unwrap();
    let applied = reconcile(&apply_role, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);
}

#[tokio::test]
async fn drift_names_an_undeclared_role_that_trusts_github_and_what_it_admits() {
    let (account, desired) = bootstrapped().await;
    let trust = json!({ "Version": "2012-10-17", "Statement": [{
        "Effect": "Allow",
        "Principal": { "Federated": format!("arn:aws:iam::{}:oidc-provider/{PROVIDER_HOST}", account.id) },
        "Action": "sts:AssumeRoleWithWebIdentity",
        "Condition": { "StringLike": { "token.actions.githubusercontent.com:sub": "repo:ROCm/*" } },
    }]});
    let iam = Iam::new(&account.sdk_config());
    iam.create_role()
        .role_name("copied-from-a-blog")
        .assume_role_policy_document(trust.to_string())
        .send()
        .await
        .unwrap();
    iam.create_role()
        .role_name("not-github")
        .assume_role_policy_document(
            json!({ "Version": "2012-10-17", "Statement": [{ "Effect": "Allow", "Principal": { "Service": "ec2.amazonaws.com" }, "Action": "sts:AssumeRole" }]}).to_string(),
        )
        .send()
        .await
        .unwrap();
    let drift = reconcile(&account, &desired.path, &["drift"]);
    assert_eq!(drift.code, 2, "{}{}", drift.stdout, drift.stderr);
    assert!(drift.stdout.contains("D107"), "{}", drift.stdout);
    assert!(
        drift.stdout.contains("role `copied-from-a-blog` is not in desired.toml and trusts GitHub's OIDC provider (StringLike `repo:ROCm/*`)"),
        "{}",
        drift.stdout
    );
    assert!(!drift.stdout.contains("not-github"), "{}", drift.stdout);
    assert!(
        drift.stdout.contains("[D107] iam_role.role/copied-from-a-blog: "),
        "by its name in the account: {}",
        drift.stdout
    );

    // A role named like a declared key, and a pull request whose key for the runner's role is
    // another role's name: neither makes an undeclared role's finding look declared, so a public
    // plan counts both and names neither, nor whom they admit.
    iam.create_role()
        .role_name("codebuild")
        .assume_role_policy_document(trust.to_string().replace("repo:ROCm/*", "repo:other-team/*"))
        .send()
        .await
        .unwrap();
    let text = std::fs::read_to_string(&desired.path).unwrap();
    let renamed = crate::support::desired_file(
        &text
            .replace("[iam.roles.codebuild]", "[iam.roles.copied-from-a-blog]")
            .replace("service_role = \"codebuild\"", "service_role = \"copied-from-a-blog\""),
    );
    // The apply job's log (a GitHub Actions job's: public) counts them too; said private, names.
    let mut in_actions: Vec<(&str, String)> = account.env();
    in_actions.push(("GITHUB_ACTIONS", "true".to_owned()));
    let applied = crate::support::reconcile_in(&in_actions, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);
    assert!(!applied.stdout.contains("copied-from-a-blog"), "{}", applied.stdout);
    assert!(applied.stdout.contains("2 finding(s) of this code"), "{}", applied.stdout);
    let private = crate::support::reconcile_in(&in_actions, &desired.path, &["apply", "--auto-approve", "--private"]);
    assert!(private.stdout.contains("role `copied-from-a-blog`"), "{}", private.stdout);
    for (pull_request, code) in [(&desired, 0), (&renamed, 3)] {
        let base = desired.path.to_str().unwrap();
        let run = reconcile(&account, &pull_request.path, &["plan", "--public", "--base", base, "--format", "json"]);
        // A key the default branch does not have, for a role that exists: nothing of it shown
        // (W602), whatever mark it carries.
        assert_eq!(run.code, code, "{}", run.stderr);
        // (The renamed pull request's own key, which its W602 names, is the pull request's text.)
        let secrets: &[&str] = if code == 0 {
            &["copied-from-a-blog`", "repo:ROCm/*", "repo:other-team/*", "role/codebuild"]
        } else {
            &["role `copied-from-a-blog`", "repo:ROCm/*", "repo:other-team/*", "role/codebuild"]
        };
        for secret in secrets {
            assert!(!run.stdout.contains(secret), "{secret} is not shown: {}", run.stdout);
        }
        let plan: Value = serde_json::from_str(&run.stdout).unwrap();
        let d107: Vec<&Value> = plan["findings"].as_array().unwrap().iter().filter(|f| f["code"] == "D107").collect();
        assert_eq!(d107.len(), 1, "{d107:#?}");
        assert_eq!(d107[0]["address"], Value::Null);
        assert!(d107[0]["message"].as_str().unwrap().starts_with("2 finding(s) of this code"), "{d107:#?}");
    }
}

#[tokio::test]
async fn a_pull_request_changing_the_repository_is_an_error_naming_who_would_be_trusted_not_a_widening() {
    let (account, desired) = bootstrapped().await;
    // The pull request's desired.toml: another repository (a fork's), nothing else.
    let text = std::fs::read_to_string(&desired.path).unwrap().replace("ROCm/rocm-bake\"", "attacker/rocm-bake\"");
    let forked = crate::support::desired_file(&text);
    let plan = reconcile(&account, &forked.path, &["plan", "--format", "json"]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    let plan: Value = serde_json::from_str(&plan.stdout).unwrap();
    let findings = plan["findings"].as_array().unwrap();
    assert!(
        !findings.iter().any(|f| f["code"] == "S104"),
        "the account's exact trusts are not widenings: {findings:#?}"
    );
    let changed: Vec<(&str, &str)> = findings
        .iter()
        .filter(|f| f["code"] == "D108")
        .map(|f| (f["severity"].as_str().unwrap(), f["address"].as_str().unwrap()))
        .collect();
    assert_eq!(
        changed,
        [("error", "iam_ci_role.apply"), ("error", "iam_ci_role.drift"), ("error", "iam_ci_role.plan")]
    );
    for (role, subject) in [
        ("plan", subject("attacker/rocm-bake", "ref:refs/heads/main", "pull-request-plan.yml")),
        ("drift", subject("attacker/rocm-bake", "ref:refs/heads/main", "nightly-drift.yml")),
        ("apply", subject("attacker/rocm-bake", "environment:aws-production", "apply-after-merge.yml")),
    ] {
        let finding =
            findings.iter().find(|f| f["code"] == "D108" && f["address"] == format!("iam_ci_role.{role}")).unwrap();
        let message = finding["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("after it, the runs whose subject is `{subject}` can act as it")),
            "{message}"
        );
    }
    // In the pull request's comment too, an error, with W501 saying an administrator applies it.
    let comment = reconcile(&account, &forked.path, &["plan", "--format", "markdown"]);
    assert!(comment.stdout.contains("D108"), "{}", comment.stdout);
    assert!(comment.stdout.contains("W501"), "{}", comment.stdout);
    // A hand-widened trust is still a widening, with desired.toml unchanged.
    let iam = Iam::new(&account.sdk_config());
    let mut widened = trust_of(&iam, "rocm-bake-reconcile-plan").await;
    widened["Statement"][0]["Condition"]["StringEquals"]["token.actions.githubusercontent.com:sub"] = json!([
        subject("ROCm/rocm-bake", "ref:refs/heads/main", "pull-request-plan.yml"),
        subject("attacker/rocm-bake", "ref:refs/heads/main", "pull-request-plan.yml")
    ]);
    iam.update_assume_role_policy()
        .role_name("rocm-bake-reconcile-plan")
        .policy_document(widened.to_string())
        .send()
        .await
        .unwrap();
    let drift = reconcile(&account, &desired.path, &["drift"]);
    assert_eq!(drift.code, 2);
    assert!(drift.stdout.contains("Error [S104]"), "{}", drift.stdout);
    assert!(!drift.stdout.contains("D108"), "{}", drift.stdout);
}

#[tokio::test]
async fn the_apply_role_refuses_a_destroy_of_what_only_an_administrator_deletes_before_any_write() {
    let (account, desired) = bootstrapped().await;
    let apply_role = account.assume("rocm-bake-reconcile-apply").await;
    let refused = reconcile(&apply_role, &desired.path, &["destroy", "--auto-approve"]);
    assert_eq!(refused.code, 3, "{}{}", refused.stdout, refused.stderr);
    assert!(refused.stderr.contains("a CI role never makes these changes"), "{}", refused.stderr);
    assert!(refused.stderr.contains("`iam_ci_role.apply`"), "{}", refused.stderr);
    // Everything reconcile made carries its mark, so the destroy plan holds all of it: shown, then
    // refused whole.
    assert!(refused.stdout.contains("# iam_ci_role.apply will be deleted"), "{}", refused.stdout);
    assert!(refused.stdout.contains("# ecr_repository.pytorch will be deleted"), "{}", refused.stdout);
    let writes: Vec<String> = apply_role.requests().iter().filter(|r| r.is_write()).map(ToString::to_string).collect();
    assert!(writes.is_empty(), "no write, not even the lock: {writes:?}");
}

/// The apply role never deletes the nightly's images: a destroy (or prune) of a repository that
/// holds any is an administrator's, even once its lifecycle policy is gone; an empty one it may.
#[tokio::test]
async fn the_apply_role_never_deletes_a_repository_with_its_images_or_without() {
    let (account, desired) = bootstrapped().await;
    let ecr = aws_sdk_ecr::Client::new(&account.sdk_config());
    crate::safety::push(&ecr, "pytorch", Some("nightly"), 5_000_000, "n1").await;
    ecr.delete_lifecycle_policy().repository_name("pytorch").send().await.unwrap();
    let apply_role = account.assume("rocm-bake-reconcile-apply").await;
    let destroy = reconcile(
        &apply_role,
        &desired.path,
        &["destroy", "--auto-approve", "--force-delete-images", "--empty-buckets"],
    );
    assert_eq!(destroy.code, 3, "{}{}", destroy.stdout, destroy.stderr);
    assert!(
        destroy.stderr.contains(
            "`ecr_repository.pytorch`, `ecr_repository.pytorch-cache` (deleting a repository, which the mark alone \
             cannot tell from another team's someone marked)"
        ),
        "{}",
        destroy.stderr
    );
    assert!(apply_role.writes().is_empty(), "{:?}", apply_role.writes());
    assert_eq!(
        ecr.describe_images().repository_name("pytorch").send().await.unwrap().image_details().len(),
        1,
        "its image is still there"
    );

    // Pruned, empty, as desired.toml stops declaring it: still an administrator's to delete.
    let text = std::fs::read_to_string(&desired.path).unwrap();
    let without = desired_file(&text.replace("pytorch-cache = {}\n", ""));
    let empty = ecr.describe_images().repository_name("pytorch-cache").send().await.unwrap();
    assert!(empty.image_details().is_empty());
    let left = reconcile(&apply_role, &without.path, &["apply", "--prune", "--allow-delete", "--auto-approve"]);
    assert_eq!(left.code, 2, "{}{}", left.stdout, left.stderr);
    assert!(left.stderr.contains("leaves `ecr_repository.pytorch-cache` (deleting a repository"), "{}", left.stderr);
    assert!(left.stdout.contains("Left for an administrator: ecr_repository.pytorch-cache"), "{}", left.stdout);
    // The rest of the plan it makes (the lifecycle policy deleted above, the runner's policy
    // without the pruned name); no repository is deleted.
    assert!(!apply_role.writes().iter().any(|w| w.action == "DeleteRepository"), "{:?}", apply_role.writes());
    let pruned = reconcile(&account, &without.path, &["apply", "--prune", "--allow-delete", "--auto-approve"]);
    assert_eq!(pruned.code, 0, "{}{}", pruned.stdout, pruned.stderr);
    assert!(ecr.describe_repositories().repository_names("pytorch-cache").send().await.is_err(), "pruned");
}
