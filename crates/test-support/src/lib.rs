//! Test harness: the local AWS emulator (moto in server mode, started by `tests/emulator/launcher.py`),
//! one fresh AWS account per test, and the record of the requests each account made.
//!
//! One emulator serves every test in a process; tests never share an account, so they can run
//! in parallel and need no reset. The emulator's Python environment is made by
//! `scripts/emulator-venv.sh` (the README's test command runs it); a test that cannot find it
//! fails, saying so, rather than being skipped.

pub mod faults;
pub mod files;
pub mod gate;
pub mod github;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_sdk_sts::config::Credentials;

/// Where apply keeps its lock in the managed bucket (`reconcile_s3::lock::LOCK_KEY`).
pub const APPLY_LOCK_KEY: &str = "reconcile/apply.lock";

/// The region tests use unless they say otherwise.
pub const REGION: &str = "us-east-1";

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("the workspace root exists")
}

/// The emulator's Python: `RECONCILE_EMULATOR_PYTHON`, or the project's own virtualenv.
pub fn emulator_python() -> PathBuf {
    match std::env::var_os("RECONCILE_EMULATOR_PYTHON") {
        Some(python) => PathBuf::from(python),
        None => workspace_root().join("target/emulator-venv/bin/python"),
    }
}

/// A Python server of the harness, on a free loopback port: it prints `listening URL` first,
/// and exits when its stdin closes, that is, when this process does.
pub(crate) struct Server {
    pub(crate) endpoint: String,
    /// `127.0.0.1:PORT`.
    pub(crate) address: String,
    pub(crate) child: Child,
    pub(crate) stdin: ChildStdin,
}

impl Server {
    pub(crate) fn start(what: &str, script: &Path, args: &[&str]) -> Server {
        let python = emulator_python();
        let mut child = Command::new(&python)
            .arg(script)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| panic!("failed to start {what} with {}: {error}", python.display()));
        let mut first_line = String::new();
        BufReader::new(child.stdout.take().expect("piped"))
            .read_line(&mut first_line)
            .unwrap_or_else(|error| panic!("{what} prints its address: {error}"));
        let endpoint = first_line
            .trim()
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("{what} did not start: {first_line:?}"))
            .to_owned();
        let address = endpoint.trim_start_matches("http://").to_owned();
        let stdin = child.stdin.take().expect("piped");
        Server { endpoint, address, child, stdin }
    }
}

/// A running emulator. It exits when this process does, because its stdin closes.
pub struct Emulator {
    endpoint: String,
    address: String,
    _child: Mutex<Child>,
    _stdin: Mutex<ChildStdin>,
}

static EMULATOR: OnceLock<Emulator> = OnceLock::new();
static NEXT_ACCOUNT: AtomicU64 = AtomicU64::new(0);

/// The emulator of this test process, started on first use.
pub fn emulator() -> &'static Emulator {
    EMULATOR.get_or_init(Emulator::start)
}

impl Emulator {
    fn start() -> Emulator {
        let python = emulator_python();
        assert!(
            python.exists(),
            "the AWS emulator is not installed at {}: run `scripts/emulator-venv.sh` \
             (the README's test command does) or set RECONCILE_EMULATOR_PYTHON",
            python.display()
        );
        let launcher = workspace_root().join("tests/emulator/launcher.py");
        let args = ["--host", "127.0.0.1", "--port", "0", "--exit-with-parent"];
        let Server { endpoint, address, child, stdin } = Server::start("the emulator", &launcher, &args);
        Emulator { endpoint, address, _child: Mutex::new(child), _stdin: Mutex::new(stdin) }
    }

    /// `http://127.0.0.1:PORT`, for `AWS_ENDPOINT_URL`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// A fresh account, ready as the nightly's is: empty, but for the GitHub source credential
    /// CodeBuild needs in the tests' region (as on a real account, imported by hand once).
    pub async fn new_account(&self) -> TestAccount {
        let account = self.empty_account().await;
        account.import_github_credential(REGION);
        account
    }

