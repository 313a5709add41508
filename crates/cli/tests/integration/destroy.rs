//! `reconcile destroy`: every declared resource reconcile made deleted, in reverse dependency
//! order, the data in them only when asked; what reconcile did not make refuses the whole destroy.

use aws_sdk_ecr as ecr;
use aws_sdk_s3 as s3;
use reconcile_test_support::{TestAccount, emulator};
use serde_json::Value;

use crate::safety::push;
use crate::support::{desired_file, json_changes, on_a_terminal, reconcile, reconcile_with, small_account_with_runner};

/// The small account with the runner, every resource tagged as reconcile's.
fn tagged() -> String {
    small_account_with_runner(&["\"rocm-bake/pytorch\"", "\"rocm-bake/triton\""])
}

fn bucket(account: &TestAccount) -> String {
    format!("rocm-bake-sccache-{}", account.id)
}

/// What the account holds of the small account, by kind: repositories, buckets, roles, projects.
async fn held(account: &TestAccount) -> Vec<String> {
    let config = account.sdk_config();
    let mut held = Vec::new();
    let repositories = ecr::Client::new(&config).describe_repositories().send().await.unwrap();
    held.extend(repositories.repositories().iter().map(|r| format!("repository {}", r.repository_name().unwrap())));
    let buckets = s3::Client::new(&config).list_buckets().send().await.unwrap();
    held.extend(buckets.buckets().iter().map(|b| format!("bucket {}", b.name().unwrap())));
    let roles = aws_sdk_iam::Client::new(&config).list_roles().send().await.unwrap();
    held.extend(roles.roles().iter().map(|r| format!("role {}", r.role_name())).filter(|r| r.contains("rocm-bake")));
    let policies = aws_sdk_iam::Client::new(&config)
        .list_policies()
        .scope(aws_sdk_iam::types::PolicyScopeType::Local)
        .send()
        .await
        .unwrap();
    held.extend(policies.policies().iter().map(|p| format!("policy {}", p.policy_name().unwrap())));
    let projects = aws_sdk_codebuild::Client::new(&config).list_projects().send().await.unwrap();
    held.extend(projects.projects().iter().map(|p| format!("project {p}")));
    held
}

