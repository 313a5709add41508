//! The plan model and the pure diff that produces it.
//!
//! Resources are compared in their canonical form: each resource crate turns both what
//! `desired.toml` asks for and what AWS returned into the same canonical JSON (documents
//! normalized, sets sorted, server defaults folded away), and the diff here is then plain
//! equality, field by field. Semantic comparison lives in canonicalization, so the same form
//! is what is compared, what is shown and what is fingerprinted.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::address::Address;

/// Every desired resource, keyed by address, as the resource crates' `desired` functions
/// computed them: planning what desired.toml asks for needs no reconciler and no AWS.
pub type DesiredResources = BTreeMap<Address, DesiredResource>;

/// The key on a resource in desired.toml that takes over one reconcile did not make.
pub const ADOPT: &str = "adopt";

/// Finding code: with `[ci]` declared, the plan makes a change only an administrator makes (a CI
/// identity, a bucket's expiry, an ACL that grants someone else): the apply role cannot apply
/// it. Stable.
pub const NEEDS_AN_ADMINISTRATOR: &str = "W501";

/// One resource as `desired.toml` wants it, in canonical form.
#[derive(Debug, Clone, PartialEq)]
pub struct DesiredResource {
    pub address: Address,
    /// The name AWS knows it by, or knows the resource it belongs to by: the repository, the
    /// bucket (after template expansion), the role or the project.
    pub remote_name: String,
    /// The resource this one belongs to (a lifecycle policy's repository, say), if any.
    pub parent: Option<Address>,
    /// A JSON object of the fields `reconcile` manages. A field that is not here is not managed,
    /// whatever AWS holds for it (like Terraform's optional and computed attributes).
    pub attributes: Map<String, Value>,
    /// Resources that must exist before this one is created or changed.
    pub depends_on: Vec<Address>,
    /// The safety checks desired.toml overrides on this resource, by the key that does it (such
    /// as `allow_tagged_expiry`): not compared, only consulted by the checks.
    pub overrides: Vec<&'static str>,
    /// Applied only after every other change of the plan succeeded (the nightly's on switch):
    /// [`crate::engine::desired_resources`] makes it depend on every other desired resource.
    pub last: bool,
    /// How the mark orders it ([`crate::ownership`]): what IAM reaches through the mark (a
    /// repository the builds push to) is marked before what grants by it changes.
    pub mark: MarkOrder,
    /// One per account (GitHub's OIDC identity provider), so every deployment in it shares it:
    /// made (with this deployment's mark) when missing, used as it is when someone else's
    /// ([`crate::ownership::shared`]), and never deleted by a destroy.
    pub shared: bool,
}

/// Where a resource stands in the order the mark gives an apply: IAM grants the builds the
/// repositories that carry the mark, so a plan that marks a repository (an import, a re-mark)
/// and changes a grant to the mark's condition must mark first, or a build running meanwhile
/// loses its push. [`crate::engine::desired_resources`] makes every `Grants` depend on every
/// `Reached`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MarkOrder {
    #[default]
    Neither,
    /// Reached through its mark by the grants (a repository).
    Reached,
    /// Grants by the mark (a role's policy, its boundary, the role that carries it).
    Grants,
}

impl DesiredResource {
    pub fn new(address: Address, remote_name: impl Into<String>, attributes: Map<String, Value>) -> DesiredResource {
        DesiredResource {
            address,
            remote_name: remote_name.into(),
            parent: None,
            attributes,
            depends_on: Vec::new(),
            overrides: Vec::new(),
            last: false,
            mark: MarkOrder::Neither,
            shared: false,
        }
    }

    /// One per account, shared by every deployment in it (see [`DesiredResource::shared`]).
    pub fn shared_in_the_account(mut self) -> DesiredResource {
        self.shared = true;
        self
    }

    /// Stands where `order` says in the order the mark gives an apply.
    pub fn ordered_by_mark(mut self, order: MarkOrder) -> DesiredResource {
        self.mark = order;
        self
    }

    /// Applied only after every other change of the plan succeeded, and skipped when any failed.
    pub fn applied_last(mut self) -> DesiredResource {
        self.last = true;
        self
    }

    /// Whether desired.toml sets `key` on this resource to override a safety check.
    pub fn overrides(&self, key: &str) -> bool {
        self.overrides.contains(&key)
    }

    /// Takes over what exists without reconcile's tag, when desired.toml says `adopt = true`.
    pub fn adopted(mut self, adopt: bool) -> DesiredResource {
        if adopt {
            self.overrides.push(ADOPT);
        }
        self
    }

    /// Belongs to `parent`, and so depends on it.
    pub fn under(mut self, parent: &Address) -> DesiredResource {
        self.parent = Some(parent.clone());
        self.depends_on.push(parent.clone());
        self
    }

    pub fn depending_on(mut self, addresses: impl IntoIterator<Item = Address>) -> DesiredResource {
        self.depends_on.extend(addresses);
        self
    }
}

/// What AWS holds for one address. Absence is a value, not an error.
#[derive(Debug, Clone, PartialEq)]
pub enum Observed {
    Absent,
    /// The canonical form of the live resource, with at least every managed field.
    Present(Map<String, Value>),
}

