//! `ecr_repository.<name>`: a repository's settings, tags and (never declared) policy. Every
//! fact about one of its fields is stated here: its row in [`FIELDS`] (made in place or only at
//! create, the CloudTrail events that set it, the provider's argument), its place in the spec,
//! how ECR's answer gives it, how create and the setters write it, and how the Terraform view
//! shows it. desired.toml's `[ecr]` section (section.rs) is the only other file that names one.
//!
//! | reconcile | provider resource | arguments |
//! |---|---|---|
//! | `ecr_repository.<name>` | `aws_ecr_repository.repository["<name>"]` | `name`, `image_tag_mutability`, `image_scanning_configuration[0].scan_on_push`, `encryption_configuration[0].{encryption_type,kms_key}` (replaces), `tags`, `tags_all` |
//! | its `repository_policy` | `aws_ecr_repository_policy.repository["<name>"]` (only while one is set) | `repository`, `policy` (JSON string) |

use std::collections::BTreeMap;

use aws_sdk_ecr as ecr;
use reconcile_aws::{failed, gone_if, has_code, visible_tags};
use reconcile_core::fields::{Field, Fields};
use reconcile_core::generate::Found;
use reconcile_core::json::tag_changes;
use reconcile_core::mark::MARK_KEY;
use reconcile_core::plan::{Change, DesiredResource, Observed};
use reconcile_core::terraform::{Provider, ProviderResource, policy_string, tags};
use reconcile_core::{Account, Address, Applied, Desired, ReconcileError};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::{EcrReconciler, NO_REPOSITORY_POLICY, REPOSITORY, REPOSITORY_NOT_FOUND, tag_list};

/// ECR's encryption when it is not told another: what a repository that says none has.
pub(crate) const AES256: &str = "AES256";

/// A repository's fields. Its encryption ECR sets only when it makes the repository; the
/// provider keeps both in one `encryption_configuration` block.
pub const FIELDS: Fields = Fields {
    kind: crate::REPOSITORY,
    fields: &[
        Field::in_place("image_tag_mutability").set_by(&["PutImageTagMutability"]),
        Field::in_place("scan_on_push").set_by(&["PutImageScanningConfiguration"]),
        Field::create_only("encryption_type").set_by(&["CreateRepository"]).in_terraform("encryption_configuration"),
        Field::create_only("kms_key").set_by(&["CreateRepository"]).in_terraform("encryption_configuration"),
        Field::in_place("tags").set_by(&["TagResource", "UntagResource"]),
        Field::in_place("repository_policy").set_by(&["SetRepositoryPolicy", "DeleteRepositoryPolicy"]),
    ],
};

/// `ecr_repository.<name>`: the settings and tags reconcile manages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RepositorySpec {
    pub image_tag_mutability: String,
    pub scan_on_push: bool,
    /// Set only when the repository is made: a difference is a replacement (its row in [`FIELDS`]).
    pub encryption_type: String,
    /// Compared only when desired.toml names a key; live, the key `KMS` encryption uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kms_key: Option<String>,
    pub tags: BTreeMap<String, String>,
    /// Not declared in desired.toml: none. The role reaches the repositories through its own
    /// policy; a repository policy could only grant someone else (S102 when outside the account).
    pub repository_policy: Option<Value>,
}

/// A live repository: its spec, and what AWS tells besides, shown but never compared. As listed
/// ([`EcrReconciler::live_repository`]), its tags and repository policy are not read yet (none).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RepositoryState {
    pub arn: String,
    /// How many images it holds and their bytes: read only for a repository `--prune` would
    /// delete, so the plan says what the delete destroys and apply can refuse it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub images: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_bytes: Option<u64>,
    #[serde(flatten)]
    pub spec: RepositorySpec,
}

impl RepositoryState {
    /// The listed repository, with the tags and repository policy read besides the listing.
    pub(crate) fn with(&self, tags: BTreeMap<String, String>, repository_policy: Option<Value>) -> RepositoryState {
        RepositoryState { spec: RepositorySpec { tags, repository_policy, ..self.spec.clone() }, ..self.clone() }
    }
}

impl RepositorySpec {
    /// What desired.toml asks of `repository`, with this deployment's mark among its tags.
    pub(crate) fn declared(repository: &crate::EcrRepository, desired: &Desired) -> RepositorySpec {
        RepositorySpec {
            image_tag_mutability: repository.image_tag_mutability.as_str().to_owned(),
            scan_on_push: repository.scan_on_push,
            encryption_type: repository.encryption_type.as_str().to_owned(),
            kms_key: repository.kms_key.clone(),
            tags: desired.marked(&repository.tags),
            repository_policy: None,
        }
    }
}

/// The live repository policy among a repository's observed fields (null when it has none).
pub(crate) fn policy(fields: &Map<String, Value>) -> &Value {
    fields.get("repository_policy").unwrap_or(&Value::Null)
}

/// How the provider's resources of a repository refer to it.
pub(crate) const TERRAFORM_ADDRESS: &[(&str, &str, &str)] = &[("repository", "aws_ecr_repository.repository", "name")];

