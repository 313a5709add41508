//! The CI identities (`[ci]`): GitHub's OIDC provider, each CI role's trust (one exact `sub`),
//! and what each may do, derived from the rest of desired.toml: the read-only policy of the plan
//! and drift roles, and the apply role's, which adds exactly the writes apply makes on exactly
//! the declared resources and nothing on the CI identities themselves.
//!
//! The actions here are the ones the resource crates call. A test runs every read command and
//! a sequence of applies that makes every kind of write, maps each request the emulator
//! recorded to its IAM action and resource, and holds these policies to exactly that set: a
//! reconciler that starts calling something new fails it until the derivation names it.

use reconcile_core::Account;
use reconcile_core::desired::{APPLY_LOCK_KEY, CiRole, Desired, GITHUB_OIDC_AUDIENCE, GITHUB_OIDC_HOST, prune_marker};
use serde_json::{Value, json};

use crate::derive::{INLINE_POLICY_LIMIT, boundary_name, size};

/// The OIDC provider's ARN: IAM names it by its host.
pub fn provider_arn(account: &Account) -> String {
    reconcile_aws::arn(account, "iam", &format!("oidc-provider/{GITHUB_OIDC_HOST}"))
}

/// Whether `arn` is GitHub Actions' OIDC provider, in any account or partition.
pub fn is_github_provider(arn: &str) -> bool {
    arn.starts_with("arn:") && arn.ends_with(&format!(":oidc-provider/{GITHUB_OIDC_HOST}"))
}

/// The trust policy of a CI role: web identity from GitHub's provider only, for the AWS
/// audience, for exactly one subject (`StringEquals`, never `StringLike`).
pub fn trust_policy(role: &CiRole, account: &Account) -> Value {
    json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Principal": { "Federated": provider_arn(account) },
            "Action": "sts:AssumeRoleWithWebIdentity",
            "Condition": {
                "StringEquals": {
                    format!("{GITHUB_OIDC_HOST}:aud"): GITHUB_OIDC_AUDIENCE,
                    format!("{GITHUB_OIDC_HOST}:sub"): role.subject,
                },
            },
        }],
    })
}

/// What a live trust policy allows beyond the `derived` one (both canonical), each as a phrase:
/// another principal, another action, a missing or different audience, a subject matched by
/// pattern or another subject. Empty when it allows nothing more.
pub fn trust_widening(live: &Value, derived: &Value) -> Vec<String> {
    let first = |value: &Value| strings(value).into_iter().next().unwrap_or_default();
    let derived_statement = &derived["Statement"][0];
    let provider = first(&derived_statement["Principal"]["Federated"]);
    let subject = first(&derived_statement["Condition"]["StringEquals"][format!("{GITHUB_OIDC_HOST}:sub")]);
    let Some(statements) = live.get("Statement").and_then(Value::as_array) else {
        return vec!["it is not a policy document".to_owned()];
    };
    let mut reasons = Vec::new();
    for statement in statements.iter().filter(|s| s.get("Effect").and_then(Value::as_str) == Some("Allow")) {
        if statement.get("NotPrincipal").is_some() || statement.get("NotAction").is_some() {
            reasons.push("a statement allows by exclusion (NotPrincipal or NotAction)".to_owned());
            continue;
        }
        match statement.get("Principal") {
            Some(Value::Object(principals)) => {
                for (kind, values) in principals {
                    for value in strings(values) {
                        if !(kind == "Federated" && value == provider) {
                            reasons.push(format!("it trusts {kind} principal `{value}`"));
                        }
                    }
                }
            }
            Some(other) => reasons.push(format!("it trusts principal `{}`", strings(other).join(", "))),
            None => reasons.push("a statement names no principal".to_owned()),
        }
        for action in statement.get("Action").map(strings).unwrap_or_default() {
            if action != "sts:AssumeRoleWithWebIdentity" {
                reasons.push(format!("it allows `{action}`"));
            }
        }
        let conditions = statement.get("Condition").and_then(Value::as_object);
        let equals = |key: &str| -> Option<Vec<String>> {
            conditions?.get("StringEquals")?.get(format!("{GITHUB_OIDC_HOST}:{key}")).map(strings)
        };
        match equals("aud") {
            Some(audiences) if audiences == [GITHUB_OIDC_AUDIENCE] => {}
            Some(audiences) => reasons.push(format!("its audience is {}", quoted(&audiences))),
            None => reasons.push(format!("it does not require the audience `{GITHUB_OIDC_AUDIENCE}`")),
        }
        match equals("sub") {
            Some(subjects) if subjects == [subject.clone()] => {}
            Some(subjects) => reasons.push(format!("it trusts the subjects {}", quoted(&subjects))),
            None => {
                let patterns: Vec<String> = conditions
                    .into_iter()
                    .flat_map(|c| c.iter())
                    .filter_map(|(operator, keys)| {
                        let values = keys.get(format!("{GITHUB_OIDC_HOST}:sub"))?;
                        Some(format!("{operator} {}", quoted(&strings(values))))
                    })
                    .collect();
                if patterns.is_empty() {
                    reasons.push("it trusts any subject (no `sub` condition)".to_owned());
                } else {
                    reasons.push(format!("it matches the subject by {}", patterns.join(", ")));
                }
            }
        }
    }
    reasons.sort();
    reasons.dedup();
    reasons
}

