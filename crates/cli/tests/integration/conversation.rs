//! Where reconcile tells people, against the GitHub stand-in: the drift issue kept as one current
//! status (opened, left alone, updated, closed, reopened), and the plan comment kept on the pull
//! request found by its head commit and head repository, with a commit status.

use reconcile_test_support::github::github;
use reconcile_test_support::{TestAccount, emulator};
use serde_json::Value;

use crate::support::{DesiredFile, Run, desired_file, reconcile_in, small_account_with_runner};

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

/// A repository of the stand-in with the hook CodeBuild makes, the workflow token that writes
/// its drift issue, and a desired.toml naming it, with the runner and two repositories.
fn drift_repository() -> (String, String, DesiredFile) {
    let repository = github().new_repository();
    let workflow = format!("ghs_{}", repository.replace('/', "_"));
    github().workflow_token(&workflow, false);
    crate::github::codebuild_hook(&repository, true, &["workflow_job"]);
    let desired = desired_file(&format!(
        "{}\n[github]\nrepository = \"{repository}\"\n",
        small_account_with_runner(&["pytorch", "pytorch-cache"])
    ));
    (repository, workflow, desired)
}

#[tokio::test]
async fn the_drift_issue_is_one_current_status_opened_left_updated_closed_and_reopened() {
    let account = emulator().new_account().await;
    // The drift job's own workflow token writes the issue; the GitHub side is read with a
    // person's fine-grained token.
    let (repository, workflow, desired) = drift_repository();
    let reader = "ghp_reader";
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
    let said = comments[0]["body"].as_str().unwrap();
    assert!(
        said.starts_with(
            "The drift changed since this issue last said:\n\nNew (1):\n- `update ecr_repository.pytorch-cache: tags`\n"
        ) && said.ends_with("`\n")
            && !said.contains("Resolved"),
        "{said}"
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
    let said = comments_on(&repository, 2)[2]["body"].as_str().unwrap().to_owned();
    assert!(
        said.starts_with(
            "The account drifted again, so this issue is open again:\n\nNow (2):\n- `D103 ecr_lifecycle_policy.pytorch`\n"
        ) && said.ends_with("\n- `update ecr_lifecycle_policy.pytorch: policy`"),
        "{said}"
    );

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
    let comment = |sha: &str, code: &str, conclusion: &str| {
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
    // The comment lands on the fork's pull request; no status, since a status on the commit
    // would be the other pull request's too, and the comment says why.
    let first = comment(sha, "2", "success");
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    assert!(first.stdout.starts_with(&format!("reconcile commented on pull request #{theirs}")), "{}", first.stdout);
    assert!(
        first.stdout.contains(&format!("no commit status: pull request #{ours} from another repository")),
        "{}",
        first.stdout
    );
    assert_eq!(comments_on(&repository, ours), Vec::<Value>::new());
    let comments = comments_on(&repository, theirs);
    assert_eq!(comments.len(), 1);
    assert_eq!(
        comments[0]["body"],
        format!(
            "<!-- reconcile:plan -->\n**No `reconcile plan` status was set**: pull request #{ours} has this same head \
             commit from another repository, and a commit status belongs to every pull request of the commit. Push a \
             commit of this pull request's own to get one.\n\n### reconcile plan\n\n**Plan: 1 to create**\n"
        )
    );
    assert_eq!(github().state(&repository)["statuses"], serde_json::json!([]));

    // Its own commit: the comment is kept in place, and the status set.
    let own = "89abcdef0123456789abcdef0123456789abcdef";
    let alone = github().pull_request(&repository, own, &fork);
    let first = comment(own, "2", "success");
    assert!(first.stdout.starts_with(&format!("reconcile commented on pull request #{alone}")), "{}", first.stdout);
    assert_eq!(
        comments_on(&repository, alone)[0]["body"],
        "<!-- reconcile:plan -->\n### reconcile plan\n\n**Plan: 1 to create**\n"
    );
    let status = &github().state(&repository)["statuses"][0];
    assert_eq!(
        (status["sha"].as_str(), status["state"].as_str(), status["context"].as_str()),
        (Some(own), Some("success"), Some("reconcile plan"))
    );

    // Again: the same comment, unchanged; then a refused plan and a failed check: edited in
    // place, the status failing.
    assert!(comment(own, "2", "success").stdout.contains("left the comment as it was"));
    std::fs::write(&plan.path, "### reconcile plan\n\n**Refused**\n").unwrap();
    let refused = comment(own, "3", "failure");
    assert!(refused.stdout.contains("updated the comment on"), "{}", refused.stdout);
    assert_eq!(comments_on(&repository, alone).len(), 1);
    let last = github().state(&repository)["statuses"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["state"], "failure");
    assert_eq!(last["description"], "check: failure (validate, declare --check); plan: refused by a safety check");

    // A plan that failed leaves no Markdown: the comment says so.
    std::fs::write(&plan.path, "").unwrap();
    assert_eq!(comment(own, "1", "success").code, 0);
    let said = comments_on(&repository, alone)[0]["body"].as_str().unwrap().to_owned();
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

/// The drift issue answers to values and to the repository's maintainers: a value that changes
/// again updates it, a close as "not planned" holds for the drift as it was acknowledged, an
/// issue another app's bot made with the label and the marker is never taken for it, and two
/// checks at once leave one issue open.
#[tokio::test]
async fn the_drift_issue_follows_values_respects_not_planned_adopts_no_other_bot_and_stays_one() {
    let account = emulator().new_account().await;
    let (repository, workflow, desired) = drift_repository();
    let reader = "ghp_reader";
    let env = [("RECONCILE_ISSUE_TOKEN", workflow.as_str()), ("GITHUB_TOKEN", reader)];
    let drift = || run_with(&account, &desired.path, &repository, &["drift", "--issue", "reconcile-drift"], &env);
    let applied =
        run_with(&account, &desired.path, &repository, &["apply", "--auto-approve"], &[("GITHUB_TOKEN", reader)]);
    assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);

    // Another app's bot opens an issue with the label and the marker: not ours.
    github().app_token("ghs_other_app", "other-app[bot]", 777);
    let forged = serde_json::json!({
        "title": "AWS account drift", "body": "<!-- reconcile:drift -->\n<!-- reconcile:drift-items -->\nan outsider's text",
        "labels": ["reconcile-drift"],
    });
    assert_eq!(github().call("POST", &format!("/repos/{repository}/issues"), "ghs_other_app", &forged).0, 201);

    // Drift: one field, one value.
    let ecr = aws_sdk_ecr::Client::new(&account.sdk_config());
    let tag = |value: &str| aws_sdk_ecr::types::Tag::builder().key("owner").value(value).build().unwrap();
    let arn = format!("arn:aws:ecr:us-east-1:{}:repository/pytorch", account.id);
    ecr.tag_resource().resource_arn(&arn).tags(tag("a harmless note")).send().await.unwrap();
    let opened = drift();
    assert!(opened.stderr.contains("opened drift issue #2"), "not the other bot's #1: {}", opened.stderr);
    assert_eq!(issues(&repository)[0]["body"], forged["body"], "the other bot's issue is untouched");

    // The same field, another value: the issue is updated, and says what changed.
    ecr.tag_resource().resource_arn(&arn).tags(tag("admin:*")).send().await.unwrap();
    let widened = drift();
    assert!(widened.stderr.contains("updated drift issue #2: the drift changed"), "{}", widened.stderr);
    let note = comments_on(&repository, 2).last().unwrap()["body"].as_str().unwrap().to_owned();
    assert!(
        note.contains("Changed (1):\n- `update ecr_repository.pytorch: tags`: its values changed")
            && !note.contains("New (")
            && !note.contains("Resolved ("),
        "{note}"
    );

    // A maintainer closes it as not planned: the same drift leaves it closed.
    let (status, _) = github().call(
        "PATCH",
        &format!("/repos/{repository}/issues/2"),
        reader,
        &serde_json::json!({ "state": "closed", "state_reason": "not_planned" }),
    );
    assert_eq!(status, 200);
    let summary = tempfile::NamedTempFile::new().unwrap();
    let summary_path = summary.path().display().to_string();
    let mut with_summary = env.to_vec();
    with_summary.push(("GITHUB_STEP_SUMMARY", summary_path.as_str()));
    let acknowledged =
        run_with(&account, &desired.path, &repository, &["drift", "--issue", "reconcile-drift"], &with_summary);
    assert_eq!(acknowledged.code, 0, "acknowledged drift passes the check: {}", acknowledged.stderr);
    let said = std::fs::read_to_string(summary.path()).unwrap();
    assert!(
        said.contains("**Drift acknowledged.**") && said.contains("drift issue #2"),
        "the run's page says why: {said}"
    );
    assert!(
        acknowledged.stdout.contains("ecr_repository.pytorch"),
        "the drift is still reported: {}",
        acknowledged.stdout
    );
    assert!(
        acknowledged
            .stderr
            .contains("acknowledged: left drift issue #2 closed, as a maintainer closed it as not planned"),
        "{}",
        acknowledged.stderr
    );
    assert_eq!(issues(&repository)[1]["state"], "closed");
    // A new difference: reopened, saying what differs from what was acknowledged.
    ecr.tag_resource().resource_arn(&arn).tags(tag("admin:everything")).send().await.unwrap();
    let reopened = drift();
    assert_eq!(reopened.code, 2, "a new drift fails the check again: {}", reopened.stderr);
    assert!(reopened.stderr.contains("reopened drift issue #2"), "{}", reopened.stderr);
    let note = comments_on(&repository, 2).last().unwrap()["body"].as_str().unwrap().to_owned();
    assert!(note.starts_with("The drift differs from what was acknowledged"), "{note}");

    // Only a person with write access acknowledges: a close as not planned by a workflow's
    // token (what actions/stale closes with), another app's bot or a triager is undone by the
    // next check, which says why; a maintainer's holds.
    github().person_token_with("ghp_triager", "tracy", "triage");
    github().person_token_with("ghp_maintainer", "maya", "maintain");
    let close_as_not_planned = |token: &str| {
        let body = serde_json::json!({ "state": "closed", "state_reason": "not_planned" });
        assert_eq!(github().call("PATCH", &format!("/repos/{repository}/issues/2"), token, &body).0, 200);
    };
    for (token, who) in [
        (workflow.as_str(), "`github-actions[bot]`, a bot"),
        ("ghs_other_app", "`other-app[bot]`, a bot"),
        ("ghp_triager", "`tracy`, who has no write access to the repository"),
    ] {
        close_as_not_planned(token);
        let undone = drift();
        assert!(undone.stderr.contains("reopened drift issue #2"), "{who}: {}", undone.stderr);
        let note = comments_on(&repository, 2).last().unwrap()["body"].as_str().unwrap().to_owned();
        assert!(note.starts_with(&format!("This issue was closed as not planned by {who}: only a person")), "{note}");
    }
    close_as_not_planned("ghp_maintainer");
    assert!(drift().stderr.contains("acknowledged: left drift issue #2 closed, as a maintainer closed it"));
    let (status, _) = github().call(
        "PATCH",
        &format!("/repos/{repository}/issues/2"),
        reader,
        &serde_json::json!({ "state": "open" }),
    );
    assert_eq!(status, 200);

    // Two checks at once, with no issue open: one issue stays open.
    let fixed =
        run_with(&account, &desired.path, &repository, &["apply", "--auto-approve"], &[("GITHUB_TOKEN", reader)]);
    assert_eq!(fixed.code, 0, "{}", fixed.stderr);
    assert!(drift().stderr.contains("closed drift issue #2"));
    let (fresh, workflow, desired_fresh) = drift_repository();
    ecr.tag_resource().resource_arn(&arn).tags(tag("again")).send().await.unwrap();
    let both: Vec<std::thread::JoinHandle<Run>> = (0..2)
        .map(|_| {
            let (account, path, fresh, workflow) =
                (account.clone(), desired_fresh.path.clone(), fresh.clone(), workflow.clone());
            std::thread::spawn(move || {
                run_with(
                    &account,
                    &path,
                    &fresh,
                    &["drift", "--issue", "reconcile-drift"],
                    &[("RECONCILE_ISSUE_TOKEN", workflow.as_str()), ("GITHUB_TOKEN", "ghp_reader")],
                )
            })
        })
        .collect();
    for run in both {
        let run = run.join().unwrap();
        assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    }
    let open: Vec<Value> = issues(&fresh).into_iter().filter(|issue| issue["state"] == "open").collect();
    assert_eq!(open.len(), 1, "{open:#?}");

    // The same, at the same moment for certain, where GitHub refuses to close an issue as a
    // duplicate: the later one is closed as not planned, and no longer claims to be the drift
    // issue, so no later check takes it for one (or for an acknowledgement).
    let (raced, workflow, desired_raced) = drift_repository();
    let other_run = serde_json::json!({
        "title": "AWS account drift",
        "body": "<!-- reconcile:drift -->\n<!-- reconcile:drift-items -->\nthe other run's report",
        "labels": ["reconcile-drift"],
    });
    github().race(&raced, &workflow, &other_run);
    github().refuse_duplicate(&raced, 1);
    let env = [("RECONCILE_ISSUE_TOKEN", workflow.as_str()), ("GITHUB_TOKEN", "ghp_reader")];
    let check = || run_with(&account, &desired_raced.path, &raced, &["drift", "--issue", "reconcile-drift"], &env);
    let first = check();
    assert_eq!(first.code, 2, "{}{}", first.stdout, first.stderr);
    assert!(first.stderr.contains("another drift check opened drift issue #1 at the same time"), "{}", first.stderr);
    let all = issues(&raced);
    assert_eq!((all[0]["number"].as_u64(), &all[0]["state"]), (Some(1), &Value::from("open")), "{all:#?}");
    assert_eq!((&all[1]["state"], &all[1]["state_reason"]), (&Value::from("closed"), &Value::from("not_planned")));
    assert!(all[1]["body"].as_str().unwrap().starts_with("A duplicate of #1, the drift issue"), "{all:#?}");
    let next = check();
    assert!(next.stderr.contains("updated drift issue #1"), "{}", next.stderr);
}

/// `reconcile head` reads a pull request's two files from its head commit and nothing else: a
/// bake file that is a link, or named outside the repository, is refused and nothing is
/// written; an unchanged pair says `changed=false`.
#[tokio::test]
async fn head_reads_the_two_files_of_a_commit_as_data_and_refuses_a_link_or_a_path_outside() {
    let account = emulator().new_account().await;
    let repository = github().new_repository();
    let desired = "region = \"us-east-1\"\nbake = \"rocm-bake.hcl\"\n";
    let head = |sha: &str, out: &std::path::Path, base: Option<&std::path::Path>| {
        let mut args =
            vec!["head", "--head-sha", sha, "--head-repository", &repository, "--out", out.to_str().unwrap()];
        if let Some(base) = base {
            args.extend(["--base", base.to_str().unwrap()]);
        }
        run_with(&account, std::path::Path::new("desired.toml"), &repository, &args, &[("GITHUB_TOKEN", "ghp_reader")])
    };
    let dir = tempfile::tempdir().unwrap();

    let good = "1".repeat(40);
    github().commit(&repository, &good, &[("desired.toml", desired), ("rocm-bake.hcl", "target \"x\" {}\n")], &[]);
    let out = dir.path().join("good");
    let read = head(&good, &out, None);
    assert_eq!((read.code, read.stdout.as_str()), (0, "changed=true\n"), "{}", read.stderr);
    assert_eq!(std::fs::read_to_string(out.join("rocm-bake.hcl")).unwrap(), "target \"x\" {}\n");
    // The same two files as the base's: unchanged.
    let base = dir.path().join("base");
    std::fs::create_dir(&base).unwrap();
    std::fs::write(base.join("desired.toml"), desired).unwrap();
    std::fs::write(base.join("rocm-bake.hcl"), "target \"x\" {}\n").unwrap();
    let same = head(&good, &dir.path().join("same"), Some(&base.join("desired.toml")));
    assert_eq!((same.code, same.stdout.as_str()), (0, "changed=false\n"), "{}", same.stderr);

    let linked = "2".repeat(40);
    github().commit(&repository, &linked, &[("desired.toml", desired)], &[("rocm-bake.hcl", "/etc/passwd")]);
    let out = dir.path().join("linked");
    let refused = head(&linked, &out, None);
    assert_eq!(refused.code, 1, "{}{}", refused.stdout, refused.stderr);
    assert!(refused.stderr.contains("it is a symlink, not a file"), "{}", refused.stderr);
    assert!(!out.exists(), "nothing written");

    let outside = "3".repeat(40);
    github().commit(&repository, &outside, &[("desired.toml", "bake = \"../../etc/passwd\"\n")], &[]);
    let refused = head(&outside, &dir.path().join("outside"), None);
    assert_eq!(refused.code, 1, "{}{}", refused.stdout, refused.stderr);
    assert!(refused.stderr.contains("is not a path inside the repository"), "{}", refused.stderr);
}

/// A drift repository ([`drift_repository`]) applied, then its `pytorch` tagged by hand: drift.
async fn applied_then_tagged() -> (TestAccount, String, String, DesiredFile) {
    let account = emulator().new_account().await;
    let (repository, workflow, desired) = drift_repository();
    let applied =
        run_with(&account, &desired.path, &repository, &["apply", "--auto-approve"], &[("GITHUB_TOKEN", "ghp_reader")]);
    assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);
    let ecr = aws_sdk_ecr::Client::new(&account.sdk_config());
    let arn = format!("arn:aws:ecr:us-east-1:{}:repository/pytorch", account.id);
    let tag = aws_sdk_ecr::types::Tag::builder().key("owner").value("drifted").build().unwrap();
    ecr.tag_resource().resource_arn(&arn).tags(tag).send().await.unwrap();
    (account, repository, workflow, desired)
}

/// Every workflow token of a repository writes as the same bot: an issue another workflow opens
/// with the label and the marker (its text whoever drives that workflow chose) is not the drift
/// issue once the drift workflow seals its own with a key only it is given.
#[tokio::test]
async fn a_sealed_drift_issue_is_never_one_another_workflow_opened() {
    let (account, repository, workflow, desired) = applied_then_tagged().await;
    let reader = "ghp_reader";
    let ecr = aws_sdk_ecr::Client::new(&account.sdk_config());
    let arn = format!("arn:aws:ecr:us-east-1:{}:repository/pytorch", account.id);

    // Another workflow of the repository: the same bot, the label, the marker, its own text.
    let forged = serde_json::json!({
        "title": "AWS account drift",
        "body": "<!-- reconcile:drift -->\n<!-- reconcile:drift-items -->\nAll is well: nothing drifted.",
        "labels": ["reconcile-drift"],
    });
    assert_eq!(github().call("POST", &format!("/repos/{repository}/issues"), &workflow, &forged).0, 201);
    let key = "3f".repeat(32);
    let env = [("RECONCILE_ISSUE_TOKEN", workflow.as_str()), ("GITHUB_TOKEN", reader), ("RECONCILE_ISSUE_KEY", &key)];
    let drift = || run_with(&account, &desired.path, &repository, &["drift", "--issue", "reconcile-drift"], &env);
    let first = drift();
    assert!(first.stderr.contains("opened drift issue #2"), "not the forged #1: {}", first.stderr);
    assert!(!first.stderr.contains("not sealed"), "{}", first.stderr);
    assert_eq!(issues(&repository)[0]["body"], forged["body"], "the other workflow's issue is untouched");
    assert!(drift().stderr.contains("left drift issue #2 as it was"));
    // The sealed body copied, whole, into a new issue by another workflow (the issue is public):
    // the seal binds #2, so the copy is not the drift issue, and the drift issue goes on.
    let sealed = issues(&repository)[1]["body"].as_str().unwrap().to_owned();
    let copy =
        serde_json::json!({ "title": "Resolved: no action needed", "body": sealed, "labels": ["reconcile-drift"] });
    assert_eq!(github().call("POST", &format!("/repos/{repository}/issues"), &workflow, &copy).0, 201);
    assert!(drift().stderr.contains("left drift issue #2 as it was"), "not the copy, #3");
    let tag = aws_sdk_ecr::types::Tag::builder().key("cost-centre").value("drifted-more").build().unwrap();
    ecr.tag_resource().resource_arn(&arn).tags(tag).send().await.unwrap();
    let updated = drift();
    assert!(updated.stderr.contains("drift issue #2"), "{}", updated.stderr);
    assert!(!updated.stderr.contains("#3"), "{}", updated.stderr);
    let now = issues(&repository);
    assert_eq!(now[2]["body"], serde_json::json!(sealed), "the copy is untouched");
    assert_ne!(now[1]["body"], serde_json::json!(sealed), "the drift issue says what drifted now");

    // Without a key: said, as a warning. With one too short to keep a forger out: refused.
    let unsealed = [("RECONCILE_ISSUE_TOKEN", workflow.as_str()), ("GITHUB_TOKEN", reader)];
    let run = run_with(&account, &desired.path, &repository, &["drift", "--issue", "reconcile-drift"], &unsealed);
    assert!(run.stderr.contains("the drift issue is not sealed (no RECONCILE_ISSUE_KEY)"), "{}", run.stderr);
    let short = [("RECONCILE_ISSUE_TOKEN", workflow.as_str()), ("RECONCILE_ISSUE_KEY", "short")];
    let run = run_with(&account, &desired.path, &repository, &["drift", "--issue", "reconcile-drift"], &short);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("RECONCILE_ISSUE_KEY is 5 characters"), "{}", run.stderr);
}

