//! Plans as people and tools read them: Terraform-like text, and JSON in the shape of
//! `terraform show -json`.
//!
//! Both are deterministic (changes sorted by address, object keys sorted) so they can be
//! snapshot-tested and diffed between runs. Colour is not decided here; the binary owns the
//! terminal.

use std::fmt::Write;

use serde_json::{Value, json};
use similar::TextDiff;

use crate::json::to_pretty;
use crate::plan::{Action, Change, Plan, Severity};

/// The version of the JSON plan format. Consumers should reject an unknown major version.
pub const FORMAT_VERSION: &str = "1.0";

/// The plan as text, ending with the summary line.
pub fn text(plan: &Plan) -> String {
    let mut out = String::new();
    writeln!(out, "Account {}, region {}.", plan.account, plan.region).unwrap();
    writeln!(out).unwrap();
    if plan.changes.is_empty() {
        render_findings(&mut out, plan);
        writeln!(out, "No changes. The account matches the desired state.").unwrap();
        return out;
    }
    writeln!(out, "reconcile will perform the following actions:").unwrap();
    for change in &plan.changes {
        writeln!(out).unwrap();
        render_change(&mut out, change);
    }
    writeln!(out).unwrap();
    render_findings(&mut out, plan);
    writeln!(out, "{}", summary_line(plan)).unwrap();
    out
}

/// `Plan: N to create, N to update, N to delete.` or `No changes.`
pub fn summary_line(plan: &Plan) -> String {
    if !plan.has_changes() {
        return "No changes.".to_owned();
    }
    let summary = plan.summary();
    format!("Plan: {} to create, {} to update, {} to delete.", summary.create, summary.update, summary.delete)
}

fn render_findings(out: &mut String, plan: &Plan) {
    if plan.findings.is_empty() {
        return;
    }
    for finding in &plan.findings {
        let severity = severity_word(finding.severity);
        match &finding.address {
            Some(address) => writeln!(out, "{severity} [{}] {address}: {}", finding.code, finding.message),
            None => writeln!(out, "{severity} [{}] {}", finding.code, finding.message),
        }
        .unwrap();
    }
    writeln!(out).unwrap();
}

fn render_change(out: &mut String, change: &Change) {
    let (sign, what) = action_words(change.action);
    writeln!(out, "  # {} {what}", change.address).unwrap();
    writeln!(out, "  {sign} {} {{", change.address).unwrap();
    let fields = change.field_changes();
    let width = fields.iter().map(|f| f.name.len()).max().unwrap_or(0);
    for field in fields {
        let name = field.name;
        match (field.before, field.after) {
            (None, Some(after)) => write_value(out, '+', name, width, after),
            (Some(before), None) => write_value(out, '-', name, width, before),
            (Some(before), Some(after)) if is_scalar(before) && is_scalar(after) => {
                writeln!(out, "      ~ {name:width$} = {} -> {}", to_pretty(before), to_pretty(after)).unwrap()
            }
            (Some(before), Some(after)) => {
                writeln!(out, "      ~ {name}:").unwrap();
                write_unified_diff(out, &to_pretty(before), &to_pretty(after));
            }
            (None, None) => unreachable!("a field change has a side"),
        }
    }
    writeln!(out, "    }}").unwrap();
}

fn is_scalar(value: &Value) -> bool {
    !matches!(value, Value::Object(_) | Value::Array(_))
}

fn write_value(out: &mut String, sign: char, name: &str, width: usize, value: &Value) {
    let pretty = to_pretty(value);
    let mut lines = pretty.lines();
    writeln!(out, "      {sign} {name:width$} = {}", lines.next().unwrap_or_default()).unwrap();
    let indent = " ".repeat(width + 11);
    for line in lines {
        writeln!(out, "{indent}{line}").unwrap();
    }
}

/// A unified diff of two documents' canonical pretty JSON, indented under its field.
fn write_unified_diff(out: &mut String, before: &str, after: &str) {
    for line in unified_diff(before, after).lines() {
        writeln!(out, "          {line}").unwrap();
    }
}

/// The hunks of a unified diff of two texts, three lines of context each.
pub(crate) fn unified_diff(before: &str, after: &str) -> String {
    let before = format!("{before}\n");
    let after = format!("{after}\n");
    let diff = TextDiff::from_lines(&before, &after);
    diff.unified_diff().context_radius(3).iter_hunks().map(|hunk| hunk.to_string()).collect()
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

/// The plan as JSON, familiar to anyone who has read `terraform show -json`.
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
                "depends_on": change.depends_on.iter().map(ToString::to_string).collect::<Vec<_>>(),
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
            })
        })
        .collect();
    json!({
        "format_version": FORMAT_VERSION,
        "account": plan.account,
        "region": plan.region,
        "resource_changes": resource_changes,
        "findings": findings,
        "summary": { "create": summary.create, "update": summary.update, "delete": summary.delete },
    })
}
