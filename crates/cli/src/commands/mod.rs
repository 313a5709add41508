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

use reconcile_core::engine::WhenUnreadable;

use crate::args::{Args, Command};
use crate::aws::{Aws, Purpose};
use crate::error::CliError;
use crate::github::GithubSide;
use crate::session::{Inputs, Load, PlanFrom, Session};

pub async fn run(args: Args) -> Result<u8, CliError> {
    let Args { desired, color, parallelism, throttle_deadline, command, .. } = args;
    let limits =
        crate::aws::Limits { parallelism, throttle_deadline: std::time::Duration::from_secs(throttle_deadline) };
    match command {
        Command::Schema => docs::schema(),
        Command::Explain { code } => explain::run(code.as_deref()),
        Command::Completions { shell } => docs::completions(shell),
        Command::Man { dir } => docs::man(dir.as_deref()),
        Command::Validate { bake } => validate::run(&desired, bake.bake.as_deref()),
        Command::Plan {
            format,
            detailed_exitcode,
            out,
            attribute,
            public,
            private,
            base,
            destroy,
            since,
            bake,
            prune,
        } => {
            let load = Load { bake: bake.bake.as_deref(), prune: prune.prune, destroy, ..Load::default() };
            let inputs = Inputs::load(&desired, load)?;
            let public = crate::args::public_output(public || base.is_some(), private);
            let audience = plan::Audience::from(public, base.as_deref())?;
            let session = session(inputs, Purpose::Read, limits).await?;
            let attribute = attribute.then_some(since.since_days);
            let request = plan::Request { format, detailed_exitcode, out: out.as_deref(), attribute, audience };
            plan::run(&session, color, request).await
        }
        Command::Show { plan_file, format } => show::run(&plan_file, format),
        Command::Apply {
            plan_file,
            auto_approve,
            allow_delete,
            format,
            force_delete_images,
            lock_timeout,
            shown,
            bake,
            prune,
        } => {
            // Unattended apply without --auto-approve is refused before anything else happens;
            // a saved plan was approved when it was reviewed.
            apply::can_ask("apply", auto_approve, plan_file.is_some())?;
            let load = Load { bake: bake.bake.as_deref(), prune: prune.prune, force_delete_images, ..Load::default() };
            let inputs = Inputs::load(&desired, load)?;
            let session = session(inputs, Purpose::Apply, limits).await?;
            let request = crate::session::ApplyRequest {
                plan: plan_file.as_deref().map_or(PlanFrom::Fresh, PlanFrom::Saved),
                auto_approve,
                allow_delete,
                lock_timeout: std::time::Duration::from_secs(lock_timeout),
                shown_in_public: shown.public(),
            };
            apply::run(&session, color, format, request, false).await
        }
        Command::Destroy { plan_file, auto_approve, format, force_delete_images, empty_buckets, lock_timeout } => {
            apply::can_ask("destroy", auto_approve, plan_file.is_some())?;
            let load = Load { force_delete_images, destroy: true, empty_buckets, ..Load::default() };
            let inputs = Inputs::load(&desired, load)?;
            let session = session(inputs, Purpose::Apply, limits).await?;
            let request = crate::session::ApplyRequest {
                plan: plan_file.as_deref().map_or(PlanFrom::Fresh, PlanFrom::Saved),
                auto_approve,
                // The command is the flag: it deletes, and nothing else.
                allow_delete: true,
                lock_timeout: std::time::Duration::from_secs(lock_timeout),
                // What it deletes is what desired.toml declares: shown whole.
                shown_in_public: false,
            };
            apply::run(&session, color, format, request, true).await
        }
        Command::Drift { format, issue, shown, since, bake, prune } => {
            let inputs =
                Inputs::load(&desired, Load { bake: bake.bake.as_deref(), prune: prune.prune, ..Load::default() })?;
            // The issue's repository and token are known before any AWS call.
            let issue = match issue {
                Some(label) => {
                    let api = crate::github::conversation(&inputs.desired, None, crate::github::ISSUE_TOKENS)?;
                    Some((api, label, crate::github::issue_key()?))
                }
                None => None,
            };
            let session = session(inputs, Purpose::Read, limits).await?;
            drift::run(&session, color, format, since.since_days, issue, shown.public()).await
        }
        Command::Head { head_sha, head_repository, out, base } => {
            head::run(&head::Request { head_sha, head_repository, out, base }).await
        }
        Command::Comment {
            head_sha,
            head_repository,
            body,
            plan_exit_code,
            check_conclusion,
            repository,
            checks,
            unchanged,
        } => {
            let plan = match (unchanged, body, plan_exit_code, check_conclusion) {
                (false, Some(body), Some(plan_exit_code), Some(check_conclusion)) => {
                    Some(comment::Planned { body, plan_exit_code, check_conclusion, checks })
                }
                _ => None,
            };
            comment::run(comment::Request { head_sha, head_repository, plan, repository }).await
        }
        Command::Unlock { force } => {
            let inputs = Inputs::load(&desired, Load::default())?;
            let aws = Aws::load(&inputs.desired.region, Purpose::Apply, limits).await;
            crate::lock::unlock(&aws, &inputs.desired, force).await
        }
        Command::Outputs { format } => {
            let inputs = Inputs::load(&desired, Load::default())?;
            outputs::run(&Aws::load(&inputs.desired.region, Purpose::Read, limits).await, &inputs.desired, format).await
        }
        Command::Declare { bake, check, account } => {
            declare::run(&desired, bake.bake.as_deref(), check, account.as_deref())
        }
        Command::Import { check, generate, patterns } => {
            let inputs = Inputs::load(&desired, Load::default())?;
            let session = session(inputs, Purpose::Read, limits).await?;
            match generate {
                true => import::generate(&session, &desired, &patterns, check).await,
                false => import::run(&session, &desired, check).await,
            }
        }
        Command::Policy { role, key, account } => {
            let inputs = Inputs::load(&desired, Load::default())?;
            policy::run(&inputs.desired, role, key.as_deref(), account.as_deref(), limits).await
        }
        Command::Cost { days, format, verify } => {
            let inputs = Inputs::load(&desired, Load::default())?;
            cost::run(&inputs.desired, format, days, verify, limits).await
        }
        Command::Usage { format, since, shown } => {
            let inputs = Inputs::load(&desired, Load::default())?;
            usage::run(&inputs, format, &since, shown.public(), limits).await
        }
    }
}

/// A session against AWS in desired.toml's region, with the GitHub side when it is declared.
async fn session(inputs: Inputs, purpose: Purpose, limits: crate::aws::Limits) -> Result<Session<Aws>, CliError> {
    let aws = Aws::load(&inputs.desired.region, purpose, limits).await;
    let github = GithubSide::connect(&inputs.desired)?;
    let when_unreadable = match purpose {
        Purpose::Apply => WhenUnreadable::PlanTheRest,
        Purpose::Read => WhenUnreadable::Fail,
    };
    Ok(Session::new(aws, inputs, github, when_unreadable))
}
