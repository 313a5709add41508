//! A pull request's plan is public: another team's repository, role and repository variable,
//! planted in the account, and named by a pull request, reach none of its outputs. Adoption is
//! explicit: a repository someone else made is not taken over by declaring it.

use aws_sdk_ecr as ecr;
use aws_sdk_iam as iam;
use reconcile_test_support::github::github;
use reconcile_test_support::{TestAccount, emulator};
use serde_json::json;

use crate::safety::push;
use crate::support::{reconcile_in, reconcile_with, small_account_with_runner};
use crate::workflows::{World, step};

/// What the other team keeps in the account: none of it may reach a public output.
const PLANTED: [&str; 8] = [
    "210987654321",              // a partner account, in the repository's policy
    "o-skunk12345",              // an organization id, in the same policy
    "mallory.skunk@example.com", // an owner's e-mail, in its tags
    "CC-7741",                   // a cost centre, in its tags
    "skunk-lifecycle-rule",      // its lifecycle rule's description
    "llm-weights-secret-v9",     // an image tag
    "secret-mi500-bringup",      // the repository a role of theirs trusts
    "build01.internal",          // a repository variable's value
];

const REPOSITORY: &str = "skunkworks/llm-weights";

async fn plant(account: &TestAccount, repository: &str, reader: &str) {
    let config = account.sdk_config();
    let ecr = ecr::Client::new(&config);
    ecr.create_repository()
        .repository_name(REPOSITORY)
        .tags(ecr::types::Tag::builder().key("owner").value("mallory.skunk@example.com").build().unwrap())
        .tags(ecr::types::Tag::builder().key("cost-centre").value("CC-7741").build().unwrap())
        .send()
        .await
        .unwrap();
    let policy = json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Sid": "Partner",
            "Effect": "Allow",
            "Principal": { "AWS": "arn:aws:iam::210987654321:root" },
            "Action": ["ecr:BatchGetImage"],
            "Condition": { "StringEquals": { "aws:PrincipalOrgID": "o-skunk12345" } },
        }],
    });
    ecr.set_repository_policy().repository_name(REPOSITORY).policy_text(policy.to_string()).send().await.unwrap();
    let lifecycle = json!({ "rules": [{
        "rulePriority": 1, "description": "skunk-lifecycle-rule",
        "selection": { "tagStatus": "untagged", "countType": "imageCountMoreThan", "countNumber": 1 },
        "action": { "type": "expire" },
    }]});
    ecr.put_lifecycle_policy()
        .repository_name(REPOSITORY)
        .lifecycle_policy_text(lifecycle.to_string())
        .send()
        .await
        .unwrap();
    push(&ecr, REPOSITORY, Some("llm-weights-secret-v9"), 7_000_000, "5c").await;
    push(&ecr, REPOSITORY, None, 3_000_000, "5d").await;

    let iam = iam::Client::new(&config);
    let trust = json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Principal": { "Federated": format!("arn:aws:iam::{}:oidc-provider/token.actions.githubusercontent.com", account.id) },
            "Action": "sts:AssumeRoleWithWebIdentity",
            "Condition": { "StringEquals": { "token.actions.githubusercontent.com:sub": "repo:ROCm/secret-mi500-bringup:environment:prod" } },
        }],
    });
    iam.create_role().role_name("skunk-ci").assume_role_policy_document(trust.to_string()).send().await.unwrap();

    let (status, _) = github().call(
        "POST",
        &format!("/repos/{repository}/actions/variables"),
        reader,
        &json!({ "name": "INTERNAL_BUILD_HOST", "value": "build01.internal:8443 (vpn only)" }),
    );
    assert!(status < 300, "{status}");
}

/// desired.toml naming every planted thing: the repository, a role of that name, the variable.
fn hostile(desired: &str) -> String {
    let with_repository =
        desired.replacen("[ecr.repositories]\n", &format!("[ecr.repositories]\n\"{REPOSITORY}\" = {{}}\n"), 1);
    let with_variable = if with_repository.contains("[github.variables]\n") {
        with_repository.replacen("[github.variables]\n", "[github.variables]\nINTERNAL_BUILD_HOST = \"x\"\n", 1)
    } else {
        format!("{with_repository}\n[github.variables]\nINTERNAL_BUILD_HOST = \"x\"\n")
    };
    format!(
        "{with_variable}\n[iam.roles.skunk]\nname = \"skunk-ci\"\ntrusted_services = [\"codebuild.amazonaws.com\"]\ntags = {{ managed-by = \"reconcile\" }}\n"
    )
}

