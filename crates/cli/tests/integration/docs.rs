//! The documentation, run: every command line of every task page (docs/tasks/) runs, in order,
//! against the emulator and the GitHub stand-in, and what the page shows it printing must still
//! be what it prints (as trycmd runs clap's and cargo's documented commands); every `reconcile`
//! line anywhere in the docs names a subcommand and flags the binary accepts; the README is a
//! landing page whose links all lead somewhere; the demo runs wherever cargo puts the binary.
//!
//! A page is Markdown. Its ```` ```console ```` blocks hold commands (`$ ` lines, `\`
//! continuing one) and what they print below them, matched line by line: `[..]` stands for any
//! text within a line, a line of `...` for any number of lines. A command is expected to exit 0,
//! or what its `# exits N` comment says. Hidden HTML comments set the page's stage:
//! `<!-- doctest world: NAME -->` (the account it starts from: `new-account`, `setup-script`,
//! `reconciled`), `<!-- doctest run: COMMAND -->` (done out of sight, such as a change made by
//! hand in the console) and `<!-- doctest append: FILE -->` (the next code block is added to the
//! file, as the page tells the reader to). Commands run in one shell session (its directory and
//! exports carry over) in a git checkout of the nightly's repository, with `gh` played by
//! tests/docs/gh.py.

use std::path::{Path, PathBuf};
use std::process::Command;

use reconcile_test_support::github::GithubServer;
use reconcile_test_support::{TestAccount, emulator, emulator_python, workspace_root};

/// What a page asks of the test.
#[derive(Debug)]
enum Step {
    Command { line: usize, command: String, exit: i32, expected: Vec<String> },
    Hidden { line: usize, command: String },
    Append { line: usize, file: String, text: String },
    Claim { line: usize, claim: Claim },
}

/// What a page's prose says a step does, which its run must show (`<!-- doctest claim: ... -->`
/// beside the sentence): checked on the next command, or, for `local`, every command up to
/// `aws`.
#[derive(Debug, Clone, PartialEq)]
enum Claim {
    /// "the second plan is clean": it exits 0 and says "No changes.".
    Clean,
    /// "`--check` changes nothing": the file is as it was, byte for byte.
    Unchanged(String),
    /// "keeping the rest of the file as it was": it only adds lines, every old one kept in order.
    AddsOnly(String),
    /// "no AWS credentials": the commands run with none, and no way to the emulator.
    Local,
    /// The end of `local`.
    Aws,
}

impl Claim {
    fn parse(text: &str) -> Result<Claim, String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        Ok(match words[..] {
            ["clean"] => Claim::Clean,
            ["unchanged", file] => Claim::Unchanged(file.to_owned()),
            ["adds-only", file] => Claim::AddsOnly(file.to_owned()),
            ["local"] => Claim::Local,
            ["aws"] => Claim::Aws,
            _ => return Err(format!("no claim `{text}`")),
        })
    }
}

#[derive(Debug)]
struct Page {
    path: PathBuf,
    world: Option<String>,
    steps: Vec<Step>,
}

impl Page {
    fn read(path: &Path) -> Page {
        let text = std::fs::read_to_string(path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let mut page = Page { path: path.to_owned(), world: None, steps: Vec::new() };
        let mut pending_append: Option<(usize, String)> = None;
        let mut index = 0;
        while index < lines.len() {
            let line = lines[index];
            let number = index + 1;
            if let Some(directive) = line.trim().strip_prefix("<!-- doctest ").and_then(|d| d.strip_suffix("-->")) {
                let (kind, value) = directive.split_once(':').expect("a directive is `KIND: VALUE`");
                let value = value.trim().to_owned();
                match kind.trim() {
                    "world" => page.world = Some(value),
                    "run" => page.steps.push(Step::Hidden { line: number, command: value }),
                    "append" => pending_append = Some((number, value)),
                    "claim" => page.steps.push(Step::Claim {
                        line: number,
                        claim: Claim::parse(&value).unwrap_or_else(|e| panic!("{}:{number}: {e}", path.display())),
                    }),
                    other => panic!("{}:{number}: no directive `{other}`", path.display()),
                }
                index += 1;
                continue;
            }
            let indent = line.len() - line.trim_start().len();
            if let Some(info) = line.trim_start().strip_prefix("```") {
                let end = lines[index + 1..]
                    .iter()
                    .position(|l| l.trim_start().starts_with("```"))
                    .map(|at| index + 1 + at)
                    .unwrap_or_else(|| panic!("{}:{number}: a code block that never ends", path.display()));
                // A block in a list item is indented as the item is: its lines, without it.
                let body: Vec<&str> =
                    lines[index + 1..end].iter().map(|l| &l[(l.len() - l.trim_start().len()).min(indent)..]).collect();
                let body = &body[..];
                if let Some((line, file)) = pending_append.take() {
                    let text = body.iter().map(|l| format!("{l}\n")).collect();
                    page.steps.push(Step::Append { line, file, text });
                } else if info.trim() == "console" {
                    page.steps.extend(commands(body, index + 2));
                }
                index = end + 1;
                continue;
            }
            index += 1;
        }
        page
    }
}

/// The commands of a console block whose first line is line `first` of its page.
fn commands(body: &[&str], first: usize) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut index = 0;
    while index < body.len() {
        let Some(start) = body[index].strip_prefix("$ ") else {
            panic!("line {}: a console block's output must follow a `$ ` command", first + index);
        };
        let line = first + index;
        let mut command = start.to_owned();
        while command.ends_with('\\') {
            index += 1;
            command.pop();
            command.push('\n');
            command.push_str(body[index]);
        }
        index += 1;
        let mut expected = Vec::new();
        while index < body.len() && !body[index].starts_with("$ ") {
            expected.push(body[index].to_owned());
            index += 1;
        }
        let exit = command
            .rsplit_once("# exits ")
            .map(|(_, rest)| rest.split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap())
            .unwrap_or(0);
        steps.push(Step::Command { line, command, exit, expected });
    }
    steps
}

