//! What `reconcile import --generate` asks of each resource crate: what the account holds of its
//! kinds that desired.toml does not declare ([`Found`], read by its reconciler's `inventory`), and
//! the lines of desired.toml that declare it as it is ([`Generated`], by its description's pure
//! `generate`). The binary merges every crate's lines into desired.toml and proves the result
//! before writing it: its plan must change nothing but the imports.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::address::ResourceKind;
use crate::desired::{Desired, Reference};

/// One resource the account holds of a crate's kinds, as its reconciler read it.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub kind: ResourceKind,
    /// The name AWS knows it by.
    pub name: String,
    /// The deployment whose mark it carries, if any: another deployment's is never written.
    pub deployment: Option<String>,
    /// Written when no pattern is given. A role is not: an account holds many, and one is
    /// written only when something written runs as it, or a pattern names it.
    pub by_default: bool,
    /// The AWS names of what must be declared with it (the role a project runs as).
    pub needs: Vec<String>,
    /// Its live state, in its crate's own terms: only that crate's `generate` reads it.
    pub live: Map<String, Value>,
}

/// A line of desired.toml: `key = value` in the table at `table`. A JSON object value is written
/// as an inline table, an array as an array (of inline tables, one a line, when it holds any).
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub table: Vec<String>,
    pub key: String,
    pub value: Value,
    /// A comment line written above it, for what a reviewer should know of the value.
    pub comment: Option<String>,
    /// The order an object's keys are written in, at any depth, as a person writes them (JSON
    /// objects have none of their own); keys it does not name come after, in name order.
    pub order: &'static [&'static str],
}

impl Entry {
    pub fn new(table: &[&str], key: &str, value: Value) -> Entry {
        Entry {
            table: table.iter().map(|&part| part.to_owned()).collect(),
            key: key.to_owned(),
            value,
            comment: None,
            order: &[],
        }
    }

    pub fn ordered(mut self, order: &'static [&'static str]) -> Entry {
        self.order = order;
        self
    }

    pub fn commented(mut self, comment: impl Into<String>) -> Entry {
        self.comment = Some(comment.into());
        self
    }
}

/// What one crate makes of the resources chosen of its kinds.
#[derive(Debug, Default, Clone)]
pub struct Generated {
    pub entries: Vec<Entry>,
    /// Which of `entries` declare which resource (its AWS name), so a resource whose declaration
    /// the proof rejects is taken out whole.
    pub owners: BTreeMap<usize, String>,
    /// What it declares that another crate's lines refer to (a role's key, for a project's
    /// `service_role`), as desired.toml's own sections publish them.
    pub references: Vec<Reference>,
    /// Resources it could not declare as they are, each with why: never written.
    pub left_out: Vec<(String, String)>,
    /// What reconcile derives for what these lines declare (a role's inline policy and
    /// boundary), not what they say: a plan that changes one is said as what the live one holds
    /// beyond the derived one, never taken for a line that cannot say the live value.
    pub derived: Vec<crate::Address>,
    /// What a reviewer should know of what it wrote (a value kept that a plan warns about).
    pub notes: Vec<String>,
    /// What the user's desired.toml already says that a written resource lacks, by the
    /// resource's AWS name: a field and the keys it gains (a tag its `[ecr.defaults]` gives every
    /// repository), or a kind of resource under it that its import makes (the lifecycle policy
    /// `[ecr.defaults]` names, with no keys). A plan that does exactly that is the takeover's,
    /// not a live value desired.toml cannot say.
    pub applied: Vec<(String, &'static str, Map<String, Value>)>,
}

impl Generated {
    /// Adds `entry`, as part of the declaration of `name`.
    pub fn push(&mut self, name: &str, entry: Entry) {
        self.owners.insert(self.entries.len(), name.to_owned());
        self.entries.push(entry);
    }
}

/// A key for `name` as a person would write it in desired.toml: without the deployment's name
/// before it or the account id after it, in the lower-case words keys are made of; `fallback`
/// when nothing is left. `taken` keys are avoided with a numbered suffix.
pub fn key_for(name: &str, desired: &Desired, account_id: &str, fallback: &str, taken: &[String]) -> String {
    let mut rest = name;
    for prefix in [desired.deployment.as_str()] {
        if let Some(stripped) = rest.strip_prefix(prefix) {
            rest = stripped.trim_start_matches(['-', '_', '.']);
        }
    }
    if !account_id.is_empty()
        && let Some(stripped) = rest.strip_suffix(account_id)
    {
        rest = stripped.trim_end_matches(['-', '_', '.']);
    }
    let mut key: String = rest
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c.to_ascii_lowercase() } else { '-' })
        .collect();
    key = key.trim_matches(['-', '_']).to_owned();
    if key.is_empty() || !key.starts_with(|c: char| c.is_ascii_lowercase()) || crate::desired::check_key(&key).is_err()
    {
        key = fallback.to_owned();
    }
    let mut candidate = key.clone();
    let mut n = 2;
    while taken.contains(&candidate) {
        candidate = format!("{key}-{n}");
        n += 1;
    }
    candidate
}

/// `name` with this account's id written as desired.toml's `${account_id}`, as a bucket's name
/// is declared so the file reads the same in every account.
pub fn templated(name: &str, account_id: &str) -> String {
    if account_id.is_empty() { name.to_owned() } else { name.replace(account_id, "${account_id}") }
}

/// Whether `name` matches one of `patterns` (`*` any run of characters); every name when there is
/// no pattern.
pub fn matches(name: &str, patterns: &[String]) -> bool {
    patterns.is_empty() || patterns.iter().any(|pattern| glob(pattern.as_bytes(), name.as_bytes()))
}

fn glob(pattern: &[u8], name: &[u8]) -> bool {
    match pattern.split_first() {
        None => name.is_empty(),
        Some((b'*', rest)) => (0..=name.len()).any(|at| glob(rest, &name[at..])),
        Some((c, rest)) => name.split_first().is_some_and(|(n, tail)| n == c && glob(rest, tail)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_matches_whole_names_with_stars_for_any_run() {
        let patterns = |p: &[&str]| p.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(matches("pytorch-cache", &patterns(&[])));
        assert!(matches("pytorch-cache", &patterns(&["*-cache"])));
        assert!(matches("pytorch-cache", &patterns(&["vllm", "pytorch*"])));
        assert!(!matches("pytorch-cache", &patterns(&["pytorch"])));
        assert!(!matches("teamy/app", &patterns(&["team*x"])));
        assert!(matches("teamy/app", &patterns(&["*"])));
    }

    #[test]
    fn a_key_leaves_out_the_deployment_and_the_account_and_is_never_taken_twice() {
        let desired = Desired::parse(
            std::path::Path::new("desired.toml"),
            "region = \"us-east-1\"\ndeployment = \"rocm-bake\"\n",
        )
        .expect("valid");
        let account = "123456789012";
        assert_eq!(key_for("rocm-bake-sccache-123456789012", &desired, account, "bucket", &[]), "sccache");
        assert_eq!(key_for("rocm-bake-codebuild", &desired, account, "role", &[]), "codebuild");
        assert_eq!(key_for("rocm-bake", &desired, account, "runner", &[]), "runner");
        assert_eq!(key_for("rocm-bake", &desired, account, "runner", &["runner".to_owned()]), "runner-2");
        assert_eq!(key_for("Team.Builds", &desired, account, "role", &[]), "team-builds");
        assert_eq!(templated("rocm-bake-sccache-123456789012", account), "rocm-bake-sccache-${account_id}");
    }
}
