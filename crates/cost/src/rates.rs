//! CodeBuild's per-minute rates: which usage type a build's compute is billed as, what the
//! Price List API says it costs, and the last rates known without it.

use aws_sdk_pricing as pricing;
use aws_sdk_pricing::types::{Filter, FilterType};
use reconcile_aws::failed;
use reconcile_core::ReconcileError;
use serde_json::Value;

/// The Price List's code for CodeBuild.
pub const SERVICE_CODE: &str = "CodeBuild";

/// Where a rate comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// `pricing:GetProducts`, read now.
    PriceList,
    /// [`KNOWN`], the last rate known in the code: its date and where it was read.
    Known { as_of: &'static str, from: &'static str },
}

/// A per-minute rate of one usage type.
#[derive(Debug, Clone, PartialEq)]
pub struct Rate {
    /// Such as `USE1-Build-Min:Linux:g1.xlarge`.
    pub usage_type: String,
    pub usd_per_minute: f64,
    pub source: Source,
}

/// The last rates known, for when the Price List cannot be read: us-east-1's, as the team's
/// page (Building on AWS) and the Price List gave them on 2026-11-12.
pub const KNOWN: [(&str, f64); 5] = [
    ("USE1-Build-Min:Linux:g1.small", 0.005),
    ("USE1-Build-Min:Linux:g1.medium", 0.01),
    ("USE1-Build-Min:Linux:g1.large", 0.02),
    ("USE1-Build-Min:Linux:g1.xlarge", 0.0798),
    ("USE1-Build-Min:Linux:g1.2xlarge", 0.2),
];

/// When and where [`KNOWN`] was read.
pub const KNOWN_AS_OF: &str = "2026-11-12";
pub const KNOWN_FROM: &str =
    "the Price List API (pricing:GetProducts, us-east-1), as the team's Building on AWS page quotes it";

/// The billing code of a region, which prefixes its usage types (`USE1-`); `None` for a region
/// this table does not know (its builds are then left unpriced, and said so).
pub fn region_code(region: &str) -> Option<&'static str> {
    Some(match region {
        "us-east-1" => "USE1",
        "us-east-2" => "USE2",
        "us-west-1" => "USW1",
        "us-west-2" => "USW2",
        "ca-central-1" => "CAN1",
        "eu-west-1" => "EU",
        "eu-west-2" => "EUW2",
        "eu-west-3" => "EUW3",
        "eu-central-1" => "EUC1",
        "eu-north-1" => "EUN1",
        "ap-northeast-1" => "APN1",
        "ap-northeast-2" => "APN2",
        "ap-southeast-1" => "APS1",
        "ap-southeast-2" => "APS2",
        "ap-south-1" => "APS3",
        "sa-east-1" => "SAE1",
        _ => return None,
    })
}

/// The usage type a build on `compute_type` in `region` is billed as: EC2 compute by the minute
/// (`Build-Min:Linux:g1.<size>`). `None` for compute this table does not know (Lambda, ARM, GPU,
/// a fleet), whose builds are left unpriced and said so.
pub fn usage_type(region: &str, compute_type: &str) -> Option<String> {
    let size = match compute_type {
        "BUILD_GENERAL1_SMALL" => "small",
        "BUILD_GENERAL1_MEDIUM" => "medium",
        "BUILD_GENERAL1_LARGE" => "large",
        "BUILD_GENERAL1_XLARGE" => "xlarge",
        "BUILD_GENERAL1_2XLARGE" => "2xlarge",
        _ => return None,
    };
    Some(format!("{}-Build-Min:Linux:g1.{size}", region_code(region)?))
}

/// The last known rate of `usage_type`, if the code knows one.
pub fn known(usage_type: &str) -> Option<Rate> {
    KNOWN.iter().find(|(known, _)| *known == usage_type).map(|(_, usd)| Rate {
        usage_type: usage_type.to_owned(),
        usd_per_minute: *usd,
        source: Source::Known { as_of: KNOWN_AS_OF, from: KNOWN_FROM },
    })
}

