//! The IAM reconciler: `iam_role.<key>` (trust policy, description, max session duration, tags)
//! and `iam_role_policy.<key>` (the role's inline policy, derived from the rest of the desired
//! state; see `derive`).
//!
//! Inline policies on the role that desired.toml does not declare are planned as deletes,
//! addressed `iam_role_policy.<key>/<policy name>`; managed policies attached to the role are
//! reported as findings. Roles themselves are never deleted.

mod derive;
mod policy;

use std::collections::BTreeMap;

use async_trait::async_trait;
use aws_sdk_iam as iam;
use aws_sdk_iam::error::SdkError;
use aws_sdk_iam::operation::put_role_policy::PutRolePolicyError;
use reconcile_core::desired::Desired;
use reconcile_core::json::{object, string_map, tag_changes, to_compact};
use reconcile_core::plan::{Action, Change, DesiredResource, Finding, Observed, Severity};
use reconcile_core::reconciler::Observations;
use reconcile_core::retry::{Backoff, retry};
use reconcile_core::{Account, Address, Progress, ReconcileError, Reconciler, ResourceKind};
use serde_json::{Map, Value, json};

pub use derive::{INLINE_POLICY_LIMIT, inline_policy};
pub use policy::{canonical, canonical_text, percent_decode};

/// Finding code: a managed policy is attached to a managed role. Stable; never reused.
pub const ATTACHED_MANAGED_POLICY: &str = "W101";

pub struct IamReconciler {
    client: iam::Client,
    account: Account,
}

impl IamReconciler {
    pub fn new(client: iam::Client, account: Account) -> IamReconciler {
        IamReconciler { client, account }
    }
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

/// The projects that run as the role with this key, whose log groups the role may write.
fn projects_using(desired: &Desired, role_key: &str) -> Vec<String> {
    desired.codebuild.projects.iter().filter(|p| p.service_role == role_key).map(|p| p.name.clone()).collect()
}

#[async_trait]
impl Reconciler for IamReconciler {
    fn kinds(&self) -> &'static [ResourceKind] {
        &[ResourceKind::IamRole, ResourceKind::IamRolePolicy]
    }

    fn desired(&self, desired: &Desired, account: &Account) -> Result<Vec<DesiredResource>, ReconcileError> {
        let mut resources = Vec::new();
        for role in &desired.iam.roles {
            let role_address = Address::new(ResourceKind::IamRole, &role.key);
            resources.push(DesiredResource {
                address: role_address.clone(),
                attributes: object(json!({
                    "name": role.name,
                    "assume_role_policy": canonical(&trust_policy(&role.trusted_services), &account.partition),
                    "description": role.description,
                    "max_session_duration": role.max_session_duration,
                    "tags": role.tags,
                })),
                depends_on: Vec::new(),
            });
            let policy_address = Address::new(ResourceKind::IamRolePolicy, &role.key);
            let document = inline_policy(desired, role, account, &projects_using(desired, &role.key))
                .map_err(|why| ReconcileError::new(Some(&policy_address), "derive the inline policy", why))?;
            resources.push(DesiredResource {
                address: policy_address,
                attributes: object(json!({
                    "role": role.name,
                    "policy_name": role.policy_name,
                    "document": canonical(&document, &account.partition),
                })),
                depends_on: vec![role_address],
            });
        }
        Ok(resources)
    }

    async fn observe(&self, desired: &[&DesiredResource]) -> Result<Observations, ReconcileError> {
        // Group the two kinds by role key: one GetRole serves both.
        let mut roles: BTreeMap<&str, (Option<&DesiredResource>, Option<&DesiredResource>)> = BTreeMap::new();
        for resource in desired {
            let entry = roles.entry(resource.address.name.as_str()).or_default();
            match resource.address.kind {
                ResourceKind::IamRole => entry.0 = Some(resource),
                _ => entry.1 = Some(resource),
            }
        }
        let reads: Vec<_> =
            roles.into_iter().map(|(key, (role, policy))| self.observe_role(key, role, policy)).collect();
        let mut observations = Observations::default();
        for result in reconcile_core::engine::bounded(4, reads).await {
            let role = result?;
            observations.resources.extend(role.resources);
            observations.findings.extend(role.findings);
        }
        Ok(observations)
    }

