//! `desired.toml`: what the account must hold.
//!
//! The file's serde schema (the `Raw*` types) is a boundary: it is parsed, checked and then
//! converted into the model types ([`Desired`] and friends), which the rest of the program
//! uses and which never carry serde's quirks. Every error names the file, the line and column,
//! and the key path, and parsing never touches the network.
//!
//! Core reads only the top-level keys the engine and the nightly need (`region`, `deployment`,
//! `import`, `bake`, `bake_variables`, `[nightly]`, `[drift]`); each kind's section (and a
//! crate's settings, as ECR's `[usage]` price) is its crate's, claimed through `section` and
//! referring to the others only through what they publish (`reference`). This module holds what
//! they share.

mod hidden;
mod names;
mod reference;
mod section;
pub mod testing;

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use toml::Spanned;

use crate::plan::Severity;

pub use names::{Case, GITHUB_VARIABLE_LIMIT, check_key, check_tag, check_unique_names, convert_tags};
pub(crate) use names::{check_bake_variable, check_deployment, is_region};
pub use reference::{PUT_BACK_ROLE, Reference, SUBJECT_CLAIMS, Topic};
pub use section::{Claim, Read, Section, TypeError, schema_of};

/// The whole desired state of the account, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Desired {
    /// The file it was read from, for messages.
    pub path: PathBuf,
    /// The region every resource lives in. It wins over the environment's region.
    pub region: String,
    /// This deployment's name (`deployment`, default [`crate::mark::DEFAULT_DEPLOYMENT`]):
    /// the value of the mark reconcile writes on everything it makes or takes over
    /// ([`crate::ownership`]).
    pub deployment: String,
    /// desired.toml's `import` list: declared resources that exist without the mark and are to
    /// be taken over, as Terraform's `import` blocks are.
    pub imports: Vec<Import>,
    /// desired.toml's `handed_over` list: declared resources that carry another deployment's
    /// mark and are imported all the same, that deployment having given them up.
    pub handed_over: Vec<Import>,
    /// `[drift] put_back`: the kinds whose drift the scheduled check puts back, as written;
    /// which kinds may be named is the catalog's to say (each crate's
    /// [`crate::describe::PutBack`]).
    pub put_back: Vec<PutBackKind>,
    pub nightly: Nightly,
    /// The nightly's bake file (`bake = "..."`), relative to desired.toml's directory: every ECR
    /// repository it names must be declared. `--bake` wins over it.
    pub bake: Option<BakePath>,
    /// The bake file's variables that may take their value from the environment
    /// (`bake_variables`); any other keeps the file's default.
    pub bake_variables: Vec<String>,
    /// What is allowed but probably wrong (warnings), or dangerous enough to refuse unless the
    /// resource overrides it by name (errors). Plans show them all.
    pub findings: Vec<DesiredFinding>,
    /// The sections resource crates claimed and the file holds, for each to read itself.
    pub sections: Vec<Section>,
    /// What those sections publish for the others (and core) to refer to.
    pub references: Vec<Reference>,
}

/// One entry of desired.toml's `import` list: an address, as written, and where.
#[derive(Debug, Clone, PartialEq)]
pub struct Import {
    pub address: String,
    /// The entry's place, for a refusal of it (its message is empty).
    pub at: DesiredError,
}

/// A kind `[drift] put_back` names, as written, and where.
#[derive(Debug, Clone, PartialEq)]
pub struct PutBackKind {
    pub kind: String,
    /// The entry's place, for a refusal of it (its message is empty).
    pub at: DesiredError,
}

/// The bake file desired.toml names, and where it names it.
#[derive(Debug, Clone, PartialEq)]
pub struct BakePath {
    /// Joined to desired.toml's directory. Relative as written: whether it stays inside the
    /// repository is the reader's to check, who knows where the repository is.
    pub path: PathBuf,
    /// The `bake` key's place, for a refusal of the path (its message is empty).
    pub at: DesiredError,
}