/// The one subject a live trust admits when it is the `derived` trust (both canonical) in every
/// way but the subject: the trust of another repository, branch or environment, exactly. `None`
/// when it differs in anything else (what [`trust_widening`] names then).
pub fn other_subject(live: &Value, derived: &Value) -> Option<String> {
    let key = format!("{GITHUB_OIDC_HOST}:sub");
    let subject = live.get("Statement")?.get(0)?.get("Condition")?.get("StringEquals")?.get(&key)?;
    let subjects = strings(subject);
    let [one] = subjects.as_slice() else { return None };
    let mut same = derived.clone();
    *same.get_mut("Statement")?.get_mut(0)?.get_mut("Condition")?.get_mut("StringEquals")?.get_mut(&key)? =
        subject.clone();
    (same == *live).then(|| one.clone())
}

/// The subject the `derived` trust admits.
pub fn derived_subject(derived: &Value) -> String {
    let subject = &derived["Statement"][0]["Condition"]["StringEquals"][format!("{GITHUB_OIDC_HOST}:sub")];
    strings(subject).into_iter().next().unwrap_or_default()
}

/// The `sub` conditions of the statements of `trust` (canonical form) that trust GitHub's
/// provider, as `operator value` phrases; `None` when no statement trusts it.
pub fn github_subjects(trust: &Value) -> Option<Vec<String>> {
    let statements = trust.get("Statement")?.as_array()?;
    let mut subjects = Vec::new();
    let mut trusted = false;
    for statement in statements {
        let federated = statement.get("Principal").and_then(|p| p.get("Federated")).map(strings).unwrap_or_default();
        if !federated.iter().any(|arn| is_github_provider(arn)) {
            continue;
        }
        trusted = true;
        let conditions = statement.get("Condition").and_then(Value::as_object);
        let before = subjects.len();
        for (operator, keys) in conditions.into_iter().flat_map(|c| c.iter()) {
            if let Some(values) = keys.get(format!("{GITHUB_OIDC_HOST}:sub")) {
                subjects.push(format!("{operator} {}", quoted(&strings(values))));
            }
        }
        if subjects.len() == before {
            subjects.push("any subject".to_owned());
        }
    }
    trusted.then_some(subjects)
}

fn strings(value: &Value) -> Vec<String> {
    match value {
        Value::Array(items) => items.iter().flat_map(strings).collect(),
        Value::String(text) => vec![text.clone()],
        other => vec![other.to_string()],
    }
}

fn quoted(values: &[String]) -> String {
    values.iter().map(|v| format!("`{v}`")).collect::<Vec<_>>().join(", ")
}

/// What every read command (`plan`, `drift`, `usage`, `outputs`, `plan --prune`) reads.
const ECR_READS: [&str; 5] = [
    "ecr:DescribeRepositories",
    "ecr:GetLifecyclePolicy",
    "ecr:GetRepositoryPolicy",
    "ecr:ListTagsForResource",
    "ecr:DescribeImages",
];
const S3_READS: [&str; 12] = [
    "s3:ListBucket",
    "s3:GetBucketTagging",
    "s3:GetBucketPublicAccessBlock",
    "s3:GetEncryptionConfiguration",
    "s3:GetBucketPolicy",
    "s3:GetBucketOwnershipControls",
    "s3:GetBucketAcl",
    "s3:GetBucketVersioning",
    "s3:GetReplicationConfiguration",
    "s3:GetBucketWebsite",
    "s3:GetBucketLogging",
    "s3:GetLifecycleConfiguration",
];
const ROLE_READS: [&str; 4] =
    ["iam:GetRole", "iam:ListRolePolicies", "iam:GetRolePolicy", "iam:ListAttachedRolePolicies"];