    async fn apply(&self, change: &Change, _progress: &dyn Progress) -> Result<(), ReconcileError> {
        let address = &change.address;
        match (address.kind, change.action) {
            (ResourceKind::IamRole, Action::Create) => self.create_role(change).await,
            (ResourceKind::IamRole, Action::Update) => {
                let current_tags = string_map(change.before.as_ref().and_then(|b| b.get("tags")));
                self.converge_role(change, change.before.as_ref(), &current_tags).await
            }
            (ResourceKind::IamRole, Action::Delete) => Err(ReconcileError::never(address, "delete role")),
            (_, Action::Create | Action::Update) => self.put_role_policy(change).await,
            (_, Action::Delete) => self.delete_role_policy(change).await,
            // This reconciler's diff never plans one: everything it manages changes in place.
            (_, Action::Replace) => Err(ReconcileError::never(address, "replace")),
        }
    }
}

impl IamReconciler {
    async fn observe_role(
        &self,
        key: &str,
        role: Option<&DesiredResource>,
        policy: Option<&DesiredResource>,
    ) -> Result<Observations, ReconcileError> {
        let role_address = Address::new(ResourceKind::IamRole, key);
        let policy_address = Address::new(ResourceKind::IamRolePolicy, key);
        let field = |resource: Option<&DesiredResource>, name: &str| {
            resource.and_then(|r| r.attributes.get(name)).and_then(Value::as_str).map(str::to_owned)
        };
        let role_name = field(role, "name").or_else(|| field(policy, "role")).unwrap_or_default();
        let mut observations = Observations::default();

        let live = match self.client.get_role().role_name(&role_name).send().await {
            Ok(output) => output.role,
            Err(error) if error.as_service_error().is_some_and(|e| e.is_no_such_entity_exception()) => None,
            Err(error) => return Err(ReconcileError::of(&role_address, "read role")(error)),
        };
        let Some(live) = live else {
            for resource in [role, policy].into_iter().flatten() {
                observations.resources.insert(resource.address.clone(), Observed::Absent);
            }
            return Ok(observations);
        };

        if role.is_some() {
            let trust = live
                .assume_role_policy_document()
                .map_or(Value::Null, |text| policy::canonical_text(text, &self.account.partition));
            let tags: BTreeMap<&str, &str> = live.tags().iter().map(|t| (t.key(), t.value())).collect();
            observations.resources.insert(
                role_address.clone(),
                Observed::Present(object(json!({
                    "name": live.role_name(),
                    "arn": live.arn(),
                    "path": live.path(),
                    "assume_role_policy": trust,
                    "description": live.description().unwrap_or_default(),
                    "max_session_duration": live.max_session_duration().unwrap_or(3600),
                    "tags": tags,
                }))),
            );
            observations.findings.extend(self.attached_policies(&role_address, &role_name).await?);
        }

        if let Some(policy) = policy {
            let policy_name = field(Some(policy), "policy_name").unwrap_or_default();
            let names = self.inline_policy_names(&policy_address, &role_name).await?;
            for name in &names {
                let observed = self.observe_inline_policy(&policy_address, &role_name, name).await?;
                let address = if *name == policy_name {
                    policy_address.clone()
                } else {
                    // Undeclared: planned as a delete.
                    Address::new(ResourceKind::IamRolePolicy, format!("{key}/{name}"))
                };
                observations.resources.insert(address, observed);
            }
            observations.resources.entry(policy_address).or_insert(Observed::Absent);
        }
        Ok(observations)
    }

    async fn inline_policy_names(&self, address: &Address, role_name: &str) -> Result<Vec<String>, ReconcileError> {
        let mut pages = self.client.list_role_policies().role_name(role_name).into_paginator().send();
        let mut names = Vec::new();
        while let Some(page) = pages.next().await {
            names.extend(page.map_err(ReconcileError::of(address, "list inline policies"))?.policy_names().to_vec());
        }
        Ok(names)
    }

    async fn observe_inline_policy(
        &self,
        address: &Address,
        role_name: &str,
        policy_name: &str,
    ) -> Result<Observed, ReconcileError> {
        match self.client.get_role_policy().role_name(role_name).policy_name(policy_name).send().await {
            Ok(output) => Ok(Observed::Present(object(json!({
                "role": role_name,
                "policy_name": policy_name,
                "document": policy::canonical_text(output.policy_document(), &self.account.partition),
            })))),
            Err(error) if error.as_service_error().is_some_and(|e| e.is_no_such_entity_exception()) => {
                Ok(Observed::Absent)
            }
            Err(error) => Err(ReconcileError::of(address, "read inline policy")(error)),
        }
    }

