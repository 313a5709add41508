//! The contract between the engine and each resource crate.

use std::collections::BTreeMap;
use std::fmt;

use async_trait::async_trait;

use crate::address::{Address, ResourceKind};
use crate::plan::{Change, DesiredResource, Finding, Observed};

/// The account and region a run works in, learned once at the start of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub id: String,
    pub region: String,
    /// `aws`, `aws-cn` or `aws-us-gov`, for building ARNs.
    pub partition: String,
}

impl Account {
    pub fn new(id: impl Into<String>, region: impl Into<String>) -> Account {
        let region = region.into();
        let partition = if region.starts_with("cn-") {
            "aws-cn"
        } else if region.starts_with("us-gov-") {
            "aws-us-gov"
        } else {
            "aws"
        };
        Account { id: id.into(), region, partition: partition.to_owned() }
    }
}

/// Where a reconciler reports what it is doing during apply, such as waiting for IAM.
pub trait Progress: Send + Sync {
    fn note(&self, address: &Address, message: &str);
}

/// A `Progress` that drops every note.
pub struct Silent;

impl Progress for Silent {
    fn note(&self, _address: &Address, _message: &str) {}
}

/// What kind of failure a [`ReconcileError`] is, so the binary can say what to do about it
/// without reading messages. The resource crates' AWS plumbing decides it from the service's
/// typed error; everything else is [`ErrorKind::Other`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The credentials are valid but lack a permission.
    AccessDenied,
    /// No credentials could be found, or they are expired or invalid.
    Unauthenticated,
    /// The endpoint could not be reached: refused, unresolvable, reset.
    Unreachable,
    /// The endpoint did not answer in time.
    Timeout,
    /// The service kept throttling after every retry.
    Throttled,
    /// The change itself is malformed: a field apply needs is missing or of the wrong type.
    InvalidChange,
    /// Anything else: the service's own answer, or a check of ours.
    Other,
}

/// A failure of one step on one resource: what was being done, to what, and why.
#[derive(Debug)]
pub struct ReconcileError {
    /// The resource, when the failure concerns one (boxed: errors travel in `Result`s, and
    /// should stay small).
    pub address: Option<Box<Address>>,
    /// What was being done, phrased to follow "failed to", such as `read lifecycle policy`.
    pub operation: String,
    /// Why, as the service or the check said it.
    pub reason: String,
    pub kind: ErrorKind,
    /// The typed cause (an SDK error, say), for whoever needs more than `reason`.
    pub source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl ReconcileError {
    pub fn new(address: Option<&Address>, operation: impl Into<String>, reason: impl Into<String>) -> Self {
        ReconcileError {
            address: address.map(|address| Box::new(address.clone())),
            operation: operation.into(),
            reason: reason.into(),
            kind: ErrorKind::Other,
            source: None,
        }
    }

    pub fn with_kind(mut self, kind: ErrorKind) -> Self {
        self.kind = kind;
        self
    }

    /// Keeps `source` as the typed cause; `reason` stays what it was.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }
}

impl fmt::Display for ReconcileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.address {
            Some(address) => write!(f, "{address}: failed to {}: {}", self.operation, self.reason),
            None => write!(f, "failed to {}: {}", self.operation, self.reason),
        }
    }
}

impl std::error::Error for ReconcileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|source| source as &(dyn std::error::Error + 'static))
    }
}

impl ReconcileError {
    /// A change a reconciler never carries out, such as deleting a repository: the plan holds
    /// one only if something other than its own diff made it.
    pub fn never(address: &Address, what: &str) -> Self {
        ReconcileError::new(
            Some(address),
            what,
            format!("reconcile never does this to `{}` resources; do it by hand if it must be done", address.kind),
        )
    }

    /// A change of a kind this reconciler does not own: the engine routes by kind, so only a
    /// plan put together by something else can hold one.
    pub fn foreign(address: &Address) -> Self {
        ReconcileError::new(
            Some(address),
            "apply",
            format!("this reconciler does not handle `{}` resources", address.kind),
        )
        .with_kind(ErrorKind::InvalidChange)
    }

    /// For `map_err` on errors that are not AWS's (those go through the resource crates' AWS
    /// plumbing, which also classifies them): `operation` on `address` failed because of
    /// `error`, whose whole chain of causes becomes the reason.
    pub fn of<'a, E: std::error::Error>(address: &'a Address, operation: &'a str) -> impl FnOnce(E) -> Self + 'a {
        move |error| ReconcileError::new(Some(address), operation, error_chain(&error))
    }
}

/// An error and its causes, `: `-separated, each message once.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut messages: Vec<String> = Vec::new();
    let mut next = Some(error);
    while let Some(error) = next {
        let message = error.to_string();
        if !messages.iter().any(|m| m.contains(&message)) {
            messages.push(message);
        }
        next = error.source();
    }
    messages.join(": ")
}

/// What `--prune` asks of a run: besides what desired.toml declares, delete what reconcile made
/// and desired.toml no longer declares. Which reconcilers prune, and how, is theirs to say (ECR
/// plans deleting an undeclared repository that carries the marker).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prune {
    /// The tag (key, value) that marks a resource as reconcile's.
    pub marker: (String, String),
    /// Whether a pruned resource that still holds data (a repository's images) may be deleted
    /// with it.
    pub force_delete_images: bool,
}

