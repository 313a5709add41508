//! What reviewers and schedules see: saved plans and their staleness, the drift check, the
//! repository variables, apply reports (partial ones included), Markdown, colour, and the
//! generated completions, man page and schema.

use std::process::Command;

use aws_sdk_ecr as ecr;
use reconcile_test_support::{emulator, emulator_python, workspace_root};
use serde_json::Value;

use crate::support::{
    OLD_14_DAY_POLICY, desired_file, put_lifecycle_policy, real_desired, reconcile, reconcile_with, small_account,
    small_account_with_runner, small_desired,
};

#[tokio::test]
async fn a_saved_plan_is_refused_when_a_touched_resource_moved_or_another_now_needs_a_change() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_desired(&["pytorch", "pytorch-cache", "vllm"]));
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    let client = ecr::Client::new(&account.sdk_config());
    client.delete_lifecycle_policy().repository_name("pytorch-cache").send().await.unwrap();

    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("plan.json");
    let saved_arg = saved.to_str().unwrap();
    let plan = reconcile(&account, &desired.path, &["plan", "--out", saved_arg]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    assert_eq!(file["resource_changes"].as_array().unwrap().len(), 1);
    assert!(file["observed_fingerprints"]["ecr_lifecycle_policy.pytorch-cache"].is_string());

    // The touched resource moves: someone puts the old policy back. Apply refuses, writes nothing.
    put_lifecycle_policy(&client, "pytorch-cache", OLD_14_DAY_POLICY).await;
    let writes = account.writes().len();
    let stale = reconcile(&account, &desired.path, &["apply", saved_arg]);
    assert_eq!(stale.code, 4, "{}{}", stale.stdout, stale.stderr);
    assert_eq!(
        stale.stderr,
        format!(
            "error: the saved plan {saved_arg} is stale, so nothing was changed:\n  - \
             ecr_lifecycle_policy.pytorch-cache has changed since the plan was made\nMake a new plan and review it again.\n"
        )
    );
    assert_eq!(account.writes().len(), writes);

    // A fresh plan; then an untouched resource moves (vllm's tags): the plan is no longer the
    // account's whole difference, and is refused (a plan is applied only as a whole: one cut
    // down to a subset is not the plan that was reviewed, and the file cannot tell the two apart).
    client.delete_lifecycle_policy().repository_name("pytorch-cache").send().await.unwrap();
    assert_eq!(reconcile(&account, &desired.path, &["plan", "--out", saved_arg]).code, 0);
    let tag = ecr::types::Tag::builder().key("owner").value("someone").build().unwrap();
    let vllm = format!("arn:aws:ecr:us-east-1:{}:repository/vllm", account.id);
    client.tag_resource().resource_arn(&vllm).tags(tag).send().await.unwrap();
    let writes = account.writes().len();
    let moved = reconcile(&account, &desired.path, &["apply", saved_arg]);
    assert_eq!(moved.code, 4, "{}{}", moved.stdout, moved.stderr);
    assert!(
        moved.stderr.contains(
            "  - ecr_repository.vllm needs a change the plan does not hold: it moved since the plan was made, or the \
             plan file was cut down\n"
        ),
        "{}",
        moved.stderr
    );
    assert_eq!(account.writes().len(), writes);
    // Planned again, it holds both, and applies exactly them.
    assert_eq!(reconcile(&account, &desired.path, &["plan", "--out", saved_arg]).code, 0);
    let applied = reconcile(&account, &desired.path, &["apply", saved_arg]);
    assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);
    let mut new_writes: Vec<String> = account.writes()[writes..].iter().map(ToString::to_string).collect();
    new_writes.sort();
    assert_eq!(new_writes, ["ecr:PutLifecyclePolicy", "ecr:UntagResource"], "exactly the saved changes");
    let plan = reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]);
    assert_eq!(plan.code, 0, "{}", plan.stdout);
}