    async fn attached_policies(&self, address: &Address, role_name: &str) -> Result<Vec<Finding>, ReconcileError> {
        let mut pages = self.client.list_attached_role_policies().role_name(role_name).into_paginator().send();
        let mut findings = Vec::new();
        while let Some(page) = pages.next().await {
            let page = page.map_err(ReconcileError::of(address, "list attached managed policies"))?;
            for attached in page.attached_policies() {
                findings.push(Finding {
                    code: ATTACHED_MANAGED_POLICY.to_owned(),
                    severity: Severity::Warning,
                    address: Some(address.clone()),
                    message: format!(
                        "managed policy {} is attached to role `{role_name}`; reconcile does not manage it, and it \
                         widens the role beyond what desired.toml derives",
                        attached.policy_arn().unwrap_or_else(|| attached.policy_name().unwrap_or("?"))
                    ),
                });
            }
        }
        Ok(findings)
    }

    async fn create_role(&self, change: &Change) -> Result<(), ReconcileError> {
        let address = &change.address;
        let after = change.after_fields()?;
        let name = change.after_str("name")?;
        let trust = after.get("assume_role_policy").map(to_compact).unwrap_or_default();
        let tags = tag_list(&string_map(after.get("tags")));
        let description = change.after_str("description").unwrap_or_default();
        let response = self
            .client
            .create_role()
            .role_name(name)
            .assume_role_policy_document(trust)
            .set_description((!description.is_empty()).then(|| description.to_owned()))
            .set_max_session_duration(max_session_duration(after))
            .set_tags((!tags.is_empty()).then_some(tags))
            .send()
            .await;
        match response {
            Ok(_) => Ok(()),
            Err(error) if error.as_service_error().is_some_and(|e| e.is_entity_already_exists_exception()) => {
                let live = self
                    .client
                    .get_role()
                    .role_name(name)
                    .send()
                    .await
                    .map_err(ReconcileError::of(address, "read role"))?;
                let current_tags =
                    live.role().map(|r| r.tags().iter().map(|t| (t.key().to_owned(), t.value().to_owned())).collect());
                self.converge_role(change, None, &current_tags.unwrap_or_default()).await
            }
            Err(error) => Err(ReconcileError::of(address, "create role")(error)),
        }
    }

    /// Makes the role match the change, touching only what differs from `before` (everything,
    /// when `before` is unknown).
    async fn converge_role(
        &self,
        change: &Change,
        before: Option<&Map<String, Value>>,
        current_tags: &BTreeMap<String, String>,
    ) -> Result<(), ReconcileError> {
        let address = &change.address;
        let after = change.after_fields()?;
        let name = change.after_str("name")?;
        let differs = |field: &str| before.is_none_or(|b| b.get(field) != after.get(field));
        if differs("assume_role_policy") {
            let trust = after.get("assume_role_policy").map(to_compact).unwrap_or_default();
            self.client
                .update_assume_role_policy()
                .role_name(name)
                .policy_document(trust)
                .send()
                .await
                .map_err(ReconcileError::of(address, "update trust policy"))?;
        }
        if differs("description") || differs("max_session_duration") {
            self.client
                .update_role()
                .role_name(name)
                .description(change.after_str("description").unwrap_or_default())
                .set_max_session_duration(max_session_duration(after))
                .send()
                .await
                .map_err(ReconcileError::of(address, "update role"))?;
        }
        let (remove, set) = tag_changes(current_tags, &string_map(after.get("tags")));
        if !remove.is_empty() {
            self.client
                .untag_role()
                .role_name(name)
                .set_tag_keys(Some(remove))
                .send()
                .await
                .map_err(ReconcileError::of(address, "remove role tags"))?;
        }
        if !set.is_empty() {
            self.client
                .tag_role()
                .role_name(name)
                .set_tags(Some(tag_list(&set)))
                .send()
                .await
                .map_err(ReconcileError::of(address, "set role tags"))?;
        }
        Ok(())
    }