#[tokio::test]
async fn destroy_deletes_what_reconcile_made_last_made_first_its_data_only_when_asked() {
    let account = emulator().new_account().await;
    let desired = desired_file(&tagged());
    let apply = reconcile(&account, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    let made = held(&account).await;
    push(&ecr::Client::new(&account.sdk_config()), "rocm-bake/pytorch", Some("latest"), 1000, "aa").await;
    let s3 = s3::Client::new(&account.sdk_config());
    for key in ["a", "b"] {
        s3.put_object().bucket(bucket(&account)).key(key).body(vec![0u8; 512].into()).send().await.unwrap();
    }

    // Not on a terminal, it cannot ask.
    let unasked = reconcile(&account, &desired.path, &["destroy"]);
    assert_eq!(unasked.code, 1, "{}", unasked.stderr);
    assert!(unasked.stderr.contains("destroy is not running on a terminal"), "{}", unasked.stderr);

    // The plan: every declared resource deleted, what each holds said.
    let plan = reconcile(&account, &desired.path, &["plan", "--destroy", "--format", "json"]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    let changes = json_changes(&plan.stdout);
    assert!(changes.iter().all(|c| c.starts_with("delete ")), "{changes:?}");
    for address in [
        "ecr_repository.rocm-bake/pytorch",
        "ecr_lifecycle_policy.rocm-bake/pytorch",
        "s3_bucket.sccache",
        "s3_bucket_lifecycle.sccache",
        "iam_role.codebuild",
        "iam_role_policy.codebuild",
        "codebuild_project.runner",
        "codebuild_webhook.runner",
    ] {
        assert!(changes.contains(&format!("delete {address}")), "{address}: {changes:?}");
    }
    let json: Value = serde_json::from_str(&plan.stdout).unwrap();
    let change = |address: &str| {
        json["resource_changes"].as_array().unwrap().iter().find(|c| c["address"] == address).unwrap().clone()
    };
    // The project waits for its webhook; the role for its policy and the project that runs as it.
    assert_eq!(change("codebuild_project.runner")["depends_on"], serde_json::json!(["codebuild_webhook.runner"]));
    let role_waits = change("iam_role.codebuild")["depends_on"].to_string();
    for first in ["iam_role_policy.codebuild", "codebuild_project.runner"] {
        assert!(role_waits.contains(first), "{role_waits}");
    }
    let text = reconcile(&account, &desired.path, &["plan", "--destroy"]);
    assert!(text.stdout.contains("deleting it deletes 2 objects, 1.0 KiB"), "{}", text.stdout);
    assert!(text.stdout.contains("deleting it deletes 1 image, "), "{}", text.stdout);
    assert!(text.stdout.contains("to destroy."), "{}", text.stdout);

    // Images and objects go only with their flags: refused, nothing deleted.
    let refused = reconcile(&account, &desired.path, &["destroy", "--auto-approve"]);
    assert_eq!(refused.code, 3, "{}{}", refused.stdout, refused.stderr);
    assert!(
        refused.stderr.contains("--force-delete-images") && refused.stderr.contains("--empty-buckets"),
        "{}",
        refused.stderr
    );
    let refused = reconcile(&account, &desired.path, &["destroy", "--auto-approve", "--force-delete-images"]);
    assert_eq!(refused.code, 3, "{}{}", refused.stdout, refused.stderr);
    assert!(refused.stderr.contains("--empty-buckets") && !refused.stderr.contains("image(s)"), "{}", refused.stderr);
    assert_eq!(held(&account).await, made, "a refused destroy deletes nothing");

    // On a terminal it asks, and anything but yes deletes nothing.
    let (code, shown) = on_a_terminal(&account, &desired.path, "destroy --force-delete-images --empty-buckets", "no");
    assert_ne!(code, 0, "{shown}");
    assert!(shown.contains("Do you really want to destroy all these resources?"), "{shown}");
    assert_eq!(held(&account).await, made);

    let markdown = reconcile(&account, &desired.path, &["plan", "--destroy", "--format", "markdown"]);
    assert_eq!(markdown.code, 0, "{}", markdown.stderr);
    assert!(markdown.stdout.contains("to destroy"), "{}", markdown.stdout);

    let started = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    let destroy =
        reconcile(&account, &desired.path, &["destroy", "--auto-approve", "--force-delete-images", "--empty-buckets"]);
    assert_eq!(destroy.code, 0, "{}{}", destroy.stdout, destroy.stderr);
    assert!(
        destroy.stdout.contains(&format!("Destroy complete! Resources: {} destroyed.", changes.len())),
        "{}",
        destroy.stdout
    );
    assert_eq!(held(&account).await, Vec::<String>::new(), "{}", destroy.stdout);
    // Under the apply lock, as apply: taken in the bucket before the first delete.
    let requests = account.requests();
    let since: Vec<_> = requests.iter().filter(|r| r.at >= started && r.is_write()).collect();
    let locked = since.iter().position(|r| r.method == "PUT" && r.path.ends_with("reconcile/apply.lock"));
    let first_delete = since.iter().position(|r| r.action.starts_with("Delete") || r.method == "DELETE");
    assert!(matches!((locked, first_delete), (Some(l), Some(d)) if l < d), "{since:#?}");

    // Then every declared resource is one to create, and a second destroy changes nothing.
    let plan = reconcile(&account, &desired.path, &["plan", "--format", "json"]);
    let creates = json_changes(&plan.stdout);
    assert!(creates.iter().all(|c| c.starts_with("create ")), "{creates:?}");
    assert_eq!(creates.len(), changes.len(), "{creates:?} {changes:?}");
    let again = reconcile(&account, &desired.path, &["destroy", "--auto-approve"]);
    assert_eq!(again.code, 0, "{}{}", again.stdout, again.stderr);
    assert!(again.stdout.contains("No changes"), "{}", again.stdout);
}

#[tokio::test]
async fn a_declared_resource_without_reconciles_tag_refuses_the_whole_destroy() {
    let account = emulator().new_account().await;
    let desired = desired_file(&tagged());
    let apply = reconcile(&account, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    // Someone takes the mark off one repository (or made it by hand and desired.toml adopted it).
    let client = ecr::Client::new(&account.sdk_config());
    let arn = client.describe_repositories().repository_names("rocm-bake/triton").send().await.unwrap().repositories()
        [0]
    .repository_arn()
    .unwrap()
    .to_owned();
    client.untag_resource().resource_arn(arn.clone()).tag_keys(crate::support::MARK.0).send().await.unwrap();
    // And it is another team's now: their tag and their partner's access.
    let owner = aws_sdk_ecr::types::Tag::builder().key("owner").value("alice@example.com").build().unwrap();
    client.tag_resource().resource_arn(arn).tags(owner).send().await.unwrap();
    let partner = r#"{"Version":"2012-10-17","Statement":[{"Sid":"Partner","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::210987654321:root"},"Action":"ecr:BatchGetImage"}]}"#;
    client.set_repository_policy().repository_name("rocm-bake/triton").policy_text(partner).send().await.unwrap();
    let made = held(&account).await;

    // A destroy plan made in a GitHub Actions job is public: nothing of their repository in it.
    let public = reconcile_with(
        &account,
        &desired.path,
        &["plan", "--destroy", "--format", "markdown"],
        &[("GITHUB_ACTIONS", "true"), ("GITHUB_EVENT_NAME", "pull_request")],
    );
    assert_eq!(public.code, 3, "{}{}", public.stdout, public.stderr);
    for planted in ["alice@example.com", "210987654321", "Partner"] {
        assert!(!public.stdout.contains(planted) && !public.stderr.contains(planted), "{planted}: {}", public.stdout);
    }
    assert!(public.stdout.contains("W602"), "{}", public.stdout);

    // Another repository of ours, opened to a partner too: a destroy plan says what destroy does
    // with its policy, not what apply would.
    let partnered = r#"{"Version":"2012-10-17","Statement":[{"Sid":"P","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::210987654321:root"},"Action":"ecr:BatchGetImage"}]}"#;
    client.set_repository_policy().repository_name("rocm-bake/pytorch").policy_text(partnered).send().await.unwrap();
    let private = reconcile(&account, &desired.path, &["plan", "--destroy"]);
    assert!(private.stdout.contains("destroy deletes it with the repository"), "{}", private.stdout);
    assert!(!private.stdout.contains("apply removes the policy"), "{}", private.stdout);
    client.delete_repository_policy().repository_name("rocm-bake/pytorch").send().await.unwrap();

    let destroy =
        reconcile(&account, &desired.path, &["destroy", "--auto-approve", "--force-delete-images", "--empty-buckets"]);
    assert_eq!(destroy.code, 3, "{}{}", destroy.stdout, destroy.stderr);
    assert!(destroy.stdout.contains("[W603]") && destroy.stdout.contains("rocm-bake/triton"), "{}", destroy.stdout);
    assert_eq!(held(&account).await, made, "nothing deleted");
}

#[tokio::test]
async fn a_saved_destroy_plan_is_carried_out_by_destroy_alone() {
    let account = emulator().new_account().await;
    let desired = desired_file(&tagged());
    let apply = reconcile(&account, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    let saved = desired.path.with_file_name("destroy.plan.json");
    let plan = reconcile(&account, &desired.path, &["plan", "--destroy", "--out", saved.to_str().unwrap()]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    let said = format!("`reconcile destroy {}` carries out exactly it", saved.display());
    assert!(plan.stderr.contains(&said), "the command that carries it out: {}", plan.stderr);
    let made = held(&account).await;

    let applied = reconcile(&account, &desired.path, &["apply", saved.to_str().unwrap()]);
    assert_eq!(applied.code, 4, "{}{}", applied.stdout, applied.stderr);
    assert!(applied.stderr.contains("`reconcile destroy` carries it out"), "{}", applied.stderr);
    let fresh = desired.path.with_file_name("apply.plan.json");
    reconcile(&account, &desired.path, &["plan", "--out", fresh.to_str().unwrap()]);
    let wrong = reconcile(&account, &desired.path, &["destroy", fresh.to_str().unwrap()]);
    assert_eq!(wrong.code, 4, "{}{}", wrong.stdout, wrong.stderr);
    assert_eq!(held(&account).await, made);

    // Terraform's view of it: every provider resource deleted.
    let terraform = reconcile(&account, &desired.path, &["plan", "--destroy", "--format", "terraform-json"]);
    assert_eq!(terraform.code, 0, "{}", terraform.stderr);
    let view: Value = serde_json::from_str(&terraform.stdout).unwrap();
    let actions: Vec<String> =
        view["resource_changes"].as_array().unwrap().iter().map(|c| c["change"]["actions"].to_string()).collect();
    assert!(!actions.is_empty() && actions.iter().all(|a| a == r#"["delete"]"#), "{actions:?}");

    let destroyed = reconcile(&account, &desired.path, &["destroy", saved.to_str().unwrap()]);
    assert_eq!(destroyed.code, 0, "{}{}", destroyed.stdout, destroyed.stderr);
    assert_eq!(held(&account).await, Vec::<String>::new());
}
