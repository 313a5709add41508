//! What a resource crate says about itself: its kinds, its desired resources, what a CI role
//! needs on them, and what CloudTrail records of them. Everything that goes over every kind (the
//! session's desired resources, the CI roles' policies, drift attribution) iterates one list of
//! these, the binary's [`Catalog`], instead of keeping a table of its own: adding a kind is its
//! crate's description and, for a new crate, one line in that list.
//!
//! Core only carries these facts; what they mean to AWS (an IAM statement, a CloudTrail event
//! name) is each crate's to say.

use serde_json::Value;

use crate::address::ResourceKind;
use crate::desired::{Claim, Desired};
use crate::plan::DesiredResource;
use crate::reconciler::{Account, ReconcileError};

/// A resource crate's desired resources, purely; `catalog` is every crate's description (a CI
/// role's policy is made of every crate's [`Access`]).
pub type DesiredFn = fn(&Desired, &Account, &Catalog) -> Result<Vec<DesiredResource>, ReconcileError>;

/// IAM policy statements (JSON objects) for `desired` in `account`.
pub type StatementsFn = fn(&Desired, &Account) -> Vec<Value>;

/// Which of a runner role's policies a crate's [`Access::runner`] statements are for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Runner<'a> {
    /// The runner role's key (`[iam.roles.<key>]`): what runs as it (the projects whose
    /// `service_role` it is) is what its builds are.
    pub role: &'a str,
    /// Its permissions boundary (the most the role may ever do, unchanged by a declared
    /// resource), not its inline policy.
    pub boundary: bool,
    /// How many characters the inline policy is over IAM's limit by: a crate that can grant the
    /// same in fewer (repositories by a shared name prefix) saves at least this many, if it can.
    pub over_by: usize,
}