    /// A fresh, empty account: credentials from `sts:AssumeRole` into a new account id, which
    /// the emulator keeps apart from every other account. Not even CodeBuild's GitHub credential.
    pub async fn empty_account(&self) -> TestAccount {
        let n = NEXT_ACCOUNT.fetch_add(1, Ordering::Relaxed);
        let id = format!("{:012}", 100_000_000_000 + u64::from(std::process::id()) * 1000 + n);
        let bootstrap = self.sdk_config(Credentials::new("testing", "testing", None, None, "test"), REGION);
        assumed(&bootstrap, &id, "reconcile-test", &self.endpoint).await
    }

    fn sdk_config(&self, credentials: Credentials, region: &str) -> SdkConfig {
        SdkConfig::builder()
            .behavior_version(BehaviorVersion::latest())
            .endpoint_url(&self.endpoint)
            .region(Region::new(region.to_owned()))
            .credentials_provider(aws_sdk_sts::config::SharedCredentialsProvider::new(credentials))
            .build()
    }

    /// Sends one request to the launcher's own endpoints and returns the response body.
    fn control(&self, method: &str, path: &str) -> String {
        self.control_with(method, path, "")
    }

    /// The same, with a JSON body.
    fn control_with(&self, method: &str, path: &str, body: &str) -> String {
        let mut stream = TcpStream::connect(&self.address).expect("the emulator is listening");
        write!(
            stream,
            "{method} {path} HTTP/1.0\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.address,
            body.len()
        )
        .expect("write");
        let mut response = String::new();
        stream.read_to_string(&mut response).expect("read");
        response.split_once("\r\n\r\n").map_or_else(String::new, |(_, body)| body.to_owned())
    }

    /// Every webhook secret the emulator's `CreateWebhook` has answered, for any account.
    pub fn webhook_secrets(&self) -> Vec<String> {
        serde_json::from_str(&self.control("GET", "/_reconcile/codebuild/webhook-secrets")).expect("a JSON list")
    }

    /// Every request the emulator has recorded from the keys `access_key`, in the order they
    /// arrived.
    pub fn requests_of(&self, access_key: &str) -> Vec<RecordedRequest> {
        // Access keys are letters and digits: nothing to escape in a query.
        assert!(access_key.bytes().all(|b| b.is_ascii_alphanumeric()), "an access key: {access_key:?}");
        let body = self.control("GET", &format!("/_reconcile/requests?access_key={access_key}"));
        serde_json::from_str::<Vec<serde_json::Value>>(&body)
            .expect("the recorder answers JSON")
            .iter()
            .map(RecordedRequest::from_json)
            .collect()
    }

    /// Sends every request made with `access_key` to the decider at `url` first
    /// (`tests/emulator/gate.py`), or (`None`) no longer.
    pub(crate) fn gate(&self, access_key: &str, url: Option<&str>) {
        assert!(access_key.bytes().all(|b| b.is_ascii_alphanumeric()), "an access key: {access_key:?}");
        match url {
            Some(url) => self.control("POST", &format!("/_reconcile/gate?access_key={access_key}&decider={url}")),
            None => self.control("POST", &format!("/_reconcile/gate?access_key={access_key}&off=1")),
        };
    }
}

/// A session of role `role` of account `id`, from `sts:AssumeRole` with `config`'s credentials.
async fn assumed(config: &SdkConfig, id: &str, role: &str, endpoint: &str) -> TestAccount {
    let assumed = aws_sdk_sts::Client::new(config)
        .assume_role()
        .role_arn(format!("arn:aws:iam::{id}:role/{role}"))
        .role_session_name("reconcile-test")
        .send()
        .await
        .expect("the emulator answers AssumeRole");
    let credentials = assumed.credentials().expect("AssumeRole returns credentials");
    TestAccount {
        id: id.to_owned(),
        endpoint: endpoint.to_owned(),
        access_key_id: credentials.access_key_id().to_owned(),
        secret_access_key: credentials.secret_access_key().to_owned(),
        session_token: credentials.session_token().to_owned(),
    }
}