/// GitHub opens the drift issue and its answer is lost: that check fails, and the next finds the
/// issue it opened (sealed as opened, before GitHub gave it a number), seals it as its own and
/// keeps it as the one drift issue, never a second beside it.
#[tokio::test]
async fn a_drift_issue_whose_answer_was_lost_is_found_sealed_and_stays_the_only_one() {
    let (account, repository, workflow, desired) = applied_then_tagged().await;
    let reader = "ghp_reader";
    let key = "4e".repeat(32);
    let env = [("RECONCILE_ISSUE_TOKEN", workflow.as_str()), ("GITHUB_TOKEN", reader), ("RECONCILE_ISSUE_KEY", &key)];
    let drift = || run_with(&account, &desired.path, &repository, &["drift", "--issue", "reconcile-drift"], &env);

    github().lose_answer(&repository, 1);
    let lost = drift();
    assert_eq!(lost.code, 1, "it never heard the answer: {}{}", lost.stdout, lost.stderr);
    assert_eq!(issues(&repository).len(), 1, "GitHub opened it all the same");
    let next = drift();
    assert_eq!(next.code, 2, "{}{}", next.stdout, next.stderr);
    assert!(next.stderr.contains("drift issue #1"), "{}", next.stderr);
    let all = issues(&repository);
    assert_eq!(all.len(), 1, "one issue: {all:#?}");
    assert_eq!(all[0]["state"], "open");
    let said = comments_on(&repository, 1);
    assert!(said.iter().any(|c| c["body"].as_str().unwrap().contains("never heard GitHub's answer")), "{said:#?}");
    // Sealed as #1 now: the next check leaves it as it is.
    let again = drift();
    assert!(again.stderr.contains("left drift issue #1 as it was"), "{}", again.stderr);
    assert_eq!(issues(&repository).len(), 1);
}