impl BakePath {
    /// A refusal of this path, at the `bake` key.
    pub fn error(&self, message: impl Into<String>) -> DesiredError {
        DesiredError { message: message.into(), ..self.at.clone() }
    }
}

/// The `[nightly]` section: settings of the nightly workflow that `reconcile outputs` prints as
/// repository variables.
#[derive(Debug, Clone, PartialEq)]
pub struct Nightly {
    /// `NIGHTLY_ARCHES`, such as `gfx1201`: narrows the nightly's matrix when set.
    pub arches: Option<String>,
    /// `NIGHTLY_ENABLED`: the nightly's on switch (default on). Declared, so that turning the
    /// nightly off is a reviewed change, and the next apply does not turn it back on.
    pub enabled: bool,
}

#[derive(Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
struct RawNightly {
    #[schemars(with = "Option<String>")]
    arches: Option<Spanned<String>>,
    /// Whether the nightly runs (`NIGHTLY_ENABLED`); default true.
    enabled: Option<bool>,
}

/// A finding about the desired state, with a stable code and where in the file it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredFinding {
    pub code: &'static str,
    /// An error refuses `validate`, `plan` and `apply` (exit 3) unless overridden.
    pub severity: Severity,
    /// The resource it concerns, if one.
    pub address: Option<crate::Address>,
    pub location: DesiredError,
    /// The key on the resource that allows what this finding would refuse, when it is set: the
    /// finding is then a warning that says so.
    pub overridden_by: Option<&'static str>,
}

impl DesiredFinding {
    pub fn warning(code: &'static str, address: Option<crate::Address>, location: DesiredError) -> DesiredFinding {
        DesiredFinding { code, severity: Severity::Warning, address, location, overridden_by: None }
    }

    /// As a plan finding: its message is where it is and what it says.
    pub fn to_finding(&self) -> crate::Finding {
        crate::Finding {
            code: self.code.to_owned(),
            severity: self.severity,
            address: self.address.clone(),
            message: self.location.to_string(),
            overridden_by: self.overridden_by.map(str::to_owned),
        }
    }
}

/// A string that may use `${account_id}` and `${region}`, filled in once the account is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template(String);

/// The variables a [`Template`] may use.
pub const TEMPLATE_VARIABLES: [&str; 2] = ["account_id", "region"];

impl Template {
    /// Checks that every `${...}` names a known variable.
    pub fn parse(text: &str) -> Result<Template, String> {
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            let after = &rest[start + 2..];
            let end = after.find('}').ok_or_else(|| format!("`${{` without a closing `}}` in `{text}`"))?;
            let variable = &after[..end];
            if !TEMPLATE_VARIABLES.contains(&variable) {
                return Err(format!(
                    "unknown template variable `${{{variable}}}` in `{text}`; known: {}",
                    TEMPLATE_VARIABLES.map(|v| format!("`${{{v}}}`")).join(", ")
                ));
            }
            rest = &after[end + 1..];
        }
        Ok(Template(text.to_owned()))
    }

    /// `text` as it is, for a template that did not parse (its error said why).
    pub fn literal(text: &str) -> Template {
        Template(text.to_owned())
    }

    /// The text with the variables filled in.
    pub fn render(&self, account_id: &str, region: &str) -> String {
        self.0.replace("${account_id}", account_id).replace("${region}", region)
    }

    /// The text as a real account would fill it in, for checks that need the final form.
    pub fn example(&self) -> String {
        self.render("123456789012", "us-east-1")
    }
}

/// One problem in a desired-state file, located as precisely as the file allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredError {
    pub file: PathBuf,
    /// 1-based; 0 when the problem has no place in the file (an unreadable file).
    pub line: usize,
    /// 1-based, counted in characters.
    pub column: usize,
    /// Dotted key path such as `ecr.repositories.pytorch.lifecycle_policy`; empty for the root.
    pub key_path: String,
    pub message: String,
}

impl DesiredError {
    /// The same place, saying `message`.
    pub fn with_message(self, message: impl Into<String>) -> DesiredError {
        DesiredError { message: message.into(), ..self }
    }
}