#[tokio::test]
async fn a_saved_plan_is_refused_when_desired_toml_changed() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_desired(&["pytorch"]));
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("plan.json");
    assert_eq!(reconcile(&account, &desired.path, &["plan", "--out", saved.to_str().unwrap()]).code, 0);
    std::fs::write(&desired.path, small_desired(&["pytorch", "vllm"])).unwrap();
    let run = reconcile(&account, &desired.path, &["apply", saved.to_str().unwrap()]);
    assert_eq!(run.code, 4);
    assert!(run.stderr.contains("  - desired.toml has changed since the plan was made\n"), "{}", run.stderr);
    assert_eq!(account.writes(), []);
}

#[tokio::test]
async fn an_edited_saved_plan_is_refused_with_no_write() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account(&["pytorch"]));
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    let iam = aws_sdk_iam::Client::new(&account.sdk_config());
    let narrow = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"ecr:GetAuthorizationToken","Resource":"*"}]}"#;
    iam.put_role_policy()
        .role_name("rocm-bake-codebuild")
        .policy_name("rocm-bake-nightly")
        .policy_document(narrow)
        .send()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("plan.json");
    let saved_arg = saved.to_str().unwrap();
    assert_eq!(reconcile(&account, &desired.path, &["plan", "--out", saved_arg]).code, 0);

    // The classic attack on plan-in-one-job, apply-in-another: widen the policy in the file,
    // leave every fingerprint alone.
    let mut file: Value = serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    let after = &mut file["resource_changes"][0]["change"]["after"];
    assert!(after["document"].is_object(), "{file}");
    after["document"]["Statement"][0]["Action"] = serde_json::json!("*");
    std::fs::write(&saved, serde_json::to_string_pretty(&file).unwrap()).unwrap();
    let writes = account.writes().len();
    let run = reconcile(&account, &desired.path, &["apply", saved_arg]);
    assert_eq!(run.code, 4, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains(
            "  - the change to iam_role_policy.codebuild is not the one desired.toml and the account give now: the \
             plan file was edited\n"
        ),
        "{}",
        run.stderr
    );
    assert_eq!(account.writes().len(), writes, "nothing was written");

    // A change added to an otherwise untouched file, which the plan never made, is refused too.
    assert_eq!(reconcile(&account, &desired.path, &["plan", "--out", saved_arg]).code, 0);
    let mut file: Value = serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    let mut extra = file["resource_changes"][0].clone();
    extra["address"] = serde_json::json!("ecr_lifecycle_policy.pytorch");
    file["resource_changes"].as_array_mut().unwrap().push(extra);
    std::fs::write(&saved, serde_json::to_string_pretty(&file).unwrap()).unwrap();
    let run = reconcile(&account, &desired.path, &["apply", saved_arg]);
    assert_eq!(run.code, 4, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("  - ecr_lifecycle_policy.pytorch has no fingerprint in the plan file: it was edited\n"),
        "{}",
        run.stderr
    );
    assert_eq!(account.writes().len(), writes, "nothing was written");
}

