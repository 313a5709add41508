//! The ECR reconciler: `ecr_repository.<name>` (tag mutability, scan on push, tags) and
//! `ecr_lifecycle_policy.<name>` (the policy document, compared semantically).
//!
//! It creates missing repositories, corrects their settings and tags, and puts lifecycle
//! policies. It never deletes a repository: `observe` only looks at declared names, so no
//! delete of one can ever be planned.

mod lifecycle;
mod spec;

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use aws_sdk_ecr as ecr;
use reconcile_aws::{
    BATCH_SIZE, OBSERVE_CONCURRENCY, absent_if, after_create, failed, gone_if, has_code, visible_tags,
};
use reconcile_core::json::tag_changes;
use reconcile_core::plan::{Action, Change, DesiredResource, Finding, Observed, Severity};
use reconcile_core::reconciler::Observations;
use reconcile_core::{Account, Address, Applied, Progress, ReconcileError, Reconciler, ResourceKind};

pub use lifecycle::{canonical_policy, canonical_policy_text};
pub use spec::desired;
use spec::{LifecyclePolicySpec, RepositorySpec, RepositoryState};

/// Finding code: a repository desired.toml does not declare. Stable; never reused.
pub const UNDECLARED_REPOSITORY: &str = "D101";
/// Finding code: a repository desired.toml does not declare, with no lifecycle policy at all,
/// so untagged images accumulate without bound. Stable; never reused.
pub const UNDECLARED_REPOSITORY_WITHOUT_POLICY: &str = "D102";

/// Finding code: a repository policy grants access outside the account. Stable; never reused.
pub const FOREIGN_REPOSITORY_ACCESS: &str = "S102";

/// ECR's answers for "there is no such repository" and "it has no lifecycle policy".
const REPOSITORY_NOT_FOUND: &str = "RepositoryNotFoundException";
const NO_POLICY: [&str; 2] = ["LifecyclePolicyNotFoundException", REPOSITORY_NOT_FOUND];
const NO_REPOSITORY_POLICY: [&str; 2] = ["RepositoryPolicyNotFoundException", REPOSITORY_NOT_FOUND];

pub struct EcrReconciler {
    client: ecr::Client,
    account: Account,
}

impl EcrReconciler {
    pub fn new(client: ecr::Client, account: Account) -> EcrReconciler {
        EcrReconciler { client, account }
    }

    fn repository_arn(&self, name: &str) -> String {
        reconcile_aws::arn(&self.account, "ecr", &format!("repository/{name}"))
    }
}

/// What one repository looks like in AWS, as far as this reconciler cares.
struct LiveRepository {
    arn: String,
    image_tag_mutability: String,
    scan_on_push: bool,
    encryption_type: Option<String>,
}