impl fmt::Display for DesiredError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.column)?;
        }
        if !self.key_path.is_empty() {
            write!(f, ": `{}`", self.key_path)?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Every problem found in a desired-state file; never empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredErrors(pub Vec<DesiredError>);

impl fmt::Display for DesiredErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (idx, error) in self.0.iter().enumerate() {
            if idx > 0 {
                writeln!(f)?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for DesiredErrors {}

/// The JSON Schema of desired.toml, derived from the types the parser uses, so editors can
/// complete and check the file and the schema cannot drift from what `validate` accepts; with
/// the sections `claims` add, each from its crate's own type.
pub fn schema(claims: &[&Claim]) -> serde_json::Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(RawDesired)).expect("a schema serializes");
    schema["title"] = serde_json::json!("reconcile desired.toml");
    schema["description"] = serde_json::json!(
        "What the ROCm nightly's AWS account must hold. See docs/reference/desired.md for every key."
    );
    for claim in claims {
        let mut section = (claim.schema)();
        // Its definitions join the file's, which its `$ref`s point into from the root.
        if let Some(serde_json::Value::Object(defs)) = section.as_object_mut().and_then(|s| s.remove("$defs")) {
            for (name, def) in defs {
                schema["$defs"][name] = def;
            }
        }
        if let Some(section) = section.as_object_mut() {
            section.remove("$schema");
        }
        schema["properties"][claim.name] = section;
    }
    schema
}

/// The top-level keys core reads (`RawDesired`'s fields); any other is a claimed section or a
/// mistake.
pub const CORE_KEYS: [&str; 8] =
    ["region", "bake", "bake_variables", "nightly", "deployment", "import", "handed_over", "drift"];

/// Every top-level key the file may hold, as messages list them: core's, and each claimed
/// section after the key it names.
fn listed_keys(claims: &[&Claim]) -> Vec<&'static str> {
    let mut keys = CORE_KEYS.to_vec();
    let mut left: Vec<&Claim> = claims.to_vec();
    // A claim may follow another claim's key: placed once that one is.
    while let Some(at) = left.iter().position(|claim| claim.after.is_some_and(|after| keys.contains(&after))) {
        let claim = left.remove(at);
        let after = keys.iter().position(|key| Some(*key) == claim.after).map_or(keys.len(), |idx| idx + 1);
        keys.insert(after, claim.name);
    }
    keys.extend(left.iter().map(|claim| claim.name));
    keys
}

impl Desired {
    /// Parses and validates the text of a desired-state file. `path` is only used in messages.
    pub fn parse(path: &Path, text: &str) -> Result<Desired, DesiredErrors> {
        Desired::parse_claimed(path, text, &[])
    }

