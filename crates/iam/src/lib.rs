//! The IAM reconciler: `iam_role.<key>` (trust policy, description, max session duration, tags,
//! permissions boundary), `iam_role_policy.<key>` (the role's inline policy, derived from the
//! rest of the desired state; see `derive`) and `iam_role_boundary.<key>` (the managed policy
//! that bounds the role, derived too); and the CI identities of `[ci]` (see `ci`):
//! `iam_oidc_provider.github`, `iam_ci_role.<plan|drift|apply>` and `iam_ci_role_policy.<...>`,
//! a CI role being a role like the runner's with a trust and a policy of its own.
//!
//! Every change in IAM is an administrator's (`administrators_only`) but the runner's derived
//! inline policy, which the apply role puts only on a role that carries its boundary: so nothing
//! it can do widens who assumes a role or what one may do past a boundary only an administrator
//! writes (`reach` proves it of the derived policies, over `evaluate`, IAM's evaluation logic).
//!
//! Inline policies on a role that desired.toml does not declare are planned as deletes,
//! addressed as members of the declared one, `iam_role_policy.<key>/<policy name>`; managed
//! policies attached to the role are reported as findings. GitHub's OIDC provider is the
//! account's one, shared by every deployment in it: made when missing, used as it is when
//! someone else's (`reconcile_core::ownership::shared`), and never deleted.

mod boundary;
mod ci;
mod derive;
mod describe;
pub mod evaluate;
mod oidc_provider;
mod policy;
pub mod reach;
mod role;
mod role_policy;
mod section;
mod spec;
mod terraform;
#[cfg(test)]
mod testing;

use std::collections::BTreeMap;

use async_trait::async_trait;
use aws_sdk_iam as iam;
use reconcile_aws::{Parallelism, absent_if, failed};
use reconcile_core::json::tag_changes;
use reconcile_core::plan::{Action, Change, DesiredResource, Finding};
use reconcile_core::reconciler::Observations;
use reconcile_core::{Account, Address, Applied, Progress, ReconcileError, Reconciler, ResourceKind};
use serde_json::Value;

use boundary::BoundarySpec;
pub use ci::{
    administrator_policy, apply_policy, plan_policy, policy as ci_policy, provider_arn, put_back_policy,
    read_only_policy, trust_widening,
};
pub use derive::{INLINE_POLICY_LIMIT, MANAGED_POLICY_LIMIT, boundary_name, boundary_policy, inline_policy};
pub use describe::{DESCRIPTION, reconciler};
use oidc_provider::ProviderSpec;
pub use policy::{canonical, canonical_text, percent_decode};
pub use role::trust_policy;
use role_policy::RolePolicySpec;
pub use section::ci::{
    CLAIM as CI_CLAIM, Ci, CiPurpose, CiRole, GITHUB_OIDC_AUDIENCE, GITHUB_OIDC_HOST, declared as declared_ci,
};
pub use section::{CLAIM, Iam, Role, declared};
pub use spec::{desired, policy_arn};

/// Finding code: a managed policy is attached to a managed role, widening it beyond what
/// desired.toml derives (it replaced W101, a warning, which is retired). Stable; never reused.
pub const ATTACHED_MANAGED_POLICY: &str = "S101";

/// Finding code: a CI role's live trust policy lets more runs, repositories or principals assume
/// it than the one derived: whoever it admits can plan, or apply, as reconcile. Stable.
pub const CI_TRUST_WIDENED: &str = "S104";

/// Finding code: a managed role's live inline policy (the runner's, or a CI role's) allows what
/// the derived one does not (`ecr:*` on `*`, a resource widened): whoever runs as the role can do
/// it until the policy is put back. Stable.
pub const POLICY_WIDENED: &str = "S105";

/// Finding code: a role desired.toml does not declare trusts GitHub's OIDC provider: some
/// workflow can assume it, and reconcile does not check which. Stable.
pub const UNDECLARED_GITHUB_ROLE: &str = "D107";

/// Finding code: a CI role trusts exactly one kind of run, but not the one desired.toml derives
/// (another repository, branch, environment or subject template): the plan changes whom it
/// trusts, and the finding names who would be trusted after it. A pull request that changes
/// `[github]` or `[ci]` shows here; so does a trust changed by hand to another exact subject.
/// Stable.
pub const CI_TRUST_CHANGED: &str = "D108";

