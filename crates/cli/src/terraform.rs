//! The Terraform view of a plan (`reconcile_core::terraform`), made with the catalog's mappings.

use std::collections::BTreeMap;

use reconcile_core::engine::DesiredResources;
use reconcile_core::{Plan, render};
use serde_json::Value;

use crate::catalog::CATALOG;

/// Where a saved plan keeps its Terraform view, for `show --format terraform-json`.
pub const SAVED_KEY: &str = "terraform_json";

/// `plan` in Terraform's JSON format; `resources` are the declared ones it was made from (only
/// those the plan holds an observation of are shown, so a public plan's hidden ones stay hidden);
/// `last_applied`, the default branch's desired fields when the plan is a pull request's (its
/// own changes are not drift), else desired.toml is taken as applied.
pub fn view(
    plan: &Plan,
    resources: &DesiredResources,
    last_applied: Option<&BTreeMap<reconcile_core::Address, serde_json::Map<String, Value>>>,
) -> Value {
    let declared: BTreeMap<_, _> = resources
        .values()
        .filter(|resource| plan.observed.contains_key(&resource.address))
        .map(|resource| (resource.address.clone(), resource.attributes.clone()))
        .collect();
    let mapping = |kind| CATALOG.terraform(kind).map(|mapping| mapping.map);
    reconcile_core::terraform::view(
        plan,
        reconcile_core::terraform::Inputs {
            declared: &declared,
            mapping: &mapping,
            native: render::json(plan),
            timestamp: reconcile_core::time::date_time(reconcile_core::time::now()),
            last_applied,
        },
    )
}