#[tokio::test]
async fn drift_names_an_undeclared_repository_without_a_lifecycle_policy() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_desired(&["pytorch"]));
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    assert_eq!(reconcile(&account, &desired.path, &["drift"]).code, 0, "in sync");

    let client = ecr::Client::new(&account.sdk_config());
    client.create_repository().repository_name("atom-wheel-cache").send().await.unwrap();
    client.create_repository().repository_name("scratch").send().await.unwrap();
    put_lifecycle_policy(&client, "scratch", OLD_14_DAY_POLICY).await;

    let drift = reconcile(&account, &desired.path, &["drift"]);
    assert_eq!(drift.code, 2, "{}{}", drift.stdout, drift.stderr);
    assert!(
        drift.stdout.contains(
            "Error [D102] ecr_repository.atom-wheel-cache: repository `atom-wheel-cache` is not in desired.toml and has \
             NO lifecycle policy"
        ),
        "{}",
        drift.stdout
    );
    assert!(
        drift.stdout.contains("Warning [D101] ecr_repository.scratch: repository `scratch` is not in desired.toml")
    );
    let json = reconcile(&account, &desired.path, &["drift", "--format", "json"]);
    assert_eq!(json.code, 2);
    let json: Value = serde_json::from_str(&json.stdout).unwrap();
    let codes: Vec<&str> = json["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap()).collect();
    // `scratch` still has the 14-day `tagStatus any` rule that once expired the live nightly tag.
    assert_eq!(codes, ["D102", "D103", "D101"]);
    // The issue and the job summary are public: what desired.toml does not declare (and no bake
    // file names) is counted there, each count at its code's severity (D102 is an error, as
    // `explain` says), and named only by a maintainer's private run, as above.
    let markdown = reconcile(&account, &desired.path, &["drift", "--format", "markdown"]);
    assert!(markdown.stdout.contains("- Error `D102` 1 finding(s) of this code"), "{}", markdown.stdout);
    assert!(markdown.stdout.contains("- Warning `D101` 1 finding(s) of this code"), "{}", markdown.stdout);
    assert!(
        !markdown.stdout.contains("scratch") && !markdown.stdout.contains("atom-wheel-cache"),
        "{}",
        markdown.stdout
    );
    // A plan does not survey (that is the drift check's job), but it does check every live
    // lifecycle policy, declared or not: it changes nothing, so it exits 0.
    let plan = reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]);
    assert_eq!(plan.code, 0, "{}{}", plan.stdout, plan.stderr);
    assert!(
        plan.stdout.contains(
            "Error [D103] ecr_lifecycle_policy.scratch: the live lifecycle policy's rule 1 selects tagged images"
        ),
        "{}",
        plan.stdout
    );
    assert!(!plan.stdout.contains("D101"), "{}", plan.stdout);
}

/// The 27 repositories desired.toml declares, sorted.
const REPOSITORIES: [&str; 27] = [
    "aiter-wheel",
    "aiter-wheel-cache",
    "atom-wheel",
    "atom-wheel-cache",
    "flash-attention-wheel",
    "flash-attention-wheel-cache",
    "pytorch",
    "pytorch-base",
    "pytorch-base-cache",
    "pytorch-cache",
    "pytorch-wheel",
    "pytorch-wheel-cache",
    "rocm-base",
    "sglang",
    "sglang-cache",
    "sglang-wheel",
    "sglang-wheel-cache",
    "torchaudio-wheel",
    "torchaudio-wheel-cache",
    "torchvision-wheel",
    "torchvision-wheel-cache",
    "triton-wheel",
    "triton-wheel-cache",
    "vllm",
    "vllm-cache",
    "vllm-wheel",
    "vllm-wheel-cache",
];

