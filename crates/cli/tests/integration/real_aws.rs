//! What a real account does that moto does not, made to happen in the emulator (the launcher is
//! as strict as AWS where it matters): CodeBuild refusing a GitHub project without a way to
//! GitHub, the variable CodeBuild adds to a new project, lists answered a page at a time, and a
//! region other than us-east-1.

use aws_sdk_codebuild as codebuild;
use aws_sdk_ecr as ecr;
use reconcile_test_support::{Markup, TestAccount, emulator};
use serde_json::Value;

use crate::safety::push;
use crate::support::{desired_file, reconcile, small_account_with_runner};

/// The runner project's environment variables, as CodeBuild answers them.
async fn variables(account: &TestAccount, region: &str) -> Vec<(String, String)> {
    let client = codebuild::Client::new(&account.sdk_config_in(region));
    let projects = client.batch_get_projects().names("rocm-bake").send().await.unwrap();
    let project = projects.projects().first().expect("the project exists").clone();
    project
        .environment()
        .unwrap()
        .environment_variables()
        .iter()
        .map(|v| (v.name().to_owned(), v.value().to_owned()))
        .collect()
}

/// Sets the runner's environment variables by hand (everything else as it is).
async fn set_variables(account: &TestAccount, variables: &[(&str, &str)]) {
    let client = codebuild::Client::new(&account.sdk_config());
    let projects = client.batch_get_projects().names("rocm-bake").send().await.unwrap();
    let environment = projects.projects()[0].environment().unwrap().clone();
    let variables = variables
        .iter()
        .map(|(name, value)| {
            codebuild::types::EnvironmentVariable::builder().name(*name).value(*value).build().unwrap()
        })
        .collect();
    let environment = codebuild::types::ProjectEnvironment::builder()
        .r#type(environment.r#type().clone())
        .compute_type(environment.compute_type().clone())
        .image(environment.image())
        .set_privileged_mode(environment.privileged_mode())
        .set_environment_variables(Some(variables))
        .build()
        .unwrap();
    client.update_project().name("rocm-bake").environment(environment).send().await.unwrap();
}

#[tokio::test]
async fn without_a_way_to_github_plan_says_so_apply_refuses_before_any_write_and_drift_fails() {
    let account = emulator().empty_account().await;
    let desired = desired_file(&small_account_with_runner(&["pytorch"]));
    let because = "CodeBuild has no way to reach GitHub in us-east-1: the account has no GitHub source credential \
                   there, and the project names no connection (`source_auth`)";

    let plan = reconcile(&account, &desired.path, &["plan"]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    assert!(plan.stdout.contains(&format!("Error [E103] codebuild_project.runner: {because}")), "{}", plan.stdout);
    assert!(plan.stdout.contains("aws codebuild import-source-credentials --region us-east-1"), "{}", plan.stdout);
    let json = reconcile(&account, &desired.path, &["plan", "--format", "json", "--detailed-exitcode"]);
    assert_eq!(json.code, 2);
    let json: Value = serde_json::from_str(&json.stdout).unwrap();
    let e103: Vec<&Value> = json["findings"].as_array().unwrap().iter().filter(|f| f["code"] == "E103").collect();
    assert_eq!(e103.len(), 1, "{json:#}");
    assert_eq!(
        (e103[0]["severity"].as_str(), e103[0]["address"].as_str()),
        (Some("error"), Some("codebuild_project.runner"))
    );
    let markdown = reconcile(&account, &desired.path, &["plan", "--format", "markdown"]);
    assert!(
        markdown.stdout.contains("- Error `E103` `codebuild_project.runner`: CodeBuild has no way"),
        "{}",
        markdown.stdout
    );
    Markup::assert_inert(&markdown.stdout);

    // Refused before the first write: not after the 58 others, failing on the project.
    let apply = reconcile(&account, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 3, "{}{}", apply.stdout, apply.stderr);
    assert!(
        apply.stderr.contains(&format!("error: refusing to apply: codebuild_project.runner: {because}")),
        "{}",
        apply.stderr
    );
    assert_eq!(account.writes(), Vec::new(), "nothing written");
    let drift = reconcile(&account, &desired.path, &["drift"]);
    assert_eq!(drift.code, 2, "{}", drift.stderr);
    assert!(drift.stdout.contains("[E103]"), "{}", drift.stdout);

    // With the credential, it converges, and says nothing of it.
    account.import_github_credential("us-east-1");
    let apply = reconcile(&account, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    let plan = reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]);
    assert_eq!(plan.code, 0, "{}", plan.stdout);
    let drift = reconcile(&account, &desired.path, &["drift"]);
    assert_eq!(drift.code, 0, "{}", drift.stdout);
}