#[async_trait]
impl Reconciler for EcrReconciler {
    fn kinds(&self) -> &'static [ResourceKind] {
        &[ResourceKind::EcrRepository, ResourceKind::EcrLifecyclePolicy]
    }

    async fn observe(&self, desired: &[&DesiredResource]) -> Result<Observations, ReconcileError> {
        let names: BTreeSet<&str> = desired.iter().map(|r| r.remote_name.as_str()).collect();
        let live = self.describe_repositories(&names).await?;

        // One read per (resource, repository that exists); a missing repository needs no more.
        // Collected first: a lazy iterator here would put a closure over borrows into the
        // future, which the compiler cannot prove `Send` for every lifetime.
        let reads: Vec<_> = desired
            .iter()
            .filter_map(|resource| live.get(&resource.remote_name).map(|repo| self.observe_one(resource, repo)))
            .collect();
        let observed = reconcile_core::engine::bounded(OBSERVE_CONCURRENCY, reads).await;

        let mut result: BTreeMap<Address, Observed> =
            desired.iter().map(|resource| (resource.address.clone(), Observed::Absent)).collect();
        let mut findings = Vec::new();
        for entry in observed {
            let (address, observed) = entry?;
            if let (ResourceKind::EcrRepository, Observed::Present(fields)) = (address.kind, &observed) {
                let policy = fields.get("repository_policy").unwrap_or(&serde_json::Value::Null);
                findings.extend(self.foreign_access(&address, policy));
            }
            result.insert(address, observed);
        }
        Ok(Observations { resources: result, findings })
    }

    /// Every repository in the account that desired.toml does not declare; loudly those without
    /// a lifecycle policy (two such cache repositories once held 347 GB before anyone noticed).
    async fn survey(&self, desired: &[&DesiredResource]) -> Result<Vec<Finding>, ReconcileError> {
        let declared: BTreeSet<&str> = desired.iter().map(|r| r.remote_name.as_str()).collect();
        let undeclared: Vec<String> = self
            .list_all_repositories()
            .await?
            .iter()
            .filter_map(|r| r.repository_name())
            .filter(|name| !declared.contains(name))
            .map(str::to_owned)
            .collect();
        let reads: Vec<_> = undeclared
            .iter()
            .map(|name| async move {
                let address = Address::new(ResourceKind::EcrLifecyclePolicy, name);
                (name, self.observe_lifecycle_policy(&address, name).await)
            })
            .collect();
        let mut findings = Vec::new();
        for (name, policy) in reconcile_core::engine::bounded(OBSERVE_CONCURRENCY, reads).await {
            let address = Address::new(ResourceKind::EcrRepository, name);
            let finding = match policy? {
                Observed::Absent => Finding {
                    code: UNDECLARED_REPOSITORY_WITHOUT_POLICY.to_owned(),
                    severity: Severity::Error,
                    address: Some(address),
                    message: format!(
                        "repository `{name}` is not in desired.toml and has NO lifecycle policy: its untagged \
                         images accumulate without bound; declare it, or delete it"
                    ),
                },
                Observed::Present(_) => Finding {
                    code: UNDECLARED_REPOSITORY.to_owned(),
                    severity: Severity::Warning,
                    address: Some(address),
                    message: format!("repository `{name}` is not in desired.toml; declare it, or delete it"),
                },
            };
            findings.push(finding);
        }
        findings.sort_by(|a, b| (b.severity, &a.address).cmp(&(a.severity, &b.address)));
        Ok(findings)
    }

    async fn apply(&self, change: &Change, _progress: &dyn Progress) -> Result<Applied, ReconcileError> {
        let address = &change.address;
        match (address.kind, change.action) {
            (ResourceKind::EcrRepository, Action::Create) => self.create_repository(change).await,
            (ResourceKind::EcrRepository, Action::Update) => {
                let before = reconcile_core::spec::before::<RepositorySpec>(change)?;
                let current_tags = before.as_ref().map(|b| b.tags.clone()).unwrap_or_default();
                self.converge_repository(change, before.as_ref(), &current_tags).await?;
                Ok(Applied::Done)
            }
            (ResourceKind::EcrRepository, Action::Delete | Action::Replace) => {
                Err(ReconcileError::never(address, "delete repository"))
            }
            (ResourceKind::EcrLifecyclePolicy, Action::Create | Action::Update) => {
                self.put_lifecycle_policy(change).await
            }
            (ResourceKind::EcrLifecyclePolicy, Action::Delete) => self.delete_lifecycle_policy(address).await,
            // This reconciler's diff never plans one: a policy changes in place.
            (ResourceKind::EcrLifecyclePolicy, Action::Replace) => Err(ReconcileError::never(address, "replace")),
            (
                ResourceKind::IamRole
                | ResourceKind::IamRolePolicy
                | ResourceKind::S3Bucket
                | ResourceKind::S3BucketLifecycle
                | ResourceKind::CodebuildProject
                | ResourceKind::CodebuildWebhook,
                _,
            ) => Err(ReconcileError::foreign(address)),
        }
    }
}

