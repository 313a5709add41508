//! The example pull-request workflows, run as a runner runs them (tests/workflows/run.py plays the
//! runner, its `uses:` actions, GitHub's OIDC exchange and the artifact store) against the
//! emulator and the GitHub stand-in: the untrusted check (the pull request's own copy of it,
//! with a fork's restrictions for a fork), then the trusted plan (the default branch's copy, on
//! `workflow_run`), for a fork's hostile pull request, a pull request of the repository itself,
//! and one that only adds a bake target. Each ends with the right comment on the right pull
//! request and a commit status; the untrusted job never holds AWS credentials, a secret or a
//! write token; the trusted job runs nothing of the pull request's.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use reconcile_test_support::github::github;
use reconcile_test_support::{TestAccount, emulator, emulator_python, workspace_root};
use serde_json::{Value, json};

use crate::ci::CI;
use crate::support::{reconcile_in, small_account_with_runner};

static NEXT_RUN: AtomicU64 = AtomicU64::new(1);

/// PATH with the pinned policy tools first (scripts/policy-venv.sh).
fn policy_path() -> std::ffi::OsString {
    let tools = workspace_root().join("target/policy-venv/bin");
    assert!(tools.join("checkov").exists(), "checkov is not installed: run scripts/policy-venv.sh");
    let mut paths = vec![tools];
    paths.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
    std::env::join_paths(paths).unwrap()
}

/// The nightly's repository as the tests keep it: desired.toml (tagged repositories, `[github]`,
/// `[ci]`, the bake file it names), the bake file, and the example workflows.
pub(crate) struct Repository {
    pub(crate) name: String,
    dir: tempfile::TempDir,
}

const BAKE: &str = r#"variable "ECR_REGISTRY" {
  default = "zot.fleet.internal:5000"
}

target "pytorch" {
  tags = ["${ECR_REGISTRY}/pytorch:nightly"]
  cache-from = ["type=registry,ref=${ECR_REGISTRY}/pytorch-cache:buildcache"]
  cache-to = ["type=registry,ref=${ECR_REGISTRY}/pytorch-cache:buildcache,mode=max,ignore-error=true"]
}
"#;

/// A bake target more: its image and its cache.
fn target(name: &str) -> String {
    format!(
        "\ntarget \"{name}\" {{\n  tags = [\"${{ECR_REGISTRY}}/{name}:nightly\"]\n  cache-to = \
         [\"type=registry,ref=${{ECR_REGISTRY}}/{name}-cache:buildcache,mode=max,ignore-error=true\"]\n}}\n"
    )
}

