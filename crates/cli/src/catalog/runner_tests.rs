//! The runner role's derived policies as the whole catalog makes them: IAM's derivation over
//! every crate's `Access::runner` statements, ECR's mark conditions among them.

use reconcile_core::{Account, Desired};
use reconcile_iam::evaluate::{Context, Principal, Request};
use reconcile_iam::{INLINE_POLICY_LIMIT, boundary_policy, inline_policy};
use serde_json::Value;

use super::{CATALOG, parse_desired};

const BASE: &str = include_str!("../../../../tests/fixtures/ci.desired.toml");

fn parse(text: &str) -> Desired {
    parse_desired(std::path::Path::new("desired.toml"), text).unwrap()
}

/// Size as IAM counts it: the compact form.
fn size(policy: &Value) -> usize {
    reconcile_core::json::to_compact(policy).chars().count()
}

/// The runner role's inline policy with these repositories declared.
fn derive(names: &[String]) -> Result<Value, String> {
    let mut text = String::from(
        "region = \"us-east-1\"\n[ecr.defaults]\nlifecycle_policy = \"p\"\n[ecr.lifecycle_policies.p]\nrules = [{ rulePriority = 1, selection = { tagStatus = \"untagged\", countType = \"imageCountMoreThan\", countNumber = 3 }, action = { type = \"expire\" } }]\n[s3.buckets.sccache]\nname = \"rocm-bake-sccache-${account_id}\"\n[iam.roles.codebuild]\nname = \"rocm-bake-codebuild\"\ntrusted_services = [\"codebuild.amazonaws.com\"]\n[ecr.repositories]\n",
    );
    for name in names {
        text.push_str(&format!("{name} = {{}}\n"));
    }
    let desired = parse(&text);
    let role = reconcile_iam::declared(&desired).roles[0].clone();
    inline_policy(&desired, &CATALOG, &role, &Account::new("123456789012", "us-east-1"))
}

#[test]
fn a_role_without_repositories_is_granted_none() {
    // No `[ecr.repositories]` at all (an empty table is refused).
    let bare = parse(
        "region = \"us-east-1\"\n[iam.roles.codebuild]\nname = \"r\"\ntrusted_services = [\"codebuild.amazonaws.com\"]\n",
    );
    let account = Account::new("123456789012", "us-east-1");
    let none = inline_policy(&bare, &CATALOG, &reconcile_iam::declared(&bare).roles[0], &account).unwrap();
    for statement in none["Statement"].as_array().unwrap() {
        assert!(!statement["Resource"].as_array().is_some_and(Vec::is_empty), "{statement}");
        assert!(!statement.to_string().contains("ecr:PutImage"), "{statement}");
    }
}

