//! Reliability under injected faults: a loopback proxy between the binary and the emulator
//! answers a seeded share of requests with throttling (in each service's protocol), 5xx, or a
//! dropped connection.

use reconcile_test_support::faults::{Fault, FaultProxy, Rule};
use reconcile_test_support::{TestAccount, emulator};

use crate::permissions::Watch;
use crate::support::{
    Run, desired_file, env_through, json_changes, reconcile, reconcile_in, small_account_with_runner, spawn_apply,
};

/// About a fifth of all requests fail, in every way the proxy knows.
fn a_fifth_failing() -> Vec<Rule> {
    vec![
        Rule::sometimes(Fault::Throttle, 0.08),
        Rule::sometimes(Fault::Status(503), 0.04),
        Rule::sometimes(Fault::Status(500), 0.02),
        Rule::sometimes(Fault::Reset, 0.06),
    ]
}

/// Runs the binary through `proxy`, with retries that wait milliseconds, not seconds.
pub(crate) fn through(proxy: &FaultProxy, account: &TestAccount, desired: &std::path::Path, args: &[&str]) -> Run {
    let mut env = env_through(account, &proxy.endpoint);
    env.push(("RECONCILE_RETRY_BASE_DELAY_MS", "20".to_owned()));
    reconcile_in(&env, desired, args)
}

/// For each seed: plan and apply on an empty account with a fifth of requests failing, then a
/// plan under the same faults that must find nothing to do.
async fn converge_under_faults(seeds: std::ops::Range<u64>) {
    let desired = desired_file(&small_account_with_runner(&["pytorch", "pytorch-cache"]));
    for seed in seeds {
        let account = emulator().new_account().await;
        let proxy = FaultProxy::start(emulator().endpoint(), seed, a_fifth_failing());
        let plan = through(&proxy, &account, &desired.path, &["plan", "--format", "json"]);
        assert_eq!(plan.code, 0, "seed {seed}: {}", plan.stderr);
        assert!(
            json_changes(&plan.stdout).iter().all(|c| c.starts_with("create ")),
            "seed {seed}: every resource is a create"
        );
        assert_eq!(json_changes(&plan.stdout).len(), 11, "seed {seed}");
        let apply = through(&proxy, &account, &desired.path, &["apply", "--auto-approve", "-v"]);
        assert_eq!(apply.code, 0, "seed {seed}: {}{}", apply.stdout, apply.stderr);
        assert!(apply.stderr.contains("of them retries"), "seed {seed}: -v counts retries: {}", apply.stderr);
        let again = through(&proxy, &account, &desired.path, &["plan", "--detailed-exitcode"]);
        assert_eq!(again.code, 0, "seed {seed}: {}{}", again.stdout, again.stderr);
        assert!(proxy.injected() > 5, "seed {seed}: only {} faults", proxy.injected());
    }
}

#[tokio::test]
async fn apply_converges_with_a_fifth_of_requests_failing_seeds_1_to_10() {
    converge_under_faults(1..11).await;
}

#[tokio::test]
async fn apply_converges_with_a_fifth_of_requests_failing_seeds_11_to_20() {
    converge_under_faults(11..21).await;
}

#[tokio::test]
async fn a_service_that_refuses_every_write_fails_its_changes_and_not_the_others() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account_with_runner(&["pytorch"]));
    let rules = ["CreateProject", "UpdateProject", "CreateWebhook", "UpdateWebhook", "DeleteWebhook"]
        .into_iter()
        .map(|operation| Rule::always(Fault::Status(500)).service("codebuild").operation(operation))
        .collect();
    let proxy = FaultProxy::start(emulator().endpoint(), 1, rules);
    bucket_of(&account).await;
    let apply = through(&proxy, &account, &desired.path, &["apply", "--auto-approve", "--format", "json"]);
    assert_eq!(apply.code, 1, "{}{}", apply.stdout, apply.stderr);
    let unlock = reconcile(&account, &desired.path, &["unlock"]);
    assert!(unlock.stdout.starts_with("There is no apply lock"), "released on failure: {}", unlock.stdout);
    let report: serde_json::Value = serde_json::from_str(&apply.stdout).unwrap();
    let outcome = |address: &str| {
        report["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["address"] == address)
            .map(|r| r["outcome"].as_str().unwrap().to_owned())
            .unwrap_or_default()
    };
    assert_eq!(outcome("codebuild_project.runner"), "failed", "{report}");
    assert_eq!(outcome("codebuild_webhook.runner"), "skipped", "{report}");
    for applied in ["ecr_repository.pytorch", "ecr_lifecycle_policy.pytorch", "s3_bucket.sccache", "iam_role.codebuild"]
    {
        assert_eq!(outcome(applied), "applied", "{applied}: {report}");
    }
    drop(proxy);
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    assert_eq!(reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]).code, 0);
}

