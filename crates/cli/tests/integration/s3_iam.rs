//! The sccache bucket and the scoped service role: adoption, drift, derivation and its limits.

use std::path::Path;
use std::process::Command;

use aws_sdk_ecr as ecr;
use aws_sdk_iam as iam;
use aws_sdk_s3 as s3;
use reconcile_core::Account;
use reconcile_test_support::{TestAccount, emulator, emulator_python};
use serde_json::{Value, json};

use crate::support::{desired_file, json_changes, put_lifecycle_policy, real_desired, reconcile, small_account};

const KEEP_3: &str = r#"{"rules":[{"rulePriority":1,"selection":{"tagStatus":"untagged","countType":"imageCountMoreThan","countNumber":3},"action":{"type":"expire"}}]}"#;

pub(crate) fn s3_client(account: &TestAccount) -> s3::Client {
    s3::Client::from_conf(s3::config::Builder::from(&account.sdk_config()).force_path_style(true).build())
}

pub(crate) fn bucket_name(account: &TestAccount) -> String {
    format!("rocm-bake-sccache-{}", account.id)
}

pub(crate) fn expire_after(days: i32) -> s3::types::BucketLifecycleConfiguration {
    let rule = s3::types::LifecycleRule::builder()
        .id("expire-after-30-days")
        .status(s3::types::ExpirationStatus::Enabled)
        .filter(s3::types::LifecycleRuleFilter::builder().prefix("").build())
        .expiration(s3::types::LifecycleExpiration::builder().days(days).build())
        .build()
        .unwrap();
    s3::types::BucketLifecycleConfiguration::builder().rules(rule).build().unwrap()
}

/// The role's current inline policy, decoded.
async fn live_policy(iam: &iam::Client) -> Value {
    let output =
        iam.get_role_policy().role_name("rocm-bake-codebuild").policy_name("rocm-bake-nightly").send().await.unwrap();
    serde_json::from_str(&reconcile_iam::percent_decode(output.policy_document())).unwrap()
}

/// Reverses every list in a policy, the way a hand-written document might order things.
fn reversed(value: &Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().rev().map(reversed).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), reversed(v))).collect()),
        other => other.clone(),
    }
}

