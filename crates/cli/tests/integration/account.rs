//! The whole account from the repository's own desired.toml: an empty account, and the account as
//! it stood on 2026-11-11.

use aws_sdk_ecr as ecr;
use aws_sdk_iam as iam;
use aws_sdk_s3 as s3;
use reconcile_test_support::{TestAccount, emulator};

use crate::support::{real_desired, reconcile, redact};

#[tokio::test]
async fn an_empty_account_is_built_and_a_second_apply_writes_nothing() {
    let account = emulator().new_account().await;
    let desired = real_desired();

    let first = reconcile(&account, &desired, &["apply", "--auto-approve"]);
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    // 27 repositories and their policies, the bucket and its lifecycle, the role with its policy
    // and its boundary, the runner project and its webhook, GitHub's identity provider and the
    // three CI roles with their policies.
    assert!(first.stdout.contains("Plan: 68 to add, 0 to change, 0 to destroy."), "{}", first.stdout);
    assert!(first.stdout.contains("Apply complete! Resources: 68 created, 0 updated, 0 deleted."));

    let config = account.sdk_config();
    let client = ecr::Client::new(&config);
    let repositories = client.describe_repositories().send().await.unwrap().repositories.unwrap_or_default();
    assert_eq!(repositories.len(), 27);
    for repository in &repositories {
        let name = repository.repository_name().unwrap();
        let policy = client.get_lifecycle_policy().repository_name(name).send().await.unwrap();
        let policy: serde_json::Value = serde_json::from_str(policy.lifecycle_policy_text().unwrap()).unwrap();
        assert_eq!(policy["rules"].as_array().unwrap().len(), 1, "{name}");
        assert_eq!(
            policy["rules"][0]["selection"],
            serde_json::json!({"tagStatus": "untagged", "countType": "imageCountMoreThan", "countNumber": 3}),
            "{name}"
        );
    }
    let bucket = format!("rocm-bake-sccache-{}", account.id);
    let s3 = s3::Client::from_conf(s3::config::Builder::from(&config).force_path_style(true).build());
    let rules = s3.get_bucket_lifecycle_configuration().bucket(&bucket).send().await.unwrap();
    assert_eq!(rules.rules()[0].expiration().and_then(|e| e.days()), Some(30));
    assert_eq!(rules.rules()[0].id(), Some("expire-after-30-days"));
    let iam = iam::Client::new(&config);
    iam.get_role_policy().role_name("rocm-bake-codebuild").policy_name("rocm-bake-nightly").send().await.unwrap();

    let writes_after_first_apply = account.writes();
    let plan = reconcile(&account, &desired, &["plan", "--detailed-exitcode"]);
    assert_eq!(plan.code, 0, "{}{}", plan.stdout, plan.stderr);
    assert!(plan.stdout.ends_with("No changes. The account matches the desired state.\n"));

    let second = reconcile(&account, &desired, &["apply", "--auto-approve"]);
    assert_eq!(second.code, 0, "{}{}", second.stdout, second.stderr);
    assert_eq!(account.writes(), writes_after_first_apply, "the second plan and apply must not write");
}

