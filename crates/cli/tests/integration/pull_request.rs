//! The pull request is hostile input: desired.toml and the bake file in it are written by
//! whoever opened it, and live values by whoever can write to the account. Nothing they write
//! may read a file outside the repository, reach a secret, render as markup, reach the apply
//! lock, or narrow a saved plan. The corpus of hostile files is `tests/hostile/` (see
//! `hostile_corpus.rs`); the attacks that need an account in a given state are here.

use std::path::Path;
use std::time::Duration;

use aws_sdk_ecr as ecr;
use reconcile_test_support::faults::{Fault, FaultProxy, Rule};
use reconcile_test_support::{Markup, TestAccount, emulator};
use serde_json::{Value, json};

use crate::permissions::Watch;
use crate::support::{
    command, desired_file, reconcile, reconcile_in, reconcile_with, small_account, small_account_with_runner,
    small_desired, spawn_apply,
};

/// A CodeBuild description someone with account access wrote, as the hostile review found it.
const HOSTILE: &str = "x` </details></details> @org/team <img src=https://evil.example/p.png> [y](https://evil.example) ![i](https://evil.example/i.png)";

/// The runner project's description, set out of band.
async fn describe_runner(account: &TestAccount, description: &str) {
    aws_sdk_codebuild::Client::new(&account.sdk_config())
        .update_project()
        .name("rocm-bake")
        .description(description)
        .send()
        .await
        .unwrap();
}

#[tokio::test]
async fn a_hostile_live_description_renders_as_text_in_the_plan_and_drift_comments() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account_with_runner(&["pytorch"]));
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    describe_runner(&account, &format!("{HOSTILE}\r\nsecond line")).await;

    let plan = reconcile(&account, &desired.path, &["plan", "--format", "markdown"]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    Markup::assert_inert(&plan.stdout);
    assert!(plan.stdout.contains("<details><summary><code>~ codebuild_project.runner</code>"), "{}", plan.stdout);
    insta::assert_snapshot!("hostile_description_plan_markdown", crate::support::redact(&plan.stdout, &account));

    // And findings carrying live values: a repository policy letting in a principal named to
    // close the block, and an inline policy on the role named to mention a team.
    let policy = json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "ecr:BatchGetImage",
        "Principal": {"AWS": format!("arn:aws:iam::999999999999:user/x`</details>@org/team![i](https://evil.example)")}}]});
    ecr::Client::new(&account.sdk_config())
        .set_repository_policy()
        .repository_name("pytorch")
        .policy_text(policy.to_string())
        .send()
        .await
        .unwrap();
    aws_sdk_iam::Client::new(&account.sdk_config())
        .put_role_policy()
        .role_name("rocm-bake-codebuild")
        .policy_name("legacy@org")
        .policy_document(r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"}]}"#)
        .send()
        .await
        .unwrap();
    let drift = reconcile(&account, &desired.path, &["drift", "--format", "markdown"]);
    assert_eq!(drift.code, 2, "{}", drift.stderr);
    Markup::assert_inert(&drift.stdout);
    assert!(drift.stdout.contains("[S102]") || drift.stdout.contains("`S102`"), "{}", drift.stdout);
    let blocks = Markup::of(&drift.stdout).html.iter().filter(|h| h.contains("<details>")).count();
    assert_eq!(blocks, 3, "the runner, the repository, the inline policy: {}", drift.stdout);
    insta::assert_snapshot!("hostile_description_drift_markdown", crate::support::redact(&drift.stdout, &account));
}

/// Whether the derived policy's statements deny `action` on `resource` outright (an explicit
/// deny, which no allow overrides): IAM's `*` wildcards, as policies use them.
fn denied(policy: &Value, action: &str, resource: &str) -> bool {
    use crate::permissions::{list, matches};
    policy["Statement"].as_array().unwrap().iter().any(|statement| {
        statement["Effect"] == "Deny"
            && list(&statement["Action"]).iter().any(|a| matches(a, action))
            && list(&statement["Resource"]).iter().any(|r| matches(r, resource))
    })
}

