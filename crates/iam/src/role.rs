//! `iam_role.<key>` (the runner's roles) and `iam_ci_role.<key>` (the CI roles): a role's trust
//! policy, description, session length, tags and permissions boundary. Every fact about one of
//! its fields is stated here: its row in [`FIELDS`], its place in the spec, how IAM's answer gives
//! it, how create and the setters write it, and how the Terraform view shows it; desired.toml's
//! sections (section.rs) are the only other file that names one.
//!
//! | reconcile | provider resource | arguments |
//! |---|---|---|
//! | `iam_role.<key>` | `aws_iam_role.runner["<key>"]` | `name`, `path`, `assume_role_policy` (JSON string), `description`, `max_session_duration`, `permissions_boundary`, `force_detach_policies` (false), `tags`, `tags_all` |
//! | `iam_ci_role.<key>` | `aws_iam_role.ci["<key>"]` | as `iam_role` |

use std::collections::{BTreeMap, BTreeSet};

use reconcile_aws::{absent_if, failed, gone_if, has_code, visible_tags};
use reconcile_core::fields::{Field, Fields};
use reconcile_core::generate::Found;
use reconcile_core::json::to_compact;
use reconcile_core::mark::MARK_KEY;
use reconcile_core::plan::{Change, DesiredResource, Finding, Observed, Severity};
use reconcile_core::reconciler::Observations;
use reconcile_core::spec::attributes;
use reconcile_core::terraform::{Provider, ProviderResource, policy_string, tags};
use reconcile_core::{Account, Address, Applied, Desired, ReconcileError};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::ci::{self};
use crate::terraform::{arn, field};
use crate::{
    ATTACHED_MANAGED_POLICY, CI_TRUST_CHANGED, CI_TRUST_WIDENED, Family, RolePolicySpec, UNDECLARED_GITHUB_ROLE,
    undeclared_role,
};
use crate::{IamReconciler, NO_SUCH_ENTITY, policy, retag, tag_list};

/// A role's fields (the runner's and the CI roles').
const ROLE: &[Field] = &[
    Field::identity("name"),
    Field::in_place("assume_role_policy").set_by(&["UpdateAssumeRolePolicy"]),
    Field::in_place("description").set_by(&["UpdateRole", "UpdateRoleDescription"]),
    Field::in_place("max_session_duration").set_by(&["UpdateRole"]),
    Field::in_place("tags").set_by(&["TagRole", "UntagRole"]),
    Field::in_place("permissions_boundary").set_by(&["PutRolePermissionsBoundary", "DeleteRolePermissionsBoundary"]),
];

pub const FIELDS: Fields = Fields { kind: crate::ROLE, fields: ROLE };
pub const CI_ROLE_FIELDS: Fields = Fields { kind: crate::CI_ROLE, fields: ROLE };

/// `iam_role.<key>`: the role's settings and tags that reconcile manages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RoleSpec {
    pub name: String,
    /// The trust policy, in canonical form.
    pub assume_role_policy: Value,
    pub description: String,
    pub max_session_duration: i32,
    pub tags: BTreeMap<String, String>,
    /// The runner's roles: their derived boundary (`iam_role_boundary.<key>`), which no one
    /// but an administrator puts or removes. The CI roles: none. A boundary set out of band can
    /// silently take away what a role needs; one removed leaves the role unbounded.
    pub permissions_boundary: Option<String>,
}

/// A live role: its spec, and what IAM tells besides, shown but never compared.
#[derive(Debug, Serialize)]
pub(crate) struct RoleState {
    pub arn: String,
    pub path: String,
    /// IAM's own id of the role (`AROA...`), which Terraform's state calls `unique_id`.
    pub unique_id: String,
    #[serde(flatten)]
    pub spec: RoleSpec,
}

/// The trust policy for a role that the given services assume.
pub fn trust_policy(services: &[String]) -> Value {
    json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Principal": { "Service": services },
            "Action": "sts:AssumeRole",
        }],
    })
}

impl RoleSpec {
    /// The runner's role `role` asks for, bounded by the managed policy `boundary_arn`.
    pub(crate) fn runner(
        role: &crate::section::Role,
        account: &Account,
        boundary_arn: String,
        desired: &Desired,
    ) -> Result<RoleSpec, ReconcileError> {
        Ok(RoleSpec {
            name: role.name.clone(),
            assume_role_policy: policy::canonical(&trust_policy(&role.trusted_services), &account.partition),
            description: role.description.clone(),
            max_session_duration: session(role.max_session_duration, &Address::new(crate::ROLE, &role.key))?,
            tags: desired.marked(&role.tags),
            permissions_boundary: Some(boundary_arn),
        })
    }

