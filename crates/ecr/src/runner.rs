//! What a build on the runner needs of the registry ([`Access::runner`]), from which IAM derives
//! the runner role's inline policy and permissions boundary.
//!
//! Both grant the repositories by this deployment's mark ([`reconcile_core::ownership`]), never
//! by name: declaring a repository (a bake target added) changes neither, so no IAM change
//! follows one, and the apply role, which changes nothing in IAM, can apply it; and a
//! repository someone else made, or another deployment's, is not the builds' to push to, even
//! named like one of ours. A repository is marked before a grant by the mark changes (the
//! plan's order), so taking an account over never leaves a running build without its push.
//!
//! [`Access::runner`]: reconcile_core::describe::Access::runner

use reconcile_core::describe::Runner;
use reconcile_core::{Account, Desired};
use serde_json::{Value, json};

use crate::declared;

/// What a pushing and pulling build (BuildKit's registry cache included) needs on a repository.
const PUSH_PULL: [&str; 9] = [
    "ecr:BatchCheckLayerAvailability",
    "ecr:BatchGetImage",
    "ecr:CompleteLayerUpload",
    "ecr:DescribeImages",
    "ecr:GetDownloadUrlForLayer",
    "ecr:InitiateLayerUpload",
    "ecr:ListImages",
    "ecr:PutImage",
    "ecr:UploadLayerPart",
];

/// The registry's statements of the runner's `runner` policy (the same for its boundary).
pub(crate) fn runner(desired: &Desired, account: &Account, _runner: &Runner) -> Vec<Value> {
    let every_repository = reconcile_aws::arn(account, "ecr", "repository/*");
    let mut statements = vec![json!({
        "Sid": "EcrLogin",
        "Effect": "Allow",
        // No resource-level form exists for this action.
        "Action": ["ecr:GetAuthorizationToken"],
        "Resource": ["*"],
    })];
    if declared(desired).repositories.is_empty() {
        return statements;
    }
    let (key, value) = desired.mark();
    // What exists, so the nightly's `--ensure-ecr` learns which it must make: metadata only,
    // and what "not found" needs (a tag condition on a missing repository would answer "access
    // denied" instead).
    statements.push(json!({
        "Sid": "EcrWhichRepositoriesExist",
        "Effect": "Allow",
        "Action": ["ecr:DescribeRepositories"],
        "Resource": [every_repository],
    }));
    statements.push(json!({
        "Sid": "EcrPushPull",
        "Effect": "Allow",
        "Action": PUSH_PULL,
        "Resource": [every_repository],
        "Condition": { "StringEquals": { format!("aws:ResourceTag/{key}"): value } },
    }));
    // `--ensure-ecr` may make a repository only as this deployment's, with the mark and nothing
    // else in the request, so that reconcile manages it (a lifecycle policy once declared, drift
    // until then); an untagged create is denied at once, before the build. ECR authorizes the
    // tags of a create as `ecr:TagResource` on the new repository too (since 2022), which IAM
    // cannot tell from tagging one that exists: the deny below keeps every marked repository
    // (ours, or another deployment's) out of its reach.
    statements.push(json!({
        "Sid": "EcrMakeOnlyAsReconciles",
        "Effect": "Allow",
        "Action": ["ecr:CreateRepository", "ecr:TagResource"],
        "Resource": [every_repository],
        "Condition": {
            "StringEquals": { format!("aws:RequestTag/{key}"): value },
            "ForAllValues:StringEquals": { "aws:TagKeys": [key] },
        },
    }));
    statements.push(json!({
        "Sid": "EcrNeverRetagAMarkedRepository",
        "Effect": "Deny",
        "Action": ["ecr:TagResource", "ecr:UntagResource"],
        "Resource": [every_repository],
        // Any mark at all (`StringLike "*"` holds of every value the key has, and not of a
        // repository without it, as one being made is).
        "Condition": { "StringLike": { format!("aws:ResourceTag/{key}"): "*" } },
    }));
    statements
}

#[cfg(test)]
mod tests {
    use reconcile_core::desired::testing::Files;

    use super::*;
    use crate::CLAIM;

    const FILES: Files = Files(&[&CLAIM]);

    /// desired.toml with these repositories (TOML lines under `[ecr.repositories]`).
    fn file(top: &str, repositories: &[&str]) -> Desired {
        let mut text = format!(
            "region = \"us-east-1\"\n{top}\n[ecr.defaults]\nlifecycle_policy = \"p\"\n[ecr.lifecycle_policies.p]\nrules = [{{ rulePriority = 1, selection = {{ tagStatus = \"untagged\", countType = \"imageCountMoreThan\", countNumber = 3 }}, action = {{ type = \"expire\" }} }}]\n"
        );
        if !repositories.is_empty() {
            text.push_str("[ecr.repositories]\n");
        }
        for name in repositories {
            text.push_str(&format!("{name} = {{}}\n"));
        }
        FILES.parse(&text).unwrap()
    }

    fn account() -> Account {
        Account::new("123456789012", "us-east-1")
    }

    fn sids(statements: &[Value]) -> Vec<&str> {
        statements.iter().map(|s| s["Sid"].as_str().unwrap()).collect()
    }

    #[test]
    fn the_registry_is_granted_by_this_deployments_mark_alone() {
        let inline = Runner::default();
        let boundary = Runner { boundary: true, ..Runner::default() };
        let every = "arn:aws:ecr:us-east-1:123456789012:repository/*";
        for (top, deployment) in [("", "default"), ("deployment = \"rocm-bake\"", "rocm-bake")] {
            let desired = file(top, &["pytorch", "vllm"]);
            for which in [inline, boundary] {
                let statements = runner(&desired, &account(), &which);
                assert_eq!(
                    sids(&statements),
                    [
                        "EcrLogin",
                        "EcrWhichRepositoriesExist",
                        "EcrPushPull",
                        "EcrMakeOnlyAsReconciles",
                        "EcrNeverRetagAMarkedRepository"
                    ]
                );
                assert_eq!(statements[2]["Resource"], json!([every]));
                assert_eq!(statements[2]["Action"], json!(PUSH_PULL));
                assert_eq!(
                    statements[2]["Condition"],
                    json!({ "StringEquals": { "aws:ResourceTag/reconcile:deployment": deployment } })
                );
                assert_eq!(
                    statements[3]["Condition"],
                    json!({
                        "StringEquals": { "aws:RequestTag/reconcile:deployment": deployment },
                        "ForAllValues:StringEquals": { "aws:TagKeys": ["reconcile:deployment"] },
                    })
                );
                assert_eq!(statements[3]["Action"], json!(["ecr:CreateRepository", "ecr:TagResource"]));
                assert_eq!(statements[4]["Effect"], "Deny");
            }
        }
        // No repository declared: the login alone, whatever it is asked to save.
        let none = file("", &[]);
        assert_eq!(sids(&runner(&none, &account(), &Runner { over_by: 10_000, ..Runner::default() })), ["EcrLogin"]);
    }
}
