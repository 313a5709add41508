//! Every field of every kind desired.toml declares, carried the whole way round: made by a
//! create, read back, written by `import --generate` (the AWS kinds; GitHub's settings are
//! desired.toml's `[github]`, which it keeps), and changed by an update, against the emulator and
//! the GitHub stand-in. The test walks each kind's table (`Description::fields`): a field added to a table
//! and to the section, but forgotten in the create call, the read, the setter or the generator,
//! leaves a difference one of the plans below shows.
//!
//! Three versions of one small account: the least desired.toml can say (every default), `made`
//! (every field away from its default) and `changed` (every field that changes in place away from
//! `made`'s). `made` is applied to an empty account and planned again: no change, so the create
//! wrote every field and the read gave it back. Its marks are then taken off and `import
//! --generate` writes the file again from the account: the plan imports and changes nothing, so
//! the generator wrote every field as it is. `changed` is applied over it and planned again: no
//! change, so every update call wrote its field.

use std::collections::{BTreeMap, BTreeSet};

use aws_sdk_codebuild as codebuild;
use aws_sdk_ecr as ecr;
use aws_sdk_iam as iam;
use aws_sdk_s3 as s3;
use reconcile_test_support::{TestAccount, emulator};
use serde_json::Value;

use reconcile_test_support::github::github;

use crate::support::{desired_file, reconcile_with};

/// Which of the three versions of the account.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Version {
    Least,
    Made,
    Changed,
}

/// The bucket's lifecycle rules in `made`, the later id first.
const MADE_RULES: &str =
    "{ id = \"zz-old\", expiration_days = 10 }, { id = \"aa-tmp\", prefix = \"tmp/\", expiration_days = 1 }";

