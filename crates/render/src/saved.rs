//! Saved plans: `plan --out` writes the JSON plan together with what `apply` needs to know that
//! the plan still holds, and `apply <file>` reads it back.
//!
//! Compact: each resource's values are held once (what was observed, what was declared), and
//! Terraform's view, which repeats every resource three times over, is derived from them again
//! when `show` asks for it; a plan of no changes grows by what each resource is, not by copies.
//!
//! There is no state file to carry a serial, so the observed values are the state: the saved
//! plan holds a fingerprint of what was observed for every resource it touches, and one of
//! desired.toml. Apply plans again, the way the saved plan was made, and refuses if anything it
//! touches moved, or if the changes it derives are not exactly the file's: none edited, none
//! added, none left out (a plan cut down to the change that turns the nightly on is not the
//! plan that was reviewed). The file holds nothing secret: observation never reads secrets (a
//! webhook's secret, for one).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::plan as render;
use reconcile_core::address::{Address, ResourceKind};
use reconcile_core::json::fingerprint_text;
use reconcile_core::plan::{Action, Change, Observed, Plan, Takeover};

/// A plan read back from a file, with what it was made against.
#[derive(Debug, Clone, PartialEq)]
pub struct SavedPlan {
    pub plan: Plan,
    pub desired_fingerprint: String,
    /// For every address the plan changes: the fingerprint of what was observed there.
    pub observed_fingerprints: BTreeMap<Address, String>,
    pub made_with: MadeWith,
    /// What its Terraform view is derived from again; `None` in a plan saved with the view
    /// itself (by an earlier reconcile), which `show` prints as it was saved.
    pub view: Option<SavedView>,
}

/// What a saved plan's Terraform view is made from, besides the plan: the declared fields of
/// every resource the plan looked at, what was last applied (a pull request's base), and when
/// the plan was made.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SavedView {
    pub declared: BTreeMap<Address, Map<String, Value>>,
    pub last_applied: Option<BTreeMap<Address, Map<String, Value>>>,
    pub made_at: String,
}

/// The keys a saved plan holds beyond the native JSON plan, which only apply and `show` read.
pub const SAVED_ONLY: [&str; 7] =
    ["desired_fingerprint", "observed_fingerprints", "made_with", "observed", "declared", "last_applied", "made_at"];

/// How a plan was made, beyond desired.toml: what applying it must do the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MadeWith {
    /// `--prune`: it may delete repositories desired.toml no longer declares.
    pub prune: bool,
    /// The GitHub side was checked (there was a token).
    pub github: bool,
    /// `plan --destroy`: it deletes what desired.toml declares, and only `destroy` carries it out.
    pub destroy: bool,
}

/// The saved form of `plan`, made from `desired_text` the way `made_with` says.
pub fn to_json(plan: &Plan, desired_text: &str, made_with: MadeWith) -> Value {
    let mut value = render::json(plan);
    let fingerprints: Map<String, Value> = plan
        .changes
        .iter()
        .map(|change| {
            let observed = plan.observed.get(&change.address).unwrap_or(&Observed::Absent);
            (change.address.to_string(), json!(observed.fingerprint()))
        })
        .collect();
    value["desired_fingerprint"] = json!(fingerprint_text(desired_text));
    value["observed_fingerprints"] = Value::Object(fingerprints);
    value["made_with"] = json!({ "prune": made_with.prune, "github": made_with.github, "destroy": made_with.destroy });
    value["observed"] = Value::Object(
        plan.observed
            .iter()
            .map(|(address, observed)| {
                let fields = match observed {
                    Observed::Present(fields) => Value::Object(fields.clone()),
                    Observed::Absent => Value::Null,
                };
                (address.to_string(), fields)
            })
            .collect(),
    );
    value
}

/// `saved` (from [`to_json`]) with what its Terraform view is derived from again.
pub fn keep_view(saved: &mut Value, view: &SavedView) {
    saved["declared"] = by_address(&view.declared);
    saved["last_applied"] = view.last_applied.as_ref().map_or(Value::Null, by_address);
    saved["made_at"] = json!(view.made_at);
}

fn by_address(map: &BTreeMap<Address, Map<String, Value>>) -> Value {
    Value::Object(map.iter().map(|(address, fields)| (address.to_string(), Value::Object(fields.clone()))).collect())
}