/// What apply writes, by resource: only what it can be led to write by some state of the
/// account. desired.toml declares no repository or bucket policy, so apply only ever deletes
/// one; every declared repository has a lifecycle policy, so apply only ever puts one.
const ECR_WRITES: [&str; 6] = [
    "ecr:CreateRepository",
    "ecr:PutLifecyclePolicy",
    "ecr:DeleteRepositoryPolicy",
    "ecr:UntagResource",
    "ecr:PutImageTagMutability",
    "ecr:PutImageScanningConfiguration",
];
/// `DeleteBucketTagging` needs `s3:PutBucketTagging`, `DeleteBucketReplication`
/// `s3:PutReplicationConfiguration`, `DeleteBucketLifecycle` `s3:PutLifecycleConfiguration`.
///
/// Never a bucket's expiry (`s3:PutLifecycleConfiguration`, which deletes its objects) or its ACL
/// (`s3:PutBucketAcl`, who may reach them): those changes are an administrator's
/// (`Reconciler::administrators_only`), and a bucket that declares an expiry is made with it, so
/// by an administrator too.
const S3_WRITES: [&str; 9] = [
    "s3:PutBucketTagging",
    "s3:PutBucketPublicAccessBlock",
    "s3:PutEncryptionConfiguration",
    "s3:DeleteBucketPolicy",
    "s3:PutBucketOwnershipControls",
    "s3:PutBucketVersioning",
    "s3:PutReplicationConfiguration",
    "s3:DeleteBucketWebsite",
    "s3:PutBucketLogging",
];
const LOCK_WRITES: [&str; 3] = ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"];
/// Never granted to the apply role, whatever else a policy attached to it by hand may grant: every
/// write in IAM (who may assume a role, what a role may do, a boundary, a new identity, the OIDC
/// provider) and assuming a role. `iam:PassRole` is not among them: apply passes the runner's
/// role to CodeBuild, and its own statement allows only that.
const NEVER: [&str; 17] = [
    "iam:Add*",
    "iam:Attach*",
    "iam:Change*",
    "iam:Create*",
    "iam:Deactivate*",
    "iam:Delete*",
    "iam:Detach*",
    "iam:Enable*",
    "iam:Put*",
    "iam:Remove*",
    "iam:Reset*",
    "iam:Set*",
    "iam:Tag*",
    "iam:Untag*",
    "iam:Update*",
    "iam:Upload*",
    "sts:AssumeRole",
];
/// A webhook a project does not declare is deleted; only a declared one is made or updated.
const PROJECT_WRITES: [&str; 4] = [
    "codebuild:CreateProject",
    "codebuild:UpdateProject",
    "codebuild:UpdateProjectVisibility",
    "codebuild:DeleteWebhook",
];
const WEBHOOK_WRITES: [&str; 2] = ["codebuild:CreateWebhook", "codebuild:UpdateWebhook"];

fn statement(sid: &str, actions: &[&str], resources: Vec<String>) -> Value {
    json!({ "Sid": sid, "Effect": "Allow", "Action": actions, "Resource": resources })
}

fn bucket_arns(desired: &Desired, account: &Account) -> Vec<String> {
    desired
        .s3
        .buckets
        .iter()
        .map(|b| reconcile_aws::arn(account, "s3", &b.name.render(&account.id, &account.region)))
        .collect()
}

fn role_arn(account: &Account, name: &str) -> String {
    reconcile_aws::arn(account, "iam", &format!("role/{name}"))
}

fn project_arns(desired: &Desired, account: &Account) -> Vec<String> {
    desired
        .codebuild
        .projects
        .iter()
        .map(|p| reconcile_aws::arn(account, "codebuild", &format!("project/{}", p.name)))
        .collect()
}

/// What a plan reads (and so apply, which plans first, and the drift check, which reads more of
/// the same services only).
fn read_statements(desired: &Desired, account: &Account) -> Vec<Value> {
    let mut statements = Vec::new();
    if !desired.ecr.repositories.is_empty() {
        // Every repository, not only the declared: the drift check looks for undeclared ones.
        statements.push(statement(
            "EveryRepositoryOfTheRegistry",
            &ECR_READS,
            vec![reconcile_aws::arn(account, "ecr", "repository/*")],
        ));
    }
    let buckets = bucket_arns(desired, account);
    if !buckets.is_empty() {
        statements.push(statement("TheCompilerCacheBucketsSettings", &S3_READS, buckets));
    }
    let mut roles: Vec<String> = desired.iam.roles.iter().map(|r| role_arn(account, &r.name)).collect();
    roles.extend(desired.ci.iter().flat_map(|ci| &ci.roles).map(|r| role_arn(account, &r.name)));
    if !roles.is_empty() {
        statements.push(statement("TheManagedRoles", &ROLE_READS, roles));
    }
    let boundaries: Vec<String> =
        desired.iam.roles.iter().map(|role| crate::spec::policy_arn(account, &boundary_name(role))).collect();
    if !boundaries.is_empty() {
        statements.push(statement("TheRunnersRolesBoundaries", &["iam:GetPolicy", "iam:GetPolicyVersion"], boundaries));
    }
    if desired.ci.is_some() {
        statements.push(statement(
            "GitHubsIdentityProvider",
            &["iam:GetOpenIDConnectProvider"],
            vec![provider_arn(account)],
        ));
        // ListRoles has no resource to scope to: the search for other roles that trust GitHub.
        statements.push(statement("RolesThatTrustGitHub", &["iam:ListRoles"], vec!["*".to_owned()]));
    }
    let projects = project_arns(desired, account);
    if !projects.is_empty() {
        statements.push(statement("TheRunnerProjectAndItsWebhook", &["codebuild:BatchGetProjects"], projects));
    }
    if desired.codebuild.projects.iter().any(|p| p.source_auth.is_none()) {
        statements.push(statement(
            "HowCodeBuildReachesGitHub",
            &["codebuild:ListSourceCredentials"],
            vec!["*".to_owned()],
        ));
    }
    let connections: Vec<String> = desired.codebuild.projects.iter().filter_map(|p| p.source_auth.clone()).collect();
    if !connections.is_empty() {
        statements.push(statement("TheConnectionToGitHub", &["codeconnections:GetConnection"], connections));
    }
    statements
}

