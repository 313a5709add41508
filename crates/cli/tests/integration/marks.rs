//! Who may write this deployment's mark, from the outside, judged on the live policies an apply
//! leaves as IAM would: the runner's role can neither mark another team's repository nor make one
//! desired.toml does not declare; the CI apply role could mark one (IAM cannot tell a create's
//! tags from tagging one that exists), so a mark it wrote gives nothing a pull request's plan, a
//! CI apply, a prune or a build acts on, and the drift check names it; and two deployments run
//! CI in one account, sharing GitHub's OIDC provider.

use aws_sdk_ecr as ecr;
use aws_sdk_iam as iam;
use reconcile_test_support::{TestAccount, emulator};

use crate::support::{RUNNER, desired_file, reconcile, reconcile_with, small_account};

const MARK: &str = "reconcile:deployment";

/// A small account of deployment `deployment` with the runner and the three CI roles, every name
/// its own.
fn with_ci(deployment: &str, repositories: &[&str]) -> String {
    let ci = crate::ci::CI.replace("rocm-bake-reconcile", &format!("{deployment}-reconcile"));
    format!("{}{RUNNER}{ci}", small_account(repositories))
        .replace("region = \"us-east-1\"\n", &format!("region = \"us-east-1\"\ndeployment = \"{deployment}\"\n"))
        .replace("rocm-bake-sccache-${account_id}", &format!("{deployment}-sccache-${{account_id}}"))
        .replace("rocm-bake-codebuild", &format!("{deployment}-codebuild"))
        .replace("rocm-bake-nightly", &format!("{deployment}-nightly"))
        .replace("name = \"rocm-bake\"\n", &format!("name = \"{deployment}\"\n"))
}

fn tag(key: &str, value: &str) -> ecr::types::Tag {
    ecr::types::Tag::builder().key(key).value(value).build().unwrap()
}

/// The error code AWS answered with.
fn denied(error: impl ecr::error::ProvideErrorMetadata) -> String {
    error.code().unwrap_or_default().to_owned()
}

fn arn(account: &TestAccount, name: &str) -> String {
    format!("arn:aws:ecr:us-east-1:{}:repository/{name}", account.id)
}

/// A repository's policy, lifecycle policy and tags, as the account holds them.
async fn held(ecr: &ecr::Client, account: &TestAccount, name: &str) -> (String, String, Vec<(String, String)>) {
    let policy = ecr.get_repository_policy().repository_name(name).send().await.unwrap();
    let lifecycle = ecr.get_lifecycle_policy().repository_name(name).send().await.unwrap();
    let tags = ecr.list_tags_for_resource().resource_arn(arn(account, name)).send().await.unwrap();
    let mut tags: Vec<(String, String)> =
        tags.tags().iter().map(|t| (t.key().to_owned(), t.value().to_owned())).collect();
    tags.sort();
    (
        policy.policy_text().unwrap_or_default().to_owned(),
        lifecycle.lifecycle_policy_text().unwrap_or_default().to_owned(),
        tags,
    )
}

const PARTNER: &str = "210987654321";
const OWNER: &str = "teamy.release@example.com";

/// Another team's repository, made by hand: its tags, a partner's pull, 500 untagged kept.
async fn another_teams(ecr: &ecr::Client, name: &str) {
    ecr.create_repository()
        .repository_name(name)
        .tags(tag("team", "y"))
        .tags(tag("owner", OWNER))
        .send()
        .await
        .unwrap();
    let policy = serde_json::json!({
        "Version": "2012-10-17",
        "Statement": [{ "Sid": "Partner", "Effect": "Allow", "Principal": { "AWS": format!("arn:aws:iam::{PARTNER}:root") }, "Action": ["ecr:BatchGetImage"] }],
    });
    ecr.set_repository_policy().repository_name(name).policy_text(policy.to_string()).send().await.unwrap();
    let keep = r#"{"rules":[{"rulePriority":1,"selection":{"tagStatus":"untagged","countType":"imageCountMoreThan","countNumber":500},"action":{"type":"expire"}}]}"#;
    ecr.put_lifecycle_policy().repository_name(name).lifecycle_policy_text(keep).send().await.unwrap();
}

