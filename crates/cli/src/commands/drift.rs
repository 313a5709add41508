//! `reconcile drift`: the scheduled check. The plan and what the account holds undeclared, then
//! what the registry holds and costs; exit 2 when the account differs from desired.toml.

use std::collections::BTreeMap;
use std::io::IsTerminal;

use reconcile_core::audience;
use reconcile_core::describe::PutBack;
use reconcile_core::plan::{Attribution, CostFigure};
use reconcile_core::variables::PUT_BACK_SWITCH;
use reconcile_core::{Address, Plan, json, time};
use reconcile_ecr::usage::{self, Usage};
use reconcile_render::comment::GITHUB_COMMENT_LIMIT;
use reconcile_render::plan as render;

use crate::args::{ColorChoice, Format, PlanFormat};
use crate::aws::Aws;
use crate::catalog::CATALOG;
use crate::error::CliError;
use crate::exit;
use crate::output::step_summary;
use crate::output::{Output, color_on, out};
use crate::session::{DriftCosts, Planned, PutBackReport, Session};

/// The drift issue to keep true, when asked: the repository's API, the issue's label, and the
/// key that seals it (`RECONCILE_ISSUE_KEY`).
pub type Issue = (reconcile_github::Api, String, Option<Vec<u8>>);

/// `reconcile drift`: the issue's repository and token are known before any AWS call.
pub async fn exec(args: crate::args::DriftArgs, context: &super::Context) -> Result<u8, CliError> {
    let crate::args::DriftArgs { format, issue, shown, since, bake, prune, put_back } = args;
    let load = crate::session::Load { bake: bake.bake.as_deref(), prune: prune.prune, ..Default::default() };
    let inputs = context.inputs(load)?;
    let issue = match issue {
        Some(label) => {
            let api = crate::github::conversation(&inputs.desired, None, crate::github::ISSUE_TOKENS)?;
            Some((api, label, crate::github::issue_key()?))
        }
        None => None,
    };
    let put_back = put_back && put_back_switched_on(&inputs.desired);
    let purpose = if put_back { crate::aws::Purpose::PutBack } else { crate::aws::Purpose::Read };
    let session = context.session(inputs, purpose).await?;
    run(&session, context.color, format, since.since_days, issue, shown.public(), put_back).await
}

/// Whether `--put-back` puts anything back: `[drift] put_back` names a kind, and
/// [`PUT_BACK_SWITCH`] is not `off`. Says why not on stderr.
fn put_back_switched_on(desired: &reconcile_core::Desired) -> bool {
    if std::env::var(PUT_BACK_SWITCH).is_ok_and(|value| value.trim().eq_ignore_ascii_case("off")) {
        crate::output::err(&format!("{PUT_BACK_SWITCH} is `off`: this check puts nothing back."));
        return false;
    }
    if desired.put_back.is_empty() {
        crate::output::err("desired.toml's `[drift] put_back` names no kind: this check puts nothing back.");
        return false;
    }
    true
}

