//! The plan as a pull-request comment: readable in ten seconds, and never over GitHub's limit.
//!
//! The summary line stands outside any fold; findings come next (errors first), then what the
//! changes do, destructive changes, and one collapsible block per changed resource. GitHub
//! rejects comments over 65,536 characters, so the space is spent in that order of priority,
//! whole blocks only, and the comment ends by saying what it left out and how to see it.

use std::fmt::Write;

use serde_json::Value;

use reconcile_core::json::to_pretty;
use reconcile_core::markdown::{cell, code, fence, html, message, prose};
use reconcile_core::plan::{Action, Change, Plan};

use crate::plan::{action_words, severity_word, summary_line, takeover_words, unified_diff};

/// GitHub's limit on a comment's body, in characters.
pub const GITHUB_COMMENT_LIMIT: usize = 65_536;

/// Room kept for the closing lines: what was left out, and what made the plan.
const CLOSING_RESERVE: usize = 500;

/// The plan as Markdown of at most `limit` characters.
pub fn markdown(plan: &Plan, limit: usize) -> String {
    titled(plan, limit, "plan")
}

/// The same, titled after the command that made it (`plan`, `drift`).
pub fn titled(plan: &Plan, limit: usize, command: &str) -> String {
    let mut out = String::new();
    writeln!(out, "### reconcile {command} for account {}, region {}", code(&plan.account), code(&plan.region))
        .unwrap();
    writeln!(out).unwrap();
    let summary = summary_line(plan);
    writeln!(out, "**{}**", summary.trim_end_matches('.')).unwrap();
    // The bill's change beside the summary, each figure with what it rests on.
    let costs = crate::plan::cost_lines(plan);
    if let Some((total, causes)) = costs.split_first() {
        writeln!(out, "\n{}", message(total)).unwrap();
        for cause in causes {
            writeln!(out, "- {}", message(cause.trim_start())).unwrap();
        }
    }

    let budget = limit.saturating_sub(CLOSING_RESERVE);
    let mut left_out = LeftOut::default();

    // A refused plan says so, and what resolves it, before anything else.
    if plan.refused() {
        push(&mut out, &refusal(plan), budget);
    }
    // Findings first, errors first (ranked): padding a pull request with changes never pushes one
    // out of the comment.
    if !plan.findings.is_empty() {
        push(&mut out, "\n**Findings**\n\n", budget);
        findings(plan, &mut out, budget, &mut left_out);
    }

    // What changes do beyond their fields (what a new lifecycle policy expires): the line a
    // reviewer needs, beside the summary.
    if !plan.impacts.is_empty() {
        push(&mut out, "\n", budget);
        for (address, impact) in &plan.impacts {
            let warning = if impact.alarming { " :warning:" } else { "" };
            let line = format!("- {}{warning} {}\n", code(&address.to_string()), message(&impact.line));
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
            let line = format!("- `{sign}` {} {what}\n", code(&change.address.to_string()));
            if !push(&mut out, &line, budget) {
                left_out.destructive += 1;
            }
        }
    }

    if !plan.attributions.is_empty() {
        push(&mut out, "\n**Who changed it** (CloudTrail)\n\n| resource | who, when, what |\n|---|---|\n", budget);
        attributions(plan, &mut out, budget, &mut left_out);
    }

    if plan.has_changes() {
        push(&mut out, "\n", budget);
        // Destructive changes first here too: if anything's detail is left out, not theirs.
        let ordered = destructive.iter().copied().chain(plan.changes.iter().filter(|c| !c.action.is_destructive()));
        for change in ordered {
            if !push(&mut out, &details(change, plan.takeovers.get(&change.address).copied()), budget) {
                left_out.details += 1;
            }
        }
    }

    if left_out.any() {
        writeln!(out, "\n{}", left_out.sentence()).unwrap();
    }
    if let Some(by) = &plan.made_by {
        writeln!(out, "\n_Planned by {}._", code(by)).unwrap();
    }
    out
}

/// What a refused plan leads with: the refusal, and each step that resolves it.
fn refusal(plan: &Plan) -> String {
    let mut lead = format!("\n> [!CAUTION]\n> {}\n", message(&crate::plan::refusal_line(plan)));
    for step in &plan.next_steps {
        write!(lead, ">\n> To resolve it: {}\n", message(&step.say)).unwrap();
        if !step.lines.is_empty() {
            let block: String = step.lines.iter().map(|line| format!("{line}\n")).collect();
            for line in fence(&block, "toml").lines() {
                writeln!(lead, "> {line}").unwrap();
            }
        }
    }
    lead
}