#[tokio::test]
async fn outputs_prints_the_runbooks_lines_and_the_ci_roles_with_nightly_enabled_last() {
    let account = emulator().new_account().await;
    let run = reconcile(&account, &real_desired(), &["outputs"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let id = &account.id;
    assert_eq!(
        run.stdout,
        format!(
            "gh variable set CODEBUILD_PROJECT        --body rocm-bake\n\
             gh variable set ECR_REGISTRY             --body {id}.dkr.ecr.us-east-1.amazonaws.com\n\
             gh variable set AWS_REGION               --body us-east-1\n\
             gh variable set NIGHTLY_ARCHES           --body gfx1201\n\
             gh variable set RECONCILE_PLAN_ROLE_ARN  --body arn:aws:iam::{id}:role/rocm-bake-reconcile-plan\n\
             gh variable set RECONCILE_DRIFT_ROLE_ARN --body arn:aws:iam::{id}:role/rocm-bake-reconcile-drift\n\
             gh variable set RECONCILE_APPLY_ROLE_ARN --body arn:aws:iam::{id}:role/rocm-bake-reconcile-apply\n\
             gh variable set NIGHTLY_ENABLED          --body true\n\
             # The nightly's --ensure-ecr may make only these 27 repositories, missing ones, each with this \
             deployment's mark,\n\
             # the only create its role allows (any other name, or an untagged create, is refused with AccessDenied \
             at once, before the build):\n\
             {}\
             #   aws ecr create-repository --region us-east-1 --repository-name \"$REPOSITORY\" --tags \
             Key=reconcile:deployment,Value=rocm-bake\n",
            REPOSITORIES.iter().map(|name| format!("#   {name}\n")).collect::<String>()
        )
    );
    let json = reconcile(&account, &real_desired(), &["outputs", "--format", "json"]);
    let json: Value = serde_json::from_str(&json.stdout).unwrap();
    let names: Vec<&str> = json.as_array().unwrap().iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "CODEBUILD_PROJECT",
            "ECR_REGISTRY",
            "AWS_REGION",
            "NIGHTLY_ARCHES",
            "RECONCILE_PLAN_ROLE_ARN",
            "RECONCILE_DRIFT_ROLE_ARN",
            "RECONCILE_APPLY_ROLE_ARN",
            "NIGHTLY_ENABLED"
        ]
    );
}

/// The command `outputs` prints for the nightly's `--ensure-ecr` is the one create the runner's
/// role allows, of the repositories it lists: held to the role's live policies and boundary as IAM
/// would, an untagged create (the old script's) is refused at once, one with another
/// deployment's mark or a tag more too, and so is a name desired.toml does not declare; the
/// printed one makes a missing declared repository this deployment then manages.
#[tokio::test]
async fn the_nightlys_ensure_ecr_makes_a_repository_only_as_outputs_says() {
    let account = emulator().new_account().await;
    let copy = crate::support::real_copy();
    let applied = reconcile(&account, &copy.path, &["apply", "--auto-approve"]);
    assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);
    let outputs = reconcile(&account, &copy.path, &["outputs"]);
    let command = outputs.stdout.lines().find(|l| l.contains("aws ecr create-repository")).unwrap();
    let tags = command.rsplit("--tags ").next().unwrap();
    let (key, value) = tags.strip_prefix("Key=").unwrap().split_once(",Value=").unwrap();
    assert!(outputs.stdout.contains("\n#   vllm-cache\n"), "{}", outputs.stdout);
    // A declared repository gone missing (deleted by hand): the nightly makes it again.
    let admin = ecr::Client::new(&account.sdk_config());
    admin.delete_repository().repository_name("vllm-cache").send().await.unwrap();
    let (runner, gate) = crate::permissions::enforced(&account, "rocm-bake-codebuild").await;
    let ecr = ecr::Client::new(&runner.sdk_config());
    let tag = |k: &str, v: &str| ecr::types::Tag::builder().key(k).value(v).build().unwrap();
    let create = |name: &str, tags: Vec<ecr::types::Tag>| {
        let ecr = ecr.clone();
        let name = name.to_owned();
        async move { ecr.create_repository().repository_name(name).set_tags(Some(tags)).send().await }
    };
    let untagged = create("vllm-cache", vec![]).await.unwrap_err();
    assert_eq!(untagged.into_service_error().meta().code(), Some("AccessDeniedException"));
    assert!(create("vllm-cache", vec![tag(key, "team-x")]).await.is_err(), "another deployment's mark");
    assert!(create("vllm-cache", vec![tag(key, value), tag("team", "x")]).await.is_err(), "a tag more");
    assert!(create("new-target", vec![tag(key, value)]).await.is_err(), "a name desired.toml does not declare");
    create("vllm-cache", vec![tag(key, value)]).await.expect("the printed create");
    let refused = gate.refused();
    assert_eq!(refused.len(), 4, "{refused:#?}");
    assert!(
        refused.iter().all(|r| r.contains("ecr:CreateRepository") || r.contains("ecr:TagResource")),
        "{refused:#?}"
    );
    drop(gate);
    // This deployment's, declared: the next plan gives it its lifecycle policy, as any other.
    let plan = reconcile(&account, &copy.path, &["plan", "--format", "json"]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    let changes = crate::support::json_changes(&plan.stdout);
    assert!(changes.contains(&"create ecr_lifecycle_policy.vllm-cache".to_owned()), "{changes:?}");
    assert!(!changes.iter().any(|c| c.contains("ecr_repository.vllm-cache") && c.starts_with("create")), "{changes:?}");
}