#[tokio::test]
async fn the_runners_role_may_not_write_or_delete_the_apply_lock() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account(&["pytorch"]));
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    let iam = aws_sdk_iam::Client::new(&account.sdk_config());
    let policy = iam.get_role_policy().role_name("rocm-bake-codebuild").policy_name("rocm-bake-nightly").send().await;
    let document = policy.unwrap().policy_document().to_owned();
    let document: Value = serde_json::from_str(&urlencoding_decode(&document)).unwrap();
    let lock = format!("arn:aws:s3:::rocm-bake-sccache-{}/reconcile/apply.lock", account.id);
    for action in ["s3:PutObject", "s3:DeleteObject", "s3:GetObject"] {
        assert!(denied(&document, action, &lock), "{action} on the lock: {document:#}");
    }
    // The cache itself stays the runner's.
    let cache = format!("arn:aws:s3:::rocm-bake-sccache-{}/sccache/abc", account.id);
    assert!(!denied(&document, "s3:PutObject", &cache));
}

/// IAM returns policy documents percent-encoded.
fn urlencoding_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut idx = 0;
    while idx < bytes.len() {
        match (bytes[idx], bytes.get(idx + 1..idx + 3)) {
            (b'%', Some(hex)) => {
                out.push(u8::from_str_radix(std::str::from_utf8(hex).unwrap(), 16).unwrap());
                idx += 3;
            }
            (byte, _) => {
                out.push(byte);
                idx += 1;
            }
        }
    }
    String::from_utf8(out).unwrap()
}

/// The sccache bucket, made by an earlier apply (its mark), and an expired lock in it written by
/// another host.
async fn expired_lock(account: &TestAccount) -> String {
    let s3 = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(&account.sdk_config()).force_path_style(true).build(),
    );
    let bucket = format!("rocm-bake-sccache-{}", account.id);
    s3.create_bucket()
        .bucket(&bucket)
        .create_bucket_configuration(crate::support::marked_bucket())
        .send()
        .await
        .unwrap();
    let holder = json!({
        "who": "arn:aws:sts::123456789012:assumed-role/nightly/ci",
        "host": "runner-7",
        "since": 1_700_000_000,
        "until": 1_700_003_600,
    });
    s3.put_object()
        .bucket(&bucket)
        .key("reconcile/apply.lock")
        .body(holder.to_string().into_bytes().into())
        .send()
        .await
        .unwrap();
    bucket
}

#[tokio::test]
async fn two_applies_breaking_one_expired_lock_cannot_both_hold_it() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account(&["pytorch"]));
    expired_lock(&account).await;
    // Every S3 write held back two seconds: both applies read the expired lock before either
    // overwrites it, which is when breaking it by read, delete and write let both through.
    let proxy = FaultProxy::start(
        emulator().endpoint(),
        1,
        vec![Rule::always(Fault::Delay(Duration::from_secs(2))).service("s3").operation("PUT")],
    );
    let watch = Watch::start(&account.env());
    let first = spawn_apply(&account, &proxy.endpoint, &desired.path);
    std::thread::sleep(Duration::from_millis(300));
    let second = spawn_apply(&account, &proxy.endpoint, &desired.path);
    let outputs = [first.wait_with_output().unwrap(), second.wait_with_output().unwrap()];
    watch.check(&desired.path, None);
    let codes: Vec<i32> = outputs.iter().map(|o| o.status.code().unwrap()).collect();
    let stderr: Vec<String> = outputs.iter().map(|o| String::from_utf8_lossy(&o.stderr).into_owned()).collect();
    assert_eq!(codes.iter().filter(|code| **code == 0).count(), 1, "exactly one holds it: {codes:?} {stderr:?}");
    let broke = stderr.iter().filter(|e| e.contains("Broke the apply lock of arn:aws:sts::123456789012")).count();
    assert_eq!(broke, 1, "{stderr:?}");
    assert!(stderr.iter().any(|e| e.contains("another apply holds the lock")), "{stderr:?}");
    drop(proxy);
    let unlock = reconcile(&account, &desired.path, &["unlock"]);
    assert!(unlock.stdout.starts_with("There is no apply lock"), "released: {}", unlock.stdout);
}