/// The account as desired.toml says it in `version`, its `[github]` the stand-in's `repository`.
fn desired(version: Version, repository: &str) -> String {
    let pick = |least: &str, made: &str, changed: &str| match version {
        Version::Least => least.to_owned(),
        Version::Made => made.to_owned(),
        Version::Changed => changed.to_owned(),
    };
    // Least: every key with a default left out (a repository needs its policy; the rest are
    // required keys, the same in every version).
    let line = |key: &str, made: &str, changed: &str| match version {
        Version::Least => String::new(),
        Version::Made => format!("{key} = {made}\n"),
        Version::Changed => format!("{key} = {changed}\n"),
    };
    let kms_key = "\"arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab\"";
    let mut text = String::from("region = \"us-east-1\"\ndeployment = \"round-trip\"\n");
    text += "\n[ecr.lifecycle_policies.keep-3-untagged]\nrules = [{ rulePriority = 1, selection = { tagStatus = \"untagged\", countType = \"imageCountMoreThan\", countNumber = 3 }, action = { type = \"expire\" } }]\n";
    text += "\n[ecr.lifecycle_policies.keep-5-untagged]\nrules = [{ rulePriority = 1, selection = { tagStatus = \"untagged\", countType = \"imageCountMoreThan\", countNumber = 5 }, action = { type = \"expire\" } }]\n";
    // Two repositories alike and one apart: `import --generate` writes what most share as
    // `[ecr.defaults]` and what is a repository's own beside it, and both are carried.
    for name in ["made", "made-too"] {
        text += &format!("\n[ecr.repositories.{name}]\n");
        text += &format!(
            "lifecycle_policy = {}\n",
            pick("\"keep-3-untagged\"", "\"keep-5-untagged\"", "\"keep-3-untagged\"")
        );
        text += &line("image_tag_mutability", "\"IMMUTABLE\"", "\"MUTABLE\"");
        text += &line("scan_on_push", "true", "false");
        // Set only at create: ECR refuses any change, so `changed` keeps them.
        text += &line("encryption_type", "\"KMS\"", "\"KMS\"");
        text += &line("kms_key", kms_key, kms_key);
        // A tag each has alone: what they share (`[ecr.defaults]`'s tags) is only `team`.
        let made = format!("{{ team = \"made\", which = \"{name}\" }}");
        text += &line("tags", &made, "{ team = \"changed\" }");
    }
    text += "\n[ecr.repositories.made-apart]\nlifecycle_policy = \"keep-3-untagged\"\n";
    text += &line("tags", "{ team = \"made\", apart = \"yes\" }", "{ team = \"made\", apart = \"yes\" }");
    // A second repository in `changed` widens what the role's policy grants.
    if version == Version::Changed {
        text += "\n[ecr.repositories.later]\nlifecycle_policy = \"keep-3-untagged\"\n";
    }

    text += "\n[s3.buckets.cache]\nname = \"round-trip-cache-${account_id}\"\n";
    text += &line("block_public_access", "false", "true");
    text += &line("tags", "{ team = \"made\" }", "{ team = \"changed\" }");
    // Two rules, not in the order of their ids: rules are a set (see `the same rules in another order`).
    text += &line(
        "lifecycle_rules",
        &format!("[{MADE_RULES}]"),
        "[{ id = \"zz-old\", expiration_days = 30, abort_incomplete_multipart_upload_days = 2 }, { id = \"aa-tmp\", prefix = \"tmp/\", expiration_days = 2 }]",
    );

    for (key, name) in [("builder", "round-trip-builder"), ("second", "round-trip-second")] {
        text += &format!("\n[iam.roles.{key}]\nname = \"{name}\"\n");
        text += &format!(
            "trusted_services = {}\n",
            pick(
                "[\"codebuild.amazonaws.com\"]",
                "[\"codebuild.amazonaws.com\", \"codepipeline.amazonaws.com\"]",
                "[\"codebuild.amazonaws.com\"]"
            )
        );
        text += &line("description", "\"made\"", "\"changed\"");
        text += &line("max_session_duration", "7200", "10800");
        text += &line("boundary_description", "\"made's boundary\"", "\"made's boundary\"");
        text += &line("tags", "{ team = \"made\" }", "{ team = \"changed\" }");
    }

    // The CI identities: GitHub's provider and the three roles, trusting the repository's runs.
    text += &format!("\n[github]\nrepository = \"{repository}\"\n");
    text += &line("fork_pr_approval", "\"first_time_contributors\"", "\"first_time_contributors_new_to_github\"");
    text += &line("default_workflow_permissions", "\"write\"", "\"read\"");
    text += &line("actions_can_approve_pull_requests", "true", "false");
    // A variable declared by hand, beside the derived ones (the registry, the project, ...).
    if version != Version::Least {
        text += &format!("[github.variables]\nROUND_TRIP = {}\n", pick("", "\"made\"", "\"changed\""));
    }
    text += "\n[ci]\nplan_role = \"round-trip-plan\"\ndrift_role = \"round-trip-drift\"\napply_role = \"round-trip-apply\"\n";
    text += &format!("environment = {}\n", pick("\"production\"", "\"made\"", "\"changed\""));
    text += &line("branch", "\"release\"", "\"main\"");
    text += &line("max_session_duration", "7200", "10800");
    text += &line("tags", "{ team = \"made\" }", "{ team = \"changed\" }");

    text += "\n[codebuild.projects.runner]\nname = \"round-trip-runner\"\n";
    text += &format!(
        "source_location = {}\n",
        pick(
            "\"https://github.com/ROCm/rocm-bake\"",
            "\"https://github.com/ROCm/rocm-made\"",
            "\"https://github.com/ROCm/rocm-bake\""
        )
    );
    text += &format!("service_role = {}\n", pick("\"builder\"", "\"second\"", "\"builder\""));
    text += &format!("build_timeout_hours = {}\n", pick("4", "6", "8"));
    text += &line("description", "\"made\"", "\"changed\"");
    text += &line("environment_type", "\"ARM_CONTAINER\"", "\"LINUX_CONTAINER\"");
    text += &line("compute_type", "\"BUILD_GENERAL1_LARGE\"", "\"BUILD_GENERAL1_2XLARGE\"");
    // Neither image is its environment type's default, which `import --generate` could leave out.
    text += &line("image", "\"aws/codebuild/amazonlinux-aarch64-standard:2.0\"", "\"aws/codebuild/standard:7.0\"");
    text += &line("queued_timeout_minutes", "60", "120");
    text += &line("tags", "{ team = \"made\" }", "{ team = \"changed\" }");
    text += "\n[codebuild.projects.runner.webhook]\n";
    text += &format!(
        "filter_groups = [{}]\n",
        pick(
            "[{ type = \"EVENT\", pattern = \"WORKFLOW_JOB_QUEUED\" }, { type = \"REPOSITORY_NAME\", pattern = \"^rocm-bake$\" }]",
            "[{ type = \"EVENT\", pattern = \"WORKFLOW_JOB_QUEUED\" }, { type = \"REPOSITORY_NAME\", pattern = \"^rocm-made$\" }]",
            "[{ type = \"EVENT\", pattern = \"WORKFLOW_JOB_QUEUED\" }, { type = \"ACTOR_ACCOUNT_ID\", pattern = \"1234567\" }]"
        )
    );
    text += &line("build_type", "\"BUILD_BATCH\"", "\"RUNNER_BUILDKITE_BUILD\"");
    // Set only at create: a change replaces the webhook, which the engine's test of the tables
    // shows for every create-only field; `changed` keeps them.
    text += &line("manual_creation", "true", "true");
    text += &line(
        "scope",
        "{ name = \"ROCm\", scope = \"GITHUB_ORGANIZATION\", domain = \"github.com\" }",
        "{ name = \"ROCm\", scope = \"GITHUB_ORGANIZATION\", domain = \"github.com\" }",
    );
    text
}

