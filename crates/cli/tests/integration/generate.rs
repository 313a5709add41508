//! `reconcile import --generate`: an account's first desired.toml written from the account, as it
//! is, proven before it is written (its plan shows only imports), for an account reconcile made
//! and then lost every tag of, for the demo's account as the setup script left it, and beside
//! another team's and another deployment's resources.

use aws_sdk_codebuild as codebuild;
use aws_sdk_ecr as ecr;
use aws_sdk_iam as iam;
use aws_sdk_s3 as s3;
use reconcile_test_support::{TestAccount, emulator};
use serde_json::Value;

use crate::support::{real_copy, reconcile};

/// desired.toml as a newcomer starts it: the region, the deployment, the bake file, `[nightly]`,
/// `[github]` and `[ci]` (its roles, not their tags) of the repository's own, and nothing of the
/// account's resources.
fn newcomers(text: &str) -> String {
    let mut document: toml_edit::DocumentMut = text.parse().unwrap();
    for section in ["ecr", "s3", "iam", "codebuild", "import"] {
        document.remove(section);
    }
    // What the account's resources are tagged with is the account's to say, [ci]'s roles too.
    if let Some(ci) = document.get_mut("ci").and_then(|ci| ci.as_table_mut()) {
        ci.remove("tags");
    }
    document.to_string()
}

/// Every tag of every resource in the account taken off, as someone cleaning up tags would.
async fn strip_every_tag(account: &TestAccount) {
    let config = account.sdk_config();
    let ecr = ecr::Client::new(&config);
    for repository in ecr.describe_repositories().send().await.unwrap().repositories() {
        let arn = repository.repository_arn().unwrap();
        let tags = ecr.list_tags_for_resource().resource_arn(arn).send().await.unwrap();
        let keys: Vec<String> = tags.tags().iter().map(|t| t.key().to_owned()).collect();
        if !keys.is_empty() {
            ecr.untag_resource().resource_arn(arn).set_tag_keys(Some(keys)).send().await.unwrap();
        }
    }
    let s3 = s3::Client::from_conf(s3::config::Builder::from(&config).force_path_style(true).build());
    for bucket in s3.list_buckets().send().await.unwrap().buckets() {
        s3.delete_bucket_tagging().bucket(bucket.name().unwrap()).send().await.unwrap();
    }
    let iam = iam::Client::new(&config);
    for role in iam.list_roles().send().await.unwrap().roles() {
        let tags = iam.list_role_tags().role_name(role.role_name()).send().await.unwrap();
        let keys: Vec<String> = tags.tags().iter().map(|t| t.key().to_owned()).collect();
        if !keys.is_empty() {
            iam.untag_role().role_name(role.role_name()).set_tag_keys(Some(keys)).send().await.unwrap();
        }
    }
    let policies = iam.list_policies().scope(iam::types::PolicyScopeType::Local).send().await.unwrap();
    for policy in policies.policies() {
        let arn = policy.arn().unwrap();
        let tags = iam.list_policy_tags().policy_arn(arn).send().await.unwrap();
        let keys: Vec<String> = tags.tags().iter().map(|t| t.key().to_owned()).collect();
        if !keys.is_empty() {
            iam.untag_policy().policy_arn(arn).set_tag_keys(Some(keys)).send().await.unwrap();
        }
    }
    for provider in iam.list_open_id_connect_providers().send().await.unwrap().open_id_connect_provider_list() {
        let arn = provider.arn().unwrap();
        let tags = iam.list_open_id_connect_provider_tags().open_id_connect_provider_arn(arn).send().await.unwrap();
        let keys: Vec<String> = tags.tags().iter().map(|t| t.key().to_owned()).collect();
        if !keys.is_empty() {
            iam.untag_open_id_connect_provider()
                .open_id_connect_provider_arn(arn)
                .set_tag_keys(Some(keys))
                .send()
                .await
                .unwrap();
        }
    }
    let codebuild = codebuild::Client::new(&config);
    for name in codebuild.list_projects().send().await.unwrap().projects() {
        codebuild.update_project().name(name).set_tags(Some(Vec::new())).send().await.unwrap();
    }
}

