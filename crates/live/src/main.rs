//! `reconcile-live`: the live acceptance suite (`run`) and its sweeper (`sweep`), against the
//! account the standard AWS chain reaches. Usually run through `scripts/live-test.sh`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use reconcile_live::Failure;
use reconcile_live::names::Run;
use reconcile_live::suite::{self, Options, Step};
use reconcile_live::sweep::{self, Filter};

#[derive(Debug, Parser)]
#[command(name = "reconcile-live")]
struct Args {
    /// The region to run in.
    #[arg(long, env = "AWS_REGION")]
    region: String,
    /// The sandbox account's id: the credentials must be this account's, or nothing is done.
    #[arg(long, env = "RECONCILE_LIVE_ACCOUNT")]
    account: Option<String>,
    /// Exit 0 when the suite cannot run (no credentials, no sandbox account given), saying so:
    /// where the suite is optional (a fork, a repository without a sandbox).
    #[arg(long, global = true)]
    skip_without_credentials: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the suite: plan, apply, plan, drift per kind, a saved plan, a bake target, usage and
    /// cost, attribution, destroy, and nothing left.
    Run {
        /// The `reconcile` binary (default: the one next to this one).
        #[arg(long)]
        reconcile: Option<PathBuf>,
        /// A GitHub repository CodeBuild's credential in the account reaches: declares the
        /// runner project and its webhook (which makes a hook on that repository).
        #[arg(long, env = "RECONCILE_LIVE_GITHUB_REPOSITORY")]
        github_repository: Option<String>,
        /// How long to wait for CloudTrail's event history to name a drift's author, in seconds.
        #[arg(long, default_value_t = 900)]
        trail_wait: u64,
        /// Stop after this step, leaving what the run made (for the sweeper).
        #[arg(long, value_enum)]
        stop_after: Option<Step>,
    },
    /// Print the sandbox role's policy: what apply and destroy of a run need (`reconcile policy
    /// administrator`), for every run's names, and what the sweeper reads to find runs.
    Policy {
        #[arg(long)]
        reconcile: Option<PathBuf>,
        #[arg(long, env = "RECONCILE_LIVE_GITHUB_REPOSITORY")]
        github_repository: Option<String>,
    },
    /// Find what runs left (their prefix and tag) and, with --delete, delete it.
    Sweep {
        /// Only runs that started at least this many minutes ago.
        #[arg(long, default_value_t = 180)]
        older_than_minutes: u64,
        /// Delete what is found; without it, only list it.
        #[arg(long)]
        delete: bool,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let sdk = aws_config::from_env().region(aws_config::Region::new(args.region.clone())).load().await;
    let mut say = |line: &str| println!("{line}");
    let Some(account) = args.account else {
        let failure = Failure::NotRun("no sandbox account given (--account, RECONCILE_LIVE_ACCOUNT)".to_owned());
        return exit(&Err(failure), args.skip_without_credentials);
    };
    let result = match args.command {
        Command::Run { reconcile, github_repository, trail_wait, stop_after } => {
            let options = Options {
                reconcile: reconcile.unwrap_or_else(suite::default_reconcile),
                sdk,
                env: None,
                account,
                region: args.region,
                run: Run::start(),
                github_repository,
                trail_wait: Duration::from_secs(trail_wait),
                stop_after,
            };
            let run = options.run.id().to_owned();
            suite::run(&options, &mut say).await.map(|_| ()).map_err(|failure| match failure {
                Failure::Failed(why) => Failure::Failed(format!(
                    "{why}\nWhat run {run} made is left: `reconcile-live sweep --older-than-minutes 0 --delete` deletes it."
                )),
                not_run => not_run,
            })
        }
        Command::Policy { reconcile, github_repository } => {
            let reconcile = reconcile.unwrap_or_else(suite::default_reconcile);
            suite::sandbox_policy(&reconcile, &account, &args.region, github_repository.as_deref()).map(|policy| {
                say(&serde_json::to_string_pretty(&policy).unwrap_or_default());
            })
        }
        Command::Sweep { older_than_minutes, delete } => {
            let older_than = Duration::from_secs(older_than_minutes * 60);
            let filter = Filter { account: account.clone(), run: None, older_than };
            match sweep::find(&sdk, &filter).await {
                Err(failure) => Err(failure),
                Ok(found) if !delete => {
                    found.iter().for_each(|leftover| say(&format!("would delete {leftover}")));
                    say(&format!("{} leftover(s); a dry run: --delete deletes them", found.len()));
                    Ok(())
                }
                Ok(found) => sweep::delete(&sdk, &account, &found, &mut say).await,
            }
        }
    };
    exit(&result, args.skip_without_credentials)
}

fn exit(result: &Result<(), Failure>, skip_allowed: bool) -> ExitCode {
    let (code, message) = reconcile_live::outcome(result, skip_allowed);
    if let Some(message) = message {
        eprintln!("reconcile-live: {message}");
    }
    ExitCode::from(code)
}
