//! The subcommands, one file each: parse what the command line gave, open a session, print
//! what it returns, pick the exit code. What a run *is* lives in `crate::session`.

mod apply;
mod comment;
mod cost;
mod declare;
mod docs;
mod drift;
pub mod explain;
mod head;
mod import;
mod outputs;
mod plan;
mod policy;
mod show;
mod usage;
mod validate;

use std::path::PathBuf;

use reconcile_core::engine::WhenUnreadable;

use crate::args::{Args, ColorChoice, Command};
use crate::aws::{Aws, Limits, Purpose};
use crate::error::CliError;
use crate::github::GithubSide;
use crate::session::{Inputs, Load, Session};

/// What every subcommand is given besides its own arguments: the global flags.
pub struct Context {
    /// `--desired`.
    pub desired: PathBuf,
    pub color: ColorChoice,
    /// `--parallelism` and `--throttle-deadline`.
    pub limits: Limits,
}

impl Context {
    /// desired.toml (and the bake file, as `load` says), read and checked before any AWS call.
    fn inputs(&self, load: Load<'_>) -> Result<Inputs, CliError> {
        Inputs::load(&self.desired, load)
    }

    /// A session against AWS in desired.toml's region, with the GitHub side when it is declared.
    async fn session(&self, inputs: Inputs, purpose: Purpose) -> Result<Session<Aws>, CliError> {
        let aws = self.aws(&inputs, purpose).await;
        let github = GithubSide::connect(&inputs.desired)?;
        let when_unreadable = match purpose {
            Purpose::Apply => WhenUnreadable::PlanTheRest,
            Purpose::Read | Purpose::PutBack => WhenUnreadable::Fail,
        };
        Ok(Session::new(aws, inputs, github, when_unreadable))
    }

    /// AWS in desired.toml's region, for a command that needs no session.
    async fn aws(&self, inputs: &Inputs, purpose: Purpose) -> Aws {
        Aws::load(&inputs.desired.region, purpose, self.limits).await
    }
}

pub async fn run(args: Args) -> Result<u8, CliError> {
    let Args { desired, color, parallelism, throttle_deadline, command, .. } = args;
    let limits = Limits { parallelism, throttle_deadline: std::time::Duration::from_secs(throttle_deadline) };
    let context = Context { desired, color, limits };
    let desired = &context.desired;
    match command {
        Command::Schema => docs::schema(),
        Command::Explain { code } => explain::run(code.as_deref()),
        Command::Completions { shell } => docs::completions(shell),
        Command::Man { dir } => docs::man(dir.as_deref()),
        Command::Validate { bake } => validate::run(desired, bake.bake.as_deref()),
        Command::Plan(args) => plan::exec(args, &context).await,
        Command::Show { plan_file, format } => show::run(&plan_file, format),
        Command::Apply(args) => apply::exec(args, &context).await,
        Command::Destroy(args) => apply::exec_destroy(args, &context).await,
        Command::Drift(args) => drift::exec(args, &context).await,
        Command::Head { head_sha, head_repository, out, base } => {
            head::run(&head::Request { head_sha, head_repository, out, base }).await
        }
        Command::Comment(args) => comment::exec(args).await,
        Command::Unlock { force } => {
            let inputs = context.inputs(Load::default())?;
            crate::lock::unlock(&context.aws(&inputs, Purpose::Apply).await, &inputs.desired, force).await
        }
        Command::Outputs { format } => {
            let inputs = context.inputs(Load::default())?;
            outputs::run(&context.aws(&inputs, Purpose::Read).await, &inputs.desired, format).await
        }
        Command::Declare { bake, check, account } => {
            declare::run(desired, bake.bake.as_deref(), check, account.as_deref())
        }
        Command::Import { check, generate, patterns } => {
            let session = context.session(context.inputs(Load::default())?, Purpose::Read).await?;
            match generate {
                true => import::generate(&session, desired, &patterns, check).await,
                false => import::run(&session, desired, check).await,
            }
        }
        Command::Policy { role, key, account } => {
            let inputs = context.inputs(Load::default())?;
            policy::run(&inputs.desired, role, key.as_deref(), account.as_deref(), limits).await
        }
        Command::Cost { days, format, verify } => {
            cost::run(&context.inputs(Load::default())?.desired, format, days, verify, limits).await
        }
        Command::Usage { format, since, shown } => {
            usage::run(&context.inputs(Load::default())?, format, &since, shown.public(), limits).await
        }
    }
}