    /// As [`Desired::parse`], with the sections resource crates read themselves (the
    /// catalog's): each is checked by its crate and kept for it.
    pub fn parse_claimed(path: &Path, text: &str, claims: &[&Claim]) -> Result<Desired, DesiredErrors> {
        let locate = Locator { path, text };
        let shared: Arc<str> = Arc::from(text);
        // `RawDesired` lets other top-level keys through so that a claimed section can be
        // there: each is either claimed or a misspelling, refused as serde would. None when the
        // file does not parse: core's type check says why.
        let keys = toml::de::DeTable::parse(text).map(toml::Spanned::into_inner).unwrap_or_default();
        // Bounded before anything is built per resource (each costs a plan tens of kilobytes).
        if let Some(error) = too_many_tables(&locate, &keys) {
            return Err(DesiredErrors(vec![error]));
        }
        let unreadable = hidden::unreadable_characters(&locate, &keys);
        if !unreadable.is_empty() {
            return Err(DesiredErrors(unreadable));
        }
        let claimed: Vec<&Claim> =
            keys.keys().filter_map(|key| claims.iter().copied().find(|claim| claim.name == key.get_ref())).collect();

        // Every type error first, core's and each claimed section's, and nothing else when
        // there is one: the rest is checked on a file whose every value has its type.
        let core_types = |text: &str| parse_raw(text).map(drop);
        let mut type_errors = match core_types(text) {
            Ok(()) => Vec::new(),
            Err(first) => every_type_error(&locate, first, &core_types),
        };
        for claim in &claimed {
            let types = |text: &str| {
                (claim.types)(&Section::new(claim.name, path.to_owned(), Arc::from(text)))
                    .map_err(|TypeError(span, key_path, message)| (span, key_path, message))
            };
            if let Err(first) = types(text) {
                type_errors.extend(every_type_error(&locate, first, &types));
            }
        }
        if !type_errors.is_empty() {
            type_errors.sort_by_key(|error| (error.line, error.column));
            type_errors.dedup();
            type_errors.truncate(MAX_TYPE_ERRORS);
            return Err(DesiredErrors(type_errors));
        }

        // What each section publishes, before any is read: a check across sections (a
        // project's role) reads the other's references, whichever is read first.
        let section = |claim: &Claim| Section::new(claim.name, path.to_owned(), Arc::clone(&shared));
        let references: Arc<[Reference]> =
            claimed.iter().flat_map(|claim| (claim.publishes)(&section(claim))).collect();
        let raw = parse_raw(text).map_err(|error| DesiredErrors(vec![locate.toml_error(error)]))?;
        let mut errors = Vec::new();
        let mut desired = convert(&locate, raw, &mut errors);
        desired.references = references.to_vec();
        for claim in &claimed {
            let mut section = section(claim).seeing(Arc::clone(&references));
            let read = (claim.read)(&section);
            errors.extend(read.errors);
            desired.findings.extend(read.findings);
            section.keep(read.model);
            desired.sections.push(section);
        }
        let listed = listed_keys(claims);
        for key in keys.keys() {
            let name = key.get_ref().as_ref();
            if !listed.contains(&name) {
                let expected: Vec<String> = listed.iter().map(|key| format!("`{key}`")).collect();
                errors.push(locate.error(
                    Some(key.span()),
                    name,
                    format!("unknown field `{name}`, expected one of {}", expected.join(", ")),
                ));
            }
        }
        if errors.is_empty() {
            Ok(desired)
        } else {
            errors.sort_by_key(|error| (error.line, error.column));
            // A problem in a shared place (`[ecr.defaults]`) is found once per user of it, and
            // said once.
            errors.dedup();
            Err(DesiredErrors(errors))
        }
    }

    /// What the file's claimed sections published on `topic`: by section key, each in its own order.
    pub fn referred(&self, topic: Topic) -> impl Iterator<Item = &Reference> {
        self.references.iter().filter(move |reference| reference.topic == topic)
    }

    /// The claimed section `name`, when the file holds it.
    pub fn section(&self, name: &str) -> Option<&Section> {
        self.sections.iter().find(|section| section.name() == name)
    }
}

/// A problem before it is located: the span, the key path from the top of the file, the
/// message.
type Unlocated = (Option<Range<usize>>, String, String);

/// The most type errors one file reports at once.
const MAX_TYPE_ERRORS: usize = 20;

/// The most tables desired.toml may hold: every repository it declares is one (`name = {}`), as
/// is each setting and rule written as a table. The nightly's account is about a hundred; 15,000
/// repositories, one line each, plan in about 620 MiB (docs/performance.md). A pull request's
/// desired.toml is anyone's, and the trusted plan job plans it: past this it is refused here,
/// before any AWS call, rather than planned in gigabytes.
pub const MAX_DECLARED: usize = 15_000;

