//! `reconcile declare`: after a bake target is added, the repositories it names are written into
//! desired.toml as their siblings are, and nothing else of the file changes.

use reconcile_test_support::{TestAccount, emulator, workspace_root};
use serde_json::Value;

use crate::support::{json_changes, real_desired, reconcile_with};

const FOO_HCL: &str = r#"
target "foo" {
  dockerfile = "docker/foo.Dockerfile"
  tags = ["${ECR_REGISTRY}/foo:${TAG}"]
  cache-from = ["type=registry,ref=${ECR_REGISTRY}/foo-cache:buildcache"]
  cache-to = ["type=registry,ref=${ECR_REGISTRY}/foo-cache:buildcache,mode=max,ignore-error=true"]
}
"#;

/// A checkout of the nightly's repository: desired.toml (the project's, letting the bake file
/// take the registry from the environment) and the bake file with target `foo` added, as HCL or
/// as `docker buildx bake --print` JSON.
fn checkout(json: bool, registry: &str) -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf, String) {
    let dir = tempfile::tempdir().unwrap();
    let desired = dir.path().join("desired.toml");
    // The bake file is given with --bake here: the one desired.toml names is left out.
    let before = std::fs::read_to_string(real_desired()).unwrap().replacen("bake = \"rocm-bake.hcl\"\n", "", 1);
    std::fs::write(&desired, &before).unwrap();
    let bake_dir = workspace_root().join("tests/bake");
    let bake = if json {
        let mut print: Value =
            serde_json::from_str(&std::fs::read_to_string(bake_dir.join("rocm-bake.print.json")).unwrap()).unwrap();
        print["target"]["foo"] = serde_json::json!({
            "context": ".", "dockerfile": "docker/foo.Dockerfile", "tags": ["REGISTRY/foo:nightly"],
            "cache-from": [{ "type": "registry", "ref": "REGISTRY/foo-cache:buildcache" }],
            "cache-to": [{ "type": "registry", "ref": "REGISTRY/foo-cache:buildcache", "mode": "max", "ignore-error": "true" }],
        });
        let path = dir.path().join("bake.json");
        std::fs::write(&path, print.to_string().replace("REGISTRY", registry)).unwrap();
        path
    } else {
        let path = dir.path().join("rocm-bake.hcl");
        let hcl = std::fs::read_to_string(workspace_root().join("rocm-bake.hcl")).unwrap();
        std::fs::write(&path, format!("{hcl}{FOO_HCL}")).unwrap();
        path
    };
    (dir, desired, bake, before)
}

fn run(account: &TestAccount, desired: &std::path::Path, args: &[&str], registry: &str) -> crate::support::Run {
    reconcile_with(account, desired, args, &[("ECR_REGISTRY", registry)])
}

/// `declare` of the checkout's bake file with `extra` in place of target `foo`: the bake file's
/// path, the run, and desired.toml after it, the run having succeeded.
fn declare_with(
    account: &TestAccount,
    desired: &std::path::Path,
    bake: &std::path::Path,
    extra: &str,
    registry: &str,
) -> (String, crate::support::Run, String) {
    let text = std::fs::read_to_string(bake).unwrap().replace(FOO_HCL, extra);
    std::fs::write(bake, text).unwrap();
    let bake = bake.to_str().unwrap().to_owned();
    let declared = run(account, desired, &["declare", "--bake", &bake, "--account", &account.id], registry);
    assert_eq!(declared.code, 0, "{}", declared.stderr);
    let after = std::fs::read_to_string(desired).unwrap();
    (bake, declared, after)
}

