//! `[usage]` of desired.toml: what a GB-month of the registry's storage is priced at, for
//! `reconcile usage`, a plan's cost line and what a lifecycle policy's expiry saves. This crate
//! claims the section ([`CLAIM`]): the price is ECR's, and nothing else reads it.

use reconcile_core::Desired;
use reconcile_core::desired::{Claim, DesiredError, Locator, Section, schema_of};
use schemars::JsonSchema;
use serde::Deserialize;
use toml::Spanned;

/// `[usage]`, listed after `nightly` where the file's keys are.
pub const CLAIM: Claim = Claim {
    name: "usage",
    after: Some("nightly"),
    types: Section::types::<RawUsage>,
    publishes: Claim::NOTHING,
    read: |section| section.read(|locate, raw: RawUsage, errors| convert(locate, &raw, errors)),
    schema: schema_of::<RawUsage>,
};

/// ECR's published storage price, dollars per GB-month: what storage is priced at unless
/// desired.toml's `[usage] price_per_gb_month` says otherwise.
pub const PRICE_PER_GB_MONTH: f64 = 0.10;

/// `[usage]`: how `reconcile usage` prices storage.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
struct RawUsage {
    /// Dollars per GB-month of ECR storage; ECR's published price is 0.10.
    #[schemars(with = "Option<f64>")]
    price_per_gb_month: Option<Spanned<f64>>,
}

/// The price `[usage]` declares, once read: `None` when it declares none (or a wrong one, which
/// is an error at its line).
struct Price(Option<f64>);

fn convert(locate: &Locator<'_>, raw: &RawUsage, errors: &mut Vec<DesiredError>) -> Price {
    Price(raw.price_per_gb_month.as_ref().and_then(|price| {
        let value = *price.get_ref();
        if value.is_finite() && value > 0.0 {
            return Some(value);
        }
        errors.push(locate.error(
            Some(price.span()),
            "usage.price_per_gb_month",
            "the price must be a positive number of dollars per GB-month",
        ));
        None
    }))
}

/// What a GB-month of the registry's storage costs, as desired.toml prices it.
pub fn price_per_gb_month(desired: &Desired) -> f64 {
    desired
        .section(CLAIM.name)
        .and_then(Section::model::<Price>)
        .and_then(|price| price.0)
        .unwrap_or(PRICE_PER_GB_MONTH)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reconcile_core::desired::testing::Files;

    const FILES: Files = Files(&[&CLAIM]);

    #[test]
    fn the_price_is_the_declared_one_or_ecrs_published_one() {
        let declared = FILES.parse("region = \"us-east-1\"\n[usage]\nprice_per_gb_month = 0.085\n").unwrap();
        assert_eq!(price_per_gb_month(&declared), 0.085);
        for text in ["region = \"us-east-1\"\n", "region = \"us-east-1\"\n[usage]\n"] {
            assert_eq!(price_per_gb_month(&FILES.parse(text).unwrap()), PRICE_PER_GB_MONTH, "{text}");
        }
    }

    #[test]
    fn a_price_that_is_no_positive_number_is_refused_at_its_key() {
        for price in ["0", "-0.10", "nan", "inf"] {
            let text = format!("region = \"us-east-1\"\n[usage]\nprice_per_gb_month = {price}\n");
            let refused = FILES.parse(&text).unwrap_err();
            assert_eq!(
                refused,
                "desired.toml:3:22: `usage.price_per_gb_month`: the price must be a positive number of dollars per \
                 GB-month",
                "{price}"
            );
        }
        let unknown = FILES.refusals("region = \"us-east-1\"\n[usage]\nprice = 1\n");
        assert!(unknown[0].contains("unknown field `price`, expected `price_per_gb_month`"), "{unknown:?}");
    }
}