impl EcrReconciler {
    /// Describes the named repositories in batches; the ones that do not exist are simply
    /// missing from the result.
    async fn describe_repositories(
        &self,
        names: &BTreeSet<&str>,
    ) -> Result<BTreeMap<String, LiveRepository>, ReconcileError> {
        let mut live = BTreeMap::new();
        let names: Vec<&str> = names.iter().copied().collect();
        for batch in names.chunks(BATCH_SIZE) {
            let response = self
                .client
                .describe_repositories()
                .set_repository_names(Some(batch.iter().map(|n| n.to_string()).collect()))
                .send()
                .await;
            let repositories = match absent_if(response, &[REPOSITORY_NOT_FOUND]) {
                Ok(Some(output)) => output.repositories.unwrap_or_default(),
                // One missing name fails the whole call, and the error does not say which
                // others exist: list the account's repositories instead and pick ours out.
                Ok(None) => {
                    let wanted: BTreeSet<&str> = batch.iter().copied().collect();
                    self.list_all_repositories()
                        .await?
                        .into_iter()
                        .filter(|r| r.repository_name().is_some_and(|n| wanted.contains(n)))
                        .collect()
                }
                Err(error) => return Err(failed(None, "describe ECR repositories")(error)),
            };
            for repository in repositories {
                let Some(name) = repository.repository_name() else {
                    continue;
                };
                live.insert(
                    name.to_owned(),
                    LiveRepository {
                        arn: repository.repository_arn().map_or_else(|| self.repository_arn(name), str::to_owned),
                        image_tag_mutability: repository
                            .image_tag_mutability()
                            .map_or("MUTABLE", |m| m.as_str())
                            .to_owned(),
                        scan_on_push: repository.image_scanning_configuration().is_some_and(|c| c.scan_on_push()),
                        encryption_type: repository
                            .encryption_configuration()
                            .map(|c| c.encryption_type().as_str().to_owned()),
                    },
                );
            }
        }
        Ok(live)
    }

    async fn list_all_repositories(&self) -> Result<Vec<ecr::types::Repository>, ReconcileError> {
        let mut pages = self.client.describe_repositories().into_paginator().send();
        let mut repositories = Vec::new();
        while let Some(page) = pages.next().await {
            let page = page.map_err(failed(None, "list ECR repositories"))?;
            repositories.extend(page.repositories.unwrap_or_default());
        }
        Ok(repositories)
    }

    async fn observe_one(
        &self,
        resource: &DesiredResource,
        repository: &LiveRepository,
    ) -> Result<(Address, Observed), ReconcileError> {
        let address = &resource.address;
        let name = &resource.remote_name;
        let observed = match address.kind {
            ResourceKind::EcrLifecyclePolicy => self.observe_lifecycle_policy(address, name).await?,
            _ => {
                let tags = self.tags(address, &repository.arn).await?;
                let policy = self.client.get_repository_policy().repository_name(name).send().await;
                let repository_policy = absent_if(policy, &NO_REPOSITORY_POLICY)
                    .map_err(failed(Some(address), "read repository policy"))?
                    .and_then(|output| output.policy_text().map(reconcile_core::json::parse_document));
                Observed::Present(reconcile_core::spec::attributes(&RepositoryState {
                    arn: repository.arn.clone(),
                    encryption_type: repository.encryption_type.clone(),
                    spec: RepositorySpec {
                        image_tag_mutability: repository.image_tag_mutability.clone(),
                        scan_on_push: repository.scan_on_push,
                        tags,
                        repository_policy,
                    },
                }))
            }
        };
        Ok((address.clone(), observed))
    }

    async fn tags(&self, address: &Address, arn: &str) -> Result<BTreeMap<String, String>, ReconcileError> {
        let output = self
            .client
            .list_tags_for_resource()
            .resource_arn(arn)
            .send()
            .await
            .map_err(failed(Some(address), "read repository tags"))?;
        Ok(visible_tags(output.tags().iter().map(|tag| (tag.key(), tag.value()))))
    }

