//! The plan in Terraform's JSON output format (`terraform show -json`), for the tools Terraform
//! users gate plans with (checkov, OPA/conftest, terraform-compliance) and for
//! hashicorp/terraform-json: `reconcile plan --format terraform-json`.
//!
//! It is a derived view. Each resource crate maps each of its kinds onto the AWS and GitHub
//! providers' resource types ([`reconcile_core::terraform::Mapping`], one table per kind in the kind's crate): one reconcile
//! resource may become several provider resources (a bucket is `aws_s3_bucket` and its
//! `_public_access_block`, `_versioning`, ... resources), each with its own action, found by
//! comparing what the mapping makes of the observed and the desired fields. Every resource the
//! plan looked at is listed, unchanged ones as `no-op`, since a policy must see a clean account
//! too. The addresses are those of a module in which each provider type is one resource block
//! with `for_each` over desired.toml's entries: `aws_ecr_repository.repository["rocm/pytorch"]`.
//! What the format has no place for (findings, what a lifecycle policy expires, attribution) is
//! the native JSON plan, under the one key `reconcile`, which the tools ignore.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use reconcile_core::address::{Address, ResourceKind};
use reconcile_core::plan::{Action, Observed, Plan};
use reconcile_core::reconciler::Account;
use reconcile_core::terraform::{MapFn, Provider, ProviderResource};

/// The format's version, as Terraform 1.9 writes it; hashicorp/terraform-json accepts 1.x.
pub const FORMAT_VERSION: &str = "1.2";

/// There is no Terraform in a reconcile plan, and the format has no other way to name its
/// writer: the Terraform release whose `show -json` output the view follows, field for field
/// (the one the mapping was checked against, scripts/terraform-side-by-side.sh), with SemVer
/// build metadata naming reconcile. Tools that require the key read the release
/// (terraform-compliance accepts only the 1.x it knows); what a tool may infer from it is in
/// docs/terraform-json.md. `reconcile.made_by` names the build of reconcile.
pub const TERRAFORM_VERSION: &str = concat!("1.11.4+reconcile.", env!("CARGO_PKG_VERSION"));

/// What the view is made of beyond the plan.
pub struct Inputs<'a> {
    /// The desired fields of every declared resource the plan looked at.
    pub declared: &'a BTreeMap<Address, Map<String, Value>>,
    /// Each kind's mapping.
    pub mapping: &'a dyn Fn(ResourceKind) -> Option<MapFn>,
    /// The native JSON plan, kept whole under `reconcile`.
    pub native: Value,
    /// When the plan was made (RFC 3339, UTC), Terraform's `timestamp`.
    pub timestamp: String,
    /// What was last applied, against which `resource_drift` is found: the default branch's
    /// desired fields for a pull request's plan (`--base`); `None`, `declared` itself (the
    /// default branch's own plan, as the scheduled drift check makes it).
    pub last_applied: Option<&'a BTreeMap<Address, Map<String, Value>>>,
}

/// One provider resource instance on one side of the plan.
struct Instance {
    resource: ProviderResource,
    index: String,
}

impl Instance {
    fn key(&self) -> (&'static str, &'static str) {
        (self.resource.kind, self.resource.name)
    }

    /// Its arguments with what AWS chose for it, as the provider's state holds them: `known`,
    /// what AWS chose for the live resource, if there is one; else AWS's defaults of what
    /// apply leaves alone.
    fn state(&self, known: Option<&Map<String, Value>>) -> Map<String, Value> {
        let mut values = self.resource.values.clone();
        let chosen = known.unwrap_or(&self.resource.left);
        values.extend(chosen.iter().map(|(key, value)| (key.clone(), value.clone())));
        values
    }

    /// What AWS chose for it, as read: its computed attributes and what apply leaves alone.
    fn chosen(&self) -> Map<String, Value> {
        let mut chosen = self.resource.left.clone();
        chosen.extend(self.resource.computed.iter().map(|(key, value)| (key.clone(), value.clone())));
        chosen
    }

    /// Terraform's `after_unknown`: every computed attribute of what does not exist yet.
    fn unknown(&self, known: Option<&Map<String, Value>>) -> Value {
        match known {
            Some(_) => json!({}),
            None => Value::Object(self.resource.computed.keys().map(|key| (key.clone(), json!(true))).collect()),
        }
    }
}

fn instances(account: &Account, address: &Address, fields: Option<&Map<String, Value>>, map: MapFn) -> Vec<Instance> {
    fields
        .map(|fields| {
            map(account, &address.name, fields)
                .into_iter()
                .map(|resource| Instance { resource, index: address.name.clone() })
                .collect()
        })
        .unwrap_or_default()
}

fn values_json(instance: &Instance, values: Map<String, Value>) -> Value {
    let resource = &instance.resource;
    json!({
        "address": resource.address(&instance.index),
        "mode": "managed",
        "type": resource.kind,
        "name": resource.name,
        "index": instance.index,
        "provider_name": resource.provider.source(),
        "schema_version": 0,
        "values": values,
        "sensitive_values": {},
    })
}

