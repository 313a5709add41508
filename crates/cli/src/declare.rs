//! `reconcile declare`'s edit: every ECR repository of this account that the bake file names
//! and desired.toml does not declare, written into `[ecr.repositories]` the way its siblings are,
//! with everything else in the file (comments, blank lines, key order, quoting) as it was.
//! `toml_edit` keeps the formatting, as cargo's own edits of Cargo.toml do. Pure: text in, text
//! out.

use std::collections::{BTreeMap, BTreeSet};

use reconcile_core::Desired;
use toml_edit::{DocumentMut, InlineTable, Item, Key, Table, Value};

use reconcile_bake::{BakeFile, ecr_reference};

/// A repository to declare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Added {
    pub name: String,
    /// Named only as a BuildKit cache (`cache-to`, `cache-from`).
    pub cache: bool,
    /// The line it is declared with.
    pub line: String,
}

/// What `declare` would do.
#[derive(Debug, Clone, Default)]
pub struct Declaration {
    pub added: Vec<Added>,
    /// References left alone, each with why: another account's or region's registry, or not
    /// ECR at all (the fleet's).
    pub skipped: Vec<String>,
    /// desired.toml with the repositories added (the same text when none is).
    pub text: String,
}

/// What declaring the bake file's repositories makes of `text` (desired.toml, parsed as
/// `desired`). `account` is this account, when known; otherwise the one account whose registry
/// the bake file names in the region.
pub fn declare(text: &str, desired: &Desired, bake: &BakeFile, account: Option<&str>) -> Result<Declaration, String> {
    let Named { named, images, skipped } = named(desired, bake, account)?;
    let declared: BTreeSet<&str> = reconcile_ecr::declared(desired).names();
    let mut document: DocumentMut = text.parse().map_err(|e| format!("desired.toml could not be edited: {e}"))?;
    // The tags the declared cache repositories carry: a new cache repository carries them too,
    // and nothing else of its sibling's (a setting such as `allow_tagged_expiry` is a decision
    // about that repository, never copied).
    let repositories = repositories_table(&mut document)?;
    let cache_style =
        named.iter().filter(|(name, cache)| **cache && declared.contains(name.as_str())).find_map(|(name, _)| {
            let tags = repositories.get(name)?.as_value()?.as_inline_table()?.get("tags")?.clone();
            let mut style = InlineTable::new();
            style.insert("tags", tags.decorated(" ", " "));
            Some(Value::InlineTable(style))
        });
    let mut missing: Vec<(&String, &bool)> =
        named.iter().filter(|(name, _)| !declared.contains(name.as_str())).collect();
    // An image before its cache (the bake file's, whatever it is called), then by name.
    let image_of = |name: &str| images.get(name).cloned();
    missing.sort_by_key(|(name, _)| {
        let image = image_of(name);
        (image.clone().unwrap_or_else(|| (*name).clone()), image.is_some())
    });
    let mut added = Vec::new();
    for (name, cache) in missing {
        let value = match (&cache_style, cache) {
            (Some(style), true) => style.clone(),
            _ => Value::InlineTable(InlineTable::new()),
        };
        let item = Item::Value(value.decorated(" ", ""));
        // Beside its relative: a cache after the image it caches, an image before its cache.
        let beside = match image_of(name) {
            Some(image) => Some((image, true)),
            None => images.iter().find(|(_, image)| *image == name).map(|(cache, _)| (cache.clone(), false)),
        };
        insert_beside(repositories, name, item, beside);
        let line =
            repositories.get(name).map(|item| format!("{} ={}", Key::new(name.as_str()), item)).unwrap_or_default();
        added.push(Added { name: name.clone(), cache: *cache, line: line.trim_end().to_owned() });
    }
    let text = document.to_string();
    // What is written must be what validate accepts.
    crate::catalog::parse_desired(&desired.path, &text)
        .map_err(|errors| format!("the edited desired.toml would not be valid: {errors}"))?;
    let skipped = skipped.into_iter().map(|(why, count)| format!("{why} ({count} reference(s))")).collect();
    Ok(Declaration { added, skipped, text })
}

/// What the bake file names in this account's registry.
struct Named {
    /// Each repository, and whether every reference to it is a cache's.
    named: BTreeMap<String, bool>,
    /// Each cache repository (named only as a cache), and the image repository of the first
    /// target that caches to or from it: the image it is the cache of.
    images: BTreeMap<String, String>,
    /// Each reason a reference was left out, and how many were.
    skipped: BTreeMap<String, usize>,
}