pub async fn run(
    session: &Session<Aws>,
    color: ColorChoice,
    format: PlanFormat,
    since_days: u32,
    issue: Option<Issue>,
    shown_in_public: bool,
    put_back: bool,
) -> Result<u8, CliError> {
    // Who made each difference and what the registry holds only inform: the exit code is the
    // plan's.
    let mut drift = session.drift(since_days).await?;
    let mut put_back_said = None;
    if put_back {
        let kinds: Vec<&PutBack> =
            session.inputs().desired.put_back.iter().filter_map(|named| CATALOG.put_back(&named.kind)).collect();
        let report = session.put_back(&drift.planned, &kinds).await;
        let found = Public::of(session, &drift.planned, &drift.registry, &drift.costs);
        let attributions = if shown_in_public { &found.plan.attributions } else { &drift.planned.plan.attributions };
        crate::output::err(&put_back_text(&report, attributions));
        put_back_said = put_back_markdown(&report, &found.plan.attributions);
        // What is left is what the account differs in now.
        if !report.made.is_empty() {
            drift = session.drift(since_days).await?;
        }
    }
    let public = Public::of(session, &drift.planned, &drift.registry, &drift.costs);
    let (plan, registry) = (&drift.planned.plan, &drift.registry);
    let costs = shown_costs(plan, &drift.costs);
    let output = Output::new(color_on(color, std::io::stdout().is_terminal()));
    match (format.common(), shown_in_public) {
        // The issue's own words, in every format: what a public page may say.
        (Some(Format::Markdown), _) => {
            let comment = comment(&public, GITHUB_COMMENT_LIMIT);
            out(&comment)?;
            step_summary(&comment)?;
        }
        (Some(format), true) => print(&output, (&public.plan, &public.costs), &public.registry, format)?,
        (Some(format), false) => print(&output, (plan, &costs), registry, format)?,
        // Terraform's refresh-only plan, of what the run may show; desired.toml is what was
        // last applied (the drift check runs on the default branch).
        (None, in_public) => {
            let shown = if in_public { &public.plan } else { plan };
            let view = crate::terraform::view(shown, &drift.planned.resources, None);
            out(&(reconcile_render::terraform::to_line(&reconcile_render::terraform::refresh_only(view)) + "\n"))?;
        }
    }
    let acknowledged = match issue {
        Some((api, label, key)) => keep_issue(api, &label, key, &public, put_back_said.as_deref()).await?,
        None => false,
    };
    // Drift a maintainer acknowledged (closed its issue as not planned) and that has not changed
    // since is known, not news: the check passes, and fails again when the drift changes.
    Ok(if plan.account_differs() && !acknowledged { exit::CHANGES } else { exit::OK })
}

/// What the drift issue and every public output say: every declared resource, and of what
/// desired.toml does not declare only the repositories the nightly's own bake file names (the
/// seeds' incident: two cache repositories it pushed to, without a lifecycle policy, held 347
/// GB); the rest counted, and named only by a private run (`--private`).
struct Public {
    plan: Plan,
    /// The registry, naming only the repositories declared or named by the bake file.
    registry: Usage,
    /// What each difference the plan shows costs while it stays, largest first.
    costs: Vec<(Address, CostFigure)>,
}

impl Public {
    fn of(session: &Session<Aws>, planned: &Planned, registry: &Usage, costs: &DriftCosts) -> Public {
        let inputs = session.inputs();
        let named = inputs.public_repositories(&planned.account);
        let plan = audience::publish(planned.plan.clone(), &planned.resources, &inputs.public_audience(planned));
        Public {
            costs: shown_costs(&plan, costs),
            plan,
            registry: registry.clone().publish(&|name| named.contains(name)),
        }
    }
}

/// The figures of `costs` for the differences `plan` shows (a public plan hides what it may not
/// name, and prices nothing of it either), the dearest first, those that cannot be estimated last.
fn shown_costs(plan: &Plan, costs: &DriftCosts) -> Vec<(Address, CostFigure)> {
    let mut shown: Vec<(Address, CostFigure)> = plan
        .changes
        .iter()
        .filter_map(|change| Some((change.address.clone(), costs.get(&change.address)?.clone())))
        .collect();
    shown.sort_by(|(a, x), (b, y)| {
        let dearness = |figure: &CostFigure| figure.monthly_usd.map_or(-1.0, f64::abs);
        dearness(y).total_cmp(&dearness(x)).then_with(|| a.cmp(b))
    });
    shown
}