#[tokio::test]
async fn a_connection_desired_toml_names_must_be_available_and_is_the_projects_source_auth() {
    let account = emulator().empty_account().await;
    let connection = format!("arn:aws:codeconnections:us-east-1:{}:connection/0a1b2c3d-github", account.id);
    let with_connection = small_account_with_runner(&["pytorch"]).replace(
        "service_role = \"codebuild\"",
        &format!("service_role = \"codebuild\"\nsource_auth = \"{connection}\""),
    );
    let desired = desired_file(&with_connection);
    // Made by API: pending until someone completes the handshake in the console.
    account.connection(&connection, "PENDING");
    let plan = reconcile(&account, &desired.path, &["plan"]);
    assert!(
        plan.stdout.contains(&format!("[E103] codebuild_project.runner: the connection `{connection}` desired.toml names (`source_auth`) is PENDING, not AVAILABLE")),
        "{}",
        plan.stdout
    );
    assert!(plan.stdout.contains("completed once in the console"), "{}", plan.stdout);
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 3);
    assert!(account.writes().is_empty());

    account.connection(&connection, "AVAILABLE");
    let apply = reconcile(&account, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    let client = codebuild::Client::new(&account.sdk_config());
    let projects = client.batch_get_projects().names("rocm-bake").send().await.unwrap();
    let auth = projects.projects()[0].source().unwrap().auth().unwrap().clone();
    assert_eq!((auth.r#type().as_str(), auth.resource()), ("CODECONNECTIONS", Some(connection.as_str())));
    assert_eq!(reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]).code, 0);

    // Without `source_auth`, the connection the project names is drift, and apply takes it
    // away (the account's credential is then the way).
    account.import_github_credential("us-east-1");
    let plain = desired_file(&small_account_with_runner(&["pytorch"]));
    let plan = reconcile(&account, &plain.path, &["plan", "--detailed-exitcode"]);
    assert_eq!(plan.code, 2, "{}", plan.stdout);
    assert!(plan.stdout.contains("~ source_auth"), "{}", plan.stdout);
    assert_eq!(reconcile(&account, &plain.path, &["apply", "--auto-approve"]).code, 0);
    assert_eq!(reconcile(&account, &plain.path, &["plan", "--detailed-exitcode"]).code, 0);
    let bad = desired_file(&with_connection.replace(&connection, "arn:aws:iam::123456789012:role/x"));
    let refused = reconcile(&account, &bad.path, &["validate"]);
    assert_eq!(refused.code, 1);
    assert!(
        refused.stderr.contains(
            "`codebuild.projects.runner.source_auth`: `arn:aws:iam::123456789012:role/x` is not the ARN of a connection"
        ),
        "{}",
        refused.stderr
    );
}

#[tokio::test]
async fn the_variable_codebuild_adds_to_a_new_project_is_no_drift_and_stays_any_other_is_drift() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account_with_runner(&["pytorch"]));
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    let added = vec![("CODEBUILD_CONFIG_AUTO_DISCOVER".to_owned(), "true".to_owned())];
    assert_eq!(variables(&account, "us-east-1").await, added, "CodeBuild added it, as AWS does");
    assert_eq!(reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]).code, 0, "and it is no drift");

    // Another change to the project keeps it: apply never takes away what CodeBuild put there.
    aws_sdk_codebuild::Client::new(&account.sdk_config())
        .update_project()
        .name("rocm-bake")
        .description("changed by hand")
        .send()
        .await
        .unwrap();
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    assert_eq!(variables(&account, "us-east-1").await, added);
    assert_eq!(reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]).code, 0);

    // Set to anything else, or beside another variable, it is drift, and apply clears it.
    for by_hand in [
        vec![("CODEBUILD_CONFIG_AUTO_DISCOVER", "false")],
        vec![("CODEBUILD_CONFIG_AUTO_DISCOVER", "true"), ("EXTRA", "1")],
    ] {
        set_variables(&account, &by_hand).await;
        let drift = reconcile(&account, &desired.path, &["drift"]);
        assert_eq!(drift.code, 2, "{by_hand:?}: {}", drift.stdout);
        assert!(drift.stdout.contains("~ environment_variables:"), "{by_hand:?}: {}", drift.stdout);
        assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
        assert_eq!(reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]).code, 0, "{by_hand:?}");
    }
    assert_eq!(variables(&account, "us-east-1").await, added, "what CodeBuild put there, as it was, stays");
}