#[tokio::test]
async fn declare_adds_exactly_the_new_targets_repositories_keeping_everything_else() {
    let account = emulator().new_account().await;
    let registry = format!("{}.dkr.ecr.us-east-1.amazonaws.com", account.id);
    for json in [false, true] {
        let (_dir, desired, bake, before) = checkout(json, &registry);
        let bake = bake.to_str().unwrap();
        assert_eq!(run(&account, &desired, &["validate", "--bake", bake], &registry).code, 3);

        let declared = run(&account, &desired, &["declare", "--bake", bake], &registry);
        assert_eq!(declared.code, 0, "{}", declared.stderr);
        let after = std::fs::read_to_string(&desired).unwrap();
        // Only two lines added, next to each other, at the end of the repositories; every
        // comment and blank line as it was.
        let diff = similar::TextDiff::from_lines(&before, &after);
        let changed: Vec<String> = diff
            .iter_all_changes()
            .filter(|c| c.tag() != similar::ChangeTag::Equal)
            .map(|c| format!("{}{}", c.tag(), c.value().trim_end()))
            .collect();
        assert_eq!(changed, ["+foo = {}", "+foo-cache = { tags = { kind = \"buildkit-cache\" } }"], "json: {json}");
        assert!(after.contains("sglang-cache = { tags = { kind = \"buildkit-cache\" } }\nfoo = {}\n"), "{after}");
        assert_eq!(before.matches('#').count(), after.matches('#').count());

        let valid = run(&account, &desired, &["validate", "--bake", bake], &registry);
        assert_eq!(valid.code, 0, "{}", valid.stderr);
        // Declared, but no group the nightly builds names `foo`: a warning naming the group,
        // until the target joins it.
        assert!(
            valid.stderr.contains("warning: [W403] ")
                && valid.stderr.contains("target `foo` pushes an image, but no group"),
            "json: {json}: {}",
            valid.stderr
        );
        let text = std::fs::read_to_string(bake).unwrap();
        let grouped = match json {
            true => text.replacen(r#""targets":["rocm-base""#, r#""targets":["foo","rocm-base""#, 1),
            false => text.replacen("targets = [\"rocm-base\"", "targets = [\"foo\", \"rocm-base\"", 1),
        };
        assert_ne!(grouped, text, "json: {json}");
        std::fs::write(bake, &grouped).unwrap();
        let valid = run(&account, &desired, &["validate", "--bake", bake], &registry);
        assert_eq!(valid.code, 0, "{}", valid.stderr);
        assert!(!valid.stderr.contains("W403"), "json: {json}: {}", valid.stderr);
        // Twice changes nothing, and --check agrees.
        assert_eq!(run(&account, &desired, &["declare", "--bake", bake], &registry).code, 0);
        assert_eq!(std::fs::read_to_string(&desired).unwrap(), after);
        let check = run(&account, &desired, &["declare", "--check", "--bake", bake], &registry);
        assert_eq!((check.code, check.stdout.as_str()), (0, ""), "{}", check.stderr);
    }
}

#[tokio::test]
async fn the_plan_after_declare_creates_the_two_repositories_and_their_policies_and_names_them_to_the_runner() {
    let account = emulator().new_account().await;
    let registry = format!("{}.dkr.ecr.us-east-1.amazonaws.com", account.id);
    let (_dir, desired, bake, _) = checkout(false, &registry);
    let bake = bake.to_str().unwrap();
    // The account as desired.toml made it, before the target was added.
    let applied = run(&account, &desired, &["apply", "--auto-approve"], &registry);
    assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);

    // The pull request's plan is refused, and says exactly what to add and how.
    let refused = run(&account, &desired, &["plan", "--bake", bake, "--format", "markdown"], &registry);
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    assert!(
        refused.stdout.contains(&format!(
            "> [!CAUTION]\n> Refused: 3 error findings (W401) stop this plan; nothing can be applied until they are \
             resolved.\n>\n> To resolve it: `reconcile declare --bake {bake}` declares them; or add under \
             `[ecr.repositories]` in desired.toml:\n> ```toml\n> foo = {{}}\n> foo-cache = {{ tags = {{ kind = \
             \"buildkit-cache\" }} }}\n> ```\n"
        )),
        "{}",
        refused.stdout
    );
    reconcile_test_support::Markup::assert_inert(&refused.stdout);

    assert_eq!(run(&account, &desired, &["declare", "--bake", bake], &registry).code, 0);
    let plan = run(&account, &desired, &["plan", "--bake", bake, "--format", "json"], &registry);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    // The runner's inline policy names the repositories a build pushes to and makes, and the
    // apply role puts it (within the boundary, which does not change): the apply role can apply
    // this plan by itself.
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
    // No CI identity changes: the apply role manages repositories by reconcile's tag, so it
    // applies this plan itself.
    let apply_role = account.assume("rocm-bake-reconcile-apply").await;
    let applied = run(&apply_role, &desired, &["apply", "--auto-approve", "--bake", bake], &registry);
    assert_eq!(applied.code, 0, "{}{}", applied.stdout, applied.stderr);
}

