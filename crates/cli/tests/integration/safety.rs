//! The account's incidents, each turned into a check that would have caught it: a lifecycle
//! rule that expires live tags, a bake target nobody declared, what a policy change expires,
//! and deletes only of what reconcile made.

use aws_sdk_ecr as ecr;
use reconcile_test_support::{TestAccount, emulator};
use serde_json::Value;

use crate::support::{
    BUCKET_AND_ROLE, OLD_14_DAY_POLICY, desired_file, json_changes, put_lifecycle_policy, reconcile, reconcile_with,
    small_account,
};

/// Pushes an image of `size` bytes (as the emulator sizes it: its manifest's `config.size`),
/// tagged or not; `seed` makes its layers, and so its digest, its own.
pub(crate) async fn push(client: &ecr::Client, repository: &str, tag: Option<&str>, size: u64, seed: &str) {
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": { "mediaType": "application/vnd.docker.container.image.v1+json", "size": size, "digest": format!("sha256:{seed}c") },
        "layers": [{ "mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip", "size": size, "digest": format!("sha256:{seed}l") }],
    });
    client
        .put_image()
        .repository_name(repository)
        .image_manifest(manifest.to_string())
        .set_image_tag(tag.map(str::to_owned))
        .send()
        .await
        .unwrap();
}

const KEEP_3: &str = r#"
[ecr.lifecycle_policies.keep-3-untagged]
rules = [
  { rulePriority = 1, selection = { tagStatus = "untagged", countType = "imageCountMoreThan", countNumber = 3 }, action = { type = "expire" } },
]
"#;

/// The old 14-day rule, written in desired.toml.
const FOURTEEN_DAYS_ANY: &str = r#"region = "us-east-1"
[ecr.lifecycle_policies.old]
rules = [
  { rulePriority = 1, description = "Expire images older than 14 days", selection = { tagStatus = "any", countType = "sinceImagePushed", countUnit = "days", countNumber = 14 }, action = { type = "expire" } },
]
[ecr.repositories]
pytorch-cache = { lifecycle_policy = "old" }
"#;

