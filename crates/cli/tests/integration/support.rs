//! Running the binary against an emulator account, and making its output stable for snapshots.

use std::path::{Path, PathBuf};

use reconcile_test_support::TestAccount;

use crate::permissions::Watch;

/// What one run of `reconcile` did.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// The age-based rule the nightly's repositories used to carry, which also expired the live tag.
pub const OLD_14_DAY_POLICY: &str = r#"{"rules":[{"rulePriority":1,"description":"Expire images older than 14 days","selection":{"tagStatus":"any","countType":"sinceImagePushed","countUnit":"days","countNumber":14},"action":{"type":"expire"}}]}"#;

/// Runs `reconcile --desired <desired> <args>` with the account's environment and no stdin.
pub fn reconcile(account: &TestAccount, desired: &Path, args: &[&str]) -> Run {
    reconcile_with(account, desired, args, &[])
}

/// The same, with more environment variables.
pub fn reconcile_with(account: &TestAccount, desired: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut all: Vec<(&str, String)> = account.env();
    all.extend(env.iter().map(|(name, value)| (*name, (*value).to_owned())));
    reconcile_in(&all, desired, args)
}

/// The one way a test makes a `reconcile` command (ripgrep's `tests/util.rs`): the binary
/// under test, `--desired <desired>` when given, an environment of `PATH` alone (a test adds
/// what it means to give), no stdin.
pub fn command(desired: Option<&Path>) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_reconcile"));
    command.env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default()).stdin(std::process::Stdio::null());
    if let Some(desired) = desired {
        command.arg("--desired").arg(desired);
    }
    command
}

/// `account`'s environment, with AWS reached through `endpoint` (a fault proxy) instead.
pub fn env_through(account: &TestAccount, endpoint: &str) -> Vec<(&'static str, String)> {
    let mut env: Vec<(&str, String)> =
        account.env().into_iter().filter(|(name, _)| *name != "AWS_ENDPOINT_URL").collect();
    env.push(("AWS_ENDPOINT_URL", endpoint.to_owned()));
    env
}

/// `reconcile apply --auto-approve` on `account` through the proxy at `endpoint`, not waited
/// for, its stdout and stderr piped.
pub fn spawn_apply(account: &TestAccount, endpoint: &str, desired: &Path) -> std::process::Child {
    command(Some(desired))
        .args(["apply", "--auto-approve"])
        .envs(env_through(account, endpoint))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary starts")
}

/// Runs `reconcile --desired <desired> <args>` with exactly `env` (and `PATH`), no stdin, and
/// at most three minutes to finish: a guard against a run that hangs, not a measure of speed (a
/// plan of a thousand repositories takes tens of seconds on two loaded cores; benchmarks measure
/// speed). Whatever it writes is held to the derived apply policy.
pub fn reconcile_in(env: &[(&str, String)], desired: &Path, args: &[&str]) -> Run {
    let watch = Watch::start(env);
    let mut command = command(Some(desired));
    command.args(args).envs(env.iter().map(|(name, value)| (name, value)));
    let output = assert_cmd::Command::from_std(command)
        .write_stdin("")
        .timeout(std::time::Duration::from_secs(180))
        .output()
        .expect("the binary runs");
    watch.check(desired, None);
    Run {
        code: output.status.code().expect("exited, not killed"),
        stdout: String::from_utf8(output.stdout).expect("utf-8 stdout"),
        stderr: String::from_utf8(output.stderr).expect("utf-8 stderr"),
    }
}

/// A temporary directory holding one desired-state file.
pub struct DesiredFile {
    _dir: tempfile::TempDir,
    pub path: PathBuf,
}

pub fn desired_file(text: &str) -> DesiredFile {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("desired.toml");
    std::fs::write(&path, text).expect("write desired.toml");
    DesiredFile { _dir: dir, path }
}

/// The repository's own desired.toml: the real account.
pub fn real_desired() -> PathBuf {
    reconcile_test_support::workspace_root().join("desired.toml")
}

