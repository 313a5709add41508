//! What a build on the runner needs of the registry ([`Access::runner`]), from which IAM derives
//! the runner role's inline policy and permissions boundary.
//!
//! The inline policy names the declared repositories: a build pushes and pulls only where
//! desired.toml declares a repository that carries this deployment's mark, and `--ensure-ecr`
//! may make (and mark, which ECR authorizes as `ecr:TagResource`) only a repository of a name
//! desired.toml declares. IAM cannot tell a create's tags from tagging a repository that exists
//! (ECR has no create-only condition key), so naming the repositories is the only way a build
//! can never mark another team's repository, or squat a name, and then push to it. Declaring a
//! repository (a bake target added) changes the inline policy, which the apply role may put
//! (only on a role that carries its boundary: see IAM's `ci.rs`), so no administrator is needed.
//!
//! The boundary, which only an administrator puts, grants the same by the mark alone over the
//! whole registry: the most the role may ever be given, unchanged when a repository is declared.
//! So does the inline policy's push grant when the names cannot fit IAM's limit even grouped by
//! prefix (thousands of repositories with nothing in common): then a mark someone who may tag
//! wrote (an administrator, the apply job) would give the builds push too, as it would give the
//! apply job, which can already run a build as the runner (`codebuild:UpdateProject`).
//! A repository is marked before a grant by the mark changes (the plan's order), so taking an
//! account over never leaves a running build without its push.
//!
//! [`Access::runner`]: reconcile_core::describe::Access::runner

use std::collections::{BTreeMap, BTreeSet};

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

/// How many characters of ARNs the runner's grant to make repositories may hold: the names are
/// never grouped (a `prefix*` would let a build make and mark another team's repository under
/// it), so past this (about seventy repositories) the runner makes none, and the apply role makes
/// every declared one; the rest of the inline policy keeps its room.
const MAKE_BUDGET: usize = 5_000;

/// The names the nightly's `--ensure-ecr` may make in `account`, as the runner's inline policy
/// grants them: exactly the repositories desired.toml declares, sorted; none when naming them
/// would take more than the policy's room for them ([`MAKE_BUDGET`]).
pub fn creatable(desired: &Desired, account: &Account) -> Vec<String> {
    let names: BTreeSet<String> = declared(desired).repositories.iter().map(|r| r.name.clone()).collect();
    let size: usize = names.iter().map(|name| repository_arn(account, name).chars().count() + ENTRY_OVERHEAD).sum();
    if size > MAKE_BUDGET {
        return Vec::new();
    }
    names.into_iter().collect()
}

fn repository_arn(account: &Account, pattern: &str) -> String {
    reconcile_aws::arn(account, "ecr", &format!("repository/{pattern}"))
}

