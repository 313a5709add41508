//! The live acceptance suite (crates/live, `scripts/live-test.sh`) run against the emulator, as
//! it runs against a sandbox account: end to end, then nothing of the run left; a run stopped
//! halfway cleaned by the sweeper; and no run at all without credentials or the right account.

use std::time::Duration;

use reconcile_live::names::Run;
use reconcile_live::suite::{self, Options, Step};
use reconcile_live::sweep::{self, Filter};
use reconcile_live::{Failure, outcome};
use reconcile_test_support::{TestAccount, emulator};

use crate::permissions::{Watch, derived_policy, not_allowed};
use crate::support::desired_file;

fn options(account: &TestAccount, run: Run, stop_after: Option<Step>) -> Options {
    Options {
        reconcile: env!("CARGO_BIN_EXE_reconcile").into(),
        sdk: account.sdk_config(),
        env: Some(account.env().into_iter().map(|(name, value)| (name.to_owned(), value)).collect()),
        account: account.id.clone(),
        region: "us-east-1".to_owned(),
        run,
        // The emulator's CodeBuild has the account's GitHub credential: the runner is declared.
        github_repository: Some("https://github.com/ROCm/rocm-bake-sandbox".to_owned()),
        trail_wait: Duration::ZERO,
        stop_after,
    }
}

/// Every resource of the account whose name holds `prefix`, read as an administrator, apart
/// from the suite's own sweeper.
async fn named(account: &TestAccount, prefix: &str) -> Vec<String> {
    let config = account.sdk_config();
    let mut found = Vec::new();
    let repositories = aws_sdk_ecr::Client::new(&config).describe_repositories().send().await.unwrap();
    found.extend(repositories.repositories().iter().filter_map(|r| r.repository_name().map(str::to_owned)));
    let buckets = aws_sdk_s3::Client::new(&config).list_buckets().send().await.unwrap();
    found.extend(buckets.buckets().iter().filter_map(|b| b.name().map(str::to_owned)));
    let iam = aws_sdk_iam::Client::new(&config);
    found.extend(iam.list_roles().send().await.unwrap().roles().iter().map(|r| r.role_name().to_owned()));
    let policies = iam.list_policies().scope(aws_sdk_iam::types::PolicyScopeType::Local).send().await.unwrap();
    found.extend(policies.policies().iter().filter_map(|p| p.policy_name().map(str::to_owned)));
    found.extend(aws_sdk_codebuild::Client::new(&config).list_projects().send().await.unwrap().projects().to_vec());
    found.retain(|name| name.contains(prefix));
    found
}

#[tokio::test]
async fn the_live_suite_passes_end_to_end_against_the_emulator_and_leaves_nothing() {
    let account = emulator().new_account().await;
    let run = Run::start();
    let prefix = run.prefix();
    let options = options(&account, run.clone(), None);
    let watch = Watch::start(&account.env());
    let mut lines = Vec::new();
    let reports = suite::run(&options, &mut |line| lines.push(line.to_owned()))
        .await
        .unwrap_or_else(|failure| panic!("{failure}\n{}", lines.join("\n")));
    // What a maintainer reads in the scheduled job's log (shown with --nocapture).
    println!("{}", lines.join("\n"));
    let steps: Vec<Step> = reports.iter().map(|r| r.step).collect();
    assert_eq!(steps.len(), 11, "{lines:#?}");
    assert_eq!(steps.last(), Some(&Step::LeftBehind));
    // Each step that runs reconcile says what it cost; the CI roles' says why it did not run.
    for report in &reports {
        match report.step {
            Step::LeftBehind => assert_eq!(report.requests, 0, "{report:?}"),
            _ => assert!(report.requests > 0, "{report:?}"),
        }
    }
    let ci = reports.iter().find(|r| r.step == Step::CiRoles).unwrap();
    assert!(ci.note.starts_with("the plan role planned, the apply role applied a drift"), "{ci:?}");
    let drift = reports.iter().find(|r| r.step == Step::Drift).unwrap();
    assert!(drift.note.starts_with("7 out-of-band changes, each seen"), "{drift:?}");
    assert!(lines.iter().any(|l| l.contains("AWS requests")), "{lines:#?}");
    assert_eq!(named(&account, &prefix).await, Vec::<String>::new(), "{lines:#?}");
    // Nor anything else: the account was empty, and the run's tag is on nothing either.
    assert_eq!(named(&account, "").await, Vec::<String>::new(), "{lines:#?}");

    // Every write the binary made is one the administrator policy derived for the run's
    // desired.toml allows (`reconcile policy administrator`: apply and destroy, IAM included)...
    let github = options.github_repository.as_deref();
    let desired = desired_file(&run.desired_with_added("us-east-1", github));
    let administrator = derived_policy("administrator", &desired.path, None, &account.id);
    let refused = not_allowed(&watch.writes(), &administrator);
    assert!(refused.is_empty(), "{refused:#?}\n{administrator:#}");
    // ...and every write of the run, the suite's own out-of-band changes included, one the
    // sandbox role's policy allows (docs/live-testing.md), for any run's names.
    let sandbox = suite::sandbox_policy(&options.reconcile, &account.id, "us-east-1", github).unwrap();
    let refused = not_allowed(&watch.all_writes(), &sandbox);
    assert!(refused.is_empty(), "{refused:#?}\n{sandbox:#}");
    assert!(!sandbox.to_string().contains(run.id()), "{sandbox:#}");
}