#[test]
fn the_runners_policy_names_the_declared_repositories_and_its_boundary_never_changes_with_them() {
    let named = BASE.replace("region = \"us-east-1\"\n", "region = \"us-east-1\"\ndeployment = \"rocm-bake\"\n");
    let one = parse(&named);
    let three = parse(&named.replace("pytorch = {}\n", "pytorch = {}\nvllm = {}\nvllm-cache = {}\n"));
    let account = Account::new("123456789012", "us-east-1");
    let role = &reconcile_iam::declared(&one).roles[0];
    let inline = |desired: &Desired| {
        inline_policy(desired, &CATALOG, &reconcile_iam::declared(desired).roles[0], &account).unwrap()
    };
    let boundary = boundary_policy(&one, &CATALOG, role, &account).unwrap();
    assert_ne!(
        inline(&one),
        inline(&three),
        "a bake target added changes the inline policy, which the apply role puts"
    );
    assert_eq!(
        boundary,
        boundary_policy(&three, &CATALOG, &reconcile_iam::declared(&three).roles[0], &account).unwrap(),
        "the boundary, an administrator's, never changes with what is declared"
    );
    let (before, after) = (inline(&one), inline(&three));
    let tagged = |key: &str, value: &str| Context::new().with(&format!("aws:ResourceTag/{key}"), &[value]);
    let marked = tagged("reconcile:deployment", "rocm-bake");
    for (policy, declared) in [(&before, false), (&after, true)] {
        let runner = Principal { policies: std::slice::from_ref(policy), boundary: Some(&boundary) };
        let vllm = "arn:aws:ecr:us-east-1:123456789012:repository/vllm";
        let push =
            |resource: &str, context: &Context| runner.allows(Request { action: "ecr:PutImage", resource, context });
        assert_eq!(push(vllm, &marked), declared, "pushed to only once declared");
        // Another deployment's, reconcile's old tag (or one a file wrote), nobody's: not the builds'.
        assert!(!push(vllm, &tagged("reconcile:deployment", "team-x")));
        assert!(!push(vllm, &tagged("managed-by", "reconcile")));
        assert!(!push(vllm, &Context::new()));
        // `--ensure-ecr` makes only a declared repository, only as this deployment's: an untagged
        // create is denied at once, and so is any name desired.toml does not declare.
        let made = Context::new()
            .with("aws:RequestTag/reconcile:deployment", &["rocm-bake"])
            .with("aws:TagKeys", &["reconcile:deployment"]);
        let create = |resource: &str, context: &Context| {
            runner.allows(Request { action: "ecr:CreateRepository", resource, context })
        };
        let tag =
            |resource: &str, context: &Context| runner.allows(Request { action: "ecr:TagResource", resource, context });
        assert_eq!(create(vllm, &made), declared);
        assert_eq!(tag(vllm, &made), declared);
        assert!(!create(vllm, &Context::new()));
        assert!(!create(vllm, &Context::new().with("aws:RequestTag/reconcile:deployment", &["team-x"])));
        // Another team's repository, made by hand (tags `team`, no mark), or a name it will make:
        // the runner can neither mark it (ECR authorizes a create's tags as tagging one that
        // exists: the name is what keeps it out of reach) nor make it, nor push to it.
        let teamy = "arn:aws:ecr:us-east-1:123456789012:repository/teamy/release";
        let theirs = made.clone().with("aws:ResourceTag/team", &["y"]);
        assert!(!tag(teamy, &theirs));
        assert!(!tag(teamy, &made));
        assert!(!create(teamy, &made));
        assert!(!push(teamy, &marked), "even marked by someone else");
        // Never a repository already marked (ours, or another deployment's), nor the mark taken off.
        assert!(!tag(vllm, &made.clone().with("aws:TagKeys", &["reconcile:deployment", "team"])));
        assert!(!tag(vllm, &made.clone().with("aws:ResourceTag/reconcile:deployment", &["team-x"])));
        assert!(!tag(vllm, &made.clone().with("aws:ResourceTag/reconcile:deployment", &["rocm-bake"])));
        assert!(!runner.allows(Request { action: "ecr:UntagResource", resource: vllm, context: &marked }));
        assert!(runner.allows(Request {
            action: "ecr:DescribeRepositories",
            resource: teamy,
            context: &Context::new()
        }));
    }
}

#[test]
fn two_thousand_repositories_are_pushed_to_by_prefix_or_by_the_mark_and_made_by_apply_alone() {
    // Twenty teams' targets: the push grant groups them by prefix, and what a build may make
    // would not fit named, so it makes none (the apply role makes every declared repository).
    let names: Vec<String> = (0..2000).map(|i| format!("team{:02}-target{i:04}", i % 20)).collect();
    let many = derive(&names).unwrap();
    assert!(size(&many) <= INLINE_POLICY_LIMIT, "{}", size(&many));
    let statements = many["Statement"].as_array().unwrap();
    let push = statements.iter().find(|s| s["Sid"] == "EcrPushPull").unwrap();
    // Grouped only as far as it must be to fit: some teams by prefix, the rest by name.
    let resources: Vec<&str> = push["Resource"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(resources.len() < 200 && resources.iter().any(|r| r.ends_with("team19-*")), "{push}");
    assert!(!statements.iter().any(|s| s["Sid"] == "EcrMakeOnlyTheDeclaredAsReconciles"), "{many}");
    // Two thousand names with no prefix in common cannot be named within IAM's limit: the push
    // grant is then the boundary's, the whole registry by the mark, and still nothing is made.
    let unrelated: Vec<String> = (0..2000).map(|i| format!("r{i:04}x")).collect();
    let fallen_back = derive(&unrelated).unwrap();
    assert!(size(&fallen_back) <= INLINE_POLICY_LIMIT, "{}", size(&fallen_back));
    let statements = fallen_back["Statement"].as_array().unwrap();
    let push = statements.iter().find(|s| s["Sid"] == "EcrPushPull").unwrap();
    assert_eq!(push["Resource"], serde_json::json!(["arn:aws:ecr:us-east-1:123456789012:repository/*"]));
    assert!(push["Condition"].to_string().contains("aws:ResourceTag/reconcile:deployment"), "{push}");
    assert!(!statements.iter().any(|s| s["Sid"] == "EcrMakeOnlyTheDeclaredAsReconciles"), "{fallen_back}");
}
