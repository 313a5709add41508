//! IAM's kinds as the AWS provider's resources (`plan --format terraform-json`).
//!
//! | reconcile | provider resource | arguments |
//! |---|---|---|
//! | `iam_role_boundary.<key>` | `aws_iam_policy.boundary["<key>"]` | `name`, `path` (`/`), `policy` (JSON string), `tags`, `tags_all` |
//! | `iam_role.<key>` | `aws_iam_role.runner["<key>"]` | `name`, `assume_role_policy` (JSON string), `description`, `max_session_duration`, `permissions_boundary`, `tags`, `tags_all` |
//! | `iam_role_policy.<key>[/<name>]` | `aws_iam_role_policy.runner["<key>[/<name>]"]` | `name`, `role`, `policy` (JSON string) |
//! | `iam_oidc_provider.<key>` | `aws_iam_openid_connect_provider.github["<key>"]` | `url` (with `https://`), `client_id_list`, `tags`, `tags_all` |
//! | `iam_ci_role.<key>` | `aws_iam_role.ci["<key>"]` | as `iam_role` |
//! | `iam_ci_role_policy.<key>[/<name>]` | `aws_iam_role_policy.ci["<key>[/<name>]"]` | as `iam_role_policy` |

use reconcile_core::terraform::{Mapping, Provider, ProviderResource, policy_string, tags};
use serde_json::{Map, Value, json};

pub const MAPPINGS: &[Mapping] = &[
    Mapping { kind: crate::ROLE_BOUNDARY, map: boundary, unmapped: "" },
    Mapping { kind: crate::ROLE, map: |_, fields| vec![role("runner", fields)], unmapped: "" },
    Mapping { kind: crate::ROLE_POLICY, map: |_, fields| vec![role_policy("runner", fields)], unmapped: "" },
    Mapping { kind: crate::OIDC_PROVIDER, map: provider, unmapped: "" },
    Mapping { kind: crate::CI_ROLE, map: |_, fields| vec![role("ci", fields)], unmapped: "" },
    Mapping { kind: crate::CI_ROLE_POLICY, map: |_, fields| vec![role_policy("ci", fields)], unmapped: "" },
];

fn field(fields: &Map<String, Value>, key: &str) -> Value {
    fields.get(key).cloned().unwrap_or(Value::Null)
}

fn boundary(_key: &str, fields: &Map<String, Value>) -> Vec<ProviderResource> {
    let (tags, tags_all) = tags(fields);
    vec![
        ProviderResource::new(
            Provider::Aws,
            "aws_iam_policy",
            "boundary",
            json!({
                "name": field(fields, "name"),
                "path": "/",
                "policy": policy_string(&field(fields, "document")),
                "tags": tags,
                "tags_all": tags_all,
            }),
        )
        .forcing_new(&["name", "path"]),
    ]
}

fn role(block: &'static str, fields: &Map<String, Value>) -> ProviderResource {
    let (tags, tags_all) = tags(fields);
    let resource = ProviderResource::new(
        Provider::Aws,
        "aws_iam_role",
        block,
        json!({
            "name": field(fields, "name"),
            "assume_role_policy": policy_string(&field(fields, "assume_role_policy")),
            "description": field(fields, "description"),
            "max_session_duration": field(fields, "max_session_duration"),
            "permissions_boundary": field(fields, "permissions_boundary"),
            "tags": tags,
            "tags_all": tags_all,
        }),
    )
    .forcing_new(&["name"]);
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
    .forcing_new(&["name", "role"])
}

fn provider(_key: &str, fields: &Map<String, Value>) -> Vec<ProviderResource> {
    let (tags, tags_all) = tags(fields);
    let url = fields.get("url").and_then(Value::as_str).map(|url| format!("https://{url}"));
    vec![
        ProviderResource::new(
            Provider::Aws,
            "aws_iam_openid_connect_provider",
            "github",
            json!({ "url": url, "client_id_list": field(fields, "client_ids"), "tags": tags, "tags_all": tags_all }),
        )
        .forcing_new(&["url"]),
    ]
}
