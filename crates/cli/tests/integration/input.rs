//! Bad input and unsafe invocations stop before any AWS call, saying where and why.

use reconcile_test_support::emulator;

use crate::support::{apply_on_a_terminal, desired_file, real_desired, reconcile, small_desired};

#[tokio::test]
async fn a_bad_desired_file_is_refused_with_file_line_and_key_before_any_aws_call() {
    let account = emulator().new_account().await;
    let text = small_desired(&["pytorch"]).replace("tags = { project", "tagz = { project");
    let desired = desired_file(&text);
    for command in [&["validate"][..], &["plan"], &["apply", "--auto-approve"]] {
        let run = reconcile(&account, &desired.path, command);
        assert_eq!(run.code, 1, "{command:?}");
        let expected = format!(
            "error: {}:5:1: `ecr.defaults.tagz`: unknown field `tagz`, expected one of `lifecycle_policy`, \
             `image_tag_mutability`, `scan_on_push`, `encryption_type`, `kms_key`, `tags`, `allow_tagged_expiry`, `adopt`\n",
            desired.path.display()
        );
        assert_eq!(run.stderr, expected, "{command:?}");
        assert_eq!(run.stdout, "");
    }
    assert_eq!(account.requests(), [], "nothing was sent to AWS");
}

#[tokio::test]
async fn every_problem_in_the_file_is_reported_at_once() {
    let account = emulator().new_account().await;
    let text = small_desired(&["pytorch", "Bad_Name"]).replace("countNumber = 3", "countNumber = 0");
    let run = reconcile(&account, &desired_file(&text).path, &["plan"]);
    assert_eq!(run.code, 1);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{}", run.stderr);
    assert!(
        lines[0]
            .ends_with("`ecr.lifecycle_policies.keep-3-untagged.rules[0]`: `selection.countNumber` must be 1 or more")
    );
    assert!(lines[1].contains("`ecr.repositories.Bad_Name`: repository name `Bad_Name` is not valid in ECR"));
    assert_eq!(account.requests(), []);
}

#[tokio::test]
async fn validate_accepts_the_real_desired_file_without_aws() {
    let account = emulator().new_account().await;
    let run = reconcile(&account, &real_desired(), &["validate"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.ends_with(
            "is valid: region us-east-1, 27 ECR repositories, 1 S3 buckets, 1 IAM roles, 1 CodeBuild projects, 3 CI roles.\n"
        ),
        "{}",
        run.stdout
    );
    assert_eq!(account.requests(), []);
}

#[tokio::test]
async fn apply_without_a_terminal_needs_auto_approve() {
    let account = emulator().new_account().await;
    let run = reconcile(&account, &real_desired(), &["apply"]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        "error: apply is not running on a terminal, so it cannot ask for approval; pass --auto-approve\n"
    );
    assert_eq!(account.requests(), []);
}

#[tokio::test]
async fn apply_on_a_terminal_asks_and_only_yes_applies() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_desired(&["pytorch"]));

    let (code, screen) = apply_on_a_terminal(&account, &desired.path, "", "no");
    assert_eq!(code, 1, "{screen}");
    assert!(screen.contains("Do you want to perform these actions? Only 'yes' will be accepted:"), "{screen}");
    assert!(screen.contains("Apply cancelled."), "{screen}");
    assert_eq!(account.writes(), [], "nothing applied without yes");

    let (code, screen) = apply_on_a_terminal(&account, &desired.path, "", "yes");
    assert_eq!(code, 0, "{screen}");
    assert!(screen.contains("Apply complete! Resources: 2 created, 0 updated, 0 deleted."), "{screen}");
}

#[tokio::test]
async fn one_role_name_under_two_keys_or_two_cases_is_refused_by_validate_plan_and_apply() {
    let account = emulator().new_account().await;
    let twice = crate::support::small_account(&["pytorch"]).replace("[iam.roles.codebuild]", "[iam.roles.builder]")
        + "\n[iam.roles.codebuild]\nname = \"rocm-bake-codebuild\"\ntrusted_services = [\"codebuild.amazonaws.com\"]\n";
    let desired = desired_file(&twice);
    for command in [&["validate"][..], &["plan"], &["apply", "--auto-approve", "--allow-delete"]] {
        let run = reconcile(&account, &desired.path, command);
        assert_eq!(run.code, 1, "{command:?}: {}", run.stderr);
        assert!(
            run.stderr.contains(
                "`iam.roles.codebuild.name`: role name `rocm-bake-codebuild` is also declared by `iam.roles.builder`"
            ),
            "{}",
            run.stderr
        );
    }
    // IAM does not tell role names apart by case: a CI role spelt as the runner's in capitals is
    // the runner's, and refused the same way.
    let variant = format!(
        "{}{}",
        crate::support::small_account(&["pytorch"]),
        crate::ci::CI.replace("apply_role = \"rocm-bake-reconcile-apply\"", "apply_role = \"ROCM-BAKE-CODEBUILD\"")
    );
    let run = reconcile(&account, &desired_file(&variant).path, &["validate"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "`ci.apply_role`: role `ROCM-BAKE-CODEBUILD` is also declared under `[iam.roles]` as `rocm-bake-codebuild`: \
             IAM does not tell role names apart by case"
        ),
        "{}",
        run.stderr
    );
    assert_eq!(account.requests(), [], "nothing was sent to AWS");
}

