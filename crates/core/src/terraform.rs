//! The plan in Terraform's JSON output format (`terraform show -json`), for the tools Terraform
//! users gate plans with (checkov, OPA/conftest, terraform-compliance) and for
//! hashicorp/terraform-json: `reconcile plan --format terraform-json`.
//!
//! It is a derived view. Each resource crate maps each of its kinds onto the AWS and GitHub
//! providers' resource types ([`Mapping`], one table per kind in the kind's crate): one reconcile
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

use crate::address::{Address, ResourceKind};
use crate::plan::{Action, Plan};

/// The format's version, as Terraform 1.9 writes it; hashicorp/terraform-json accepts 1.x.
pub const FORMAT_VERSION: &str = "1.2";

/// There is no Terraform in a reconcile plan, and the format has no other way to say which
/// writer it follows: this names the Terraform release whose `show -json` output the view
/// follows (format 1.2), so that tools which require the key (terraform-compliance, checkov's
/// directory mode) read it. docs/terraform-json.md says so; `reconcile.made_by` names the tool.
pub const TERRAFORM_VERSION: &str = "1.9.0";

/// The provider a resource type belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Provider {
    /// hashicorp/aws
    Aws,
    /// integrations/github
    Github,
}

impl Provider {
    /// Its local name: the configuration's `provider_config_key`.
    pub fn key(self) -> &'static str {
        match self {
            Provider::Aws => "aws",
            Provider::Github => "github",
        }
    }

    /// Its source address, as `provider_name` holds it.
    pub fn source(self) -> &'static str {
        match self {
            Provider::Aws => "registry.terraform.io/hashicorp/aws",
            Provider::Github => "registry.terraform.io/integrations/github",
        }
    }
}

/// One provider resource a reconcile resource becomes.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderResource {
    pub provider: Provider,
    /// The provider's resource type: `aws_ecr_repository`.
    pub kind: &'static str,
    /// The resource block's name: `repository`. Its instance key is the reconcile resource's name.
    pub name: &'static str,
    /// Its arguments, named and shaped as the provider's schema names them (a nested block is a
    /// list of objects, a policy a JSON string).
    pub values: Map<String, Value>,
    /// Arguments that in Terraform would refer to another block: (argument, referred block as
    /// `type.name`, referred attribute). They become the configuration's `references`, which
    /// graph checks follow (a bucket to its public access block).
    pub references: &'static [(&'static str, &'static str, &'static str)],
    /// Arguments that cannot change in place: a difference in one replaces the resource.
    pub force_new: &'static [&'static str],
}

impl ProviderResource {
    pub fn new(provider: Provider, kind: &'static str, name: &'static str, values: Value) -> ProviderResource {
        ProviderResource { provider, kind, name, values: crate::json::object(values), references: &[], force_new: &[] }
    }

    pub fn referring(mut self, references: &'static [(&'static str, &'static str, &'static str)]) -> Self {
        self.references = references;
        self
    }

    pub fn forcing_new(mut self, fields: &'static [&'static str]) -> Self {
        self.force_new = fields;
        self
    }

    /// Its address for the instance `index`: `aws_ecr_repository.repository["rocm/pytorch"]`.
    pub fn address(&self, index: &str) -> String {
        format!("{}.{}[{}]", self.kind, self.name, Value::String(index.to_owned()))
    }
}

/// How a kind's canonical fields (desired or observed) become provider resources, given the
/// name of the reconcile address (a repository's name, a bucket's key). A field the provider
/// has no argument for is left out; the `reconcile` key keeps it.
pub type MapFn = fn(&str, &Map<String, Value>) -> Vec<ProviderResource>;

/// One kind's mapping, in its crate.
pub struct Mapping {
    pub kind: ResourceKind,
    pub map: MapFn,
    /// What the mapping leaves out, for the documentation's table: `""` when nothing.
    pub unmapped: &'static str,
}

/// What the view is made of beyond the plan.
pub struct Inputs<'a> {
    /// The desired fields of every declared resource the plan looked at.
    pub declared: &'a BTreeMap<Address, Map<String, Value>>,
    /// Each kind's mapping.
    pub mapping: &'a dyn Fn(ResourceKind) -> Option<MapFn>,
    /// The native JSON plan, kept whole under `reconcile`.
    pub native: Value,
}

/// One provider resource instance on one side of the plan.
struct Instance {
    resource: ProviderResource,
    index: String,
}

fn instances(address: &Address, fields: Option<&Map<String, Value>>, map: MapFn) -> Vec<Instance> {
    fields
        .map(|fields| {
            map(&address.name, fields)
                .into_iter()
                .map(|resource| Instance { resource, index: address.name.clone() })
                .collect()
        })
        .unwrap_or_default()
}

fn values_json(instance: &Instance) -> Value {
    let resource = &instance.resource;
    json!({
        "address": resource.address(&instance.index),
        "mode": "managed",
        "type": resource.kind,
        "name": resource.name,
        "index": instance.index,
        "provider_name": resource.provider.source(),
        "schema_version": 0,
        "values": resource.values,
        "sensitive_values": {},
    })
}

