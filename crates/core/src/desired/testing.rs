//! How a section's tests read a desired.toml: accepted, refused (each message with its key
//! path, without its place), or what it warns about. One copy for core's sections and every
//! crate's own, which names the claims the file is read with; and stand-ins for the sections a
//! crate's own refers to, which other crates read.

use std::path::Path;

use crate::desired::{Claim, Desired, Read, Reference, Section, Topic};
use crate::plan::Severity;

/// desired.toml files read with these claims (a crate's own section; none for core's).
pub struct Files(pub &'static [&'static Claim]);

impl Files {
    /// The file parsed as `desired.toml`, or every error as printed.
    pub fn parse(&self, text: &str) -> Result<Desired, String> {
        Desired::parse_claimed(Path::new("desired.toml"), text, self.0).map_err(|errors| errors.to_string())
    }

    /// The messages of a refused file, with their key paths, without their places.
    pub fn refusals(&self, text: &str) -> Vec<String> {
        let errors = self.parse(text).expect_err("refused");
        errors.lines().map(|line| line.splitn(4, ':').nth(3).unwrap_or(line).trim().to_owned()).collect()
    }

    /// The findings of an accepted file: `code severity key-path: message`.
    pub fn findings(&self, text: &str) -> Vec<String> {
        let desired = self.parse(text).expect("accepted");
        desired
            .findings
            .iter()
            .map(|f| {
                let severity = if f.severity == Severity::Error { "error" } else { "warning" };
                format!("{} {severity} {}: {}", f.code, f.location.key_path, f.location.message)
            })
            .collect()
    }

    /// For each `(file, refusal)`: the file is refused with exactly that one message.
    pub fn each_refused_as(&self, cases: impl IntoIterator<Item = (String, String)>) {
        for (text, expected) in cases {
            assert_eq!(self.refusals(&text), [expected.as_str()], "for\n{text}");
        }
    }
}

/// A section another crate reads, for the tests of a crate that refers to it: accepted as it
/// is, nothing kept, publishing what `publishes` says.
pub const fn stand_in(name: &'static str, publishes: fn(&Section) -> Vec<Reference>) -> Claim {
    Claim {
        name,
        after: None,
        types: |_| Ok(()),
        publishes,
        read: |_| Read { model: None, errors: Vec::new(), findings: Vec::new() },
        schema: || serde_json::Value::Null,
    }
}

/// `[iam]` as IAM's crate publishes it: each `[iam.roles.<key>]`'s name, by key (without the
/// addresses, which are IAM's kinds).
pub const IAM: Claim = stand_in("iam", |section| {
    named(section, "roles").into_iter().map(|(key, name, _)| Reference::new(Topic::Role, key, name)).collect()
});

/// `[codebuild]` as CodeBuild's crate publishes it: each project's name, by key, and which have
/// a webhook (without its address).
pub const CODEBUILD: Claim = stand_in("codebuild", |section| {
    let mut references = Vec::new();
    for (key, name, table) in named(section, "projects") {
        references.push(Reference::new(Topic::Project, &key, &name));
        if table.contains_key("webhook") {
            references.push(Reference::new(Topic::Webhook, key, name));
        }
    }
    references
});

/// `[github]` as GitHub's crate publishes it: its repository.
pub const GITHUB: Claim = stand_in("github", |section| {
    let table = section.parse::<toml::Table>().unwrap_or_default();
    let repository = table.get("repository").and_then(toml::Value::as_str);
    repository.map(|repository| Reference::new(Topic::Repository, "", repository)).into_iter().collect()
});

/// `[ci]` as IAM's crate publishes it: each CI role's variable and name (without its address).
pub const CI: Claim = stand_in("ci", |section| {
    let table = section.parse::<toml::Table>().unwrap_or_default();
    let roles = [("plan_role", "RECONCILE_PLAN_ROLE_ARN"), ("drift_role", "RECONCILE_DRIFT_ROLE_ARN")];
    roles
        .into_iter()
        .chain([("apply_role", "RECONCILE_APPLY_ROLE_ARN")])
        .filter_map(|(key, variable)| Some(Reference::new(Topic::CiRole, variable, table.get(key)?.as_str()?)))
        .collect()
});

/// Each `[<section>.<below>.<key>]` table: its key, its `name`, the table.
fn named(section: &Section, below: &str) -> Vec<(String, String, toml::Table)> {
    let table = section.parse::<toml::Table>().unwrap_or_default();
    let Some(toml::Value::Table(entries)) = table.get(below) else { return Vec::new() };
    entries
        .iter()
        .filter_map(|(key, entry)| {
            let entry = entry.as_table()?;
            Some((key.clone(), entry.get("name")?.as_str()?.to_owned(), entry.clone()))
        })
        .collect()
}