/// The refusal of a file of more than [`MAX_DECLARED`] tables, at the first one past the bound
/// in the file's order.
fn too_many_tables(locate: &Locator<'_>, table: &toml::de::DeTable<'_>) -> Option<DesiredError> {
    use toml::de::DeValue;
    /// Where every table under `value` starts.
    fn walk(value: &toml::Spanned<DeValue<'_>>, starts: &mut Vec<usize>) {
        match value.get_ref() {
            DeValue::Table(table) => {
                starts.push(value.span().start);
                table.iter().for_each(|(_, value)| walk(value, starts));
            }
            DeValue::Array(values) => values.iter().for_each(|value| walk(value, starts)),
            _ => {}
        }
    }
    let mut starts = Vec::new();
    table.iter().for_each(|(_, value)| walk(value, &mut starts));
    if starts.len() <= MAX_DECLARED {
        return None;
    }
    let count = starts.len();
    let (_, &mut past, _) = starts.select_nth_unstable(MAX_DECLARED);
    let key_path = key_path_at(locate.text, past).unwrap_or_default();
    Some(locate.error(
        Some(past..past + 1),
        &key_path,
        format!(
            "desired.toml holds {count} tables (each declared resource is one, with its settings'), more than the \
             {MAX_DECLARED} reconcile plans: the first past the bound is here; an account this large is split into \
             deployments, each with its own desired.toml"
        ),
    ))
}

/// Every type error in the file, not only the first that serde stops at: the offending
/// `key = value` is blanked out (overwritten with spaces, so every other byte keeps its place
/// and its line and column) and the file read again. Syntax errors, and errors inside arrays,
/// stop the search: there is nothing to blank safely.
fn every_type_error(
    locate: &Locator<'_>,
    first: Unlocated,
    reparse: &dyn Fn(&str) -> Result<(), Unlocated>,
) -> Vec<DesiredError> {
    let mut text = locate.text.to_owned();
    let mut error = first;
    let mut blanked: Vec<String> = Vec::new();
    let mut errors = Vec::new();
    loop {
        let (span, key_path, message) = &error;
        // Blanking a required key makes its struct miss it: that is not another problem.
        if blanked.iter().any(|key| message.contains(&format!("missing field `{key}`"))) {
            break;
        }
        errors.push(locate.toml_error(error.clone()));
        let Some(span) = span.clone() else { break };
        let Some(key) = key_path.rsplit('.').next().filter(|key| !key.is_empty() && !key.ends_with(']')) else {
            break;
        };
        let Some(start) = key_start(&text, key, span.start) else { break };
        if errors.len() >= MAX_TYPE_ERRORS || span.end > text.len() {
            break;
        }
        // The entry, and one comma beside it so an inline table stays well-formed.
        let (mut start, mut end) = (start, span.end);
        let after = &text[end..];
        let before = &text[..start];
        if let Some(comma) = after.find(|c: char| !c.is_whitespace()).filter(|idx| after[*idx..].starts_with(',')) {
            end += comma + 1;
        } else if let Some(comma) =
            before.rfind(|c: char| !c.is_whitespace()).filter(|idx| before[*idx..].starts_with(','))
        {
            start = comma;
        }
        text.replace_range(start..end, &" ".repeat(end - start));
        blanked.push(key.to_owned());
        match reparse(&text) {
            Ok(()) => break,
            // What blanking broke is not the user's problem.
            Err((_, next_path, _)) if next_path.is_empty() => break,
            Err(next) => error = next,
        }
    }
    errors.sort_by_key(|error| (error.line, error.column));
    errors
}

/// Where `key = ` begins, searching back from the value at `value_start`.
fn key_start(text: &str, key: &str, value_start: usize) -> Option<usize> {
    let before = text.get(..value_start)?;
    let equals = before.trim_end().strip_suffix('=')?;
    let key_end = equals.trim_end();
    let key_text = key_end.strip_suffix(key).or_else(|| key_end.strip_suffix(&format!("\"{key}\"")))?;
    Some(key_text.len())
}

fn parse_raw(text: &str) -> Result<RawDesired, Unlocated> {
    let deserializer =
        toml::Deserializer::parse(text).map_err(|e| (e.span(), String::new(), e.message().to_owned()))?;
    tracked(deserializer)
}

