//! The runner role's derived policies as the whole catalog makes them: IAM's derivation over
//! every crate's `Access::runner` statements, ECR's grouping of repositories by name prefix and
//! its tag conditions among them.

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
fn the_runners_policy_grants_repositories_by_reconciles_tag_and_never_changes_with_them() {
    let tagged =
        BASE.replace("lifecycle_policy = \"p\"\n", "lifecycle_policy = \"p\"\ntags = { managed-by = \"reconcile\" }\n");
    let one = parse(&tagged);
    let three = parse(&tagged.replace("pytorch = {}\n", "pytorch = {}\nvllm = {}\nvllm-cache = {}\n"));
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
    let ours = Context::new().with("aws:ResourceTag/managed-by", &["reconcile"]);
    let theirs = Context::new().with("aws:ResourceTag/managed-by", &["someone"]);
    assert!(runner.allows(Request { action: "ecr:PutImage", resource: repository, context: &ours }));
    assert!(!runner.allows(Request { action: "ecr:PutImage", resource: repository, context: &theirs }));
    assert!(!runner.allows(Request { action: "ecr:PutImage", resource: repository, context: &Context::new() }));
    let made = Context::new().with("aws:RequestTag/managed-by", &["reconcile"]);
    assert!(runner.allows(Request { action: "ecr:CreateRepository", resource: repository, context: &made }));
    assert!(!runner.allows(Request { action: "ecr:CreateRepository", resource: repository, context: &Context::new() }));
    assert!(!runner.allows(Request { action: "ecr:TagResource", resource: repository, context: &made }));
    assert!(runner.allows(Request {
        action: "ecr:DescribeRepositories",
        resource: repository,
        context: &Context::new()
    }));
    // Untagged repositories: named in the inline policy, the region's registry in the boundary.
    let bare = parse(BASE);
    let boundary = boundary_policy(&bare, &CATALOG, &reconcile_iam::declared(&bare).roles[0], &account).unwrap();
    assert!(boundary.to_string().contains("\"arn:aws:ecr:us-east-1:123456789012:repository/*\""), "{boundary}");
    let inline = inline_policy(&bare, &CATALOG, &reconcile_iam::declared(&bare).roles[0], &account).unwrap();
    assert!(inline.to_string().contains("repository/pytorch\""), "{inline}");
}

#[test]
fn two_hundred_repositories_in_target_and_cache_pairs_fit() {
    let names: Vec<String> =
        (0..100).flat_map(|i| [format!("target{i:03}-wheel"), format!("target{i:03}-wheel-cache")]).collect();
    let policy = derive(&names).unwrap();
    assert!(size(&policy) <= INLINE_POLICY_LIMIT, "{}", size(&policy));
    let resources = policy["Statement"][1]["Resource"].as_array().unwrap();
    let patterns: Vec<&str> = resources.iter().filter_map(|r| r.as_str()?.strip_suffix('*')).collect();
    assert!(!patterns.is_empty() && resources.len() < 200, "{}", resources.len());
    // Each pattern is as narrow as it can be: one target's image and its cache, nothing more.
    for pattern in patterns {
        assert!(pattern.starts_with("arn:aws:ecr:us-east-1:123456789012:repository/target"), "{pattern}");
        assert!(
            pattern.ends_with("-") && pattern.len() == "arn:aws:ecr:us-east-1:123456789012:repository/target000-".len(),
            "{pattern}"
        );
    }
}

#[test]
fn a_few_repositories_are_listed_one_by_one() {
    let policy = derive(&["pytorch".into(), "pytorch-cache".into(), "vllm".into()]).unwrap();
    assert_eq!(policy["Statement"][1]["Resource"].as_array().unwrap().len(), 3);
}

#[test]
fn two_thousand_unrelated_repositories_are_a_clear_error() {
    let names: Vec<String> = (0..2000).map(|i| format!("r{i:04}x")).collect();
    let error = derive(&names).unwrap_err();
    assert!(
        error.starts_with("the derived inline policy `rocm-bake-codebuild` of role `rocm-bake-codebuild` would be"),
        "{error}"
    );
    assert!(error.contains("over IAM's limit of 10240"), "{error}");
}
