//! `plan --format terraform-json` against the tools Terraform users gate plans with: checkov and
//! terraform-compliance (installed by `scripts/policy-venv.sh`, which the test command runs),
//! and a decoder of Terraform's JSON output format as hashicorp/terraform-json and Terraform's
//! documentation define it. On the repository's own account: empty, as it stood on 2026-11-11,
//! and clean after apply.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use reconcile_test_support::github::github;
use reconcile_test_support::{TestAccount, emulator, workspace_root};
use serde::Deserialize;
use serde_json::Value;

use crate::support::{Run, reconcile_in};

const TOKEN: &str = "ghp_test";

/// The repository's desired.toml and bake file in a directory of their own, the GitHub side
/// pointed at a fresh repository of the stand-in.
struct Checkout {
    dir: tempfile::TempDir,
    repository: String,
}

impl Checkout {
    fn new() -> Checkout {
        let dir = tempfile::tempdir().unwrap();
        let repository = github().new_repository();
        let root = workspace_root();
        let desired = std::fs::read_to_string(root.join("desired.toml")).unwrap();
        let desired = desired.replace("repository = \"ROCm/rocm-bake\"", &format!("repository = \"{repository}\""));
        std::fs::write(dir.path().join("desired.toml"), desired).unwrap();
        std::fs::copy(root.join("rocm-bake.hcl"), dir.path().join("rocm-bake.hcl")).unwrap();
        Checkout { dir, repository }
    }

    fn desired(&self) -> PathBuf {
        self.dir.path().join("desired.toml")
    }

    fn run(&self, account: &TestAccount, args: &[&str]) -> Run {
        let mut env = account.env();
        env.push(("GITHUB_API_URL", github().endpoint().to_owned()));
        env.push(("GITHUB_TOKEN", TOKEN.to_owned()));
        env.push(("ECR_REGISTRY", format!("{}.dkr.ecr.us-east-1.amazonaws.com", account.id)));
        reconcile_in(&env, &self.desired(), args)
    }

    /// The Terraform view of a plan now, checked against the format, and the file it is in.
    fn view(&self, account: &TestAccount, name: &str) -> (Value, PathBuf) {
        let run = self.run(account, &["plan", "--format", "terraform-json"]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_eq!(run.stdout.lines().count(), 1, "one line, as Terraform prints it");
        let view: Value = serde_json::from_str(&run.stdout).unwrap();
        decode(&view);
        let path = self.dir.path().join(format!("{name}.json"));
        std::fs::write(&path, &run.stdout).unwrap();
        (view, path)
    }
}

fn policy_tool(name: &str) -> PathBuf {
    let path = workspace_root().join("target/policy-venv/bin").join(name);
    assert!(path.exists(), "{} is not installed: run scripts/policy-venv.sh (the test command does)", path.display());
    path
}

/// checkov's report on a plan file: its summary and its failed checks as (check, address).
fn checkov(plan: &Path) -> (Value, BTreeSet<(String, String)>) {
    let output = Command::new(policy_tool("checkov"))
        .args(["--framework", "terraform_plan", "--output", "json", "--quiet", "--compact", "-f"])
        .arg(plan)
        .env("HOME", plan.parent().unwrap())
        .env("BC_SKIP_MAPPING", "TRUE")
        .env("CHECKOV_RUN_SCA_PACKAGE_SCAN_V2", "false")
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("checkov: {e}: {}", String::from_utf8_lossy(&output.stderr)));
    let failed = report["results"]["failed_checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["check_id"].as_str().unwrap().to_owned(), c["resource_address"].as_str().unwrap().to_owned()))
        .collect();
    (report["summary"].clone(), failed)
}

/// terraform-compliance's exit code and output on a plan file with `features`.
fn terraform_compliance(plan: &Path, features: &str) -> (i32, String) {
    let output = Command::new(policy_tool("terraform-compliance"))
        .args(["--no-ansi", "-p"])
        .arg(plan)
        .arg("-f")
        .arg(workspace_root().join("tests/policy").join(features))
        .env("HOME", plan.parent().unwrap())
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (output.status.code().unwrap_or(-1), text)
}

/// Every resource the view plans, by address.
fn planned(view: &Value) -> Vec<String> {
    view["planned_values"]["root_module"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["address"].as_str().unwrap().to_owned())
        .collect()
}

/// The entry of `address` in one of a view's lists: `resource_changes`, `resource_drift`, or a
/// state's resources (`["prior_state"]["values"]["root_module"]["resources"]`).
fn at<'a>(list: &'a Value, address: &str) -> &'a Value {
    list.as_array().unwrap().iter().find(|c| c["address"] == address).unwrap_or_else(|| panic!("no {address}"))
}

fn actions(view: &Value) -> BTreeSet<String> {
    view["resource_changes"].as_array().unwrap().iter().map(|c| c["change"]["actions"].to_string()).collect()
}

