//! A fault-injecting HTTP proxy between `reconcile` and the emulator, on loopback: what AWS does
//! on a bad day, on demand and reproducibly.
//!
//! Per request, the first rule that matches it (by service and operation, and then by its
//! seeded probability or its first-N count) decides: answer throttling in the service's own
//! protocol (`ThrottlingException` JSON for ECR and CodeBuild, `Throttling` query XML for IAM
//! and STS, `SlowDown` 503 XML for S3), answer a bare 500 or 503, reset the connection before
//! answering, or add a delay; everything else goes to the emulator as it came. The proxy runs on
//! its own thread and runtime, so a test may block on the binary while it serves.
//!
//! One proxy (`FaultProxy::rate_limited`) is a busy account instead: per service, a token bucket
//! of so many requests a second (and a burst of as many) answers what is over the rate with the
//! service's own throttling error, as AWS does for an account's control-plane calls.
//!
//! One proxy (`FaultProxy::halting_after`) stops the world instead: it forwards the first N
//! writes and answers them, then holds every later write for ever, so that a test can kill the
//! binary at exactly the state those N writes left.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};

/// What a rule does to a request it picks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fault {
    /// The service's own throttling error.
    Throttle,
    /// A bare HTTP status (500, 503) with an empty body.
    Status(u16),
    /// Close the connection without answering (the request never reaches the emulator).
    Reset,
    /// Forward it, after a delay.
    Delay(Duration),
    /// Forward it, and close the connection instead of answering: the service did it, and the
    /// caller never hears so.
    LostAnswer,
}

/// Which requests a rule applies to, and how often.
#[derive(Debug, Clone)]
pub struct Rule {
    /// `ecr`, `s3`, `iam`, `sts`, `codebuild`; `None` for every service.
    pub service: Option<String>,
    /// Such as `CreateRepository`, or `PUT` for S3; `None` for every operation.
    pub operation: Option<String>,
    pub fault: Fault,
    /// The share of matching requests it picks, drawn from the proxy's seeded generator.
    pub probability: f64,
    /// Only the first N matching requests, when set.
    pub first: Option<u64>,
    matched: Arc<AtomicU64>,
}

impl Rule {
    /// `fault` on every request.
    pub fn always(fault: Fault) -> Rule {
        Rule { service: None, operation: None, fault, probability: 1.0, first: None, matched: Arc::default() }
    }

    /// `fault` on a `probability` share of the requests.
    pub fn sometimes(fault: Fault, probability: f64) -> Rule {
        Rule { probability, ..Rule::always(fault) }
    }

    pub fn service(mut self, service: &str) -> Rule {
        self.service = Some(service.to_owned());
        self
    }

    pub fn operation(mut self, operation: &str) -> Rule {
        self.operation = Some(operation.to_owned());
        self
    }

    pub fn first(mut self, count: u64) -> Rule {
        self.first = Some(count);
        self
    }
}

