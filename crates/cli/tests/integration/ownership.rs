//! Whose a resource is, from the outside: an account reconcile made before its mark upgraded
//! without a build losing its push, another deployment's resources in the same account left
//! alone (not shown, pruned, destroyed nor adopted), and a pull request that cannot make
//! anything reconcile's by what it writes.

use aws_sdk_ecr as ecr;
use aws_sdk_iam as iam;
use reconcile_test_support::faults::{Fault, FaultProxy, Rule};
use reconcile_test_support::{TestAccount, emulator};
use serde_json::Value;

use crate::support::{desired_file, json_changes, reconcile, reconcile_with, small_account_with_runner};

const MARK: &str = "reconcile:deployment";

/// The repositories of [`upgraded`].
const REPOSITORIES: [&str; 3] = ["pytorch", "pytorch-cache", "vllm"];

/// desired.toml of an account reconcile made before its mark, as its users kept it through the
/// upgrade: every resource tagged `managed-by = reconcile`, the deployment named.
fn upgraded() -> String {
    small_account_with_runner(&REPOSITORIES)
        .replace("region = \"us-east-1\"\n", "region = \"us-east-1\"\ndeployment = \"rocm-bake\"\n")
        .replace("tags = { project = \"rocm-bake\" }", "tags = { project = \"rocm-bake\", managed-by = \"reconcile\" }")
}

/// A policy document as reconcile derived it before the mark: the mark's conditions on its old
/// tag, `managed-by = reconcile`.
fn before_the_mark(document: &Value) -> Value {
    match document {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| {
                    let old = key.replace(MARK, "managed-by");
                    let value = if key.contains(MARK) { Value::from("reconcile") } else { before_the_mark(value) };
                    (old, value)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(before_the_mark).collect()),
        Value::String(text) if text == MARK => Value::from("managed-by"),
        other => other.clone(),
    }
}

/// The account as the version of reconcile before the mark left it: no mark anywhere, its old
/// tag on everything, and the runner's policy and boundary granting by the old tag.
async fn as_before_the_mark(account: &TestAccount) {
    let config = account.sdk_config();
    let ecr = ecr::Client::new(&config);
    for name in REPOSITORIES {
        let arn = format!("arn:aws:ecr:us-east-1:{}:repository/{name}", account.id);
        ecr.untag_resource().resource_arn(&arn).tag_keys(MARK).send().await.unwrap();
    }
    let s3 = aws_sdk_s3::Client::from_conf(aws_sdk_s3::config::Builder::from(&config).force_path_style(true).build());
    let bucket = format!("rocm-bake-sccache-{}", account.id);
    let tags = s3.get_bucket_tagging().bucket(&bucket).send().await.unwrap();
    let kept: Vec<aws_sdk_s3::types::Tag> = tags.tag_set().iter().filter(|t| t.key() != MARK).cloned().collect();
    let tagging = aws_sdk_s3::types::Tagging::builder().set_tag_set(Some(kept)).build().unwrap();
    s3.put_bucket_tagging().bucket(&bucket).tagging(tagging).send().await.unwrap();
    let iam = iam::Client::new(&config);
    let role = "rocm-bake-codebuild";
    iam.untag_role().role_name(role).tag_keys(MARK).send().await.unwrap();
    let boundary = format!("arn:aws:iam::{}:policy/rocm-bake-codebuild-boundary", account.id);
    iam.untag_policy().policy_arn(&boundary).tag_keys(MARK).send().await.unwrap();
    let policy = iam.get_policy().policy_arn(&boundary).send().await.unwrap().policy.unwrap();
    let version = iam
        .get_policy_version()
        .policy_arn(&boundary)
        .version_id(policy.default_version_id().unwrap())
        .send()
        .await
        .unwrap();
    let document = reconcile_iam::canonical_text(&version.policy_version.unwrap().document.unwrap(), "aws");
    let old = before_the_mark(&document).to_string();
    iam.create_policy_version().policy_arn(&boundary).policy_document(old).set_as_default(true).send().await.unwrap();
    let inline = iam.get_role_policy().role_name(role).policy_name("rocm-bake-nightly").send().await.unwrap();
    let old = before_the_mark(&reconcile_iam::canonical_text(&inline.policy_document, "aws")).to_string();
    iam.put_role_policy().role_name(role).policy_name("rocm-bake-nightly").policy_document(old).send().await.unwrap();
    let codebuild = aws_sdk_codebuild::Client::new(&config);
    let project = codebuild.batch_get_projects().names("rocm-bake").send().await.unwrap();
    let kept: Vec<aws_sdk_codebuild::types::Tag> =
        project.projects()[0].tags().iter().filter(|t| t.key() != Some(MARK)).cloned().collect();
    codebuild.update_project().name("rocm-bake").set_tags(Some(kept)).send().await.unwrap();
}

