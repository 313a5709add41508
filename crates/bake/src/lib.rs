//! The bake cross-check: every ECR repository the nightly's bake file pushes to or caches in
//! must be declared, so no repository is ever made by a push (or its cache export failing
//! silently, `ignore-error=true`) without a lifecycle policy. Two cache repositories once held
//! 347 GB that way.
//!
//! Reads what `docker buildx bake --print` writes (JSON), or a `docker-bake.hcl` directly:
//! variables, `target`, `group` and `inherits`. HCL functions are not evaluated: a file that
//! needs one for a reference is refused, pointing at `--print`. Pure: the caller passes the
//! file's text and the environment.
//!
//! The bake file and desired.toml come with the pull request, so both are the author's: a
//! variable takes its value from the environment (as bake resolves it, before its default) only
//! when desired.toml lists it in `bake_variables`, which never names a credential; and every
//! value taken from the environment is replaced by `${NAME}` in whatever this module says, so no
//! environment value reaches a finding or a message. Nor does a message quote the file: a syntax
//! error says where, not what.
//!
//! Reading is bounded by what the file expands to, not only by its size: forty variables, each
//! the one before twice, are 1.8 KB of HCL and a terabyte of string. Every value is measured
//! before it is evaluated (its literal parts and the variables it names, already sized), none may
//! be more than [`MAX_VALUE_BYTES`], all of them together no more than [`MAX_TOTAL_BYTES`], in no
//! more than [`MAX_STEPS`] evaluations; `for` expressions, which could multiply, are refused like
//! functions. A file over a bound is refused (a [`Refusal`]), naming the line and the limit.

use std::collections::{BTreeMap, BTreeSet};

use hcl::eval::Context;
use serde_json::Value;

use reconcile_core::address::{Address, ResourceKind};
use reconcile_core::plan::{Finding, Severity};
use reconcile_core::redact::Redactor;

mod budget;

use budget::{Budget, context_of};

/// Finding code: a bake file references a repository of this account's ECR registry that
/// desired.toml does not declare. An error. Stable; never reused.
pub const UNDECLARED_BAKE_REPOSITORY: &str = "W401";
/// Finding code: no reference of the bake file points at ECR in the region, so nothing was
/// checked (the registry variable is probably still the fleet's default).
pub const NO_ECR_REFERENCE: &str = "W402";
/// Finding code: a target that pushes an image is built by no group the nightly builds
/// (`group "default"`): `docker buildx bake` never builds it. Stable; never reused.
pub const UNBUILT_TARGET: &str = "W403";

/// The fields of a target that name registry references.
const FIELDS: [&str; 3] = ["tags", "cache-from", "cache-to"];

/// One registry reference of one target.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Reference {
    pub target: String,
    /// `tags`, `cache-from` or `cache-to`.
    pub field: &'static str,
    /// `HOST/REPOSITORY[:TAG][@DIGEST]`.
    pub reference: String,
}

/// The most bytes one evaluated value (a variable, a target's field) may hold: a registry
/// reference is a few hundred.
pub const MAX_VALUE_BYTES: usize = 64 * 1024;
/// The most bytes every evaluated value together may hold.
pub const MAX_TOTAL_BYTES: usize = 1024 * 1024;
/// The most evaluations a file may take (variables resolved, target fields read).
pub const MAX_STEPS: usize = 100_000;

/// Why a bake file was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// It is not a bake file this reader can read (syntax, a function, a cycle, ...).
    Unreadable(String),
    /// It would expand past a bound: refused, as a safety check refuses.
    Refusal(String),
}

impl Error {
    pub fn message(&self) -> &str {
        match self {
            Error::Unreadable(message) | Error::Refusal(message) => message,
        }
    }

