//! `reconcile cost`: what the last nights cost, from what the runner built, what the Price List
//! says a minute costs, what Cost Explorer says was billed, and what the registry and the
//! compiler cache stored. Never writes. The figures are `reconcile_cost`'s.

use std::collections::{BTreeMap, BTreeSet};

use reconcile_core::plan::{Finding, Severity};
use reconcile_core::{Desired, ErrorKind, ReconcileError, json};
use reconcile_cost::explorer::Billed;
use reconcile_cost::rates::{self, Rate};
use reconcile_cost::report;

use crate::args::Format;
use crate::aws::{Aws, Purpose};
use crate::error::CliError;
use crate::exit;
use crate::output::out;
use crate::output::step_summary;

const DAY: i64 = 86_400;

pub async fn run(
    desired: &Desired,
    format: Format,
    days: u32,
    verify: bool,
    limits: crate::aws::Limits,
) -> Result<u8, CliError> {
    let aws = Aws::load(&desired.region, Purpose::Read, limits).await;
    let fail = |error: ReconcileError| aws.failed(vec![error]);
    let account = aws.account().await.map_err(fail)?;
    let now = reconcile_core::time::now();
    let today = now.div_euclid(DAY) * DAY;
    let first = today - DAY * (i64::from(days) - 1);

    let projects: Vec<String> =
        reconcile_codebuild::declared(desired).projects.iter().map(|project| project.name.clone()).collect();
    let builds = crate::costs::runner_builds(&aws, &projects, first).await.map_err(fail)?;

    // What could not be read for want of a permission: said once, in one warning.
    let mut unread: Vec<String> = Vec::new();
    let usage_types: BTreeSet<String> =
        builds.iter().filter_map(|b| rates::usage_type(&desired.region, &b.compute_type)).collect();
    let usage_types: Vec<String> = usage_types.into_iter().collect();
    let found = rates_of(&aws, &usage_types, &mut unread).await.map_err(fail)?;
    // Cost Explorer's data lags: only whole days at least two days old, within the window.
    let end = today - DAY;
    let billed: Option<Billed> = if usage_types.is_empty() || first >= end {
        None
    } else {
        let (start, end) = (reconcile_core::time::day(first), reconcile_core::time::day(end));
        match reconcile_cost::explorer::billed(&aws.cost_explorer(), &start, &end, verify).await {
            Ok(billed) => Some(billed),
            Err(error) if error.kind == ErrorKind::AccessDenied => {
                unread.push("Cost Explorer (ce:GetCostAndUsage)".to_owned());
                None
            }
            Err(error) => return Err(fail(error)),
        }
    };
    let registry = reconcile_ecr::ecr_reconciler(&aws.clients(&account, desired, None, None))
        .stored_images()
        .await
        .map_err(fail)?;
    let bucket = bucket_bytes(&aws, desired, &account, (first, today + DAY), &mut unread).await.map_err(fail)?;
    let findings: Vec<Finding> = unread_finding(unread).into_iter().collect();
    tracing::info!("cost: {}", aws.requests());
    let report = report::report(report::Inputs {
        account: account.id.clone(),
        region: account.region.clone(),
        now,
        days,
        builds,
        rates: found,
        billed,
        registry,
        registry_price: reconcile_ecr::price_per_gb_month(desired),
        bucket,
        findings,
    });
    match format {
        Format::Text => out(&report.text())?,
        Format::Json => out(&format!("{}\n", json::to_pretty(&report.json())))?,
        Format::Markdown => {
            let markdown = report.markdown();
            out(&markdown)?;
            step_summary(&markdown)?;
        }
    }
    Ok(exit::OK)
}

/// The rates of `usage_types`, from the Price List, and the last known rate of one it did not
/// answer for; what it may not read goes in `unread`.
async fn rates_of(aws: &Aws, usage_types: &[String], unread: &mut Vec<String>) -> Result<Vec<Rate>, ReconcileError> {
    let mut found = if usage_types.is_empty() {
        Vec::new()
    } else {
        match rates::price_list(&aws.pricing(), usage_types).await {
            Ok(found) => found,
            Err(error) if error.kind == ErrorKind::AccessDenied => {
                unread.push("the Price List (pricing:GetProducts)".to_owned());
                Vec::new()
            }
            Err(error) => return Err(error),
        }
    };
    let missing: Vec<Rate> = usage_types
        .iter()
        .filter(|u| !found.iter().any(|r| &r.usage_type == *u))
        .filter_map(|u| rates::known(u))
        .collect();
    found.extend(missing);
    Ok(found)
}

/// What the declared buckets stored each day of `[from, to)`, by storage class, from
/// CloudWatch; what it may not read goes in `unread`.
async fn bucket_bytes(
    aws: &Aws,
    desired: &Desired,
    account: &reconcile_core::Account,
    (from, to): (i64, i64),
    unread: &mut Vec<String>,
) -> Result<BTreeMap<String, BTreeMap<i64, u64>>, ReconcileError> {
    let cloudwatch = aws.cloudwatch();
    let mut bucket: BTreeMap<String, BTreeMap<i64, u64>> = BTreeMap::new();
    for declared in &reconcile_s3::declared(desired).buckets {
        let name = declared.name.render(&account.id, &account.region);
        match reconcile_s3::storage::daily_bytes(&cloudwatch, &name, from, to).await {
            Ok(days) => {
                for (storage, by_day) in days {
                    let mine = bucket.entry(storage).or_default();
                    for (day, bytes) in by_day {
                        *mine.entry(day).or_default() += bytes;
                    }
                }
            }
            Err(error) if error.kind == ErrorKind::AccessDenied => {
                unread.push("CloudWatch (cloudwatch:ListMetrics, cloudwatch:GetMetricStatistics)".to_owned());
            }
            Err(error) => return Err(error),
        }
    }
    Ok(bucket)
}

/// The one warning about what these credentials may not read, if anything.
fn unread_finding(mut unread: Vec<String>) -> Option<Finding> {
    if unread.is_empty() {
        return None;
    }
    unread.dedup();
    Some(Finding {
        code: reconcile_cost::RATES_UNREAD.to_owned(),
        severity: Severity::Warning,
        address: None,
        message: format!(
            "these credentials may not read {}: rates are the last known ones ({}, {}), unverified, and what could \
             not be read is left out",
            unread.join(", "),
            rates::KNOWN_AS_OF,
            rates::KNOWN_FROM
        ),
        overridden_by: None,
    })
}