/// What the drift costs while it stays, one line per figure (each address through `code`), the
/// most [`NAMED`] of them named and the rest summed; empty when nothing is priced.
fn cost_lines(costs: &[(Address, CostFigure)], code: fn(&str) -> String) -> Vec<String> {
    if costs.is_empty() {
        return Vec::new();
    }
    let figures: Vec<CostFigure> = costs.iter().map(|(_, figure)| figure.clone()).collect();
    let (total, complete) = reconcile_core::plan::cost_total(&figures);
    let sign = if total < 0.0 { "-" } else { "+" };
    let mut lines = vec![format!(
        "About {sign}{} a month while the account differs{} (it informs; it decides nothing):",
        reconcile_core::units::usd(total.abs()),
        if complete { "" } else { ", and what cannot be estimated below" }
    )];
    lines.extend(
        costs.iter().take(NAMED).map(|(address, figure)| format!("{}: {}", code(&address.to_string()), figure.line())),
    );
    if costs.len() > NAMED {
        let rest: Vec<CostFigure> = figures[NAMED..].to_vec();
        let (sum, _) = reconcile_core::plan::cost_total(&rest);
        lines.push(format!(
            "and {} more, about {}{} a month together",
            rest.len(),
            if sum < 0.0 { "-" } else { "+" },
            reconcile_core::units::usd(sum.abs())
        ));
    }
    lines
}

/// Keeps the drift issue true to this check: the report and its differences when the account
/// differs, none when it does not. Says what it did on stderr, and whether the drift is what a
/// maintainer acknowledged.
async fn keep_issue(
    api: reconcile_github::Api,
    label: &str,
    key: Option<Vec<u8>>,
    public: &Public,
    put_back: Option<&str>,
) -> Result<bool, CliError> {
    use reconcile_github::conversation::{Conversation, Drift, Outcome};
    let failed = |error: reconcile_core::ReconcileError| CliError::Other(anyhow::Error::new(error));
    let plan = &public.plan;
    let drift = plan.account_differs().then(|| {
        let items = plan.differences();
        let said = put_back.map(|said| format!("{said}\n\n")).unwrap_or_default();
        let room = GITHUB_COMMENT_LIMIT.saturating_sub(Drift::overhead(&items) + said.len());
        Drift { items, report: crate::output::redacted(&format!("{said}{}", comment(public, room))) }
    });
    if key.is_none() {
        crate::output::err(
            "warning: the drift issue is not sealed (no RECONCILE_ISSUE_KEY): an issue another workflow of this \
             repository opens with its label and marker could be taken for it; give this workflow a secret of its \
             own as RECONCILE_ISSUE_KEY",
        );
    }
    let conversation = Conversation::connect(api).await.map_err(failed)?.sealing_with(key);
    let outcome = conversation.keep_drift_issue(label, drift.as_ref(), put_back).await.map_err(failed)?;
    let acknowledged = matches!(outcome, Outcome::Acknowledged(_));
    let said = match &outcome {
        Outcome::Created(number) => format!("opened drift issue #{number}"),
        Outcome::Updated(number) => format!("updated drift issue #{number}: the drift changed"),
        Outcome::Unchanged(number) => format!("left drift issue #{number} as it was: the same drift"),
        Outcome::Closed(number) => format!("closed drift issue #{number}: the account matches desired.toml"),
        Outcome::Reopened(number) => format!("reopened drift issue #{number}: the account drifted again"),
        Outcome::Acknowledged(number) => format!(
            "acknowledged: left drift issue #{number} closed, as a maintainer closed it as not planned and the drift \
             is what they acknowledged; the check passes until the drift changes"
        ),
        Outcome::Duplicated(number) => format!(
            "another drift check opened drift issue #{number} at the same time: the one this check opened is closed \
             as its duplicate"
        ),
        Outcome::Nothing => "no drift, and no open drift issue: nothing to say".to_owned(),
    };
    crate::output::err(&said);
    if let Outcome::Acknowledged(number) = outcome {
        // The run's page says why a drifted account passes.
        step_summary(&format!(
            "**Drift acknowledged.** The account differs from desired.toml as a maintainer acknowledged when they \
             closed drift issue #{number} as not planned; the check passes until the drift changes."
        ))?;
    }
    Ok(acknowledged)
}