/// `T` from `deserializer`, or the error's span, key path and message.
fn tracked<'de, T: Deserialize<'de>>(
    deserializer: impl serde::Deserializer<'de, Error = toml::de::Error>,
) -> Result<T, Unlocated> {
    serde_path_to_error::deserialize(deserializer).map_err(|error| {
        // `Spanned` shows up in serde's path as a private field; the user never wrote it.
        let key_path = error
            .path()
            .iter()
            .map(ToString::to_string)
            .filter(|segment| !segment.starts_with("$__serde_spanned"))
            .collect::<Vec<_>>()
            .join(".")
            .replace(".[", "[");
        let inner = error.into_inner();
        (inner.span(), key_path, inner.message().to_owned())
    })
}

// The file's schema. Field names are the file's keys; `deny_unknown_fields` everywhere, because
// a misspelt key silently ignored is a resource silently left unmanaged.

// Not `deny_unknown_fields` at the top, where a crate's own section may be: `parse_claimed`
// refuses what no crate claims.
#[derive(Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct RawDesired {
    #[schemars(with = "String")]
    region: Spanned<String>,
    /// This deployment's name, the value of the `reconcile:deployment` tag reconcile writes on
    /// everything it makes or takes over (default `default`). Two deployments in one account
    /// must each have their own.
    #[schemars(with = "Option<String>")]
    deployment: Option<Spanned<String>>,
    /// Declared resources that exist without this deployment's mark and are to be taken over
    /// (imported), by address: `ecr_repository.pytorch`. `reconcile import` writes the list.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    import: Vec<Spanned<String>>,
    /// Declared resources that carry another deployment's mark and are to be taken from it
    /// (imported), by address, once that deployment gives them up; without this, importing one is
    /// an error naming that deployment (W610).
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    handed_over: Vec<Spanned<String>>,
    /// The nightly's bake file, relative to this file and inside the repository:
    /// `docker buildx bake --print` JSON, or HCL.
    #[schemars(with = "Option<String>")]
    bake: Option<Spanned<String>>,
    /// The bake file's variables that take their value from the environment when set (as bake
    /// resolves them); any other keeps the file's default.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    bake_variables: Vec<Spanned<String>>,
    #[serde(default)]
    nightly: RawNightly,
    #[serde(default)]
    drift: RawDrift,
}

/// `[drift]`: what the scheduled drift check does besides reporting.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
struct RawDrift {
    /// The kinds whose drift the check puts back in the run that finds it (`ecr_lifecycle_policy`,
    /// `codebuild_webhook`), as the put-back role (`[ci] put_back_role`) may: a setting of a
    /// resource that exists, never a create, a delete, a replacement or anything in IAM.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    put_back: Vec<Spanned<String>>,
}

/// Turns byte spans into file, line and column.
pub struct Locator<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Locator<'_> {
    /// A problem at `span` of the file, at `key_path` from its top.
    pub fn error(&self, span: Option<Range<usize>>, key_path: &str, message: impl Into<String>) -> DesiredError {
        let (line, column) = match span {
            Some(span) => line_column(self.text, span.start),
            None => (1, 1),
        };
        DesiredError {
            file: self.path.to_owned(),
            line,
            column,
            key_path: key_path.to_owned(),
            message: message.into(),
        }
    }

    fn toml_error(&self, (span, key_path, message): Unlocated) -> DesiredError {
        // toml's messages can span lines; the location is ours to print, so keep one line.
        let message = message.trim().replace('\n', " ");
        // A syntax error carries no key path; for a key written twice, name the key.
        let key_path = match &span {
            Some(span) if key_path.is_empty() && message.contains("duplicate key") => {
                key_path_at(self.text, span.start).unwrap_or_default()
            }
            _ => key_path,
        };
        self.error(span, &key_path, message)
    }
}