impl Repository {
    fn new(name: &str) -> Repository {
        let dir = tempfile::tempdir().unwrap();
        let desired = format!(
            "bake = \"rocm-bake.hcl\"\nbake_variables = [\"ECR_REGISTRY\"]\n{}{}",
            small_account_with_runner(&["pytorch", "pytorch-cache"]),
            CI.replace("ROCm/rocm-bake", name)
        )
        .replacen(
            "tags = { project = \"rocm-bake\" }",
            "tags = { project = \"rocm-bake\", managed-by = \"reconcile\" }",
            1,
        );
        std::fs::write(dir.path().join("desired.toml"), desired).unwrap();
        std::fs::write(dir.path().join("rocm-bake.hcl"), BAKE).unwrap();
        let workflows = dir.path().join(".github/workflows");
        std::fs::create_dir_all(&workflows).unwrap();
        for file in ["pull-request-check.yml", "pull-request-plan.yml", "nightly-drift.yml", "apply-after-merge.yml"] {
            std::fs::copy(workspace_root().join("examples/github-workflows").join(file), workflows.join(file)).unwrap();
        }
        std::fs::copy(workspace_root().join("examples/checkov.yaml"), dir.path().join(".checkov.yaml")).unwrap();
        Repository { name: name.to_owned(), dir }
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A copy, for a pull request's head, changed by `change`.
    pub(crate) fn head(&self, change: impl FnOnce(&Path)) -> tempfile::TempDir {
        let head = tempfile::tempdir().unwrap();
        copy_tree(self.path(), head.path());
        change(head.path());
        head
    }
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

pub(crate) fn append(file: &Path, text: &str) {
    let mut all = std::fs::read_to_string(file).unwrap();
    all.push_str(text);
    std::fs::write(file, all).unwrap();
}

/// One account and one repository, bootstrapped by an administrator: the CI roles, the OIDC
/// subject template, the repository variables the workflows read.
pub(crate) struct World {
    pub(crate) account: TestAccount,
    pub(crate) repository: Repository,
    vars: Value,
    pub(crate) reader: String,
    artifacts: tempfile::TempDir,
}

impl World {
    pub(crate) async fn bootstrap() -> World {
        World::bootstrap_with(|_| {}).await
    }

    /// As [`World::bootstrap`], with desired.toml first changed by `change` (its text).
    pub(crate) async fn bootstrap_with(change: impl FnOnce(&mut String)) -> World {
        let account = emulator().new_account().await;
        let name = github().new_repository();
        crate::github::codebuild_hook(&name, true, &["workflow_job"]);
        let repository = Repository::new(&name);
        let desired = repository.path().join("desired.toml");
        let mut text = std::fs::read_to_string(&desired).unwrap();
        change(&mut text);
        std::fs::write(&desired, text).unwrap();
        let reader = format!("ghp_reader_{}", name.replace('/', "_"));
        let registry = format!("{}.dkr.ecr.us-east-1.amazonaws.com", account.id);
        let mut env = account.env();
        env.extend([
            ("GITHUB_API_URL", github().endpoint().to_owned()),
            ("GITHUB_TOKEN", reader.clone()),
            ("ECR_REGISTRY", registry),
        ]);
        let applied = reconcile_in(&env, &repository.path().join("desired.toml"), &["apply", "--auto-approve"]);
        assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);
        assert_eq!(
            github().state(&name)["oidc_sub"],
            json!({ "use_default": false, "include_claim_keys": ["repo", "context", "job_workflow_ref"] }),
            "the bootstrap sets the subject template the CI roles trust"
        );
        let (_, variables) =
            github().call("GET", &format!("/repos/{name}/actions/variables?per_page=30"), &reader, &Value::Null);
        let vars: serde_json::Map<String, Value> = variables["variables"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| (v["name"].as_str().unwrap().to_owned(), v["value"].clone()))
            .collect();
        assert!(vars.contains_key("RECONCILE_PLAN_ROLE_ARN") && vars.contains_key("ECR_REGISTRY"), "{vars:?}");
        World { account, repository, vars: Value::Object(vars), reader, artifacts: tempfile::tempdir().unwrap() }
    }

    /// Sets the repository variable `name`, as a maintainer does by hand (`gh variable set`).
    pub(crate) fn set_variable(&mut self, name: &str, value: &str) {
        self.vars[name] = Value::String(value.to_owned());
    }

    /// The repository variable `name`, as the workflows read it.
    pub(crate) fn variable(&self, name: &str) -> &str {
        self.vars[name].as_str().unwrap_or_default()
    }

    /// Runs the job of `workflow` (a file of `tree`'s `.github/workflows/`) for `event`.
    #[expect(clippy::too_many_arguments, reason = "what GitHub gives a run, spelt out")]
    pub(crate) fn run(
        &self,
        tree: &Path,
        workflow: &str,
        event_name: &str,
        event: Value,
        git_ref: &str,
        sha: &str,
        fork: bool,
        writes: bool,
    ) -> (u64, Value, tempfile::TempDir) {
        self.run_after(None, tree, workflow, event_name, event, git_ref, sha, fork, writes)
    }

    /// The apply workflow's job for a push to main that moved it from `before`'s files to
    /// `head`'s (a merge): the report, and the runner's files.
    pub(crate) fn pushed(&self, before: &Path, head: &Path) -> (Value, tempfile::TempDir) {
        let sha = "2222222222222222222222222222222222222222";
        let (_, report, runner) = self.run_after(
            Some(before),
            head,
            "apply-after-merge.yml",
            "push",
            json!({}),
            "refs/heads/main",
            sha,
            false,
            true,
        );
        (report, runner)
    }

    /// As [`World::run`], for a run whose checkout has `before`'s files as the commit before.
    #[expect(clippy::too_many_arguments, reason = "what GitHub gives a run, spelt out")]
    fn run_after(
        &self,
        before: Option<&Path>,
        tree: &Path,
        workflow: &str,
        event_name: &str,
        event: Value,
        git_ref: &str,
        sha: &str,
        fork: bool,
        writes: bool,
    ) -> (u64, Value, tempfile::TempDir) {
        let run_id = NEXT_RUN.fetch_add(1, Ordering::Relaxed) + 1000 * u64::from(std::process::id());
        let token = format!("ghs_run_{run_id}");
        github().workflow_token(&token, !writes || fork);
        let runner = tempfile::tempdir().unwrap();
        let reconcile: PathBuf = PathBuf::from(env!("CARGO_BIN_EXE_reconcile")).parent().unwrap().to_owned();
        let spec = json!({
            "workflow": tree.join(".github/workflows").join(workflow),
            "file": workflow,
            "event_name": event_name,
            "event": event,
            "repository": self.repository.name,
            "ref": git_ref,
            "sha": sha,
            "run_id": run_id,
            "fork": fork,
            "token": token,
            // The apply job's token may write the GitHub side; the stand-in's reader is enough
            // for a plan that changes none of it.
            "secrets": {
                "RECONCILE_GITHUB_READ_TOKEN": self.reader,
                "RECONCILE_GITHUB_TOKEN": self.reader,
                "RECONCILE_ISSUE_KEY": "5e".repeat(32),
            },
            "vars": self.vars,
            "head": tree,
            "before": before,
            "workspace": runner.path().join("workspace"),
            "temp": runner.path().join("temp"),
            "artifacts": self.artifacts.path(),
            "caches": self.artifacts.path().join("caches"),
            "reconcile": reconcile,
            "aws": {
                "endpoint": emulator().endpoint(),
                "key": self.account.access_key_id,
                "secret": self.account.secret_access_key,
                "token": self.account.session_token,
            },
            "github_api": github().endpoint(),
        });
        let spec_file = runner.path().join("spec.json");
        std::fs::write(&spec_file, spec.to_string()).unwrap();
        let output = std::process::Command::new(emulator_python())
            .arg(workspace_root().join("tests/workflows/run.py"))
            .arg(&spec_file)
            .env_clear()
            // checkov, as a runner image may hold it (the workflow installs it when not).
            .env("PATH", policy_path())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let report: Value = serde_json::from_str(&stdout)
            .unwrap_or_else(|_| panic!("the runner said: {stdout}{}", String::from_utf8_lossy(&output.stderr)));
        (run_id, report, runner)
    }

    /// A pull request's untrusted check (its own copy of the workflow), then the trusted plan
    /// (the base's copy), as GitHub runs them. The check's report, the plan's, and the plan
    /// runner's files.
    pub(crate) fn pull_request(
        &self,
        head: &Path,
        number: u64,
        sha: &str,
        head_repository: &str,
    ) -> (Value, Value, tempfile::TempDir) {
        let fork = head_repository != self.repository.name;
        // The head commit's files, as GitHub's contents API serves them to the trusted job.
        let read = |name: &str| std::fs::read_to_string(head.join(name)).ok();
        let files: Vec<(&str, String)> =
            ["desired.toml", "rocm-bake.hcl"].into_iter().filter_map(|name| Some((name, read(name)?))).collect();
        let files: Vec<(&str, &str)> = files.iter().map(|(name, text)| (*name, text.as_str())).collect();
        github().commit(head_repository, sha, &files, &[]);
        let event = json!({
            "number": number,
            "pull_request": {
                "number": number,
                "head": { "sha": sha, "repo": { "full_name": head_repository } },
                "base": { "ref": "main", "repo": { "full_name": self.repository.name } },
            },
        });
        let merge = format!("refs/pull/{number}/merge");
        let (check_run, check, _) =
            self.run(head, "pull-request-check.yml", "pull_request", event, &merge, sha, fork, false);
        let conclusion = check["conclusion"].as_str().unwrap().to_owned();
        let (plan, runner) =
            self.trusted(check_run, &conclusion, sha, head_repository, ".github/workflows/pull-request-check.yml");
        (check, plan, runner)
    }

    /// The trusted plan, as GitHub runs the default branch's copy when a workflow run `check_run`
    /// of the workflow file `path`, named `reconcile check`, completes with `conclusion` for
    /// commit `sha` of `head_repository`.
    pub(crate) fn trusted(
        &self,
        check_run: u64,
        conclusion: &str,
        sha: &str,
        head_repository: &str,
        path: &str,
    ) -> (Value, tempfile::TempDir) {
        let event = json!({
            "workflow_run": {
                "id": check_run,
                "event": "pull_request",
                "conclusion": conclusion,
                "head_sha": sha,
                "head_branch": "topic",
                "head_repository": { "full_name": head_repository },
                // Empty for a fork's pull request, as GitHub gives it.
                "pull_requests": [],
                "path": path,
            },
        });
        let base_sha = "1111111111111111111111111111111111111111";
        let (_, plan, runner) = self.run(
            self.repository.path(),
            "pull-request-plan.yml",
            "workflow_run",
            event,
            "refs/heads/main",
            base_sha,
            false,
            true,
        );
        (plan, runner)
    }

    /// Where runs keep their artifacts and the repository's cache.
    pub(crate) fn artifacts_path(&self) -> &Path {
        self.artifacts.path()
    }

    pub(crate) fn comments(&self, number: u64) -> Vec<String> {
        github().state(&self.repository.name)["comments"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["issue_number"] == number)
            .map(|c| c["body"].as_str().unwrap().to_owned())
            .collect()
    }

    pub(crate) fn status(&self, sha: &str) -> Value {
        github().state(&self.repository.name)["statuses"]
            .as_array()
            .unwrap()
            .iter()
            .rev()
            .find(|s| s["sha"] == sha)
            .cloned()
            .unwrap_or(Value::Null)
    }
}

/// The steps of a job's report that held AWS credentials, a secret, or the token.
fn exposed(report: &Value) -> Vec<String> {
    report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["aws_credentials"] == true || s["secrets"].as_array().is_some_and(|x| !x.is_empty()))
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect()
}