#[tokio::test]
async fn sigterm_while_planning_under_the_lock_releases_it() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account(&["pytorch", "vllm"]));
    let bucket = expired_lock(&account).await;
    let s3 = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(&account.sdk_config()).force_path_style(true).build(),
    );
    s3.delete_object().bucket(&bucket).key("reconcile/apply.lock").send().await.unwrap();
    // Every ECR read slow, so that the plan under the lock lasts.
    let proxy = FaultProxy::start(
        emulator().endpoint(),
        1,
        vec![Rule::always(Fault::Delay(Duration::from_millis(1500))).service("ecr")],
    );
    let writes = account.writes().len();
    let watch = Watch::start(&account.env());
    let child = spawn_apply(&account, &proxy.endpoint, &desired.path);
    // Wait for the lock to be taken, then signal while the locked plan reads ECR.
    let start = std::time::Instant::now();
    while s3.head_object().bucket(&bucket).key("reconcile/apply.lock").send().await.is_err() {
        assert!(start.elapsed() < Duration::from_secs(30), "the apply never took the lock");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let status = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    watch.check(&desired.path, None);
    assert_eq!(output.status.code(), Some(143), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(account.writes().len(), writes, "nothing applied: {:?}", account.writes());
    drop(proxy);
    let unlock = reconcile(&account, &desired.path, &["unlock"]);
    assert!(unlock.stdout.starts_with("There is no apply lock"), "released on SIGTERM: {}", unlock.stdout);
}

#[tokio::test]
async fn unlock_refuses_a_live_holder_on_this_host_without_force_and_prints_dates() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account(&["pytorch"]));
    let bucket = expired_lock(&account).await;
    let s3 = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(&account.sdk_config()).force_path_style(true).build(),
    );
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_owned();
    // This test's own process: alive, on this host.
    let live = json!({ "who": "me", "host": host, "pid": std::process::id(), "since": 1_700_000_000, "until": 4_000_000_000u64 });
    let put = |body: Value| {
        s3.put_object().bucket(&bucket).key("reconcile/apply.lock").body(body.to_string().into_bytes().into()).send()
    };
    put(live).await.unwrap();
    let env = [("HOSTNAME", host.as_str())];
    let refused = reconcile_with(&account, &desired.path, &["unlock"], &env);
    assert_eq!(refused.code, 3, "{}{}", refused.stdout, refused.stderr);
    assert!(
        refused.stderr.starts_with(&format!(
            "error: refusing to break the apply lock: it is held by me on {host} (process {}), since \
             2023-11-14T22:13:20Z (lease until 2096-10-02T07:06:40Z), whose process still runs on this host",
            std::process::id()
        )),
        "{}",
        refused.stderr
    );
    let forced = reconcile_with(&account, &desired.path, &["unlock", "--force"], &env);
    assert_eq!(forced.code, 0, "{}", forced.stderr);
    assert!(forced.stdout.starts_with("Broke the apply lock of me on"), "{}", forced.stdout);

    // A lock nobody can read has no lease to print as a number.
    s3.put_object().bucket(&bucket).key("reconcile/apply.lock").body(b"not json".to_vec().into()).send().await.unwrap();
    let unreadable = reconcile(&account, &desired.path, &["unlock"]);
    assert_eq!(unreadable.code, 0, "{}", unreadable.stderr);
    assert_eq!(unreadable.stdout, "Broke the apply lock of an unreadable lock on unknown, with no end to its lease.\n");
}