/// Finding code: the permissions boundary's live description is not the declared one, which
/// IAM cannot change in place: the plan replaces the boundary, and apply refuses. Stable.
pub const BOUNDARY_DESCRIPTION_DIFFERS: &str = "W102";

/// Why a boundary is never replaced, and what to do instead.
pub(crate) const BOUNDARY_REPLACED: &str = "IAM cannot change a managed policy's description, and replacing the \
     permissions boundary means deleting it while its role carries it, leaving the role unbounded until the \
     new one is put, which reconcile never does: set `boundary_description` to the live description (the \
     plan's `before`), or detach and delete the boundary by hand and apply again";

/// IAM's answer for "there is no such role or policy".
const NO_SUCH_ENTITY: &str = "NoSuchEntity";

/// `iam_role_boundary.<key>`: the managed policy that bounds a role.
pub const ROLE_BOUNDARY: ResourceKind = ResourceKind::new("iam_role_boundary", 100);
/// `iam_role.<key>`: a role of `[iam.roles]`.
pub const ROLE: ResourceKind = ResourceKind::new("iam_role", 110);
/// `iam_role_policy.<key>`: a role's derived inline policy, and (as members) the ones it should not have.
pub const ROLE_POLICY: ResourceKind = ResourceKind::new("iam_role_policy", 120).with_members();
/// `iam_oidc_provider.github`: GitHub's OIDC identity provider.
pub const OIDC_PROVIDER: ResourceKind = ResourceKind::new("iam_oidc_provider", 130);
/// `iam_ci_role.<purpose>`: a CI role of `[ci]`.
pub const CI_ROLE: ResourceKind = ResourceKind::new("iam_ci_role", 140);
/// `iam_ci_role_policy.<purpose>`: a CI role's derived inline policy, and (as members) the ones it should not have.
pub const CI_ROLE_POLICY: ResourceKind = ResourceKind::new("iam_ci_role_policy", 150).with_members();

reconcile_core::resource_kinds! {
    /// The kinds this crate owns.
    pub enum IamKind {
        Boundary = crate::ROLE_BOUNDARY,
        Role = crate::ROLE,
        RolePolicy = crate::ROLE_POLICY,
        Provider = crate::OIDC_PROVIDER,
        CiRole = crate::CI_ROLE,
        CiRolePolicy = crate::CI_ROLE_POLICY,
    }
}

pub struct IamReconciler {
    client: iam::Client,
    account: Account,
    parallelism: Parallelism,
}

impl IamReconciler {
    pub fn new(client: iam::Client, account: Account) -> IamReconciler {
        IamReconciler { client, account, parallelism: Parallelism::default() }
    }

    /// At most `parallelism` requests in flight at once.
    pub fn with_parallelism(mut self, parallelism: Parallelism) -> IamReconciler {
        self.parallelism = parallelism;
        self
    }
}

/// The runner's roles and the CI roles are handled alike, each under kinds of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Family {
    Runner,
    Ci,
}

impl Family {
    fn role(self) -> ResourceKind {
        match self {
            Family::Runner => crate::ROLE,
            Family::Ci => crate::CI_ROLE,
        }
    }

    fn policy(self) -> ResourceKind {
        match self {
            Family::Runner => crate::ROLE_POLICY,
            Family::Ci => crate::CI_ROLE_POLICY,
        }
    }
}

