//! Who changed it: each drifted resource (and each one a finding is about) attributed to the
//! most recent CloudTrail management event that could have made the drift.
//!
//! What CloudTrail records of each kind is its crate's to say (`reconcile_core::describe::
//! KindTrail`: the events that change it, which set which field, which remove it, which explain a
//! finding, whether they are global, how its parameters name it, how the `ResourceName` index
//! holds it); this crate looks them up. `LookupEvents` takes one lookup attribute a call. A
//! resource is looked up by its own name first where CloudTrail's `ResourceName` index holds its
//! events, so noise about anything else cannot stand before them; then, where the index may lack
//! it, by event name. Either way an event counts only when it succeeded (a failed call changed
//! nothing) and names the resource in this account and region ([`names`]). Reconcile's own
//! changes are known by who made them, the user agent only a hint. IAM is global and its events
//! are kept in us-east-1.
//! Requests are paced to CloudTrail's 2 a second per account and region (the SDK's adaptive
//! retry absorbs a throttled answer), 50 events a page, and the whole lookup is bounded in time
//! and pages: what could not be looked up is said, never guessed. Read only.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use aws_sdk_cloudtrail as cloudtrail;
use aws_sdk_cloudtrail::types::{LookupAttribute, LookupAttributeKey};
use aws_smithy_types::DateTime;
use reconcile_aws::failed;
use reconcile_core::describe::{Catalog, Index, KindTrail};
use reconcile_core::plan::{Attribution, ChangeEvent};
use reconcile_core::{Account, Address, ReconcileError, ResourceKind};
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

/// The events that could have made `change` necessary: for a resource gone, what removes one;
/// for one that differs, what sets the fields that differ; for one that should not be there,
/// what makes one. None for a kind CloudTrail does not see.
pub fn events_for_change(catalog: &Catalog, change: &reconcile_core::Change) -> Vec<&'static str> {
    use reconcile_core::Action;
    let Some(trail) = catalog.trail(change.address.kind) else { return Vec::new() };
    let mut found: Vec<&'static str> = match change.action {
        Action::Create => trail.removals.to_vec(),
        Action::Delete => {
            trail.events.iter().copied().filter(|e| e.starts_with("Create") || e.starts_with("Put")).collect()
        }
        Action::Update | Action::Replace => {
            let mut found = Vec::new();
            let fields = catalog.fields(change.address.kind);
            for field in change.field_changes() {
                match fields.and_then(|fields| fields.get(field.name)).map(|row| row.events).filter(|e| !e.is_empty()) {
                    Some(events) => found.extend_from_slice(events),
                    None => match trail.other_fields {
                        Some(events) => found.extend_from_slice(events),
                        None => return trail.events.to_vec(),
                    },
                }
            }
            found
        }
    };
    if found.is_empty() {
        found = trail.events.to_vec();
    }
    found.sort_unstable();
    found.dedup();
    found
}

/// The events that could have made what a finding about a resource says: by its code where the
/// kind says which (an attached policy, a repository or bucket policy, a lifecycle rule, a
/// trust), every event of the kind otherwise; none for a kind CloudTrail does not see.
pub fn events_for_finding(catalog: &Catalog, code: &str, kind: ResourceKind) -> Vec<&'static str> {
    let Some(trail) = catalog.trail(kind) else { return Vec::new() };
    trail.findings.iter().find(|(c, _)| *c == code).map_or(trail.events, |(_, events)| events).to_vec()
}

/// Whether a CloudTrail record tells of a change that succeeded to the resource `name` of
/// `kind` in `account` (and its region, for a regional kind): the kind's own parameters
/// ([`KindTrail::names`]), in a record of a call that succeeded, in this account and region.
pub fn names(trail: &KindTrail, name: &str, record: &Value, account: &Account) -> bool {
    // A call that failed changed nothing (CloudTrail records it, with `errorCode`).
    if record.get("errorCode").is_some_and(|code| !code.is_null()) {
        return false;
    }
    let text = |key: &str| record.get(key).and_then(Value::as_str);
    if text("recipientAccountId").is_some_and(|id| id != account.id) {
        return false;
    }
    if !trail.global && text("awsRegion").is_some_and(|region| region != account.region) {
        return false;
    }
    (trail.names)(name, &record["requestParameters"], account)
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
    /// This account and region: an event elsewhere is never this resource's.
    pub account: Account,
    /// Every resource crate's description: what CloudTrail records of each kind.
    pub catalog: Catalog,
    /// Roles whose sessions are reconcile's own applies (the CI apply role), by name, in this
    /// account.
    pub own_roles: Vec<String>,
    /// Who runs this check (STS's ARN for the caller): its own earlier calls are reconcile's
    /// when their user agent says so too.
    pub caller: Option<String>,
}

