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

/// The account as the setup script left it on 2026-11-11, nothing in it carrying reconcile's
/// mark, taken over as a maintainer adopting reconcile does: the first plan is refused (naming
/// the command that lists what to import), `reconcile import` writes the list (the only lines of
/// desired.toml that change), the plan shows 30 imports and their changes, apply takes them over,
/// and the next plan says "No changes."; `reconcile import` then takes the done imports off.
#[tokio::test]
async fn the_account_of_2026_11_11_is_taken_over_in_one_reviewed_step_and_converges() {
    let account = emulator().new_account().await;
    let copy = crate::support::real_copy();
    let desired = copy.path.clone();
    let original = std::fs::read_to_string(&desired).unwrap();
    account.seed_2026_11_11(&desired);
    // The bake file desired.toml names points at the account's registry, as the nightly sets it.
    let registry = format!("{}.dkr.ecr.us-east-1.amazonaws.com", account.id);
    let reconcile = |account: &TestAccount, desired: &std::path::Path, args: &[&str]| {
        crate::support::reconcile_with(account, desired, args, &[("ECR_REGISTRY", registry.as_str())])
    };

    // Nothing is reconcile's: refused, one W601 per resource, and the way out said.
    let first = reconcile(&account, &desired, &["plan", "--format", "json"]);
    assert_eq!(first.code, 3, "{}", first.stderr);
    let findings: serde_json::Value = serde_json::from_str(&first.stdout).unwrap();
    let mut unmarked: Vec<String> = findings["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "W601" && f["severity"] == "error")
        .map(|f| f["address"].as_str().unwrap().split('.').next().unwrap().to_owned())
        .collect();
    let count = unmarked.len();
    unmarked.sort();
    unmarked.dedup();
    assert_eq!(unmarked, ["codebuild_project", "ecr_repository", "iam_role", "s3_bucket"]);
    assert_eq!(count, 30, "27 repositories, the bucket, the role, the project");
    // It leads with the refusal and the command that resolves it; the 30 findings fold into one.
    let text = reconcile(&account, &desired, &["plan"]);
    let lines: Vec<&str> = text.stdout.lines().collect();
    assert!(lines[2].starts_with("Refused: 30 error findings (W601) stop this plan"), "{}", text.stdout);
    assert!(
        lines[3].starts_with("To resolve it: 30 declared resource(s) exist without deployment `rocm-bake`'s mark.")
            && lines[3].contains("`reconcile import` lists them"),
        "{}",
        text.stdout
    );
    assert_eq!(text.stdout.matches("Error [W601]").count(), 1, "{}", text.stdout);
    assert!(text.stdout.contains("    and 29 more like it: "), "{}", text.stdout);
    assert!(
        text.stderr.ends_with(
            "error: refused: 30 error finding(s) about desired.toml (W601 x30); each says what resolves it, and \
             `reconcile explain W601` says more\n"
        ),
        "one line counts them: {}",
        text.stderr
    );

    // The one step, reviewed: the list is all that changes in desired.toml, and nobody writes it by hand.
    let check = reconcile(&account, &desired, &["import", "--check"]);
    assert_eq!(check.code, 2, "a difference, not an error: {}", check.stderr);
    let written: Vec<&str> = check
        .stdout
        .lines()
        .filter(|l| l.starts_with(['+', '-']) && !l.starts_with("+++") && !l.starts_with("---"))
        .collect();
    assert!(written.iter().all(|line| line.starts_with('+')), "only lines added: {written:#?}");
    assert_eq!(written.iter().filter(|line| line.starts_with("+  \"")).count(), 30, "{}", check.stdout);
    assert_eq!(std::fs::read_to_string(&desired).unwrap(), original, "--check writes nothing");
    let import = crate::support::import(&account, &desired);
    assert!(import.stderr.contains("Listed in"), "{}", import.stderr);
    assert_eq!(import.stderr.lines().filter(|l| l.starts_with("  ")).count(), 30, "{}", import.stderr);

    let plan = reconcile(&account, &desired, &["plan", "--detailed-exitcode"]);
    assert_eq!(plan.code, 2, "{}", plan.stderr);
    assert!(plan.stdout.ends_with("Plan: 30 to import, 10 to add, 5 to change, 0 to destroy.\n"), "{}", plan.stdout);
    insta::assert_snapshot!("plan_2026_11_11_text", redact(&plan.stdout, &account));

    let json = reconcile(&account, &desired, &["plan", "--format", "json"]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let parsed: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(parsed["summary"]["import"], 30);
    let imported = parsed["resource_changes"].as_array().unwrap().iter().filter(|c| c["takeover"] == "import").count();
    assert_eq!(imported, 30);
    insta::assert_snapshot!("plan_2026_11_11_json", redact(&json.stdout, &account));

    let before_apply = account.writes().len();
    let apply = reconcile(&account, &desired, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    assert!(
        apply.stdout.contains("Apply complete! Resources: 30 imported, 10 created, 5 updated, 0 deleted."),
        "{}",
        apply.stdout
    );
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
    writes.dedup_by(|a, b| a == b && a.starts_with("ecr:TagResource"));
    insta::assert_snapshot!("apply_2026_11_11_writes", redact(&writes.join("\n"), &account));

    let again = reconcile(&account, &desired, &["plan", "--detailed-exitcode"]);
    assert_eq!(again.code, 0, "{}{}", again.stdout, again.stderr);
    assert!(again.stdout.ends_with("No changes. The account matches the desired state.\n"), "{}", again.stdout);

    // The imports are done: the list comes off, and desired.toml is what it was.
    let done = crate::support::import(&account, &desired);
    assert!(done.stderr.contains("Taken off"), "{}", done.stderr);
    assert_eq!(std::fs::read_to_string(&desired).unwrap(), original);
    let last = reconcile(&account, &desired, &["plan", "--detailed-exitcode"]);
    assert_eq!(last.code, 0, "{}{}", last.stdout, last.stderr);
}

#[tokio::test]
async fn plan_reads_only_and_reads_each_thing_once() {
    let account = emulator().new_account().await;
    let copy = crate::support::real_copy();
    let desired = copy.path.clone();
    account.seed_2026_11_11(&desired);
    crate::support::import(&account, &desired);
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
            // The project is imported, a change: whether CodeBuild reaches GitHub is checked.
            ("codebuild:ListSourceCredentials".to_owned(), 1),
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
