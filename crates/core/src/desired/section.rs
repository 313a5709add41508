//! The sections of desired.toml a resource crate reads itself. Core parses the sections its
//! shared model names (`[ecr]`, `[iam]`, ...: several crates read each of them); a crate whose
//! kinds are its own alone claims a top-level table of its own ([`Claim`], in its description)
//! and parses it with its own serde schema, located like the rest of the file. So a new kind's
//! settings need no edit here.

use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

use serde::de::DeserializeOwned;

use super::{DesiredError, DesiredErrors, Locator, tracked};

/// A top-level table of desired.toml that one resource crate reads: `[queues]`.
pub struct Claim {
    /// The table's key.
    pub name: &'static str,
    /// Every problem in the section, as `validate` says them (parsing it with
    /// [`Section::parse`] says its type errors); nothing for a good one.
    pub check: fn(&Section) -> Vec<DesiredError>,
    /// Its JSON Schema (`schemars::schema_for!` of the crate's own type), for `reconcile schema`.
    pub schema: fn() -> serde_json::Value,
}

/// A claimed section, as the file holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    name: &'static str,
    path: PathBuf,
    /// The whole file: spans, and so lines and columns, are the file's own.
    text: Arc<str>,
}

impl Section {
    pub(super) fn new(name: &'static str, path: PathBuf, text: Arc<str>) -> Section {
        Section { name, path, text }
    }