#[tokio::test]
async fn a_dropped_connection_is_retried_in_every_service_and_a_transient_read_is_never_absence() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account_with_runner(&["pytorch"]));
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    // The first two requests to every service's every operation are dropped, then throttled,
    // then answered 503: nine in a row fail for a plan's first read of each kind.
    let mut rules = Vec::new();
    for service in ["sts", "ecr", "s3", "iam", "codebuild"] {
        rules.push(Rule::always(Fault::Reset).service(service).first(2));
        rules.push(Rule::always(Fault::Throttle).service(service).first(2));
        rules.push(Rule::always(Fault::Status(503)).service(service).first(2));
    }
    let proxy = FaultProxy::start(emulator().endpoint(), 7, rules);
    let plan = through(&proxy, &account, &desired.path, &["plan", "--detailed-exitcode", "-v"]);
    assert_eq!(plan.code, 0, "nothing planned: what exists was not taken for absent: {}{}", plan.stdout, plan.stderr);
    assert_eq!(proxy.injected(), 30);
    // Ten throttling answers, and S3's two bare 503s, which is how S3 says slow down (a
    // throttled `HeadBucket` has no body to say more).
    assert!(plan.stderr.contains("(30 of them retries, 12 answered with throttling)"), "{}", plan.stderr);
}

/// Reads the child's stdout until a line contains `marker`, then hands back what it read and
/// the rest of the stream.
fn read_until(
    child: &mut std::process::Child,
    marker: &str,
) -> (String, std::io::BufReader<std::process::ChildStdout>) {
    use std::io::BufRead;
    let mut reader = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        assert!(reader.read_line(&mut line).unwrap() > 0, "the apply ended before `{marker}`: {seen}");
        seen.push_str(&line);
        if line.contains(marker) {
            return (seen, reader);
        }
    }
}

fn signal(child: &std::process::Child, name: &str) {
    let status =
        std::process::Command::new("kill").args([&format!("-{name}"), &child.id().to_string()]).status().unwrap();
    assert!(status.success());
}

/// Every request to the emulator waits, so an apply lasts long enough to be interrupted.
fn slow(delay_ms: u64) -> Vec<Rule> {
    vec![Rule::always(Fault::Delay(std::time::Duration::from_millis(delay_ms)))]
}

async fn interrupted_by(name: &str, code: i32) {
    use std::io::Read;
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account_with_runner(&["pytorch", "pytorch-cache", "vllm", "vllm-cache"]));
    // The bucket exists, so the apply takes the lock, and must let it go when interrupted.
    bucket_of(&account).await;
    let proxy = FaultProxy::start(emulator().endpoint(), 1, slow(250));
    let watch = Watch::start(&account.env());
    let mut child = spawn_apply(&account, &proxy.endpoint, &desired.path);
    let (mut stdout, mut rest) = read_until(&mut child, ": Creating");
    signal(&child, name);
    rest.read_to_string(&mut stdout).unwrap();
    let status = child.wait().unwrap();
    watch.check(&desired.path, None);
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    assert_eq!(status.code(), Some(code), "{stdout}{stderr}");
    assert!(stdout.contains("Interrupted: starting no more changes"), "{stdout}");
    assert!(stdout.contains("Apply interrupted: "), "{stdout}");
    assert!(stdout.contains("Not started: "), "{stdout}");
    let unlock = reconcile(&account, &desired.path, &["unlock"]);
    assert!(unlock.stdout.starts_with("There is no apply lock"), "released on {name}: {}", unlock.stdout);
    // Nothing half made: what ran finished, and the next apply finishes the rest.
    drop(proxy);
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    assert_eq!(reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]).code, 0);
}

#[tokio::test]
async fn sigint_lets_running_changes_finish_starts_no_more_and_exits_130() {
    interrupted_by("INT", 130).await;
}

#[tokio::test]
async fn sigterm_as_ci_sends_on_cancel_exits_143() {
    interrupted_by("TERM", 143).await;
}

#[tokio::test]
async fn a_second_sigint_exits_at_once() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account_with_runner(&["pytorch"]));
    // Slow enough that waiting for the running changes would take seconds.
    let proxy = FaultProxy::start(emulator().endpoint(), 1, slow(2_000));
    let watch = Watch::start(&account.env());
    let mut child = spawn_apply(&account, &proxy.endpoint, &desired.path);
    let _ = read_until(&mut child, ": Creating");
    signal(&child, "INT");
    std::thread::sleep(std::time::Duration::from_millis(200));
    let second = std::time::Instant::now();
    signal(&child, "INT");
    let status = child.wait().unwrap();
    watch.check(&desired.path, None);
    assert_eq!(status.code(), Some(130));
    assert!(second.elapsed() < std::time::Duration::from_millis(1_500), "{:?}", second.elapsed());
}