/// Whether `actual` is what `expected` shows: line by line, `[..]` any text within a line, a
/// `...` line any number of lines.
fn matches(expected: &[String], actual: &[&str]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first.trim() == "..." => (0..=actual.len()).any(|skip| matches(rest, &actual[skip..])),
        Some((first, rest)) => {
            actual.split_first().is_some_and(|(line, others)| line_matches(first, line) && matches(rest, others))
        }
    }
}

fn line_matches(expected: &str, actual: &str) -> bool {
    let expected = expected.trim_end();
    let actual = actual.trim_end();
    let parts: Vec<&str> = expected.split("[..]").collect();
    if parts.len() == 1 {
        return expected == actual;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !actual.starts_with(first) || !actual[first.len()..].ends_with(last) {
        return false;
    }
    let mut rest = &actual[first.len()..actual.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// Where a page runs: the account, the GitHub stand-in, the checkout and the shell's state.
struct Stage {
    account: TestAccount,
    github: GithubServer,
    state: tempfile::TempDir,
    env: Vec<(String, String)>,
}

const MAINTAINER_TOKEN: &str = "ghp_maintainer";

impl Stage {
    async fn new(world: &str) -> Stage {
        let account = emulator().new_account().await;
        let github = GithubServer::separate();
        let state = tempfile::tempdir().unwrap();
        let checkout = state.path().join("rocm-bake");
        let root = workspace_root();
        for (from, to) in [
            ("desired.toml", "desired.toml"),
            ("rocm-bake.hcl", "rocm-bake.hcl"),
            ("examples/checkov.yaml", ".checkov.yaml"),
        ] {
            std::fs::create_dir_all(checkout.join(to).parent().unwrap()).unwrap();
            std::fs::copy(root.join(from), checkout.join(to)).unwrap();
        }
        let workflows = checkout.join(".github/workflows");
        std::fs::create_dir_all(&workflows).unwrap();
        for entry in std::fs::read_dir(root.join("examples/github-workflows")).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), workflows.join(entry.file_name())).unwrap();
        }
        let reconcile_dir = PathBuf::from(env!("CARGO_BIN_EXE_reconcile")).parent().unwrap().to_owned();
        let bin = state.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let gh = bin.join("gh");
        std::fs::write(
            &gh,
            format!(
                "#!/bin/sh\nexec '{}' '{}' \"$@\"\n",
                emulator_python().display(),
                root.join("tests/docs/gh.py").display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&gh, <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755))
            .unwrap();
        let system_path = std::env::var("PATH").unwrap_or_default();
        let policy_tools = root.join("target/policy-venv/bin");
        let path = format!("{}:{}:{system_path}", bin.display(), reconcile_dir.display());
        let base = serde_json::json!({
            "repository": "ROCm/rocm-bake",
            "github_api": github.endpoint(),
            "reconcile": reconcile_dir,
            "aws": {
                "endpoint": emulator().endpoint(),
                "key": account.access_key_id,
                "secret": account.secret_access_key,
                "token": account.session_token,
            },
            "runner": root.join("tests/workflows/run.py"),
            "python": emulator_python(),
            "path": format!("{}:{system_path}", policy_tools.display()),
        });
        std::fs::write(state.path().join("base.json"), base.to_string()).unwrap();
        let home = state.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let mut env: Vec<(String, String)> = account.env().into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        env.extend(
            [
                ("PATH", path),
                ("HOME", home.display().to_string()),
                ("DOCTEST_STATE", state.path().display().to_string()),
                ("DOCTEST_PYTHON", emulator_python().display().to_string()),
                ("GITHUB_API_URL", github.endpoint().to_owned()),
                ("GITHUB_TOKEN", MAINTAINER_TOKEN.to_owned()),
                ("ECR_REGISTRY", format!("{}.dkr.ecr.us-east-1.amazonaws.com", account.id)),
                ("GIT_AUTHOR_NAME", "A Maintainer".to_owned()),
                ("GIT_AUTHOR_EMAIL", "maintainer@example.com".to_owned()),
                ("GIT_COMMITTER_NAME", "A Maintainer".to_owned()),
                ("GIT_COMMITTER_EMAIL", "maintainer@example.com".to_owned()),
                ("LANG", "C.UTF-8".to_owned()),
            ]
            .map(|(k, v)| (k.to_owned(), v)),
        );
        let stage = Stage { account, github, state, env };
        // The repository, pushed to its remote: what GitHub holds of it.
        let origin = stage.state.path().join("origin.git");
        stage.shell(
            &format!(
                "git init --quiet --bare --initial-branch=main '{}' && git init --quiet --initial-branch=main && \
                 git add -A && git commit --quiet -m 'The nightly' && git remote add origin '{}' && \
                 git push --quiet -u origin main",
                origin.display(),
                origin.display()
            ),
            &checkout,
        );
        std::fs::write(stage.state.path().join("cwd"), checkout.display().to_string()).unwrap();
        std::fs::write(stage.state.path().join("env.sh"), "").unwrap();
        // The repository's hook to CodeBuild, as CodeBuild makes it with the webhook.
        let hook = serde_json::json!({
            "name": "web", "active": true, "events": ["workflow_job"],
            "config": { "url": "https://codebuild.us-east-1.amazonaws.com/webhooks?t=docs&v=1", "content_type": "json" },
        });
        assert_eq!(stage.github.call("POST", "/repos/ROCm/rocm-bake/hooks", MAINTAINER_TOKEN, &hook).0, 201);
        match world {
            "new-account" => {}
            "setup-script" => stage.account.seed_2026_11_11_with_history(&checkout.join("desired.toml")),
            // As the first apply's page leaves it: applied, and the workflows given their secrets.
            "reconciled" => {
                let (code, output) = stage.run("reconcile apply --auto-approve");
                assert_eq!(code, 0, "the reconciled world's apply: {output}");
                let secrets = serde_json::json!({
                    "RECONCILE_GITHUB_READ_TOKEN": "github_pat_read",
                    "RECONCILE_GITHUB_TOKEN": "github_pat_write",
                    "RECONCILE_ISSUE_KEY": "5e".repeat(32),
                });
                std::fs::write(stage.state.path().join("secrets.json"), secrets.to_string()).unwrap();
            }
            other => panic!("no world `{other}`"),
        }
        stage
    }

    fn shell(&self, script: &str, dir: &Path) -> String {
        let output = Command::new("bash")
            .args(["-c", script])
            .current_dir(dir)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .output()
            .unwrap();
        let said = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        assert!(output.status.success(), "{script}: {said}");
        said
    }

    /// `command` in the page's shell session: its exit code and what it printed (stdout and
    /// stderr as a terminal interleaves them), the account's id written as the pages write it.
    fn run(&self, command: &str) -> (i32, String) {
        self.run_as(command, false)
    }

    /// `command`, with no AWS credentials and no way to the emulator when `local` (what the
    /// session had is back for the next command).
    fn run_as(&self, command: &str, local: bool) -> (i32, String) {
        let state = self.state.path().display();
        let (strip, restore) = match local {
            false => (String::new(), String::new()),
            true => (
                format!(
                    "export -p | grep ' AWS_' > '{state}/aws.sh'\nfor v in $(compgen -e | grep '^AWS_'); do unset $v; done\n\
                     export AWS_EC2_METADATA_DISABLED=true AWS_CONFIG_FILE=/nonexistent \
                     AWS_SHARED_CREDENTIALS_FILE=/nonexistent\n"
                ),
                format!("for v in $(compgen -e | grep '^AWS_'); do unset $v; done\n. '{state}/aws.sh'\n"),
            ),
        };
        let script = format!(
            "cd \"$(cat '{state}/cwd')\" && . '{state}/env.sh'\nexec 2>&1\n{strip}{command}\nstatus=$?\n{restore}\
             pwd > '{state}/cwd'\nexport -p > '{state}/env.sh'\nexit $status\n"
        );
        let output = Command::new("bash")
            .args(["-c", &script])
            .current_dir(self.state.path())
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&output.stdout).replace(&self.account.id, "123456789012");
        (output.status.code().unwrap_or(-1), said)
    }

    /// What the last workflow `gh` ran said in its steps that did not succeed.
    fn last_run(&self) -> String {
        let Ok(runs) = std::fs::read_to_string(self.state.path().join("runs.json")) else { return String::new() };
        let runs: serde_json::Value = serde_json::from_str(&runs).unwrap();
        let Some(last) = runs.as_array().and_then(|runs| runs.last()) else { return String::new() };
        let steps = last["report"]["steps"].as_array().cloned().unwrap_or_default();
        steps
            .iter()
            .filter(|step| step["outcome"] != "success" && step["outcome"] != "skipped")
            .map(|step| format!("{}: {}\n{}{}", step["name"], step["outcome"], step["stdout"], step["stderr"]))
            .collect()
    }

    /// `file` in the shell's directory, as it is now ("" when there is none).
    fn read(&self, file: &str) -> String {
        let cwd = std::fs::read_to_string(self.state.path().join("cwd")).unwrap_or_default();
        std::fs::read_to_string(Path::new(cwd.trim()).join(file)).unwrap_or_default()
    }

    fn append(&self, file: &str, text: &str) -> std::io::Result<()> {
        let cwd = std::fs::read_to_string(self.state.path().join("cwd"))?;
        let path = Path::new(cwd.trim()).join(file);
        let mut all = std::fs::read_to_string(&path)?;
        all.push_str(text);
        std::fs::write(path, all)
    }
}