/// The fields of each kind that no desired.toml sets: reconcile holds each to one value (none,
/// off, private) or derives it from the resource's name (a role's boundary), so no version can
/// vary it, and what the round trip shows of them is that the create makes them so and the read
/// agrees (the plan after `made` is clean). A field in a kind's table that is
/// neither varied below nor listed here fails the test.
const HELD: &[(&str, &[&str])] = &[
    ("ecr_repository", &["repository_policy"]),
    ("iam_role", &["permissions_boundary"]),
    // The CI roles have no boundary; the provider's audience is STS's, whoever the repository is.
    ("iam_ci_role", &["permissions_boundary"]),
    ("iam_oidc_provider", &["client_ids"]),
    // The subject template the CI roles' trusts are made of: one, whatever desired.toml says.
    ("github_oidc_subject", &["include_claim_keys", "use_default"]),
    (
        "s3_bucket",
        &[
            "encryption",
            "policy",
            "object_ownership",
            "acl_grants",
            "versioning",
            "replication",
            "website",
            "access_logging",
        ],
    ),
    (
        "codebuild_project",
        &[
            "artifacts_type",
            "build_batch_service_role",
            "buildspec",
            "cache",
            "certificate",
            "cloudwatch_logs",
            "environment_variables",
            "file_system_locations",
            "fleet",
            "image_pull_credentials_type",
            "insecure_ssl",
            "privileged_mode",
            "project_visibility",
            "registry_credential",
            "s3_logs",
            "secondary_artifacts",
            "secondary_sources",
            "source_auth",
            "source_type",
            "vpc_config",
        ],
    ),
];

/// The kinds the account above holds: every kind of the ECR, S3, IAM, CodeBuild and GitHub
/// crates.
const KINDS: &[&str] = &[
    "ecr_repository",
    "ecr_lifecycle_policy",
    "s3_bucket",
    "s3_bucket_lifecycle",
    "iam_role",
    "iam_role_policy",
    "iam_role_boundary",
    "iam_oidc_provider",
    "iam_ci_role",
    "iam_ci_role_policy",
    "codebuild_project",
    "codebuild_webhook",
    "github_fork_pr_approval",
    "github_workflow_permissions",
    "github_oidc_subject",
    "github_variable",
];

/// Each planned resource's desired fields, by address, from a JSON plan.
fn desired_fields(plan_json: &str) -> BTreeMap<String, serde_json::Map<String, Value>> {
    let plan: Value = serde_json::from_str(plan_json).expect("the JSON plan parses");
    plan["resource_changes"]
        .as_array()
        .expect("resource_changes")
        .iter()
        .map(|change| {
            let after = change["change"]["after"].as_object().cloned().unwrap_or_default();
            (change["address"].as_str().unwrap().to_owned(), after)
        })
        .collect()
}

/// The fields of each kind of [`KINDS`], as its table has them, set apart into those a change
/// to which is made in place and those set only at create (identity fields name the resource).
fn tables() -> BTreeMap<&'static str, (Vec<&'static str>, Vec<&'static str>)> {
    use reconcile_core::fields::Mutability;
    let mut tables = BTreeMap::new();
    for description in reconcile_cli::CATALOG.0 {
        for table in description.fields {
            let kind = table.kind.as_str();
            if !KINDS.contains(&kind) {
                continue;
            }
            let of = |mutability: Mutability| {
                table.fields.iter().filter(|f| f.mutability == mutability).map(|f| f.name).collect::<Vec<_>>()
            };
            tables.insert(kind, (of(Mutability::InPlace), of(Mutability::CreateOnly)));
        }
    }
    assert_eq!(
        tables.keys().copied().collect::<BTreeSet<_>>(),
        KINDS.iter().copied().collect(),
        "every kind has a table"
    );
    tables
}

