//! A run's names: every resource the suite declares carries the run's prefix in its name, the
//! run's tag, and the live suite's deployment's mark, so concurrent runs never collide and the
//! sweeper finds what a run left, and nothing else.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What every name of every run starts with: the sweeper looks at nothing else.
pub const PREFIX: &str = "rcl-live-";
/// The tag every resource of a run carries; its value is the run's id.
pub const RUN_TAG: &str = "reconcile-live-run";
/// The deployment every run's desired.toml names: reconcile marks what a run makes with it
/// (`reconcile:deployment = rcl-live`), and the sweeper takes only what carries it.
pub const DEPLOYMENT: &str = "rcl-live";
/// A run id's length: its start time in seconds (base 36, 7 digits until the year 4200) and 3
/// more of the process and the clock, so two runs started in the same second differ.
pub const ID_LEN: usize = 10;
const TIME_DIGITS: usize = 7;

/// AWS's limits on the names the suite makes, in characters.
pub const LIMITS: &[(&str, usize)] = &[
    ("ECR repository", 256),
    ("S3 bucket", 63),
    ("IAM role", 64),
    ("IAM policy (the boundary)", 128),
    ("IAM inline policy", 128),
    ("CodeBuild project", 255),
];

/// One run of the suite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    id: String,
}

fn base36(mut value: u64, digits: usize) -> String {
    let mut out = vec![b'0'; digits];
    for slot in out.iter_mut().rev() {
        *slot = b"0123456789abcdefghijklmnopqrstuvwxyz"[(value % 36) as usize];
        value /= 36;
    }
    String::from_utf8(out).expect("ASCII digits")
}

impl Run {
    /// A new run, started now.
    pub fn start() -> Run {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        let salt = u64::from(now.subsec_nanos()) ^ u64::from(std::process::id()).rotate_left(17);
        Run { id: format!("{}{}", base36(now.as_secs(), TIME_DIGITS), base36(salt, ID_LEN - TIME_DIGITS)) }
    }

    /// The run whose id is `id`, if it is one (what a tag or a name says).
    pub fn of(id: &str) -> Option<Run> {
        let valid = id.len() == ID_LEN && id.bytes().all(|b| b.is_ascii_digit() || b.is_ascii_lowercase());
        valid.then(|| Run { id: id.to_owned() })
    }