/// Every repository's lifecycle policy, by name, as ECR holds it.
async fn lifecycle_policies(account: &TestAccount) -> std::collections::BTreeMap<String, Option<Value>> {
    let ecr = ecr::Client::new(&account.sdk_config());
    let mut policies = std::collections::BTreeMap::new();
    for repository in ecr.describe_repositories().send().await.unwrap().repositories() {
        let name = repository.repository_name().unwrap();
        let policy = ecr.get_lifecycle_policy().repository_name(name).send().await.ok();
        let policy = policy.and_then(|p| p.lifecycle_policy_text().map(|t| serde_json::from_str(t).unwrap()));
        policies.insert(name.to_owned(), policy);
    }
    policies
}

/// The summary line of a text plan.
fn summary(stdout: &str) -> &str {
    stdout.lines().find(|line| line.starts_with("Plan:") || line.starts_with("No changes.")).unwrap_or("(none)")
}

#[tokio::test(flavor = "multi_thread")]
async fn an_account_that_lost_every_tag_is_written_as_it_is_imported_and_applied_to_no_changes() {
    let account = emulator().new_account().await;
    let file = real_copy();
    let applied = reconcile(&account, &file.path, &["apply", "--auto-approve"]);
    assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);
    strip_every_tag(&account).await;
    let policies = lifecycle_policies(&account).await;
    let original = std::fs::read_to_string(&file.path).unwrap();
    std::fs::write(&file.path, newcomers(&original)).unwrap();

    let check = reconcile(&account, &file.path, &["import", "--generate", "--check"]);
    assert_eq!(check.code, 2, "{}{}", check.stdout, check.stderr);
    assert_eq!(std::fs::read_to_string(&file.path).unwrap(), newcomers(&original), "--check writes nothing");

    let generated = reconcile(&account, &file.path, &["import", "--generate"]);
    assert_eq!(generated.code, 0, "{}{}", generated.stdout, generated.stderr);
    assert!(!generated.stderr.contains("left out"), "{}", generated.stderr);
    let text = std::fs::read_to_string(&file.path).unwrap();
    assert_eq!(check.stdout.lines().filter(|l| l.starts_with('+') && !l.starts_with("+++")).count(), {
        let before = newcomers(&original);
        text.lines().count() - before.lines().count()
    });
    let written: toml::Table = toml::from_str(&text).unwrap();
    // The 27 repositories, with what they share in the defaults and one named policy.
    assert_eq!(written["ecr"]["repositories"].as_table().unwrap().len(), 27, "{text}");
    assert_eq!(written["ecr"]["lifecycle_policies"].as_table().unwrap().len(), 1, "{text}");
    assert_eq!(written["ecr"]["defaults"]["lifecycle_policy"].as_str(), Some("keep-3-untagged"), "{text}");
    assert!(written["ecr"]["defaults"].get("tags").is_none(), "every tag was taken off: {text}");
    assert_eq!(written["ecr"]["repositories"]["pytorch-cache"].to_string(), "{}", "{text}");
    assert_eq!(written["s3"]["buckets"]["sccache"]["name"].as_str(), Some("rocm-bake-sccache-${account_id}"), "{text}");
    assert_eq!(written["iam"]["roles"]["codebuild"]["name"].as_str(), Some("rocm-bake-codebuild"), "{text}");
    let project = &written["codebuild"]["projects"]["runner"];
    assert_eq!(project["name"].as_str(), Some("rocm-bake"), "{text}");
    assert_eq!(project["service_role"].as_str(), Some("codebuild"), "{text}");
    assert_eq!(project["webhook"]["filter_groups"].as_array().map(Vec::len), Some(1), "{text}");
    assert!(!text.contains("secret"), "{text}");

    let validate = reconcile(&account, &file.path, &["validate"]);
    assert_eq!(validate.code, 0, "{}{}", validate.stdout, validate.stderr);
    let plan = reconcile(&account, &file.path, &["plan"]);
    assert_eq!(plan.code, 0, "{}{}", plan.stdout, plan.stderr);
    let line = summary(&plan.stdout);
    assert!(
        line.starts_with("Plan: ") && line.ends_with(" to import, 0 to add, 0 to change, 0 to destroy."),
        "{}",
        plan.stdout
    );

    let again = reconcile(&account, &file.path, &["import", "--generate"]);
    assert_eq!(again.code, 0, "{}{}", again.stdout, again.stderr);
    assert_eq!(std::fs::read_to_string(&file.path).unwrap(), text, "a second run adds nothing");

    let apply = reconcile(&account, &file.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    let after = reconcile(&account, &file.path, &["plan"]);
    assert_eq!(summary(&after.stdout), "No changes. The account matches the desired state.", "{}", after.stdout);
    assert_eq!(lifecycle_policies(&account).await, policies, "every repository keeps the rule it had");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_setup_scripts_account_is_written_as_it_was_left_and_the_projects_file_then_plans_the_fixes() {
    let account = emulator().new_account().await;
    let file = real_copy();
    account.seed_2026_11_11(&file.path);
    let original = std::fs::read_to_string(&file.path).unwrap();
    // The setup script made no CI roles: a newcomer to this account starts from the region and
    // the deployment.
    std::fs::write(&file.path, "region = \"us-east-1\"\ndeployment = \"rocm-bake\"\n").unwrap();

    let generated = reconcile(&account, &file.path, &["import", "--generate"]);
    assert_eq!(generated.code, 0, "{}{}", generated.stdout, generated.stderr);
    for without in ["atom-wheel-cache", "torchvision-wheel-cache"] {
        assert!(
            generated.stderr.contains(&format!("left out repository `{without}`: it has no lifecycle policy")),
            "{}",
            generated.stderr
        );
    }
    // The runner's role has no permissions boundary, which reconcile always gives it: the role is
    // left out, and the project that runs as it.
    for said in [
        "left out `rocm-bake-codebuild`: the plan would update iam_role.codebuild (permissions_boundary)",
        "left out project `rocm-bake`: it runs as role `rocm-bake-codebuild`",
    ] {
        assert!(generated.stderr.contains(said), "{said}: {}", generated.stderr);
    }
    let text = std::fs::read_to_string(&file.path).unwrap();
    assert!(text.contains("{ id = \"expire-after-30-days\", expiration_days = 30 }"), "{text}");
    assert!(text.contains("{ rulePriority = 1, description = \"Expire images older than 14 days\", selection = { tagStatus = \"any\", countType = \"sinceImagePushed\", countUnit = \"days\", countNumber = 14 }, action = { type = \"expire\" } }"), "{text}");
    let written: toml::Table = toml::from_str(&text).unwrap();
    let cache = &written["ecr"]["repositories"]["pytorch-cache"];
    assert_eq!(cache["allow_tagged_expiry"].as_bool(), Some(true), "{text}");
    let kept = cache["lifecycle_policy"].as_str().unwrap();
    let rule = &written["ecr"]["lifecycle_policies"][kept]["rules"][0]["selection"];
    assert_eq!((rule["tagStatus"].as_str(), rule["countNumber"].as_integer()), (Some("any"), Some(14)), "{text}");
    assert!(generated.stderr.contains("repository `pytorch-cache` keeps lifecycle policy"), "{}", generated.stderr);

    let plan = reconcile(&account, &file.path, &["plan"]);
    assert_eq!(plan.code, 0, "{}{}", plan.stdout, plan.stderr);
    let line = summary(&plan.stdout);
    assert!(line.ends_with(" to import, 0 to add, 0 to change, 0 to destroy."), "{}", plan.stdout);

    // The project's own desired.toml, with what the account holds imported: the fixes.
    std::fs::write(&file.path, &original).unwrap();
    let import = reconcile(&account, &file.path, &["import"]);
    assert_eq!(import.code, 0, "{}{}", import.stdout, import.stderr);
    let fixes = reconcile(&account, &file.path, &["plan"]);
    assert_eq!(fixes.code, 0, "{}{}", fixes.stdout, fixes.stderr);
    for fix in [
        "+ ecr_lifecycle_policy.atom-wheel-cache",
        "+ ecr_lifecycle_policy.torchvision-wheel-cache",
        "~ ecr_lifecycle_policy.pytorch-cache",
    ] {
        assert!(fixes.stdout.contains(fix), "{fix}: {}", fixes.stdout);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn another_deployments_resources_are_never_written_and_a_pattern_chooses_what_is() {
    let account = emulator().new_account().await;
    let ecr = ecr::Client::new(&account.sdk_config());
    let keep = r#"{"rules":[{"rulePriority":1,"selection":{"tagStatus":"untagged","countType":"imageCountMoreThan","countNumber":5},"action":{"type":"expire"}}]}"#;
    let mark = |value: &str| ecr::types::Tag::builder().key("reconcile:deployment").value(value).build().unwrap();
    for (name, tag) in
        [("rocm/pytorch", None), ("rocm/vllm", None), ("teamy/app", None), ("teamz/cache", Some(mark("teamz")))]
    {
        ecr.create_repository().repository_name(name).set_tags(tag.map(|t| vec![t])).send().await.unwrap();
        ecr.put_lifecycle_policy().repository_name(name).lifecycle_policy_text(keep).send().await.unwrap();
    }
    // One with settings of its own, which its line keeps.
    ecr.put_image_tag_mutability()
        .repository_name("rocm/vllm")
        .image_tag_mutability(ecr::types::ImageTagMutability::Immutable)
        .send()
        .await
        .unwrap();
    let scanning = ecr::types::ImageScanningConfiguration::builder().scan_on_push(true).build();
    ecr.put_image_scanning_configuration()
        .repository_name("rocm/vllm")
        .image_scanning_configuration(scanning)
        .send()
        .await
        .unwrap();
    let text = "region = \"us-east-1\"\ndeployment = \"rocm-bake\"\n";
    let file = crate::support::desired_file(text);

    let theirs = reconcile(&account, &file.path, &["import", "--generate", "teamz/*"]);
    assert_eq!(theirs.code, 0, "{}{}", theirs.stdout, theirs.stderr);
    assert!(theirs.stderr.contains("left out 1 resource(s) that carry another deployment's mark"), "{}", theirs.stderr);
    assert_eq!(std::fs::read_to_string(&file.path).unwrap(), text, "nothing of another deployment's is written");

    let ours = reconcile(&account, &file.path, &["import", "--generate", "rocm/*"]);
    assert_eq!(ours.code, 0, "{}{}", ours.stdout, ours.stderr);
    let written = std::fs::read_to_string(&file.path).unwrap();
    let table: toml::Table = toml::from_str(&written).unwrap();
    let names: Vec<&String> = table["ecr"]["repositories"].as_table().unwrap().keys().collect();
    assert_eq!(names, ["rocm/pytorch", "rocm/vllm"], "{written}");
    assert_eq!(table["ecr"]["defaults"]["lifecycle_policy"].as_str(), Some("keep-5-untagged"), "{written}");
    assert!(
        written.contains("\"rocm/vllm\" = { image_tag_mutability = \"IMMUTABLE\", scan_on_push = true }"),
        "{written}"
    );

    // A pattern that names nothing writes nothing, and says so.
    let none = reconcile(&account, &file.path, &["import", "--generate", "nothing-*"]);
    assert_eq!(none.code, 0, "{}{}", none.stdout, none.stderr);
    assert!(
        none.stderr.contains("holds nothing undeclared to generate whose name matches nothing-*"),
        "{}",
        none.stderr
    );
    assert_eq!(std::fs::read_to_string(&file.path).unwrap(), written);
    let imports: Vec<&str> = table["import"].as_array().unwrap().iter().filter_map(|v| v.as_str()).collect();
    assert_eq!(imports, ["ecr_repository.rocm/pytorch", "ecr_repository.rocm/vllm"], "{written}");

    // With no pattern: the unmarked one is written too (nothing says whose it is), the marked
    // one never.
    let rest = reconcile(&account, &file.path, &["import", "--generate"]);
    assert_eq!(rest.code, 0, "{}{}", rest.stdout, rest.stderr);
    let all = std::fs::read_to_string(&file.path).unwrap();
    assert!(all.contains("\"teamy/app\" = {}") && !all.contains("teamz"), "{all}");
    let plan = reconcile(&account, &file.path, &["plan"]);
    assert_eq!(plan.code, 0, "{}{}", plan.stdout, plan.stderr);
    assert_eq!(summary(&plan.stdout), "Plan: 3 to import, 0 to add, 0 to change, 0 to destroy.", "{}", plan.stdout);
    let validate = reconcile(&account, &file.path, &["validate"]);
    assert_eq!(validate.code, 0, "{}{}", validate.stdout, validate.stderr);
}

/// What the account says is never written on its word: a repository carrying this deployment's
/// mark that desired.toml does not declare (D109: whoever may tag it could have marked it) is
/// left out with D109's words; a live value holding a character a reviewer cannot see (U+202E)
/// leaves its resource out, and a multi-line one is written as one escaped line, so its lines
/// cannot read as tables of desired.toml in the diff (a lifecycle rule's description, and a role's
/// boundary's, which the plan then keeps); a refused tag every chosen repository shares leaves
/// those out, not the whole generation; and the last line counts exactly what was written and
/// listed.
#[tokio::test(flavor = "multi_thread")]
async fn what_the_account_says_is_left_out_or_escaped_never_trusted_or_written_raw() {
    let account = emulator().new_account().await;
    let ecr = ecr::Client::new(&account.sdk_config());
    let policy = |description: &str| {
        serde_json::json!({ "rules": [{ "rulePriority": 1, "description": description, "selection": { "tagStatus": "untagged", "countType": "imageCountMoreThan", "countNumber": 5 }, "action": { "type": "expire" } }] })
        .to_string()
    };
    let tag = |key: &str, value: &str| ecr::types::Tag::builder().key(key).value(value).build().unwrap();
    let lines = "keep five\n[ci]\napply_role = \"attacker-role\"";
    for (name, description, tags) in [
        ("rocm/pytorch", "keep five", vec![]),
        ("rocm/lines", lines, vec![]),
        ("rocm/bidi", "keep \u{202e}evif", vec![]),
        ("rocm/forged", "keep five", vec![tag("reconcile:deployment", "rocm-bake")]),
    ] {
        ecr.create_repository().repository_name(name).set_tags(Some(tags)).send().await.unwrap();
        let text = policy(description);
        ecr.put_lifecycle_policy().repository_name(name).lifecycle_policy_text(text).send().await.unwrap();
    }
    let text = "region = \"us-east-1\"\ndeployment = \"rocm-bake\"\n";
    let file = crate::support::desired_file(text);
    let generated = reconcile(&account, &file.path, &["import", "--generate", "rocm/*"]);
    assert_eq!(generated.code, 0, "{}{}", generated.stdout, generated.stderr);
    let said = &generated.stderr;
    assert!(
        said.contains("left out ecr_repository.rocm/forged: it carries this deployment's mark and desired.toml does not declare it (D109)"),
        "{said}"
    );
    assert!(said.contains("left out `rocm/bidi`: desired.toml would refuse it: holds U+202E"), "{said}");
    assert!(!said.contains('\u{202e}'), "nothing raw on the terminal: {said}");
    assert!(
        said.contains("Declared in ") && said.contains(" (2 resource(s)); listed in `import` (2 address(es))"),
        "{said}"
    );
    let written = std::fs::read_to_string(&file.path).unwrap();
    let table: toml::Table = toml::from_str(&written).unwrap();
    let names: Vec<&String> = table["ecr"]["repositories"].as_table().unwrap().keys().collect();
    assert_eq!(names, ["rocm/lines", "rocm/pytorch"], "{written}");
    assert!(!written.contains('\u{202e}') && !written.contains("forged"), "{written}");
    assert!(written.contains(r#""keep five\n[ci]\napply_role = \"attacker-role\"""#), "one escaped line: {written}");
    assert!(!written.lines().any(|line| line.trim() == "[ci]"), "{written}");
    let plan = reconcile(&account, &file.path, &["plan"]);
    assert_eq!(summary(&plan.stdout), "Plan: 2 to import, 0 to add, 0 to change, 0 to destroy.", "{}", plan.stdout);

    // A tag every chosen repository shares, which desired.toml refuses (a hidden character in
    // its value), is written once for all of them: it leaves those out, and the rest is written.
    for name in ["shared/a", "shared/b"] {
        let tags = vec![tag("owner", "team\u{200b}y")];
        ecr.create_repository().repository_name(name).set_tags(Some(tags)).send().await.unwrap();
        let text = policy("keep five");
        ecr.put_lifecycle_policy().repository_name(name).lifecycle_policy_text(text).send().await.unwrap();
    }
    let bucket = format!("shared-cache-{}", account.id);
    let s3 = aws_sdk_s3::Client::new(&account.sdk_config());
    s3.create_bucket().bucket(&bucket).send().await.unwrap();
    let sse = s3::types::ServerSideEncryptionByDefault::builder()
        .sse_algorithm(s3::types::ServerSideEncryption::Aes256)
        .build()
        .unwrap();
    let rule = s3::types::ServerSideEncryptionRule::builder().apply_server_side_encryption_by_default(sse).build();
    let encryption = s3::types::ServerSideEncryptionConfiguration::builder().rules(rule).build().unwrap();
    s3.put_bucket_encryption().bucket(&bucket).server_side_encryption_configuration(encryption).send().await.unwrap();
    let fresh = crate::support::desired_file(text);
    let shared = reconcile(&account, &fresh.path, &["import", "--generate", "shared*"]);
    assert_eq!(shared.code, 0, "{}{}", shared.stdout, shared.stderr);
    for name in ["shared/a", "shared/b"] {
        let left = format!("left out `{name}`: desired.toml would refuse it: holds U+200B");
        assert!(shared.stderr.contains(&left), "{}", shared.stderr);
    }
    let written = std::fs::read_to_string(&fresh.path).unwrap();
    let table: toml::Table = toml::from_str(&written).unwrap();
    assert!(table.get("ecr").is_none() && !written.contains('\u{200b}'), "{written}");
    assert!(written.contains("shared-cache-${account_id}"), "the bucket is written: {written}");

    // A role's boundary whose description (IAM takes line breaks in it) reads as desired.toml's
    // own tables is written as one escaped line too, and read back as it is: the plan keeps the
    // boundary rather than replace it.
    let iam = iam::Client::new(&account.sdk_config());
    let boundary = iam
        .create_policy()
        .policy_name("hostile-builder-boundary")
        .description(lines)
        .policy_document(
            r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"*"}]}"#,
        )
        .send()
        .await
        .unwrap();
    let trust = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"codebuild.amazonaws.com"},"Action":"sts:AssumeRole"}]}"#;
    let arn = boundary.policy().and_then(|p| p.arn()).unwrap();
    iam.create_role()
        .role_name("hostile-builder")
        .assume_role_policy_document(trust)
        .permissions_boundary(arn)
        .send()
        .await
        .unwrap();
    let roles = crate::support::desired_file(text);
    let generated = reconcile(&account, &roles.path, &["import", "--generate", "hostile-*"]);
    assert_eq!(generated.code, 0, "{}{}", generated.stdout, generated.stderr);
    let written = std::fs::read_to_string(&roles.path).unwrap();
    let table: toml::Table = toml::from_str(&written).unwrap();
    let role = &table["iam"]["roles"]["hostile-builder"];
    assert_eq!(role["boundary_description"].as_str(), Some(lines), "{written}");
    assert!(!written.lines().any(|line| line.trim() == "[ci]") && table.get("ci").is_none(), "{written}");
    let plan = reconcile(&account, &roles.path, &["plan"]);
    assert_eq!(plan.code, 0, "{}{}", plan.stdout, plan.stderr);
    // The role and its boundary imported; its derived inline policy added, and the boundary's
    // document made what reconcile derives.
    assert_eq!(summary(&plan.stdout), "Plan: 2 to import, 1 to add, 1 to change, 0 to destroy.", "{}", plan.stdout);
    assert!(!plan.stdout.contains("must be replaced"), "{}", plan.stdout);
}

