//! `import --generate`'s edit: every crate's lines ([`reconcile_core::generate::Entry`]) merged
//! into desired.toml with `toml_edit`, everything already there kept as it was (as `declare` and
//! `import` edit it). Pure: text in, text out. Which resources are written, and the proof that
//! the result plans only imports, are the command's (commands/import.rs).

use std::collections::{BTreeMap, BTreeSet};

use reconcile_core::desired::{Desired, Reference};
use reconcile_core::generate::{Entry, Found, Generated};
use reconcile_core::{Account, Address};
use serde_json::Value as Json;
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, Value};

use crate::catalog::CATALOG;

/// What every crate made of the chosen resources.
#[derive(Debug, Default)]
pub struct Generation {
    /// desired.toml with the lines added.
    pub text: String,
    /// Each declared resource's AWS name, by the table key path of each line written for it.
    pub owners: Vec<(String, String)>,
    /// Resources left out, each with why.
    pub left_out: Vec<(String, String)>,
    pub notes: Vec<String>,
    /// What reconcile derives for what is written ([`Generated::derived`]).
    pub derived: BTreeSet<Address>,
    /// What the user's desired.toml already said that a written resource lacks
    /// ([`Generated::applied`]): its import applies it.
    pub applied: Vec<(String, &'static str, serde_json::Map<String, Json>)>,
}

/// Every crate's lines for `chosen` (in the catalog's order: a role before the project that
/// names it), merged into `text`.
pub fn generate(text: &str, desired: &Desired, account: &Account, chosen: &[&Found]) -> Result<Generation, String> {
    let mut references: Vec<Reference> = desired.references.clone();
    let mut generated: Vec<Generated> = Vec::new();
    for description in CATALOG.0 {
        let mine: Vec<&Found> = chosen.iter().copied().filter(|f| description.kinds.contains(&f.kind)).collect();
        if mine.is_empty() {
            continue;
        }
        let lines = (description.generate)(&mine, desired, account, &references);
        references.extend(lines.references.iter().cloned());
        generated.push(lines);
    }
    let mut document: DocumentMut = text.parse().map_err(|e| format!("desired.toml could not be edited: {e}"))?;
    let mut generation = Generation::default();
    for lines in generated {
        for (at, entry) in lines.entries.iter().enumerate() {
            insert(&mut document, entry)?;
            if let Some(owner) = lines.owners.get(&at) {
                generation.owners.push((format!("{}.{}", entry.table.join("."), entry.key), owner.clone()));
            }
        }
        generation.left_out.extend(lines.left_out);
        generation.derived.extend(lines.derived);
        generation.notes.extend(lines.notes);
        generation.applied.extend(lines.applied);
    }
    generation.text = document.to_string();
    Ok(generation)
}

/// The resources a key path of desired.toml (a validation error's) was written for.
pub fn owners_of<'a>(generation: &'a Generation, key_path: &str) -> BTreeSet<&'a str> {
    generation
        .owners
        .iter()
        .filter(|(path, _)| {
            key_path == path || key_path.starts_with(&format!("{path}.")) || key_path.starts_with(&format!("{path}["))
        })
        .map(|(_, owner)| owner.as_str())
        .collect()
}

/// The AWS name each address of a plan was declared for: what a change the proof refuses takes
/// out. A resource under another (a lifecycle policy, a webhook) is its parent's.
pub fn owner_of_address(
    resources: &BTreeMap<Address, reconcile_core::DesiredResource>,
    address: &Address,
) -> Option<String> {
    let resource = resources.get(address)?;
    match &resource.parent {
        Some(parent) => owner_of_address(resources, parent),
        None => Some(resource.remote_name.clone()),
    }
}

fn insert(document: &mut DocumentMut, entry: &Entry) -> Result<(), String> {
    let mut table: &mut Table = document.as_table_mut();
    let depth = entry.table.len();
    for (at, part) in entry.table.iter().enumerate() {
        let last = at + 1 == depth;
        let item = table.entry(part).or_insert_with(|| {
            let mut new = Table::new();
            // A table that only holds tables is not written as a header of its own.
            new.set_implicit(!last);
            if last {
                new.decor_mut().set_prefix("\n");
            }
            Item::Table(new)
        });
        let path = entry.table[..=at].join(".");
        table = item.as_table_mut().ok_or_else(|| format!("`{path}` in desired.toml is not a table"))?;
        if last {
            table.set_implicit(false);
        }
    }
    if table.contains_key(&entry.key) {
        return Ok(());
    }
    let lines = matches!(entry.value.as_array(), Some(items) if items.iter().any(|i| i.is_object() || i.is_array()));
    let mut value = value(&entry.value, lines, entry.order);
    value.decor_mut().set_prefix(" ");
    table.insert(&entry.key, Item::Value(value));
    if let (Some(comment), Some(mut key)) = (&entry.comment, table.key_mut(&entry.key)) {
        key.leaf_decor_mut().set_prefix(format!("# {comment}\n"));
    }
    Ok(())
}