/// The arguments of `b` and `a` that differ (computed attributes are never compared).
fn differing<'a>(b: &'a Instance, a: &'a Instance) -> Vec<&'a String> {
    let names: BTreeSet<&String> = b.resource.values.keys().chain(a.resource.values.keys()).collect();
    names.into_iter().filter(|n| b.resource.values.get(*n) != a.resource.values.get(*n)).collect()
}

/// The provider resources of both sides, paired by type and block name: `first`'s order, then
/// what only `second` has.
fn paired<'a>(first: &'a [Instance], second: &'a [Instance]) -> Vec<(Option<&'a Instance>, Option<&'a Instance>)> {
    let mut keys: Vec<(&'static str, &'static str)> = first.iter().map(Instance::key).collect();
    for instance in second {
        if !keys.contains(&instance.key()) {
            keys.push(instance.key());
        }
    }
    keys.into_iter()
        .map(|key| (first.iter().find(|i| i.key() == key), second.iter().find(|i| i.key() == key)))
        .collect()
}

/// One entry of `resource_changes` or `resource_drift`, without its change's own fields.
fn change_entry(instance: &Instance, change: Value) -> Value {
    let resource = &instance.resource;
    json!({
        "address": resource.address(&instance.index),
        "mode": "managed",
        "type": resource.kind,
        "name": resource.name,
        "index": instance.index,
        "provider_name": resource.provider.source(),
        "change": change,
    })
}

/// What the view gathers, resource by resource, for the document [`view`] makes of it.
#[derive(Default)]
struct Gathered {
    planned: Vec<Value>,
    prior: Vec<Value>,
    changes: Vec<Value>,
    drift: Vec<Value>,
    relevant: Vec<Value>,
    /// Every provider resource either side of the plan: the configuration's blocks.
    all: Vec<Instance>,
    provider_addresses: Map<String, Value>,
    unmapped: BTreeSet<&'static str>,
}

/// One reconcile resource the view shows: what was observed of it, desired of it, and the
/// plan's change to it.
struct Shown<'a> {
    address: &'a Address,
    observed: &'a Observed,
    desired: Option<&'a Map<String, Value>>,
    change: Option<&'a reconcile_core::plan::Change>,
    map: MapFn,
    /// Whether the plan adopts it (`import`): its first provider resource is "imported".
    adopted: bool,
}

/// What AWS chose of a live provider resource, by the instance's key: what is known of every
/// side of its changes.
struct Live {
    instances: Vec<Instance>,
    chosen: Vec<Map<String, Value>>,
}

impl Live {
    fn known(&self, instance: &Instance) -> Option<&Map<String, Value>> {
        self.instances.iter().position(|l| l.key() == instance.key()).map(|position| &self.chosen[position])
    }
}

/// The plan in Terraform's JSON output format.
pub fn view(plan: &Plan, inputs: Inputs<'_>) -> Value {
    let account = Account::new(plan.account.clone(), plan.region.clone());
    let mut gathered = Gathered::default();
    let by_address: BTreeMap<&Address, &reconcile_core::plan::Change> =
        plan.changes.iter().map(|c| (&c.address, c)).collect();
    for (address, observed) in &plan.observed {
        let Some(map) = (inputs.mapping)(address.kind) else {
            gathered.unmapped.insert(address.kind.as_str());
            continue;
        };
        let adopted = plan.takeovers.get(address) == Some(&reconcile_core::plan::Takeover::Import);
        let desired = inputs.declared.get(address);
        let change = by_address.get(address).copied();
        let shown = Shown { address, observed, desired, change, map, adopted };
        gathered.resource(plan, &inputs, &account, &shown);
    }
    document(plan, inputs, gathered)
}