/// What a build on the runner needs of a crate's resources, as IAM statements.
pub type RunnerFn = fn(&Desired, &Account, &Runner<'_>) -> Vec<Value>;

/// A crate's lines of desired.toml for `found` (every resource chosen of its kinds, as its
/// reconciler's `inventory` read them), given desired.toml as it is and what the crates before it
/// in the catalog declare or generate (`references`: a role's key, for a project's
/// `service_role`).
pub type GenerateFn = fn(
    found: &[&crate::generate::Found],
    desired: &Desired,
    account: &Account,
    references: &[crate::desired::Reference],
) -> crate::generate::Generated;

/// For a crate with nothing to generate.
pub fn generates_nothing(
    _: &[&crate::generate::Found],
    _: &Desired,
    _: &Account,
    _: &[crate::desired::Reference],
) -> crate::generate::Generated {
    crate::generate::Generated::default()
}

/// The repository variables a crate derives for the nightly, each named among
/// [`crate::variables::DERIVED_VARIABLES`] (ECR's registry host).
pub type VariablesFn = fn(&Desired, &Account) -> Vec<(&'static str, String)>;

/// For [`Description::variables`]: a crate that derives none.
pub fn derives_no_variables(_: &Desired, _: &Account) -> Vec<(&'static str, String)> {
    Vec::new()
}

/// One resource crate.
pub struct Description {
    /// The crate, for messages: `ecr`.
    pub name: &'static str,
    /// Every kind it owns: its reconciler's `kinds()`.
    pub kinds: &'static [ResourceKind],
    /// The top-level sections of desired.toml it reads itself (none for a crate with no
    /// settings of its own).
    pub sections: &'static [Claim],
    pub desired: DesiredFn,
    pub access: Access,
    /// What CloudTrail records of each kind, one entry per kind it sees (none for GitHub's).
    pub trail: &'static [KindTrail],
    /// Each kind's fields, one table per kind: what its diff replaces it for, what its trail
    /// looks for and what Terraform forces new are read from it.
    pub fields: &'static [crate::fields::Fields],
    /// How each kind becomes the Terraform providers' resources, one entry per kind
    /// (`plan --format terraform-json`).
    pub terraform: &'static [crate::terraform::Mapping],
    /// desired.toml's lines for what the account holds of its kinds undeclared
    /// (`import --generate`): [`generates_nothing`] for a crate that generates none.
    pub generate: GenerateFn,
    /// The repository variables it derives ([`crate::variables::derived`]).
    pub variables: VariablesFn,
}

/// What a CI role needs on a crate's resources, as IAM statements (each with a `Sid`).
pub struct Access {
    /// What a plan reads of what reconcile manages: every CI role reads it (the plan, drift and
    /// apply roles). The plan role reads only this: what it reads may reach a public comment.
    pub reads: StatementsFn,
    /// What a run that looks across the account reads besides (an undeclared repository's
    /// lifecycle policy and tags): the drift and apply roles, never the plan role.
    pub survey_reads: StatementsFn,
    /// What the drift check reads besides: the nights' cost, the cache's daily size.
    pub drift_reads: StatementsFn,
    /// Which of those a plan's cost line reads too (the runner's builds, the cache's daily
    /// size): the plan and drift roles, never the apply role, which prices nothing.
    pub cost_reads: StatementsFn,
    /// What apply writes: only what some state of the account can lead it to write.
    pub writes: StatementsFn,
    /// What only an administrator writes besides (every change in IAM, a bucket's expiry and ACL,
    /// and what `destroy` deletes): never a CI role's. With the rest, `reconcile policy
    /// administrator`: the least an administrator's apply and destroy need (the live suite's
    /// sandbox role).
    pub administers: StatementsFn,
    /// What a build on the runner needs on the crate's resources (pushing to the registry, the
    /// compiler cache's objects): the runner role's inline policy and permissions boundary hold
    /// it, as IAM derives them.
    pub runner: RunnerFn,
    /// What taking and letting go of the apply lock writes (S3's: the lock object): the apply
    /// role's, the put-back role's and an administrator's.
    pub lock: StatementsFn,
    /// The kinds whose drift the scheduled check may put back (`[drift] put_back`), each with
    /// exactly what doing so writes; none for a crate whose every change is a create, a delete
    /// or an administrator's.
    pub put_back: &'static [PutBack],
}

/// A kind whose drift the scheduled drift check may put back in the run that finds it, as the
/// put-back role, when `[drift] put_back` names it: a setting of a resource that exists, written
/// back to what the default branch declares. Never a delete, a replacement, a create of a
/// resource, or anything only an administrator changes.
pub struct PutBack {
    pub kind: ResourceKind,
    /// The actions of its changes that put it back: `Update`, and `Create` where the kind is a
    /// setting of another resource that exists (a repository's lifecycle policy, deleted).
    pub actions: &'static [crate::plan::Action],
    /// What putting it back writes, on this deployment's resources only: the put-back role's
    /// policy holds these for each kind named and nothing else of any kind.
    pub writes: StatementsFn,
}

impl Access {
    /// A crate nothing in AWS is read or written for (GitHub's).
    pub const NONE: Access = Access {
        reads: |_, _| Vec::new(),
        survey_reads: |_, _| Vec::new(),
        drift_reads: |_, _| Vec::new(),
        cost_reads: |_, _| Vec::new(),
        writes: |_, _| Vec::new(),
        administers: |_, _| Vec::new(),
        runner: |_, _, _| Vec::new(),
        lock: |_, _| Vec::new(),
        put_back: &[],
    };
}

/// How CloudTrail's `ResourceName` index holds a kind's events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Index {
    /// Every event that changes one: a lookup by the resource's name finds them all.
    Complete,
    /// Some (not reliably): what a lookup by name does not find is looked for by event name.
    Partial,
    /// None: looked up by event name only.
    Absent,
}

/// What CloudTrail records of one kind, from its service's API reference.
pub struct KindTrail {
    pub kind: ResourceKind,
    /// Every management event that can change a resource of the kind.
    pub events: &'static [&'static str],
    /// The events that set a field whose row ([`Description::fields`]) names none; `None`:
    /// every event.
    pub other_fields: Option<&'static [&'static str]>,
    /// The events that remove one: what a plan that creates it again looks for.
    pub removals: &'static [&'static str],
    /// The events that explain a finding about one, by the finding's code.
    pub findings: &'static [(&'static str, &'static [&'static str])],
    /// Whether its events are kept in us-east-1 whatever the region (IAM's).
    pub global: bool,
    pub index: Index,
    /// Whether an event's `requestParameters` name the resource `name` in `account` (and its
    /// region, for a regional kind): the kind's own parameter names and ARN shape.
    pub names: fn(name: &str, parameters: &Value, account: &Account) -> bool,
}

/// Every resource crate's description: the binary's one list.
#[derive(Clone, Copy)]
pub struct Catalog(pub &'static [&'static Description]);

impl Catalog {
    /// Every kind its crates own: what a saved plan's addresses may be.
    pub fn kinds(&self) -> Vec<ResourceKind> {
        self.0.iter().flat_map(|description| description.kinds.iter().copied()).collect()
    }

