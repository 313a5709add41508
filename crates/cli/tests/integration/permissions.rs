//! Holding what the binary sends to the permissions a policy grants: the IAM action and
//! resource of each recorded request, IAM's wildcard matching, and the check every run in this
//! suite goes through: each write it made is allowed by the apply policy derived for its
//! desired.toml (`Watch`).

use std::collections::BTreeSet;
use std::path::Path;

use reconcile_iam::evaluate::{Context, Decision, Principal, Request};
use reconcile_test_support::gate::{Gate, Question};
use reconcile_test_support::{RecordedRequest, TestAccount, emulator};
use serde_json::Value;

/// The IAM action a recorded request needs and the ARN of what it acts on; `None` for STS
/// `GetCallerIdentity`, which needs no permission at all.
pub fn permission(request: &RecordedRequest) -> Option<(String, String)> {
    let (id, region) = (request.account.as_str(), request.region.as_str());
    let named = |service: &str, kind: &str| {
        let name = request.resource.rsplit('/').next().unwrap_or_default();
        match service {
            "iam" => format!("arn:aws:iam::{id}:{kind}/{name}"),
            _ => format!("arn:aws:{service}:{region}:{id}:{kind}/{name}"),
        }
    };
    let (service, action) = (request.service.as_str(), request.action.as_str());
    let resource = match (service, action) {
        ("sts", "GetCallerIdentity") => return None,
        ("s3", _) => return Some(s3_permission(request)),
        // A repository's name may hold `/`: the whole name, or what an ARN names after `repository/`.
        ("ecr", _) => {
            let name = match request.resource.split_once(":repository/") {
                Some((_, name)) => name,
                None => request.resource.as_str(),
            };
            format!("arn:aws:ecr:{region}:{id}:repository/{name}")
        }
        ("codebuild", "ListSourceCredentials") | ("iam", "ListRoles") => "*".to_owned(),
        ("codebuild", "BatchGetBuilds") => {
            let project = request.resource.split(':').next().unwrap_or_default();
            format!("arn:aws:codebuild:{region}:{id}:project/{project}")
        }
        ("pricing" | "ce" | "monitoring" | "cloudtrail", _) => "*".to_owned(),
        ("codebuild", _) => named("codebuild", "project"),
        ("sts", "AssumeRole") => request.resource.clone(),
        ("iam", "CreatePolicy") => named("iam", "policy"),
        ("iam", "CreateOpenIDConnectProvider") => {
            let host = request.resource.trim_start_matches("https://");
            format!("arn:aws:iam::{id}:oidc-provider/{host}")
        }
        ("iam", _) if request.resource.starts_with("arn:") => request.resource.clone(),
        ("iam", _) => named("iam", "role"),
        ("codeconnections", _) => request.resource.clone(),
        other => panic!("a request this test does not know: {other:?} {request}"),
    };
    // CloudWatch signs as `monitoring`; IAM names its actions `cloudwatch:`.
    let service = if service == "monitoring" { "cloudwatch" } else { service };
    Some((format!("{service}:{action}"), resource))
}