/// Each kind's desired resources, their fields as text, sorted: what desired.toml says of the
/// kinds of [`KINDS`], whatever keys it gives them (`import --generate` chooses its own).
fn by_kind(fields: &BTreeMap<String, serde_json::Map<String, Value>>) -> BTreeMap<&'static str, Vec<String>> {
    let mut kinds: BTreeMap<&'static str, Vec<String>> = BTreeMap::new();
    for (address, fields) in fields {
        let kind = address.split('.').next().unwrap_or_default();
        if let Some(kind) = KINDS.iter().find(|k| **k == kind) {
            kinds.entry(kind).or_default().push(Value::Object(fields.clone()).to_string());
        }
    }
    kinds.values_mut().for_each(|resources| resources.sort());
    kinds
}

/// A plan that changes nothing and finds nothing: a shared resource read back without its mark
/// (the identity provider's tags dropped by the create or by the read) is used as it is, which
/// plans no change but says so in a finding.
fn assert_clean(stdout: &str) {
    assert_eq!(summary(stdout), "No changes. The account matches the desired state.", "{stdout}");
    let findings: Vec<&str> =
        stdout.lines().filter(|line| line.starts_with("Warning [") || line.starts_with("Error [")).collect();
    assert!(findings.is_empty(), "{stdout}");
}

/// The summary line of a text plan.
fn summary(stdout: &str) -> &str {
    stdout.lines().find(|line| line.starts_with("Plan:") || line.starts_with("No changes.")).unwrap_or("(none)")
}

/// The mark taken off every resource of the account, every other tag kept: as an account whose
/// resources someone made by hand, or whose desired.toml was lost with its marks.
async fn unmark(account: &TestAccount) {
    const MARK: &str = "reconcile:deployment";
    let config = account.sdk_config();
    let ecr = ecr::Client::new(&config);
    for repository in ecr.describe_repositories().send().await.unwrap().repositories() {
        let arn = repository.repository_arn().unwrap();
        ecr.untag_resource().resource_arn(arn).tag_keys(MARK).send().await.unwrap();
    }
    let s3 = s3::Client::from_conf(s3::config::Builder::from(&config).force_path_style(true).build());
    for bucket in s3.list_buckets().send().await.unwrap().buckets() {
        let name = bucket.name().unwrap();
        let tags = s3.get_bucket_tagging().bucket(name).send().await.unwrap();
        let kept: Vec<s3::types::Tag> = tags.tag_set().iter().filter(|t| t.key() != MARK).cloned().collect();
        let tagging = s3::types::Tagging::builder().set_tag_set(Some(kept)).build().unwrap();
        s3.put_bucket_tagging().bucket(name).tagging(tagging).send().await.unwrap();
    }
    let iam = iam::Client::new(&config);
    for role in iam.list_roles().send().await.unwrap().roles() {
        iam.untag_role().role_name(role.role_name()).tag_keys(MARK).send().await.unwrap();
    }
    let policies = iam.list_policies().scope(iam::types::PolicyScopeType::Local).send().await.unwrap();
    for policy in policies.policies() {
        iam.untag_policy().policy_arn(policy.arn().unwrap()).tag_keys(MARK).send().await.unwrap();
    }
    let codebuild = codebuild::Client::new(&config);
    for name in codebuild.list_projects().send().await.unwrap().projects() {
        let projects = codebuild.batch_get_projects().names(name).send().await.unwrap();
        let kept: Vec<codebuild::types::Tag> =
            projects.projects()[0].tags().iter().filter(|t| t.key() != Some(MARK)).cloned().collect();
        codebuild.update_project().name(name).set_tags(Some(kept)).send().await.unwrap();
    }
}

/// Every bucket's lifecycle rules put back in the reverse order, as a console might keep them.
async fn reverse_lifecycle_rules(account: &TestAccount) {
    let config = account.sdk_config();
    let s3 = s3::Client::from_conf(s3::config::Builder::from(&config).force_path_style(true).build());
    for bucket in s3.list_buckets().send().await.unwrap().buckets() {
        let name = bucket.name().unwrap();
        let mut rules = s3.get_bucket_lifecycle_configuration().bucket(name).send().await.unwrap().rules().to_vec();
        assert!(rules.len() > 1, "{rules:?}");
        rules.reverse();
        let configuration = s3::types::BucketLifecycleConfiguration::builder().set_rules(Some(rules)).build().unwrap();
        s3.put_bucket_lifecycle_configuration()
            .bucket(name)
            .lifecycle_configuration(configuration)
            .send()
            .await
            .unwrap();
    }
}