/// One request as the emulator saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    pub access_key: String,
    /// The account the keys are of.
    pub account: String,
    /// The region the request was signed for.
    pub region: String,
    /// The `User-Agent` header: the binary's names it (`app/reconcile`), a test's own SDK
    /// calls do not.
    pub user_agent: String,
    pub service: String,
    /// The API action for JSON and query protocols (`PutLifecyclePolicy`); empty for S3's REST.
    pub action: String,
    pub method: String,
    pub path: String,
    /// The query string: for S3's REST, which setting of a bucket (`tagging`, `acl`, ...).
    pub query: String,
    /// What it names as its subject, for JSON and query protocols: the repository, project,
    /// role or identity provider (S3's is in `path`).
    pub resource: String,
    /// Which attempt of its operation it was (1, or a retry's number), as the SDK numbers them.
    pub attempt: u64,
    /// When it arrived, in seconds since the epoch: comparable with the GitHub stand-in's log.
    pub at: f64,
}

impl RecordedRequest {
    /// What the launcher's record (or its gate) says of a request.
    pub fn from_json(entry: &serde_json::Value) -> RecordedRequest {
        let field = |name: &str| entry[name].as_str().unwrap_or_default().to_owned();
        RecordedRequest {
            access_key: field("access_key"),
            account: field("account"),
            region: field("region"),
            user_agent: field("user_agent"),
            service: field("service"),
            action: field("action"),
            method: field("method"),
            path: field("path"),
            query: field("query"),
            resource: field("resource"),
            attempt: entry["attempt"].as_u64().unwrap_or(1),
            at: entry["at"].as_f64().unwrap_or_default(),
        }
    }

    /// Whether the `reconcile` binary sent it (rather than a test setting the account up).
    pub fn is_reconciles(&self) -> bool {
        self.user_agent.split(' ').any(|part| part == "app/reconcile")
    }

    /// Whether the request can change anything.
    pub fn is_write(&self) -> bool {
        if self.action.is_empty() {
            return !matches!(self.method.as_str(), "GET" | "HEAD");
        }
        !["Get", "List", "Describe", "BatchGet", "Head", "Lookup"].iter().any(|read| self.action.starts_with(read))
    }
}

impl std::fmt::Display for RecordedRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.action.is_empty() {
            write!(f, "{}:{} {}", self.service, self.method, self.path)
        } else {
            write!(f, "{}:{}", self.service, self.action)
        }
    }
}

/// One isolated account in the emulator.
#[derive(Debug, Clone)]
pub struct TestAccount {
    pub id: String,
    pub endpoint: String,
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: String,
}