    async fn observe_lifecycle_policy(&self, address: &Address, name: &str) -> Result<Observed, ReconcileError> {
        let response = self.client.get_lifecycle_policy().repository_name(name).send().await;
        match absent_if(response, &NO_POLICY).map_err(failed(Some(address), "read lifecycle policy"))? {
            Some(output) => {
                let text = output.lifecycle_policy_text().unwrap_or_default();
                let spec = LifecyclePolicySpec { policy: canonical_policy_text(text) };
                Ok(Observed::Present(reconcile_core::spec::attributes(&spec)))
            }
            None => Ok(Observed::Absent),
        }
    }

    async fn create_repository(&self, change: &Change) -> Result<Applied, ReconcileError> {
        let address = &change.address;
        let after: RepositorySpec = reconcile_core::spec::after(change)?;
        let tags = tag_list(&after.tags);
        let response = self
            .client
            .create_repository()
            .repository_name(&address.name)
            .image_tag_mutability(after.image_tag_mutability.as_str().into())
            .image_scanning_configuration(
                ecr::types::ImageScanningConfiguration::builder().scan_on_push(after.scan_on_push).build(),
            )
            .set_tags((!tags.is_empty()).then_some(tags))
            .send()
            .await;
        match response {
            Ok(_) => Ok(Applied::Done),
            // Made since the plan was read (a nightly's --ensure-ecr, say): converge it instead.
            Err(error) if has_code(&error, &["RepositoryAlreadyExistsException"]) => {
                let current_tags = self.tags(address, &self.repository_arn(&address.name)).await?;
                self.converge_repository(change, None, &current_tags).await?;
                Ok(Applied::Adopted)
            }
            Err(error) => Err(failed(Some(address), "create repository")(error)),
        }
    }

    /// Makes a repository's settings and tags match the change's desired fields, touching only
    /// what differs from `before` (everything, when `before` is unknown).
    async fn converge_repository(
        &self,
        change: &Change,
        before: Option<&RepositorySpec>,
        current_tags: &BTreeMap<String, String>,
    ) -> Result<(), ReconcileError> {
        let address = &change.address;
        let after: RepositorySpec = reconcile_core::spec::after(change)?;
        let name = &address.name;
        if before.is_none_or(|b| b.image_tag_mutability != after.image_tag_mutability) {
            self.client
                .put_image_tag_mutability()
                .repository_name(name)
                .image_tag_mutability(after.image_tag_mutability.as_str().into())
                .send()
                .await
                .map_err(failed(Some(address), "set image tag mutability"))?;
        }
        if before.is_none_or(|b| b.scan_on_push != after.scan_on_push) {
            self.client
                .put_image_scanning_configuration()
                .repository_name(name)
                .image_scanning_configuration(
                    ecr::types::ImageScanningConfiguration::builder().scan_on_push(after.scan_on_push).build(),
                )
                .send()
                .await
                .map_err(failed(Some(address), "set scan on push"))?;
        }
        if before.is_none_or(|b| b.repository_policy != after.repository_policy) {
            match &after.repository_policy {
                Some(policy) => {
                    self.client
                        .set_repository_policy()
                        .repository_name(name)
                        .policy_text(reconcile_core::json::to_compact(policy))
                        .send()
                        .await
                        .map_err(failed(Some(address), "set repository policy"))?;
                }
                None => {
                    let response = self.client.delete_repository_policy().repository_name(name).send().await;
                    gone_if(response, &NO_REPOSITORY_POLICY)
                        .map_err(failed(Some(address), "delete repository policy"))?;
                }
            }
        }
        let arn = self.repository_arn(name);
        let (remove, set) = tag_changes(current_tags, &after.tags);
        if !remove.is_empty() {
            self.client
                .untag_resource()
                .resource_arn(&arn)
                .set_tag_keys(Some(remove))
                .send()
                .await
                .map_err(failed(Some(address), "remove repository tags"))?;
        }
        if !set.is_empty() {
            self.client
                .tag_resource()
                .resource_arn(&arn)
                .set_tags(Some(tag_list(&set)))
                .send()
                .await
                .map_err(failed(Some(address), "set repository tags"))?;
        }
        Ok(())
    }