/// What a put-back did, for the job's log: each change made, with who last changed it when
/// CloudTrail knows; each that failed; what else went wrong.
fn put_back_text(report: &PutBackReport, attributions: &BTreeMap<Address, Attribution>) -> String {
    let mut lines = Vec::new();
    for (address, action, at) in &report.made {
        let who = attributions.get(address).map(|a| format!("; {}", a.line())).unwrap_or_default();
        lines.push(format!("Put back {address} ({}) at {}{who}.", put_back_word(*action), time::date_time(*at)));
    }
    for (address, why) in &report.failed {
        lines.push(format!("Could not put back {address}: {why}; it stays drift."));
    }
    lines.extend(report.trouble.iter().map(|trouble| format!("warning: {trouble}.")));
    if lines.is_empty() {
        lines.push("Nothing to put back: no drift of a kind `[drift] put_back` names.".to_owned());
    }
    lines.join("\n")
}

/// What the drift issue says of a put-back that made or tried something; `None` when it did
/// neither. Every value in a code span its content cannot close.
fn put_back_markdown(report: &PutBackReport, attributions: &BTreeMap<Address, Attribution>) -> Option<String> {
    use reconcile_core::markdown::code;
    if report.made.is_empty() && report.failed.is_empty() && report.trouble.is_none() {
        return None;
    }
    let mut text =
        "### Put back by this check\n\nAs desired.toml on the default branch declares, by the put-back role \
                    (`[drift] put_back`):\n\n"
            .to_owned();
    for (address, action, at) in &report.made {
        let who = match attributions.get(address).and_then(Attribution::event_parts) {
            Some(parts) => {
                format!(
                    "; before, {}",
                    parts.iter().map(|(words, value)| format!("{words}{}", code(value))).collect::<String>()
                )
            }
            None => String::new(),
        };
        text.push_str(&format!(
            "- {} ({}) at {}{who}\n",
            code(&address.to_string()),
            put_back_word(*action),
            time::date_time(*at)
        ));
    }
    for (address, why) in &report.failed {
        text.push_str(&format!("- {} could not be put back: {}\n", code(&address.to_string()), code(why)));
    }
    if let Some(trouble) = &report.trouble {
        text.push_str(&format!("- {}\n", code(trouble)));
    }
    Some(text.trim_end().to_owned())
}

fn put_back_word(action: reconcile_core::Action) -> &'static str {
    match action {
        reconcile_core::Action::Create => "made again",
        _ => "set back",
    }
}

/// The drift comment of at most `limit` characters: the public plan, then the registry's summary.
fn comment(public: &Public, limit: usize) -> String {
    // The registry's summary and the answers are bounded; the plan gets what is left of the limit.
    let summary = usage::summary_text(&public.registry, true);
    let answers = answers(&public.plan, reconcile_core::markdown::code);
    let answers = if answers.is_empty() {
        String::new()
    } else {
        format!(
            "\n### What to do\n\n{}\n",
            answers.iter().map(|line| format!("- {line}")).collect::<Vec<_>>().join("\n")
        )
    };
    let costs = cost_lines(&public.costs, reconcile_core::markdown::code);
    let costs = match costs.split_first() {
        Some((total, figures)) => format!(
            "\n### What it costs while it stays\n\n{}\n{}\n",
            reconcile_core::markdown::message(total),
            figures
                .iter()
                .map(|line| format!("- {}", reconcile_core::markdown::message(line)))
                .collect::<Vec<_>>()
                .join("\n")
        ),
        None => String::new(),
    };
    let budget = limit.saturating_sub(summary.len() + costs.len() + answers.len() + 1);
    format!("{}{costs}{answers}\n{summary}", reconcile_render::comment::titled(&public.plan, budget, "drift"))
}

/// The most addresses an answer names; the rest are counted.
const NAMED: usize = 12;