impl Observed {
    /// A fingerprint of exactly what was observed, to tell later whether it moved.
    pub fn fingerprint(&self) -> String {
        match self {
            Observed::Absent => "absent".to_owned(),
            Observed::Present(fields) => crate::json::fingerprint(&Value::Object(fields.clone())),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Action {
    Create,
    Update,
    /// Delete, then create: a field that cannot be changed in place differs.
    Replace,
    Delete,
}

impl Action {
    /// A word for messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Update => "update",
            Action::Replace => "replace",
            Action::Delete => "delete",
        }
    }

    /// The JSON plan's `change.actions`, as in `terraform show -json`: a replacement is
    /// `["delete", "create"]`, so a consumer that looks for "delete" sees every destructive change.
    pub fn json_actions(self) -> &'static [&'static str] {
        match self {
            Action::Create => &["create"],
            Action::Update => &["update"],
            Action::Replace => &["delete", "create"],
            Action::Delete => &["delete"],
        }
    }

    /// Whether carrying it out destroys something, and so needs `--allow-delete`.
    pub fn is_destructive(self) -> bool {
        matches!(self, Action::Replace | Action::Delete)
    }
}

/// How a change takes a resource over ([`crate::ownership`]): what its mark is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Takeover {
    /// Terraform's import: a resource reconcile did not make, listed to be taken over. Writing
    /// the mark is the import itself, not a change of the resource.
    Import,
    /// A resource reconcile made before the mark (its old `managed-by = reconcile` tag): marked.
    Remark,
}

impl Takeover {
    pub fn as_str(self) -> &'static str {
        match self {
            Takeover::Import => "import",
            Takeover::Remark => "remark",
        }
    }
}

/// One change to one resource: everything apply needs, and nothing it must decide.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub address: Address,
    pub action: Action,
    /// The managed fields as observed; `None` for a create.
    pub before: Option<Map<String, Value>>,
    /// The managed fields as desired; `None` for a delete.
    pub after: Option<Map<String, Value>>,
    pub depends_on: Vec<Address>,
}

/// One field of a change.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldChange<'a> {
    pub name: &'a str,
    pub before: Option<&'a Value>,
    pub after: Option<&'a Value>,
}

impl Change {
    /// The fields that differ between before and after, in name order.
    pub fn field_changes(&self) -> Vec<FieldChange<'_>> {
        let before = self.before.as_ref();
        let after = self.after.as_ref();
        let mut names: Vec<&String> = before.into_iter().chain(after).flat_map(|fields| fields.keys()).collect();
        names.sort();
        names.dedup();
        names
            .into_iter()
            .filter_map(|name| {
                let (b, a) = (before.and_then(|f| f.get(name)), after.and_then(|f| f.get(name)));
                (b != a).then_some(FieldChange { name, before: b, after: a })
            })
            .collect()
    }

    /// Whether the change writes nothing but the mark ([`crate::mark::MARK_KEY`]): an
    /// import of a resource that is already as desired.toml says.
    pub fn only_marks(&self) -> bool {
        self.action == Action::Update && self.field_changes().iter().all(FieldChange::only_the_mark)
    }
}

impl FieldChange<'_> {
    /// Whether this is the tags changing by the mark ([`crate::mark::MARK_KEY`]) alone.
    pub fn only_the_mark(&self) -> bool {
        let without_mark = |tags: Option<&Value>| {
            let mut tags = tags.and_then(Value::as_object).cloned().unwrap_or_default();
            tags.remove(crate::mark::MARK_KEY);
            tags
        };
        self.name == "tags" && without_mark(self.before) == without_mark(self.after)
    }

    /// Whether, besides the mark, this field changes only by gaining `added` (keys the field
    /// lacked, with their values): what `import --generate` lets a takeover apply of what the
    /// user's own desired.toml already said.
    pub fn only_adds(&self, added: &serde_json::Map<String, Value>) -> bool {
        let without_mark = |value: Option<&Value>| {
            let mut map = value.and_then(Value::as_object).cloned().unwrap_or_default();
            map.remove(crate::mark::MARK_KEY);
            map
        };
        let before = without_mark(self.before);
        let mut expected = before.clone();
        for (key, value) in added {
            if before.contains_key(key) {
                return false;
            }
            expected.insert(key.clone(), value.clone());
        }
        !added.is_empty() && without_mark(self.after) == expected
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Warning,
    Error,
}

/// Something worth telling the reader of a plan that is not itself a change: data, so it can
/// be rendered, counted and acted on (a later safety check refuses on errors).
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// Stable and documented, such as `W001`; never reused for another meaning.
    pub code: String,
    pub severity: Severity,
    pub address: Option<Address>,
    pub message: String,
    /// The key in desired.toml that allows what this finding would otherwise refuse, when the
    /// resource sets it; the finding is then a warning, and says so.
    pub overridden_by: Option<String>,
}

impl Finding {
    /// Whether it refuses `validate`, `plan` and `apply` (exit 3): an error about desired.toml
    /// itself (a `W` code) rather than about the account.
    pub fn refuses(&self) -> bool {
        self.severity == Severity::Error && self.code.starts_with('W')
    }

    /// Whether it says the account differs from the desired state (so `drift` must fail), as
    /// against a note about desired.toml itself: every error, every drift (`D`) and security
    /// (`S`) finding.
    pub fn is_drift(&self) -> bool {
        self.severity == Severity::Error || self.code.starts_with('D') || self.code.starts_with('S')
    }

    /// Sorts by risk: errors first; among them security (`S`), then drift (`D`), then the rest;
    /// then by code and address, so the order is stable.
    pub fn rank(findings: &mut [Finding]) {
        let category = |code: &str| match code.chars().next() {
            Some('S') => 0,
            Some('D') => 1,
            _ => 2,
        };
        findings.sort_by(|a, b| {
            (b.severity, category(&a.code), &a.code, &a.address).cmp(&(
                a.severity,
                category(&b.code),
                &b.code,
                &b.address,
            ))
        });
    }
}