#[async_trait]
impl Reconciler for IamReconciler {
    fn kinds(&self) -> &'static [ResourceKind] {
        IamKind::KINDS
    }

    async fn inventory(
        &self,
        desired: &[&DesiredResource],
    ) -> Result<Vec<reconcile_core::generate::Found>, ReconcileError> {
        self.inventory_of(desired).await
    }

    async fn observe(&self, desired: &[&DesiredResource]) -> Result<Observations, ReconcileError> {
        // Group each role's two kinds: one GetRole serves both.
        type Pair<'a> = (Option<&'a DesiredResource>, Option<&'a DesiredResource>);
        let mut roles: BTreeMap<(Family, &str), Pair<'_>> = BTreeMap::new();
        let mut provider = None;
        let mut boundaries = Vec::new();
        for resource in desired {
            // A role's kind and its policy's: which family, and whether it is the policy.
            let (family, policy) = match IamKind::of(&resource.address)? {
                IamKind::Provider => {
                    provider = Some(*resource);
                    continue;
                }
                IamKind::Boundary => {
                    boundaries.push(self.observe_boundary(resource));
                    continue;
                }
                IamKind::Role => (Family::Runner, false),
                IamKind::RolePolicy => (Family::Runner, true),
                IamKind::CiRole => (Family::Ci, false),
                IamKind::CiRolePolicy => (Family::Ci, true),
            };
            let entry = roles.entry((family, resource.address.name.as_str())).or_default();
            if policy {
                entry.1 = Some(resource);
            } else {
                entry.0 = Some(resource);
            }
        }
        let reads: Vec<_> = roles
            .into_iter()
            .map(|((family, key), (role, policy))| self.observe_role(family, key, role, policy))
            .collect();
        // With the CI identities declared, every plan also looks for other roles GitHub's
        // provider can assume: one ListRoles, read with the rest.
        let (roles, provider, boundaries) = futures::join!(
            futures::future::join_all(reads),
            async {
                match provider {
                    Some(provider) => Some(futures::join!(self.observe_provider(provider), self.github_roles(desired))),
                    None => None,
                }
            },
            futures::future::join_all(boundaries),
        );
        let mut observations = Observations::default();
        for boundary in boundaries {
            let (address, observed) = boundary?;
            observations.resources.insert(address, observed);
        }
        for result in roles {
            let role = result?;
            observations.resources.extend(role.resources);
            observations.findings.extend(role.findings);
        }
        if let Some((provider, github_roles)) = provider {
            observations.resources.extend(provider?);
            observations.findings.extend(github_roles?);
        }
        Ok(observations)
    }

    async fn apply(&self, change: &Change, _progress: &dyn Progress) -> Result<Applied, ReconcileError> {
        let address = &change.address;
        match (IamKind::of(address)?, change.action) {
            (IamKind::Role | IamKind::CiRole, Action::Create) => self.create_role(change).await,
            (IamKind::Role | IamKind::CiRole, Action::Update) => {
                self.update_role(change).await?;
                Ok(Applied::Done)
            }
            // Only a destroy plans one, after the role's declared policies.
            (IamKind::Role | IamKind::CiRole, Action::Delete) => self.delete_role(change).await,
            (IamKind::Role | IamKind::CiRole, Action::Replace) => Err(ReconcileError::never(address, "replace role")),
            (IamKind::RolePolicy | IamKind::CiRolePolicy, Action::Create | Action::Update) => {
                self.put_role_policy(change).await
            }
            (IamKind::RolePolicy | IamKind::CiRolePolicy, Action::Delete) => self.delete_role_policy(change).await,
            // This reconciler's diff never plans one: a policy changes in place.
            (IamKind::RolePolicy | IamKind::CiRolePolicy, Action::Replace) => {
                Err(ReconcileError::never(address, "replace"))
            }
            (IamKind::Provider, Action::Create) => self.create_provider(change).await,
            (IamKind::Provider, Action::Update) => {
                let before = reconcile_core::spec::before::<ProviderSpec>(change)?;
                self.converge_provider(change, before.as_ref()).await?;
                Ok(Applied::Done)
            }
            // The account's one, which another deployment or team may use: a destroy leaves it.
            (IamKind::Provider, Action::Delete | Action::Replace) => {
                Err(ReconcileError::never(address, "delete the identity provider"))
            }
            (IamKind::Boundary, Action::Create) => self.create_boundary(change).await,
            (IamKind::Boundary, Action::Update) => {
                let before = reconcile_core::spec::before::<BoundarySpec>(change)?;
                self.converge_boundary(change, before.as_ref()).await?;
                Ok(Applied::Done)
            }
            (IamKind::Boundary, Action::Delete) => self.delete_boundary(change).await,
            (IamKind::Boundary, Action::Replace) => {
                Err(ReconcileError::never(address, "replace a permissions boundary"))
            }
        }
    }

    /// A boundary whose description differs is a replacement (IAM sets it only on creation), as
    /// its table says; `refusal` then refuses it.
    fn fields(&self) -> &'static [reconcile_core::fields::Fields] {
        crate::describe::DESCRIPTION.fields
    }

    /// Replacing the boundary a role carries means deleting it first (IAM deletes no policy in
    /// use), which leaves the role unbounded until the new one is put: never done.
    fn refusal(&self, change: &Change) -> Option<String> {
        (change.address.kind == crate::ROLE_BOUNDARY && change.action == Action::Replace)
            .then(|| BOUNDARY_REPLACED.to_owned())
    }

    /// What the plan says of a boundary it would replace, before anyone tries to apply it, and
    /// of an inline policy that allows more than derived (S105).
    async fn assess(
        &self,
        changes: &[&Change],
        _desired: &BTreeMap<Address, DesiredResource>,
    ) -> Result<reconcile_core::reconciler::Assessment, ReconcileError> {
        let mut assessment = reconcile_core::reconciler::Assessment::default();
        let inline = |change: &&&Change| {
            matches!(change.address.kind, crate::ROLE_POLICY | crate::CI_ROLE_POLICY) && change.action == Action::Update
        };
        for change in changes.iter().filter(inline) {
            if let Some(finding) = role_policy::widened(change)? {
                assessment.findings.push(finding);
            }
        }
        for change in changes.iter().filter(|c| c.address.kind == crate::ROLE_BOUNDARY && c.action == Action::Replace) {
            assessment.findings.push(Finding {
                code: BOUNDARY_DESCRIPTION_DIFFERS.to_owned(),
                severity: reconcile_core::Severity::Warning,
                address: Some(change.address.clone()),
                message: format!("apply refuses this replacement: {BOUNDARY_REPLACED}"),
                overridden_by: None,
            });
        }
        Ok(assessment)
    }

    /// Every change in IAM is an administrator's but one. The CI identities: the apply role
    /// changing them would widen itself. The runner's role and its boundary: whoever writes them
    /// decides what every build may ever do (and with the trust, who may assume the role), and
    /// the apply role can already change what a build runs (`codebuild:UpdateProject`). The
    /// runner's inline policy, put (not an undeclared one deleted) on the role as it carries its
    /// boundary, is the apply role's: it names the repositories a build may push to and make, so
    /// declaring one needs no administrator, and the boundary is the most it can ever grant (the
    /// apply role's policy allows the put only while the role carries it).
    fn administrators_only(&self, change: &Change) -> Option<&'static str> {
        if is_ci_identity(change.address.kind) {
            return Some("the CI identities: the apply role would widen itself");
        }
        let puts_the_runners_policy = change.address.kind == crate::ROLE_POLICY
            && change.address.member.is_none()
            && matches!(change.action, Action::Create | Action::Update);
        (!puts_the_runners_policy)
            .then_some("the runner's role, its permissions boundary, or an inline policy on it desired.toml does not derive: what every build may do")
    }

    /// A runner role's update left as it is holds back nothing but when it moves the boundary:
    /// the apply role puts the role's inline policy only while the role carries its boundary.
    fn frees_its_dependents(&self, change: &Change) -> bool {
        change.address.kind == crate::ROLE && change.action == Action::Update && role::keeps_its_boundary(change)
    }
}