/// Runs `page` (relative to the workspace) as a reader following it would; the stage it left.
async fn run_page(page: &str) -> Stage {
    let path = workspace_root().join(page);
    try_page(&path).await.unwrap_or_else(|failed| panic!("{failed}"))
}

/// Runs the page at `path`: the stage it left, or the first step whose run is not what the page
/// shows or claims.
async fn try_page(path: &Path) -> Result<Stage, String> {
    let page = Page::read(path);
    let name = page.path.strip_prefix(workspace_root()).unwrap_or(&page.path).display().to_string();
    let world = page.world.as_deref().unwrap_or_else(|| panic!("{name} says no `<!-- doctest world: ... -->`"));
    assert!(page.steps.iter().any(|s| matches!(s, Step::Command { .. })), "{name} runs no command");
    let stage = Stage::new(world).await;
    let mut claims: Vec<(usize, Claim)> = Vec::new();
    let mut local = false;
    for step in &page.steps {
        match step {
            Step::Hidden { line, command } => {
                let (code, said) = stage.run(command);
                assert_eq!(code, 0, "{name}:{line}: the hidden `{command}` failed:\n{said}");
            }
            Step::Append { line, file, text } => {
                stage.append(file, text).unwrap_or_else(|e| panic!("{name}:{line}: {e}"));
            }
            Step::Claim { claim: Claim::Local, .. } => local = true,
            Step::Claim { claim: Claim::Aws, .. } => local = false,
            Step::Claim { line, claim } => claims.push((*line, claim.clone())),
            Step::Command { line, command, exit, expected } => {
                let before: Vec<(usize, Claim, String)> = claims
                    .drain(..)
                    .map(|(at, claim)| {
                        let text = match &claim {
                            Claim::Unchanged(file) | Claim::AddsOnly(file) => stage.read(file),
                            _ => String::new(),
                        };
                        (at, claim, text)
                    })
                    .collect();
                let (code, said) = stage.run_as(command, local);
                let actual: Vec<&str> = said.lines().collect();
                let credentials = if local { " with no AWS credentials (the page says it needs none)" } else { "" };
                if code != *exit || !(expected.is_empty() || matches(expected, &actual)) {
                    return Err(format!(
                        "{name}:{line}: `{command}`{credentials} exited {code} (the page says {exit}) and printed:\n\
                         {said}\n--- the page shows:\n{}\n--- the last workflow run's failed steps:\n{}",
                        expected.join("\n"),
                        stage.last_run()
                    ));
                }
                for (at, claim, was) in before {
                    let held = match &claim {
                        Claim::Clean => {
                            code == 0 && actual.contains(&"No changes. The account matches the desired state.")
                        }
                        Claim::Unchanged(file) => stage.read(file) == was,
                        Claim::AddsOnly(file) => {
                            let now = stage.read(file);
                            let kept = similar::TextDiff::from_lines(&was, &now)
                                .iter_all_changes()
                                .all(|change| change.tag() != similar::ChangeTag::Delete);
                            kept && now != was
                        }
                        Claim::Local | Claim::Aws => true,
                    };
                    if !held {
                        return Err(format!(
                            "{name}:{at}: the page claims `{claim:?}` of `{command}` (line {line}), which its run does \
                             not show; it printed:\n{said}"
                        ));
                    }
                }
            }
        }
    }
    // A claim with no command after it would be checked by nothing.
    if let Some((line, claim)) = claims.first() {
        return Err(format!("{name}:{line}: the page claims `{claim:?}` of no command: none follows it"));
    }
    Ok(stage)
}

