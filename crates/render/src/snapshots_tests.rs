//! Snapshots of every rendering (text, JSON, Markdown) of the plans a reviewer meets: no
//! changes, creates only, a mixed plan, a delete, a policy diff, and a 2,000-resource plan.

use serde_json::{Value, json};

use crate::comment::{GITHUB_COMMENT_LIMIT, markdown};
use crate::plan::{json, text};
use reconcile_core::address::{Address, ResourceKind};
use reconcile_core::json::{object, to_pretty};
use reconcile_core::plan::{Change, DesiredResource, Finding, Observed, Plan, Severity, diff};

fn change(kind: ResourceKind, name: &str, desired: Option<Value>, observed: Option<Value>) -> Change {
    let address = Address::new(kind, name);
    let desired = desired.map(|attributes| DesiredResource::new(address.clone(), name, object(attributes)));
    let observed = observed.map_or(Observed::Absent, |v| Observed::Present(object(v)));
    diff(&address, desired.as_ref(), &observed).expect("a change")
}

fn policy(count_type: &str, tag_status: &str, count_number: u64, unit: Option<&str>) -> Value {
    let mut selection = json!({"tagStatus": tag_status, "countType": count_type, "countNumber": count_number});
    if let Some(unit) = unit {
        selection["countUnit"] = json!(unit);
    }
    json!({"rules": [{"rulePriority": 1, "selection": selection, "action": {"type": "expire"}}]})
}

fn repository() -> Value {
    json!({"image_tag_mutability": "MUTABLE", "scan_on_push": false, "tags": {"project": "rocm-bake"}})
}

fn plan(mut changes: Vec<Change>, findings: Vec<Finding>) -> Plan {
    reconcile_core::plan::order(&mut changes);
    Plan {
        changes,
        findings,
        made_by: Some("reconcile 0.1.0 (commit 1a2b3c4d5e6f)".into()),
        ..Plan::new("123456789012", "us-east-1")
    }
}

fn no_changes() -> Plan {
    plan(vec![], vec![])
}

fn creates_only() -> Plan {
    let keep3 = policy("imageCountMoreThan", "untagged", 3, None);
    plan(
        vec![
            change(reconcile_core::fake::kinds::ECR_REPOSITORY, "vllm", Some(repository()), None),
            change(reconcile_core::fake::kinds::ECR_LIFECYCLE_POLICY, "vllm", Some(json!({"policy": keep3})), None),
        ],
        vec![],
    )
}

fn policy_diff() -> Plan {
    let keep3 = policy("imageCountMoreThan", "untagged", 3, None);
    let old = policy("sinceImagePushed", "any", 14, Some("days"));
    plan(
        vec![change(
            reconcile_core::fake::kinds::ECR_LIFECYCLE_POLICY,
            "pytorch-cache",
            Some(json!({"policy": keep3})),
            Some(json!({"policy": old})),
        )],
        vec![],
    )
}

fn a_delete() -> Plan {
    let wide =
        json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": ["s3:*"], "Resource": ["*"]}]});
    plan(
        vec![change(
            reconcile_core::fake::kinds::IAM_ROLE_POLICY,
            "codebuild/legacy",
            None,
            Some(json!({"role": "rocm-bake-codebuild", "policy_name": "legacy", "document": wide})),
        )],
        vec![Finding {
            code: "W101".into(),
            severity: Severity::Warning,
            address: Some(Address::new(reconcile_core::fake::kinds::IAM_ROLE, "codebuild")),
            message:
                "managed policy arn:aws:iam::123456789012:policy/hand-made is attached to role `rocm-bake-codebuild`"
                    .into(),
            overridden_by: None,
        }],
    )
}

fn mixed() -> Plan {
    let mut changes = creates_only().changes;
    changes.extend(policy_diff().changes);
    changes.extend(a_delete().changes);
    changes.push(change(
        reconcile_core::fake::kinds::ECR_REPOSITORY,
        "pytorch",
        Some(repository()),
        Some(json!({"image_tag_mutability": "IMMUTABLE", "scan_on_push": false, "tags": {}})),
    ));
    let mut webhook = change(
        reconcile_core::fake::kinds::CODEBUILD_WEBHOOK,
        "runner",
        Some(json!({"manual_creation": false, "build_type": "BUILD"})),
        Some(json!({"manual_creation": true, "build_type": "BUILD"})),
    );
    webhook.action = reconcile_core::plan::Action::Replace;
    changes.push(webhook);
    plan(changes, a_delete().findings)
}

fn two_thousand() -> Plan {
    let keep3 = policy("imageCountMoreThan", "untagged", 3, None);
    let changes = (0..1000)
        .flat_map(|i| {
            let name = format!("target{i:04}");
            [
                change(reconcile_core::fake::kinds::ECR_REPOSITORY, &name, Some(repository()), None),
                change(
                    reconcile_core::fake::kinds::ECR_LIFECYCLE_POLICY,
                    &name,
                    Some(json!({"policy": keep3.clone()})),
                    None,
                ),
            ]
        })
        .collect();
    plan(changes, vec![])
}