#[tokio::test]
async fn a_run_stopped_halfway_is_left_to_the_sweeper_which_deletes_it_and_nothing_else() {
    let account = emulator().new_account().await;
    // A repository named like a run's whose run tag says it is not that run's.
    let lookalike = "rcl-live-0000000000/not-a-run";
    let tag = aws_sdk_ecr::types::Tag::builder().key(reconcile_live::names::RUN_TAG).value("someone-else").build();
    aws_sdk_ecr::Client::new(&account.sdk_config())
        .create_repository()
        .repository_name(lookalike)
        .tags(tag.unwrap())
        .send()
        .await
        .unwrap();
    let run = Run::start();
    let prefix = run.prefix();
    let mut lines = Vec::new();
    suite::run(&options(&account, run.clone(), Some(Step::Apply)), &mut |line| lines.push(line.to_owned()))
        .await
        .unwrap_or_else(|failure| panic!("{failure}\n{}", lines.join("\n")));
    let left = named(&account, &prefix).await;
    assert!(left.len() >= 6, "{left:?}");

    let sdk = account.sdk_config();
    let watch = Watch::start(&account.env());
    // Credentials of another account than the sandbox's: nothing found, nothing deleted, even
    // what matches by name, run tag and mark.
    let elsewhere = Filter { account: "999999999999".to_owned(), run: None, older_than: Duration::ZERO };
    let refused = sweep::find(&sdk, &elsewhere).await.unwrap_err().to_string();
    assert!(refused.contains("not the sandbox account 999999999999"), "{refused}");
    let all = Filter { account: account.id.clone(), run: None, older_than: Duration::ZERO };
    let everything = sweep::find(&sdk, &all).await.unwrap();
    let refused = sweep::delete(&sdk, "999999999999", &everything, &mut |_| {}).await.unwrap_err().to_string();
    assert!(refused.contains("nothing done"), "{refused}");
    assert_eq!(named(&account, &prefix).await, left, "nothing deleted");
    // A run still young is not swept by age.
    let young =
        sweep::find(&sdk, &Filter { account: account.id.clone(), run: None, older_than: Duration::from_secs(3600) })
            .await
            .unwrap();
    assert_eq!(young, Vec::new());
    let found = sweep::find(&sdk, &Filter { account: account.id.clone(), run: None, older_than: Duration::ZERO })
        .await
        .unwrap();
    let kinds: Vec<sweep::Kind> = found.iter().map(|l| l.kind).collect();
    assert_eq!(
        kinds,
        [
            sweep::Kind::Project,
            sweep::Kind::Role,
            sweep::Kind::Policy,
            sweep::Kind::Repository,
            sweep::Kind::Repository,
            sweep::Kind::Bucket
        ],
        "{found:#?}"
    );
    assert!(found.iter().all(|l| l.run == run.id()), "{found:#?}");
    // Finding is a dry run: nothing deleted.
    assert_eq!(named(&account, &prefix).await, left);

    let mut deleted = Vec::new();
    sweep::delete(&sdk, &account.id, &found, &mut |line| deleted.push(line.to_owned())).await.unwrap();
    assert_eq!(deleted.len(), found.len(), "{deleted:#?}");
    assert_eq!(named(&account, &prefix).await, Vec::<String>::new());
    assert_eq!(named(&account, "rcl-live-").await, [lookalike], "only the run's went");
    // The sweeper's deletes, too, are the sandbox role's.
    let sandbox = suite::sandbox_policy(
        env!("CARGO_BIN_EXE_reconcile").as_ref(),
        &account.id,
        "us-east-1",
        Some("https://github.com/ROCm/rocm-bake-sandbox"),
    )
    .unwrap();
    let refused = not_allowed(&watch.all_writes(), &sandbox);
    assert!(refused.is_empty(), "{refused:#?}\n{sandbox:#}");
    // Again: nothing to find, nothing to do.
    assert_eq!(
        sweep::find(&sdk, &Filter { account: account.id.clone(), run: None, older_than: Duration::ZERO })
            .await
            .unwrap(),
        Vec::new()
    );
}