#[tokio::test]
async fn declare_puts_a_cache_beside_its_image_and_skips_other_registries_saying_why() {
    let account = emulator().new_account().await;
    let registry = format!("{}.dkr.ecr.us-east-1.amazonaws.com", account.id);
    let (_dir, desired, bake, before) = checkout(false, &registry);
    let extra = r#"
target "rocm-base-cached" {
  inherits = ["rocm-base"]
  cache-to = ["type=registry,ref=${ECR_REGISTRY}/rocm-base-cache:buildcache,mode=max"]
}
target "elsewhere" {
  tags = ["999999999999.dkr.ecr.us-east-1.amazonaws.com/theirs:nightly", "123456789012.dkr.ecr.eu-west-1.amazonaws.com/west:nightly", "docker.io/rocm/foo:nightly"]
}
"#;
    let (bake, declared, after) = declare_with(&account, &desired, &bake, extra, &registry);
    let bake = bake.as_str();
    assert!(
        after.contains("rocm-base = {}\nrocm-base-cache = { tags = { kind = \"buildkit-cache\" } }\npytorch-base = {}"),
        "{after}"
    );
    for skipped in [
        "skipped account 999999999999's ECR registry: another account (1 reference(s))",
        "skipped account 123456789012's ECR registry in eu-west-1: another region (1 reference(s))",
        "skipped docker.io: not an ECR registry (the fleet's, or another) (1 reference(s))",
    ] {
        assert!(declared.stderr.contains(skipped), "{skipped}\n{}", declared.stderr);
    }
    assert_eq!(
        similar::TextDiff::from_lines(&before, &after)
            .iter_all_changes()
            .filter(|c| c.tag() != similar::ChangeTag::Equal)
            .count(),
        1
    );

    // Two accounts' registries and no --account: refused, nothing written.
    let unsure = run(&account, &desired, &["declare", "--bake", bake], &registry);
    assert_eq!(unsure.code, 1, "{}", unsure.stderr);
    assert!(unsure.stderr.contains("say which is this account's with --account"), "{}", unsure.stderr);
    assert_eq!(std::fs::read_to_string(&desired).unwrap(), after);

    // A bad desired.toml: validate's error, and nothing written.
    std::fs::write(&desired, format!("{after}\nnot toml = = =\n")).unwrap();
    let bad = run(&account, &desired, &["declare", "--bake", bake, "--account", &account.id], &registry);
    assert_eq!(bad.code, 1, "{}", bad.stderr);
    assert!(bad.stderr.contains("desired.toml:"), "{}", bad.stderr);
}