fn names() -> Vec<String> {
    REPOSITORIES.iter().map(|name| (*name).to_owned()).collect()
}

/// An account reconcile made before its mark (its `managed-by = reconcile` tag on everything,
/// the runner granted the repositories by it) and the first plan after the upgrade: it says what
/// it re-marks, refuses to drop the old tag in the same apply (W606), and its apply marks every
/// repository before any grant moves to the mark (each ECR write held on its way, so that timing
/// cannot hide the order), a build able to push to every repository throughout.
#[tokio::test]
async fn an_account_tagged_the_old_way_is_re_marked_and_no_build_loses_its_push() {
    let account = emulator().new_account().await;
    let desired = desired_file(&upgraded());
    let made = reconcile(&account, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(made.code, 0, "{}{}", made.stdout, made.stderr);
    as_before_the_mark(&account).await;
    let names = names();
    assert_eq!(crate::support::pushable(&account, &names).await.len(), 3, "the old grants reach every repository");

    let plan = reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]);
    assert_eq!(plan.code, 2, "{}{}", plan.stdout, plan.stderr);
    for address in [
        "ecr_repository.pytorch",
        "ecr_repository.pytorch-cache",
        "ecr_repository.vllm",
        "s3_bucket.sccache",
        "iam_role.codebuild",
        "codebuild_project.runner",
    ] {
        assert!(
            plan.stdout.contains(&format!(
                "# {address} will be re-marked: reconcile made it before its mark (managed-by = reconcile)\n"
            )),
            "{address}: {}",
            plan.stdout
        );
    }
    assert!(plan.stdout.contains("# iam_role_boundary.codebuild will be re-marked (reconcile made it before its mark"));
    assert!(!plan.stdout.contains("to import"), "nothing imported: it was reconcile's: {}", plan.stdout);
    assert!(!plan.stdout.contains("W601"), "{}", plan.stdout);

    // Dropping the old tag in the same apply would take the old grants away first: refused.
    let dropped = desired_file(&upgraded().replace(", managed-by = \"reconcile\"", ""));
    let refused = reconcile(&account, &dropped.path, &["plan"]);
    assert_eq!(refused.code, 3, "{}{}", refused.stdout, refused.stderr);
    assert!(refused.stdout.contains("Error [W606] "), "{}", refused.stdout);
    assert!(refused.stdout.contains("ecr_repository.pytorch"), "{}", refused.stdout);

    let slow_ecr = vec![Rule::always(Fault::Delay(std::time::Duration::from_millis(1_000))).service("ecr")];
    let proxy = FaultProxy::start(emulator().endpoint(), 1, slow_ecr);
    let since = account.writes().len();
    let apply = crate::faults::through(&proxy, &account, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    assert!(apply.stdout.contains("ecr_repository.pytorch: Re-marking complete"), "{}", apply.stdout);
    let writes: Vec<reconcile_test_support::RecordedRequest> =
        account.writes().into_iter().skip(since).filter(|w| w.is_reconciles()).collect();
    let marked = writes.iter().filter(|w| w.service == "ecr" && w.action == "TagResource").map(|w| w.at);
    let marked = marked.fold(0.0, f64::max);
    let grants: Vec<&reconcile_test_support::RecordedRequest> = writes
        .iter()
        .filter(|w| ["PutRolePolicy", "CreatePolicyVersion", "PutRolePermissionsBoundary"].contains(&w.action.as_str()))
        .collect();
    assert!(!grants.is_empty(), "{writes:#?}");
    assert!(grants.iter().all(|w| w.at > marked), "a grant moved before every repository was marked: {grants:#?}");
    drop(proxy);
    let again = reconcile(&account, &desired.path, &["plan", "--detailed-exitcode"]);
    assert_eq!(again.code, 0, "{}{}", again.stdout, again.stderr);
    assert_eq!(crate::support::pushable(&account, &names).await.len(), 3);
}

/// A desired.toml of deployment `deployment` with these repositories.
fn deployment(deployment: &str, repositories: &[&str]) -> String {
    crate::support::small_account(repositories)
        .replace("region = \"us-east-1\"\n", &format!("region = \"us-east-1\"\ndeployment = \"{deployment}\"\n"))
        .replace("rocm-bake-sccache-${account_id}", &format!("{deployment}-sccache-${{account_id}}"))
        .replace("rocm-bake-codebuild", &format!("{deployment}-codebuild"))
        .replace("rocm-bake-nightly", &format!("{deployment}-nightly"))
}

