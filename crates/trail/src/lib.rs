//! Who changed it: each drifted resource (and each one a finding is about) attributed to the
//! most recent CloudTrail management event that could have made the drift.
//!
//! `LookupEvents` takes one lookup attribute a call, so events are looked up by name ([`EVENTS`],
//! the one table of which events can change which kind of resource, from each service's API
//! reference) and matched to resources by their `requestParameters` here: ECR and CodeBuild
//! resources are not reliably in the `ResourceName` index. IAM is global and its events are
//! kept in us-east-1. Requests are paced to CloudTrail's 2 a second per account and region (the
//! SDK's adaptive retry absorbs a throttled answer), 50 events a page, and the whole lookup is
//! bounded: what could not be looked up is said, never guessed. Read only.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use aws_sdk_cloudtrail as cloudtrail;
use aws_sdk_cloudtrail::types::{LookupAttribute, LookupAttributeKey};
use aws_smithy_types::DateTime;
use reconcile_aws::failed;
use reconcile_core::plan::{Attribution, ChangeEvent};
use reconcile_core::{Address, ReconcileError, ResourceKind};
use serde_json::Value;

/// Finding code: these credentials may not look up CloudTrail events, so drift is not
/// attributed. Stable.
pub const LOOKUP_DENIED: &str = "E106";

/// What CloudTrail keeps in its event history, in days.
pub const MAX_DAYS: u32 = 90;

/// CloudTrail's rate for `LookupEvents` is 2 requests a second per account and region: one every
/// 550 ms, a little under it, so that requests bunched on their way there are not throttled.
pub const PACE: Duration = Duration::from_millis(550);

/// The most events one `LookupEvents` answers.
pub const PAGE: i32 = 50;

/// How long the whole lookup may take.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// What reconcile's own requests carry in their user agent (`AppName`, set on every client).
pub const USER_AGENT_MARK: &str = "app/reconcile";

/// CloudTrail's delivery delay, said with every attribution.
pub const DELIVERY_NOTE: &str = "CloudTrail delivers an event about 5 minutes (at most 15) after the call: a change made \
     in the last 15 minutes may not be attributed yet.";

/// Which management events can change a resource of each kind: the one table, from the API
/// references of ECR, S3, IAM and CodeBuild (S3's as CloudTrail names them:
/// `PutBucketLifecycle` for `PutBucketLifecycleConfiguration`, `PutBucketPublicAccessBlock` for
/// `PutPublicAccessBlock`).
pub const EVENTS: &[(ResourceKind, &[&str])] = &[
    (
        ResourceKind::EcrRepository,
        &[
            "CreateRepository",
            "DeleteRepository",
            "PutImageTagMutability",
            "PutImageScanningConfiguration",
            "SetRepositoryPolicy",
            "DeleteRepositoryPolicy",
            "TagResource",
            "UntagResource",
        ],
    ),
    (ResourceKind::EcrLifecyclePolicy, &["PutLifecyclePolicy", "DeleteLifecyclePolicy"]),
    (
        ResourceKind::S3Bucket,
        &[
            "CreateBucket",
            "DeleteBucket",
            "PutBucketPolicy",
            "DeleteBucketPolicy",
            "PutBucketAcl",
            "PutBucketVersioning",
            "PutBucketPublicAccessBlock",
            "DeleteBucketPublicAccessBlock",
            "PutBucketEncryption",
            "DeleteBucketEncryption",
            "PutBucketOwnershipControls",
            "DeleteBucketOwnershipControls",
            "PutBucketTagging",
            "DeleteBucketTagging",
            "PutBucketReplication",
            "DeleteBucketReplication",
            "PutBucketWebsite",
            "DeleteBucketWebsite",
            "PutBucketLogging",
        ],
    ),
    (ResourceKind::S3BucketLifecycle, &["PutBucketLifecycle", "DeleteBucketLifecycle"]),
    (
        ResourceKind::IamRoleBoundary,
        &[
            "CreatePolicy",
            "CreatePolicyVersion",
            "SetDefaultPolicyVersion",
            "DeletePolicyVersion",
            "DeletePolicy",
            "TagPolicy",
            "UntagPolicy",
        ],
    ),
    (ResourceKind::IamRole, ROLE_EVENTS),
    (ResourceKind::IamCiRole, ROLE_EVENTS),
    (ResourceKind::IamRolePolicy, &["PutRolePolicy", "DeleteRolePolicy"]),
    (ResourceKind::IamCiRolePolicy, &["PutRolePolicy", "DeleteRolePolicy"]),
    (
        ResourceKind::IamOidcProvider,
        &[
            "CreateOpenIDConnectProvider",
            "DeleteOpenIDConnectProvider",
            "AddClientIDToOpenIDConnectProvider",
            "RemoveClientIDFromOpenIDConnectProvider",
            "UpdateOpenIDConnectProviderThumbprint",
            "TagOpenIDConnectProvider",
            "UntagOpenIDConnectProvider",
        ],
    ),
    (ResourceKind::CodebuildProject, &["CreateProject", "UpdateProject", "UpdateProjectVisibility", "DeleteProject"]),
    (ResourceKind::CodebuildWebhook, &["CreateWebhook", "UpdateWebhook", "DeleteWebhook"]),
];

