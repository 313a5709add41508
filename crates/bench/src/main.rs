//! Endpoints for benchmarking `reconcile` (scripts/bench-plan.sh runs them; nothing in the test
//! command does):
//!
//! - `proxy UPSTREAM DELAY_MS`: every request to the emulator delayed by a fixed time, the
//!   network of a region away, on loopback.
//! - `busy UPSTREAM PER_SECOND DELAY_MS`: the same, and a token bucket per service of
//!   PER_SECOND requests a second (a burst of as many), what is over it answered with the
//!   service's own throttling error: an account other clients keep busy.
//! - `stand-in REPOSITORIES DELAY_MS`: an ECR and STS endpoint that answers exactly the reads a
//!   plan of REPOSITORIES repositories makes, from canned answers, after a fixed delay. The
//!   emulator spends about 3 ms of Python on each request, so at a thousand repositories it
//!   measures itself; this measures the client and the protocol.
//!
//! Each prints `listening http://127.0.0.1:PORT` and serves until its stdin closes.

use std::collections::BTreeMap;
use std::io::Read;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use reconcile_test_support::faults::{Fault, FaultProxy, Rule};
use serde_json::{Value, json};

/// The stand-in's account, and the registry its repositories live in.
const ACCOUNT: &str = "123456789012";
const REGION: &str = "us-east-1";

/// The lifecycle policy every stand-in repository holds: the one `desired` declares, as ECR
/// returns it (compact, AWS's key order).
const POLICY: &str = r#"{"rules":[{"rulePriority":1,"description":"Keep the 3 newest untagged images","selection":{"tagStatus":"untagged","countType":"imageCountMoreThan","countNumber":3},"action":{"type":"expire"}}]}"#;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |index: usize, what: &str| -> u64 {
        args.get(index).and_then(|n| n.parse().ok()).unwrap_or_else(|| usage(&format!("{what} must be a number")))
    };
    match args.first().map(String::as_str) {
        Some("proxy") => {
            let upstream = args.get(1).unwrap_or_else(|| usage("proxy needs the emulator's endpoint"));
            let delay = Duration::from_millis(number(2, "DELAY_MS"));
            let proxy = FaultProxy::start(upstream, 1, vec![Rule::always(Fault::Delay(delay))]);
            println!("listening {}", proxy.endpoint);
            wait_for_stdin_to_close();
            drop(proxy);
        }
        Some("busy") => {
            let upstream = args.get(1).unwrap_or_else(|| usage("busy needs the emulator's endpoint"));
            let per_second = number(2, "PER_SECOND") as f64;
            let delay = Duration::from_millis(number(3, "DELAY_MS"));
            let proxy = FaultProxy::rate_limited(upstream, per_second, delay);
            println!("listening {}", proxy.endpoint);
            wait_for_stdin_to_close();
            drop(proxy);
        }
        Some("stand-in") => {
            let repositories = number(1, "REPOSITORIES") as usize;
            let delay = Duration::from_millis(number(2, "DELAY_MS"));
            let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build();
            let runtime = runtime.expect("a runtime");
            let counts = Arc::new(Mutex::new(BTreeMap::<String, u64>::new()));
            let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).expect("a loopback port");
            println!("listening http://{}", listener.local_addr().expect("bound"));
            let stand_in = Arc::new(StandIn { repositories, delay, counts: counts.clone() });
            runtime.spawn(serve(listener, stand_in));
            wait_for_stdin_to_close();
            let counts = counts.lock().expect("never poisoned");
            eprintln!("stand-in: {} requests: {counts:?}", counts.values().sum::<u64>());
        }
        _ => usage("proxy UPSTREAM DELAY_MS | busy UPSTREAM PER_SECOND DELAY_MS | stand-in REPOSITORIES DELAY_MS"),
    }
}

#[expect(clippy::exit, reason = "a usage error ends the benchmark endpoint before it serves")]
fn usage(problem: &str) -> ! {
    eprintln!("reconcile-bench: {problem}");
    std::process::exit(2)
}

fn wait_for_stdin_to_close() {
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
}

struct StandIn {
    repositories: usize,
    delay: Duration,
    counts: Arc<Mutex<BTreeMap<String, u64>>>,
}