    async fn put_lifecycle_policy(&self, change: &Change) -> Result<Applied, ReconcileError> {
        let address = &change.address;
        let after: LifecyclePolicySpec = reconcile_core::spec::after(change)?;
        let text = reconcile_core::json::to_compact(&after.policy);
        // Right after the repository is created, ECR may not show it everywhere yet.
        let request =
            || self.client.put_lifecycle_policy().repository_name(&address.name).lifecycle_policy_text(&text).send();
        after_create(request, &[REPOSITORY_NOT_FOUND]).await.map_err(failed(Some(address), "put lifecycle policy"))?;
        Ok(Applied::Done)
    }

    async fn delete_lifecycle_policy(&self, address: &Address) -> Result<Applied, ReconcileError> {
        let response = self.client.delete_lifecycle_policy().repository_name(&address.name).send().await;
        gone_if(response, &NO_POLICY).map_err(failed(Some(address), "delete lifecycle policy"))?;
        Ok(Applied::Done)
    }
}

impl EcrReconciler {
    /// S102 when the repository's live policy lets anyone outside the account in.
    fn foreign_access(&self, address: &Address, policy: &serde_json::Value) -> Option<Finding> {
        let foreign = reconcile_core::policy::foreign_principals(policy, &self.account.id);
        (!foreign.is_empty()).then(|| Finding {
            code: FOREIGN_REPOSITORY_ACCESS.to_owned(),
            severity: Severity::Error,
            address: Some(address.clone()),
            message: format!(
                "the repository policy grants access outside account {} to {}: anyone it names can pull (or push) \
                 the nightly's images; apply removes the policy",
                self.account.id,
                foreign.join(", ")
            ),
        })
    }
}

/// ECR's tag type. A tag's key and value are both required by the builder, and both are set
/// here, so a build error cannot happen; were it to, it is an error, never a dropped tag.
fn tag_list(tags: &BTreeMap<String, String>) -> Vec<ecr::types::Tag> {
    tags.iter()
        .map(|(key, value)| ecr::types::Tag::builder().key(key).value(value).build())
        .collect::<Result<_, _>>()
        .expect("key and value are set")
}

#[cfg(test)]
mod tests {
    //! Error paths the emulator cannot produce, against a mocked client.

    use super::*;
    use aws_sdk_ecr::operation::delete_lifecycle_policy::DeleteLifecyclePolicyError;
    use aws_sdk_ecr::operation::describe_repositories::DescribeRepositoriesOutput;
    use aws_sdk_ecr::operation::get_lifecycle_policy::{GetLifecyclePolicyError, GetLifecyclePolicyOutput};
    use aws_sdk_ecr::operation::list_tags_for_resource::ListTagsForResourceOutput;
    use aws_sdk_ecr::operation::put_lifecycle_policy::PutLifecyclePolicyError;
    use aws_sdk_ecr::types::error::{LifecyclePolicyNotFoundException, ServerException};
    use aws_smithy_mocks::{Rule, RuleMode, mock, mock_client};
    use aws_smithy_types::error::ErrorMetadata;
    use reconcile_core::json::object;
    use reconcile_core::reconciler::Silent;
    use serde_json::{Map, json};

    /// What a real ECR error carries: its code.
    fn code(code: &str) -> ErrorMetadata {
        ErrorMetadata::builder().code(code).build()
    }

    fn no_policy() -> LifecyclePolicyNotFoundException {
        LifecyclePolicyNotFoundException::builder().meta(code("LifecyclePolicyNotFoundException")).build()
    }

