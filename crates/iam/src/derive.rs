//! The role's inline policy, derived from the rest of the desired state: push and pull on
//! exactly the declared repositories, the compiler cache's objects, and the logs of the
//! projects that run as the role. Never a hand-kept list of ARNs, so declaring a repository
//! extends the role in the same plan.

use std::collections::{BTreeMap, BTreeSet};

use reconcile_core::Account;
use reconcile_core::desired::{Desired, Role, log_group};
use reconcile_core::json::to_compact;
use serde_json::{Value, json};

/// IAM's limit on the total size of a role's inline policies, in characters without whitespace.
pub const INLINE_POLICY_LIMIT: usize = 10_240;

/// What a pushing and pulling build (BuildKit's registry cache included) needs on a repository,
/// plus `ecr:CreateRepository` for the nightly's `--ensure-ecr`.
const ECR_ACTIONS: [&str; 11] = [
    "ecr:BatchCheckLayerAvailability",
    "ecr:BatchGetImage",
    "ecr:CompleteLayerUpload",
    "ecr:CreateRepository",
    "ecr:DescribeImages",
    "ecr:DescribeRepositories",
    "ecr:GetDownloadUrlForLayer",
    "ecr:InitiateLayerUpload",
    "ecr:ListImages",
    "ecr:PutImage",
    "ecr:UploadLayerPart",
];

/// The derived inline policy of `role`, or why it cannot be one.
pub fn inline_policy(desired: &Desired, role: &Role, account: &Account, projects: &[String]) -> Result<Value, String> {
    let repository_arn = |pattern: &str| reconcile_aws::arn(account, "ecr", &format!("repository/{pattern}"));
    let names: Vec<&str> = desired.ecr.repositories.iter().map(|r| r.name.as_str()).collect();

    let mut patterns: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    let mut policy = build(desired, account, &patterns.iter().map(|p| repository_arn(p)).collect::<Vec<_>>(), projects);
    // Too long with every repository listed: cover repositories that share a name prefix with
    // one `prefix*` pattern, most characters saved first, until it fits or nothing is left.
    while size(&policy) > INLINE_POLICY_LIMIT {
        let Some((prefix, covered)) = best_prefix(&patterns) else { break };
        patterns.retain(|p| !covered.contains(p));
        patterns.push(format!("{prefix}*"));
        patterns.sort();
        policy = build(desired, account, &patterns.iter().map(|p| repository_arn(p)).collect::<Vec<_>>(), projects);
    }
    let n_characters = size(&policy);
    if n_characters > INLINE_POLICY_LIMIT {
        return Err(format!(
            "the derived inline policy `{}` of role `{}` would be {n_characters} characters, over IAM's limit of \
             {INLINE_POLICY_LIMIT} for a role's inline policies: {} repositories with too few shared name prefixes \
             to group; give them common prefixes or split them across roles",
            role.policy_name,
            role.name,
            names.len()
        ));
    }
    Ok(policy)
}

/// Size as IAM counts it: the compact form, which has no whitespace outside strings.
pub fn size(policy: &Value) -> usize {
    to_compact(policy).chars().count()
}