#[tokio::test]
async fn a_saved_plan_with_a_prune_delete_spliced_in_is_refused() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_desired(&["pytorch"]));
    // A repository reconcile made and desired.toml no longer declares.
    let client = ecr::Client::new(&account.sdk_config());
    client.create_repository().repository_name("retired").tags(crate::support::ecr_mark()).send().await.unwrap();
    let dir = desired.path.parent().unwrap();
    let (pruning, plain) = (dir.join("prune.json"), dir.join("plain.json"));
    let made = reconcile(&account, &desired.path, &["plan", "--prune", "--out", pruning.to_str().unwrap()]);
    assert_eq!(made.code, 0, "{}", made.stderr);
    assert_eq!(reconcile(&account, &desired.path, &["plan", "--out", plain.to_str().unwrap()]).code, 0);
    let pruning_plan: Value = serde_json::from_str(&std::fs::read_to_string(&pruning).unwrap()).unwrap();
    let mut spliced: Value = serde_json::from_str(&std::fs::read_to_string(&plain).unwrap()).unwrap();
    let delete = pruning_plan["resource_changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|change| change["address"] == "ecr_repository.retired")
        .cloned()
        .unwrap();
    spliced["resource_changes"].as_array_mut().unwrap().insert(0, delete);
    spliced["observed_fingerprints"]["ecr_repository.retired"] =
        pruning_plan["observed_fingerprints"]["ecr_repository.retired"].clone();
    std::fs::write(&plain, spliced.to_string()).unwrap();
    let writes = account.writes().len();
    let refused = reconcile(&account, &desired.path, &["apply", plain.to_str().unwrap(), "--allow-delete"]);
    assert_eq!(refused.code, 4, "{}{}", refused.stdout, refused.stderr);
    assert!(
        refused.stderr.contains("  - it deletes a repository, but was not made with --prune: the plan file was edited"),
        "{}",
        refused.stderr
    );
    assert_eq!(account.writes().len(), writes);
    // Made with --prune, it is applied with --prune (the command asks for deletes, not the file),
    // and the flags a delete needs.
    let unasked = reconcile(&account, &desired.path, &["apply", pruning.to_str().unwrap(), "--allow-delete"]);
    assert_eq!(unasked.code, 4, "{}", unasked.stderr);
    assert!(unasked.stderr.contains("  - it was made with --prune: apply it with --prune too"), "{}", unasked.stderr);
    let without_flag = reconcile(&account, &desired.path, &["apply", pruning.to_str().unwrap(), "--prune"]);
    assert_eq!(without_flag.code, 3, "{}", without_flag.stderr);
    let applied =
        reconcile(&account, &desired.path, &["apply", pruning.to_str().unwrap(), "--prune", "--allow-delete"]);
    assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);
    assert!(client.describe_repositories().repository_names("retired").send().await.is_err(), "deleted");
}

#[tokio::test]
async fn a_drift_comment_of_a_registry_out_of_control_stays_under_githubs_limit_reading_each_policy_once() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account(&["pytorch"]));
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    let client = ecr::Client::new(&account.sdk_config());
    let names: Vec<String> =
        (0..400).map(|n| format!("an-undeclared-repository-with-a-long-descriptive-name-{n:03}")).collect();
    for chunk in names.chunks(50) {
        futures::future::join_all(chunk.iter().map(|name| client.create_repository().repository_name(name).send()))
            .await
            .into_iter()
            .for_each(|created| {
                created.unwrap();
            });
    }
    let before = account.requests().len();
    let drift = reconcile(&account, &desired.path, &["drift", "--format", "markdown"]);
    assert_eq!(drift.code, 2, "{}", drift.stderr);
    assert!(drift.stdout.chars().count() <= 65_536, "{} characters", drift.stdout.chars().count());
    Markup::assert_inert(&drift.stdout);
    // Public (the job summary, the issue): another team's repositories are counted, not named.
    assert!(
        drift
            .stdout
            .contains("400 of the account's other repositories holding 0 B (counted here; `--private` names them)"),
        "{}",
        drift.stdout
    );
    assert!(drift.stdout.contains("`D102` 400 finding(s) of this code"), "{}", drift.stdout);
    assert!(!drift.stdout.contains("an-undeclared-repository"), "{}", drift.stdout);
    // Each repository's lifecycle policy read once, though the plan, the survey and the registry
    // summary all look at it.
    let reads = account.requests()[before..].iter().filter(|r| r.action == "GetLifecyclePolicy").count();
    assert_eq!(reads, 401);
    let listings = account.requests()[before..].iter().filter(|r| r.action == "DescribeRepositories").count();
    assert_eq!(listings, 1);
    // The JSON keeps every finding.
    let json = reconcile(&account, &desired.path, &["drift", "--format", "json"]);
    let json: Value = serde_json::from_str(&json.stdout).unwrap();
    let d102 = json["findings"].as_array().unwrap().iter().filter(|f| f["code"] == "D102").count();
    assert_eq!(d102, 400);
}