/// A JSON value as TOML: objects inline, their keys in `order`, and an array of arrays or objects
/// one element a line when `lines` (lifecycle rules and filter groups, as desired.toml writes
/// them).
fn value(json: &Json, lines: bool, order: &[&str]) -> Value {
    match json {
        Json::Null => Value::from(""),
        Json::Bool(b) => Value::from(*b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Value::from(i),
            None => Value::from(n.as_f64().unwrap_or_default()),
        },
        Json::String(s) => one_line(s),
        Json::Array(items) => {
            let mut array = Array::new();
            for item in items {
                let mut element = value(item, false, order);
                if lines {
                    element.decor_mut().set_prefix("\n  ");
                } else if !array.is_empty() {
                    element.decor_mut().set_prefix(" ");
                }
                array.push_formatted(element);
            }
            if lines && !items.is_empty() {
                array.set_trailing("\n");
                array.set_trailing_comma(true);
            }
            Value::Array(array)
        }
        Json::Object(fields) => {
            let mut table = InlineTable::new();
            let mut keys: Vec<&String> = fields.keys().collect();
            keys.sort_by_key(|key| (order.iter().position(|known| known == key).unwrap_or(order.len()), key.as_str()));
            for key in keys {
                table.insert(key, value(&fields[key], false, order));
            }
            table.fmt();
            Value::InlineTable(table)
        }
    }
}

/// A live string as one line of desired.toml: as TOML would write it, unless it holds a line
/// break or a character a reviewer cannot see; then a basic string with those escaped (`\n`,
/// `\u202E`), so a description's lines cannot read as tables of desired.toml in a diff (desired.toml
/// still refuses what the escape stands for, and the resource is left out).
fn one_line(s: &str) -> Value {
    if !s.chars().any(|c| c.is_control() || reconcile_core::text::unreadable(c).is_some()) {
        return Value::from(s);
    }
    let mut quoted = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\n' => quoted.push_str("\\n"),
            '\t' => quoted.push_str("\\t"),
            c if (c as u32) > 0xffff => quoted.push_str(&format!("\\U{:08X}", c as u32)),
            c if c.is_control() || reconcile_core::text::unreadable(c).is_some() => {
                quoted.push_str(&format!("\\u{:04X}", c as u32));
            }
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted.parse().unwrap_or_else(|_| Value::from(s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_live_string_is_one_line_with_what_a_reviewer_cannot_see_escaped_and_reads_back_the_same() {
        let description = "keep three\n[ci]\napply_role = \"attacker-role\"\t\u{202e}x\u{1b}[2J \"q\" \\";
        let written = one_line(description).to_string();
        assert_eq!(written.trim(), r#""keep three\n[ci]\napply_role = \"attacker-role\"\t\u202Ex\u001B[2J \"q\" \\""#);
        let document: DocumentMut = format!("description = {written}\n").parse().unwrap();
        assert_eq!(document["description"].as_str(), Some(description));
        assert_eq!(one_line("plain").to_string(), "\"plain\"");
    }

    #[test]
    fn lines_land_in_their_tables_and_what_was_there_stays_as_it_was() {
        let text =
            "# the account\nregion = \"us-east-1\"\ndeployment = \"d\"\n\n[nightly]\narches = \"gfx1201\" # one\n";
        let mut document: DocumentMut = text.parse().expect("parses");
        let entries = [
            Entry::new(&["ecr", "defaults"], "lifecycle_policy", json!("keep-3-untagged")),
            Entry::new(
                &["ecr", "lifecycle_policies", "keep-3-untagged"],
                "rules",
                json!([{"action": {"type": "expire"}, "rulePriority": 1}]),
            )
            .ordered(&["rulePriority", "action"]),
            Entry::new(&["ecr", "repositories"], "a", json!({})),
            Entry::new(&["ecr", "repositories"], "a-cache", json!({"tags": {"kind": "cache"}})).commented("why"),
            Entry::new(
                &["codebuild", "projects", "runner", "webhook"],
                "filter_groups",
                json!([[{"pattern": "PUSH", "type": "EVENT"}]]),
            )
            .ordered(&["type", "pattern"]),
        ];
        for entry in &entries {
            insert(&mut document, entry).expect("inserts");
        }
        assert_eq!(
            document.to_string(),
            "# the account\nregion = \"us-east-1\"\ndeployment = \"d\"\n\n[nightly]\narches = \"gfx1201\" # one\n\n\
             [ecr.defaults]\nlifecycle_policy = \"keep-3-untagged\"\n\n\
             [ecr.lifecycle_policies.keep-3-untagged]\nrules = [\n  { rulePriority = 1, action = { type = \"expire\" } },\n]\n\n\
             [ecr.repositories]\na = {}\n# why\na-cache = { tags = { kind = \"cache\" } }\n\n\
             [codebuild.projects.runner.webhook]\nfilter_groups = [\n  [{ type = \"EVENT\", pattern = \"PUSH\" }],\n]\n"
        );
    }
}