#[tokio::test]
async fn a_bucket_and_role_made_by_the_old_script_are_imported_with_only_the_boundary_added() {
    let account = emulator().new_account().await;
    let text = small_account(&["pytorch", "pytorch-cache"]);
    let desired_path = desired_file(&text);
    let config = account.sdk_config();

    // The repositories, as the script made them.
    let ecr = ecr::Client::new(&config);
    for name in ["pytorch", "pytorch-cache"] {
        let tag = ecr::types::Tag::builder().key("project").value("rocm-bake").build().unwrap();
        ecr.create_repository().repository_name(name).tags(tag).send().await.unwrap();
        put_lifecycle_policy(&ecr, name, KEEP_3).await;
    }
    // The bucket: the protections real S3 gives a new bucket, and `Filter: {Prefix: ""}`.
    let s3 = s3_client(&account);
    let bucket = bucket_name(&account);
    s3.create_bucket().bucket(&bucket).send().await.unwrap();
    let block = s3::types::PublicAccessBlockConfiguration::builder()
        .block_public_acls(true)
        .ignore_public_acls(true)
        .block_public_policy(true)
        .restrict_public_buckets(true)
        .build();
    s3.put_public_access_block().bucket(&bucket).public_access_block_configuration(block).send().await.unwrap();
    let sse = s3::types::ServerSideEncryptionByDefault::builder()
        .sse_algorithm(s3::types::ServerSideEncryption::Aes256)
        .build()
        .unwrap();
    let sse = s3::types::ServerSideEncryptionConfiguration::builder()
        .rules(s3::types::ServerSideEncryptionRule::builder().apply_server_side_encryption_by_default(sse).build())
        .build()
        .unwrap();
    s3.put_bucket_encryption().bucket(&bucket).server_side_encryption_configuration(sse).send().await.unwrap();
    let tag = s3::types::Tag::builder().key("project").value("rocm-bake").build().unwrap();
    let tagging = s3::types::Tagging::builder().tag_set(tag).build().unwrap();
    s3.put_bucket_tagging().bucket(&bucket).tagging(tagging).send().await.unwrap();
    s3.put_bucket_lifecycle_configuration()
        .bucket(&bucket)
        .lifecycle_configuration(expire_after(30))
        .send()
        .await
        .unwrap();
    // The role: pretty-printed documents, the principal as a bare string, every list reversed.
    let iam = iam::Client::new(&config);
    let trust = r#"{
      "Version": "2012-10-17",
      "Statement": [
        { "Action": "sts:AssumeRole", "Principal": { "Service": "codebuild.amazonaws.com" }, "Effect": "Allow" }
      ]
    }"#;
    let tag = iam::types::Tag::builder().key("project").value("rocm-bake").build().unwrap();
    iam.create_role()
        .role_name("rocm-bake-codebuild")
        .assume_role_policy_document(trust)
        .description("Service role of the rocm-bake CodeBuild runner")
        .tags(tag)
        .send()
        .await
        .unwrap();
    let desired = reconcile_cli::parse_desired(Path::new("desired.toml"), &text).unwrap();
    let derived = reconcile_iam::inline_policy(
        &desired,
        &reconcile_cli::CATALOG,
        &reconcile_iam::declared(&desired).roles[0],
        &Account::new(&account.id, "us-east-1"),
    )
    .unwrap();
    iam.put_role_policy()
        .role_name("rocm-bake-codebuild")
        .policy_name("rocm-bake-nightly")
        .policy_document(serde_json::to_string_pretty(&reversed(&derived)).unwrap())
        .send()
        .await
        .unwrap();

    // Nothing the script made carries reconcile's mark: imported, every one, in one step.
    let writes = account.writes().len();
    let import = crate::support::import(&account, &desired_path.path);
    assert_eq!(import.stderr.lines().filter(|line| line.starts_with("  ")).count(), 4, "{}", import.stderr);
    // Everything the script made reads as declared, whatever the formatting: each import writes
    // the mark alone; what the script never made is the role's permissions boundary, which the
    // plan adds, and only that.
    let plan = reconcile(&account, &desired_path.path, &["plan", "--format", "json"]);
    assert_eq!(plan.code, 0, "{}{}", plan.stdout, plan.stderr);
    assert_eq!(
        json_changes(&plan.stdout),
        [
            "create iam_role_boundary.codebuild",
            "update iam_role.codebuild",
            "update s3_bucket.sccache",
            "update ecr_repository.pytorch",
            "update ecr_repository.pytorch-cache"
        ]
    );
    let plan: serde_json::Value = serde_json::from_str(&plan.stdout).unwrap();
    assert_eq!(plan["summary"], json!({ "import": 4, "create": 1, "update": 1, "delete": 0 }), "{plan:#}");
    let changes = plan["resource_changes"].as_array().unwrap();
    for change in changes.iter().filter(|c| c["address"] != "iam_role_boundary.codebuild") {
        assert_eq!(change["takeover"], "import", "{change:#}");
        let (before, after) = (&change["change"]["before"], &change["change"]["after"]);
        let mut tags = before["tags"].clone();
        tags["reconcile:deployment"] = json!("default");
        assert_eq!(after["tags"], tags, "the mark added, nothing else: {change:#}");
    }
    let role = changes.iter().find(|c| c["address"] == "iam_role.codebuild").unwrap();
    let (before, after) = (&role["change"]["before"], &role["change"]["after"]);
    let differing: Vec<&String> =
        after.as_object().unwrap().keys().filter(|key| before.get(key.as_str()) != after.get(key.as_str())).collect();
    assert_eq!(differing, ["permissions_boundary", "tags"], "{role:#}");
    assert_eq!(account.writes().len(), writes);
    let applied = reconcile(&account, &desired_path.path, &["apply", "--auto-approve"]);
    assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);
    assert!(applied.stdout.contains("Apply complete! Resources: 4 imported, 1 created, 1 updated, 0 deleted."));
    assert_eq!(reconcile(&account, &desired_path.path, &["plan", "--detailed-exitcode"]).code, 0);
}