/// The dotted path of the key written at `offset`: the table header above it, then the key.
/// Good enough for the plain `key = value` lines and `[table]` headers desired.toml is made of.
fn key_path_at(text: &str, offset: usize) -> Option<String> {
    let offset = offset.min(text.len());
    let line_start = text[..offset].rfind('\n').map_or(0, |idx| idx + 1);
    let line = text[line_start..].lines().next()?.trim();
    let header = |line: &str| {
        let inner = line.strip_prefix('[')?.trim_start_matches('[');
        Some(inner.split(']').next()?.trim().to_owned())
    };
    if line.starts_with('[') {
        return header(line);
    }
    let key = line.split('=').next()?.trim().trim_matches('"').to_owned();
    let table = text[..line_start].lines().rev().map(str::trim).find(|l| l.starts_with('[')).and_then(header);
    Some(match table {
        Some(table) => format!("{table}.{key}"),
        None => key,
    })
}

fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |idx| idx + 1);
    (line, text[line_start..offset].chars().count() + 1)
}

fn convert(locate: &Locator<'_>, raw: RawDesired, errors: &mut Vec<DesiredError>) -> Desired {
    if !is_region(raw.region.get_ref()) {
        errors.push(locate.error(
            Some(raw.region.span()),
            "region",
            format!("`{}` is not an AWS region name such as `us-east-1`", raw.region.get_ref()),
        ));
    }

    if let Some(arches) = &raw.nightly.arches {
        if arches.get_ref().chars().any(char::is_control) {
            errors.push(locate.error(
                Some(arches.span()),
                "nightly.arches",
                "a repository variable's value cannot hold control characters",
            ));
        } else if arches.get_ref().len() > GITHUB_VARIABLE_LIMIT {
            errors.push(locate.error(
                Some(arches.span()),
                "nightly.arches",
                format!(
                    "{} bytes, more than the {GITHUB_VARIABLE_LIMIT} GitHub allows in a repository variable",
                    arches.get_ref().len()
                ),
            ));
        }
    }
    let nightly =
        Nightly { arches: raw.nightly.arches.map(Spanned::into_inner), enabled: raw.nightly.enabled.unwrap_or(true) };
    let bake = raw.bake.as_ref().map(|bake| {
        let written = Path::new(bake.get_ref());
        if written.is_absolute() || written.has_root() || bake.get_ref().is_empty() {
            errors.push(locate.error(
                Some(bake.span()),
                "bake",
                "the bake file must be a path relative to desired.toml, inside the repository",
            ));
        }
        BakePath {
            path: locate.path.parent().unwrap_or(Path::new("")).join(written),
            at: locate.error(Some(bake.span()), "bake", ""),
        }
    });
    let mut bake_variables = Vec::new();
    for variable in &raw.bake_variables {
        match check_bake_variable(variable.get_ref()) {
            Ok(()) => bake_variables.push(variable.get_ref().clone()),
            Err(why) => errors.push(locate.error(Some(variable.span()), "bake_variables", why)),
        }
    }
    let deployment = match &raw.deployment {
        Some(name) => {
            if let Err(why) = check_deployment(name.get_ref()) {
                errors.push(locate.error(Some(name.span()), "deployment", why));
            }
            name.get_ref().clone()
        }
        None => crate::mark::DEFAULT_DEPLOYMENT.to_owned(),
    };
    let listed = |key: &str, list: &[Spanned<String>]| -> Vec<Import> {
        list.iter()
            .enumerate()
            .map(|(idx, entry)| Import {
                address: entry.get_ref().clone(),
                at: locate.error(Some(entry.span()), &format!("{key}[{idx}]"), ""),
            })
            .collect()
    };
    let imports = listed("import", &raw.import);
    let handed_over = listed("handed_over", &raw.handed_over);
    let mut put_back: Vec<PutBackKind> = Vec::new();
    for (idx, entry) in raw.drift.put_back.iter().enumerate() {
        let at = locate.error(Some(entry.span()), &format!("drift.put_back[{idx}]"), "");
        if put_back.iter().any(|named| named.kind == *entry.get_ref()) {
            errors.push(at.with_message(format!("`{}` is named twice", entry.get_ref())));
        } else {
            put_back.push(PutBackKind { kind: entry.get_ref().clone(), at });
        }
    }
    Desired {
        path: locate.path.to_owned(),
        region: raw.region.into_inner(),
        deployment,
        imports,
        handed_over,
        put_back,
        nightly,
        bake,
        bake_variables,
        findings: Vec::new(),
        sections: Vec::new(),
        references: Vec::new(),
    }
}