fn assert_none_planted(what: &str, text: &str) {
    for value in PLANTED {
        assert!(!text.contains(value), "{what} shows `{value}`:\n{text}");
    }
}

#[tokio::test]
async fn a_pull_request_naming_another_teams_resources_shows_nothing_of_them_and_fails_its_status() {
    let world = World::bootstrap().await;
    let name = world.repository.name.clone();
    plant(&world.account, &name, &world.reader).await;
    let head = world.repository.head(|tree| {
        let desired = std::fs::read_to_string(tree.join("desired.toml")).unwrap();
        std::fs::write(tree.join("desired.toml"), hostile(&desired)).unwrap();
    });
    let sha = "8888888888888888888888888888888888888888";
    let number = github().pull_request(&name, sha, &name);
    let (_check, plan, runner) = world.pull_request(head.path(), number, sha, &name);

    // The trusted job, as the example workflow runs it: the comment, the plan step's output, the
    // job summary.
    let comments = world.comments(number);
    assert_eq!(comments.len(), 1, "{plan:#}");
    let comment = &comments[0];
    assert_none_planted("the comment", comment);
    assert!(comment.contains("W602"), "{comment}");
    assert!(comment.contains("ecr_repository.skunkworks/llm-weights"), "{comment}");
    for report in plan["steps"].as_array().unwrap() {
        for stream in ["stdout", "stderr"] {
            assert_none_planted(&format!("step {} {stream}", report["name"]), report[stream].as_str().unwrap_or(""));
        }
    }
    let summary = std::fs::read_to_string(runner.path().join("temp/summary.md")).unwrap_or_default();
    assert_none_planted("the job summary", &summary);
    let status = world.status(sha);
    assert_eq!(status["state"], "failure", "{status:#}");
    assert_eq!(step(&plan, "Plan")["outcome"], "success");

    // Every format and the saved plan, with and without the base.
    let mut env = world.account.env();
    env.extend([("GITHUB_API_URL", github().endpoint().to_owned()), ("GITHUB_TOKEN", world.reader.clone())]);
    env.push(("RECONCILE_GITHUB_REPOSITORY", name.clone()));
    let base = world.repository.path().join("desired.toml");
    let pull = head.path().join("desired.toml");
    let saved = head.path().join("plan.json");
    let summary = head.path().join("summary.md");
    env.push(("GITHUB_STEP_SUMMARY", summary.display().to_string()));
    for format in ["text", "json", "markdown", "terraform-json"] {
        for with_base in [true, false] {
            let mut args = vec!["plan", "--public", "--format", format, "--out", saved.to_str().unwrap()];
            if with_base {
                args.extend(["--base", base.to_str().unwrap()]);
            }
            let run = reconcile_in(&env, &pull, &args);
            assert_eq!(run.code, 3, "{format}: {}{}", run.stdout, run.stderr);
            assert_none_planted(&format!("plan --format {format} stdout"), &run.stdout);
            assert_none_planted(&format!("plan --format {format} stderr"), &run.stderr);
            assert!(run.stdout.contains("W602"), "{}", run.stdout);
            assert!(!saved.exists(), "a refused plan is not saved");
            assert_none_planted("the job summary", &std::fs::read_to_string(&summary).unwrap_or_default());
        }
    }
    // Implied in a GitHub Actions job, whatever event started it: every one's log is public.
    for event in ["workflow_run", "pull_request", "issue_comment", "pull_request_review_comment", "merge_group", "push"]
    {
        let mut on_event = env.clone();
        on_event.extend([("GITHUB_ACTIONS", "true".to_owned()), ("GITHUB_EVENT_NAME", event.to_owned())]);
        let run = reconcile_in(&on_event, &pull, &["plan", "--format", "json"]);
        assert_eq!(run.code, 3, "{event}: {}{}", run.stdout, run.stderr);
        assert_none_planted(&format!("plan on {event}"), &format!("{}{}", run.stdout, run.stderr));
    }
    // Unless said private (a private repository's job).
    let mut in_actions = env.clone();
    in_actions.push(("GITHUB_ACTIONS", "true".to_owned()));
    let private = reconcile_in(&in_actions, &pull, &["plan", "--private", "--format", "text"]);
    assert!(private.stdout.contains("W601"), "{}", private.stdout);

    // Private, as an administrator runs it: the same plan names them (what the audience hides is
    // really there).
    let private = reconcile_in(&env, &pull, &["plan", "--format", "text"]);
    assert!(
        private.stdout.contains("mallory.skunk@example.com") || private.stdout.contains("cost-centre"),
        "{}",
        private.stdout
    );
    assert!(private.stdout.contains("W601"), "{}", private.stdout);
}