const ROLE_EVENTS: &[&str] = &[
    "CreateRole",
    "DeleteRole",
    "UpdateRole",
    "UpdateRoleDescription",
    "UpdateAssumeRolePolicy",
    "TagRole",
    "UntagRole",
    "PutRolePermissionsBoundary",
    "DeleteRolePermissionsBoundary",
    "AttachRolePolicy",
    "DetachRolePolicy",
];

/// The events that can change a resource of `kind`; none for kinds CloudTrail does not see
/// (GitHub's).
pub fn events(kind: ResourceKind) -> &'static [&'static str] {
    EVENTS.iter().find(|(k, _)| *k == kind).map_or(&[], |(_, events)| events)
}

/// Which events can have changed one field of a resource of `kind` (the field names of the
/// resource crates' specs); `None` for a field this table does not narrow (every event of the
/// kind is looked up then).
fn field_events(kind: ResourceKind, field: &str) -> Option<&'static [&'static str]> {
    use ResourceKind as K;
    Some(match (kind, field) {
        (K::EcrRepository, "image_tag_mutability") => &["PutImageTagMutability"],
        (K::EcrRepository, "scan_on_push") => &["PutImageScanningConfiguration"],
        (K::EcrRepository, "tags") => &["TagResource", "UntagResource"],
        (K::EcrRepository, "repository_policy") => &["SetRepositoryPolicy", "DeleteRepositoryPolicy"],
        (K::EcrLifecyclePolicy, "policy") => &["PutLifecyclePolicy"],
        (K::S3Bucket, "block_public_access") => &["PutBucketPublicAccessBlock", "DeleteBucketPublicAccessBlock"],
        (K::S3Bucket, "encryption") => &["PutBucketEncryption", "DeleteBucketEncryption"],
        (K::S3Bucket, "tags") => &["PutBucketTagging", "DeleteBucketTagging"],
        (K::S3Bucket, "policy") => &["PutBucketPolicy", "DeleteBucketPolicy"],
        (K::S3Bucket, "object_ownership") => &["PutBucketOwnershipControls", "DeleteBucketOwnershipControls"],
        (K::S3Bucket, "acl_grants") => &["PutBucketAcl"],
        (K::S3Bucket, "versioning") => &["PutBucketVersioning"],
        (K::S3Bucket, "replication") => &["PutBucketReplication", "DeleteBucketReplication"],
        (K::S3Bucket, "website") => &["PutBucketWebsite", "DeleteBucketWebsite"],
        (K::S3Bucket, "access_logging") => &["PutBucketLogging"],
        (K::S3BucketLifecycle, _) => &["PutBucketLifecycle", "DeleteBucketLifecycle"],
        (K::IamRole | K::IamCiRole, "assume_role_policy") => &["UpdateAssumeRolePolicy"],
        (K::IamRole | K::IamCiRole, "description") => &["UpdateRole", "UpdateRoleDescription"],
        (K::IamRole | K::IamCiRole, "max_session_duration") => &["UpdateRole"],
        (K::IamRole | K::IamCiRole, "tags") => &["TagRole", "UntagRole"],
        (K::IamRole | K::IamCiRole, "permissions_boundary") => {
            &["PutRolePermissionsBoundary", "DeleteRolePermissionsBoundary"]
        }
        (K::IamRolePolicy | K::IamCiRolePolicy, _) => &["PutRolePolicy"],
        (K::IamRoleBoundary, "document") => &["CreatePolicyVersion", "SetDefaultPolicyVersion"],
        (K::IamRoleBoundary, "tags") => &["TagPolicy", "UntagPolicy"],
        (K::IamOidcProvider, "client_ids") => {
            &["AddClientIDToOpenIDConnectProvider", "RemoveClientIDFromOpenIDConnectProvider"]
        }
        (K::IamOidcProvider, "tags") => &["TagOpenIDConnectProvider", "UntagOpenIDConnectProvider"],
        (K::CodebuildProject, "project_visibility") => &["UpdateProjectVisibility"],
        (K::CodebuildProject, _) => &["UpdateProject"],
        (K::CodebuildWebhook, _) => &["UpdateWebhook", "CreateWebhook"],
        _ => return None,
    })
}