fn build(desired: &Desired, account: &Account, repository_arns: &[String], projects: &[String]) -> Value {
    let mut statements = vec![json!({
        "Sid": "EcrLogin",
        "Effect": "Allow",
        // No resource-level form exists for this action.
        "Action": ["ecr:GetAuthorizationToken"],
        "Resource": ["*"],
    })];
    if !repository_arns.is_empty() {
        statements.push(json!({
            "Sid": "EcrPushPull",
            "Effect": "Allow",
            "Action": ECR_ACTIONS,
            "Resource": repository_arns,
        }));
    }
    let buckets: Vec<String> = desired
        .s3
        .buckets
        .iter()
        .map(|b| reconcile_aws::arn(account, "s3", &b.name.render(&account.id, &account.region)))
        .collect();
    if !buckets.is_empty() {
        statements.push(json!({
            "Sid": "CacheObjects",
            "Effect": "Allow",
            "Action": ["s3:DeleteObject", "s3:GetObject", "s3:PutObject"],
            "Resource": buckets.iter().map(|b| format!("{b}/*")).collect::<Vec<_>>(),
        }));
        statements.push(json!({
            "Sid": "CacheBucket",
            "Effect": "Allow",
            "Action": ["s3:GetBucketLocation", "s3:ListBucket"],
            "Resource": buckets,
        }));
    }
    if !projects.is_empty() {
        let groups: Vec<String> = projects
            .iter()
            .flat_map(|project| {
                let group = reconcile_aws::arn(account, "logs", &format!("log-group:{}", log_group(project)));
                [group.clone(), format!("{group}:*")]
            })
            .collect();
        statements.push(json!({
            "Sid": "BuildLogs",
            "Effect": "Allow",
            "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
            "Resource": groups,
        }));
    }
    json!({ "Version": "2012-10-17", "Statement": statements })
}

/// The name prefix (ending where a name has a separator, or at its end) that covers the most of
/// `patterns`, at least two; of prefixes covering as many, the longest, which grants the least.
fn best_prefix(patterns: &[String]) -> Option<(String, BTreeSet<String>)> {
    let mut candidates: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for pattern in patterns.iter().filter(|p| !p.ends_with('*')) {
        let ends = pattern.char_indices().filter(|(_, c)| matches!(c, '-' | '_' | '.' | '/')).map(|(idx, _)| idx);
        for end in ends.chain([pattern.len()]).filter(|end| *end >= 3) {
            candidates.entry(&pattern[..end]).or_default();
        }
    }
    let mut best: Option<(usize, usize, &str)> = None; // (names covered, prefix length, prefix)
    let mut best_covered = BTreeSet::new();
    for prefix in candidates.keys() {
        let covered: BTreeSet<String> = patterns
            .iter()
            .filter(|p| {
                !p.ends_with('*')
                    && p.starts_with(prefix)
                    && (p.len() == prefix.len() || matches!(p.as_bytes()[prefix.len()], b'-' | b'_' | b'.' | b'/'))
            })
            .cloned()
            .collect();
        if covered.len() < 2 {
            continue;
        }
        let key = (covered.len(), prefix.len(), *prefix);
        if best.is_none_or(|b| (key.0, key.1) > (b.0, b.1)) {
            best = Some(key);
            best_covered = covered;
        }
    }
    best.map(|(_, _, prefix)| (prefix.to_owned(), best_covered))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn desired(repositories: &[String]) -> Desired {
        let mut text = String::from(
            "region = \"us-east-1\"\n[ecr.defaults]\nlifecycle_policy = \"p\"\n[ecr.lifecycle_policies.p]\nrules = [{ rulePriority = 1, selection = { tagStatus = \"untagged\", countType = \"imageCountMoreThan\", countNumber = 3 }, action = { type = \"expire\" } }]\n[s3.buckets.sccache]\nname = \"rocm-bake-sccache-${account_id}\"\n[iam.roles.codebuild]\nname = \"rocm-bake-codebuild\"\ntrusted_services = [\"codebuild.amazonaws.com\"]\n[ecr.repositories]\n",
        );
        for name in repositories {
            text.push_str(&format!("{name} = {{}}\n"));
        }
        Desired::parse(Path::new("desired.toml"), &text).unwrap()
    }

    fn derive(names: &[String]) -> Result<Value, String> {
        let desired = desired(names);
        let role = desired.iam.roles[0].clone();
        inline_policy(&desired, &role, &Account::new("123456789012", "us-east-1"), &["rocm-bake".to_owned()])
    }

    #[test]
    fn the_policy_names_every_repository_the_bucket_and_the_log_group() {
        let policy = derive(&["pytorch".into(), "pytorch-cache".into()]).unwrap();
        insta::assert_snapshot!(reconcile_core::json::to_pretty(&policy));
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
            assert!(pattern.ends_with("-wheel"), "{pattern}");
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
}
