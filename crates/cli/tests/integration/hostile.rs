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
    log_access(&client, &bucket, &logs, "sccache/").await;
    drift_then_converge(&account, &desired.path, "access logging", &update);

    // ACLs back on, and the bucket made public-read through one.
    client.put_bucket_ownership_controls().bucket(&bucket).ownership_controls(object_writer()).send().await.unwrap();
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
async fn a_permissions_boundary_changed_or_removed_out_of_band_is_drift_and_put_back() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account(&["pytorch"]));
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    let iam = iam::Client::new(&account.sdk_config());
    let derived = format!("arn:aws:iam::{}:policy/rocm-bake-codebuild-boundary", account.id);
    let boundary_of = |iam: iam::Client| async move {
        let role = iam.get_role().role_name("rocm-bake-codebuild").send().await.unwrap();
        role.role().unwrap().permissions_boundary().and_then(|b| b.permissions_boundary_arn()).map(str::to_owned)
    };
    assert_eq!(boundary_of(iam.clone()).await.as_deref(), Some(derived.as_str()), "made bounded");
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
    assert_eq!(boundary_of(iam.clone()).await.as_deref(), Some(derived.as_str()));
    // Removed: the role is unbounded, which is drift, and the boundary goes back on.
    iam.delete_role_permissions_boundary().role_name("rocm-bake-codebuild").send().await.unwrap();
    drift_then_converge(&account, &desired.path, "permissions boundary", &["update iam_role.codebuild"]);
    assert_eq!(boundary_of(iam.clone()).await.as_deref(), Some(derived.as_str()));
    // The boundary's own document widened by hand: a new default version puts it back.
    let wide = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}"#;
    iam.create_policy_version().policy_arn(&derived).policy_document(wide).set_as_default(true).send().await.unwrap();
    drift_then_converge(&account, &desired.path, "document", &["update iam_role_boundary.codebuild"]);
}