impl TestAccount {
    /// The environment that points the standard AWS chain (and so the `reconcile` binary) at
    /// this account, and at nothing on the developer's machine.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint.clone()),
            ("AWS_ACCESS_KEY_ID", self.access_key_id.clone()),
            ("AWS_SECRET_ACCESS_KEY", self.secret_access_key.clone()),
            ("AWS_SESSION_TOKEN", self.session_token.clone()),
            ("AWS_REGION", "eu-north-1".to_owned()),
            ("AWS_CONFIG_FILE", "/dev/null".to_owned()),
            ("AWS_SHARED_CREDENTIALS_FILE", "/dev/null".to_owned()),
            ("AWS_EC2_METADATA_DISABLED", "true".to_owned()),
        ]
    }

    /// An SDK configuration for this account, for making changes out of band.
    pub fn sdk_config(&self) -> SdkConfig {
        emulator().sdk_config(self.credentials(), REGION)
    }

    /// The same account as a session of its role `role_name`, as `aws sts assume-role` gives
    /// one: its own keys (so its requests are told apart), and `GetCallerIdentity` answers
    /// `arn:aws:sts::ID:assumed-role/ROLE/SESSION`.
    pub async fn assume(&self, role_name: &str) -> TestAccount {
        assumed(&self.sdk_config(), &self.id, role_name, &self.endpoint).await
    }

    /// Every request this account has made so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        emulator().requests_of(&self.access_key_id)
    }

    /// The requests this account has made so far that could change one of its resources: every
    /// write but those of apply's own lock object, which is coordination, not the account.
    pub fn writes(&self) -> Vec<RecordedRequest> {
        self.requests().into_iter().filter(|r| r.is_write() && !r.path.ends_with(APPLY_LOCK_KEY)).collect()
    }

    /// Makes this account's next `count` CodeBuild `CreateProject` calls fail as they do while a
    /// new role has not propagated through IAM.
    pub fn fail_create_project(&self, count: u32) {
        emulator()
            .control("POST", &format!("/_reconcile/codebuild/fail-create-project?account={}&count={count}", self.id));
    }

    /// Makes this account's next `CreateProject` fail with an input error no retry fixes.
    pub fn refuse_create_project(&self) {
        emulator().control(
            "POST",
            &format!(
                "/_reconcile/codebuild/fail-create-project?account={}&count=1&reason=refused-by-the-test",
                self.id
            ),
        );
    }

    /// Makes every `action` call of this account's credentials answer AccessDenied, as IAM does
    /// when a policy lacks `service:action` (query-protocol services: IAM, STS). `resource` is
    /// the text IAM names the resource by, URL-safe.
    pub fn deny(&self, service: &str, action: &str, resource: &str) {
        let caller = format!("arn:aws:sts::{}:assumed-role/reconcile-ci/session", self.id);
        emulator().control(
            "POST",
            &format!(
                "/_reconcile/deny?access_key={}&service={service}&action={action}&caller={caller}&resource={resource}",
                self.access_key_id
            ),
        );
    }

    /// Makes every `action` call of this account's credentials fail with `code` and `message`
    /// (query-protocol services: IAM, STS); `message` must be URL-safe.
    pub fn fail_with(&self, service: &str, action: &str, code: &str, message: &str) {
        emulator().control(
            "POST",
            &format!(
                "/_reconcile/deny?access_key={}&service={service}&action={action}&code={code}&message={message}",
                self.access_key_id
            ),
        );
    }

    /// Makes this account's next `count` `CreateProject` calls fail with an input error that no
    /// retry fixes (`reason` must be URL-safe).
    pub fn reject_create_project(&self, count: u32, reason: &str) {
        emulator().control(
            "POST",
            &format!("/_reconcile/codebuild/fail-create-project?account={}&count={count}&reason={reason}", self.id),
        );
    }

    /// Gives the account a GitHub personal access token as CodeBuild's source credential in
    /// `region`, as `aws codebuild import-source-credentials` does (through the launcher, so the
    /// account's own request record stays the test's).
    pub fn import_github_credential(&self, region: &str) {
        emulator()
            .control("POST", &format!("/_reconcile/codebuild/source-credential?account={}&region={region}", self.id));
    }

    /// Takes every CodeBuild source credential of the account in `region` away.
    pub fn delete_source_credentials(&self, region: &str) {
        emulator().control(
            "POST",
            &format!("/_reconcile/codebuild/source-credential?account={}&region={region}&delete=1", self.id),
        );
    }

    /// A CodeConnections connection `arn`, in `status` (`AVAILABLE`, `PENDING`, ...).
    pub fn connection(&self, arn: &str, status: &str) {
        emulator().control("POST", &format!("/_reconcile/codeconnections/connection?arn={arn}&status={status}"));
    }

    /// Gives the account CodeBuild builds in `region`: each `{"project", "start", "end",
    /// "computeType", "status"}`, times in seconds since the epoch, `end` null while running.
    pub fn seed_builds(&self, region: &str, builds: &serde_json::Value) {
        emulator().control_with(
            "POST",
            &format!("/_reconcile/codebuild/builds?account={}&region={region}", self.id),
            &builds.to_string(),
        );
    }

    /// What CloudWatch says `bucket` stored on `day` (`YYYY-MM-DD`) in `storage`
    /// (`StandardStorage`, ...), as S3's daily `BucketSizeBytes`.
    pub fn bucket_size(&self, region: &str, bucket: &str, storage: &str, day: &str, bytes: u64) {
        emulator().control(
            "POST",
            &format!(
                "/_reconcile/cloudwatch/bucket-size?account={}&region={region}&bucket={bucket}&storage={storage}&day={day}&bytes={bytes}",
                self.id
            ),
        );
    }

    /// Queues Cost Explorer's next answer to a `GetCostAndUsage` of this account (moto's own
    /// switch: each new request takes the next queued answer).
    pub fn cost_explorer_answers(&self, answer: &serde_json::Value) {
        let body = serde_json::json!({ "results": [answer], "account_id": self.id });
        emulator().control_with("POST", "/moto-api/static/ce/cost-and-usage-results", &body.to_string());
    }

    /// Records a CloudTrail management event in the stand-in's history for `region`, as if a
    /// call had made it: `eventName`, `eventSource`, `eventTime` (ISO 8601), `requestParameters`,
    /// `arn` (the caller), and optionally `userAgent`, `sourceIPAddress`, `eventID`, `errorCode`,
    /// `resources`, `recipientAccountId`, `awsRegion`.
    pub fn cloudtrail_event(&self, region: &str, event: &serde_json::Value) {
        self.cloudtrail_events(region, std::slice::from_ref(event));
    }

    /// [`TestAccount::cloudtrail_event`] for many events, in one request.
    pub fn cloudtrail_events(&self, region: &str, events: &[serde_json::Value]) {
        emulator().control_with(
            "POST",
            &format!("/_reconcile/cloudtrail/event?account={}&region={region}", self.id),
            &serde_json::Value::from(events.to_vec()).to_string(),
        );
    }

    /// Makes the next `count` CloudTrail lookups of this account in `region` answer throttling.
    pub fn throttle_cloudtrail(&self, region: &str, count: u32) {
        emulator().control(
            "POST",
            &format!("/_reconcile/cloudtrail/throttle?account={}&region={region}&count={count}", self.id),
        );
    }

    /// Makes every list operation this account calls answer in pages of at most `size` items.
    pub fn page_size(&self, size: u32) {
        emulator().control("POST", &format!("/_reconcile/page-size?account={}&size={size}", self.id));
    }

    fn credentials(&self) -> Credentials {
        Credentials::new(&self.access_key_id, &self.secret_access_key, Some(self.session_token.clone()), None, "test")
    }

    /// An SDK configuration for this account in `region`.
    pub fn sdk_config_in(&self, region: &str) -> SdkConfig {
        emulator().sdk_config(self.credentials(), region)
    }

    /// Loads the account as it stood on 2026-11-11, made by the old setup script from
    /// `desired`: every repository, but `atom-wheel-cache` and `torchvision-wheel-cache` with no
    /// lifecycle policy and `pytorch-cache` with the old 14-day `tagStatus any` rule.
    pub fn seed_2026_11_11(&self, desired: &Path) {
        self.seed(desired, &[]);
    }

    /// The same, with what the account had stored and built by then, as the demo loads it: the
    /// registry's 738 GB (347 GB untagged in the two cache repositories without a policy), a
    /// week of nightly builds, the compiler cache's daily size.
    pub fn seed_2026_11_11_with_history(&self, desired: &Path) {
        self.seed(desired, &["--history"]);
    }

    fn seed(&self, desired: &Path, more: &[&str]) {
        let script = workspace_root().join("tests/emulator/seed.py");
        let status = Command::new(emulator_python())
            .arg(script)
            .arg("--desired")
            .arg(desired)
            .args(more)
            .envs(self.env())
            .status()
            .expect("the seed script runs");
        assert!(status.success(), "seeding the 2026-11-11 account failed");
    }
}