    async fn put_role_policy(&self, change: &Change) -> Result<(), ReconcileError> {
        let address = &change.address;
        let document = change.after_fields()?.get("document").map(to_compact).unwrap_or_default();
        let (role, name) = (change.after_str("role")?, change.after_str("policy_name")?);
        // Right after the role is created, IAM may not show it everywhere yet.
        let request =
            || self.client.put_role_policy().role_name(role).policy_name(name).policy_document(&document).send();
        let not_yet = |error: &SdkError<PutRolePolicyError, _>, _| {
            error.as_service_error().is_some_and(|e| e.is_no_such_entity_exception())
        };
        retry(Backoff::AFTER_CREATE, request, not_yet, tokio::time::sleep)
            .await
            .map_err(ReconcileError::of(address, "put inline policy"))?;
        Ok(())
    }

    async fn delete_role_policy(&self, change: &Change) -> Result<(), ReconcileError> {
        let address = &change.address;
        let before = change.before.as_ref();
        let field = |name: &str| before.and_then(|b| b.get(name)).and_then(Value::as_str).unwrap_or_default();
        match self.client.delete_role_policy().role_name(field("role")).policy_name(field("policy_name")).send().await {
            Ok(_) => Ok(()),
            Err(error) if error.as_service_error().is_some_and(|e| e.is_no_such_entity_exception()) => Ok(()),
            Err(error) => Err(ReconcileError::of(address, "delete inline policy")(error)),
        }
    }
}

fn max_session_duration(fields: &Map<String, Value>) -> Option<i32> {
    fields.get("max_session_duration").and_then(Value::as_i64).and_then(|d| i32::try_from(d).ok())
}

fn tag_list(tags: &BTreeMap<String, String>) -> Vec<iam::types::Tag> {
    tags.iter().filter_map(|(key, value)| iam::types::Tag::builder().key(key).value(value).build().ok()).collect()
}

#[cfg(test)]
mod tests {
    //! Error paths the emulator cannot produce, against a mocked client.

    use super::*;
    use aws_sdk_iam::operation::get_role::GetRoleError;
    use aws_sdk_iam::types::error::NoSuchEntityException;
    use aws_smithy_mocks::{Rule, RuleMode, mock, mock_client};
    use reconcile_core::reconciler::Silent;

    fn reconciler(rules: &[&Rule]) -> IamReconciler {
        let client = mock_client!(aws_sdk_iam, RuleMode::MatchAny, rules);
        IamReconciler::new(client, Account::new("123456789012", "us-east-1"))
    }

    #[tokio::test]
    async fn a_missing_role_is_absent_with_its_policy_and_nothing_more_is_read() {
        let get_role = mock!(iam::Client::get_role)
            .then_error(|| GetRoleError::NoSuchEntityException(NoSuchEntityException::builder().build()));
        let list = mock!(iam::Client::list_role_policies)
            .then_output(|| iam::operation::list_role_policies::ListRolePoliciesOutput::builder().build().unwrap());
        let role = DesiredResource {
            address: Address::new(ResourceKind::IamRole, "codebuild"),
            attributes: object(json!({ "name": "rocm-bake-codebuild" })),
            depends_on: vec![],
        };
        let policy = DesiredResource {
            address: Address::new(ResourceKind::IamRolePolicy, "codebuild"),
            attributes: object(json!({ "role": "rocm-bake-codebuild", "policy_name": "p" })),
            depends_on: vec![],
        };
        let observed = reconciler(&[&get_role, &list]).observe(&[&role, &policy]).await.unwrap();
        assert_eq!(observed.resources[&role.address], Observed::Absent);
        assert_eq!(observed.resources[&policy.address], Observed::Absent);
        assert_eq!((get_role.num_calls(), list.num_calls()), (1, 0));
    }

    #[tokio::test]
    async fn a_policy_put_right_after_the_role_is_created_waits_for_the_role_to_show() {
        let put = mock!(iam::Client::put_role_policy)
            .sequence()
            .error(|| PutRolePolicyError::NoSuchEntityException(NoSuchEntityException::builder().build()))
            .output(|| iam::operation::put_role_policy::PutRolePolicyOutput::builder().build())
            .build();
        let change = Change {
            address: Address::new(ResourceKind::IamRolePolicy, "codebuild"),
            action: Action::Create,
            before: None,
            after: Some(object(json!({ "role": "rocm-bake-codebuild", "policy_name": "p", "document": {} }))),
            depends_on: vec![],
        };
        reconciler(&[&put]).apply(&change, &Silent).await.unwrap();
        assert_eq!(put.num_calls(), 2);
    }
}
