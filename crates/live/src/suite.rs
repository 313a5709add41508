//! The suite: the user's path end to end, each step run through the `reconcile` binary as a
//! user runs it, each out-of-band change made with the SDK as someone at the console would, and
//! each step's time and AWS request count (the binary's own count, from its log) printed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use aws_types::SdkConfig;
use serde_json::Value;

use crate::names::Run;
use crate::sweep;
use crate::{Failure, fail};

/// The suite's steps, in order; a run may stop after any of them (`--stop-after`), as an
/// interrupted run would, to leave what the sweeper must clean.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum Step {
    /// The first plan: every declared resource a create.
    PlanCreates,
    Apply,
    /// The plan right after apply: no changes, AWS's own defaults and normalisations included.
    PlanClean,
    /// One out-of-band change per kind, each seen as drift.
    Drift,
    /// The drift put right by a saved plan, applied.
    SavedPlan,
    /// A bake target declared (`reconcile declare`) and applied.
    BakeTarget,
    /// What the registry holds and the nights cost.
    UsageAndCost,
    /// Who made a drift, once CloudTrail has the event (a bounded wait).
    Attribution,
    /// The CI roles' derived policies assumed (stand-in roles holding them) and held by IAM.
    CiRoles,
    Destroy,
    /// Nothing of the run left in the account.
    LeftBehind,
}

/// How to run the suite.
pub struct Options {
    /// The `reconcile` binary under test.
    pub reconcile: PathBuf,
    /// The SDK's configuration (credentials, region, endpoint) the out-of-band changes and the
    /// checks use: the same account the binary reaches.
    pub sdk: SdkConfig,
    /// The binary's whole environment when given (the tests' emulator account); inherited
    /// otherwise (the standard chain, as a user runs it).
    pub env: Option<Vec<(String, String)>>,
    /// The sandbox account the credentials must be: the suite refuses any other.
    pub account: String,
    pub region: String,
    pub run: Run,
    /// A repository CodeBuild's credential in the account reaches, for the runner project and
    /// its webhook; without it they are not declared (and the step says so).
    pub github_repository: Option<String>,
    /// How long to wait for CloudTrail to have the attribution step's event.
    pub trail_wait: Duration,
    pub stop_after: Option<Step>,
}

/// What one step did.
#[derive(Debug, Clone)]
pub struct StepReport {
    pub step: Step,
    pub elapsed: Duration,
    /// The AWS requests the binary made in the step, as it counted them.
    pub requests: u64,
    /// What it found, or why it did not run.
    pub note: String,
}

/// A role session's keys.
struct Keys {
    id: String,
    secret: String,
    token: String,
}

/// One run of the binary.
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

struct Suite<'a> {
    options: &'a Options,
    dir: tempfile::TempDir,
    desired: PathBuf,
    requests: u64,
}

