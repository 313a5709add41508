//! Who made the drift (`drift`, `plan --attribute`): each change, and each finding about a
//! resource, attributed from CloudTrail's event history by `reconcile_trail`, into the plan.

use reconcile_core::plan::{Attribution, Finding, Severity};
use reconcile_core::{Desired, ErrorKind};
use reconcile_trail::{DELIVERY_NOTE, Target, Trail};

use crate::aws::Aws;
use crate::catalog::CATALOG;
use crate::session::Planned;

/// Attributes what `planned` found to the last `days` of CloudTrail events. Never fails the
/// run: without permission it says so once (E106); any other failure is each attribution's.
pub async fn attribute(aws: &Aws, planned: &mut Planned, desired: &Desired, days: u32) {
    let plan = &mut planned.plan;
    // What could explain each difference: a change's fields, a finding's code. One target per
    // address, with every event either suggests.
    let mut wanted: std::collections::BTreeMap<reconcile_core::Address, Vec<&'static str>> = Default::default();
    for change in &plan.changes {
        wanted.entry(change.address.clone()).or_default().extend(reconcile_trail::events_for_change(&CATALOG, change));
    }
    // A `W` finding is about desired.toml or the bake file, which no call to AWS made.
    for finding in plan.findings.iter().filter(|finding| !finding.code.starts_with('W')) {
        if let Some(address) = &finding.address {
            wanted.entry(address.clone()).or_default().extend(reconcile_trail::events_for_finding(
                &CATALOG,
                &finding.code,
                address.kind,
            ));
        }
    }
    let targets: Vec<Target> = wanted
        .into_iter()
        .filter(|(address, _)| CATALOG.trail(address.kind).is_some())
        .map(|(address, mut events)| {
            events.sort_unstable();
            events.dedup();
            // A member (an undeclared inline policy) is named by the resource it belongs to.
            let name = planned
                .resources
                .get(&address.declared())
                .map_or_else(|| address.name.clone(), |r| r.remote_name.clone());
            Target { address, name, events }
        })
        .collect();
    if targets.is_empty() {
        return;
    }
    let region = planned.account.region.clone();
    let trail = Trail {
        regional: aws.cloudtrail(&region),
        global: (region != "us-east-1").then(|| aws.cloudtrail("us-east-1")),
        account: planned.account.clone(),
        catalog: CATALOG,
        caller: aws.caller_arn().await.ok(),
        own_roles: reconcile_iam::declared_ci(desired)
            .iter()
            .filter_map(|ci| ci.role(reconcile_iam::CiPurpose::Apply))
            .map(|role| role.name.clone())
            .collect(),
    };
    let now = reconcile_core::time::now();
    match trail.attribute(&targets, days, now).await {
        Ok(attributions) => {
            plan.attributions = attributions;
            plan.attribution_note = Some(format!(
                "Attributed from the last {days} days of CloudTrail's event history (IAM's in us-east-1). {DELIVERY_NOTE}"
            ));
        }
        Err(error) if error.kind == ErrorKind::AccessDenied => plan.findings.push(Finding {
            code: reconcile_trail::LOOKUP_DENIED.to_owned(),
            severity: Severity::Warning,
            address: None,
            message: "these credentials may not look up CloudTrail events (cloudtrail:LookupEvents), so who made the \
                      drift is not said"
                .to_owned(),
            overridden_by: None,
        }),
        Err(error) => {
            let why = format!("the lookup failed: {error}");
            plan.attributions = targets.into_iter().map(|t| (t.address, Attribution::Unknown(why.clone()))).collect();
        }
    }
    tracing::info!("attribution: {}", aws.requests());
}