/// The task pages, each a test of its own (so they run side by side).
const TASKS: [&str; 5] = [
    "docs/tasks/first-apply.md",
    "docs/tasks/take-over-an-account.md",
    "docs/tasks/add-a-bake-target.md",
    "docs/tasks/review-a-pull-request.md",
    "docs/tasks/drift-check.md",
];

#[tokio::test]
async fn the_first_apply_page_runs_as_written() {
    run_page(TASKS[0]).await;
}

#[tokio::test]
async fn the_take_over_page_runs_as_written() {
    run_page(TASKS[1]).await;
}

/// The bake target's page, and the README's picture of the comment a reviewer acts on: the
/// comment that page's pull request got, as it is now.
#[tokio::test]
async fn the_bake_target_page_runs_as_written_and_the_readme_shows_its_comment() {
    let stage = run_page(TASKS[2]).await;
    let (status, comments) =
        stage.github.call("GET", "/repos/ROCm/rocm-bake/issues/1/comments", MAINTAINER_TOKEN, &serde_json::Value::Null);
    assert_eq!(status, 200, "{comments}");
    let body = comments[0]["body"].as_str().unwrap().replace(&stage.account.id, "123456789012");
    let body = folds_after_the_first_closed(&body.replace(reconcile_cli::PLANNED_BY, "reconcile 0.1.0"));
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).unwrap();
    let shown = readme
        .split_once(README_COMMENT.0)
        .and_then(|(_, rest)| rest.split_once(README_COMMENT.1))
        .map(|(shown, _)| shown.trim().to_owned())
        .unwrap_or_default();
    assert_eq!(shown, body.trim(), "README.md's comment is not the one the pull request gets; it is now:\n{body}");
}