/// `apply` killed outright at `points` moments of its first half (point k of 20 lands k/20 of the
/// way through a whole apply's time), most while it plans: the next apply always converges, and
/// nothing is ever deleted.
async fn killed_while_planning(points: std::ops::Range<u32>) {
    let desired = desired_file(&small_account_with_runner(&["pytorch", "pytorch-cache", "vllm"]));
    // How long an apply takes through the slow proxy.
    let account = emulator().new_account().await;
    let proxy = FaultProxy::start(emulator().endpoint(), 1, slow(60));
    let start = std::time::Instant::now();
    let watch = Watch::start(&account.env());
    assert!(spawn_apply(&account, &proxy.endpoint, &desired.path).wait().unwrap().success());
    watch.check(&desired.path, None);
    let whole = start.elapsed();
    for point in points {
        let account = emulator().new_account().await;
        // The bucket exists, so every apply takes the lock, and a killed one leaves it behind.
        bucket_of(&account).await;
        let watch = Watch::start(&account.env());
        let mut child = spawn_apply(&account, &proxy.endpoint, &desired.path);
        std::thread::sleep(whole.mul_f64(f64::from(point) / 20.0));
        signal(&child, "KILL");
        let _ = child.wait();
        watch.check(&desired.path, None);
        converged_by_the_next(&account, &desired.path, &format!("killed at {point}/20"));
    }
}

/// `apply` killed outright after each write of its second half in turn, by a proxy
/// that holds the write after them (so the kill lands between its first write and its last
/// however loaded the machine is, where a kill timed against a whole apply's duration may land
/// after it ended): some of it written, some not, and the next apply converges it without a
/// delete.
async fn killed_in_the_second_half() {
    let desired = desired_file(&small_account_with_runner(&["pytorch", "pytorch-cache", "vllm"]));
    // How many writes a whole apply makes, the lock's included.
    let account = emulator().new_account().await;
    bucket_of(&account).await;
    let counting = FaultProxy::halting_after(emulator().endpoint(), u64::MAX);
    assert!(spawn_apply(&account, &counting.endpoint, &desired.path).wait().unwrap().success());
    let whole = counting.writes();
    assert!(whole >= 12, "an apply of the small account writes more than {whole} times");
    // The last write lets the lock go; every one before it leaves something to make.
    for writes in whole / 2..whole - 1 {
        let account = emulator().new_account().await;
        bucket_of(&account).await;
        let proxy = FaultProxy::halting_after(emulator().endpoint(), writes);
        let watch = Watch::start(&account.env());
        let mut child = spawn_apply(&account, &proxy.endpoint, &desired.path);
        let killed = kill_when_held(&mut child, &proxy, &format!("after {writes} of {whole} writes"));
        assert!(killed, "after {writes} of {whole} writes: the apply ended");
        watch.check(&desired.path, None);
        drop(proxy);
        let plan = reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]);
        assert_eq!(plan.code, 2, "killed after {writes} of {whole} writes, something is left: {}", plan.stdout);
        converged_by_the_next(&account, &desired.path, &format!("killed after {writes} of {whole} writes"));
    }
}

/// Kills `child` once `proxy` holds one of its writes (true), or waits for it to end by itself,
/// successfully (false). Two minutes without either is a hang, not a slow machine.
fn kill_when_held(child: &mut std::process::Child, proxy: &FaultProxy, what: &str) -> bool {
    let started = std::time::Instant::now();
    loop {
        if proxy.halted() {
            signal(child, "KILL");
            let _ = child.wait();
            return true;
        }
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "{what}: the apply failed by itself");
            return false;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(120), "{what}: stuck");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The next apply of an account a killed apply left converges it, and nothing was ever deleted.
fn converged_by_the_next(account: &TestAccount, desired: &std::path::Path, killed: &str) {
    let again = reconcile(account, desired, &["apply", "--auto-approve"]);
    assert_eq!(again.code, 0, "{killed}: {}{}", again.stdout, again.stderr);
    let plan = reconcile(account, desired, &["plan", "--detailed-exitcode"]);
    assert_eq!(plan.code, 0, "{killed}: {}", plan.stdout);
    let deletes: Vec<String> =
        account.writes().iter().map(ToString::to_string).filter(|w| w.contains("Delete")).collect();
    assert_eq!(deletes, Vec::<String>::new(), "{killed}");
}

/// The sccache bucket, as an apply killed right after making it left it: made with its mark.
async fn bucket_of(account: &TestAccount) {
    aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(&account.sdk_config()).force_path_style(true).build(),
    )
    .create_bucket()
    .bucket(format!("rocm-bake-sccache-{}", account.id))
    .create_bucket_configuration(crate::support::marked_bucket())
    .send()
    .await
    .unwrap();
}

