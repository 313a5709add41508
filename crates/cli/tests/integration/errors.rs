//! What a user reads when AWS cannot be used, and what needs no AWS at all: each failure is one
//! line that says what failed and what to do, with exit 1; `validate` never reaches for AWS.

use std::net::TcpListener;
use std::path::Path;

use reconcile_test_support::{TestAccount, emulator};

use crate::support::{desired_file, real_desired, reconcile, reconcile_in, small_account};

/// The account's environment without its credentials, and with a HOME that holds no AWS
/// configuration: a machine where nobody has set AWS up.
fn without_credentials(account: &TestAccount, home: &Path) -> Vec<(&'static str, String)> {
    let mut env: Vec<(&'static str, String)> = account
        .env()
        .into_iter()
        .filter(|(name, _)| {
            !name.starts_with("AWS_ACCESS") && !name.starts_with("AWS_SECRET") && *name != "AWS_SESSION_TOKEN"
        })
        .collect();
    env.push(("HOME", home.display().to_string()));
    env
}

/// A port on loopback that nothing listens on.
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[tokio::test]
async fn validate_needs_no_credentials_no_configuration_and_no_network() {
    // Something listening where the endpoint points, to prove nothing ever connects to it.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let metadata = TcpListener::bind("127.0.0.1:0").unwrap();
    metadata.set_nonblocking(true).unwrap();
    let env = [
        ("AWS_ENDPOINT_URL", format!("http://{}", listener.local_addr().unwrap())),
        // Where the SDK would look for instance credentials, were it to look.
        ("AWS_EC2_METADATA_SERVICE_ENDPOINT", format!("http://{}", metadata.local_addr().unwrap())),
    ];
    // No HOME, no AWS_* credentials or region: nothing to load, and nothing is loaded.
    let run = reconcile_in(&env, &real_desired(), &["validate"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("is valid: region us-east-1, 27 ECR repositories"), "{}", run.stdout);
    assert!(listener.accept().is_err(), "validate connected to the AWS endpoint");
    assert!(metadata.accept().is_err(), "validate asked the instance metadata service");

    // And with the endpoint at a closed port, the same.
    let closed = [("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{}", closed_port()))];
    let run = reconcile_in(&closed, &real_desired(), &["validate"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[tokio::test]
async fn missing_credentials_are_one_line_with_the_fix() {
    let account = emulator().new_account().await;
    let home = tempfile::tempdir().unwrap();
    let desired = desired_file(&small_account(&["pytorch"]));
    let run = reconcile_in(&without_credentials(&account, home.path()), &desired.path, &["plan"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    insta::assert_snapshot!("missing_credentials", run.stderr);
}

/// An instance metadata service that refuses every request, as one does where it is turned off
/// for the caller (or a network in between denies it): what a newcomer's laptop or a CI runner
/// without a role meets when the SDK's chain asks it last.
fn refusing_metadata_service() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            use std::io::{Read, Write};
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            let body = "resolve_deny: denied destination";
            let _ = write!(
                stream,
                "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://{address}")
}

#[tokio::test]
async fn without_credentials_the_sdks_own_warnings_are_shown_only_with_v() {
    let account = emulator().new_account().await;
    let home = tempfile::tempdir().unwrap();
    let desired = desired_file(&small_account(&["pytorch"]));
    let mut env = without_credentials(&account, home.path());
    // The chain's last provider asked, and refused: the SDK warns about it (with the whole
    // response) before reconcile says what failed.
    env.retain(|(name, _)| *name != "AWS_EC2_METADATA_DISABLED");
    env.push(("AWS_EC2_METADATA_SERVICE_ENDPOINT", refusing_metadata_service()));
    let run = reconcile_in(&env, &desired.path, &["plan"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert_eq!(run.stderr.lines().count(), 1, "one line of reconcile's own: {}", run.stderr);
    assert!(
        run.stderr
            .starts_with("error: failed to learn the account from STS GetCallerIdentity: no valid AWS credentials"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"), "{}", run.stderr);

    // Asked for, the SDK's detail is there too, before the same last line.
    let verbose = reconcile_in(&env, &desired.path, &["-v", "plan"]);
    assert_eq!(verbose.code, 1, "{}", verbose.stderr);
    assert!(verbose.stderr.contains("provider failed to provide credentials"), "{}", verbose.stderr);
    assert_eq!(verbose.stderr.lines().last(), run.stderr.lines().last());
}

#[tokio::test]
async fn an_endpoint_that_refuses_connections_is_one_line_naming_it() {
    let account = emulator().new_account().await;
    let port = closed_port();
    let mut env = account.env();
    env.retain(|(name, _)| *name != "AWS_ENDPOINT_URL");
    env.push(("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{port}")));
    let desired = desired_file(&small_account(&["pytorch"]));
    let run = reconcile_in(&env, &desired.path, &["plan"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    insta::assert_snapshot!("endpoint_refuses_connections", run.stderr.replace(&port.to_string(), "[PORT]"));
}

#[tokio::test]
async fn access_denied_on_one_read_names_the_caller_the_action_and_the_resource() {
    let account = emulator().new_account().await;
    account.deny("iam", "GetRole", "role%20rocm-bake-codebuild");
    let desired = desired_file(&small_account(&["pytorch"]));
    let run = reconcile_in(&account.env(), &desired.path, &["plan"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    insta::assert_snapshot!("access_denied", run.stderr.replace(&account.id, "[ACCOUNT]"));
}

#[tokio::test]
async fn an_endpoint_that_never_answers_fails_within_a_minute_naming_it() {
    let account = emulator().new_account().await;
    // Accepts every connection and never answers, for at most 90 seconds.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
        let mut held = Vec::new();
        while std::time::Instant::now() < deadline {
            if let Ok((stream, _)) = listener.accept() {
                held.push(stream);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    });
    let mut env = account.env();
    env.retain(|(name, _)| *name != "AWS_ENDPOINT_URL");
    env.push(("AWS_ENDPOINT_URL", format!("http://{address}")));
    let desired = desired_file(&small_account(&["pytorch"]));
    let start = std::time::Instant::now();
    let run = reconcile_in(&env, &desired.path, &["plan"]);
    let elapsed = start.elapsed();
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(elapsed < std::time::Duration::from_secs(60), "took {elapsed:?}");
    insta::assert_snapshot!("endpoint_never_answers", run.stderr.replace(&address.port().to_string(), "[PORT]"));
}

#[tokio::test]
async fn an_expired_session_is_one_line_with_the_fix() {
    let account = emulator().new_account().await;
    account.fail_with(
        "sts",
        "GetCallerIdentity",
        "ExpiredToken",
        "The%20security%20token%20included%20in%20the%20request%20is%20expired",
    );
    let desired = desired_file(&small_account(&["pytorch"]));
    let run = reconcile_in(&account.env(), &desired.path, &["plan"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    insta::assert_snapshot!("expired_token", run.stderr);
}

#[tokio::test]
async fn throttling_past_the_deadline_is_one_line() {
    let account = emulator().new_account().await;
    account.fail_with("iam", "GetRole", "Throttling", "Rate%20exceeded");
    let desired = desired_file(&small_account(&["pytorch"]));
    let run = reconcile(&account, &desired.path, &["plan", "--throttle-deadline", "2"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    // The seconds and the attempts vary with the pacing: redacted.
    let redacted = regex_lite_redact(&run.stderr);
    insta::assert_snapshot!("throttled", redacted);
    // Paced: sent again at its service's gate, neither once nor a hundred times.
    let tries = account.requests().iter().filter(|r| r.to_string() == "iam:GetRole").count();
    assert!((2..30).contains(&tries), "{tries}");
}

/// `text` with the seconds and attempts of a throttled request's line as `[S]` and `[N]`.
fn regex_lite_redact(text: &str) -> String {
    let mut out = String::new();
    let mut words = text.split(' ').peekable();
    let mut previous = "";
    while let Some(word) = words.next() {
        let redacted = match previous {
            "for" if word.parse::<f64>().is_ok() => "[S]",
            "over" if word.parse::<u32>().is_ok() => "[N]",
            _ => word,
        };
        out.push_str(redacted);
        if words.peek().is_some() {
            out.push(' ');
        }
        previous = word;
    }
    out
}
