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
fn the_runners_policy_grants_repositories_by_this_deployments_mark_and_never_changes_with_them() {
    let named = BASE.replace("region = \"us-east-1\"\n", "region = \"us-east-1\"\ndeployment = \"rocm-bake\"\n");
    let one = parse(&named);
    let three = parse(&named.replace("pytorch = {}\n", "pytorch = {}\nvllm = {}\nvllm-cache = {}\n"));
    let account = Account::new("123456789012", "us-east-1");
    let role = &reconcile_iam::declared(&one).roles[0];
    let inline = inline_policy(&one, &CATALOG, role, &account).unwrap();
    let boundary = boundary_policy(&one, &CATALOG, role, &account).unwrap();
    assert_eq!(inline, inline_policy(&three, &CATALOG, &reconcile_iam::declared(&three).roles[0], &account).unwrap());
    assert_eq!(
        boundary,
        boundary_policy(&three, &CATALOG, &reconcile_iam::declared(&three).roles[0], &account).unwrap()
    );
    let runner = Principal { policies: std::slice::from_ref(&inline), boundary: Some(&boundary) };
    let repository = "arn:aws:ecr:us-east-1:123456789012:repository/vllm";
    let tagged = |key: &str, value: &str| Context::new().with(&format!("aws:ResourceTag/{key}"), &[value]);
    let push = |context: &Context| runner.allows(Request { action: "ecr:PutImage", resource: repository, context });
    assert!(push(&tagged("reconcile:deployment", "rocm-bake")));
    // Another deployment's, reconcile's old tag (or one a file wrote), nobody's: not the builds'.
    assert!(!push(&tagged("reconcile:deployment", "team-x")));
    assert!(!push(&tagged("managed-by", "reconcile")));
    assert!(!push(&Context::new()));
    // `--ensure-ecr` makes a repository only as this deployment's: an untagged create is denied
    // at once, and the builds never tag.
    let made = Context::new().with("aws:RequestTag/reconcile:deployment", &["rocm-bake"]);
    let create =
        |context: &Context| runner.allows(Request { action: "ecr:CreateRepository", resource: repository, context });
    assert!(create(&made));
    assert!(!create(&Context::new()));
    assert!(!create(&Context::new().with("aws:RequestTag/reconcile:deployment", &["team-x"])));
    // ECR authorizes a create's tags as tagging the new repository: the mark alone, and never on
    // a repository already marked (ours, or another deployment's).
    let tag = |context: &Context| runner.allows(Request { action: "ecr:TagResource", resource: repository, context });
    let marking = || made.clone().with("aws:TagKeys", &["reconcile:deployment"]);
    assert!(tag(&marking()));
    assert!(!tag(&made.clone().with("aws:TagKeys", &["reconcile:deployment", "team"])));
    assert!(!tag(&marking().with("aws:ResourceTag/reconcile:deployment", &["team-x"])));
    assert!(!tag(&marking().with("aws:ResourceTag/reconcile:deployment", &["rocm-bake"])));
    let untag = Context::new().with("aws:ResourceTag/reconcile:deployment", &["rocm-bake"]);
    assert!(!runner.allows(Request { action: "ecr:UntagResource", resource: repository, context: &untag }));
    assert!(runner.allows(Request {
        action: "ecr:DescribeRepositories",
        resource: repository,
        context: &Context::new()
    }));
}

#[test]
fn two_thousand_repositories_change_nothing_in_the_runners_policy() {
    let few = derive(&["pytorch".into(), "pytorch-cache".into(), "vllm".into()]).unwrap();
    let names: Vec<String> = (0..2000).map(|i| format!("r{i:04}x")).collect();
    let many = derive(&names).unwrap();
    assert_eq!(few, many);
    assert!(size(&many) <= INLINE_POLICY_LIMIT, "{}", size(&many));
    assert!(!many.to_string().contains("repository/r0"), "no repository by name: {many}");
}