impl Suite<'_> {
    fn reconcile(&mut self, args: &[&str]) -> Result<Ran, Failure> {
        self.reconcile_as(None, args)
    }

    /// [`Suite::reconcile`] with `keys` (a role's session) instead of the suite's credentials.
    fn reconcile_as(&mut self, keys: Option<&Keys>, args: &[&str]) -> Result<Ran, Failure> {
        let mut command = Command::new(&self.options.reconcile);
        if let Some(env) = &self.options.env {
            command.env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default());
            command.envs(env.iter().map(|(name, value)| (name, value)));
        }
        if let Some(keys) = keys {
            // The environment's keys come first in the standard chain, before any profile.
            command
                .env("AWS_ACCESS_KEY_ID", &keys.id)
                .env("AWS_SECRET_ACCESS_KEY", &keys.secret)
                .env("AWS_SESSION_TOKEN", &keys.token)
                .env_remove("AWS_PROFILE");
        }
        // The binary's request count is logged at info; nothing else of the log is read.
        command.env("RECONCILE_LOG", "info").env("NO_COLOR", "1").env_remove("GITHUB_TOKEN").env_remove("GH_TOKEN");
        // Run as a user at a terminal runs it, even from the live workflow's job: the sandbox
        // holds nothing but the run's, and the suite reads what a private run prints.
        command.env_remove("GITHUB_ACTIONS");
        let output = command
            .arg("--desired")
            .arg(&self.desired)
            .args(args)
            .stdin(std::process::Stdio::null())
            .current_dir(self.dir.path())
            .output()
            .map_err(|error| fail(format!("{} could not be run: {error}", self.options.reconcile.display())))?;
        let ran = Ran {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        };
        self.requests += requests_in(&ran.stderr);
        Ok(ran)
    }

    /// Runs `reconcile <args>` and requires exit `code`.
    fn expect(&mut self, args: &[&str], code: i32) -> Result<Ran, Failure> {
        self.expect_as(None, args, code)
    }

    fn expect_as(&mut self, keys: Option<&Keys>, args: &[&str], code: i32) -> Result<Ran, Failure> {
        let ran = self.reconcile_as(keys, args)?;
        if ran.code != code {
            return Err(fail(format!(
                "`reconcile {}` exited {}, not {code}\n--- stdout\n{}\n--- stderr\n{}",
                args.join(" "),
                ran.code,
                ran.stdout,
                ran.stderr
            )));
        }
        Ok(ran)
    }

    /// The plan's changes as `action address`, from its JSON.
    fn changes(&mut self, args: &[&str]) -> Result<Vec<String>, Failure> {
        let mut all = vec!["plan", "--format", "json"];
        all.extend(args);
        let ran = self.reconcile(&all)?;
        if ran.code != 0 {
            return Err(fail(format!("`reconcile {}` exited {}:\n{}", all.join(" "), ran.code, ran.stderr)));
        }
        let plan: Value = serde_json::from_str(&ran.stdout).map_err(|e| fail(format!("the JSON plan: {e}")))?;
        Ok(plan["resource_changes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                format!(
                    "{} {}",
                    c["change"]["actions"][0].as_str().unwrap_or("?"),
                    c["address"].as_str().unwrap_or("?")
                )
            })
            .collect())
    }

    fn account(&self) -> &str {
        &self.options.account
    }
}

/// The AWS requests a run's log says it made: the largest count it logged (each line counts
/// everything so far).
fn requests_in(log: &str) -> u64 {
    log.lines()
        .filter_map(|line| {
            let (before, _) = line.split_once(" AWS requests")?;
            before.rsplit(' ').next()?.parse::<u64>().ok()
        })
        .max()
        .unwrap_or(0)
}