/// Whether the live role `name` trusts GitHub's OIDC provider (some workflow can assume it):
/// how a run tells that its caller is a CI role from the account itself, not from what
/// desired.toml calls the CI roles. `None` when these credentials may not read the role; a role
/// that no longer exists trusts no one.
pub async fn role_trusts_github(
    client: &iam::Client,
    account: &Account,
    name: &str,
) -> Result<Option<bool>, ReconcileError> {
    let response = absent_if(client.get_role().role_name(name).send().await, &[NO_SUCH_ENTITY]);
    let live = match response {
        Ok(None) => return Ok(Some(false)),
        Ok(Some(output)) => output.role,
        Err(error) => {
            let error = failed(None, "read the caller's role")(error);
            return match error.kind {
                reconcile_core::reconciler::ErrorKind::AccessDenied => Ok(None),
                _ => Err(error),
            };
        }
    };
    let trust = live
        .and_then(|role| role.assume_role_policy_document)
        .map_or(Value::Null, |text| policy::canonical_text(&text, &account.partition));
    Ok(Some(ci::github_subjects(&trust).is_some()))
}

/// The address of a role desired.toml does not declare, by its name in the account: `role/` as
/// in its ARN, which no key can hold, so it never names a declared role.
pub fn undeclared_role(name: &str) -> Address {
    Address::new(crate::ROLE, format!("role/{name}"))
}