/// What a Markdown comment renders beyond text, read as a CommonMark (and GFM tables)
/// renderer reads it: its HTML (which must be only reconcile's own `<details>` blocks), its
/// links and images (none), and any `@` outside code (GitHub would make it a mention, unless a
/// zero-width joiner follows it).
#[derive(Debug, Default)]
pub struct Markup {
    /// Every piece of raw HTML, in order.
    pub html: Vec<String>,
    pub links: usize,
    pub images: usize,
    /// Text (outside code) where an `@` is followed by a name.
    pub mentions: Vec<String>,
    /// Text (outside code) that GitHub's extended autolinks would make a link of: a URL, an
    /// issue reference (`#12`, `GH-12`), a word that could be a commit SHA.
    pub autolinks: Vec<String>,
    /// A bidirectional control anywhere, code included: it reorders what a reader sees.
    pub bidi: usize,
}

impl Markup {
    /// Reads `markdown`.
    pub fn of(markdown: &str) -> Markup {
        use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
        let mut markup = Markup::default();
        // A code block's text is code: GitHub links nothing in it.
        let mut in_code_block = false;
        for event in Parser::new_ext(markdown, Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH) {
            match event {
                Event::Html(html) | Event::InlineHtml(html) => markup.html.push(html.into_string()),
                Event::Start(Tag::Link { .. }) => markup.links += 1,
                Event::Start(Tag::Image { .. }) => markup.images += 1,
                Event::Start(Tag::CodeBlock(_)) => in_code_block = true,
                Event::End(TagEnd::CodeBlock) => in_code_block = false,
                Event::Text(text) if !in_code_block => {
                    let mentioned = text
                        .match_indices('@')
                        .any(|(idx, _)| text[idx + 1..].chars().next().is_some_and(|c| c.is_ascii_alphanumeric()));
                    if ["http://", "https://", "www."].iter().any(|start| text.contains(start)) || linked(&text) {
                        markup.autolinks.push(text.to_string());
                    }
                    if mentioned {
                        markup.mentions.push(text.into_string());
                    }
                }
                _ => {}
            }
        }
        // Unicode's bidirectional controls: marks, embeddings, overrides, isolates.
        let bidi = |c: &char| matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        markup.bidi = markdown.chars().filter(bidi).count();
        markup
    }

