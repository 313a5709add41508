//! Plans as people and tools read them: Terraform-like text, and reconcile's own JSON (whose
//! field names follow `terraform show -json` where they mean the same, but which is not that
//! format: `crate::terraform` is).
//!
//! Both are deterministic (changes sorted by address, object keys sorted) so they can be
//! snapshot-tested and diffed between runs. Colour is not decided here; the binary owns the
//! terminal.

use anstyle::Style;
use serde_json::{Value, json};
use similar::TextDiff;

use reconcile_core::json::to_pretty;
use reconcile_core::plan::{Action, Change, Finding, Plan, Severity, Takeover};
use reconcile_core::text::{learn_more, printable};

/// The version of reconcile's JSON plan format, under [`VERSION_KEY`]. Consumers should reject
/// an unknown major version. 2.0: the key is no longer Terraform's `format_version`, which made
/// tools take the plan for Terraform's (and find it empty).
pub const FORMAT_VERSION: &str = "2.0";

/// The key of [`FORMAT_VERSION`] in reconcile's JSON plan.
pub const VERSION_KEY: &str = "reconcile_plan_version";

/// Text made of styled spans: what a plan means to a reader decides its colour here, once,
/// and the binary only decides whether to show the colour (the terminal is its business).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Styled {
    spans: Vec<(Style, String)>,
}

impl Styled {
    /// One line whose content (not its newline) has `style`.
    fn line(&mut self, style: Style, text: impl std::fmt::Display) {
        self.spans.push((style, text.to_string()));
        self.spans.push((Style::new(), "\n".to_owned()));
    }

    fn blank(&mut self) {
        self.spans.push((Style::new(), "\n".to_owned()));
    }

    /// The text without any style.
    pub fn plain(&self) -> String {
        self.spans.iter().map(|(_, text)| text.as_str()).collect()
    }

    /// The spans, in order, each with its style.
    pub fn spans(&self) -> &[(Style, String)] {
        &self.spans
    }
}

/// What each part of a plan looks like on a colour terminal, as Terraform's does.
pub mod style {
    use anstyle::{AnsiColor, Style};

    pub const CREATE: Style = AnsiColor::Green.on_default();
    pub const DESTROY: Style = AnsiColor::Red.on_default();
    pub const UPDATE: Style = AnsiColor::Yellow.on_default();
    pub const HUNK: Style = AnsiColor::Cyan.on_default();
    pub const SUMMARY: Style = Style::new().bold();
    pub const PLAIN: Style = Style::new();
}

/// The plan as text, ending with the summary line.
pub fn text(plan: &Plan) -> String {
    styled_text(plan).plain()
}

/// The plan as styled text: [`text`], with what each line means marked. A refused plan leads
/// with the refusal, what resolves it and its findings, before any diff.
pub fn styled_text(plan: &Plan) -> Styled {
    let mut out = Styled::default();
    let made_by = plan.made_by.as_ref().map(|by| format!(", planned by {by}")).unwrap_or_default();
    out.line(style::PLAIN, format_args!("Account {}, region {}{made_by}.", plan.account, plan.region));
    out.blank();
    let refused = plan.refused();
    if refused {
        render_refusal(&mut out, plan);
        render_findings(&mut out, plan);
    }
    if plan.changes.is_empty() {
        if !refused {
            render_findings(&mut out, plan);
        }
        render_attribution_note(&mut out, plan);
        if plan.account_differs() {
            out.line(style::SUMMARY, summary_line(plan));
        } else {
            out.line(style::SUMMARY, "No changes. The account matches the desired state.");
        }
        return out;
    }
    out.line(style::PLAIN, "reconcile will perform the following actions:");
    for change in &plan.changes {
        out.blank();
        render_change(&mut out, change, plan.takeovers.get(&change.address).copied());
        if let Some(impact) = plan.impacts.get(&change.address) {
            let style = if impact.alarming { style::DESTROY } else { style::PLAIN };
            out.line(style, format_args!("    # {} {}", impact.context, impact.line));
        }
        if let Some(attribution) = plan.attributions.get(&change.address) {
            out.line(style::PLAIN, format_args!("    # {}", printable(&attribution.line())));
        }
    }
    out.blank();
    if !refused {
        render_findings(&mut out, plan);
    }
    render_attribution_note(&mut out, plan);
    out.line(style::SUMMARY, summary_line(plan));
    for line in cost_lines(plan) {
        out.line(style::PLAIN, line);
    }
    out
}

/// What a refused plan says first: that it is refused, by which findings, and what to do.
fn render_refusal(out: &mut Styled, plan: &Plan) {
    out.line(style::DESTROY, refusal_line(plan));
    for step in &plan.next_steps {
        out.line(style::PLAIN, format_args!("To resolve it: {}", printable(&step.say)));
        for line in &step.lines {
            out.line(style::PLAIN, format_args!("    {}", printable(line)));
        }
    }
    out.blank();
}