impl Gathered {
    /// One reconcile resource's provider resources: its prior state, its changes and its drift.
    fn resource(&mut self, plan: &Plan, inputs: &Inputs<'_>, account: &Account, shown: &Shown<'_>) {
        let Shown { address, observed, desired, change, map, .. } = *shown;
        let (before, after) = match change {
            Some(change) => (change.before.clone(), change.after.clone()),
            // Unchanged: what was observed of the managed fields is what is desired.
            None => match (desired, observed) {
                (Some(desired), Observed::Present(_)) => (Some(desired.clone()), Some(desired.clone())),
                // A destroy makes nothing: what is absent is not in its plan.
                (Some(_), Observed::Absent) if plan.destroy => return,
                (Some(desired), Observed::Absent) => (None, Some(desired.clone())),
                (None, _) => return,
            },
        };
        // What exists, with what AWS chose for it: the prior state, and what is known of
        // every side of this resource's changes.
        let existing = match observed {
            Observed::Present(fields) => instances(account, address, Some(fields), map),
            Observed::Absent => Vec::new(),
        };
        let chosen: Vec<Map<String, Value>> = existing.iter().map(Instance::chosen).collect();
        let live = Live { instances: existing, chosen };
        self.prior.extend(live.instances.iter().zip(&live.chosen).map(|(l, c)| values_json(l, l.state(Some(c)))));
        let before = instances(account, address, before.as_ref(), map);
        let after = instances(account, address, after.as_ref(), map);
        if before.is_empty() && after.is_empty() {
            self.unmapped.insert(address.kind.as_str());
        }
        let mut entries = self.change_entries(shown, &live, &before, &after);
        // Reconcile changes what the provider's arguments do not show (a webhook whose hook on
        // GitHub is gone is made again): the first resource carries it, never a bare no-op.
        let no_op = |entry: &Value| entry["change"]["actions"] == json!(["no-op"]);
        if let Some(change) = change
            && !entries.is_empty()
            && entries.iter().all(no_op)
        {
            let first = &mut entries[0];
            if change.action == Action::Replace {
                first["change"]["actions"] = json!(["delete", "create"]);
                first["change"]["replace_paths"] = json!([]);
                first["action_reason"] = json!("replace_because_tainted");
            } else {
                first["change"]["actions"] = json!([change.action.json_actions()[0]]);
            }
        }
        self.changes.append(&mut entries);
        // Drift, as Terraform's refresh finds it: a resource that exists and differs from what
        // was last applied (`before`, the baseline's fields; `after`, as read). Not what the plan
        // makes (reconcile keeps no state to tell a resource deleted out of band from one never
        // made), nor what a takeover changes (it was never reconcile's).
        let baseline = match inputs.last_applied {
            Some(last_applied) => last_applied.get(address),
            None => desired,
        };
        if let (Some(baseline), Observed::Present(fields)) = (baseline, observed)
            && !plan.takeovers.contains_key(address)
        {
            self.drift_entries(account, shown, &live, baseline, fields);
        }
        self.all.extend(after.into_iter().chain(before));
    }

    /// The `resource_changes` of one reconcile resource: each provider resource either side,
    /// paired, as created, deleted, replaced, updated or left alone.
    fn change_entries(
        &mut self,
        shown: &Shown<'_>,
        live: &Live,
        before: &[Instance],
        after: &[Instance],
    ) -> Vec<Value> {
        let replaced = shown.change.is_some_and(|c| c.action == Action::Replace);
        let deleted_undeclared = shown.desired.is_none();
        let mut entries: Vec<Value> = Vec::new();
        for (position, (a, b)) in paired(after, before).into_iter().enumerate() {
            let instance = a.or(b).expect("a pair has one side");
            let differing = match (b, a) {
                (Some(b), Some(a)) => differing(b, a),
                _ => Vec::new(),
            };
            let forced: Vec<&String> =
                differing.iter().copied().filter(|n| instance.resource.force_new.contains(&n.as_str())).collect();
            let (actions, reason): (&[&str], Option<&str>) = match (b, a) {
                (None, Some(_)) => (&["create"], None),
                (Some(_), None) if deleted_undeclared => (&["delete"], Some("delete_because_no_resource_config")),
                (Some(_), None) => (&["delete"], None),
                (Some(_), Some(_)) if differing.is_empty() => (&["no-op"], None),
                (Some(_), Some(_)) if replaced && (!forced.is_empty() || instance.resource.force_new.is_empty()) => {
                    (&["delete", "create"], Some("replace_because_cannot_update"))
                }
                (Some(_), Some(_)) => (&["update"], None),
                (None, None) => unreachable!("a pair has one side"),
            };
            // A replacement makes the resource anew: AWS chooses its attributes again.
            let after_known = if actions.len() == 2 { None } else { a.and_then(|a| live.known(a)) };
            let side = |i: Option<&Instance>, known: Option<&Map<String, Value>>| {
                i.map_or(Value::Null, |i| Value::Object(i.state(known)))
            };
            let sensitive = |i: Option<&Instance>| if i.is_some() { json!({}) } else { json!(false) };
            let mut change = json!({
                "actions": actions,
                "before": side(b, b.and_then(|b| live.known(b))),
                "after": side(a, after_known),
                "after_unknown": a.map_or(json!(false), |a| a.unknown(after_known)),
                "before_sensitive": sensitive(b),
                "after_sensitive": sensitive(a),
            });
            if actions.len() == 2 {
                let paths: Vec<Value> = forced.iter().map(|n| json!([n])).collect();
                change["replace_paths"] =
                    json!(if paths.is_empty() { differing.iter().map(|n| json!([n])).collect() } else { paths });
            }
            // The first provider resource of an adopted one is the one "imported".
            if position == 0 && shown.adopted && b.is_some() {
                change["importing"] = json!({ "id": shown.address.name });
            }
            let mut entry = change_entry(instance, change);
            if let Some(reason) = reason {
                entry["action_reason"] = json!(reason);
            }
            self.provider_addresses
                .insert(instance.resource.address(&instance.index), json!(shown.address.to_string()));
            entries.push(entry);
            if let Some(a) = a {
                self.planned.push(values_json(a, a.state(after_known)));
            }
        }
        entries
    }

