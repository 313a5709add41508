//! The sections of desired.toml a resource crate reads itself: a crate claims a top-level table
//! ([`Claim`], in its description), reads it with its own serde type into its own model, and
//! keeps the model in the [`Section`] for itself. Core parses only its own keys (region, bake,
//! nightly, ...); a section's type errors are found with core's, by the same search, and its
//! problems are reported with the rest of the file's, so a file's every problem is said at once
//! whoever reads the section.

use std::any::Any;
use std::fmt;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

use serde::de::DeserializeOwned;

use super::{DesiredError, DesiredErrors, DesiredFinding, Locator, Reference, Topic, Unlocated, tracked};

/// A top-level table of desired.toml that one resource crate reads: `[s3]`, `[queues]`.
pub struct Claim {
    /// The table's key.
    pub name: &'static str,
    /// The key it is listed after where the file's keys are listed (an unknown key's message),
    /// in the order docs/reference/desired.md describes them; `None`: after every other.
    pub after: Option<&'static str>,
    /// Its first type error: the section read as the crate's serde type ([`Section::types`]).
    /// Type errors are found before anything else is checked, the file's every one at once.
    pub types: fn(&Section) -> Result<(), TypeError>,
    /// What the section lets the rest of the file refer to (its roles' names, its
    /// repository), from a section whose types hold, before any section is read: every claim's
    /// `read` sees every claim's ([`Section::referred`]), and so does the program
    /// ([`Desired::referred`](super::Desired::referred)).
    pub publishes: fn(&Section) -> Vec<Reference>,
    /// The section read into the crate's model once the whole file's types hold: its problems
    /// and findings, and the model, kept for the crate ([`Section::model`]).
    pub read: fn(&Section) -> Read,
    /// Its JSON Schema, for `reconcile schema`: [`schema_of`] the crate's type (or its
    /// `schemars::schema_for!`); its definitions join the file's.
    pub schema: fn() -> serde_json::Value,
}

/// What reading a section found.
pub struct Read {
    /// What the crate keeps of it, when the section is good.
    pub model: Option<Arc<dyn Any + Send + Sync>>,
    pub errors: Vec<DesiredError>,
    pub findings: Vec<DesiredFinding>,
}

impl Claim {
    /// For [`Claim::publishes`]: a section no other refers to.
    pub const NOTHING: fn(&Section) -> Vec<Reference> = |_| Vec::new();
}

impl Read {
    /// The section read as `model`, with the problems found on the way.
    pub fn model<M: Any + Send + Sync>(model: M, errors: Vec<DesiredError>) -> Read {
        Read { model: Some(Arc::new(model)), errors, findings: Vec::new() }
    }

    /// A section that cannot be read, for these reasons.
    pub fn refused(errors: Vec<DesiredError>) -> Read {
        Read { model: None, errors, findings: Vec::new() }
    }
}

/// A type error, before it is located: the span, the key path from the top of the file, the
/// message.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeError(pub(super) Option<Range<usize>>, pub(super) String, pub(super) String);

/// The schema of a section whose type is `T`, as core's own sections are in the file's: a
/// reference into the definitions, which come along.
pub fn schema_of<T: schemars::JsonSchema>() -> serde_json::Value {
    let mut generator = schemars::generate::SchemaSettings::default().into_generator();
    let mut section = generator.subschema_for::<T>().to_value();
    section["$defs"] = serde_json::Value::Object(generator.take_definitions(true));
    section
}

/// A claimed section, as the file holds it, and what its crate made of it.
#[derive(Clone)]
pub struct Section {
    name: &'static str,
    path: PathBuf,
    /// The whole file: spans, and so lines and columns, are the file's own.
    text: Arc<str>,
    /// What every claimed section of the file published.
    references: Arc<[Reference]>,
    model: Option<Arc<dyn Any + Send + Sync>>,
}

impl fmt::Debug for Section {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Section").field("name", &self.name).field("path", &self.path).finish_non_exhaustive()
    }
}

/// Two sections are one when they are the same text: the model is made of it.
impl PartialEq for Section {
    fn eq(&self, other: &Section) -> bool {
        self.name == other.name && self.path == other.path && self.text == other.text
    }
}