/// A running proxy. It stops when dropped.
pub struct FaultProxy {
    pub endpoint: String,
    halt: Arc<Halt>,
    injected: Arc<AtomicU64>,
    in_flight: Arc<Mutex<InFlight>>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FaultProxy {
    /// Starts a proxy to `upstream` (the emulator's endpoint) on a free loopback port.
    pub fn start(upstream: &str, seed: u64, rules: Vec<Rule>) -> FaultProxy {
        FaultProxy::serving(upstream, seed, rules, Halt::default())
    }

    /// A proxy that forwards the first `writes` writes, and holds every later one for ever once
    /// those were answered ([`FaultProxy::halted`]): reads go through meanwhile.
    pub fn halting_after(upstream: &str, writes: u64) -> FaultProxy {
        FaultProxy::serving(upstream, 1, Vec::new(), Halt { after: Some(writes), ..Halt::default() })
    }

    /// Whether a write past the N a halting proxy lets through has arrived, the N answered.
    pub fn halted(&self) -> bool {
        self.halt.halted.load(Ordering::SeqCst)
    }

    /// How many writes it has answered.
    pub fn writes(&self) -> u64 {
        self.halt.answered.load(Ordering::SeqCst)
    }

    /// A proxy that answers at most `per_second` requests a second to each service (a token
    /// bucket of that rate, and a burst of as many), the rest with the service's own throttling
    /// error, and adds `delay` to every request, as a busy account far away does.
    pub fn rate_limited(upstream: &str, per_second: f64, delay: Duration) -> FaultProxy {
        let rules = if delay.is_zero() { Vec::new() } else { vec![Rule::always(Fault::Delay(delay))] };
        let halt = Halt { per_second: Some(per_second), ..Halt::default() };
        FaultProxy::serving(upstream, 1, rules, halt)
    }

    /// How many requests to `service` a rate-limited proxy answered with throttling.
    pub fn throttled(&self, service: &str) -> u64 {
        self.halt.buckets.lock().expect("never poisoned").get(service).map_or(0, |bucket| bucket.throttled)
    }

    /// How many requests to `service` it let through to the emulator.
    pub fn answered(&self, service: &str) -> u64 {
        self.halt.buckets.lock().expect("never poisoned").get(service).map_or(0, |bucket| bucket.passed)
    }

    fn serving(upstream: &str, seed: u64, rules: Vec<Rule>, halt: Halt) -> FaultProxy {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        listener.set_nonblocking(true).expect("non-blocking");
        let address: SocketAddr = listener.local_addr().expect("bound");
        let injected = Arc::new(AtomicU64::new(0));
        let in_flight = Arc::new(Mutex::new(InFlight::default()));
        let halt = Arc::new(halt);
        let state = Arc::new(State {
            upstream: upstream.trim_end_matches('/').to_owned(),
            rules,
            random: Mutex::new(seed.max(1)),
            injected: injected.clone(),
            in_flight: in_flight.clone(),
            halt: halt.clone(),
        });
        let (shutdown, stop) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime =
                tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a runtime");
            runtime.block_on(serve(listener, state, stop));
        });
        FaultProxy {
            endpoint: format!("http://{address}"),
            halt,
            injected,
            in_flight,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    /// The most requests to `service` it has held at once, from arrival to answer.
    pub fn peak_in_flight(&self, service: &str) -> u64 {
        self.in_flight.lock().expect("never poisoned").peak.get(service).copied().unwrap_or(0)
    }

    /// How many requests it has answered with a fault (delays included).
    pub fn injected(&self) -> u64 {
        self.injected.load(Ordering::Relaxed)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Requests held now and at most, by service.
#[derive(Default)]
struct InFlight {
    now: std::collections::BTreeMap<String, u64>,
    peak: std::collections::BTreeMap<String, u64>,
}

/// One request counted in flight until dropped, however its handling ends.
struct Held {
    in_flight: Arc<Mutex<InFlight>>,
    service: String,
}

impl Held {
    fn new(in_flight: &Arc<Mutex<InFlight>>, service: &str) -> Held {
        let mut counts = in_flight.lock().expect("never poisoned");
        let now = counts.now.entry(service.to_owned()).or_default();
        *now += 1;
        let now = *now;
        let peak = counts.peak.entry(service.to_owned()).or_default();
        *peak = (*peak).max(now);
        Held { in_flight: in_flight.clone(), service: service.to_owned() }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut counts = self.in_flight.lock().expect("never poisoned");
        if let Some(now) = counts.now.get_mut(&self.service) {
            *now = now.saturating_sub(1);
        }
    }
}

/// Where a halting proxy stands: how many writes it lets through, how many it has, how many of
/// those were answered, and whether it holds one now.
#[derive(Default)]
struct Halt {
    after: Option<u64>,
    admitted: AtomicU64,
    answered: AtomicU64,
    halted: std::sync::atomic::AtomicBool,
    /// A rate-limited proxy's rate, per service, and its buckets.
    per_second: Option<f64>,
    buckets: Mutex<std::collections::BTreeMap<String, Bucket>>,
}

/// One service's token bucket: `tokens` left at `at`, refilled at the proxy's rate up to a burst
/// of as many; and what it let through and turned away.
struct Bucket {
    tokens: f64,
    at: std::time::Instant,
    passed: u64,
    throttled: u64,
}

impl Halt {
    /// Whether a request to `service` is over the rate (and counts it either way).
    fn over_the_rate(&self, service: &str) -> bool {
        let Some(rate) = self.per_second else { return false };
        let now = std::time::Instant::now();
        let mut buckets = self.buckets.lock().expect("never poisoned");
        let bucket = buckets.entry(service.to_owned()).or_insert_with(|| Bucket {
            tokens: rate,
            at: now,
            passed: 0,
            throttled: 0,
        });
        bucket.tokens = (bucket.tokens + (now - bucket.at).as_secs_f64() * rate).min(rate);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            bucket.passed += 1;
            false
        } else {
            bucket.throttled += 1;
            true
        }
    }
}

/// Whether a request changes something: every S3 request but `GET` and `HEAD`, and every other
/// service's operation but those that only read.
fn is_write(service: &str, method: &hyper::Method, operation: &str) -> bool {
    if service == "s3" {
        return !matches!(*method, hyper::Method::GET | hyper::Method::HEAD);
    }
    !["Get", "List", "Describe", "BatchGet", "Head", "Lookup"].iter().any(|read| operation.starts_with(read))
}

struct State {
    upstream: String,
    rules: Vec<Rule>,
    halt: Arc<Halt>,
    in_flight: Arc<Mutex<InFlight>>,
    /// xorshift64: reproducible from the seed, and the order requests arrive in.
    random: Mutex<u64>,
    injected: Arc<AtomicU64>,
}

impl State {
    fn draw(&self) -> f64 {
        let mut x = self.random.lock().expect("never poisoned");
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        (*x >> 11) as f64 / (1u64 << 53) as f64
    }

    fn pick(&self, service: &str, operation: &str) -> Option<Fault> {
        for rule in &self.rules {
            let applies = rule.service.as_deref().is_none_or(|s| s == service)
                && rule.operation.as_deref().is_none_or(|o| o == operation);
            if !applies {
                continue;
            }
            let seen = rule.matched.fetch_add(1, Ordering::Relaxed);
            if rule.first.is_some_and(|first| seen >= first) {
                continue;
            }
            if rule.probability >= 1.0 || self.draw() < rule.probability {
                self.injected.fetch_add(1, Ordering::Relaxed);
                return Some(rule.fault);
            }
        }
        None
    }
}

async fn serve(listener: std::net::TcpListener, state: Arc<State>, mut stop: tokio::sync::oneshot::Receiver<()>) {
    let listener = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
    let client: hyper_util::client::legacy::Client<_, Full<Bytes>> =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).build_http();
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted { Ok(accepted) => accepted, Err(_) => continue },
            _ = &mut stop => return,
        };
        let state = state.clone();
        let client = client.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| handle(request, state.clone(), client.clone()));
            // An error here is a reset we made on purpose, or a client that went away.
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
}