    /// The `resource_drift` of one reconcile resource: what differs between `baseline` and what
    /// was read (`fields`), compared as the plan compares, on the fields desired.toml manages.
    fn drift_entries(
        &mut self,
        account: &Account,
        shown: &Shown<'_>,
        live: &Live,
        baseline: &Map<String, Value>,
        fields: &Map<String, Value>,
    ) {
        let read: Map<String, Value> =
            baseline.keys().filter_map(|key| fields.get(key).map(|v| (key.clone(), v.clone()))).collect();
        if &read == baseline {
            return;
        }
        let was = instances(account, shown.address, Some(baseline), shown.map);
        let is = instances(account, shown.address, Some(&read), shown.map);
        for (was, is) in paired(&was, &is) {
            let instance = was.or(is).expect("a pair has one side");
            let (action, attributes): (&str, Vec<&String>) = match (was, is) {
                (Some(was), Some(is)) => ("update", differing(was, is)),
                (Some(_), None) => ("delete", Vec::new()),
                (None, Some(_)) => ("create", Vec::new()),
                (None, None) => unreachable!("a pair has one side"),
            };
            if action == "update" && attributes.is_empty() {
                continue;
            }
            let at = instance.resource.address(&instance.index);
            self.relevant.extend(attributes.iter().map(|name| json!({ "resource": at, "attribute": [name] })));
            let side = |i: Option<&Instance>| i.map_or(Value::Null, |i| Value::Object(i.state(live.known(i))));
            let sensitive = |i: Option<&Instance>| if i.is_some() { json!({}) } else { json!(false) };
            self.drift.push(change_entry(
                instance,
                json!({
                    "actions": [action],
                    "before": side(was),
                    "after": side(is),
                    "after_unknown": if is.is_some() { json!({}) } else { json!(false) },
                    "before_sensitive": sensitive(was),
                    "after_sensitive": sensitive(is),
                }),
            ));
        }
    }
}

/// The document: what was gathered, the configuration's blocks and providers, and reconcile's
/// own plan under `reconcile`.
fn document(plan: &Plan, inputs: Inputs<'_>, gathered: Gathered) -> Value {
    let Gathered { planned, prior, changes, drift, relevant, all, provider_addresses, unmapped } = gathered;
    let mut blocks: BTreeMap<(&'static str, &'static str), Vec<&Instance>> = BTreeMap::new();
    for instance in &all {
        blocks.entry(instance.key()).or_default().push(instance);
    }
    let providers: BTreeSet<Provider> = blocks.values().map(|instances| instances[0].resource.provider).collect();
    let provider_config: Map<String, Value> = providers
        .iter()
        .map(|provider| {
            let mut config = json!({ "name": provider.key(), "full_name": provider.source() });
            if *provider == Provider::Aws {
                config["expressions"] = json!({ "region": { "constant_value": plan.region } });
            }
            (provider.key().to_owned(), config)
        })
        .collect();
    let configuration: Vec<Value> = blocks.values().map(|instances| block_json(instances)).collect();
    let applyable = !plan.changes.is_empty() && !plan.findings.iter().any(reconcile_core::plan::Finding::refuses);
    let mut native = inputs.native;
    if let Value::Object(fields) = &mut native {
        fields.insert("provider_addresses".to_owned(), Value::Object(provider_addresses));
        fields.insert("unmapped_kinds".to_owned(), json!(unmapped));
    }
    json!({
        "format_version": FORMAT_VERSION,
        "terraform_version": TERRAFORM_VERSION,
        "variables": {},
        "planned_values": { "root_module": { "resources": planned } },
        "resource_drift": drift,
        "resource_changes": changes,
        "relevant_attributes": relevant,
        "prior_state": {
            "format_version": FORMAT_VERSION,
            "terraform_version": TERRAFORM_VERSION,
            "values": { "root_module": { "resources": prior } },
        },
        "configuration": { "provider_config": provider_config, "root_module": { "resources": configuration } },
        "timestamp": inputs.timestamp,
        "applyable": applyable,
        "complete": true,
        "errored": false,
        "reconcile": native,
    })
}

