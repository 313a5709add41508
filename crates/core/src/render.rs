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
        let severity = match finding.severity {
            Severity::Warning => "Warning",
            Severity::Error => "Error",
        };
        match &finding.address {
            Some(address) => writeln!(out, "{severity} [{}] {address}: {}", finding.code, finding.message),
            None => writeln!(out, "{severity} [{}] {}", finding.code, finding.message),
        }
        .unwrap();
    }
    writeln!(out).unwrap();
}

fn render_change(out: &mut String, change: &Change) {
    let (sign, what) = match change.action {
        Action::Create => ("+", "will be created"),
        Action::Update => ("~", "will be updated in place"),
        Action::Replace => ("-/+", "must be replaced"),
        Action::Delete => ("-", "will be deleted"),
    };
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

/// A unified diff of two documents' canonical pretty JSON.
fn write_unified_diff(out: &mut String, before: &str, after: &str) {
    let before = format!("{before}\n");
    let after = format!("{after}\n");
    let diff = TextDiff::from_lines(&before, &after);
    for hunk in diff.unified_diff().context_radius(3).iter_hunks() {
        for line in hunk.to_string().lines() {
            writeln!(out, "          {line}").unwrap();
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DesiredResource;
    use crate::address::{Address, ResourceKind};
    use crate::plan::{Finding, Observed, diff};
    use serde_json::Map;
    use std::collections::BTreeMap;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => panic!("not an object"),
        }
    }

    fn policy(count_type: &str, tag_status: &str, count_number: u64, unit: Option<&str>) -> Value {
        let mut selection = json!({"tagStatus": tag_status, "countType": count_type, "countNumber": count_number});
        if let Some(unit) = unit {
            selection["countUnit"] = json!(unit);
        }
        json!({"rules": [{"rulePriority": 1, "selection": selection, "action": {"type": "expire"}}]})
    }

    fn change(kind: ResourceKind, name: &str, desired: Option<Value>, observed: Option<Value>) -> Change {
        let address = Address::new(kind, name);
        let desired = desired.map(|attributes| DesiredResource {
            address: address.clone(),
            attributes: object(attributes),
            depends_on: vec![],
        });
        let observed = observed.map_or(Observed::Absent, |v| Observed::Present(object(v)));
        diff(&address, desired.as_ref(), &observed).expect("a change")
    }

    fn mixed_plan() -> Plan {
        let keep3 = policy("imageCountMoreThan", "untagged", 3, None);
        let old = policy("sinceImagePushed", "any", 14, Some("days"));
        let repository =
            json!({"image_tag_mutability": "MUTABLE", "scan_on_push": false, "tags": {"project": "rocm-bake"}});
        Plan {
            account: "123456789012".into(),
            region: "us-east-1".into(),
            changes: vec![
                change(ResourceKind::EcrRepository, "vllm", Some(repository.clone()), None),
                change(
                    ResourceKind::EcrRepository,
                    "pytorch",
                    Some(repository),
                    Some(json!({"image_tag_mutability": "IMMUTABLE", "scan_on_push": false, "tags": {}})),
                ),
                change(
                    ResourceKind::EcrLifecyclePolicy,
                    "atom-wheel-cache",
                    Some(json!({"policy": keep3.clone()})),
                    None,
                ),
                change(
                    ResourceKind::EcrLifecyclePolicy,
                    "pytorch-cache",
                    Some(json!({"policy": keep3})),
                    Some(json!({"policy": old.clone()})),
                ),
                change(ResourceKind::EcrLifecyclePolicy, "retired", None, Some(json!({"policy": old}))),
            ],
            findings: vec![Finding {
                code: "W000".into(),
                severity: Severity::Warning,
                address: Some(Address::new(ResourceKind::EcrRepository, "vllm")),
                message: "an example finding".into(),
            }],
            observed: BTreeMap::new(),
        }
    }

    #[test]
    fn text_of_a_mixed_plan() {
        insta::assert_snapshot!(text(&mixed_plan()));
    }

    #[test]
    fn json_of_a_mixed_plan() {
        insta::assert_snapshot!(crate::json::to_pretty(&json(&mixed_plan())));
    }

    #[test]
    fn no_changes_says_so() {
        let plan = Plan {
            account: "123456789012".into(),
            region: "eu-west-1".into(),
            changes: vec![],
            findings: vec![],
            observed: BTreeMap::new(),
        };
        insta::assert_snapshot!(text(&plan), @r"
        Account 123456789012, region eu-west-1.

        No changes. The account matches the desired state.
        ");
        insta::assert_snapshot!(crate::json::to_pretty(&json(&plan)), @r#"
        {
          "account": "123456789012",
          "findings": [],
          "format_version": "1.0",
          "region": "eu-west-1",
          "resource_changes": [],
          "summary": {
            "create": 0,
            "delete": 0,
            "update": 0
          }
        }
        "#);
    }
}