#[tokio::test]
async fn a_policy_over_tagged_images_is_refused_with_exit_3_unless_the_repository_allows_it() {
    let account = emulator().new_account().await;
    let desired = desired_file(FOURTEEN_DAYS_ANY);
    let validate = reconcile(&account, &desired.path, &["validate"]);
    assert_eq!(validate.code, 3, "{}{}", validate.stdout, validate.stderr);
    assert_eq!(validate.stdout, "");
    let file = desired.path.display();
    assert!(
        validate.stderr.contains(&format!(
            "error: [W301] {file}:4:3: `ecr.lifecycle_policies.old.rules[0]`: repository `pytorch-cache` uses \
             lifecycle policy `old`, whose rule 1 (`tagStatus = \"any\"`) can expire tagged images: one such rule \
             once expired the live nightly tag"
        )),
        "{}",
        validate.stderr
    );
    // Untagged images by age: a quiet fortnight empties the cache.
    assert!(validate.stderr.contains("warning: [W302]"), "{}", validate.stderr);
    assert!(
        validate.stderr.ends_with(
            "error: refused: 1 error finding(s) about desired.toml (W301 on ecr_lifecycle_policy.pytorch-cache); each \
             says what resolves it, and `reconcile explain W301` says more\n"
        ),
        "{}",
        validate.stderr
    );

    // plan and apply refuse too, before any write, and a refused plan is never saved.
    let saved = desired.path.with_file_name("plan.json");
    let plan = reconcile(&account, &desired.path, &["plan", "--out", saved.to_str().unwrap()]);
    assert_eq!(plan.code, 3, "{}{}", plan.stdout, plan.stderr);
    assert!(plan.stdout.contains("Error [W301] ecr_lifecycle_policy.pytorch-cache:"), "{}", plan.stdout);
    assert!(!saved.exists());
    let apply = reconcile(&account, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 3, "{}{}", apply.stdout, apply.stderr);
    assert_eq!(account.writes(), Vec::new(), "nothing written");

    // The only override: a named key on that repository, and the plan says it was used.
    let allowed = desired_file(&FOURTEEN_DAYS_ANY.replace(
        "pytorch-cache = { lifecycle_policy = \"old\" }",
        "pytorch-cache = { lifecycle_policy = \"old\", allow_tagged_expiry = true }",
    ));
    let validate = reconcile(&account, &allowed.path, &["validate"]);
    assert_eq!(validate.code, 0, "{}", validate.stderr);
    assert!(
        validate.stderr.contains("warning: [W301]")
            && validate.stderr.contains("(overridden: `allow_tagged_expiry = true` on the resource)"),
        "{}",
        validate.stderr
    );
    let json = reconcile(&account, &allowed.path, &["plan", "--format", "json"]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let json: Value = serde_json::from_str(&json.stdout).unwrap();
    let w301 = json["findings"].as_array().unwrap().iter().find(|f| f["code"] == "W301").unwrap();
    assert_eq!(
        (w301["severity"].as_str(), w301["overridden_by"].as_str()),
        (Some("warning"), Some("allow_tagged_expiry"))
    );

    // In [ecr.defaults] it would override every repository at once: refused.
    let in_defaults = desired_file(
        &FOURTEEN_DAYS_ANY
            .replace("[ecr.repositories]", "[ecr.defaults]\nallow_tagged_expiry = true\n[ecr.repositories]"),
    );
    let validate = reconcile(&account, &in_defaults.path, &["validate"]);
    assert_eq!(validate.code, 1);
    assert!(validate.stderr.contains("`ecr.defaults.allow_tagged_expiry`"), "{}", validate.stderr);
}

#[tokio::test]
async fn rules_ecr_rejects_and_risky_counts_are_caught_before_aws_sees_them() {
    let account = emulator().new_account().await;
    let rule = |selection: &str| {
        format!(
            "region = \"us-east-1\"\n[ecr.lifecycle_policies.p]\nrules = [\n{selection}\n]\n[ecr.repositories]\nr1 = {{ lifecycle_policy = \"p\" }}\n"
        )
    };
    let untagged = |priority: u32, count: u32| {
        format!(
            "  {{ rulePriority = {priority}, selection = {{ tagStatus = \"untagged\", countType = \"imageCountMoreThan\", countNumber = {count} }}, action = {{ type = \"expire\" }} }},"
        )
    };
    for (rules, expected) in [
        (format!("{}\n{}", untagged(1, 3), untagged(2, 5)), "2 rules select untagged images; ECR allows only one"),
        (untagged(1, 0), "`selection.countNumber` must be 1 or more"),
        (
            "  { rulePriority = 1, selection = { tagStatus = \"tagged\", tagPatternList = [\"a*b*c*d*e*f\"], countType = \"imageCountMoreThan\", countNumber = 3 }, action = { type = \"expire\" } },".to_owned(),
            "has more than 4 wildcards",
        ),
        (format!("{}\n{}", untagged(1, 3), untagged(1, 3).replace("untagged", "tagged").replace("countType", "tagPrefixList = [\"v\"], countType")), "is used by another rule"),
    ] {
        let desired = desired_file(&rule(&rules));
        let run = reconcile(&account, &desired.path, &["validate"]);
        assert_eq!(run.code, 1, "{expected}: {}", run.stderr);
        assert!(run.stderr.contains(expected), "{expected}: {}", run.stderr);
    }
    // Over ECR's 30,720 characters.
    let long = format!(
        "  {{ rulePriority = 1, description = \"{}\", selection = {{ tagStatus = \"untagged\", countType = \"imageCountMoreThan\", countNumber = 3 }}, action = {{ type = \"expire\" }} }},",
        "x".repeat(31_000)
    );
    let run = reconcile(&account, &desired_file(&rule(&long)).path, &["validate"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("more than the 30720 it accepts"), "{}", run.stderr);

    // Allowed but risky: keeping one untagged image is a warning, not a refusal.
    let run = reconcile(&account, &desired_file(&rule(&untagged(1, 1))).path, &["validate"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("warning: [W303]") && run.stderr.contains("keeps only 1 untagged image(s)"),
        "{}",
        run.stderr
    );
    assert_eq!(account.requests(), Vec::new(), "validate makes no AWS call");
}

#[tokio::test]
async fn a_policy_change_says_exactly_what_it_will_expire() {
    let account = emulator().new_account().await;
    let client = ecr::Client::new(&account.sdk_config());
    // Made by reconcile (its mark), its policy set by hand since.
    client.create_repository().repository_name("pytorch-cache").tags(crate::support::ecr_mark()).send().await.unwrap();
    // Oldest first: three tagged images, then ten untagged ones of 10 MiB, 11 MiB, ... 19 MiB.
    const MIB: u64 = 1 << 20;
    for (idx, tag) in ["latest-gfx1201-nightly", "nightly-2026-11-10", "v1"].iter().enumerate() {
        push(&client, "pytorch-cache", Some(tag), 500 * MIB + idx as u64, &format!("t{idx}")).await;
    }
    for idx in 0..10u64 {
        push(&client, "pytorch-cache", None, (10 + idx) * MIB, &format!("u{idx}")).await;
    }
    put_lifecycle_policy(&client, "pytorch-cache", r#"{"rules":[{"rulePriority":1,"selection":{"tagStatus":"untagged","countType":"imageCountMoreThan","countNumber":50},"action":{"type":"expire"}}]}"#).await;
    let desired = desired_file(&format!(
        "region = \"us-east-1\"\n[ecr.defaults]\nlifecycle_policy = \"keep-3-untagged\"\n{KEEP_3}\n[ecr.repositories]\npytorch-cache = {{}}\n"
    ));
    // The seven oldest untagged images: 10 + 11 + ... + 16 MiB.
    let bytes: u64 = (0..7).map(|idx| (10 + idx) * MIB).sum();
    assert_eq!(bytes, 91 * MIB);

    let writes = account.writes().len();
    let text = reconcile(&account, &desired.path, &["plan"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(
        text.stdout
            .contains("    # when it first runs, the policy expires 7 untagged images, 91.0 MiB (about $0.01 a month); no tagged image\n"),
        "{}",
        text.stdout
    );
    let json = reconcile(&account, &desired.path, &["plan", "--format", "json"]);
    let json: Value = serde_json::from_str(&json.stdout).unwrap();
    let change = json["resource_changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["address"] == "ecr_lifecycle_policy.pytorch-cache")
        .unwrap();
    assert_eq!(
        change["expires"],
        serde_json::json!({ "images": 7, "bytes": bytes, "tagged": [], "archived": 0, "monthly_saving_usd": 0.01 })
    );
    let markdown = reconcile(&account, &desired.path, &["plan", "--format", "markdown"]);
    assert!(
        markdown
            .stdout
            .contains("- `ecr_lifecycle_policy.pytorch-cache` expires 7 untagged images, 91.0 MiB (about $0.01 a month); no tagged \
             image\n"),
        "{}",
        markdown.stdout
    );

    // A policy that keeps the five newest images of any kind takes the three tagged ones with it:
    // allowed on this repository, and the plan names the tags.
    let desired = desired_file(
        "region = \"us-east-1\"\n[ecr.lifecycle_policies.five]\nrules = [\n  { rulePriority = 1, selection = { tagStatus = \"any\", countType = \"imageCountMoreThan\", countNumber = 5 }, action = { type = \"expire\" } },\n]\n[ecr.repositories]\npytorch-cache = { lifecycle_policy = \"five\", allow_tagged_expiry = true }\n",
    );
    let text = reconcile(&account, &desired.path, &["plan"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(
        text.stdout.contains(
            "# when it first runs, the policy expires 8 images, 1.5 GiB (about $0.15 a month); TAGGED: latest-gfx1201-nightly, \
             nightly-2026-11-10, v1"
        ),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout.contains(
            "Warning [W305] ecr_lifecycle_policy.pytorch-cache: the new lifecycle policy expires tagged images when \
             it first runs: latest-gfx1201-nightly, nightly-2026-11-10, v1 (overridden: `allow_tagged_expiry = true`"
        ),
        "{}",
        text.stdout
    );
    assert_eq!(account.writes().len(), writes, "plans only read");
}

#[tokio::test]
async fn the_fourteen_day_any_policy_live_is_an_error_in_plan_and_drift() {
    let account = emulator().new_account().await;
    let client = ecr::Client::new(&account.sdk_config());
    // Made by reconcile (its mark), its policy set by hand since.
    client.create_repository().repository_name("pytorch-cache").tags(crate::support::ecr_mark()).send().await.unwrap();
    put_lifecycle_policy(&client, "pytorch-cache", OLD_14_DAY_POLICY).await;
    let desired = desired_file(&format!(
        "region = \"us-east-1\"\n[ecr.defaults]\nlifecycle_policy = \"keep-3-untagged\"\n{KEEP_3}\n[ecr.repositories]\npytorch-cache = {{}}\n"
    ));
    for command in ["plan", "drift"] {
        let run = reconcile(&account, &desired.path, &[command, "--format", "json"]);
        let json: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|_| panic!("{}", run.stderr));
        let finding = json["findings"].as_array().unwrap().iter().find(|f| f["code"] == "D103").expect("D103");
        assert_eq!(finding["severity"], "error");
        assert_eq!(finding["address"], "ecr_lifecycle_policy.pytorch-cache");
    }
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    let after = reconcile(&account, &desired.path, &["drift"]);
    assert_eq!(after.code, 0, "{}{}", after.stdout, after.stderr);
}

const BAKE_JSON: &str = r#"{
  "group": { "default": { "targets": ["pytorch", "foo"] } },
  "target": {
    "pytorch": {
      "tags": ["REGISTRY/pytorch:nightly"],
      "cache-from": ["type=registry,ref=REGISTRY/pytorch-cache:buildcache"],
      "cache-to": ["type=registry,ref=REGISTRY/pytorch-cache:buildcache,mode=max,ignore-error=true"]
    },
    "foo": {
      "tags": ["REGISTRY/foo:nightly", "docker.io/rocm/foo:nightly"],
      "cache-from": [{ "type": "registry", "ref": "REGISTRY/foo-cache:buildcache" }],
      "cache-to": [{ "type": "registry", "ref": "REGISTRY/foo-cache:buildcache", "mode": "max", "ignore-error": "true" }]
    }
  }
}"#;

const BAKE_HCL: &str = r#"
variable "ECR_REGISTRY" { default = "zot.fleet.internal:5000" }
variable "REGISTRY_INSECURE" { default = true }
group "default" { targets = ["pytorch", "foo"] }
target "_cache" {
  cache-to = ["type=registry,ref=${ECR_REGISTRY}/${CACHE}:buildcache,mode=max,ignore-error=true"]
}
variable "CACHE" { default = "pytorch-cache" }
target "pytorch" {
  inherits = ["_cache"]
  tags = ["${ECR_REGISTRY}/pytorch:nightly"]
}
target "foo" {
  inherits = ["pytorch"]
  tags = ["${ECR_REGISTRY}/foo:nightly"]
  cache-to = ["type=registry,ref=${ECR_REGISTRY}/foo-cache:buildcache,mode=max,ignore-error=true"]
}
"#;

/// The nightly's registry in this account.
fn registry(account: &TestAccount) -> String {
    format!("{}.dkr.ecr.us-east-1.amazonaws.com", account.id)
}

#[tokio::test]
async fn a_bake_target_with_undeclared_repositories_is_refused_until_they_are_declared() {
    let account = emulator().new_account().await;
    // The registry is the one variable the bake file may take from the environment.
    let before =
        desired_file(&format!("bake_variables = [\"ECR_REGISTRY\"]\n{}", small_account(&["pytorch", "pytorch-cache"])));
    assert_eq!(reconcile(&account, &before.path, &["apply", "--auto-approve"]).code, 0);
    let dir = before.path.parent().unwrap();
    let registry = registry(&account);
    std::fs::write(dir.join("bake.json"), BAKE_JSON.replace("REGISTRY", &registry)).unwrap();
    std::fs::write(dir.join("docker-bake.hcl"), BAKE_HCL).unwrap();
    let env = [("ECR_REGISTRY", registry.as_str())];

    for bake in ["bake.json", "docker-bake.hcl"] {
        let path = dir.join(bake);
        let path = path.to_str().unwrap();
        let validate = reconcile_with(&account, &before.path, &["validate", "--bake", path], &env);
        assert_eq!(validate.code, 3, "{bake}: {}{}", validate.stdout, validate.stderr);
        // What the environment sets is named, never shown (wherever the value appears).
        assert!(
            validate.stderr.contains(&format!(
                "error: [W401] {path}: target `foo` exports its cache (cache-to) to `${{ECR_REGISTRY}}/foo-cache:buildcache`, \
                 but desired.toml declares no repository `foo-cache`"
            )),
            "{bake}: {}",
            validate.stderr
        );
        assert!(validate.stderr.contains("target `foo` pushes to"), "{bake}: {}", validate.stderr);
        assert!(validate.stderr.contains(&format!("naming account {}", account.id)), "{}", validate.stderr);
        // The same in plan and apply, which refuse before any write.
        let writes = account.writes().len();
        let plan = reconcile_with(&account, &before.path, &["plan", "--bake", path], &env);
        assert_eq!(plan.code, 3, "{bake}: {}", plan.stderr);
        // Three of one code fold into one line, naming the rest, after the refusal and its fix.
        assert!(plan.stdout.contains("Error [W401] "), "{}", plan.stdout);
        assert!(plan.stdout.contains("ecr_repository.foo-cache"), "{}", plan.stdout);
        assert!(plan.stdout.starts_with(&format!("Account {}", account.id)), "{}", plan.stdout);
        assert!(plan.stdout.contains("\n\nRefused: "), "{}", plan.stdout);
        assert!(plan.stdout.contains(" error findings (W401) stop this plan"), "{}", plan.stdout);
        let apply = reconcile_with(&account, &before.path, &["apply", "--auto-approve", "--bake", path], &env);
        assert_eq!(apply.code, 3, "{bake}: {}", apply.stderr);
        assert_eq!(account.writes().len(), writes);
    }

    // drift reports it too (every error finding is drift).
    let bake_json = dir.join("bake.json");
    let drift =
        reconcile(&account, &before.path, &["drift", "--bake", bake_json.to_str().unwrap(), "--format", "json"]);
    assert_eq!(drift.code, 2, "{}", drift.stderr);
    let json: Value = serde_json::from_str(&drift.stdout).unwrap();
    let w401: Vec<&Value> = json["findings"].as_array().unwrap().iter().filter(|f| f["code"] == "W401").collect();
    assert_eq!(w401.len(), 3, "foo's tags, and foo-cache's cache-from and cache-to: {w401:?}");
    // A bake file that never ends is refused, not read for ever.
    let endless = reconcile(&account, &before.path, &["validate", "--bake", "/dev/zero"]);
    assert_eq!(endless.code, 1);
    assert!(
        endless.stderr.contains("/dev/zero: failed to read the bake file: it is not a regular file, but a device"),
        "{}",
        endless.stderr
    );

    // The file's own default registry is the fleet's: nothing is ECR, and it says so.
    let fleet =
        reconcile(&account, &before.path, &["validate", "--bake", dir.join("docker-bake.hcl").to_str().unwrap()]);
    assert_eq!(fleet.code, 0, "{}", fleet.stderr);
    assert!(
        fleet.stderr.contains("warning: [W402]") && fleet.stderr.contains("nothing was checked"),
        "{}",
        fleet.stderr
    );

    // Declared (and `bake` set in desired.toml itself): the plan makes both repositories and
    // their policies, and names them in the runner's inline policy (the apply role's to put).
    let after = desired_file(&format!(
        "bake = \"bake.json\"\n{}",
        small_account(&["pytorch", "pytorch-cache", "foo", "foo-cache"])
    ));
    std::fs::write(after.path.with_file_name("bake.json"), BAKE_JSON.replace("REGISTRY", &registry)).unwrap();
    assert_eq!(reconcile(&account, &after.path, &["validate"]).code, 0);
    let plan = reconcile(&account, &after.path, &["plan", "--format", "json"]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    assert_eq!(
        json_changes(&plan.stdout),
        [
            "update iam_role_policy.codebuild",
            "create ecr_repository.foo",
            "create ecr_repository.foo-cache",
            "create ecr_lifecycle_policy.foo",
            "create ecr_lifecycle_policy.foo-cache",
        ]
    );
}

#[tokio::test]
async fn a_bake_file_that_needs_hcl_functions_is_refused_pointing_at_print() {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account(&["pytorch"]));
    let bake = desired.path.with_file_name("docker-bake.hcl");
    std::fs::write(
        &bake,
        "variable \"R\" { default = \"\" }\ntarget \"a\" { tags = [notequal(R, \"\") ? \"${R}/a\" : \"a\"] }\n",
    )
    .unwrap();
    let run = reconcile(&account, &desired.path, &["validate", "--bake", bake.to_str().unwrap()]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("target `a`: `tags` cannot be evaluated")
            && run.stderr.contains("pass the JSON that `docker buildx bake --print` writes instead"),
        "{}",
        run.stderr
    );
}

/// desired.toml with these repositories, of the deployment `rocm-bake`.
fn managed(repositories: &str) -> String {
    format!(
        "region = \"us-east-1\"\ndeployment = \"rocm-bake\"\n[ecr.defaults]\nlifecycle_policy = \"keep-3-untagged\"\ntags = {{ managed-by = \"reconcile\" }}\n{KEEP_3}\n[ecr.repositories]\n{repositories}\n{BUCKET_AND_ROLE}"
    )
}

#[tokio::test]
async fn prune_deletes_only_what_reconcile_made_and_only_when_told_twice() {
    let account = emulator().new_account().await;
    let desired = desired_file(&managed("keep = {}\nold = {}\nold-empty = {}\n"));
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve"]).code, 0);
    let client = ecr::Client::new(&account.sdk_config());
    push(&client, "old", Some("v1"), 1_000_000, "o1").await;
    push(&client, "old", None, 2_000_000, "o2").await;
    client.create_repository().repository_name("handmade").send().await.unwrap();
    // Tagged the way reconcile once tagged its own (a tag any file or person can write), and
    // another deployment's: neither is this one's to prune.
    let tag = |k: &str, v: &str| ecr::types::Tag::builder().key(k).value(v).build().unwrap();
    client
        .create_repository()
        .repository_name("says-managed")
        .tags(tag("managed-by", "reconcile"))
        .send()
        .await
        .unwrap();
    client
        .create_repository()
        .repository_name("team-x-old")
        .tags(tag("reconcile:deployment", "team-x"))
        .send()
        .await
        .unwrap();

    // `old` and `old-empty` leave desired.toml.
    let desired = desired_file(&managed("keep = {}\n"));
    // (The runner's inline policy names them no longer.)
    let plan = reconcile(&account, &desired.path, &["plan", "--format", "json"]);
    assert_eq!(json_changes(&plan.stdout), ["update iam_role_policy.codebuild"], "no delete without --prune");

    let plan = reconcile(&account, &desired.path, &["plan", "--prune", "--format", "json"]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    assert_eq!(
        json_changes(&plan.stdout),
        ["delete ecr_repository.old", "delete ecr_repository.old-empty", "update iam_role_policy.codebuild"]
    );
    let json: Value = serde_json::from_str(&plan.stdout).unwrap();
    assert_eq!(json["resource_changes"][0]["change"]["before"]["images"], 2);
    let d104: Vec<&Value> = json["findings"].as_array().unwrap().iter().filter(|f| f["code"] == "D104").collect();
    let left: Vec<&str> = d104.iter().map(|f| f["address"].as_str().unwrap()).collect();
    assert_eq!(left, ["ecr_repository.handmade", "ecr_repository.says-managed", "ecr_repository.team-x-old"]);
    assert!(
        d104[0]["message"]
            .as_str()
            .unwrap()
            .contains("it does not carry this deployment's mark `reconcile:deployment = rocm-bake`"),
        "{}",
        d104[0]["message"]
    );
    let text = reconcile(&account, &desired.path, &["plan", "--prune"]);
    let deleted = text.stdout.find("ecr_repository.old will be deleted").unwrap();
    assert!(deleted < text.stdout.find("ecr_lifecycle_policy").unwrap_or(usize::MAX), "deletes first");

    let writes = account.writes().len();
    let no_flag = reconcile(&account, &desired.path, &["apply", "--prune", "--auto-approve"]);
    assert_eq!(no_flag.code, 3, "{}", no_flag.stderr);
    let with_images = reconcile(&account, &desired.path, &["apply", "--prune", "--allow-delete", "--auto-approve"]);
    assert_eq!(with_images.code, 3, "{}", with_images.stderr);
    assert!(
        with_images
            .stderr
            .contains("ecr_repository.old: the repository still holds 2 image(s); pass --force-delete-images"),
        "{}",
        with_images.stderr
    );
    assert_eq!(account.writes().len(), writes, "refused before any write");

    // A saved plan carries its deletes to the apply that reviews approved, and the same flags
    // stand between it and them: --prune itself among them (the file does not ask for it).
    let saved = desired.path.with_file_name("plan.json");
    let plan = reconcile(&account, &desired.path, &["plan", "--prune", "--out", saved.to_str().unwrap()]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    let unasked = reconcile(&account, &desired.path, &["apply", saved.to_str().unwrap(), "--allow-delete"]);
    assert_eq!(unasked.code, 4, "{}{}", unasked.stdout, unasked.stderr);
    let refused = reconcile(&account, &desired.path, &["apply", saved.to_str().unwrap(), "--prune", "--allow-delete"]);
    assert_eq!(refused.code, 3, "{}{}", refused.stdout, refused.stderr);
    assert_eq!(account.writes().len(), writes, "refused before any write");
    let forced = reconcile(
        &account,
        &desired.path,
        &["apply", saved.to_str().unwrap(), "--prune", "--allow-delete", "--force-delete-images"],
    );
    assert_eq!(forced.code, 0, "{}{}", forced.stdout, forced.stderr);
    let names: Vec<String> = client
        .describe_repositories()
        .send()
        .await
        .unwrap()
        .repositories()
        .iter()
        .filter_map(|r| r.repository_name().map(str::to_owned))
        .collect();
    assert_eq!(names.iter().filter(|n| n.starts_with("old")).count(), 0, "{names:?}");
    for kept in ["handmade", "keep", "says-managed", "team-x-old"] {
        assert!(names.contains(&kept.to_owned()), "{kept}: {names:?}");
    }
    let again = reconcile(&account, &desired.path, &["plan", "--prune", "--detailed-exitcode"]);
    assert_eq!(again.code, 0, "{}{}", again.stdout, again.stderr);

    // Another deployment, in the same account: none of rocm-bake's is its to prune.
    let other = desired_file(&managed("keep = {}\n").replace("deployment = \"rocm-bake\"", "deployment = \"team-x\""));
    let plan = reconcile(&account, &other.path, &["plan", "--prune", "--format", "json"]);
    assert!(!json_changes(&plan.stdout).iter().any(|c| c == "delete ecr_repository.keep"), "{}", plan.stdout);
    assert!(json_changes(&plan.stdout).contains(&"delete ecr_repository.team-x-old".to_owned()), "{}", plan.stdout);
}

/// A repository of 3 tagged and 10 untagged images of known sizes, with a live policy that keeps 5
/// untagged images, declared with one that keeps 3; and a declared one with no image.
async fn registry_of_known_size(account: &TestAccount) -> crate::support::DesiredFile {
    let client = ecr::Client::new(&account.sdk_config());
    // Made by reconcile (its mark), its policy set by hand since.
    client.create_repository().repository_name("pytorch-cache").tags(crate::support::ecr_mark()).send().await.unwrap();
    client.create_repository().repository_name("undeclared").send().await.unwrap();
    for (idx, tag) in ["latest-gfx1201-nightly", "nightly-2026-11-10", "v1"].iter().enumerate() {
        push(&client, "pytorch-cache", Some(tag), 1_000_000_000, &format!("t{idx}")).await;
    }
    for idx in 0..10u64 {
        push(&client, "pytorch-cache", None, 100_000_000 * (idx + 1), &format!("u{idx}")).await;
    }
    push(&client, "undeclared", None, 7, "x").await;
    put_lifecycle_policy(&client, "pytorch-cache", r#"{"rules":[{"rulePriority":1,"selection":{"tagStatus":"untagged","countType":"imageCountMoreThan","countNumber":5},"action":{"type":"expire"}}]}"#).await;
    desired_file(&format!(
        "region = \"us-east-1\"\n[usage]\nprice_per_gb_month = 0.10\n[ecr.defaults]\nlifecycle_policy = \"keep-3-untagged\"\n{KEEP_3}\n[ecr.repositories]\npytorch-cache = {{}}\n"
    ))
}

#[tokio::test]
async fn usage_reports_exact_bytes_reclaimable_bytes_and_cost_in_every_format() {
    let account = emulator().new_account().await;
    let desired = registry_of_known_size(&account).await;
    // Held: 3e9 bytes tagged + 0.1e9 + 0.2e9 + ... + 1.0e9 untagged = 8.5e9 bytes (7.9 GiB). The
    // live policy frees the five oldest untagged (0.1e9 to 0.5e9: 1.5e9), the declared one the
    // seven oldest (2.8e9).
    let json = reconcile(&account, &desired.path, &["usage", "--format", "json"]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let value: Value = serde_json::from_str(&json.stdout).unwrap();
    let pytorch = &value["repositories"][0];
    assert_eq!(pytorch["name"], "pytorch-cache");
    assert_eq!(
        (pytorch["images"].as_u64(), pytorch["tagged"].as_u64(), pytorch["untagged"].as_u64()),
        (Some(13), Some(3), Some(10))
    );
    assert_eq!(pytorch["bytes"], 8_500_000_000u64);
    assert_eq!(pytorch["live_policy_reclaims_bytes"], 1_500_000_000u64);
    assert_eq!(pytorch["declared_policy_reclaims_bytes"], 2_800_000_000u64);
    // 8.5e9 bytes / 2^30 * $0.10 = $0.79
    assert_eq!(pytorch["monthly_cost_usd"], 0.79);
    assert_eq!(value["repositories"][1]["has_policy"], false);
    assert_eq!(value["repositories"][1]["declared_policy_reclaims_bytes"], Value::Null);
    let redacted = |text: &str| {
        let generated = value["generated_at"].to_string();
        crate::support::redact(text, &account).replace(&generated, "[NOW]")
    };
    insta::assert_snapshot!("usage_json", redacted(&json.stdout));
    let text = reconcile(&account, &desired.path, &["usage"]);
    assert!(text.stdout.lines().all(|line| line.chars().count() <= 100), "{}", text.stdout);
    insta::assert_snapshot!("usage_text", redacted(&text.stdout));
    let markdown = reconcile(&account, &desired.path, &["usage", "--format", "markdown"]);
    insta::assert_snapshot!("usage_markdown", redacted(&markdown.stdout));
    assert!(account.writes().iter().all(|w| !w.to_string().contains("Usage")), "usage only reads");

    // drift ends with the same figures, in every format; its exit code is still only drift's
    // (here D102: `undeclared` has no lifecycle policy).
    let drift = reconcile(&account, &desired.path, &["drift", "--format", "json"]);
    assert_eq!(drift.code, 2, "{}", drift.stderr);
    let value: Value = serde_json::from_str(&drift.stdout).unwrap();
    assert_eq!(
        value["usage"]["largest"][0],
        serde_json::json!({"name": "pytorch-cache", "bytes": 8_500_000_000u64, "monthly_cost_usd": 0.79})
    );
    assert_eq!(
        value["usage"]["without_policy"],
        serde_json::json!([{"name": "undeclared", "bytes": 7, "monthly_cost_usd": 0.0}])
    );
    assert_eq!(value["usage"]["total"]["bytes"], 8_500_000_007u64);
    let text = reconcile(&account, &desired.path, &["drift"]);
    assert!(
        text.stdout.contains(
            "Registry: 7.9 GiB in 2 repositories, about $0.79 a month. Largest: pytorch-cache 7.9 GiB ($0.79/month), \
             undeclared 7 B ($0.00/month).\nWithout a lifecycle policy: undeclared 7 B ($0.00/month).\n"
        ),
        "{}",
        text.stdout
    );
    let markdown = reconcile(&account, &desired.path, &["drift", "--format", "markdown"]);
    assert!(markdown.stdout.contains("**Registry**: 7.9 GiB in 2 repositories"), "{}", markdown.stdout);
}

#[tokio::test]
async fn usage_since_an_earlier_report_shows_growth_and_new_and_gone_repositories() {
    let account = emulator().new_account().await;
    let desired = registry_of_known_size(&account).await;
    let first = reconcile(&account, &desired.path, &["usage", "--format", "json"]);
    let mut earlier: Value = serde_json::from_str(&first.stdout).unwrap();
    // As if it had been saved two days ago by the nightly drift job.
    earlier["generated_at"] = (earlier["generated_at"].as_i64().unwrap() - 2 * 86_400).into();
    let dir = desired.path.parent().unwrap().join("reports");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("usage-1.json"), earlier.to_string()).unwrap();

    let client = ecr::Client::new(&account.sdk_config());
    for idx in 0..3u64 {
        push(&client, "pytorch-cache", None, 10_000_000, &format!("g{idx}")).await;
    }
    client.delete_repository().repository_name("undeclared").force(true).send().await.unwrap();
    client.create_repository().repository_name("brand-new").send().await.unwrap();

    let text = reconcile(&account, &desired.path, &["usage", "--since", dir.to_str().unwrap()]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(text.stdout.contains("Growth over 2.0 days: +28.6 MiB in total, +14.3 MiB a day."), "{}", text.stdout);
    let line =
        |name: &str| text.stdout.lines().rfind(|l| l.trim_start().starts_with(name)).unwrap_or_default().to_owned();
    assert!(
        line("pytorch-cache").contains("+3 images") && line("pytorch-cache").contains("untagged +3 despite its policy"),
        "{}",
        text.stdout
    );
    assert!(line("undeclared").ends_with("gone"), "{}", text.stdout);
    assert!(line("brand-new").ends_with("new"), "{}", text.stdout);

    let json = reconcile(
        &account,
        &desired.path,
        &["usage", "--format", "json", "--since", dir.join("usage-1.json").to_str().unwrap()],
    );
    let value: Value = serde_json::from_str(&json.stdout).unwrap();
    let growth = value["growth"].as_array().unwrap();
    assert_eq!(growth[0]["name"], "pytorch-cache");
    assert_eq!(growth[0]["bytes"], 30_000_000);

    // With two earlier reports, the Markdown charts the total.
    let mut older = earlier.clone();
    older["generated_at"] = (earlier["generated_at"].as_i64().unwrap() - 86_400).into();
    std::fs::write(dir.join("usage-0.json"), older.to_string()).unwrap();
    let markdown =
        reconcile(&account, &desired.path, &["usage", "--format", "markdown", "--since", dir.to_str().unwrap()]);
    assert!(markdown.stdout.contains("```mermaid\nxychart-beta\n"), "{}", markdown.stdout);

    // A file that is not a report stops before any AWS call.
    std::fs::write(dir.join("junk.json"), "{}").unwrap();
    let before = account.requests().len();
    let bad = reconcile(&account, &desired.path, &["usage", "--since", dir.to_str().unwrap()]);
    assert_eq!(bad.code, 1);
    assert!(bad.stderr.contains("junk.json: it is not a usage report"), "{}", bad.stderr);
    assert_eq!(account.requests().len(), before);
}
