//! What an apply did, for people and for a PR comment: applied, failed and skipped resources.

use std::fmt::Write;

use serde_json::{Value, json};

use reconcile_core::engine::{ApplyReport, Outcome};
use reconcile_core::markdown::{code, message};
use reconcile_core::plan::Plan;
use reconcile_core::text::printable;

/// The closing lines of an apply, in text.
pub fn text(plan: &Plan, report: &ApplyReport) -> String {
    let mut out = String::new();
    for (address, _, outcome, _) in &report.results {
        if let Outcome::Adopted = outcome {
            writeln!(
                out,
                "Adopted: {address} already existed (made since the plan was read) and was brought to the desired state"
            )
            .unwrap();
        }
    }
    if report.succeeded() && plan.destroy {
        // As Terraform's destroy says it.
        writeln!(out, "Destroy complete! Resources: {} destroyed.", plan.summary().delete).unwrap();
        return out;
    }
    if report.succeeded() {
        let summary = carried_out(plan, report).summary();
        // Imports first and only when there are some, as Terraform says them.
        let imported = if summary.import > 0 { format!("{} imported, ", summary.import) } else { String::new() };
        writeln!(
            out,
            "Apply complete! Resources: {imported}{} created, {} updated, {} deleted.",
            summary.create, summary.update, summary.delete
        )
        .unwrap();
        let left = report.left();
        if !left.is_empty() {
            for (address, why) in &left {
                writeln!(out, "Left for an administrator: {address} ({why})").unwrap();
            }
            writeln!(out, "{}", left_for_administrators(left.len())).unwrap();
        }
        return out;
    }
    let (applied, failed, skipped) = counts(report);
    for address in &report.unreadable {
        writeln!(out, "Not read: {address}: its service kept failing, so it was left alone").unwrap();
    }
    for (address, _, outcome, _) in &report.results {
        match outcome {
            Outcome::Failed(error) => {
                writeln!(out, "Failed: {address}: failed to {}: {}", error.operation, printable(&error.reason))
            }
            Outcome::Skipped { because } => writeln!(out, "Skipped: {address}, because {because} did not apply"),
            Outcome::NotStarted => writeln!(out, "Not started: {address}"),
            Outcome::Left { why } => writeln!(out, "Left for an administrator: {address} ({why})"),
            Outcome::Applied | Outcome::Adopted => Ok(()),
        }
        .unwrap();
    }
    let not_started = not_started(report);
    if not_started > 0 {
        writeln!(
            out,
            "Apply interrupted: {applied} applied, {failed} failed, {skipped} skipped, {not_started} not started. Run \
             apply again to finish: what was applied stays applied."
        )
        .unwrap();
        return out;
    }
    let not_read = report.unreadable.len();
    let not_read = if not_read > 0 { format!(", {not_read} not read") } else { String::new() };
    writeln!(
        out,
        "Apply failed: {applied} applied, {failed} failed, {skipped} skipped{not_read}. Fix the cause and run apply \
         again: what was applied stays applied, and apply picks up where this one stopped."
    )
    .unwrap();
    out
}

/// What an administrator does about `count` changes an apply as a CI role left: the command, and
/// why not the apply role.
pub fn left_for_administrators(count: usize) -> String {
    format!(
        "{count} change(s) left for an administrator: the apply role never makes them (W501), and made every other \
         change. An administrator applies them from a terminal on the default branch, with their own credentials: \
         `reconcile apply`"
    )
}

/// `plan` without the changes `report` left for an administrator: what was carried out.
fn carried_out(plan: &Plan, report: &ApplyReport) -> Plan {
    let left = report.left();
    let mut done = plan.clone();
    done.changes.retain(|change| !left.iter().any(|(address, _)| **address == change.address));
    done
}

/// How many changes an interruption kept from starting.
fn not_started(report: &ApplyReport) -> usize {
    report.results.iter().filter(|(_, _, outcome, _)| matches!(outcome, Outcome::NotStarted)).count()
}

fn counts(report: &ApplyReport) -> (usize, usize, usize) {
    let mut counts = (0, 0, 0);
    for (_, _, outcome, _) in &report.results {
        match outcome {
            Outcome::Applied | Outcome::Adopted => counts.0 += 1,
            Outcome::Failed(_) => counts.1 += 1,
            Outcome::Skipped { .. } => counts.2 += 1,
            Outcome::NotStarted | Outcome::Left { .. } => {}
        }
    }
    counts
}

/// The version of the apply report's JSON.
pub const FORMAT_VERSION: &str = "1.2";