/// A takeover: one repository imported with nothing but the mark to write, one imported and
/// changed, one of reconcile's own from before the mark re-marked.
fn a_takeover() -> Plan {
    let marked = |tags: Value| {
        let mut repository = repository();
        repository["tags"] = tags;
        repository
    };
    let mark = |mut tags: Value| {
        tags[reconcile_core::mark::MARK_KEY] = json!("rocm-bake");
        tags
    };
    let ours = mark(json!({"project": "rocm-bake"}));
    let legacy = json!({"project": "rocm-bake", "managed-by": "reconcile"});
    let changes = vec![
        change(reconcile_core::fake::kinds::ECR_REPOSITORY, "pytorch", Some(marked(ours.clone())), Some(repository())),
        change(
            reconcile_core::fake::kinds::ECR_REPOSITORY,
            "atom-wheel-cache",
            Some(marked(mark(json!({"project": "rocm-bake", "kind": "buildkit-cache"})))),
            Some(json!({"image_tag_mutability": "MUTABLE", "scan_on_push": false, "tags": {}})),
        ),
        change(
            reconcile_core::fake::kinds::ECR_REPOSITORY,
            "vllm",
            Some(marked(mark(legacy.clone()))),
            Some(marked(legacy)),
        ),
    ];
    let mut plan = plan(changes, vec![]);
    plan.takeovers = [
        ("pytorch", reconcile_core::plan::Takeover::Import),
        ("atom-wheel-cache", reconcile_core::plan::Takeover::Import),
        ("vllm", reconcile_core::plan::Takeover::Remark),
    ]
    .into_iter()
    .map(|(name, takeover)| (Address::new(reconcile_core::fake::kinds::ECR_REPOSITORY, name), takeover))
    .collect();
    plan
}

/// Snapshots all three renderings of a plan.
fn check(name: &str, plan: &Plan) {
    insta::assert_snapshot!(format!("{name}_text"), text(plan));
    insta::assert_snapshot!(format!("{name}_json"), to_pretty(&json(plan)));
    insta::assert_snapshot!(format!("{name}_markdown"), markdown(plan, GITHUB_COMMENT_LIMIT));
}

#[test]
fn no_changes_renders() {
    check("no_changes", &no_changes());
}

#[test]
fn creates_only_renders() {
    check("creates_only", &creates_only());
}

#[test]
fn a_mixed_plan_renders_with_destructive_changes_first_in_markdown() {
    check("mixed", &mixed());
}

/// Imports are their own action and count ("2 to import", apart from the change one of them
/// makes besides its mark), a re-mark a change that says what it is, in every rendering.
#[test]
fn a_takeover_renders_imports_apart_from_changes() {
    let plan = a_takeover();
    let summary = plan.summary();
    assert_eq!((summary.import, summary.create, summary.update, summary.delete), (2, 0, 2, 0));
    check("a_takeover", &plan);
}

#[test]
fn a_delete_renders() {
    check("a_delete", &a_delete());
}

#[test]
fn a_policy_diff_renders_as_a_unified_diff() {
    check("policy_diff", &policy_diff());
}

/// The whole text and JSON of 2,000 changes would be megabytes of snapshot; their beginning,
/// end and size are what can go wrong. The Markdown is snapshotted whole: it is what is bounded.
#[test]
fn a_2000_resource_plan_stays_under_githubs_limit_and_says_what_it_left_out() {
    let plan = two_thousand();
    assert_eq!(plan.changes.len(), 2000);
    let text = text(&plan);
    let lines: Vec<&str> = text.lines().collect();
    insta::assert_snapshot!(
        "two_thousand_text",
        format!(
            "{} lines; first 25 and last 3:\n{}\n...\n{}",
            lines.len(),
            lines[..25].join("\n"),
            lines[lines.len() - 3..].join("\n")
        )
    );
    let json_text = to_pretty(&json(&plan));
    let json_lines: Vec<&str> = json_text.lines().collect();
    insta::assert_snapshot!(
        "two_thousand_json",
        format!("{} lines; last 8:\n{}", json_lines.len(), json_lines[json_lines.len() - 8..].join("\n"))
    );
    let comment = markdown(&plan, GITHUB_COMMENT_LIMIT);
    assert!(comment.chars().count() <= GITHUB_COMMENT_LIMIT, "{}", comment.chars().count());
    assert!(comment.contains("for the whole plan._\n"), "{}", &comment[comment.len() - 300..]);
    assert!(
        comment.trim_end().ends_with("_Planned by `reconcile 0.1.0 (commit 1a2b3c4d5e6f)`._"),
        "the footer fits too"
    );
    assert_eq!(comment.matches("<details>").count(), comment.matches("</details>").count(), "no block is cut");
    insta::assert_snapshot!("two_thousand_markdown", comment);
}