    fn reconciler(rules: &[&Rule]) -> EcrReconciler {
        let client = mock_client!(aws_sdk_ecr, RuleMode::MatchAny, rules);
        EcrReconciler::new(client, Account::new("123456789012", "us-east-1"))
    }

    fn one_repository() -> Rule {
        mock!(ecr::Client::describe_repositories).then_output(|| {
            DescribeRepositoriesOutput::builder()
                .repositories(
                    ecr::types::Repository::builder()
                        .repository_name("pytorch")
                        .repository_arn("arn:aws:ecr:us-east-1:123456789012:repository/pytorch")
                        .build(),
                )
                .build()
        })
    }

    fn no_tags() -> Rule {
        mock!(ecr::Client::list_tags_for_resource).then_output(|| ListTagsForResourceOutput::builder().build())
    }

    fn policy_address() -> Address {
        Address::new(ResourceKind::EcrLifecyclePolicy, "pytorch")
    }

    /// What `observe` is given: the desired resources (only their addresses matter to ECR).
    fn wanted(addresses: &[Address]) -> Vec<DesiredResource> {
        addresses.iter().map(|address| DesiredResource::new(address.clone(), &address.name, Map::new())).collect()
    }

    async fn observe(reconciler: &EcrReconciler, addresses: &[Address]) -> Result<Observations, ReconcileError> {
        let wanted = wanted(addresses);
        reconciler.observe(&wanted.iter().collect::<Vec<_>>()).await
    }

    #[tokio::test]
    async fn an_observe_failure_names_the_resource_the_operation_and_the_cause() {
        let describe = one_repository();
        let tags = no_tags();
        let policy = mock!(ecr::Client::get_lifecycle_policy).then_error(|| {
            GetLifecyclePolicyError::ServerException(ServerException::builder().message("the sky fell").build())
        });
        let repository_policy = mock!(ecr::Client::get_repository_policy).then_error(|| {
            aws_sdk_ecr::operation::get_repository_policy::GetRepositoryPolicyError::RepositoryPolicyNotFoundException(
                aws_sdk_ecr::types::error::RepositoryPolicyNotFoundException::builder()
                    .meta(code("RepositoryPolicyNotFoundException"))
                    .build(),
            )
        });
        let reconciler = reconciler(&[&describe, &tags, &policy, &repository_policy]);
        let addresses = [Address::new(ResourceKind::EcrRepository, "pytorch"), policy_address()];
        let error = observe(&reconciler, &addresses).await.unwrap_err();
        let message = error.to_string();
        assert!(message.starts_with("ecr_lifecycle_policy.pytorch: failed to read lifecycle policy: "), "{message}");
        assert!(message.contains("the sky fell"), "{message}");
    }

    #[tokio::test]
    async fn a_repository_without_a_policy_observes_as_absent() {
        let describe = one_repository();
        let policy = mock!(ecr::Client::get_lifecycle_policy)
            .then_error(|| GetLifecyclePolicyError::LifecyclePolicyNotFoundException(no_policy()));
        let reconciler = reconciler(&[&describe, &policy]);
        let observed = observe(&reconciler, &[policy_address()]).await.unwrap();
        assert_eq!(observed.resources[&policy_address()], Observed::Absent);
        assert_eq!(describe.num_calls(), 1);
        assert_eq!(policy.num_calls(), 1);
    }

