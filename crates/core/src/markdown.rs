//! The plan as a pull-request comment: readable in ten seconds, and never over GitHub's limit.
//!
//! The summary line stands outside any fold; destructive changes come next, then findings, then
//! one collapsible block per changed resource. GitHub rejects comments over 65,536 characters,
//! so the space is spent in that order of priority, whole blocks only, and the comment ends by
//! saying what it left out and how to see it.

use std::fmt::Write;

use serde_json::Value;

use crate::json::to_pretty;
use crate::plan::{Action, Change, Plan};
use crate::render::{action_words, severity_word, summary_line, unified_diff};

/// GitHub's limit on a comment's body, in characters.
pub const GITHUB_COMMENT_LIMIT: usize = 65_536;

/// Room kept for the closing line that says what was left out.
const CLOSING_RESERVE: usize = 400;

/// The plan as Markdown of at most `limit` characters.
pub fn markdown(plan: &Plan, limit: usize) -> String {
    titled(plan, limit, "plan")
}

/// The same, titled after the command that made it (`plan`, `drift`).
pub fn titled(plan: &Plan, limit: usize, command: &str) -> String {
    let mut out = String::new();
    writeln!(out, "### reconcile {command} for account `{}`, region `{}`", plan.account, plan.region).unwrap();
    writeln!(out).unwrap();
    let summary = summary_line(plan);
    writeln!(out, "**{}**", summary.trim_end_matches('.')).unwrap();

    let budget = limit.saturating_sub(CLOSING_RESERVE);
    let mut left_out = LeftOut::default();

    // What changes do beyond their fields (what a new lifecycle policy expires): the line a
    // reviewer needs, beside the summary.
    if !plan.impacts.is_empty() {
        push(&mut out, "\n", budget);
        for (address, impact) in &plan.impacts {
            let warning = if impact.alarming { " :warning:" } else { "" };
            let line = format!("- `{address}`{warning} {}\n", escape(&impact.line));
            if !push(&mut out, &line, budget) {
                left_out.details += 1;
            }
        }
    }

    let destructive: Vec<&Change> = plan.changes.iter().filter(|c| c.action.is_destructive()).collect();
    if !destructive.is_empty() {
        push(&mut out, "\n> [!CAUTION]\n> These changes destroy something; apply needs `--allow-delete`.\n\n", budget);
        for change in &destructive {
            let (sign, what) = action_words(change.action);
            let line = format!("- `{sign}` `{}` {what}\n", change.address);
            if !push(&mut out, &line, budget) {
                left_out.destructive += 1;
            }
        }
    }

    if !plan.findings.is_empty() {
        push(&mut out, "\n**Findings**\n\n", budget);
        for finding in &plan.findings {
            let address = finding.address.as_ref().map(|a| format!(" `{a}`:")).unwrap_or_default();
            let line = format!(
                "- {} `{}`{address} {}{}\n",
                severity_word(finding.severity),
                finding.code,
                escape(&finding.message),
                escape(&crate::render::overridden_note(finding))
            );
            if !push(&mut out, &line, budget) {
                left_out.findings += 1;
            }
        }
    }

    if plan.has_changes() {
        push(&mut out, "\n", budget);
        // Destructive changes first here too: if anything's detail is left out, not theirs.
        let ordered = destructive.iter().copied().chain(plan.changes.iter().filter(|c| !c.action.is_destructive()));
        for change in ordered {
            if !push(&mut out, &details(change), budget) {
                left_out.details += 1;
            }
        }
    }

    if left_out.any() {
        writeln!(out, "\n{}", left_out.sentence()).unwrap();
    }
    out
}

/// Appends `text` when it fits in `budget`; says whether it did. Counts bytes, which are never
/// fewer than characters, so the limit holds for any text.
fn push(out: &mut String, text: &str, budget: usize) -> bool {
    if out.len() + text.len() > budget {
        return false;
    }
    out.push_str(text);
    true
}

#[derive(Default)]
struct LeftOut {
    destructive: usize,
    findings: usize,
    details: usize,
}

impl LeftOut {
    fn any(&self) -> bool {
        self.destructive + self.findings + self.details > 0
    }

    fn sentence(&self) -> String {
        let mut parts = Vec::new();
        if self.destructive > 0 {
            parts.push(format!("{} destructive changes", self.destructive));
        }
        if self.findings > 0 {
            parts.push(format!("{} findings", self.findings));
        }
        if self.details > 0 {
            parts.push(format!("the details of {} changed resources", self.details));
        }
        format!(
            "_Left out to stay under GitHub's comment limit: {}. Run `reconcile plan` (or see the job's \
             `plan --format json` output) for the whole plan._",
            parts.join(", ")
        )
    }
}

/// One changed resource as a collapsible block: scalar fields as a list, documents as a
/// fenced `diff` block.
fn details(change: &Change) -> String {
    let (sign, what) = action_words(change.action);
    let mut out = format!("<details><summary><code>{sign} {}</code> {what}</summary>\n\n", change.address);
    for field in change.field_changes() {
        let name = field.name;
        match (field.before, field.after) {
            (before, after) if before.is_none_or(is_scalar) && after.is_none_or(is_scalar) => {
                let show = |v: Option<&Value>| v.map_or("(none)".to_owned(), |v| format!("`{}`", to_pretty(v)));
                match change.action {
                    Action::Create => writeln!(out, "- `{name}` = {}", show(field.after)),
                    Action::Delete => writeln!(out, "- `{name}` was {}", show(field.before)),
                    _ => writeln!(out, "- `{name}`: {} → {}", show(field.before), show(field.after)),
                }
                .unwrap();
            }
            (before, after) => {
                let before = before.map(to_pretty).unwrap_or_default();
                let after = after.map(to_pretty).unwrap_or_default();
                let diff = match (before.is_empty(), after.is_empty()) {
                    (true, _) => prefix_lines(&after, '+'),
                    (_, true) => prefix_lines(&before, '-'),
                    _ => unified_diff(&before, &after),
                };
                writeln!(out, "\n`{name}`:\n\n```diff\n{}```\n", fence_safe(&diff)).unwrap();
            }
        }
    }
    out.push_str("\n</details>\n");
    out
}

fn is_scalar(value: &Value) -> bool {
    !matches!(value, Value::Object(_) | Value::Array(_))
}

fn prefix_lines(text: &str, sign: char) -> String {
    text.lines().map(|line| format!("{sign}{line}\n")).collect()
}

/// A fence of backticks inside a document would close the block early.
fn fence_safe(text: &str) -> String {
    text.replace("```", "`\u{200b}``")
}

/// Keeps a message from opening HTML or breaking the list it sits in.
fn escape(text: &str) -> String {
    text.replace('<', "&lt;").replace('>', "&gt;").replace('\n', " ")
}
