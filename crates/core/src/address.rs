//! Resource addresses: `<kind>.<name>`, the stable names tools and people use for a resource.

use std::fmt;

/// A kind of resource: `ecr_repository`, `iam_role_policy`. Open: the crate that owns a kind
/// declares it with its section (`reconcile_ecr::REPOSITORY`), and the binary's catalog lists
/// every crate, so a kind is known where an address is read back ([`Address::parse`]).
///
/// Kinds are ordered by `rank`: the order resources are listed in a plan, roughly the order in
/// which they depend on each other, so a plan reads top to bottom. The names are part of the
/// plan format and must never change; the catalog's tidy test holds names and ranks unique.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceKind {
    rank: u16,
    name: &'static str,
    members: bool,
}

impl ResourceKind {
    /// The kind `name`, listed in a plan at `rank` among the others.
    pub const fn new(name: &'static str, rank: u16) -> ResourceKind {
        ResourceKind { rank, name, members: false }
    }

    /// This kind, whose resources can have members that desired.toml does not name, found inside
    /// a declared one: the inline policies of a role, beside the one it declares. Its addresses
    /// split on `/` (`iam_role_policy.codebuild/legacy`); another kind's never do, since a
    /// repository name may hold one.
    pub const fn with_members(self) -> ResourceKind {
        ResourceKind { members: true, ..self }
    }

    pub const fn as_str(self) -> &'static str {
        self.name
    }

    /// Where it is listed in a plan.
    pub const fn rank(self) -> u16 {
        self.rank
    }

    /// Whether resources of this kind can have undeclared members ([`Self::with_members`]).
    pub const fn has_members(self) -> bool {
        self.members
    }

    /// The kind named `name` among `known` (the catalog's).
    pub fn parse(name: &str, known: &[ResourceKind]) -> Result<ResourceKind, String> {
        known.iter().copied().find(|kind| kind.name == name).ok_or_else(|| format!("unknown resource kind `{name}`"))
    }
}

impl fmt::Debug for ResourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl fmt::Display for ResourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Declares the kinds one resource crate owns: an enum of exactly those [`ResourceKind`]s,
/// `KINDS` (what its reconciler's `kinds()` returns, so the engine routes those to it) and `of`
/// (what its `apply` matches on), both made from the one list, so routing and the crate's
/// exhaustive `match` cannot disagree: a kind routed to the crate that its `apply` does not
/// handle does not compile.
///
/// ```ignore
/// reconcile_core::resource_kinds! {
///     /// The kinds this crate owns.
///     pub enum EcrKind {
///         Repository = REPOSITORY,
///         LifecyclePolicy = LIFECYCLE_POLICY,
///     }
/// }
/// ```
#[macro_export]
macro_rules! resource_kinds {
    ($(#[$meta:meta])* $vis:vis enum $name:ident { $($variant:ident = $kind:path),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        $vis enum $name {
            $($variant),+
        }

        impl $name {
            /// Every kind this crate owns: what its reconciler's `kinds()` returns.
            pub const KINDS: &'static [$crate::ResourceKind] = &[$($kind),+];

            /// This crate's kind of `address`; a change of another crate's kind is an error
            /// (the engine routes by [`Self::KINDS`], so only a plan put together by something
            /// else can hold one).
            pub fn of(address: &$crate::Address) -> Result<$name, $crate::ReconcileError> {
                match address.kind {
                    $($kind => Ok($name::$variant),)+
                    _ => Err($crate::ReconcileError::foreign(address)),
                }
            }
        }

        impl From<$name> for $crate::ResourceKind {
            fn from(kind: $name) -> $crate::ResourceKind {
                match kind {
                    $($name::$variant => $kind),+
                }
            }
        }
    };
}

/// `<kind>.<name>`, for example `ecr_lifecycle_policy.pytorch-cache`; an undeclared member found
/// inside a declared resource is `<kind>.<name>/<member>`, such as
/// `iam_role_policy.codebuild/legacy-admin`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Address {
    pub kind: ResourceKind,
    pub name: String,
    /// The member's own name, for an undeclared member of the declared resource `kind.name`.
    pub member: Option<String>,
}