/// Whether `kind` is one of the CI identities, which only an administrator may change.
fn is_ci_identity(kind: ResourceKind) -> bool {
    matches!(kind, crate::OIDC_PROVIDER | crate::CI_ROLE | crate::CI_ROLE_POLICY)
}

impl IamReconciler {}

/// Takes a resource's tags from `current` to `wanted`: the keys no longer wanted removed, then
/// what differs set, each call sent only when it has something to do. `untag` and `tag` send the
/// kind's own calls; `operations` name them in an error (removing, then setting).
pub(crate) async fn retag<U, T, UO, UE, TO, TE>(
    address: &Address,
    current: &BTreeMap<String, String>,
    wanted: &BTreeMap<String, String>,
    operations: (&str, &str),
    untag: impl FnOnce(Vec<String>) -> U,
    tag: impl FnOnce(Vec<iam::types::Tag>) -> T,
) -> Result<(), ReconcileError>
where
    U: Future<Output = Result<UO, iam::error::SdkError<UE>>>,
    T: Future<Output = Result<TO, iam::error::SdkError<TE>>>,
    UE: iam::error::ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    TE: iam::error::ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let (remove, set) = tag_changes(current, wanted);
    if !remove.is_empty() {
        untag(remove).await.map_err(failed(Some(address), operations.0))?;
    }
    if !set.is_empty() {
        tag(tag_list(&set)).await.map_err(failed(Some(address), operations.1))?;
    }
    Ok(())
}

/// IAM's tag type. Key and value are both set, so a build error cannot happen; were it to, it
/// is an error, never a dropped tag.
pub(crate) fn tag_list(tags: &BTreeMap<String, String>) -> Vec<iam::types::Tag> {
    tags.iter()
        .map(|(key, value)| iam::types::Tag::builder().key(key).value(value).build())
        .collect::<Result<_, _>>()
        .expect("key and value are set")
}

#[cfg(test)]
mod tests {
    //! Error paths the emulator cannot produce, against a mocked client.

    use super::*;
    use aws_sdk_iam::operation::get_role::GetRoleError;
    use aws_sdk_iam::operation::put_role_policy::PutRolePolicyError;
    use aws_sdk_iam::types::error::NoSuchEntityException;
    use aws_smithy_mocks::{Rule, RuleMode, mock, mock_client};
    use aws_smithy_types::error::ErrorMetadata;
    use reconcile_core::json::object;
    use reconcile_core::reconciler::Silent;
    use serde_json::{Map, json};

    fn no_such_entity() -> NoSuchEntityException {
        NoSuchEntityException::builder().meta(ErrorMetadata::builder().code(NO_SUCH_ENTITY).build()).build()
    }

    fn reconciler(rules: &[&Rule]) -> IamReconciler {
        let client = mock_client!(aws_sdk_iam, RuleMode::MatchAny, rules);
        IamReconciler::new(client, Account::new("123456789012", "us-east-1"))
    }