/// What `import --generate` reads of a repository desired.toml does not declare
/// (`EcrReconciler::inventory_of`, generate.rs): its record as the plan reads it (the mark taken
/// out of its tags; its repository policy not read), and its canonical lifecycle policy (null
/// when it has none). The inventory's `Found::live` is this record's map, and generate.rs reads
/// it back as this type: one record, no key named twice.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct FoundRepository {
    #[serde(flatten)]
    pub spec: RepositorySpec,
    pub lifecycle_policy: Value,
}

impl EcrReconciler {
    /// A listed repository as this reconciler keeps it; the ARN made from its name when ECR
    /// leaves it out.
    pub(crate) fn live_repository(&self, repository: &ecr::types::Repository) -> Option<(String, RepositoryState)> {
        let name = repository.repository_name()?;
        let arn = repository.repository_arn().map_or_else(|| self.repository_arn(name), str::to_owned);
        let spec = RepositorySpec {
            image_tag_mutability: repository.image_tag_mutability().map_or("MUTABLE", |m| m.as_str()).to_owned(),
            scan_on_push: repository.image_scanning_configuration().is_some_and(|c| c.scan_on_push()),
            // AWS's default when ECR leaves it out.
            encryption_type: repository
                .encryption_configuration()
                .map_or(AES256, |c| c.encryption_type().as_str())
                .to_owned(),
            kms_key: repository.encryption_configuration().and_then(|c| c.kms_key()).map(str::to_owned),
            tags: BTreeMap::new(),
            repository_policy: None,
        };
        Some((name.to_owned(), RepositoryState { arn, images: None, image_bytes: None, spec }))
    }

    pub(crate) async fn create_repository(&self, change: &Change) -> Result<Applied, ReconcileError> {
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
            .encryption_configuration(encryption(&address.name, &after)?)
            .set_tags((!tags.is_empty()).then_some(tags))
            .send()
            .await;
        match response {
            Ok(_) => Ok(Applied::Done),
            // Made since the plan was read: by the nightly's `--ensure-ecr`, or by this
            // deployment's apply killed after its create, as this deployment's (converged), or by
            // someone else (refused: taking it over is an import's, reviewed).
            Err(error) if has_code(&error, &["RepositoryAlreadyExistsException"]) => {
                let current_tags = self.tags(address, &self.repository_arn(&address.name)).await?;
                let operation = "create repository";
                reconcile_core::ownership::made_meanwhile(
                    &current_tags,
                    &after.tags,
                    address,
                    operation,
                    &address.name,
                )?;
                self.converge_repository(change, None, &current_tags).await?;
                Ok(Applied::Adopted)
            }
            Err(error) => Err(failed(Some(address), "create repository")(error)),
        }
    }

    /// Makes a repository's settings and tags match the change's desired fields, touching only
    /// what differs from `before` (everything, when `before` is unknown).
    pub(crate) async fn converge_repository(
        &self,
        change: &Change,
        before: Option<&RepositorySpec>,
        current_tags: &BTreeMap<String, String>,
    ) -> Result<(), ReconcileError> {
        let address = &change.address;
        let after: RepositorySpec = reconcile_core::spec::after(change)?;
        let name = &address.name;
        let arn = self.repository_arn(name);
        // The mark first, alone: what apply writes next is granted by it (an import's writes
        // are the apply role's once the repository is ours), and a build running meanwhile
        // reaches the repository through it.
        if let Some(mark) = after.tags.get(reconcile_core::ownership::MARK_KEY)
            && current_tags.get(reconcile_core::ownership::MARK_KEY) != Some(mark)
        {
            let tag = ecr::types::Tag::builder().key(reconcile_core::ownership::MARK_KEY).value(mark).build();
            self.client
                .tag_resource()
                .resource_arn(&arn)
                .tags(tag.map_err(ReconcileError::of(address, "build the mark"))?)
                .send()
                .await
                .map_err(failed(Some(address), "mark the repository as this deployment's"))?;
        }
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
            self.set_repository_policy(address, after.repository_policy.as_ref()).await?;
        }
        // The mark, set above, is among the tags it has now.
        let mut current_tags = current_tags.clone();
        current_tags
            .extend(after.tags.get_key_value(reconcile_core::ownership::MARK_KEY).map(|(k, v)| (k.clone(), v.clone())));
        self.retag(address, &arn, &current_tags, &after.tags).await
    }

    /// Sets the repository's policy, or deletes it when it should have none.
    async fn set_repository_policy(
        &self,
        address: &Address,
        policy: Option<&serde_json::Value>,
    ) -> Result<(), ReconcileError> {
        let name = &address.name;
        match policy {
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
                gone_if(response, &NO_REPOSITORY_POLICY).map_err(failed(Some(address), "delete repository policy"))?;
            }
        }
        Ok(())
    }

    pub(crate) async fn delete_repository(&self, change: &Change) -> Result<Applied, ReconcileError> {
        let address = &change.address;
        let force = self.force_delete_images();
        let response = self.client.delete_repository().repository_name(&address.name).force(force).send().await;
        gone_if(response, &[REPOSITORY_NOT_FOUND]).map_err(failed(Some(address), "delete repository"))?;
        Ok(Applied::Done)
    }

    pub(crate) async fn tags(&self, address: &Address, arn: &str) -> Result<BTreeMap<String, String>, ReconcileError> {
        let output = self
            .parallelism
            .send(|| self.client.list_tags_for_resource().resource_arn(arn).send())
            .await
            .map_err(failed(Some(address), "read repository tags"))?;
        Ok(visible_tags(output.tags().iter().map(|tag| (tag.key(), tag.value()))))
    }

    /// Takes the repository's tags from `current` to `wanted`: what is not wanted removed, what
    /// differs set.
    pub(crate) async fn retag(
        &self,
        address: &Address,
        arn: &str,
        current: &BTreeMap<String, String>,
        wanted: &BTreeMap<String, String>,
    ) -> Result<(), ReconcileError> {
        let (remove, set) = tag_changes(current, wanted);
        if !remove.is_empty() {
            self.client
                .untag_resource()
                .resource_arn(arn)
                .set_tag_keys(Some(remove))
                .send()
                .await
                .map_err(failed(Some(address), "remove repository tags"))?;
        }
        if !set.is_empty() {
            self.client
                .tag_resource()
                .resource_arn(arn)
                .set_tags(Some(tag_list(&set)))
                .send()
                .await
                .map_err(failed(Some(address), "set repository tags"))?;
        }
        Ok(())
    }
}