/// Runs the suite, printing each step as it ends through `say`. The first failure ends it; what
/// the run made is then the sweeper's (the failure says so).
pub async fn run(options: &Options, say: &mut dyn FnMut(&str)) -> Result<Vec<StepReport>, Failure> {
    crate::in_sandbox(&options.sdk, &options.account).await?;
    let account = &options.account;
    let dir = tempfile::tempdir().map_err(|e| fail(format!("a working directory: {e}")))?;
    let desired = dir.path().join("desired.toml");
    std::fs::write(&desired, options.run.desired(&options.region, options.github_repository.as_deref()))
        .map_err(|e| fail(format!("writing desired.toml: {e}")))?;
    let mut suite = Suite { options, dir, desired, requests: 0 };
    say(&format!(
        "run {} in account {account}, {}: names start with {}",
        options.run.id(),
        options.region,
        options.run.prefix()
    ));
    let mut reports = Vec::new();
    let mut declared = 0;
    for step in [
        Step::PlanCreates,
        Step::Apply,
        Step::PlanClean,
        Step::Drift,
        Step::SavedPlan,
        Step::BakeTarget,
        Step::UsageAndCost,
        Step::Attribution,
        Step::CiRoles,
        Step::Destroy,
        Step::LeftBehind,
    ] {
        let start = Instant::now();
        suite.requests = 0;
        let note = match step {
            Step::PlanCreates => {
                let changes = suite.changes(&[])?;
                if changes.is_empty() || !changes.iter().all(|c| c.starts_with("create ")) {
                    return Err(fail(format!("the first plan is not all creates: {changes:?}")));
                }
                declared = changes.len();
                format!("{declared} resources to create")
            }
            Step::Apply => {
                suite.expect(&["apply", "--auto-approve"], 0)?;
                "applied".to_owned()
            }
            Step::PlanClean => {
                let changes = suite.changes(&[])?;
                if !changes.is_empty() {
                    return Err(fail(format!("the plan right after apply is not empty: {changes:?}")));
                }
                "no changes".to_owned()
            }
            Step::Drift => drift(&mut suite).await?,
            Step::SavedPlan => {
                let saved = suite.dir.path().join("drift.plan.json");
                let saved = saved.to_str().ok_or_else(|| fail("a temporary path that is not UTF-8".to_owned()))?;
                suite.expect(&["plan", "--out", saved], 0)?;
                suite.expect(&["apply", saved], 0)?;
                let changes = suite.changes(&[])?;
                if !changes.is_empty() {
                    return Err(fail(format!("the saved plan left changes: {changes:?}")));
                }
                "the drift put right by the saved plan; no changes after".to_owned()
            }
            Step::BakeTarget => {
                bake_target(&mut suite)?;
                declared += 2;
                format!("{} declared from the bake file and made", options.run.added())
            }
            Step::UsageAndCost => {
                let usage = suite.expect(&["usage", "--format", "json"], 0)?;
                let [base, _] = options.run.repositories();
                if !usage.stdout.contains(&base) {
                    return Err(fail(format!("usage does not list {base}: {}", usage.stdout)));
                }
                let cost = suite.expect(&["cost", "--days", "1"], 0)?;
                let unverified = cost.stdout.contains("unverified") || cost.stdout.contains("not confirmed");
                format!(
                    "usage lists the run's repositories; cost read{}",
                    if unverified { " (unverified: no history)" } else { "" }
                )
            }
            Step::Attribution => attribution(&mut suite).await?,
            Step::CiRoles => ci_roles(&mut suite).await?,
            Step::Destroy => {
                suite.expect(&["destroy", "--auto-approve", "--force-delete-images", "--empty-buckets"], 0)?;
                let changes = suite.changes(&[])?;
                if changes.len() != declared || !changes.iter().all(|c| c.starts_with("create ")) {
                    return Err(fail(format!(
                        "after destroy, the plan is not every declared resource ({declared}) created: {changes:?}"
                    )));
                }
                let again = suite.expect(&["destroy", "--auto-approve"], 0)?;
                if !again.stdout.contains("No changes") {
                    return Err(fail(format!("a second destroy changed something:\n{}", again.stdout)));
                }
                format!("{declared} resources destroyed; a second destroy changed nothing")
            }
            Step::LeftBehind => {
                let left = sweep::find(
                    &options.sdk,
                    &sweep::Filter {
                        account: options.account.clone(),
                        run: Some(options.run.clone()),
                        older_than: Duration::ZERO,
                    },
                )
                .await?;
                if !left.is_empty() {
                    let names: Vec<String> = left.iter().map(ToString::to_string).collect();
                    return Err(fail(format!("the run left: {}", names.join(", "))));
                }
                "nothing of the run is left".to_owned()
            }
        };
        let report = StepReport { step, elapsed: start.elapsed(), requests: suite.requests, note };
        say(&format!(
            "{:<15} {:>7.2} s {:>5} AWS requests  {}",
            format!("{:?}", report.step),
            report.elapsed.as_secs_f64(),
            report.requests,
            report.note
        ));
        reports.push(report);
        if options.stop_after == Some(step) {
            say(&format!("stopped after {step:?}, as asked: what the run made is the sweeper's"));
            break;
        }
    }
    Ok(reports)
}

/// A change made by hand, as someone at the console would, that failed.
fn by_hand(what: &str, error: &dyn std::error::Error) -> Failure {
    fail(format!("out of band, {what}: {}", crate::chain(error)))
}