    #[test]
    fn every_change_in_iam_is_an_administrators_but_the_runners_inline_policy_put() {
        let reconciler = reconciler(&[]);
        let change = |address: Address, action| Change {
            address,
            action,
            before: None,
            after: Some(Map::new()),
            depends_on: vec![],
        };
        let every = [Action::Create, Action::Update, Action::Delete, Action::Replace];
        for kind in [crate::OIDC_PROVIDER, crate::CI_ROLE, crate::CI_ROLE_POLICY] {
            for action in every {
                assert_eq!(
                    reconciler.administrators_only(&change(Address::new(kind, "apply"), action)),
                    Some("the CI identities: the apply role would widen itself"),
                    "{kind:?}"
                );
            }
        }
        let runners = "the runner's role, its permissions boundary, or an inline policy on it desired.toml does not \
                       derive: what every build may do";
        for kind in [crate::ROLE, crate::ROLE_BOUNDARY] {
            for action in every {
                let address = Address::new(kind, "codebuild");
                assert_eq!(reconciler.administrators_only(&change(address, action)), Some(runners), "{kind:?}");
            }
        }
        // The derived inline policy, put: the apply role's (within the boundary IAM holds it to).
        let policy = Address::new(crate::ROLE_POLICY, "codebuild");
        for action in [Action::Create, Action::Update] {
            assert_eq!(reconciler.administrators_only(&change(policy.clone(), action)), None, "{action:?}");
        }
        assert_eq!(reconciler.administrators_only(&change(policy, Action::Delete)), Some(runners));
        // Another inline policy on the role, deleted: an administrator's.
        let other = Address::member(crate::ROLE_POLICY, "codebuild", "hand-made");
        assert_eq!(reconciler.administrators_only(&change(other, Action::Delete)), Some(runners));
    }

    #[tokio::test]
    async fn a_missing_role_is_absent_with_its_policy_and_no_policy_is_read() {
        // The role's name is all three first reads need, so they go out at once; the two lists
        // then fail as the role does, and that is not an error.
        let get_role =
            mock!(iam::Client::get_role).then_error(|| GetRoleError::NoSuchEntityException(no_such_entity()));
        let list = mock!(iam::Client::list_role_policies).then_error(|| {
            iam::operation::list_role_policies::ListRolePoliciesError::NoSuchEntityException(no_such_entity())
        });
        let attached = mock!(iam::Client::list_attached_role_policies).then_error(|| {
            iam::operation::list_attached_role_policies::ListAttachedRolePoliciesError::NoSuchEntityException(
                no_such_entity(),
            )
        });
        let get_policy = mock!(iam::Client::get_role_policy).then_error(|| {
            iam::operation::get_role_policy::GetRolePolicyError::NoSuchEntityException(no_such_entity())
        });
        let role = DesiredResource::new(Address::new(crate::ROLE, "codebuild"), "rocm-bake-codebuild", Map::new());
        let policy = DesiredResource::new(
            Address::new(crate::ROLE_POLICY, "codebuild"),
            "rocm-bake-codebuild",
            object(json!({ "role": "rocm-bake-codebuild", "policy_name": "p", "document": {} })),
        );
        let observed =
            reconciler(&[&get_role, &list, &attached, &get_policy]).observe(&[&role, &policy]).await.unwrap();
        assert_eq!(observed.resources[&role.address], reconcile_core::plan::Observed::Absent);
        assert_eq!(observed.resources[&policy.address], reconcile_core::plan::Observed::Absent);
        assert!(observed.findings.is_empty());
        assert_eq!((get_role.num_calls(), list.num_calls(), attached.num_calls()), (1, 1, 1));
        assert_eq!(get_policy.num_calls(), 0);
    }

    #[tokio::test]
    async fn a_policy_put_right_after_the_role_is_created_waits_for_the_role_to_show() {
        let put = mock!(iam::Client::put_role_policy)
            .sequence()
            .error(|| PutRolePolicyError::NoSuchEntityException(no_such_entity()))
            .output(|| iam::operation::put_role_policy::PutRolePolicyOutput::builder().build())
            .build();
        let change = Change {
            address: Address::new(crate::ROLE_POLICY, "codebuild"),
            action: Action::Create,
            before: None,
            after: Some(object(json!({ "role": "rocm-bake-codebuild", "policy_name": "p", "document": {} }))),
            depends_on: vec![],
        };
        reconciler(&[&put]).apply(&change, &Silent).await.unwrap();
        assert_eq!(put.num_calls(), 2);
    }