/// `comment` as README.md shows it: the plan (not checkov's checks after it), every fold's
/// summary, and only the first fold's contents (the rest are what GitHub shows of them until they
/// are opened).
fn folds_after_the_first_closed(comment: &str) -> String {
    let mut out = String::new();
    let mut folds = 0;
    let mut skipping = false;
    let plan = comment.split_inclusive('\n').take_while(|l| !l.starts_with("#### Policy checks")).collect::<String>();
    for line in plan.lines() {
        if line.starts_with("<details>") {
            folds += 1;
            skipping = folds > 1;
            out.push_str(line);
            out.push('\n');
            continue;
        }
        if line == "</details>" {
            skipping = false;
        }
        if !skipping {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Where README.md shows the pull request's comment.
const README_COMMENT: (&str, &str) = ("<!-- the pull request's comment -->", "<!-- end of the comment -->");

#[tokio::test]
async fn the_review_page_runs_as_written() {
    run_page(TASKS[3]).await;
}

#[tokio::test]
async fn the_drift_check_page_runs_as_written() {
    run_page(TASKS[4]).await;
}

/// The outcomes a page's prose states, each with what in its run shows it: a claim directive,
/// a command's `# exits N`, or a line the page shows the run print. A statement of a section
/// with no command is not about a run, and is not checked.
const OUTCOMES: [(&str, &[&str]); 8] = [
    ("exits N", &["# exits N", "exit code N"]),
    ("no aws call", &["claim: local"]),
    ("is clean", &["claim: clean", "No changes."]),
    ("nothing is left to change", &["claim: clean", "No changes."]),
    ("nothing else changes", &["0 to add, 0 to change, 0 to destroy", "No changes."]),
    ("changes nothing", &["claim: unchanged", "No changes."]),
    ("keeping the rest of the file", &["claim: adds-only"]),
    ("local", &["claim: local"]),
];

/// The outcomes `page` states that nothing of its run shows: each with its line.
fn unchecked_outcomes(page: &str) -> Vec<(usize, String)> {
    let lines: Vec<&str> = page.lines().collect();
    let mut unchecked = Vec::new();
    let mut in_block = false;
    for (index, line) in lines.iter().enumerate() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
        }
        if in_block || line.trim_start().starts_with("<!--") {
            continue;
        }
        // What the statement is checked by: the directives and blocks that follow it, to the end
        // of the first console block, within its section (directives just before it too).
        // And the console block before it in its section: a statement may follow its command.
        let mut start = index.saturating_sub(3);
        for (at, before) in lines[..index].iter().enumerate().rev() {
            if before.starts_with('#') {
                break;
            }
            if before.trim() == "```console" {
                start = at;
                break;
            }
        }
        let mut region: Vec<&str> = lines[start..index].to_vec();
        let mut console = start < index.saturating_sub(3);
        let mut inside = false;
        for next in &lines[index..] {
            if !inside && next.starts_with('#') {
                break;
            }
            region.push(next);
            if next.trim_start().starts_with("```") {
                if inside && console {
                    break;
                }
                inside = !inside;
                console |= next.trim() == "```console";
            }
        }
        if !console && !line.to_lowercase().contains("local") {
            continue;
        }
        let region = region.join("\n");
        let rest = lines[index..].join("\n");
        let lower = line.to_lowercase();
        for (phrase, shown_by) in OUTCOMES {
            let region = if phrase == "local" { &rest } else { &region };
            let found: Vec<String> = match phrase.strip_suffix(" N") {
                Some(stem) => lower
                    .match_indices(stem)
                    .filter_map(|(at, _)| lower[at + stem.len()..].strip_prefix(' '))
                    .filter_map(|rest| rest.chars().next().filter(char::is_ascii_digit))
                    .map(|digit| digit.to_string())
                    .collect(),
                None => lower.contains(phrase).then(String::new).into_iter().collect(),
            };
            for n in found {
                let shown = shown_by.iter().any(|by| region.contains(&by.replace(" N", &format!(" {n}"))));
                if !shown {
                    unchecked.push((index + 1, phrase.replace(" N", &format!(" {n}"))));
                }
            }
        }
    }
    unchecked
}

/// A page cannot say what its run does not show: every outcome its prose states is checked by
/// its run (see [`OUTCOMES`]), and a claim taken away is found. That steps are local is said
/// before them: it is checked over the rest of the page.
#[test]
fn every_outcome_a_task_page_states_is_checked_by_its_run() {
    let mut unchecked = Vec::new();
    for page in TASKS {
        let text = std::fs::read_to_string(workspace_root().join(page)).unwrap();
        unchecked.extend(unchecked_outcomes(&text).into_iter().map(|(line, what)| format!("{page}:{line}: {what}")));
    }
    assert!(unchecked.is_empty(), "outcomes the pages state that their runs do not check:\n{}", unchecked.join("\n"));
    // A claim taken away, a command's exit unsaid, a shown line gone: each is found.
    let page = "## Steps\n\n1. Steps 1 to 3 are local; `--check` changes nothing and exits 2:\n\n\
                <!-- doctest claim: local -->\n<!-- doctest claim: unchanged desired.toml -->\n\n```console\n\
                $ reconcile declare --check   # exits 2\n```\n";
    assert_eq!(unchecked_outcomes(page), []);
    let broken = |from: &str, to: &str| unchecked_outcomes(&page.replace(from, to));
    assert_eq!(broken("<!-- doctest claim: local -->\n", ""), [(3, "local".to_owned())]);
    assert_eq!(broken("<!-- doctest claim: unchanged desired.toml -->\n", ""), [(3, "changes nothing".to_owned())]);
    assert_eq!(broken("   # exits 2", ""), [(3, "exits 2".to_owned())]);
    assert_eq!(broken("```console", "```text"), [], "a statement with no command after it is about no run");
}

/// A page that claims what its run does not do fails, naming the claim: the page's commands all
/// print what it shows, and its prose claims one thing more.
#[tokio::test]
async fn a_page_whose_run_breaks_a_claim_fails() {
    let dir = tempfile::tempdir().unwrap();
    let page = |claims: &str| {
        format!(
            "<!-- doctest world: new-account -->\n\n{claims}\n\n```console\n$ reconcile validate\n...\n\
             $ echo '# a comment' >> desired.toml\n```\n"
        )
    };
    let cases = [
        ("<!-- doctest claim: local -->", None),
        ("<!-- doctest claim: unchanged desired.toml -->", None),
        ("<!-- doctest claim: clean -->", Some("claims `Clean` of `reconcile validate`")),
        // The claim is on the next command only: the append is the second.
        ("<!-- doctest claim: local -->\n<!-- doctest claim: adds-only desired.toml -->", Some("claims `AddsOnly")),
    ];
    for (claims, broken) in cases {
        let path = dir.path().join("page.md");
        std::fs::write(&path, page(claims)).unwrap();
        let run = try_page(&path).await;
        match (broken, run) {
            (None, Ok(_)) => {}
            (Some(said), Err(failed)) => assert!(failed.contains(said), "{claims}: {failed}"),
            (None, Err(failed)) => panic!("{claims}: {failed}"),
            (Some(_), Ok(_)) => panic!("{claims}: a broken claim passed"),
        }
    }
    // A claim no command follows is checked by nothing: the page fails.
    std::fs::write(
        dir.path().join("page.md"),
        "<!-- doctest world: new-account -->\n\n```console\n$ reconcile validate\n...\n```\n\n\
         <!-- doctest claim: clean -->\n",
    )
    .unwrap();
    let failed = try_page(&dir.path().join("page.md")).await.err().expect("a claim of no command");
    assert!(failed.contains("of no command"), "{failed}");
    // Planning needs AWS: a page that says it is local, and plans, fails.
    std::fs::write(
        dir.path().join("page.md"),
        "<!-- doctest world: new-account -->\n<!-- doctest claim: local -->\n\n```console\n$ reconcile plan\n...\n```\n",
    )
    .unwrap();
    let failed = try_page(&dir.path().join("page.md")).await.err().expect("a plan needs AWS");
    assert!(failed.contains("with no AWS credentials (the page says it needs none)"), "{failed}");
}

/// Every page under docs/tasks/ is one the tests above run, and every one of them has commands.
#[test]
fn every_task_page_is_run() {
    let mut pages: Vec<String> = std::fs::read_dir(workspace_root().join("docs/tasks"))
        .unwrap()
        .map(|entry| format!("docs/tasks/{}", entry.unwrap().file_name().to_string_lossy()))
        .collect();
    pages.sort();
    let mut run: Vec<String> = TASKS.iter().map(ToString::to_string).collect();
    run.sort();
    assert_eq!(pages, run);
}

#[test]
fn a_shown_output_matches_as_trycmd_reads_it() {
    let lines = |text: &str| text.lines().map(str::to_owned).collect::<Vec<_>>();
    let expected = lines("Account [..], region us-east-1.\n...\nPlan: [..] to add, 0 to change[..]");
    assert!(matches(&expected, &["Account 1, region us-east-1.", "a", "b", "Plan: 2 to add, 0 to change, 0."]));
    assert!(matches(&expected, &["Account 1, region us-east-1.", "Plan: 2 to add, 0 to change."]));
    assert!(!matches(&expected, &["Account 1, region us-west-2.", "Plan: 2 to add, 0 to change."]));
    assert!(!matches(&expected, &["Account 1, region us-east-1.", "Plan: 2 to add, 1 to change."]));
    assert!(!matches(&lines("a\nb"), &["a", "b", "c"]), "no line past what is shown, without `...`");
    assert!(matches(&lines("a\n..."), &["a", "b", "c"]));
    assert!(line_matches("x[..]y[..]z", "x1y2z") && !line_matches("x[..]y[..]z", "x1z2y"));
    let steps = commands(&["$ reconcile plan   # exits 3: refused", "Refused[..]", "$ a \\", "  b"], 10);
    match &steps[..] {
        [Step::Command { line: 10, exit: 3, expected, .. }, Step::Command { line: 12, exit: 0, command, .. }] => {
            assert_eq!(expected, &["Refused[..]"]);
            assert_eq!(command, "a \n  b");
        }
        other => panic!("{other:?}"),
    }
}

/// Every Markdown page a reader of this repository reads.
fn pages() -> Vec<PathBuf> {
    let root = workspace_root();
    let mut pages = vec![root.join("README.md"), root.join("CONTRIBUTING.md")];
    let mut dirs = vec![root.join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                pages.push(path);
            }
        }
    }
    pages.sort();
    pages
}