/// The findings, ranked, as far as `budget` allows: many of one kind fold into one, the rest in
/// a fold of their own.
fn findings(plan: &Plan, out: &mut String, budget: usize, left_out: &mut LeftOut) {
    for folded in crate::plan::folded(plan) {
        let more = code(&reconcile_core::text::learn_more(&folded.first.code));
        let line = format!("{} ({more})\n", finding_item(folded.first));
        if !push(out, &line, budget) {
            left_out.findings += 1 + folded.others.len();
            continue;
        }
        if folded.others.is_empty() {
            continue;
        }
        let summary = format!("and {} more like it", folded.others.len());
        push(out, &format!("\n  <details><summary>{summary}</summary>\n\n"), budget);
        for other in &folded.others {
            if !push(out, &format!("  {}\n", finding_item(other)), budget) {
                left_out.findings += 1;
            }
        }
        push(out, "\n  </details>\n\n", budget);
    }
}

/// Who changed each resource, a row each as far as `budget` allows, and the trail's note.
fn attributions(plan: &Plan, out: &mut String, budget: usize, left_out: &mut LeftOut) {
    for (address, attribution) in &plan.attributions {
        let said = match attribution.event_parts() {
            Some(parts) => parts.iter().map(|(words, value)| format!("{}{}", prose(words), code(value))).collect(),
            None => message(&attribution.line()),
        };
        let line = format!("| {} | {} |\n", cell(&address.to_string()), in_cell(&said));
        if !push(out, &line, budget) {
            left_out.attributions += 1;
        }
    }
    if let Some(note) = &plan.attribution_note {
        push(out, &format!("\n{}\n", message(note)), budget);
    }
}

/// A finding as a list item: `- Error `W601` `address`: message`.
fn finding_item(finding: &reconcile_core::plan::Finding) -> String {
    let address = finding.address.as_ref().map(|a| format!(" {}:", code(&a.to_string()))).unwrap_or_default();
    format!(
        "- {} {}{address} {}{}",
        severity_word(finding.severity),
        code(&finding.code),
        message(&finding.message),
        message(&crate::plan::overridden_note(finding))
    )
}

