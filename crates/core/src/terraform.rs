//! How a kind becomes the Terraform providers' resources: each resource crate maps each of its
//! kinds onto the AWS and GitHub providers' resource types ([`Mapping`], one table per kind in the
//! kind's crate), for `plan --format terraform-json`. One reconcile resource may become several
//! provider resources (a bucket is `aws_s3_bucket` and its `_public_access_block`,
//! `_versioning`, ... resources). The view itself, the plan in Terraform's JSON output format,
//! is reconcile-render's (`reconcile_render::terraform`).

use serde_json::{Map, Value, json};

use crate::address::ResourceKind;
use crate::reconciler::Account;

/// The provider a resource type belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Provider {
    /// hashicorp/aws
    Aws,
    /// integrations/github
    Github,
}

impl Provider {
    /// Its local name: the configuration's `provider_config_key`.
    pub fn key(self) -> &'static str {
        match self {
            Provider::Aws => "aws",
            Provider::Github => "github",
        }
    }

    /// Its source address, as `provider_name` holds it.
    pub fn source(self) -> &'static str {
        match self {
            Provider::Aws => "registry.terraform.io/hashicorp/aws",
            Provider::Github => "registry.terraform.io/integrations/github",
        }
    }
}

/// One provider resource a reconcile resource becomes.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderResource {
    pub provider: Provider,
    /// The provider's resource type: `aws_ecr_repository`.
    pub kind: &'static str,
    /// The resource block's name: `repository`. Its instance key is the reconcile resource's name.
    pub name: &'static str,
    /// Its arguments, named and shaped as the provider's schema names them (a nested block is a
    /// list of objects, a policy a JSON string).
    pub values: Map<String, Value>,
    /// Arguments that in Terraform would refer to another block: (argument, referred block as
    /// `type.name`, referred attribute). They become the configuration's `references`, which
    /// graph checks follow (a bucket to its public access block).
    pub references: &'static [(&'static str, &'static str, &'static str)],
    /// Arguments that cannot change in place: a difference in one replaces the resource.
    pub force_new: Vec<&'static str>,
    /// What the provider's state holds besides the arguments, chosen by AWS (`arn`, `id`,
    /// `repository_url`, a role's `unique_id`). Only what is made of observed fields counts:
    /// known for what exists, unknown (`after_unknown`) for what the plan makes. Never compared.
    pub computed: Map<String, Value>,
    /// Arguments desired.toml does not set and apply leaves as they are (a project's badge):
    /// AWS's default for what the plan makes, as read for what exists. Never compared.
    pub left: Map<String, Value>,
}

impl ProviderResource {
    pub fn new(provider: Provider, kind: &'static str, name: &'static str, values: Value) -> ProviderResource {
        ProviderResource {
            provider,
            kind,
            name,
            values: crate::json::object(values),
            references: &[],
            force_new: Vec::new(),
            computed: Map::new(),
            left: Map::new(),
        }
    }

    /// With the arguments apply leaves as they are (see [`ProviderResource::left`]).
    pub fn leaving(mut self, left: Value) -> Self {
        self.left = crate::json::object(left);
        self
    }

    /// With the attributes AWS chooses (see [`ProviderResource::computed`]).
    pub fn computing(mut self, computed: Value) -> Self {
        self.computed = crate::json::object(computed);
        self
    }

    pub fn referring(mut self, references: &'static [(&'static str, &'static str, &'static str)]) -> Self {
        self.references = references;
        self
    }

    /// With the arguments a change to which makes a new resource (a kind's
    /// [`crate::fields::Fields::forcing_new`]).
    pub fn forcing_new(mut self, arguments: Vec<&'static str>) -> Self {
        self.force_new = arguments;
        self
    }

    /// Its address for the instance `index`: `aws_ecr_repository.repository["rocm/pytorch"]`.
    pub fn address(&self, index: &str) -> String {
        format!("{}.{}[{}]", self.kind, self.name, Value::String(index.to_owned()))
    }
}

/// How a kind's canonical fields (desired or observed) become provider resources, given the
/// account and region (for what AWS derives from them: an ARN, a repository's URL) and the name
/// of the reconcile address (a repository's name, a bucket's key). A field the provider has no
/// argument for is left out; the `reconcile` key keeps it.
pub type MapFn = fn(&Account, &str, &Map<String, Value>) -> Vec<ProviderResource>;

/// One kind's mapping, in its crate.
pub struct Mapping {
    pub kind: ResourceKind,
    pub map: MapFn,
    /// What the mapping leaves out, for the documentation's table: `""` when nothing.
    pub unmapped: &'static str,
}

/// A JSON policy document as the provider holds it: a string.
pub fn policy_string(document: &Value) -> Value {
    if document.is_null() { Value::Null } else { Value::String(crate::json::to_compact(document)) }
}

/// The provider's `tags` and `tags_all` (with no provider default tags, the same map).
pub fn tags(fields: &Map<String, Value>) -> (Value, Value) {
    let tags = fields.get("tags").cloned().unwrap_or_else(|| json!({}));
    (tags.clone(), tags)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::object;

    #[test]
    fn a_policy_is_a_string_and_tags_are_tags_all() {
        assert_eq!(policy_string(&Value::Null), Value::Null);
        assert_eq!(policy_string(&json!({ "b": 1, "a": [2] })), json!("{\"a\":[2],\"b\":1}"));
        let (tags, all) = tags(&object(json!({ "tags": { "k": "v" } })));
        assert_eq!((tags, all), (json!({ "k": "v" }), json!({ "k": "v" })));
        assert_eq!(super::tags(&Map::new()), (json!({}), json!({})));
    }
}
