//! `reconcile drift`: the scheduled check. The plan and what the account holds undeclared, then
//! what the registry holds and costs; exit 2 when the account differs from desired.toml.

use std::collections::BTreeSet;
use std::io::IsTerminal;

use reconcile_core::audience;
use reconcile_core::markdown::GITHUB_COMMENT_LIMIT;
use reconcile_core::{Address, Plan, json, render};
use reconcile_ecr::usage::{self, Usage};

use crate::args::{ColorChoice, Format};
use crate::aws::Aws;
use crate::error::CliError;
use crate::exit;
use crate::output::step_summary;
use crate::output::{Output, color_on, out};
use crate::session::{Planned, Session};

/// The drift issue to keep true, when asked: the repository's API and the issue's label.
pub type Issue = (reconcile_github::Api, String);

pub async fn run(
    session: &Session<Aws>,
    color: ColorChoice,
    format: Format,
    since_days: u32,
    issue: Option<Issue>,
) -> Result<u8, CliError> {
    // Who made each difference and what the registry holds only inform: the exit code is the
    // plan's.
    let drift = session.drift(since_days).await?;
    let public = Public::of(session, &drift.planned);
    let (plan, registry) = (&drift.planned.plan, &drift.registry);
    let output = Output::new(color_on(color, std::io::stdout().is_terminal()));
    print(&output, plan, &public, registry, format)?;
    if let Some((api, label)) = issue {
        keep_issue(api, &label, &public, registry).await?;
    }
    Ok(if plan.account_differs() { exit::CHANGES } else { exit::OK })
}

/// What the drift issue and the job summary, both public, say: every declared resource, and of
/// what desired.toml does not declare only the repositories the nightly's own bake file names
/// (the seeds' incident: two cache repositories it pushed to, without a lifecycle policy, held
/// 347 GB); the rest counted, and named in the job log (the text and JSON formats).
struct Public {
    plan: Plan,
    /// The repositories it may name: declared, or named by the bake file.
    named: BTreeSet<String>,
}

impl Public {
    fn of(session: &Session<Aws>, planned: &Planned) -> Public {
        let inputs = session.inputs();
        let account = &planned.account;
        let nightly: BTreeSet<String> =
            inputs.bake.iter().flat_map(|bake| bake.repositories(&account.region, &account.id)).collect();
        let public = audience::Public {
            // desired.toml is the default branch's: everything it declares is reconcile's.
            base: Some(planned.resources.values().map(|r| (r.address.clone(), r.remote_name.clone())).collect()),
            named: nightly
                .iter()
                .flat_map(|name| {
                    [Address::new(reconcile_ecr::REPOSITORY, name), Address::new(reconcile_ecr::LIFECYCLE_POLICY, name)]
                })
                .collect(),
            review: false,
            deployment: Some(inputs.desired.deployment.clone()),
        };
        let mut named = nightly;
        named.extend(reconcile_ecr::declared(&inputs.desired).repositories.iter().map(|r| r.name.clone()));
        Public { plan: audience::publish(planned.plan.clone(), &planned.resources, &public), named }
    }
}

/// Keeps the drift issue true to this check: the report and its differences when the account
/// differs, none when it does not. Says what it did on stderr.
async fn keep_issue(
    api: reconcile_github::Api,
    label: &str,
    public: &Public,
    registry: &Usage,
) -> Result<(), CliError> {
    use reconcile_github::conversation::{Conversation, Drift, Outcome};
    let failed = |error: reconcile_core::ReconcileError| CliError::Other(anyhow::Error::new(error));
    let plan = &public.plan;
    let drift = plan.account_differs().then(|| {
        let items = plan.differences();
        let report = comment(public, registry, GITHUB_COMMENT_LIMIT.saturating_sub(Drift::overhead(&items)));
        Drift { items, report: crate::output::redacted(&report) }
    });
    let conversation = Conversation::connect(api).await.map_err(failed)?;
    let outcome = conversation.keep_drift_issue(label, drift.as_ref()).await.map_err(failed)?;
    let said = match outcome {
        Outcome::Created(number) => format!("opened drift issue #{number}"),
        Outcome::Updated(number) => format!("updated drift issue #{number}: the drift changed"),
        Outcome::Unchanged(number) => format!("left drift issue #{number} as it was: the same drift"),
        Outcome::Closed(number) => format!("closed drift issue #{number}: the account matches desired.toml"),
        Outcome::Reopened(number) => format!("reopened drift issue #{number}: the account drifted again"),
        Outcome::Acknowledged(number) => format!(
            "left drift issue #{number} closed: a maintainer closed it as not planned, and the drift is what they \
             acknowledged"
        ),
        Outcome::Duplicated(number) => format!(
            "another drift check opened drift issue #{number} at the same time: the one this check opened is closed \
             as its duplicate"
        ),
        Outcome::Nothing => "no drift, and no open drift issue: nothing to say".to_owned(),
    };
    crate::output::err(&said);
    Ok(())
}

/// The drift comment of at most `limit` characters: the public plan, then the registry's summary.
fn comment(public: &Public, registry: &Usage, limit: usize) -> String {
    // The registry's summary is bounded; the plan gets what is left of the limit.
    let summary = usage::summary_text_naming(registry, true, &|name| public.named.contains(name));
    let budget = limit.saturating_sub(summary.len() + 1);
    format!("{}\n{summary}", reconcile_core::markdown::titled(&public.plan, budget, "drift"))
}

/// The drift check's output: the plan, then what the registry holds and costs; in Markdown (the
/// job summary, public) as the issue says it.
fn print(output: &Output, plan: &Plan, public: &Public, registry: &Usage, format: Format) -> Result<(), CliError> {
    match format {
        Format::Text => {
            out(&output.paint(&render::styled_text(plan)))?;
            out(&format!("\n{}", usage::summary_text(registry, false)))?;
        }
        Format::Json => {
            let mut value = render::json(plan);
            value["usage"] = usage::summary(registry);
            out(&format!("{}\n", json::to_pretty(&value)))?;
        }
        Format::Markdown => {
            let comment = comment(public, registry, GITHUB_COMMENT_LIMIT);
            out(&comment)?;
            step_summary(&comment)?;
        }
    }
    Ok(())
}