/// S3's REST requests: the action by method and the setting in the query, as the IAM
/// reference for S3 names them.
fn s3_permission(request: &RecordedRequest) -> (String, String) {
    let setting = request.query.split(['&', '=']).next().unwrap_or_default();
    let path = request.path.trim_matches('/');
    let is_object = path.contains('/');
    let action = match (request.method.as_str(), setting, is_object) {
        ("GET" | "HEAD", _, true) => "GetObject",
        ("PUT", _, true) => "PutObject",
        ("DELETE", _, true) => "DeleteObject",
        ("HEAD", _, false) => "ListBucket",
        ("PUT", "", false) => "CreateBucket",
        ("GET", "tagging", _) => "GetBucketTagging",
        ("PUT" | "DELETE", "tagging", _) => "PutBucketTagging",
        ("GET", "publicAccessBlock", _) => "GetBucketPublicAccessBlock",
        ("PUT", "publicAccessBlock", _) => "PutBucketPublicAccessBlock",
        ("GET", "encryption", _) => "GetEncryptionConfiguration",
        ("PUT", "encryption", _) => "PutEncryptionConfiguration",
        ("GET", "policy", _) => "GetBucketPolicy",
        ("PUT", "policy", _) => "PutBucketPolicy",
        ("DELETE", "policy", _) => "DeleteBucketPolicy",
        ("GET", "ownershipControls", _) => "GetBucketOwnershipControls",
        ("PUT", "ownershipControls", _) => "PutBucketOwnershipControls",
        ("GET", "acl", _) => "GetBucketAcl",
        ("PUT", "acl", _) => "PutBucketAcl",
        ("GET", "versioning", _) => "GetBucketVersioning",
        ("PUT", "versioning", _) => "PutBucketVersioning",
        ("GET", "replication", _) => "GetReplicationConfiguration",
        ("PUT" | "DELETE", "replication", _) => "PutReplicationConfiguration",
        ("GET", "website", _) => "GetBucketWebsite",
        ("DELETE", "website", _) => "DeleteBucketWebsite",
        ("GET", "logging", _) => "GetBucketLogging",
        ("PUT", "logging", _) => "PutBucketLogging",
        ("GET", "versions", false) => "ListBucketVersions",
        // DeleteObjects of versions: IAM checks each as DeleteObjectVersion.
        ("POST", "delete", false) => "DeleteObjectVersion",
        ("DELETE", "", false) => "DeleteBucket",
        ("GET", "lifecycle", _) => "GetLifecycleConfiguration",
        ("PUT" | "DELETE", "lifecycle", _) => "PutLifecycleConfiguration",
        other => panic!("an S3 request this test does not know: {other:?} {request}"),
    };
    // DeleteObjects is checked object by object: on the bucket's objects.
    let objects = if action == "DeleteObjectVersion" && !is_object { "/*" } else { "" };
    (format!("s3:{action}"), format!("arn:aws:s3:::{path}{objects}"))
}

pub use reconcile_iam::evaluate::matches;

/// A policy element that is one string or a list of them.
pub fn list(value: &Value) -> Vec<String> {
    match value {
        Value::String(one) => vec![one.clone()],
        Value::Array(many) => many.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
        _ => vec![],
    }
}

/// The statement of `policy` that allows `action` on `resource`, if one does.
pub fn allowing<'a>(policy: &'a Value, action: &str, resource: &str) -> Option<&'a Value> {
    policy["Statement"].as_array().unwrap().iter().find(|statement| {
        statement["Effect"] == "Allow"
            && list(&statement["Action"]).iter().any(|a| a == action)
            && list(&statement["Resource"]).iter().any(|r| matches(r, resource))
    })
}

/// Every action `policy` allows somewhere.
pub fn actions(policy: &Value) -> BTreeSet<String> {
    policy["Statement"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["Effect"] == "Allow")
        .flat_map(|s| list(&s["Action"]))
        .collect()
}

/// One run of the binary, watched: every write it sends must be allowed by the apply policy
/// derived for its desired.toml, whatever the test is about. Made before the run starts, checked
/// once it has ended.
pub struct Watch {
    access_key: Option<String>,
    since: f64,
}

impl Watch {
    /// Watches the requests made with the keys in `env` from now on.
    pub fn start(env: &[(&str, String)]) -> Watch {
        let access_key = env.iter().find(|(name, _)| *name == "AWS_ACCESS_KEY_ID").map(|(_, key)| key.clone());
        let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
        Watch { access_key, since }
    }

    /// Holds every write the binary sent since `start` to the apply policy `reconcile policy
    /// apply` derives from `desired` (relative to `dir`) for the account the keys are of.
    ///
    /// What only an administrator writes is the exception (`Administrators`): the apply role
    /// is never allowed it, and apply refuses it when the apply role is the caller (ci.rs, and
    /// policies.rs, which holds the apply role's own writes to its policy with no exception).
    pub fn check(self, desired: &Path, dir: Option<&Path>) {
        let writes = self.writes();
        let Some(first) = writes.first() else { return };
        let policy = apply_policy(desired, dir, &first.account);
        let administrators = Administrators::of(desired, dir, &first.account);
        let apply_roles: Vec<RecordedRequest> =
            writes.into_iter().filter(|request| !administrators.write(request)).collect();
        let refused = not_allowed(&apply_roles, &policy);
        assert!(
            refused.is_empty(),
            "{} was applied with writes the apply policy derived for it does not allow: {refused:#?}\n{policy:#}",
            desired.display()
        );
    }