/// Everything `plan` learned and decided. Changes are sorted by address.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub account: String,
    pub region: String,
    pub changes: Vec<Change>,
    pub findings: Vec<Finding>,
    /// What was observed for every address the plan looked at, changed or not.
    pub observed: BTreeMap<Address, Observed>,
    /// What changes will do beyond their fields, by address, as their reconcilers assessed it
    /// (what a lifecycle policy the plan puts will expire when it first runs).
    pub impacts: BTreeMap<Address, Impact>,
    /// What made the plan, `reconcile 0.1.0 (commit ...)`, which every rendering names: a plan
    /// in a pull request says which build of the tool to trust it from.
    pub made_by: Option<String>,
    /// Who last changed each drifted resource (or one a finding is about), from CloudTrail's
    /// event history, when the run asked (`drift`, `plan --attribute`).
    pub attributions: BTreeMap<Address, Attribution>,
    /// What every attribution shares: how far back it looked, and CloudTrail's delivery delay.
    pub attribution_note: Option<String>,
    /// A destroy plan (`plan --destroy`): what is absent stays so, and nothing is made.
    pub destroy: bool,
    /// The changes that take a resource over (import or re-mark), by address.
    pub takeovers: BTreeMap<Address, Takeover>,
    /// The changes only an administrator makes, in plan order, each with why (what
    /// [`NEEDS_AN_ADMINISTRATOR`] names): a public plan names only those it shows.
    pub administrators: Vec<(Address, String)>,
    /// What the plan's changes do to the monthly bill, cause by cause (reconcile_cost's
    /// estimate from what the account measured); empty when no change touches it. It informs:
    /// no exit code or status depends on it.
    pub costs: Vec<CostFigure>,
    /// What resolves the findings that refuse the plan (the command that imports what is not
    /// ours, the lines a new bake target needs), which a refused plan leads with.
    pub next_steps: Vec<NextStep>,
}

/// One thing to do about a refused plan: what to run or change, and what to add, verbatim.
#[derive(Debug, Clone, PartialEq)]
pub struct NextStep {
    /// What to do, in a sentence whose commands and keys are code spans.
    pub say: String,
    /// Lines to add to a file, shown as they are (TOML), under the sentence.
    pub lines: Vec<String>,
}

/// One cause of a change to the monthly bill, with what it rests on.
#[derive(Debug, Clone, PartialEq)]
pub struct CostFigure {
    /// `builds`, `registry` or `cache`.
    pub cause: String,
    /// What changes it, as the plan shows it: `NIGHTLY_ARCHES "gfx1201" -> "gfx1201,gfx950"`.
    pub what: String,
    /// Dollars a month more (less, when negative); `None` when it cannot be estimated.
    pub monthly_usd: Option<f64>,
    /// The figures it rests on, or why it cannot be estimated.
    pub basis: String,
    /// Made from other resources (a new repository's siblings), not from what it measured itself.
    pub estimate: bool,
}

impl CostFigure {
    /// `builds: about +$301.42 a month (NIGHTLY_ARCHES ...): basis`, or `cannot be estimated`.
    pub fn line(&self) -> String {
        let figure = match self.monthly_usd {
            Some(usd) => {
                let sign = if usd < 0.0 { "-" } else { "+" };
                let kind = if self.estimate { "an estimate of" } else { "about" };
                format!("{kind} {sign}{} a month", crate::units::usd(usd.abs()))
            }
            None => "cannot be estimated".to_owned(),
        };
        format!("{}: {figure} ({}): {}", self.cause, self.what, self.basis)
    }
}

/// The sum of the figures that could be made, and whether every one could.
pub fn cost_total(costs: &[CostFigure]) -> (f64, bool) {
    (costs.iter().filter_map(|c| c.monthly_usd).sum(), costs.iter().all(|c| c.monthly_usd.is_some()))
}

/// Who last changed a resource, as CloudTrail tells it.
#[derive(Debug, Clone, PartialEq)]
pub enum Attribution {
    /// The most recent event that could have caused the drift.
    Event(ChangeEvent),
    /// No such event in the window looked at, of this many days.
    NoneFound { days: u32 },
    /// It could not be looked up: why (never a guess).
    Unknown(String),
}

/// One CloudTrail management event.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeEvent {
    /// Such as `PutLifecyclePolicy`.
    pub event: String,
    /// Seconds since the epoch.
    pub at: i64,
    /// The caller's ARN as CloudTrail has it (a role's session: `arn:aws:sts::ID:assumed-role/R/S`).
    pub principal: String,
    /// For a role's session: the role, and the session's name.
    pub role: Option<String>,
    pub session: Option<String>,
    pub source_ip: String,
    pub user_agent: String,
    pub event_id: String,
    /// Made by reconcile's own apply (its user agent, or the apply role): not the cause.
    pub by_reconcile: bool,
}

/// Who made a change, as a public page says it of a caller that is no role's session: its kind
/// only (an IAM user's name is as personal as a session's).
pub const PUBLIC_PRINCIPAL: &str = "an IAM user or the account's root";

impl Attribution {
    /// One line for people: who, when, what, from where.
    pub fn line(&self) -> String {
        match self.event_parts() {
            Some(parts) => parts.iter().map(|(words, value)| format!("{words}`{value}`")).collect(),
            None => self.other_line(),
        }
    }

