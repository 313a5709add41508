//! Who changed it: drift attributed to a principal and a time from CloudTrail's event history
//! (the emulator's stand-in keeps every write it serves as a management event).

use aws_sdk_iam as iam;
use reconcile_test_support::{TestAccount, emulator};
use serde_json::{Value, json};

use crate::support::{DesiredFile, desired_file, reconcile, reconcile_with, small_account_with_runner};

/// A role in the account that someone else's session is of.
async fn someone_else(account: &TestAccount) -> TestAccount {
    let trust = json!({ "Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": { "AWS": format!("arn:aws:iam::{}:root", account.id) }, "Action": "sts:AssumeRole",
    }]});
    iam::Client::new(&account.sdk_config())
        .create_role()
        .role_name("someone-else")
        .assume_role_policy_document(trust.to_string())
        .send()
        .await
        .unwrap();
    account.assume("someone-else").await
}

async fn applied() -> (TestAccount, DesiredFile) {
    let account = emulator().new_account().await;
    let desired = desired_file(&small_account_with_runner(&["pytorch"]));
    let apply = reconcile(&account, &desired.path, &["apply", "--auto-approve"]);
    assert_eq!(apply.code, 0, "{}{}", apply.stdout, apply.stderr);
    (account, desired)
}

/// Every attribution of a drift's JSON, by address: of its changes and of its findings.
fn attributions(drift: &Value) -> Vec<(String, Value)> {
    let mut found: Vec<(String, Value)> = drift["resource_changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["address"].as_str().unwrap().to_owned(), c["attribution"].clone()))
        .collect();
    found.extend(
        drift["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| !f["attribution"].is_null())
            .map(|f| (f["address"].as_str().unwrap().to_owned(), f["attribution"].clone())),
    );
    found
}

#[tokio::test]
async fn four_changes_by_someone_else_are_attributed_to_them_and_reconciles_own_apply_is_recognised() {
    let (account, desired) = applied().await;
    let other = someone_else(&account).await;
    let config = other.sdk_config();
    let codebuild = aws_sdk_codebuild::Client::new(&config);
    let environment = codebuild.batch_get_projects().names("rocm-bake").send().await.unwrap().projects()[0]
        .environment()
        .unwrap()
        .clone();
    let variable =
        aws_sdk_codebuild::types::EnvironmentVariable::builder().name("LD_PRELOAD").value("/tmp/x.so").build().unwrap();
    let environment = aws_sdk_codebuild::types::ProjectEnvironment::builder()
        .r#type(environment.r#type().clone())
        .image(environment.image())
        .compute_type(environment.compute_type().clone())
        .privileged_mode(environment.privileged_mode().unwrap_or(false))
        .set_environment_variables(Some([environment.environment_variables().to_vec(), vec![variable]].concat()))
        .build()
        .unwrap();
    codebuild.update_project().name("rocm-bake").environment(environment).send().await.unwrap();
    let ecr = aws_sdk_ecr::Client::new(&config);
    crate::support::put_lifecycle_policy(&ecr, "pytorch", crate::support::OLD_14_DAY_POLICY).await;
    let s3 = aws_sdk_s3::Client::from_conf(aws_sdk_s3::config::Builder::from(&config).force_path_style(true).build());
    let bucket = format!("rocm-bake-sccache-{}", account.id);
    let foreign = format!(
        r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Principal":{{"AWS":"arn:aws:iam::999999999999:root"}},"Action":"s3:GetObject","Resource":"arn:aws:s3:::{bucket}/*"}}]}}"#
    );
    s3.put_bucket_policy().bucket(&bucket).policy(foreign).send().await.unwrap();
    let narrow =
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:ListAllMyBuckets","Resource":"*"}]}"#;
    iam::Client::new(&config)
        .put_role_policy()
        .role_name("rocm-bake-codebuild")
        .policy_name("rocm-bake-nightly")
        .policy_document(narrow)
        .send()
        .await
        .unwrap();

    let drift = reconcile(&account, &desired.path, &["drift", "--format", "json"]);
    assert_eq!(drift.code, 2, "{}{}", drift.stdout, drift.stderr);
    let drift: Value = serde_json::from_str(&drift.stdout).unwrap();
    let mut seen: Vec<(String, String, String)> = attributions(&drift)
        .into_iter()
        .map(|(address, a)| {
            assert_eq!(a["status"], "event", "{address}: {a}");
            assert_eq!(a["principal"], format!("arn:aws:sts::{}:assumed-role/someone-else/reconcile-test", account.id));
            assert!(!a["event_id"].as_str().unwrap().is_empty());
            (address, a["event_name"].as_str().unwrap().to_owned(), a["role"].as_str().unwrap().to_owned())
        })
        .collect();
    seen.sort();
    seen.dedup();
    assert_eq!(
        seen,
        [
            ("codebuild_project.runner".to_owned(), "UpdateProject".to_owned(), "someone-else".to_owned()),
            ("ecr_lifecycle_policy.pytorch".to_owned(), "PutLifecyclePolicy".to_owned(), "someone-else".to_owned()),
            ("iam_role_policy.codebuild".to_owned(), "PutRolePolicy".to_owned(), "someone-else".to_owned()),
            ("s3_bucket.sccache".to_owned(), "PutBucketPolicy".to_owned(), "someone-else".to_owned()),
        ]
    );
    assert!(drift["attribution_note"].as_str().unwrap().contains("about 5 minutes (at most 15)"));
    assert_paced(&account);

    // Applied back, and then desired.toml changes: what differs now was last written by
    // reconcile's own apply, which is said as such, not as the cause.
    assert_eq!(reconcile(&account, &desired.path, &["apply", "--auto-approve", "--allow-delete"]).code, 0);
    let keep_five = std::fs::read_to_string(&desired.path).unwrap().replace("countNumber = 3", "countNumber = 5");
    std::fs::write(&desired.path, keep_five).unwrap();
    let drift = reconcile(&account, &desired.path, &["drift", "--format", "json"]);
    let drift: Value = serde_json::from_str(&drift.stdout).unwrap();
    let ours =
        attributions(&drift).into_iter().find(|(address, _)| address == "ecr_lifecycle_policy.pytorch").unwrap().1;
    assert_eq!(ours["status"], "applied_by_reconcile", "{ours}");
    assert_eq!(ours["event_name"], "PutLifecyclePolicy");
    assert!(ours["user_agent"].as_str().unwrap().contains("app/reconcile"), "{ours}");
    let text = reconcile(&account, &desired.path, &["drift"]);
    assert!(text.stdout.contains("# applied by reconcile, as role `reconcile-test`"), "{}", text.stdout);
}

#[tokio::test]
async fn a_throttled_lookup_still_completes_paced_and_verbose_counts_the_throttling() {
    let (account, desired) = applied().await;
    crate::support::put_lifecycle_policy(
        &aws_sdk_ecr::Client::new(&account.sdk_config()),
        "pytorch",
        crate::support::OLD_14_DAY_POLICY,
    )
    .await;
    account.throttle_cloudtrail("us-east-1", 3);
    let drift = reconcile_with(
        &account,
        &desired.path,
        &["drift", "--format", "json", "-v"],
        &[("RECONCILE_RETRY_BASE_DELAY_MS", "50")],
    );
    assert_eq!(drift.code, 2, "{}", drift.stderr);
    let json: Value = serde_json::from_str(&drift.stdout).unwrap();
    let found = attributions(&json).into_iter().find(|(a, _)| a == "ecr_lifecycle_policy.pytorch").unwrap().1;
    assert_eq!(found["status"], "event", "{found}");
    assert!(drift.stderr.contains("3 answered with throttling"), "{}", drift.stderr);
    // The throttled lookup was sent again (by the SDK's adaptive retry) until it was answered.
    let lookups = account.requests().iter().filter(|r| r.action == "LookupEvents").count();
    assert!(lookups >= 4, "{lookups}");
}

/// Never more than two lookups a second to one region: CloudTrail's rate. (A retry the SDK makes
/// after a transient failure is its own, paced by its backoff: only first attempts count here.)
fn assert_paced(account: &TestAccount) {
    let mut times: Vec<f64> =
        account.requests().iter().filter(|r| r.action == "LookupEvents" && r.attempt == 1).map(|r| r.at).collect();
    times.sort_by(f64::total_cmp);
    assert!(times.len() >= 3, "{times:?}");
    for window in times.windows(3) {
        assert!(window[2] - window[0] >= 0.95, "three lookups within a second: {times:?}");
    }
}

/// Tags set by ARN (`TagResource`) are not in CloudTrail's resource-name index: found by event
/// name, page after page, past other repositories' events.
#[tokio::test]
async fn among_hundreds_of_events_the_newest_for_the_resource_is_found_page_after_page() {
    let (account, desired) = applied().await;
    let ecr = aws_sdk_ecr::Client::new(&account.sdk_config());
    let arn = |repository: &str| format!("arn:aws:ecr:us-east-1:{}:repository/{repository}", account.id);
    let tag = aws_sdk_ecr::types::Tag::builder().key("owner").value("someone").build().unwrap();
    ecr.tag_resource().resource_arn(arn("pytorch")).tags(tag).send().await.unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    let event = |repository: &str, at: i64, who: &str| {
        json!({
            "eventName": "TagResource", "eventSource": "ecr.amazonaws.com",
            "eventTime": reconcile_core::time::date_time(at),
            "requestParameters": { "resourceArn": arn(repository) },
            "arn": format!("arn:aws:iam::{}:user/{who}", account.id),
        })
    };
    // 200 events for pytorch within the window, the newest by `newest` (later than the test's own
    // change), and in front of them 200 newer ones for other repositories: four pages of those
    // before pytorch's first.
    let mut events = Vec::new();
    for n in 0..200 {
        let (at, who) = if n == 0 { (now + 20, "newest") } else { (now - 3600 * n, "older") };
        events.push(event("pytorch", at, who));
        events.push(event(&format!("other-{n}"), now + 30, "someone"));
    }
    account.cloudtrail_events("us-east-1", &events);
    let drift = reconcile(&account, &desired.path, &["drift", "--format", "json"]);
    assert_eq!(drift.code, 2, "{}", drift.stderr);
    let json: Value = serde_json::from_str(&drift.stdout).unwrap();
    let found = attributions(&json).into_iter().find(|(a, _)| a == "ecr_repository.pytorch").unwrap().1;
    assert_eq!(found["principal"], format!("arn:aws:iam::{}:user/newest", account.id), "{found}");
    let pages = account.requests().iter().filter(|r| r.action == "LookupEvents").count();
    assert!(pages >= 5, "four pages of others, then pytorch's: {pages}");
}

/// What CloudTrail holds is written by anyone who can call AWS in the account: a call that
/// failed, a user agent that claims to be reconcile, another region's or account's repository
/// of the same name, and thousands of failed calls in front of the real change, none of them
/// is named as the cause, and the real one is found at once.
#[tokio::test]
async fn attribution_cannot_be_framed_by_failed_calls_other_places_or_a_user_agent() {
    let (account, desired) = applied().await;
    let other = someone_else(&account).await;
    crate::support::put_lifecycle_policy(
        &aws_sdk_ecr::Client::new(&other.sdk_config()),
        "pytorch",
        crate::support::OLD_14_DAY_POLICY,
    )
    .await;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    let framing = |n: i64, more: Value| {
        let mut event = json!({
            "eventName": "PutLifecyclePolicy", "eventSource": "ecr.amazonaws.com",
            // Newer than the real change, and within the window the drift asks for.
            "eventTime": reconcile_core::time::date_time(now + 1 + n % 50),
            "requestParameters": { "repositoryName": "pytorch" },
            "arn": format!("arn:aws:iam::{}:user/mallory", account.id),
        });
        event.as_object_mut().unwrap().extend(more.as_object().unwrap().clone());
        event
    };
    let mut events: Vec<Value> = (0..6000)
        .map(|n| framing(n, json!({ "errorCode": "AccessDenied", "errorMessage": "not authorized" })))
        .collect();
    events.push(framing(51, json!({ "awsRegion": "eu-west-1" })));
    events.push(framing(52, json!({ "recipientAccountId": "210987654321" })));
    events.push(framing(
        53,
        json!({ "requestParameters": { "repositoryName": "pytorch", "registryId": "210987654321" } }),
    ));
    account.cloudtrail_events("us-east-1", &events);
    let started = std::time::Instant::now();
    let drift = reconcile(&account, &desired.path, &["drift", "--format", "json"]);
    assert_eq!(drift.code, 2, "{}", drift.stderr);
    assert!(started.elapsed() < std::time::Duration::from_secs(30), "{:?}", started.elapsed());
    let json: Value = serde_json::from_str(&drift.stdout).unwrap();
    let found = attributions(&json).into_iter().find(|(a, _)| a == "ecr_lifecycle_policy.pytorch").unwrap().1;
    assert_eq!(found["status"], "event", "{found}");
    assert_eq!(found["principal"], format!("arn:aws:sts::{}:assumed-role/someone-else/reconcile-test", account.id));

    // A user agent is anyone's to write: mallory's newer, successful change claiming to be
    // reconcile's is mallory's.
    account.cloudtrail_event("us-east-1", &framing(55, json!({ "userAgent": "aws-sdk-rust/1.0 app/reconcile" })));
    let drift = reconcile(&account, &desired.path, &["drift", "--format", "json"]);
    let json: Value = serde_json::from_str(&drift.stdout).unwrap();
    let found = attributions(&json).into_iter().find(|(a, _)| a == "ecr_lifecycle_policy.pytorch").unwrap().1;
    assert_eq!(found["status"], "event", "not applied_by_reconcile: {found}");
    assert_eq!(found["principal"], format!("arn:aws:iam::{}:user/mallory", account.id));
}

#[tokio::test]
async fn no_event_in_the_window_is_said_and_without_permission_one_warning_and_drift_as_before() {
    let (account, desired) = applied().await;
    // desired.toml changes the project's description: nothing ever updated the project, so no
    // event can explain the difference.
    let text = std::fs::read_to_string(&desired.path).unwrap().replace(
        "description = \"Ephemeral GitHub Actions runner for the ROCm nightly image builds\"",
        "description = \"The runner\"",
    );
    std::fs::write(&desired.path, text).unwrap();
    let drift = reconcile(&account, &desired.path, &["drift", "--since-days", "3"]);
    assert_eq!(drift.code, 2, "{}", drift.stderr);
    assert!(
        drift.stdout.contains("# no CloudTrail event that could have changed it in the last 3 days"),
        "{}",
        drift.stdout
    );
    assert!(drift.stdout.contains("Attributed from the last 3 days"), "{}", drift.stdout);
    assert_eq!(reconcile(&account, &desired.path, &["drift", "--since-days", "91"]).code, 1, "a usage error");

    account.deny("cloudtrail", "LookupEvents", "*");
    let denied = reconcile(&account, &desired.path, &["drift", "--format", "json"]);
    assert_eq!(denied.code, 2, "{}", denied.stderr);
    let json: Value = serde_json::from_str(&denied.stdout).unwrap();
    let warnings: Vec<&Value> = json["findings"].as_array().unwrap().iter().filter(|f| f["code"] == "E106").collect();
    assert_eq!(warnings.len(), 1, "{json}");
    assert!(attributions(&json).iter().all(|(_, a)| a.is_null()), "{json}");
    assert_eq!(json["resource_changes"][0]["address"], "codebuild_project.runner", "the drift as before");
}

/// CloudTrail's fields are written by whoever made the call (the user agent is any string a
/// client sends): in the drift comment they render as text, in a table that stays a table.
#[tokio::test]
async fn a_hostile_user_agent_renders_as_text_in_the_drift_comment() {
    let (account, desired) = applied().await;
    let ecr = aws_sdk_ecr::Client::new(&account.sdk_config());
    crate::support::put_lifecycle_policy(&ecr, "pytorch", crate::support::OLD_14_DAY_POLICY).await;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    account.cloudtrail_event(
        "us-east-1",
        &json!({
            "eventName": "PutLifecyclePolicy", "eventSource": "ecr.amazonaws.com",
            "eventTime": reconcile_core::time::date_time(now + 20),
            "requestParameters": { "repositoryName": "pytorch" },
            "arn": format!("arn:aws:iam::{}:user/x`</details>|@org/team", account.id),
            "userAgent": "ua` | </details><img src=https://evil.example/p.png> [l](https://evil.example) @org/team",
            "sourceIPAddress": "203.0.113.7 | <b>",
        }),
    );
    // Privately (a maintainer's plan), every field; in the public drift comment, the caller's
    // kind and the time only (no user name, address or agent).
    let plan = reconcile(&account, &desired.path, &["plan", "--attribute", "--format", "markdown"]);
    let drift = reconcile(&account, &desired.path, &["drift", "--format", "markdown"]);
    assert_eq!(drift.code, 2, "{}", drift.stderr);
    for (said, private) in [(&plan.stdout, true), (&drift.stdout, false)] {
        reconcile_test_support::Markup::assert_inert(said);
        let row = said.lines().find(|l| l.starts_with("| `ecr_lifecycle_policy.pytorch` |")).unwrap();
        // Two cells: the resource and the attribution, whatever the values held.
        let unescaped = row.replace("\\\\|", "").replace("\\|", "");
        assert_eq!(unescaped.matches('|').count(), 3, "{row}");
        assert_eq!(row.contains("203.0.113.7") && row.contains("evil.example"), private, "{row}");
    }
}