    /// Panics, saying what, unless the comment renders nothing but text, code and reconcile's own
    /// `<details>` blocks, each closed, and its own hidden markers (`<!-- reconcile:... -->`).
    pub fn assert_inert(markdown: &str) {
        let markup = Markup::of(markdown);
        let ours = ["<details>", "<summary>", "</summary>", "</details>", "<code>", "</code>"];
        let tags: Vec<String> = markup
            .html
            .iter()
            .flat_map(|html| html.split_inclusive('>').map(str::trim).filter(|t| t.starts_with('<')).map(str::to_owned))
            .collect();
        let marker = |tag: &str| {
            tag.strip_prefix("<!-- reconcile:").and_then(|t| t.strip_suffix(" -->")).is_some_and(|name| {
                name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_ %.:/@[]".contains(&b)) && !name.contains("--")
            })
        };
        let foreign: Vec<&String> = tags.iter().filter(|tag| !ours.contains(&tag.as_str()) && !marker(tag)).collect();
        assert!(foreign.is_empty(), "HTML that is not reconcile's: {foreign:?}\n{markdown}");
        let count = |tag: &str| tags.iter().filter(|t| *t == tag).count();
        assert_eq!(count("<details>"), count("</details>"), "details opened and closed:\n{markdown}");
        assert_eq!((markup.links, markup.images), (0, 0), "a link or an image:\n{markdown}");
        assert!(markup.mentions.is_empty(), "a mention: {:?}\n{markdown}", markup.mentions);
        assert!(markup.autolinks.is_empty(), "a link GitHub would make: {:?}\n{markdown}", markup.autolinks);
        assert_eq!(markup.bidi, 0, "a bidirectional control:\n{markdown}");
    }
}

/// Whether GitHub would link part of `text` as a reference: `#12`, `GH-12`, or a word of seven
/// or more hex digits with a letter and a digit (it links a SHA of the repository's).
fn linked(text: &str) -> bool {
    let reference = |at: usize| text[at..].chars().next().is_some_and(|c| c.is_ascii_digit());
    text.match_indices('#').any(|(at, _)| reference(at + 1))
        || text.to_ascii_uppercase().match_indices("GH-").any(|(at, _)| reference(at + 3))
        || text.split(|c: char| !c.is_ascii_alphanumeric()).any(|word| {
            word.len() >= 7
                && word.chars().all(|c| c.is_ascii_hexdigit())
                && word.chars().any(|c| c.is_ascii_digit())
                && word.chars().any(|c| c.is_ascii_alphabetic())
        })
}