impl Section {
    pub(super) fn new(name: &'static str, path: PathBuf, text: Arc<str>) -> Section {
        Section { name, path, text, references: Arc::from([]), model: None }
    }

    /// This section, seeing what every claimed section published.
    pub(super) fn seeing(self, references: Arc<[Reference]>) -> Section {
        Section { references, ..self }
    }

    pub(super) fn keep(&mut self, model: Option<Arc<dyn Any + Send + Sync>>) {
        self.model = model;
    }

    /// Its key in the file.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// What the file's claimed sections published on `topic`: by section key, each in its own order.
    pub fn referred(&self, topic: Topic) -> impl Iterator<Item = &Reference> {
        self.references.iter().filter(move |reference| reference.topic == topic)
    }

    /// What its crate made of it, when it is an `M`.
    pub fn model<M: Any>(&self) -> Option<&M> {
        self.model.as_deref().and_then(|model| (model as &dyn Any).downcast_ref())
    }

    /// The section read as the crate's `T`; a type error names the file, line, column and the
    /// key path from the top of the file.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, DesiredErrors> {
        let absent = || (None, self.name.to_owned(), "the section is not in the file".to_owned());
        self.value()
            .and_then(|value| value.ok_or_else(absent))
            .map_err(|error| DesiredErrors(vec![self.locator().toml_error(error)]))
    }

    /// Whether the section is a `T`: the first type error, for [`Claim::types`]. A file without
    /// it has none (the search for every type error blanks a section out).
    pub fn types<T: DeserializeOwned>(&self) -> Result<(), TypeError> {
        self.value::<T>().map(drop).map_err(|(span, key_path, message)| TypeError(span, key_path, message))
    }

    /// The section read as `Raw` and made into the crate's model by `convert`, which says its
    /// problems at their places, for [`Claim::read`].
    pub fn read<Raw: DeserializeOwned, M: Any + Send + Sync>(
        &self,
        convert: impl FnOnce(&Locator<'_>, Raw, &mut Vec<DesiredError>) -> M,
    ) -> Read {
        match self.parse::<Raw>() {
            Ok(raw) => {
                let mut errors = Vec::new();
                let model = convert(&self.locator(), raw, &mut errors);
                Read::model(model, errors)
            }
            Err(errors) => Read::refused(errors.0),
        }
    }

    /// The section as a `T`, `None` when the file does not hold it.
    fn value<T: DeserializeOwned>(&self) -> Result<Option<T>, Unlocated> {
        let at_top = |(span, key_path, message): Unlocated| (span, self.key_path(&key_path), message);
        // A syntax error is the file's, not the section's: no key path (the search for every
        // type error stops at one, which its blanking may make).
        let mut table = toml::de::DeTable::parse(&self.text)
            .map_err(|error| (error.span(), String::new(), error.message().to_owned()))?
            .into_inner();
        let key = table.keys().find(|key| key.get_ref() == self.name).cloned();
        match key.and_then(|key| table.remove(&key)) {
            Some(value) => tracked(toml::de::ValueDeserializer::from(value)).map(Some).map_err(at_top),
            None => Ok(None),
        }
    }

    /// A problem at `span` of the file (a `toml::Spanned` value of the crate's `T`) at
    /// `key_path` below the section.
    pub fn error(&self, span: Option<Range<usize>>, key_path: &str, message: impl Into<String>) -> DesiredError {
        self.locator().error(span, &self.key_path(key_path), message)
    }

    /// Where its problems are: key paths given to it are from the top of the file.
    pub fn locator(&self) -> Locator<'_> {
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
    use std::sync::Arc;

    use serde::Deserialize;
    use toml::Spanned;

    use crate::Desired;
    use crate::desired::{Claim, DesiredError, Read, Reference, Section, Topic};

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Queues {
        queues: BTreeMap<String, Queue>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Queue {
        days: Spanned<u32>,
        /// A paused queue's days are not checked.
        #[serde(default)]
        paused: bool,
    }

    fn check(section: &Section) -> Vec<DesiredError> {
        match section.parse::<Queues>() {
            Ok(queues) => queues
                .queues
                .iter()
                .filter(|(_, queue)| !queue.paused && *queue.days.get_ref() > 14)
                .map(|(name, queue)| section.error(Some(queue.days.span()), &format!("queues.{name}.days"), "too long"))
                .collect(),
            Err(errors) => errors.0,
        }
    }

    const CLAIM: Claim = Claim {
        name: "example",
        after: None,
        types: Section::types::<Queues>,
        publishes: Claim::NOTHING,
        read: |section| {
            // What the crate keeps: each queue's days.
            let days = section.parse::<Queues>().map(|queues| {
                queues
                    .queues
                    .iter()
                    .map(|(name, queue)| (name.clone(), *queue.days.get_ref()))
                    .collect::<BTreeMap<_, _>>()
            });
            Read { model: days.ok().map(|days| Arc::new(days) as _), errors: check(section), findings: Vec::new() }
        },
        schema: || serde_json::json!({}),
    };

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
        assert_eq!(section.model::<BTreeMap<String, u32>>(), Some(&BTreeMap::from([("a".to_owned(), 4)])));
        assert_eq!(section.model::<String>(), None, "the model is the crate's own type");
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

    /// `[owners]` names people by key; `[teams]` refers to them.
    const OWNERS: Claim = Claim {
        name: "owners",
        after: None,
        types: Section::types::<BTreeMap<String, String>>,
        publishes: |section| {
            let owners = section.parse::<BTreeMap<String, String>>().unwrap_or_default();
            owners.into_iter().map(|(key, name)| Reference::new(Topic::Role, key, name)).collect()
        },
        read: |section| section.read(|_, _: BTreeMap<String, String>, _| ()),
        schema: || serde_json::json!({}),
    };

    const TEAMS: Claim = Claim {
        name: "teams",
        after: None,
        types: Section::types::<BTreeMap<String, Spanned<String>>>,
        publishes: Claim::NOTHING,
        read: |section| {
            section.read(|locate, teams: BTreeMap<String, Spanned<String>>, errors| {
                for (team, owner) in &teams {
                    if !section.referred(Topic::Role).any(|role| role.key == *owner.get_ref()) {
                        let message = format!("no owner `{}`", owner.get_ref());
                        errors.push(locate.error(Some(owner.span()), &format!("teams.{team}"), message));
                    }
                }
            })
        },
        schema: || serde_json::json!({}),
    };

    #[test]
    fn a_section_refers_to_what_another_published_whichever_is_read_first() {
        let text = "region = \"us-east-1\"\n[teams]\nbuild = \"ana\"\n[owners]\nana = \"Ana B\"\n";
        // The section that refers comes first in the file and in the claims.
        let desired = parse(text, &[&TEAMS, &OWNERS]).unwrap();
        let published: Vec<(&str, &str)> =
            desired.referred(Topic::Role).map(|r| (r.key.as_str(), r.value.as_str())).collect();
        assert_eq!(published, [("ana", "Ana B")]);
        assert_eq!(desired.referred(Topic::Repository).count(), 0);
        assert_eq!(
            parse(&text.replace("build = \"ana\"", "build = \"bo\""), &[&TEAMS, &OWNERS]),
            Err("desired.toml:3:9: `teams.build`: no owner `bo`".to_owned())
        );
        // A section the file does not hold publishes nothing.
        let alone = "region = \"us-east-1\"\n[teams]\nbuild = \"ana\"\n";
        assert_eq!(parse(alone, &[&TEAMS, &OWNERS]), Err("desired.toml:3:9: `teams.build`: no owner `ana`".to_owned()));
        assert!(parse("region = \"us-east-1\"\n", &[&OWNERS]).unwrap().references.is_empty());
        let reference = Reference::new(Topic::Webhook, "k", "v")
            .at(crate::Address::new(crate::fake::kinds::CODEBUILD_WEBHOOK, "k"))
            .at(crate::Address::new(crate::fake::kinds::CODEBUILD_PROJECT, "k"));
        assert_eq!(reference.addresses.len(), 2, "each address is kept, in order");
        assert_eq!(reference.addresses[1].to_string(), "codebuild_project.k");
    }

    #[test]
    fn a_claimed_sections_type_errors_are_said_with_cores_and_nothing_else_then() {
        // A bad region (checked after types) and a type error in the section: the type error
        // alone, as for core's own sections.
        let text = "region = \"nowhere\"\n[example.queues.a]\ndays = \"four\"\n";
        let said = parse(text, &[&CLAIM]).unwrap_err();
        assert!(said.starts_with("desired.toml:3:8: `example.queues.a.days`: invalid type: string"), "{said}");
        assert_eq!(said.lines().count(), 1, "{said}");
        // Two type errors in the section: both, by the same search as core's.
        let two = "region = \"us-east-1\"\n[example.queues.a]\ndays = 4\npaused = 1\n[example.queues.b]\ndays = -1\n";
        assert_eq!(parse(two, &[&CLAIM]).unwrap_err().lines().count(), 2);
    }

    #[test]
    fn a_section_is_one_with_another_when_it_is_the_same_text_and_says_which_it_is() {
        let text: Arc<str> = Arc::from("example = 1\n");
        let section = Section::new("example", "desired.toml".into(), Arc::clone(&text));
        assert_eq!(section, Section::new("example", "desired.toml".into(), Arc::clone(&text)));
        assert_ne!(section, Section::new("other", "desired.toml".into(), Arc::clone(&text)));
        assert_ne!(section, Section::new("example", "other.toml".into(), Arc::clone(&text)));
        assert_ne!(section, Section::new("example", "desired.toml".into(), Arc::from("example = 2\n")));
        let shown = format!("{section:?}");
        assert!(shown.contains("\"example\"") && shown.contains("desired.toml"), "{shown}");
    }

    #[test]
    fn a_sections_schema_is_a_reference_into_its_definitions() {
        let schema = super::schema_of::<crate::desired::RawNightly>();
        assert_eq!(schema["$ref"], "#/$defs/RawNightly");
        assert_eq!(
            schema["$defs"]["RawNightly"]["properties"]["enabled"]["type"],
            serde_json::json!(["boolean", "null"])
        );
    }

    #[test]
    fn a_top_level_key_no_one_reads_is_refused_with_every_key_that_is_read() {
        let text = "region = \"us-east-1\"\n[example.queues.a]\ndays = 4\n";
        let unclaimed = parse(text, &[]).unwrap_err();
        assert_eq!(
            unclaimed,
            "desired.toml:2:2: `example`: unknown field `example`, expected one of `region`, `bake`, `bake_variables`, \
             `nightly`, `deployment`, `import`, `handed_over`, `drift`"
        );
        let misspelt = parse(&format!("exampel = 1\n{text}"), &[&CLAIM]).unwrap_err();
        assert!(misspelt.starts_with("desired.toml:1:1: `exampel`: unknown field `exampel`"), "{misspelt}");
        assert!(
            misspelt.ends_with("`nightly`, `deployment`, `import`, `handed_over`, `drift`, `example`"),
            "{misspelt}"
        );
        // Every problem at once: the unknown key and a bad value elsewhere.
        let both = parse("region = \"nowhere\"\nregoin = 1\n", &[]).unwrap_err();
        assert_eq!(both.lines().count(), 2, "{both}");
    }

    #[test]
    fn a_claimed_key_is_listed_after_the_one_it_names_even_another_claims() {
        const fn named(name: &'static str, after: Option<&'static str>) -> Claim {
            Claim {
                name,
                after,
                types: |_| Ok(()),
                publishes: Claim::NOTHING,
                read: |_| Read::refused(Vec::new()),
                schema: || serde_json::json!({}),
            }
        }
        // Given before the claim whose key it follows, and one following a key no one reads.
        let (second, first, lost, last) =
            (named("s", Some("f")), named("f", Some("bake")), named("l", Some("nowhere")), named("z", None));
        let keys = crate::desired::listed_keys(&[&second, &first, &lost, &last]);
        assert_eq!(keys[..5], ["region", "bake", "f", "s", "bake_variables"]);
        assert_eq!(keys[keys.len() - 2..], ["l", "z"]);
        assert_eq!(keys.len(), crate::desired::CORE_KEYS.len() + 4);
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
            after: None,
            types: |_| Ok(()),
            publishes: Claim::NOTHING,
            read: |_| Read::refused(Vec::new()),
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
