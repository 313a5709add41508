//! Reliability under injected faults: a loopback proxy between the binary and the emulator
//! answers a seeded share of requests with throttling (in each service's protocol), 5xx, or a
//! dropped connection.

use reconcile_test_support::faults::{Fault, FaultProxy, Rule};
use reconcile_test_support::{TestAccount, emulator};

use crate::support::{Run, desired_file, json_changes, reconcile, reconcile_in, small_account_with_runner};

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
fn through(proxy: &FaultProxy, account: &TestAccount, desired: &std::path::Path, args: &[&str]) -> Run {
    let mut env: Vec<(&str, String)> =
        account.env().into_iter().filter(|(name, _)| *name != "AWS_ENDPOINT_URL").collect();
    env.push(("AWS_ENDPOINT_URL", proxy.endpoint.clone()));
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
        assert_eq!(json_changes(&plan.stdout).len(), 10, "seed {seed}");
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
    let apply = through(&proxy, &account, &desired.path, &["apply", "--auto-approve", "--format", "json"]);
    assert_eq!(apply.code, 1, "{}{}", apply.stdout, apply.stderr);
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
    assert!(plan.stderr.contains("(30 of them retries)"), "{}", plan.stderr);
}