#[tokio::test]
async fn the_account_of_2026_11_11_is_planned_applied_and_converges() {
    let account = emulator().new_account().await;
    let desired = real_desired();
    account.seed_2026_11_11(&desired);
    // The bake file desired.toml names points at the account's registry, as the nightly sets it.
    let registry = format!("{}.dkr.ecr.us-east-1.amazonaws.com", account.id);
    let reconcile = |account: &TestAccount, desired: &std::path::Path, args: &[&str]| {
        crate::support::reconcile_with(account, desired, args, &[("ECR_REGISTRY", registry.as_str())])
    };

    let plan = reconcile(&account, &desired, &["plan", "--detailed-exitcode"]);
    assert_eq!(plan.code, 2, "{}", plan.stderr);
    insta::assert_snapshot!("plan_2026_11_11_text", redact(&plan.stdout, &account));

    let json = reconcile(&account, &desired, &["plan", "--format", "json"]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    insta::assert_snapshot!("plan_2026_11_11_json", redact(&json.stdout, &account));

    let before_apply = account.writes().len();
    let apply = reconcile(&account, &desired, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}", apply.stderr);
    // Changes run concurrently, so their progress lines come in any order: sort them.
    let (mut progress, summary): (Vec<&str>, Vec<&str>) = apply
        .stdout
        .lines()
        .skip_while(|line| !line.ends_with("..."))
        .filter(|line| !line.is_empty())
        .partition(|line| !line.starts_with("Apply "));
    progress.sort();
    let report = format!("{}\n\n{}", progress.join("\n"), summary.join("\n"));
    insta::assert_snapshot!("apply_2026_11_11", redact(&report, &account));
    let mut writes: Vec<String> = account.writes()[before_apply..].iter().map(ToString::to_string).collect();
    writes.sort();
    // The account had no CI identities then: this first apply (an administrator's) makes them.
    assert_eq!(
        writes,
        [
            "ecr:PutLifecyclePolicy",
            "ecr:PutLifecyclePolicy",
            "ecr:PutLifecyclePolicy",
            "iam:CreateOpenIDConnectProvider",
            "iam:CreatePolicy",
            "iam:CreateRole",
            "iam:CreateRole",
            "iam:CreateRole",
            "iam:PutRolePermissionsBoundary",
            "iam:PutRolePolicy",
            "iam:PutRolePolicy",
            "iam:PutRolePolicy",
            "iam:PutRolePolicy",
        ],
        "exactly the three lifecycle policies, the role's policy and boundary, and the CI identities are written"
    );

    let again = reconcile(&account, &desired, &["plan", "--detailed-exitcode"]);
    assert_eq!(again.code, 0, "{}{}", again.stdout, again.stderr);
    assert!(again.stdout.contains("No changes."));
}

#[tokio::test]
async fn plan_reads_only_and_reads_each_thing_once() {
    let account = emulator().new_account().await;
    let desired = real_desired();
    account.seed_2026_11_11(&desired);
    let before = account.requests().len();
    let plan = reconcile(&account, &desired, &["plan"]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    let requests = &account.requests()[before..];
    assert!(requests.iter().all(|r| !r.is_write()), "{requests:?}");
    let mut counts = std::collections::BTreeMap::new();
    for request in requests {
        *counts.entry(request.to_string()).or_insert(0) += 1;
    }
    // The binary counts the same requests itself, by operation, and says so with -v.
    let verbose = reconcile(&account, &desired, &["plan", "-v"]);
    assert!(verbose.stderr.contains(&format!("plan: {} AWS requests: ", requests.len())), "{}", verbose.stderr);
    assert!(verbose.stderr.contains("ECR:GetLifecyclePolicy 27"), "{}", verbose.stderr);

    let bucket = format!("/rocm-bake-sccache-{}/", account.id);
    // One batched describe for all 27 repositories, then one lifecycle policy, one repository
    // policy and one tag read each; one HeadBucket for the bucket and its lifecycle, then one read
    // per bucket setting (tags, Block Public Access, encryption, policy, Object Ownership, ACL,
    // versioning, replication, website, logging, lifecycle); one GetRole for each role and its
    // policy, the runner's and the three CI roles (not made yet here: their two lists go out with
    // GetRole and fail with it), the runner's boundary (not made yet: GetPolicy, and its
    // document only once it exists), GitHub's identity provider, and one ListRoles for any other
    // role that trusts it; one BatchGetProjects for the
    // project and its webhook. And the images of the three repositories whose lifecycle policy
    // the plan puts, to say what each policy will expire.
    assert_eq!(
        counts.into_iter().collect::<Vec<_>>(),
        [
            ("codebuild:BatchGetProjects".to_owned(), 1),
            ("ecr:DescribeImages".to_owned(), 3),
            ("ecr:DescribeRepositories".to_owned(), 1),
            ("ecr:GetLifecyclePolicy".to_owned(), 27),
            ("ecr:GetRepositoryPolicy".to_owned(), 27),
            ("ecr:ListTagsForResource".to_owned(), 27),
            ("iam:GetOpenIDConnectProvider".to_owned(), 1),
            ("iam:GetPolicy".to_owned(), 1),
            ("iam:GetRole".to_owned(), 4),
            ("iam:GetRolePolicy".to_owned(), 1),
            ("iam:ListAttachedRolePolicies".to_owned(), 4),
            ("iam:ListRolePolicies".to_owned(), 4),
            ("iam:ListRoles".to_owned(), 1),
            (format!("s3:GET {bucket}"), 11),
            (format!("s3:HEAD {bucket}"), 1),
            ("sts:GetCallerIdentity".to_owned(), 1),
        ]
    );
}
