//! The runner's role policies, derived from the rest of the desired state: its inline policy
//! (push and pull on the declared repositories, the compiler cache's objects, the logs of the
//! projects that run as the role) and its permissions boundary (the most the role may ever do,
//! whatever its inline policy says). Never a hand-kept list of ARNs.
//!
//! When every declared repository carries reconcile's `managed-by` tag, both grant the
//! repositories by that tag, not by name: declaring a repository (a bake target added) changes
//! neither, so no IAM change follows one, and the apply role, which changes nothing in IAM, can
//! apply it. Without one tag on every repository they are named (the inline policy, grouped by
//! name prefix under IAM's size limit), and the boundary allows the region's registry.

use std::collections::{BTreeMap, BTreeSet};

use reconcile_core::Account;
use reconcile_core::describe::Catalog;
use reconcile_core::desired::{Desired, Role, log_group, prune_marker};
use reconcile_core::json::to_compact;
use serde_json::{Value, json};

/// IAM's limit on the total size of a role's inline policies, in characters without whitespace.
pub const INLINE_POLICY_LIMIT: usize = 10_240;

/// IAM's limit on a managed policy (a permissions boundary), in characters without whitespace.
pub const MANAGED_POLICY_LIMIT: usize = 6_144;

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

/// The derived inline policy of `role`, or why it cannot be one.
pub fn inline_policy(
    desired: &Desired,
    catalog: &Catalog,
    role: &Role,
    account: &Account,
    projects: &[String],
) -> Result<Value, String> {
    let repository_arn = |pattern: &str| reconcile_aws::arn(account, "ecr", &format!("repository/{pattern}"));
    if let Ok(marker) = prune_marker(desired) {
        return Ok(build(desired, catalog, account, &Repositories::Tagged(marker), projects));
    }
    let names: Vec<&str> = desired.ecr.repositories.iter().map(|r| r.name.as_str()).collect();

    let arns: Vec<String> = names.iter().map(|name| repository_arn(name)).collect();
    // Too long with every repository listed: cover repositories that share a name prefix with
    // one `prefix*` pattern, until it fits or nothing is left to group (none, when it fits).
    let excess = size(&build(desired, catalog, account, &Repositories::Named(arns), projects))
        .saturating_sub(INLINE_POLICY_LIMIT);
    let patterns = group_by_prefix(&names, excess, |pattern| repository_arn(pattern).chars().count());
    let named = Repositories::Named(patterns.iter().map(|p| repository_arn(p)).collect());
    let policy = build(desired, catalog, account, &named, projects);
    let n_characters = size(&policy);
    if !fits(n_characters) {
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

/// The permissions boundary of `role`: what its inline policy grants, with the repositories by
/// reconcile's tag, or (without one on every repository) the region's whole registry, so that it
/// never changes when a repository is declared. Only an administrator puts it; the role is
/// never without it.
pub fn boundary_policy(
    desired: &Desired,
    catalog: &Catalog,
    role: &Role,
    account: &Account,
    projects: &[String],
) -> Result<Value, String> {
    let repositories = match prune_marker(desired) {
        Ok(marker) => Repositories::Tagged(marker),
        Err(_) => Repositories::Registry,
    };
    let policy = build(desired, catalog, account, &repositories, projects);
    let n_characters = size(&policy);
    if n_characters > MANAGED_POLICY_LIMIT {
        return Err(format!(
            "the derived permissions boundary `{}` of role `{}` would be {n_characters} characters, over IAM's limit \
             of {MANAGED_POLICY_LIMIT} for a managed policy",
            boundary_name(role),
            role.name
        ));
    }
    Ok(policy)
}

/// The name of the managed policy that is `role`'s permissions boundary.
pub fn boundary_name(role: &Role) -> String {
    format!("{}-boundary", role.name)
}

/// Whether a policy of this many characters is within IAM's limit for a role's inline policies.
fn fits(n_characters: usize) -> bool {
    n_characters <= INLINE_POLICY_LIMIT
}

/// Size as IAM counts it: the compact form, which has no whitespace outside strings.
pub fn size(policy: &Value) -> usize {
    to_compact(policy).chars().count()
}

/// How a policy grants the repositories.
enum Repositories {
    /// These ARNs (and `prefix*` patterns).
    Named(Vec<String>),
    /// Every repository carrying reconcile's tag (key, value).
    Tagged((String, String)),
    /// The region's registry.
    Registry,
}

fn build(
    desired: &Desired,
    catalog: &Catalog,
    account: &Account,
    repositories: &Repositories,
    projects: &[String],
) -> Value {
    let every_repository = reconcile_aws::arn(account, "ecr", "repository/*");
    let mut statements = vec![json!({
        "Sid": "EcrLogin",
        "Effect": "Allow",
        // No resource-level form exists for this action.
        "Action": ["ecr:GetAuthorizationToken"],
        "Resource": ["*"],
    })];
    match repositories {
        Repositories::Named(arns) if arns.is_empty() => {}
        Repositories::Named(arns) => {
            // `ecr:CreateRepository` for the nightly's `--ensure-ecr`.
            let mut actions: Vec<&str> = PUSH_PULL.to_vec();
            actions.extend(["ecr:CreateRepository", "ecr:DescribeRepositories"]);
            actions.sort_unstable();
            statements.push(json!({ "Sid": "EcrPushPull", "Effect": "Allow", "Action": actions, "Resource": arns }));
        }
        Repositories::Tagged((key, value)) => {
            // What exists, so the nightly's `--ensure-ecr` learns which it must make: metadata
            // only, and what "not found" needs (a tag condition on a missing repository would
            // answer "access denied" instead).
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
            // `--ensure-ecr` may make a repository only as reconcile's, so that reconcile manages
            // it (a lifecycle policy on the next apply, drift until it is declared). Never
            // `ecr:TagResource`: with it, a build could mark any repository as reconcile's and
            // push to it.
            statements.push(json!({
                "Sid": "EcrMakeOnlyAsReconciles",
                "Effect": "Allow",
                "Action": ["ecr:CreateRepository"],
                "Resource": [every_repository],
                "Condition": { "StringEquals": { format!("aws:RequestTag/{key}"): value } },
            }));
        }
        Repositories::Registry => {
            let mut actions: Vec<&str> = PUSH_PULL.to_vec();
            actions.extend(["ecr:CreateRepository", "ecr:DescribeRepositories"]);
            actions.sort_unstable();
            statements.push(json!({
                "Sid": "EcrPushPull",
                "Effect": "Allow",
                "Action": actions,
                "Resource": [every_repository],
            }));
        }
    }
    // What the other kinds' builds need of theirs: the compiler cache's objects.
    statements.extend(catalog.statements(desired, account, |access| access.runner));
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

/// How long the part of a name before a prefix's separator must be, at the least: `rocm-*`
/// groups, `ro-*` does not (too little of a name to say whose it is).
pub const MIN_PREFIX_STEM: usize = 3;

/// What one entry of a JSON list of strings costs beside its own characters: two quotes and a
/// comma.
const ENTRY_OVERHEAD: usize = 3;

/// The patterns that cover `names` once at least `excess` characters are saved (each entry
/// `entry_size` characters, plus its quotes and comma): each name as
/// itself, or as part of a `prefix*` pattern whose prefix ends with a separator (`-`, `_`, `.`,
/// `/`), so that `team0-*` covers `team0-wheel` but never `team0evil`. A name equal to a
/// prefix's stem (`team0`) stays listed by itself. Greedy: the prefix covering the most names
/// first, the longest of those (it grants the least); near-linear in the number of names.
fn group_by_prefix(names: &[&str], excess: usize, entry_size: impl Fn(&str) -> usize) -> Vec<String> {
    let arn_size = |pattern: &str| entry_size(pattern) + ENTRY_OVERHEAD;
    let mut covered_by: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    let mut prefixes_of: Vec<Vec<&str>> = Vec::with_capacity(names.len());
    for (name_idx, name) in names.iter().enumerate() {
        let prefixes: Vec<&str> = name
            .char_indices()
            .filter(|(idx, c)| matches!(c, '-' | '_' | '.' | '/') && *idx >= MIN_PREFIX_STEM)
            .map(|(idx, _)| &name[..=idx])
            .collect();
        for prefix in &prefixes {
            covered_by.entry(prefix).or_default().push(name_idx);
        }
        prefixes_of.push(prefixes);
    }
    let mut heap: std::collections::BinaryHeap<(usize, usize, &str)> =
        covered_by.iter().map(|(prefix, covered)| (covered.len(), prefix.len(), *prefix)).collect();
    let mut live = vec![true; names.len()];
    // Prefixes are nested, and the one chosen covers the most names (ties: the longest), so
    // every prefix that shares a name with it has lost all its names to it: it is spent.
    let mut spent: BTreeSet<&str> = BTreeSet::new();
    let mut chosen: Vec<String> = Vec::new();
    let mut saved = 0;
    while saved < excess {
        let Some((count, _, prefix)) = heap.pop() else { break };
        if count < 2 {
            break;
        }
        if spent.contains(prefix) {
            continue;
        }
        let pattern = format!("{prefix}*");
        for name_idx in &covered_by[prefix] {
            live[*name_idx] = false;
            saved += arn_size(names[*name_idx]);
            spent.extend(prefixes_of[*name_idx].iter().copied());
        }
        saved = saved.saturating_sub(arn_size(&pattern));
        chosen.push(pattern);
    }
    let mut patterns: Vec<String> =
        names.iter().zip(&live).filter(|(_, live)| **live).map(|(name, _)| (*name).to_owned()).collect();
    patterns.extend(chosen);
    patterns.sort();
    patterns
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desired(repositories: &[String]) -> Desired {
        let mut text = String::from(
            "region = \"us-east-1\"\n[ecr.defaults]\nlifecycle_policy = \"p\"\n[ecr.lifecycle_policies.p]\nrules = [{ rulePriority = 1, selection = { tagStatus = \"untagged\", countType = \"imageCountMoreThan\", countNumber = 3 }, action = { type = \"expire\" } }]\n[s3.buckets.sccache]\nname = \"rocm-bake-sccache-${account_id}\"\n[iam.roles.codebuild]\nname = \"rocm-bake-codebuild\"\ntrusted_services = [\"codebuild.amazonaws.com\"]\n[ecr.repositories]\n",
        );
        for name in repositories {
            text.push_str(&format!("{name} = {{}}\n"));
        }
        crate::testing::parse(&text)
    }

    fn derive(names: &[String]) -> Result<Value, String> {
        let desired = desired(names);
        let role = desired.iam.roles[0].clone();
        inline_policy(
            &desired,
            &crate::testing::CATALOG,
            &role,
            &Account::new("123456789012", "us-east-1"),
            &["rocm-bake".to_owned()],
        )
    }

    #[test]
    fn the_policy_names_every_repository_what_other_crates_ask_and_the_log_group() {
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
            assert!(pattern.starts_with("arn:aws:ecr:us-east-1:123456789012:repository/target"), "{pattern}");
            assert!(
                pattern.ends_with("-")
                    && pattern.len() == "arn:aws:ecr:us-east-1:123456789012:repository/target000-".len(),
                "{pattern}"
            );
        }
    }

    #[test]
    fn a_prefix_pattern_ends_at_a_separator_so_it_never_grants_a_longer_name() {
        let names = ["team0", "team0-wheel", "team0-wheel-cache", "team1-a", "team1-b"];
        let patterns = group_by_prefix(&names, 1000, str::len);
        assert_eq!(patterns, ["team0", "team0-*", "team1-*"]);
        // A prefix inside one already chosen is not chosen again.
        assert_eq!(group_by_prefix(&["aaa-b-1", "aaa-b-2", "aaa-c"], 1000, str::len), ["aaa-*"]);
        // Too short a stem is never a prefix.
        assert_eq!(group_by_prefix(&["ab-1", "ab-2"], 1000, str::len), ["ab-1", "ab-2"]);
    }

    #[test]
    fn the_limit_itself_fits() {
        assert!(fits(INLINE_POLICY_LIMIT));
        assert!(!fits(INLINE_POLICY_LIMIT + 1));
    }

    #[test]
    fn grouping_stops_as_soon_as_enough_is_saved() {
        // Each group of two saves (5 + 3) * 2 - (5 + 3) = 8 characters.
        let names = ["grp-a", "grp-b", "hhh-a", "hhh-b"];
        assert_eq!(group_by_prefix(&names, 0, str::len), names, "nothing to save, nothing grouped");
        assert_eq!(group_by_prefix(&names, 8, str::len), ["grp-a", "grp-b", "hhh-*"]);
        assert_eq!(group_by_prefix(&names, 9, str::len), ["grp-*", "hhh-*"]);
    }

    #[test]
    fn a_hundred_thousand_names_group_into_one_pattern_per_team() {
        let names: Vec<String> = (0..100_000).map(|i| format!("team{:03}-target{i}", i % 500)).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let patterns = group_by_prefix(&names, usize::MAX, str::len);
        assert_eq!(patterns.len(), 500);
        assert!(patterns.iter().all(|p| p.ends_with("-*")), "{patterns:?}");
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

    #[test]
    fn a_role_without_repositories_is_granted_none_and_its_boundary_has_a_name_and_a_limit() {
        // No `[ecr.repositories]` at all (an empty table is refused).
        let bare = crate::testing::parse(
            "region = \"us-east-1\"\n[iam.roles.codebuild]\nname = \"r\"\ntrusted_services = [\"codebuild.amazonaws.com\"]\n",
        );
        let account = Account::new("123456789012", "us-east-1");
        let none =
            inline_policy(&bare, &crate::testing::CATALOG, &bare.iam.roles[0], &account, &["rocm-bake".to_owned()])
                .unwrap();
        for statement in none["Statement"].as_array().unwrap() {
            assert!(!statement["Resource"].as_array().is_some_and(Vec::is_empty), "{statement}");
            assert!(!statement.to_string().contains("ecr:PutImage"), "{statement}");
        }
        let desired = desired(&["pytorch".to_owned()]);
        let role = desired.iam.roles[0].clone();
        assert_eq!(boundary_name(&role), "rocm-bake-codebuild-boundary");
        // Exactly IAM's limit for a managed policy fits; a character more does not.
        let sized = |projects: &[String]| {
            size(&boundary_policy(&desired, &crate::testing::CATALOG, &role, &account, projects).unwrap())
        };
        let mut projects: Vec<String> = Vec::new();
        while sized(&projects) < MANAGED_POLICY_LIMIT - 200 {
            projects.push(format!("p{}", projects.len()));
        }
        projects.push(String::new());
        let last = projects.len() - 1;
        while sized(&projects) < MANAGED_POLICY_LIMIT {
            projects[last].push('x');
        }
        assert_eq!(sized(&projects), MANAGED_POLICY_LIMIT, "one more character of a name is one more of the policy");
        projects[last].push('x');
        let refused = boundary_policy(&desired, &crate::testing::CATALOG, &role, &account, &projects).unwrap_err();
        assert!(
            refused.contains("`rocm-bake-codebuild-boundary`") && refused.contains("over IAM's limit"),
            "{refused}"
        );
    }
}
