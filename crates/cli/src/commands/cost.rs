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
    let mut found = if usage_types.is_empty() {
        Vec::new()
    } else {
        match rates::price_list(&aws.pricing(), &usage_types).await {
            Ok(found) => found,
            Err(error) if error.kind == ErrorKind::AccessDenied => {
                unread.push("the Price List (pricing:GetProducts)".to_owned());
                Vec::new()
            }
            Err(error) => return Err(fail(error)),
        }
    };
    // A usage type the Price List did not answer for takes the last known rate, if any.
    let missing: Vec<Rate> = usage_types
        .iter()
        .filter(|u| !found.iter().any(|r| &r.usage_type == *u))
        .filter_map(|u| rates::known(u))
        .collect();
    found.extend(missing);

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
    let cloudwatch = aws.cloudwatch();
    let mut bucket: BTreeMap<String, BTreeMap<i64, u64>> = BTreeMap::new();
    for declared in &reconcile_s3::declared(desired).buckets {
        let name = declared.name.render(&account.id, &account.region);
        match reconcile_s3::storage::daily_bytes(&cloudwatch, &name, first, today + DAY).await {
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
            Err(error) => return Err(fail(error)),
        }
    }
    let mut findings = Vec::new();
    if !unread.is_empty() {
        unread.dedup();
        findings.push(Finding {
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
        });
    }
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
        registry_price: desired.price_per_gb_month,
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