type Upstream = hyper_util::client::legacy::Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

async fn handle(
    request: Request<Incoming>,
    state: Arc<State>,
    client: Upstream,
) -> Result<Response<Full<Bytes>>, Box<dyn std::error::Error + Send + Sync>> {
    let (parts, body) = request.into_parts();
    let body = body.collect().await?.to_bytes();
    let service = service_of(&parts.headers);
    let _held = Held::new(&state.in_flight, &service);
    let operation = operation_of(&parts, &body);
    let write = state.halt.after.is_some() && is_write(&service, &parts.method, &operation);
    if let (true, Some(after)) = (write, state.halt.after)
        && state.halt.admitted.fetch_add(1, Ordering::SeqCst) >= after
    {
        // Past the last write it lets through: once those are answered, held for ever.
        while state.halt.answered.load(Ordering::SeqCst) < after {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        state.halt.halted.store(true, Ordering::SeqCst);
        std::future::pending::<()>().await;
    }
    if state.halt.over_the_rate(&service) {
        return Ok(throttling(&service)?);
    }
    let mut lost = false;
    match state.pick(&service, &operation) {
        Some(Fault::Reset) => return Err("reset by the fault proxy".into()),
        Some(Fault::LostAnswer) => lost = true,
        Some(Fault::Status(status)) => {
            return Ok(Response::builder().status(status).body(Full::new(Bytes::new()))?);
        }
        Some(Fault::Throttle) => return Ok(throttling(&service)?),
        Some(Fault::Delay(delay)) => tokio::time::sleep(delay).await,
        None => {}
    }
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut forward = Request::builder().method(parts.method.clone()).uri(format!("{}{path}", state.upstream));
    for (name, value) in &parts.headers {
        forward = forward.header(name, value);
    }
    let answer = client.request(forward.body(Full::new(body))?).await?;
    let (parts, body) = answer.into_parts();
    let body = body.collect().await?.to_bytes();
    if lost {
        return Err("the answer lost by the fault proxy".into());
    }
    if write {
        state.halt.answered.fetch_add(1, Ordering::SeqCst);
    }
    Ok(Response::from_parts(parts, Full::new(body)))
}

/// The service a request is signed for: the credential scope of its SigV4 `Authorization`.
fn service_of(headers: &hyper::HeaderMap) -> String {
    let authorization = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default();
    authorization
        .split("Credential=")
        .nth(1)
        .and_then(|credential| credential.split('/').nth(3))
        .unwrap_or_default()
        .to_owned()
}

/// The operation: the JSON protocols' `X-Amz-Target`, the query protocol's `Action`, or S3's
/// method.
fn operation_of(parts: &hyper::http::request::Parts, body: &[u8]) -> String {
    if let Some(target) = parts.headers.get("x-amz-target").and_then(|v| v.to_str().ok()) {
        return target.rsplit('.').next().unwrap_or_default().to_owned();
    }
    let query = std::str::from_utf8(body).unwrap_or_default();
    match query.split('&').find_map(|pair| pair.strip_prefix("Action=")) {
        Some(action) => action.to_owned(),
        None => parts.method.to_string(),
    }
}

/// Throttling as each service says it.
fn throttling(service: &str) -> Result<Response<Full<Bytes>>, hyper::http::Error> {
    let (status, content_type, body, error_type) = match service {
        "iam" | "sts" => (
            400,
            "text/xml",
            "<ErrorResponse><Error><Type>Sender</Type><Code>Throttling</Code><Message>Rate exceeded</Message></Error>\
             <RequestId>fault-proxy</RequestId></ErrorResponse>"
                .to_owned(),
            None,
        ),
        "s3" => (
            503,
            "application/xml",
            "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message>\
             <RequestId>fault-proxy</RequestId></Error>"
                .to_owned(),
            None,
        ),
        _ => (
            400,
            "application/x-amz-json-1.1",
            r#"{"__type":"ThrottlingException","message":"Rate exceeded"}"#.to_owned(),
            Some("ThrottlingException"),
        ),
    };
    let mut response = Response::builder().status(status).header("content-type", content_type);
    if let Some(error_type) = error_type {
        response = response.header("x-amzn-errortype", error_type);
    }
    response.body(Full::new(Bytes::from(body)))
}