/// The repositories the bake file names in this account's registry (`account`, or the one
/// account it names in the region), each with whether every reference to it is a cache's, and
/// which image each cache is of; and why each reference left out was, with how many.
fn named(desired: &Desired, bake: &BakeFile, account: Option<&str>) -> Result<Named, String> {
    let mut skipped: BTreeMap<String, usize> = BTreeMap::new();
    // Repository -> whether every reference to it is a cache's.
    let mut named: BTreeMap<String, bool> = BTreeMap::new();
    let mut accounts = BTreeSet::new();
    let mut candidates = Vec::new();
    for reference in &bake.references {
        let Some(ecr) = ecr_reference(&reference.reference) else {
            let host = reference.reference.split('/').next().unwrap_or_default();
            *skipped.entry(format!("{host}: not an ECR registry (the fleet's, or another)")).or_default() += 1;
            continue;
        };
        if ecr.region != desired.region {
            *skipped
                .entry(format!("account {}'s ECR registry in {}: another region", ecr.account, ecr.region))
                .or_default() += 1;
            continue;
        }
        accounts.insert(ecr.account.clone());
        candidates.push((ecr, reference.field, reference.target.as_str()));
    }
    let account = match (account, accounts.len()) {
        (Some(account), _) => account.to_owned(),
        (None, 0) => String::new(),
        (None, 1) => accounts.iter().next().cloned().unwrap_or_default(),
        (None, _) => {
            return Err(format!(
                "the bake file names the ECR registries of accounts {} in {}: say which is this account's with --account",
                accounts.into_iter().collect::<Vec<_>>().join(", "),
                desired.region
            ));
        }
    };
    // Target -> the repositories it tags its image into, and those it caches in, in order.
    let mut targets: BTreeMap<&str, (Vec<String>, Vec<String>)> = BTreeMap::new();
    for (ecr, field, target) in candidates {
        if ecr.account != account {
            *skipped.entry(format!("account {}'s ECR registry: another account", ecr.account)).or_default() += 1;
            continue;
        }
        // A name made with a value from the environment would write that value into
        // desired.toml, and show it in every plan: it is never declared.
        let shown = bake.redact(&ecr.repository);
        if shown != ecr.repository {
            *skipped
                .entry(format!(
                    "repository `{shown}`: its name holds a value from the environment, which is never written"
                ))
                .or_default() += 1;
            continue;
        }
        let cache = field != "tags";
        let (tagged, cached) = targets.entry(target).or_default();
        if cache { cached } else { tagged }.push(ecr.repository.clone());
        named.entry(ecr.repository).and_modify(|all_cache| *all_cache &= cache).or_insert(cache);
    }
    let mut images = BTreeMap::new();
    for target in bake.references.iter().map(|r| r.target.as_str()) {
        let Some((tagged, cached)) = targets.get(target) else { continue };
        let Some(image) = tagged.first() else { continue };
        for cache in cached.iter().filter(|cache| named.get(*cache) == Some(&true) && *cache != image) {
            images.entry(cache.clone()).or_insert_with(|| image.clone());
        }
    }
    Ok(Named { named, images, skipped })
}

/// `[ecr.repositories]`, made if desired.toml has none.
fn repositories_table(document: &mut DocumentMut) -> Result<&mut Table, String> {
    let ecr = document.entry("ecr").or_insert_with(|| {
        let mut table = Table::new();
        table.set_implicit(true);
        Item::Table(table)
    });
    let ecr = ecr.as_table_mut().ok_or("`ecr` in desired.toml is not a table")?;
    ecr.entry("repositories")
        .or_insert_with(|| Item::Table(Table::new()))
        .as_table_mut()
        .ok_or_else(|| "`ecr.repositories` in desired.toml is not a table".to_owned())
}

/// Inserts `name` next to its relative (`beside`: after it when the flag says so, before it
/// otherwise) when the table has it, or at the end: every other entry keeps its place and its
/// formatting.
fn insert_beside(table: &mut Table, name: &str, item: Item, beside: Option<(String, bool)>) {
    let keys: Vec<String> = table.iter().map(|(key, _)| key.to_owned()).collect();
    let position = beside.and_then(|(relative, after)| {
        keys.iter().position(|k| *k == relative).map(|at| if after { at + 1 } else { at })
    });
    let Some(position) = position else {
        table.insert(name, item);
        return;
    };
    // The entries from `position` on are taken out and put back after the new one, each with
    // its own decoration (the comment above it, its spacing).
    let moved: Vec<(Key, Item)> = keys[position..].iter().filter_map(|k| table.remove_entry(k)).collect();
    table.insert(name, item);
    for (key, item) in moved {
        table.insert_formatted(&key, item);
    }
}

/// What to tell someone whose desired.toml lacks repositories the bake file names (W401): the
/// exact lines to add, and the command that adds them. `None` when nothing is missing, or the
/// lines cannot be worked out (the refusal itself still says what is missing).
pub fn hint(text: &str, desired: &Desired, bake: &BakeFile, account: Option<&str>) -> Option<(Vec<String>, String)> {
    let declaration = declare(text, desired, bake, account).ok()?;
    if declaration.added.is_empty() {
        return None;
    }
    let lines = declaration.added.iter().map(|a| a.line.clone()).collect();
    Some((lines, format!("reconcile declare --bake {}", bake.name)))
}

/// [`hint`] as text lines.
pub fn hint_text((lines, command): &(Vec<String>, String)) -> String {
    let mut out = String::from("To declare them, add under [ecr.repositories] in desired.toml:\n");
    for line in lines {
        out.push_str(&format!("  {line}\n"));
    }
    out.push_str(&format!("or run: {command}\n"));
    out
}