/// One resource block of the configuration, from every instance of it either side of the
/// plan: an argument that refers to another block as its `references` (graph checks follow
/// them), one every instance sets alike as its `constant_value`, and one that differs by
/// instance as a reference to the `for_each` value it comes from.
fn block_json(instances: &[&Instance]) -> Value {
    let resource = &instances[0].resource;
    let mut expressions = Map::new();
    for (argument, value) in &resource.values {
        let expression = if let Some((_, block, _)) = resource.references.iter().find(|(a, _, _)| a == argument) {
            json!({ "references": [block, "each.key"] })
        } else if instances.iter().all(|i| i.resource.values.get(argument) == Some(value)) {
            json!({ "constant_value": value })
        } else {
            json!({ "references": ["each.value"] })
        };
        expressions.insert(argument.clone(), expression);
    }
    json!({
        "address": format!("{}.{}", resource.kind, resource.name),
        "mode": "managed",
        "type": resource.kind,
        "name": resource.name,
        "provider_config_key": resource.provider.key(),
        "expressions": expressions,
        "schema_version": 0,
        "for_each_expression": { "references": ["local.reconcile"] },
    })
}

/// The view as `terraform plan -refresh-only -json` has it: the drift, and no change planned
/// (`planned_values` is the state as read; nothing to apply, as reconcile keeps no state).
pub fn refresh_only(mut view: Value) -> Value {
    view["planned_values"] = view["prior_state"]["values"].clone();
    view["resource_changes"] = json!([]);
    view["applyable"] = json!(false);
    view
}

