//! Out-of-band changes a hostile or careless hand would make to what desired.toml does not
//! declare: each is drift that `drift` fails on (exit 2), ranked by risk, and apply undoes it.

use aws_sdk_ecr as ecr;
use aws_sdk_iam as iam;
use aws_sdk_s3 as s3;
use reconcile_test_support::{TestAccount, emulator};

use crate::support::{desired_file, json_changes, reconcile, small_account};

/// `drift` fails with exactly these changes, then apply converges and `drift` passes.
fn drift_then_converge(account: &TestAccount, desired: &std::path::Path, what: &str, changes: &[&str]) -> String {
    let drift = reconcile(account, desired, &["drift", "--format", "json"]);
    assert_eq!(drift.code, 2, "{what}: {}{}", drift.stdout, drift.stderr);
    assert_eq!(json_changes(&drift.stdout), changes, "{what}");
    let apply = reconcile(account, desired, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{what}: {}{}", apply.stdout, apply.stderr);
    let again = reconcile(account, desired, &["drift"]);
    assert_eq!(again.code, 0, "{what}: {}{}", again.stdout, again.stderr);
    drift.stdout
}

#[tokio::test]
async fn a_repository_policy_that_lets_the_world_pull_is_drift_and_an_error_finding() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account(&["pytorch"]));
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    let open = r#"{"Version":"2012-10-17","Statement":[{"Sid":"all","Effect":"Allow","Principal":"*","Action":["ecr:BatchGetImage","ecr:GetDownloadUrlForLayer"]}]}"#;
    let client = ecr::Client::new(&account.sdk_config());
    client.set_repository_policy().repository_name("pytorch").policy_text(open).send().await.unwrap();
    let plan = drift_then_converge(&account, &desired.path, "repository policy", &["update ecr_repository.pytorch"]);
    let plan: serde_json::Value = serde_json::from_str(&plan).unwrap();
    assert_eq!(plan["findings"][0]["code"], "S102", "{plan}");
    assert_eq!(plan["findings"][0]["severity"], "error");
}

#[tokio::test]
async fn every_bucket_setting_that_opens_or_bloats_the_cache_is_drift() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account(&["pytorch"]));
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    let client = s3::Client::from_conf(s3::config::Builder::from(&account.sdk_config()).force_path_style(true).build());
    let bucket = format!("rocm-bake-sccache-{}", account.id);
    let update = ["update s3_bucket.sccache"];

    let foreign = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::999999999999:root"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::BUCKET/*"}]}"#
        .replace("BUCKET", &bucket);
    client.put_bucket_policy().bucket(&bucket).policy(foreign).send().await.unwrap();
    let plan = drift_then_converge(&account, &desired.path, "bucket policy", &update);
    assert!(plan.contains("\"S103\""), "{plan}");

    client
        .put_bucket_versioning()
        .bucket(&bucket)
        .versioning_configuration(
            s3::types::VersioningConfiguration::builder().status(s3::types::BucketVersioningStatus::Enabled).build(),
        )
        .send()
        .await
        .unwrap();
    drift_then_converge(&account, &desired.path, "versioning", &update);

    let website = s3::types::WebsiteConfiguration::builder()
        .index_document(s3::types::IndexDocument::builder().suffix("index.html").build().unwrap())
        .build();
    client.put_bucket_website().bucket(&bucket).website_configuration(website).send().await.unwrap();
    drift_then_converge(&account, &desired.path, "website", &update);

    // Access logs shipped to a bucket the log delivery group may write.
    let logs = format!("logs-{}", account.id);
    client.create_bucket().bucket(&logs).send().await.unwrap();
    let writer = s3::types::OwnershipControls::builder()
        .rules(
            s3::types::OwnershipControlsRule::builder()
                .object_ownership(s3::types::ObjectOwnership::ObjectWriter)
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    client.put_bucket_ownership_controls().bucket(&logs).ownership_controls(writer.clone()).send().await.unwrap();
    client.put_bucket_acl().bucket(&logs).acl("log-delivery-write".into()).send().await.unwrap();
    let logging = s3::types::BucketLoggingStatus::builder()
        .logging_enabled(
            s3::types::LoggingEnabled::builder().target_bucket(&logs).target_prefix("sccache/").build().unwrap(),
        )
        .build();
    client.put_bucket_logging().bucket(&bucket).bucket_logging_status(logging).send().await.unwrap();
    drift_then_converge(&account, &desired.path, "access logging", &update);

    // ACLs back on, and the bucket made public-read through one.
    client.put_bucket_ownership_controls().bucket(&bucket).ownership_controls(writer).send().await.unwrap();
    client.put_bucket_acl().bucket(&bucket).acl(s3::types::BucketCannedAcl::PublicRead).send().await.unwrap();
    let plan = drift_then_converge(&account, &desired.path, "public ACL", &update);
    assert!(plan.contains("ACL grant http://acs.amazonaws.com/groups/global/AllUsers READ"), "{plan}");
}