/// `Refused: 30 error findings (W601) stop this plan; nothing can be applied until they are
/// resolved.`
pub fn refusal_line(plan: &Plan) -> String {
    let refusing: Vec<&Finding> = plan.findings.iter().filter(|f| f.refuses()).collect();
    let mut codes: Vec<&str> = refusing.iter().map(|f| f.code.as_str()).collect();
    codes.dedup();
    let (noun, verb, pronoun) =
        if refusing.len() == 1 { ("finding", "stops", "it is") } else { ("findings", "stop", "they are") };
    format!(
        "Refused: {} error {noun} ({}) {verb} this plan; nothing can be applied until {pronoun} resolved.",
        refusing.len(),
        codes.join(", ")
    )
}

/// Findings of one code, severity and kind of subject, as a reader takes them in: three or more
/// fold into one, the first in full and the rest named (as Terraform folds its diagnostics,
/// "and 29 more similar errors"); the JSON formats keep every one.
#[derive(Debug, Clone, PartialEq)]
pub struct Folded<'a> {
    pub first: &'a Finding,
    pub others: Vec<&'a Finding>,
}

/// How many findings of one kind are shown one by one; more fold.
pub const FOLD_FROM: usize = 3;

/// `plan`'s findings folded, in their order (ranked findings of one code are together already).
/// One that says who made it (an attribution) stands alone: that is what a reader acts on.
pub fn folded(plan: &Plan) -> Vec<Folded<'_>> {
    let attributed = |f: &Finding| f.address.as_ref().is_some_and(|a| plan.attributions.contains_key(a));
    let key = |f: &Finding| (f.code.clone(), f.severity, f.address.is_some());
    let foldable = |f: &Finding| {
        !attributed(f) && plan.findings.iter().filter(|o| !attributed(o) && key(o) == key(f)).count() >= FOLD_FROM
    };
    let mut groups: Vec<Folded<'_>> = Vec::new();
    for finding in &plan.findings {
        let group = groups.iter_mut().find(|g| foldable(g.first) && key(g.first) == key(finding));
        match group {
            Some(group) if foldable(finding) => group.others.push(finding),
            _ => groups.push(Folded { first: finding, others: Vec::new() }),
        }
    }
    groups
}

/// `and 29 more like it: a, b, c`: what a folded finding names of the rest.
pub fn fold_line(others: &[&Finding]) -> String {
    let named: Vec<String> = others
        .iter()
        .map(|f| f.address.as_ref().map_or_else(|| printable(&f.message).into_owned(), ToString::to_string))
        .collect();
    format!("and {} more like it: {}", others.len(), named.join(", "))
}

/// The plan's cost line and its causes, one line each: empty when no change touches the bill.
pub fn cost_lines(plan: &Plan) -> Vec<String> {
    if plan.costs.is_empty() {
        return Vec::new();
    }
    let (total, complete) = reconcile_core::plan::cost_total(&plan.costs);
    let sign = if total < 0.0 { "-" } else { "+" };
    let rest = if complete { "" } else { ", and what cannot be estimated below" };
    let headline = if plan.costs.iter().all(|c| c.monthly_usd.is_none()) {
        "Monthly cost: cannot be estimated, as below (it informs; it decides nothing).".to_owned()
    } else {
        format!(
            "Monthly cost: about {sign}{} a month{rest} (it informs; it decides nothing).",
            reconcile_core::units::usd(total.abs())
        )
    };
    let mut lines = vec![headline];
    lines.extend(plan.costs.iter().map(|cost| format!("  {}", printable(&cost.line()))));
    lines
}

/// `Plan: N to add, N to change, N to destroy.` (Terraform's line) or `No changes.`, or, when findings show the
/// account differs all the same, never a bare "No changes".
pub fn summary_line(plan: &Plan) -> String {
    if !plan.has_changes() && plan.account_differs() {
        return "No changes to the declared resources, but the account differs from the desired state: see the \
                findings."
            .to_owned();
    }
    if !plan.has_changes() {
        return "No changes.".to_owned();
    }
    let summary = plan.summary();
    // Terraform's words, which the tools that read plans in pull requests (tfcmt) look for;
    // imports first and only when there are some, as Terraform says them.
    let import = if summary.import > 0 { format!("{} to import, ", summary.import) } else { String::new() };
    format!("Plan: {import}{} to add, {} to change, {} to destroy.", summary.create, summary.update, summary.delete)
}

