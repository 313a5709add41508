//! What a build on the runner needs of the registry ([`Access::runner`]), from which IAM derives
//! the runner role's inline policy and permissions boundary.
//!
//! When every declared repository carries reconcile's `managed-by` tag, both grant the
//! repositories by that tag, not by name: declaring a repository (a bake target added) changes
//! neither, so no IAM change follows one, and the apply role, which changes nothing in IAM, can
//! apply it. Without one tag on every repository the inline policy names them (grouped by name
//! prefix when it is over IAM's size limit), and the boundary allows the region's registry.
//!
//! [`Access::runner`]: reconcile_core::describe::Access::runner

use std::collections::{BTreeMap, BTreeSet};

use reconcile_core::describe::Runner;
use reconcile_core::{Account, Desired};
use serde_json::{Value, json};

use crate::{declared, prune_marker};

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

/// The registry's statements of the runner's `runner` policy.
pub(crate) fn runner(desired: &Desired, account: &Account, runner: &Runner) -> Vec<Value> {
    let every_repository = reconcile_aws::arn(account, "ecr", "repository/*");
    let mut statements = vec![json!({
        "Sid": "EcrLogin",
        "Effect": "Allow",
        // No resource-level form exists for this action.
        "Action": ["ecr:GetAuthorizationToken"],
        "Resource": ["*"],
    })];
    let arn = |pattern: &str| reconcile_aws::arn(account, "ecr", &format!("repository/{pattern}"));
    match prune_marker(desired) {
        Ok((key, value)) => {
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
        Err(_) if runner.boundary => {
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
        Err(_) => {
            let names: Vec<&str> = declared(desired).repositories.iter().map(|r| r.name.as_str()).collect();
            // Too long for IAM: repositories that share a name prefix as one `prefix*` pattern,
            // until enough is saved or nothing is left to group (none, when nothing need be).
            let patterns = group_by_prefix(&names, runner.over_by, |pattern| arn(pattern).chars().count());
            let arns: Vec<String> = patterns.iter().map(|pattern| arn(pattern)).collect();
            if arns.is_empty() {
                return statements;
            }
            // `ecr:CreateRepository` for the nightly's `--ensure-ecr`.
            let mut actions: Vec<&str> = PUSH_PULL.to_vec();
            actions.extend(["ecr:CreateRepository", "ecr:DescribeRepositories"]);
            actions.sort_unstable();
            statements.push(json!({ "Sid": "EcrPushPull", "Effect": "Allow", "Action": actions, "Resource": arns }));
        }
    }
    statements
}

/// How long the part of a name before a prefix's separator must be, at the least: `rocm-*`
/// groups, `ro-*` does not (too little of a name to say whose it is).
const MIN_PREFIX_STEM: usize = 3;

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
    use reconcile_core::desired::testing::Files;

    use super::*;
    use crate::CLAIM;

    const FILES: Files = Files(&[&CLAIM]);

    /// desired.toml with these repositories (TOML lines under `[ecr.repositories]`).
    fn file(defaults: &str, repositories: &[&str]) -> Desired {
        let mut text = format!(
            "region = \"us-east-1\"\n[ecr.defaults]\nlifecycle_policy = \"p\"\n{defaults}\n[ecr.lifecycle_policies.p]\nrules = [{{ rulePriority = 1, selection = {{ tagStatus = \"untagged\", countType = \"imageCountMoreThan\", countNumber = 3 }}, action = {{ type = \"expire\" }} }}]\n"
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
    fn the_registry_is_granted_by_reconciles_tag_else_by_name_and_bounded_by_the_whole_registry() {
        let inline = Runner::default();
        let boundary = Runner { boundary: true, ..Runner::default() };
        let every = "arn:aws:ecr:us-east-1:123456789012:repository/*";

        let tagged = file("tags = { managed-by = \"reconcile\" }", &["pytorch", "vllm"]);
        for which in [inline, boundary] {
            let statements = runner(&tagged, &account(), &which);
            assert_eq!(
                sids(&statements),
                ["EcrLogin", "EcrWhichRepositoriesExist", "EcrPushPull", "EcrMakeOnlyAsReconciles"]
            );
            assert_eq!(statements[2]["Resource"], json!([every]));
            assert_eq!(statements[2]["Condition"]["StringEquals"]["aws:ResourceTag/managed-by"], "reconcile");
            assert_eq!(statements[3]["Condition"]["StringEquals"]["aws:RequestTag/managed-by"], "reconcile");
            assert_eq!(statements[3]["Action"], json!(["ecr:CreateRepository"]));
        }

        let named = file("", &["vllm", "pytorch"]);
        let statements = runner(&named, &account(), &inline);
        assert_eq!(sids(&statements), ["EcrLogin", "EcrPushPull"]);
        assert_eq!(
            statements[1]["Resource"],
            json!([
                "arn:aws:ecr:us-east-1:123456789012:repository/pytorch",
                "arn:aws:ecr:us-east-1:123456789012:repository/vllm"
            ])
        );
        let actions = statements[1]["Action"].as_array().unwrap();
        assert_eq!(actions.len(), PUSH_PULL.len() + 2);
        assert!(
            actions.contains(&json!("ecr:CreateRepository")) && actions.contains(&json!("ecr:DescribeRepositories"))
        );
        let bounded = runner(&named, &account(), &boundary);
        assert_eq!(sids(&bounded), ["EcrLogin", "EcrPushPull"]);
        assert_eq!(bounded[1]["Resource"], json!([every]));
        assert_eq!(bounded[1]["Action"], statements[1]["Action"]);

        // No repository declared: the login alone, whatever it is asked to save.
        let none = file("", &[]);
        assert_eq!(sids(&runner(&none, &account(), &Runner { over_by: 10_000, ..Runner::default() })), ["EcrLogin"]);
    }

    #[test]
    fn asked_to_save_characters_it_groups_repositories_by_name_prefix_saving_at_least_that_many() {
        let names: Vec<String> =
            (0..20).flat_map(|i| [format!("target{i:02}-wheel"), format!("target{i:02}-wheel-cache")]).collect();
        let desired = file("", &names.iter().map(String::as_str).collect::<Vec<_>>());
        let size = |over_by: usize| {
            let statements = runner(&desired, &account(), &Runner { over_by, ..Runner::default() });
            (serde_json::to_string(&statements).unwrap().len(), statements[1]["Resource"].as_array().unwrap().len())
        };
        let (whole, listed) = size(0);
        assert_eq!(listed, 40, "nothing to save, every repository by name");
        let (saved_some, fewer) = size(100);
        assert!(whole - saved_some >= 100 && fewer < 40 && fewer > 20, "{whole} {saved_some} {fewer}");
        let (smallest, patterns) = size(usize::MAX);
        assert_eq!(patterns, 20, "one `targetNN-*` per target");
        assert!(smallest < saved_some);
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
}