/// One change per kind made out of band, then the plan, which must show each.
async fn drift(suite: &mut Suite<'_>) -> Result<String, Failure> {
    let options = suite.options;
    let sdk = &options.sdk;
    let [base, app] = options.run.repositories();
    let ecr = aws_sdk_ecr::Client::new(sdk);
    ecr.put_image_tag_mutability()
        .repository_name(&base)
        .image_tag_mutability(aws_sdk_ecr::types::ImageTagMutability::Immutable)
        .send()
        .await
        .map_err(|e| by_hand("ECR tag mutability", &e))?;
    let policy = r#"{"rules":[{"rulePriority":1,"selection":{"tagStatus":"untagged","countType":"imageCountMoreThan","countNumber":9},"action":{"type":"expire"}}]}"#;
    ecr.put_lifecycle_policy()
        .repository_name(&app)
        .lifecycle_policy_text(policy)
        .send()
        .await
        .map_err(|e| by_hand("ECR lifecycle policy", &e))?;
    let s3 = aws_sdk_s3::Client::new(sdk);
    let bucket = options.run.bucket(suite.account());
    // A tag added by hand, the others kept (S3 replaces the whole set).
    let current = s3.get_bucket_tagging().bucket(&bucket).send().await.map_err(|e| by_hand("S3 bucket tags", &e))?;
    let added = aws_sdk_s3::types::Tag::builder().key("added-by-hand").value("yes").build();
    let tagging = aws_sdk_s3::types::Tagging::builder()
        .set_tag_set(Some(current.tag_set().to_vec()))
        .tag_set(added.map_err(|e| by_hand("a tag", &e))?)
        .build()
        .map_err(|e| by_hand("a tag set", &e))?;
    s3.put_bucket_tagging().bucket(&bucket).tagging(tagging).send().await.map_err(|e| by_hand("S3 bucket tags", &e))?;
    let rule = aws_sdk_s3::types::LifecycleRule::builder()
        .id("expire-after-30-days")
        .status(aws_sdk_s3::types::ExpirationStatus::Enabled)
        .filter(aws_sdk_s3::types::LifecycleRuleFilter::builder().prefix("").build())
        .expiration(aws_sdk_s3::types::LifecycleExpiration::builder().days(3).build())
        .build()
        .map_err(|e| by_hand("a lifecycle rule", &e))?;
    let lifecycle = aws_sdk_s3::types::BucketLifecycleConfiguration::builder()
        .rules(rule)
        .build()
        .map_err(|e| by_hand("a lifecycle configuration", &e))?;
    s3.put_bucket_lifecycle_configuration()
        .bucket(&bucket)
        .lifecycle_configuration(lifecycle)
        .send()
        .await
        .map_err(|e| by_hand("S3 lifecycle", &e))?;
    let iam = aws_sdk_iam::Client::new(sdk);
    let role = options.run.role();
    iam.update_role()
        .role_name(&role)
        .description("changed by hand")
        .send()
        .await
        .map_err(|e| by_hand("IAM role", &e))?;
    let widened =
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:ListAllMyBuckets","Resource":"*"}]}"#;
    iam.put_role_policy()
        .role_name(&role)
        .policy_name(options.run.inline_policy())
        .policy_document(widened)
        .send()
        .await
        .map_err(|e| by_hand("IAM inline policy", &e))?;
    let mut expected = vec![
        format!("ecr_repository.{base}"),
        format!("ecr_lifecycle_policy.{app}"),
        "s3_bucket.cache".to_owned(),
        "s3_bucket_lifecycle.cache".to_owned(),
        "iam_role.runner".to_owned(),
        "iam_role_policy.runner".to_owned(),
    ];
    if options.github_repository.is_some() {
        aws_sdk_codebuild::Client::new(sdk)
            .update_project()
            .name(options.run.project())
            .timeout_in_minutes(17)
            .send()
            .await
            .map_err(|e| by_hand("CodeBuild project", &e))?;
        expected.push("codebuild_project.runner".to_owned());
    }
    let changes = suite.changes(&[])?;
    let missed: Vec<&String> = expected.iter().filter(|a| !changes.contains(&format!("update {a}"))).collect();
    if !missed.is_empty() {
        return Err(fail(format!("drift not seen as an update of {missed:?}; the plan: {changes:?}")));
    }
    Ok(format!("{} out-of-band changes, each seen: {}", expected.len(), expected.join(", ")))
}