#[tokio::test]
async fn apply_killed_at_ten_moments_of_its_first_half_is_converged_by_the_next() {
    killed_while_planning(0..10).await;
}

#[tokio::test]
async fn apply_killed_after_each_write_of_its_second_half_is_converged_by_the_next() {
    killed_in_the_second_half().await;
}

/// The lock object as another apply would have written it.
async fn someone_elses_lock(account: &TestAccount, bucket: &str, until: i64) {
    let body = serde_json::json!({
        "who": "arn:aws:sts::123456789012:assumed-role/nightly/ci",
        "host": "runner-7",
        "run": "https://github.com/ROCm/rocm-bake/actions/runs/42",
        "since": 1_700_000_000,
        "until": until,
    });
    aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(&account.sdk_config()).force_path_style(true).build(),
    )
    .put_object()
    .bucket(bucket)
    .key("reconcile/apply.lock")
    .body(body.to_string().into_bytes().into())
    .send()
    .await
    .unwrap();
}

#[tokio::test]
async fn two_applies_never_run_at_once_and_a_stale_lock_is_broken_saying_whose() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account_with_runner(&["pytorch"]));
    let bucket = format!("rocm-bake-sccache-{}", account.id);
    // The first apply: no bucket yet, so no lock, and it says so.
    let first = reconcile(&account, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(first.stderr.contains("does not exist yet, so this apply runs without a lock"), "{}", first.stderr);

    // Someone else's lock, within its lease: refused at once, naming the holder; with a wait,
    // refused after it.
    let more = desired_file(&small_account_with_runner(&["pytorch", "vllm"]));
    someone_elses_lock(&account, &bucket, i64::MAX / 2).await;
    let writes = account.writes().len();
    let busy = reconcile(&account, &more.path, &["apply", "--auto-approve"]);
    assert_eq!(busy.code, 1, "{}{}", busy.stdout, busy.stderr);
    assert!(
        busy.stderr.contains(&format!(
            "error: another apply holds the lock in s3://{bucket}/reconcile/apply.lock: \
             arn:aws:sts::123456789012:assumed-role/nightly/ci on runner-7 \
             (https://github.com/ROCm/rocm-bake/actions/runs/42), since 2023-11-14T22:13:20Z"
        )),
        "{}",
        busy.stderr
    );
    let started = std::time::Instant::now();
    let waited = reconcile(&account, &more.path, &["apply", "--auto-approve", "--lock-timeout", "3"]);
    assert_eq!(waited.code, 1);
    assert!(started.elapsed() >= std::time::Duration::from_secs(2), "{:?}", started.elapsed());
    assert_eq!(account.writes().len(), writes, "nothing but the lock was written");

    // `unlock` says whose lock it breaks; then apply runs, and lets its own lock go.
    let unlock = reconcile(&account, &more.path, &["unlock"]);
    assert_eq!(unlock.code, 0);
    assert!(
        unlock.stdout.starts_with("Broke the apply lock of arn:aws:sts::123456789012:assumed-role/nightly/ci"),
        "{}",
        unlock.stdout
    );
    assert_eq!(reconcile(&account, &more.path, &["apply", "--auto-approve"]).code, 0);
    assert!(reconcile(&account, &more.path, &["unlock"]).stdout.starts_with("There is no apply lock"));

    // A lock whose lease ran out is broken by the next apply that has something to do, which
    // says whose it was. One with nothing to do writes nothing: it neither waits for the lock
    // nor touches it.
    someone_elses_lock(&account, &bucket, 1_700_000_100).await;
    let writes = account.requests().iter().filter(|r| r.is_write()).count();
    let idle = reconcile(&account, &more.path, &["apply", "--auto-approve"]);
    assert_eq!(idle.code, 0, "{}", idle.stderr);
    assert!(idle.stdout.contains("No changes."), "{}", idle.stdout);
    assert_eq!(account.requests().iter().filter(|r| r.is_write()).count(), writes, "not even the lock");
    let triton = desired_file(&small_account_with_runner(&["pytorch", "vllm", "triton"]));
    let broke = reconcile(&account, &triton.path, &["apply", "--auto-approve"]);
    assert_eq!(broke.code, 0, "{}", broke.stderr);
    assert!(
        broke.stderr.contains("Broke the apply lock of arn:aws:sts::123456789012:assumed-role/nightly/ci"),
        "{}",
        broke.stderr
    );

    // A second apply that starts while the first is applying waits for it, then runs. (Started
    // once the first is past its lock: moto's conditional write is not atomic under a race, S3's
    // is.)
    let proxy = FaultProxy::start(emulator().endpoint(), 1, slow(500));
    let both = desired_file(&small_account_with_runner(&["pytorch", "vllm", "sglang"]));
    let watch = Watch::start(&account.env());
    let mut first = spawn_apply(&account, &proxy.endpoint, &both.path);
    let (mut first_out, mut rest) = read_until(&mut first, "...");
    // The lock names who holds it, and holds no secret.
    let held = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(&account.sdk_config()).force_path_style(true).build(),
    )
    .get_object()
    .bucket(&bucket)
    .key("reconcile/apply.lock")
    .send()
    .await
    .unwrap();
    let held = String::from_utf8(held.body.collect().await.unwrap().into_bytes().to_vec()).unwrap();
    assert!(held.contains(&format!("\"who\": \"arn:aws:sts::{}:", account.id)), "{held}");
    for secret in [&account.access_key_id, &account.secret_access_key, &account.session_token] {
        assert!(!held.contains(secret.as_str()), "{held}");
    }
    let second = reconcile(&account, &both.path, &["apply", "--auto-approve", "--lock-timeout", "60"]);
    std::io::Read::read_to_string(&mut rest, &mut first_out).unwrap();
    assert!(first.wait().unwrap().success(), "{first_out}");
    watch.check(&both.path, None);
    assert_eq!(second.code, 0, "{}{}", second.stdout, second.stderr);
    assert!(second.stderr.contains("Waiting up to 60s for the apply lock of "), "{}", second.stderr);
    assert!(!second.stdout.contains("Adopted"), "the second began after the first ended: {}", second.stdout);
    assert_eq!(reconcile(&account, &both.path, &["plan", "--detailed-exitcode"]).code, 0);
}