pub(crate) fn step<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"].as_str().is_some_and(|n| n.starts_with(name)))
        .unwrap()
}

#[tokio::test]
async fn a_pull_request_of_the_repository_itself_is_checked_planned_and_commented_with_its_status() {
    let world = World::bootstrap().await;
    let head = world.repository.head(|tree| {
        let desired = std::fs::read_to_string(tree.join("desired.toml"))
            .unwrap()
            .replace("pytorch-cache = {}", "pytorch-cache = {}\nvllm = {}\nvllm-cache = {}");
        std::fs::write(tree.join("desired.toml"), desired).unwrap();
        append(&tree.join("rocm-bake.hcl"), &target("vllm"));
    });
    let sha = "2222222222222222222222222222222222222222";
    let number = github().pull_request(&world.repository.name, sha, &world.repository.name);
    let (check, plan, _runner) = world.pull_request(head.path(), number, sha, &world.repository.name);
    assert_eq!(check["conclusion"], "success", "{check:#}");
    assert_eq!(exposed(&check), Vec::<String>::new(), "the check holds no credential and no secret");
    assert_eq!(plan["conclusion"], "success", "{plan:#}");
    // The plan role's trust admits exactly the trusted workflow on the default branch.
    assert_eq!(
        plan["subject"],
        format!(
            "repo:{0}:ref:refs/heads/main:job_workflow_ref:{0}/.github/workflows/pull-request-plan.yml@refs/heads/main",
            world.repository.name
        )
    );
    let comments = world.comments(number);
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert!(comments[0].starts_with("<!-- reconcile:plan -->\n### reconcile plan for account"), "{}", comments[0]);
    // The repositories, and the runner's inline policy naming them (the apply role puts it).
    assert!(comments[0].contains("**Plan: 4 to add, 1 to change, 0 to destroy**"), "{}", comments[0]);
    // The policy gate read the plan's Terraform view: its failed checks are in the comment, those
    // the repository's .checkov.yaml skips (the privileged runner) are not.
    assert!(comments[0].contains("#### Policy checks (checkov"), "{}", comments[0]);
    assert!(
        comments[0].contains("| `CKV_AWS_163` | `aws_ecr_repository.repository[\"pytorch\"]` |"),
        "{}",
        comments[0]
    );
    assert!(!comments[0].contains("CKV_AWS_316"), "{}", comments[0]);
    let status = world.status(sha);
    assert_eq!((status["state"].as_str(), status["context"].as_str()), (Some("success"), Some("reconcile plan")));
    assert_eq!(status["description"], "plan: changes to review");

    // Checked and planned again: the one comment, left as it was.
    let (_, plan, _runner) = world.pull_request(head.path(), number, sha, &world.repository.name);
    assert!(step(&plan, "Comment")["stdout"].as_str().unwrap().contains("left the comment as it was"), "{plan:#}");
    assert_eq!(world.comments(number).len(), 1);

    // The policy gate fails before it reports (the repository's .checkov.yaml broken): the
    // comment says so, where its section was, and never takes silence for a pass.
    let config = world.repository.path().join(".checkov.yaml");
    let kept = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, "framework: [\n  - broken: {").unwrap();
    let (_, plan, _runner) = world.pull_request(head.path(), number, sha, &world.repository.name);
    assert_eq!(step(&plan, "Policy checks")["outcome"], "failure", "{plan:#}");
    let comments = world.comments(number);
    assert!(comments[0].contains("**The policy checks did not report**"), "{}", comments[0]);
    assert!(!comments[0].contains("CKV_AWS_163"), "{}", comments[0]);
    std::fs::write(&config, kept).unwrap();

    // The check cannot assume a role: a pull_request run's subject is trusted by none, even when
    // the workflow asks for an OIDC token.
    let greedy = world.repository.head(|tree| {
        let file = tree.join(".github/workflows/pull-request-check.yml");
        let text = std::fs::read_to_string(&file).unwrap().replace(
            "      contents: read   # the pull request's files; nothing else, from a fork or not\n",
            "      contents: read\n      id-token: write\n",
        ).replace(
            "      - uses: ROCm/reconcile@",
            "      - uses: aws-actions/configure-aws-credentials@e6de054238d6b7531b4efff3b6587d9aade6a06c # v6.2.3\n        with:\n          role-to-assume: ${{ vars.RECONCILE_PLAN_ROLE_ARN }}\n          aws-region: us-east-1\n\n      - uses: ROCm/reconcile@",
        );
        std::fs::write(file, text).unwrap();
    });
    let event = json!({ "number": number, "pull_request": { "number": number } });
    let (_, greedy, _) = world.run(
        greedy.path(),
        "pull-request-check.yml",
        "pull_request",
        event,
        "refs/pull/1/merge",
        sha,
        false,
        false,
    );
    assert_eq!(greedy["conclusion"], "failure");
    let refused = step(&greedy, "aws-actions/configure-aws-credentials");
    assert!(
        refused["stderr"]
            .as_str()
            .unwrap()
            .contains(&format!("does not trust the subject repo:{}:pull_request:", world.repository.name)),
        "{refused:#}"
    );
    assert_eq!(exposed(&greedy), Vec::<String>::new());
}