/// The events of `kind` that remove a resource: what a plan that creates it again looks for.
fn removals(kind: ResourceKind) -> &'static [&'static str] {
    use ResourceKind as K;
    match kind {
        K::EcrRepository => &["DeleteRepository"],
        K::EcrLifecyclePolicy => &["DeleteLifecyclePolicy"],
        K::S3Bucket => &["DeleteBucket"],
        K::S3BucketLifecycle => &["DeleteBucketLifecycle"],
        K::IamRole | K::IamCiRole => &["DeleteRole"],
        K::IamRolePolicy | K::IamCiRolePolicy => &["DeleteRolePolicy"],
        K::IamOidcProvider => &["DeleteOpenIDConnectProvider"],
        K::IamRoleBoundary => &["DeletePolicy"],
        K::CodebuildProject => &["DeleteProject"],
        K::CodebuildWebhook => &["DeleteWebhook"],
        _ => &[],
    }
}

/// The events that could have made `change` necessary: for a resource gone, what removes one;
/// for one that differs, what sets the fields that differ; for one that should not be there,
/// what makes one.
pub fn events_for_change(change: &reconcile_core::Change) -> Vec<&'static str> {
    use reconcile_core::Action;
    let kind = change.address.kind;
    let mut found: Vec<&'static str> = match change.action {
        Action::Create => removals(kind).to_vec(),
        Action::Delete => {
            events(kind).iter().copied().filter(|e| e.starts_with("Create") || e.starts_with("Put")).collect()
        }
        Action::Update | Action::Replace => {
            let mut found = Vec::new();
            for field in change.field_changes() {
                match field_events(kind, field.name) {
                    Some(events) => found.extend_from_slice(events),
                    None => return events(kind).to_vec(),
                }
            }
            found
        }
    };
    if found.is_empty() {
        found = events(kind).to_vec();
    }
    found.sort_unstable();
    found.dedup();
    found
}