#[tokio::test]
async fn a_partial_apply_skips_dependents_goes_on_with_the_rest_and_reports_it() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account_with_runner(&["pytorch"]));
    account.reject_create_project(1, "the-image-does-not-exist");
    let apply = reconcile(&account, &desired.path, &["apply", "--auto-approve", "--format", "json"]);
    assert_eq!(apply.code, 1, "{}{}", apply.stdout, apply.stderr);
    let report: Value = serde_json::from_str(&apply.stdout).expect("stdout is only the report");
    let outcome =
        |address: &str| report["results"].as_array().unwrap().iter().find(|r| r["address"] == address).unwrap().clone();
    assert_eq!(outcome("codebuild_project.runner")["outcome"], "failed");
    assert!(
        outcome("codebuild_project.runner")["error"].as_str().unwrap().contains("Invalid project environment"),
        "{report:#}"
    );
    assert_eq!(outcome("codebuild_webhook.runner")["outcome"], "skipped");
    assert_eq!(outcome("codebuild_webhook.runner")["because"], "codebuild_project.runner");
    assert_eq!(outcome("ecr_repository.pytorch")["outcome"], "applied");
    assert_eq!(
        report["summary"],
        serde_json::json!({"applied": 7, "failed": 1, "skipped": 1, "not_started": 0, "left_for_an_administrator": 0})
    );
    // Progress went to stderr, one line as each resource starts and finishes.
    assert!(apply.stderr.contains("codebuild_project.runner: Creation failed after"), "{}", apply.stderr);
    assert!(apply.stderr.contains("codebuild_webhook.runner: Skipped, because codebuild_project.runner did not apply"));

    // The next apply picks up what is left, and says so in Markdown for the PR.
    let summary = tempfile::NamedTempFile::new().unwrap();
    let again = reconcile_with(
        &account,
        &desired.path,
        &["apply", "--auto-approve", "--format", "markdown"],
        &[("GITHUB_STEP_SUMMARY", summary.path().to_str().unwrap())],
    );
    assert_eq!(again.code, 0, "{}{}", again.stdout, again.stderr);
    assert!(again.stdout.contains("**Apply complete: 2 resources changed.**"), "{}", again.stdout);
    assert!(again.stdout.contains("- `codebuild_project.runner`\n- `codebuild_webhook.runner`"), "{}", again.stdout);
    assert_eq!(std::fs::read_to_string(summary.path()).unwrap(), format!("{}\n", again.stdout));

    // Nothing left to do is still a report.
    let nothing = reconcile(&account, &desired.path, &["apply", "--auto-approve", "--format", "json"]);
    let nothing: Value = serde_json::from_str(&nothing.stdout).unwrap();
    assert_eq!(nothing["succeeded"], true);
    assert_eq!(nothing["results"], serde_json::json!([]));
}

#[tokio::test]
async fn plan_markdown_goes_to_stdout_and_the_step_summary() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account(&["pytorch"]));
    let summary = tempfile::NamedTempFile::new().unwrap();
    let run = reconcile_with(
        &account,
        &desired.path,
        &["plan", "--format", "markdown"],
        &[("GITHUB_STEP_SUMMARY", summary.path().to_str().unwrap())],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("**Plan: 7 to add, 0 to change, 0 to destroy**"), "{}", run.stdout);
    assert!(run.stdout.contains("<details><summary><code>+ iam_role.codebuild</code> will be created</summary>"));
    assert_eq!(std::fs::read_to_string(summary.path()).unwrap(), format!("{}\n", run.stdout));
}