#[tokio::test]
async fn checkov_and_terraform_compliance_read_every_plan_of_the_account_and_find_what_is_there() {
    let account = emulator().new_account().await;
    let checkout = Checkout::new();

    // An empty account: everything is a create, and the tools judge all of it.
    let (empty, path) = checkout.view(&account, "empty");
    let resources = planned(&empty);
    assert!(resources.len() > 80, "{}", resources.len());
    // Every AWS resource is made; the repository on GitHub exists already, with its defaults.
    for change in empty["resource_changes"].as_array().unwrap() {
        if change["type"].as_str().unwrap().starts_with("aws_") {
            assert_eq!(change["change"]["actions"], serde_json::json!(["create"]), "{}", change["address"]);
        }
    }
    let types: BTreeSet<&str> = empty["planned_values"]["root_module"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["type"].as_str().unwrap())
        .collect();
    for expected in [
        "aws_ecr_repository",
        "aws_ecr_lifecycle_policy",
        "aws_s3_bucket",
        "aws_s3_bucket_public_access_block",
        "aws_s3_bucket_lifecycle_configuration",
        "aws_iam_role",
        "aws_iam_role_policy",
        "aws_iam_policy",
        "aws_iam_openid_connect_provider",
        "aws_codebuild_project",
        "aws_codebuild_webhook",
        "github_actions_variable",
        "github_workflow_repository_permissions",
        "github_actions_repository_oidc_subject_claim_customization_template",
    ] {
        assert!(types.contains(expected), "{expected}: {types:?}");
    }
    assert_eq!(empty["reconcile"]["unmapped_kinds"], serde_json::json!(["github_fork_pr_approval"]));
    let (summary, failed) = checkov(&path);
    assert_eq!(summary["resource_count"], resources.len(), "{summary}");
    assert_eq!(summary["parsing_errors"], 0, "{summary}");
    // The nightly's repositories do not scan on push, and its runner is privileged (docker
    // builds): checkov says so, on each of the 27 repositories and on the runner.
    let unscanned = failed.iter().filter(|(check, _)| check == "CKV_AWS_163").count();
    assert_eq!(unscanned, 27, "{failed:?}");
    assert!(failed.contains(&("CKV_AWS_316".to_owned(), "aws_codebuild_project.runner[\"runner\"]".to_owned())));
    assert!(failed.contains(&("CKV_AWS_51".to_owned(), "aws_ecr_repository.repository[\"pytorch\"]".to_owned())));
    // What holds passes: the bucket's public access block, the runner's logs.
    for (check, address) in &failed {
        assert!(
            !["CKV_AWS_53", "CKV_AWS_54", "CKV_AWS_55", "CKV_AWS_56", "CKV_AWS_314"].contains(&check.as_str()),
            "{check} {address}"
        );
    }

    let (code, output) = terraform_compliance(&path, "holds");
    assert_eq!(code, 0, "{output}");
    assert!(output.contains("scenarios (") && !output.contains("failed"), "{output}");
    let (code, output) = terraform_compliance(&path, "fails");
    assert_ne!(code, 0, "{output}");
    assert!(output.contains("aws_codebuild_project.runner[\"runner\"]"), "{output}");
    assert!(output.contains("aws_ecr_repository.repository[\"vllm\"]"), "{output}");

    // The account as it stood on 2026-11-11: some of it changes, all of it is listed.
    account.seed_2026_11_11(&checkout.desired());
    crate::support::import(&account, &checkout.desired());
    crate::github::codebuild_hook(&checkout.repository, true, &["workflow_job"]);
    let (drifted, path) = checkout.view(&account, "drifted");
    assert_eq!(planned(&drifted), resources);
    let drifted_actions = actions(&drifted);
    for expected in [r#"["no-op"]"#, r#"["update"]"#, r#"["create"]"#] {
        assert!(drifted_actions.contains(expected), "{expected}: {drifted_actions:?}");
    }
    assert_eq!(checkov(&path).0["resource_count"], resources.len());
    let (code, output) = terraform_compliance(&path, "holds");
    assert_eq!(code, 0, "{output}");
    // The live lifecycle policy's age rule is the before of an update.
    let pytorch_cache = at(&drifted["resource_changes"], "aws_ecr_lifecycle_policy.repository[\"pytorch-cache\"]");
    assert_eq!(pytorch_cache["change"]["actions"], serde_json::json!(["update"]));
    assert!(pytorch_cache["change"]["before"]["policy"].as_str().unwrap().contains("sinceImagePushed"));
    // What a plan shows privately, the prior state holds: the account's old role policy.
    let prior = drifted["prior_state"]["values"]["root_module"]["resources"].as_array().unwrap();
    assert!(prior.iter().any(|r| r["address"] == "aws_iam_role_policy.runner[\"codebuild\"]"));

    // Saved, the same view comes back from the file, as `terraform show -json` gives it.
    let saved = checkout.dir.path().join("saved.plan");
    let out = checkout.run(&account, &["plan", "--out", saved.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let shown = checkout.run(&account, &["show", "--format", "terraform-json", saved.to_str().unwrap()]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    // (`plan` printed the bake file's ECR_REGISTRY as the variable's name; `show` reads no bake file.)
    let registry = format!("{}.dkr.ecr.us-east-1.amazonaws.com", account.id);
    let shown: Value = serde_json::from_str(&shown.stdout.replace(&registry, "${ECR_REGISTRY}")).unwrap();
    for key in ["planned_values", "resource_changes", "prior_state", "configuration", "reconcile"] {
        assert!(shown[key] == drifted[key], "{key} differs");
    }
    // apply refuses the Terraform view for a saved plan.
    let refused = checkout.run(&account, &["apply", path.to_str().unwrap()]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(refused.stderr.contains("`plan --out`"), "{}", refused.stderr);

    // Clean: every declared resource is there, as a no-op; the tools still judge all of it.
    let apply = checkout.run(&account, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    let (clean, path) = checkout.view(&account, "clean");
    assert_eq!(planned(&clean), resources);
    assert_eq!(actions(&clean), BTreeSet::from([r#"["no-op"]"#.to_owned()]));
    assert_eq!(clean["applyable"], false);
    let (summary, clean_failed) = checkov(&path);
    assert_eq!(summary["resource_count"], resources.len());
    assert!(clean_failed.iter().filter(|(check, _)| check == "CKV_AWS_163").count() == 27);
}

#[tokio::test]
async fn a_repositorys_encryption_is_made_as_declared_and_a_different_one_is_a_replacement_nobody_carries_out() {
    use aws_sdk_ecr as ecr;
    let account = emulator().new_account().await;
    let text = crate::support::small_desired(&["plain", "sealed"])
        .replace("sealed = {}", "sealed = { encryption_type = \"KMS\" }");
    let desired = crate::support::desired_file(&text);
    let run = |args: &[&str]| crate::support::reconcile(&account, &desired.path, args);

    let apply = run(&["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    let client = ecr::Client::new(&account.sdk_config());
    let encryption = |name: &'static str| {
        let client = client.clone();
        async move {
            let listed = client.describe_repositories().repository_names(name).send().await.unwrap();
            let configuration = listed.repositories()[0].encryption_configuration().unwrap().clone();
            (configuration.encryption_type().as_str().to_owned(), configuration.kms_key().map(str::to_owned))
        }
    };
    assert_eq!(encryption("plain").await, ("AES256".to_owned(), None));
    let (kind, key) = encryption("sealed").await;
    assert_eq!(kind, "KMS");
    assert!(key.is_some(), "AWS's managed key for ECR");
    // AWS's own key for KMS is not drift: desired.toml named none.
    let plan = run(&["plan", "--detailed-exitcode"]);
    assert_eq!(plan.code, 0, "{}{}", plan.stdout, plan.stderr);

    // Made again out of band with another encryption: a replacement, shown and never carried out.
    client.delete_repository().repository_name("plain").force(true).send().await.unwrap();
    client
        .create_repository()
        .repository_name("plain")
        .encryption_configuration(
            ecr::types::EncryptionConfiguration::builder()
                .encryption_type(ecr::types::EncryptionType::Kms)
                .build()
                .unwrap(),
        )
        .tags(ecr::types::Tag::builder().key("project").value("rocm-bake").build().unwrap())
        .tags(crate::support::ecr_mark())
        .send()
        .await
        .unwrap();
    let plan = run(&["plan"]);
    assert!(plan.stdout.contains("ecr_repository.plain must be replaced"), "{}", plan.stdout);
    assert!(plan.stdout.contains("encryption_type"), "{}", plan.stdout);
    let view = run(&["plan", "--format", "terraform-json"]);
    let view: Value = serde_json::from_str(&view.stdout).unwrap();
    let change = at(&view["resource_changes"], "aws_ecr_repository.repository[\"plain\"]");
    assert_eq!(change["change"]["actions"], serde_json::json!(["delete", "create"]));
    assert_eq!(change["change"]["replace_paths"], serde_json::json!([["encryption_configuration"]]));
    assert_eq!(change["action_reason"], "replace_because_cannot_update");
    let writes = account.writes().len();
    let refused = run(&["apply", "--auto-approve"]);
    assert_eq!(refused.code, 3, "{}{}", refused.stdout, refused.stderr);
    let refused = run(&["apply", "--auto-approve", "--allow-delete"]);
    assert_eq!(refused.code, 3, "{}{}", refused.stdout, refused.stderr);
    assert!(
        refused
            .stderr
            .contains("ECR cannot change a repository's `encryption_type` (it sets it only when it makes one)"),
        "{}",
        refused.stderr
    );
    assert_eq!(account.writes().len(), writes, "nothing written");

    // A KMS key that is not an ARN, or one on AES256: refused before any AWS call, with the key.
    for (line, why) in [
        ("sealed = { encryption_type = \"KMS\", kms_key = \"alias/mine\" }", "is not a KMS key's ARN"),
        ("sealed = { kms_key = \"arn:aws:kms:us-east-1:1:key/k\" }", "takes no KMS key"),
    ] {
        let bad = crate::support::desired_file(&text.replace("sealed = { encryption_type = \"KMS\" }", line));
        let run = crate::support::reconcile(&account, &bad.path, &["plan"]);
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert!(run.stderr.contains("ecr.repositories.sealed.kms_key") && run.stderr.contains(why), "{}", run.stderr);
    }
}

/// Terraform's JSON output format (format 1.2) as Terraform's documentation and
/// hashicorp/terraform-json define it: every object the format documents decoded with exactly
/// its fields (no field of reconcile's own among them), every field that is always there required.
fn decode(view: &Value) {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Plan {
        format_version: String,
        terraform_version: String,
        variables: serde_json::Map<String, Value>,
        planned_values: Values,
        resource_drift: Vec<ResourceChange>,
        resource_changes: Vec<ResourceChange>,
        relevant_attributes: Vec<RelevantAttribute>,
        prior_state: State,
        configuration: Configuration,
        timestamp: String,
        applyable: bool,
        complete: bool,
        errored: bool,
        /// The one key of reconcile's own: the tools ignore what they do not know.
        reconcile: Value,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct RelevantAttribute {
        resource: String,
        attribute: Vec<Value>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct State {
        format_version: String,
        terraform_version: String,
        values: Values,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Values {
        root_module: Module,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Module {
        resources: Vec<StateResource>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct StateResource {
        address: String,
        mode: String,
        #[serde(rename = "type")]
        kind: String,
        name: String,
        index: Value,
        provider_name: String,
        schema_version: u64,
        values: serde_json::Map<String, Value>,
        sensitive_values: Value,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct ResourceChange {
        address: String,
        mode: String,
        #[serde(rename = "type")]
        kind: String,
        name: String,
        index: Value,
        provider_name: String,
        change: Change,
        action_reason: Option<String>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Change {
        actions: Vec<String>,
        before: Value,
        after: Value,
        after_unknown: Value,
        before_sensitive: Value,
        after_sensitive: Value,
        replace_paths: Option<Vec<Vec<Value>>>,
        importing: Option<Importing>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Importing {
        id: String,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Configuration {
        provider_config: std::collections::BTreeMap<String, ProviderConfig>,
        root_module: ConfigModule,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct ProviderConfig {
        name: String,
        full_name: String,
        expressions: Option<Value>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct ConfigModule {
        resources: Vec<ConfigResource>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct ConfigResource {
        address: String,
        mode: String,
        #[serde(rename = "type")]
        kind: String,
        name: String,
        provider_config_key: String,
        expressions: serde_json::Map<String, Value>,
        schema_version: u64,
        for_each_expression: Value,
    }
    let plan: Plan = serde_json::from_value(view.clone()).unwrap_or_else(|e| panic!("not Terraform's format: {e}"));
    // hashicorp/terraform-json's Plan.Validate: a 1.x format version; the state's the same.
    assert!(plan.format_version.starts_with("1."), "{}", plan.format_version);
    assert_eq!(plan.prior_state.format_version, plan.format_version);
    assert_eq!(plan.prior_state.terraform_version, plan.terraform_version);
    assert!(plan.complete && !plan.errored);
    // Applyable only with something to do.
    assert!(!plan.applyable || plan.resource_changes.iter().any(|c| c.change.actions != ["no-op"]));
    assert!(plan.reconcile.is_object());
    let blocks: BTreeSet<(String, String)> =
        plan.configuration.root_module.resources.iter().map(|r| (r.kind.clone(), r.name.clone())).collect();
    let instance = |r: &StateResource| {
        assert_eq!(r.mode, "managed");
        assert_eq!(r.schema_version, 0);
        assert!(r.sensitive_values.is_object());
        assert!(r.provider_name.starts_with("registry.terraform.io/"), "{}", r.provider_name);
        let index = r.index.as_str().expect("a for_each key");
        assert_eq!(r.address, format!("{}.{}[{}]", r.kind, r.name, Value::String(index.to_owned())));
        assert!(blocks.contains(&(r.kind.clone(), r.name.clone())), "{} has no configuration", r.address);
        assert!(!r.values.is_empty(), "{}", r.address);
    };
    plan.planned_values.root_module.resources.iter().for_each(instance);
    plan.prior_state.values.root_module.resources.iter().for_each(instance);
    // What Terraform's state holds of every resource that exists: its id, and its ARN where
    // the type has one (the provider's schema).
    const WITH_ARN: [&str; 6] = [
        "aws_ecr_repository",
        "aws_s3_bucket",
        "aws_iam_policy",
        "aws_iam_role",
        "aws_iam_openid_connect_provider",
        "aws_codebuild_project",
    ];
    for resource in &plan.prior_state.values.root_module.resources {
        let id = resource.values.get("id").and_then(Value::as_str);
        assert!(id.is_some_and(|id| !id.is_empty()), "{} has no id", resource.address);
        if WITH_ARN.contains(&resource.kind.as_str()) {
            let arn = resource.values.get("arn").and_then(Value::as_str).unwrap_or_default();
            assert!(arn.starts_with("arn:aws:"), "{} has no arn: {arn:?}", resource.address);
        }
    }
    // Terraform's `timestamp`: RFC 3339, UTC; no input variables.
    assert!(plan.timestamp.len() == 20 && plan.timestamp.ends_with('Z'), "{}", plan.timestamp);
    assert!(plan.variables.is_empty());
    let drifted: BTreeSet<&str> = plan.resource_drift.iter().map(|d| d.address.as_str()).collect();
    for attribute in &plan.relevant_attributes {
        assert!(drifted.contains(attribute.resource.as_str()), "{}", attribute.resource);
        assert_eq!(attribute.attribute.len(), 1);
    }
    // Drift is what refresh found: an update, or a resource appeared or gone out of band.
    for drift in &plan.resource_drift {
        assert!(drift.action_reason.is_none() && drift.change.importing.is_none(), "{}", drift.address);
        assert!(
            [["update"], ["delete"], ["create"]].iter().any(|one| drift
                .change
                .actions
                .iter()
                .map(String::as_str)
                .eq(one.iter().copied())),
            "{:?}",
            drift.change.actions
        );
    }
    let actions: [&[&str]; 6] =
        [&["no-op"], &["create"], &["update"], &["delete"], &["delete", "create"], &["create", "delete"]];
    for change in &plan.resource_changes {
        let Change {
            actions: done,
            before,
            after,
            after_unknown,
            before_sensitive,
            after_sensitive,
            replace_paths,
            importing,
        } = &change.change;
        assert!(actions.iter().any(|a| *a == done.as_slice()), "{done:?}");
        assert_eq!(change.mode, "managed");
        let index = change.index.as_str().unwrap();
        assert_eq!(change.address, format!("{}.{}[{}]", change.kind, change.name, Value::String(index.to_owned())));
        assert!(change.provider_name.starts_with("registry.terraform.io/"), "{}", change.provider_name);
        assert!(
            blocks.contains(&(change.kind.clone(), change.name.clone())),
            "{} has no configuration",
            change.address
        );
        assert_eq!(before.is_null(), done == &["create"], "{}", change.address);
        assert_eq!(after.is_null(), done == &["delete"], "{}", change.address);
        // Unknown after apply: only what AWS chooses for what is made; nothing sensitive.
        let done_str: Vec<&str> = done.iter().map(String::as_str).collect();
        match (after.is_null(), done_str.as_slice()) {
            (true, _) => assert_eq!(after_unknown, &Value::Bool(false)),
            (false, ["create"] | ["delete", "create"] | ["create", "delete"]) => {
                let unknown = after_unknown.as_object().unwrap();
                assert!(unknown.values().all(|v| v == &Value::Bool(true)), "{after_unknown}");
                assert!(unknown.keys().all(|k| after.get(k).is_none()), "{}: {unknown:?} is known", change.address);
            }
            (false, _) => assert_eq!(after_unknown, &serde_json::json!({}), "{}", change.address),
        }
        assert_eq!(before_sensitive.is_object(), !before.is_null());
        assert_eq!(after_sensitive.is_object(), !after.is_null());
        assert_eq!(replace_paths.is_some(), done.len() == 2, "{}", change.address);
        assert!(importing.as_ref().is_none_or(|i| !i.id.is_empty()));
        if let Some(reason) = &change.action_reason {
            assert!(reason.starts_with("replace_") || reason.starts_with("delete_"), "{reason}");
        }
    }
    for (key, provider) in &plan.configuration.provider_config {
        assert_eq!(key, &provider.name);
        assert!(provider.full_name.ends_with(&format!("/{}", provider.name)), "{}", provider.full_name);
        assert!(provider.expressions.as_ref().is_none_or(Value::is_object));
    }
    for resource in &plan.configuration.root_module.resources {
        assert_eq!((resource.mode.as_str(), resource.schema_version), ("managed", 0));
        assert_eq!(resource.address, format!("{}.{}", resource.kind, resource.name));
        assert!(plan.configuration.provider_config.contains_key(&resource.provider_config_key));
        assert!(resource.for_each_expression["references"].is_array());
        // Each expression is a constant, the instance's `for_each` value, or a reference to
        // another block, which graph checks follow.
        for expression in resource.expressions.values() {
            if expression.get("constant_value").is_some() {
                continue;
            }
            let references = expression["references"].as_array().expect("references");
            let block = references[0].as_str().unwrap();
            assert!(
                block == "each.value" || blocks.iter().any(|(kind, name)| format!("{kind}.{name}") == block),
                "{block}"
            );
        }
    }
}

#[test]
fn the_documented_mapping_is_each_crates_own_table() {
    let doc = std::fs::read_to_string(workspace_root().join("docs/terraform-json.md")).unwrap();
    let mut rows = 0;
    for krate in ["ecr", "s3", "iam", "codebuild", "github"] {
        // The module documentation of each kind's module.
        let mut files = Vec::new();
        crate::tidy::files_under(&workspace_root().join(format!("crates/{krate}/src")), "rs", &mut files);
        let source: String = files.iter().map(|file| std::fs::read_to_string(file).unwrap()).collect();
        for row in source.lines().filter_map(|line| line.strip_prefix("//! ")).filter(|line| line.starts_with('|')) {
            assert!(doc.lines().any(|line| line == row), "docs/terraform-json.md lacks {krate}'s row: {row}");
            rows += 1;
        }
    }
    assert!(rows > 20, "{rows}");
}

/// The Rego policies of docs/terraform-json.md, exactly as written there, each in a file of
/// its own: (package, path).
fn documented_rego(dir: &Path) -> Vec<(String, PathBuf)> {
    let doc = std::fs::read_to_string(workspace_root().join("docs/terraform-json.md")).unwrap();
    let mut policies = Vec::new();
    for block in doc.split("```rego\n").skip(1) {
        let text = &block[..block.find("```").expect("a closed block")];
        let package = text.lines().find_map(|l| l.strip_prefix("package ")).expect("a package").to_owned();
        let path = dir.join(format!("{package}.rego"));
        std::fs::write(&path, text).unwrap();
        policies.push((package, path));
    }
    policies
}

/// What `data.<package>.deny` says of a plan file, with regopy (OPA's Rego interpreter).
fn deny(plan: &Path, package: &str, policy: &Path) -> BTreeSet<String> {
    let output = Command::new(policy_tool("python"))
        .arg(workspace_root().join("tests/policy/rego.py"))
        .arg(plan)
        .arg(format!("data.{package}.deny"))
        .arg(policy)
        .output()
        .unwrap();
    assert!(output.status.success(), "{package}: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stdout)))
}

#[tokio::test]
async fn resource_drift_is_every_change_made_out_of_band_and_the_documented_rego_policies_judge_it() {
    use aws_sdk_codebuild as codebuild;
    use aws_sdk_ecr as ecr;
    use aws_sdk_iam as iam;
    use aws_sdk_s3 as s3;
    let account = emulator().new_account().await;
    let checkout = Checkout::new();
    let policies = documented_rego(checkout.dir.path());
    assert_eq!(policies.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>(), ["main", "drift"]);
    let (main, drift_policy) = (&policies[0].1, &policies[1].1);

    // Made from nothing: nothing in AWS drifted (the repository on GitHub exists with GitHub's
    // defaults, which differ: those are), and what AWS will choose is unknown until it does.
    let (empty, path) = checkout.view(&account, "empty");
    let drifted_types: BTreeSet<&str> =
        empty["resource_drift"].as_array().unwrap().iter().map(|d| d["type"].as_str().unwrap()).collect();
    assert!(drifted_types.iter().all(|t| t.starts_with("github_")), "{drifted_types:?}");
    let pytorch = |view: &Value, key: &str| at(&view[key], "aws_ecr_repository.repository[\"pytorch\"]").clone();
    let unknown = &pytorch(&empty, "resource_changes")["change"]["after_unknown"];
    for attribute in ["arn", "id", "registry_id", "repository_url"] {
        assert_eq!(unknown[attribute], true, "{unknown}");
    }
    // The nightly's repositories do not scan on push: the documented policy fails the plan.
    let unscanned = deny(&path, "main", main);
    assert_eq!(unscanned.len(), 27, "{unscanned:?}");
    assert!(unscanned.contains("aws_ecr_repository.repository[\"pytorch\"] does not scan on push"));

    let apply = checkout.run(&account, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    let (clean, path) = checkout.view(&account, "clean");
    assert_eq!(clean["resource_drift"], serde_json::json!([]));
    assert_eq!(clean["relevant_attributes"], serde_json::json!([]));
    assert_eq!(deny(&path, "drift", drift_policy), BTreeSet::new(), "a clean account passes");
    // What AWS chose is known once it exists, on every side.
    let state = &pytorch(&clean, "resource_changes")["change"]["after"];
    // (The registry's host is the bake file's ECR_REGISTRY, which the plan prints by its name.)
    assert_eq!(state["repository_url"], "${ECR_REGISTRY}/pytorch");
    assert_eq!(state["arn"], format!("arn:aws:ecr:us-east-1:{}:repository/pytorch", account.id));
    assert_eq!(state["registry_id"], account.id);
    let role = at(&clean["prior_state"]["values"]["root_module"]["resources"], "aws_iam_role.runner[\"codebuild\"]");
    assert!(role["values"]["unique_id"].as_str().is_some_and(|id| id.starts_with("AROA")), "{role}");
    assert_eq!(role["values"]["arn"], format!("arn:aws:iam::{}:role/rocm-bake-codebuild", account.id));
    let webhook = clean["prior_state"]["values"]["root_module"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["type"] == "aws_codebuild_webhook")
        .unwrap();
    assert_eq!(webhook["values"]["id"], "rocm-bake");

    // Eight changes made out of band, each of another field or resource.
    let config = account.sdk_config();
    let ecr = ecr::Client::new(&config);
    crate::support::put_lifecycle_policy(
        &ecr,
        "pytorch-cache",
        r#"{"rules":[{"rulePriority":1,"selection":{"tagStatus":"untagged","countType":"sinceImagePushed","countUnit":"days","countNumber":14},"action":{"type":"expire"}}]}"#,
    )
    .await;
    ecr.put_image_tag_mutability()
        .repository_name("pytorch")
        .image_tag_mutability(ecr::types::ImageTagMutability::Immutable)
        .send()
        .await
        .unwrap();
    let pull = serde_json::json!({
        "Version": "2012-10-17",
        "Statement": [{ "Sid": "pull", "Effect": "Allow", "Principal": { "AWS": "arn:aws:iam::210987654321:root" },
                        "Action": ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"] }],
    });
    ecr.set_repository_policy().repository_name("triton-wheel").policy_text(pull.to_string()).send().await.unwrap();
    let s3 = s3::Client::new(&config);
    let bucket = format!("rocm-bake-sccache-{}", account.id);
    s3.put_bucket_versioning()
        .bucket(&bucket)
        .versioning_configuration(
            s3::types::VersioningConfiguration::builder().status(s3::types::BucketVersioningStatus::Enabled).build(),
        )
        .send()
        .await
        .unwrap();
    let rule = s3::types::LifecycleRule::builder()
        .id("expire-after-30-days")
        .status(s3::types::ExpirationStatus::Enabled)
        .filter(s3::types::LifecycleRuleFilter::builder().prefix("").build())
        .expiration(s3::types::LifecycleExpiration::builder().days(365).build())
        .build()
        .unwrap();
    s3.put_bucket_lifecycle_configuration()
        .bucket(&bucket)
        .lifecycle_configuration(s3::types::BucketLifecycleConfiguration::builder().rules(rule).build().unwrap())
        .send()
        .await
        .unwrap();
    let iam = iam::Client::new(&config);
    iam.update_role().role_name("rocm-bake-codebuild").max_session_duration(43200).send().await.unwrap();
    let wide = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}"#;
    iam.put_role_policy()
        .role_name("rocm-bake-codebuild")
        .policy_name("rocm-bake-nightly")
        .policy_document(wide)
        .send()
        .await
        .unwrap();
    let codebuild = codebuild::Client::new(&config);
    let project = codebuild.batch_get_projects().names("rocm-bake").send().await.unwrap();
    let environment = project.projects()[0].environment().unwrap().clone();
    let environment = codebuild::types::ProjectEnvironment::builder()
        .r#type(environment.r#type().clone())
        .image(environment.image())
        .privileged_mode(true)
        .compute_type(codebuild::types::ComputeType::BuildGeneral12Xlarge)
        .build()
        .unwrap();
    codebuild.update_project().name("rocm-bake").environment(environment).send().await.unwrap();

    let (drifted, path) = checkout.view(&account, "drifted");
    let drift: BTreeSet<(String, String)> = drifted["resource_drift"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["change"]["actions"][0].as_str().unwrap().to_owned(), d["address"].as_str().unwrap().to_owned()))
        .collect();
    let expected: BTreeSet<(String, String)> = [
        ("update", "aws_ecr_lifecycle_policy.repository[\"pytorch-cache\"]"),
        ("update", "aws_ecr_repository.repository[\"pytorch\"]"),
        // A resource of its own, which no apply made: Terraform, knowing only its state, is
        // blind to it; reconcile reads every repository's policy.
        ("create", "aws_ecr_repository_policy.repository[\"triton-wheel\"]"),
        ("update", "aws_s3_bucket_versioning.bucket[\"sccache\"]"),
        ("update", "aws_s3_bucket_lifecycle_configuration.bucket[\"sccache\"]"),
        ("update", "aws_iam_role.runner[\"codebuild\"]"),
        ("update", "aws_iam_role_policy.runner[\"codebuild\"]"),
        ("update", "aws_codebuild_project.runner[\"runner\"]"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_owned(), b.to_owned()))
    .collect();
    assert_eq!(drift, expected);
    // Before: as the last apply left it (desired.toml's); after: as read.
    let entry = |address: &str| at(&drifted["resource_drift"], address).clone();
    let lifecycle = entry("aws_ecr_lifecycle_policy.repository[\"pytorch-cache\"]");
    assert!(lifecycle["change"]["before"]["policy"].as_str().unwrap().contains("imageCountMoreThan"));
    assert!(lifecycle["change"]["after"]["policy"].as_str().unwrap().contains("sinceImagePushed"));
    let role = entry("aws_iam_role.runner[\"codebuild\"]");
    assert_eq!(
        (&role["change"]["before"]["max_session_duration"], &role["change"]["after"]["max_session_duration"]),
        (&serde_json::json!(3600), &serde_json::json!(43200))
    );
    assert!(role["change"]["after"]["unique_id"].as_str().is_some_and(|id| id.starts_with("AROA")));
    let attributes: BTreeSet<String> = drifted["relevant_attributes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| format!("{}.{}", a["resource"].as_str().unwrap(), a["attribute"][0].as_str().unwrap()))
        .collect();
    for expected in [
        "aws_ecr_repository.repository[\"pytorch\"].image_tag_mutability",
        "aws_iam_role.runner[\"codebuild\"].max_session_duration",
        "aws_codebuild_project.runner[\"runner\"].environment",
        "aws_s3_bucket_versioning.bucket[\"sccache\"].versioning_configuration",
    ] {
        assert!(attributes.contains(expected), "{expected}: {attributes:?}");
    }
    // The documented drift gate fails the plan, naming every change and nothing else.
    let denied = deny(&path, "drift", drift_policy);
    for (action, address) in &expected {
        assert!(denied.iter().any(|d| d.starts_with(&format!("{address}: "))), "{action} {address}: {denied:?}");
    }
    assert!(
        denied.contains("aws_ecr_repository_policy.repository[\"triton-wheel\"]: created out of band"),
        "{denied:?}"
    );
    assert!(
        denied.contains("aws_iam_role.runner[\"codebuild\"]: max_session_duration changed out of band"),
        "{denied:?}"
    );
    assert_eq!(denied.iter().filter(|d| d.contains("codebuild_webhook")).count(), 0);

    // The scheduled check says the same as Terraform's refresh-only plan: the drift, nothing
    // planned, and exit 2.
    let run = checkout.run(&account, &["drift", "--private", "--format", "terraform-json"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let refresh: Value = serde_json::from_str(&run.stdout).unwrap();
    decode(&refresh);
    assert_eq!(refresh["resource_drift"], drifted["resource_drift"]);
    assert_eq!(refresh["relevant_attributes"], drifted["relevant_attributes"]);
    assert_eq!(refresh["resource_changes"], serde_json::json!([]));
    assert_eq!(refresh["planned_values"], refresh["prior_state"]["values"]);
    assert_eq!(refresh["applyable"], false);
}

#[tokio::test]
async fn the_boundarys_description_is_shown_everywhere_and_a_new_one_is_a_replacement_apply_refuses() {
    let account = emulator().new_account().await;
    let text = crate::support::small_account(&["plain"]);
    let desired = crate::support::desired_file(&text);
    let run = |path: &Path, args: &[&str]| crate::support::reconcile(&account, path, args);
    let default = "The most the role may ever do, whatever its own policies say; derived by reconcile";

    // Made: the description it is made with is in every format.
    let plan = run(&desired.path, &["plan"]);
    assert!(plan.stdout.contains(default), "{}", plan.stdout);
    let json = run(&desired.path, &["plan", "--format", "json"]);
    let boundary = crate::support::json_change(&json.stdout, "iam_role_boundary.codebuild");
    assert_eq!(boundary["after"]["description"], default);
    let view: Value =
        serde_json::from_str(&run(&desired.path, &["plan", "--format", "terraform-json"]).stdout).unwrap();
    let policy = at(&view["resource_changes"], "aws_iam_policy.boundary[\"codebuild\"]");
    assert_eq!(policy["change"]["after"]["description"], default);
    let apply = run(&desired.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    let iam = aws_sdk_iam::Client::new(&account.sdk_config());
    let arn = format!("arn:aws:iam::{}:policy/rocm-bake-codebuild-boundary", account.id);
    let live = iam.get_policy().policy_arn(&arn).send().await.unwrap();
    assert_eq!(live.policy().unwrap().description(), Some(default));
    assert_eq!(run(&desired.path, &["plan", "--detailed-exitcode"]).code, 0, "the same description: no change");

    // Another description in desired.toml: IAM cannot change it, so the plan says it replaces
    // the boundary, in every format, and that apply will not; apply writes nothing.
    let changed = crate::support::desired_file(&text.replace(
        "policy_name = \"rocm-bake-nightly\"\n",
        "policy_name = \"rocm-bake-nightly\"\nboundary_description = \"The nightly's ceiling\"\n",
    ));
    let plan = run(&changed.path, &["plan"]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    assert!(plan.stdout.contains("iam_role_boundary.codebuild must be replaced"), "{}", plan.stdout);
    assert!(plan.stdout.contains("The nightly's ceiling") && plan.stdout.contains(default), "{}", plan.stdout);
    assert!(plan.stdout.contains("W102") && plan.stdout.contains("apply refuses this replacement"), "{}", plan.stdout);
    let json = run(&changed.path, &["plan", "--format", "json"]);
    let boundary = crate::support::json_change(&json.stdout, "iam_role_boundary.codebuild");
    assert_eq!(boundary["actions"], serde_json::json!(["delete", "create"]));
    assert_eq!(boundary["before"]["description"], default);
    assert_eq!(boundary["after"]["description"], "The nightly's ceiling");
    let view: Value =
        serde_json::from_str(&run(&changed.path, &["plan", "--format", "terraform-json"]).stdout).unwrap();
    decode(&view);
    let policy = at(&view["resource_changes"], "aws_iam_policy.boundary[\"codebuild\"]");
    assert_eq!(policy["change"]["actions"], serde_json::json!(["delete", "create"]));
    assert_eq!(policy["change"]["replace_paths"], serde_json::json!([["description"]]));
    assert_eq!(policy["action_reason"], "replace_because_cannot_update");
    assert_eq!(policy["change"]["after_unknown"]["arn"], true, "made anew: AWS chooses again");
    let writes = account.writes().len();
    let refused = run(&changed.path, &["apply", "--auto-approve"]);
    assert_eq!(refused.code, 3, "{}{}", refused.stdout, refused.stderr);
    assert!(refused.stderr.contains("pass --allow-delete"), "{}", refused.stderr);
    let refused = run(&changed.path, &["apply", "--auto-approve", "--allow-delete"]);
    assert_eq!(refused.code, 3, "{}{}", refused.stdout, refused.stderr);
    assert!(refused.stderr.contains("IAM cannot change a managed policy's description"), "{}", refused.stderr);
    assert_eq!(account.writes().len(), writes, "nothing written");
    assert_eq!(iam.get_policy().policy_arn(&arn).send().await.unwrap().policy().unwrap().description(), Some(default));

    // Refused before any AWS call when IAM would refuse it halfway through an apply.
    let bad = crate::support::desired_file(&text.replace(
        "policy_name = \"rocm-bake-nightly\"\n",
        "policy_name = \"rocm-bake-nightly\"\nboundary_description = \"a ✓\"\n",
    ));
    let refused = run(&bad.path, &["plan"]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(refused.stderr.contains("iam.roles.codebuild.boundary_description"), "{}", refused.stderr);
}

#[tokio::test]
async fn a_pull_requests_own_changes_are_never_drift_and_what_changed_out_of_band_is() {
    let account = emulator().new_account().await;
    let text = crate::support::small_account(&["plain"]);
    let base = crate::support::desired_file(&text);
    let apply = crate::support::reconcile(&account, &base.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    // The pull request changes the role's description; someone changed its session length by hand.
    let pull_request = crate::support::desired_file(&text.replace(
        "description = \"Service role of the rocm-bake CodeBuild runner\"",
        "description = \"The runner's role\"",
    ));
    let iam = aws_sdk_iam::Client::new(&account.sdk_config());
    iam.update_role()
        .role_name("rocm-bake-codebuild")
        .description("Service role of the rocm-bake CodeBuild runner")
        .max_session_duration(7200)
        .send()
        .await
        .unwrap();
    let base_arg = base.path.to_str().unwrap();
    let run = crate::support::reconcile(
        &account,
        &pull_request.path,
        &["plan", "--base", base_arg, "--format", "terraform-json"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let view: Value = serde_json::from_str(&run.stdout).unwrap();
    decode(&view);
    // The plan changes both back or forward; only the session length drifted.
    let role = at(&view["resource_changes"], "aws_iam_role.runner[\"codebuild\"]");
    assert_eq!(role["change"]["actions"], serde_json::json!(["update"]));
    assert_eq!(role["change"]["after"]["description"], "The runner's role");
    let drift = view["resource_drift"].as_array().unwrap();
    assert_eq!(drift.len(), 1, "{drift:?}");
    assert_eq!(drift[0]["address"], "aws_iam_role.runner[\"codebuild\"]");
    assert_eq!(drift[0]["change"]["before"]["description"], drift[0]["change"]["after"]["description"]);
    assert_eq!(
        view["relevant_attributes"],
        serde_json::json!([{ "resource": "aws_iam_role.runner[\"codebuild\"]", "attribute": ["max_session_duration"] }])
    );

    // A key the pull request points at another resource the default branch does not declare,
    // even one carrying this deployment's mark (which whoever may tag it could have written):
    // nothing of it shown, W602.
    let trust = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"codebuild.amazonaws.com"},"Action":"sts:AssumeRole"}]}"#;
    let mark =
        aws_sdk_iam::types::Tag::builder().key(crate::support::MARK.0).value(crate::support::MARK.1).build().unwrap();
    iam.create_role()
        .role_name("rocm-bake-codebuild-2")
        .assume_role_policy_document(trust)
        .max_session_duration(10800)
        .tags(mark)
        .send()
        .await
        .unwrap();
    let renamed = crate::support::desired_file(
        &text.replace("name = \"rocm-bake-codebuild\"", "name = \"rocm-bake-codebuild-2\""),
    );
    let run =
        crate::support::reconcile(&account, &renamed.path, &["plan", "--base", base_arg, "--format", "terraform-json"]);
    assert_eq!(run.code, 3, "{}{}", run.stdout, run.stderr);
    assert!(!run.stdout.contains("10800"), "{}", run.stdout);
    let text_run = crate::support::reconcile(&account, &renamed.path, &["plan", "--base", base_arg]);
    assert!(text_run.stdout.contains("[W602] iam_role.codebuild"), "{}", text_run.stdout);
    // Declared by the default branch under another key: still nothing of it (the key is what the
    // default branch vouches for), and so no baseline of another resource's fields either.
    let two = format!(
        "{text}\n[iam.roles.second]\nname = \"rocm-bake-codebuild-2\"\ntrusted_services = [\"codebuild.amazonaws.com\"]\n\
         policy_name = \"second\"\nadopt = true\n"
    );
    let both = crate::support::desired_file(&two);
    let apply = crate::support::reconcile(&account, &both.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    let both_arg = both.path.to_str().unwrap();
    let run =
        crate::support::reconcile(&account, &renamed.path, &["plan", "--base", both_arg, "--format", "terraform-json"]);
    assert_eq!(run.code, 3, "{}{}", run.stdout, run.stderr);
    assert!(!run.stdout.contains("10800"), "{}", run.stdout);
    let view: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", run.stdout, run.stderr));
    let drifted: Vec<&Value> = view["resource_drift"].as_array().unwrap().iter().map(|d| &d["address"]).collect();
    assert!(!drifted.iter().any(|a| a.as_str().unwrap().starts_with("aws_iam_role.")), "{drifted:?}");
}