/// The stand-in repository's fork approval policy and default workflow permissions, put as
/// someone in its settings would.
fn put_github_settings(repository: &str, approval: &str, permissions: &str) {
    let root = format!("/repos/{repository}/actions/permissions");
    let body = serde_json::json!({ "approval_policy": approval });
    let (status, said) = github().call("PUT", &format!("{root}/fork-pr-contributor-approval"), "ghp_test", &body);
    assert!(status < 300, "{status}: {said}");
    let body =
        serde_json::json!({ "default_workflow_permissions": permissions, "can_approve_pull_request_reviews": false });
    let (status, said) = github().call("PUT", &format!("{root}/workflow"), "ghp_test", &body);
    assert!(status < 300, "{status}: {said}");
}

/// The versions vary every field of every kind's table: `made` sets each away from its default
/// (so a create that left one out is seen), `changed` each that changes in place away from
/// `made`'s (so an update that left one out is seen), and a field neither varies is one
/// reconcile holds ([`HELD`]), which no desired.toml sets.
#[tokio::test(flavor = "multi_thread")]
async fn every_field_of_every_kind_is_made_read_generated_and_updated() {
    let account = emulator().new_account().await;
    // GitHub's side against the stand-in: a repository of its own, with the hook CodeBuild makes.
    let repository = github().new_repository();
    crate::github::codebuild_hook(&repository, true, &["workflow_job"]);
    let github_env = [("GITHUB_API_URL", github().endpoint()), ("GITHUB_TOKEN", "ghp_test")];
    let run = |path: &std::path::Path, args: &[&str]| reconcile_with(&account, path, args, &github_env);
    let file = desired_file(&desired(Version::Least, &repository));
    let mut planned = BTreeMap::new();
    for version in [Version::Least, Version::Made, Version::Changed] {
        // A plan lists only what it changes: GitHub's settings are put away from this version's
        // first, so its plan says each.
        let (approval, permissions) = if version == Version::Made {
            ("all_external_contributors", "read")
        } else {
            ("first_time_contributors", "write")
        };
        put_github_settings(&repository, approval, permissions);
        std::fs::write(&file.path, desired(version, &repository)).unwrap();
        let plan = run(&file.path, &["plan", "--format", "json"]);
        assert_eq!(plan.code, 0, "{version:?}: {}{}", plan.stdout, plan.stderr);
        planned.insert(version as u8, desired_fields(&plan.stdout));
    }
    let (least, made, changed) = (&planned[&0], &planned[&1], &planned[&2]);
    let mut unvaried = Vec::new();
    for (kind, (in_place, create_only)) in tables() {
        let held: &[&str] = HELD.iter().find(|(k, _)| *k == kind).map_or(&[], |(_, fields)| fields);
        let addresses: Vec<&String> = made.keys().filter(|a| a.split('.').next() == Some(kind)).collect();
        assert!(!addresses.is_empty(), "the account holds no {kind}: {:?}", made.keys());
        for field in in_place.iter().chain(&create_only) {
            let differs = |one: &BTreeMap<String, serde_json::Map<String, Value>>,
                           other: &BTreeMap<String, serde_json::Map<String, Value>>| {
                addresses
                    .iter()
                    .any(|a| one.get(*a).and_then(|f| f.get(*field)) != other.get(*a).and_then(|f| f.get(*field)))
            };
            let made_away = differs(made, least);
            let changed_away = differs(changed, made);
            let varied = made_away && (changed_away || create_only.contains(field));
            match (varied, held.contains(field)) {
                (true, false) | (false, true) => {}
                (true, true) => unvaried.push(format!("{kind}.{field} is listed as held, yet the versions vary it")),
                (false, false) => unvaried.push(format!(
                    "{kind}.{field}: made {}, changed {}",
                    if made_away { "varies it" } else { "leaves it at its default" },
                    if changed_away { "varies it" } else { "leaves it as made" }
                )),
            }
        }
    }
    assert!(unvaried.is_empty(), "fields the round trip does not carry:\n{}", unvaried.join("\n"));

    // Made: the create writes every field and the read gives each back.
    std::fs::write(&file.path, desired(Version::Made, &repository)).unwrap();
    let apply = run(&file.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    let plan = run(&file.path, &["plan"]);
    assert_clean(&plan.stdout);

    // The same rules in another order, in desired.toml and then in S3: no change either way.
    let reordered =
        "{ id = \"aa-tmp\", prefix = \"tmp/\", expiration_days = 1 }, { id = \"zz-old\", expiration_days = 10 }";
    std::fs::write(&file.path, desired(Version::Made, &repository).replace(MADE_RULES, reordered)).unwrap();
    let plan = run(&file.path, &["plan"]);
    assert_clean(&plan.stdout);
    std::fs::write(&file.path, desired(Version::Made, &repository)).unwrap();
    reverse_lifecycle_rules(&account).await;
    let plan = run(&file.path, &["plan"]);
    assert_clean(&plan.stdout);

    // Generated: the marks off, a newcomer's file, written from the account; the plan imports
    // every resource and changes none of its fields.
    unmark(&account).await;
    // The CI identities stay declared (import --generate writes no `[ci]`): it lists them in
    // `import`, as every declared resource it finds without the mark.
    let mut newcomer: toml_edit::DocumentMut = desired(Version::Made, &repository).parse().unwrap();
    for section in ["ecr", "s3", "iam", "codebuild"] {
        newcomer.remove(section);
    }
    std::fs::write(&file.path, newcomer.to_string()).unwrap();
    let generated = run(&file.path, &["import", "--generate", "made*", "round-trip-*"]);
    assert_eq!(generated.code, 0, "{}{}", generated.stdout, generated.stderr);
    assert!(!generated.stderr.contains("left out"), "{}", generated.stderr);
    // The defaults are what the repositories share: none lacks one, so none is given one.
    assert!(!generated.stderr.contains("lack tag"), "{}", generated.stderr);
    // What the two alike share is written once, and what sets the third apart is its own.
    let written: toml::Table = toml::from_str(&std::fs::read_to_string(&file.path).unwrap()).unwrap();
    let (defaults, apart) = (&written["ecr"]["defaults"], &written["ecr"]["repositories"]["made-apart"]);
    assert_eq!(defaults["lifecycle_policy"].as_str(), Some("keep-5-untagged"), "{written}");
    assert_eq!(defaults["image_tag_mutability"].as_str(), Some("IMMUTABLE"), "{written}");
    assert_eq!(defaults["scan_on_push"].as_bool(), Some(true), "{written}");
    assert_eq!(defaults["tags"].to_string(), "{ team = \"made\" }", "{written}");
    assert_eq!(apart["image_tag_mutability"].as_str(), Some("MUTABLE"), "{written}");
    assert_eq!(apart["scan_on_push"].as_bool(), Some(false), "{written}");
    let plan = run(&file.path, &["plan"]);
    let line = summary(&plan.stdout);
    assert!(
        line.starts_with("Plan: ") && line.ends_with(" to import, 0 to add, 0 to change, 0 to destroy."),
        "{}",
        plan.stdout
    );
    // And the file it wrote says what `made` says, field for field, of every resource the plan
    // imports (the rest it shows no change of): a field the plan does not compare unless
    // desired.toml names it (a repository's KMS key) is still written.
    let rewritten = run(&file.path, &["plan", "--format", "json"]);
    assert_eq!(rewritten.code, 0, "{}{}", rewritten.stdout, rewritten.stderr);
    let (generated, made_by_kind) = (by_kind(&desired_fields(&rewritten.stdout)), by_kind(made));
    assert!(generated.contains_key("ecr_repository") && generated.contains_key("codebuild_project"), "{generated:?}");
    let differing: Vec<String> = generated
        .iter()
        .flat_map(|(kind, resources)| resources.iter().map(move |fields| (kind, fields)))
        .filter(|(kind, fields)| !made_by_kind.get(*kind).is_some_and(|made| made.contains(fields)))
        .map(|(kind, fields)| format!("{kind}: generated {fields}\n  made {:?}", made_by_kind.get(kind)))
        .collect();
    assert!(differing.is_empty(), "the generated file says other than `made`:\n{}", differing.join("\n"));
    let apply = run(&file.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);

    // Changed: every update call writes its field.
    std::fs::write(&file.path, desired(Version::Changed, &repository)).unwrap();
    let apply = run(&file.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    let plan = run(&file.path, &["plan"]);
    assert_clean(&plan.stdout);
}