/// The README's desired.toml as the user's own file, on an account whose repositories lost the
/// tag its `[ecr.defaults]` gives them, and one its lifecycle policy: the tag and the policy the
/// defaults name are what the import applies, shown in the plan as part of the takeover, never a
/// reason to leave a repository out.
#[tokio::test(flavor = "multi_thread")]
async fn the_users_own_defaults_are_what_the_import_applies_not_a_reason_to_leave_out() {
    let account = emulator().new_account().await;
    let file = real_copy();
    let applied = reconcile(&account, &file.path, &["apply", "--auto-approve"]);
    assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);
    strip_every_tag(&account).await;
    let readme = std::fs::read_to_string(reconcile_test_support::workspace_root().join("README.md")).unwrap();
    let users = readme
        .split_once("```toml\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .map(|(toml, _)| toml.to_owned())
        .expect("README.md shows a desired.toml");
    assert!(users.contains("tags = { project = \"rocm-bake\" }"), "{users}");
    std::fs::write(&file.path, &users).unwrap();
    // And one repository lost its lifecycle policy: the user's defaults name the one it takes.
    let ecr = ecr::Client::new(&account.sdk_config());
    ecr.delete_lifecycle_policy().repository_name("vllm-cache").send().await.unwrap();

    let generated = reconcile(&account, &file.path, &["import", "--generate"]);
    assert_eq!(generated.code, 0, "{}{}", generated.stdout, generated.stderr);
    assert!(!generated.stderr.contains("left out repository"), "{}", generated.stderr);
    let text = std::fs::read_to_string(&file.path).unwrap();
    let written: toml::Table = toml::from_str(&text).unwrap();
    assert_eq!(written["ecr"]["repositories"].as_table().unwrap().len(), 27, "{text}\n{}", generated.stderr);
    assert!(users.lines().all(|line| text.lines().any(|l| l == line)), "the user's lines stay: {text}");
    assert_eq!(written["ecr"]["defaults"]["tags"]["project"].as_str(), Some("rocm-bake"), "{text}");
    assert!(generated.stderr.contains("25 of the repositories lack tag(s) `project`"), "{}", generated.stderr);
    assert!(
        generated.stderr.contains("1 repositor(ies) have no lifecycle policy, so their untagged images accumulate")
            && generated.stderr.contains("`[ecr.defaults]`'s `keep-3-untagged` theirs"),
        "{}",
        generated.stderr
    );
    assert_eq!(written["ecr"]["repositories"]["vllm-cache"].to_string(), "{}", "it takes the default policy");

    let plan = reconcile(&account, &file.path, &["plan"]);
    assert_eq!(plan.code, 0, "{}{}", plan.stdout, plan.stderr);
    // The 27 repositories, the bucket, the runner's role and its policy, and the project: all
    // imported; the 27 repositories' tags set as part of it (the user declared two of them).
    assert_eq!(summary(&plan.stdout), "Plan: 31 to import, 1 to add, 27 to change, 0 to destroy.", "{}", plan.stdout);
    assert!(plan.stdout.contains("# ecr_lifecycle_policy.vllm-cache will be created"), "{}", plan.stdout);
    assert!(
        plan.stdout
            .contains("# ecr_repository.vllm will be imported (marked as this deployment's) and updated in place"),
        "{}",
        plan.stdout
    );
    let apply = reconcile(&account, &file.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    let after = reconcile(&account, &file.path, &["plan"]);
    assert_eq!(summary(&after.stdout), "No changes. The account matches the desired state.", "{}", after.stdout);
    assert!(ecr.get_lifecycle_policy().repository_name("vllm-cache").send().await.is_ok(), "its policy was made");
    let arn = ecr.describe_repositories().repository_names("vllm").send().await.unwrap().repositories()[0]
        .repository_arn()
        .unwrap()
        .to_owned();
    let tags = ecr.list_tags_for_resource().resource_arn(arn).send().await.unwrap();
    assert!(tags.tags().iter().any(|t| t.key() == "project" && t.value() == "rocm-bake"), "{tags:?}");
}
