//! Where reconcile tells people, against the GitHub stand-in: the drift issue kept as one current
//! status (opened, left alone, updated, closed, reopened), and the plan comment kept on the pull
//! request found by its head commit and head repository, with a commit status.

use reconcile_test_support::github::github;
use reconcile_test_support::{TestAccount, emulator};
use serde_json::Value;

use crate::support::{Run, desired_file, reconcile_in, small_account_with_runner};

/// Runs reconcile with the account's credentials, the GitHub stand-in, `repository` as the
/// workflow's repository, and `env`.
fn run(account: &TestAccount, repository: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
    let desired = desired_file(&format!(
        "{}\n[github]\nrepository = \"{repository}\"\n",
        small_account_with_runner(&["pytorch"])
    ));
    run_with(account, &desired.path, repository, args, env)
}

fn run_with(
    account: &TestAccount,
    desired: &std::path::Path,
    repository: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Run {
    let mut all = account.env();
    all.push(("GITHUB_API_URL", github().endpoint().to_owned()));
    all.push(("GITHUB_REPOSITORY", repository.to_owned()));
    all.extend(env.iter().map(|(k, v)| (*k, (*v).to_owned())));
    reconcile_in(&all, desired, args)
}

fn issues(repository: &str) -> Vec<Value> {
    github().state(repository)["issues"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i.get("pull_request").is_none())
        .cloned()
        .collect()
}

fn comments_on(repository: &str, number: u64) -> Vec<Value> {
    github().state(repository)["comments"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["issue_number"] == number)
        .cloned()
        .collect()
}

#[tokio::test]
async fn the_drift_issue_is_one_current_status_opened_left_updated_closed_and_reopened() {
    let account = emulator().new_account().await;
    let repository = github().new_repository();
    // The drift job's own workflow token writes the issue; the GitHub side is read with a
    // person's fine-grained token.
    let (workflow, reader) = (format!("ghs_{}", repository.replace('/', "_")), "ghp_reader");
    github().workflow_token(&workflow, false);
    crate::github::codebuild_hook(&repository, true, &["workflow_job"]);
    let desired = desired_file(&format!(
        "{}\n[github]\nrepository = \"{repository}\"\n",
        small_account_with_runner(&["pytorch", "pytorch-cache"])
    ));
    let env = [("RECONCILE_ISSUE_TOKEN", workflow.as_str()), ("GITHUB_TOKEN", reader)];
    let drift = |args: &[&str]| {
        let mut all = vec!["drift", "--format", "markdown", "--issue", "reconcile-drift"];
        all.extend(args);
        run_with(&account, &desired.path, &repository, &all, &env)
    };
    // A foreign issue that looks like ours (the label, the marker) is never touched.
    let forged = serde_json::json!({
        "title": "AWS account drift", "body": "<!-- reconcile:drift -->\n<!-- reconcile:drift-items -->\nfake",
        "labels": ["reconcile-drift"],
    });
    github().person_token("ghp_someone", "someone");
    assert_eq!(github().call("POST", &format!("/repos/{repository}/issues"), "ghp_someone", &forged).0, 201);

    let applied =
        run_with(&account, &desired.path, &repository, &["apply", "--auto-approve"], &[("GITHUB_TOKEN", reader)]);
    assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);
    let clean = drift(&[]);
    assert_eq!(clean.code, 0, "{}{}", clean.stdout, clean.stderr);
    assert!(clean.stderr.contains("no drift, and no open drift issue: nothing to say"), "{}", clean.stderr);
    assert_eq!(issues(&repository).len(), 1, "only the forged one");

    // Drift: the issue is opened, labelled, with the report; by the workflow's bot.
    let ecr = aws_sdk_ecr::Client::new(&account.sdk_config());
    crate::support::put_lifecycle_policy(&ecr, "pytorch", crate::support::OLD_14_DAY_POLICY).await;
    let opened = drift(&[]);
    assert_eq!(opened.code, 2, "{}", opened.stderr);
    assert!(opened.stderr.contains("opened drift issue #2"), "{}", opened.stderr);
    let ours = &issues(&repository)[1];
    assert_eq!((ours["number"].as_u64(), ours["state"].as_str()), (Some(2), Some("open")));
    assert_eq!(ours["labels"], serde_json::json!([{ "name": "reconcile-drift" }]));
    assert_eq!(ours["user"]["login"], "github-actions[bot]");
    let body = ours["body"].as_str().unwrap();
    assert!(body.contains("update%20ecr_lifecycle_policy.pytorch:%20policy"), "what it differs in, hidden: {body}");
    assert!(body.contains("`ecr_lifecycle_policy.pytorch`"), "{body}");
    assert!(body.contains("### reconcile drift for account"), "{body}");
    assert!(body.len() <= 65_536);
    assert_eq!(issues(&repository)[0]["body"], forged["body"], "the forged issue is untouched");

    // The same drift again: nothing said.
    let same = drift(&[]);
    assert!(same.stderr.contains("left drift issue #2 as it was"), "{}", same.stderr);
    assert_eq!(comments_on(&repository, 2).len(), 0);

    // Another difference: the body replaced, one comment saying what changed.
    let tag = aws_sdk_ecr::types::Tag::builder().key("owner").value("someone").build().unwrap();
    ecr.tag_resource()
        .resource_arn(format!("arn:aws:ecr:us-east-1:{}:repository/pytorch-cache", account.id))
        .tags(tag)
        .send()
        .await
        .unwrap();
    let changed = drift(&[]);
    assert!(changed.stderr.contains("updated drift issue #2: the drift changed"), "{}", changed.stderr);
    let comments = comments_on(&repository, 2);
    assert_eq!(comments.len(), 1);
    assert_eq!(
        comments[0]["body"],
        "The drift changed since this issue last said:\n\nNew (1):\n- `update ecr_repository.pytorch-cache: tags`\n"
    );
    assert!(issues(&repository)[1]["body"].as_str().unwrap().contains("update%20ecr_repository.pytorch-cache:%20tags"));

    // Clean again: closed, with a note.
    let fixed =
        run_with(&account, &desired.path, &repository, &["apply", "--auto-approve"], &[("GITHUB_TOKEN", reader)]);
    assert_eq!(fixed.code, 0, "{}", fixed.stderr);
    let closed = drift(&[]);
    assert_eq!(closed.code, 0);
    assert!(closed.stderr.contains("closed drift issue #2"), "{}", closed.stderr);
    let ours = &issues(&repository)[1];
    assert_eq!((ours["state"].as_str(), ours["state_reason"].as_str()), (Some("closed"), Some("completed")));
    assert!(
        comments_on(&repository, 2)[1]["body"].as_str().unwrap().starts_with("The account matches desired.toml again")
    );
    assert!(drift(&[]).stderr.contains("nothing to say"), "clean and closed: nothing");

    // Drifted again: the same issue reopened, not a new one.
    crate::support::put_lifecycle_policy(&ecr, "pytorch", crate::support::OLD_14_DAY_POLICY).await;
    let again = drift(&[]);
    assert!(again.stderr.contains("reopened drift issue #2"), "{}", again.stderr);
    assert_eq!(issues(&repository).len(), 2);
    assert_eq!(issues(&repository)[1]["state"], "open");
    assert!(comments_on(&repository, 2)[2]["body"].as_str().unwrap().starts_with(
        "The account drifted again, so this issue is open again:\n\nNow (2):\n- `D103 \
                 ecr_lifecycle_policy.pytorch`\n- `update ecr_lifecycle_policy.pytorch: policy`"
    ));

    // A token that may not write issues, when the issue must change: the report is printed, then
    // one line naming the permission, exit 1.
    let tag = aws_sdk_ecr::types::Tag::builder().key("owner").value("someone else").build().unwrap();
    ecr.tag_resource()
        .resource_arn(format!("arn:aws:ecr:us-east-1:{}:repository/pytorch", account.id))
        .tags(tag)
        .send()
        .await
        .unwrap();
    github().workflow_token("ghs_read_only", true);
    let refused = run_with(
        &account,
        &desired.path,
        &repository,
        &["drift", "--issue", "reconcile-drift"],
        &[("RECONCILE_ISSUE_TOKEN", "ghs_read_only"), ("GITHUB_TOKEN", reader)],
    );
    assert_eq!(refused.code, 1, "{}{}", refused.stdout, refused.stderr);
    assert!(refused.stdout.contains("ecr_lifecycle_policy.pytorch"), "the drift report came first");
    assert!(refused.stderr.contains("issues=write"), "{}", refused.stderr);
}