#[tokio::test]
async fn colour_follows_the_flag_and_no_color() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_desired(&["pytorch"]));
    let always = reconcile(&account, &desired.path, &["plan", "--color", "always"]);
    assert!(always.stdout.contains("\x1b[32m  + ecr_repository.pytorch {\x1b[0m"), "{:?}", always.stdout);
    // Not a terminal here, so `auto` means no colour; NO_COLOR and `never` mean none anywhere.
    for (args, env) in
        [(&["plan"][..], &[][..]), (&["plan", "--color", "never"], &[]), (&["plan"], &[("NO_COLOR", "1")])]
    {
        let run = reconcile_with(&account, &desired.path, args, env);
        assert!(!run.stdout.contains('\x1b'), "{args:?} {env:?}");
    }
    // On a terminal, `auto` colours, unless NO_COLOR is set (to anything but empty).
    let plan = format!("{} --desired {} plan", env!("CARGO_BIN_EXE_reconcile"), desired.path.display());
    let coloured = on_a_terminal(&account, &plan, &[]);
    assert!(coloured.contains("\x1b[32m  + ecr_repository.pytorch {\x1b[0m"), "{coloured:?}");
    assert!(coloured.contains("\x1b[1mPlan: 2 to add, 0 to change, 0 to destroy.\x1b[0m"), "{coloured:?}");
    let plain = on_a_terminal(&account, &plan, &[("NO_COLOR", "1")]);
    assert!(plain.contains("  + ecr_repository.pytorch {"), "{plain:?}");
    assert!(!plain.contains('\x1b'), "{plain:?}");
}