/// A command line's words, as a shell splits them (quotes, not expansions), up to the first
/// operator or comment: what `reconcile` is given.
fn words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                started = true;
            }
            (None, c) if c.is_whitespace() => {
                if started || !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            (None, '|' | '>' | '<' | ';' | '&' | '#') => break,
            (None, c) => word.push(c),
        }
    }
    if started || !word.is_empty() {
        words.push(word);
    }
    words
}

/// The `reconcile` command lines of `text`, each with its line and whether it is whole: in code
/// blocks (a console block's `$ ` lines; every line of a shell block), and in code spans of
/// prose, which may name a command without its required arguments (`reconcile head`).
fn reconcile_lines(text: &str) -> Vec<(usize, String, bool)> {
    let mut found = Vec::new();
    let mut block: Option<String> = None;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            block = if block.is_some() { None } else { Some(info.trim().to_owned()) };
            continue;
        }
        match block.as_deref() {
            Some("console") => {
                if let Some(command) = trimmed.strip_prefix("$ ").filter(|c| c.starts_with("reconcile ")) {
                    found.push((index + 1, command.to_owned(), true));
                }
            }
            Some("sh" | "bash" | "shell" | "") => {
                if trimmed.starts_with("reconcile ") {
                    found.push((index + 1, trimmed.to_owned(), true));
                }
            }
            Some(_) => {}
            None => {
                for (at, span) in line.split('`').enumerate() {
                    // `reconcile 0.1.0` is the binary's name and version, not a command.
                    let version = span
                        .strip_prefix("reconcile ")
                        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
                    if at % 2 == 1 && span.starts_with("reconcile ") && !version {
                        found.push((index + 1, span.to_owned(), false));
                    }
                }
            }
        }
    }
    found
}