/// Changes, out of band, every setting of the small account with its runner
/// (`small_account_with_runner(&["pytorch", "pytorch-cache"])`, applied) that the apply role
/// puts back: the repository's tag mutability, scanning, tags, lifecycle policy and a
/// repository policy; the bucket's policy, versioning, replication, website, logging, Object
/// Ownership, Block Public Access, encryption and tags; the project's description, its visibility
/// and its webhook's filters. The policy test applies it all as the apply role. (What only an
/// administrator puts back is `vandalise_the_runners_role` and `open_and_unexpire_the_cache`.)
pub async fn vandalise_all_but_iam(account: &TestAccount) {
    let ecr = ecr::Client::new(&account.sdk_config());
    let repository = "pytorch-cache";
    ecr.put_image_tag_mutability()
        .repository_name(repository)
        .image_tag_mutability(ecr::types::ImageTagMutability::Immutable)
        .send()
        .await
        .unwrap();
    ecr.put_image_scanning_configuration()
        .repository_name(repository)
        .image_scanning_configuration(ecr::types::ImageScanningConfiguration::builder().scan_on_push(true).build())
        .send()
        .await
        .unwrap();
    let arn = format!("arn:aws:ecr:us-east-1:{}:repository/{repository}", account.id);
    let tag = |k: &str, v: &str| ecr::types::Tag::builder().key(k).value(v).build().unwrap();
    ecr.tag_resource()
        .resource_arn(&arn)
        .tags(tag("owner", "someone"))
        .tags(tag("project", "other"))
        .send()
        .await
        .unwrap();
    crate::support::put_lifecycle_policy(&ecr, repository, crate::support::OLD_14_DAY_POLICY).await;
    let pull = r#"{"Version":"2012-10-17","Statement":[{"Sid":"x","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::999999999999:root"},"Action":"ecr:BatchGetImage"}]}"#;
    ecr.set_repository_policy().repository_name(repository).policy_text(pull).send().await.unwrap();

    let s3 = s3::Client::from_conf(s3::config::Builder::from(&account.sdk_config()).force_path_style(true).build());
    let bucket = format!("rocm-bake-sccache-{}", account.id);
    let foreign = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::999999999999:root"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::BUCKET/*"}]}"#
        .replace("BUCKET", &bucket);
    s3.put_bucket_policy().bucket(&bucket).policy(foreign).send().await.unwrap();
    let enabled =
        s3::types::VersioningConfiguration::builder().status(s3::types::BucketVersioningStatus::Enabled).build();
    s3.put_bucket_versioning().bucket(&bucket).versioning_configuration(enabled.clone()).send().await.unwrap();
    let copies = format!("copies-{}", account.id);
    s3.create_bucket().bucket(&copies).send().await.unwrap();
    s3.put_bucket_versioning().bucket(&copies).versioning_configuration(enabled).send().await.unwrap();
    let replication = s3::types::ReplicationConfiguration::builder()
        .role(format!("arn:aws:iam::{}:role/replicator", account.id))
        .rules(
            s3::types::ReplicationRule::builder()
                .id("everything")
                .status(s3::types::ReplicationRuleStatus::Enabled)
                .filter(s3::types::ReplicationRuleFilter::builder().prefix("").build())
                .destination(
                    s3::types::Destination::builder().bucket(format!("arn:aws:s3:::{copies}")).build().unwrap(),
                )
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    s3.put_bucket_replication().bucket(&bucket).replication_configuration(replication).send().await.unwrap();
    let website = s3::types::WebsiteConfiguration::builder()
        .index_document(s3::types::IndexDocument::builder().suffix("index.html").build().unwrap())
        .build();
    s3.put_bucket_website().bucket(&bucket).website_configuration(website).send().await.unwrap();
    log_access(&s3, &bucket, &copies, "x/").await;
    s3.put_bucket_ownership_controls().bucket(&bucket).ownership_controls(object_writer()).send().await.unwrap();
    s3.delete_public_access_block().bucket(&bucket).send().await.unwrap();
    let kms = s3::types::ServerSideEncryptionByDefault::builder()
        .sse_algorithm(s3::types::ServerSideEncryption::AwsKms)
        .build()
        .unwrap();
    let sse = s3::types::ServerSideEncryptionConfiguration::builder()
        .rules(s3::types::ServerSideEncryptionRule::builder().apply_server_side_encryption_by_default(kms).build())
        .build()
        .unwrap();
    s3.put_bucket_encryption().bucket(&bucket).server_side_encryption_configuration(sse).send().await.unwrap();
    // The whole set replaced, as S3's tagging does, by someone who kept the mark (a console shows
    // it among the tags): still reconcile's, its tags drift.
    let tagging = s3::types::Tagging::builder()
        .tag_set(s3::types::Tag::builder().key("owner").value("someone").build().unwrap())
        .tag_set(s3::types::Tag::builder().key(crate::support::MARK.0).value(crate::support::MARK.1).build().unwrap())
        .build()
        .unwrap();
    s3.put_bucket_tagging().bucket(&bucket).tagging(tagging).send().await.unwrap();

    let codebuild = aws_sdk_codebuild::Client::new(&account.sdk_config());
    codebuild.update_project().name("rocm-bake").description("changed by hand").send().await.unwrap();
    codebuild
        .update_project_visibility()
        .project_arn(format!("arn:aws:codebuild:us-east-1:{}:project/rocm-bake", account.id))
        .project_visibility(aws_sdk_codebuild::types::ProjectVisibilityType::PublicRead)
        .send()
        .await
        .unwrap();
    let any_event = aws_sdk_codebuild::types::WebhookFilter::builder()
        .r#type(aws_sdk_codebuild::types::WebhookFilterType::Event)
        .pattern("WORKFLOW_JOB_QUEUED")
        .build()
        .unwrap();
    codebuild.update_webhook().project_name("rocm-bake").filter_groups(vec![any_event]).send().await.unwrap();
}