/// What `reconcile destroy` asks of a run: its plan deletes what desired.toml declares and
/// reconcile made (see [`crate::destroy`]), and each reconciler deletes its own kinds, the data in
/// them only when this says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Destroy {
    /// A repository that still holds images may be deleted with them (`--force-delete-images`).
    pub force_delete_images: bool,
    /// A bucket that still holds objects may be emptied and deleted (`--empty-buckets`).
    pub empty_buckets: bool,
}

/// What carrying out one change came to, when it succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// Done as planned.
    Done,
    /// A create found the resource already there (made between plan and apply, by someone
    /// else) and brought it to the desired state instead: the one decision apply makes itself.
    Adopted,
}

/// What one reconciler's `observe` learned.
#[derive(Debug, Default)]
pub struct Observations {
    /// One entry per requested address, plus any undeclared resource in the managed scope.
    pub resources: BTreeMap<Address, Observed>,
    /// Things worth reporting that are not changes, such as a managed policy attached to the role.
    pub findings: Vec<Finding>,
    /// Resources, of this reconciler or another, found broken in a way only replacing them
    /// repairs, each with the finding that says why: the CodeBuild webhook whose hook GitHub no
    /// longer has. The engine plans the replacement, unless the plan creates the resource anyway.
    pub replace: Vec<Replacement>,
}

/// A replacement one reconciler asks of the plan, and why.
#[derive(Debug, Clone)]
pub struct Replacement {
    pub address: Address,
    pub finding: Finding,
}

impl From<BTreeMap<Address, Observed>> for Observations {
    fn from(resources: BTreeMap<Address, Observed>) -> Self {
        Observations { resources, findings: Vec::new(), replace: Vec::new() }
    }
}

/// One resource crate: the kinds it owns and the three steps for them.
///
/// What each resource crate wants is computed without a reconciler (its free `desired`
/// function), so planning what desired.toml asks for needs no client and no AWS configuration.
///
/// - `diff` is pure.
/// - `observe` only reads. It is given every desired resource of its kinds at once, so it can
///   batch and share reads, and so it knows the names to look for; it answers for each of them
///   ([`Observed::Absent`] when there is nothing) and may add addresses it found inside the scope
///   it manages but that are not desired, which then plan as deletes.
/// - `apply` carries out one change. It is idempotent: "already there and equal" and "already
///   gone" are success, so a partial apply can simply be run again. The one thing it decides is
///   to adopt a resource a create finds already made ([`Applied::Adopted`]), which it reports.
#[async_trait]
pub trait Reconciler: Send + Sync {
    /// The kinds of resource this reconciler owns.
    fn kinds(&self) -> &'static [ResourceKind];

    /// Its kinds' tables of fields (its description's): the engine makes an update that changes
    /// a field the table says AWS sets only at create a replacement, whatever `diff` said.
    fn fields(&self) -> &'static [crate::fields::Fields];

    async fn observe(&self, desired: &[&DesiredResource]) -> Result<Observations, ReconcileError>;

    fn diff(&self, address: &Address, desired: Option<&DesiredResource>, observed: &Observed) -> Option<Change> {
        crate::plan::diff(address, desired, observed)
    }

    async fn apply(&self, change: &Change, progress: &dyn Progress) -> Result<Applied, ReconcileError>;

    /// For the drift check: what the account holds of this reconciler's kinds that desired.toml
    /// does not declare, as findings. Read only. Most kinds have nothing to say.
    async fn survey(&self, _desired: &[&DesiredResource]) -> Result<Vec<Finding>, ReconcileError> {
        Ok(Vec::new())
    }

    /// For `import --generate`: what the account holds of this reconciler's kinds that `desired`
    /// (every desired resource of its kinds) does not declare, with what its description's
    /// `generate` needs to declare each as it is. Read only. Most kinds have nothing to say.
    async fn inventory(&self, _desired: &[&DesiredResource]) -> Result<Vec<crate::generate::Found>, ReconcileError> {
        Ok(Vec::new())
    }

    /// What the plan's changes of this reconciler's kinds will do beyond the fields they set,
    /// such as the images a new lifecycle policy expires. Read only; most kinds have nothing
    /// to say. `desired` holds every desired resource of the plan.
    async fn assess(
        &self,
        _changes: &[&Change],
        _desired: &BTreeMap<Address, DesiredResource>,
    ) -> Result<Assessment, ReconcileError> {
        Ok(Assessment::default())
    }

    /// Why apply must not carry out `change` as things stand (a repository to delete that holds
    /// images, say), checked for every change before the first write. `None` when it may.
    fn refusal(&self, _change: &Change) -> Option<String> {
        None
    }

    /// What `change` touches that only an administrator changes, never `[ci]`'s apply role (so
    /// its derived policy grants no such write): what would let it widen itself, delete objects
    /// or open them to someone else. Changes with the same answer are named together, as
    /// `this plan changes <addresses> (<answer>)`. `None` when the apply role may make it.
    fn administrators_only(&self, _change: &Change) -> Option<&'static str> {
        None
    }

    /// Whether what depends on `change`, an update left for an administrator, may still be made
    /// as things stand: nothing a dependent needs of the resource is among what the update sets
    /// (a role's description, not the boundary its inline policy is put within). `false` unless
    /// the kind says so: a dependent of a left change is left with it.
    fn frees_its_dependents(&self, _change: &Change) -> bool {
        false
    }
}

/// What a reconciler's `assess` found.
#[derive(Debug, Default)]
pub struct Assessment {
    /// What each change will do beyond its fields, by address.
    pub impacts: BTreeMap<Address, crate::plan::Impact>,
    pub findings: Vec<Finding>,
}