/// The CI roles' derived policies under IAM's own evaluation: two roles of the run, trusted by
/// the account, holding `reconcile policy plan` and `reconcile policy apply` as desired.toml
/// derives them, assumed (IAM's propagation waited out); the plan role plans, the apply role
/// puts a drift right, and the apply role's try at an IAM change is refused (by reconcile, which
/// cannot tell the role from a CI role, or by IAM's denial), never made. GitHub's OIDC trust
/// itself is not exercised (docs/live-testing.md). The roles are deleted at the end of the step
/// (the sweeper's otherwise: prefix and run tag).
async fn ci_roles(suite: &mut Suite<'_>) -> Result<String, Failure> {
    let options = suite.options;
    let account = suite.account().to_owned();
    let iam = aws_sdk_iam::Client::new(&options.sdk);
    let trust = serde_json::json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Principal": { "AWS": format!("arn:aws:iam::{account}:root") },
            "Action": "sts:AssumeRole",
        }],
    })
    .to_string();
    // Tagged as reconcile tags what a run makes, so the sweeper finds them.
    let tag = |key: &str, value: &str| {
        aws_sdk_iam::types::Tag::builder().key(key).value(value).build().map_err(|e| fail(format!("a tag: {e}")))
    };
    let tags = vec![
        tag(crate::names::RUN_TAG, options.run.id())?,
        tag(reconcile_core::mark::MARK_KEY, crate::names::DEPLOYMENT)?,
    ];
    let mut keys = Vec::new();
    for purpose in ["plan", "apply"] {
        let policy = suite.expect(&["policy", purpose, "--account", &account], 0)?.stdout;
        let name = options.run.ci_role(purpose);
        let made = iam
            .create_role()
            .role_name(&name)
            .assume_role_policy_document(&trust)
            .set_tags(Some(tags.clone()))
            .send()
            .await;
        made.map_err(|e| fail(format!("making the {purpose} role: {}", crate::chain(&e))))?;
        let put = iam.put_role_policy().role_name(&name).policy_name("reconcile").policy_document(policy).send().await;
        put.map_err(|e| fail(format!("putting the {purpose} role's policy: {}", crate::chain(&e))))?;
        keys.push(assume(&options.sdk, &format!("arn:aws:iam::{account}:role/{name}"), options.run.id()).await?);
    }
    let (plan, apply) = (&keys[0], &keys[1]);
    let result = async {
        suite.expect_as(Some(plan), &["plan", "--detailed-exitcode"], 0)?;
        // A drift the apply role puts right.
        let [base, _] = options.run.repositories();
        aws_sdk_ecr::Client::new(&options.sdk)
            .put_image_tag_mutability()
            .repository_name(&base)
            .image_tag_mutability(aws_sdk_ecr::types::ImageTagMutability::Immutable)
            .send()
            .await
            .map_err(|e| by_hand("ECR tag mutability", &e))?;
        suite.expect_as(Some(apply), &["apply", "--auto-approve"], 0)?;
        suite.expect_as(Some(plan), &["plan", "--detailed-exitcode"], 0)?;
        // An IAM change, which only an administrator makes.
        iam.update_role()
            .role_name(options.run.role())
            .description("changed by hand")
            .send()
            .await
            .map_err(|e| by_hand("the runner's role", &e))?;
        let tried = suite.reconcile_as(Some(apply), &["apply", "--auto-approve"])?;
        let now = iam.get_role().role_name(options.run.role()).send().await;
        let now = now.map_err(|e| fail(format!("reading the runner's role: {}", crate::chain(&e))))?;
        let description = now.role().and_then(|r| r.description()).unwrap_or_default().to_owned();
        let bounded = tried.code != 0 && description == "changed by hand";
        // The emulator does not evaluate IAM, and the apply role reads its own trust there.
        let emulated = options.sdk.endpoint_url().is_some();
        if !bounded && !emulated {
            return Err(fail(format!(
                "the apply role changed the runner's role (exit {}):\n{}\n{}",
                tried.code, tried.stdout, tried.stderr
            )));
        }
        suite.expect(&["apply", "--auto-approve"], 0)?;
        Ok(if bounded {
            format!("the plan role planned, the apply role applied a drift and was kept from IAM (exit {})", tried.code)
        } else {
            "the plan role planned, the apply role applied a drift; IAM's denial is not evaluated by the emulator"
                .to_owned()
        })
    }
    .await;
    for purpose in ["plan", "apply"] {
        let name = options.run.ci_role(purpose);
        let _ = iam.delete_role_policy().role_name(&name).policy_name("reconcile").send().await;
        let deleted = iam.delete_role().role_name(&name).send().await;
        deleted.map_err(|e| fail(format!("deleting the {purpose} role: {}", crate::chain(&e))))?;
    }
    result
}

