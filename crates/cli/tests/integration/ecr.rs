//! ECR: creation, convergence, drift, and semantic comparison of lifecycle policies.

use std::path::Path;

use aws_sdk_ecr as ecr;
use reconcile_core::engine::{self, ApplyOptions};
use reconcile_core::reconciler::Silent;
use reconcile_core::{Account, Reconciler};
use reconcile_ecr::EcrReconciler;
use reconcile_test_support::emulator;

use crate::support::{
    OLD_14_DAY_POLICY, desired_file, json_changes, put_lifecycle_policy, reconcile, redact, small_desired,
};

#[tokio::test]
async fn out_of_band_policy_drift_is_planned_as_exactly_those_changes_and_fixed() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_desired(&["pytorch", "pytorch-cache", "vllm", "vllm-cache"]));
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);

    let client = ecr::Client::new(&account.sdk_config());
    client.delete_lifecycle_policy().repository_name("vllm-cache").send().await.unwrap();
    put_lifecycle_policy(&client, "pytorch-cache", OLD_14_DAY_POLICY).await;

    let plan = reconcile(&account, &desired.path, &["plan", "--detailed-exitcode", "--format", "json"]);
    assert_eq!(plan.code, 2, "{}", plan.stderr);
    assert_eq!(
        json_changes(&plan.stdout),
        ["update ecr_lifecycle_policy.pytorch-cache", "create ecr_lifecycle_policy.vllm-cache"]
    );

    let before_apply = account.writes().len();
    let apply = reconcile(&account, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}", apply.stderr);
    assert!(apply.stdout.contains("Apply complete! Resources: 1 created, 1 updated, 0 deleted."));
    let writes: Vec<String> = account.writes()[before_apply..].iter().map(ToString::to_string).collect();
    assert_eq!(writes, ["ecr:PutLifecyclePolicy"; 2], "nothing else changes");
    assert_eq!(reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]).code, 0);
}

#[tokio::test]
async fn a_policy_that_aws_returns_reformatted_or_reordered_is_not_drift() {
    let account = emulator().new_account().await;
    let desired = desired_file(
        r#"region = "us-east-1"
[ecr.lifecycle_policies.two-rules]
rules = [
  { rulePriority = 1, description = "keep release tags", selection = { tagStatus = "tagged", tagPrefixList = ["release", "latest"], countType = "imageCountMoreThan", countNumber = 10 }, action = { type = "expire" } },
  { rulePriority = 2, selection = { tagStatus = "untagged", countType = "imageCountMoreThan", countNumber = 3 }, action = { type = "expire" } },
]
[ecr.repositories]
pytorch = { lifecycle_policy = "two-rules", allow_tagged_expiry = true }
"#,
    );
    let client = ecr::Client::new(&account.sdk_config());
    // Made by reconcile (its mark), its policy rewritten by hand.
    client.create_repository().repository_name("pytorch").tags(crate::support::ecr_mark()).send().await.unwrap();
    // Rules in reverse priority order, keys reordered, tag prefixes reordered, pretty-printed.
    // (An explicit default `storageClass` is covered by the unit tests: moto's schema lacks it.)
    let reformatted = r#"
    {
        "rules": [
            {
                "selection": { "countNumber": 3, "countType": "imageCountMoreThan", "tagStatus": "untagged" },
                "action": { "type": "expire" },
                "rulePriority": 2
            },
            {
                "action": { "type": "expire" },
                "rulePriority": 1,
                "description": "keep release tags",
                "selection": {
                    "countType": "imageCountMoreThan",
                    "tagPrefixList": [ "latest", "release" ],
                    "tagStatus": "tagged",
                    "countNumber": 10
                }
            }
        ]
    }"#;
    put_lifecycle_policy(&client, "pytorch", reformatted).await;

    let plan = reconcile(&account, &desired.path, &["plan", "--detailed-exitcode", "--format", "json"]);
    assert_eq!(plan.code, 0, "{}{}", plan.stdout, plan.stderr);
    assert!(json_changes(&plan.stdout).is_empty());

    // The same document with one real change is drift.
    let changed = reformatted.replace("\"countNumber\": 10", "\"countNumber\": 11");
    put_lifecycle_policy(&client, "pytorch", &changed).await;
    let plan = reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]);
    assert_eq!(plan.code, 2, "{}", plan.stderr);
    assert!(plan.stdout.contains("-        \"countNumber\": 11,"), "{}", plan.stdout);
    assert!(plan.stdout.contains("+        \"countNumber\": 10,"), "{}", plan.stdout);
}