/// The registry's statements of the runner's `runner` policy, or of its boundary.
pub(crate) fn runner(desired: &Desired, account: &Account, runner: &Runner) -> Vec<Value> {
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
    let arn = |pattern: &str| repository_arn(account, pattern);
    // The boundary: the whole registry, by the mark alone. The inline policy: by name.
    let (pushed, made): (Vec<String>, Vec<String>) = if runner.boundary {
        (vec![every_repository.clone()], vec![every_repository.clone()])
    } else {
        let declared: BTreeSet<&str> = declared(desired).repositories.iter().map(|r| r.name.as_str()).collect();
        let names: Vec<&str> = declared.into_iter().collect();
        // Too long for IAM: the push grant takes repositories that share a name prefix as one
        // `prefix*` pattern (still only where the mark is, which a build can write only on a
        // declared name), and, when that cannot save enough, the whole registry by the mark, as
        // the boundary does; what a build may make and mark stays exact, always.
        let entry = |pattern: &str| arn(pattern).chars().count();
        let listed = |patterns: &[&str]| -> usize { patterns.iter().map(|p| entry(p) + ENTRY_OVERHEAD).sum() };
        let patterns = group_by_prefix(&names, runner.over_by, entry);
        let grouped: Vec<&str> = patterns.iter().map(String::as_str).collect();
        let pushed = match listed(&names).saturating_sub(listed(&grouped)) >= runner.over_by {
            true => patterns.iter().map(|pattern| arn(pattern)).collect(),
            false => vec![every_repository.clone()],
        };
        (pushed, creatable(desired, account).iter().map(|name| arn(name)).collect())
    };
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
        "Resource": pushed,
        "Condition": { "StringEquals": { format!("aws:ResourceTag/{key}"): value } },
    }));
    // `--ensure-ecr` may make a declared repository only as this deployment's, with the mark and
    // nothing else in the request, so that reconcile manages it; an untagged create is denied at
    // once, before the build. ECR authorizes the tags of a create as `ecr:TagResource` on the new
    // repository too (since 2022), which IAM cannot tell from tagging one that exists: the names
    // keep every repository desired.toml does not declare out of its reach, and the deny below
    // every marked one (ours, or another deployment's).
    if !made.is_empty() {
        statements.push(json!({
            "Sid": "EcrMakeOnlyTheDeclaredAsReconciles",
            "Effect": "Allow",
            "Action": ["ecr:CreateRepository", "ecr:TagResource"],
            "Resource": made,
            "Condition": {
                "StringEquals": { format!("aws:RequestTag/{key}"): value },
                "ForAllValues:StringEquals": { "aws:TagKeys": [key] },
            },
        }));
    }
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

    const SIDS: [&str; 5] = [
        "EcrLogin",
        "EcrWhichRepositoriesExist",
        "EcrPushPull",
        "EcrMakeOnlyTheDeclaredAsReconciles",
        "EcrNeverRetagAMarkedRepository",
    ];

    #[test]
    fn the_inline_policy_names_the_declared_repositories_and_the_boundary_grants_by_the_mark_alone() {
        let inline = Runner::default();
        let boundary = Runner { boundary: true, ..Runner::default() };
        let every = "arn:aws:ecr:us-east-1:123456789012:repository/*";
        let named = json!([
            "arn:aws:ecr:us-east-1:123456789012:repository/pytorch",
            "arn:aws:ecr:us-east-1:123456789012:repository/vllm"
        ]);
        for (top, deployment) in [("", "default"), ("deployment = \"rocm-bake\"", "rocm-bake")] {
            let desired = file(top, &["vllm", "pytorch"]);
            assert_eq!(creatable(&desired, &account()), ["pytorch", "vllm"]);
            for (which, resources) in [(inline, named.clone()), (boundary, json!([every]))] {
                let statements = runner(&desired, &account(), &which);
                assert_eq!(sids(&statements), SIDS);
                assert_eq!(statements[1]["Resource"], json!([every]), "what exists, anywhere");
                assert_eq!(statements[2]["Resource"], resources);
                assert_eq!(statements[2]["Action"], json!(PUSH_PULL));
                assert_eq!(
                    statements[2]["Condition"],
                    json!({ "StringEquals": { "aws:ResourceTag/reconcile:deployment": deployment } })
                );
                assert_eq!(statements[3]["Resource"], resources);
                assert_eq!(
                    statements[3]["Condition"],
                    json!({
                        "StringEquals": { "aws:RequestTag/reconcile:deployment": deployment },
                        "ForAllValues:StringEquals": { "aws:TagKeys": ["reconcile:deployment"] },
                    })
                );
                assert_eq!(statements[3]["Action"], json!(["ecr:CreateRepository", "ecr:TagResource"]));
                assert_eq!(statements[4]["Effect"], "Deny");
                assert_eq!(statements[4]["Resource"], json!([every]));
            }
        }
        // No repository declared: the login alone, whatever it is asked to save.
        let none = file("", &[]);
        assert_eq!(sids(&runner(&none, &account(), &Runner { over_by: 10_000, ..Runner::default() })), ["EcrLogin"]);
        assert!(creatable(&none, &account()).is_empty());
    }

    #[test]
    fn past_the_room_for_their_names_the_runner_makes_no_repository_and_still_pushes() {
        // 70 names of this length fit the room for them; 90 do not.
        let names = |n: usize| (0..n).map(|i| format!("team-{i:02}-wheel")).collect::<Vec<_>>();
        let fits = names(70);
        let desired = file("", &fits.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(creatable(&desired, &account()).len(), 70);
        assert_eq!(sids(&runner(&desired, &account(), &Runner::default())), SIDS);
        let many = names(90);
        let desired = file("", &many.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(creatable(&desired, &account()).is_empty());
        let statements = runner(&desired, &account(), &Runner::default());
        assert_eq!(
            sids(&statements),
            ["EcrLogin", "EcrWhichRepositoriesExist", "EcrPushPull", "EcrNeverRetagAMarkedRepository"]
        );
        assert_eq!(statements[2]["Resource"].as_array().unwrap().len(), 90);
        // The boundary is the same whatever is declared.
        let boundary = Runner { boundary: true, ..Runner::default() };
        assert_eq!(runner(&desired, &account(), &boundary), runner(&file("", &["xy"]), &account(), &boundary));
    }

    #[test]
    fn asked_to_save_characters_it_groups_the_push_grant_by_name_prefix_and_never_what_a_build_makes() {
        let names: Vec<String> =
            (0..20).flat_map(|i| [format!("target{i:02}-wheel"), format!("target{i:02}-wheel-cache")]).collect();
        let desired = file("", &names.iter().map(String::as_str).collect::<Vec<_>>());
        let size = |over_by: usize| {
            let statements = runner(&desired, &account(), &Runner { over_by, ..Runner::default() });
            assert_eq!(statements[3]["Resource"].as_array().unwrap().len(), 40, "made: always by exact name");
            (serde_json::to_string(&statements).unwrap().len(), statements[2]["Resource"].as_array().unwrap().len())
        };
        let (whole, listed) = size(0);
        assert_eq!(listed, 40, "nothing to save, every repository by name");
        let (saved_some, fewer) = size(100);
        assert!(whole - saved_some >= 100 && fewer < 40 && fewer > 20, "{whole} {saved_some} {fewer}");
        let (smallest, patterns) = size(1400);
        assert_eq!(patterns, 20, "one `targetNN-*` per target");
        assert!(smallest < saved_some);
        // More than grouping can save: the whole registry, by the mark.
        let (_, patterns) = size(usize::MAX);
        assert_eq!(patterns, 1);
    }

    #[test]
    fn names_that_cannot_be_grouped_enough_are_pushed_to_by_the_mark_over_the_registry() {
        let names: Vec<String> = (0..40).map(|i| format!("r{i:03}x")).collect();
        let desired = file("", &names.iter().map(String::as_str).collect::<Vec<_>>());
        let asked = |over_by: usize| runner(&desired, &account(), &Runner { over_by, ..Runner::default() });
        assert_eq!(asked(0)[2]["Resource"].as_array().unwrap().len(), 40);
        let fallen_back = asked(1);
        assert_eq!(fallen_back[2]["Resource"], json!(["arn:aws:ecr:us-east-1:123456789012:repository/*"]));
        assert_eq!(fallen_back[2]["Condition"], asked(0)[2]["Condition"], "still only where the mark is");
        assert_eq!(fallen_back[3]["Resource"].as_array().unwrap().len(), 40, "what it makes: still exact");
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