#[tokio::test]
async fn drift_in_the_role_policy_and_the_bucket_is_exactly_one_update_each() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account(&["pytorch", "pytorch-cache"]));
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);

    // ecr:CreateRepository removed out of band.
    let iam = iam::Client::new(&account.sdk_config());
    let mut policy = live_policy(&iam).await;
    for statement in policy["Statement"].as_array_mut().unwrap() {
        if let Some(actions) = statement["Action"].as_array_mut() {
            actions.retain(|a| a != "ecr:CreateRepository");
        }
    }
    iam.put_role_policy()
        .role_name("rocm-bake-codebuild")
        .policy_name("rocm-bake-nightly")
        .policy_document(policy.to_string())
        .send()
        .await
        .unwrap();
    let plan = reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]);
    assert_eq!(plan.code, 2, "{}", plan.stderr);
    assert!(plan.stdout.contains("+        \"ecr:CreateRepository\",\n"), "{}", plan.stdout);
    let plan = reconcile(&account, &desired.path, &["plan", "--format", "json"]);
    assert_eq!(json_changes(&plan.stdout), ["update iam_role_policy.codebuild"]);

    // A 14-day expiry, too.
    let s3 = s3_client(&account);
    let bucket = bucket_name(&account);
    s3.put_bucket_lifecycle_configuration()
        .bucket(&bucket)
        .lifecycle_configuration(expire_after(14))
        .send()
        .await
        .unwrap();
    let plan = reconcile(&account, &desired.path, &["plan", "--format", "json"]);
    assert_eq!(json_changes(&plan.stdout), ["update iam_role_policy.codebuild", "update s3_bucket_lifecycle.sccache"]);

    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    assert_eq!(reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]).code, 0);
    let rules = s3.get_bucket_lifecycle_configuration().bucket(&bucket).send().await.unwrap();
    assert_eq!(rules.rules()[0].expiration().and_then(|e| e.days()), Some(30));
}

#[tokio::test]
async fn bucket_protection_and_tags_are_corrected() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account(&["vllm"]));
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    let s3 = s3_client(&account);
    let bucket = bucket_name(&account);
    s3.delete_public_access_block().bucket(&bucket).send().await.unwrap();
    s3.delete_bucket_tagging().bucket(&bucket).send().await.unwrap();
    // Every tag gone, the mark with them: the mark is the only record that it is this
    // deployment's (as a state file's entry is Terraform's), so it is no longer, and apply
    // refuses to take it back unreviewed.
    let plan = reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]);
    assert_eq!(plan.code, 3, "{}{}", plan.stdout, plan.stderr);
    assert!(plan.stdout.contains("Error [W601] s3_bucket.sccache: "), "{}", plan.stdout);
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 3);
    // Imported again, reviewed: the mark, its tags and its protection put back.
    crate::support::import(&account, &desired.path);
    let plan = reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]);
    assert_eq!(plan.code, 2);
    assert!(
        plan.stdout.contains("# s3_bucket.sccache will be imported (marked as this deployment's) and updated in place"),
        "{}",
        plan.stdout
    );
    assert!(plan.stdout.contains("-  \"block_public_acls\": false,"), "{}", plan.stdout);
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    assert_eq!(reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]).code, 0);
}

#[tokio::test]
async fn adding_a_repository_changes_in_iam_only_the_runners_inline_policy() {
    let account = emulator().new_account().await;
    let before = desired_file(&small_account(&["pytorch", "pytorch-cache"]));
    assert_eq!(reconcile(&account, &before.path, &["apply", "--auto-approve"]).code, 0);

    // The builds reach it by its name and the mark it is made with: the runner's inline policy
    // names it (the apply role puts that); its boundary, an administrator's, does not change.
    let after = desired_file(&small_account(&["pytorch", "pytorch-cache", "sglang-cache"]));
    let plan = reconcile(&account, &after.path, &["plan", "--format", "json"]);
    assert_eq!(
        json_changes(&plan.stdout),
        [
            "update iam_role_policy.codebuild",
            "create ecr_repository.sglang-cache",
            "create ecr_lifecycle_policy.sglang-cache"
        ]
    );
    let plan: Value = serde_json::from_str(&plan.stdout).unwrap();
    assert_eq!(plan["resource_changes"][1]["change"]["after"]["tags"]["reconcile:deployment"], "default");
    let document = plan["resource_changes"][0]["change"]["after"]["document"].to_string();
    assert!(document.contains(&format!("arn:aws:ecr:us-east-1:{}:repository/sglang-cache", account.id)), "{document}");
}