/// The plan and drift roles' policy, and `docs/read-only-policy.json`'s: a plan's reads, and what
/// the drift check reads besides (who made the drift, and the nights' cost).
pub fn read_only_policy(desired: &Desired, account: &Account) -> Value {
    let mut statements = read_statements(desired, account);
    let projects = project_arns(desired, account);
    if !projects.is_empty() {
        statements.push(statement(
            "TheRunnersBuilds",
            &["codebuild:ListBuildsForProject", "codebuild:BatchGetBuilds"],
            projects,
        ));
        // None of these has a resource to scope to.
        statements.push(statement(
            "WhatAMinuteCostsAndWhatWasBilled",
            &["pricing:GetProducts", "ce:GetCostAndUsage"],
            vec!["*".to_owned()],
        ));
    }
    // Who made the drift: CloudTrail's event history, which has no resource to scope to.
    statements.push(statement("WhoChangedIt", &["cloudtrail:LookupEvents"], vec!["*".to_owned()]));
    if !desired.s3.buckets.is_empty() {
        statements.push(statement(
            "WhatTheCacheStoresEachDay",
            &["cloudwatch:ListMetrics", "cloudwatch:GetMetricStatistics"],
            vec!["*".to_owned()],
        ));
    }
    json!({ "Version": "2012-10-17", "Statement": statements })
}