#[tokio::test]
async fn a_hostile_fork_gets_its_plan_on_its_own_pull_request_and_nothing_else() {
    let world = World::bootstrap().await;
    // A pull request of the repository, whose number the fork's artifact will claim.
    let other = github().pull_request(&world.repository.name, &"4".repeat(40), &world.repository.name);
    let fork = format!("attacker-{}/rocm-bake", std::process::id());
    let runner_temp = tempfile::tempdir().unwrap();
    let canary = runner_temp.path().join("executed");
    let head = world.repository.head(|tree| {
        // desired.toml: another repository's CI trusts, markup in a description, and the bake
        // file adds a target it does not declare.
        let desired = std::fs::read_to_string(tree.join("desired.toml"))
            .unwrap()
            .replace(&format!("repository = \"{}\"", world.repository.name), &format!("repository = \"{fork}\""))
            .replace(
                "description = \"Service role of the rocm-bake CodeBuild runner\"",
                "description = \"x` </details> @org/team <img src=https://evil.example/p.png> [y](https://evil.example)\"",
            );
        std::fs::write(tree.join("desired.toml"), desired).unwrap();
        append(&tree.join("rocm-bake.hcl"), &target("stolen"));
        // Its own check: tries for AWS and the secrets, dumps its environment, and uploads what
        // the old workflow's artifact held, and more: the default branch's desired.toml in place
        // of its own, a number claiming another pull request, and a `reconcile` of its own, which
        // would leave a mark if the trusted job ever ran it; then concludes success.
        std::fs::write(tree.join("pull-request-number"), other.to_string()).unwrap();
        std::fs::write(tree.join("reconcile"), format!("#!/bin/sh\ntouch {}\n", canary.display())).unwrap();
        let file = tree.join(".github/workflows/pull-request-check.yml");
        let text = std::fs::read_to_string(&file)
            .unwrap()
            .replace(
                "      contents: read   # the pull request's files; nothing else, from a fork or not\n",
                "      contents: read\n      id-token: write\n      pull-requests: write\n",
            )
            .replace(
                "      - uses: ROCm/reconcile@",
                "      - uses: aws-actions/configure-aws-credentials@e6de054238d6b7531b4efff3b6587d9aade6a06c # v6.2.3\n        continue-on-error: true\n        with:\n          role-to-assume: ${{ vars.RECONCILE_PLAN_ROLE_ARN }}\n          aws-region: us-east-1\n\n      - name: Take what there is\n        env:\n          STOLEN: ${{ secrets.RECONCILE_GITHUB_READ_TOKEN }}\n        run: env | sort > loot.txt\n\n      - uses: ROCm/reconcile@",
            )
            .replace(
                "          if [ \"$validated\" -ne 0 ] || [ \"$declared\" -ne 0 ]; then",
                "          if false; then",
            )
            + "\n      - name: Hand the files to the trusted plan\n        if: always()\n        uses: actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02 # v4.6.2\n        with:\n          name: reconcile-pull-request\n          path: |\n            pull-request-number\n            reconcile\n            loot.txt\n";
        std::fs::write(file, text).unwrap();
    });
    let sha = "5555555555555555555555555555555555555555";
    let number = github().pull_request(&world.repository.name, sha, &fork);
    let (check, plan, runner) = world.pull_request(head.path(), number, sha, &fork);

    // The fork's own run: no AWS credentials (the OIDC exchange refused), no secret, a
    // read-only token; it could only hand files on.
    assert_eq!(exposed(&check), Vec::<String>::new(), "{check:#}");
    assert_eq!(step(&check, "aws-actions/configure-aws-credentials")["outcome"], "failure");
    assert!(step(&check, "Take what there is")["outcome"] == "success");
    assert_eq!(check["conclusion"], "success", "its own check says what it likes: {check:#}");
    let handed_on = std::fs::read_dir(world.artifacts.path()).unwrap().map(|e| e.unwrap().path()).collect::<Vec<_>>();
    let loot = handed_on
        .iter()
        .map(|run| run.join("reconcile-pull-request/loot.txt"))
        .find(|loot| loot.exists())
        .expect("the fork handed its loot on");
    let loot = std::fs::read_to_string(loot).unwrap();
    assert!(!loot.contains(&world.reader), "no secret reached the fork's run");
    assert!(!loot.contains("AWS_ACCESS_KEY_ID=") && !loot.contains("AWS_SESSION_TOKEN="), "{loot}");

    // The trusted plan: on the fork's pull request, not the one the artifact claims.
    assert_eq!(plan["conclusion"], "success", "{plan:#}");
    assert_eq!(world.comments(other), Vec::<String>::new(), "the claimed number is ignored");
    let comments = world.comments(number);
    assert_eq!(comments.len(), 1);
    let comment = &comments[0];
    // What the pull request changes is named: who the CI roles would trust, the GitHub side not
    // read for another repository, the target it does not declare.
    assert!(comment.contains("D108"), "{comment}");
    assert!(comment.contains(&format!("repo:{fork}:ref:refs/heads/main")), "{comment}");
    assert!(comment.contains("E107"), "{comment}");
    assert!(comment.contains("W401"), "{comment}");
    reconcile_test_support::Markup::assert_inert(comment);
    // The status is what its head deserves, whatever its run concluded: the trusted job checked
    // the head commit's files itself.
    let status = world.status(sha);
    assert_eq!(status["state"], "failure");
    assert_eq!(status["description"], "check: failure (validate, declare --check); plan: refused by a safety check");
    // Nothing of the pull request's ran, nor was read: only its head's two files, through the
    // contents API.
    assert!(!canary.exists(), "the trusted job ran the pull request's file");
    let plan_step = step(&plan, "Plan");
    assert_eq!(plan_step["outcome"], "success");
    let fetched: Vec<String> = std::fs::read_dir(runner.path().join("temp/pull-request"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(fetched.len(), 2, "{fetched:?}");
    assert!(fetched.contains(&"desired.toml".to_owned()) && fetched.contains(&"rocm-bake.hcl".to_owned()));
    drop(runner_temp);
}

#[tokio::test]
async fn a_pull_request_that_only_adds_a_bake_target_is_checked_and_told_what_to_declare() {
    let world = World::bootstrap().await;
    let head = world.repository.head(|tree| append(&tree.join("rocm-bake.hcl"), &target("sglang")));
    let sha = "6666666666666666666666666666666666666666";
    let number = github().pull_request(&world.repository.name, sha, &world.repository.name);
    let (check, plan, _runner) = world.pull_request(head.path(), number, sha, &world.repository.name);
    // The check fails (validate refuses, declare --check shows the lines) but hands the files on.
    assert_eq!(check["conclusion"], "failure");
    let checked = step(&check, "Validate");
    assert!(checked["stdout"].as_str().unwrap().contains("+sglang = {}"), "{checked:#}");
    assert_eq!(plan["conclusion"], "success", "{plan:#}");
    let comment = &world.comments(number)[0];
    assert!(comment.contains("W401"), "{comment}");
    assert!(
        comment.contains(
            "declares them; or add under `[ecr.repositories]` in desired.toml:\n> ```toml\n> sglang = {}\n> sglang-cache = {}\n> ```"
        ),
        "{comment}"
    );
    assert_eq!(world.status(sha)["state"], "failure", "its check fails until they are declared");

    // Declared: the check and the plan pass.
    let declared = world.repository.head(|tree| {
        append(&tree.join("rocm-bake.hcl"), &target("sglang"));
        let desired = std::fs::read_to_string(tree.join("desired.toml"))
            .unwrap()
            .replace("pytorch-cache = {}", "pytorch-cache = {}\nsglang = {}\nsglang-cache = {}");
        std::fs::write(tree.join("desired.toml"), desired).unwrap();
    });
    let sha = "7777777777777777777777777777777777777777";
    let number = github().pull_request(&world.repository.name, sha, &world.repository.name);
    let (check, _, _runner) = world.pull_request(declared.path(), number, sha, &world.repository.name);
    assert_eq!(check["conclusion"], "success", "{check:#}");
    assert_eq!(world.status(sha)["state"], "success");
}

#[tokio::test]
async fn the_subject_template_changed_by_hand_is_drift_that_only_an_administrator_puts_back() {
    let world = World::bootstrap().await;
    let name = &world.repository.name;
    // Back to GitHub's default by hand: no CI role's trust admits the runs any more.
    let (status, _) = github().call(
        "PUT",
        &format!("/repos/{name}/actions/oidc/customization/sub"),
        &world.reader,
        &json!({ "use_default": true }),
    );
    assert_eq!(status, 201);
    let mut env = world.account.env();
    env.extend([("GITHUB_API_URL", github().endpoint().to_owned()), ("GITHUB_TOKEN", world.reader.clone())]);
    let desired = world.repository.path().join("desired.toml");
    let drift = reconcile_in(&env, &desired, &["drift", "--format", "json"]);
    assert_eq!(drift.code, 2, "{}{}", drift.stdout, drift.stderr);
    let short = name.split('/').nth(1).unwrap();
    assert_eq!(crate::support::json_changes(&drift.stdout), [format!("update github_oidc_subject.{short}")]);
    let plan = reconcile_in(&env, &desired, &["plan"]);
    assert!(
        plan.stdout.contains(&format!(
            "Warning [W501] this plan changes `github_oidc_subject.{short}` (the OIDC subject template: which runs \
             each CI role's trust admits)"
        )),
        "{}",
        plan.stdout
    );
    // The apply role leaves it, saying so (exit 2); an administrator puts it back.
    let apply_role = world.account.assume("rocm-bake-reconcile-apply").await;
    let mut as_apply = apply_role.env();
    as_apply.extend([("GITHUB_API_URL", github().endpoint().to_owned()), ("GITHUB_TOKEN", world.reader.clone())]);
    let left = reconcile_in(&as_apply, &desired, &["apply", "--auto-approve"]);
    assert_eq!(left.code, 2, "{}{}", left.stdout, left.stderr);
    assert!(
        left.stdout.contains(&format!("Left for an administrator: github_oidc_subject.{short}")),
        "{}",
        left.stdout
    );
    let applied = reconcile_in(&env, &desired, &["apply", "--auto-approve"]);
    assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);
    assert_eq!(
        github().state(name)["oidc_sub"],
        json!({ "use_default": false, "include_claim_keys": ["repo", "context", "job_workflow_ref"] })
    );
}

/// The status answers to the repository alone: a pull request that changes nothing reconcile
/// reads gets one at once, a workflow a pull request adds under the check's name triggers
/// nothing, and a commit two pull requests from two repositories share gets none, each told why.
#[tokio::test]
async fn every_pull_request_gets_the_status_its_head_deserves_and_only_its_own() {
    let world = World::bootstrap().await;
    let name = world.repository.name.clone();

    // Only a README: success, quickly, and no comment.
    let readme = world.repository.head(|tree| std::fs::write(tree.join("README.md"), "# words\n").unwrap());
    let sha = "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1";
    let number = github().pull_request(&name, sha, &name);
    let (_, plan, _runner) = world.pull_request(readme.path(), number, sha, &name);
    assert_eq!(plan["conclusion"], "success", "{plan:#}");
    assert_eq!(step(&plan, "Plan")["outcome"], "skipped", "nothing to plan");
    let status = world.status(sha);
    assert_eq!(
        (status["state"].as_str(), status["description"].as_str()),
        (Some("success"), Some("no reconcile files changed"))
    );
    assert_eq!(world.comments(number), Vec::<String>::new());

    // A workflow a fork adds under the name `reconcile check`, concluding success: its
    // completion starts no trusted job, and writes no status.
    let fork = format!("forger-{}/rocm-bake", std::process::id());
    let invalid = world.repository.head(|tree| append(&tree.join("rocm-bake.hcl"), &target("undeclared")));
    let sha = "b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2";
    let forged_number = github().pull_request(&name, sha, &fork);
    let files = [
        ("desired.toml", std::fs::read_to_string(invalid.path().join("desired.toml")).unwrap()),
        ("rocm-bake.hcl", std::fs::read_to_string(invalid.path().join("rocm-bake.hcl")).unwrap()),
    ];
    github().commit(&fork, sha, &files.iter().map(|(n, t)| (*n, t.as_str())).collect::<Vec<_>>(), &[]);
    let (skipped, _runner) =
        world.trusted(424_242, "success", sha, &fork, ".github/workflows/also-reconcile-check.yml");
    assert_eq!(skipped["conclusion"], "skipped", "{skipped:#}");
    assert_eq!(world.status(sha), Value::Null);
    // Its real check's completion: the status its head deserves, whatever the run concluded.
    let (plan, _runner) = world.trusted(424_243, "success", sha, &fork, ".github/workflows/pull-request-check.yml");
    assert_eq!(plan["conclusion"], "success", "{plan:#}");
    assert_eq!(world.status(sha)["state"], "failure");
    assert!(world.comments(forged_number)[0].contains("W401"), "{:?}", world.comments(forged_number));

    // One head commit, two pull requests from two repositories: no status for either.
    let shared = "c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3";
    let valid = world.repository.head(|tree| {
        let desired = std::fs::read_to_string(tree.join("desired.toml"))
            .unwrap()
            .replace("pytorch-cache = {}", "pytorch-cache = {}\nvllm = {}");
        std::fs::write(tree.join("desired.toml"), desired).unwrap();
    });
    let other = format!("other-{}/rocm-bake", std::process::id());
    let first = github().pull_request(&name, shared, &fork);
    let second = github().pull_request(&name, shared, &other);
    for (number, head_repository) in [(first, &fork), (second, &other)] {
        let (_, plan, _runner) = world.pull_request(valid.path(), number, shared, head_repository);
        assert_eq!(plan["conclusion"], "success", "{plan:#}");
        let comment = &world.comments(number)[0];
        assert!(comment.contains("**No `reconcile plan` status was set**"), "{comment}");
    }
    assert_eq!(world.status(shared), Value::Null, "no status on a commit two pull requests share");
}

/// The shipped examples work as they are: this repository's desired.toml (which names its bake
/// file) and its bake file, with the example workflows, copied into a fresh repository, pass
/// the check as it runs them.
#[tokio::test]
async fn the_examples_copied_as_they_are_pass_their_own_check() {
    let world = World::bootstrap().await;
    let fresh = tempfile::tempdir().unwrap();
    for file in ["desired.toml", "rocm-bake.hcl"] {
        std::fs::copy(workspace_root().join(file), fresh.path().join(file)).unwrap();
    }
    let workflows = fresh.path().join(".github/workflows");
    std::fs::create_dir_all(&workflows).unwrap();
    for entry in std::fs::read_dir(workspace_root().join("examples/github-workflows")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), workflows.join(entry.file_name())).unwrap();
        // Every job is bounded in time: a hung run (or a pull request's desired.toml made to
        // hold the plan job) is cut, not left for GitHub's six hours.
        let text = std::fs::read_to_string(entry.path()).unwrap();
        let jobs = text.matches("\n    runs-on: ").count();
        assert!(jobs > 0 && text.matches("\n    timeout-minutes: ").count() == jobs, "{:?}", entry.file_name());
    }
    let event = json!({ "number": 1, "pull_request": { "number": 1 } });
    let sha = "d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4";
    let (_, check, _) =
        world.run(fresh.path(), "pull-request-check.yml", "pull_request", event, "refs/pull/1/merge", sha, true, false);
    assert_eq!(check["conclusion"], "success", "{check:#}");
    let checked = step(&check, "Validate");
    let stderr = checked["stderr"].as_str().unwrap();
    // The registry is the account's: every reference was checked, and every one is declared.
    assert!(!stderr.contains("W402") && !stderr.contains("W401"), "{checked:#}");
    assert!(checked["stdout"].as_str().unwrap().contains("27 ECR repositories"), "{checked:#}");
}