    /// Every crate's own sections of desired.toml: what the file may hold besides core's.
    pub fn claims(&self) -> Vec<&'static Claim> {
        self.0.iter().flat_map(|description| description.sections).collect()
    }

    /// The crate that owns `kind`.
    pub fn owner(&self, kind: ResourceKind) -> Option<&'static Description> {
        self.0.iter().copied().find(|description| description.kinds.contains(&kind))
    }

    /// What CloudTrail records of `kind`; `None` for a kind it does not see.
    pub fn trail(&self, kind: ResourceKind) -> Option<&'static KindTrail> {
        self.0.iter().flat_map(|description| description.trail).find(|trail| trail.kind == kind)
    }

    /// The table of `kind`'s fields; `None` for a kind no crate owns.
    pub fn fields(&self, kind: ResourceKind) -> Option<&'static crate::fields::Fields> {
        self.0.iter().flat_map(|description| description.fields).find(|fields| fields.kind == kind)
    }

    /// How `kind` becomes the Terraform providers' resources; `None` for a kind no crate maps.
    pub fn terraform(&self, kind: ResourceKind) -> Option<&'static crate::terraform::Mapping> {
        self.0.iter().flat_map(|description| description.terraform).find(|mapping| mapping.kind == kind)
    }

    /// What `[drift] put_back` may name: the kind, by its name, and its crate's word for it.
    pub fn put_back(&self, kind: &str) -> Option<&'static PutBack> {
        self.0.iter().flat_map(|description| description.access.put_back).find(|p| p.kind.as_str() == kind)
    }

    /// The names of every kind `[drift] put_back` may name, in the catalog's order.
    pub fn put_back_kinds(&self) -> Vec<&'static str> {
        self.0.iter().flat_map(|description| description.access.put_back).map(|p| p.kind.as_str()).collect()
    }

    /// What is wrong with `desired`'s `[drift] put_back`, each at its entry: a kind no crate
    /// puts back (with those that may be named), or kinds named while `[ci]` declares no
    /// put-back role for the drift check to put them back as.
    pub fn put_back_errors(&self, desired: &Desired) -> Vec<crate::DesiredError> {
        let may = self.put_back_kinds().iter().map(|kind| format!("`{kind}`")).collect::<Vec<_>>().join(", ");
        let mut errors: Vec<crate::DesiredError> = desired
            .put_back
            .iter()
            .filter(|named| self.put_back(&named.kind).is_none())
            .map(|named| {
                let what = if self.kinds().iter().any(|kind| kind.as_str() == named.kind) {
                    "is never put back by the drift check (a create, a delete or an administrator's change)"
                } else {
                    "is not a resource kind"
                };
                named.at.clone().with_message(format!("`{}` {what}; it may name {may}", named.kind))
            })
            .collect();
        let ci = desired.referred(crate::desired::Topic::CiRole).collect::<Vec<_>>();
        if let Some(first) = desired.put_back.first()
            && !ci.is_empty()
            && !ci.iter().any(|role| role.key == crate::desired::PUT_BACK_ROLE)
        {
            errors.push(first.at.clone().with_message(
                "the drift check puts back only as a role that may do nothing else: declare `put_back_role` in `[ci]`",
            ));
        }
        errors
    }

    /// Every crate's statements of one kind of access, in the catalog's order.
    pub fn statements(&self, desired: &Desired, account: &Account, which: fn(&Access) -> StatementsFn) -> Vec<Value> {
        self.0.iter().flat_map(|description| which(&description.access)(desired, account)).collect()
    }
}