/// Each resource's fields under `key` of a saved plan, by address.
fn fields_by_address(
    value: &Value,
    key: &str,
    known: &[ResourceKind],
) -> Result<BTreeMap<Address, Map<String, Value>>, String> {
    let mut by_address = BTreeMap::new();
    for (address, fields) in value[key].as_object().ok_or(format!("the plan has no `{key}`"))? {
        let address = Address::parse(address, known)?;
        let Value::Object(fields) = fields else { return Err(format!("{address}: `{key}` is not an object")) };
        by_address.insert(address, fields.clone());
    }
    Ok(by_address)
}

/// Reads a saved plan back; its addresses are of `known` kinds (the catalog's).
pub fn from_json(value: &Value, known: &[ResourceKind]) -> Result<SavedPlan, String> {
    if value.get("terraform_version").is_some() {
        return Err("this is the Terraform view of a plan (`--format terraform-json`), which apply does not carry \
                    out: save the plan with `plan --out`"
            .to_owned());
    }
    let version = match (value[render::VERSION_KEY].as_str(), value["format_version"].as_str()) {
        (Some(version), _) => version,
        // Saved before 2.0 (by reconcile 0.1), under Terraform's key; the layout is the same.
        (None, Some(version)) if version.starts_with("1.") => render::FORMAT_VERSION,
        (None, _) => return Err(format!("not a reconcile plan: no `{}`", render::VERSION_KEY)),
    };
    if version.split('.').next() != render::FORMAT_VERSION.split('.').next() {
        return Err(format!(
            "plan format {version} is not supported (this reconcile writes {})",
            render::FORMAT_VERSION
        ));
    }
    let text = |key: &str| value[key].as_str().map(str::to_owned).ok_or(format!("the plan has no `{key}`"));
    let desired_fingerprint =
        text("desired_fingerprint").map_err(|_| "the plan was not saved with `plan --out`".to_owned())?;
    let mut changes = Vec::new();
    let mut takeovers = BTreeMap::new();
    for entry in value["resource_changes"].as_array().ok_or("the plan has no `resource_changes`")? {
        let (change, takeover) = change_from_json(entry, known)?;
        if let Some(takeover) = takeover {
            takeovers.insert(change.address.clone(), takeover);
        }
        changes.push(change);
    }
    let mut observed_fingerprints = BTreeMap::new();
    for (address, fingerprint) in
        value["observed_fingerprints"].as_object().ok_or("the plan has no `observed_fingerprints`")?
    {
        observed_fingerprints
            .insert(Address::parse(address, known)?, fingerprint.as_str().unwrap_or_default().to_owned());
    }
    let (observed, view) = view_from_json(value, known)?;
    let flag = |key: &str| value["made_with"][key].as_bool().unwrap_or(false);
    Ok(SavedPlan {
        made_with: MadeWith { prune: flag("prune"), github: flag("github"), destroy: flag("destroy") },
        plan: Plan {
            changes,
            takeovers,
            observed,
            destroy: flag("destroy"),
            ..Plan::new(text("account")?, text("region")?)
        },
        desired_fingerprint,
        observed_fingerprints,
        view,
    })
}