async fn serve(listener: tokio::net::TcpListener, stand_in: Arc<StandIn>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let stand_in = stand_in.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| answer(request, stand_in.clone()));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
}

type Answer = Result<Response<Full<Bytes>>, Box<dyn std::error::Error + Send + Sync>>;

async fn answer(request: Request<Incoming>, stand_in: Arc<StandIn>) -> Answer {
    let (parts, body) = request.into_parts();
    let body = body.collect().await?.to_bytes();
    let target = parts.headers.get("x-amz-target").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let operation = match &target {
        Some(target) => target.rsplit('.').next().unwrap_or_default().to_owned(),
        None => String::from_utf8_lossy(&body)
            .split('&')
            .find_map(|pair| pair.strip_prefix("Action="))
            .unwrap_or("unknown")
            .to_owned(),
    };
    *stand_in.counts.lock().expect("never poisoned").entry(operation.clone()).or_default() += 1;
    tokio::time::sleep(stand_in.delay).await;
    let input: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let name = input["repositoryName"].as_str().unwrap_or_default();
    match operation.as_str() {
        "GetCallerIdentity" => xml(format!(
            "<GetCallerIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><GetCallerIdentityResult>\
             <Arn>arn:aws:iam::{ACCOUNT}:user/bench</Arn><UserId>AIDABENCH</UserId><Account>{ACCOUNT}</Account>\
             </GetCallerIdentityResult><ResponseMetadata><RequestId>bench</RequestId></ResponseMetadata>\
             </GetCallerIdentityResponse>"
        )),
        "DescribeRepositories" => {
            // ECR's page: at most maxResults (1 to 1,000, 100 when not given), then a nextToken.
            let page = input["maxResults"].as_u64().unwrap_or(100).clamp(1, 1000) as usize;
            let start: usize = input["nextToken"].as_str().and_then(|t| t.parse().ok()).unwrap_or(0);
            let end = (start + page).min(stand_in.repositories);
            let repositories: Vec<Value> = (start..end).map(|i| repository(&repository_name(i))).collect();
            let mut output = json!({ "repositories": repositories });
            if end < stand_in.repositories {
                output["nextToken"] = json!(end.to_string());
            }
            ecr(output)
        }
        "GetLifecyclePolicy" => ecr(json!({
            "registryId": ACCOUNT,
            "repositoryName": name,
            "lifecyclePolicyText": POLICY,
            "lastEvaluatedAt": 1_764_460_800,
        })),
        "GetRepositoryPolicy" => ecr_error(
            "RepositoryPolicyNotFoundException",
            &format!("Repository policy does not exist for the repository with name '{name}'"),
        ),
        // As the account now is: each repository carries this deployment's mark (the stand-in's
        // desired.toml names none, so the default one).
        "ListTagsForResource" => ecr(json!({ "tags": [
            { "Key": "reconcile:deployment", "Value": "default" },
            { "Key": "project", "Value": "rocm-bake" },
        ]})),
        other => ecr_error("UnknownOperationException", &format!("the stand-in does not answer {other}")),
    }
}

fn repository_name(index: usize) -> String {
    format!("bench-{index:05}")
}

fn repository(name: &str) -> Value {
    json!({
        "repositoryArn": format!("arn:aws:ecr:{REGION}:{ACCOUNT}:repository/{name}"),
        "registryId": ACCOUNT,
        "repositoryName": name,
        "repositoryUri": format!("{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/{name}"),
        "createdAt": 1_764_460_800,
        "imageTagMutability": "MUTABLE",
        "imageScanningConfiguration": { "scanOnPush": false },
        "encryptionConfiguration": { "encryptionType": "AES256" },
    })
}

fn ecr(output: Value) -> Answer {
    Ok(Response::builder()
        .header("content-type", "application/x-amz-json-1.1")
        .body(Full::new(Bytes::from(output.to_string())))?)
}

fn ecr_error(code: &str, message: &str) -> Answer {
    Ok(Response::builder()
        .status(400)
        .header("content-type", "application/x-amz-json-1.1")
        .header("x-amzn-errortype", code)
        .body(Full::new(Bytes::from(json!({ "__type": code, "message": message }).to_string())))?)
}

fn xml(body: String) -> Answer {
    Ok(Response::builder().header("content-type", "text/xml").body(Full::new(Bytes::from(body)))?)
}