/// Whether `arn` names `resource` (what follows the service's fields: `repository/pytorch`) in
/// `account`, and in its region when `regional`.
pub fn arn_names(arn: &str, account: &Account, regional: bool, resource: &str) -> bool {
    let parts: Vec<&str> = arn.splitn(6, ':').collect();
    parts.len() == 6
        && parts[0] == "arn"
        && parts[4] == account.id
        && (!regional || parts[3] == account.region)
        && parts[5] == resource
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_arn_names_a_resource_only_in_this_account_and_region() {
        let account = Account::new("123456789012", "us-east-1");
        let arn = "arn:aws:ecr:us-east-1:123456789012:repository/pytorch";
        assert!(arn_names(arn, &account, true, "repository/pytorch"));
        assert!(!arn_names(arn, &account, true, "repository/torch"));
        assert!(!arn_names(
            "arn:aws:ecr:eu-west-1:123456789012:repository/pytorch",
            &account,
            true,
            "repository/pytorch"
        ));
        assert!(arn_names("arn:aws:iam::123456789012:role/r", &account, false, "role/r"));
        assert!(!arn_names("arn:aws:iam::210987654321:role/r", &account, false, "role/r"));
        assert!(!arn_names("not an arn", &account, false, "role/r"));
    }

    fn statement(sid: &str) -> Vec<Value> {
        vec![serde_json::json!({ "Sid": sid })]
    }

    const TRAIL: KindTrail = KindTrail {
        kind: crate::fake::kinds::S3_BUCKET,
        events: &["CreateBucket"],
        other_fields: None,
        removals: &[],
        findings: &[],
        global: false,
        index: Index::Complete,
        names: |_, _, _| true,
    };
    static FIRST: Description = Description {
        name: "first",
        kinds: &[crate::fake::kinds::S3_BUCKET, crate::fake::kinds::S3_BUCKET_LIFECYCLE],
        sections: &[Claim {
            name: "first",
            after: None,
            types: |_| Ok(()),
            publishes: Claim::NOTHING,
            read: |_| crate::desired::Read::refused(Vec::new()),
            schema: || Value::Null,
        }],
        desired: |_, _, _| Ok(Vec::new()),
        access: Access {
            reads: |_, _| statement("FirstReads"),
            writes: |_, _| statement("FirstWrites"),
            ..Access::NONE
        },
        trail: &[TRAIL],
        fields: &[],
        terraform: &[crate::terraform::Mapping {
            kind: crate::fake::kinds::S3_BUCKET,
            map: |_, _, _| Vec::new(),
            unmapped: "",
        }],
        generate: generates_nothing,
        variables: derives_no_variables,
    };
    static SECOND: Description = Description {
        name: "second",
        kinds: &[crate::fake::kinds::GITHUB_VARIABLE],
        sections: &[],
        desired: |_, _, _| Ok(Vec::new()),
        access: Access { reads: |_, _| statement("SecondReads"), ..Access::NONE },
        trail: &[],
        fields: &[],
        terraform: &[],
        generate: generates_nothing,
        variables: derives_no_variables,
    };

    #[test]
    fn a_catalog_finds_each_kinds_owner_and_trail_and_joins_its_crates_statements() {
        static BOTH: [&Description; 2] = [&FIRST, &SECOND];
        let catalog = Catalog(&BOTH);
        assert_eq!(catalog.owner(crate::fake::kinds::S3_BUCKET_LIFECYCLE).map(|d| d.name), Some("first"));
        assert_eq!(catalog.owner(crate::fake::kinds::GITHUB_VARIABLE).map(|d| d.name), Some("second"));
        assert!(catalog.owner(crate::fake::kinds::ECR_REPOSITORY).is_none());
        assert_eq!(
            catalog.kinds(),
            [
                crate::fake::kinds::S3_BUCKET,
                crate::fake::kinds::S3_BUCKET_LIFECYCLE,
                crate::fake::kinds::GITHUB_VARIABLE
            ]
        );
        assert_eq!(catalog.claims().iter().map(|claim| claim.name).collect::<Vec<_>>(), ["first"]);
        assert_eq!(catalog.trail(crate::fake::kinds::S3_BUCKET).map(|t| t.events), Some(&["CreateBucket"][..]));
        assert!(catalog.trail(crate::fake::kinds::S3_BUCKET_LIFECYCLE).is_none());
        assert!(catalog.trail(crate::fake::kinds::GITHUB_VARIABLE).is_none());
        assert_eq!(
            catalog.terraform(crate::fake::kinds::S3_BUCKET).map(|m| m.kind),
            Some(crate::fake::kinds::S3_BUCKET)
        );
        assert!(catalog.terraform(crate::fake::kinds::S3_BUCKET_LIFECYCLE).is_none());
        let desired = Desired::parse(std::path::Path::new("desired.toml"), "region = \"us-east-1\"\n").unwrap();
        let account = Account::new("123456789012", "us-east-1");
        let sids = |which: fn(&Access) -> StatementsFn| -> Vec<Value> {
            catalog.statements(&desired, &account, which).into_iter().map(|s| s["Sid"].clone()).collect()
        };
        assert_eq!(sids(|a| a.reads), ["FirstReads", "SecondReads"]);
        assert_eq!(sids(|a| a.writes), ["FirstWrites"]);
        assert_eq!(sids(|a| a.drift_reads), Vec::<Value>::new());
        let none = Access::NONE;
        for which in [none.reads, none.survey_reads, none.drift_reads, none.cost_reads, none.writes, none.administers] {
            assert!(which(&desired, &account).is_empty());
        }
        assert!((none.runner)(&desired, &account, &Runner::default()).is_empty());
    }
}