#[tokio::test]
async fn with_every_list_answered_one_item_a_page_the_2026_11_11_account_plans_as_with_whole_pages() {
    let account = emulator().new_account().await;
    let copy = crate::support::real_copy();
    let desired = copy.path.clone();
    account.seed_2026_11_11(&desired);
    crate::support::import(&account, &desired);
    // More of everything than a page: images, inline and attached policies.
    let ecr = ecr::Client::new(&account.sdk_config());
    for n in 0..4 {
        push(&ecr, "pytorch-cache", (n == 0).then_some("nightly"), 1_000_000 + n, &format!("page-{n}")).await;
    }
    let iam = aws_sdk_iam::Client::new(&account.sdk_config());
    let wide = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"}]}"#;
    for name in ["legacy-one", "legacy-two"] {
        iam.put_role_policy()
            .role_name("rocm-bake-codebuild")
            .policy_name(name)
            .policy_document(wide)
            .send()
            .await
            .unwrap();
        let managed = iam.create_policy().policy_name(name).policy_document(wide).send().await.unwrap();
        let arn = managed.policy().unwrap().arn().unwrap().to_owned();
        iam.attach_role_policy().role_name("rocm-bake-codebuild").policy_arn(arn).send().await.unwrap();
    }
    let runs = |args: &[&str]| {
        let run = reconcile(&account, &desired, args);
        assert!([0, 2].contains(&run.code), "{args:?}: {}", run.stderr);
        run.stdout
    };
    let whole = (
        runs(&["plan", "--format", "json"]),
        runs(&["drift", "--format", "json"]),
        runs(&["usage", "--format", "json"]),
    );
    account.page_size(1);
    let before = account.requests().len();
    let paged = (
        runs(&["plan", "--format", "json"]),
        runs(&["drift", "--format", "json"]),
        runs(&["usage", "--format", "json"]),
    );
    // Usage reports carry their time; nothing else may differ.
    let usage = |text: &str| {
        let mut value: Value = serde_json::from_str(text).unwrap();
        value["generated_at"] = Value::Null;
        value
    };
    assert_eq!(paged.0, whole.0, "the plan");
    assert_eq!(paged.1, whole.1, "the drift check");
    assert_eq!(usage(&paged.2), usage(&whole.2), "the usage report");
    let count = |action: &str| account.requests()[before..].iter().filter(|r| r.action == action).count();
    assert!(count("DescribeRepositories") >= 3 * 27, "a page per repository: {}", count("DescribeRepositories"));
    assert!(count("ListRolePolicies") >= 3 && count("ListAttachedRolePolicies") >= 2, "pages of policies");
    let plan: Value = serde_json::from_str(&paged.0).unwrap();
    let deletes = crate::support::json_changes(&paged.0);
    assert!(deletes.contains(&"delete iam_role_policy.codebuild/legacy-two".to_owned()), "{deletes:?}");
    assert_eq!(plan["findings"].as_array().unwrap().iter().filter(|f| f["code"] == "S101").count(), 2);
}

#[tokio::test]
async fn in_eu_west_1_an_empty_account_is_applied_planned_clean_drift_checked_and_its_outputs_name_the_region() {
    let account = emulator().new_account().await;
    account.import_github_credential("eu-west-1");
    let text = small_account_with_runner(&["pytorch", "pytorch-cache"])
        .replace("region = \"us-east-1\"", "region = \"eu-west-1\"");
    assert!(text.starts_with("region = \"eu-west-1\""));
    let desired = desired_file(&text);
    let apply = reconcile(&account, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    assert_eq!(reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]).code, 0);
    let drift = reconcile(&account, &desired.path, &["drift"]);
    assert_eq!(drift.code, 0, "{}", drift.stdout);
    let usage = reconcile(&account, &desired.path, &["usage"]);
    assert_eq!(usage.code, 0, "{}", usage.stderr);
    assert!(
        usage.stdout.starts_with(&format!("ECR usage of account {}, region eu-west-1.", account.id)),
        "{}",
        usage.stdout
    );
    let outputs = reconcile(&account, &desired.path, &["outputs"]);
    assert_eq!(outputs.code, 0, "{}", outputs.stderr);
    assert!(
        outputs.stdout.contains(&format!("--body {}.dkr.ecr.eu-west-1.amazonaws.com\n", account.id)),
        "{}",
        outputs.stdout
    );
    assert!(outputs.stdout.contains("gh variable set AWS_REGION        --body eu-west-1\n"), "{}", outputs.stdout);

    // The bucket is where it was asked to be, the webhook posts to the region's CodeBuild.
    let s3 = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(&account.sdk_config_in("eu-west-1")).force_path_style(true).build(),
    );
    let location = s3.get_bucket_location().bucket(format!("rocm-bake-sccache-{}", account.id)).send().await.unwrap();
    assert_eq!(location.location_constraint().map(|c| c.as_str()), Some("eu-west-1"));
    let codebuild = codebuild::Client::new(&account.sdk_config_in("eu-west-1"));
    let projects = codebuild.batch_get_projects().names("rocm-bake").send().await.unwrap();
    let payload = projects.projects()[0].webhook().unwrap().payload_url().unwrap().to_owned();
    assert!(payload.starts_with("https://codebuild.eu-west-1.amazonaws.com/webhooks"), "{payload}");
    // Nothing landed in us-east-1.
    let elsewhere = ecr::Client::new(&account.sdk_config()).describe_repositories().send().await.unwrap();
    assert!(elsewhere.repositories().is_empty());
}