    #[tokio::test]
    async fn a_change_missing_a_field_fails_naming_it_and_calls_nothing() {
        let create = mock!(iam::Client::create_role)
            .then_output(|| iam::operation::create_role::CreateRoleOutput::builder().build());
        let put = mock!(iam::Client::put_role_policy)
            .then_output(|| iam::operation::put_role_policy::PutRolePolicyOutput::builder().build());
        let reconciler = reconciler(&[&create, &put]);
        let role = Change {
            address: Address::new(crate::ROLE, "codebuild"),
            action: Action::Create,
            before: None,
            // No trust policy: IAM must never be sent an empty one.
            after: Some(object(json!({
                "name": "rocm-bake-codebuild", "description": "", "max_session_duration": 3600, "tags": {},
            }))),
            depends_on: vec![],
        };
        let error = reconciler.apply(&role, &Silent).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "iam_role.codebuild: failed to read the change's desired fields: missing field `assume_role_policy`"
        );
        let policy = Change {
            address: Address::new(crate::ROLE_POLICY, "codebuild"),
            after: Some(object(json!({ "role": "rocm-bake-codebuild", "policy_name": "p" }))),
            ..role
        };
        let error = reconciler.apply(&policy, &Silent).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "iam_role_policy.codebuild: failed to read the change's desired fields: missing field `document`"
        );
        assert_eq!((create.num_calls(), put.num_calls()), (0, 0));
    }

    #[tokio::test]
    async fn a_role_boundary_or_provider_made_meanwhile_is_converged_only_when_it_carries_this_deployments_mark() {
        use aws_sdk_iam::operation::create_open_id_connect_provider::CreateOpenIDConnectProviderError;
        use aws_sdk_iam::operation::create_policy::CreatePolicyError;
        use aws_sdk_iam::operation::create_role::CreateRoleError;
        use aws_sdk_iam::types::error::EntityAlreadyExistsException;
        use reconcile_core::ownership::MARK_KEY;
        let exists = || {
            EntityAlreadyExistsException::builder()
                .meta(ErrorMetadata::builder().code("EntityAlreadyExists").build())
                .build()
        };
        // What it carries when found: this deployment's mark, another's, or none.
        let live_tags = |mark: Option<&str>| -> Vec<iam::types::Tag> {
            mark.map(|value| iam::types::Tag::builder().key(MARK_KEY).value(value).build().unwrap())
                .into_iter()
                .collect()
        };
        // What the create wanted: the mark and a tag the one found lacks, so a convergence tags it.
        let wanted = json!({ MARK_KEY: "rocm-bake", "project": "rocm-bake" });
        for (mark, converged) in [(Some("rocm-bake"), true), (Some("team-x"), false), (None, false)] {
            let create = mock!(iam::Client::create_role)
                .then_error(move || CreateRoleError::EntityAlreadyExistsException(exists()));
            let get = mock!(iam::Client::get_role).then_output(move || {
                let role = iam::types::Role::builder()
                    .role_name("rocm-bake-codebuild")
                    .path("/")
                    .role_id("AROAEXAMPLE")
                    .arn("arn:aws:iam::123456789012:role/rocm-bake-codebuild")
                    .create_date(aws_smithy_types::DateTime::from_secs(0))
                    .set_tags(Some(live_tags(mark)))
                    .build()
                    .unwrap();
                iam::operation::get_role::GetRoleOutput::builder().role(role).build()
            });
            let trust = mock!(iam::Client::update_assume_role_policy).then_output(|| {
                iam::operation::update_assume_role_policy::UpdateAssumeRolePolicyOutput::builder().build()
            });
            let unbound = mock!(iam::Client::delete_role_permissions_boundary).then_output(|| {
                iam::operation::delete_role_permissions_boundary::DeleteRolePermissionsBoundaryOutput::builder().build()
            });
            let update = mock!(iam::Client::update_role)
                .then_output(|| iam::operation::update_role::UpdateRoleOutput::builder().build());
            let tag =
                mock!(iam::Client::tag_role).then_output(|| iam::operation::tag_role::TagRoleOutput::builder().build());
            let role = reconciler(&[&create, &get, &trust, &unbound, &update, &tag]);
            let change = Change {
                address: Address::new(crate::CI_ROLE, "plan"),
                action: Action::Create,
                before: None,
                after: Some(object(json!({
                    "name": "rocm-bake-codebuild",
                    "assume_role_policy": { "Version": "2012-10-17", "Statement": [] },
                    "description": "",
                    "max_session_duration": 3600,
                    "tags": wanted,
                    "permissions_boundary": null,
                }))),
                depends_on: vec![],
            };
            let applied = role.apply(&change, &Silent).await;
            if converged {
                assert_eq!(applied.unwrap(), Applied::Adopted);
                assert_eq!((update.num_calls(), tag.num_calls()), (1, 1), "converged, the project tag set");
            } else {
                let error = applied.unwrap_err();
                assert!(error.to_string().contains("without this deployment's mark"), "{error}");
                assert_eq!((trust.num_calls(), update.num_calls(), tag.num_calls()), (0, 0, 0), "{mark:?}");
            }

            let create = mock!(iam::Client::create_policy)
                .then_error(move || CreatePolicyError::EntityAlreadyExistsException(exists()));
            let get = mock!(iam::Client::get_policy).then_output(move || {
                let policy = iam::types::Policy::builder()
                    .policy_name("rocm-bake-codebuild-boundary")
                    .default_version_id("v1")
                    .set_tags(Some(live_tags(mark)))
                    .build();
                iam::operation::get_policy::GetPolicyOutput::builder().policy(policy).build()
            });
            let version = mock!(iam::Client::get_policy_version).then_output(|| {
                let version =
                    iam::types::PolicyVersion::builder().document(r#"{"Version":"2012-10-17","Statement":[]}"#).build();
                iam::operation::get_policy_version::GetPolicyVersionOutput::builder().policy_version(version).build()
            });
            let tag = mock!(iam::Client::tag_policy)
                .then_output(|| iam::operation::tag_policy::TagPolicyOutput::builder().build());
            let boundary = reconciler(&[&create, &get, &version, &tag]);
            let change = Change {
                address: Address::new(crate::ROLE_BOUNDARY, "codebuild"),
                action: Action::Create,
                before: None,
                after: Some(object(json!({
                    "name": "rocm-bake-codebuild-boundary",
                    "description": "",
                    "document": { "Version": "2012-10-17", "Statement": [] },
                    "tags": wanted,
                }))),
                depends_on: vec![],
            };
            let applied = boundary.apply(&change, &Silent).await;
            if converged {
                assert_eq!(applied.unwrap(), Applied::Adopted);
                assert_eq!(tag.num_calls(), 1, "the project tag set");
            } else {
                let error = applied.unwrap_err();
                assert!(error.to_string().contains("without this deployment's mark"), "{error}");
                assert_eq!(tag.num_calls(), 0, "{mark:?}");
            }

            let create = mock!(iam::Client::create_open_id_connect_provider)
                .then_error(move || CreateOpenIDConnectProviderError::EntityAlreadyExistsException(exists()));
            let get = mock!(iam::Client::get_open_id_connect_provider).then_output(move || {
                iam::operation::get_open_id_connect_provider::GetOpenIdConnectProviderOutput::builder()
                    .url("token.actions.githubusercontent.com")
                    .set_tags(Some(live_tags(mark)))
                    .build()
            });
            let audience = mock!(iam::Client::add_client_id_to_open_id_connect_provider).then_output(|| {
                iam::operation::add_client_id_to_open_id_connect_provider::AddClientIdToOpenIdConnectProviderOutput::builder()
                    .build()
            });
            let tag = mock!(iam::Client::tag_open_id_connect_provider).then_output(|| {
                iam::operation::tag_open_id_connect_provider::TagOpenIdConnectProviderOutput::builder().build()
            });
            let provider = reconciler(&[&create, &get, &audience, &tag]);
            let change = Change {
                address: Address::new(crate::OIDC_PROVIDER, "github"),
                action: Action::Create,
                before: None,
                after: Some(object(json!({
                    "url": "token.actions.githubusercontent.com",
                    "client_ids": ["sts.amazonaws.com"],
                    "tags": wanted,
                }))),
                depends_on: vec![],
            };
            let applied = provider.apply(&change, &Silent).await;
            if converged {
                assert_eq!(applied.unwrap(), Applied::Adopted);
                assert_eq!((audience.num_calls(), tag.num_calls()), (1, 1), "the audience added, the project tag set");
            } else {
                let error = applied.unwrap_err();
                assert!(error.to_string().contains("without this deployment's mark"), "{error}");
                assert_eq!((audience.num_calls(), tag.num_calls()), (0, 0), "{mark:?}");
            }
        }
    }
}