#[tokio::test]
async fn an_undeclared_inline_policy_is_a_delete_that_needs_allow_delete_and_managed_policies_are_reported() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account(&["pytorch"]));
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    let wide = crate::support::put_legacy_inline_policy(&account).await;
    let iam = iam::Client::new(&account.sdk_config());
    let managed = iam.create_policy().policy_name("hand-made").policy_document(wide).send().await.unwrap();
    let managed_arn = managed.policy().unwrap().arn().unwrap().to_owned();
    iam.attach_role_policy().role_name("rocm-bake-codebuild").policy_arn(&managed_arn).send().await.unwrap();

    let plan = reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]);
    assert_eq!(plan.code, 2);
    assert!(plan.stdout.contains("  # iam_role_policy.codebuild/legacy will be deleted\n"), "{}", plan.stdout);
    assert!(
        plan.stdout.contains(&format!("Error [S101] iam_role.codebuild: managed policy {managed_arn} is attached")),
        "{}",
        plan.stdout
    );
    assert!(plan.stdout.contains("Plan: 0 to add, 0 to change, 1 to destroy."));

    let writes = account.writes().len();
    let refused = reconcile(&account, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(refused.code, 3, "{}{}", refused.stdout, refused.stderr);
    assert!(refused.stderr.contains("pass --allow-delete"), "{}", refused.stderr);
    assert_eq!(account.writes().len(), writes, "a refused apply writes nothing");

    let allowed = reconcile(&account, &desired.path, &["apply", "--auto-approve", "--allow-delete"]);
    assert_eq!(allowed.code, 0, "{}{}", allowed.stdout, allowed.stderr);
    assert!(allowed.stdout.contains("iam_role_policy.codebuild/legacy: Destruction complete after"));
    let names = iam.list_role_policies().role_name("rocm-bake-codebuild").send().await.unwrap();
    assert_eq!(names.policy_names(), ["rocm-bake-nightly"]);
    // The managed policy is reported, never detached.
    assert_eq!(reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]).code, 0);
}

#[tokio::test]
async fn two_thousand_repositories_change_the_runners_boundary_by_nothing_and_its_policy_still_fits() {
    let account = emulator().new_account().await;
    let names: Vec<String> = (0..2000).map(|i| format!("r{i:04}x")).collect();
    let many = desired_file(&small_account(&names.iter().map(String::as_str).collect::<Vec<_>>()));
    let few = desired_file(&small_account(&["r0000x"]));
    assert_eq!(reconcile(&account, &many.path, &["validate"]).code, 0);
    let policy = |desired: &std::path::Path, role: &str| {
        let run = reconcile(&account, desired, &["policy", role, "--account", "123456789012"]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        run.stdout
    };
    assert_eq!(policy(&many.path, "boundary"), policy(&few.path, "boundary"));
    // Too many to name: pushed to by the mark over the registry, and none made by a build.
    let runner = policy(&many.path, "runner");
    assert!(runner.contains("\"arn:aws:ecr:us-east-1:123456789012:repository/*\""), "{runner}");
    assert!(!runner.contains("EcrMakeOnlyTheDeclaredAsReconciles"), "{runner}");
    assert!(policy(&few.path, "runner").contains("EcrMakeOnlyTheDeclaredAsReconciles"));
    assert_eq!(account.requests(), []);
}

#[tokio::test]
async fn the_derived_policy_passes_parliament() {
    let account = emulator().new_account().await;
    let plan = reconcile(&account, &real_desired(), &["plan", "--format", "json"]);
    let plan: Value = serde_json::from_str(&plan.stdout).unwrap();
    let change = plan["resource_changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["address"] == "iam_role_policy.codebuild")
        .unwrap();
    let document = change["change"]["after"]["document"].to_string();
    let parliament = emulator_python().with_file_name("parliament");
    // Every auditor, community ones included (the credentials-exposure check is one), at every severity.
    let output = Command::new(&parliament)
        .args(["--json", "--include-community-auditors", "--minimum_severity", "INFO", "--string", &document])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    // It exits 1 when it finds something, and says why on stderr when it fails.
    assert!(output.status.code().is_some_and(|c| c <= 1), "{}", String::from_utf8_lossy(&output.stderr));
    let findings: Vec<Value> =
        String::from_utf8(output.stdout).unwrap().lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let issues: Vec<(&str, &str)> = findings
        .iter()
        .map(|f| (f["issue"].as_str().unwrap(), f["location"]["actions"][0].as_str().unwrap_or_default()))
        .collect();
    assert_eq!(issues, [("CREDENTIALS_EXPOSURE", "ecr:getauthorizationtoken")], "{findings:#?}");
}

#[tokio::test]
async fn a_bucket_outside_us_east_1_is_created_in_its_region_and_converges() {
    let account = emulator().new_account().await;
    let text = small_account(&["pytorch"]).replace("region = \"us-east-1\"", "region = \"eu-west-1\"");
    let desired = desired_file(&text);
    let apply = reconcile(&account, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    let config = aws_config::SdkConfig::builder()
        .behavior_version(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new("eu-west-1"))
        .endpoint_url(account.endpoint.clone())
        .credentials_provider(account.sdk_config().credentials_provider().unwrap())
        .build();
    let s3 = s3::Client::from_conf(s3::config::Builder::from(&config).force_path_style(true).build());
    let location = s3.get_bucket_location().bucket(bucket_name(&account)).send().await.unwrap();
    assert_eq!(location.location_constraint().map(|c| c.as_str()), Some("eu-west-1"));
    assert_eq!(reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]).code, 0);
}