/// Two deployments of reconcile in one account: each one's resources carry its own mark, and
/// the other's are not its own: not shown in its public plan, not pruned, not destroyed, not
/// taken over by declaring them; the runner of one cannot push to the other's.
#[tokio::test]
async fn another_deployments_resources_are_not_shown_pruned_destroyed_or_taken_over() {
    let account = emulator().new_account().await;
    let ours = desired_file(&deployment("rocm-bake", &["pytorch"]));
    let theirs = desired_file(&deployment("team-x", &["\"team-x/private\"", "\"team-x/leaving\""]));
    for desired in [&ours, &theirs] {
        let made = reconcile(&account, &desired.path, &["apply", "--auto-approve"]);
        assert_eq!(made.code, 0, "{}{}", made.stdout, made.stderr);
    }
    let ecr = ecr::Client::new(&account.sdk_config());
    crate::safety::push(&ecr, "team-x/private", Some("secret-weights-v3"), 5_000_000, "tx").await;
    let held = || async {
        let listed = ecr.describe_repositories().send().await.unwrap();
        let mut names: Vec<String> =
            listed.repositories().iter().map(|r| r.repository_name().unwrap().to_owned()).collect();
        names.sort();
        names
    };
    let before = held().await;

    // rocm-bake's prune and destroy: team-x's are neither declared nor its own.
    let prune = reconcile(&account, &ours.path, &["plan", "--prune", "--format", "json"]);
    assert_eq!(prune.code, 0, "{}", prune.stderr);
    assert_eq!(json_changes(&prune.stdout), Vec::<String>::new(), "{}", prune.stdout);
    let findings: Value = serde_json::from_str(&prune.stdout).unwrap();
    let left: Vec<&str> = findings["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "D104")
        .map(|f| f["address"].as_str().unwrap())
        .collect();
    assert_eq!(left, ["ecr_repository.team-x/leaving", "ecr_repository.team-x/private"]);
    let pruned = reconcile(
        &account,
        &ours.path,
        &["apply", "--prune", "--allow-delete", "--force-delete-images", "--auto-approve"],
    );
    assert_eq!(pruned.code, 0, "{}{}", pruned.stdout, pruned.stderr);
    assert_eq!(held().await, before, "nothing of team-x's pruned");

    // rocm-bake's desired.toml naming team-x's repository: W601, whose mark it carries said;
    // destroy refuses whole; apply changes nothing.
    let grabbing = desired_file(&deployment("rocm-bake", &["pytorch", "\"team-x/private\""]));
    let plan = reconcile(&account, &grabbing.path, &["plan"]);
    assert_eq!(plan.code, 3, "{}{}", plan.stdout, plan.stderr);
    assert!(plan.stdout.contains("carries deployment `team-x`'s mark, not `rocm-bake`'s"), "{}", plan.stdout);
    let destroy =
        reconcile(&account, &grabbing.path, &["destroy", "--auto-approve", "--force-delete-images", "--empty-buckets"]);
    assert_eq!(destroy.code, 3, "{}{}", destroy.stdout, destroy.stderr);
    assert!(destroy.stdout.contains("[W603] ecr_repository.team-x/private"), "{}", destroy.stdout);
    assert!(destroy.stdout.contains("(it is deployment `team-x`'s)"), "{}", destroy.stdout);
    let writes = account.writes().len();
    assert_eq!(reconcile(&account, &grabbing.path, &["apply", "--auto-approve"]).code, 3);
    assert_eq!(account.writes().len(), writes, "refused before any write");
    // `import` leaves it out, and its last line agrees.
    let import = reconcile(&account, &grabbing.path, &["import"]);
    assert_eq!(import.code, 0, "{}", import.stderr);
    assert!(
        import.stderr.contains("left out ecr_repository.team-x/private: it carries deployment `team-x`'s mark"),
        "{}",
        import.stderr
    );
    assert!(
        import.stderr.contains("already, but for the 1 left out above, which carry another deployment's mark."),
        "{}",
        import.stderr
    );
    // Listed in `import` by hand: an error naming the deployment it would be taken from (W610),
    // nothing written; listed in `handed_over` too (team-x gave it up), an import.
    let grabbed = std::fs::read_to_string(&grabbing.path).unwrap();
    let by_hand = desired_file(&format!("import = [\"ecr_repository.team-x/private\"]\n{grabbed}"));
    let refused = reconcile(&account, &by_hand.path, &["plan"]);
    assert_eq!(refused.code, 3, "{}{}", refused.stdout, refused.stderr);
    assert!(
        refused.stdout.contains("Error [W610] ecr_repository.team-x/private: `team-x/private` carries deployment `team-x`'s mark: importing it takes it from that deployment"),
        "{}",
        refused.stdout
    );
    let writes = account.writes().len();
    assert_eq!(reconcile(&account, &by_hand.path, &["apply", "--auto-approve"]).code, 3);
    assert_eq!(account.writes().len(), writes, "refused before any write");
    let handed = desired_file(&format!(
        "import = [\"ecr_repository.team-x/private\"]\nhanded_over = [\"ecr_repository.team-x/private\"]\n{grabbed}"
    ));
    let plan = reconcile(&account, &handed.path, &["plan"]);
    assert_eq!(plan.code, 0, "{}{}", plan.stdout, plan.stderr);
    assert!(plan.stdout.contains("# ecr_repository.team-x/private will be imported"), "{}", plan.stdout);
    assert!(!plan.stdout.contains("W610"), "{}", plan.stdout);

    // A pull request's public plan, judged from rocm-bake's default branch: nothing of team-x's,
    // even declared, even tagged in desired.toml the way reconcile once told its own.
    let hostile = deployment("rocm-bake", &["pytorch", "\"team-x/private\""])
        .replace("\"team-x/private\" = {}", "\"team-x/private\" = { tags = { managed-by = \"reconcile\" } }");
    let hostile = desired_file(&hostile);
    for format in ["text", "json", "markdown", "terraform-json"] {
        let public = reconcile_with(
            &account,
            &hostile.path,
            &["plan", "--public", "--base", ours.path.to_str().unwrap(), "--format", format],
            &[],
        );
        assert_eq!(public.code, 3, "{format}: {}{}", public.stdout, public.stderr);
        for planted in ["secret-weights-v3", "team-x-codebuild", "team-x-sccache"] {
            assert!(!public.stdout.contains(planted), "{format} shows {planted}: {}", public.stdout);
        }
        if format != "terraform-json" {
            assert!(public.stdout.contains("W602"), "{format}: {}", public.stdout);
        }
    }
    // And a pull request naming team-x's deployment as its own: W605, nothing of it shown; nor
    // with --prune, whose deletes would be of team-x's repositories (the pull request's mark).
    let renamed = desired_file(&deployment("team-x", &["\"team-x/private\""]));
    let public =
        reconcile_with(&account, &renamed.path, &["plan", "--public", "--base", ours.path.to_str().unwrap()], &[]);
    assert_eq!(public.code, 3, "{}{}", public.stdout, public.stderr);
    assert!(public.stdout.contains("[W605]"), "{}", public.stdout);
    assert!(!public.stdout.contains("secret-weights-v3"), "{}", public.stdout);
    let pruning = desired_file(&deployment("team-x", &["pytorch"]));
    let base = ours.path.to_str().unwrap();
    let public = reconcile_with(&account, &pruning.path, &["plan", "--public", "--prune", "--base", base], &[]);
    assert_eq!(public.code, 3, "{}{}", public.stdout, public.stderr);
    assert!(public.stdout.contains("[W605]"), "{}", public.stdout);
    assert!(!public.stdout.contains("team-x/"), "no prune of team-x's shown: {}", public.stdout);
    // Privately, that plan would delete them: what the public one leaves out is really there.
    let private = reconcile(&account, &pruning.path, &["plan", "--prune"]);
    assert!(private.stdout.contains("- ecr_repository.team-x/private"), "{}", private.stdout);

    // A pull request that moves desired.toml to another region, where another team keeps a
    // repository under a name the default branch declares: not the default branch's.
    let west = aws_sdk_ecr::config::Builder::from(&account.sdk_config())
        .region(aws_sdk_ecr::config::Region::new("us-west-2"))
        .build();
    ecr::Client::from_conf(west)
        .create_repository()
        .repository_name("pytorch")
        .tags(ecr::types::Tag::builder().key("owner").value("west.team@example.com").build().unwrap())
        .send()
        .await
        .unwrap();
    // (Its bucket named anew: a bucket's name is the world's, and ours is in us-east-1.)
    let moved = desired_file(
        &deployment("rocm-bake", &["pytorch"])
            .replace("region = \"us-east-1\"", "region = \"us-west-2\"")
            .replace("rocm-bake-sccache-", "rocm-bake-west-sccache-"),
    );
    let public = reconcile_with(&account, &moved.path, &["plan", "--public", "--base", base, "--format", "json"], &[]);
    assert_eq!(public.code, 3, "{}{}", public.stdout, public.stderr);
    assert!(!public.stdout.contains("west.team@example.com"), "{}", public.stdout);
    assert!(public.stdout.contains("W602"), "{}", public.stdout);

    // The runners: each pushes to its own deployment's repositories only.
    let names = vec!["pytorch".to_owned(), "team-x/private".to_owned()];
    assert_eq!(crate::support::pushable(&account, &names).await, ["pytorch".to_owned()].into());
    assert_eq!(held().await, before);
}

/// What a pull request's desired.toml writes never makes a resource reconcile's: the mark's key
/// in any `tags` is refused before any AWS call, with file, line and key; another team's
/// repository declared with `managed-by = terraform` (or reconcile's old tag) is not taken over.
#[tokio::test]
async fn what_a_pull_request_writes_never_makes_a_resource_reconciles() {
    let account = emulator().new_account().await;
    let ours = desired_file(&deployment("rocm-bake", &["pytorch"]));
    assert_eq!(reconcile(&account, &ours.path, &["apply", "--auto-approve"]).code, 0);
    let ecr = ecr::Client::new(&account.sdk_config());
    let tag = |k: &str, v: &str| ecr::types::Tag::builder().key(k).value(v).build().unwrap();
    ecr.create_repository()
        .repository_name("skunkworks")
        .tags(tag("managed-by", "terraform"))
        .tags(tag("owner", "alice@example.com"))
        .send()
        .await
        .unwrap();
    let partner = r#"{"Version":"2012-10-17","Statement":[{"Sid":"Partner","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::210987654321:root"},"Action":"ecr:BatchGetImage"}]}"#;
    ecr.set_repository_policy().repository_name("skunkworks").policy_text(partner).send().await.unwrap();
    let before = account.requests().len();

    // The mark written in desired.toml: refused where it is written, nothing sent.
    for (line, tags) in [
        ("skunkworks = { tags = { \"reconcile:deployment\" = \"rocm-bake\" } }", "reconcile:deployment"),
        ("skunkworks = { tags = { \"RECONCILE:Deployment\" = \"rocm-bake\" } }", "RECONCILE:Deployment"),
    ] {
        let text =
            deployment("rocm-bake", &["pytorch"]).replace("pytorch = {}\n", &format!("pytorch = {{}}\n{line}\n"));
        let marked = desired_file(&text);
        let run = reconcile(&account, &marked.path, &["plan"]);
        assert_eq!(run.code, 1, "{}", run.stderr);
        let line_number = text.lines().position(|l| l.starts_with("skunkworks")).unwrap() + 1;
        assert!(
            run.stderr.contains(&format!(":{line_number}:"))
                && run.stderr.contains(&format!(
                    "`ecr.repositories.skunkworks.tags.{tags}`: tag keys starting with `reconcile:` are reconcile's own"
                )),
            "{}",
            run.stderr
        );
    }
    assert_eq!(account.requests().len(), before, "refused before any AWS call");

    // Declared with the tag its owners gave it, or reconcile's old one: W601, nothing taken.
    for tags in ["managed-by = \"terraform\", owner = \"alice@example.com\"", "managed-by = \"reconcile\""] {
        let text = deployment("rocm-bake", &["pytorch"])
            .replace("pytorch = {}\n", &format!("pytorch = {{}}\nskunkworks = {{ tags = {{ {tags} }} }}\n"));
        let grabbing = desired_file(&text);
        let plan = reconcile(&account, &grabbing.path, &["plan"]);
        assert_eq!(plan.code, 3, "{}{}", plan.stdout, plan.stderr);
        assert!(plan.stdout.contains("Error [W601] ecr_repository.skunkworks: "), "{}", plan.stdout);
        let writes = account.writes().len();
        let applied = reconcile(&account, &grabbing.path, &["apply", "--auto-approve", "--allow-delete"]);
        assert_eq!(applied.code, 3, "{}{}", applied.stdout, applied.stderr);
        let destroyed = reconcile(
            &account,
            &grabbing.path,
            &["destroy", "--auto-approve", "--force-delete-images", "--empty-buckets"],
        );
        assert_eq!(destroyed.code, 3, "{}{}", destroyed.stdout, destroyed.stderr);
        assert_eq!(account.writes().len(), writes, "nothing adopted, nothing deleted");
    }
    let policy = ecr.get_repository_policy().repository_name("skunkworks").send().await.unwrap();
    assert!(policy.policy_text().unwrap().contains("Partner"), "their partner's policy is theirs still");
}