/// A copy of the repository's own desired.toml and the bake file it names, in a directory of
/// its own: what a command that writes desired.toml (`import`, `declare`) may change.
pub fn real_copy() -> DesiredFile {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let root = reconcile_test_support::workspace_root();
    for file in ["desired.toml", "rocm-bake.hcl"] {
        std::fs::copy(root.join(file), dir.path().join(file)).expect("copy the repository's file");
    }
    let path = dir.path().join("desired.toml");
    DesiredFile { _dir: dir, path }
}

/// `reconcile import`: desired.toml lists, for the next apply to take over, every declared
/// resource of the account that exists without this deployment's mark (an account seeded as the
/// setup script or a person made it). What a maintainer adopting reconcile runs first.
pub fn import(account: &TestAccount, desired: &Path) -> Run {
    let run = reconcile(account, desired, &["import"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    run
}

/// The mark reconcile writes on what it makes for the small fixtures (which name no
/// `deployment`): what a test gives a resource it makes out of band as reconcile would have.
pub const MARK: (&str, &str) = ("reconcile:deployment", "default");

/// A `CreateBucketConfiguration` that makes a bucket with the small fixtures' mark, as
/// reconcile makes one (for us-east-1: no location constraint).
pub fn marked_bucket() -> aws_sdk_s3::types::CreateBucketConfiguration {
    let tag = aws_sdk_s3::types::Tag::builder().key(MARK.0).value(MARK.1).build().unwrap();
    aws_sdk_s3::types::CreateBucketConfiguration::builder().tags(tag).build()
}

/// The small fixtures' mark as an ECR tag.
pub fn ecr_mark() -> aws_sdk_ecr::types::Tag {
    aws_sdk_ecr::types::Tag::builder().key(MARK.0).value(MARK.1).build().unwrap()
}

/// A small desired state: these repositories with the keep-3-untagged policy.
pub fn small_desired(repositories: &[&str]) -> String {
    let mut text = String::from(
        r#"region = "us-east-1"

[ecr.defaults]
lifecycle_policy = "keep-3-untagged"
tags = { project = "rocm-bake" }

[ecr.lifecycle_policies.keep-3-untagged]
rules = [
  { rulePriority = 1, selection = { tagStatus = "untagged", countType = "imageCountMoreThan", countNumber = 3 }, action = { type = "expire" } },
]

[ecr.repositories]
"#,
    );
    for name in repositories {
        text.push_str(&format!("{name} = {{}}\n"));
    }
    text
}

/// What the binary under test names as having made a plan: `reconcile 0.1.0 (commit ...)`,
/// from its `--version` (`reconcile 0.1.0 (commit ..., target)`).
pub fn planned_by() -> &'static str {
    static PLANNED_BY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PLANNED_BY.get_or_init(|| {
        let output = command(None).arg("--version").output().unwrap();
        let version = String::from_utf8(output.stdout).unwrap();
        let (head, _target) = version.trim().rsplit_once(", ").expect("`reconcile X (commit C, TARGET)`");
        format!("{head})")
    })
}

/// Replaces what differs between runs (the account id, elapsed times, the commit the binary was
/// built from) with placeholders.
pub fn redact(text: &str, account: &TestAccount) -> String {
    redact_attributions(&redact_run(text, account))
}

/// What a CloudTrail attribution holds that differs between runs: the event's time, its id and
/// the SDK's user agent.
pub fn redact_attributions(text: &str) -> String {
    let mut out = text.to_owned();
    for (start, end, placeholder) in
        [("user agent `", "`", "user agent `[USER AGENT]`"), ("event `", "`", "event `[EVENT]`")]
    {
        let mut redacted = String::new();
        let mut rest = out.as_str();
        while let Some(at) = rest.find(start) {
            redacted.push_str(&rest[..at]);
            let after = &rest[at + start.len()..];
            let Some(close) = after.find(end) else {
                redacted.push_str(&rest[at..]);
                rest = "";
                break;
            };
            redacted.push_str(placeholder);
            rest = &after[close + end.len()..];
        }
        redacted.push_str(rest);
        out = redacted;
    }
    // ` at 2026-12-01T19:29:52Z:` in an attribution line.
    let mut redacted = String::new();
    let mut rest = out.as_str();
    while let Some(at) = rest.find(" at 20") {
        let stamp = &rest[at + 4..];
        if stamp.len() >= 21 && stamp.as_bytes()[10] == b'T' && stamp.as_bytes()[19] == b'Z' {
            redacted.push_str(&rest[..at + 4]);
            redacted.push_str("[TIME]");
            rest = &stamp[20..];
        } else {
            redacted.push_str(&rest[..at + 4]);
            rest = stamp;
        }
    }
    redacted.push_str(rest);
    redacted
}

fn redact_run(text: &str, account: &TestAccount) -> String {
    text.replace(&account.id, "[ACCOUNT]")
        .replace(planned_by(), "reconcile [VERSION]")
        .lines()
        .map(|line| match line.rsplit_once(" after ") {
            Some((head, tail)) if tail.ends_with('s') && tail[..tail.len() - 1].parse::<f64>().is_ok() => {
                format!("{head} after [ELAPSED]")
            }
            _ => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The addresses and actions of a JSON plan, one `action address` string each.
pub fn json_changes(plan_json: &str) -> Vec<String> {
    let plan: serde_json::Value = serde_json::from_str(plan_json).expect("the JSON plan parses");
    plan["resource_changes"]
        .as_array()
        .expect("resource_changes is an array")
        .iter()
        .map(|change| {
            format!("{} {}", change["change"]["actions"][0].as_str().unwrap(), change["address"].as_str().unwrap())
        })
        .collect()
}

/// The sccache bucket and the service role, as the real desired.toml declares them.
pub const BUCKET_AND_ROLE: &str = r#"
[s3.buckets.sccache]
name = "rocm-bake-sccache-${account_id}"
tags = { project = "rocm-bake" }
lifecycle_rules = [{ id = "expire-after-30-days", expiration_days = 30 }]

[iam.roles.codebuild]
name = "rocm-bake-codebuild"
description = "Service role of the rocm-bake CodeBuild runner"
trusted_services = ["codebuild.amazonaws.com"]
policy_name = "rocm-bake-nightly"
tags = { project = "rocm-bake" }
"#;

/// A small desired state with the bucket and the role.
pub fn small_account(repositories: &[&str]) -> String {
    format!("{}{BUCKET_AND_ROLE}", small_desired(repositories))
}

/// The runner project and its webhook, as the real desired.toml declares them.
pub const RUNNER: &str = r#"
[codebuild.projects.runner]
name = "rocm-bake"
description = "Ephemeral GitHub Actions runner for the ROCm nightly image builds"
source_location = "https://github.com/ROCm/rocm-bake"
service_role = "codebuild"
build_timeout_hours = 4
tags = { project = "rocm-bake" }

[codebuild.projects.runner.webhook]
filter_groups = [
  [{ type = "EVENT", pattern = "WORKFLOW_JOB_QUEUED" }, { type = "REPOSITORY_NAME", pattern = "^rocm-bake$" }],
  [{ type = "EVENT", pattern = "WORKFLOW_JOB_QUEUED" }, { type = "ACTOR_ACCOUNT_ID", pattern = "1234567" }],
]
"#;

/// A small desired state with the bucket, the role and the runner.
pub fn small_account_with_runner(repositories: &[&str]) -> String {
    format!("{}{RUNNER}", small_account(repositories))
}

/// Runs `reconcile apply <args>` on a terminal (a pseudo-terminal from `script`, util-linux),
/// typing `answer` at the prompt. Returns the exit code and everything the terminal showed.
pub fn apply_on_a_terminal(account: &TestAccount, desired: &Path, args: &str, answer: &str) -> (i32, String) {
    on_a_terminal(account, desired, &format!("apply {args}"), answer)
}

/// Runs `reconcile <args>` on a terminal, typing `answer` at its prompt.
pub fn on_a_terminal(account: &TestAccount, desired: &Path, args: &str, answer: &str) -> (i32, String) {
    use std::io::Write;
    let watch = Watch::start(&account.env());
    let command = format!("{} --desired {} {args}", env!("CARGO_BIN_EXE_reconcile"), desired.display());
    let mut child = std::process::Command::new("script")
        .args(["--quiet", "--return", "--command", &command, "/dev/null"])
        .envs(account.env())
        .env("NO_COLOR", "1")
        // A person's terminal, even when the tests run in a CI job: its output is private.
        .env_remove("GITHUB_ACTIONS")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("script (util-linux) runs");
    child.stdin.take().unwrap().write_all(format!("{answer}\n").as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    watch.check(desired, None);
    (output.status.code().unwrap(), String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Puts a lifecycle policy out of band, as someone at the console would.
pub async fn put_lifecycle_policy(client: &aws_sdk_ecr::Client, repository: &str, text: &str) {
    client.put_lifecycle_policy().repository_name(repository).lifecycle_policy_text(text).send().await.unwrap();
}

/// Puts an inline policy desired.toml does not declare, `legacy` (`s3:*` on everything), on the
/// role, as the old setup script's author once did by hand. Returns the document.
pub async fn put_legacy_inline_policy(account: &TestAccount) -> &'static str {
    let wide = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"}]}"#;
    aws_sdk_iam::Client::new(&account.sdk_config())
        .put_role_policy()
        .role_name("rocm-bake-codebuild")
        .policy_name("legacy")
        .policy_document(wide)
        .send()
        .await
        .unwrap();
    wide
}

/// The pushes a build makes to a repository.
const PUSH: [&str; 5] = [
    "ecr:BatchCheckLayerAvailability",
    "ecr:CompleteLayerUpload",
    "ecr:InitiateLayerUpload",
    "ecr:PutImage",
    "ecr:UploadLayerPart",
];

/// The repositories of `names` a build on the runner may push to as the account stands: the
/// runner's role's live policies and boundary evaluated as IAM would, with each repository's
/// live tags.
pub async fn pushable(account: &TestAccount, names: &[String]) -> std::collections::BTreeSet<String> {
    use reconcile_iam::evaluate::{Context, Principal, Request};
    let (policies, boundary) = crate::permissions::live_policies(account, "rocm-bake-codebuild").await;
    let boundary = boundary.map(|(_, document)| document);
    let runner = Principal { policies: &policies, boundary: boundary.as_ref() };
    let ecr = aws_sdk_ecr::Client::new(&account.sdk_config());
    let mut pushable = std::collections::BTreeSet::new();
    for name in names {
        let arn = format!("arn:aws:ecr:us-east-1:{}:repository/{name}", account.id);
        let tags = ecr.list_tags_for_resource().resource_arn(&arn).send().await.unwrap();
        let context = tags.tags().iter().fold(Context::new(), |context, tag| {
            context.with(&format!("aws:ResourceTag/{}", tag.key()), &[tag.value()])
        });
        if PUSH.iter().all(|action| runner.allows(Request { action, resource: &arn, context: &context })) {
            pushable.insert(name.clone());
        }
    }
    pushable
}

/// The `change` of one address in a JSON plan (its `actions`, `before` and `after`).
pub fn json_change(plan_json: &str, address: &str) -> serde_json::Value {
    let plan: serde_json::Value = serde_json::from_str(plan_json).expect("the JSON plan parses");
    plan["resource_changes"]
        .as_array()
        .expect("resource_changes is an array")
        .iter()
        .find(|change| change["address"] == address)
        .unwrap_or_else(|| panic!("{address} is not in the plan"))["change"]
        .clone()
}

/// The compiler cache's expiry set to `days` by hand, as someone in the console would (the rule
/// keeps its id, `expire-after-30-days`).
pub async fn cache_expires_after(account: &TestAccount, days: i32) {
    use crate::s3_iam::{bucket_name, expire_after, s3_client};
    s3_client(account)
        .put_bucket_lifecycle_configuration()
        .bucket(bucket_name(account))
        .lifecycle_configuration(expire_after(days))
        .send()
        .await
        .unwrap();
}