/// A session of `role`, once IAM lets it be assumed: a role just made is not assumable everywhere
/// at once (its propagation, seconds to a minute).
async fn assume(sdk: &SdkConfig, role: &str, session: &str) -> Result<Keys, Failure> {
    let sts = aws_sdk_sts::Client::new(sdk);
    let mut last = String::new();
    for attempt in 0..24 {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
        match sts.assume_role().role_arn(role).role_session_name(format!("rcl-live-{session}")).send().await {
            Ok(answer) => {
                let credentials = answer.credentials().ok_or_else(|| fail("AssumeRole gave no keys".to_owned()))?;
                return Ok(Keys {
                    id: credentials.access_key_id().to_owned(),
                    secret: credentials.secret_access_key().to_owned(),
                    token: credentials.session_token().to_owned(),
                });
            }
            Err(error) => last = crate::chain(&error),
        }
    }
    Err(fail(format!("{role} could not be assumed within two minutes: {last}")))
}

/// A bake file naming one repository more: the plan refuses it, `declare` writes it into
/// desired.toml, apply makes it, and the plan is clean again.
fn bake_target(suite: &mut Suite<'_>) -> Result<(), Failure> {
    let options = suite.options;
    let registry = format!("{}.dkr.ecr.{}.amazonaws.com", suite.account(), options.region);
    let [_, app] = options.run.repositories();
    let bake = serde_json::json!({
        "group": { "default": { "targets": ["app", "added"] } },
        "target": {
            "app": { "context": ".", "tags": [format!("{registry}/{app}:nightly")] },
            "added": { "context": ".", "tags": [format!("{registry}/{}:nightly", options.run.added())] },
        },
    });
    let path = suite.dir.path().join("bake.json");
    std::fs::write(&path, bake.to_string()).map_err(|e| fail(format!("writing the bake file: {e}")))?;
    let path = path.to_str().ok_or_else(|| fail("a temporary path that is not UTF-8".to_owned()))?.to_owned();
    let refused = suite.expect(&["plan", "--bake", &path], 3)?;
    if !refused.stdout.contains(&options.run.added()) {
        return Err(fail(format!("the plan's refusal does not name the undeclared target:\n{}", refused.stdout)));
    }
    suite.expect(&["declare", "--bake", &path, "--account", &options.account], 0)?;
    suite.expect(&["apply", "--auto-approve", "--bake", &path], 0)?;
    suite.expect(&["plan", "--bake", &path, "--detailed-exitcode"], 0)?;
    Ok(())
}

/// A change by hand, then the drift check until CloudTrail names who made it (or the wait
/// ends: CloudTrail's event history lags by minutes, and an account may have none of it); the
/// drift is put right either way.
async fn attribution(suite: &mut Suite<'_>) -> Result<String, Failure> {
    let options = suite.options;
    let [base, _] = options.run.repositories();
    // Scan on push turned the other way by hand.
    let ecr = aws_sdk_ecr::Client::new(&options.sdk);
    let described = ecr
        .describe_repositories()
        .repository_names(&base)
        .send()
        .await
        .map_err(|e| by_hand("ECR scan on push", &e))?;
    let scans = described
        .repositories()
        .first()
        .and_then(|r| r.image_scanning_configuration())
        .is_some_and(|c| c.scan_on_push());
    let flipped = aws_sdk_ecr::types::ImageScanningConfiguration::builder().scan_on_push(!scans).build();
    let put = ecr.put_image_scanning_configuration().repository_name(&base).image_scanning_configuration(flipped);
    put.send().await.map_err(|e| by_hand("ECR scan on push", &e))?;
    let address = format!("ecr_repository.{base}");
    let started = Instant::now();
    let seen = loop {
        let ran = suite.reconcile(&["plan", "--attribute", "--since-days", "1", "--format", "json"])?;
        let plan: Value = serde_json::from_str(&ran.stdout).unwrap_or(Value::Null);
        let attribution = plan["resource_changes"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["address"] == address.as_str())
            .map(|c| c["attribution"].clone());
        let Some(attribution) = attribution else {
            return Err(fail(format!("the change made by hand to {address} is not in the plan:\n{}", ran.stdout)));
        };
        if attribution["status"] == "event" {
            break Some(format!(
                "{} by {} after {} s",
                attribution["event_name"].as_str().unwrap_or("?"),
                attribution["principal"].as_str().unwrap_or("?"),
                started.elapsed().as_secs()
            ));
        }
        let left = options.trail_wait.saturating_sub(started.elapsed());
        if left.is_zero() {
            break None;
        }
        tokio::time::sleep(left.min(Duration::from_secs(30))).await;
    };
    suite.expect(&["apply", "--auto-approve"], 0)?;
    Ok(match seen {
        Some(seen) => format!("attributed: {seen}"),
        None => format!(
            "not attributed within {} s (CloudTrail's lag, or no event history): not a failure, the drift was put right",
            options.trail_wait.as_secs()
        ),
    })
}