#[tokio::test]
async fn the_plan_comment_lands_on_the_pull_request_of_the_head_commit_and_repository_and_is_kept_in_place() {
    let account = emulator().new_account().await;
    let repository = github().new_repository();
    let token = format!("ghs_{}", repository.replace('/', "_"));
    github().workflow_token(&token, false);
    let sha = "0123456789abcdef0123456789abcdef01234567";
    let fork = format!("attacker-{}/rocm-bake", std::process::id());
    // Two pull requests whose heads are the same commit: the fork's, and a branch of this
    // repository's. Only the head repository tells them apart.
    let ours = github().pull_request(&repository, sha, &repository);
    let theirs = github().pull_request(&repository, sha, &fork);
    let plan = desired_file("### reconcile plan\n\n**Plan: 1 to create**\n");
    let env = [("GITHUB_TOKEN", token.as_str())];
    let body = plan.path.to_str().unwrap();
    let comment = |code: &str, conclusion: &str| {
        run(
            &account,
            &repository,
            &[
                "comment",
                "--head-sha",
                sha,
                "--head-repository",
                &fork,
                "--body",
                body,
                "--plan-exit-code",
                code,
                "--check-conclusion",
                conclusion,
            ],
            &env,
        )
    };
    let first = comment("2", "success");
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    assert!(first.stdout.starts_with(&format!("reconcile commented on pull request #{theirs}")), "{}", first.stdout);
    assert_eq!(comments_on(&repository, ours), Vec::<Value>::new());
    let comments = comments_on(&repository, theirs);
    assert_eq!(comments.len(), 1);
    assert_eq!(comments[0]["body"], "<!-- reconcile:plan -->\n### reconcile plan\n\n**Plan: 1 to create**\n");
    let status = &github().state(&repository)["statuses"][0];
    assert_eq!(
        (status["sha"].as_str(), status["state"].as_str(), status["context"].as_str()),
        (Some(sha), Some("success"), Some("reconcile plan"))
    );

    // Again: the same comment, unchanged; then a refused plan and a failed check: edited in
    // place, the status failing.
    assert!(comment("2", "success").stdout.contains("left the comment as it was"));
    std::fs::write(&plan.path, "### reconcile plan\n\n**Refused**\n").unwrap();
    let refused = comment("3", "failure");
    assert!(refused.stdout.contains("updated the comment on"), "{}", refused.stdout);
    assert_eq!(comments_on(&repository, theirs).len(), 1);
    let last = github().state(&repository)["statuses"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["state"], "failure");
    assert_eq!(last["description"], "check: failure (validate, declare --check); plan: refused by a safety check");

    // A plan that failed leaves no Markdown: the comment says so.
    std::fs::write(&plan.path, "").unwrap();
    assert_eq!(comment("1", "success").code, 0);
    let said = comments_on(&repository, theirs)[0]["body"].as_str().unwrap().to_owned();
    assert!(said.contains("reconcile could not plan this pull request** (exit 1)"), "{said}");

    // No pull request of that head: one line, exit 1; bad arguments refused before any request.
    let none = run(
        &account,
        &repository,
        &[
            "comment",
            "--head-sha",
            &"f".repeat(40),
            "--head-repository",
            &fork,
            "--body",
            body,
            "--plan-exit-code",
            "0",
            "--check-conclusion",
            "success",
        ],
        &env,
    );
    assert_eq!(none.code, 1, "{}", none.stderr);
    assert!(none.stderr.contains("no open pull request has commit ffff"), "{}", none.stderr);
    for (flag, value) in
        [("--head-sha", "HEAD"), ("--head-repository", "../x"), ("--check-conclusion", "Success\n::error::x")]
    {
        let mut args = vec![
            "comment",
            "--head-sha",
            sha,
            "--head-repository",
            fork.as_str(),
            "--body",
            body,
            "--plan-exit-code",
            "0",
            "--check-conclusion",
            "success",
        ];
        let at = args.iter().position(|a| *a == flag).unwrap();
        args[at + 1] = value;
        let bad = run(&account, &repository, &args, &env);
        assert_eq!(bad.code, 1, "{flag}: {}", bad.stderr);
        assert!(bad.stderr.starts_with(&format!("error: {flag}: ")), "{}", bad.stderr);
        assert!(!bad.stderr.contains('\n') || bad.stderr.matches('\n').count() == 1, "one line: {:?}", bad.stderr);
    }
}