/// What to do about each difference of `plan`, one line per answer with the differences it is
/// for (each address through `code`): the apply workflow, an administrator's command, a finding's
/// own advice; then what holds for every one (desired.toml changed instead, or the issue closed
/// as not planned) and the page that says it all. Empty when the account matches.
fn answers(plan: &Plan, code: fn(&str) -> String) -> Vec<String> {
    if !plan.account_differs() {
        return Vec::new();
    }
    let named = |addresses: &[String]| {
        let mut shown: Vec<String> = addresses.iter().take(NAMED).map(|a| code(a)).collect();
        if addresses.len() > NAMED {
            shown.push(format!("and {} more", addresses.len() - NAMED));
        }
        shown.join(", ")
    };
    let administrators: Vec<String> = plan.administrators.iter().map(|(address, _)| address.to_string()).collect();
    let workflow: Vec<String> = plan
        .changes
        .iter()
        .map(|change| change.address.to_string())
        .filter(|address| !administrators.contains(address))
        .collect();
    let mut lines = Vec::new();
    if !workflow.is_empty() {
        lines.push(format!(
            "{}: the apply workflow puts {} back as desired.toml declares: `gh workflow run apply-after-merge.yml`",
            named(&workflow),
            if workflow.len() == 1 { "it" } else { "them" }
        ));
    }
    if !administrators.is_empty() {
        lines.push(format!(
            "{}: an administrator's (W501), which the apply workflow leaves: from a terminal on the default branch, \
             with their own credentials, `reconcile apply`",
            named(&administrators)
        ));
    }
    let mut codes: Vec<&str> = plan
        .findings
        .iter()
        .filter(|f| f.is_drift() && f.code != reconcile_core::engine::UNREADABLE)
        .map(|f| f.code.as_str())
        .collect();
    codes.dedup();
    if !codes.is_empty() {
        let explained: Vec<String> = codes.iter().map(|c| code(&format!("reconcile explain {c}"))).collect();
        lines.push(format!("Each finding says what to do about it; more in {}", explained.join(", ")));
    }
    lines.push(
        "Any of them, when the account is right and desired.toml is not: change desired.toml in a pull request. \
         Known and meant to stay: close this issue as not planned (a person with write access); the check then \
         passes until the drift changes"
            .to_owned(),
    );
    // A path, never a link: nothing in a comment reconcile writes renders as one.
    lines.push(format!("How, step by step: {}, in reconcile's documentation", code("docs/tasks/drift-check.md")));
    lines
}

/// The drift check's output in text or JSON: the plan, then what the registry holds and costs.
fn print(
    output: &Output,
    (plan, costs): (&Plan, &[(Address, CostFigure)]),
    registry: &Usage,
    format: Format,
) -> Result<(), CliError> {
    match format {
        // Markdown is the issue's words, said above.
        Format::Text | Format::Markdown => {
            out(&output.paint(&render::styled_text(plan)))?;
            if let Some((total, figures)) = cost_lines(costs, |text| format!("`{text}`")).split_first() {
                let lines: Vec<String> = figures.iter().map(|line| format!("  - {line}")).collect();
                out(&format!("\nWhat it costs while it stays: {}\n{}\n", total.to_lowercase(), lines.join("\n")))?;
            }
            let answers = answers(plan, |text| format!("`{text}`"));
            if !answers.is_empty() {
                let lines: Vec<String> = answers.iter().map(|line| format!("  - {line}")).collect();
                out(&format!("\nWhat to do:\n{}\n", lines.join("\n")))?;
            }
            out(&format!("\n{}", usage::summary_text(registry, false)))?;
        }
        Format::Json => {
            let mut value = render::json(plan);
            value["usage"] = usage::summary(registry);
            value["drift_costs"] = costs
                .iter()
                .map(|(address, figure)| {
                    serde_json::json!({
                        "address": address.to_string(),
                        "cause": figure.cause,
                        "what": figure.what,
                        "monthly_usd": figure.monthly_usd.map(|usd| (usd * 100.0).round() / 100.0),
                        "basis": figure.basis,
                    })
                })
                .collect();
            out(&format!("{}\n", json::to_pretty(&value)))?;
        }
    }
    Ok(())
}