/// Every `reconcile` command line the docs show names a subcommand and flags the binary accepts.
/// A placeholder in capitals (`CODE`, `PLAN_FILE`) stands for a value; `...` for more of them.
#[test]
fn every_reconcile_command_line_in_the_docs_is_one_the_binary_accepts() {
    let mut checked = 0;
    let mut wrong = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for (line, command, whole) in reconcile_lines(&text) {
            let words: Vec<String> = words(&command)
                .into_iter()
                .skip(1)
                .filter(|word| word != "...")
                .map(|word| {
                    let placeholder = word.len() > 1
                        && word.chars().all(|c| c.is_ascii_uppercase() || c == '_' || c == '-')
                        && !word.starts_with('-');
                    if placeholder { "placeholder".to_owned() } else { word }
                })
                .collect();
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            checked += 1;
            if let Err(error) = reconcile_cli::accepts(&words, whole) {
                wrong.push(format!("{}:{line}: `{command}`: {}", page.display(), error.lines().next().unwrap_or("")));
            }
        }
    }
    assert!(checked > 50, "only {checked} command lines found");
    assert!(wrong.is_empty(), "command lines the binary does not accept:\n{}", wrong.join("\n"));
}

/// GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, spaces made
/// `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Where this repository's files are on GitHub, as a page read in a terminal links them.
const OWN_FILES: &str = "https://github.com/ROCm/reconcile/blob/main/";