fn render_findings(out: &mut Styled, plan: &Plan) {
    if plan.findings.is_empty() {
        return;
    }
    for Folded { first: finding, others } in folded(plan) {
        let style = match finding.severity {
            Severity::Warning => style::UPDATE,
            Severity::Error => style::DESTROY,
        };
        out.line(style, finding_line(finding));
        if !others.is_empty() {
            out.line(style::PLAIN, format_args!("    {} (each in full: --format json)", fold_line(&others)));
        }
        // Who made what a finding is about, when it is not a change (whose line has it).
        if others.is_empty()
            && let Some(address) = &finding.address
            && !plan.changes.iter().any(|c| &c.address == address)
            && let Some(attribution) = plan.attributions.get(address)
        {
            out.line(style::PLAIN, format_args!("    # {}", printable(&attribution.line())));
        }
    }
    out.blank();
}

/// A finding as a text plan prints it (and `reconcile explain`'s examples show it):
/// `Error [W601] ecr_repository.pytorch: ... (reconcile explain W601)`.
pub fn finding_line(finding: &Finding) -> String {
    let severity = severity_word(finding.severity);
    let overridden = overridden_note(finding);
    let more = learn_more(&finding.code);
    let subject = finding.address.as_ref().map(|address| format!(" {address}:")).unwrap_or_default();
    format!("{severity} [{}]{subject} {}{overridden} ({more})", finding.code, printable(&finding.message))
}

/// What every attribution shares (the window, CloudTrail's delay), once.
fn render_attribution_note(out: &mut Styled, plan: &Plan) {
    if let Some(note) = &plan.attribution_note {
        out.line(style::PLAIN, format_args!("{note}"));
        out.blank();
    }
}

/// An attribution as JSON: what CloudTrail said, or why it said nothing.
fn attribution_json(attribution: Option<&reconcile_core::plan::Attribution>) -> Value {
    use reconcile_core::plan::Attribution;
    match attribution {
        None => Value::Null,
        Some(Attribution::Event(event)) => json!({
            "status": if event.by_reconcile { "applied_by_reconcile" } else { "event" },
            "event_name": event.event,
            "event_time": reconcile_core::time::date_time(event.at),
            "principal": event.principal,
            "role": event.role,
            "session": event.session,
            "source_ip": event.source_ip,
            "user_agent": event.user_agent,
            "event_id": event.event_id,
        }),
        Some(Attribution::NoneFound { days }) => json!({ "status": "none_found", "days": days }),
        Some(Attribution::Unknown(why)) => json!({ "status": "unknown", "reason": why }),
    }
}

/// What a finding that was overridden says about it, after its message.
pub(crate) fn overridden_note(finding: &reconcile_core::plan::Finding) -> String {
    finding
        .overridden_by
        .as_ref()
        .map(|key| format!(" (overridden: `{key} = true` on the resource in desired.toml)"))
        .unwrap_or_default()
}

/// The style of a line that shows `sign`.
fn sign_style(sign: &str) -> Style {
    match sign {
        "+" => style::CREATE,
        "-" | "-/+" => style::DESTROY,
        "~" => style::UPDATE,
        _ => style::PLAIN,
    }
}

fn render_change(out: &mut Styled, change: &Change, takeover: Option<Takeover>) {
    let (sign, what) = action_words(change.action);
    let comment = if change.action.is_destructive() { style::DESTROY } else { style::PLAIN };
    let what = takeover_words(change, takeover).unwrap_or(what);
    out.line(comment, format_args!("  # {} {what}", change.address));
    out.line(sign_style(sign), format_args!("  {sign} {} {{", change.address));
    let fields = change.field_changes();
    let width = fields.iter().map(|f| f.name.len()).max().unwrap_or(0);
    for field in fields {
        let name = field.name;
        match (field.before, field.after) {
            (None, Some(after)) => write_value(out, '+', name, width, after),
            (Some(before), None) => write_value(out, '-', name, width, before),
            (Some(before), Some(after)) if is_scalar(before) && is_scalar(after) => out.line(
                style::UPDATE,
                format_args!("      ~ {name:width$} = {} -> {}", to_pretty(before), to_pretty(after)),
            ),
            (Some(before), Some(after)) => {
                out.line(style::UPDATE, format_args!("      ~ {name}:"));
                write_unified_diff(out, &to_pretty(before), &to_pretty(after));
            }
            (None, None) => unreachable!("a field change has a side"),
        }
    }
    out.line(style::PLAIN, "    }");
}

fn is_scalar(value: &Value) -> bool {
    !matches!(value, Value::Object(_) | Value::Array(_))
}

fn write_value(out: &mut Styled, sign: char, name: &str, width: usize, value: &Value) {
    let pretty = to_pretty(value);
    let mut lines = pretty.lines();
    let first = lines.next().unwrap_or_default();
    out.line(sign_style(&sign.to_string()), format_args!("      {sign} {name:width$} = {first}"));
    let indent = " ".repeat(width + 11);
    for line in lines {
        out.line(style::PLAIN, format_args!("{indent}{line}"));
    }
}