/// The cache's place is the bake file's word, not its name's: a cache named otherwise goes
/// beside the image of the target that caches in it, and an image before its cache.
#[tokio::test]
async fn declare_puts_a_cache_of_any_name_beside_the_image_its_target_tags() {
    let account = emulator().new_account().await;
    let registry = format!("{}.dkr.ecr.us-east-1.amazonaws.com", account.id);
    let (_dir, desired, bake, _) = checkout(false, &registry);
    let extra = r#"
target "rocm-base-layered" {
  inherits = ["rocm-base"]
  cache-to = ["type=registry,ref=${ECR_REGISTRY}/layers-of-rocm-base:buildcache,mode=max"]
}
target "jax" {
  tags = ["${ECR_REGISTRY}/jax:nightly"]
  cache-from = ["type=registry,ref=${ECR_REGISTRY}/buildkit-jax:buildcache"]
}
"#;
    let (_, _, after) = declare_with(&account, &desired, &bake, extra, &registry);
    let style = "{ tags = { kind = \"buildkit-cache\" } }";
    assert!(
        after.contains(&format!("rocm-base = {{}}\nlayers-of-rocm-base = {style}\npytorch-base = {{}}")),
        "{after}"
    );
    assert!(after.contains(&format!("jax = {{}}\nbuildkit-jax = {style}\n")), "{after}");
    assert!(after.find("jax = {}").unwrap() < after.find("buildkit-jax").unwrap(), "{after}");
}

#[tokio::test]
async fn declare_check_prints_the_diff_of_a_stale_desired_file_and_writes_nothing() {
    let account = emulator().new_account().await;
    let registry = format!("{}.dkr.ecr.us-east-1.amazonaws.com", account.id);
    let (_dir, desired, bake, before) = checkout(false, &registry);
    let check = run(&account, &desired, &["declare", "--check", "--bake", bake.to_str().unwrap()], &registry);
    assert_eq!(check.code, 2, "a difference, not an error: {}", check.stderr);
    assert!(
        check.stdout.starts_with(&format!("--- {}\n+++ {}\n@@ ", desired.display(), desired.display())),
        "{}",
        check.stdout
    );
    assert!(
        check.stdout.contains("\n+foo = {}\n+foo-cache = { tags = { kind = \"buildkit-cache\" } }\n"),
        "{}",
        check.stdout
    );
    assert_eq!(std::fs::read_to_string(&desired).unwrap(), before);
}

/// declare saves desired.toml as an editor would: through a link, in the file's mode and line
/// endings, copying only a sibling's tags; it refuses a read-only file, and an edit plan would
/// refuse (over the file limit, a derived policy over IAM's limit), writing nothing.
#[tokio::test]
async fn declare_saves_as_an_editor_would_and_refuses_what_plan_would_refuse() {
    use std::os::unix::fs::PermissionsExt;
    let account = emulator().new_account().await;
    let registry = format!("{}.dkr.ecr.us-east-1.amazonaws.com", account.id);
    let (dir, desired, bake, before) = checkout(false, &registry);
    let bake = bake.to_str().unwrap().to_owned();
    // A link to the real file, which is CRLF, mode 0600, and whose cache sibling allows tagged
    // expiry (a decision about that repository alone).
    let real = dir.path().join("config/desired.toml");
    std::fs::create_dir_all(real.parent().unwrap()).unwrap();
    let sibling = "sglang-cache = { tags = { kind = \"buildkit-cache\" } }";
    assert!(before.contains(sibling));
    let crlf = before
        .replace(sibling, "sglang-cache = { allow_tagged_expiry = true, tags = { kind = \"buildkit-cache\" } }")
        .replace('\n', "\r\n");
    std::fs::write(&real, &crlf).unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::remove_file(&desired).unwrap();
    std::os::unix::fs::symlink("config/desired.toml", &desired).unwrap();
    assert_eq!(run(&account, &desired, &["validate"], &registry).code, 0, "the file as it is");

    let declared = run(&account, &desired, &["declare", "--bake", &bake], &registry);
    assert_eq!(declared.code, 0, "{}", declared.stderr);
    assert!(std::fs::symlink_metadata(&desired).unwrap().file_type().is_symlink(), "still a link");
    assert_eq!(std::fs::metadata(&real).unwrap().permissions().mode() & 0o777, 0o600);
    let after = std::fs::read_to_string(&real).unwrap();
    assert_eq!(after.matches('\n').count(), after.matches("\r\n").count(), "CRLF throughout");
    let changed: Vec<String> = similar::TextDiff::from_lines(&crlf, &after)
        .iter_all_changes()
        .filter(|c| c.tag() != similar::ChangeTag::Equal)
        .map(|c| format!("{}{}", c.tag(), c.value().trim_end()))
        .collect();
    assert_eq!(changed, ["+foo = {}", "+foo-cache = { tags = { kind = \"buildkit-cache\" } }"]);

    // Read-only: refused, as it was.
    std::fs::write(&real, &crlf).unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o444)).unwrap();
    let refused = run(&account, &desired, &["declare", "--bake", &bake], &registry);
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    assert!(refused.stderr.contains("it is read-only (mode 444); nothing was written"), "{}", refused.stderr);
    assert_eq!(std::fs::read_to_string(&real).unwrap(), crlf);
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o644)).unwrap();

    // Just under the file limit: declaring would pass it.
    let padding = format!("# {}\n", "x".repeat(1024 * 1024 - before.len() - 40));
    let full = format!("{before}{padding}");
    std::fs::remove_file(&desired).unwrap();
    std::fs::write(&desired, &full).unwrap();
    assert_eq!(run(&account, &desired, &["validate"], &registry).code, 0);
    let refused = run(&account, &desired, &["declare", "--check", "--bake", &bake], &registry);
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    assert!(refused.stderr.contains("would make it larger than 1 MiB; nothing was written"), "{}", refused.stderr);
    let refused = run(&account, &desired, &["declare", "--bake", &bake], &registry);
    assert_eq!(refused.code, 3, "{}", refused.stderr);
    assert_eq!(std::fs::read_to_string(&desired).unwrap(), full);
}