#[tokio::test]
async fn usage_since_refuses_a_report_of_another_account_or_region_or_from_the_future() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account(&["pytorch"]));
    let dir = desired.path.parent().unwrap();
    let report = |account_id: &str, region: &str, at: i64| {
        json!({
            "format_version": "1.0", "account": account_id, "region": region, "generated_at": at,
            "price_per_gb_month_usd": 0.10, "repositories": [], "total": {}, "note": "",
        })
    };
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    let cases = [
        (
            "foreign.json",
            report("999999999999", "us-east-1", now - 86_400),
            "it is a report of account 999999999999 in us-east-1, not of account",
        ),
        ("elsewhere.json", report(&account.id, "eu-west-1", now - 86_400), "in eu-west-1, not of account"),
        ("future.json", report(&account.id, "us-east-1", now + 30 * 86_400), ", after now"),
    ];
    for (name, body, expected) in cases {
        let path = dir.join(name);
        std::fs::write(&path, body.to_string()).unwrap();
        let run = reconcile(&account, &desired.path, &["usage", "--since", path.to_str().unwrap()]);
        assert_eq!(run.code, 1, "{name}: {}", run.stdout);
        assert!(run.stderr.starts_with(&format!("error: {}: ", path.display())), "{name}: {}", run.stderr);
        assert!(run.stderr.contains(expected), "{name}: {}", run.stderr);
    }
    // Sizes past any registry are refused rather than summed.
    let mut huge = report(&account.id, "us-east-1", now - 86_400);
    huge["repositories"] = json!([{ "name": "x", "images": 1, "tagged": 0, "untagged": 1, "bytes": u64::MAX }]);
    let path = dir.join("huge.json");
    std::fs::write(&path, huge.to_string()).unwrap();
    let run = reconcile(&account, &desired.path, &["usage", "--since", path.to_str().unwrap()]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("`bytes` is 18446744073709551615, more than any registry holds"), "{}", run.stderr);
    // And one of this account, from before, is read.
    let fine = dir.join("fine.json");
    std::fs::write(&fine, report(&account.id, "us-east-1", now - 86_400).to_string()).unwrap();
    let run = reconcile_in(&account.env(), &desired.path, &["usage", "--since", fine.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

/// The corpus of hostile inputs, `tests/hostile-input/<case>/`: each a repository as a pull
/// request could make it (desired.toml, a bake file, a saved plan, links the test makes as
/// `links` says, FIFOs as `fifos` says), the command line a workflow would run in it, and what
/// must come of it (`code`, lines of `stderr` and `stdout`), within `limits` when it says
/// (`seconds`, and `memory_mb` of address space, which the run is given no more of).
/// `{CANARY}` in any file or variable is a secret; `{ACCOUNT}` and `{DESIRED_FINGERPRINT}` are
/// the test account's and desired.toml's. Whatever a case does, no output (stdout, stderr, the
/// job summary, a file it wrote) holds the canary or any 8 bytes of it, the account's
/// credentials or a line of `/etc/passwd`; stderr sends a terminal or a job log no control
/// character and starts no line with `::` (a workflow command); and a Markdown output
/// (`markdown = true`: stdout, stderr and the job summary) renders nothing but text.
#[tokio::test]
async fn every_hostile_input_is_refused_with_its_message_and_leaks_nothing() {
    let account = emulator().new_account().await;
    let canary = "canary-3f9a1c7e-printed-means-leaked";
    let corpus = reconcile_test_support::workspace_root().join("tests/hostile-input");
    let mut cases: Vec<_> = std::fs::read_dir(&corpus).unwrap().map(|e| e.unwrap().path()).collect();
    cases.sort();
    assert!(cases.len() >= 20, "{} cases", cases.len());
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let spec: toml::Table = std::fs::read_to_string(case.join("case.toml")).unwrap().parse().unwrap();
        let strings = |key: &str| -> Vec<String> {
            spec.get(key)
                .and_then(|v| v.as_array())
                .into_iter()
                .flatten()
                .map(|v| v.as_str().unwrap().to_owned())
                .collect()
        };
        // The repository, with the placeholders filled in.
        let dir = tempfile::tempdir().unwrap();
        let desired_text = std::fs::read_to_string(case.join("desired.toml")).unwrap_or_default();
        let fingerprint = reconcile_core::json::fingerprint_text(&desired_text);
        let fill = |text: &str| {
            text.replace("{CANARY}", canary)
                .replace("{ACCOUNT}", &account.id)
                .replace("{DESIRED_FINGERPRINT}", &fingerprint)
        };
        copy_filled(case, dir.path(), &fill);
        for (link, target) in spec.get("links").and_then(|v| v.as_table()).into_iter().flatten() {
            let link = dir.path().join(link);
            std::fs::create_dir_all(link.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(target.as_str().unwrap(), link).unwrap();
        }
        for fifo in strings("fifos") {
            let fifo = dir.path().join(fifo);
            std::fs::create_dir_all(fifo.parent().unwrap()).unwrap();
            let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
            assert!(made.success(), "{name}: mkfifo {}", fifo.display());
        }
        let summary = dir.path().join("job-summary.md");
        let files = |dir: &Path| -> Vec<(std::path::PathBuf, String)> {
            std::fs::read_dir(dir)
                .unwrap()
                .map(|entry| entry.unwrap().path())
                .filter(|path| path.is_file() && path.extension().is_none_or(|e| e != "md"))
                .filter_map(|path| Some((path.clone(), std::fs::read_to_string(&path).ok()?)))
                .collect()
        };
        let before = files(dir.path());
        let mut env = account.env();
        env.push(("GITHUB_TOKEN", canary.to_owned()));
        env.push(("RECONCILE_CANARY", canary.to_owned()));
        for (name, value) in spec.get("env").and_then(|v| v.as_table()).into_iter().flatten() {
            env.push((name.clone().leak(), fill(value.as_str().unwrap())));
        }
        env.push(("GITHUB_STEP_SUMMARY", summary.to_str().unwrap().to_owned()));
        let args = strings("args");
        let limits = spec.get("limits").and_then(|v| v.as_table());
        let limit = |key: &str| limits.and_then(|l| l.get(key)).and_then(|v| v.as_integer());
        // An address-space limit, set by the shell that then becomes reconcile.
        let mut command = match limit("memory_mb") {
            Some(mb) => {
                let mut shell = std::process::Command::new("bash");
                shell.arg("-c").arg(format!("ulimit -v {}; exec \"$0\" \"$@\"", mb * 1024));
                shell.arg(env!("CARGO_BIN_EXE_reconcile"));
                shell
            }
            None => command(None),
        };
        let watch = Watch::start(&env);
        let started = std::time::Instant::now();
        let output = command
            .current_dir(dir.path())
            .arg("--desired")
            .arg("desired.toml")
            .args(&args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .envs(env.iter().map(|(name, value)| (*name, value)))
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let took = started.elapsed();
        watch.check(Path::new("desired.toml"), Some(dir.path()));
        if let Some(seconds) = limit("seconds") {
            assert!(took < std::time::Duration::from_secs(seconds as u64), "{name}: took {took:?}");
        }
        let (stdout, stderr) = (
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        );
        let code = spec["code"].as_integer().unwrap() as i32;
        assert_eq!(output.status.code(), Some(code), "{name}: {stdout}{stderr}");
        for line in strings("stderr") {
            assert!(stderr.contains(&line), "{name}: stderr lacks {line:?}:\n{stderr}");
        }
        for line in strings("stdout") {
            assert!(stdout.contains(&line), "{name}: stdout lacks {line:?}:\n{stdout}");
        }
        let summary = std::fs::read_to_string(&summary).unwrap_or_default();
        // Every file the run wrote in the repository (desired.toml, after `declare`) is output too.
        let written: String =
            files(dir.path()).into_iter().filter(|file| !before.contains(file)).map(|(_, text)| text).collect();
        let outputs = [("stdout", &stdout), ("stderr", &stderr), ("the job summary", &summary), ("a file", &written)];
        for (what, output) in outputs {
            for secret in [&account.secret_access_key, &account.session_token, "root:x:0:0"] {
                assert!(!output.contains(secret), "{name}: {what} leaked {secret}:\n{output}");
            }
            for part in canary.as_bytes().windows(8) {
                let part = std::str::from_utf8(part).unwrap();
                assert!(!output.contains(part), "{name}: {what} holds `{part}` of the canary:\n{output}");
            }
        }
        for (what, output) in [("stdout", &stdout), ("stderr", &stderr)] {
            let hidden: Vec<char> = output.chars().filter(|c| (c.is_control() && *c != '\n') || is_bidi(*c)).collect();
            assert!(hidden.is_empty(), "{name}: {what} sends {hidden:?}:\n{output}");
        }
        assert!(
            !stderr.lines().any(|line| line.trim_start().starts_with("::")),
            "{name}: a workflow command:\n{stderr}"
        );
        if spec.get("markdown").and_then(|v| v.as_bool()) == Some(true) {
            Markup::assert_inert(&stdout);
            Markup::assert_inert(&stderr);
        }
        if !summary.is_empty() {
            Markup::assert_inert(&summary);
        }
    }
}

/// Unicode's bidirectional controls: what makes text read in another order than it is written.
fn is_bidi(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Copies the case's files (not `case.toml`) into `to`, each with its placeholders filled in.
fn copy_filled(from: &Path, to: &Path, fill: &dyn Fn(&str) -> String) {
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_filled(&path, &target, fill);
        } else if path.file_name().is_some_and(|n| n != "case.toml") {
            std::fs::write(&target, fill(&std::fs::read_to_string(&path).unwrap())).unwrap();
        }
    }
}

/// A value a listed bake variable takes from the environment is a secret: cut by the reference
/// parser at `:` and `@` or whole, it never appears, nor any 8 bytes of it, in anything any
/// command writes (stdout, stderr with debug logs, the job summary, a saved plan, desired.toml
/// after `declare`), whatever the command and its format.
#[tokio::test]
async fn a_listed_bake_variables_value_never_shows_in_any_output_of_any_command() {
    let account = emulator().new_account().await;
    let canary = "canary-77d0e5b1-printed-means-leaked";
    let dir = tempfile::tempdir().unwrap();
    let desired = dir.path().join("desired.toml");
    std::fs::write(
        &desired,
        format!("bake = \"bake.hcl\"\nbake_variables = [\"LEAK\"]\n{}", small_account(&["pytorch"])),
    )
    .unwrap();
    let registry = format!("{}.dkr.ecr.us-east-1.amazonaws.com", account.id);
    std::fs::write(
        dir.path().join("bake.hcl"),
        format!(
            "variable \"LEAK\" {{ default = \"x\" }}\ntarget \"t\" {{\n  tags = [\"{registry}/pytorch:${{LEAK}}\", \
             \"{registry}/leak-${{LEAK}}\", \"{registry}/${{LEAK}}/x:t\"]\n  cache-to = [\"type=registry,ref=${{LEAK}}\"]\n}}\n"
        ),
    )
    .unwrap();
    let summary = dir.path().join("summary.md");
    let value = format!("{canary}:tag@sha256:{canary}");
    let mut env = account.env();
    env.push(("LEAK", value.clone()));
    env.push(("GITHUB_STEP_SUMMARY", summary.to_str().unwrap().to_owned()));
    let saved = dir.path().join("saved.json");
    let commands: Vec<Vec<String>> = [
        "validate",
        "validate -vv",
        "plan",
        "plan -vv",
        "plan --format json",
        "plan --format markdown",
        "plan --attribute",
        "plan --public --format markdown",
        "plan --public --format json",
        "policy plan",
        "apply --auto-approve",
        // Its JSON is plan's: drift's text with its logs, and its comment.
        "drift -v",
        "drift --format markdown",
        "usage",
        "usage --format markdown",
        "cost",
        "outputs",
        "policy runner",
        "declare --check",
        "declare -vv",
        "unlock",
        "schema",
    ]
    .iter()
    .map(|line| line.split(' ').map(str::to_owned).collect())
    .chain([
        vec!["plan".to_owned(), "--out".to_owned(), saved.to_str().unwrap().to_owned()],
        // `comment` reads no desired.toml, so no bake file; the rest read it and hold nothing of it.
    ])
    .collect();
    let mut seen = Vec::new();
    for args in &commands {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = reconcile_in(&env, &desired, &args);
        seen.push(format!("{args:?}: {}", run.code));
        let written: String =
            [&summary, &saved, &desired].iter().filter_map(|path| std::fs::read_to_string(path).ok()).collect();
        for (what, output) in [("stdout", &run.stdout), ("stderr", &run.stderr), ("a file", &written)] {
            for part in canary.as_bytes().windows(8) {
                let part = std::str::from_utf8(part).unwrap();
                assert!(!output.contains(part), "{args:?}: {what} holds `{part}`:\n{output}");
            }
        }
    }
    // The commands did run: plan was refused for the undeclared repositories, naming them
    // without the value.
    assert!(seen.contains(&"[\"plan\"]: 3".to_owned()), "{seen:?}");
    let plan = reconcile_in(&env, &desired, &["plan"]);
    assert!(plan.stdout.contains("ecr_repository.leak-${LEAK}"), "{}", plan.stdout);
}
