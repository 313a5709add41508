//! `iam_oidc_provider.github`: GitHub Actions' identity provider, the account's one, shared by
//! every deployment in it. Its field table, spec, reads and writes and its Terraform mapping are
//! here.
//!
//! | reconcile | provider resource | arguments |
//! |---|---|---|
//! | `iam_oidc_provider.<key>` | `aws_iam_openid_connect_provider.github["<key>"]` | `url` (the host, as the provider's state holds it), `client_id_list`, `tags`, `tags_all` |

use std::collections::BTreeMap;

use reconcile_aws::{absent_if, failed, has_code, visible_tags};
use reconcile_core::fields::{Field, Fields};
use reconcile_core::plan::{Change, DesiredResource, Observed};
use reconcile_core::spec::attributes;
use reconcile_core::terraform::{Provider, ProviderResource, tags};
use reconcile_core::{Account, Address, Applied, Desired, ReconcileError};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::ci::provider_arn;
use crate::terraform::{arn, field, str_field};
use crate::{IamReconciler, NO_SUCH_ENTITY, retag, tag_list};

/// GitHub's identity provider's fields: its URL names it.
pub const FIELDS: Fields = Fields {
    kind: crate::OIDC_PROVIDER,
    fields: &[
        Field::identity("url"),
        Field::in_place("client_ids")
            .set_by(&["AddClientIDToOpenIDConnectProvider", "RemoveClientIDFromOpenIDConnectProvider"]),
        Field::in_place("tags").set_by(&["TagOpenIDConnectProvider", "UntagOpenIDConnectProvider"]),
    ],
};

/// `iam_oidc_provider.github`: GitHub Actions' identity provider. Its thumbprints are not
/// managed: IAM verifies GitHub's tokens against its own trusted certificate authorities and
/// ignores them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ProviderSpec {
    /// The host, as IAM answers it (no `https://`).
    pub url: String,
    /// The audiences it accepts, sorted.
    pub client_ids: Vec<String>,
    pub tags: BTreeMap<String, String>,
}

/// The address name of the OIDC provider.
pub const PROVIDER_KEY: &str = "github";

impl ProviderSpec {
    /// GitHub's, accepting the audience CI roles are trusted for.
    pub(crate) fn github(declared: &crate::section::ci::Ci, desired: &Desired) -> ProviderSpec {
        ProviderSpec {
            url: crate::section::ci::GITHUB_OIDC_HOST.to_owned(),
            client_ids: vec![crate::section::ci::GITHUB_OIDC_AUDIENCE.to_owned()],
            tags: desired.marked(&declared.tags),
        }
    }
}

impl IamReconciler {
    pub(crate) async fn observe_provider(
        &self,
        desired: &DesiredResource,
    ) -> Result<BTreeMap<Address, Observed>, ReconcileError> {
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

    pub(crate) async fn create_provider(&self, change: &Change) -> Result<Applied, ReconcileError> {
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
    pub(crate) async fn live_provider(&self, change: &Change) -> Result<ProviderSpec, ReconcileError> {
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
    pub(crate) async fn converge_provider(
        &self,
        change: &Change,
        before: Option<&ProviderSpec>,
    ) -> Result<(), ReconcileError> {
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
        let untag = |keys| {
            self.client
                .untag_open_id_connect_provider()
                .open_id_connect_provider_arn(&arn)
                .set_tag_keys(Some(keys))
                .send()
        };
        let tag = |tags| {
            self.client.tag_open_id_connect_provider().open_id_connect_provider_arn(&arn).set_tags(Some(tags)).send()
        };
        let operations = ("remove the identity provider's tags", "tag the identity provider");
        retag(address, &before.tags, &after.tags, operations, untag, tag).await
    }
}

/// Its `url` as the provider's state holds it: the host, as IAM answers it.
pub(crate) fn terraform(account: &Account, _key: &str, fields: &Map<String, Value>) -> Vec<ProviderResource> {
    let (tags, tags_all) = tags(fields);
    let arn = arn(account, &format!("oidc-provider/{}", str_field(fields, "url")));
    vec![
        ProviderResource::new(
            Provider::Aws,
            "aws_iam_openid_connect_provider",
            "github",
            json!({
                "url": field(fields, "url"),
                "client_id_list": field(fields, "client_ids"),
                "tags": tags,
                "tags_all": tags_all,
            }),
        )
        .forcing_new(FIELDS.forcing_new(&[]))
        .computing(json!({ "arn": arn, "id": arn })),
    ]
}