/// The plan in Terraform's JSON output format.
pub fn view(plan: &Plan, inputs: Inputs<'_>) -> Value {
    let mut planned = Vec::new();
    let mut prior = Vec::new();
    let mut changes = Vec::new();
    let mut blocks: BTreeMap<(&'static str, &'static str), &ProviderResource> = BTreeMap::new();
    let mut all: Vec<Instance> = Vec::new();
    let mut provider_addresses = Map::new();
    let mut unmapped = BTreeSet::new();
    let adopted: BTreeSet<&Address> = plan
        .takeovers
        .iter()
        .filter(|(_, takeover)| **takeover == crate::plan::Takeover::Import)
        .map(|(address, _)| address)
        .collect();

    let by_address: BTreeMap<&Address, &crate::plan::Change> = plan.changes.iter().map(|c| (&c.address, c)).collect();
    for (address, observed) in &plan.observed {
        let Some(map) = (inputs.mapping)(address.kind) else {
            unmapped.insert(address.kind.as_str());
            continue;
        };
        let desired = inputs.declared.get(address);
        let change = by_address.get(address).copied();
        let (before, after) = match change {
            Some(change) => (change.before.clone(), change.after.clone()),
            // Unchanged: what was observed of the managed fields is what is desired.
            None => match (desired, observed) {
                (Some(desired), crate::plan::Observed::Present(_)) => (Some(desired.clone()), Some(desired.clone())),
                // A destroy makes nothing: what is absent is not in its plan.
                (Some(_), crate::plan::Observed::Absent) if plan.destroy => continue,
                (Some(desired), crate::plan::Observed::Absent) => (None, Some(desired.clone())),
                (None, _) => continue,
            },
        };
        if let crate::plan::Observed::Present(fields) = observed {
            prior.extend(instances(address, Some(fields), map).iter().map(values_json));
        }
        let before = instances(address, before.as_ref(), map);
        let after = instances(address, after.as_ref(), map);
        if before.is_empty() && after.is_empty() {
            unmapped.insert(address.kind.as_str());
        }
        let replaced = change.is_some_and(|c| c.action == Action::Replace);
        let deleted_undeclared = desired.is_none();
        // Paired by type and block name; after's order first, then what only before has.
        let mut keys: Vec<(&'static str, &'static str)> =
            after.iter().map(|i| (i.resource.kind, i.resource.name)).collect();
        for instance in &before {
            let key = (instance.resource.kind, instance.resource.name);
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        let mut entries: Vec<Value> = Vec::new();
        for (position, key) in keys.iter().enumerate() {
            let b = before.iter().find(|i| (i.resource.kind, i.resource.name) == *key);
            let a = after.iter().find(|i| (i.resource.kind, i.resource.name) == *key);
            let instance = a.or(b).expect("a key comes from one side");
            let differing: Vec<&String> = match (b, a) {
                (Some(b), Some(a)) => {
                    let names: BTreeSet<&String> = b.resource.values.keys().chain(a.resource.values.keys()).collect();
                    names.into_iter().filter(|n| b.resource.values.get(*n) != a.resource.values.get(*n)).collect()
                }
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
                (None, None) => unreachable!("a key comes from one side"),
            };
            let side = |i: Option<&Instance>| i.map_or(Value::Null, |i| Value::Object(i.resource.values.clone()));
            let sensitive = |i: Option<&Instance>| if i.is_some() { json!({}) } else { json!(false) };
            let mut change = json!({
                "actions": actions,
                "before": side(b),
                "after": side(a),
                "after_unknown": if a.is_some() { json!({}) } else { json!(false) },
                "before_sensitive": sensitive(b),
                "after_sensitive": sensitive(a),
            });
            if actions.len() == 2 {
                let paths: Vec<Value> = forced.iter().map(|n| json!([n])).collect();
                change["replace_paths"] =
                    json!(if paths.is_empty() { differing.iter().map(|n| json!([n])).collect() } else { paths });
            }
            // The first provider resource of an adopted one is the one "imported".
            if position == 0 && adopted.contains(address) && b.is_some() {
                change["importing"] = json!({ "id": address.name });
            }
            let mut entry = json!({
                "address": instance.resource.address(&instance.index),
                "mode": "managed",
                "type": instance.resource.kind,
                "name": instance.resource.name,
                "index": instance.index,
                "provider_name": instance.resource.provider.source(),
                "change": change,
            });
            if let Some(reason) = reason {
                entry["action_reason"] = json!(reason);
            }
            provider_addresses.insert(instance.resource.address(&instance.index), json!(address.to_string()));
            entries.push(entry);
        }
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
        changes.append(&mut entries);
        planned.extend(after.iter().map(values_json));
        all.extend(after.into_iter().chain(before));
    }
    for instance in &all {
        blocks.entry((instance.resource.kind, instance.resource.name)).or_insert(&instance.resource);
    }
    let providers: BTreeSet<Provider> = blocks.values().map(|r| r.provider).collect();
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
    let configuration: Vec<Value> = blocks
        .values()
        .map(|resource| {
            let expressions: Map<String, Value> = resource
                .references
                .iter()
                .map(|(argument, block, _)| ((*argument).to_owned(), json!({ "references": [block, "each.key"] })))
                .collect();
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
        })
        .collect();
    let applyable = !plan.changes.is_empty() && !plan.findings.iter().any(crate::plan::Finding::refuses);
    let mut native = inputs.native;
    if let Value::Object(fields) = &mut native {
        fields.insert("provider_addresses".to_owned(), Value::Object(provider_addresses));
        fields.insert("unmapped_kinds".to_owned(), json!(unmapped));
    }
    json!({
        "format_version": FORMAT_VERSION,
        "terraform_version": TERRAFORM_VERSION,
        "planned_values": { "root_module": { "resources": planned } },
        "resource_changes": changes,
        "prior_state": {
            "format_version": FORMAT_VERSION,
            "terraform_version": TERRAFORM_VERSION,
            "values": { "root_module": { "resources": prior } },
        },
        "configuration": { "provider_config": provider_config, "root_module": { "resources": configuration } },
        "applyable": applyable,
        "complete": true,
        "errored": false,
        "reconcile": native,
    })
}

/// The one line Terraform prints, with every object's keys sorted and the bidirectional
/// controls escaped ([`crate::json::to_pretty`] says why).
pub fn to_line(value: &Value) -> String {
    crate::json::escape_bidi(crate::json::to_compact(value))
}

/// A JSON policy document as the provider holds it: a string.
pub fn policy_string(document: &Value) -> Value {
    if document.is_null() { Value::Null } else { Value::String(crate::json::to_compact(document)) }
}

/// The provider's `tags` and `tags_all` (with no provider default tags, the same map).
pub fn tags(fields: &Map<String, Value>) -> (Value, Value) {
    let tags = fields.get("tags").cloned().unwrap_or_else(|| json!({}));
    (tags.clone(), tags)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::object;
    use crate::plan::{Change, Observed};

    const THING: ResourceKind = crate::fake::kinds::ECR_REPOSITORY;
    const UNMAPPED: ResourceKind = crate::fake::kinds::GITHUB_FORK_PR_APPROVAL;

    /// A kind that is a `thing` and, while `extra` is set, a `thing_extra` besides.
    fn map(name: &str, fields: &Map<String, Value>) -> Vec<ProviderResource> {
        let mut out = vec![
            ProviderResource::new(
                Provider::Aws,
                "aws_thing",
                "thing",
                json!({ "name": name, "size": fields.get("size") }),
            )
            .forcing_new(&["name"]),
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
        view(plan, Inputs { declared: &declared, mapping: &mapping, native: json!({ "native": true }) })
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
        plan.observed.insert(Address::new(THING, "a/b"), Observed::Present(object(json!({ "size": 1, "arn": "x" }))));
        plan.observed.insert(Address::new(UNMAPPED, "ROCm/x"), Observed::Present(Map::new()));
        let view = view_of(&plan, &[("a/b", json!({ "size": 1 }))]);
        assert_eq!(actions(&view), [("aws_thing.thing[\"a/b\"]".to_owned(), vec!["no-op".to_owned()])]);
        let entry = &view["resource_changes"][0];
        assert_eq!(entry["index"], "a/b");
        assert_eq!(entry["mode"], "managed");
        assert_eq!(entry["provider_name"], "registry.terraform.io/hashicorp/aws");
        assert_eq!(entry["change"]["before"], entry["change"]["after"]);
        assert_eq!(
            view["planned_values"]["root_module"]["resources"][0]["values"],
            json!({ "name": "a/b", "size": 1 })
        );
        assert_eq!(view["prior_state"]["values"]["root_module"]["resources"].as_array().unwrap().len(), 1);
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
        assert_eq!(changes[3]["change"]["before_sensitive"], false);
        assert_eq!(changes[3]["change"]["after_unknown"], json!({}));
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
        assert_eq!(view["configuration"]["provider_config"]["aws"]["expressions"]["region"]["constant_value"], "r");
        assert_eq!(view["applyable"], true);
    }

    #[test]
    fn a_replacement_replaces_what_cannot_change_and_an_adoption_is_an_import() {
        let mut plan = Plan::new("1", "r");
        plan.observed.insert(Address::new(THING, "a"), Observed::Present(object(json!({ "size": 1 }))));
        plan.changes = vec![change("a", Action::Replace, Some(json!({ "size": 1 })), Some(json!({ "size": 2 })))];
        plan.takeovers.insert(Address::new(THING, "a"), crate::plan::Takeover::Import);
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
    fn the_line_escapes_bidirectional_controls() {
        let line = to_line(&json!({ "b": "x\u{202e}y", "a": 1 }));
        assert_eq!(line, "{\"a\":1,\"b\":\"x\\u202ey\"}");
        assert!(!line.contains('\n'));
    }
}