/// The sandbox role's policy: `reconcile policy administrator` for a run's desired.toml (the
/// bake target included, and the runner when `github_repository` is given), its run's names
/// made the prefix's wildcard, and what the suite and the sweeper read besides to find runs.
/// Derived by the binary under test, so it is what apply and destroy need, and no more.
pub fn sandbox_policy(
    reconcile: &Path,
    account: &str,
    region: &str,
    github_repository: Option<&str>,
) -> Result<Value, Failure> {
    let run = Run::of("0000000000").expect("a run id");
    let dir = tempfile::tempdir().map_err(|e| fail(format!("a working directory: {e}")))?;
    let desired = dir.path().join("desired.toml");
    std::fs::write(&desired, run.desired_with_added(region, github_repository))
        .map_err(|e| fail(format!("writing desired.toml: {e}")))?;
    let output = Command::new(reconcile)
        .arg("--desired")
        .arg(&desired)
        .args(["policy", "administrator", "--account", account])
        .output()
        .map_err(|error| fail(format!("{} could not be run: {error}", reconcile.display())))?;
    if !output.status.success() {
        return Err(fail(format!("`reconcile policy administrator`: {}", String::from_utf8_lossy(&output.stderr))));
    }
    let derived = String::from_utf8_lossy(&output.stdout).replace(&run.prefix(), &format!("{}*", crate::names::PREFIX));
    let mut policy: Value = serde_json::from_str(&derived).map_err(|e| fail(format!("the derived policy: {e}")))?;
    let arn = |service: &str, resource: &str| match service {
        "iam" => format!("arn:aws:iam::{account}:{resource}"),
        "s3" => format!("arn:aws:s3:::{resource}"),
        _ => format!("arn:aws:{service}:{region}:{account}:{resource}"),
    };
    let runs = format!("{}*", crate::names::PREFIX);
    let statements =
        policy["Statement"].as_array_mut().ok_or_else(|| fail("a policy without statements".to_owned()))?;
    // The CiRoles step's stand-ins for the CI roles: made, given their derived policy, assumed,
    // deleted.
    statements.push(serde_json::json!({
        "Sid": "TheStandInCiRoles",
        "Effect": "Allow",
        "Action": ["iam:CreateRole", "iam:TagRole", "iam:PutRolePolicy", "iam:DeleteRolePolicy", "iam:DeleteRole", "sts:AssumeRole"],
        "Resource": [arn("iam", &format!("role/{runs}-ci-*"))],
    }));
    statements.push(serde_json::json!({
        "Sid": "FindRuns",
        "Effect": "Allow",
        "Action": ["codebuild:ListProjects", "ecr:DescribeRepositories", "iam:ListPolicies", "iam:ListRoles", "s3:ListAllMyBuckets"],
        "Resource": ["*"],
    }));
    statements.push(serde_json::json!({
        "Sid": "ReadRunsTags",
        "Effect": "Allow",
        "Action": ["codebuild:BatchGetProjects", "ecr:ListTagsForResource", "iam:ListPolicyTags", "iam:ListRoleTags", "s3:GetBucketTagging"],
        "Resource": [
            arn("codebuild", &format!("project/{runs}")),
            arn("ecr", &format!("repository/{runs}")),
            arn("iam", &format!("policy/{runs}")),
            arn("iam", &format!("role/{runs}")),
            arn("s3", &runs),
        ],
    }));
    Ok(policy)
}

/// Where the binary is when not given: next to this one (`cargo build` puts both there).
pub fn default_reconcile() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("reconcile")))
        .filter(|path| path.exists())
        .unwrap_or_else(|| Path::new("reconcile").to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_count_is_the_largest_the_log_gave() {
        let log = "INFO plan: 12 AWS requests: ecr 10, sts 2\nINFO plan and apply: 31 AWS requests (1 of them retries): ecr 20\n";
        assert_eq!(requests_in(log), 31);
        assert_eq!(requests_in("nothing counted"), 0);
    }
}
