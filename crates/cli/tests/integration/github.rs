//! The GitHub side, against the local GitHub API stand-in (tests/github/server.py) beside the
//! AWS emulator: the repository variables, the fork approval policy, the workflow permissions,
//! the runner's hook as GitHub sees it, tokens, rate limits and the order of apply.

use reconcile_test_support::github::github;
use reconcile_test_support::{TestAccount, emulator};
use serde_json::{Value, json};

use crate::support::{Run, desired_file, json_changes, reconcile_in, small_account_with_runner};

const TOKEN: &str = "ghp_test";

/// The small account with its runner, and `[github]` for `repository` with `extra` lines.
fn with_github(repository: &str, extra: &str) -> String {
    format!("{}\n[github]\nrepository = \"{repository}\"\n{extra}", small_account_with_runner(&["pytorch"]))
}

/// Runs the binary with the account's credentials, and GitHub's when `token` is given.
fn run(account: &TestAccount, token: Option<&str>, desired: &std::path::Path, args: &[&str]) -> Run {
    let mut env = account.env();
    env.push(("GITHUB_API_URL", github().endpoint().to_owned()));
    if let Some(token) = token {
        env.push(("GITHUB_TOKEN", token.to_owned()));
    }
    reconcile_in(&env, desired, args)
}

/// The hook CodeBuild makes on the repository when its webhook is created.
pub fn codebuild_hook(repository: &str, active: bool, events: &[&str]) -> u64 {
    let body = json!({
        "name": "web",
        "active": active,
        "events": events,
        "config": { "url": "https://codebuild.us-east-1.amazonaws.com/webhooks?t=eyJlbmNyeXB0ZWREYXRhIjoi&v=1", "content_type": "json" },
    });
    let (status, hook) = github().call("POST", &format!("/repos/{repository}/hooks"), TOKEN, &body);
    assert_eq!(status, 201, "{hook}");
    hook["id"].as_u64().unwrap()
}

fn get(path: &str) -> Value {
    let (status, body) = github().call("GET", path, TOKEN, &Value::Null);
    assert_eq!(status, 200, "{path}: {body}");
    body
}