/// The apply role's policy: the reads, and exactly the writes apply makes on the declared
/// resources. No write in IAM at all (every IAM change is an administrator's), and a statement
/// that denies every one, and assuming a role, so that nothing attached to the role later grants
/// them; `iam:PassRole` only for the roles CodeBuild projects run as, only to CodeBuild. `Err`
/// when it would not fit in a role's inline policies.
pub fn apply_policy(desired: &Desired, account: &Account) -> Result<Value, String> {
    let mut statements = read_statements(desired, account);
    let every_repository = vec![reconcile_aws::arn(account, "ecr", "repository/*")];
    match prune_marker(desired) {
        // Every declared repository carries reconcile's tag: the repositories are granted by it,
        // not by name, so declaring one more (the second use of this tool, after a bake target
        // is added) changes no CI policy, and the apply role applies it. Only a repository made
        // with the tag may be made, only one carrying it changed, tagged (so no other is taken
        // over by tagging it) or, with `--prune`, deleted.
        Ok((key, value)) => {
            let tagged = json!({ "StringEquals": { format!("aws:ResourceTag/{key}"): value } });
            let created = json!({ "StringEquals": { format!("aws:RequestTag/{key}"): value } });
            let mut writes: Vec<&str> = ECR_WRITES.iter().copied().filter(|a| *a != "ecr:CreateRepository").collect();
            writes.extend(["ecr:TagResource", "ecr:DeleteRepository"]);
            statements.push(json!({
                "Sid": "TheRepositoriesReconcileManages",
                "Effect": "Allow",
                "Action": writes,
                "Resource": every_repository,
                "Condition": tagged,
            }));
            statements.push(json!({
                "Sid": "MakeRepositoriesTaggedAsReconciles",
                "Effect": "Allow",
                "Action": ["ecr:CreateRepository", "ecr:TagResource"],
                "Resource": every_repository,
                "Condition": created,
            }));
        }
        // Without one tag on every repository, nothing tells them apart from a repository made
        // by hand: they are granted by name (and nothing is pruned).
        Err(_) => {
            let repositories: Vec<String> = desired
                .ecr
                .repositories
                .iter()
                .map(|r| reconcile_aws::arn(account, "ecr", &format!("repository/{}", r.name)))
                .collect();
            if !repositories.is_empty() {
                statements.push(statement("TheDeclaredRepositories", &ECR_WRITES, repositories));
            }
            // Tags are only ever set where desired.toml declares some (a create sends them too,
            // which needs the same permission); undeclared ones are removed anywhere.
            let tagged: Vec<String> = desired
                .ecr
                .repositories
                .iter()
                .filter(|r| !r.tags.is_empty())
                .map(|r| reconcile_aws::arn(account, "ecr", &format!("repository/{}", r.name)))
                .collect();
            if !tagged.is_empty() {
                statements.push(statement("TheDeclaredRepositoriesTags", &["ecr:TagResource"], tagged));
            }
        }
    }
    let buckets = bucket_arns(desired, account);
    if !buckets.is_empty() {
        statements.push(statement("TheCompilerCacheBucket", &S3_WRITES, buckets));
    }
    let unexpiring: Vec<String> = desired
        .s3
        .buckets
        .iter()
        .filter(|b| b.lifecycle_rules.is_none())
        .map(|b| reconcile_aws::arn(account, "s3", &b.name.render(&account.id, &account.region)))
        .collect();
    if !unexpiring.is_empty() {
        statements.push(statement("MakeTheBucketsWithoutAnExpiry", &["s3:CreateBucket"], unexpiring));
    }
    if let Some(bucket) = desired.s3.lock_bucket() {
        let bucket = reconcile_aws::arn(account, "s3", &bucket.name.render(&account.id, &account.region));
        statements.push(statement("TheApplyLock", &LOCK_WRITES, vec![format!("{bucket}/{APPLY_LOCK_KEY}")]));
    }
    let passed: Vec<String> = desired
        .iam
        .roles
        .iter()
        .filter(|role| desired.codebuild.projects.iter().any(|p| p.service_role == role.key))
        .map(|role| role_arn(account, &role.name))
        .collect();
    if !passed.is_empty() {
        statements.push(json!({
            "Sid": "PassTheRunnersRoleToCodeBuildOnly",
            "Effect": "Allow",
            "Action": ["iam:PassRole"],
            "Resource": passed,
            "Condition": { "StringEquals": { "iam:PassedToService": "codebuild.amazonaws.com" } },
        }));
    }
    let projects = project_arns(desired, account);
    if !projects.is_empty() {
        statements.push(statement("TheRunnerProject", &PROJECT_WRITES, projects));
    }
    let hooked: Vec<String> = desired
        .codebuild
        .projects
        .iter()
        .filter(|p| p.webhook.is_some())
        .map(|p| reconcile_aws::arn(account, "codebuild", &format!("project/{}", p.name)))
        .collect();
    if !hooked.is_empty() {
        statements.push(statement("TheRunnersWebhook", &WEBHOOK_WRITES, hooked));
    }
    statements.push(json!({
        "Sid": "NeverAnIdentityOrPermissionChangeNorAnotherRole",
        "Effect": "Deny",
        "Action": NEVER,
        "Resource": ["*"],
    }));
    let policy = json!({ "Version": "2012-10-17", "Statement": statements });
    if size(&policy) > INLINE_POLICY_LIMIT {
        return Err(format!(
            "the derived policy of the apply role would be {} characters, over IAM's limit of {INLINE_POLICY_LIMIT} \
             for a role's inline policies",
            size(&policy)
        ));
    }
    Ok(policy)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use reconcile_core::desired::CiPurpose;

    use super::*;
    use crate::policy::canonical;

    const BASE: &str = r#"region = "us-east-1"
[ecr.defaults]
lifecycle_policy = "p"
[ecr.lifecycle_policies.p]
rules = [{ rulePriority = 1, selection = { tagStatus = "untagged", countType = "imageCountMoreThan", countNumber = 3 }, action = { type = "expire" } }]
[ecr.repositories]
pytorch = {}
[s3.buckets.cache]
name = "cache-${account_id}"
[iam.roles.codebuild]
name = "runner"
trusted_services = ["codebuild.amazonaws.com"]
[codebuild.projects.runner]
name = "rocm-bake"
source_location = "https://github.com/ROCm/rocm-bake"
service_role = "codebuild"
build_timeout_hours = 4
[github]
repository = "ROCm/rocm-bake"
[ci]
plan_role = "p"
drift_role = "d"
apply_role = "a"
environment = "prod"
"#;

    fn account() -> Account {
        Account::new("123456789012", "us-east-1")
    }

    fn sids(policy: &Value) -> Vec<&str> {
        policy["Statement"].as_array().unwrap().iter().map(|s| s["Sid"].as_str().unwrap()).collect()
    }

    #[test]
    fn the_apply_policy_grants_only_what_this_desired_file_can_lead_apply_to_write() {
        // No tags, no managed-by marker, no webhook, no bucket expiry: nothing to tag, nothing to
        // prune, no webhook to make; a webhook can still be deleted, and the bucket, which has no
        // expiry to be made with, made.
        let bare = Desired::parse(Path::new("desired.toml"), BASE).unwrap();
        let policy = apply_policy(&bare, &account()).unwrap();
        let granted = sids(&policy);
        for absent in ["TheDeclaredRepositoriesTags", "TheRepositoriesReconcileManages", "TheRunnersWebhook"] {
            assert!(!granted.contains(&absent), "{absent}: {granted:?}");
        }
        assert!(policy.to_string().contains("codebuild:DeleteWebhook"));
        assert!(granted.contains(&"MakeTheBucketsWithoutAnExpiry"), "{granted:?}");

        let full = BASE
            .replace("lifecycle_policy = \"p\"\n", "lifecycle_policy = \"p\"\ntags = { managed-by = \"reconcile\" }\n")
            .replace("name = \"cache-${account_id}\"\n", "name = \"cache-${account_id}\"\nlifecycle_rules = [{ id = \"x\", expiration_days = 30 }]\n")
            .replace("trusted_services = [\"codebuild.amazonaws.com\"]\n", "trusted_services = [\"codebuild.amazonaws.com\"]\ntags = { a = \"b\" }\n")
            .replace("build_timeout_hours = 4\n", "build_timeout_hours = 4\n[codebuild.projects.runner.webhook]\nfilter_groups = [[{ type = \"EVENT\", pattern = \"WORKFLOW_JOB_QUEUED\" }]]\n");
        let full = Desired::parse(Path::new("desired.toml"), &full).unwrap();
        let granted_all = apply_policy(&full, &account()).unwrap();
        for present in ["TheRepositoriesReconcileManages", "MakeRepositoriesTaggedAsReconciles", "TheRunnersWebhook"] {
            assert!(sids(&granted_all).contains(&present), "{present}");
        }
        // A bucket's expiry and ACL, and so making a bucket that declares an expiry, are an
        // administrator's: never granted.
        assert!(!sids(&granted_all).contains(&"MakeTheBucketsWithoutAnExpiry"));
        for never in ["s3:PutLifecycleConfiguration", "s3:PutBucketAcl", "s3:CreateBucket"] {
            assert!(!granted_all.to_string().contains(never), "{never}");
            assert!(!policy.to_string().contains(never) || never == "s3:CreateBucket", "{never}");
        }
        // Nothing in IAM is written but passing the runner's role, and every write there, and
        // assuming a role, is denied.
        for policy in [&policy, &granted_all] {
            for statement in policy["Statement"].as_array().unwrap() {
                let actions: Vec<&str> =
                    statement["Action"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
                if statement["Effect"] == "Deny" {
                    assert_eq!(statement["Resource"], json!(["*"]));
                    assert!(actions.contains(&"iam:Put*") && actions.contains(&"sts:AssumeRole"), "{statement}");
                    continue;
                }
                for action in actions.iter().filter(|a| a.starts_with("iam:")) {
                    assert!(
                        action.starts_with("iam:Get") || action.starts_with("iam:List") || *action == "iam:PassRole",
                        "{statement}"
                    );
                }
                assert!(!actions.iter().any(|a| a.starts_with("sts:")), "{statement}");
            }
        }
    }

    /// The account as desired.toml derives it: the three CI roles, the runner's role with its
    /// inline policy and boundary, and the project that runs as it.
    fn derived_account(desired: &Desired) -> crate::reach::Model {
        let account = account();
        let arn = |name: &str| role_arn(&account, name);
        let ci = desired.ci.as_ref().unwrap();
        let mut roles: Vec<crate::reach::Role> = ci
            .roles
            .iter()
            .map(|role| crate::reach::Role {
                arn: arn(&role.name),
                policies: vec![if role.purpose.reads_only() {
                    read_only_policy(desired, &account)
                } else {
                    apply_policy(desired, &account).unwrap()
                }],
                boundary: None,
            })
            .collect();
        for role in &desired.iam.roles {
            let projects: Vec<String> = desired.codebuild.projects.iter().map(|p| p.name.clone()).collect();
            roles.push(crate::reach::Role {
                arn: arn(&role.name),
                policies: vec![crate::derive::inline_policy(desired, role, &account, &projects).unwrap()],
                boundary: Some((
                    crate::spec::policy_arn(&account, &boundary_name(role)),
                    crate::derive::boundary_policy(desired, role, &account, &projects).unwrap(),
                )),
            });
        }
        let projects = desired
            .codebuild
            .projects
            .iter()
            .map(|p| crate::reach::Project {
                arn: reconcile_aws::arn(&account, "codebuild", &format!("project/{}", p.name)),
                service_role: arn(&desired.iam.roles.iter().find(|r| r.key == p.service_role).unwrap().name),
            })
            .collect();
        crate::reach::Model { account: account.id, roles, projects }
    }

    #[test]
    fn no_ci_role_nor_any_role_it_reaches_can_widen_anything() {
        use crate::evaluate::{Context, Request};
        let tagged = BASE
            .replace("lifecycle_policy = \"p\"\n", "lifecycle_policy = \"p\"\ntags = { managed-by = \"reconcile\" }\n");
        for text in [BASE, tagged.as_str()] {
            let desired = Desired::parse(Path::new("desired.toml"), text).unwrap();
            let model = derived_account(&desired);
            let runner = "arn:aws:iam::123456789012:role/runner";
            for role in ["p", "d", "a"] {
                let from = format!("arn:aws:iam::123456789012:role/{role}");
                assert_eq!(model.escalations_through(&from), Vec::new(), "{role}");
                let reached: Vec<String> = model.reach(&from).into_iter().map(|path| path.role).collect();
                // The apply role reaches the runner's role: it may change the project, whose next
                // build runs as it. Bounded by its boundary, that is no escalation.
                let expected = if role == "a" { vec![from.clone(), runner.to_owned()] } else { vec![from.clone()] };
                assert_eq!(reached, expected);
            }
            // The four calls of the attack, as the apply role: none allowed.
            let apply = model.role("arn:aws:iam::123456789012:role/a").unwrap();
            let principal = crate::evaluate::Principal { policies: &apply.policies, boundary: None };
            let boundary =
                Context::new().with("iam:PermissionsBoundary", &["arn:aws:iam::123456789012:policy/runner-boundary"]);
            for (action, resource) in [
                ("iam:PutRolePolicy", runner),
                ("iam:UpdateAssumeRolePolicy", runner),
                ("sts:AssumeRole", runner),
                ("iam:PutRolePolicy", "arn:aws:iam::123456789012:role/a"),
                ("iam:DeleteRolePermissionsBoundary", runner),
                ("iam:PutRolePermissionsBoundary", runner),
                ("iam:CreateRole", "arn:aws:iam::123456789012:role/new"),
                ("iam:CreatePolicyVersion", "arn:aws:iam::123456789012:policy/runner-boundary"),
                ("iam:AttachRolePolicy", runner),
            ] {
                for context in [&Context::new(), &boundary] {
                    assert_eq!(
                        principal.decide(Request { action, resource, context }),
                        crate::evaluate::Decision::Denied,
                        "{action} on {resource}"
                    );
                }
            }
            // Were the runner's inline policy rewritten to allow everything, its boundary would
            // still bound it: no escalation through the project either.
            let mut rewritten = model.clone();
            let runner_role = rewritten.roles.iter_mut().find(|r| r.arn == runner).unwrap();
            runner_role.policies =
                vec![json!({ "Statement": [{ "Effect": "Allow", "Action": "*", "Resource": "*" }] })];
            assert_eq!(rewritten.escalations_through("arn:aws:iam::123456789012:role/a"), Vec::new());
            let bounded = rewritten.role(runner).unwrap();
            let bounded = crate::evaluate::Principal {
                policies: &bounded.policies,
                boundary: bounded.boundary.as_ref().map(|(_, document)| document),
            };
            let none = Context::new();
            assert!(!bounded.allows(Request { action: "iam:PutRolePolicy", resource: runner, context: &none }));
            assert!(!bounded.allows(Request {
                action: "s3:PutObject",
                resource: "arn:aws:s3:::cache-123456789012/reconcile/apply.lock",
                context: &none
            }));
            assert!(bounded.allows(Request {
                action: "s3:PutObject",
                resource: "arn:aws:s3:::cache-123456789012/sccache/x",
                context: &none
            }));
        }
    }

    #[test]
    fn the_runners_policy_grants_repositories_by_reconciles_tag_and_never_changes_with_them() {
        use crate::evaluate::{Context, Principal, Request};
        let tagged = BASE
            .replace("lifecycle_policy = \"p\"\n", "lifecycle_policy = \"p\"\ntags = { managed-by = \"reconcile\" }\n");
        let one = Desired::parse(Path::new("desired.toml"), &tagged).unwrap();
        let three = Desired::parse(
            Path::new("desired.toml"),
            &tagged.replace("pytorch = {}\n", "pytorch = {}\nvllm = {}\nvllm-cache = {}\n"),
        )
        .unwrap();
        let account = account();
        let role = &one.iam.roles[0];
        let projects = ["rocm-bake".to_owned()];
        let inline = crate::derive::inline_policy(&one, role, &account, &projects).unwrap();
        let boundary = crate::derive::boundary_policy(&one, role, &account, &projects).unwrap();
        assert_eq!(inline, crate::derive::inline_policy(&three, &three.iam.roles[0], &account, &projects).unwrap());
        assert_eq!(boundary, crate::derive::boundary_policy(&three, &three.iam.roles[0], &account, &projects).unwrap());
        let runner = Principal { policies: std::slice::from_ref(&inline), boundary: Some(&boundary) };
        let repository = "arn:aws:ecr:us-east-1:123456789012:repository/vllm";
        let ours = Context::new().with("aws:ResourceTag/managed-by", &["reconcile"]);
        let theirs = Context::new().with("aws:ResourceTag/managed-by", &["someone"]);
        assert!(runner.allows(Request { action: "ecr:PutImage", resource: repository, context: &ours }));
        assert!(!runner.allows(Request { action: "ecr:PutImage", resource: repository, context: &theirs }));
        assert!(!runner.allows(Request { action: "ecr:PutImage", resource: repository, context: &Context::new() }));
        let made = Context::new().with("aws:RequestTag/managed-by", &["reconcile"]);
        assert!(runner.allows(Request { action: "ecr:CreateRepository", resource: repository, context: &made }));
        assert!(!runner.allows(Request {
            action: "ecr:CreateRepository",
            resource: repository,
            context: &Context::new()
        }));
        assert!(!runner.allows(Request { action: "ecr:TagResource", resource: repository, context: &made }));
        assert!(runner.allows(Request {
            action: "ecr:DescribeRepositories",
            resource: repository,
            context: &Context::new()
        }));
        // Untagged repositories: named in the inline policy, the region's registry in the boundary.
        let bare = Desired::parse(Path::new("desired.toml"), BASE).unwrap();
        let boundary = crate::derive::boundary_policy(&bare, &bare.iam.roles[0], &account, &projects).unwrap();
        assert!(boundary.to_string().contains("\"arn:aws:ecr:us-east-1:123456789012:repository/*\""), "{boundary}");
        let inline = crate::derive::inline_policy(&bare, &bare.iam.roles[0], &account, &projects).unwrap();
        assert!(inline.to_string().contains("repository/pytorch\""), "{inline}");
    }

    #[test]
    fn the_derived_trust_admits_nothing_more_and_each_widening_is_named() {
        let desired = Desired::parse(Path::new("desired.toml"), BASE).unwrap();
        let role = desired.ci.as_ref().unwrap().role(CiPurpose::Apply).unwrap().clone();
        let derived = canonical(&trust_policy(&role, &account()), "aws");
        assert_eq!(trust_widening(&derived, &derived), Vec::<String>::new());
        assert_eq!(
            github_subjects(&derived),
            Some(vec![
                "StringEquals `repo:ROCm/rocm-bake:environment:prod:job_workflow_ref:ROCm/rocm-bake/.github/workflows/\
                 apply-after-merge.yml@refs/heads/main`"
                    .to_owned()
            ])
        );

        // Exactly another subject: the plan's change of whom it trusts, not a widening.
        let mut forked = derived.clone();
        forked["Statement"][0]["Condition"]["StringEquals"][format!("{GITHUB_OIDC_HOST}:sub")] =
            json!(["repo:attacker/fork:environment:prod"]);
        assert_eq!(other_subject(&forked, &derived), Some("repo:attacker/fork:environment:prod".to_owned()));
        let subject = "repo:ROCm/rocm-bake:environment:prod:job_workflow_ref:ROCm/rocm-bake/.github/workflows/\
                       apply-after-merge.yml@refs/heads/main";
        assert_eq!(derived_subject(&derived), subject);
        assert_eq!(other_subject(&derived, &derived), Some(subject.to_owned()));
        let mut two = derived.clone();
        two["Statement"][0]["Condition"]["StringEquals"][format!("{GITHUB_OIDC_HOST}:sub")] =
            json!(["repo:a/b:pull_request", subject]);
        assert_eq!(other_subject(&two, &derived), None, "two subjects admit more");
        let mut pattern = derived.clone();
        pattern["Statement"][0]["Condition"] = json!({
            "StringEquals": { format!("{GITHUB_OIDC_HOST}:aud"): ["sts.amazonaws.com"] },
            "StringLike": { format!("{GITHUB_OIDC_HOST}:sub"): ["repo:ROCm/*"] },
        });
        assert_eq!(other_subject(&pattern, &derived), None);
        assert_eq!(trust_widening(&pattern, &derived), ["it matches the subject by StringLike `repo:ROCm/*`"]);
        let mut no_audience = forked.clone();
        no_audience["Statement"][0]["Condition"]["StringEquals"]
            .as_object_mut()
            .unwrap()
            .remove(&format!("{GITHUB_OIDC_HOST}:aud"));
        assert_eq!(other_subject(&no_audience, &derived), None);

        let mut open = derived.clone();
        open["Statement"][0]["Condition"] = json!({});
        assert_eq!(
            trust_widening(&open, &derived),
            ["it does not require the audience `sts.amazonaws.com`", "it trusts any subject (no `sub` condition)",]
        );
        assert_eq!(github_subjects(&open), Some(vec!["any subject".to_owned()]));
        let mut other = derived.clone();
        other["Statement"][0]["Principal"] = json!({ "AWS": ["*"] });
        other["Statement"][0]["Action"] = json!(["sts:AssumeRole"]);
        assert_eq!(trust_widening(&other, &derived), ["it allows `sts:AssumeRole`", "it trusts AWS principal `*`"]);
        assert_eq!(github_subjects(&other), None);
        assert_eq!(trust_widening(&json!("not json"), &derived), ["it is not a policy document"]);
        // A deny narrows: it is not a widening.
        let mut denied = derived.clone();
        denied["Statement"].as_array_mut().unwrap().push(json!({ "Effect": "Deny", "Principal": "*", "Action": "*" }));
        assert_eq!(trust_widening(&denied, &derived), Vec::<String>::new());
    }
}
