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

mod ci;
mod ci_section;
mod derive;
mod describe;
pub mod evaluate;
mod generate;
mod policy;
pub mod reach;
mod section;
mod spec;
mod terraform;
#[cfg(test)]
mod testing;

use std::collections::BTreeMap;

use async_trait::async_trait;
use aws_sdk_iam as iam;
use reconcile_aws::{Parallelism, absent_if, after_create, failed, gone_if, has_code, visible_tags};
use reconcile_core::json::{tag_changes, to_compact};
use reconcile_core::plan::{Action, Change, DesiredResource, Finding, Observed, Severity};
use reconcile_core::reconciler::Observations;
use reconcile_core::spec::attributes;
use reconcile_core::{Account, Address, Applied, Progress, ReconcileError, Reconciler, ResourceKind};
use serde_json::Value;

pub use ci::{administrator_policy, apply_policy, plan_policy, provider_arn, read_only_policy, trust_widening};
pub use ci_section::{
    CLAIM as CI_CLAIM, Ci, CiPurpose, CiRole, GITHUB_OIDC_AUDIENCE, GITHUB_OIDC_HOST, declared as declared_ci,
};
pub use derive::{INLINE_POLICY_LIMIT, MANAGED_POLICY_LIMIT, boundary_name, boundary_policy, inline_policy};
pub use describe::{DESCRIPTION, reconciler};
pub use policy::{canonical, canonical_text, percent_decode};
pub use section::{CLAIM, Iam, Role, declared};
use spec::{BoundarySpec, ProviderSpec, RolePolicySpec, RoleSpec, RoleState};
pub use spec::{desired, policy_arn, trust_policy};

/// Finding code: a managed policy is attached to a managed role, widening it beyond what
/// desired.toml derives (it replaced W101, a warning, which is retired). Stable; never reused.
pub const ATTACHED_MANAGED_POLICY: &str = "S101";

/// Finding code: a CI role's live trust policy lets more runs, repositories or principals assume
/// it than the one derived: whoever it admits can plan, or apply, as reconcile. Stable.
pub const CI_TRUST_WIDENED: &str = "S104";

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
const BOUNDARY_REPLACED: &str = "IAM cannot change a managed policy's description, and replacing the \
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
enum Family {
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
                let before = reconcile_core::spec::before::<RoleSpec>(change)?;
                let current_tags = before.as_ref().map(|b| b.tags.clone()).unwrap_or_default();
                self.converge_role(change, before.as_ref(), &current_tags).await?;
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

    /// A boundary whose description differs is a replacement: IAM sets it only on creation.
    fn diff(&self, address: &Address, desired: Option<&DesiredResource>, observed: &Observed) -> Option<Change> {
        let replacing = crate::describe::BOUNDARY_FIELDS.create_only();
        reconcile_core::plan::diff_replacing(address, desired, observed, crate::ROLE_BOUNDARY, &replacing)
    }

    /// Replacing the boundary a role carries means deleting it first (IAM deletes no policy in
    /// use), which leaves the role unbounded until the new one is put: never done.
    fn refusal(&self, change: &Change) -> Option<String> {
        (change.address.kind == crate::ROLE_BOUNDARY && change.action == Action::Replace)
            .then(|| BOUNDARY_REPLACED.to_owned())
    }

