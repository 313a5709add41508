//! The Terraform view of a plan (`reconcile_core::terraform`), made with the catalog's mappings.

use std::collections::BTreeMap;

use reconcile_core::engine::DesiredResources;
use reconcile_core::{Address, Plan};
use reconcile_render::plan as render;
use reconcile_render::saved::SavedView;
use serde_json::{Map, Value};

use crate::catalog::CATALOG;

/// Where a plan saved by an earlier reconcile kept its Terraform view, which `show` prints as saved.
pub const SAVED_KEY: &str = "terraform_json";

/// The declared fields a Terraform view of `plan` shows: of the declared `resources`, only those
/// the plan holds an observation of, so a public plan's hidden ones stay hidden.
pub fn declared(plan: &Plan, resources: &DesiredResources) -> BTreeMap<Address, Map<String, Value>> {
    resources
        .values()
        .filter(|resource| plan.observed.contains_key(&resource.address))
        .map(|resource| (resource.address.clone(), resource.attributes.clone()))
        .collect()
}

/// `plan` in Terraform's JSON format; `resources` are the declared ones it was made from;
/// `last_applied`, the default branch's desired fields when the plan is a pull request's (its
/// own changes are not drift), else desired.toml is taken as applied.
pub fn view(
    plan: &Plan,
    resources: &DesiredResources,
    last_applied: Option<&BTreeMap<Address, Map<String, Value>>>,
) -> Value {
    let timestamp = reconcile_core::time::date_time(reconcile_core::time::now());
    derived(plan, &declared(plan, resources), last_applied, render::json(plan), timestamp)
}

/// The view of a saved plan, derived again from what it holds: the same as `plan` printed when
/// it saved it.
pub fn saved_view(plan: &Plan, view: &SavedView, native: Value) -> Value {
    derived(plan, &view.declared, view.last_applied.as_ref(), native, view.made_at.clone())
}

fn derived(
    plan: &Plan,
    declared: &BTreeMap<Address, Map<String, Value>>,
    last_applied: Option<&BTreeMap<Address, Map<String, Value>>>,
    native: Value,
    timestamp: String,
) -> Value {
    let mapping = |kind| CATALOG.terraform(kind).map(|mapping| mapping.map);
    reconcile_render::terraform::view(
        plan,
        reconcile_render::terraform::Inputs { declared, mapping: &mapping, native, timestamp, last_applied },
    )
}