/// The events that could have made what a finding about a resource says: by its code where the
/// code says which (an attached policy, a repository or bucket policy, a lifecycle rule, a
/// trust), every event of the resource's kind otherwise.
pub fn events_for_finding(code: &str, kind: ResourceKind) -> Vec<&'static str> {
    let narrowed: &[&str] = match code {
        "S101" => &["AttachRolePolicy"],
        "S102" => &["SetRepositoryPolicy"],
        "S103" => &["PutBucketPolicy", "PutBucketAcl"],
        "S104" | "D108" => &["UpdateAssumeRolePolicy"],
        "D101" | "D102" => &["CreateRepository"],
        "D103" => &["PutLifecyclePolicy"],
        _ => events(kind),
    };
    narrowed.to_vec()
}

/// Whether `kind`'s events are IAM's, which CloudTrail keeps in us-east-1.
fn global(kind: ResourceKind) -> bool {
    matches!(
        kind,
        ResourceKind::IamRoleBoundary
            | ResourceKind::IamRole
            | ResourceKind::IamCiRole
            | ResourceKind::IamRolePolicy
            | ResourceKind::IamCiRolePolicy
            | ResourceKind::IamOidcProvider
    )
}

/// Whether an event's `requestParameters` name the resource `name` of `kind`.
pub fn names(kind: ResourceKind, name: &str, parameters: &Value) -> bool {
    let text = |key: &str| parameters.get(key).and_then(Value::as_str);
    let is = |key: &str| text(key) == Some(name);
    let ends = |key: &str, suffix: &str| text(key).is_some_and(|v| v.ends_with(suffix));
    match kind {
        ResourceKind::EcrRepository | ResourceKind::EcrLifecyclePolicy => {
            is("repositoryName") || ends("resourceArn", &format!(":repository/{name}"))
        }
        ResourceKind::S3Bucket | ResourceKind::S3BucketLifecycle => is("bucketName"),
        ResourceKind::IamRole
        | ResourceKind::IamCiRole
        | ResourceKind::IamRolePolicy
        | ResourceKind::IamCiRolePolicy => is("roleName"),
        // Named by its ARN.
        ResourceKind::IamRoleBoundary => {
            is("policyArn") || text("policyName").is_some_and(|policy| name.ends_with(&format!(":policy/{policy}")))
        }
        ResourceKind::IamOidcProvider => {
            is("openIDConnectProviderArn")
                || name
                    .rsplit_once("oidc-provider/")
                    .is_some_and(|(_, host)| text("url").is_some_and(|url| url.trim_start_matches("https://") == host))
        }
        ResourceKind::CodebuildProject | ResourceKind::CodebuildWebhook => {
            is("name") || is("projectName") || ends("projectArn", &format!(":project/{name}"))
        }
        _ => false,
    }
}

/// A resource to attribute: its address, the name AWS knows it by, and the events that could
/// explain what was found ([`events_for_change`], [`events_for_finding`]).
#[derive(Debug, Clone)]
pub struct Target {
    pub address: Address,
    pub name: String,
    pub events: Vec<&'static str>,
}

/// Where to look: the region's history, and us-east-1's for IAM (the same client when the
/// region is us-east-1).
pub struct Trail {
    pub regional: cloudtrail::Client,
    pub global: Option<cloudtrail::Client>,
    /// Roles whose sessions are reconcile's own applies (the CI apply role).
    pub own_roles: Vec<String>,
}

/// Spaces one region's requests `PACE` apart.
struct Pacer {
    next: tokio::sync::Mutex<Instant>,
}

impl Pacer {
    fn new() -> Pacer {
        Pacer { next: tokio::sync::Mutex::new(Instant::now()) }
    }

    async fn wait(&self) {
        let mut next = self.next.lock().await;
        let now = Instant::now();
        if *next > now {
            tokio::time::sleep(*next - now).await;
        }
        *next = Instant::now().max(*next) + PACE;
    }
}

