//! `reconcile cost` against the emulator: the runner's builds (seeded with their times and
//! compute), the Price List's rates, Cost Explorer's bill, CloudWatch's daily bucket size and
//! the registry's images, read and priced.

use reconcile_test_support::{TestAccount, emulator};
use serde_json::{Value, json};

use crate::support::{DesiredFile, desired_file, reconcile, small_account_with_runner};

const DAY: i64 = 86_400;
const XLARGE: &str = "BUILD_GENERAL1_XLARGE";

fn today() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    now.div_euclid(DAY) * DAY
}

/// The runner project, and the team's two measured builds on xlarge: a warm one of 34 minutes
/// yesterday, a cold one of 54m 24s the day before, both at 02:17.
async fn measured() -> (TestAccount, DesiredFile) {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account_with_runner(&["pytorch"]));
    let nightly = today() - DAY + 2 * 3600 + 17 * 60;
    account.seed_builds(
        "us-east-1",
        &json!([
            { "project": "rocm-bake", "start": nightly, "end": nightly + 34 * 60, "computeType": XLARGE },
            { "project": "rocm-bake", "start": nightly - DAY, "end": nightly - DAY + 54 * 60 + 24, "computeType": XLARGE },
        ]),
    );
    (account, desired)
}

fn cost_json(account: &TestAccount, desired: &DesiredFile, args: &[&str]) -> Value {
    let mut all = vec!["cost", "--format", "json"];
    all.extend_from_slice(args);
    let run = reconcile(account, &desired.path, &all);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    serde_json::from_str(&run.stdout).unwrap()
}

/// Cost Explorer's answer for CodeBuild: `minutes` of xlarge billed at `usd_per_minute`.
fn bill(minutes: f64, usd_per_minute: f64, next_page: Option<&str>) -> Value {
    let mut answer = json!({
        "ResultsByTime": [{
            "TimePeriod": { "Start": "2026-11-28", "End": "2026-11-29" },
            "Total": {},
            "Groups": [{
                "Keys": ["USE1-Build-Min:Linux:g1.xlarge"],
                "Metrics": {
                    "UnblendedCost": { "Amount": format!("{:.6}", minutes * usd_per_minute), "Unit": "USD" },
                    "UsageQuantity": { "Amount": format!("{minutes}"), "Unit": "Minutes" },
                },
            }],
            "Estimated": false,
        }],
        "DimensionValueAttributes": [],
    });
    if let Some(token) = next_page {
        answer["NextPageToken"] = json!(token);
    }
    answer
}

fn requests(account: &TestAccount, action: &str) -> usize {
    account.requests().iter().filter(|r| r.action == action).count()
}

