//! What a plan costs in requests and round trips, enforced by count, never by time (the timings
//! are scripts/bench-plan.sh's, recorded in docs/performance.md).

use std::collections::BTreeSet;

use reconcile_test_support::emulator;
use reconcile_test_support::faults::{Fault, FaultProxy, Rule};

use crate::faults::through;
use crate::support::{real_desired, reconcile};

/// The reads that do not grow with the account: STS, the repository listing, the bucket's
/// `HeadBucket` and its eleven settings, the runner's role with its policies and attachments
/// (four) and its boundary (the policy and its document), one `BatchGetProjects` for the project
/// and its webhook, GitHub's identity provider, the three CI roles (four reads each), and one
/// `ListRoles` for other roles that trust GitHub.
const FIXED_READS: usize = 1 + 1 + 12 + 4 + 2 + 1 + 1 + 3 * 4 + 1;

/// The repositories of the account: (declared in the real desired.toml, the others).
async fn repositories(account: &reconcile_test_support::TestAccount) -> (usize, usize) {
    let ecr = aws_sdk_ecr::Client::new(&account.sdk_config());
    let listed = ecr.describe_repositories().max_results(1000).send().await.unwrap();
    let text = std::fs::read_to_string(real_desired()).unwrap();
    let table = text.split("[ecr.repositories]").nth(1).unwrap().split("\n[").next().unwrap();
    let declared: BTreeSet<&str> = table.lines().filter_map(|line| Some(line.split_once(" = ")?.0)).collect();
    let all = listed.repositories();
    let ours = all.iter().filter(|r| declared.contains(r.repository_name().unwrap())).count();
    (ours, all.len() - ours)
}

#[tokio::test]
async fn a_plan_reads_three_things_per_declared_repository_and_a_no_change_apply_writes_nothing() {
    let account = emulator().new_account().await;
    let copy = crate::support::real_copy();
    let desired = copy.path.clone();
    account.seed_2026_11_11(&desired);
    crate::support::import(&account, &desired);
    assert_eq!(reconcile(&account, &desired, &["apply", "--auto-approve"]).code, 0);
    let (declared, undeclared) = repositories(&account).await;
    assert_eq!(declared, 27);

    // ECR has no batched read of lifecycle policies, repository policies or tags: each declared
    // repository costs exactly those three, each undeclared one its lifecycle policy (D103).
    let budget = 3 * declared + undeclared + FIXED_READS;
    let mut counts = Vec::new();
    for _ in 0..2 {
        let before = account.requests().len();
        let plan = reconcile(&account, &desired, &["plan", "--detailed-exitcode"]);
        assert_eq!(plan.code, 0, "{}{}", plan.stdout, plan.stderr);
        let requests = &account.requests()[before..];
        assert!(requests.iter().all(|r| !r.is_write()), "{requests:?}");
        counts.push(requests.len());
    }
    assert_eq!(counts, [budget, budget], "a second plan makes no more requests than the first");

    // An apply with nothing to do: the same reads, and not one write, not even the lock's.
    let before = account.requests().len();
    let apply = reconcile(&account, &desired, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}", apply.stderr);
    assert!(apply.stdout.contains("No changes."), "{}", apply.stdout);
    let requests = &account.requests()[before..];
    assert_eq!(requests.iter().filter(|r| r.is_write()).count(), 0, "{requests:?}");
    assert_eq!(requests.len(), budget);
}

#[tokio::test]
async fn the_per_repository_reads_go_out_in_one_wave_bounded_by_parallelism() {
    let account = emulator().new_account().await;
    let copy = crate::support::real_copy();
    let desired = copy.path.clone();
    account.seed_2026_11_11(&desired);
    crate::support::import(&account, &desired);
    assert_eq!(reconcile(&account, &desired, &["apply", "--auto-approve"]).code, 0);
    let (declared, undeclared) = repositories(&account).await;
    let per_repository = 3 * declared + undeclared;

    // Every answer held long enough that nothing sent in one wave is answered before the wave
    // is out: the proxy's peak is then the wave.
    let proxy = FaultProxy::start(emulator().endpoint(), 1, vec![Rule::always(Fault::Delay(ms(400)))]);
    let plan = through(&proxy, &account, &desired, &["plan"]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    assert_eq!(proxy.peak_in_flight("ecr"), per_repository as u64, "one wave of ECR reads");
    assert_eq!(proxy.peak_in_flight("s3"), 11, "the bucket's settings and lifecycle at once");

    let proxy = FaultProxy::start(emulator().endpoint(), 1, vec![Rule::always(Fault::Delay(ms(20)))]);
    let bounded = through(&proxy, &account, &desired, &["plan", "--parallelism", "4"]);
    assert_eq!(bounded.code, 0, "{}", bounded.stderr);
    assert_eq!(bounded.stdout, plan.stdout, "the same plan, more slowly");
    for service in ["ecr", "s3", "iam", "codebuild", "sts"] {
        assert!(proxy.peak_in_flight(service) <= 4, "{service}: {}", proxy.peak_in_flight(service));
    }
    assert_eq!(proxy.peak_in_flight("ecr"), 4);
    // One at a time: no read waits for a permit while holding one.
    let serial = reconcile(&account, &desired, &["plan", "--parallelism", "1"]);
    assert_eq!((serial.code, &serial.stdout), (0, &plan.stdout), "{}", serial.stderr);

    let refused = reconcile(&account, &desired, &["plan", "--parallelism", "0"]);
    assert_eq!(refused.code, 1, "a usage error: {}", refused.stderr);
    assert!(refused.stderr.contains("--parallelism"), "{}", refused.stderr);
}

fn ms(ms: u64) -> std::time::Duration {
    std::time::Duration::from_millis(ms)
}

/// The apply workflow's two steps on 1,000 declared repositories applied: `plan --base
/// desired.toml --out plan.json` saves "No changes" in under 512 bytes per declared resource (each
/// resource's values once; the Terraform view is derived again when asked), `apply plan.json`
/// carries it out, and `show --format terraform-json` gives Terraform's view of every resource.
#[tokio::test]
async fn a_thousand_repositories_save_a_plan_of_no_changes_compactly_and_apply_it() {
    let account = emulator().new_account().await;
    let names: Vec<String> = (0..1000).map(|n| format!("image-{n:04}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let desired = crate::support::desired_file(&crate::support::small_desired(&names));
    let made = reconcile(&account, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(made.code, 0, "{}", made.stderr);
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("plan.json");
    let base = desired.path.to_str().unwrap();
    let plan = reconcile(&account, &desired.path, &["plan", "--base", base, "--out", saved.to_str().unwrap()]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    assert!(plan.stdout.contains("No changes."), "{}", plan.stdout);
    // A repository and its lifecycle policy each: 2,000 declared resources.
    let size = std::fs::metadata(&saved).unwrap().len();
    assert!(size < 2_000 * 512, "{size} bytes");
    let apply = reconcile(&account, &desired.path, &["apply", saved.to_str().unwrap()]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    assert!(apply.stdout.contains("No changes."), "{}", apply.stdout);
    let shown = reconcile(&account, &desired.path, &["show", "--format", "terraform-json", saved.to_str().unwrap()]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    let view: serde_json::Value = serde_json::from_str(&shown.stdout).unwrap();
    let changes = view["resource_changes"].as_array().unwrap();
    assert_eq!(changes.len(), 2_000);
    assert!(changes.iter().all(|c| c["change"]["actions"] == serde_json::json!(["no-op"])));
    assert_eq!(view["prior_state"]["values"]["root_module"]["resources"].as_array().unwrap().len(), 2_000);
}
