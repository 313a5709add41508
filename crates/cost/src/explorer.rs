//! Whether the bill agrees with a rate: Cost Explorer's `GetCostAndUsage`, daily, grouped by
//! usage type, for CodeBuild; what was billed divided by how many minutes, per usage type. Its
//! data lags (recent days are estimates, refreshed up to three times a day), so only days at
//! least two days old are asked. Each request (each page) costs $0.01.

use std::collections::BTreeMap;

use aws_sdk_costexplorer as ce;
use aws_sdk_costexplorer::types::{
    DateInterval, Dimension, DimensionValues, Expression, Granularity, GroupDefinition, GroupDefinitionType,
};
use reconcile_aws::failed;
use reconcile_core::ReconcileError;

/// What Cost Explorer bills one request.
pub const USD_PER_REQUEST: f64 = 0.01;

/// Cost Explorer's name for CodeBuild in the `SERVICE` dimension.
pub const SERVICE: &str = "AWS CodeBuild";

/// Billed cost and quantity, summed over the days asked, by usage type.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Billed {
    pub by_usage_type: BTreeMap<String, (f64, f64)>,
    /// Requests made (each one billed).
    pub requests: usize,
    /// Whether there were more pages than were read.
    pub truncated: bool,
}

/// CodeBuild's cost and usage from `start` to `end` (`YYYY-MM-DD`, end exclusive): one request,
/// or every page with `all_pages`.
pub async fn billed(client: &ce::Client, start: &str, end: &str, all_pages: bool) -> Result<Billed, ReconcileError> {
    let mut billed = Billed::default();
    let mut token: Option<String> = None;
    loop {
        let period = DateInterval::builder()
            .start(start)
            .end(end)
            .build()
            .map_err(|e| ReconcileError::new(None, "build the Cost Explorer request", e.to_string()))?;
        let answer = client
            .get_cost_and_usage()
            .time_period(period)
            .granularity(Granularity::Daily)
            .metrics("UnblendedCost")
            .metrics("UsageQuantity")
            .group_by(GroupDefinition::builder().r#type(GroupDefinitionType::Dimension).key("USAGE_TYPE").build())
            .filter(
                Expression::builder()
                    .dimensions(DimensionValues::builder().key(Dimension::Service).values(SERVICE).build())
                    .build(),
            )
            .set_next_page_token(token.take())
            .send()
            .await
            .map_err(failed(None, "read CodeBuild's bill from Cost Explorer"))?;
        billed.requests += 1;
        for day in answer.results_by_time() {
            for group in day.groups() {
                let Some(usage_type) = group.keys().first() else { continue };
                let amount = |metric: &str| {
                    group
                        .metrics()
                        .and_then(|m| m.get(metric))
                        .and_then(|v| v.amount())
                        .and_then(|a| a.parse::<f64>().ok())
                        .filter(|a| a.is_finite())
                        .unwrap_or(0.0)
                };
                let entry = billed.by_usage_type.entry(usage_type.clone()).or_insert((0.0, 0.0));
                entry.0 += amount("UnblendedCost");
                entry.1 += amount("UsageQuantity");
            }
        }
        token = answer.next_page_token().map(str::to_owned);
        if token.is_none() {
            break;
        }
        if !all_pages {
            billed.truncated = true;
            break;
        }
    }
    Ok(billed)
}