#[test]
fn markdown_budget_puts_the_summary_and_destructive_changes_before_details() {
    // A budget so small only the head fits: it must still say what it left out.
    let comment = markdown(&mixed(), 1000);
    assert!(comment.contains("**Plan: 3 to add, 2 to change, 2 to destroy**"), "{comment}");
    assert!(comment.contains("- `-/+` `codebuild_webhook.runner` must be replaced"), "{comment}");
    assert!(comment.contains("_Left out to stay under GitHub's comment limit: "), "{comment}");
    assert!(comment.len() <= 1000);
}

#[test]
fn a_plans_cost_line_says_each_figure_beside_the_summary_in_every_rendering() {
    use reconcile_core::plan::CostFigure;
    let mut plan = Plan::new("123456789012", "us-east-1");
    plan.changes.push(change(reconcile_core::fake::kinds::ECR_REPOSITORY, "new", Some(repository()), None));
    plan.costs = vec![
        CostFigure {
            cause: "builds".to_owned(),
            what: "github_variable.NIGHTLY_ARCHES value \"a\" -> \"a,b\"".to_owned(),
            monthly_usd: Some(54.44),
            basis: "the last 7 whole nights".to_owned(),
            estimate: false,
        },
        CostFigure {
            cause: "registry".to_owned(),
            what: "new image repositories: ecr_repository.new".to_owned(),
            monthly_usd: Some(-1.5),
            basis: "1 x the median <b>of</b> siblings".to_owned(),
            estimate: true,
        },
        CostFigure {
            cause: "cache".to_owned(),
            what: "s3_bucket_lifecycle.sccache".to_owned(),
            monthly_usd: None,
            basis: "CloudWatch has no daily size".to_owned(),
            estimate: false,
        },
    ];
    let text = text(&plan);
    let summary = text.lines().position(|l| l.starts_with("Plan: ")).unwrap();
    let lines: Vec<&str> = text.lines().skip(summary + 1).collect();
    assert_eq!(
        lines,
        [
            "Monthly cost: about +$52.94 a month, and what cannot be estimated below (it informs; it decides nothing).",
            "  builds: about +$54.44 a month (github_variable.NIGHTLY_ARCHES value \"a\" -> \"a,b\"): the last 7 whole \
             nights",
            "  registry: an estimate of -$1.50 a month (new image repositories: ecr_repository.new): 1 x the median \
             <b>of</b> siblings",
            "  cache: cannot be estimated (s3_bucket_lifecycle.sccache): CloudWatch has no daily size",
        ]
    );
    let value = json(&plan);
    assert_eq!(value["cost"]["monthly_change_usd"], 52.94);
    assert_eq!(value["cost"]["complete"], false);
    assert_eq!(value["cost"]["causes"][1]["estimate"], true);
    assert_eq!(value["cost"]["causes"][2]["monthly_usd"], Value::Null);
    let comment = markdown(&plan, GITHUB_COMMENT_LIMIT);
    assert!(comment.contains("\nMonthly cost: about +$52.94 a month"), "{comment}");
    assert!(!comment.contains("<b>"), "never markup: {comment}");
    // A value a pull request wrote (`[nightly] arches`), as hostile as it gets.
    let hostile = "x` </details> @org/team <img src=https://evil.example/p.png> [y](https://e.example)";
    let mut attacked = plan.clone();
    attacked.costs[0].what = format!("github_variable.NIGHTLY_ARCHES value \"{hostile}\"");
    let comment = markdown(&attacked, GITHUB_COMMENT_LIMIT);
    let start = comment.find("Monthly cost").unwrap();
    let cost = &comment[start..start + comment[start..].find("<details>").unwrap()];
    assert!(cost.contains("&lt;/details&gt;"), "{cost}");
    for raw in ["</details>", "<img", "@org/team", "](https://e.example)"] {
        assert!(!cost.contains(raw), "{raw} rendered: {cost}");
    }
    // A change of nothing is no saving.
    let zero = reconcile_core::plan::CostFigure { monthly_usd: Some(0.0), ..plan.costs[0].clone() };
    assert!(zero.line().starts_with("builds: about +$0.00 a month"), "{}", zero.line());
    // Nothing that could be estimated: said so, never a total of zero.
    let only_unknown = Plan { costs: vec![plan.costs[2].clone()], ..plan.clone() };
    let said = crate::plan::text(&only_unknown);
    assert!(said.contains("\nMonthly cost: cannot be estimated, as below"), "{said}");
    // Nothing priced: no line, no key.
    plan.costs.clear();
    assert!(!crate::plan::text(&plan).contains("Monthly cost"));
    assert_eq!(json(&plan).get("cost"), None);
}