/// The repository's writes as the stand-in logged them: (method path, when).
fn github_writes(repository: &str) -> Vec<(String, f64)> {
    github()
        .log(repository)
        .iter()
        // The test's own setup (the hook CodeBuild would make) aside.
        .filter(|entry| entry["method"] != "GET" && !entry["path"].as_str().unwrap().ends_with("/hooks"))
        .map(|entry| {
            (
                format!("{} {}", entry["method"].as_str().unwrap(), entry["path"].as_str().unwrap()),
                entry["at"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test]
async fn apply_sets_variables_approval_and_permissions_and_turns_the_nightly_on_last() {
    let account = emulator().new_account().await;
    let repository = github().new_repository();
    codebuild_hook(&repository, true, &["workflow_job"]);
    let desired = desired_file(&with_github(&repository, "[nightly]\narches = \"gfx1201\"\n"));

    let plan = run(&account, Some(TOKEN), &desired.path, &["plan", "--format", "json"]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    let changes = json_changes(&plan.stdout);
    for expected in [
        "create github_variable.CODEBUILD_PROJECT",
        "create github_variable.ECR_REGISTRY",
        "create github_variable.AWS_REGION",
        "create github_variable.NIGHTLY_ARCHES",
        "create github_variable.NIGHTLY_ENABLED",
        "update github_fork_pr_approval.".to_owned().as_str(),
        "update github_workflow_permissions.",
    ] {
        assert!(changes.iter().any(|c| c.starts_with(expected)), "{expected}: {changes:?}");
    }

    let apply = run(&account, Some(TOKEN), &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    let root = format!("/repos/{repository}");
    let variables = get(&format!("{root}/actions/variables?per_page=30"));
    let values: Vec<(&str, &str)> = variables["variables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["name"].as_str().unwrap(), v["value"].as_str().unwrap()))
        .collect();
    let registry = format!("{}.dkr.ecr.us-east-1.amazonaws.com", account.id);
    assert_eq!(
        values,
        [
            ("AWS_REGION", "us-east-1"),
            ("CODEBUILD_PROJECT", "rocm-bake"),
            ("ECR_REGISTRY", registry.as_str()),
            ("NIGHTLY_ARCHES", "gfx1201"),
            ("NIGHTLY_ENABLED", "true"),
        ]
    );
    assert_eq!(
        get(&format!("{root}/actions/permissions/fork-pr-contributor-approval"))["approval_policy"],
        "all_external_contributors"
    );
    assert_eq!(
        get(&format!("{root}/actions/permissions/workflow")),
        json!({ "default_workflow_permissions": "read", "can_approve_pull_request_reviews": false })
    );

    // NIGHTLY_ENABLED was written after every other write, AWS's and GitHub's (the lock's
    // release aside, which comes after the apply).
    let writes = github_writes(&repository);
    let (last, enabled_at) = writes.last().unwrap().clone();
    assert_eq!(last, format!("POST {root}/actions/variables"), "{writes:?}");
    let posts = writes.iter().filter(|(w, _)| w.starts_with("POST")).count();
    assert_eq!((posts, writes.len()), (5, 7), "five variables and two settings: {writes:?}");
    let aws = account.writes();
    assert!(!aws.is_empty());
    for write in &aws {
        assert!(write.at < enabled_at, "{write} at {} is after NIGHTLY_ENABLED at {enabled_at}", write.at);
    }
    assert!(writes[..writes.len() - 1].iter().all(|(_, at)| *at < enabled_at));

    let again = run(&account, Some(TOKEN), &desired.path, &["plan", "--detailed-exitcode"]);
    assert_eq!(again.code, 0, "converged: {}{}", again.stdout, again.stderr);
    // `outputs` prints what apply set, from the same derivation.
    let outputs = run(&account, None, &desired.path, &["outputs", "--format", "json"]);
    let printed: Vec<(String, String)> = serde_json::from_str::<Value>(&outputs.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["name"].as_str().unwrap().to_owned(), v["value"].as_str().unwrap().to_owned()))
        .collect();
    let mut sorted = printed.clone();
    sorted.sort();
    assert_eq!(sorted.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect::<Vec<_>>(), values);
    assert_eq!(printed.last().unwrap().0, "NIGHTLY_ENABLED");

    // Turning the nightly off is a change to desired.toml, planned like any other.
    let off = desired_file(&with_github(&repository, "[nightly]\narches = \"gfx1201\"\nenabled = false\n"));
    let plan = run(&account, Some(TOKEN), &off.path, &["plan"]);
    assert!(plan.stdout.contains("~ value = \"true\" -> \"false\""), "{}", plan.stdout);
    assert_eq!(
        json_changes(&run(&account, Some(TOKEN), &off.path, &["plan", "--format", "json"]).stdout),
        ["update github_variable.NIGHTLY_ENABLED"]
    );
}

#[tokio::test]
async fn with_an_aws_change_failing_the_nightly_is_not_turned_on_and_the_report_says_why() {
    let account = emulator().new_account().await;
    let repository = github().new_repository();
    codebuild_hook(&repository, true, &["workflow_job"]);
    let desired = desired_file(&with_github(&repository, ""));
    account.refuse_create_project();
    let apply = run(&account, Some(TOKEN), &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 1, "{}{}", apply.stdout, apply.stderr);
    // Because of the project, or of its webhook, which waited for the project: whichever the
    // engine saw first.
    let skipped = apply.stdout.lines().find(|l| l.starts_with("Skipped: github_variable.NIGHTLY_ENABLED, because "));
    assert!(
        skipped.is_some_and(|line| [
            "Skipped: github_variable.NIGHTLY_ENABLED, because codebuild_project.runner did not apply",
            "Skipped: github_variable.NIGHTLY_ENABLED, because codebuild_webhook.runner did not apply",
        ]
        .contains(&line)),
        "{}",
        apply.stdout
    );
    assert!(apply.stdout.contains("Skipped: codebuild_webhook.runner, because codebuild_project.runner did not apply"));
    assert!(apply.stdout.contains("Invalid project environment: refused-by-the-test"), "{}", apply.stdout);
    // Everything else on GitHub was set; the switch was not.
    let names: Vec<String> = get(&format!("/repos/{repository}/actions/variables?per_page=30"))["variables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["AWS_REGION", "CODEBUILD_PROJECT", "ECR_REGISTRY"]);
    let report = run(&account, Some(TOKEN), &desired.path, &["apply", "--auto-approve", "--format", "json"]);
    assert_eq!(report.code, 0, "the next apply finishes the job: {}{}", report.stdout, report.stderr);
}

#[tokio::test]
async fn variables_and_settings_changed_by_hand_are_drift_and_undeclared_variables_are_named() {
    let account = emulator().new_account().await;
    let repository = github().new_repository();
    codebuild_hook(&repository, true, &["workflow_job"]);
    // Thirty-one declared by hand as well: the listing takes two pages of thirty.
    let extra: String = (0..31).map(|n| format!("EXTRA_{n:02} = \"{n}\"\n")).collect();
    let desired = desired_file(&with_github(&repository, &format!("[github.variables]\n{extra}")));
    assert_eq!(run(&account, Some(TOKEN), &desired.path, &["apply", "--auto-approve"]).code, 0);
    let clean = run(&account, Some(TOKEN), &desired.path, &["drift"]);
    assert_eq!(clean.code, 0, "{}{}", clean.stdout, clean.stderr);

    let root = format!("/repos/{repository}");
    let patch = json!({ "name": "AWS_REGION", "value": "eu-west-1" });
    assert_eq!(github().call("PATCH", &format!("{root}/actions/variables/AWS_REGION"), TOKEN, &patch).0, 204);
    let undeclared = json!({ "name": "SNEAKY", "value": "1" });
    assert_eq!(github().call("POST", &format!("{root}/actions/variables"), TOKEN, &undeclared).0, 201);
    let policy = json!({ "approval_policy": "first_time_contributors" });
    assert_eq!(
        github().call("PUT", &format!("{root}/actions/permissions/fork-pr-contributor-approval"), TOKEN, &policy).0,
        204
    );

    let drift = run(&account, Some(TOKEN), &desired.path, &["drift", "--format", "json"]);
    assert_eq!(drift.code, 2, "{}", drift.stderr);
    let changes = json_changes(&drift.stdout);
    assert!(changes.iter().any(|c| c.starts_with("update github_variable.AWS_REGION")), "{changes:?}");
    assert!(changes.iter().any(|c| c.starts_with("update github_fork_pr_approval.")), "{changes:?}");
    assert_eq!(changes.len(), 2, "nothing else moved: {changes:?}");
    let json: Value = serde_json::from_str(&drift.stdout).unwrap();
    let findings = json["findings"].as_array().unwrap();
    assert!(findings.iter().any(|f| f["code"] == "D106" && f["address"] == "github_variable.SNEAKY"), "{findings:#?}");
    let text = run(&account, Some(TOKEN), &desired.path, &["plan"]);
    assert!(text.stdout.contains("\"eu-west-1\" -> \"us-east-1\""), "{}", text.stdout);

    // Apply puts them back, and leaves the undeclared one alone.
    assert_eq!(run(&account, Some(TOKEN), &desired.path, &["apply", "--auto-approve"]).code, 0);
    assert_eq!(get(&format!("{root}/actions/variables/SNEAKY"))["value"], "1");
    assert_eq!(get(&format!("{root}/actions/variables/AWS_REGION"))["value"], "us-east-1");
    let after = run(&account, Some(TOKEN), &desired.path, &["drift", "--format", "json"]);
    assert_eq!(json_changes(&after.stdout), Vec::<String>::new());
}

#[tokio::test]
async fn a_missing_disabled_or_deaf_runner_hook_is_an_error_in_plan_and_drift() {
    let account = emulator().new_account().await;
    let repository = github().new_repository();
    let desired = desired_file(&with_github(&repository, ""));
    assert_eq!(run(&account, Some(TOKEN), &desired.path, &["apply", "--auto-approve"]).code, 0);
    let root = format!("/repos/{repository}");
    let finding = |args: &[&str]| {
        let run = run(&account, Some(TOKEN), &desired.path, args);
        let json: Value = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
        let found = json["findings"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|f| f["code"] == "D105")
            .map(|f| f["message"].as_str().unwrap().to_owned());
        (run.code, found)
    };

    // No hook at all (the first apply created the CodeBuild webhook, and with it, on GitHub,
    // the hook, which this stand-in does not do): an error, and the plan replaces the webhook.
    let (code, missing) = finding(&["drift", "--format", "json"]);
    assert_eq!(code, 2);
    let missing = missing.expect("D105 with no hook");
    assert!(missing.contains("has no webhook to CodeBuild"), "{missing}");
    assert!(missing.contains("the plan replaces codebuild_webhook.runner"), "the fix: {missing}");
    let (code, in_plan) = finding(&["plan", "--format", "json"]);
    assert_eq!((code, in_plan.is_some()), (0, true));
    let plan = run(&account, Some(TOKEN), &desired.path, &["plan", "--format", "json"]);
    let json: Value = serde_json::from_str(&plan.stdout).unwrap();
    let changes = json["resource_changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{changes:#?}");
    assert_eq!(changes[0]["address"], "codebuild_webhook.runner");
    assert_eq!(changes[0]["change"]["actions"], json!(["delete", "create"]), "a replacement");
    let text = run(&account, Some(TOKEN), &desired.path, &["plan"]);
    assert!(text.stdout.contains("Error [D105] codebuild_webhook.runner"), "{}", text.stdout);
    // Saved, the replacement is derived again from what is seen at apply time, and applied.
    let saved = desired.path.with_file_name("plan.json");
    let out = run(&account, Some(TOKEN), &desired.path, &["plan", "--out", saved.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let refused = run(&account, Some(TOKEN), &desired.path, &["apply", saved.to_str().unwrap()]);
    assert_eq!(refused.code, 3, "a replacement needs --allow-delete: {}", refused.stderr);
    let replaced = run(&account, Some(TOKEN), &desired.path, &["apply", saved.to_str().unwrap(), "--allow-delete"]);
    assert_eq!(replaced.code, 0, "{}{}", replaced.stdout, replaced.stderr);
    assert!(replaced.stdout.contains("codebuild_webhook.runner"), "{}", replaced.stdout);

    // Disabled, then deaf to workflow_job, then as CodeBuild makes it.
    let id = codebuild_hook(&repository, false, &["workflow_job"]);
    let (code, disabled) = finding(&["drift", "--format", "json"]);
    assert_eq!(code, 2);
    assert!(disabled.unwrap().contains("disabled"));
    let deaf = json!({ "active": true, "events": ["push"] });
    assert_eq!(github().call("PATCH", &format!("{root}/hooks/{id}"), TOKEN, &deaf).0, 200);
    let (code, deaf) = finding(&["drift", "--format", "json"]);
    assert_eq!(code, 2);
    assert!(deaf.unwrap().contains("no longer sends workflow_job"));
    let fixed = json!({ "active": true, "events": ["workflow_job"] });
    assert_eq!(github().call("PATCH", &format!("{root}/hooks/{id}"), TOKEN, &fixed).0, 200);
    assert_eq!(finding(&["drift", "--format", "json"]), (0, None));
}

#[tokio::test]
async fn without_a_token_the_aws_plan_is_unchanged_and_a_token_without_permission_is_one_line() {
    let account = emulator().new_account().await;
    let repository = github().new_repository();
    let without = desired_file(&small_account_with_runner(&["pytorch"]));
    let with = desired_file(&with_github(&repository, ""));
    let aws_only = run(&account, None, &without.path, &["plan", "--format", "json"]);
    let unchecked = run(&account, None, &with.path, &["plan", "--format", "json"]);
    assert_eq!(unchecked.code, 0, "{}", unchecked.stderr);
    assert_eq!(json_changes(&unchecked.stdout), json_changes(&aws_only.stdout));
    let json: Value = serde_json::from_str(&unchecked.stdout).unwrap();
    let e102: Vec<&Value> = json["findings"].as_array().unwrap().iter().filter(|f| f["code"] == "E102").collect();
    assert_eq!(e102.len(), 1);
    assert_eq!(e102[0]["severity"], "warning");
    let text = run(&account, None, &with.path, &["plan"]);
    let lines: Vec<&str> = text.stdout.lines().filter(|l| l.contains("GITHUB_TOKEN")).collect();
    assert_eq!(lines.len(), 1, "one line: {}", text.stdout);
    assert!(github().log(&repository).is_empty(), "nothing asked of GitHub");

    // A token that may not read variables: one line that names the permission, exit 1.
    github().deny("ghp_narrow", &["actions_variables"]);
    let denied = run(&account, Some("ghp_narrow"), &with.path, &["plan"]);
    assert_eq!(denied.code, 1, "{}{}", denied.stdout, denied.stderr);
    let errors: Vec<&str> = denied.stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{}", denied.stderr);
    assert!(errors[0].contains("actions_variables=read"), "{}", errors[0]);
    assert!(errors[0].contains("Resource not accessible by personal access token"), "{}", errors[0]);
}

#[tokio::test]
async fn rate_limits_are_waited_out_and_the_apply_completes() {
    let account = emulator().new_account().await;
    let repository = github().new_repository();
    codebuild_hook(&repository, true, &["workflow_job"]);
    let desired = desired_file(&with_github(&repository, ""));
    github().rate_limit(&repository, 2, "secondary");
    let plan = run(&account, Some(TOKEN), &desired.path, &["plan", "--detailed-exitcode"]);
    assert_eq!(plan.code, 2, "{}{}", plan.stdout, plan.stderr);
    assert!(plan.stderr.contains("GitHub's rate limit: waiting 1s"), "{}", plan.stderr);
    github().rate_limit(&repository, 1, "primary");
    let apply = run(&account, Some(TOKEN), &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    assert!(apply.stderr.contains("GitHub's rate limit: waiting"), "{}", apply.stderr);
    let limited = github().log(&repository).iter().filter(|e| e["status"] == 403).count();
    assert_eq!(limited, 3);
    assert_eq!(run(&account, Some(TOKEN), &desired.path, &["plan", "--detailed-exitcode"]).code, 0);
}

#[tokio::test]
async fn a_github_api_that_never_answers_fails_the_plan_in_seconds_naming_it() {
    let account = emulator().new_account().await;
    // Accepts connections and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent = format!("http://{}", listener.local_addr().unwrap());
    let desired = desired_file(&with_github("ROCm/rocm-bake", ""));
    let mut env = account.env();
    env.push(("GITHUB_API_URL", silent));
    env.push(("GITHUB_TOKEN", TOKEN.to_owned()));
    let start = std::time::Instant::now();
    let plan = reconcile_in(&env, &desired.path, &["plan"]);
    assert_eq!(plan.code, 1, "{}{}", plan.stdout, plan.stderr);
    assert!(start.elapsed() < std::time::Duration::from_secs(60), "{:?}", start.elapsed());
    let errors: Vec<&str> = plan.stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert!(!errors.is_empty() && errors.iter().all(|e| e.contains("GitHub did not answer")), "{}", plan.stderr);
    drop(listener);
}

/// The pull request as hostile input, on the GitHub side: a saved plan cut down to the change
/// that turns the nightly on is refused, and so is one applied without the token it was made with.
#[tokio::test]
async fn a_saved_plan_cut_down_to_the_nightly_switch_or_applied_without_its_token_is_refused() {
    let account = emulator().new_account().await;
    let repository = github().new_repository();
    codebuild_hook(&repository, true, &["workflow_job"]);
    let desired = desired_file(&with_github(&repository, ""));
    let saved = desired.path.with_file_name("plan.json");
    let saved_arg = saved.to_str().unwrap();
    let plan = run(&account, Some(TOKEN), &desired.path, &["plan", "--out", saved_arg]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    let whole: Value = serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    assert_eq!(whole["made_with"], json!({ "prune": false, "github": true, "destroy": false }));

    // Without the token: desired.toml declares [github], so the token is named, nothing is written.
    let writes = account.writes().len();
    let tokenless = run(&account, None, &desired.path, &["apply", saved_arg]);
    assert_eq!(tokenless.code, 1, "{}{}", tokenless.stdout, tokenless.stderr);
    let needs_token = format!(
        "error: {saved_arg}: desired.toml declares [github], so a saved plan is checked with the GitHub side too, \
         which needs a token: set GITHUB_TOKEN or GH_TOKEN\n"
    );
    assert_eq!(tokenless.stderr, needs_token);

    // Nothing in the file decides how it is checked: edited to say it was made without the
    // GitHub side, its GitHub changes removed, it is refused without the token and with it.
    let mut aws_only = whole.clone();
    aws_only["made_with"]["github"] = json!(false);
    aws_only["resource_changes"] = Value::Array(
        whole["resource_changes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|change| !change["address"].as_str().unwrap().starts_with("github_"))
            .cloned()
            .collect(),
    );
    std::fs::write(&saved, serde_json::to_string_pretty(&aws_only).unwrap()).unwrap();
    let tokenless = run(&account, None, &desired.path, &["apply", saved_arg]);
    assert_eq!((tokenless.code, tokenless.stderr.as_str()), (1, needs_token.as_str()));
    let refused = run(&account, Some(TOKEN), &desired.path, &["apply", saved_arg]);
    assert_eq!(refused.code, 4, "{}{}", refused.stdout, refused.stderr);
    assert!(
        refused.stderr.contains("it says it was made without the GitHub side, but desired.toml declares [github]"),
        "{}",
        refused.stderr
    );

    // Cut down to the one change that turns the nightly on, leaving fork approval loose.
    let mut cut = whole.clone();
    cut["resource_changes"] = Value::Array(
        whole["resource_changes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|change| change["address"] == "github_variable.NIGHTLY_ENABLED")
            .cloned()
            .collect(),
    );
    std::fs::write(&saved, serde_json::to_string_pretty(&cut).unwrap()).unwrap();
    let refused = run(&account, Some(TOKEN), &desired.path, &["apply", saved_arg]);
    assert_eq!(refused.code, 4, "{}{}", refused.stdout, refused.stderr);
    assert!(
        refused.stderr.contains("  - github_fork_pr_approval.rocm-bake-")
            && refused.stderr.contains("needs a change the plan does not hold"),
        "{}",
        refused.stderr
    );
    assert_eq!(account.writes().len(), writes, "nothing written to AWS");
    assert!(github_writes(&repository).is_empty(), "nothing written to GitHub");
}

/// One 502 from GitHub (a backend down behind its front end) is retried, like AWS's 5xx: plan
/// and drift go on.
#[tokio::test]
async fn one_github_502_is_retried_in_plan_and_drift() {
    let account = emulator().new_account().await;
    let repository = github().new_repository();
    codebuild_hook(&repository, true, &["workflow_job"]);
    let desired = desired_file(&with_github(&repository, ""));
    let mut env = account.env();
    env.push(("GITHUB_API_URL", github().endpoint().to_owned()));
    env.push(("GITHUB_TOKEN", TOKEN.to_owned()));
    env.push(("RECONCILE_RETRY_BASE_DELAY_MS", "50".to_owned()));
    for command in ["plan", "drift"] {
        github().fail(&repository, 1, 502);
        let run = reconcile_in(&env, &desired.path, &[command, "--format", "json"]);
        assert!([0, 2].contains(&run.code), "{command}: {}{}", run.stdout, run.stderr);
        let failed = github().log(&repository).iter().filter(|entry| entry["status"] == 502).count();
        assert!(failed >= 1, "the 502 was answered");
        assert!(run.stderr.contains("GitHub failed (502 Bad Gateway): trying again"), "{command}: {}", run.stderr);
    }
}