    /// An event's line as our words each followed by the value it introduces, so that every
    /// medium quotes the values its own way (a value may hold backticks): `None` for the other
    /// kinds, whose line holds no live value.
    pub fn event_parts(&self) -> Option<Vec<(String, String)>> {
        let Attribution::Event(event) = self else { return None };
        let verb = if event.by_reconcile { "applied by reconcile, as" } else { "last changed by" };
        let mut parts = match (&event.role, &event.session) {
            (Some(role), Some(session)) => {
                vec![(format!("{verb} role "), role.clone()), (" (session ".to_owned(), session.clone())]
            }
            // As a public page says it: the role alone.
            (Some(role), None) if event.principal == *role => vec![(format!("{verb} role "), role.clone())],
            // As a public page says it: the kind of caller, in words; a terminal names which.
            (None, _) if event.principal == PUBLIC_PRINCIPAL => Vec::new(),
            _ => vec![(format!("{verb} "), event.principal.clone())],
        };
        let at = crate::time::date_time(event.at);
        let when = if parts.is_empty() {
            format!(
                "{verb} {PUBLIC_PRINCIPAL} (a maintainer's private drift check names which) at {at}, with the \
                 call "
            )
        } else {
            let close = if event.role.is_some() && event.session.is_some() { ")" } else { "" };
            format!("{close} at {at}: ")
        };
        parts.push((when, event.event.clone()));
        if !event.source_ip.is_empty() || !event.user_agent.is_empty() {
            parts.push((format!(" from {}, user agent ", event.source_ip), event.user_agent.clone()));
        }
        parts.push((", event ".to_owned(), event.event_id.clone()));
        Some(parts)
    }

    /// This attribution as a public page may say it: the role and the time, the event and its
    /// id (a maintainer looks the rest up in CloudTrail), never the session's name (often an
    /// e-mail address), the source IP or the user agent; a caller that is no role's session (an
    /// IAM user, whose name is as personal) is named by its kind only.
    pub fn public(self) -> Attribution {
        let Attribution::Event(event) = self else { return self };
        let principal = match &event.role {
            Some(role) => role.clone(),
            None => PUBLIC_PRINCIPAL.to_owned(),
        };
        Attribution::Event(ChangeEvent {
            principal,
            session: None,
            source_ip: String::new(),
            user_agent: String::new(),
            ..event
        })
    }

    fn other_line(&self) -> String {
        match self {
            Attribution::Event(_) => unreachable!("an event has parts"),
            Attribution::NoneFound { days } => {
                format!("no CloudTrail event that could have changed it in the last {days} days")
            }
            Attribution::Unknown(why) => format!("who changed it is unknown: {why}"),
        }
    }
}

/// What one change will do beyond the fields it sets, as its reconciler says it: a line for
/// people and the numbers behind it for tools. The engine and the renderers only carry it.
#[derive(Debug, Clone, PartialEq)]
pub struct Impact {
    /// Introduces `line` under the change in the text plan: `when it first runs, the policy`.
    pub context: String,
    /// What it does, in a few words: `expires 11 untagged images, 412.3 GB; no tagged image`.
    pub line: String,
    /// Whether it destroys something a reviewer must look at twice (shown as a warning).
    pub alarming: bool,
    /// The numbers behind `line`, the JSON plan's `expires` object of the change.
    pub numbers: Map<String, Value>,
}

impl Impact {
    /// What deleting a container deletes with it: `count` `items` (`images`, `objects`) of
    /// `bytes` in all, for a reviewer to read before the data goes.
    pub fn contents(items: &str, count: u64, bytes: u64) -> Impact {
        let line = match count {
            0 => format!("no {items}: it is empty"),
            1 => format!("1 {}, {}", items.trim_end_matches('s'), crate::units::bytes(bytes)),
            _ => format!("{count} {items}, {}", crate::units::bytes(bytes)),
        };
        let numbers = serde_json::json!({ items: count, "bytes": bytes });
        Impact {
            context: "deleting it deletes".to_owned(),
            line,
            alarming: count > 0,
            numbers: crate::json::object(numbers),
        }
    }