/// The most pages one lookup reads: 5,000 events, more than the 60 seconds allow anyway.
const MAX_PAGES: usize = 100;

/// How many resources are looked up by their own name, a lookup each (about 6 seconds at
/// CloudTrail's pace): a drift of more shares lookups by event name.
const MAX_BY_NAME: usize = 10;

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

/// What the lookups have found so far, and what they could not finish.
struct Found<'t> {
    started: Instant,
    from: i64,
    to: i64,
    newest: BTreeMap<&'t Address, ChangeEvent>,
    unfinished: BTreeMap<&'t Address, String>,
}

impl Trail {
    /// The attribution of each target: the newest successful event of its kind naming it, in
    /// this account (and region), within the last `days`; or that there is none, or why it
    /// could not be told. `Err` only for what makes every lookup fail alike (no permission),
    /// which the caller reports once.
    pub async fn attribute(
        &self,
        targets: &[Target],
        days: u32,
        now: i64,
    ) -> Result<BTreeMap<Address, Attribution>, ReconcileError> {
        let days = days.clamp(1, MAX_DAYS);
        let pacers = (Pacer::new(), Pacer::new());
        let mut found = Found {
            started: Instant::now(),
            from: now - i64::from(days) * 86_400,
            to: now + 60,
            newest: BTreeMap::new(),
            unfinished: BTreeMap::new(),
        };
        let trail = |target: &Target| self.catalog.trail(target.address.kind);
        let is_global = |target: &Target| trail(target).is_some_and(|t| t.global) && self.global.is_some();
        let index = |target: &Target| trail(target).map_or(Index::Absent, |t| t.index);
        // First by the resource's own name, where CloudTrail indexes it: noise about other
        // resources, and failed calls (which name none), never stand before its events. One
        // lookup a resource, so for the first few only; the rest share lookups by event name.
        let by_name: Vec<&Target> =
            targets.iter().filter(|t| index(t) != Index::Absent && !t.events.is_empty()).take(MAX_BY_NAME).collect();
        for target in &by_name {
            let attribute = (LookupAttributeKey::ResourceName, target.name.as_str());
            self.lookup(is_global(target), attribute, vec![target], &pacers, &mut found).await?;
        }
        // Then by event name, for what that did not find where the index may lack it: by (global
        // history?, event name), the targets it could explain.
        let complete = |t: &Target| index(t) == Index::Complete && by_name.iter().any(|n| n.address == t.address);
        let mut wanted: BTreeMap<(bool, &str), Vec<&Target>> = BTreeMap::new();
        for target in targets.iter().filter(|t| !complete(t)) {
            for event in &target.events {
                wanted.entry((is_global(target), event)).or_default().push(target);
            }
        }
        for ((global, event), group) in wanted {
            let open: Vec<&Target> = group
                .into_iter()
                .filter(|t| !found.newest.contains_key(&t.address) && !found.unfinished.contains_key(&t.address))
                .collect();
            if !open.is_empty() {
                self.lookup(global, (LookupAttributeKey::EventName, event), open, &pacers, &mut found).await?;
            }
        }
        Ok(targets
            .iter()
            .map(|target| {
                let attribution = match (found.unfinished.get(&target.address), found.newest.get(&target.address)) {
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

    /// One lookup (`attribute` = value), newest first, page by page until each of `open` has
    /// its newest matching event, the pages end, or the time does: what was not finished is
    /// said for each target still open.
    async fn lookup<'t>(
        &self,
        global: bool,
        (key, value): (LookupAttributeKey, &str),
        mut open: Vec<&'t Target>,
        pacers: &(Pacer, Pacer),
        found: &mut Found<'t>,
    ) -> Result<(), ReconcileError> {
        let (client, pacer) = match (global, &self.global) {
            (true, Some(client)) => (client, &pacers.1),
            _ => (&self.regional, &pacers.0),
        };
        let what = format!(
            "the lookup of {} `{value}`",
            if key == LookupAttributeKey::EventName { "events" } else { "the events of" }
        );
        let mut pages = reconcile_core::pages::Pages::new(MAX_PAGES);
        let mut token: Option<String> = None;
        loop {
            let unfinished = |found: &mut Found<'t>, open: &[&'t Target], why: String| {
                for target in open {
                    found.unfinished.entry(&target.address).or_insert_with(|| why.clone());
                }
            };
            let Some(left) = DEADLINE.checked_sub(found.started.elapsed()) else {
                unfinished(found, &open, format!("{what} did not finish within {} s", DEADLINE.as_secs()));
                return Ok(());
            };
            pacer.wait().await;
            let attribute = LookupAttribute::builder()
                .attribute_key(key.clone())
                .attribute_value(value)
                .build()
                .map_err(|e| ReconcileError::new(None, "build a CloudTrail lookup", e.to_string()))?;
            let request = client
                .lookup_events()
                .lookup_attributes(attribute)
                .start_time(DateTime::from_secs(found.from))
                .end_time(DateTime::from_secs(found.to))
                .max_results(PAGE)
                .set_next_token(token.clone())
                .send();
            let page = match tokio::time::timeout(left, request).await {
                Ok(page) => page.map_err(failed(None, "look up CloudTrail events"))?,
                Err(_) => {
                    unfinished(found, &open, format!("{what} did not finish within {} s", DEADLINE.as_secs()));
                    return Ok(());
                }
            };
            for event in page.events() {
                self.matched(event, &mut open, found);
            }
            if open.is_empty() {
                return Ok(());
            }
            match pages.next(page.next_token()) {
                Ok(Some(next)) => token = Some(next),
                Ok(None) => return Ok(()),
                Err(stop) => {
                    unfinished(found, &open, format!("{what} stopped: {stop}"));
                    return Ok(());
                }
            }
        }
    }

    /// The targets still `open` that `event` tells of a change to are closed, with it as their
    /// newest event (the lookup is newest first).
    fn matched<'t>(&self, event: &aws_sdk_cloudtrail::types::Event, open: &mut Vec<&'t Target>, found: &mut Found<'t>) {
        let Some(record) = event.cloud_trail_event().and_then(|text| serde_json::from_str::<Value>(text).ok()) else {
            return;
        };
        let name = record["eventName"].as_str().unwrap_or_default();
        let parameters = &record["requestParameters"];
        open.retain(|target| {
            // A member (an inline policy the role should not have) by its own name too.
            let member = target.address.member.as_deref();
            let Some(trail) = self.catalog.trail(target.address.kind) else { return true };
            if !target.events.contains(&name)
                || !names(trail, &target.name, &record, &self.account)
                || member.is_some_and(|m| parameters.get("policyName").and_then(Value::as_str) != Some(m))
            {
                return true;
            }
            let candidate = self.change_event(&record, event.event_time().map_or(0, DateTime::secs));
            // Newest first: the first match is the newest.
            match found.newest.get(&target.address) {
                Some(known) if known.at >= candidate.at => {}
                _ => {
                    found.newest.insert(&target.address, candidate);
                }
            }
            false
        });
    }

    /// A CloudTrail record as the change event it tells of. Reconcile's own by who made it:
    /// the apply role of this account, or this run's caller with reconcile's user agent (a user
    /// agent alone is anyone's to write).
    fn change_event(&self, record: &Value, at: i64) -> ChangeEvent {
        let text = |value: &Value| value.as_str().unwrap_or_default().to_owned();
        let identity = &record["userIdentity"];
        let principal = text(&identity["arn"]);
        let assumed = principal.split_once(":assumed-role/").and_then(|(head, rest)| {
            let (role, session) = rest.split_once('/')?;
            Some((head.rsplit(':').next().unwrap_or_default().to_owned(), role.to_owned(), session.to_owned()))
        });
        let user_agent = text(&record["userAgent"]);
        let by_apply_role = assumed
            .as_ref()
            .is_some_and(|(account, role, _)| *account == self.account.id && self.own_roles.contains(role));
        let by_caller = self.caller.as_deref() == Some(principal.as_str()) && user_agent.contains(USER_AGENT_MARK);
        ChangeEvent {
            event: text(&record["eventName"]),
            at,
            principal,
            role: assumed.as_ref().map(|(_, role, _)| role.clone()),
            session: assumed.map(|(_, _, session)| session),
            source_ip: text(&record["sourceIPAddress"]),
            user_agent,
            event_id: text(&record["eventID"]),
            by_reconcile: by_apply_role || by_caller,
        }
    }
}

#[cfg(test)]
mod tests {
    //! The rules every kind shares; each kind's own parameters are tested in its crate.

    use super::*;
    use serde_json::json;

    fn here() -> Account {
        Account::new("123456789012", "us-east-1")
    }

    /// A kind named by `repositoryName`, regional or global.
    fn kind(global: bool) -> KindTrail {
        KindTrail {
            kind: ResourceKind::new("ecr_repository", 300),
            events: &["PutLifecyclePolicy"],
            other_fields: None,
            removals: &[],
            findings: &[],
            global,
            index: Index::Partial,
            names: |name, parameters, _| parameters["repositoryName"] == name,
        }
    }

    /// A successful call in this account and region, with `parameters`.
    fn call(parameters: Value) -> Value {
        json!({ "requestParameters": parameters, "recipientAccountId": "123456789012", "awsRegion": "us-east-1" })
    }

    #[test]
    fn a_failed_call_or_one_elsewhere_never_names_a_resource() {
        let regional = kind(false);
        let mut failed = call(json!({ "repositoryName": "pytorch" }));
        assert!(names(&regional, "pytorch", &failed, &here()));
        assert!(!names(&regional, "pytorch-cache", &failed, &here()));
        failed["errorCode"] = json!("AccessDenied");
        assert!(!names(&regional, "pytorch", &failed, &here()));
        failed["errorCode"] = Value::Null;
        assert!(names(&regional, "pytorch", &failed, &here()), "a null errorCode is success");
        // Another region's resource of the same name, another account's.
        let mut elsewhere = call(json!({ "repositoryName": "pytorch" }));
        elsewhere["awsRegion"] = json!("eu-west-1");
        assert!(!names(&regional, "pytorch", &elsewhere, &here()));
        let mut other_account = call(json!({ "repositoryName": "pytorch" }));
        other_account["recipientAccountId"] = json!("210987654321");
        assert!(!names(&regional, "pytorch", &other_account, &here()));
        // A global kind (IAM's) is named whatever region the call was signed for.
        assert!(names(&kind(true), "pytorch", &elsewhere, &here()));
    }

    #[test]
    fn reconciles_own_calls_are_known_by_who_made_them_never_by_the_user_agent_alone() {
        use aws_sdk_cloudtrail::config::{BehaviorVersion, Credentials, Region};
        let config = cloudtrail::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("AKIDEXAMPLE", "secret", None, None, "test"))
            .build();
        let trail = Trail {
            regional: cloudtrail::Client::from_conf(config),
            global: None,
            account: here(),
            catalog: Catalog(&[]),
            own_roles: vec!["rocm-bake-apply".to_owned()],
            caller: Some("arn:aws:iam::123456789012:user/alice".to_owned()),
        };
        let record = |arn: &str, user_agent: &str| {
            json!({ "eventName": "PutLifecyclePolicy", "userIdentity": { "arn": arn }, "sourceIPAddress": "203.0.113.7",
                    "userAgent": user_agent, "eventID": "e-1" })
        };
        let someone =
            trail.change_event(&record("arn:aws:sts::123456789012:assumed-role/someone/laptop", "aws-cli/2.15"), 10);
        assert_eq!((someone.role.as_deref(), someone.session.as_deref()), (Some("someone"), Some("laptop")));
        assert!(!someone.by_reconcile);
        let apply =
            trail.change_event(&record("arn:aws:sts::123456789012:assumed-role/rocm-bake-apply/run-7", "x"), 10);
        assert!(apply.by_reconcile, "the apply role's session, whatever its user agent");
        let other_account = "arn:aws:sts::210987654321:assumed-role/rocm-bake-apply/run-7";
        assert!(!trail.change_event(&record(other_account, "app/reconcile"), 10).by_reconcile);
        // A user agent is anyone's to write: alone it says nothing.
        let claimed = record("arn:aws:iam::123456789012:user/mallory", "aws-sdk-rust/1 ua/2.1 app/reconcile");
        assert!(!trail.change_event(&claimed, 10).by_reconcile);
        // This run's caller, with reconcile's user agent: an earlier reconcile run of theirs.
        let alice = "arn:aws:iam::123456789012:user/alice";
        assert!(trail.change_event(&record(alice, "aws-sdk-rust/1 app/reconcile"), 10).by_reconcile);
        assert!(!trail.change_event(&record(alice, "aws-cli/2.15"), 10).by_reconcile);
    }
}
