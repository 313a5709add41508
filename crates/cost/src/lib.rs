//! What a night costs: the runner's builds at CodeBuild's per-minute rates, and what the
//! registry and the compiler cache store, day by day (UTC).
//!
//! - `rates`: the rate of each compute type, from the Price List API (`pricing:GetProducts`),
//!   or, without it, the last known rate in the code, with its date and source.
//! - `explorer`: whether the bill agrees, from Cost Explorer (`ce:GetCostAndUsage`, grouped by
//!   usage type: cost divided by quantity). Each request costs $0.01, so one unless asked.
//! - `report`: the nights, priced; pure, and rendered as text, JSON and Markdown.
//!
//! The inputs (builds, stored bytes) are read by the resource crates and handed in as plain
//! data: this crate depends on none of them.

pub mod change;
pub mod explorer;
pub mod rates;
pub mod report;

/// Finding code: the rate a figure uses disagrees with what Cost Explorer says was billed per
/// minute, by more than 1%. Stable.
pub const RATE_DISAGREES: &str = "E104";

/// Finding code: a rate or its confirmation could not be read (no permission for the Price
/// List or Cost Explorer): the last known rate is used, unverified. Stable.
pub const RATES_UNREAD: &str = "E105";