/// A unified diff of two documents' canonical pretty JSON, indented under its field.
fn write_unified_diff(out: &mut Styled, before: &str, after: &str) {
    for line in unified_diff(before, after).lines() {
        let style = match line.chars().next() {
            Some('+') => style::CREATE,
            Some('-') => style::DESTROY,
            Some('@') if line.starts_with("@@") => style::HUNK,
            _ => style::PLAIN,
        };
        out.line(style, format_args!("          {line}"));
    }
}

/// The hunks of a unified diff of two texts, three lines of context each.
pub(crate) fn unified_diff(before: &str, after: &str) -> String {
    let before = format!("{before}\n");
    let after = format!("{after}\n");
    let diff = TextDiff::from_lines(&before, &after);
    diff.unified_diff().context_radius(3).iter_hunks().map(|hunk| hunk.to_string()).collect()
}

/// What a plan says of a change that takes its resource over, in place of its action's words.
pub(crate) fn takeover_words(change: &Change, takeover: Option<Takeover>) -> Option<&'static str> {
    let only_marks = change.only_marks();
    Some(match (takeover?, only_marks) {
        (Takeover::Import, true) => "will be imported (marked as this deployment's)",
        (Takeover::Import, false) => "will be imported (marked as this deployment's) and updated in place",
        (Takeover::Remark, true) => "will be re-marked: reconcile made it before its mark (managed-by = reconcile)",
        (Takeover::Remark, false) => {
            "will be re-marked (reconcile made it before its mark: managed-by = reconcile) and updated in place"
        }
    })
}

/// The words a plan uses for an action: its sign and what will happen.
pub(crate) fn action_words(action: Action) -> (&'static str, &'static str) {
    match action {
        Action::Create => ("+", "will be created"),
        Action::Update => ("~", "will be updated in place"),
        Action::Replace => ("-/+", "must be replaced"),
        Action::Delete => ("-", "will be deleted"),
    }
}

pub(crate) fn severity_word(severity: Severity) -> &'static str {
    match severity {
        Severity::Warning => "Warning",
        Severity::Error => "Error",
    }
}

/// The plan as reconcile's own JSON: every change with its fields before and after, the
/// findings, what changes expire and who made the drift.
pub fn json(plan: &Plan) -> Value {
    let summary = plan.summary();
    let resource_changes: Vec<Value> = plan
        .changes
        .iter()
        .map(|change| {
            json!({
                "address": change.address.to_string(),
                "type": change.address.kind.as_str(),
                "name": change.address.name,
                "change": {
                    "actions": change.action.json_actions(),
                    "before": change.before,
                    "after": change.after,
                },
                // Whether it takes the resource over (`import`, `remark`): what its mark is
                // written for.
                "takeover": plan.takeovers.get(&change.address).map(|takeover| takeover.as_str()),
                "depends_on": change.depends_on.iter().map(ToString::to_string).collect::<Vec<_>>(),
                // What the change does beyond its fields, as its reconciler numbered it.
                "expires": plan.impacts.get(&change.address).map(|impact| &impact.numbers),
                "attribution": attribution_json(plan.attributions.get(&change.address)),
            })
        })
        .collect();
    let findings: Vec<Value> = plan
        .findings
        .iter()
        .map(|finding| {
            json!({
                "code": finding.code,
                "severity": match finding.severity { Severity::Warning => "warning", Severity::Error => "error" },
                "address": finding.address.as_ref().map(ToString::to_string),
                "message": finding.message,
                "overridden_by": finding.overridden_by,
                "attribution": attribution_json(finding.address.as_ref().and_then(|a| plan.attributions.get(a))),
            })
        })
        .collect();
    let mut value = json!({
        VERSION_KEY: FORMAT_VERSION,
        "made_by": plan.made_by,
        "account": plan.account,
        "region": plan.region,
        "resource_changes": resource_changes,
        "findings": findings,
        "attribution_note": plan.attribution_note,
        "summary": {
            "import": summary.import,
            "create": summary.create,
            "update": summary.update,
            "delete": summary.delete,
        },
    });
    if !plan.costs.is_empty() {
        let (total, complete) = reconcile_core::plan::cost_total(&plan.costs);
        let causes: Vec<Value> = plan
            .costs
            .iter()
            .map(|cost| {
                json!({
                    "cause": cost.cause,
                    "what": cost.what,
                    "monthly_usd": cost.monthly_usd.map(|usd| (usd * 100.0).round() / 100.0),
                    "basis": cost.basis,
                    "estimate": cost.estimate,
                })
            })
            .collect();
        value["cost"] = json!({
            "monthly_change_usd": (total * 100.0).round() / 100.0,
            "complete": complete,
            "causes": causes,
        });
    }
    value
}