#[tokio::test]
async fn no_role_reconcile_grants_makes_another_teams_repository_this_deployments() {
    let account = emulator().new_account().await;
    let main = desired_file(&with_ci("rocm-bake", &["pytorch", "pytorch-cache"]));
    let applied = reconcile(&account, &main.path, &["apply", "--auto-approve"]);
    assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);
    let ecr = ecr::Client::new(&account.sdk_config());
    another_teams(&ecr, "teamy/release").await;
    ecr.create_repository().repository_name("teamy/empty-staging").send().await.unwrap();
    let before = held(&ecr, &account, "teamy/release").await;

    // The runner's role, where strangers' code runs, held to its live policies and boundary.
    let (runner, gate) = crate::permissions::enforced(&account, "rocm-bake-codebuild").await;
    let by_runner = ecr::Client::new(&runner.sdk_config());
    let marking = by_runner.tag_resource().resource_arn(arn(&account, "teamy/release")).tags(tag(MARK, "rocm-bake"));
    assert!(denied(marking.send().await.unwrap_err()).contains("AccessDenied"), "marking another team's");
    let squat = by_runner.create_repository().repository_name("teamy/next").tags(tag(MARK, "rocm-bake"));
    assert!(denied(squat.send().await.unwrap_err()).contains("AccessDenied"), "a name desired.toml does not declare");
    // `--ensure-ecr`'s create of a declared repository that is missing still works.
    ecr.delete_repository().repository_name("pytorch-cache").send().await.unwrap();
    by_runner
        .create_repository()
        .repository_name("pytorch-cache")
        .tags(tag(MARK, "rocm-bake"))
        .send()
        .await
        .expect("the runner makes a declared repository, marked");
    assert_eq!(gate.refused().len(), 2, "{:#?}", gate.refused());
    drop(gate);

    // The CI apply role: IAM cannot tell a create's tags from marking one that exists, and naming
    // the repositories would make every bake target an administrator's change; it may mark.
    // What it can never do is delete one.
    let (apply_role, gate) = crate::permissions::enforced(&account, "rocm-bake-reconcile-apply").await;
    let by_apply = ecr::Client::new(&apply_role.sdk_config());
    for name in ["teamy/release", "teamy/empty-staging"] {
        by_apply.tag_resource().resource_arn(arn(&account, name)).tags(tag(MARK, "rocm-bake")).send().await.unwrap();
    }
    let deleted = by_apply.delete_repository().repository_name("teamy/empty-staging").send().await.unwrap_err();
    assert!(denied(deleted).contains("AccessDenied"));
    drop(gate);

    // A mark so written gives nothing. A build cannot push to either (the runner's push is by
    // name too), nor to what the mark names among the declared.
    let names = vec!["teamy/release".to_owned(), "teamy/empty-staging".to_owned(), "pytorch".to_owned()];
    assert_eq!(crate::support::pushable(&account, &names).await, ["pytorch".to_owned()].into());
    // A pull request that declares it: none of its values in its public plan, in any format.
    let main_text = std::fs::read_to_string(&main.path).unwrap();
    let pull = desired_file(&main_text.replace("pytorch = {}\n", "pytorch = {}\n\"teamy/release\" = {}\n"));
    let base = main.path.to_str().unwrap();
    for format in ["text", "json", "markdown", "terraform-json"] {
        let public = reconcile(&account, &pull.path, &["plan", "--public", "--base", base, "--format", format]);
        assert_eq!(public.code, 3, "{format}: {}{}", public.stdout, public.stderr);
        for value in [PARTNER, OWNER, "500"] {
            assert!(!shows(&public.stdout, value), "{format} shows {value}: {}", public.stdout);
        }
        if format == "text" {
            assert!(public.stdout.contains("[W602] ecr_repository.teamy/release"), "{}", public.stdout);
            assert!(public.stdout.contains("marked by someone else"), "{}", public.stdout);
        }
    }
    // A public prune names it by its address alone: nothing it holds, in any format.
    for format in ["text", "json", "markdown", "terraform-json"] {
        let args = ["plan", "--public", "--prune", "--base", base, "--format", format];
        let public = reconcile(&account, &main.path, &args);
        assert!(public.stdout.contains("ecr_repository.teamy/release"), "{format}: {}{}", public.stdout, public.stderr);
        for value in [PARTNER, OWNER, "\"y\""] {
            assert!(!shows(&public.stdout, value), "{format}'s prune shows {value}: {}", public.stdout);
        }
    }
    // The CI apply role's apply of the default branch leaves it as it was, and its prune
    // deletes nothing: deleting a repository is an administrator's.
    let ci = account.assume("rocm-bake-reconcile-apply").await;
    let apply = reconcile(&ci, &main.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    let ci = account.assume("rocm-bake-reconcile-apply").await;
    let prune = reconcile(&ci, &main.path, &["apply", "--prune", "--allow-delete", "--auto-approve"]);
    assert_eq!(prune.code, 2, "left for an administrator: {}{}", prune.stdout, prune.stderr);
    assert!(prune.stderr.contains("which the mark alone cannot tell from another team's"), "{}", prune.stderr);
    assert!(ci.writes().is_empty(), "{:?}", ci.writes());
    assert_eq!(held(&ecr, &account, "teamy/release").await.0, before.0, "its policy");
    assert_eq!(held(&ecr, &account, "teamy/release").await.1, before.1, "its lifecycle");
    let tags = held(&ecr, &account, "teamy/release").await.2;
    assert!(
        tags.contains(&("owner".to_owned(), OWNER.to_owned())) && tags.contains(&("team".to_owned(), "y".to_owned()))
    );
    assert!(ecr.describe_repositories().repository_names("teamy/empty-staging").send().await.is_ok());
    // The drift check names both, as marked and not declared (privately; a public page counts).
    let drift = reconcile(&account, &main.path, &["drift"]);
    assert_eq!(drift.code, 2, "{}{}", drift.stdout, drift.stderr);
    for name in ["teamy/release", "teamy/empty-staging"] {
        assert!(drift.stdout.contains(&format!("[D109] ecr_repository.{name}")), "{name}: {}", drift.stdout);
    }
    let public = reconcile_with(&account, &main.path, &["drift"], &[("GITHUB_ACTIONS", "true")]);
    assert!(!public.stdout.contains("teamy/"), "{}", public.stdout);
    assert!(public.stdout.contains("[D109] 2 finding(s) of this code"), "{}", public.stdout);

    // A bake target added still applies as the CI apply role: the repository made, and the
    // runner's inline policy, which names it, put within the runner's boundary.
    let added = desired_file(&main_text.replace("pytorch = {}\n", "pytorch = {}\nvllm = {}\n"));
    let ci = account.assume("rocm-bake-reconcile-apply").await;
    let apply = reconcile(&ci, &added.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    let written: Vec<String> = ci.writes().iter().map(|w| w.action.clone()).collect();
    assert!(
        written.contains(&"CreateRepository".to_owned()) && written.contains(&"PutRolePolicy".to_owned()),
        "{written:?}"
    );
    let names = vec!["vllm".to_owned(), "teamy/release".to_owned()];
    assert_eq!(crate::support::pushable(&account, &names).await, ["vllm".to_owned()].into());
    let plan = reconcile(&account, &added.path, &["plan", "--detailed-exitcode"]);
    assert_eq!(plan.code, 0, "{}{}", plan.stdout, plan.stderr);
}

#[tokio::test]
async fn two_deployments_run_ci_in_one_account_sharing_githubs_identity_provider() {
    let account = emulator().new_account().await;
    let first = desired_file(&with_ci("rocm-bake", &["pytorch"]));
    let second = desired_file(&with_ci("team-b", &["\"team-b/app\""]));
    let made = reconcile(&account, &first.path, &["apply", "--auto-approve"]);
    assert_eq!(made.code, 0, "{}{}", made.stdout, made.stderr);
    // The second uses the provider the first made, as it is: no W601, nothing of it changed.
    let plan = reconcile(&account, &second.path, &["plan"]);
    assert_eq!(plan.code, 0, "{}{}", plan.stdout, plan.stderr);
    assert!(!plan.stdout.contains("W601") && !plan.stdout.contains("iam_oidc_provider.github will"), "{}", plan.stdout);
    assert!(
        plan.stdout.contains("[W607] iam_oidc_provider.github") && plan.stdout.contains("deployment `rocm-bake`'s"),
        "{}",
        plan.stdout
    );
    let made = reconcile(&account, &second.path, &["apply", "--auto-approve"]);
    assert_eq!(made.code, 0, "{}{}", made.stdout, made.stderr);
    // Each plan is clean after the other's apply, and each CI runs: its plan role plans, its apply
    // role applies (nothing to do).
    for (desired, deployment) in [(&first, "rocm-bake"), (&second, "team-b")] {
        let plan = reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]);
        assert_eq!(plan.code, 0, "{deployment}: {}{}", plan.stdout, plan.stderr);
        let planner = account.assume(&format!("{deployment}-reconcile-plan")).await;
        let plan = reconcile(&planner, &desired.path, &["plan", "--detailed-exitcode"]);
        assert_eq!(plan.code, 0, "{deployment}'s plan role: {}{}", plan.stdout, plan.stderr);
        let applier = account.assume(&format!("{deployment}-reconcile-apply")).await;
        let apply = reconcile(&applier, &desired.path, &["apply", "--auto-approve"]);
        assert_eq!(apply.code, 0, "{deployment}'s apply role: {}{}", apply.stdout, apply.stderr);
    }
    // Each one's drift check on its clean account passes and opens no issue: the other's
    // repository and CI roles carry the other's mark, so they are counted as its (W609), never
    // this one's drift.
    let repository = reconcile_test_support::github::github().new_repository();
    let token = format!("ghs_{}", repository.replace('/', "_"));
    reconcile_test_support::github::github().workflow_token(&token, false);
    let endpoint = reconcile_test_support::github::github().endpoint().to_owned();
    let issue = [
        ("GITHUB_API_URL", endpoint.as_str()),
        ("GITHUB_REPOSITORY", repository.as_str()),
        ("RECONCILE_ISSUE_TOKEN", token.as_str()),
    ];
    for (desired, other) in [(&first, "team-b"), (&second, "rocm-bake")] {
        let args = ["drift", "--private", "--format", "json", "--issue", "reconcile-drift"];
        let drift = reconcile_with(&account, &desired.path, &args, &issue);
        assert_eq!(drift.code, 0, "{other}'s neighbour: {}{}", drift.stdout, drift.stderr);
        assert!(drift.stderr.contains("no drift, and no open drift issue: nothing to say"), "{}", drift.stderr);
        assert_eq!(reconcile_test_support::github::github().state(&repository)["issues"], serde_json::json!([]));
        let plan: serde_json::Value = serde_json::from_str(&drift.stdout).unwrap();
        let codes: Vec<&str> =
            plan["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap()).collect();
        assert_eq!(codes.iter().filter(|c| **c == "W609").count(), 4, "a repository and three CI roles: {codes:?}");
        assert!(!codes.contains(&"D101") && !codes.contains(&"D107"), "{codes:?}");
        let theirs = format!("carries deployment `{other}`'s mark: it is that deployment's");
        assert!(drift.stdout.contains(&theirs), "{}", drift.stdout);
    }
    // An unmarked repository and role are still drift, for both.
    let ecr = ecr::Client::new(&account.sdk_config());
    ecr.create_repository().repository_name("nobodys").send().await.unwrap();
    for desired in [&first, &second] {
        let drift = reconcile(&account, &desired.path, &["drift", "--private"]);
        assert_eq!(drift.code, 2, "{}{}", drift.stdout, drift.stderr);
        assert!(drift.stdout.contains("repository `nobodys` is not in desired.toml"), "{}", drift.stdout);
    }
    ecr.delete_repository().repository_name("nobodys").send().await.unwrap();
    // Nor does another deployment's mark hide a repository with no lifecycle policy: anyone who
    // may tag one can write it, and its storage grows without bound (D102, whatever the mark).
    ecr.delete_lifecycle_policy().repository_name("team-b/app").send().await.unwrap();
    let drift = reconcile(&account, &first.path, &["drift", "--private"]);
    assert_eq!(drift.code, 2, "{}{}", drift.stdout, drift.stderr);
    assert!(drift.stdout.contains("[D102] ecr_repository.team-b/app"), "{}", drift.stdout);
    assert_eq!(reconcile(&account, &second.path, &["apply", "--auto-approve"]).code, 0);
    // Another team's audience on it: neither deployment's drift, and never taken off.
    let iam = iam::Client::new(&account.sdk_config());
    let provider = format!("arn:aws:iam::{}:oidc-provider/token.actions.githubusercontent.com", account.id);
    iam.add_client_id_to_open_id_connect_provider()
        .open_id_connect_provider_arn(&provider)
        .client_id("another-teams-audience")
        .send()
        .await
        .unwrap();
    for desired in [&first, &second] {
        let plan = reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]);
        assert_eq!(plan.code, 0, "{}{}", plan.stdout, plan.stderr);
    }
    // The first's destroy leaves the provider, which the second still uses.
    let destroy =
        reconcile(&account, &first.path, &["destroy", "--auto-approve", "--force-delete-images", "--empty-buckets"]);
    assert_eq!(destroy.code, 0, "{}{}", destroy.stdout, destroy.stderr);
    assert!(destroy.stdout.contains("[W604] iam_oidc_provider.github"), "{}", destroy.stdout);
    let live = iam.get_open_id_connect_provider().open_id_connect_provider_arn(&provider).send().await.unwrap();
    let mut audiences = live.client_id_list().to_vec();
    audiences.sort();
    assert_eq!(audiences, ["another-teams-audience", "sts.amazonaws.com"]);
    let plan = reconcile(&account, &second.path, &["plan", "--detailed-exitcode"]);
    assert_eq!(plan.code, 0, "{}{}", plan.stdout, plan.stderr);
    let applier = account.assume("team-b-reconcile-apply").await;
    let apply = reconcile(&applier, &second.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);

    // The provider as a reconcile from before the mark left it (`managed-by = reconcile`), with
    // another team's tag: that says some deployment made it, not which, so no deployment
    // re-marks it on its own; it is used as it is (W607) until one imports it.
    iam.untag_open_id_connect_provider().open_id_connect_provider_arn(&provider).tag_keys(MARK).send().await.unwrap();
    let tag = |key: &str, value: &str| iam::types::Tag::builder().key(key).value(value).build().unwrap();
    iam.tag_open_id_connect_provider()
        .open_id_connect_provider_arn(&provider)
        .tags(tag("managed-by", "reconcile"))
        .tags(tag("owner", "platform"))
        .send()
        .await
        .unwrap();
    let tags = || async {
        let live = iam.list_open_id_connect_provider_tags().open_id_connect_provider_arn(&provider).send().await;
        let mut tags: Vec<String> = live.unwrap().tags().iter().map(|t| format!("{}={}", t.key(), t.value())).collect();
        tags.sort();
        tags
    };
    let before = tags().await;
    assert!(before.contains(&"owner=platform".to_owned()) && !before.iter().any(|t| t.starts_with(MARK)));
    let plan = reconcile(&account, &second.path, &["plan", "--detailed-exitcode"]);
    assert_eq!(plan.code, 0, "used as it is: {}{}", plan.stdout, plan.stderr);
    assert!(plan.stdout.contains("[W607] iam_oidc_provider.github") && plan.stdout.contains("before the mark"));
    let apply = reconcile(&account, &second.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    assert_eq!(tags().await, before);
    // Imported, it is taken over as any other, in a plan that says so.
    let importing = desired_file(&format!(
        "import = [\"iam_oidc_provider.github\"]\n{}",
        std::fs::read_to_string(&second.path).unwrap()
    ));
    let plan = reconcile(&account, &importing.path, &["plan"]);
    assert_eq!(plan.code, 0, "{}{}", plan.stdout, plan.stderr);
    assert!(plan.stdout.contains("# iam_oidc_provider.github will be re-marked"), "{}", plan.stdout);
}