#[tokio::test]
async fn repository_settings_and_tags_drift_is_corrected_and_aws_tags_are_left_alone() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_desired(&["triton-wheel"]));
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);

    let client = ecr::Client::new(&account.sdk_config());
    let arn = format!("arn:aws:ecr:us-east-1:{}:repository/triton-wheel", account.id);
    let tag = |key: &str, value: &str| ecr::types::Tag::builder().key(key).value(value).build().unwrap();
    client
        .tag_resource()
        .resource_arn(&arn)
        .tags(tag("owner", "someone"))
        .tags(tag("project", "other"))
        .send()
        .await
        .unwrap();
    client
        .put_image_tag_mutability()
        .repository_name("triton-wheel")
        .image_tag_mutability(ecr::types::ImageTagMutability::Immutable)
        .send()
        .await
        .unwrap();

    let plan = reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]);
    assert_eq!(plan.code, 2, "{}", plan.stderr);
    insta::assert_snapshot!("plan_repository_drift", redact(&plan.stdout, &account));

    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    let tags = client.list_tags_for_resource().resource_arn(&arn).send().await.unwrap();
    let tags: Vec<(&str, &str)> = tags.tags().iter().map(|t| (t.key(), t.value())).collect();
    assert_eq!(tags, [("project", "rocm-bake"), ("reconcile:deployment", "default")]);
    assert_eq!(reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]).code, 0);
}

#[tokio::test]
async fn adding_a_repository_plans_only_its_repository_and_policy() {
    let account = emulator().new_account().await;
    let before = desired_file(&small_desired(&["pytorch", "pytorch-cache"]));
    assert_eq!(reconcile(&account, &before.path, &["apply", "--auto-approve"]).code, 0);

    let after = desired_file(&small_desired(&["pytorch", "pytorch-cache", "sglang-cache"]));
    let plan = reconcile(&account, &after.path, &["plan", "--detailed-exitcode", "--format", "json"]);
    assert_eq!(plan.code, 2, "{}", plan.stderr);
    assert_eq!(
        json_changes(&plan.stdout),
        ["create ecr_repository.sglang-cache", "create ecr_lifecycle_policy.sglang-cache"]
    );
}

/// The ECR reconciler alone, planning `vllm-wheel` in a new account: what the test applies with.
struct EcrOnly {
    account: reconcile_test_support::TestAccount,
    client: ecr::Client,
    desired: reconcile_core::Desired,
    reconcilers: Vec<Box<dyn Reconciler>>,
    account_id: Account,
    resources: engine::DesiredResources,
}

impl EcrOnly {
    async fn new() -> EcrOnly {
        let account = emulator().new_account().await;
        let desired = reconcile_cli::parse_desired(Path::new("desired.toml"), &small_desired(&["vllm-wheel"])).unwrap();
        let client = ecr::Client::new(&account.sdk_config());
        let account_id = Account::new(&account.id, "us-east-1");
        let reconcilers: Vec<Box<dyn Reconciler>> =
            vec![Box::new(EcrReconciler::new(client.clone(), account_id.clone()))];
        let resources = engine::desired_resources(reconcile_ecr::desired(&desired, &account_id).unwrap());
        EcrOnly { account, client, desired, reconcilers, account_id, resources }
    }

    async fn plan(&self) -> reconcile_core::Plan {
        engine::plan(&self.reconcilers, &self.desired, &self.resources, &self.account_id).await.unwrap()
    }
}