    #[tokio::test]
    async fn a_present_policy_observes_in_canonical_form() {
        let describe = one_repository();
        let policy = mock!(ecr::Client::get_lifecycle_policy).then_output(|| {
            GetLifecyclePolicyOutput::builder()
                .lifecycle_policy_text(r#"{ "rules": [ { "selection": {"countNumber": 3, "tagStatus": "untagged", "countType": "imageCountMoreThan"}, "rulePriority": 1, "action": {"type": "expire"} } ] }"#)
                .build()
        });
        let reconciler = reconciler(&[&describe, &policy]);
        let observed = observe(&reconciler, &[policy_address()]).await.unwrap();
        let Observed::Present(fields) = &observed.resources[&policy_address()] else { panic!("present") };
        assert_eq!(
            reconcile_core::json::to_compact(&fields["policy"]),
            r#"{"rules":[{"action":{"type":"expire"},"rulePriority":1,"selection":{"countNumber":3,"countType":"imageCountMoreThan","tagStatus":"untagged"}}]}"#
        );
    }

    #[tokio::test]
    async fn deleting_a_policy_that_is_already_gone_succeeds() {
        let delete = mock!(ecr::Client::delete_lifecycle_policy)
            .then_error(|| DeleteLifecyclePolicyError::LifecyclePolicyNotFoundException(no_policy()));
        let reconciler = reconciler(&[&delete]);
        let change = Change {
            address: policy_address(),
            action: Action::Delete,
            before: Some(Map::new()),
            after: None,
            depends_on: vec![],
        };
        reconciler.apply(&change, &Silent).await.unwrap();
        assert_eq!(delete.num_calls(), 1);
    }

    #[tokio::test]
    async fn a_repository_delete_is_refused_without_any_call() {
        let describe = one_repository();
        let reconciler = reconciler(&[&describe]);
        let change = Change {
            address: Address::new(ResourceKind::EcrRepository, "pytorch"),
            action: Action::Delete,
            before: Some(Map::new()),
            after: None,
            depends_on: vec![],
        };
        let error = reconciler.apply(&change, &Silent).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "ecr_repository.pytorch: failed to delete repository: reconcile never does this to `ecr_repository` \
             resources; do it by hand if it must be done"
        );
        assert_eq!(describe.num_calls(), 0);
    }

    #[tokio::test]
    async fn a_policy_put_right_after_creation_waits_for_the_repository_to_show() {
        use aws_sdk_ecr::types::error::RepositoryNotFoundException;
        let put = mock!(ecr::Client::put_lifecycle_policy)
            .sequence()
            .error(|| {
                PutLifecyclePolicyError::RepositoryNotFoundException(
                    RepositoryNotFoundException::builder().meta(code(REPOSITORY_NOT_FOUND)).build(),
                )
            })
            .output(|| aws_sdk_ecr::operation::put_lifecycle_policy::PutLifecyclePolicyOutput::builder().build())
            .build();
        let change = Change {
            address: policy_address(),
            action: Action::Create,
            before: None,
            after: Some(object(json!({ "policy": {"rules": []} }))),
            depends_on: vec![],
        };
        reconciler(&[&put]).apply(&change, &Silent).await.unwrap();
        assert_eq!(put.num_calls(), 2);
    }

    #[tokio::test]
    async fn a_change_missing_a_field_fails_naming_it_and_calls_nothing() {
        let create = mock!(ecr::Client::create_repository)
            .then_output(|| ecr::operation::create_repository::CreateRepositoryOutput::builder().build());
        let put = mock!(ecr::Client::put_lifecycle_policy)
            .then_output(|| aws_sdk_ecr::operation::put_lifecycle_policy::PutLifecyclePolicyOutput::builder().build());
        let reconciler = reconciler(&[&create, &put]);
        let repository = Change {
            address: Address::new(ResourceKind::EcrRepository, "pytorch"),
            action: Action::Create,
            before: None,
            after: Some(object(json!({ "scan_on_push": true, "tags": {} }))),
            depends_on: vec![],
        };
        let error = reconciler.apply(&repository, &Silent).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "ecr_repository.pytorch: failed to read the change's desired fields: missing field `image_tag_mutability`"
        );
        let policy = Change { address: policy_address(), after: Some(Map::new()), ..repository };
        let error = reconciler.apply(&policy, &Silent).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "ecr_lifecycle_policy.pytorch: failed to read the change's desired fields: missing field `policy`"
        );
        assert_eq!((create.num_calls(), put.num_calls()), (0, 0));
    }
}