impl Desired {
    /// `tags` with this deployment's mark: what every resource reconcile marks is given.
    pub fn marked(
        &self,
        tags: &std::collections::BTreeMap<String, String>,
    ) -> std::collections::BTreeMap<String, String> {
        crate::mark::marked(tags, &self.deployment)
    }

    /// The mark, as a tag: its key and this deployment's name.
    pub fn mark(&self) -> (String, String) {
        (crate::mark::MARK_KEY.to_owned(), self.deployment.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Desired, DesiredErrors> {
        Desired::parse(Path::new("desired.toml"), text)
    }

    fn errors(text: &str) -> String {
        parse(text).expect_err("the file should be refused").to_string()
    }

    #[test]
    fn a_wrong_type_names_its_key() {
        let message = errors("region = 5\n");
        assert!(
            message.starts_with("desired.toml:1:10: `region`: invalid type: integer `5`, expected a string"),
            "{message}"
        );
    }

    #[test]
    fn syntax_errors_are_located() {
        assert!(errors("region = \"us-east-1\n").starts_with("desired.toml:1:"));
    }

    #[test]
    fn a_region_is_checked_by_its_form() {
        assert_eq!(
            errors("region = \"us-est-1\"\n"),
            "desired.toml:1:10: `region`: `us-est-1` is not an AWS region name such as `us-east-1`"
        );
        for region in ["us-east-1", "us-gov-west-1", "ap-southeast-7", "eusc-de-east-1x"] {
            let text = format!("region = \"{region}\"\n");
            assert_eq!(parse(&text).is_ok(), region != "eusc-de-east-1x", "{region}");
        }
    }

    #[test]
    fn a_deployment_is_named_in_a_few_plain_characters_or_is_the_default() {
        assert_eq!(parse("region = \"us-east-1\"\n").unwrap().deployment, "default");
        let named = parse("region = \"us-east-1\"\ndeployment = \"rocm-bake.v2_x\"\n").unwrap();
        assert_eq!(named.deployment, "rocm-bake.v2_x");
        assert_eq!(named.mark(), ("reconcile:deployment".to_owned(), "rocm-bake.v2_x".to_owned()));
        for bad in ["", "-x", "a b", "a*", "a/b", "é", &"x".repeat(65)] {
            let message = errors(&format!("region = \"us-east-1\"\ndeployment = \"{bad}\"\n"));
            assert!(message.starts_with("desired.toml:2:14: `deployment`: "), "{bad}: {message}");
        }
    }

    #[test]
    fn the_import_list_keeps_each_entry_and_where_it_is() {
        let desired =
            parse("region = \"us-east-1\"\nimport = [\n  \"ecr_repository.pytorch\",\n  \"s3_bucket.cache\",\n]\n")
                .unwrap();
        let entries: Vec<(&str, String)> =
            desired.imports.iter().map(|i| (i.address.as_str(), i.at.clone().with_message("x").to_string())).collect();
        assert_eq!(
            entries,
            [
                ("ecr_repository.pytorch", "desired.toml:3:3: `import[0]`: x".to_owned()),
                ("s3_bucket.cache", "desired.toml:4:3: `import[1]`: x".to_owned()),
            ]
        );
    }

    #[test]
    fn reconciles_own_tag_keys_are_no_files_to_write() {
        for key in ["reconcile:deployment", "Reconcile:Deployment", "reconcile:anything"] {
            let why = check_tag(key, "x").unwrap_err();
            assert!(why.contains("are reconcile's own"), "{key}: {why}");
        }
        for key in ["managed-by", "reconcile", "team:reconcile:x"] {
            assert_eq!(check_tag(key, "reconcile"), Ok(()), "{key}");
        }
    }

    #[test]
    fn line_column_counts_characters() {
        assert_eq!(line_column("ab\ncdé f", 8), (2, 5));
        assert_eq!(line_column("x", 0), (1, 1));
    }
}