#[tokio::test]
async fn a_service_failing_every_request_leaves_its_resources_alone_and_applies_the_rest() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account_with_runner(&["pytorch"]));
    let proxy =
        FaultProxy::start(emulator().endpoint(), 1, vec![Rule::always(Fault::Status(500)).service("codebuild")]);
    // plan reports the truth or fails.
    let plan = through(&proxy, &account, &desired.path, &["plan"]);
    assert_eq!(plan.code, 1, "{}{}", plan.stdout, plan.stderr);
    let apply = through(&proxy, &account, &desired.path, &["apply", "--auto-approve", "--format", "json"]);
    assert_eq!(apply.code, 1, "{}{}", apply.stdout, apply.stderr);
    let report: serde_json::Value = serde_json::from_str(&apply.stdout).unwrap();
    assert_eq!(report["unreadable"], serde_json::json!(["codebuild_project.runner", "codebuild_webhook.runner"]));
    assert_eq!(report["succeeded"], false);
    let applied: Vec<&str> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["outcome"] == "applied")
        .map(|r| r["address"].as_str().unwrap())
        .collect();
    assert_eq!(applied.len(), report["results"].as_array().unwrap().len(), "all the rest applied: {report}");
    assert!(applied.contains(&"iam_role.codebuild") && applied.contains(&"ecr_repository.pytorch"), "{report}");
    assert!(apply.stderr.contains("Error [E101] codebuild_project.runner: could not be read"), "{}", apply.stderr);
    drop(proxy);
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    assert_eq!(reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]).code, 0);
}

/// The demo's account, as the setup script left it, taken over by an apply killed after each of
/// its writes in turn (the writes of the `stride` whose rank modulo `stride` is `offset`): in
/// every state one leaves, the runner's role can push to every repository it could push to
/// before (repositories are marked before a grant moves to the mark); the next apply converges
/// it, the plan after that says "No changes.", and nothing is ever deleted.
async fn a_takeover_killed_after_each_write(offset: u64, stride: u64) {
    let copy = crate::support::real_copy();
    // The imports, listed once: what `reconcile import` writes for the account as seeded.
    let seeded = emulator().new_account().await;
    seeded.seed_2026_11_11(&copy.path);
    crate::support::import(&seeded, &copy.path);
    let names: Vec<String> = reconcile_ecr::declared(
        &reconcile_cli::parse_desired(&copy.path, &std::fs::read_to_string(&copy.path).unwrap()).unwrap(),
    )
    .repositories
    .iter()
    .map(|repository| repository.name.clone())
    .collect();
    let before = crate::support::pushable(&seeded, &names).await;
    assert_eq!(before.len(), 25, "the script's role names all but the two late repositories: {before:?}");

    let mut killed = 0;
    for writes in (offset..).step_by(stride as usize) {
        let account = emulator().new_account().await;
        account.seed_2026_11_11(&copy.path);
        let proxy = FaultProxy::halting_after(emulator().endpoint(), writes);
        let watch = Watch::start(&account.env());
        // Its output (the whole plan) is not read: a pipe nobody drains would stop it.
        let mut child = crate::support::command(Some(&copy.path))
            .args(["apply", "--auto-approve"])
            .envs(env_through(&account, &proxy.endpoint))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let held = kill_when_held(&mut child, &proxy, &format!("after {writes} writes"));
        if held {
            killed += 1;
        }
        watch.check(&copy.path, None);
        drop(proxy);
        let now = crate::support::pushable(&account, &names).await;
        assert!(now.is_superset(&before), "after {writes} writes the runner lost {:?}", before.difference(&now));
        let again = reconcile(&account, &copy.path, &["apply", "--auto-approve"]);
        assert_eq!(again.code, 0, "killed after {writes} writes: {}{}", again.stdout, again.stderr);
        let plan = reconcile(&account, &copy.path, &["plan", "--detailed-exitcode"]);
        assert_eq!(plan.code, 0, "killed after {writes} writes: {}", plan.stdout);
        assert!(plan.stdout.ends_with("No changes. The account matches the desired state.\n"), "{}", plan.stdout);
        assert_eq!(
            crate::support::pushable(&account, &names).await.len(),
            names.len(),
            "taken over, every repository the builds'"
        );
        let deletes: Vec<String> =
            account.writes().iter().map(ToString::to_string).filter(|w| w.contains("Delete")).collect();
        assert!(
            deletes.iter().all(|d| d.contains("reconcile/apply.lock") || d.contains("DeleteRepositoryPolicy")),
            "{deletes:?}"
        );
        if !held {
            break;
        }
    }
    assert!(killed >= 10, "only {killed} kills: the takeover apply writes more than that");
}