#[tokio::test]
async fn the_measured_builds_cost_what_the_team_said_and_stay_unverified_until_the_bill_agrees() {
    let (account, desired) = measured().await;
    let report = cost_json(&account, &desired, &[]);
    let builds: Vec<(u64, f64, String)> = report["builds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b["billed_minutes"].as_u64().unwrap(), b["cost_usd"].as_f64().unwrap(), b["usage_type"].to_string()))
        .collect();
    assert_eq!(
        builds,
        [
            (34, 2.7132, "\"USE1-Build-Min:Linux:g1.xlarge\"".to_owned()),
            (55, 4.389, "\"USE1-Build-Min:Linux:g1.xlarge\"".to_owned()),
        ]
    );
    let rate = &report["rates"][0];
    assert_eq!((rate["usd_per_minute"].as_f64(), rate["source"].as_str()), (Some(0.0798), Some("price_list")));
    // Cost Explorer was asked once and billed nothing of it: unverified.
    assert_eq!(rate["verification"], "not_billed");
    assert_eq!(report["cost_explorer_requests"], 1);
    assert_eq!(requests(&account, "GetCostAndUsage"), 1);
    assert_eq!(report["total_rate_verified"], false);

    let text = reconcile(&account, &desired.path, &["cost"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(
        text.stdout.contains("34m 00s -> 34 min  BUILD_GENERAL1_XLARGE  $2.71 (rate unverified)"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout.contains("54m 24s -> 55 min  BUILD_GENERAL1_XLARGE  $4.39 (rate unverified)"),
        "{}",
        text.stdout
    );
    assert!(text.stdout.contains("rounded up, from when a build is submitted until it ends"), "{}", text.stdout);
    let markdown = reconcile(&account, &desired.path, &["cost", "--format", "markdown"]);
    assert!(markdown.stdout.contains("| $4.39 (rate unverified) |"), "{}", markdown.stdout);
    assert!(markdown.stdout.contains("```mermaid\nxychart-beta"), "{}", markdown.stdout);

    // A bill of 89 minutes at $0.0800 confirms the rate (within 1%): no figure is marked.
    let (account, desired) = measured().await;
    account.cost_explorer_answers(&bill(89.0, 0.0800, None));
    let confirmed = reconcile(&account, &desired.path, &["cost"]);
    assert!(confirmed.stdout.contains("confirmed: Cost Explorer billed $0.0800/min"), "{}", confirmed.stdout);
    assert!(!confirmed.stdout.contains("(rate unverified)"), "{}", confirmed.stdout);
    assert!(confirmed.stdout.contains("$2.71"), "{}", confirmed.stdout);

    // One 10% off: a finding naming both rates, and every figure unverified.
    let (account, desired) = measured().await;
    account.cost_explorer_answers(&bill(89.0, 0.0878, None));
    let report = cost_json(&account, &desired, &[]);
    assert_eq!(report["rates"][0]["verification"], "disagrees");
    assert_eq!(report["findings"][0]["code"], "E104");
    assert_eq!(
        report["findings"][0]["message"],
        "USE1-Build-Min:Linux:g1.xlarge: the rate used is $0.0798/min (the Price List API), but Cost Explorer billed \
         $0.0878/min, 10.0% off; the figures using it are unverified"
    );
}

#[tokio::test]
async fn cost_explorer_is_asked_once_unless_verify_reads_every_page() {
    let (account, desired) = measured().await;
    account.cost_explorer_answers(&bill(89.0, 0.0800, Some("page-2")));
    let report = cost_json(&account, &desired, &[]);
    assert_eq!((report["cost_explorer_requests"].as_u64(), requests(&account, "GetCostAndUsage")), (Some(1), 1));
    let notes = report["notes"].to_string();
    assert!(notes.contains("1 request(s), $0.01, more pages left unread (--verify reads them all)"), "{notes}");

    let (account, desired) = measured().await;
    account.cost_explorer_answers(&bill(89.0, 0.0800, Some("page-2")));
    account.cost_explorer_answers(&bill(0.0, 0.0, None));
    let report = cost_json(&account, &desired, &["--verify"]);
    assert_eq!((report["cost_explorer_requests"].as_u64(), requests(&account, "GetCostAndUsage")), (Some(2), 2));
    assert_eq!(report["rates"][0]["verification"], "confirmed");
}

/// Each page is billed: a Cost Explorer that answers every page with the token it gave before
/// is not asked again, and the report says what was not read.
#[tokio::test]
async fn verify_stops_at_a_repeated_page_token_and_says_so() {
    let (account, desired) = measured().await;
    for _ in 0..20 {
        account.cost_explorer_answers(&bill(89.0, 0.0800, Some("the-same-page")));
    }
    let report = cost_json(&account, &desired, &["--verify"]);
    assert_eq!((report["cost_explorer_requests"].as_u64(), requests(&account, "GetCostAndUsage")), (Some(2), 2));
    let unread = report["cost_explorer_unread"].as_str().unwrap();
    assert_eq!(unread, "Cost Explorer gave a page token it had already given");
    assert!(report["notes"].to_string().contains(&format!("2 request(s), $0.02, more pages left unread ({unread})")));
}

#[tokio::test]
async fn without_permission_for_the_rates_the_last_known_one_is_used_with_one_warning() {
    let (account, desired) = measured().await;
    account.deny("pricing", "GetProducts", "*");
    account.deny("ce", "GetCostAndUsage", "*");
    let report = cost_json(&account, &desired, &[]);
    let rate = &report["rates"][0];
    assert_eq!((rate["source"].as_str(), rate["as_of"].as_str()), (Some("known"), Some("2026-11-12")));
    assert_eq!(rate["verification"], "unverified");
    assert_eq!(report["builds"][1]["cost_usd"], 4.389);
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "one warning: {findings:?}");
    assert_eq!(findings[0]["code"], "E105");
    let message = findings[0]["message"].as_str().unwrap();
    assert!(message.contains("the Price List (pricing:GetProducts), Cost Explorer (ce:GetCostAndUsage)"), "{message}");
}

#[tokio::test]
async fn storage_is_the_registrys_images_and_the_buckets_daily_size_and_a_running_build_counts_to_now() {
    let (account, desired) = measured().await;
    let bucket = format!("rocm-bake-sccache-{}", account.id);
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    let yesterday = reconcile_core::time::day(today() - DAY);
    account.bucket_size("us-east-1", &bucket, "StandardStorage", &yesterday, 60 * (1 << 30));
    account.bucket_size("us-east-1", &bucket, "StandardIAStorage", &yesterday, 10 * (1 << 30));
    let ecr = aws_sdk_ecr::Client::new(&account.sdk_config());
    crate::safety::push(&ecr, "pytorch", Some("nightly"), 5_000_000_000, "a1").await;
    let started = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64 - 600;
    account.seed_builds(
        "us-east-1",
        &json!([{ "project": "rocm-bake", "start": started, "end": null, "computeType": XLARGE }]),
    );

    let report = cost_json(&account, &desired, &["--days", "2"]);
    let nights = report["nights"].as_array().unwrap();
    assert_eq!(nights.len(), 2);
    assert_eq!(nights[0]["cache_bucket_bytes"], 70 * (1u64 << 30));
    assert!(nights[0]["cache_bucket_usd"].as_f64().unwrap() > 0.0);
    assert_eq!(nights[1]["cache_bucket_bytes"], Value::Null, "today's is not published yet");
    assert_eq!(nights[1]["registry_bytes"], 5_000_000_000u64);
    let running = &report["builds"][0];
    assert_eq!(running["running"], true);
    assert!(running["billed_minutes"].as_u64().unwrap() >= 10, "{running}");
    // The window is two days: the cold build of three days ago is not counted.
    assert_eq!(report["builds"].as_array().unwrap().len(), 2);
    assert_eq!(requests(&account, "ListMetrics"), 1);
    assert_eq!(requests(&account, "GetMetricStatistics"), 2, "one per storage type");
}

/// A month of a busy runner: 3,000 builds in 30 days, read one list page and one batch read per
/// hundred (the time it takes is scripts/bench-cost.sh's, in docs/performance.md).
#[tokio::test]
async fn a_month_of_three_thousand_builds_is_read_a_hundred_at_a_time() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account_with_runner(&["pytorch"]));
    let first = today() - 29 * DAY;
    let builds: Vec<Value> = (0..3000)
        .map(|n| {
            let start = first + n * 860;
            json!({ "project": "rocm-bake", "start": start, "end": start + 600, "computeType": XLARGE })
        })
        .collect();
    account.seed_builds("us-east-1", &Value::Array(builds));
    let report = cost_json(&account, &desired, &["--days", "30"]);
    let counted = report["builds"].as_array().unwrap().len();
    assert!(counted >= 2999, "{counted}");
    let (lists, batches) = (requests(&account, "ListBuildsForProject"), requests(&account, "BatchGetBuilds"));
    assert!(lists <= 30 && batches <= 31, "{lists} list pages, {batches} batch reads");
}

/// The demo's account (`scripts/demo.sh`): the plan says what the keep-3 policy frees in the two
/// cache repositories and what it saves a month, and what it changes on GitHub; the plan after
/// apply is clean; `usage` shows the 347 GiB and the 738; `cost` prices the week's builds.
#[tokio::test]
async fn the_demos_account_shows_what_the_policy_frees_the_github_side_and_what_the_nights_cost() {
    use reconcile_test_support::github::github;
    let account = emulator().new_account().await;
    let copy = crate::support::real_copy();
    let desired = copy.path.clone();
    account.seed_2026_11_11_with_history(&desired);
    let hook = json!({
        "name": "web", "active": true, "events": ["workflow_job"],
        "config": { "url": "https://codebuild.us-east-1.amazonaws.com/webhooks?t=demo&v=1", "content_type": "json" },
    });
    assert_eq!(github().call("POST", "/repos/ROCm/rocm-bake/hooks", "ghp_demo", &hook).0, 201);
    let mut env = account.env();
    env.push(("GITHUB_API_URL", github().endpoint().to_owned()));
    env.push(("GITHUB_TOKEN", "ghp_demo".to_owned()));
    let run = |args: &[&str]| crate::support::reconcile_in(&env, &desired, args);

    // As the demo runs it: the account the setup script made is nobody's, until it is imported.
    let first = run(&["plan"]);
    assert_eq!(first.code, 3, "{}{}", first.stdout, first.stderr);
    assert!(first.stdout.contains("`reconcile import` lists them"), "{}", first.stdout);
    assert_eq!(run(&["import"]).code, 0);
    let plan = run(&["plan"]);
    assert_eq!(plan.code, 0, "{}{}", plan.stdout, plan.stderr);
    assert!(plan.stdout.contains("Plan: 30 to import, "), "{}", plan.stdout);
    for line in [
        // Each size and its price multiply out: 153.0 GiB at $0.10 a GiB-month.
        "the policy expires 17 untagged images, 153.0 GiB (about $15.30 a month)",
        "the policy expires 17 untagged images, 141.9 GiB (about $14.19 a month)",
        "~ github_fork_pr_approval.rocm-bake",
        "+ github_variable.NIGHTLY_ENABLED",
    ] {
        assert!(plan.stdout.contains(line), "{line}\n{}", plan.stdout);
    }
    assert!(!plan.stdout.contains("E102"), "the GitHub side is checked: {}", plan.stdout);
    assert_eq!(run(&["apply", "--auto-approve"]).code, 0);
    let clean = run(&["plan", "--detailed-exitcode"]);
    assert_eq!(clean.code, 0, "{}{}", clean.stdout, clean.stderr);

    let usage = run(&["usage", "--format", "json"]);
    let usage: Value = serde_json::from_str(&usage.stdout).unwrap();
    // 738 of AWS's billing GB (2^30 bytes), as the seeds say the account was billed for (less the
    // few bytes the seed's even shares leave over), and its price multiplies out.
    let total = usage["total"]["bytes"].as_u64().unwrap();
    assert!((738u64 << 30) - total < 1024, "{total}");
    assert_eq!(usage["total"]["monthly_cost_usd"], 73.8);
    let caches: u64 = usage["repositories"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| ["atom-wheel-cache", "torchvision-wheel-cache"].contains(&r["name"].as_str().unwrap()))
        .map(|r| r["bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(caches, 20 * ((9u64 << 30) + (835u64 << 30) / 100), "347 GiB between them");

    let cost = run(&["cost"]);
    assert_eq!(cost.code, 0, "{}", cost.stderr);
    assert!(
        cost.stdout.contains("54m 24s -> 55 min  BUILD_GENERAL1_XLARGE  $4.39 (rate unverified)"),
        "{}",
        cost.stdout
    );
    assert!(cost.stdout.lines().any(|l| l.starts_with("total ")), "{}", cost.stdout);
}

/// The demo's account (a week of builds, the registry's images, the cache's daily size), taken
/// over and applied, with the GitHub side on a repository of its own; and a plan of
/// desired.toml changed by `edit`, as JSON: its `cost`.
struct Demo {
    account: TestAccount,
    dir: tempfile::TempDir,
    text: String,
    env: Vec<(&'static str, String)>,
}

impl Demo {
    async fn new() -> Demo {
        use reconcile_test_support::github::github;
        let account = emulator().new_account().await;
        let repository = github().new_repository();
        let root = reconcile_test_support::workspace_root();
        let text = std::fs::read_to_string(root.join("desired.toml"))
            .unwrap()
            .replace("repository = \"ROCm/rocm-bake\"", &format!("repository = \"{repository}\""));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("desired.toml"), &text).unwrap();
        std::fs::copy(root.join("rocm-bake.hcl"), dir.path().join("rocm-bake.hcl")).unwrap();
        account.seed_2026_11_11_with_history(&dir.path().join("desired.toml"));
        crate::github::codebuild_hook(&repository, true, &["workflow_job"]);
        let mut env = account.env();
        env.push(("GITHUB_API_URL", github().endpoint().to_owned()));
        env.push(("GITHUB_TOKEN", "ghp_test".to_owned()));
        env.push(("ECR_REGISTRY", format!("{}.dkr.ecr.us-east-1.amazonaws.com", account.id)));
        let demo = Demo { account, dir, text, env };
        assert_eq!(demo.run(&["import"]).code, 0);
        let apply = demo.run(&["apply", "--auto-approve"]);
        assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
        // desired.toml as it was: the import list is done, the file the base of every edit.
        std::fs::write(dir_path(&demo.dir), &demo.text).unwrap();
        demo
    }

    fn run(&self, args: &[&str]) -> crate::support::Run {
        crate::support::reconcile_in(&self.env, &dir_path(&self.dir), args)
    }

    /// The plan of desired.toml with `from` replaced by `to`, as JSON.
    fn plan(&self, from: &str, to: &str, extra: &[&str]) -> Value {
        assert!(self.text.contains(from), "{from}");
        let path = self.dir.path().join("changed.toml");
        std::fs::write(&path, self.text.replace(from, to)).unwrap();
        let mut args = vec!["plan", "--private", "--format", "json"];
        args.extend_from_slice(extra);
        let run = crate::support::reconcile_in(&self.env, &path, &args);
        assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
        serde_json::from_str(&run.stdout).unwrap()
    }
}

fn dir_path(dir: &tempfile::TempDir) -> std::path::PathBuf {
    dir.path().join("desired.toml")
}

/// The causes of a plan's cost, by what they change.
fn causes(plan: &Value) -> Vec<Value> {
    plan["cost"]["causes"].as_array().unwrap_or_else(|| panic!("no cost: {plan}")).clone()
}

#[tokio::test]
async fn a_plan_says_what_its_changes_do_to_the_monthly_bill_from_what_the_account_measured() {
    let demo = Demo::new().await;
    // What `cost` says the last whole nights cost (today's may still be building).
    let cost = demo.run(&["cost", "--days", "8", "--format", "json"]);
    let cost: Value = serde_json::from_str(&cost.stdout).unwrap();
    let today = reconcile_core::time::day(today());
    let whole: Vec<&Value> = cost["nights"].as_array().unwrap().iter().filter(|n| n["date"] != today).collect();
    assert_eq!(whole.len(), 7);
    let per_night = whole.iter().map(|n| n["runner_usd"].as_f64().unwrap()).sum::<f64>() / 7.0;
    let minutes: u64 = cost["builds"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| !b["started_at"].as_str().unwrap().starts_with(&today))
        .map(|b| b["billed_minutes"].as_u64().unwrap())
        .sum();
    assert!(per_night > 1.0 && minutes >= 157, "{per_night} {minutes}");
    let month = 365.25 / 12.0;

    // One architecture more: one architecture's nights more, within 5% of `cost`'s figure.
    let plan = demo.plan("arches = \"gfx1201\"", "arches = \"gfx1201,gfx950\"", &[]);
    let [builds] = &causes(&plan)[..] else { panic!("{plan}") };
    assert_eq!(builds["cause"], "builds");
    let expected = per_night * month;
    let figure = builds["monthly_usd"].as_f64().unwrap();
    assert!((figure - expected).abs() / expected < 0.05, "{figure} against {expected}: {builds}");
    assert_eq!(builds["estimate"], false);
    assert!(builds["basis"].as_str().unwrap().contains("for 1 architecture(s)"), "{builds}");
    assert_eq!(plan["cost"]["monthly_change_usd"], builds["monthly_usd"]);

    // The runner on 2xlarge: the same minutes at its rate.
    let plan = demo.plan("compute_type = \"BUILD_GENERAL1_XLARGE\"", "compute_type = \"BUILD_GENERAL1_2XLARGE\"", &[]);
    let [builds] = &causes(&plan)[..] else { panic!("{plan}") };
    let expected = minutes as f64 / 7.0 * (0.2 - 0.0798) * month;
    let figure = builds["monthly_usd"].as_f64().unwrap();
    assert!((figure - expected).abs() / expected < 0.05, "{figure} against {expected}: {builds}");
    assert!(builds["basis"].as_str().unwrap().contains("$0.2/min (the last known rate, 2026-11-12)"), "{builds}");

    // Ten untagged images kept instead of three: seven more of each repository's mean image.
    let usage = demo.run(&["usage", "--format", "json"]);
    let usage: Value = serde_json::from_str(&usage.stdout).unwrap();
    let held = |name: &str| {
        let repository = usage["repositories"].as_array().unwrap().iter().find(|r| r["name"] == name).unwrap();
        (repository["images"].as_u64().unwrap(), repository["bytes"].as_u64().unwrap())
    };
    let plan = demo.plan("countNumber = 3 }", "countNumber = 10 }", &[]);
    let causes_now = causes(&plan);
    assert_eq!(causes_now.len(), 27, "{plan}");
    let pytorch =
        causes_now.iter().find(|c| c["what"].as_str().unwrap().starts_with("ecr_lifecycle_policy.pytorch ")).unwrap();
    let (images, bytes) = held("pytorch");
    let expected = 7.0 * (bytes as f64 / images as f64) / f64::from(1u32 << 30) * 0.10;
    let figure = pytorch["monthly_usd"].as_f64().unwrap();
    assert!((figure - expected).abs() < 0.01, "{figure} against {expected}: {pytorch}");
    assert!(pytorch["basis"].as_str().unwrap().contains("7 untagged image(s) more kept"), "{pytorch}");

    // The cache kept 60 days instead of 30: its last daily size (51 GiB), held twice as long.
    let plan = demo.plan("expiration_days = 30 }", "expiration_days = 60 }", &[]);
    let [cache] = &causes(&plan)[..] else { panic!("{plan}") };
    assert_eq!(cache["cause"], "cache");
    let figure = cache["monthly_usd"].as_f64().unwrap();
    assert!((figure - 51.0 * 0.023).abs() < 0.01, "{cache}");
    assert!(cache["basis"].as_str().unwrap().contains("its last daily size, 51.0 GiB"), "{cache}");

    // A bake target: its two repositories, each estimated from what its kind holds for the others.
    let plan = demo.plan(
        "sglang-cache = { tags = { kind = \"buildkit-cache\" } }",
        "sglang-cache = { tags = { kind = \"buildkit-cache\" } }\nmigraphx = {}\nmigraphx-cache = { tags = { kind = \"buildkit-cache\" } }",
        &[],
    );
    let new: Vec<Value> = causes(&plan);
    assert_eq!(new.len(), 2, "{plan}");
    for cause in &new {
        assert_eq!(cause["cause"], "registry");
        assert_eq!(cause["estimate"], true);
        assert!(cause["monthly_usd"].as_f64().unwrap() > 0.0, "{cause}");
        assert!(cause["basis"].as_str().unwrap().starts_with("1 x the median of what the"), "{cause}");
    }
    // The text says it beside the summary, as an estimate.
    std::fs::write(
        demo.dir.path().join("changed.toml"),
        demo.text.replace("sglang = {}", "sglang = {}\nmigraphx = {}"),
    )
    .unwrap();
    let text = crate::support::reconcile_in(&demo.env, &demo.dir.path().join("changed.toml"), &["plan", "--private"]);
    assert!(text.stdout.contains("Monthly cost: about +$"), "{}", text.stdout);
    assert!(text.stdout.contains("registry: an estimate of +$"), "{}", text.stdout);

    // A public plan (its base the default branch's desired.toml) names nothing it does not show:
    // another team's repository, with images, is no sibling and appears nowhere.
    let ecr = aws_sdk_ecr::Client::new(&demo.account.sdk_config());
    ecr.create_repository().repository_name("other-team-cache").send().await.unwrap();
    crate::safety::push(&ecr, "other-team-cache", None, 5 << 40, "0ther").await;
    let base = dir_path(&demo.dir);
    let public = demo.run_public(&base, "sglang-cache = { tags = { kind = \"buildkit-cache\" } }", "sglang-cache = { tags = { kind = \"buildkit-cache\" } }\nmigraphx-cache = { tags = { kind = \"buildkit-cache\" } }");
    assert!(!public.contains("other-team"), "{public}");
    let public: Value = serde_json::from_str(&public).unwrap();
    let [cache] = &causes(&public)[..] else { panic!("{public}") };
    assert!(cache["basis"].as_str().unwrap().contains("the 13 other cache repositories"), "{cache}");
}

impl Demo {
    /// A public plan (`--base`) of desired.toml with `from` replaced by `to`, as JSON text.
    fn run_public(&self, base: &std::path::Path, from: &str, to: &str) -> String {
        let path = self.dir.path().join("public.toml");
        std::fs::write(&path, self.text.replace(from, to)).unwrap();
        let run = crate::support::reconcile_in(
            &self.env,
            &path,
            &["plan", "--base", base.to_str().unwrap(), "--format", "json"],
        );
        assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
        run.stdout
    }
}

#[tokio::test]
async fn with_no_build_history_the_builds_change_cannot_be_estimated_and_the_plan_says_why() {
    let account = emulator().new_account().await;
    let text = small_account_with_runner(&["pytorch"]);
    let desired = desired_file(&text);
    let apply = reconcile(&account, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    let bigger = desired_file(&text.replace(
        "service_role = \"codebuild\"\n",
        "service_role = \"codebuild\"\ncompute_type = \"BUILD_GENERAL1_2XLARGE\"\n",
    ));
    let run = reconcile(&account, &bigger.path, &["plan", "--format", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let plan: Value = serde_json::from_str(&run.stdout).unwrap();
    let [builds] = &causes(&plan)[..] else { panic!("{plan}") };
    assert_eq!(builds["monthly_usd"], Value::Null, "never a zero");
    assert!(
        builds["basis"].as_str().unwrap().contains("the runner built nothing in the last 7 whole night(s)"),
        "{builds}"
    );
    assert_eq!(plan["cost"]["complete"], false);
    // It informs: the exit code is the plan's, with or without the figure.
    let detailed = reconcile(&account, &bigger.path, &["plan", "--detailed-exitcode"]);
    assert_eq!(detailed.code, 2, "{}", detailed.stderr);
    assert!(detailed.stdout.contains("builds: cannot be estimated"), "{}", detailed.stdout);
    // A plan whose changes do not touch the bill has no cost line at all.
    let plain = reconcile(&account, &desired.path, &["plan", "--format", "json"]);
    let plain: Value = serde_json::from_str(&plain.stdout).unwrap();
    assert_eq!(plain.get("cost"), None);
}

/// A pull request naming another team's project (a second key under `[codebuild.projects]`)
/// beside a change that touches the bill: its public plan hides that project (W602) and prices
/// nothing of it either: the cost line is the same as without it.
#[tokio::test]
async fn a_public_plan_prices_nothing_of_a_project_it_hides() {
    use aws_sdk_codebuild as codebuild;
    let (account, desired) = measured().await;
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    // Another team's project, made by hand, with a week of long builds of its own.
    let client = codebuild::Client::new(&account.sdk_config());
    client
        .create_project()
        .name("teamy-builder")
        .source(
            codebuild::types::ProjectSource::builder()
                .r#type(codebuild::types::SourceType::Github)
                .location("https://github.com/teamy/builder")
                .build()
                .unwrap(),
        )
        .artifacts(
            codebuild::types::ProjectArtifacts::builder()
                .r#type(codebuild::types::ArtifactsType::NoArtifacts)
                .build()
                .unwrap(),
        )
        .environment(
            codebuild::types::ProjectEnvironment::builder()
                .r#type(codebuild::types::EnvironmentType::LinuxContainer)
                .compute_type(codebuild::types::ComputeType::BuildGeneral1Xlarge)
                .image("aws/codebuild/amazonlinux-x86_64-standard:5.0")
                .build()
                .unwrap(),
        )
        .service_role(format!("arn:aws:iam::{}:role/rocm-bake-codebuild", account.id))
        .send()
        .await
        .unwrap();
    let builds: Vec<Value> = (1..=7)
        .map(|night| {
            let start = today() - night * DAY + 3600;
            json!({ "project": "teamy-builder", "start": start, "end": start + 600 * 60, "computeType": XLARGE })
        })
        .collect();
    account.seed_builds("us-east-1", &Value::Array(builds));

    let text = std::fs::read_to_string(&desired.path).unwrap();
    let bigger = |text: &str| {
        text.replace(
            "service_role = \"codebuild\"\n",
            "service_role = \"codebuild\"\ncompute_type = \"BUILD_GENERAL1_2XLARGE\"\n",
        )
    };
    let spy = "\n[codebuild.projects.spy]\nname = \"teamy-builder\"\nsource_location = \"https://github.com/teamy/builder\"\nservice_role = \"codebuild\"\nbuild_timeout_hours = 4\n";
    let base = desired.path.to_str().unwrap();
    let public = |text: String| {
        let pull_request = desired_file(&text);
        let run = reconcile(&account, &pull_request.path, &["plan", "--public", "--base", base, "--format", "json"]);
        (run.code, run.stdout)
    };
    let (code, alone) = public(bigger(&text));
    assert_eq!(code, 0, "{alone}");
    let (code, spied) = public(format!("{}{spy}", bigger(&text)));
    assert_eq!(code, 3, "W602: {spied}");
    // (Its name is the pull request's own, in the derived log-group grants; nothing it read.)
    assert!(!spied.contains("70 hours") && !spied.contains("4200"), "{spied}");
    let alone: Value = serde_json::from_str(&alone).unwrap();
    let spied: Value = serde_json::from_str(&spied).unwrap();
    assert_eq!(spied["cost"], alone["cost"], "the hidden project's 70 hours priced nowhere");
    assert!(spied["findings"].as_array().unwrap().iter().any(|f| f["code"] == "W602"), "{spied}");
}

/// The demo's account applied, then three drifts that change what is kept: the policy of a cache
/// repository deleted (`atom-wheel-cache`, 20 nights of untagged 9 GiB images), the old 14-day
/// rule back on `pytorch-cache`, the cache bucket's expiry lengthened to 45 days. The drift check
/// prices each while it stays, from the seeded history, in its log, JSON and the issue's words.
#[tokio::test]
async fn a_drift_that_changes_what_is_kept_says_what_it_costs_a_month_while_it_stays() {
    use aws_sdk_ecr as ecr;
    let account = emulator().new_account().await;
    let copy = crate::support::real_copy();
    let desired = copy.path.clone();
    account.seed_2026_11_11_with_history(&desired);
    let env = account.env();
    let run = |args: &[&str]| crate::support::reconcile_in(&env, &desired, args);
    assert_eq!(run(&["import"]).code, 0);
    let applied = run(&["apply", "--auto-approve"]);
    assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);

    let config = account.sdk_config();
    let ecr = ecr::Client::new(&config);
    ecr.delete_lifecycle_policy().repository_name("atom-wheel-cache").send().await.unwrap();
    let fourteen_days = r#"{"rules":[{"rulePriority":1,"selection":{"tagStatus":"any","countType":"sinceImagePushed","countUnit":"days","countNumber":14},"action":{"type":"expire"}}]}"#;
    ecr.put_lifecycle_policy()
        .repository_name("pytorch-cache")
        .lifecycle_policy_text(fourteen_days)
        .send()
        .await
        .unwrap();
    crate::support::cache_expires_after(&account, 45).await;

    let drift = run(&["drift", "--format", "json"]);
    assert_eq!(drift.code, 2, "{}{}", drift.stdout, drift.stderr);
    let report: Value = serde_json::from_str(&drift.stdout).unwrap();
    let costs = report["drift_costs"].as_array().unwrap();
    let figure = |address: &str| {
        costs.iter().find(|c| c["address"] == address).unwrap_or_else(|| panic!("{address}: {costs:#?}")).clone()
    };
    // Dearest first: the missing policy holds the 20 nights now and the month's to come (the pace
    // is measured from the first of them, so the time of day moves it a little), where desired.toml
    // keeps three.
    assert_eq!(costs[0]["address"], "ecr_lifecycle_policy.atom-wheel-cache", "{costs:#?}");
    let missing = figure("ecr_lifecycle_policy.atom-wheel-cache");
    let usd = missing["monthly_usd"].as_f64().unwrap();
    assert!((40.0..=46.0).contains(&usd), "{missing:#}");
    assert!(
        missing["basis"].as_str().unwrap().contains(" pushes, each orphaning an image of about 9.0 GiB)"),
        "{missing:#}"
    );
    assert_eq!(missing["what"], "no lifecycle policy, while it stays");
    // The 14-day rule holds a fortnight of nights where desired.toml keeps three.
    let aged = figure("ecr_lifecycle_policy.pytorch-cache");
    let usd = aged["monthly_usd"].as_f64().unwrap();
    assert!((1.0..=3.5).contains(&usd), "{aged:#}");
    assert!(aged["basis"].as_str().unwrap().contains("desired.toml's 5.9 GiB"), "three of ~1.96 GiB: {aged:#}");
    // The bucket: its last daily size, 51 GiB under 45 days, a third more than 30 days hold.
    let bucket = figure("s3_bucket_lifecycle.sccache");
    assert_eq!((bucket["cause"].as_str(), bucket["monthly_usd"].as_f64()), (Some("cache"), Some(0.39)), "{bucket:#}");
    assert_eq!(bucket["what"], "expires objects after 45 days instead of 30, while it stays");

    // The job log and the issue's words say the same.
    let text = run(&["drift"]);
    assert!(text.stdout.contains("\nWhat it costs while it stays: about +$"), "{}", text.stdout);
    assert!(text.stdout.contains("  - `ecr_lifecycle_policy.atom-wheel-cache`: registry: about +$"), "{}", text.stdout);
    let issue = run(&["drift", "--format", "markdown"]);
    let section = &issue.stdout[issue.stdout.find("### What it costs while it stays").expect(&issue.stdout)..];
    let lines: Vec<&str> = section.lines().filter(|l| l.starts_with("- ")).take(3).collect();
    assert!(lines[0].starts_with("- `ecr_lifecycle_policy.atom-wheel-cache`: registry: about +$"), "{section}");
    assert!(lines[1].starts_with("- `ecr_lifecycle_policy.pytorch-cache`: registry: about +$"), "{section}");
    assert!(lines[2].starts_with("- `s3_bucket_lifecycle.sccache`: cache: about +$0.39 a month"), "{section}");
    assert!(section.find("### What to do").is_some(), "the answers follow: {section}");
}
