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
    /// Why pages were left unread, when some were.
    pub unread: Option<String>,
}

/// The largest amount (dollars, or minutes) a day's group is believed to hold: a number past it
/// (or not a number) is a fault, and summed it would make every figure infinite.
const MAX_AMOUNT: f64 = 1e12;

/// The most pages `--verify` reads: $0.50 of requests. A month of one service's daily costs by
/// usage type is a page or two.
pub const MAX_PAGES: usize = 50;

/// CodeBuild's cost and usage from `start` to `end` (`YYYY-MM-DD`, end exclusive): one request,
/// or every page with `all_pages`.
pub async fn billed(client: &ce::Client, start: &str, end: &str, all_pages: bool) -> Result<Billed, ReconcileError> {
    let mut billed = Billed::default();
    let mut token: Option<String> = None;
    let mut pages = reconcile_core::pages::Pages::new(if all_pages { MAX_PAGES } else { 1 });
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
                        .filter(|a| a.abs() <= MAX_AMOUNT)
                        .unwrap_or(0.0)
                };
                let entry = billed.by_usage_type.entry(usage_type.clone()).or_insert((0.0, 0.0));
                entry.0 += amount("UnblendedCost");
                entry.1 += amount("UsageQuantity");
            }
        }
        match pages.next(answer.next_page_token()) {
            Ok(Some(next)) => token = Some(next),
            Ok(None) => break,
            Err(_) if !all_pages => {
                billed.unread = Some("--verify reads them all".to_owned());
                break;
            }
            Err(stop) => {
                billed.unread = Some(stop.to_string().replace("the service", "Cost Explorer"));
                break;
            }
        }
    }
    Ok(billed)
}