    /// Every write sent with these keys since `start`, the binary's and anyone else's (a test's
    /// own SDK calls).
    pub fn all_writes(&self) -> Vec<RecordedRequest> {
        let Some(access_key) = self.access_key.as_deref() else { return Vec::new() };
        emulator().requests_of(access_key).into_iter().filter(|r| r.at >= self.since && r.is_write()).collect()
    }

    /// Every write the binary sent with these keys since `start`.
    pub fn writes(&self) -> Vec<RecordedRequest> {
        // A run without keys reaches no account (or not the emulator's).
        let Some(access_key) = self.access_key.as_deref().filter(|key| key.bytes().all(|b| b.is_ascii_alphanumeric()))
        else {
            return Vec::new();
        };
        emulator()
            .requests_of(access_key)
            .into_iter()
            .filter(|r| r.at >= self.since && r.is_reconciles() && r.is_write())
            .collect()
    }
}

/// Each of `writes` that `policy` does not allow on its resource, as `action on resource`.
pub fn not_allowed(writes: &[RecordedRequest], policy: &Value) -> Vec<String> {
    writes
        .iter()
        .map(|request| permission(request).unwrap_or_else(|| panic!("{request} is not a write")))
        .filter(|(action, resource)| allowing(policy, action, resource).is_none())
        .map(|(action, resource)| format!("{action} on {resource}"))
        .collect()
}

/// `reconcile policy apply` for `desired` in `account`.
pub fn apply_policy(desired: &Path, dir: Option<&Path>, account: &str) -> Value {
    derived_policy("apply", desired, dir, account)
}