#[tokio::test]
async fn an_administrator_policy_on_the_role_fails_drift_louder_than_an_undeclared_repository() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account(&["pytorch"]));
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    let iam = iam::Client::new(&account.sdk_config());
    let admin = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}"#;
    let policy = iam.create_policy().policy_name("AdministratorAccess").policy_document(admin).send().await.unwrap();
    let arn = policy.policy().unwrap().arn().unwrap().to_owned();
    iam.attach_role_policy().role_name("rocm-bake-codebuild").policy_arn(&arn).send().await.unwrap();
    // An undeclared repository with a policy: a D101 warning.
    let ecr = ecr::Client::new(&account.sdk_config());
    ecr.create_repository().repository_name("stray").send().await.unwrap();
    let keep = r#"{"rules":[{"rulePriority":1,"selection":{"tagStatus":"untagged","countType":"imageCountMoreThan","countNumber":3},"action":{"type":"expire"}}]}"#;
    crate::support::put_lifecycle_policy(&ecr, "stray", keep).await;

    let drift = reconcile(&account, &desired.path, &["drift"]);
    assert_eq!(drift.code, 2, "{}{}", drift.stdout, drift.stderr);
    let findings: Vec<&str> =
        drift.stdout.lines().filter(|l| l.starts_with("Error") || l.starts_with("Warning")).collect();
    assert!(findings[0].starts_with("Error [S101] iam_role.codebuild: managed policy"), "{findings:?}");
    assert!(findings[1].starts_with("Warning [D101] ecr_repository.stray"), "{findings:?}");
    assert!(!drift.stdout.contains("The account matches the desired state"), "{}", drift.stdout);
    assert!(drift.stdout.contains("but the account differs from the desired state"), "{}", drift.stdout);
    let markdown = reconcile(&account, &desired.path, &["drift", "--format", "markdown"]);
    assert_eq!(markdown.code, 2);
    assert!(markdown.stdout.starts_with("### reconcile drift for account"), "{}", markdown.stdout);
    assert!(!markdown.stdout.contains("**No changes**"), "{}", markdown.stdout);
}

#[tokio::test]
async fn a_permissions_boundary_set_out_of_band_is_drift_and_removed() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account(&["pytorch"]));
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    let iam = iam::Client::new(&account.sdk_config());
    let narrow =
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:ListAllMyBuckets","Resource":"*"}]}"#;
    let policy = iam.create_policy().policy_name("boundary").policy_document(narrow).send().await.unwrap();
    let arn = policy.policy().unwrap().arn().unwrap().to_owned();
    iam.put_role_permissions_boundary()
        .role_name("rocm-bake-codebuild")
        .permissions_boundary(&arn)
        .send()
        .await
        .unwrap();
    drift_then_converge(&account, &desired.path, "permissions boundary", &["update iam_role.codebuild"]);
    let role = iam.get_role().role_name("rocm-bake-codebuild").send().await.unwrap();
    assert!(role.role().unwrap().permissions_boundary().is_none());
}