impl Trail {
    /// The attribution of each target: the newest event of its kind naming it within the last
    /// `days`, or that there is none, or why it could not be told. `Err` only for what makes
    /// every lookup fail alike (no permission), which the caller reports once.
    pub async fn attribute(
        &self,
        targets: &[Target],
        days: u32,
        now: i64,
    ) -> Result<BTreeMap<Address, Attribution>, ReconcileError> {
        let days = days.clamp(1, MAX_DAYS);
        let started = Instant::now();
        let (from, to) = (now - i64::from(days) * 86_400, now + 60);
        // By (global history?, event name): the targets it could explain.
        let mut wanted: BTreeMap<(bool, &str), Vec<&Target>> = BTreeMap::new();
        for target in targets {
            for event in &target.events {
                let global = global(target.address.kind) && self.global.is_some();
                wanted.entry((global, event)).or_default().push(target);
            }
        }
        let pacers = (Pacer::new(), Pacer::new());
        let mut newest: BTreeMap<&Address, ChangeEvent> = BTreeMap::new();
        let mut unfinished: BTreeMap<&Address, String> = BTreeMap::new();
        for ((global, event), group) in &wanted {
            let (client, pacer) = match (global, &self.global) {
                (true, Some(client)) => (client, &pacers.1),
                _ => (&self.regional, &pacers.0),
            };
            let mut open: Vec<&Target> = group.clone();
            let mut token: Option<String> = None;
            loop {
                let Some(left) = DEADLINE.checked_sub(started.elapsed()) else {
                    for target in &open {
                        unfinished.insert(
                            &target.address,
                            format!("the lookup of `{event}` events did not finish within {} s", DEADLINE.as_secs()),
                        );
                    }
                    break;
                };
                pacer.wait().await;
                let attribute = LookupAttribute::builder()
                    .attribute_key(LookupAttributeKey::EventName)
                    .attribute_value(*event)
                    .build()
                    .map_err(|e| ReconcileError::new(None, "build a CloudTrail lookup", e.to_string()))?;
                let request = client
                    .lookup_events()
                    .lookup_attributes(attribute)
                    .start_time(DateTime::from_secs(from))
                    .end_time(DateTime::from_secs(to))
                    .max_results(PAGE)
                    .set_next_token(token.clone())
                    .send();
                let page = match tokio::time::timeout(left, request).await {
                    Ok(page) => page.map_err(failed(None, "look up CloudTrail events"))?,
                    Err(_) => {
                        for target in &open {
                            unfinished.insert(
                                &target.address,
                                format!(
                                    "the lookup of `{event}` events did not finish within {} s",
                                    DEADLINE.as_secs()
                                ),
                            );
                        }
                        break;
                    }
                };
                for found in page.events() {
                    let Some(record) =
                        found.cloud_trail_event().and_then(|text| serde_json::from_str::<Value>(text).ok())
                    else {
                        continue;
                    };
                    let parameters = &record["requestParameters"];
                    open.retain(|target| {
                        // A member (an inline policy the role should not have) by its own name too.
                        let member = target.address.member.as_deref();
                        if !names(target.address.kind, &target.name, parameters)
                            || member.is_some_and(|m| parameters.get("policyName").and_then(Value::as_str) != Some(m))
                        {
                            return true;
                        }
                        let candidate =
                            change_event(&record, found.event_time().map_or(0, DateTime::secs), &self.own_roles);
                        // Newest first within a name: the first match is this name's newest.
                        match newest.get(&target.address) {
                            Some(known) if known.at >= candidate.at => {}
                            _ => {
                                newest.insert(&target.address, candidate);
                            }
                        }
                        false
                    });
                }
                token = page.next_token().map(str::to_owned);
                if open.is_empty() || token.is_none() {
                    break;
                }
            }
        }
        Ok(targets
            .iter()
            .map(|target| {
                let attribution = match (unfinished.get(&target.address), newest.get(&target.address)) {
                    (Some(why), _) => Attribution::Unknown(why.clone()),
                    (None, Some(event)) => Attribution::Event(event.clone()),
                    (None, None) if target.events.is_empty() => {
                        Attribution::Unknown("CloudTrail does not record changes to it".to_owned())
                    }
                    (None, None) => Attribution::NoneFound { days },
                };
                (target.address.clone(), attribution)
            })
            .collect())
    }
}