#[tokio::test]
async fn a_takeover_killed_after_each_of_its_writes_converges_and_never_stops_a_build_pushing_first_third() {
    a_takeover_killed_after_each_write(0, 3).await;
}

#[tokio::test]
async fn a_takeover_killed_after_each_of_its_writes_converges_and_never_stops_a_build_pushing_second_third() {
    a_takeover_killed_after_each_write(1, 3).await;
}

#[tokio::test]
async fn a_takeover_killed_after_each_of_its_writes_converges_and_never_stops_a_build_pushing_last_third() {
    a_takeover_killed_after_each_write(2, 3).await;
}

/// The order that keeps the builds pushing, seen where timing would hide it: with every ECR
/// write held a while on its way, a takeover's writes that move the runner's grants to the mark
/// (its boundary attached, its inline policy replaced) reach IAM only after every repository's
/// mark reached ECR; the plan says so.
#[tokio::test]
async fn a_takeover_moves_the_runners_grants_to_the_mark_only_after_every_repository_is_marked() {
    let account = emulator().new_account().await;
    let copy = crate::support::real_copy();
    account.seed_2026_11_11(&copy.path);
    crate::support::import(&account, &copy.path);
    let plan = reconcile(&account, &copy.path, &["plan", "--format", "json"]);
    let plan: serde_json::Value = serde_json::from_str(&plan.stdout).unwrap();
    let waits = |address: &str| -> Vec<String> {
        let change = plan["resource_changes"].as_array().unwrap().iter().find(|c| c["address"] == address).unwrap();
        change["depends_on"].as_array().unwrap().iter().map(|d| d.as_str().unwrap().to_owned()).collect()
    };
    for grant in ["iam_role.codebuild", "iam_role_policy.codebuild", "iam_role_boundary.codebuild"] {
        let repositories = waits(grant).iter().filter(|d| d.starts_with("ecr_repository.")).count();
        assert_eq!(repositories, 27, "{grant} waits for every repository: {:?}", waits(grant));
    }
    let slow_ecr = vec![Rule::always(Fault::Delay(std::time::Duration::from_millis(400))).service("ecr")];
    let proxy = FaultProxy::start(emulator().endpoint(), 1, slow_ecr);
    let apply = through(&proxy, &account, &copy.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    let writes: Vec<reconcile_test_support::RecordedRequest> =
        account.writes().into_iter().filter(|w| w.is_reconciles()).collect();
    let marked =
        writes.iter().filter(|w| w.service == "ecr" && w.action == "TagResource").map(|w| w.at).fold(0.0, f64::max);
    let moved: Vec<&reconcile_test_support::RecordedRequest> = writes
        .iter()
        .filter(|w| w.resource == "rocm-bake-codebuild")
        .filter(|w| ["PutRolePolicy", "PutRolePermissionsBoundary"].contains(&w.action.as_str()))
        .collect();
    assert_eq!(moved.len(), 2, "{writes:#?}");
    assert!(moved.iter().all(|w| w.at > marked), "a grant moved before a repository was marked: {moved:#?}");
}

/// A busy account: every service answers at most `per_second` requests a second (a burst of as
/// many), the rest with its own throttling error, as AWS does.
fn busy(per_second: f64) -> FaultProxy {
    FaultProxy::rate_limited(emulator().endpoint(), per_second, std::time::Duration::ZERO)
}

/// Runs the binary through `proxy` with its own retry waits (the SDK's), as a user would.
fn paced(proxy: &FaultProxy, account: &TestAccount, desired: &std::path::Path, args: &[&str]) -> Run {
    reconcile_in(&env_through(account, &proxy.endpoint), desired, args)
}

/// What the proxy turned away, across the services a run reaches.
fn throttled(proxy: &FaultProxy) -> u64 {
    ["ecr", "s3", "iam", "sts", "codebuild", "monitoring"].iter().map(|service| proxy.throttled(service)).sum()
}

/// A busy account at `rate` requests a second per service: an apply of the nightly's empty
/// account converges; then `plan` (no flags) of the account it made, `drift` and `usage` slow
/// down and exit as they would unthrottled, every time; and each backs off rather than
/// hammering: what AWS turned away stays within a few times what it answered.
async fn through_a_bucket_of(rate: f64) {
    let account = emulator().new_account().await;
    let desired = crate::support::real_copy();
    let run = |args: &[&str]| {
        let proxy = busy(rate);
        let started = std::time::Instant::now();
        let run = paced(&proxy, &account, &desired.path, args);
        let (turned_away, answered) = (throttled(&proxy), proxy.answered("ecr"));
        eprintln!("{args:?} at {rate}/s: {:?}, ECR answered {answered}, {turned_away} throttled", started.elapsed());
        assert!(
            turned_away <= 3 * answered.max(10),
            "{args:?} at {rate}/s hammered: {turned_away} throttled, {answered} answered"
        );
        if turned_away > 0 {
            assert!(run.stderr.contains("throttling: ecr"), "-v says it: {}", run.stderr);
        }
        run
    };
    let apply = run(&["apply", "--auto-approve", "-v"]);
    assert_eq!(apply.code, 0, "apply at {rate}/s: {}{}", apply.stdout, apply.stderr);
    let plan = run(&["plan", "-v"]);
    assert_eq!(plan.code, 0, "plan at {rate}/s: {}{}", plan.stdout, plan.stderr);
    assert!(plan.stdout.contains("No changes."), "{}", plan.stdout);
    let drift = run(&["drift", "-v"]);
    assert_eq!(drift.code, 0, "drift at {rate}/s: {}{}", drift.stdout, drift.stderr);
    let usage = run(&["usage", "-v"]);
    assert_eq!(usage.code, 0, "usage at {rate}/s: {}{}", usage.stdout, usage.stderr);
}

#[tokio::test]
async fn through_a_busy_account_at_20_a_second_apply_plan_drift_and_usage_slow_down_and_never_fail() {
    through_a_bucket_of(20.0).await;
}

#[tokio::test]
async fn through_a_busy_account_at_10_a_second_apply_plan_drift_and_usage_slow_down_and_never_fail() {
    through_a_bucket_of(10.0).await;
}

#[tokio::test]
async fn through_a_busy_account_at_5_a_second_apply_plan_drift_and_usage_slow_down_and_never_fail() {
    through_a_bucket_of(5.0).await;
}

/// A throttle that never lifts fails the run once the deadline passes, saying in one line what
/// was throttled, for how long and how many times; an apply so failed says what it did and did
/// not do, and lets go of its lock.
#[tokio::test]
async fn a_throttle_that_never_lifts_fails_the_run_after_the_deadline_saying_so() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account_with_runner(&["pytorch", "pytorch-cache"]));
    let applied = reconcile(&account, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);
    let never = || Rule::always(Fault::Throttle).service("ecr").operation("GetRepositoryPolicy");
    let proxy = FaultProxy::start(emulator().endpoint(), 1, vec![never()]);
    let started = std::time::Instant::now();
    let plan = paced(&proxy, &account, &desired.path, &["plan", "--throttle-deadline", "3"]);
    let took = started.elapsed();
    assert_eq!(plan.code, 1, "{}{}", plan.stdout, plan.stderr);
    assert!(took < std::time::Duration::from_secs(15), "{took:?}");
    let errors: Vec<&str> = plan.stderr.lines().filter(|line| line.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{}", plan.stderr);
    let line = errors[0];
    assert!(
        line.contains(
            "failed to read repository policy: AWS kept throttling it (AWS throttled ecr:GetRepositoryPolicy for "
        ),
        "{line}"
    );
    let seconds: f64 = line.split(" for ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!((3.0..10.0).contains(&seconds), "past the deadline, soon after: {line}");
    assert!(line.contains(" attempts, past the throttle deadline of 3 s (--throttle-deadline"), "{line}");
    assert!(line.contains("give it longer with --throttle-deadline"), "{line}");
    let attempts: u32 = line.split(" over ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!((2..40).contains(&attempts), "paced, not hammered: {attempts}");

    // An apply whose lifecycle policies AWS never stops throttling: each of those fails after
    // the deadline, the rest is applied, the report says which, and the lock is let go.
    let changed = desired_file(
        &small_account_with_runner(&["pytorch", "pytorch-cache", "vllm"]).replace("countNumber = 3", "countNumber = 5"),
    );
    let proxy = FaultProxy::start(
        emulator().endpoint(),
        1,
        vec![Rule::always(Fault::Throttle).service("ecr").operation("PutLifecyclePolicy")],
    );
    let apply = paced(
        &proxy,
        &account,
        &changed.path,
        &["apply", "--auto-approve", "--throttle-deadline", "2", "--format", "json"],
    );
    assert_eq!(apply.code, 1, "{}{}", apply.stdout, apply.stderr);
    let report: serde_json::Value = serde_json::from_str(&apply.stdout).expect("the report, whole");
    let outcome = |address: &str| -> serde_json::Value {
        report["results"].as_array().unwrap().iter().find(|r| r["address"] == address).unwrap().clone()
    };
    assert_eq!(outcome("ecr_repository.vllm")["outcome"], "applied");
    for policy in ["ecr_lifecycle_policy.pytorch", "ecr_lifecycle_policy.vllm"] {
        let failed = outcome(policy);
        assert_eq!(failed["outcome"], "failed", "{failed}");
        assert!(failed["error"].as_str().unwrap().contains("Rate exceeded"), "{failed}");
    }
    let unlock = reconcile(&account, &desired.path, &["unlock"]);
    assert!(unlock.stdout.starts_with("There is no apply lock"), "released: {}", unlock.stdout);
}

/// S3 writes the lock and its answer is lost: the SDK's retry meets the condition its own first
/// write made true. The apply knows the lock for its own (it names this very run), applies, and
/// lets go of it; never "another apply holds the lock", never a lock left for its lease.
#[tokio::test]
async fn a_lost_answer_to_the_locks_write_is_known_for_this_applys_own() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account_with_runner(&["pytorch"]));
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    let more = desired_file(&small_account_with_runner(&["pytorch", "vllm"]));
    // The first S3 write of an apply with something to do is its lock's (it reads until then).
    let lost = vec![Rule::always(Fault::LostAnswer).service("s3").operation("PUT").first(1)];
    let proxy = FaultProxy::start(emulator().endpoint(), 1, lost);
    let apply = through(&proxy, &account, &more.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    assert!(!apply.stderr.contains("another apply holds the lock"), "{}", apply.stderr);
    let puts =
        account.requests().iter().filter(|r| r.method == "PUT" && r.path.ends_with("/reconcile/apply.lock")).count();
    assert!(puts >= 2, "the lock was written, and written again by the retry: {puts}");
    let unlock = reconcile(&account, &more.path, &["unlock"]);
    assert!(unlock.stdout.starts_with("There is no apply lock"), "let go of: {}", unlock.stdout);
    assert_eq!(reconcile(&account, &more.path, &["plan", "--detailed-exitcode"]).code, 0);
}

/// The lease of a lock this run holds is renewed over the lock it wrote, and only that: once
/// another apply broke it (its lease ran out), renewing says it is no longer held.
#[tokio::test]
async fn a_lease_is_renewed_only_while_the_lock_is_still_this_runs() {
    use reconcile_s3::lock::{Holder, Lock, Taken};
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account_with_runner(&["pytorch"]));
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    let bucket = format!("rocm-bake-sccache-{}", account.id);
    let client = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(&account.sdk_config()).force_path_style(true).build(),
    );
    let lock = Lock::new(client, &bucket);
    let holder = Holder {
        who: "arn:aws:sts::123456789012:assumed-role/apply/ci".to_owned(),
        host: "runner-1".to_owned(),
        run: None,
        pid: Some(1),
        since: 1_800_000_000,
        until: 1_800_003_600,
    };
    let never_gone = |_: &Holder| false;
    let taken = lock.take(&holder, std::time::Duration::ZERO, std::time::Duration::from_millis(50), &never_gone);
    assert!(matches!(taken.await.unwrap(), Taken::Held));
    let renewed = Holder { until: 1_800_007_200, ..holder.clone() };
    assert!(lock.renew(&holder, &renewed).await.unwrap(), "still ours: renewed");
    assert_eq!(lock.holder().await.unwrap(), Some(renewed.clone()));
    // Its lease ran out and another apply broke it.
    someone_elses_lock(&account, &bucket, i64::MAX / 2).await;
    let again = Holder { until: 1_800_010_800, ..renewed.clone() };
    assert!(!lock.renew(&renewed, &again).await.unwrap(), "no longer ours");
    let holder_now = lock.holder().await.unwrap().unwrap();
    assert_eq!(holder_now.host, "runner-7", "the other apply's lock stays");
}