/// The encryption a repository is made with, as desired.
fn encryption(name: &str, spec: &RepositorySpec) -> Result<ecr::types::EncryptionConfiguration, ReconcileError> {
    ecr::types::EncryptionConfiguration::builder()
        .encryption_type(spec.encryption_type.as_str().into())
        .set_kms_key(spec.kms_key.clone())
        .build()
        .map_err(|error| {
            let address = Address::new(crate::REPOSITORY, name);
            ReconcileError::new(Some(&address), "create repository", error.to_string())
        })
}
pub(crate) fn terraform(account: &Account, name: &str, fields: &Map<String, Value>) -> Vec<ProviderResource> {
    let (tags, tags_all) = tags(fields);
    let mut resources = vec![
        ProviderResource::new(
            Provider::Aws,
            "aws_ecr_repository",
            "repository",
            json!({
                "name": name,
                "image_tag_mutability": fields.get("image_tag_mutability"),
                "image_scanning_configuration": [{ "scan_on_push": fields.get("scan_on_push") }],
                "encryption_configuration": [{
                    "encryption_type": fields.get("encryption_type"),
                    "kms_key": fields.get("kms_key").cloned().unwrap_or(json!("")),
                }],
                "force_delete": false,
                "tags": tags,
                "tags_all": tags_all,
            }),
        )
        .forcing_new(FIELDS.forcing_new(&["name"]))
        .computing(json!({
            "arn": format!("arn:{}:ecr:{}:{}:repository/{name}", account.partition, account.region, account.id),
            "id": name,
            "registry_id": account.id,
            "repository_url": format!("{}/{name}", crate::registry(account)),
        })),
    ];
    if let Some(policy) = fields.get("repository_policy").filter(|p| !p.is_null()) {
        resources.push(
            ProviderResource::new(
                Provider::Aws,
                "aws_ecr_repository_policy",
                "repository",
                json!({ "repository": name, "policy": policy_string(policy) }),
            )
            .referring(TERRAFORM_ADDRESS)
            .computing(json!({ "id": name, "registry_id": account.id })),
        );
    }
    resources
}

impl EcrReconciler {
    /// The repositories `desired` does not declare, each with what `import --generate` reads: its
    /// settings, visible tags (the mark taken out, as whose it is) and canonical lifecycle policy
    /// (null when it has none). Reads the listing, then each one's tags and policy in one wave;
    /// in a run that only reads, the listing and the policies its plan read already are not read
    /// again.
    pub(crate) async fn inventory_of(&self, desired: &[&DesiredResource]) -> Result<Vec<Found>, ReconcileError> {
        let undeclared = self.undeclared(desired).await?;
        let reads: Vec<_> = undeclared
            .iter()
            .map(|(name, repository)| async move {
                let address = Address::new(REPOSITORY, name);
                let policy_address = Address::new(crate::LIFECYCLE_POLICY, name);
                let (tags, policy) = futures::join!(
                    self.tags(&address, &repository.arn),
                    self.observe_lifecycle_policy(&policy_address, name)
                );
                (name, repository, tags, policy)
            })
            .collect();
        let mut found = Vec::new();
        for (name, repository, tags, policy) in futures::future::join_all(reads).await {
            let mut tags = tags?;
            let deployment = tags.remove(MARK_KEY);
            let policy = match policy? {
                Observed::Present(fields) => fields.get("policy").cloned().unwrap_or(Value::Null),
                Observed::Absent => Value::Null,
            };
            let record = FoundRepository { spec: repository.with(tags, None).spec, lifecycle_policy: policy };
            found.push(Found {
                kind: REPOSITORY,
                name: name.clone(),
                deployment,
                by_default: true,
                needs: Vec::new(),
                live: reconcile_core::spec::attributes(&record),
            });
        }
        Ok(found)
    }
}