/// Every setting of the runner's role changed by hand (its trust, description, session length,
/// tags, inline policies and boundary): what only an administrator puts back.
pub async fn vandalise_the_runners_role(account: &TestAccount) {
    let iam = iam::Client::new(&account.sdk_config());
    let role = "rocm-bake-codebuild";
    let wider = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":["codebuild.amazonaws.com","ec2.amazonaws.com"]},"Action":"sts:AssumeRole"}]}"#;
    iam.update_assume_role_policy().role_name(role).policy_document(wider).send().await.unwrap();
    iam.update_role().role_name(role).description("changed by hand").max_session_duration(7200).send().await.unwrap();
    let tag = |k: &str, v: &str| iam::types::Tag::builder().key(k).value(v).build().unwrap();
    iam.tag_role().role_name(role).tags(tag("owner", "someone")).tags(tag("project", "other")).send().await.unwrap();
    crate::support::put_legacy_inline_policy(account).await;
    let names = iam.list_role_policies().role_name(role).send().await.unwrap().policy_names;
    let derived = names.iter().find(|n| *n != "legacy").unwrap();
    let narrow =
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:ListAllMyBuckets","Resource":"*"}]}"#;
    iam.put_role_policy().role_name(role).policy_name(derived).policy_document(narrow).send().await.unwrap();
    let boundary = iam.create_policy().policy_name("boundary").policy_document(narrow).send().await.unwrap();
    iam.put_role_permissions_boundary()
        .role_name(role)
        .permissions_boundary(boundary.policy().unwrap().arn().unwrap())
        .send()
        .await
        .unwrap();
}

/// Opens the compiler cache's bucket to everyone through its ACL (ACLs on first) and removes
/// its expiry, out of band: what only an administrator puts back.
pub async fn open_and_unexpire_the_cache(account: &TestAccount) {
    let s3 = s3::Client::from_conf(s3::config::Builder::from(&account.sdk_config()).force_path_style(true).build());
    let bucket = format!("rocm-bake-sccache-{}", account.id);
    s3.put_bucket_ownership_controls().bucket(&bucket).ownership_controls(object_writer()).send().await.unwrap();
    s3.put_bucket_acl().bucket(&bucket).acl(s3::types::BucketCannedAcl::PublicRead).send().await.unwrap();
    s3.delete_bucket_lifecycle().bucket(&bucket).send().await.unwrap();
}

/// Deletes, out of band, the repository `pytorch` and the project: the apply role makes each
/// again. (Not the bucket, which one that declares an expiry is made with, nor the runner's role,
/// whose trust comes with it: an administrator makes those.)
pub async fn remove_everything(account: &TestAccount) {
    ecr::Client::new(&account.sdk_config())
        .delete_repository()
        .repository_name("pytorch")
        .force(true)
        .send()
        .await
        .unwrap();
    aws_sdk_codebuild::Client::new(&account.sdk_config()).delete_project().name("rocm-bake").send().await.unwrap();
}

/// Makes the runner's webhook again by hand, as one created in the console is (manual creation),
/// which only replacing it undoes.
pub async fn remake_the_webhook_by_hand(account: &TestAccount) {
    let codebuild = aws_sdk_codebuild::Client::new(&account.sdk_config());
    codebuild.delete_webhook().project_name("rocm-bake").send().await.unwrap();
    let event = aws_sdk_codebuild::types::WebhookFilter::builder()
        .r#type(aws_sdk_codebuild::types::WebhookFilterType::Event)
        .pattern("WORKFLOW_JOB_QUEUED")
        .build()
        .unwrap();
    codebuild
        .create_webhook()
        .project_name("rocm-bake")
        .manual_creation(true)
        .filter_groups(vec![event])
        .send()
        .await
        .unwrap();
}

/// Object ownership that leaves ACLs in force (S3's default since 2023 turns them off).
fn object_writer() -> s3::types::OwnershipControls {
    let rule = s3::types::OwnershipControlsRule::builder()
        .object_ownership(s3::types::ObjectOwnership::ObjectWriter)
        .build()
        .unwrap();
    s3::types::OwnershipControls::builder().rules(rule).build().unwrap()
}

/// `bucket`'s access logs shipped to `logs` under `prefix`, `logs` made writable by S3's log
/// delivery group as the logging API requires.
async fn log_access(s3: &s3::Client, bucket: &str, logs: &str, prefix: &str) {
    s3.put_bucket_ownership_controls().bucket(logs).ownership_controls(object_writer()).send().await.unwrap();
    s3.put_bucket_acl().bucket(logs).acl("log-delivery-write".into()).send().await.unwrap();
    let target = s3::types::LoggingEnabled::builder().target_bucket(logs).target_prefix(prefix).build().unwrap();
    let logging = s3::types::BucketLoggingStatus::builder().logging_enabled(target).build();
    s3.put_bucket_logging().bucket(bucket).bucket_logging_status(logging).send().await.unwrap();
}