#[tokio::test]
async fn a_run_killed_in_the_middle_of_its_apply_is_swept_to_nothing() {
    let account = emulator().new_account().await;
    let run = Run::start();
    let desired = desired_file(&run.desired("us-east-1", Some("https://github.com/ROCm/rocm-bake-sandbox")));
    let writes = || account.requests().iter().filter(|r| r.is_write()).count();
    let before = writes();
    let mut apply = crate::support::command(Some(&desired.path))
        .args(["apply", "--auto-approve"])
        .envs(account.env())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed outright (SIGKILL: no lock released, nothing finished) after its third write.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while writes() < before + 3 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    apply.kill().unwrap();
    let status = apply.wait().unwrap();
    assert_eq!(status.code(), None, "killed, not finished");
    let left = named(&account, &run.prefix()).await;
    assert!(!left.is_empty(), "the killed apply made something");

    let sdk = account.sdk_config();
    let found =
        sweep::find(&sdk, &Filter { account: account.id.clone(), run: Some(run.clone()), older_than: Duration::ZERO })
            .await
            .unwrap();
    assert_eq!(found.len(), left.len(), "{found:#?} {left:#?}");
    sweep::delete(&sdk, &account.id, &found, &mut |_| {}).await.unwrap();
    assert_eq!(named(&account, "").await, Vec::<String>::new());
}

/// docs/live-sandbox-policy.json is what `reconcile-live policy` derives for its account.
#[test]
fn the_documented_sandbox_policy_is_the_derived_one() {
    let derived =
        suite::sandbox_policy(env!("CARGO_BIN_EXE_reconcile").as_ref(), "123456789012", "us-west-2", None).unwrap();
    let path = reconcile_test_support::workspace_root().join("docs/live-sandbox-policy.json");
    let documented: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(documented, derived, "regenerate it: reconcile-live --region us-west-2 --account 123456789012 policy");
}

#[tokio::test]
async fn without_credentials_or_with_another_accounts_the_suite_does_nothing() {
    let account = emulator().new_account().await;
    let mut other = options(&account, Run::start(), None);
    other.account = "000000000000".to_owned();
    let refused = suite::run(&other, &mut |_| {}).await.unwrap_err();
    assert!(refused.to_string().contains("not the sandbox account 000000000000 it was given: nothing done"));
    assert_eq!(named(&account, "rcl-live-").await, Vec::<String>::new());

    let mut anonymous = options(&account, Run::start(), None);
    anonymous.sdk = account
        .sdk_config()
        .into_builder()
        .credentials_provider(aws_credential_types::provider::SharedCredentialsProvider::new(NoCredentials))
        .build();
    let not_run = suite::run(&anonymous, &mut |_| {}).await.map(|_| ());
    assert!(matches!(not_run, Err(Failure::NotRun(_))), "{not_run:?}");
    // It says so, and exits 0 only when asked to skip.
    let (code, said) = outcome(&not_run, false);
    assert_eq!(code, 1);
    assert!(said.unwrap().starts_with("the live suite did not run: no AWS credentials"));
    assert_eq!(outcome(&not_run, true).0, 0);
    assert_eq!(outcome(&Err(Failure::Failed("x".to_owned())), true).0, 1, "a failure is never skipped");
}

/// A credentials provider with none to give, as the chain is on a machine with no AWS setup.
#[derive(Debug)]
struct NoCredentials;

impl aws_credential_types::provider::ProvideCredentials for NoCredentials {
    fn provide_credentials<'a>(&'a self) -> aws_credential_types::provider::future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        aws_credential_types::provider::future::ProvideCredentials::ready(Err(
            aws_credential_types::provider::error::CredentialsError::not_loaded("no credentials in the chain"),
        ))
    }
}