/// Rendered Markdown made safe in a table cell: a `|` that nothing escaped yet (one inside a code
/// span) is escaped, which GFM honours even inside a span; prose's `\|` is left as it is.
fn in_cell(rendered: &str) -> String {
    let mut out = String::with_capacity(rendered.len());
    let mut previous = None;
    for c in rendered.chars() {
        if c == '|' && previous != Some('\\') {
            out.push('\\');
        }
        out.push(c);
        previous = Some(c);
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
    attributions: usize,
    details: usize,
}

impl LeftOut {
    fn any(&self) -> bool {
        self.destructive + self.findings + self.attributions + self.details > 0
    }

    fn sentence(&self) -> String {
        let mut parts = Vec::new();
        if self.destructive > 0 {
            parts.push(format!("{} destructive changes", self.destructive));
        }
        if self.findings > 0 {
            parts.push(format!("{} findings", self.findings));
        }
        if self.attributions > 0 {
            parts.push(format!("who changed {} resources", self.attributions));
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
fn details(change: &Change, takeover: Option<reconcile_core::plan::Takeover>) -> String {
    let (sign, what) = action_words(change.action);
    let what = takeover_words(change, takeover).unwrap_or(what);
    let address = html(&change.address.to_string());
    let mut out = format!("<details><summary><code>{sign} {address}</code> {what}</summary>\n\n");
    for field in change.field_changes() {
        let name = field.name;
        match (field.before, field.after) {
            (before, after) if before.is_none_or(is_scalar) && after.is_none_or(is_scalar) => {
                let show = |v: Option<&Value>| v.map_or("(none)".to_owned(), |v| code(&to_pretty(v)));
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
                writeln!(out, "\n`{name}`:\n\n{}", fence(&diff, "diff")).unwrap();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_fits_the_budget_exactly_is_kept_and_not_a_byte_more() {
        let mut out = "ab".to_owned();
        assert!(push(&mut out, "cd", 4));
        assert!(!push(&mut out, "e", 4));
        assert_eq!(out, "abcd");
    }

    #[test]
    fn what_was_left_out_is_counted_by_kind_and_said_only_when_there_is_some() {
        use reconcile_core::address::Address;
        use reconcile_core::plan::{Action, Attribution, Change, Finding, Impact, Severity};
        let address = |name: &str| Address::new(reconcile_core::fake::kinds::ECR_REPOSITORY, name);
        let change = |name: &str, action| Change {
            address: address(name),
            action,
            before: Some(serde_json::Map::new()),
            after: None,
            depends_on: vec![],
        };
        let finding = |name: &str| Finding {
            code: "D101".into(),
            severity: Severity::Warning,
            address: Some(address(name)),
            message: "m".into(),
            overridden_by: None,
        };
        let impact = Impact { context: "c".into(), line: "l".into(), alarming: false, numbers: serde_json::Map::new() };
        let plan = Plan {
            changes: vec![change("a", Action::Delete), change("b", Action::Delete), change("c", Action::Update)],
            findings: ["a", "b", "c", "d"].map(finding).to_vec(),
            impacts: ["x", "y", "z"].map(|n| (address(n), impact.clone())).into_iter().collect(),
            attributions: [
                (address("a"), Attribution::NoneFound { days: 7 }),
                (address("b"), Attribution::Unknown("throttled".into())),
            ]
            .into_iter()
            .collect(),
            attribution_note: Some("looked back 7 days".into()),
            ..Plan::new("123456789012", "us-east-1")
        };
        // Room for the heading and the summary line only.
        let head = titled(&plan, usize::MAX, "plan").find("\n\n- ").unwrap() + 1;
        let comment = titled(&plan, head + CLOSING_RESERVE, "plan");
        assert!(comment.ends_with(
            "_Left out to stay under GitHub's comment limit: 2 destructive changes, 4 findings, who changed 2 \
             resources, the details of 6 changed resources. Run `reconcile plan` (or see the job's `plan --format json` output) for the whole plan._\n"
        ), "{comment}");
        let whole = titled(&plan, usize::MAX, "plan");
        assert!(!whole.contains("Left out"), "{whole}");
        assert!(
            whole.contains(
                "| resource | who, when, what |\n|---|---|\n\
                 | `ecr_repository.a` | no CloudTrail event that could have changed it in the last 7 days |\n\
                 | `ecr_repository.b` | who changed it is unknown: throttled |\n\nlooked back 7 days\n"
            ),
            "{whole}"
        );

        let sentence =
            |destructive, findings, attributions, details| LeftOut { destructive, findings, attributions, details };
        assert!(!sentence(0, 0, 0, 0).any());
        for (left, said, unsaid) in [
            (sentence(1, 0, 0, 0), "1 destructive changes", ["findings", "who changed", "the details"]),
            (sentence(0, 1, 0, 0), "1 findings", ["destructive", "who changed", "the details"]),
            (sentence(0, 0, 1, 0), "who changed 1 resources", ["destructive", "findings", "the details"]),
            (sentence(0, 0, 0, 1), "the details of 1 changed resources", ["destructive", "findings", "who changed"]),
        ] {
            assert!(left.any());
            let text = left.sentence();
            assert!(text.contains(said), "{text}");
            assert!(unsaid.iter().all(|word| !text.contains(word)), "{text}");
        }
    }

    #[test]
    fn a_table_cell_escapes_the_pipes_nothing_escaped_yet() {
        // One inside a code span (which `message` leaves alone) would end the cell; prose's `\|`
        // is escaped already and must not become `\\|`.
        assert_eq!(in_cell("role `a|b` and c \\| d|"), "role `a\\|b` and c \\| d\\|");
        assert_eq!(in_cell(&message("session `x|y` | z")), "session `x\\|y` \\| z");
        assert_eq!(in_cell(""), "");
    }

    #[test]
    fn an_attribution_quotes_each_live_value_whatever_backticks_it_holds() {
        use reconcile_core::plan::{Attribution, ChangeEvent};
        let event = ChangeEvent {
            event: "PutLifecyclePolicy".into(),
            at: 1_796_000_000,
            principal: "arn:aws:iam::123456789012:user/bob".into(),
            role: None,
            session: None,
            source_ip: "192.0.2.7".into(),
            user_agent: "x` see #1 3f9a1c7e0b @org ``".into(),
            event_id: "e-1".into(),
            by_reconcile: false,
        };
        let address = reconcile_core::Address::new(reconcile_core::fake::kinds::ECR_REPOSITORY, "pytorch");
        let plan = Plan {
            attributions: [(address, Attribution::Event(event))].into_iter().collect(),
            ..Plan::new("123456789012", "us-east-1")
        };
        let rendered = markdown(&plan, usize::MAX);
        assert!(rendered.contains("user agent ``` x` see #1 3f9a1c7e0b @org `` ```, event `e-1`"), "{rendered}");
    }
}