impl Address {
    pub fn new(kind: ResourceKind, name: impl Into<String>) -> Address {
        Address { kind, name: name.into(), member: None }
    }

    /// The undeclared `member` found inside the declared resource `kind.name`.
    pub fn member(kind: ResourceKind, name: impl Into<String>, member: impl Into<String>) -> Address {
        Address { kind, name: name.into(), member: Some(member.into()) }
    }

    /// The declared resource this address is, or is a member of.
    pub fn declared(&self) -> Address {
        Address::new(self.kind, &self.name)
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.kind, self.name)?;
        match &self.member {
            Some(member) => write!(f, "/{member}"),
            None => Ok(()),
        }
    }
}

impl Address {
    /// Reads an address back from its string form (a saved plan's); `known` are the kinds it may
    /// be of (the catalog's).
    pub fn parse(s: &str, known: &[ResourceKind]) -> Result<Address, String> {
        let (kind, name) =
            s.split_once('.').ok_or_else(|| format!("address `{s}` is not of the form <kind>.<name>"))?;
        if name.is_empty() {
            return Err(format!("address `{s}` has an empty name"));
        }
        let kind = ResourceKind::parse(kind, known)?;
        // Only kinds with members split on `/`: a repository name may contain one.
        match name.split_once('/') {
            Some((name, member)) if kind.has_members() && !name.is_empty() && !member.is_empty() => {
                Ok(Address::member(kind, name, member))
            }
            _ => Ok(Address::new(kind, name)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUEUE: ResourceKind = ResourceKind::new("example_queue", 50);
    const KNOWN: [ResourceKind; 3] = [crate::fake::kinds::IAM_ROLE_POLICY, crate::fake::kinds::ECR_REPOSITORY, QUEUE];

    #[test]
    fn addresses_round_trip_through_their_string_form() {
        let parse = |s: &str| Address::parse(s, &KNOWN);
        for kind in KNOWN {
            let address = Address::new(kind, "pytorch-cache");
            assert_eq!(parse(&address.to_string()), Ok(address));
        }
        let member = Address::member(crate::fake::kinds::IAM_ROLE_POLICY, "codebuild", "legacy");
        assert_eq!(parse(&member.to_string()), Ok(member.clone()));
        assert_eq!(member.declared(), Address::new(crate::fake::kinds::IAM_ROLE_POLICY, "codebuild"));
        // A repository name may hold a `/`: it is part of the name, not a member.
        assert_eq!(parse("ecr_repository.team/app"), Ok(Address::new(crate::fake::kinds::ECR_REPOSITORY, "team/app")));
        assert_eq!(parse("example_queue.a/b"), Ok(Address::new(QUEUE, "a/b")));
        assert_eq!(
            parse("iam_role_policy.codebuild/"),
            Ok(Address::new(crate::fake::kinds::IAM_ROLE_POLICY, "codebuild/"))
        );
        assert!(parse("ecr_repository").is_err());
        assert!(parse("ecr_repository.").is_err());
        // A kind not among those known is not read, even one core declares.
        assert_eq!(parse("s3_bucket.x"), Err("unknown resource kind `s3_bucket`".to_owned()));
        assert!(parse("nonsense.x").is_err());
    }

    #[test]
    fn kinds_are_ordered_by_rank_and_print_their_name() {
        assert!(
            QUEUE < crate::fake::kinds::IAM_ROLE_BOUNDARY
                && crate::fake::kinds::IAM_ROLE < crate::fake::kinds::S3_BUCKET
        );
        assert!(crate::fake::kinds::IAM_ROLE_POLICY.has_members() && !crate::fake::kinds::IAM_ROLE.has_members());
        assert_eq!(QUEUE.rank(), 50);
        assert_eq!(format!("{QUEUE} {QUEUE:?}"), "example_queue example_queue");
    }
}