    /// What the plan says of a boundary it would replace, before anyone tries to apply it.
    async fn assess(
        &self,
        changes: &[&Change],
        _desired: &BTreeMap<Address, DesiredResource>,
    ) -> Result<reconcile_core::reconciler::Assessment, ReconcileError> {
        let mut assessment = reconcile_core::reconciler::Assessment::default();
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

impl IamReconciler {
    async fn observe_role(
        &self,
        family: Family,
        key: &str,
        role: Option<&DesiredResource>,
        policy: Option<&DesiredResource>,
    ) -> Result<Observations, ReconcileError> {
        let role_address = Address::new(family.role(), key);
        let policy_address = Address::new(family.policy(), key);
        let Some(role_name) = role.or(policy).map(|r| r.remote_name.as_str()) else {
            return Ok(Observations::default());
        };
        let mut observations = Observations::default();

        // The role, its attached policies and its inline policies' names take only its name:
        // asked at once. When the role is missing, the other two fail for the same reason.
        let (response, attached, names) = futures::join!(
            self.parallelism.send(|| self.client.get_role().role_name(role_name).send()),
            async {
                match role {
                    Some(_) => Some(self.attached_policies(&role_address, role_name).await),
                    None => None,
                }
            },
            async {
                match policy {
                    Some(_) => Some(self.inline_policy_names(&policy_address, role_name).await),
                    None => None,
                }
            },
        );
        let live = absent_if(response, &[NO_SUCH_ENTITY]).map_err(failed(Some(&role_address), "read role"))?;
        let Some(live) = live.and_then(|output| output.role) else {
            for resource in [role, policy].into_iter().flatten() {
                observations.resources.insert(resource.address.clone(), Observed::Absent);
            }
            return Ok(observations);
        };

        if role.is_some() {
            let trust = live
                .assume_role_policy_document()
                .map_or(Value::Null, |text| policy::canonical_text(text, &self.account.partition));
            let state = RoleState {
                arn: live.arn().to_owned(),
                path: live.path().to_owned(),
                unique_id: live.role_id().to_owned(),
                spec: RoleSpec {
                    name: live.role_name().to_owned(),
                    assume_role_policy: trust,
                    description: live.description().unwrap_or_default().to_owned(),
                    max_session_duration: live.max_session_duration().unwrap_or(3600),
                    tags: visible_tags(live.tags().iter().map(|t| (t.key(), t.value()))),
                    permissions_boundary: live
                        .permissions_boundary()
                        .and_then(|b| b.permissions_boundary_arn())
                        .map(str::to_owned),
                },
            };
            if family == Family::Ci
                && let Some(role) = role
            {
                observations.findings.extend(self.widened_trust(&role_address, role, &state.spec)?);
            }
            observations.resources.insert(role_address.clone(), Observed::Present(attributes(&state)));
        }
        if let Some(attached) = attached {
            observations.findings.extend(attached?);
        }

        if let (Some(policy), Some(names)) = (policy, names) {
            let declared: RolePolicySpec = reconcile_core::spec::desired(policy)?;
            let names = names?;
            let reads = names.iter().map(|name| self.observe_inline_policy(&policy_address, role_name, name));
            for (name, observed) in names.iter().zip(futures::future::join_all(reads).await) {
                let observed = observed?;
                let address = if *name == declared.policy_name {
                    policy_address.clone()
                } else {
                    // Undeclared: planned as a delete.
                    Address::member(family.policy(), key, name)
                };
                observations.resources.insert(address, observed);
            }
            observations.resources.entry(policy_address).or_insert(Observed::Absent);
        }
        Ok(observations)
    }

    /// Roles desired.toml does not declare that GitHub's provider can be used to assume (D107):
    /// some workflow, of some repository, can act as them.
    async fn github_roles(&self, desired: &[&DesiredResource]) -> Result<Vec<Finding>, ReconcileError> {
        let declared: std::collections::BTreeSet<&str> = desired
            .iter()
            .filter(|r| matches!(r.address.kind, crate::ROLE | crate::CI_ROLE))
            .map(|r| r.remote_name.as_str())
            .collect();
        let mut pages = self.client.list_roles().into_paginator().send();
        let mut findings = Vec::new();
        let mut read = reconcile_aws::Pages::default();
        while let Some(page) = self.parallelism.send_once(|| pages.next()).await {
            let page = page.map_err(failed(None, "list roles"))?;
            read.page(page.marker(), None, "list roles")?;
            for role in page.roles() {
                if declared.contains(role.role_name()) {
                    continue;
                }
                let trust = role
                    .assume_role_policy_document()
                    .map_or(Value::Null, |text| policy::canonical_text(text, &self.account.partition));
                if let Some(subjects) = ci::github_subjects(&trust) {
                    findings.push(Finding {
                        code: UNDECLARED_GITHUB_ROLE.to_owned(),
                        severity: Severity::Warning,
                        // Addressed by a name no key can be (`check_key`), so never taken for a
                        // declared role's: a public plan counts these, never names them.
                        address: Some(undeclared_role(role.role_name())),
                        message: format!(
                            "role `{}` is not in desired.toml and trusts GitHub's OIDC provider ({}): the workflows \
                             it admits can act as it; declare what they need under [ci], or delete it",
                            role.role_name(),
                            subjects.join("; ")
                        ),
                        overridden_by: None,
                    });
                }
            }
        }
        Ok(findings)
    }

    /// What a CI role's live trust is, next to the derived one: the same (no finding); exactly
    /// another subject (D108, the plan's change, naming who is trusted after it); or more than
    /// the derived one admits (S104, naming what).
    fn widened_trust(
        &self,
        address: &Address,
        desired: &DesiredResource,
        live: &RoleSpec,
    ) -> Result<Option<Finding>, ReconcileError> {
        let declared: RoleSpec = reconcile_core::spec::desired(desired)?;
        if declared.assume_role_policy == live.assume_role_policy {
            return Ok(None);
        }
        if let Some(trusted) = ci::other_subject(&live.assume_role_policy, &declared.assume_role_policy) {
            let after = ci::derived_subject(&declared.assume_role_policy);
            return Ok(Some(Finding {
                code: CI_TRUST_CHANGED.to_owned(),
                severity: Severity::Error,
                address: Some(address.clone()),
                message: format!(
                    "this plan changes whom CI role `{}` trusts: after it, the runs whose subject is `{after}` can \
                     act as it (desired.toml), where `{trusted}` can now (the account); check that the new subject \
                     is this repository's; an administrator applies it",
                    live.name
                ),
                overridden_by: None,
            }));
        }
        let reasons = ci::trust_widening(&live.assume_role_policy, &declared.assume_role_policy);
        Ok((!reasons.is_empty()).then(|| Finding {
            code: CI_TRUST_WIDENED.to_owned(),
            severity: Severity::Error,
            address: Some(address.clone()),
            message: format!(
                "the trust policy of CI role `{}` admits more than desired.toml derives: {}; whoever it admits can act \
                 as reconcile; an administrator's apply puts it back",
                live.name,
                reasons.join("; ")
            ),
            overridden_by: None,
        }))
    }

    async fn observe_provider(&self, desired: &DesiredResource) -> Result<BTreeMap<Address, Observed>, ReconcileError> {
        let address = &desired.address;
        let response = self
            .parallelism
            .send(|| {
                self.client.get_open_id_connect_provider().open_id_connect_provider_arn(&desired.remote_name).send()
            })
            .await;
        let observed = match absent_if(response, &[NO_SUCH_ENTITY])
            .map_err(failed(Some(address), "read the identity provider"))?
        {
            None => Observed::Absent,
            Some(live) => {
                // The audiences this deployment needs that it accepts: every deployment and team
                // in the account shares it, so another's audience is neither drift nor removed.
                let needed: Vec<String> = desired
                    .attributes
                    .get("client_ids")
                    .and_then(serde_json::Value::as_array)
                    .map(|ids| ids.iter().filter_map(|id| id.as_str().map(str::to_owned)).collect())
                    .unwrap_or_default();
                let mut client_ids: Vec<String> =
                    live.client_id_list().iter().filter(|id| needed.contains(id)).cloned().collect();
                client_ids.sort();
                client_ids.dedup();
                let spec = ProviderSpec {
                    url: live.url().unwrap_or_default().trim_start_matches("https://").to_owned(),
                    client_ids,
                    tags: visible_tags(live.tags().iter().map(|t| (t.key(), t.value()))),
                };
                Observed::Present(attributes(&spec))
            }
        };
        Ok(BTreeMap::from([(address.clone(), observed)]))
    }

    /// The boundary's default version and tags: `GetPolicy`, then the version it names.
    async fn observe_boundary(&self, desired: &DesiredResource) -> Result<(Address, Observed), ReconcileError> {
        let address = &desired.address;
        let arn = desired.remote_name.as_str();
        let response = self.parallelism.send(|| self.client.get_policy().policy_arn(arn).send()).await;
        let Some(live) = absent_if(response, &[NO_SUCH_ENTITY])
            .map_err(failed(Some(address), "read the permissions boundary"))?
            .and_then(|output| output.policy)
        else {
            return Ok((address.clone(), Observed::Absent));
        };
        let version = live.default_version_id().unwrap_or("v1");
        let document = self
            .parallelism
            .send(|| self.client.get_policy_version().policy_arn(arn).version_id(version).send())
            .await
            .map_err(failed(Some(address), "read the permissions boundary's document"))?
            .policy_version
            .and_then(|version| version.document)
            .map_or(Value::Null, |text| policy::canonical_text(&text, &self.account.partition));
        let spec = BoundarySpec {
            name: live.policy_name().unwrap_or_default().to_owned(),
            description: live.description().unwrap_or_default().to_owned(),
            document,
            tags: visible_tags(live.tags().iter().map(|t| (t.key(), t.value()))),
        };
        Ok((address.clone(), Observed::Present(attributes(&spec))))
    }

    async fn create_boundary(&self, change: &Change) -> Result<Applied, ReconcileError> {
        let address = &change.address;
        let after: BoundarySpec = reconcile_core::spec::after(change)?;
        let tags = tag_list(&after.tags);
        let response = self
            .client
            .create_policy()
            .policy_name(&after.name)
            .set_description((!after.description.is_empty()).then(|| after.description.clone()))
            .policy_document(to_compact(&after.document))
            .set_tags((!tags.is_empty()).then_some(tags))
            .send()
            .await;
        match response {
            Ok(_) => Ok(Applied::Done),
            // Made since the plan was read: converged if this deployment made it (an apply
            // killed after its create), refused otherwise.
            Err(error) if has_code(&error, &["EntityAlreadyExists"]) => {
                let live = self.live_boundary(address, &policy_arn(&self.account, &after.name)).await?;
                let operation = "create the permissions boundary";
                reconcile_core::ownership::made_meanwhile(&live.tags, &after.tags, address, operation, &after.name)?;
                self.converge_boundary(change, Some(&live)).await?;
                Ok(Applied::Adopted)
            }
            Err(error) => Err(failed(Some(address), "create the permissions boundary")(error)),
        }
    }

    /// The boundary `arn` as it is now.
    async fn live_boundary(&self, address: &Address, arn: &str) -> Result<BoundarySpec, ReconcileError> {
        let desired = DesiredResource::new(address.clone(), arn, serde_json::Map::new());
        match self.observe_boundary(&desired).await?.1 {
            Observed::Present(fields) => serde_json::from_value(Value::Object(fields))
                .map_err(|e| ReconcileError::new(Some(address), "read the permissions boundary", e.to_string())),
            Observed::Absent => {
                Err(ReconcileError::new(Some(address), "update the permissions boundary", "it is gone"))
            }
        }
    }

    /// A new default version when the document differs (a managed policy keeps at most five:
    /// the oldest that is not the default goes first), and the tags.
    async fn converge_boundary(&self, change: &Change, before: Option<&BoundarySpec>) -> Result<(), ReconcileError> {
        let address = &change.address;
        let after: BoundarySpec = reconcile_core::spec::after(change)?;
        let arn = policy_arn(&self.account, &after.name);
        let before = match before {
            Some(before) => before.clone(),
            None => self.live_boundary(address, &arn).await?,
        };
        if before.document != after.document {
            let versions = self
                .client
                .list_policy_versions()
                .policy_arn(&arn)
                .send()
                .await
                .map_err(failed(Some(address), "list the permissions boundary's versions"))?;
            let mut old: Vec<_> = versions.versions().iter().filter(|v| !v.is_default_version()).collect();
            if versions.versions().len() >= 5 {
                old.sort_by_key(|v| v.create_date().map(|d| (d.secs(), d.subsec_nanos())));
                if let Some(oldest) = old.first().and_then(|v| v.version_id()) {
                    self.client
                        .delete_policy_version()
                        .policy_arn(&arn)
                        .version_id(oldest)
                        .send()
                        .await
                        .map_err(failed(Some(address), "delete the permissions boundary's oldest version"))?;
                }
            }
            self.client
                .create_policy_version()
                .policy_arn(&arn)
                .policy_document(to_compact(&after.document))
                .set_as_default(true)
                .send()
                .await
                .map_err(failed(Some(address), "put the permissions boundary's new version"))?;
        }
        let (remove, set) = tag_changes(&before.tags, &after.tags);
        if !remove.is_empty() {
            self.client
                .untag_policy()
                .policy_arn(&arn)
                .set_tag_keys(Some(remove))
                .send()
                .await
                .map_err(failed(Some(address), "remove the permissions boundary's tags"))?;
        }
        if !set.is_empty() {
            self.client
                .tag_policy()
                .policy_arn(&arn)
                .set_tags(Some(tag_list(&set)))
                .send()
                .await
                .map_err(failed(Some(address), "tag the permissions boundary"))?;
        }
        Ok(())
    }

    async fn create_provider(&self, change: &Change) -> Result<Applied, ReconcileError> {
        let address = &change.address;
        let after: ProviderSpec = reconcile_core::spec::after(change)?;
        let tags = tag_list(&after.tags);
        let response = self
            .client
            .create_open_id_connect_provider()
            .url(format!("https://{}", after.url))
            .set_client_id_list(Some(after.client_ids.clone()))
            .set_tags((!tags.is_empty()).then_some(tags))
            .send()
            .await;
        match response {
            Ok(_) => Ok(Applied::Done),
            // Made since the plan was read: converged if this deployment made it, refused
            // otherwise.
            Err(error) if has_code(&error, &["EntityAlreadyExists"]) => {
                let live = self.live_provider(change).await?;
                let operation = "create the identity provider";
                reconcile_core::ownership::made_meanwhile(&live.tags, &after.tags, address, operation, &after.url)?;
                self.converge_provider(change, Some(&live)).await?;
                Ok(Applied::Adopted)
            }
            Err(error) => Err(failed(Some(address), "create the identity provider")(error)),
        }
    }

    /// The identity provider as it is now, as far as `change` wants it (the audiences it needs).
    async fn live_provider(&self, change: &Change) -> Result<ProviderSpec, ReconcileError> {
        let address = &change.address;
        let wanted = change.after.clone().unwrap_or_default();
        let desired = DesiredResource::new(address.clone(), provider_arn(&self.account), wanted);
        match self.observe_provider(&desired).await?.remove(address) {
            Some(Observed::Present(fields)) => serde_json::from_value(Value::Object(fields))
                .map_err(|e| ReconcileError::new(Some(address), "read the identity provider", e.to_string())),
            _ => Err(ReconcileError::new(Some(address), "update the identity provider", "it is gone")),
        }
    }

    /// Adds the audiences the provider lacks and makes its tags match, touching only what
    /// differs from `before` (read again when unknown). Never takes an audience off: the provider
    /// is the account's one, and another deployment or team may rely on one desired.toml does
    /// not name (what was read of it holds only the ones it names).
    async fn converge_provider(&self, change: &Change, before: Option<&ProviderSpec>) -> Result<(), ReconcileError> {
        let address = &change.address;
        let after: ProviderSpec = reconcile_core::spec::after(change)?;
        let arn = provider_arn(&self.account);
        let before = match before {
            Some(before) => before.clone(),
            None => self.live_provider(change).await?,
        };
        for client_id in after.client_ids.iter().filter(|id| !before.client_ids.contains(id)) {
            self.client
                .add_client_id_to_open_id_connect_provider()
                .open_id_connect_provider_arn(&arn)
                .client_id(client_id)
                .send()
                .await
                .map_err(failed(Some(address), "add an audience to the identity provider"))?;
        }
        let (remove, set) = tag_changes(&before.tags, &after.tags);
        if !remove.is_empty() {
            self.client
                .untag_open_id_connect_provider()
                .open_id_connect_provider_arn(&arn)
                .set_tag_keys(Some(remove))
                .send()
                .await
                .map_err(failed(Some(address), "remove the identity provider's tags"))?;
        }
        if !set.is_empty() {
            self.client
                .tag_open_id_connect_provider()
                .open_id_connect_provider_arn(&arn)
                .set_tags(Some(tag_list(&set)))
                .send()
                .await
                .map_err(failed(Some(address), "tag the identity provider"))?;
        }
        Ok(())
    }

    async fn inline_policy_names(&self, address: &Address, role_name: &str) -> Result<Vec<String>, ReconcileError> {
        let mut pages = self.client.list_role_policies().role_name(role_name).into_paginator().send();
        let mut names = Vec::new();
        let mut read = reconcile_aws::Pages::default();
        while let Some(page) = self.parallelism.send_once(|| pages.next()).await {
            let page = page.map_err(failed(Some(address), "list inline policies"))?;
            read.page(page.marker(), Some(address), "list inline policies")?;
            names.extend(page.policy_names().to_vec());
        }
        Ok(names)
    }

    async fn observe_inline_policy(
        &self,
        address: &Address,
        role_name: &str,
        policy_name: &str,
    ) -> Result<Observed, ReconcileError> {
        let response = self
            .parallelism
            .send(|| self.client.get_role_policy().role_name(role_name).policy_name(policy_name).send())
            .await;
        let Some(output) =
            absent_if(response, &[NO_SUCH_ENTITY]).map_err(failed(Some(address), "read inline policy"))?
        else {
            return Ok(Observed::Absent);
        };
        let spec = RolePolicySpec {
            role: role_name.to_owned(),
            policy_name: policy_name.to_owned(),
            document: policy::canonical_text(output.policy_document(), &self.account.partition),
        };
        Ok(Observed::Present(attributes(&spec)))
    }

    async fn attached_policies(&self, address: &Address, role_name: &str) -> Result<Vec<Finding>, ReconcileError> {
        let mut pages = self.client.list_attached_role_policies().role_name(role_name).into_paginator().send();
        let mut findings = Vec::new();
        let mut read = reconcile_aws::Pages::default();
        while let Some(page) = self.parallelism.send_once(|| pages.next()).await {
            let page = page.map_err(failed(Some(address), "list attached managed policies"))?;
            read.page(page.marker(), Some(address), "list attached managed policies")?;
            for attached in page.attached_policies() {
                findings.push(Finding {
                    code: ATTACHED_MANAGED_POLICY.to_owned(),
                    severity: Severity::Error,
                    address: Some(address.clone()),
                    message: format!(
                        "managed policy {} is attached to role `{role_name}`: it widens the role beyond what \
                         desired.toml derives, and the role runs code from pull requests; detach it (reconcile \
                         never detaches a managed policy itself)",
                        attached.policy_arn().unwrap_or_else(|| attached.policy_name().unwrap_or("?"))
                    ),
                    overridden_by: None,
                });
            }
        }
        Ok(findings)
    }

    async fn create_role(&self, change: &Change) -> Result<Applied, ReconcileError> {
        let address = &change.address;
        let after: RoleSpec = reconcile_core::spec::after(change)?;
        let tags = tag_list(&after.tags);
        let response = self
            .client
            .create_role()
            .role_name(&after.name)
            .assume_role_policy_document(to_compact(&after.assume_role_policy))
            .set_description((!after.description.is_empty()).then(|| after.description.clone()))
            .max_session_duration(after.max_session_duration)
            // Bounded from its first moment: the boundary is made first (the role depends on it).
            .set_permissions_boundary(after.permissions_boundary.clone())
            .set_tags((!tags.is_empty()).then_some(tags))
            .send()
            .await;
        match response {
            Ok(_) => Ok(Applied::Done),
            // Made since the plan was read: converged if this deployment made it (an apply
            // killed after its create), refused otherwise.
            Err(error) if has_code(&error, &["EntityAlreadyExists"]) => {
                let live = self
                    .client
                    .get_role()
                    .role_name(&after.name)
                    .send()
                    .await
                    .map_err(failed(Some(address), "read role"))?;
                let current_tags = live.role().map(|r| visible_tags(r.tags().iter().map(|t| (t.key(), t.value()))));
                let current_tags = current_tags.unwrap_or_default();
                reconcile_core::ownership::made_meanwhile(
                    &current_tags,
                    &after.tags,
                    address,
                    "create role",
                    &after.name,
                )?;
                self.converge_role(change, None, &current_tags).await?;
                Ok(Applied::Adopted)
            }
            Err(error) => Err(failed(Some(address), "create role")(error)),
        }
    }

    /// Makes the role match the change, touching only what differs from `before` (everything,
    /// when `before` is unknown).
    async fn converge_role(
        &self,
        change: &Change,
        before: Option<&RoleSpec>,
        current_tags: &BTreeMap<String, String>,
    ) -> Result<(), ReconcileError> {
        let address = &change.address;
        let after: RoleSpec = reconcile_core::spec::after(change)?;
        let name = after.name.as_str();
        if before.is_none_or(|b| b.assume_role_policy != after.assume_role_policy) {
            self.client
                .update_assume_role_policy()
                .role_name(name)
                .policy_document(to_compact(&after.assume_role_policy))
                .send()
                .await
                .map_err(failed(Some(address), "update trust policy"))?;
        }
        if before.is_none_or(|b| b.permissions_boundary != after.permissions_boundary) {
            match &after.permissions_boundary {
                Some(arn) => {
                    self.client
                        .put_role_permissions_boundary()
                        .role_name(name)
                        .permissions_boundary(arn)
                        .send()
                        .await
                        .map_err(failed(Some(address), "set the permissions boundary"))?;
                }
                None => {
                    let response = self.client.delete_role_permissions_boundary().role_name(name).send().await;
                    gone_if(response, &[NO_SUCH_ENTITY])
                        .map_err(failed(Some(address), "remove the permissions boundary"))?;
                }
            }
        }
        if before
            .is_none_or(|b| b.description != after.description || b.max_session_duration != after.max_session_duration)
        {
            self.client
                .update_role()
                .role_name(name)
                .description(&after.description)
                .max_session_duration(after.max_session_duration)
                .send()
                .await
                .map_err(failed(Some(address), "update role"))?;
        }
        let (remove, set) = tag_changes(current_tags, &after.tags);
        if !remove.is_empty() {
            self.client
                .untag_role()
                .role_name(name)
                .set_tag_keys(Some(remove))
                .send()
                .await
                .map_err(failed(Some(address), "remove role tags"))?;
        }
        if !set.is_empty() {
            self.client
                .tag_role()
                .role_name(name)
                .set_tags(Some(tag_list(&set)))
                .send()
                .await
                .map_err(failed(Some(address), "set role tags"))?;
        }
        Ok(())
    }

    async fn put_role_policy(&self, change: &Change) -> Result<Applied, ReconcileError> {
        let address = &change.address;
        let after: RolePolicySpec = reconcile_core::spec::after(change)?;
        let document = to_compact(&after.document);
        // Right after the role is created, IAM may not show it everywhere yet.
        let request = || {
            self.client
                .put_role_policy()
                .role_name(&after.role)
                .policy_name(&after.policy_name)
                .policy_document(&document)
                .send()
        };
        after_create(request, &[NO_SUCH_ENTITY]).await.map_err(failed(Some(address), "put inline policy"))?;
        Ok(Applied::Done)
    }

    /// Deletes a role (a destroy's): what IAM refuses to delete a role with goes first. Its
    /// inline policies (the declared ones are gone already, each its own change), its managed
    /// policies detached (not deleted: they are not the role's), its instance profiles left.
    async fn delete_role(&self, change: &Change) -> Result<Applied, ReconcileError> {
        const OPERATION: &str = "delete role";
        let address = &change.address;
        let before = reconcile_core::spec::before::<RoleSpec>(change)?
            .ok_or_else(|| ReconcileError::new(Some(address), OPERATION, "the change has no observed fields"))?;
        let role = before.name.as_str();
        let inline = self.client.list_role_policies().role_name(role).max_items(1000).send().await;
        let inline =
            absent_if(inline, &[NO_SUCH_ENTITY]).map_err(failed(Some(address), "list the role's inline policies"))?;
        for name in inline.iter().flat_map(|o| o.policy_names()) {
            let response = self.client.delete_role_policy().role_name(role).policy_name(name).send().await;
            gone_if(response, &[NO_SUCH_ENTITY]).map_err(failed(Some(address), "delete an inline policy"))?;
        }
        let attached = self.client.list_attached_role_policies().role_name(role).max_items(1000).send().await;
        let attached = absent_if(attached, &[NO_SUCH_ENTITY])
            .map_err(failed(Some(address), "list the role's managed policies"))?;
        for arn in attached.iter().flat_map(|o| o.attached_policies()).filter_map(|p| p.policy_arn()) {
            let response = self.client.detach_role_policy().role_name(role).policy_arn(arn).send().await;
            gone_if(response, &[NO_SUCH_ENTITY]).map_err(failed(Some(address), "detach a managed policy"))?;
        }
        let profiles = self.client.list_instance_profiles_for_role().role_name(role).max_items(1000).send().await;
        let profiles = absent_if(profiles, &[NO_SUCH_ENTITY])
            .map_err(failed(Some(address), "list the role's instance profiles"))?;
        for profile in profiles.iter().flat_map(|o| o.instance_profiles()) {
            let response = self
                .client
                .remove_role_from_instance_profile()
                .role_name(role)
                .instance_profile_name(profile.instance_profile_name())
                .send()
                .await;
            gone_if(response, &[NO_SUCH_ENTITY])
                .map_err(failed(Some(address), "remove the role from an instance profile"))?;
        }
        let response = self.client.delete_role().role_name(role).send().await;
        gone_if(response, &[NO_SUCH_ENTITY]).map_err(failed(Some(address), OPERATION))?;
        Ok(Applied::Done)
    }

    /// Deletes a permissions boundary (a destroy's, after the roles it bounds): its versions
    /// other than the default first, as IAM requires.
    async fn delete_boundary(&self, change: &Change) -> Result<Applied, ReconcileError> {
        const OPERATION: &str = "delete a permissions boundary";
        let address = &change.address;
        let before = reconcile_core::spec::before::<BoundarySpec>(change)?
            .ok_or_else(|| ReconcileError::new(Some(address), OPERATION, "the change has no observed fields"))?;
        let arn = policy_arn(&self.account, &before.name);
        let versions = self.client.list_policy_versions().policy_arn(&arn).send().await;
        let versions = absent_if(versions, &[NO_SUCH_ENTITY]).map_err(failed(Some(address), "list its versions"))?;
        for version in versions.iter().flat_map(|o| o.versions()).filter(|v| !v.is_default_version()) {
            let Some(id) = version.version_id() else { continue };
            let response = self.client.delete_policy_version().policy_arn(&arn).version_id(id).send().await;
            gone_if(response, &[NO_SUCH_ENTITY]).map_err(failed(Some(address), "delete an old version"))?;
        }
        let response = self.client.delete_policy().policy_arn(&arn).send().await;
        gone_if(response, &[NO_SUCH_ENTITY]).map_err(failed(Some(address), OPERATION))?;
        Ok(Applied::Done)
    }

    async fn delete_role_policy(&self, change: &Change) -> Result<Applied, ReconcileError> {
        let address = &change.address;
        let before = reconcile_core::spec::before::<RolePolicySpec>(change)?.ok_or_else(|| {
            ReconcileError::new(Some(address), "delete inline policy", "the change has no observed fields")
        })?;
        let response =
            self.client.delete_role_policy().role_name(&before.role).policy_name(&before.policy_name).send().await;
        gone_if(response, &[NO_SUCH_ENTITY]).map_err(failed(Some(address), "delete inline policy"))?;
        Ok(Applied::Done)
    }
}

/// IAM's tag type. Key and value are both set, so a build error cannot happen; were it to, it
/// is an error, never a dropped tag.
fn tag_list(tags: &BTreeMap<String, String>) -> Vec<iam::types::Tag> {
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
        assert_eq!(observed.resources[&role.address], Observed::Absent);
        assert_eq!(observed.resources[&policy.address], Observed::Absent);
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
}