/// One entry of a saved plan's `resource_changes`: the change, and how it takes its resource
/// over, if it does.
fn change_from_json(entry: &Value, known: &[ResourceKind]) -> Result<(Change, Option<Takeover>), String> {
    let address = Address::parse(entry["address"].as_str().unwrap_or_default(), known)?;
    let actions: Vec<&str> =
        entry["change"]["actions"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let action = match actions.as_slice() {
        ["create"] => Action::Create,
        ["update"] => Action::Update,
        ["delete", "create"] => Action::Replace,
        ["delete"] => Action::Delete,
        other => return Err(format!("{address}: unknown actions {other:?}")),
    };
    let fields = |side: &str| match &entry["change"][side] {
        Value::Object(map) => Ok(Some(map.clone())),
        Value::Null => Ok(None),
        _ => Err(format!("{address}: `change.{side}` is not an object")),
    };
    let depends_on = entry["depends_on"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| Address::parse(d.as_str().unwrap_or_default(), known))
        .collect::<Result<Vec<Address>, String>>()?;
    let (before, after) = (fields("before")?, fields("after")?);
    let takeover = match &entry["takeover"] {
        Value::Null => None,
        takeover => Some(match takeover.as_str() {
            Some("import") => Takeover::Import,
            Some("remark") => Takeover::Remark,
            _ => return Err(format!("{address}: unknown `takeover` {takeover}")),
        }),
    };
    Ok((Change { address, action, before, after, depends_on }, takeover))
}

/// What a saved plan holds of each resource, and what else its Terraform view is made from
/// (none in a plan saved with the view itself, by an earlier reconcile).
fn view_from_json(
    value: &Value,
    known: &[ResourceKind],
) -> Result<(BTreeMap<Address, Observed>, Option<SavedView>), String> {
    let mut observed = BTreeMap::new();
    for (address, fields) in value["observed"].as_object().into_iter().flatten() {
        let address = Address::parse(address, known)?;
        let fields = match fields {
            Value::Object(fields) => Observed::Present(fields.clone()),
            Value::Null => Observed::Absent,
            _ => return Err(format!("{address}: `observed` is not an object")),
        };
        observed.insert(address, fields);
    }
    if value.get("declared").is_none() {
        return Ok((observed, None));
    }
    let view = SavedView {
        declared: fields_by_address(value, "declared", known)?,
        last_applied: match value["last_applied"] {
            Value::Null => None,
            _ => Some(fields_by_address(value, "last_applied", known)?),
        },
        made_at: value["made_at"].as_str().ok_or("the plan has no `made_at`")?.to_owned(),
    };
    Ok((observed, Some(view)))
}

/// Why a saved plan no longer holds; empty when it does.
pub fn staleness(saved: &SavedPlan, desired_text: &str, now: &BTreeMap<Address, Observed>) -> Vec<String> {
    let mut reasons = Vec::new();
    if fingerprint_text(desired_text) != saved.desired_fingerprint {
        reasons.push("desired.toml has changed since the plan was made".to_owned());
    }
    for (address, fingerprint) in &saved.observed_fingerprints {
        let current = now.get(address).unwrap_or(&Observed::Absent).fingerprint();
        if &current != fingerprint {
            reasons.push(format!("{address} has changed since the plan was made"));
        }
    }
    reasons
}

/// Why the saved changes are not exactly the ones desired.toml and the account give now
/// (`derived`, planned again the way the saved plan was made); empty when they are. Each saved
/// change must be derived again as it is in the file (an edited `after`, a policy widened in
/// the file with its fingerprints left alone, is refused), none may be added, and none derived
/// may be missing (a plan cut down to a subset is not the plan that was reviewed); and each
/// must take its resource over exactly as the file says (a takeover is reviewed as one).
pub fn tampering(saved: &SavedPlan, derived_plan: &Plan) -> Vec<String> {
    let derived: BTreeMap<&Address, &Change> =
        derived_plan.changes.iter().map(|change| (&change.address, change)).collect();
    let mut reasons = Vec::new();
    if saved.plan.takeovers != derived_plan.takeovers {
        reasons.push(
            "the resources it takes over (imports, re-marks) are not the ones desired.toml and the account give now: \
             the plan file was edited"
                .to_owned(),
        );
    }
    for change in &saved.plan.changes {
        if !saved.observed_fingerprints.contains_key(&change.address) {
            reasons.push(format!("{} has no fingerprint in the plan file: it was edited", change.address));
            continue;
        }
        if derived.get(&change.address) != Some(&change) {
            reasons.push(format!(
                "the change to {} is not the one desired.toml and the account give now: the plan file was edited",
                change.address
            ));
        }
    }
    let saved_addresses: std::collections::BTreeSet<&Address> = saved.plan.changes.iter().map(|c| &c.address).collect();
    for address in derived.keys().filter(|address| !saved_addresses.contains(*address)) {
        reasons.push(format!(
            "{address} needs a change the plan does not hold: it moved since the plan was made, or the plan file \
             was cut down"
        ));
    }
    reasons
}

#[cfg(test)]
mod tests {
    use super::*;
    use reconcile_core::json::object;

    const KNOWN: [ResourceKind; 3] = [
        reconcile_core::fake::kinds::ECR_REPOSITORY,
        reconcile_core::fake::kinds::ECR_LIFECYCLE_POLICY,
        reconcile_core::fake::kinds::IAM_ROLE_POLICY,
    ];

    fn from_json(value: &Value) -> Result<SavedPlan, String> {
        super::from_json(value, &KNOWN)
    }

    fn plan() -> Plan {
        let address = Address::new(reconcile_core::fake::kinds::ECR_LIFECYCLE_POLICY, "pytorch-cache");
        let observed = Observed::Present(object(json!({"policy": {"rules": []}})));
        Plan {
            changes: vec![Change {
                address: address.clone(),
                action: Action::Update,
                before: Some(object(json!({"policy": {"rules": []}}))),
                after: Some(object(json!({"policy": {"rules": [1]}}))),
                depends_on: vec![Address::new(reconcile_core::fake::kinds::ECR_REPOSITORY, "pytorch-cache")],
            }],
            observed: BTreeMap::from([(address, observed)]),
            ..Plan::new("123456789012", "us-east-1")
        }
    }

    #[test]
    fn a_saved_plan_reads_back_to_the_same_changes() {
        let mut plan = plan();
        // A create has no `before`, a delete no `after`: both read back as none.
        plan.changes.push(Change {
            address: Address::new(reconcile_core::fake::kinds::ECR_REPOSITORY, "vllm"),
            action: Action::Create,
            before: None,
            after: Some(object(json!({"scan_on_push": false}))),
            depends_on: vec![],
        });
        plan.changes.push(Change {
            address: Address::member(reconcile_core::fake::kinds::IAM_ROLE_POLICY, "codebuild", "legacy"),
            action: Action::Delete,
            before: Some(object(json!({"policy_name": "legacy"}))),
            after: None,
            depends_on: vec![],
        });
        let saved = from_json(&to_json(&plan, "region = \"us-east-1\"", MadeWith::default())).unwrap();
        assert_eq!(saved.plan.changes, plan.changes);
        assert!(staleness(&saved, "region = \"us-east-1\"", &plan.observed).is_empty());
        assert_eq!(saved.view, None, "saved without what its view is made from");
    }

    #[test]
    fn a_saved_plan_keeps_each_resources_values_once_for_its_view() {
        let mut plan = plan();
        let absent = Address::new(reconcile_core::fake::kinds::ECR_REPOSITORY, "vllm");
        plan.observed.insert(absent.clone(), Observed::Absent);
        let declared = BTreeMap::from([(absent.clone(), object(json!({"scan_on_push": true})))]);
        let view = SavedView { declared, last_applied: None, made_at: "2026-12-07T02:00:00Z".to_owned() };
        let mut value = to_json(&plan, "", MadeWith::default());
        keep_view(&mut value, &view);
        let saved = from_json(&value).unwrap();
        assert_eq!((saved.plan.observed, saved.view), (plan.observed, Some(view.clone())));
        let applied = SavedView { last_applied: Some(BTreeMap::new()), ..view };
        keep_view(&mut value, &applied);
        assert_eq!(from_json(&value).unwrap().view, Some(applied));
        value["declared"][absent.to_string()] = json!([1]);
        assert_eq!(from_json(&value).unwrap_err(), "ecr_repository.vllm: `declared` is not an object");
    }

    #[test]
    fn a_moved_resource_or_an_edited_desired_file_makes_it_stale() {
        let plan = plan();
        let saved = from_json(&to_json(&plan, "a", MadeWith::default())).unwrap();
        let mut now = plan.observed.clone();
        now.insert(plan.changes[0].address.clone(), Observed::Absent);
        assert_eq!(
            staleness(&saved, "b", &now),
            [
                "desired.toml has changed since the plan was made",
                "ecr_lifecycle_policy.pytorch-cache has changed since the plan was made"
            ]
        );
    }

    #[test]
    fn a_saved_plan_of_a_kind_not_known_is_refused() {
        let saved = to_json(&plan(), "", MadeWith::default());
        let unknown = super::from_json(&saved, &[reconcile_core::fake::kinds::ECR_REPOSITORY]).unwrap_err();
        assert_eq!(unknown, "unknown resource kind `ecr_lifecycle_policy`");
    }

    #[test]
    fn a_plan_without_fingerprints_or_of_another_major_version_is_refused() {
        let plan = plan();
        assert!(from_json(&render::json(&plan)).unwrap_err().contains("not saved with `plan --out`"));
        let mut future = to_json(&plan, "", MadeWith::default());
        future[render::VERSION_KEY] = json!("3.0");
        assert!(from_json(&future).unwrap_err().contains("plan format 3.0 is not supported"));
        // The Terraform view is not a saved plan.
        let mut view = to_json(&plan, "", MadeWith::default());
        view["terraform_version"] = json!("1.9.0");
        assert!(from_json(&view).unwrap_err().contains("`plan --out`"));
    }

    #[test]
    fn a_plan_saved_by_reconcile_0_1_under_terraforms_key_is_still_read() {
        let plan = plan();
        let mut old = to_json(&plan, "", MadeWith::default());
        let object = old.as_object_mut().unwrap();
        object.remove(render::VERSION_KEY);
        object.insert("format_version".to_owned(), json!("1.1"));
        assert_eq!(from_json(&old).unwrap().plan.changes, plan.changes);
        old["format_version"] = json!("0.9");
        assert!(from_json(&old).unwrap_err().contains("no `reconcile_plan_version`"));
    }

    #[test]
    fn a_saved_plan_records_how_it_was_made() {
        let made_with = MadeWith { prune: true, github: true, destroy: true };
        let saved = from_json(&to_json(&plan(), "", made_with)).unwrap();
        assert_eq!(saved.made_with, made_with);
        // A destroy plan read back is one: what it shows of the account makes nothing.
        assert!(saved.plan.destroy);
        assert!(!from_json(&to_json(&plan(), "", MadeWith::default())).unwrap().plan.destroy);
        // A file from before it was recorded: made without either.
        let mut old = to_json(&plan(), "", made_with);
        old.as_object_mut().unwrap().remove("made_with");
        assert_eq!(from_json(&old).unwrap().made_with, MadeWith::default());
    }

    #[test]
    fn the_saved_changes_must_be_exactly_the_ones_derived_again() {
        let plan = plan();
        let saved = from_json(&to_json(&plan, "", MadeWith::default())).unwrap();
        let derived = |changes: Vec<Change>| Plan { changes, ..plan.clone() };
        assert_eq!(tampering(&saved, &plan), Vec::<String>::new());

        // The file's `after` edited: not what desired.toml gives.
        let mut edited = saved.clone();
        edited.plan.changes[0].after = Some(object(json!({"policy": {"rules": [2]}})));
        assert_eq!(
            tampering(&edited, &plan),
            ["the change to ecr_lifecycle_policy.pytorch-cache is not the one desired.toml and the account give now: \
              the plan file was edited"]
        );
        // A change with no fingerprint: added to the file by hand.
        let mut added = saved.clone();
        added.observed_fingerprints.clear();
        assert_eq!(
            tampering(&added, &plan),
            ["ecr_lifecycle_policy.pytorch-cache has no fingerprint in the plan file: it was edited"]
        );
        // Nothing to change any more (desired.toml now asks for what is there).
        assert_eq!(tampering(&saved, &derived(vec![])).len(), 1);
        // Cut down: a change derived again that the file does not hold.
        let mut more = plan.changes.clone();
        let vllm = Change {
            address: Address::new(reconcile_core::fake::kinds::ECR_REPOSITORY, "vllm"),
            action: Action::Create,
            before: None,
            after: Some(object(json!({"scan_on_push": false}))),
            depends_on: vec![],
        };
        more.push(vllm);
        assert_eq!(
            tampering(&saved, &derived(more)),
            ["ecr_repository.vllm needs a change the plan does not hold: it moved since the plan was made, or the \
              plan file was cut down"]
        );
    }

    #[test]
    fn a_takeover_is_saved_read_back_and_held_to_what_is_derived_again() {
        let mut plan = plan();
        let address = plan.changes[0].address.clone();
        plan.takeovers.insert(address.clone(), Takeover::Import);
        let saved = from_json(&to_json(&plan, "", MadeWith::default())).unwrap();
        assert_eq!(saved.plan.takeovers, plan.takeovers);
        assert_eq!(tampering(&saved, &plan), Vec::<String>::new());
        // A re-mark in the file where an import is derived, or none: edited.
        let mut remark = saved.clone();
        remark.plan.takeovers.insert(address.clone(), Takeover::Remark);
        assert_eq!(tampering(&remark, &plan).len(), 1);
        let mut none = saved.clone();
        none.plan.takeovers.clear();
        assert!(tampering(&none, &plan)[0].starts_with("the resources it takes over"));
        // A re-mark is read back as one.
        let remarked = from_json(&to_json(&remark.plan, "", MadeWith::default())).unwrap();
        assert_eq!(remarked.plan.takeovers.get(&address), Some(&Takeover::Remark));
        // An unknown word is no takeover.
        let mut value = to_json(&plan, "", MadeWith::default());
        value["resource_changes"][0]["takeover"] = json!("steal");
        assert!(from_json(&value).unwrap_err().contains("unknown `takeover`"));
    }
}