/// The one line Terraform prints, with every object's keys sorted and the bidirectional
/// controls escaped ([`reconcile_core::json::to_pretty`] says why).
pub fn to_line(value: &Value) -> String {
    reconcile_core::json::escape_bidi(reconcile_core::json::to_compact(value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reconcile_core::json::object;
    use reconcile_core::plan::{Change, Observed};

    const THING: ResourceKind = reconcile_core::fake::kinds::ECR_REPOSITORY;
    const UNMAPPED: ResourceKind = reconcile_core::fake::kinds::GITHUB_FORK_PR_APPROVAL;

    /// A kind that is a `thing` and, while `extra` is set, a `thing_extra` besides.
    fn map(_: &Account, name: &str, fields: &Map<String, Value>) -> Vec<ProviderResource> {
        let mut out = vec![
            ProviderResource::new(
                Provider::Aws,
                "aws_thing",
                "thing",
                json!({ "name": name, "size": fields.get("size") }),
            )
            .forcing_new(vec!["name"])
            .computing(json!({ "id": name, "serial": fields.get("serial") }))
            .leaving(json!({ "colour": fields.get("colour").cloned().unwrap_or(json!("grey")) })),
        ];
        if let Some(extra) = fields.get("extra").filter(|e| !e.is_null()) {
            out.push(
                ProviderResource::new(
                    Provider::Aws,
                    "aws_thing_extra",
                    "thing",
                    json!({ "thing": name, "extra": extra }),
                )
                .referring(&[("thing", "aws_thing.thing", "name")]),
            );
        }
        out
    }

    fn mapping(kind: ResourceKind) -> Option<MapFn> {
        (kind == THING).then_some(map as MapFn)
    }

    fn view_of(plan: &Plan, declared: &[(&str, Value)]) -> Value {
        let declared: BTreeMap<Address, Map<String, Value>> =
            declared.iter().map(|(name, fields)| (Address::new(THING, *name), object(fields.clone()))).collect();
        let native = json!({ "native": true });
        let timestamp = "2026-12-05T23:00:00Z".to_owned();
        view(plan, Inputs { declared: &declared, mapping: &mapping, native, timestamp, last_applied: None })
    }

    fn change(name: &str, action: Action, before: Option<Value>, after: Option<Value>) -> Change {
        Change {
            address: Address::new(THING, name),
            action,
            before: before.map(object),
            after: after.map(object),
            depends_on: vec![],
        }
    }

    fn actions(view: &Value) -> Vec<(String, Vec<String>)> {
        view["resource_changes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let actions = c["change"]["actions"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_owned());
                (c["address"].as_str().unwrap().to_owned(), actions.collect())
            })
            .collect()
    }

    #[test]
    fn a_destroy_plan_deletes_what_it_deletes_keeps_what_it_leaves_and_makes_nothing() {
        let mut plan = Plan { destroy: true, ..Plan::new("123456789012", "us-east-1") };
        let (gone, kept, absent) =
            (Address::new(THING, "gone"), Address::new(THING, "kept"), Address::new(THING, "absent"));
        plan.observed.insert(gone.clone(), Observed::Present(object(json!({ "size": 1 }))));
        plan.observed.insert(kept, Observed::Present(object(json!({ "size": 2 }))));
        plan.observed.insert(absent, Observed::Absent);
        plan.changes.push(Change {
            address: gone,
            action: Action::Delete,
            before: Some(object(json!({ "size": 1 }))),
            after: None,
            depends_on: vec![],
        });
        let declared =
            [("gone", json!({ "size": 1 })), ("kept", json!({ "size": 2 })), ("absent", json!({ "size": 3 }))];
        let view = view_of(&plan, &declared);
        assert_eq!(
            actions(&view),
            [
                ("aws_thing.thing[\"gone\"]".to_owned(), vec!["delete".to_owned()]),
                ("aws_thing.thing[\"kept\"]".to_owned(), vec!["no-op".to_owned()]),
            ]
        );
        assert_eq!(view["resource_changes"][0].get("action_reason"), None, "it is declared: no config reason");
        let planned: Vec<&Value> =
            view["planned_values"]["root_module"]["resources"].as_array().unwrap().iter().collect();
        assert_eq!(planned.len(), 1, "only what the destroy leaves: {planned:?}");
    }

    #[test]
    fn every_declared_resource_is_planned_and_an_unchanged_one_is_a_no_op() {
        let mut plan = Plan::new("123456789012", "us-east-1");
        let live = json!({ "size": 1, "serial": 7, "colour": "blue" });
        plan.observed.insert(Address::new(THING, "a/b"), Observed::Present(object(live)));
        plan.observed.insert(Address::new(UNMAPPED, "ROCm/x"), Observed::Present(Map::new()));
        let view = view_of(&plan, &[("a/b", json!({ "size": 1 }))]);
        assert_eq!(actions(&view), [("aws_thing.thing[\"a/b\"]".to_owned(), vec!["no-op".to_owned()])]);
        let entry = &view["resource_changes"][0];
        assert_eq!(entry["index"], "a/b");
        assert_eq!(entry["mode"], "managed");
        assert_eq!(entry["provider_name"], "registry.terraform.io/hashicorp/aws");
        assert_eq!(entry["change"]["before"], entry["change"]["after"]);
        // What AWS chose, read from the live resource, on every side: never compared.
        let state = json!({ "name": "a/b", "size": 1, "id": "a/b", "serial": 7, "colour": "blue" });
        assert_eq!(view["planned_values"]["root_module"]["resources"][0]["values"], state);
        assert_eq!(entry["change"]["after"], state);
        assert_eq!(entry["change"]["after_unknown"], json!({}));
        assert_eq!(view["prior_state"]["values"]["root_module"]["resources"][0]["values"], state);
        assert_eq!(view["resource_drift"], json!([]));
        assert_eq!(view["variables"], json!({}));
        assert_eq!(view["timestamp"], "2026-12-05T23:00:00Z");
        assert_eq!(view["reconcile"]["unmapped_kinds"], json!(["github_fork_pr_approval"]));
        assert_eq!(view["reconcile"]["native"], true);
        assert_eq!(view["applyable"], false);
        assert_eq!(view["format_version"], FORMAT_VERSION);
        assert_eq!(view["terraform_version"], TERRAFORM_VERSION);
    }

    #[test]
    fn one_resource_becomes_several_each_with_its_own_action() {
        let mut plan = Plan::new("1", "r");
        plan.observed.insert(Address::new(THING, "a"), Observed::Present(object(json!({ "size": 1, "extra": "e" }))));
        plan.observed.insert(Address::new(THING, "n"), Observed::Absent);
        plan.observed.insert(Address::new(THING, "gone"), Observed::Present(object(json!({ "size": 5 }))));
        plan.changes = vec![
            change(
                "a",
                Action::Update,
                Some(json!({ "size": 1, "extra": "e" })),
                Some(json!({ "size": 2, "extra": null })),
            ),
            change("n", Action::Create, None, Some(json!({ "size": 3 }))),
            change("gone", Action::Delete, Some(json!({ "size": 5 })), None),
        ];
        let view = view_of(&plan, &[("a", json!({ "size": 2, "extra": null })), ("n", json!({ "size": 3 }))]);
        let strings = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            actions(&view),
            [
                ("aws_thing.thing[\"a\"]".to_owned(), strings(&["update"])),
                ("aws_thing_extra.thing[\"a\"]".to_owned(), strings(&["delete"])),
                ("aws_thing.thing[\"gone\"]".to_owned(), strings(&["delete"])),
                ("aws_thing.thing[\"n\"]".to_owned(), strings(&["create"])),
            ]
        );
        let changes = view["resource_changes"].as_array().unwrap();
        assert_eq!(changes[2]["action_reason"], "delete_because_no_resource_config");
        assert_eq!(view["reconcile"]["unmapped_kinds"], json!([]), "made or deleted, it maps");
        assert_eq!(changes[3]["change"]["before_sensitive"], false);
        // What AWS will choose for what is made is unknown, and left out of its values.
        assert_eq!(changes[3]["change"]["after_unknown"], json!({ "id": true, "serial": true }));
        // What apply leaves alone is AWS's default on what is made.
        assert_eq!(changes[3]["change"]["after"], json!({ "name": "n", "size": 3, "colour": "grey" }));
        assert_eq!(changes[1]["change"]["after_unknown"], false);
        // Planned: what exists after the apply, only.
        let planned: Vec<&str> = view["planned_values"]["root_module"]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["address"].as_str().unwrap())
            .collect();
        assert_eq!(planned, ["aws_thing.thing[\"a\"]", "aws_thing.thing[\"n\"]"]);
        // One configuration block per type and name, with the references graph checks follow.
        let blocks = view["configuration"]["root_module"]["resources"].as_array().unwrap();
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[1]["address"], "aws_thing_extra.thing");
        assert_eq!(blocks[1]["expressions"]["thing"]["references"], json!(["aws_thing.thing", "each.key"]));
        // Alike in every instance: a constant; differing by instance: its `for_each` value.
        assert_eq!(blocks[1]["expressions"]["extra"], json!({ "constant_value": "e" }));
        assert_eq!(blocks[0]["expressions"]["size"], json!({ "references": ["each.value"] }));
        assert_eq!(view["configuration"]["provider_config"]["aws"]["expressions"]["region"]["constant_value"], "r");
        assert_eq!(view["applyable"], true);
    }

    #[test]
    fn a_replacement_replaces_what_cannot_change_and_an_adoption_is_an_import() {
        let mut plan = Plan::new("1", "r");
        plan.observed.insert(Address::new(THING, "a"), Observed::Present(object(json!({ "size": 1 }))));
        plan.changes = vec![change("a", Action::Replace, Some(json!({ "size": 1 })), Some(json!({ "size": 2 })))];
        plan.takeovers.insert(Address::new(THING, "a"), reconcile_core::plan::Takeover::Import);
        let view = view_of(&plan, &[("a", json!({ "size": 2 }))]);
        // `size` is not among the block's force-new arguments: an update in the provider's terms.
        assert_eq!(view["resource_changes"][0]["change"]["actions"], json!(["update"]));
        assert_eq!(view["resource_changes"][0]["change"]["importing"], json!({ "id": "a" }));

        let mut renamed = plan.clone();
        renamed.changes = vec![change("a", Action::Replace, Some(json!({ "size": 1 })), Some(json!({ "size": 1 })))];
        renamed.observed.insert(Address::new(THING, "a"), Observed::Present(object(json!({ "size": 1 }))));
        let view = view_of(&renamed, &[("a", json!({ "size": 1 }))]);
        // Replaced for what no argument shows (a webhook's hook gone from GitHub): as Terraform
        // replaces a tainted resource, never a no-op.
        assert_eq!(view["resource_changes"][0]["change"]["actions"], json!(["delete", "create"]));
        assert_eq!(view["resource_changes"][0]["action_reason"], "replace_because_tainted");
        assert_eq!(view["resource_changes"][0]["change"]["replace_paths"], json!([]));
    }

    #[test]
    fn drift_is_what_a_declared_resource_changed_out_of_band_and_nothing_a_plan_makes_or_takes_over() {
        let mut plan = Plan::new("1", "r");
        let live = json!({ "size": 9, "extra": "planted", "serial": 4 });
        plan.observed.insert(Address::new(THING, "a"), Observed::Present(object(live)));
        plan.observed.insert(Address::new(THING, "gone"), Observed::Absent);
        plan.observed.insert(Address::new(THING, "taken"), Observed::Present(object(json!({ "size": 1 }))));
        plan.changes = vec![
            change(
                "a",
                Action::Update,
                Some(json!({ "size": 9, "extra": "planted" })),
                Some(json!({ "size": 2, "extra": null })),
            ),
            change("gone", Action::Create, None, Some(json!({ "size": 3 }))),
            change("taken", Action::Update, Some(json!({ "size": 1 })), Some(json!({ "size": 2 }))),
        ];
        plan.takeovers.insert(Address::new(THING, "taken"), reconcile_core::plan::Takeover::Import);
        let declared = [
            ("a", json!({ "size": 2, "extra": null })),
            ("gone", json!({ "size": 3 })),
            ("taken", json!({ "size": 2 })),
        ];
        let view = view_of(&plan, &declared);
        let drift = view["resource_drift"].as_array().unwrap();
        assert_eq!(drift.len(), 2, "{drift:?}");
        // Before: as desired.toml has it (what apply left); after: as read, with what AWS chose.
        assert_eq!(drift[0]["address"], "aws_thing.thing[\"a\"]");
        assert_eq!(drift[0]["change"]["actions"], json!(["update"]));
        let chosen = json!({ "id": "a", "serial": 4, "colour": "grey" });
        let with = |mut values: Value| {
            values.as_object_mut().unwrap().extend(chosen.as_object().unwrap().clone());
            values
        };
        assert_eq!(drift[0]["change"]["before"], with(json!({ "name": "a", "size": 2 })));
        assert_eq!(drift[0]["change"]["after"], with(json!({ "name": "a", "size": 9 })));
        // What appeared out of band as a resource of its own.
        assert_eq!(drift[1]["address"], "aws_thing_extra.thing[\"a\"]");
        assert_eq!(drift[1]["change"]["actions"], json!(["create"]));
        assert_eq!(drift[1]["change"]["before"], Value::Null);
        assert_eq!(
            view["relevant_attributes"],
            json!([{ "resource": "aws_thing.thing[\"a\"]", "attribute": ["size"] }])
        );
        // The repair is the plan's: the opposite way.
        assert_eq!(view["resource_changes"][0]["change"]["after"]["size"], 2);
        assert_eq!(view["resource_changes"][0]["change"]["after"]["serial"], 4);

        // A pull request's plan: what the default branch last applied is as read, so the
        // difference is the pull request's own change, not drift.
        let declared: BTreeMap<Address, Map<String, Value>> =
            declared.iter().map(|(name, fields)| (Address::new(THING, *name), object(fields.clone()))).collect();
        let applied = BTreeMap::from([(Address::new(THING, "a"), object(json!({ "size": 9, "extra": "planted" })))]);
        let inputs = Inputs {
            declared: &declared,
            mapping: &mapping,
            native: json!({}),
            timestamp: String::new(),
            last_applied: Some(&applied),
        };
        let view = super::view(&plan, inputs);
        assert_eq!(view["resource_drift"], json!([]));
        assert_eq!(view["relevant_attributes"], json!([]));
        assert_eq!(actions(&view)[0].1, ["update"]);
    }

    #[test]
    fn only_a_replacement_replaces_and_only_an_imports_first_resource_is_imported() {
        let mut plan = Plan::new("1", "r");
        for name in ["a", "b"] {
            plan.observed
                .insert(Address::new(THING, name), Observed::Present(object(json!({ "size": 1, "extra": "e" }))));
        }
        let was = json!({ "size": 1, "extra": "e" });
        let is = json!({ "size": 1, "extra": "f" });
        plan.changes = vec![
            change("a", Action::Replace, Some(was.clone()), Some(is.clone())),
            change("b", Action::Update, Some(was), Some(is.clone())),
        ];
        plan.takeovers.insert(Address::new(THING, "a"), reconcile_core::plan::Takeover::Import);
        let view = view_of(&plan, &[("a", is.clone()), ("b", is)]);
        let entry = |address: &str| {
            view["resource_changes"].as_array().unwrap().iter().find(|c| c["address"] == address).unwrap().clone()
        };
        // `aws_thing_extra` has no force-new argument: replacing `a` replaces it whatever differs.
        let replaced = entry("aws_thing_extra.thing[\"a\"]");
        assert_eq!(replaced["change"]["actions"], json!(["delete", "create"]));
        assert_eq!(replaced["change"]["replace_paths"], json!([["extra"]]));
        assert_eq!(replaced["action_reason"], "replace_because_cannot_update");
        assert_eq!(replaced["change"]["after_unknown"], json!({}), "no attribute of its own AWS chooses");
        assert_eq!(replaced["change"].get("importing"), None, "only the first resource is imported");
        assert_eq!(entry("aws_thing.thing[\"a\"]")["change"]["importing"], json!({ "id": "a" }));
        // The same difference in an update is an update, with no replacement's fields.
        let updated = entry("aws_thing_extra.thing[\"b\"]");
        assert_eq!(updated["change"]["actions"], json!(["update"]));
        assert_eq!(updated["change"].get("replace_paths"), None);
        assert_eq!(updated.get("action_reason"), None);
        assert_eq!(entry("aws_thing.thing[\"b\"]")["change"].get("importing"), None, "not imported");
        assert_eq!(view["reconcile"]["unmapped_kinds"], json!([]), "every kind here maps");
    }

    #[test]
    fn a_refresh_only_view_plans_nothing_and_keeps_the_drift() {
        let view = json!({
            "planned_values": { "root_module": { "resources": [1] } },
            "prior_state": { "values": { "root_module": { "resources": [2] } } },
            "resource_changes": [3],
            "resource_drift": [4],
            "applyable": true,
        });
        let refresh = refresh_only(view);
        assert_eq!(refresh["planned_values"], json!({ "root_module": { "resources": [2] } }));
        assert_eq!(refresh["resource_changes"], json!([]));
        assert_eq!(refresh["resource_drift"], json!([4]));
        assert_eq!(refresh["applyable"], false);
    }

    #[test]
    fn a_declared_resource_that_is_absent_is_made_unless_the_plan_destroys() {
        // No change for it (a plan cut down to others): still what apply would make, but in a
        // destroy plan, which makes nothing.
        let mut plan = Plan::new("1", "r");
        plan.observed.insert(Address::new(THING, "n"), Observed::Absent);
        let view = view_of(&plan, &[("n", json!({ "size": 3 }))]);
        assert_eq!(actions(&view), [("aws_thing.thing[\"n\"]".to_owned(), vec!["create".to_owned()])]);
        plan.destroy = true;
        assert_eq!(actions(&view_of(&plan, &[("n", json!({ "size": 3 }))])), []);
    }

    #[test]
    fn the_line_escapes_bidirectional_controls() {
        let line = to_line(&json!({ "b": "x\u{202e}y", "a": 1 }));
        assert_eq!(line, "{\"a\":1,\"b\":\"x\\u202ey\"}");
        assert!(!line.contains('\n'));
    }
}