    fn map(self, f: impl FnOnce(&str) -> String) -> Error {
        match self {
            Error::Unreadable(message) => Error::Unreadable(f(&message)),
            Error::Refusal(message) => Error::Refusal(f(&message)),
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for Error {}

impl From<String> for Error {
    fn from(message: String) -> Error {
        Error::Unreadable(message)
    }
}

impl From<&str> for Error {
    fn from(message: &str) -> Error {
        Error::Unreadable(message.to_owned())
    }
}

/// Reads a bake file: JSON when it is JSON, HCL otherwise. `env` looks up a variable's
/// override, as bake does.
pub fn read(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Vec<Reference>, Error> {
    read_all(text, env).map(|read| read.references)
}

/// What a bake file says: its registry references, and what `docker buildx bake` builds.
struct Read {
    references: Vec<Reference>,
    builds: Builds,
}

/// Which targets `docker buildx bake` with no target builds: group `default`'s (the groups and
/// targets it names, and the targets their `target:` contexts name). `None` when the file has
/// no group `default`: then the nightly names its targets itself, and nothing is said.
#[derive(Default)]
struct Builds {
    /// Each group's targets (or groups), as written.
    groups: BTreeMap<String, Vec<String>>,
    /// Each target's `target:` contexts.
    contexts: BTreeMap<String, Vec<String>>,
}

impl Builds {
    /// The targets `docker buildx bake` builds; `None` without a group `default`.
    fn built(&self) -> Option<BTreeSet<String>> {
        let mut pending: Vec<String> = self.groups.get("default")?.clone();
        let (mut built, mut groups) = (BTreeSet::new(), BTreeSet::new());
        while let Some(name) = pending.pop() {
            if let Some(members) = self.groups.get(&name) {
                if groups.insert(name) {
                    pending.extend(members.iter().cloned());
                }
            } else if built.insert(name.clone()) {
                pending.extend(self.contexts.get(&name).into_iter().flatten().cloned());
            }
        }
        Some(built)
    }
}

/// The targets a `contexts` value names (`target:NAME`).
fn context_targets(contexts: &Value) -> Vec<String> {
    contexts
        .as_object()
        .into_iter()
        .flat_map(|contexts| contexts.values())
        .filter_map(|context| context.as_str()?.strip_prefix("target:").map(str::to_owned))
        .collect()
}

fn read_all(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Read, Error> {
    if text.trim_start().starts_with('{') {
        let value: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
        return Ok(read_json(&value)?);
    }
    read_hcl(text, env)
}

/// The JSON of `docker buildx bake --print`.
fn read_json(value: &Value) -> Result<Read, String> {
    let targets = value.get("target").and_then(Value::as_object).ok_or("it has no `target` object")?;
    let mut builds = Builds::default();
    for (name, group) in value.get("group").and_then(Value::as_object).into_iter().flatten() {
        builds.groups.insert(name.clone(), group.get("targets").and_then(strings).unwrap_or_default());
    }
    for (name, target) in targets {
        builds.contexts.insert(name.clone(), target.get("contexts").map(context_targets).unwrap_or_default());
    }
    let mut references = Vec::new();
    for (name, target) in targets {
        for field in FIELDS {
            let Some(items) = target.get(field) else { continue };
            let items = items.as_array().ok_or(format!("target `{name}`: `{field}` is not a list"))?;
            for item in items {
                if let Some(reference) = registry_reference(field, item) {
                    references.push(Reference { target: name.to_owned(), field, reference });
                }
            }
        }
    }
    Ok(Read { references, builds })
}

/// The registry reference an entry of `field` names, if any: a tag is one; a cache entry is
/// one when it is of type `registry` (a string `type=registry,ref=...`, the shorthand
/// `HOST/REPO:TAG`, or an object `{"type": "registry", "ref": ...}`).
fn registry_reference(field: &str, item: &Value) -> Option<String> {
    if field == "tags" {
        return item.as_str().map(str::to_owned);
    }
    match item {
        Value::String(entry) => {
            let mut kind = None;
            let mut reference = None;
            for (idx, part) in entry.split(',').enumerate() {
                match part.split_once('=') {
                    Some((key, value)) => match key.trim() {
                        "type" => kind = Some(value.trim().to_owned()),
                        "ref" => reference = Some(value.trim().to_owned()),
                        _ => {}
                    },
                    None if idx == 0 => reference = Some(part.trim().to_owned()),
                    None => {}
                }
            }
            reference.filter(|_| kind.as_deref().is_none_or(|k| k == "registry"))
        }
        Value::Object(entry) => {
            let kind = entry.get("type").and_then(Value::as_str);
            entry.get("ref").and_then(Value::as_str).filter(|_| kind.is_none_or(|k| k == "registry")).map(str::to_owned)
        }
        _ => None,
    }
}

/// How deep a bake HCL file may nest brackets. Real ones nest a handful deep; the HCL parser
/// backtracks exponentially on deep unclosed nesting (a 777-byte input the fuzzer found took two
/// minutes), so deeper files are refused before it sees them.
const MAX_NESTING: usize = 16;

/// A `docker-bake.hcl`, read the way bake reads it, without functions.
fn read_hcl(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Read, Error> {
    let (mut depth, mut deepest) = (0usize, 0usize);
    for c in text.chars() {
        match c {
            '{' | '[' | '(' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            '}' | ']' | ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    if deepest > MAX_NESTING {
        return Err(Error::Unreadable(format!(
            "it nests brackets {deepest} deep, more than the {MAX_NESTING} a bake file needs; pass the JSON that \
             `docker buildx bake --print` writes instead"
        )));
    }
    let body = hcl::parse(text).map_err(|error| match error {
        hcl::Error::Parse(error) => format!(
            "neither JSON nor HCL bake syntax: {} at line {}, column {}",
            error.message(),
            error.location().line(),
            error.location().column()
        ),
        _ => "neither JSON nor HCL bake syntax".to_owned(),
    })?;
    let mut budget = Budget::new(text);
    let (context, values) = variables(&body, env, &mut budget)?;

    // Each target's own attributes and the targets it inherits from.
    let mut targets: BTreeMap<String, (BTreeMap<String, hcl::Expression>, Vec<String>)> = BTreeMap::new();
    for block in body.blocks().filter(|b| b.identifier() == "target") {
        let name = block.labels().first().map(|l| l.as_str().to_owned()).ok_or("a `target` block has no name")?;
        let mut attributes = BTreeMap::new();
        let mut inherits = Vec::new();
        for attribute in block.body().attributes() {
            if attribute.key() == "inherits" {
                let value = budget.evaluate(&("target", &name), "inherits", attribute.expr(), &context, &values)?;
                inherits =
                    strings(&value).ok_or(format!("target `{name}`: `inherits` is not a list of target names"))?;
            } else {
                attributes.insert(attribute.key().to_owned(), attribute.expr().clone());
            }
        }
        targets.insert(name, (attributes, inherits));
    }

    let mut builds = Builds::default();
    for block in body.blocks().filter(|b| b.identifier() == "group") {
        let name = block.labels().first().map(|l| l.as_str().to_owned()).ok_or("a `group` block has no name")?;
        let mut members = Vec::new();
        if let Some(attribute) = block.body().attributes().find(|a| a.key() == "targets") {
            let value = budget.evaluate(&("group", &name), "targets", attribute.expr(), &context, &values)?;
            members = strings(&value).ok_or(format!("group `{name}`: `targets` is not a list of names"))?;
        }
        builds.groups.insert(name, members);
    }
    let mut references = Vec::new();
    for (name, attributes) in inherited(&targets)? {
        if let Some(expr) = attributes.get("contexts") {
            let value = budget.evaluate(&("target", name), "contexts", expr, &context, &values)?;
            builds.contexts.insert(name.to_owned(), context_targets(&value));
        }
        for field in FIELDS {
            let Some(expr) = attributes.get(field) else { continue };
            let value = budget.evaluate(&("target", name), field, expr, &context, &values)?;
            let Value::Array(items) = value else {
                return Err(Error::Unreadable(format!("target `{name}`: `{field}` is not a list")));
            };
            for item in &items {
                if let Some(reference) = registry_reference(field, item) {
                    references.push(Reference { target: name.to_owned(), field, reference });
                }
            }
        }
    }
    Ok(Read { references, builds })
}

/// A target's own attributes, and the targets it inherits from.
type Targets = BTreeMap<String, (BTreeMap<String, hcl::Expression>, Vec<String>)>;

/// Every target's attributes with those it inherits (in order, its own last, so they win), each
/// target resolved once: a chain of N targets costs N steps, not N^2 (or, copying, N^3). Without
/// recursion, so a long chain cannot exhaust the stack.
fn inherited(targets: &Targets) -> Result<BTreeMap<&str, BTreeMap<String, hcl::Expression>>, String> {
    let mut resolved: BTreeMap<&str, BTreeMap<String, hcl::Expression>> = BTreeMap::new();
    for root in targets.keys() {
        // The targets being resolved, each with how many of its parents were looked at.
        let mut path: Vec<(&str, usize)> = vec![(root.as_str(), 0)];
        while let Some((name, next)) = path.last_mut() {
            let name: &str = name;
            if resolved.contains_key(name) {
                path.pop();
                continue;
            }
            let (own, parents) = &targets[name];
            if let Some(parent) = parents.get(*next) {
                *next += 1;
                if resolved.contains_key(parent.as_str()) {
                    continue;
                }
                if let Some(start) = path.iter().position(|(on_path, _)| *on_path == parent) {
                    let cycle: Vec<&str> = path[start..].iter().map(|(n, _)| *n).chain([parent.as_str()]).collect();
                    return Err(format!("targets inherit from each other in a cycle: {}", cycle.join(" -> ")));
                }
                let Some((parent, _)) = targets.get_key_value(parent) else {
                    return Err(format!("target `{name}` inherits from `{parent}`, which does not exist"));
                };
                path.push((parent.as_str(), 0));
                continue;
            }
            let mut attributes = BTreeMap::new();
            for parent in parents {
                attributes.extend(resolved[parent.as_str()].iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            attributes.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
            resolved.insert(name, attributes);
            path.pop();
        }
    }
    Ok(resolved)
}

/// The variables, as bake resolves them: the environment's value when `env` gives one (only
/// for the variables desired.toml lists), else the default (which may use other variables). A
/// variable with neither is refused: bake would make it empty, and a reference with a hole in
/// it checks nothing.
fn variables(
    body: &hcl::Body,
    env: &dyn Fn(&str) -> Option<String>,
    budget: &mut Budget<'_>,
) -> Result<(Context<'static>, BTreeMap<String, hcl::Value>), Error> {
    let mut resolved: BTreeMap<String, hcl::Value> = BTreeMap::new();
    let mut pending: Vec<(String, Option<hcl::Expression>)> = Vec::new();
    for block in body.blocks().filter(|b| b.identifier() == "variable") {
        let name = block.labels().first().map(|l| l.as_str().to_owned()).ok_or("a `variable` block has no name")?;
        if let Some(value) = env(&name) {
            resolved.insert(name, hcl::Value::from(value));
            continue;
        }
        let default = block.body().attributes().find(|a| a.key() == "default").map(|a| a.expr().clone());
        pending.push((name, default));
    }
    // Defaults may refer to each other: resolve until nothing more can be.
    loop {
        let context = context_of(&resolved);
        let before = pending.len();
        let mut failure = None;
        let mut still = Vec::new();
        for (name, default) in pending {
            let Some(expr) = &default else {
                failure = Some((name.clone(), None));
                still.push((name, default));
                continue;
            };
            match budget.value(&("variable", &name), expr, &context, &resolved)? {
                Ok(value) => {
                    resolved.insert(name, value);
                }
                Err(why) => {
                    failure = Some((name.clone(), Some(why)));
                    still.push((name, default));
                }
            }
        }
        pending = still;
        if pending.is_empty() {
            return Ok((context_of(&resolved), resolved));
        }
        if pending.len() == before {
            return Err(Error::Unreadable(match failure.expect("a pending variable failed") {
                (name, Some(why)) => refusal(&format!("variable `{name}`"), &why),
                (name, None) => format!(
                    "variable `{name}` has no default: give it one, or list it in desired.toml's `bake_variables` \
                     and set it in the environment"
                ),
            }));
        }
    }
}

fn refusal(what: &str, why: &str) -> String {
    format!(
        "{what} cannot be evaluated ({}): reconcile reads a bake file's variables, targets, groups and `inherits`, \
         but not HCL functions; pass the JSON that `docker buildx bake --print` writes instead",
        one_line(why)
    )
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn strings(value: &Value) -> Option<Vec<String>> {
    value.as_array()?.iter().map(|v| v.as_str().map(str::to_owned)).collect()
}

/// A reference to a repository of an ECR registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EcrReference {
    pub account: String,
    pub region: String,
    pub repository: String,
}

/// The ECR repository a reference names, if its host is an ECR registry
/// (`<account>.dkr.ecr[-fips].<region>.amazonaws.com[.cn]`): the path after the host, without
/// `:tag` or `@digest`.
pub fn ecr_reference(reference: &str) -> Option<EcrReference> {
    let (host, path) = reference.split_once('/')?;
    let host = host.strip_suffix(".amazonaws.com").or_else(|| host.strip_suffix(".amazonaws.com.cn"))?;
    let mut parts = host.splitn(4, '.');
    let account = parts.next()?;
    let (dkr, ecr, region) = (parts.next()?, parts.next()?, parts.next()?);
    let is_account = account.len() == 12 && account.chars().all(|c| c.is_ascii_digit());
    if !is_account || dkr != "dkr" || !(ecr == "ecr" || ecr == "ecr-fips") || region.contains('.') {
        return None;
    }
    let path = path.split_once('@').map_or(path, |(path, _)| path);
    let repository = match path.rsplit_once(':') {
        Some((repository, tag)) if !tag.contains('/') => repository,
        _ => path,
    };
    Some(EcrReference { account: account.to_owned(), region: region.to_owned(), repository: repository.to_owned() })
}

/// Whether `value` is just an ECR registry's host (`<account>.dkr.ecr.<region>.amazonaws.com`):
/// an account and a region, nothing else.
fn is_ecr_registry(value: &str) -> bool {
    value.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
        && ecr_reference(&format!("{value}/x")).is_some()
}

/// What the cross-check found.
#[derive(Debug, Default)]
pub struct Check {
    pub findings: Vec<Finding>,
    /// How many references point at this registry (every account's, when the account is not known).
    pub checked: usize,
    /// The accounts whose ECR registry in the region the file names.
    pub accounts: BTreeSet<String>,
}

/// Checks every reference to ECR in `region` (of `account` when known; of any account when not,
/// as `validate` makes no AWS call) against the declared repositories, whose addresses are of
/// `kind` (ECR's crate declares it; this one reads no section of desired.toml). `file` names the
/// bake file in messages.
pub fn check(
    file: &str,
    references: &[Reference],
    declared: &BTreeSet<&str>,
    kind: ResourceKind,
    region: &str,
    account: Option<&str>,
) -> Check {
    let mut result = Check::default();
    let mut seen = BTreeSet::new();
    for reference in references {
        let Some(ecr) = ecr_reference(&reference.reference) else { continue };
        if ecr.region != region || account.is_some_and(|a| a != ecr.account) {
            continue;
        }
        result.checked += 1;
        result.accounts.insert(ecr.account.clone());
        if declared.contains(ecr.repository.as_str())
            || !seen.insert((ecr.repository.clone(), &reference.target, reference.field))
        {
            continue;
        }
        result.findings.push(Finding {
            code: UNDECLARED_BAKE_REPOSITORY.to_owned(),
            severity: Severity::Error,
            address: Some(Address::new(kind, &ecr.repository)),
            message: format!(
                "{file}: target `{}` {} `{}`, but desired.toml declares no repository `{}`: declare it under \
                 `[ecr.repositories]`, and the plan creates it with its lifecycle policy",
                reference.target,
                match reference.field {
                    "tags" => "pushes to",
                    "cache-to" => "exports its cache (cache-to) to",
                    _ => "imports its cache (cache-from) from",
                },
                reference.reference,
                ecr.repository
            ),
            overridden_by: None,
        });
    }
    if result.checked == 0 {
        let whose = account.map_or_else(|| "any account".to_owned(), |a| format!("account {a}"));
        result.findings.push(Finding {
            code: NO_ECR_REFERENCE.to_owned(),
            severity: Severity::Warning,
            address: None,
            message: format!(
                "{file}: no reference points at the ECR registry of {whose} in {region}, so nothing was checked; \
                 set the bake file's registry variable as the nightly does (for example \
                 `ECR_REGISTRY=<account>.dkr.ecr.{region}.amazonaws.com`)"
            ),
            overridden_by: None,
        });
    }
    result
}

/// A bake file, read, for the cross-check.
pub struct BakeFile {
    /// The path as given, for messages.
    pub name: String,
    pub references: Vec<Reference>,
    /// The targets that push an image (a `tags` entry) and that `docker buildx bake` with no
    /// target does not build (see [`UNBUILT_TARGET`]).
    pub unbuilt: Vec<String>,
    /// The environment's values of the variables desired.toml lets it set: what never appears,
    /// whole or in part, in anything this file says.
    redactor: Redactor,
}

impl BakeFile {
    /// Reads the bake file `text` (read from `name`), resolving the variables `variables` lists
    /// from `env` as bake does.
    pub fn read(
        name: &str,
        text: &str,
        variables: &[String],
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<BakeFile, Error> {
        let from_environment: Vec<(String, String)> = variables
            .iter()
            .filter_map(|variable| Some((variable.clone(), env(variable).filter(|value| !value.is_empty())?)))
            .collect();
        let lookup =
            |variable: &str| from_environment.iter().find(|(name, _)| name == variable).map(|(_, value)| value.clone());
        let read = read_all(text, &lookup);
        let mut redactor = Redactor::default();
        for (variable, value) in &from_environment {
            // An ECR registry's host names an account and a region, which every plan shows: the
            // host is taken out whole, its parts are the plan's own.
            if is_ecr_registry(value) {
                redactor.add_whole(variable, value);
            } else {
                redactor.add(variable, value);
            }
        }
        let mut file = BakeFile { name: name.to_owned(), references: Vec::new(), unbuilt: Vec::new(), redactor };
        let read = read.map_err(|why| why.map(|message| file.redact(message)))?;
        if let Some(built) = read.builds.built() {
            let pushing: BTreeSet<&str> =
                read.references.iter().filter(|r| r.field == "tags").map(|r| r.target.as_str()).collect();
            file.unbuilt = pushing.into_iter().filter(|t| !built.contains(*t)).map(str::to_owned).collect();
        }
        file.references = read.references;
        Ok(file)
    }

    /// The cross-check against desired.toml, for `account` when it is known.
    /// The repositories of `account`'s ECR registry in `region` the file names: the nightly's
    /// own, declared or not.
    pub fn repositories(&self, region: &str, account: &str) -> BTreeSet<String> {
        self.references
            .iter()
            .filter_map(|reference| ecr_reference(&reference.reference))
            .filter(|ecr| ecr.region == region && ecr.account == account)
            .map(|ecr| ecr.repository)
            .collect()
    }

    /// The cross-check against the repositories desired.toml declares in `region` (see [`check`]).
    pub fn check(&self, declared: &BTreeSet<&str>, kind: ResourceKind, region: &str, account: Option<&str>) -> Check {
        let mut check = check(&self.name, &self.references, declared, kind, region, account);
        check.findings.extend(self.unbuilt.iter().map(|target| Finding {
            code: UNBUILT_TARGET.to_owned(),
            severity: Severity::Warning,
            address: None,
            message: format!(
                "{}: target `{target}` pushes an image, but no group the nightly builds names it: `group \"default\"` \
                 (what `docker buildx bake` builds) names neither it nor a group or target that needs it, so its \
                 image is never built; add it to `group \"default\"`'s `targets`",
                self.name
            ),
            overridden_by: None,
        }));
        for finding in &mut check.findings {
            finding.message = self.redact(&finding.message);
            if let Some(address) = &mut finding.address {
                address.name = self.redact(&address.name);
            }
        }
        check
    }

    /// `text` with every value taken from the environment, and every part of it a parser could
    /// cut out, replaced by `${NAME}` (see [`Redactor`]).
    pub fn redact(&self, text: &str) -> String {
        self.redactor.redact(text).into_owned()
    }

    /// What never appears in anything shown: for the output layer, which takes it out of every
    /// byte the run writes.
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::{estimate, size};

    /// The kind the tests' repositories are of, as ECR's crate declares it.
    const REPOSITORY: ResourceKind = ResourceKind::new("ecr_repository", 300);

    const HOST: &str = "123456789012.dkr.ecr.us-east-1.amazonaws.com";

    #[test]
    fn a_target_that_pushes_and_no_group_the_nightly_builds_needs_is_said() {
        let env = |_: &str| None;
        let hcl = format!(
            r#"
group "default" {{ targets = ["app", "wheels"] }}
group "wheels" {{ targets = ["torch-wheel"] }}
target "_common" {{ dockerfile = "x" }}
target "base" {{ tags = ["{HOST}/base:t"] }}
target "app" {{
  inherits = ["_common"]
  tags = ["{HOST}/app:t"]
  contexts = {{ base = "target:base", src = "../src" }}
}}
target "torch-wheel" {{ tags = ["{HOST}/torch-wheel:t"] }}
target "forgotten" {{ tags = ["{HOST}/forgotten:t"] }}
target "cache-only" {{ cache-to = ["type=registry,ref={HOST}/cache-only-cache:c"] }}
"#
        );
        let file = BakeFile::read("rocm-bake.hcl", &hcl, &[], &env).unwrap();
        // Built: a group's, a nested group's, a context's; `_common` pushes nothing.
        assert_eq!(file.unbuilt, ["forgotten"]);
        let check = file.check(
            &BTreeSet::from(["base", "app", "torch-wheel", "forgotten", "cache-only-cache"]),
            REPOSITORY,
            "us-east-1",
            None,
        );
        let said: Vec<&str> =
            check.findings.iter().filter(|f| f.code == UNBUILT_TARGET).map(|f| f.message.as_str()).collect();
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(said[0].starts_with("rocm-bake.hcl: target `forgotten` pushes an image, but no group"), "{}", said[0]);
        // Bake's JSON says the same.
        let json = serde_json::json!({
            "group": { "default": { "targets": ["app"] } },
            "target": {
                "app": { "tags": [format!("{HOST}/app:t")], "contexts": { "base": "target:base" } },
                "base": { "tags": [format!("{HOST}/base:t")] },
                "forgotten": { "tags": [format!("{HOST}/forgotten:t")] },
            },
        });
        assert_eq!(BakeFile::read("print.json", &json.to_string(), &[], &env).unwrap().unbuilt, ["forgotten"]);
        // No group `default`: the nightly names its targets itself, and nothing is said.
        let named = hcl.replace("group \"default\"", "group \"all\"");
        assert!(BakeFile::read("rocm-bake.hcl", &named, &[], &env).unwrap().unbuilt.is_empty());
    }

    #[test]
    fn the_repositories_are_those_of_this_accounts_registry_in_this_region_only() {
        let hcl = format!(
            r#"
target "a" {{ tags = ["{HOST}/pytorch:t", "{HOST}/pytorch:u", "{HOST}/triton:t"] }}
target "b" {{ tags = ["123456789012.dkr.ecr.eu-west-1.amazonaws.com/elsewhere:t", "999999999999.dkr.ecr.us-east-1.amazonaws.com/theirs:t", "docker.io/library/ubuntu:24.04"] }}
"#
        );
        let file = BakeFile::read("bake.hcl", &hcl, &[], &no_env).unwrap();
        let ours: Vec<String> = file.repositories("us-east-1", "123456789012").into_iter().collect();
        assert_eq!(ours, ["pytorch", "triton"]);
        let elsewhere: Vec<String> = file.repositories("eu-west-1", "123456789012").into_iter().collect();
        assert_eq!(elsewhere, ["elsewhere"]);
        assert!(file.repositories("us-east-1", "111111111111").is_empty());
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn names(references: &[Reference]) -> Vec<String> {
        references.iter().map(|r| format!("{} {} {}", r.target, r.field, r.reference)).collect()
    }

    #[test]
    fn reads_the_print_json_with_cache_entries_as_strings_or_objects() {
        let json = format!(
            r#"{{"group": {{"default": {{"targets": ["foo"]}}}},
               "target": {{"foo": {{
                 "tags": ["{HOST}/foo:nightly"],
                 "cache-from": ["type=registry,ref={HOST}/foo-cache:buildcache,oci-mediatypes", "type=local,src=/tmp/x", "{HOST}/bare:c"],
                 "cache-to": [{{"type": "registry", "ref": "{HOST}/foo-cache:buildcache", "mode": "max"}}, {{"type": "gha"}}]
               }}}}}}"#
        );
        let references = read(&json, &no_env).unwrap();
        assert_eq!(
            names(&references),
            [
                format!("foo tags {HOST}/foo:nightly"),
                format!("foo cache-from {HOST}/foo-cache:buildcache"),
                format!("foo cache-from {HOST}/bare:c"),
                format!("foo cache-to {HOST}/foo-cache:buildcache"),
            ]
        );
    }

    const HCL: &str = r#"
variable "REGISTRY" { default = "zot.fleet:5000" }
variable "CACHE" { default = "${REGISTRY}/cache" }
variable "EMPTY" { default = "" }
group "default" { targets = ["pytorch", "foo"] }
target "_common" {
  cache-to = ["type=registry,ref=${REGISTRY}/common-cache:c,mode=max,ignore-error=true"]
}
target "pytorch" {
  inherits = ["_common"]
  tags = ["${REGISTRY}/pytorch:nightly${EMPTY}"]
}
target "foo" {
  inherits = ["_common"]
  tags = ["${REGISTRY}/foo:nightly"]
  cache-to = ["type=registry,ref=${REGISTRY}/foo-cache:c,mode=max,ignore-error=true"]
  cache-from = ["type=registry,ref=${CACHE}:x"]
}
"#;

    #[test]
    fn reads_hcl_resolving_variables_as_bake_does_and_inherits() {
        let defaults = read(HCL, &no_env).unwrap();
        assert!(names(&defaults).contains(&"foo tags zot.fleet:5000/foo:nightly".to_owned()), "{defaults:?}");
        let env = |name: &str| (name == "REGISTRY").then(|| HOST.to_owned());
        let references = read(HCL, &env).unwrap();
        assert_eq!(
            names(&references),
            [
                "_common cache-to H/common-cache:c",
                "foo tags H/foo:nightly",
                "foo cache-from H/cache:x",
                "foo cache-to H/foo-cache:c",
                "pytorch tags H/pytorch:nightly",
                "pytorch cache-to H/common-cache:c",
            ]
            .map(|line| line.replace('H', HOST))
        );
    }

    #[test]
    fn the_environment_sets_only_the_variables_desired_toml_lists_and_never_shows_in_a_finding() {
        let secret = "ghp_s3cr3t-canary";
        let env = |name: &str| match name {
            "REGISTRY" => Some(HOST.to_owned()),
            "GITHUB_TOKEN" | "LEAK" => Some(secret.to_owned()),
            _ => None,
        };
        let hcl = r#"
variable "REGISTRY" { default = "zot.fleet:5000" }
variable "LEAK" { default = "x" }
target "foo" { tags = ["${REGISTRY}/leak-${LEAK}:t"] }
"#;
        let declared = BTreeSet::from(["foo"]);
        // Not listed: the file's default, whatever the environment holds.
        let unlisted = BakeFile::read("bake.hcl", hcl, &[], &env).unwrap();
        assert_eq!(names(&unlisted.references), ["foo tags zot.fleet:5000/leak-x:t"]);
        // Listed: the environment's value, which no finding shows.
        let listed = BakeFile::read("bake.hcl", hcl, &["REGISTRY".to_owned(), "LEAK".to_owned()], &env).unwrap();
        assert_eq!(names(&listed.references), [format!("foo tags {HOST}/leak-{secret}:t")]);
        let check = listed.check(&declared, REPOSITORY, "us-east-1", Some("123456789012"));
        let finding = &check.findings[0];
        assert_eq!(finding.address.as_ref().unwrap().name, "leak-${LEAK}");
        assert_eq!(
            finding.message,
            "bake.hcl: target `foo` pushes to `${REGISTRY}/leak-${LEAK}:t`, but desired.toml declares no repository \
             `leak-${LEAK}`: declare it under `[ecr.repositories]`, and the plan creates it with its lifecycle policy"
        );
        assert_eq!(listed.redact(&format!("a {secret} and {HOST}")), "a ${LEAK} and ${REGISTRY}");
        // The output layer is handed the same values.
        assert_eq!(listed.redactor().redact(&format!("a {secret}")), "a ${LEAK}");
        assert!(unlisted.redactor().is_empty());
        // The registry's parts are the plan's own (its account and region); the secret's are not.
        assert_eq!(
            listed.redact("account 123456789012 in us-east-1, ghp_s3cr3t"),
            "account 123456789012 in us-east-1, ${LEAK}"
        );
        // A value the reference parser cuts at `:` and `@`: each part it shows is taken out.
        let cut = "canary-one:canary-two@sha256:canary-three";
        let env = |name: &str| (name == "LEAK").then(|| cut.to_owned());
        let hcl =
            format!("variable \"LEAK\" {{ default = \"x\" }}\ntarget \"t\" {{ tags = [\"{HOST}/r-${{LEAK}}\"] }}\n");
        let file = BakeFile::read("bake.hcl", &hcl, &["LEAK".to_owned()], &env).unwrap();
        let check = file.check(&declared, REPOSITORY, "us-east-1", Some("123456789012"));
        let shown = format!("{} {}", check.findings[0].message, check.findings[0].address.as_ref().unwrap().name);
        for part in ["canary-one", "canary-two", "canary-three"] {
            assert!(!shown.contains(part), "{shown}");
        }
        // A variable with no default that the environment does not set is refused, naming it
        // and nothing else.
        let undefaulted = "variable \"GITHUB_TOKEN\" {}\ntarget \"t\" { tags = [\"r/${GITHUB_TOKEN}:t\"] }\n";
        let error = BakeFile::read("bake.hcl", undefaulted, &[], &env).err().unwrap().to_string();
        assert_eq!(
            error,
            "variable `GITHUB_TOKEN` has no default: give it one, or list it in desired.toml's `bake_variables` and \
             set it in the environment"
        );
        // An error that would hold a value says its name instead.
        let listed_leak = "variable \"LEAK\" { default = \"\" }\ntarget \"t\" { tags = [\"${LEAK}\" + 1] }\n";
        let error = BakeFile::read("bake.hcl", listed_leak, &["LEAK".to_owned()], &env).err().unwrap().to_string();
        assert!(!error.contains(secret), "{error}");
    }

    #[test]
    fn a_long_chain_of_inherits_is_read_in_linear_time_and_a_cycle_is_named() {
        let mut hcl = String::from("target \"t0\" { tags = [\"x/t0:1\"] }\n");
        for n in 1..6_000 {
            hcl.push_str(&format!("target \"t{n}\" {{ inherits = [\"t{}\"] }}\n", n - 1));
        }
        let start = std::time::Instant::now();
        let references = read(&hcl, &no_env).unwrap();
        assert_eq!(references.len(), 6_000, "each inherits the tag");
        assert!(start.elapsed() < std::time::Duration::from_secs(10), "{:?}", start.elapsed());
        let cycle = "target \"a\" { inherits = [\"b\"] }\ntarget \"b\" { inherits = [\"c\"] }\ntarget \"c\" { inherits = [\"a\"] }\n";
        assert_eq!(
            read(cycle, &no_env).unwrap_err().to_string(),
            "targets inherit from each other in a cycle: a -> b -> c -> a"
        );
        let diamond = "target \"base\" { tags = [\"x/b:1\"] }\ntarget \"l\" { inherits = [\"base\"] }\ntarget \"r\" { inherits = [\"base\"] }\ntarget \"top\" { inherits = [\"l\", \"r\"] }\n";
        assert_eq!(read(diamond, &no_env).unwrap().len(), 4, "a target inherited twice is no cycle");
    }

    #[test]
    fn a_syntax_error_says_where_and_never_quotes_the_file() {
        let secret = "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI";
        let error = read(&format!("target \"a\" {{\n  {secret} ==\n}}\n"), &no_env).unwrap_err().to_string();
        assert!(error.starts_with("neither JSON nor HCL bake syntax: "), "{error}");
        assert!(error.contains("at line 2, column"), "{error}");
        assert!(!error.contains("wJalr"), "{error}");
    }

    #[test]
    fn a_file_that_needs_a_function_is_refused_pointing_at_print() {
        let hcl = r#"
variable "REGISTRY" { default = "r" }
target "foo" { tags = [notequal(REGISTRY, "") ? "${REGISTRY}/foo" : "foo"] }
"#;
        let error = read(hcl, &no_env).unwrap_err().to_string();
        assert!(error.contains("target `foo`: `tags` cannot be evaluated"), "{error}");
        assert!(error.contains("notequal"), "{error}");
        assert!(error.contains("docker buildx bake --print"), "{error}");
        let in_variable = "variable \"R\" { default = lower(\"X\") }\ntarget \"a\" {}\n";
        assert!(read(in_variable, &no_env).unwrap_err().to_string().contains("variable `R`"));
    }

    #[test]
    fn a_file_nested_deeper_than_any_bake_file_is_refused_before_parsing() {
        // What the fuzzer found: unclosed braces, each doubling the parser's work.
        let found = format!("vak=0-0-5-{}", "{555%55.5-555.5-".repeat(40));
        let start = std::time::Instant::now();
        let error = read(&found, &no_env).unwrap_err().to_string();
        assert!(error.contains("nests brackets 40 deep, more than the 16"), "{error}");
        // Unrefused it would run for ever: ten seconds tells the two apart on a loaded machine.
        assert!(start.elapsed() < std::time::Duration::from_secs(10), "{:?}", start.elapsed());
        let deep_but_fine = format!("variable \"X\" {{ default = {}1{} }}\n", "[".repeat(15), "]".repeat(15));
        assert!(read(&deep_but_fine, &no_env).is_ok(), "16 deep, the variable's brace included");
    }

    #[test]
    fn a_file_that_expands_past_a_bound_is_refused_before_it_is_evaluated() {
        // Forty variables, each the one before twice: 1.8 KB of HCL, 2^40 bytes expanded.
        let mut bomb = String::from("variable \"V0\" { default = \"xxxxxxxxxxxxxxxx\" }\n");
        for n in 1..40 {
            bomb.push_str(&format!("variable \"V{n}\" {{ default = \"${{V{0}}}${{V{0}}}\" }}\n", n - 1));
        }
        bomb.push_str("target \"t\" { tags = [\"${V39}\"] }\n");
        let start = std::time::Instant::now();
        let error = read(&bomb, &no_env).unwrap_err();
        assert!(start.elapsed() < std::time::Duration::from_secs(10), "{:?}", start.elapsed());
        assert!(matches!(error, Error::Refusal(_)), "{error:?}");
        assert_eq!(
            error.to_string(),
            "line 13: variable `V12` would expand to 65540 bytes, more than the 65536 a value may hold"
        );
        // One value repeated in a template: measured before it is made.
        let wide = format!(
            "variable \"V\" {{ default = \"{}\" }}\ntarget \"t\" {{ tags = [\"{}\"] }}\n",
            "x".repeat(1024),
            "${V}".repeat(100)
        );
        let error = read(&wide, &no_env).unwrap_err();
        assert_eq!(
            error.to_string(),
            "line 2: target `t` would expand to 102602 bytes, more than the 65536 a value may hold (`tags`)"
        );
        // Many values, each within bounds, that are too much together.
        let mut many = format!("variable \"V\" {{ default = \"{}\" }}\n", "x".repeat(60_000));
        for n in 0..20 {
            many.push_str(&format!("target \"t{n}\" {{ tags = [\"${{V}}\"] }}\n"));
        }
        let error = read(&many, &no_env).unwrap_err();
        assert!(matches!(error, Error::Refusal(_)) && error.to_string().contains("past the 1048576 bytes"), "{error}");
        // Too many evaluations: a long chain of variables declared backwards is resolved one a
        // pass.
        let mut backwards = String::new();
        for n in 0..600 {
            backwards.push_str(&format!("variable \"V{n}\" {{ default = \"${{V{}}}\" }}\n", n + 1));
        }
        backwards.push_str("variable \"V600\" { default = \"x\" }\n");
        let error = read(&backwards, &no_env).unwrap_err();
        assert!(error.to_string().contains("takes more than 100000 evaluations"), "{error}");
        // A `for`, which could multiply what it goes over, is refused like a function.
        for file in [
            "variable \"L\" { default = [\"a\"] }\ntarget \"t\" { tags = [for x in L : \"r/${x}:1\"] }\n",
            "variable \"L\" { default = [\"a\"] }\ntarget \"t\" { tags = [\"%{ for x in L }${x}%{ endfor }\"] }\n",
        ] {
            let error = read(file, &no_env).unwrap_err();
            assert!(matches!(error, Error::Unreadable(_)), "{error:?}");
            assert!(error.to_string().contains("a `for` expression or directive"), "{error}");
        }
        // What the nightly's bake file needs stays well within every bound.
        let nightly = format!("{HCL}\nvariable \"X\" {{ default = \"${{REGISTRY}}${{REGISTRY}}\" }}\n");
        assert!(read(&nightly, &no_env).is_ok());
    }

    #[test]
    fn broken_files_and_cycles_are_refused() {
        assert!(read("{ not json", &no_env).unwrap_err().to_string().contains("not valid JSON"));
        assert!(read("target \"a\" {", &no_env).unwrap_err().to_string().contains("HCL"));
        assert!(read(r#"{"group": {}}"#, &no_env).unwrap_err().to_string().contains("no `target`"));
        let cycle = "target \"a\" { inherits = [\"b\"] }\ntarget \"b\" { inherits = [\"a\"] }\n";
        assert!(read(cycle, &no_env).unwrap_err().to_string().contains("cycle"));
        let missing = "target \"a\" { inherits = [\"nope\"] }\n";
        assert!(read(missing, &no_env).unwrap_err().to_string().contains("`nope`, which does not exist"));
    }

    #[test]
    fn an_ecr_reference_is_its_host_and_repository_path() {
        let parsed = ecr_reference(&format!("{HOST}/team/foo-cache:buildcache@sha256:abc")).unwrap();
        assert_eq!(
            parsed,
            EcrReference {
                account: "123456789012".into(),
                region: "us-east-1".into(),
                repository: "team/foo-cache".into()
            }
        );
        assert_eq!(ecr_reference(&format!("{HOST}/foo")).unwrap().repository, "foo");
        // A colon before the last `/` is not a tag's.
        assert_eq!(ecr_reference(&format!("{HOST}/a:b/foo")).unwrap().repository, "a:b/foo");
        assert_eq!(
            ecr_reference("123456789012.dkr.ecr-fips.us-gov-west-1.amazonaws.com/foo:1").unwrap().region,
            "us-gov-west-1"
        );
        assert_eq!(ecr_reference("123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn/foo").unwrap().region, "cn-north-1");
        for other in [
            "foo:latest",
            "docker.io/library/ubuntu:24.04",
            "public.ecr.aws/rocm/base:1",
            "zot.fleet:5000/foo:nightly",
            "12345.dkr.ecr.us-east-1.amazonaws.com/foo",
            "123456789012.dkr.ecr.us-east-1.amazonaws.com.evil.example/foo",
            "123456789012.xkr.ecr.us-east-1.amazonaws.com/foo",
            "123456789012.dkr.notecr.us-east-1.amazonaws.com/foo",
            "123456789012.dkr.ecr.us-east-1.evil.amazonaws.com/foo",
        ] {
            assert_eq!(ecr_reference(other), None, "{other}");
        }
    }

    #[test]
    fn undeclared_repositories_of_this_registry_are_errors_and_others_are_ignored() {
        let reference = |target: &str, field: &'static str, r: &str| Reference {
            target: target.into(),
            field,
            reference: r.into(),
        };
        let references = [
            reference("foo", "tags", &format!("{HOST}/foo:nightly")),
            reference("foo", "cache-to", &format!("{HOST}/foo-cache:c")),
            reference("foo", "cache-to", &format!("{HOST}/foo-cache:d")),
            reference("foo", "tags", "999999999999.dkr.ecr.us-east-1.amazonaws.com/elsewhere:1"),
            reference("foo", "tags", "123456789012.dkr.ecr.eu-west-1.amazonaws.com/other-region:1"),
            reference("foo", "tags", "public.ecr.aws/x/y:1"),
        ];
        let declared = BTreeSet::from(["foo"]);
        let known = check("bake.json", &references, &declared, REPOSITORY, "us-east-1", Some("123456789012"));
        assert_eq!(known.checked, 3);
        assert_eq!(known.findings.len(), 1, "one finding per repository, target and field");
        let finding = &known.findings[0];
        assert_eq!((finding.code.as_str(), finding.severity), (UNDECLARED_BAKE_REPOSITORY, Severity::Error));
        assert_eq!(finding.address.as_ref().unwrap().to_string(), "ecr_repository.foo-cache");
        assert!(
            finding.message.starts_with("bake.json: target `foo` exports its cache (cache-to) to"),
            "{}",
            finding.message
        );

        // Without the account (validate), every account's registry in the region counts.
        let any = check("bake.json", &references, &declared, REPOSITORY, "us-east-1", None);
        assert_eq!(any.accounts, BTreeSet::from(["123456789012".to_owned(), "999999999999".to_owned()]));
        assert_eq!(any.findings.len(), 2);

        let none = check("bake.json", &references[3..], &declared, REPOSITORY, "us-east-1", Some("123456789012"));
        assert_eq!(none.findings[0].code, NO_ECR_REFERENCE);
        assert_eq!(none.findings[0].severity, Severity::Warning);
    }

    /// The expression `text` is, as HCL reads it on the right of `x =`.
    fn expr(text: &str) -> hcl::Expression {
        let body = hcl::parse(&format!("x = {text}\n")).unwrap();
        body.attributes().next().unwrap().expr.clone()
    }

    #[test]
    fn an_estimate_sums_every_part_an_expression_can_expand_to() {
        let sizes = BTreeMap::from([("V".to_owned(), hcl::Value::from("abcd"))]);
        let estimated = |text: &str| estimate(&expr(text), &sizes).ok();
        assert_eq!(estimated("null"), Some(8));
        assert_eq!(estimated("\"abc\""), Some(3));
        assert_eq!(estimated("[\"ab\", \"c\"]"), Some(2 + 2 + 1));
        assert_eq!(estimated("{ a = \"xyz\" }"), Some(2 + 1 + 3));
        assert_eq!(estimated("{ \"k${V}\" = \"v\" }"), Some(2 + (1 + 6) + 1), "a key that is an expression");
        assert_eq!(estimated("V"), Some(6), "a variable: its value's size");
        assert_eq!(estimated("W"), Some(0), "one not resolved yet");
        assert_eq!(estimated("V.a"), Some(6), "a traversal: what it goes into");
        assert_eq!(estimated("upper(\"ab\", V)"), Some(2 + 6), "a call: its arguments");
        assert_eq!(estimated("(\"abc\")"), Some(3));
        assert_eq!(estimated("true ? \"ab\" : \"abcd\""), Some(4), "a conditional: its larger branch");
        assert_eq!(estimated("1 + 2"), Some(8));
        assert_eq!(estimated("\"a${V}b%{ if true }cc%{ else }d%{ endif }\""), Some(1 + 6 + 1 + 2));
        assert_eq!(estimated("[for x in V: x]"), None, "a `for` is unbounded");
        assert_eq!(estimated("\"%{ for x in V }x%{ endfor }\""), None);
    }

    #[test]
    fn a_value_is_sized_as_json_would_write_it() {
        assert_eq!(size(&hcl::Value::from("ab")), 4);
        assert_eq!(size(&hcl::Value::from(vec![hcl::Value::from("ab"), hcl::Value::from("c")])), 4 + 3 + 2);
        let object: hcl::Map<String, hcl::Value> = [("k".to_owned(), hcl::Value::from("ab"))].into_iter().collect();
        assert_eq!(size(&hcl::Value::Object(object)), 1 + 3 + 4 + 2);
        assert_eq!(size(&hcl::Value::from(7)), 8);
    }

    #[test]
    fn each_bound_holds_at_its_limit_and_refuses_one_past_it() {
        let sizes = BTreeMap::new();
        let context = context_of(&sizes);
        let block = ("target", "t");
        let refused = |result: Result<Result<hcl::Value, String>, Error>| matches!(result, Err(Error::Refusal(_)));
        // A value of exactly the most bytes a value may hold, then one more.
        let at = hcl::Expression::String("a".repeat(MAX_VALUE_BYTES));
        let past = hcl::Expression::String("a".repeat(MAX_VALUE_BYTES + 1));
        assert!(!refused(Budget::new("").value(&block, &at, &context, &sizes)));
        assert!(refused(Budget::new("").value(&block, &past, &context, &sizes)));
        // The last evaluation allowed, then one more.
        let small = hcl::Expression::String("a".into());
        let mut budget = Budget { text: "", steps: MAX_STEPS - 1, bytes: 0 };
        assert!(!refused(budget.value(&block, &small, &context, &sizes)));
        assert!(refused(budget.value(&block, &small, &context, &sizes)));
        // The file's whole expansion reaching its bound exactly (a one-byte string is 3), then past it.
        let mut budget = Budget { text: "", steps: 0, bytes: MAX_TOTAL_BYTES - 3 };
        assert!(!refused(budget.value(&block, &small, &context, &sizes)));
        assert!(refused(budget.value(&block, &small, &context, &sizes)));
    }

    #[test]
    fn a_registry_host_is_an_account_and_a_region_and_nothing_else() {
        assert!(is_ecr_registry(HOST));
        assert!(!is_ecr_registry("abc"));
        assert!(!is_ecr_registry(&format!("{HOST}/extra")));
        assert!(!is_ecr_registry(&HOST.to_uppercase()));
    }
}