/// The Price List's on-demand rate of each usage type: one `GetProducts` each (the API is
/// served in us-east-1 whatever the account's region). A usage type the Price List has no
/// product for is left out.
pub async fn price_list(client: &pricing::Client, usage_types: &[String]) -> Result<Vec<Rate>, ReconcileError> {
    let mut rates = Vec::new();
    for usage_type in usage_types {
        let filter = Filter::builder()
            .r#type(FilterType::TermMatch)
            .field("usagetype")
            .value(usage_type)
            .build()
            .map_err(|e| ReconcileError::new(None, "build the Price List filter", e.to_string()))?;
        let answer = client
            .get_products()
            .service_code(SERVICE_CODE)
            .filters(filter)
            .format_version("aws_v1")
            .max_results(10)
            .send()
            .await
            .map_err(failed(None, "read CodeBuild's rates from the Price List"))?;
        if let Some(usd) = answer.price_list().iter().find_map(|product| on_demand_usd(product)) {
            rates.push(Rate { usage_type: usage_type.clone(), usd_per_minute: usd, source: Source::PriceList });
        }
    }
    Ok(rates)
}

/// The highest rate believed: CodeBuild's dearest compute (a GPU fleet) is well under $1 a
/// minute, so a Price List answer past this is a fault, not a price, and would make every sum
/// infinite.
const MAX_USD_PER_MINUTE: f64 = 100.0;

/// The first on-demand price per unit in USD of one Price List product (a JSON string), when it
/// is a number from 0 to [`MAX_USD_PER_MINUTE`].
fn on_demand_usd(product: &str) -> Option<f64> {
    let product: Value = serde_json::from_str(product).ok()?;
    product["terms"]["OnDemand"].as_object()?.values().find_map(|term| {
        term["priceDimensions"].as_object()?.values().find_map(|dimension| {
            dimension["pricePerUnit"]["USD"]
                .as_str()?
                .parse::<f64>()
                .ok()
                .filter(|usd| (0.0..=MAX_USD_PER_MINUTE).contains(usd))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compute_types_map_to_the_usage_types_the_bill_names() {
        assert_eq!(usage_type("us-east-1", "BUILD_GENERAL1_XLARGE").unwrap(), "USE1-Build-Min:Linux:g1.xlarge");
        assert_eq!(usage_type("eu-west-1", "BUILD_GENERAL1_2XLARGE").unwrap(), "EU-Build-Min:Linux:g1.2xlarge");
        assert_eq!(usage_type("us-east-1", "BUILD_LAMBDA_1GB"), None);
        assert_eq!(usage_type("xx-nowhere-1", "BUILD_GENERAL1_SMALL"), None);
        assert_eq!(known("USE1-Build-Min:Linux:g1.xlarge").unwrap().usd_per_minute, 0.0798);
        assert_eq!(known("EU-Build-Min:Linux:g1.xlarge"), None);
    }

    #[test]
    fn a_price_list_product_gives_its_on_demand_rate() {
        let product = r#"{"terms":{"OnDemand":{"A.B":{"priceDimensions":{"A.B.C":{"unit":"Minutes","pricePerUnit":{"USD":"0.0798000000"}}}}}}}"#;
        assert_eq!(on_demand_usd(product), Some(0.0798));
        assert_eq!(on_demand_usd(r#"{"terms":{}}"#), None);
        assert_eq!(
            on_demand_usd(r#"{"terms":{"OnDemand":{"A":{"priceDimensions":{"B":{"pricePerUnit":{"USD":"-1"}}}}}}}"#),
            None
        );
        assert_eq!(on_demand_usd("not json"), None);
        // A number no rate is, or none at all, is not believed.
        for usd in ["1e308", "inf", "NaN", "-0.5"] {
            let product = format!(
                r#"{{"terms":{{"OnDemand":{{"A":{{"priceDimensions":{{"B":{{"pricePerUnit":{{"USD":"{usd}"}}}}}}}}}}}}}}"#
            );
            assert_eq!(on_demand_usd(&product), None, "{usd}");
        }
    }
}