/// `reconcile policy <role>` for `desired` in `account`.
pub fn derived_policy(role: &str, desired: &Path, dir: Option<&Path>, account: &str) -> Value {
    let mut command = crate::support::command(Some(desired));
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    let output = command.args(["policy", role, "--account", account]).output().unwrap();
    assert!(
        output.status.success(),
        "{} was applied, but no apply policy derives from it: {}",
        desired.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// What only an administrator writes in the account of a desired.toml, never the apply role:
/// anything in IAM but the runner's inline policy (the CI identities, the runner's role and its
/// boundary), any bucket's expiry or ACL, making a bucket that declares an expiry (it is made
/// with it), and deleting a repository (a prune's or a destroy's). What
/// `Reconciler::administrators_only` and the apply policy's derivation say, restated from the
/// outside.
pub struct Administrators {
    /// The ARNs of the buckets that declare an expiry.
    expiring: Vec<String>,
    /// The ARNs of the runner roles, whose inline policy the apply role puts.
    runners: Vec<String>,
}

impl Administrators {
    pub fn of(desired: &Path, dir: Option<&Path>, account: &str) -> Administrators {
        let path = dir.map_or_else(|| desired.to_path_buf(), |dir| dir.join(desired));
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let Ok(parsed) = reconcile_cli::parse_desired(&path, &text) else {
            return Administrators { expiring: Vec::new(), runners: Vec::new() };
        };
        let runners = reconcile_iam::declared(&parsed)
            .roles
            .iter()
            .map(|role| format!("arn:aws:iam::{account}:role/{}", role.name))
            .collect();
        let expiring = reconcile_s3::declared(&parsed)
            .buckets
            .iter()
            .filter(|bucket| bucket.lifecycle_rules.is_some())
            .map(|bucket| format!("arn:aws:s3:::{}", bucket.name.render(account, &parsed.region)))
            .collect();
        Administrators { expiring, runners }
    }

    /// Whether `request` is one of theirs.
    pub fn write(&self, request: &RecordedRequest) -> bool {
        let Some((action, resource)) = permission(request) else { return false };
        match action.as_str() {
            // A destroy's: the bucket, its objects and the runner's project.
            "s3:PutLifecycleConfiguration" | "s3:PutBucketAcl" => true,
            "s3:DeleteBucket" | "s3:DeleteObjectVersion" | "codebuild:DeleteProject" | "ecr:DeleteLifecyclePolicy" => {
                true
            }
            // A prune's or a destroy's.
            "ecr:DeleteRepository" => true,
            "s3:CreateBucket" => self.expiring.contains(&resource),
            // The runner's inline policy, put: the apply role's (while the role carries its boundary).
            "iam:PutRolePolicy" => !self.runners.contains(&resource),
            _ => action.starts_with("iam:"),
        }
    }
}

/// What IAM holds for role `name` in `account`: its inline and attached policies (decoded), and
/// its permissions boundary (the managed policy's ARN and document), read as an administrator.
pub async fn live_policies(account: &TestAccount, name: &str) -> (Vec<Value>, Option<(String, Value)>) {
    let iam = aws_sdk_iam::Client::new(&account.sdk_config());
    let document = |text: &str| reconcile_iam::canonical_text(text, "aws");
    let managed = |arn: String| {
        let iam = iam.clone();
        async move {
            let policy = iam.get_policy().policy_arn(&arn).send().await.unwrap().policy.unwrap();
            let version = iam
                .get_policy_version()
                .policy_arn(&arn)
                .version_id(policy.default_version_id().unwrap())
                .send()
                .await
                .unwrap();
            version.policy_version.unwrap().document.unwrap()
        }
    };
    let mut policies = Vec::new();
    for policy in iam.list_role_policies().role_name(name).send().await.unwrap().policy_names() {
        let text = iam.get_role_policy().role_name(name).policy_name(policy).send().await.unwrap().policy_document;
        policies.push(document(&text));
    }
    let attached = iam.list_attached_role_policies().role_name(name).send().await.unwrap();
    for policy in attached.attached_policies() {
        policies.push(document(&managed(policy.policy_arn().unwrap().to_owned()).await));
    }
    let role = iam.get_role().role_name(name).send().await.unwrap().role.unwrap();
    let boundary = match role.permissions_boundary().and_then(|b| b.permissions_boundary_arn()) {
        Some(arn) => Some((arn.to_owned(), document(&managed(arn.to_owned()).await))),
        None => None,
    };
    (policies, boundary)
}

/// A session of role `name` whose every request the emulator first holds to that role's live
/// policies and boundary, with IAM's evaluation (`reconcile_iam::evaluate`: conditions on tags
/// and on the boundary included, a deny winning), refusing what they do not allow as AWS would.
/// The policies are read once, now. Dropping the gate lets the session's requests through again.
pub async fn enforced(account: &TestAccount, name: &str) -> (TestAccount, Gate) {
    let (policies, boundary) = live_policies(account, name).await;
    let boundary = boundary.map(|(_, document)| document);
    let session = account.assume(name).await;
    let caller = format!("arn:aws:sts::{}:assumed-role/{name}/reconcile-test", account.id);
    let gate = Gate::start(move |question: &Question| {
        let principal = Principal { policies: &policies, boundary: boundary.as_ref() };
        let Some((action, resource)) = permission(&question.request) else { return Ok(()) };
        let mut context = Context::new();
        for (key, values) in &question.context {
            let values: Vec<&str> = values.iter().map(String::as_str).collect();
            context = context.with(key, &values);
        }
        let mut needed = vec![(action.clone(), resource.clone(), context.clone())];
        if let Some(role) = &question.passes_role {
            let passed = Context::new().with("iam:PassedToService", &["codebuild.amazonaws.com"]);
            needed.push(("iam:PassRole".to_owned(), role.clone(), passed));
        }
        // Tags sent with a new repository or bucket are authorized as tagging it too.
        let tagged = question.context.keys().any(|k| k.starts_with("aws:RequestTag/"));
        match action.as_str() {
            "ecr:CreateRepository" if tagged => {
                needed.push(("ecr:TagResource".to_owned(), resource.clone(), context.clone()));
            }
            "s3:CreateBucket" if tagged => {
                needed.push(("s3:TagResource".to_owned(), resource.clone(), context.clone()));
            }
            _ => {}
        }
        for (action, resource, context) in &needed {
            let why = match principal.decide(Request { action, resource, context }) {
                Decision::Allowed => continue,
                Decision::Denied => "with an explicit deny in an identity-based policy",
                Decision::NotAllowed
                    if boundary.is_some()
                        && Principal { policies: &policies, boundary: None }.allows(Request {
                            action,
                            resource,
                            context,
                        }) =>
                {
                    "because no permissions boundary allows the action"
                }
                Decision::NotAllowed => "because no identity-based policy allows the action",
            };
            return Err(format!("User: {caller} is not authorized to perform: {action} on resource: {resource} {why}"));
        }
        Ok(())
    });
    gate.hold(&session);
    (session, gate)
}