/// The report as JSON.
pub fn json(plan: &Plan, report: &ApplyReport) -> Value {
    let (applied, failed, skipped) = counts(report);
    let results: Vec<Value> = report
        .results
        .iter()
        .map(|(address, action, outcome, elapsed)| {
            let mut entry = json!({
                "address": address.to_string(),
                "actions": action.json_actions(),
                "takeover": plan.takeovers.get(address).map(|takeover| takeover.as_str()),
                "elapsed_seconds": (elapsed.as_secs_f64() * 10.0).round() / 10.0,
            });
            match outcome {
                Outcome::Applied => entry["outcome"] = json!("applied"),
                Outcome::Adopted => entry["outcome"] = json!("adopted"),
                Outcome::Failed(error) => {
                    entry["outcome"] = json!("failed");
                    entry["error"] = json!(format!("failed to {}: {}", error.operation, error.reason));
                }
                Outcome::Skipped { because } => {
                    entry["outcome"] = json!("skipped");
                    entry["because"] = json!(because.to_string());
                }
                Outcome::NotStarted => entry["outcome"] = json!("not_started"),
                Outcome::Left { why } => {
                    entry["outcome"] = json!("left_for_an_administrator");
                    entry["because"] = json!(why);
                }
            }
            entry
        })
        .collect();
    json!({
        "format_version": FORMAT_VERSION,
        "account": plan.account,
        "region": plan.region,
        "succeeded": report.succeeded(),
        "results": results,
        "unreadable": report.unreadable.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "summary": {
            "applied": applied,
            "failed": failed,
            "skipped": skipped,
            "not_started": not_started(report),
            "left_for_an_administrator": report.left().len(),
        },
    })
}

/// The report as Markdown, for posting a (partial) apply back to the pull request.
pub fn markdown(plan: &Plan, report: &ApplyReport) -> String {
    let (applied, failed, skipped) = counts(report);
    let mut out = format!("### reconcile apply to account {}, region {}\n\n", code(&plan.account), code(&plan.region));
    if report.succeeded() && plan.destroy {
        writeln!(out, "**Destroy complete: {applied} resources destroyed.**").unwrap();
    } else if report.succeeded() {
        let imported = plan.summary().import;
        let imported = if imported > 0 { format!(", {imported} of them imported") } else { String::new() };
        writeln!(out, "**Apply complete: {applied} resources changed{imported}.**").unwrap();
        let left = report.left().len();
        if left > 0 {
            writeln!(out, "\n{}", message(&left_for_administrators(left))).unwrap();
        }
    } else if not_started(report) > 0 {
        let not_started = not_started(report);
        writeln!(
            out,
            "**Apply interrupted: {applied} applied, {failed} failed, {skipped} skipped, {not_started} not started.**"
        )
        .unwrap();
    } else {
        writeln!(out, "**Apply failed: {applied} applied, {failed} failed, {skipped} skipped.**").unwrap();
    }
    let sections = [
        ("Left for an administrator", "left"),
        ("Failed", "failed"),
        ("Skipped", "skipped"),
        ("Not started", "not started"),
        ("Adopted", "adopted"),
        ("Applied", "applied"),
    ];
    for (title, wanted) in sections {
        let lines: Vec<String> = report
            .results
            .iter()
            .filter_map(|(address, _, outcome, _)| match (outcome, wanted) {
                (Outcome::Failed(error), "failed") => Some(format!(
                    "- {}: {}",
                    code(&address.to_string()),
                    message(&format!("failed to {}: {}", error.operation, error.reason))
                )),
                (Outcome::Skipped { because }, "skipped") => Some(format!(
                    "- {}, because {} did not apply",
                    code(&address.to_string()),
                    code(&because.to_string())
                )),
                (Outcome::Left { why }, "left") => Some(format!("- {}: {}", code(&address.to_string()), message(why))),
                (Outcome::Adopted, "adopted") => {
                    Some(format!("- {}: already existed, brought to the desired state", code(&address.to_string())))
                }
                (Outcome::Applied, "applied") | (Outcome::NotStarted, "not started") => {
                    Some(format!("- {}", code(&address.to_string())))
                }
                _ => None,
            })
            .collect();
        if !lines.is_empty() {
            write!(out, "\n**{title}**\n\n{}\n", lines.join("\n")).unwrap();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use reconcile_core::address::Address;
    use reconcile_core::plan::{Action, Change};

    #[test]
    fn an_adopted_resource_is_reported_as_adopted_in_every_format() {
        let address = Address::new(reconcile_core::fake::kinds::ECR_REPOSITORY, "vllm-wheel");
        let change =
            Change { address: address.clone(), action: Action::Create, before: None, after: None, depends_on: vec![] };
        let plan = Plan { changes: vec![change], ..Plan::new("123456789012", "us-east-1") };
        let report = ApplyReport {
            results: vec![(address, Action::Create, Outcome::Adopted, Duration::ZERO)],
            unreadable: vec![],
        };
        assert!(report.succeeded());
        assert_eq!(
            text(&plan, &report),
            "Adopted: ecr_repository.vllm-wheel already existed (made since the plan was read) and was brought to \
             the desired state\nApply complete! Resources: 1 created, 0 updated, 0 deleted.\n"
        );
        assert_eq!(json(&plan, &report)["results"][0]["outcome"], "adopted");
        assert!(
            markdown(&plan, &report).contains(
                "**Adopted**\n\n- `ecr_repository.vllm-wheel`: already existed, brought to the desired state"
            )
        );
    }
}