    /// The CI role `role` of `[ci]` (`declared`), trusted by GitHub's identity provider for its
    /// subject only.
    pub(crate) fn ci(
        role: &crate::section::ci::CiRole,
        declared: &crate::section::ci::Ci,
        account: &Account,
        desired: &Desired,
    ) -> Result<RoleSpec, ReconcileError> {
        let key = role.purpose.key();
        Ok(RoleSpec {
            name: role.name.clone(),
            assume_role_policy: policy::canonical(&crate::ci::trust_policy(role, account), &account.partition),
            description: format!("reconcile's {} role, assumed by {} only", key.replace('_', "-"), role.subject),
            max_session_duration: session(
                declared.max_session_duration,
                &Address::new(crate::OIDC_PROVIDER, crate::oidc_provider::PROVIDER_KEY),
            )?,
            tags: desired.marked(&declared.tags),
            permissions_boundary: None,
        })
    }
}

/// A declared session length as IAM takes it.
fn session(seconds: impl TryInto<i32>, address: &Address) -> Result<i32, ReconcileError> {
    seconds
        .try_into()
        .map_err(|_| ReconcileError::new(Some(address), "read max_session_duration", "it is larger than IAM allows"))
}

impl IamReconciler {
    pub(crate) async fn observe_role(
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
                let address = if declared.is(name) {
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
    pub(crate) async fn github_roles(&self, desired: &[&DesiredResource]) -> Result<Vec<Finding>, ReconcileError> {
        let declared: std::collections::BTreeSet<&str> = desired
            .iter()
            .filter(|r| matches!(r.address.kind, crate::ROLE | crate::CI_ROLE))
            .map(|r| r.remote_name.as_str())
            .collect();
        // This deployment's name, from the mark its declared roles carry.
        let ours = desired.iter().find_map(|r| reconcile_core::ownership::mark(&r.attributes));
        let mut pages = self.client.list_roles().into_paginator().send();
        let mut trusting = Vec::new();
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
                    trusting.push((role.role_name().to_owned(), subjects));
                }
            }
        }
        // Whose each is (ListRoles leaves tags out): only those few, at once.
        let tags = futures::future::join_all(trusting.iter().map(|(name, _)| async move {
            match ours {
                Some(_) => self.role_tags(name).await.map(Some),
                None => Ok(None),
            }
        }))
        .await;
        let mut findings = Vec::new();
        for ((name, subjects), tags) in trusting.iter().zip(tags) {
            // Another deployment's CI role (two share the account): that deployment's to answer for.
            if let (Some(ours), Some(tags)) = (ours, tags?)
                && let Some(theirs) = reconcile_core::ownership::other_deployment(&tags, ours)
            {
                let what = format!("role `{name}`, which trusts GitHub's OIDC provider,");
                findings.push(reconcile_core::ownership::another_deployments(undeclared_role(name), &what, theirs));
                continue;
            }
            findings.push(Finding {
                code: UNDECLARED_GITHUB_ROLE.to_owned(),
                severity: Severity::Warning,
                // Addressed by a name no key can be (`check_key`), so never taken for a declared
                // role's: a public plan counts these, never names them.
                address: Some(undeclared_role(name)),
                message: format!(
                    "role `{name}` is not in desired.toml and trusts GitHub's OIDC provider ({}): the workflows it \
                     admits can act as it; find whose it is (its trust names the repository), and delete it once no \
                     one needs it: reconcile makes only its own CI roles (`[ci]`), never another's",
                    subjects.join("; ")
                ),
                overridden_by: None,
            });
        }
        Ok(findings)
    }

    /// The visible tags of role `name`.
    async fn role_tags(&self, name: &str) -> Result<BTreeMap<String, String>, ReconcileError> {
        let tags = self
            .parallelism
            .send(|| self.client.list_role_tags().role_name(name).send())
            .await
            .map_err(failed(Some(&undeclared_role(name)), "read the role's tags"))?;
        Ok(reconcile_aws::visible_tags(tags.tags().iter().map(|tag| (tag.key(), tag.value()))))
    }

    /// What a CI role's live trust is, next to the derived one: the same (no finding); exactly
    /// another subject (D108, the plan's change, naming who is trusted after it); or more than
    /// the derived one admits (S104, naming what).
    pub(crate) fn widened_trust(
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

    pub(crate) async fn attached_policies(
        &self,
        address: &Address,
        role_name: &str,
    ) -> Result<Vec<Finding>, ReconcileError> {
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

    pub(crate) async fn create_role(&self, change: &Change) -> Result<Applied, ReconcileError> {
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

    /// Makes a role match the change, from what the plan saw of it.
    pub(crate) async fn update_role(&self, change: &Change) -> Result<(), ReconcileError> {
        let before = reconcile_core::spec::before::<RoleSpec>(change)?;
        let current_tags = before.as_ref().map(|b| b.tags.clone()).unwrap_or_default();
        self.converge_role(change, before.as_ref(), &current_tags).await
    }

    /// Makes the role match the change, touching only what differs from `before` (everything,
    /// when `before` is unknown).
    pub(crate) async fn converge_role(
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
        let untag = |keys| self.client.untag_role().role_name(name).set_tag_keys(Some(keys)).send();
        let tag = |tags| self.client.tag_role().role_name(name).set_tags(Some(tags)).send();
        retag(address, current_tags, &after.tags, ("remove role tags", "set role tags"), untag, tag).await
    }

    /// Deletes a role (a destroy's): what IAM refuses to delete a role with goes first. Its
    /// inline policies (the declared ones are gone already, each its own change), its managed
    /// policies detached (not deleted: they are not the role's), its instance profiles left.
    pub(crate) async fn delete_role(&self, change: &Change) -> Result<Applied, ReconcileError> {
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
}

pub(crate) fn terraform(account: &Account, block: &'static str, fields: &Map<String, Value>) -> ProviderResource {
    let (tags, tags_all) = tags(fields);
    let name = field(fields, "name");
    let path = fields.get("path").and_then(Value::as_str).unwrap_or("/");
    let arn = fields
        .get("arn")
        .cloned()
        .unwrap_or_else(|| json!(arn(account, &format!("role{path}{}", name.as_str().unwrap_or_default()))));
    let resource = ProviderResource::new(
        Provider::Aws,
        "aws_iam_role",
        block,
        json!({
            "name": name,
            "path": path,
            "assume_role_policy": policy_string(&field(fields, "assume_role_policy")),
            "description": field(fields, "description"),
            "max_session_duration": field(fields, "max_session_duration"),
            "permissions_boundary": field(fields, "permissions_boundary"),
            "force_detach_policies": false,
            "tags": tags,
            "tags_all": tags_all,
        }),
    )
    // Desired roles are on the path `/`; Terraform makes a new one for another.
    .forcing_new(FIELDS.forcing_new(&["path"]))
    // Its unique id is IAM's choice, known only from the live role.
    .computing(json!({ "arn": arn, "id": name, "unique_id": field(fields, "unique_id") }));
    if block == "runner" {
        resource.referring(&[("permissions_boundary", "aws_iam_policy.boundary", "arn")])
    } else {
        resource
    }
}

/// What `import --generate` reads of a service role desired.toml does not declare
/// (`IamReconciler::inventory_of`), and section.rs's `generate` reads back as this type: the
/// inventory's `Found::live` is its map, so no key is spelled on both sides.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct FoundRole {
    pub description: String,
    pub max_session_duration: i32,
    /// Its visible tags, the mark taken out.
    pub tags: BTreeMap<String, String>,
    /// The services its trust policy lets assume it (all that policy does).
    pub trusted_services: Vec<String>,
    /// Its inline policies' names.
    pub policy_names: Vec<String>,
    /// The description of its boundary, when it has the one reconcile derives (`<name>-boundary`).
    pub boundary_description: Option<String>,
}

impl IamReconciler {
    // `import --generate`'s reading: see section.rs for its writing.
    /// The roles `desired` does not declare that only AWS services assume (not the ones AWS
    /// links to a service), each with its description, session length, tags without the mark,
    /// the services it trusts and its inline policies' names.
    pub(crate) async fn inventory_of(&self, desired: &[&DesiredResource]) -> Result<Vec<Found>, ReconcileError> {
        let declared: BTreeSet<&str> = desired
            .iter()
            .filter(|r| matches!(r.address.kind, crate::ROLE | crate::CI_ROLE))
            .map(|r| r.remote_name.as_str())
            .collect();
        let mut pages = self.client.list_roles().into_paginator().send();
        let mut read = reconcile_aws::Pages::default();
        let mut candidates = Vec::new();
        while let Some(page) = self.parallelism.send_once(|| pages.next()).await {
            let page = page.map_err(failed(None, "list roles"))?;
            read.page(page.marker(), None, "list roles")?;
            for role in page.roles() {
                if declared.contains(role.role_name()) || role.path().starts_with("/aws-service-role/") {
                    continue;
                }
                let trust = role
                    .assume_role_policy_document()
                    .map_or(Value::Null, |text| policy::canonical_text(text, &self.account.partition));
                if let Some(services) = services_only(&trust) {
                    candidates.push((role.role_name().to_owned(), services));
                }
            }
        }
        let reads: Vec<_> = candidates.iter().map(|(name, services)| self.read_role(name, services)).collect();
        futures::future::join_all(reads).await.into_iter().collect()
    }

    async fn read_role(&self, name: &str, services: &[String]) -> Result<Found, ReconcileError> {
        let address = Address::new(crate::ROLE, name);
        let policy_address = Address::new(crate::ROLE_POLICY, name);
        let (role, names) = futures::join!(
            self.parallelism.send(|| self.client.get_role().role_name(name).send()),
            self.inline_policy_names(&policy_address, name)
        );
        let role = role.map_err(failed(Some(&address), "read role"))?;
        let role =
            role.role().ok_or_else(|| ReconcileError::new(Some(&address), "read role", "IAM answered no role"))?;
        let mut tags = visible_tags(role.tags().iter().map(|t| (t.key(), t.value())));
        let deployment = tags.remove(MARK_KEY);
        // The boundary reconcile would derive for it (`<name>-boundary`) keeps its description,
        // which IAM never changes: generated as it is, or the plan would replace the boundary.
        let boundary = role.permissions_boundary().and_then(|b| b.permissions_boundary_arn());
        let mut boundary_description = None;
        if let Some(arn) = boundary.filter(|arn| arn.ends_with(&format!(":policy/{name}-boundary"))) {
            let policy = self.parallelism.send(|| self.client.get_policy().policy_arn(arn).send()).await;
            let policy = absent_if(policy, &[NO_SUCH_ENTITY]).map_err(failed(Some(&address), "read its boundary"))?;
            boundary_description = policy.and_then(|output| output.policy).and_then(|p| p.description);
        }
        let record = FoundRole {
            description: role.description().unwrap_or_default().to_owned(),
            max_session_duration: role.max_session_duration().unwrap_or(3600),
            tags,
            trusted_services: services.to_vec(),
            policy_names: names?,
            boundary_description,
        };
        let live = attributes(&record);
        Ok(Found { kind: crate::ROLE, name: name.to_owned(), deployment, by_default: false, needs: Vec::new(), live })
    }
}

/// The services a trust policy (canonical) lets assume the role, when that is all it does:
/// every statement allows `sts:AssumeRole` to services, with no condition.
fn services_only(trust: &Value) -> Option<Vec<String>> {
    let statements = trust.get("Statement")?.as_array()?;
    let mut services = BTreeSet::new();
    for statement in statements {
        let object = statement.as_object()?;
        if object.keys().any(|key| !["Sid", "Effect", "Action", "Principal"].contains(&key.as_str())) {
            return None;
        }
        let strings = |value: &Value| -> Vec<String> {
            match value {
                Value::String(one) => vec![one.clone()],
                Value::Array(many) => many.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
                _ => Vec::new(),
            }
        };
        let allows = object.get("Effect").and_then(Value::as_str).is_some_and(|e| e.eq_ignore_ascii_case("allow"));
        let assumes = strings(object.get("Action")?).iter().all(|a| a.eq_ignore_ascii_case("sts:AssumeRole"));
        let principal = object.get("Principal")?.as_object()?;
        if !allows || !assumes || principal.keys().any(|key| key != "Service") {
            return None;
        }
        services.extend(strings(principal.get("Service")?));
    }
    (!services.is_empty()).then(|| services.into_iter().collect())
}

/// Whether `change`, an update of a role, leaves its permissions boundary as it is.
pub(crate) fn keeps_its_boundary(change: &Change) -> bool {
    let boundary = |side: &Option<serde_json::Map<String, Value>>| {
        side.as_ref().and_then(|fields| fields.get("permissions_boundary")).cloned()
    };
    boundary(&change.before) == boundary(&change.after)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_trust_of_services_alone_makes_a_service_role() {
        let trust = |statement: Value| json!({"Version": "2012-10-17", "Statement": [statement]});
        let service = json!({"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {"Service": ["codebuild.amazonaws.com"]}});
        assert_eq!(services_only(&trust(service)), Some(vec!["codebuild.amazonaws.com".to_owned()]));
        let federated = json!({"Effect": "Allow", "Action": "sts:AssumeRoleWithWebIdentity", "Principal": {"Federated": "arn:aws:iam::1:oidc-provider/x"}});
        assert_eq!(services_only(&trust(federated)), None);
        let conditioned = json!({"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {"Service": "codebuild.amazonaws.com"}, "Condition": {"StringEquals": {"aws:SourceAccount": "1"}}});
        assert_eq!(services_only(&trust(conditioned)), None);
    }
}