/// A CloudTrail record as the change event it tells of.
fn change_event(record: &Value, at: i64, own_roles: &[String]) -> ChangeEvent {
    let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
    let identity = &record["userIdentity"];
    let principal = text(&identity["arn"]);
    let (role, session) = match principal.split_once(":assumed-role/").and_then(|(_, rest)| rest.split_once('/')) {
        Some((role, session)) => (Some(role.to_owned()), Some(session.to_owned())),
        None => (None, None),
    };
    let user_agent = text(&record["userAgent"]);
    let by_reconcile =
        user_agent.contains(USER_AGENT_MARK) || role.as_ref().is_some_and(|role| own_roles.contains(role));
    ChangeEvent {
        event: text(&record["eventName"]),
        at,
        principal,
        role,
        session,
        source_ip: text(&record["sourceIPAddress"]),
        user_agent,
        event_id: text(&record["eventID"]),
        by_reconcile,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_managed_aws_kind_has_its_events_and_github_has_none() {
        for kind in ResourceKind::ALL {
            let aws = !kind.as_str().starts_with("github_");
            assert_eq!(!events(kind).is_empty(), aws, "{kind}");
        }
    }

    #[test]
    fn events_are_matched_to_resources_by_their_request_parameters() {
        let ecr = json!({ "repositoryName": "pytorch" });
        assert!(names(ResourceKind::EcrLifecyclePolicy, "pytorch", &ecr));
        assert!(!names(ResourceKind::EcrLifecyclePolicy, "pytorch-cache", &ecr));
        let tagged = json!({ "resourceArn": "arn:aws:ecr:us-east-1:1:repository/pytorch" });
        assert!(names(ResourceKind::EcrRepository, "pytorch", &tagged));
        assert!(!names(ResourceKind::EcrRepository, "torch", &tagged));
        assert!(names(ResourceKind::S3Bucket, "b", &json!({ "bucketName": "b", "policy": "" })));
        assert!(names(ResourceKind::IamRolePolicy, "r", &json!({ "roleName": "r", "policyName": "p" })));
        assert!(names(ResourceKind::CodebuildProject, "rocm-bake", &json!({ "name": "rocm-bake" })));
        assert!(names(ResourceKind::CodebuildWebhook, "rocm-bake", &json!({ "projectName": "rocm-bake" })));
        let provider = "arn:aws:iam::1:oidc-provider/token.actions.githubusercontent.com";
        assert!(names(
            ResourceKind::IamOidcProvider,
            provider,
            &json!({ "url": "https://token.actions.githubusercontent.com" })
        ));
        assert!(!names(ResourceKind::GithubVariable, "X", &json!({ "name": "X" })));
    }

    #[test]
    fn a_role_session_is_resolved_and_reconciles_own_calls_are_recognised() {
        let record = json!({
            "eventName": "PutLifecyclePolicy",
            "userIdentity": { "arn": "arn:aws:sts::1:assumed-role/someone/laptop" },
            "sourceIPAddress": "203.0.113.7",
            "userAgent": "aws-cli/2.15",
            "eventID": "e-1",
        });
        let event = change_event(&record, 10, &[]);
        assert_eq!((event.role.as_deref(), event.session.as_deref()), (Some("someone"), Some("laptop")));
        assert!(!event.by_reconcile);
        assert!(change_event(&record, 10, &["someone".to_owned()]).by_reconcile);
        let ours = json!({ "userAgent": "aws-sdk-rust/1 ua/2.1 app/reconcile", "userIdentity": { "arn": "arn:aws:iam::1:user/u" } });
        assert!(change_event(&ours, 10, &[]).by_reconcile);
    }
}