#[tokio::test]
async fn without_ci_and_without_a_token_a_public_plan_still_shows_nothing_of_them() {
    let world = World::bootstrap().await;
    let name = world.repository.name.clone();
    plant(&world.account, &name, &world.reader).await;
    let dir = tempfile::tempdir().unwrap();
    let desired = std::fs::read_to_string(world.repository.path().join("desired.toml")).unwrap();
    let without_ci = hostile(&desired[..desired.find("\n[ci]").unwrap_or(desired.len())]);
    std::fs::write(dir.path().join("desired.toml"), &without_ci).unwrap();
    std::fs::write(dir.path().join("rocm-bake.hcl"), "").unwrap();
    let pull = dir.path().join("desired.toml");
    for format in ["text", "json", "markdown", "terraform-json"] {
        let run = reconcile_with(&world.account, &pull, &["plan", "--public", "--format", format], &[]);
        assert_eq!(run.code, 3, "{format}: {}{}", run.stdout, run.stderr);
        assert_none_planted(&format!("{format} stdout"), &run.stdout);
        assert_none_planted(&format!("{format} stderr"), &run.stderr);
        assert!(run.stdout.contains("W602"), "{}", run.stdout);
    }
    // Saved without the GitHub side desired.toml declares: said not to be applicable, and why.
    let saved = dir.path().join("plan.json");
    let base = world.repository.path().join("desired.toml");
    let run = reconcile_with(&world.account, &base, &["plan", "--out", saved.to_str().unwrap()], &[]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("but apply cannot carry it out: desired.toml declares [github]"), "{}", run.stderr);
    assert!(!run.stderr.contains("carries out exactly it"), "{}", run.stderr);
}