#[tokio::test]
async fn a_repository_made_between_plan_and_apply_is_adopted_not_an_error() {
    let ecr_only = EcrOnly::new().await;
    let EcrOnly { client, reconcilers, .. } = &ecr_only;
    let plan = ecr_only.plan().await;
    assert_eq!(plan.summary().create, 2);

    // A nightly's --ensure-ecr makes the repository as this deployment's (the mark, the only tag
    // its role may send) after the plan was read.
    let mark = ecr::types::Tag::builder().key("reconcile:deployment").value("default").build().unwrap();
    client.create_repository().repository_name("vllm-wheel").tags(mark).send().await.unwrap();

    let options = ApplyOptions { allow_delete: false, left: &[], concurrency: 4, stop: None };
    let report = engine::apply(reconcilers, &plan, options, &Silent).await.unwrap();
    assert!(report.succeeded(), "{report:?}");
    let outcomes: Vec<String> =
        report.results.iter().map(|(address, _, outcome, _)| format!("{address} {outcome:?}")).collect();
    assert_eq!(outcomes, ["ecr_repository.vllm-wheel Adopted", "ecr_lifecycle_policy.vllm-wheel Applied"]);
    assert_eq!(ecr_only.plan().await.changes, [], "the adopted repository converged to the desired tags");
}

#[tokio::test]
async fn a_repository_someone_else_made_between_plan_and_apply_is_not_taken_over() {
    let ecr_only = EcrOnly::new().await;
    let EcrOnly { account, client, reconcilers, .. } = &ecr_only;
    let plan = ecr_only.plan().await;

    // Another team's, unmarked, or another deployment's, made after the plan was read.
    for (name, tags) in [("vllm-wheel", vec![("team", "x")])] {
        let tags = tags.iter().map(|(k, v)| ecr::types::Tag::builder().key(*k).value(*v).build().unwrap()).collect();
        client.create_repository().repository_name(name).set_tags(Some(tags)).send().await.unwrap();
    }
    let options = ApplyOptions { allow_delete: false, left: &[], concurrency: 4, stop: None };
    let report = engine::apply(reconcilers, &plan, options, &Silent).await.unwrap();
    assert!(!report.succeeded());
    let outcomes: Vec<String> =
        report.results.iter().map(|(address, _, outcome, _)| format!("{address} {outcome:?}")).collect();
    assert!(outcomes[0].contains("without this deployment's mark"), "{outcomes:#?}");
    assert!(outcomes[1].starts_with("ecr_lifecycle_policy.vllm-wheel Skipped"), "{outcomes:#?}");
    let arn = format!("arn:aws:ecr:us-east-1:{}:repository/vllm-wheel", account.id);
    let tags = client.list_tags_for_resource().resource_arn(arn).send().await.unwrap();
    let tags: Vec<(&str, &str)> = tags.tags().iter().map(|t| (t.key(), t.value())).collect();
    assert_eq!(tags, [("team", "x")], "left as it was made");
    let policy = client.get_lifecycle_policy().repository_name("vllm-wheel").send().await;
    assert!(policy.is_err(), "no policy put on someone else's repository");
}

#[tokio::test]
async fn scan_on_push_turned_off_converges() {
    let account = emulator().new_account().await;
    let on = desired_file(&small_desired(&["pytorch"]).replace("pytorch = {}", "pytorch = { scan_on_push = true }"));
    assert_eq!(reconcile(&account, &on.path, &["apply", "--auto-approve"]).code, 0);
    assert_eq!(reconcile(&account, &on.path, &["plan", "--detailed-exitcode"]).code, 0);
    let off = desired_file(&small_desired(&["pytorch"]));
    let plan = reconcile(&account, &off.path, &["plan"]);
    assert!(plan.stdout.contains("~ scan_on_push = true -> false"), "{}", plan.stdout);
    assert_eq!(reconcile(&account, &off.path, &["apply", "--auto-approve"]).code, 0);
    let again = reconcile(&account, &off.path, &["plan", "--detailed-exitcode"]);
    assert_eq!(again.code, 0, "{}", again.stdout);
}
