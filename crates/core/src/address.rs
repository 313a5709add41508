//! Resource addresses: `<kind>.<name>`, the stable names tools and people use for a resource.

use std::fmt;
use std::str::FromStr;

/// Every kind of resource `reconcile` manages.
///
/// The declaration order is the order resources are listed in a plan: roughly the order in
/// which they depend on each other, so a plan reads top to bottom.
/// The string forms are part of the plan format and must never change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ResourceKind {
    IamRoleBoundary,
    IamRole,
    IamRolePolicy,
    IamOidcProvider,
    IamCiRole,
    IamCiRolePolicy,
    S3Bucket,
    S3BucketLifecycle,
    EcrRepository,
    EcrLifecyclePolicy,
    CodebuildProject,
    CodebuildWebhook,
    GithubForkPrApproval,
    GithubWorkflowPermissions,
    GithubOidcSubject,
    GithubVariable,
}

impl ResourceKind {
    pub const ALL: [ResourceKind; 16] = [
        ResourceKind::IamRoleBoundary,
        ResourceKind::IamRole,
        ResourceKind::IamRolePolicy,
        ResourceKind::IamOidcProvider,
        ResourceKind::IamCiRole,
        ResourceKind::IamCiRolePolicy,
        ResourceKind::S3Bucket,
        ResourceKind::S3BucketLifecycle,
        ResourceKind::EcrRepository,
        ResourceKind::EcrLifecyclePolicy,
        ResourceKind::CodebuildProject,
        ResourceKind::CodebuildWebhook,
        ResourceKind::GithubForkPrApproval,
        ResourceKind::GithubWorkflowPermissions,
        ResourceKind::GithubOidcSubject,
        ResourceKind::GithubVariable,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ResourceKind::IamRoleBoundary => "iam_role_boundary",
            ResourceKind::IamRole => "iam_role",
            ResourceKind::IamRolePolicy => "iam_role_policy",
            ResourceKind::IamOidcProvider => "iam_oidc_provider",
            ResourceKind::IamCiRole => "iam_ci_role",
            ResourceKind::IamCiRolePolicy => "iam_ci_role_policy",
            ResourceKind::S3Bucket => "s3_bucket",
            ResourceKind::S3BucketLifecycle => "s3_bucket_lifecycle",
            ResourceKind::EcrRepository => "ecr_repository",
            ResourceKind::EcrLifecyclePolicy => "ecr_lifecycle_policy",
            ResourceKind::CodebuildProject => "codebuild_project",
            ResourceKind::CodebuildWebhook => "codebuild_webhook",
            ResourceKind::GithubForkPrApproval => "github_fork_pr_approval",
            ResourceKind::GithubWorkflowPermissions => "github_workflow_permissions",
            ResourceKind::GithubOidcSubject => "github_oidc_subject",
            ResourceKind::GithubVariable => "github_variable",
        }
    }
}

impl fmt::Display for ResourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ResourceKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ResourceKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == s)
            .ok_or_else(|| format!("unknown resource kind `{s}`"))
    }
}

impl ResourceKind {
    /// Whether resources of this kind can have members that desired.toml does not name, found
    /// inside a declared one: the inline policies of a role, beside the one it declares.
    pub fn has_members(self) -> bool {
        match self {
            ResourceKind::IamRolePolicy | ResourceKind::IamCiRolePolicy => true,
            ResourceKind::IamRoleBoundary
            | ResourceKind::IamRole
            | ResourceKind::IamOidcProvider
            | ResourceKind::IamCiRole
            | ResourceKind::S3Bucket
            | ResourceKind::S3BucketLifecycle
            | ResourceKind::EcrRepository
            | ResourceKind::EcrLifecyclePolicy
            | ResourceKind::CodebuildProject
            | ResourceKind::CodebuildWebhook
            | ResourceKind::GithubForkPrApproval
            | ResourceKind::GithubWorkflowPermissions
            | ResourceKind::GithubOidcSubject
            | ResourceKind::GithubVariable => false,
        }
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
///     pub enum EcrKind { Repository = EcrRepository, LifecyclePolicy = EcrLifecyclePolicy }
/// }
/// ```
#[macro_export]
macro_rules! resource_kinds {
    ($(#[$meta:meta])* $vis:vis enum $name:ident { $($variant:ident = $kind:ident),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        $vis enum $name {
            $($variant),+
        }

        impl $name {
            /// Every kind this crate owns: what its reconciler's `kinds()` returns.
            pub const KINDS: &'static [$crate::ResourceKind] = &[$($crate::ResourceKind::$kind),+];

            /// This crate's kind of `address`; a change of another crate's kind is an error
            /// (the engine routes by [`Self::KINDS`], so only a plan put together by something
            /// else can hold one).
            pub fn of(address: &$crate::Address) -> Result<$name, $crate::ReconcileError> {
                match address.kind {
                    $($crate::ResourceKind::$kind => Ok($name::$variant),)+
                    _ => Err($crate::ReconcileError::foreign(address)),
                }
            }
        }

        impl From<$name> for $crate::ResourceKind {
            fn from(kind: $name) -> $crate::ResourceKind {
                match kind {
                    $($name::$variant => $crate::ResourceKind::$kind),+
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

impl FromStr for Address {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (kind, name) =
            s.split_once('.').ok_or_else(|| format!("address `{s}` is not of the form <kind>.<name>"))?;
        if name.is_empty() {
            return Err(format!("address `{s}` has an empty name"));
        }
        let kind: ResourceKind = kind.parse()?;
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

    #[test]
    fn addresses_round_trip_through_their_string_form() {
        for kind in ResourceKind::ALL {
            let address = Address::new(kind, "pytorch-cache");
            assert_eq!(address.to_string().parse::<Address>(), Ok(address));
        }
        let member = Address::member(ResourceKind::IamRolePolicy, "codebuild", "legacy");
        assert_eq!(member.to_string().parse::<Address>(), Ok(member.clone()));
        assert_eq!(member.declared(), Address::new(ResourceKind::IamRolePolicy, "codebuild"));
        // A repository name may hold a `/`: it is part of the name, not a member.
        assert_eq!(
            "ecr_repository.team/app".parse::<Address>(),
            Ok(Address::new(ResourceKind::EcrRepository, "team/app"))
        );
        assert!("ecr_repository".parse::<Address>().is_err());
        assert!("nonsense.x".parse::<Address>().is_err());
    }
}