/// Every relative link of every page leads to a file that exists, and to a heading of it when
/// it names one; README.md is a landing page: under 200 lines, opening with the two commands,
/// and linking a page for each task.
#[test]
fn every_link_in_the_docs_leads_somewhere_and_the_readme_is_a_landing_page() {
    let root = workspace_root();
    let mut broken = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let mut in_block = false;
        for (index, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("```") {
                in_block = !in_block;
            }
            if in_block {
                continue;
            }
            for target in line.split("](").skip(1).filter_map(|rest| rest.split(')').next()) {
                // A page `reconcile explain` prints links this repository's files by full URL.
                let own = target.strip_prefix(OWN_FILES);
                if own.is_none() && (target.starts_with("http") || target.starts_with("mailto:")) {
                    continue;
                }
                let (file, fragment) = own.unwrap_or(target).split_once('#').unwrap_or((own.unwrap_or(target), ""));
                let path = match own {
                    Some(_) => root.join(file),
                    None if file.is_empty() => page.clone(),
                    None => page.parent().unwrap().join(file),
                };
                if !path.exists() {
                    broken.push(format!("{}:{}: {target}: no such file", page.display(), index + 1));
                    continue;
                }
                if !fragment.is_empty() && path.extension().is_some_and(|e| e == "md") {
                    let linked = std::fs::read_to_string(&path).unwrap();
                    let anchors: Vec<String> = linked
                        .lines()
                        .filter_map(|l| l.strip_prefix('#').map(|h| anchor(h.trim_start_matches('#'))))
                        .collect();
                    if !anchors.iter().any(|a| a == fragment) {
                        broken.push(format!("{}:{}: {target}: no such heading", page.display(), index + 1));
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "links that lead nowhere:\n{}", broken.join("\n"));

    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(readme.lines().count() < 200, "README.md is {} lines", readme.lines().count());
    let first_block: Vec<&str> =
        readme.split("```").nth(1).unwrap().lines().skip(1).map(|l| l.split('#').next().unwrap().trim()).collect();
    assert_eq!(first_block, ["scripts/demo.sh", "scripts/test.sh"], "the README opens with the two commands");
    // Its desired.toml is one reconcile accepts.
    let toml = readme.split("```toml\n").nth(1).unwrap().split("```").next().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("desired.toml"), toml).unwrap();
    let validated = crate::support::command(Some(&dir.path().join("desired.toml"))).arg("validate").output().unwrap();
    assert!(validated.status.success(), "README.md's desired.toml: {}", String::from_utf8_lossy(&validated.stderr));
    for task in TASKS.iter().map(|t| t.trim_start_matches("docs/")).chain(["../CONTRIBUTING.md"]) {
        let link = format!("(docs/{task})").replace("docs/../", "");
        assert!(readme.contains(&link), "README.md links no {link}");
    }
    // No page names an internal issue (this tracker's are under 100; another project's, such as
    // terraform-provider-aws issue 37051, are cited as sources) or keeps a dated log of runs.
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for (index, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            let internal = lower.match_indices("issue").any(|(at, _)| {
                let rest = lower[at..].trim_start_matches("issues").trim_start_matches("issue").trim_start();
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                digits.parse::<u32>().is_ok_and(|n| n < 100)
            });
            assert!(!internal, "{}:{}: names an internal issue: {line}", page.display(), index + 1);
            assert!(!lower.contains("mutants in"), "{}:{}: a dated log of runs: {line}", page.display(), index + 1);
        }
    }
}

/// The README's first command works wherever cargo puts its binaries: scripts/demo.sh asks
/// cargo where it built `reconcile` (here, a CARGO_TARGET_DIR named through a link, which the
/// script has never seen), runs every step of the main job, and says it finished. Its `cargo
/// build --bin reconcile` finds nothing to do: the binary every test runs is the one a user
/// builds, with the same features.
#[test]
fn the_demo_runs_wherever_cargo_puts_the_binary() {
    use std::os::unix::fs::MetadataExt;
    let built = PathBuf::from(env!("CARGO_BIN_EXE_reconcile"));
    let identity = |path: &Path| {
        let metadata = std::fs::metadata(path).unwrap();
        (metadata.ino(), metadata.len(), metadata.mtime(), metadata.mtime_nsec())
    };
    let tested = identity(&built);
    let target = built.parent().unwrap().parent().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let link = elsewhere.path().join("elsewhere");
    std::os::unix::fs::symlink(target, &link).unwrap();
    let mut demo = Command::new(workspace_root().join("scripts/demo.sh"));
    demo.current_dir(elsewhere.path()).env("CARGO_TARGET_DIR", &link).env_remove("GITHUB_ACTIONS");
    // What cargo sets for a test, and a maintainer's shell does not have: ring's build script
    // reruns when OUT_DIR, CARGO_MANIFEST_DIR or CARGO_PKG_NAME changes, and with it the SDK's
    // whole TLS stack would be compiled again.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy().into_owned();
        let set_for_a_test = ["OUT_DIR", "CARGO_MANIFEST_DIR", "CARGO_MANIFEST_PATH", "CARGO_MANIFEST_LINKS"];
        let set_for_a_crate = ["CARGO_PRIMARY_PACKAGE", "CARGO_CRATE_NAME"];
        if name.starts_with("CARGO_PKG_") || set_for_a_test.iter().chain(&set_for_a_crate).any(|set| *set == name) {
            demo.env_remove(name);
        }
    }
    let output = demo.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("demo: done; every step exited as expected"), "{stdout}");
    assert_eq!(
        identity(&built),
        tested,
        "the demo's `cargo build --bin reconcile` rebuilt the binary the tests run: the tests' build resolved \
         other features (scripts/test.sh runs the resource crates' mocked tests apart; a new feature of a \
         test-only crate goes into crates/cli/Cargo.toml's list)\n{stderr}"
    );
    // The first plan, of the account as the setup script left it: the refusal and its command
    // first, the 30 W601 findings folded into one.
    let first = stdout.split("==> reconcile import --check").next().unwrap();
    let lines: Vec<&str> = first.lines().collect();
    let refused = lines.iter().position(|l| l.starts_with("Refused: 30 error findings (W601)")).unwrap();
    assert!(lines[refused + 1].contains("`reconcile import` lists them"), "{}", lines[refused + 1]);
    let diff = lines.iter().position(|l| *l == "reconcile will perform the following actions:").unwrap();
    assert!(refused < diff, "the refusal comes before the diff");
    let w601: Vec<&&str> = lines.iter().filter(|l| l.starts_with("Error [W601]")).collect();
    assert_eq!(w601.len(), 1, "{w601:#?}");
    assert!(first.contains("and 29 more like it: "), "{first}");
    assert!(lines.len() < diff + 2000);
}
