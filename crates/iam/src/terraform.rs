//! IAM's kinds as the AWS provider's resources (`plan --format terraform-json`).
//!
//! | reconcile | provider resource | arguments |
//! |---|---|---|
//! | `iam_role_boundary.<key>` | `aws_iam_policy.boundary["<key>"]` | `name`, `description` (replaces), `path` (`/`), `policy` (JSON string), `tags`, `tags_all` |
//! | `iam_role.<key>` | `aws_iam_role.runner["<key>"]` | `name`, `path`, `assume_role_policy` (JSON string), `description`, `max_session_duration`, `permissions_boundary`, `force_detach_policies` (false), `tags`, `tags_all` |
//! | `iam_role_policy.<key>[/<name>]` | `aws_iam_role_policy.runner["<key>[/<name>]"]` | `name`, `role`, `policy` (JSON string) |
//! | `iam_oidc_provider.<key>` | `aws_iam_openid_connect_provider.github["<key>"]` | `url` (the host, as the provider's state holds it), `client_id_list`, `tags`, `tags_all` |
//! | `iam_ci_role.<key>` | `aws_iam_role.ci["<key>"]` | as `iam_role` |
//! | `iam_ci_role_policy.<key>[/<name>]` | `aws_iam_role_policy.ci["<key>[/<name>]"]` | as `iam_role_policy` |

use reconcile_core::Account;
use reconcile_core::terraform::{Mapping, Provider, ProviderResource, policy_string, tags};
use serde_json::{Map, Value, json};

pub const MAPPINGS: &[Mapping] = &[
    Mapping { kind: crate::ROLE_BOUNDARY, map: boundary, unmapped: "" },
    Mapping { kind: crate::ROLE, map: |account, _, fields| vec![role(account, "runner", fields)], unmapped: "" },
    Mapping { kind: crate::ROLE_POLICY, map: |_, _, fields| vec![role_policy("runner", fields)], unmapped: "" },
    Mapping { kind: crate::OIDC_PROVIDER, map: provider, unmapped: "" },
    Mapping { kind: crate::CI_ROLE, map: |account, _, fields| vec![role(account, "ci", fields)], unmapped: "" },
    Mapping { kind: crate::CI_ROLE_POLICY, map: |_, _, fields| vec![role_policy("ci", fields)], unmapped: "" },
];

fn field(fields: &Map<String, Value>, key: &str) -> Value {
    fields.get(key).cloned().unwrap_or(Value::Null)
}

/// `arn:<partition>:iam::<account>:<resource>`
fn arn(account: &Account, resource: &str) -> String {
    format!("arn:{}:iam::{}:{resource}", account.partition, account.id)
}

fn boundary(account: &Account, _key: &str, fields: &Map<String, Value>) -> Vec<ProviderResource> {
    let (tags, tags_all) = tags(fields);
    let arn = arn(account, &format!("policy/{}", field(fields, "name").as_str().unwrap_or_default()));
    vec![
        ProviderResource::new(
            Provider::Aws,
            "aws_iam_policy",
            "boundary",
            json!({
                "name": field(fields, "name"),
                "description": field(fields, "description"),
                "path": "/",
                "policy": policy_string(&field(fields, "document")),
                "tags": tags,
                "tags_all": tags_all,
            }),
        )
        // Its path is always `/`.
        .forcing_new(crate::describe::BOUNDARY_FIELDS.forcing_new(&["path"]))
        .computing(json!({ "arn": arn, "id": arn })),
    ]
}

fn role(account: &Account, block: &'static str, fields: &Map<String, Value>) -> ProviderResource {
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
    .forcing_new(crate::describe::ROLE_FIELDS.forcing_new(&["path"]))
    // Its unique id is IAM's choice, known only from the live role.
    .computing(json!({ "arn": arn, "id": name, "unique_id": field(fields, "unique_id") }));
    if block == "runner" {
        resource.referring(&[("permissions_boundary", "aws_iam_policy.boundary", "arn")])
    } else {
        resource
    }
}

fn role_policy(block: &'static str, fields: &Map<String, Value>) -> ProviderResource {
    let references: &'static [(&str, &str, &str)] = if block == "runner" {
        &[("role", "aws_iam_role.runner", "name")]
    } else {
        &[("role", "aws_iam_role.ci", "name")]
    };
    ProviderResource::new(
        Provider::Aws,
        "aws_iam_role_policy",
        block,
        json!({
            "name": field(fields, "policy_name"),
            "role": field(fields, "role"),
            "policy": policy_string(&field(fields, "document")),
        }),
    )
    .referring(references)
    .forcing_new(crate::describe::ROLE_POLICY_FIELDS.forcing_new(&[]))
    .computing(json!({ "id": format!("{}:{}", str_field(fields, "role"), str_field(fields, "policy_name")) }))
}

fn str_field<'a>(fields: &'a Map<String, Value>, key: &str) -> &'a str {
    fields.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Its `url` as the provider's state holds it: the host, as IAM answers it.
fn provider(account: &Account, _key: &str, fields: &Map<String, Value>) -> Vec<ProviderResource> {
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
        .forcing_new(crate::describe::PROVIDER_FIELDS.forcing_new(&[]))
        .computing(json!({ "arn": arn, "id": arn })),
    ]
}