/// A hundred bake targets declared at once: neither the boundary nor the apply role's policy
/// names a repository, so neither grows; the runner's inline policy, which does, still fits IAM's
/// limit (past the room for their names it pushes by the mark and makes none).
#[tokio::test]
async fn a_hundred_bake_targets_declared_change_neither_the_boundary_nor_the_apply_policy() {
    let account = emulator().new_account().await;
    let registry = format!("{}.dkr.ecr.us-east-1.amazonaws.com", account.id);
    let dir = tempfile::tempdir().unwrap();
    // Long names, no separator: by name they once filled the runner's policy past IAM's limit.
    let long = |n: usize| format!("arepositorywithanamelongenoughtofillapolicyquickly{n:03}");
    let names: Vec<String> = (0..40).map(long).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let text = format!("bake_variables = [\"ECR_REGISTRY\"]\n{}", crate::support::small_account(&refs));
    let desired = dir.path().join("desired.toml");
    std::fs::write(&desired, &text).unwrap();
    assert_eq!(run(&account, &desired, &["validate"], &registry).code, 0);
    let policies = |desired: &std::path::Path| {
        ["runner", "boundary", "apply"]
            .map(|role| run(&account, desired, &["policy", role, "--account", &account.id], &registry).stdout)
    };
    let before = policies(&desired);
    let targets: String = (40..140)
        .map(|n| format!("target \"t{n}\" {{ tags = [\"${{ECR_REGISTRY}}/{}:nightly\"] }}\n", long(n)))
        .collect();
    let bake = dir.path().join("bake.hcl");
    std::fs::write(&bake, format!("variable \"ECR_REGISTRY\" {{ default = \"zot:5000\" }}\n{targets}")).unwrap();
    let declared = run(&account, &desired, &["declare", "--bake", bake.to_str().unwrap()], &registry);
    assert_eq!(declared.code, 0, "{}", declared.stderr);
    assert!(reconcile_cli::parse_desired(&desired, &std::fs::read_to_string(&desired).unwrap()).is_ok());
    // The boundary and the apply role's policy, to the character: only the runner's inline
    // policy, which the apply role puts, changes, so the apply role applies them by itself.
    let after = policies(&desired);
    assert_eq!(after[1..], before[1..]);
    let runner: serde_json::Value = serde_json::from_str(&after[0]).unwrap();
    assert!(reconcile_core::json::to_compact(&runner).chars().count() <= reconcile_iam::INLINE_POLICY_LIMIT);
    assert_ne!(after[0], before[0]);
}