#[tokio::test]
async fn absurd_input_is_refused_quickly_with_a_clear_error() {
    let account = emulator().new_account().await;
    // An endless file.
    let run = reconcile(&account, std::path::Path::new("/dev/zero"), &["validate"]);
    assert_eq!(run.code, 1);
    assert_eq!(run.stderr, "error: failed to read /dev/zero: it is not a regular file, but a device\n");
    // Not text.
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("desired.toml");
    std::fs::write(&binary, b"region = \"us-east-1\"\n\xff\xfe\n").unwrap();
    let run = reconcile(&account, &binary, &["validate"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("it is not UTF-8 text (invalid byte at offset 21)"), "{}", run.stderr);
    // 14,000 unrelated repositories (under the bound of 15,000 tables): read, checked and derived
    // (too many to name, the runner's policy grants them by the mark) before any AWS call.
    let mut text = small_desired(&[]);
    for idx in 0..14_000 {
        text.push_str(&format!("repo{idx:05}x-{idx} = {{}}\n"));
    }
    text.push_str(crate::support::BUCKET_AND_ROLE);
    let run = reconcile(&account, &desired_file(&text).path, &["validate"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("14000 ECR repositories"), "{}", run.stdout);
    assert_eq!(account.requests(), []);
}

/// Every file of `tests/bad-input/` is refused by `plan` (which would otherwise call AWS) with
/// exit 1 and exactly the message in its `.stderr` file, and nothing reaches AWS. Set
/// `RECONCILE_BLESS=1` to write the `.stderr` files after a deliberate change, and review them.
#[tokio::test]
async fn every_file_of_the_bad_input_corpus_is_refused_with_its_exact_message_and_no_aws_call() {
    let account = emulator().new_account().await;
    let root = reconcile_test_support::workspace_root();
    let mut files: Vec<_> = std::fs::read_dir(root.join("tests/bad-input"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 40, "{} files", files.len());
    let bless = std::env::var_os("RECONCILE_BLESS").is_some();
    for file in files {
        let relative = file.strip_prefix(&root).unwrap();
        let mut command = crate::support::command(Some(relative));
        command.current_dir(&root).arg("plan").envs(account.env());
        let output = assert_cmd::Command::from_std(command)
            .write_stdin("")
            .timeout(std::time::Duration::from_secs(30))
            .output()
            .unwrap();
        let stderr = String::from_utf8(output.stderr).unwrap();
        let expected_path = file.with_extension("stderr");
        if bless {
            std::fs::write(&expected_path, &stderr).unwrap();
        }
        let expected = std::fs::read_to_string(&expected_path)
            .unwrap_or_else(|_| panic!("{} has no .stderr file; run with RECONCILE_BLESS=1", relative.display()));
        assert_eq!(output.status.code(), Some(1), "{}: {stderr}", relative.display());
        assert_eq!(stderr, expected, "{}", relative.display());
        assert!(stderr.lines().all(|line| line.starts_with("error: ")), "{}: {stderr}", relative.display());
        assert!(!stderr.contains("panicked"), "{}", relative.display());
    }

    // What cannot be a checked-in file: a directory, a path through a file, a huge account, a
    // huge string.
    let dir = tempfile::tempdir().unwrap();
    let run = reconcile(&account, dir.path(), &["plan"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.starts_with(&format!("error: failed to read {}: ", dir.path().display())), "{}", run.stderr);
    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let run = reconcile(&account, &file.join("desired.toml"), &["plan"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("Not a directory"), "{}", run.stderr);
    let mut huge = small_desired(&[]);
    for idx in 0..100_000 {
        huge.push_str(&format!("repository-{idx} = {{}}\n"));
    }
    let run = reconcile(&account, &desired_file(&huge).path, &["plan"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("it is larger than 1 MiB"), "{}", run.stderr);
    let long = format!("{}[nightly]\narches = \"{}\"\n", small_desired(&["pytorch"]), "x".repeat(1_000_000));
    let run = reconcile(&account, &desired_file(&long).path, &["plan"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("1000000 bytes, more than the 49152 GitHub allows"), "{}", run.stderr);
    assert_eq!(account.requests(), [], "nothing was sent to AWS");
}

/// clap's usage errors exit 2 of their own accord, which a workflow reads as "changes" or
/// "drift": every command's usage error is 1, as the exit codes' page says, and so is a value out
/// of its range; `--help` and `--version` are 0. `--help` gives each command one short line,
/// the main ones first, as Terraform's does.
#[test]
fn a_usage_error_of_every_command_exits_1_as_the_exit_codes_page_says() {
    let run = |args: &[&str]| {
        let output = crate::support::command(None).args(args).output().unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (code, help, _) = run(&["--help"]);
    assert_eq!(code, Some(0));
    let commands: Vec<String> = help
        .lines()
        .skip_while(|line| *line != "Commands:")
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .filter_map(|line| line.split_whitespace().next().map(str::to_owned))
        .filter(|command| command != "help")
        .collect();
    assert!(commands.len() >= 12, "{commands:?}");
    assert_eq!(commands[..4], ["plan", "apply", "validate", "drift"], "the main commands first");
    let listed: Vec<&str> =
        help.lines().skip_while(|line| *line != "Commands:").skip(1).take_while(|l| !l.is_empty()).collect();
    assert_eq!(listed.len(), commands.len() + 1, "one line per command (and help's): {listed:#?}");
    for line in &listed {
        assert!(line.chars().count() <= 90, "a line of --help's commands is over 90 characters: {line}");
    }
    for command in &commands {
        let (code, _, stderr) = run(&[command, "--no-such-flag"]);
        assert_eq!(code, Some(1), "{command}: {stderr}");
        assert!(stderr.contains("unexpected argument '--no-such-flag'"), "{command}: {stderr}");
        assert_eq!(run(&[command, "--help"]).0, Some(0), "{command} --help");
    }
    for args in [&["no-such-command"][..], &["plan", "--parallelism", "0"], &["drift", "--since-days", "91"], &[]] {
        assert_eq!(run(args).0, Some(1), "{args:?}");
    }
    assert_eq!(run(&["--version"]).0, Some(0));
    let page =
        std::fs::read_to_string(reconcile_test_support::workspace_root().join("docs/reference/exit-codes.md")).unwrap();
    let one = page.lines().find(|line| line.starts_with("| 1 |")).unwrap();
    assert!(one.contains("a usage error"), "{one}");
}

/// The exit codes' page lists exactly the codes `crates/cli/src/exit.rs` defines, each once.
#[test]
fn the_exit_codes_page_lists_every_code_the_binary_defines() {
    let root = reconcile_test_support::workspace_root();
    let source = std::fs::read_to_string(root.join("crates/cli/src/exit.rs")).unwrap();
    let defined: std::collections::BTreeSet<u8> = source
        .lines()
        .filter_map(|line| line.strip_prefix("pub const ").and_then(|rest| rest.split_once(": u8 = ")))
        .map(|(_, value)| value.trim_end_matches(';').parse().unwrap())
        .collect();
    let page = std::fs::read_to_string(root.join("docs/reference/exit-codes.md")).unwrap();
    let listed: Vec<u8> = page
        .lines()
        .filter_map(|line| line.strip_prefix("| "))
        .filter_map(|rest| rest.split(' ').next().and_then(|code| code.parse().ok()))
        .collect();
    assert_eq!(listed.iter().copied().collect::<std::collections::BTreeSet<_>>(), defined);
    assert_eq!(listed.len(), defined.len(), "each code once: {listed:?}");
}

/// A fork's desired.toml of 87,100 repositories (the project's own, and a line `rN = {}` each,
/// within the 1 MiB a file may be): the public plan refuses it before any AWS call (there is no
/// AWS to call: its endpoint is a closed port), naming the bound, how many it holds, and the first
/// past it, in a process allowed 256 MiB of memory (`prlimit --data`, util-linux's), far under a
/// hosted runner's.
#[test]
fn a_desired_file_past_the_bound_on_declared_resources_is_refused_before_any_aws_call_in_little_memory() {
    let project = std::fs::read_to_string(real_desired()).unwrap();
    let lines: String = (0..87_100).map(|n| format!("r{n} = {{}}\n")).collect();
    let text = project.replacen("[ecr.repositories]\n", &format!("[ecr.repositories]\n{lines}"), 1);
    assert!(text.len() < 1 << 20, "{}", text.len());
    let desired = desired_file(&text);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let output = std::process::Command::new("prlimit")
        .arg(format!("--data={}", 256u64 << 20))
        .arg(env!("CARGO_BIN_EXE_reconcile"))
        .args(["--desired", desired.path.to_str().unwrap(), "plan", "--public", "--base"])
        .arg(&desired.path)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("AWS_ENDPOINT_URL", &endpoint)
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .output()
        .expect("prlimit runs the binary");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    // Where: the line of the first table past the bound in the file's order, under its key.
    let at = &stderr[format!("error: {}:", desired.path.display()).len()..];
    let line: usize = at[..at.find(':').unwrap()].parse().unwrap();
    let key = at[at.find("`ecr.repositories.").unwrap() + 18..].split('`').next().unwrap();
    assert_eq!(text.lines().nth(line - 1), Some(format!("{key} = {{}}").as_str()), "{stderr}");
    let n: usize = key[1..].parse().unwrap();
    assert!((14_900..15_000).contains(&n), "the project's own tables come first: {stderr}");
    assert!(
        stderr.starts_with(&format!("error: {}:", desired.path.display()))
            && stderr.contains(
                "desired.toml holds 87169 tables (each declared resource is one, with its settings'), more than the \
                 15000 reconcile plans: the first past the bound is here"
            ),
        "{stderr}"
    );
    assert!(!stderr.contains(&endpoint) && !stderr.contains("dispatch"), "no AWS call: {stderr}");
}