    /// How many `items` [`Impact::contents`] counted.
    pub fn count(&self, items: &str) -> Option<u64> {
        self.numbers.get(items)?.as_u64()
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Resources imported (Terraform's "to import"): an import that changes nothing but the
    /// mark counts only here, one that changes more counts as an update too.
    pub import: usize,
    pub create: usize,
    pub update: usize,
    pub delete: usize,
}

impl Plan {
    /// A plan of `account` in `region` that found nothing yet: what the engine fills in, and
    /// what a test starts from.
    pub fn new(account: impl Into<String>, region: impl Into<String>) -> Plan {
        Plan {
            account: account.into(),
            region: region.into(),
            changes: Vec::new(),
            findings: Vec::new(),
            observed: BTreeMap::new(),
            impacts: BTreeMap::new(),
            made_by: None,
            attributions: BTreeMap::new(),
            attribution_note: None,
            destroy: false,
            takeovers: BTreeMap::new(),
            administrators: Vec::new(),
            costs: Vec::new(),
            next_steps: Vec::new(),
        }
    }

    /// Whether an error finding about desired.toml refuses it: it leads with the refusal.
    pub fn refused(&self) -> bool {
        self.findings.iter().any(Finding::refuses)
    }

    pub fn summary(&self) -> Summary {
        let mut summary = Summary::default();
        for change in &self.changes {
            let import = self.takeovers.get(&change.address) == Some(&Takeover::Import);
            summary.import += usize::from(import);
            match change.action {
                Action::Create => summary.create += 1,
                Action::Update if import && change.only_marks() => {}
                Action::Update => summary.update += 1,
                // Counted as Terraform counts a replacement: one destroyed, one added.
                Action::Replace => {
                    summary.create += 1;
                    summary.delete += 1;
                }
                Action::Delete => summary.delete += 1,
            }
        }
        summary
    }

    pub fn has_changes(&self) -> bool {
        !self.changes.is_empty()
    }

    /// Whether the account differs from the desired state: a change to make, or a finding that
    /// says so (what `drift` exits 2 for).
    pub fn account_differs(&self) -> bool {
        self.has_changes() || self.findings.iter().any(Finding::is_drift)
    }

    /// Each way the account differs from desired.toml, as one short stable line, sorted: a change
    /// by its action and address (an update by each field that differs), a finding that says the
    /// account differs by its code and address; each with a fingerprint of its values (a field's
    /// before and after, what a create or delete holds, a drift or security finding's text), so
    /// that a value that changes again (a policy widened a second time) is a new line. Two drift
    /// checks that find the same drift give the same lines, whatever else (attribution, the
    /// wording of a finding about what could not be read) moved.
    pub fn differences(&self) -> Vec<String> {
        // 128 bits of SHA-256: whoever writes the account chooses these values, so a collision
        // must be out of reach, not merely unlikely.
        let short = |value: &Value| crate::json::fingerprint(value)[..32].to_owned();
        let mut lines = Vec::new();
        for change in &self.changes {
            match change.action {
                Action::Update => lines.extend(change.field_changes().iter().map(|field| {
                    let values = serde_json::json!([field.before, field.after]);
                    format!("update {}: {} {}", change.address, field.name, short(&values))
                })),
                // Both sides: a replace of a value widened again live differs only in `before`.
                action => {
                    let values = serde_json::json!([change.before, change.after]);
                    lines.push(format!("{} {} {}", action.as_str(), change.address, short(&values)));
                }
            }
        }
        for finding in self.findings.iter().filter(|finding| finding.is_drift()) {
            let what = match &finding.address {
                Some(address) => format!("{} {address}", finding.code),
                None => finding.code.clone(),
            };
            // What could not be read is said anew each night (a request id, a time): not a value.
            if finding.code.starts_with(['D', 'S']) {
                lines.push(format!("{what} {}", short(&Value::String(finding.message.clone()))));
            } else {
                lines.push(what);
            }
        }
        lines.sort();
        lines.dedup();
        lines
    }
}

/// [`NEEDS_AN_ADMINISTRATOR`] about `administrators` (address and why, in plan order), grouped
/// by why: ``"`iam_ci_role.apply`, `iam_ci_role.plan` (the CI identities: ...)"``, the first few
/// of each named (a takeover of a whole account is thirty addresses, which the plan lists).
pub fn needs_an_administrator(administrators: &[(Address, String)]) -> Finding {
    Finding {
        code: NEEDS_AN_ADMINISTRATOR.to_owned(),
        severity: Severity::Warning,
        address: None,
        message: format!(
            "this plan changes {}, which the apply role never does: an apply as a CI role makes every other change \
             and leaves these, and an administrator applies them from a terminal with `reconcile apply`",
            grouped(administrators).join("; ")
        ),
        overridden_by: None,
    }
}

/// `administrators` grouped by why, as [`needs_an_administrator`] and apply's refusal say them.
pub fn grouped(administrators: &[(Address, String)]) -> Vec<String> {
    let mut groups: Vec<(&str, Vec<String>)> = Vec::new();
    for (address, why) in administrators {
        let address = format!("`{address}`");
        match groups.iter_mut().find(|(reason, _)| reason == why) {
            Some((_, addresses)) => addresses.push(address),
            None => groups.push((why, vec![address])),
        }
    }
    const NAMED: usize = 5;
    groups
        .into_iter()
        .map(|(why, addresses)| {
            let more = addresses.len().saturating_sub(NAMED);
            let named = addresses[..addresses.len().min(NAMED)].join(", ");
            let more = if more > 0 { format!(" and {more} more") } else { String::new() };
            format!("{named}{more} ({why})")
        })
        .collect()
}

/// Puts changes in the order every format lists them: what destroys something first (a reviewer
/// must not miss a delete in a long plan), then by address.
pub fn order(changes: &mut [Change]) {
    changes.sort_by(|a, b| (!a.action.is_destructive(), &a.address).cmp(&(!b.action.is_destructive(), &b.address)));
}

/// Compares one desired resource (or its absence) with what was observed. Pure.
///
/// Only the fields the desired resource declares are compared; an undeclared resource that
/// exists becomes a delete, which apply carries out only when deletes are allowed.
pub fn diff(address: &Address, desired: Option<&DesiredResource>, observed: &Observed) -> Option<Change> {
    match (desired, observed) {
        (None, Observed::Absent) => None,
        (None, Observed::Present(fields)) => Some(Change {
            address: address.clone(),
            action: Action::Delete,
            before: Some(fields.clone()),
            after: None,
            depends_on: Vec::new(),
        }),
        (Some(desired), Observed::Absent) => Some(Change {
            address: address.clone(),
            action: Action::Create,
            before: None,
            after: Some(desired.attributes.clone()),
            depends_on: desired.depends_on.clone(),
        }),
        (Some(desired), Observed::Present(fields)) => {
            let managed: Map<String, Value> = desired
                .attributes
                .keys()
                .filter_map(|key| fields.get(key).map(|value| (key.clone(), value.clone())))
                .collect();
            (managed != desired.attributes).then(|| Change {
                address: address.clone(),
                action: Action::Update,
                before: Some(managed),
                after: Some(desired.attributes.clone()),
                depends_on: desired.depends_on.clone(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A takeover may set the keys the user's defaults add, and nothing else: not a key the live
    /// value had (changed), not one more, not one removed.
    #[test]
    fn a_field_that_only_gains_the_named_keys_besides_the_mark() {
        let mark = crate::mark::MARK_KEY;
        let before = serde_json::json!({ "team": "ml" });
        let change = |after: Value| {
            let field = FieldChange { name: "tags", before: Some(&before), after: Some(&after) };
            let added = serde_json::json!({ "project": "rocm-bake" });
            field.only_adds(added.as_object().unwrap())
        };
        assert!(change(serde_json::json!({ "team": "ml", "project": "rocm-bake", mark: "x" })));
        assert!(!change(serde_json::json!({ "team": "ml", "project": "other", mark: "x" })));
        assert!(!change(serde_json::json!({ "team": "ml", "project": "rocm-bake", "more": "1" })));
        assert!(!change(serde_json::json!({ "project": "rocm-bake" })));
        let had = serde_json::json!({ "project": "old" });
        let field = FieldChange { name: "tags", before: Some(&had), after: Some(&had) };
        assert!(!field.only_adds(serde_json::json!({ "project": "old" }).as_object().unwrap()));
    }

    #[test]
    fn what_deleting_a_container_deletes_is_said_and_counted() {
        let gb = crate::units::bytes(5_000_000_000);
        let none = Impact::contents("images", 0, 0);
        assert_eq!((none.line.as_str(), none.alarming), ("no images: it is empty", false));
        assert_eq!((none.count("images"), none.count("objects")), (Some(0), None));
        let one = Impact::contents("objects", 1, 5_000_000_000);
        assert_eq!((one.line.clone(), one.alarming, one.count("objects")), (format!("1 object, {gb}"), true, Some(1)));
        let many = Impact::contents("images", 12, 5_000_000_000);
        assert_eq!(
            (many.line.clone(), many.alarming, many.count("images")),
            (format!("12 images, {gb}"), true, Some(12))
        );
        assert_eq!(many.numbers["bytes"], 5_000_000_000u64);
        assert_eq!(many.context, "deleting it deletes");
    }
    use serde_json::json;

    #[test]
    fn an_attribution_names_a_roles_session_or_else_the_principal_and_says_whose_apply_it_was() {
        let event = ChangeEvent {
            event: "PutLifecyclePolicy".into(),
            at: 1_796_000_000,
            principal: "arn:aws:sts::123456789012:assumed-role/admin/alice".into(),
            role: Some("admin".into()),
            session: Some("alice".into()),
            source_ip: "192.0.2.7".into(),
            user_agent: "aws-cli/2.17".into(),
            event_id: "e-1".into(),
            by_reconcile: false,
        };
        assert_eq!(
            Attribution::Event(event.clone()).line(),
            "last changed by role `admin` (session `alice`) at 2026-11-30T00:53:20Z: `PutLifecyclePolicy` from \
             192.0.2.7, user agent `aws-cli/2.17`, event `e-1`"
        );
        // A user, or a role whose session CloudTrail did not name: the principal as it is.
        let user = ChangeEvent {
            principal: "arn:aws:iam::123456789012:user/bob".into(),
            role: None,
            session: None,
            by_reconcile: true,
            ..event.clone()
        };
        assert!(
            Attribution::Event(user)
                .line()
                .starts_with("applied by reconcile, as `arn:aws:iam::123456789012:user/bob` at 2026-11-30T00:53:20Z")
        );
        let half = ChangeEvent { session: None, ..event.clone() };
        assert!(Attribution::Event(half).line().contains(" `arn:aws:sts::123456789012:assumed-role/admin/alice` at "));
        assert_eq!(
            Attribution::NoneFound { days: 7 }.line(),
            "no CloudTrail event that could have changed it in the last 7 days"
        );
        assert_eq!(Attribution::Unknown("no permission".into()).line(), "who changed it is unknown: no permission");
        // In public: the role, the time, the event; no session, address or agent.
        let public = Attribution::Event(event.clone()).public().line();
        assert_eq!(public, "last changed by role `admin` at 2026-11-30T00:53:20Z: `PutLifecyclePolicy`, event `e-1`");
        // What CloudTrail left empty, one of the two: the other still said.
        let no_agent = ChangeEvent { user_agent: String::new(), ..event.clone() };
        assert!(Attribution::Event(no_agent).line().contains(" from 192.0.2.7, user agent ``"));
        let no_address = ChangeEvent { source_ip: String::new(), ..event.clone() };
        assert!(Attribution::Event(no_address).line().contains(" from , user agent `aws-cli/2.17`"));
        for private in ["alice", "192.0.2.7", "aws-cli"] {
            assert!(!public.contains(private), "{private}: {public}");
        }
        let user = ChangeEvent { role: None, session: None, principal: "arn:aws:iam::1:user/bob".into(), ..event };
        let public = Attribution::Event(user).public().line();
        assert_eq!(
            public,
            "last changed by an IAM user or the account's root (a maintainer's private drift check names which) at \
             2026-11-30T00:53:20Z, with the call `PutLifecyclePolicy`, event `e-1`"
        );
        assert!(!public.contains("bob") && !public.contains("the event names which"), "{public}");
    }

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => panic!("not an object"),
        }
    }

    #[test]
    fn the_differences_are_stable_lines_whatever_else_a_drift_check_says() {
        let change = |kind, name: &str, action, before: Option<Value>, after: Option<Value>| Change {
            address: Address::new(kind, name),
            action,
            before: before.map(object),
            after: after.map(object),
            depends_on: vec![],
        };
        let finding = |code: &str, severity, address: Option<Address>, message: &str| Finding {
            code: code.to_owned(),
            severity,
            address,
            message: message.to_owned(),
            overridden_by: None,
        };
        let mut plan = Plan {
            changes: vec![
                change(
                    crate::fake::kinds::IAM_ROLE,
                    "codebuild",
                    Action::Update,
                    Some(json!({ "description": "a", "name": "n", "tags": {} })),
                    Some(json!({ "description": "b", "name": "n", "tags": { "k": "v" } })),
                ),
                change(crate::fake::kinds::ECR_REPOSITORY, "stray", Action::Delete, Some(json!({})), None),
            ],
            findings: vec![
                finding("S104", Severity::Error, Some(Address::new(crate::fake::kinds::IAM_CI_ROLE, "plan")), "3 GB"),
                finding("W303", Severity::Warning, None, "desired.toml's own"),
                finding("D102", Severity::Error, None, "undeclared"),
            ],
            ..Plan::new("1", "r")
        };
        let without_values = |lines: Vec<String>| -> Vec<String> {
            lines.iter().map(|line| line.rsplit_once(' ').map_or(line.clone(), |(what, _)| what.to_owned())).collect()
        };
        let lines = plan.differences();
        assert_eq!(
            without_values(lines.clone()),
            [
                "D102",
                "S104 iam_ci_role.plan",
                "delete ecr_repository.stray",
                "update iam_role.codebuild: description",
                "update iam_role.codebuild: tags",
            ]
        );
        // Another attribution: the same lines.
        plan.attribution_note = Some("looked back 7 days".to_owned());
        assert_eq!(plan.differences(), lines);
        // Another value of a field, or a finding that says something else: a line of its own.
        plan.findings[0].message = "4 GB".to_owned();
        let widened = plan.differences();
        assert_ne!(widened, lines);
        assert_eq!(without_values(widened), without_values(lines.clone()));
        plan.findings[0].message = "3 GB".to_owned();
        plan.changes[0].after.as_mut().unwrap().insert("description".to_owned(), json!("c"));
        let now = plan.differences();
        let changed: Vec<&String> = now.iter().filter(|line| !lines.contains(line)).collect();
        assert_eq!(changed.len(), 1, "{changed:?}");
        assert!(changed[0].starts_with("update iam_role.codebuild: description "), "{changed:?}");
    }

    #[test]
    fn a_difference_chosen_to_collide_with_another_is_still_told_apart() {
        // Found by a birthday search against the digest the differences kept before (the first
        // 32 bits of FNV-1a-64 of `[before, after]`): a harmless grant and `"*"` on `"*"`.
        let empty = json!({ "Statement": [], "Version": "2012-10-17" });
        let harmless = json!({ "Statement": [{ "Action": "s3:GetObject", "Effect": "Allow",
            "Resource": "arn:aws:s3:::cache/*", "Sid": "Read104672" }], "Version": "2012-10-17" });
        let everything = json!({ "Statement": [{ "Action": "*", "Effect": "Allow", "Resource": "*",
            "Sid": "All17061" }], "Version": "2012-10-17" });
        let old_digest = |values: &Value| {
            let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
            for byte in crate::json::to_compact(values).bytes() {
                hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
            }
            format!("{hash:016x}")[..8].to_owned()
        };
        assert_eq!(old_digest(&json!([empty, harmless])), old_digest(&json!([empty, everything])), "a real collision");

        let one = |action, before: &Value, after: &Value| Plan {
            changes: vec![Change {
                address: Address::new(crate::fake::kinds::IAM_ROLE, "codebuild"),
                action,
                before: Some(object(json!({ "policy": before }))),
                after: Some(object(json!({ "policy": after }))),
                depends_on: vec![],
            }],
            ..Plan::new("1", "r")
        };
        let update = |after: &Value| one(Action::Update, &empty, after);
        assert_ne!(update(&harmless).differences(), update(&everything).differences());

        // A replace (or a create, or a delete) differs by what it replaces as well as by what
        // it makes: the same new value over a live value widened again is new drift.
        let replace = |before: &Value| one(Action::Replace, before, &empty);
        assert_ne!(replace(&harmless).differences(), replace(&everything).differences());
        let line = &replace(&harmless).differences()[0];
        assert_eq!(line.rsplit_once(' ').map(|(_, digest)| digest.len()), Some(32), "128 bits kept: {line}");
    }

    fn check(desired: Option<Value>, observed: Option<Value>) -> Option<(Action, Vec<String>)> {
        let address = Address::new(crate::fake::kinds::ECR_REPOSITORY, "pytorch");
        let desired = desired.map(|attributes| DesiredResource::new(address.clone(), "pytorch", object(attributes)));
        let observed = observed.map_or(Observed::Absent, |v| Observed::Present(object(v)));
        diff(&address, desired.as_ref(), &observed).map(|change| {
            let fields = change.field_changes().iter().map(|f| f.name.to_owned()).collect();
            (change.action, fields)
        })
    }

    #[test]
    fn an_update_of_a_field_set_only_on_creation_is_a_replacement() {
        let address = Address::new(crate::fake::kinds::ECR_REPOSITORY, "a");
        let desired = DesiredResource::new(address.clone(), "a", object(json!({ "e": "KMS", "t": 1 })));
        let live = |e: &str, t: u8| Observed::Present(object(json!({ "e": e, "t": t })));
        let action = |observed: &Observed, kind| {
            const E: &[crate::fields::Field] = &[crate::fields::Field::create_only("e")];
            let tables = [crate::fields::Fields { kind, fields: E }];
            diff(&address, Some(&desired), observed).map(|change| crate::engine::replacing(change, &tables).action)
        };
        assert_eq!(action(&live("AES256", 1), crate::fake::kinds::ECR_REPOSITORY), Some(Action::Replace));
        assert_eq!(action(&live("KMS", 2), crate::fake::kinds::ECR_REPOSITORY), Some(Action::Update));
        assert_eq!(action(&live("AES256", 1), crate::fake::kinds::S3_BUCKET), Some(Action::Update), "another kind");
        assert_eq!(action(&live("KMS", 1), crate::fake::kinds::ECR_REPOSITORY), None);
        assert_eq!(action(&Observed::Absent, crate::fake::kinds::ECR_REPOSITORY), Some(Action::Create));
    }

    #[test]
    fn absent_and_undesired_is_nothing() {
        assert_eq!(check(None, None), None);
    }

    #[test]
    fn desired_and_absent_is_a_create_of_every_field() {
        assert_eq!(check(Some(json!({"a": 1, "b": 2})), None), Some((Action::Create, vec!["a".into(), "b".into()])));
    }

    #[test]
    fn undesired_and_present_is_a_delete() {
        assert_eq!(check(None, Some(json!({"a": 1}))), Some((Action::Delete, vec!["a".into()])));
    }

    #[test]
    fn only_declared_fields_are_compared() {
        assert_eq!(check(Some(json!({"a": 1})), Some(json!({"a": 1, "server_owned": 7}))), None);
        assert_eq!(
            check(Some(json!({"a": 1, "b": 2})), Some(json!({"a": 1, "b": 3, "c": 4}))),
            Some((Action::Update, vec!["b".into()]))
        );
        assert_eq!(
            check(Some(json!({"a": 1, "b": 2})), Some(json!({"a": 1}))),
            Some((Action::Update, vec!["b".into()]))
        );
    }

    #[test]
    fn actions_have_their_words() {
        let words: Vec<&str> =
            [Action::Create, Action::Update, Action::Replace, Action::Delete].into_iter().map(Action::as_str).collect();
        assert_eq!(words, ["create", "update", "replace", "delete"]);
    }

    fn finding(code: &str, severity: Severity, name: &str) -> Finding {
        Finding {
            code: code.into(),
            severity,
            address: Some(Address::new(crate::fake::kinds::ECR_REPOSITORY, name)),
            message: String::new(),
            overridden_by: None,
        }
    }

    #[test]
    fn a_finding_about_the_account_is_drift_and_one_about_the_file_is_not() {
        assert!(finding("W999", Severity::Error, "a").is_drift(), "every error");
        assert!(finding("D101", Severity::Warning, "a").is_drift());
        assert!(finding("S101", Severity::Warning, "a").is_drift());
        assert!(!finding("W201", Severity::Warning, "a").is_drift(), "a warning about desired.toml");
        assert!(!finding("X1", Severity::Warning, "a").is_drift());
    }

    #[test]
    fn findings_rank_errors_first_then_security_then_drift_then_by_code_and_address() {
        let mut findings = vec![
            finding("W201", Severity::Warning, "a"),
            finding("D101", Severity::Warning, "b"),
            finding("D102", Severity::Error, "z"),
            finding("S101", Severity::Error, "y"),
            finding("D101", Severity::Warning, "a"),
            finding("W101", Severity::Error, "x"),
            finding("S103", Severity::Warning, "c"),
            // A code of no category sorts after drift, even when its letter comes first.
            finding("B100", Severity::Warning, "a"),
        ];
        Finding::rank(&mut findings);
        let order: Vec<String> = findings
            .iter()
            .map(|f| format!("{} {}", f.code, f.address.as_ref().map(|a| a.name.as_str()).unwrap_or_default()))
            .collect();
        assert_eq!(order, ["S101 y", "D102 z", "W101 x", "S103 c", "D101 a", "D101 b", "B100 a", "W201 a"]);
    }

    #[test]
    fn only_an_error_about_desired_toml_refuses() {
        assert!(finding("W301", Severity::Error, "a").refuses());
        assert!(!finding("W301", Severity::Warning, "a").refuses(), "overridden, or a warning");
        assert!(!finding("D103", Severity::Error, "a").refuses(), "about the account");
        assert!(!finding("S101", Severity::Error, "a").refuses());
    }

    #[test]
    fn a_resource_overrides_only_the_keys_it_sets() {
        let mut resource =
            DesiredResource::new(Address::new(crate::fake::kinds::ECR_LIFECYCLE_POLICY, "a"), "a", Map::new());
        assert!(!resource.overrides("allow_tagged_expiry"));
        resource.overrides.push("allow_tagged_expiry");
        assert!(resource.overrides("allow_tagged_expiry"));
        assert!(!resource.overrides("allow_something_else"));
    }

    #[test]
    fn the_account_differs_with_a_change_or_a_drift_finding() {
        let mut plan = Plan::new("1", "r");
        assert!(!plan.account_differs());
        plan.findings.push(finding("W201", Severity::Warning, "a"));
        assert!(!plan.account_differs());
        plan.findings.push(finding("D101", Severity::Warning, "a"));
        assert!(plan.account_differs());
        plan.findings.clear();
        let address = Address::new(crate::fake::kinds::ECR_REPOSITORY, "a");
        plan.changes.push(Change { address, action: Action::Create, before: None, after: None, depends_on: vec![] });
        assert!(plan.account_differs());
    }

    #[test]
    fn fingerprints_tell_absent_from_present_and_see_changes() {
        let a = Observed::Present(object(json!({"a": 1})));
        let b = Observed::Present(object(json!({"a": 2})));
        assert_ne!(a.fingerprint(), b.fingerprint());
        assert_ne!(a.fingerprint(), Observed::Absent.fingerprint());
        assert_eq!(a.fingerprint(), a.clone().fingerprint());
    }
}