#[tokio::test]
async fn declaring_a_repository_someone_else_made_adopts_it_only_when_told_and_says_what_that_removes() {
    let world = World::bootstrap().await;
    let name = world.repository.name.clone();
    plant(&world.account, &name, &world.reader).await;
    let mut env = world.account.env();
    env.extend([("GITHUB_API_URL", github().endpoint().to_owned()), ("GITHUB_TOKEN", world.reader.clone())]);
    let desired = std::fs::read_to_string(world.repository.path().join("desired.toml")).unwrap();
    let declared =
        desired.replacen("[ecr.repositories]\n", &format!("[ecr.repositories]\n\"{REPOSITORY}\" = {{}}\n"), 1);
    let file = world.repository.path().join("desired.toml");
    std::fs::write(&file, &declared).unwrap();
    let ecr = ecr::Client::new(&world.account.sdk_config());
    let policy = || async {
        ecr.get_repository_policy().repository_name(REPOSITORY).send().await.ok().and_then(|p| p.policy_text)
    };

    // As the CI apply role: refused before any write.
    let apply_role = world.account.assume("rocm-bake-reconcile-apply").await;
    let mut as_apply = apply_role.env();
    as_apply.extend([("GITHUB_API_URL", github().endpoint().to_owned()), ("GITHUB_TOKEN", world.reader.clone())]);
    let refused = reconcile_in(&as_apply, &file, &["apply", "--auto-approve"]);
    assert_eq!(refused.code, 3, "{}{}", refused.stdout, refused.stderr);
    assert!(format!("{}{}", refused.stdout, refused.stderr).contains("W601"), "{}{}", refused.stdout, refused.stderr);
    assert!(apply_role.writes().is_empty(), "{:?}", apply_role.writes());
    assert!(policy().await.is_some(), "its policy is still there");

    // Told to adopt: the plan shows it as an import and says what that removes; the CI apply
    // role still leaves it (taking a resource over is an administrator's), and an
    // administrator's apply does it.
    let adopted =
        declared.replacen(&format!("\"{REPOSITORY}\" = {{}}"), &format!("\"{REPOSITORY}\" = {{ adopt = true }}"), 1);
    std::fs::write(&file, &adopted).unwrap();
    let plan = reconcile_in(&env, &file, &["plan"]);
    assert_eq!(plan.code, 0, "{}{}", plan.stdout, plan.stderr);
    assert!(
        plan.stdout.contains("importing it marks it as `default`'s and removes its `repository_policy` as it is")
            && plan.stdout.contains("its tags `cost-centre`, `owner`"),
        "{}",
        plan.stdout
    );
    assert!(plan.stdout.contains(&format!("# ecr_repository.{REPOSITORY} will be imported")), "{}", plan.stdout);
    assert!(plan.stdout.contains("Plan: 1 to import, "), "{}", plan.stdout);
    // The CI apply role leaves the import, and what depends on it (the runner's policy naming
    // the repository), for an administrator: nothing sent.
    let left = reconcile_in(&as_apply, &file, &["apply", "--auto-approve"]);
    assert_eq!(left.code, 2, "{}{}", left.stdout, left.stderr);
    assert!(left.stderr.contains("taking over a resource reconcile does not own yet"), "{}", left.stderr);
    assert!(
        left.stdout.contains(&format!("Left for an administrator: ecr_repository.{REPOSITORY}")),
        "{}",
        left.stdout
    );
    assert!(apply_role.writes().is_empty(), "{:?}", apply_role.writes());
    let applied = reconcile_in(&env, &file, &["apply", "--auto-approve"]);
    assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);
    assert!(applied.stdout.contains("Apply complete! Resources: 1 imported, "), "{}", applied.stdout);
    assert!(policy().await.is_none(), "adopted: its policy is desired.toml's (none)");
    let again = reconcile_in(&env, &file, &["plan", "--detailed-exitcode"]);
    assert_eq!(again.code, 0, "{}{}", again.stdout, again.stderr);
}

#[tokio::test]
async fn a_change_the_apply_job_refuses_fails_the_status_and_padding_never_hides_an_error_finding() {
    let world = World::bootstrap().await;
    let name = world.repository.name.clone();
    // Re-points whom the CI roles trust (D108), padded with 250 new repositories: far more
    // changes than a comment holds.
    let padding: String = (0..250).map(|i| format!("padding-{i:03} = {{}}\n")).collect();
    let head = world.repository.head(|tree| {
        let desired = std::fs::read_to_string(tree.join("desired.toml"))
            .unwrap()
            .replacen("environment = \"aws-production\"", "environment = \"somewhere-else\"", 1)
            .replacen("[ecr.repositories]\n", &format!("[ecr.repositories]\n{padding}"), 1);
        std::fs::write(tree.join("desired.toml"), desired).unwrap();
    });
    let sha = "9999999999999999999999999999999999999999";
    let number = github().pull_request(&name, sha, &name);
    let (check, _plan, _runner) = world.pull_request(head.path(), number, sha, &name);
    assert_eq!(check["conclusion"], "success", "{check:#}");
    let comment = &world.comments(number)[0];
    assert!(comment.len() <= reconcile_render::comment::GITHUB_COMMENT_LIMIT);
    assert!(comment.contains("the details of"), "the padding did not fit: {comment}");
    assert!(comment.contains("Error `D108`"), "{comment}");
    assert!(comment.contains("Error `W501`"), "{comment}");
    let status = world.status(sha);
    assert_eq!(status["state"], "failure", "{status:#}");
    assert_eq!(status["description"], "plan: refused by a safety check");
}