/// Runs `command` on a pseudo-terminal (`script`, util-linux) and returns what the terminal showed.
fn on_a_terminal(account: &reconcile_test_support::TestAccount, command: &str, env: &[(&str, &str)]) -> String {
    let output = Command::new("script")
        .args(["--quiet", "--return", "--command", command, "/dev/null"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(account.env())
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("script (util-linux) runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stdout));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Every subcommand of `reconcile` and its long flags, as its own `--help` lists them.
fn subcommands_and_flags() -> Vec<(String, Vec<String>)> {
    let help = |args: &[&str]| {
        let output = crate::support::command(None).args(args).arg("--help").output().unwrap();
        String::from_utf8(output.stdout).unwrap()
    };
    let top = help(&[]);
    let commands: Vec<String> = top
        .split("Commands:\n")
        .nth(1)
        .expect("a Commands section")
        .lines()
        .take_while(|line| !line.is_empty())
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect();
    assert!(commands.len() >= 8, "{commands:?}");
    commands
        .into_iter()
        .map(|command| {
            let flags = help(&[&command])
                .split_whitespace()
                .filter_map(|word| word.strip_prefix("--"))
                .map(|flag| flag.trim_end_matches(|c: char| !c.is_ascii_alphanumeric()))
                .filter(|flag| !flag.is_empty() && *flag != "help")
                .map(|flag| format!("--{flag}"))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            (command, flags)
        })
        .collect()
}

#[tokio::test]
async fn completions_and_man_pages_cover_every_subcommand_and_flag() {
    let account = emulator().new_account().await;
    let desired = real_desired();
    let all = subcommands_and_flags();
    assert!(all.iter().any(|(command, flags)| command == "plan" && flags.contains(&"--detailed-exitcode".to_owned())));
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let completions = reconcile(&account, &desired, &["completions", shell]).stdout;
        for (command, flags) in &all {
            assert!(completions.contains(command.as_str()), "{shell}: no `{command}`");
            for flag in flags {
                let written = if shell == "fish" { format!("-l {}", &flag[2..]) } else { flag.clone() };
                assert!(completions.contains(&written), "{shell}: no `{command} {flag}`");
            }
        }
    }
    let man = reconcile(&account, &desired, &["man"]).stdout;
    for (command, flags) in &all {
        let page = man
            .split(".TH ")
            .find(|page| {
                page.starts_with(&format!("reconcile\\-{command} "))
                    || page.starts_with(&format!("reconcile-{command} "))
            })
            .unwrap_or_else(|| panic!("no man page for `reconcile {command}`"));
        for flag in flags {
            assert!(page.contains(&flag.replace('-', "\\-")), "man page of `{command}` has no {flag}");
        }
    }
}

#[tokio::test]
async fn completions_man_page_and_schema_are_generated() {
    let account = emulator().new_account().await;
    let desired = real_desired();
    for shell in ["bash", "zsh", "fish"] {
        let run = reconcile(&account, &desired, &["completions", shell]);
        assert_eq!(run.code, 0);
        assert!(run.stdout.contains("reconcile"), "{shell}");
    }
    let man = reconcile(&account, &desired, &["man"]);
    assert!(man.stdout.starts_with(".ie \\n(.g .ds Aq"), "{}", &man.stdout[..100]);
    assert!(man.stdout.contains("drift"));

    // The schema accepts the real desired.toml and every example, and rejects an unknown key.
    let schema = reconcile(&account, &desired, &["schema"]);
    let dir = tempfile::tempdir().unwrap();
    let schema_path = dir.path().join("schema.json");
    std::fs::write(&schema_path, &schema.stdout).unwrap();
    let check = |toml: &std::path::Path| {
        Command::new(emulator_python())
            .args([
                "-c",
                "import json, sys, tomllib, jsonschema\n\
                 jsonschema.validate(tomllib.load(open(sys.argv[2], 'rb')), json.load(open(sys.argv[1])))",
            ])
            .arg(&schema_path)
            .arg(toml)
            .output()
            .unwrap()
    };
    assert!(check(&desired).status.success(), "{}", String::from_utf8_lossy(&check(&desired).stderr));
    let example = workspace_root().join("examples/minimal.desired.toml");
    assert!(check(&example).status.success());
    let typo =
        desired_file(&small_desired(&["pytorch"]).replace("[ecr.defaults]", "[ecr.defaults]\nlifecycle_polcy = \"x\""));
    let rejected = check(&typo.path);
    assert!(!rejected.status.success());
    assert!(String::from_utf8_lossy(&rejected.stderr).contains("lifecycle_polcy"));
    assert_eq!(account.requests(), []);
}

#[tokio::test]
async fn a_saved_plan_holds_no_secret() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account_with_runner(&["pytorch"]));
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    // Change the webhook so the saved plan touches it.
    let manual = desired_file(&std::fs::read_to_string(&desired.path).unwrap().replace("1234567", "7654321"));
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("plan.json");
    let plan = reconcile(&account, &manual.path, &["plan", "--out", saved.to_str().unwrap()]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    let text = std::fs::read_to_string(&saved).unwrap();
    assert!(text.contains("codebuild_webhook.runner"));
    assert!(!text.to_lowercase().contains("secret"), "{text}");
}

#[tokio::test]
async fn a_reader_that_goes_away_ends_the_run_quietly() {
    let account = emulator().new_account().await;
    // `reconcile plan | head -0`: the pipe is closed before the plan is written.
    let mut child = crate::support::command(Some(&real_desired()))
        .arg("plan")
        .envs(account.env())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[tokio::test]
async fn outputs_quotes_every_value_for_the_shell_and_refuses_control_characters() {
    let account = emulator().new_account().await;
    let hostile = std::fs::read_to_string(real_desired())
        .unwrap()
        .replacen("bake = \"rocm-bake.hcl\"\n", "", 1)
        .replace("arches = \"gfx1201\"", "arches = \"gfx1201; rm -rf / $(id) 'x'\"");
    assert!(hostile.contains("rm -rf"), "the real desired.toml sets [nightly] arches");
    let desired = desired_file(&hostile);
    let run = reconcile(&account, &desired.path, &["outputs"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let line = run.stdout.lines().find(|l| l.contains("NIGHTLY_ARCHES")).unwrap();
    assert_eq!(line, r#"gh variable set NIGHTLY_ARCHES           --body 'gfx1201; rm -rf / $(id) '\''x'\'''"#);
    // What a shell makes of the quoted word is the value, whole, and nothing runs.
    let quoted = line.split_once("--body ").unwrap().1;
    let echoed = Command::new("sh").args(["-c", &format!("printf %s {quoted}")]).output().unwrap();
    assert_eq!(String::from_utf8(echoed.stdout).unwrap(), "gfx1201; rm -rf / $(id) 'x'");

    let control = desired_file(&hostile.replace("gfx1201; rm -rf / $(id) 'x'", "gfx1201\\u001b[2J"));
    let run = reconcile(&account, &control.path, &["validate"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("`nightly.arches`: holds U+001B, a control character"), "{}", run.stderr);
}

#[tokio::test]
async fn logs_are_plain_text_off_a_terminal_and_never_hold_a_secret_at_any_level() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account_with_runner(&["pytorch"]));
    for args in [&["plan", "-v"][..], &["plan", "-vv", "--color", "never"]] {
        let run = reconcile(&account, &desired.path, args);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(run.stderr.contains("AWS requests"), "{}", run.stderr);
        assert!(!run.stderr.contains('\x1b'), "{args:?}: {:?}", run.stderr);
    }
    // The most verbose apply there is: it creates the webhook, whose response holds its secret.
    let apply =
        reconcile_with(&account, &desired.path, &["apply", "--auto-approve", "-vv"], &[("RECONCILE_LOG", "trace")]);
    assert_eq!(apply.code, 0, "{}", apply.stderr);
    assert!(apply.stderr.lines().count() > 100, "trace logging is on");
    let secrets = emulator().webhook_secrets();
    assert!(!secrets.is_empty());
    let output = format!("{}{}", apply.stdout, apply.stderr);
    for secret in secrets {
        assert!(!output.contains(&secret), "a webhook secret is in the output");
    }
    let credentials = account.env();
    for (name, value) in credentials.iter().filter(|(name, _)| name.contains("SECRET") || name.contains("TOKEN")) {
        assert!(!output.contains(value.as_str()), "{name} is in the output");
    }
}

/// The saved-plan checks hold for every kind of change: a create, an in-place update, and the
/// delete of an undeclared inline policy (a member address), all in one saved plan.
#[tokio::test]
async fn a_saved_plan_with_a_create_an_update_and_a_member_delete_applies_exactly() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account(&["pytorch"]));
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    crate::support::put_legacy_inline_policy(&account).await;
    let ecr = ecr::Client::new(&account.sdk_config());
    put_lifecycle_policy(&ecr, "pytorch", OLD_14_DAY_POLICY).await;
    let more = desired_file(&small_account(&["pytorch", "vllm"]));

    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("plan.json");
    let saved_arg = saved.to_str().unwrap();
    let plan = reconcile(&account, &more.path, &["plan", "--out", saved_arg, "--format", "json"]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    let changes = crate::support::json_changes(&plan.stdout);
    assert!(changes.contains(&"delete iam_role_policy.codebuild/legacy".to_owned()), "{changes:?}");
    assert!(changes.contains(&"create ecr_repository.vllm".to_owned()), "{changes:?}");
    assert!(changes.contains(&"update ecr_lifecycle_policy.pytorch".to_owned()), "{changes:?}");

    let apply = reconcile(&account, &more.path, &["apply", saved_arg, "--allow-delete"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    assert_eq!(reconcile(&account, &more.path, &["plan", "--detailed-exitcode"]).code, 0);
}