    /// Its key in the file.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The section read as the crate's `T`; a type error names the file, line, column and the
    /// key path from the top of the file.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, DesiredErrors> {
        let failed = |(span, key_path, message): (Option<Range<usize>>, String, String)| {
            DesiredErrors(vec![self.locate().toml_error((span, self.key_path(&key_path), message))])
        };
        // The file parsed once already: it holds the section.
        let mut table = toml::de::DeTable::parse(&self.text)
            .map_err(|error| failed((error.span(), String::new(), error.message().to_owned())))?
            .into_inner();
        let key = table.keys().find(|key| key.get_ref() == self.name).cloned();
        let value = key
            .and_then(|key| table.remove(&key))
            .ok_or_else(|| failed((None, String::new(), "the section is not in the file".to_owned())))?;
        tracked(toml::de::ValueDeserializer::from(value)).map_err(failed)
    }

    /// A problem at `span` of the file (a `toml::Spanned` value of the crate's `T`) at
    /// `key_path` below the section.
    pub fn error(&self, span: Option<Range<usize>>, key_path: &str, message: impl Into<String>) -> DesiredError {
        self.locate().error(span, &self.key_path(key_path), message)
    }

    fn locate(&self) -> Locator<'_> {
        Locator { path: &self.path, text: &self.text }
    }

    /// `below` (a path inside the section) from the top of the file.
    fn key_path(&self, below: &str) -> String {
        if below.is_empty() { self.name.to_owned() } else { format!("{}.{below}", self.name) }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::Path;

    use serde::Deserialize;
    use toml::Spanned;

    use crate::Desired;
    use crate::desired::{Claim, DesiredError, Section};

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Queues {
        queues: BTreeMap<String, Queue>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Queue {
        days: Spanned<u32>,
    }

    fn check(section: &Section) -> Vec<DesiredError> {
        match section.parse::<Queues>() {
            Ok(queues) => queues
                .queues
                .iter()
                .filter(|(_, queue)| *queue.days.get_ref() > 14)
                .map(|(name, queue)| section.error(Some(queue.days.span()), &format!("queues.{name}.days"), "too long"))
                .collect(),
            Err(errors) => errors.0,
        }
    }

    const CLAIM: Claim = Claim { name: "example", check, schema: || serde_json::json!({}) };

    fn parse(text: &str, claims: &[&Claim]) -> Result<Desired, String> {
        Desired::parse_claimed(Path::new("desired.toml"), text, claims).map_err(|errors| errors.to_string())
    }

    #[test]
    fn a_claimed_section_is_kept_for_its_crate_and_checked_by_it() {
        let text = "region = \"us-east-1\"\n[example.queues.a]\ndays = 4\n";
        let desired = parse(text, &[&CLAIM]).unwrap();
        let section = desired.section("example").unwrap();
        assert_eq!(section.name(), "example");
        assert_eq!(*section.parse::<Queues>().unwrap().queues["a"].days.get_ref(), 4);
        assert!(desired.section("other").is_none());
        // A file without the section keeps none.
        assert!(parse("region = \"us-east-1\"\n", &[&CLAIM]).unwrap().sections.is_empty());

        assert_eq!(
            parse(&text.replace("days = 4", "days = 40"), &[&CLAIM]),
            Err("desired.toml:3:8: `example.queues.a.days`: too long".to_owned())
        );
        let typo = parse(&text.replace("days", "dayz"), &[&CLAIM]).unwrap_err();
        assert!(typo.starts_with("desired.toml:3:1: `example.queues.a.dayz`: unknown field `dayz`"), "{typo}");
        let wrong = parse("region = \"us-east-1\"\nexample = 3\n", &[&CLAIM]).unwrap_err();
        assert!(wrong.starts_with("desired.toml:2:11: `example`: invalid type: integer `3`"), "{wrong}");
        let error = Section::new("example", "d.toml".into(), "x = 1\n".into()).error(None, "", "said");
        assert_eq!(error.to_string(), "d.toml:1:1: `example`: said");
    }

    #[test]
    fn a_top_level_key_no_one_reads_is_refused_with_every_key_that_is_read() {
        let text = "region = \"us-east-1\"\n[example.queues.a]\ndays = 4\n";
        let unclaimed = parse(text, &[]).unwrap_err();
        assert_eq!(
            unclaimed,
            "desired.toml:2:2: `example`: unknown field `example`, expected one of `region`, `bake`, `bake_variables`, \
             `ecr`, `s3`, `iam`, `codebuild`, `nightly`, `github`, `ci`, `usage`"
        );
        let misspelt = parse(&format!("exampel = 1\n{text}"), &[&CLAIM]).unwrap_err();
        assert!(misspelt.starts_with("desired.toml:1:1: `exampel`: unknown field `exampel`"), "{misspelt}");
        assert!(misspelt.ends_with("`ci`, `usage`, `example`"), "{misspelt}");
        // Every problem at once: the unknown key and a bad value elsewhere.
        let both = parse("region = \"nowhere\"\nregoin = 1\n", &[]).unwrap_err();
        assert_eq!(both.lines().count(), 2, "{both}");
    }

    #[test]
    fn core_reads_exactly_the_top_level_keys_its_schema_has() {
        let schema = crate::desired::schema(&[]);
        let mut properties: Vec<&str> = schema["properties"].as_object().unwrap().keys().map(String::as_str).collect();
        let mut core = crate::desired::CORE_KEYS.to_vec();
        properties.sort_unstable();
        core.sort_unstable();
        assert_eq!(properties, core);
    }

    #[test]
    fn the_schema_holds_each_claimed_section_with_its_definitions() {
        const WITH_DEFS: Claim = Claim {
            name: "example",
            check: |_| Vec::new(),
            schema: || {
                serde_json::json!({
                    "$schema": "https://json-schema.org/draft/2020-12/schema",
                    "type": "object",
                    "properties": { "queues": { "$ref": "#/$defs/Queue" } },
                    "$defs": { "Queue": { "type": "object" } }
                })
            },
        };
        let schema = crate::desired::schema(&[&WITH_DEFS]);
        let section = &schema["properties"]["example"];
        assert_eq!(section["properties"]["queues"]["$ref"], "#/$defs/Queue");
        assert!(section.get("$defs").is_none() && section.get("$schema").is_none(), "{section}");
        assert_eq!(schema["$defs"]["Queue"]["type"], "object");
        assert_eq!(schema["additionalProperties"], false);
        assert!(crate::desired::schema(&[])["properties"].get("example").is_none());
    }
}