/// The drift issue is public too: it names the repositories the nightly's bake file pushes to
/// (the seeds' incident: two cache repositories without a lifecycle policy) and counts other
/// teams'; the job log (text) names them all.
#[tokio::test]
async fn the_drift_issue_names_the_nightlys_unpoliced_repositories_and_counts_other_teams() {
    let account = emulator().new_account().await;
    let repository = github().new_repository();
    let workflow = format!("ghs_{}", repository.replace('/', "_"));
    github().workflow_token(&workflow, false);
    crate::github::codebuild_hook(&repository, true, &["workflow_job"]);
    let dir = tempfile::tempdir().unwrap();
    let desired = dir.path().join("desired.toml");
    let declared = format!("{}\n[github]\nrepository = \"{repository}\"\n", small_account_with_runner(&["pytorch"]));
    std::fs::write(&desired, &declared).unwrap();
    let mut env = account.env();
    env.extend([
        ("GITHUB_API_URL", github().endpoint().to_owned()),
        ("GITHUB_REPOSITORY", repository.clone()),
        ("GITHUB_TOKEN", "ghp_reader".to_owned()),
        ("ECR_REGISTRY", format!("{}.dkr.ecr.us-east-1.amazonaws.com", account.id)),
    ]);
    let applied = reconcile_in(&env, &desired, &["apply", "--auto-approve"]);
    assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);
    // The nightly's bake file exports a cache to a repository nobody declared.
    std::fs::write(&desired, format!("bake = \"rocm-bake.hcl\"\nbake_variables = [\"ECR_REGISTRY\"]\n{declared}"))
        .unwrap();
    std::fs::write(
        dir.path().join("rocm-bake.hcl"),
        "variable \"ECR_REGISTRY\" {\n  default = \"x\"\n}\ntarget \"pytorch\" {\n  tags = [\"${ECR_REGISTRY}/pytorch:nightly\"]\n  cache-to = [\"type=registry,ref=${ECR_REGISTRY}/atom-wheel-cache:buildcache,mode=max\"]\n}\n",
    )
    .unwrap();
    let ecr = ecr::Client::new(&account.sdk_config());
    for name in ["atom-wheel-cache", "secret-mi500-bringup"] {
        ecr.create_repository().repository_name(name).send().await.unwrap();
    }
    env.push(("RECONCILE_ISSUE_TOKEN", workflow.clone()));
    let drift = reconcile_in(&env, &desired, &["drift", "--format", "text", "--issue", "reconcile-drift"]);
    assert_eq!(drift.code, 2, "{}{}", drift.stdout, drift.stderr);
    // The job log names both.
    assert!(drift.stdout.contains("secret-mi500-bringup"), "{}", drift.stdout);
    let issues: Vec<serde_json::Value> = github().state(&repository)["issues"].as_array().unwrap().clone();
    let body = issues.last().map(|i| i["body"].as_str().unwrap().to_owned()).unwrap_or_default();
    assert!(body.contains("atom-wheel-cache"), "the nightly's own unpoliced repository is named: {body}");
    assert!(!body.contains("secret-mi500-bringup"), "another team's is not: {body}");
    assert!(body.contains("finding(s) of this code about what desired.toml does not declare"), "{body}");

    // Every output of the drift and apply workflows, in a GitHub Actions job (whose log and
    // summary are public, whatever started it): the same names, the rest counted.
    let summary = dir.path().join("summary.md");
    let mut in_actions = env.clone();
    in_actions.extend([("GITHUB_ACTIONS", "true".to_owned()), ("GITHUB_EVENT_NAME", "schedule".to_owned())]);
    in_actions.push(("GITHUB_STEP_SUMMARY", summary.display().to_string()));
    let runs: [&[&str]; 7] = [
        &["drift", "--format", "text"],
        &["drift", "--format", "json"],
        &["drift", "--format", "markdown"],
        &["usage", "--format", "text"],
        &["usage", "--format", "json"],
        &["usage", "--format", "markdown"],
        &["apply", "--auto-approve", "--format", "markdown"],
    ];
    for args in runs {
        let run = reconcile_in(&in_actions, &desired, args);
        // apply refuses (W401: the bake file's undeclared cache), after showing its plan.
        assert!([0, 2, 3].contains(&run.code), "{args:?}: {}{}", run.stdout, run.stderr);
        let said = format!("{}{}{}", run.stdout, run.stderr, std::fs::read_to_string(&summary).unwrap_or_default());
        assert!(!said.contains("secret-mi500-bringup"), "{args:?} names another team's repository: {said}");
        if args[0] == "drift" || args[0] == "usage" {
            assert!(said.contains("atom-wheel-cache"), "{args:?} names the nightly's own: {said}");
        }
    }
    let counted = reconcile_in(&in_actions, &desired, &["usage", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_str(&counted.stdout).unwrap();
    assert_eq!(report["others"]["repositories"], 1, "{report:#}");
    assert_eq!(report["total"]["repositories"], 3, "counted in the totals: {report:#}");
    // Said private, by a maintainer: named.
    for args in [&["drift", "--private"][..], &["usage", "--private"][..]] {
        let run = reconcile_in(&in_actions, &desired, args);
        assert!(run.stdout.contains("secret-mi500-bringup"), "{args:?}: {}{}", run.stdout, run.stderr);
    }
}

/// The nightly drift and the apply workflows, run as the examples are in a GitHub Actions job
/// (whose log, summary and cache anyone can read in a public repository, whatever started it):
/// nothing of another team's repository, role or variable in any step's output, the job summary,
/// the drift issue or the cached usage reports; and each does its work.
#[tokio::test]
async fn the_drift_and_apply_workflows_print_nothing_of_another_teams_resources() {
    let world = World::bootstrap().await;
    let name = world.repository.name.clone();
    plant(&world.account, &name, &world.reader).await;
    // Something for both to find: a declared repository's lifecycle policy deleted by hand.
    let ecr = ecr::Client::new(&world.account.sdk_config());
    ecr.delete_lifecycle_policy().repository_name("pytorch").send().await.unwrap();
    let clean = |what: &str, text: &str| {
        assert_none_planted(what, text);
        for name in ["skunkworks", "skunk-ci", "INTERNAL_BUILD_HOST"] {
            assert!(!text.contains(name), "{what} names `{name}`:\n{text}");
        }
    };
    let all_said = |report: &serde_json::Value, runner: &tempfile::TempDir| {
        let mut said = std::fs::read_to_string(runner.path().join("temp/summary.md")).unwrap_or_default();
        for step in report["steps"].as_array().unwrap() {
            for stream in ["stdout", "stderr"] {
                said.push_str(step[stream].as_str().unwrap_or(""));
            }
        }
        said
    };

    let sha = "2222222222222222222222222222222222222222";
    let schedule = json!({ "schedule": "17 1 * * *" });
    for night in 0..2 {
        let (_, drift, runner) = world.run(
            world.repository.path(),
            "nightly-drift.yml",
            "schedule",
            schedule.clone(),
            "refs/heads/main",
            sha,
            false,
            true,
        );
        assert_eq!(step(&drift, "Drift check, and the drift issue")["outcome"], "success", "{drift:#}");
        assert_eq!(step(&drift, "Registry usage and growth")["outcome"], "success", "{drift:#}");
        assert_eq!(step(&drift, "Fail on drift")["outcome"], "failure", "the drift fails the job: {drift:#}");
        let said = all_said(&drift, &runner);
        clean(&format!("night {night}'s drift job"), &said);
        assert!(said.contains("ecr_lifecycle_policy.pytorch"), "{said}");
        assert!(said.contains("ECR usage of account"), "the usage report is in the summary: {said}");
        assert!(!said.contains("not sealed"), "the example gives the drift job its key: {said}");
    }
    let issues = github().state(&name)["issues"].as_array().unwrap().clone();
    assert_eq!(issues.len(), 1, "{issues:#?}");
    clean("the drift issue", issues[0]["body"].as_str().unwrap());
    // The cached reports the growth is measured against: counted alike.
    let caches = world.artifacts_path().join("caches");
    let mut cached = String::new();
    for entry in walkdir(&caches) {
        cached.push_str(&std::fs::read_to_string(entry).unwrap());
    }
    assert!(cached.contains("\"others\""), "{cached}");
    clean("the cached usage reports", &cached);

    let (_, apply, runner) = world.run(
        world.repository.path(),
        "apply-after-merge.yml",
        "push",
        json!({}),
        "refs/heads/main",
        sha,
        false,
        true,
    );
    assert_eq!(apply["conclusion"], "success", "{apply:#}");
    let said = all_said(&apply, &runner);
    clean("the apply job", &said);
    assert!(said.contains("ecr_lifecycle_policy.pytorch"), "{said}");
    assert!(ecr.get_lifecycle_policy().repository_name("pytorch").send().await.is_ok(), "applied");
}

/// Every file under `dir`.
fn walkdir(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.file_type().unwrap().is_dir() {
            files.extend(walkdir(&entry.path()));
        } else {
            files.push(entry.path());
        }
    }
    files
}