    /// The run a resource's name says it belongs to.
    pub fn named_in(name: &str) -> Option<Run> {
        Run::of(name.strip_prefix(PREFIX)?.get(..ID_LEN)?)
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// How long ago the run started, from its id.
    pub fn age(&self) -> Duration {
        let started = u64::from_str_radix(&self.id[..TIME_DIGITS], 36).unwrap_or(0);
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
        Duration::from_secs(now.saturating_sub(started))
    }

    pub fn prefix(&self) -> String {
        format!("{PREFIX}{}", self.id)
    }

    /// The repositories desired.toml declares at first; [`Run::added`] is the bake target the
    /// suite declares later.
    pub fn repositories(&self) -> [String; 2] {
        [format!("{}/base", self.prefix()), format!("{}/app", self.prefix())]
    }

    pub fn added(&self) -> String {
        format!("{}/added", self.prefix())
    }

    pub fn bucket(&self, account: &str) -> String {
        format!("{}-cache-{account}", self.prefix())
    }

    pub fn role(&self) -> String {
        format!("{}-runner", self.prefix())
    }

    /// The role's permissions boundary, as reconcile names it.
    pub fn boundary(&self) -> String {
        format!("{}-boundary", self.role())
    }

    pub fn inline_policy(&self) -> String {
        format!("{}-nightly", self.prefix())
    }

    /// A stand-in for a CI role (`plan`, `apply`), holding its derived policy.
    pub fn ci_role(&self, purpose: &str) -> String {
        format!("{}-ci-{purpose}", self.prefix())
    }

    pub fn project(&self) -> String {
        format!("{}-runner", self.prefix())
    }

    /// Every name the run makes in `account`, with the limit it is held to.
    pub fn names(&self, account: &str) -> Vec<(&'static str, String)> {
        let [base, app] = self.repositories();
        vec![
            ("ECR repository", base),
            ("ECR repository", app),
            ("ECR repository", self.added()),
            ("S3 bucket", self.bucket(account)),
            ("IAM role", self.role()),
            ("IAM role", self.ci_role("apply")),
            ("IAM policy (the boundary)", self.boundary()),
            ("IAM inline policy", self.inline_policy()),
            ("CodeBuild project", self.project()),
        ]
    }

    /// The run's desired.toml in `region`; with `github_repository` (a repository CodeBuild's
    /// credential in the account reaches), the runner project and its webhook too.
    pub fn desired(&self, region: &str, github_repository: Option<&str>) -> String {
        // What the environment gives is quoted as a TOML string (JSON's escapes are TOML's), so
        // no value adds a key of its own; reconcile then checks it as it checks any desired.toml.
        let quoted = |value: &str| serde_json::Value::from(value).to_string();
        let region = quoted(region);
        let id = &self.id;
        let tags = format!(r#"{{ {RUN_TAG} = "{id}" }}"#);
        let [base, app] = self.repositories();
        let prefix = self.prefix();
        let mut text = format!(
            r#"# The live acceptance suite's run {id}: every name carries its prefix, every resource its tag.
region = {region}
deployment = "{DEPLOYMENT}"

[ecr.defaults]
lifecycle_policy = "keep-3-untagged"
tags = {tags}

[ecr.lifecycle_policies.keep-3-untagged]
rules = [
  {{ rulePriority = 1, selection = {{ tagStatus = "untagged", countType = "imageCountMoreThan", countNumber = 3 }}, action = {{ type = "expire" }} }},
]

[ecr.repositories]
"{base}" = {{}}
"{app}" = {{}}

[s3.buckets.cache]
name = "{prefix}-cache-${{account_id}}"
tags = {tags}
lifecycle_rules = [{{ id = "expire-after-30-days", expiration_days = 30 }}]

[iam.roles.runner]
name = "{role}"
description = "The live acceptance suite's runner role, run {id}"
trusted_services = ["codebuild.amazonaws.com"]
policy_name = "{policy}"
tags = {tags}
"#,
            role = self.role(),
            policy = self.inline_policy(),
        );
        if let Some(repository) = github_repository.map(quoted) {
            text.push_str(&format!(
                r#"
[codebuild.projects.runner]
name = "{project}"
description = "The live acceptance suite's runner, run {id}"
source_location = {repository}
service_role = "runner"
build_timeout_hours = 1
tags = {tags}

[codebuild.projects.runner.webhook]
filter_groups = [[{{ type = "EVENT", pattern = "WORKFLOW_JOB_QUEUED" }}]]
"#,
                project = self.project(),
            ));
        }
        text
    }
}

impl Run {
    /// [`Run::desired`] once the suite has declared its bake target.
    pub fn desired_with_added(&self, region: &str, github_repository: Option<&str>) -> String {
        let [_, app] = self.repositories();
        let declared = format!("\"{app}\" = {{}}\n");
        self.desired(region, github_repository).replacen(
            &declared,
            &format!("{declared}\"{}\" = {{}}\n", self.added()),
            1,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The longest run id there is, and the longest account id: every name within AWS's limit.
    #[test]
    fn the_longest_names_a_run_makes_stay_within_awss_limits() {
        let longest = Run::of(&"z".repeat(ID_LEN)).unwrap();
        let started = Run::start();
        assert_eq!(started.id().len(), ID_LEN);
        for run in [&longest, &started] {
            let names = run.names("999999999999");
            // Every name the run makes, of every kind a limit is known for.
            assert_eq!(names.len(), 9, "{names:?}");
            for (kind, _) in LIMITS {
                assert!(names.iter().any(|(what, _)| what == kind), "no {kind} among {names:?}");
            }
            for (what, name) in names {
                let limit = LIMITS.iter().find(|(kind, _)| *kind == what).unwrap().1;
                assert!(name.len() <= limit, "{what} `{name}` is {} characters, over {limit}", name.len());
                assert!(name.starts_with(PREFIX), "{name}");
                assert_eq!(Run::named_in(&name).as_ref(), Some(run), "{name}");
            }
        }
        // Bucket names: lower case, digits, hyphens; no two adjacent periods, no IP address.
        let bucket = longest.bucket("999999999999");
        assert!(bucket.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'), "{bucket}");
    }

    /// A run's desired.toml, with the sections resource crates read.
    fn parse(text: &str) -> Result<reconcile_core::Desired, reconcile_core::desired::DesiredErrors> {
        reconcile_core::Desired::parse_claimed(
            std::path::Path::new("desired.toml"),
            text,
            &[
                &reconcile_ecr::CLAIM,
                &reconcile_s3::CLAIM,
                &reconcile_iam::CLAIM,
                &reconcile_codebuild::CLAIM,
                &reconcile_github::CLAIM,
                &reconcile_iam::CI_CLAIM,
            ],
        )
    }

    #[test]
    fn a_runs_desired_toml_is_valid_and_names_only_its_own_resources() {
        let run = Run::start();
        for github in [None, Some("https://github.com/ROCm/rocm-bake-sandbox")] {
            let text = run.desired("us-west-2", github);
            let desired = parse(&text).unwrap_or_else(|errors| panic!("{errors}\n{text}"));
            assert_eq!(desired.region, "us-west-2");
            let names: std::collections::BTreeSet<String> =
                reconcile_ecr::declared(&desired).repositories.iter().map(|r| r.name.clone()).collect();
            assert_eq!(names, run.repositories().into_iter().collect());
            assert_eq!(reconcile_codebuild::declared(&desired).projects.len(), usize::from(github.is_some()));
            let buckets: Vec<String> = reconcile_s3::declared(&desired)
                .buckets
                .iter()
                .map(|b| b.name.render("999999999999", "us-west-2"))
                .collect();
            assert_eq!(buckets, [run.bucket("999999999999")]);
            let added = parse(&run.desired_with_added("us-west-2", github)).unwrap();
            assert!(reconcile_ecr::declared(&added).repositories.iter().any(|r| r.name == run.added()));
        }
    }

    #[test]
    fn what_the_environment_gives_cannot_add_a_key() {
        let run = Run::start();
        let text = run.desired("us-west-2\"\n[iam.roles.x]\nname = \"y", Some("https://github.com/a/b\"\nx = \"1"));
        let error = parse(&text).unwrap_err();
        assert!(!text.contains("\n[iam.roles.x]"), "{text}");
        assert!(error.to_string().contains("region"), "{error}");
    }

    #[test]
    fn a_runs_age_comes_from_its_id_and_other_names_are_not_runs() {
        assert!(Run::start().age() < Duration::from_secs(5));
        let old = Run::of(&format!("{}000", base36(1_000_000_000, TIME_DIGITS))).unwrap();
        assert!(old.age() > Duration::from_secs(20 * 365 * 86_400));
        for other in
            ["rocm-bake/pytorch", "rcl-live-", "rcl-live-short", "rcl-live-UPPERCASE1/x", "xrcl-live-0123456789"]
        {
            assert_eq!(Run::named_in(other), None, "{other}");
        }
    }
}