/// Whether `text` shows `value` whole: not as digits inside a longer number (a hook's id such as
/// `13025004` holds `500` and says nothing of a lifecycle policy's count).
fn shows(text: &str, value: &str) -> bool {
    let digit = |c: Option<char>| c.is_some_and(|c| c.is_ascii_digit());
    text.match_indices(value).any(|(at, _)| {
        !(value.starts_with(|c: char| c.is_ascii_digit())
            && (digit(text[..at].chars().next_back()) || digit(text[at + value.len()..].chars().next())))
    })
}

/// A pull request that declares another team's repository, which the CI apply role marked as
/// this deployment's, fails its status with W602; merged anyway, the apply workflow's plan has
/// main before the push as its base, so the mark is trusted no more there: W602 again, the job
/// fails, and the repository keeps its tags, policy and lifecycle. A bake target merged the same
/// way (a repository that does not exist yet) is made as ever.
#[tokio::test]
async fn a_declaration_merged_despite_w602_takes_over_nothing_in_the_apply_after_merge() {
    let world = crate::workflows::World::bootstrap().await;
    let account = &world.account;
    let ecr = ecr::Client::new(&account.sdk_config());
    another_teams(&ecr, "teamy/release").await;
    let by_apply = ecr::Client::new(&account.assume("rocm-bake-reconcile-apply").await.sdk_config());
    let marking = by_apply.tag_resource().resource_arn(arn(account, "teamy/release")).tags(tag(MARK, "default"));
    marking.send().await.expect("the apply role may mark it: IAM cannot tell this from a create's tags");
    let before = held(&ecr, account, "teamy/release").await;
    let declaring = |name: &'static str| {
        world.repository.head(move |dir| {
            let desired = dir.join("desired.toml");
            let text = std::fs::read_to_string(&desired).unwrap();
            std::fs::write(&desired, text.replacen("pytorch = {", &format!("\"{name}\" = {{}}\npytorch = {{"), 1))
                .unwrap();
        })
    };

    let merged = declaring("teamy/release");
    let (report, runner) = world.pushed(world.repository.path(), merged.path());
    assert_eq!(report["conclusion"], "failure", "{report:#}");
    let plan = crate::workflows::step(&report, "Plan");
    assert_eq!(plan["outcome"], "failure", "{report:#}");
    let said = format!("{}{}", plan["stdout"].as_str().unwrap(), plan["stderr"].as_str().unwrap());
    assert!(said.contains("[W602] ecr_repository.teamy/release") && said.contains("marked by someone else"), "{said}");
    assert!(said.contains("nor the apply after its merge changes it"), "{said}");
    for value in [PARTNER, OWNER, "500"] {
        assert!(!shows(&said, value), "the public log shows {value}: {said}");
    }
    assert_eq!(crate::workflows::step(&report, "Apply the saved plan")["outcome"], "skipped", "{report:#}");
    assert!(!runner.path().join("workspace/plan.json").exists(), "a refused plan is never saved");
    assert_eq!(held(&ecr, account, "teamy/release").await, before, "its policy, lifecycle and tags");

    // What a merge newly declares that does not exist yet is made, by the same steps.
    let merged = declaring("vllm");
    let (report, _) = world.pushed(world.repository.path(), merged.path());
    assert_eq!(report["conclusion"], "success", "{report:#}");
    assert!(ecr.describe_repositories().repository_names("vllm").send().await.is_ok());
}
