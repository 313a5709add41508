//! ECR's kinds as the AWS provider's resources (`plan --format terraform-json`).
//!
//! | reconcile | provider resource | arguments |
//! |---|---|---|
//! | `ecr_repository.<name>` | `aws_ecr_repository.repository["<name>"]` | `name`, `image_tag_mutability`, `image_scanning_configuration[0].scan_on_push`, `encryption_configuration[0].{encryption_type,kms_key}` (replaces), `tags`, `tags_all` |
//! | its `repository_policy` | `aws_ecr_repository_policy.repository["<name>"]` (only while one is set) | `repository`, `policy` (JSON string) |
//! | `ecr_lifecycle_policy.<name>` | `aws_ecr_lifecycle_policy.repository["<name>"]` | `repository`, `policy` (JSON string) |

use reconcile_core::Account;
use reconcile_core::terraform::{Mapping, Provider, ProviderResource, policy_string, tags};
use serde_json::{Map, Value, json};

pub const MAPPINGS: &[Mapping] = &[
    Mapping { kind: crate::REPOSITORY, map: repository, unmapped: "" },
    Mapping { kind: crate::LIFECYCLE_POLICY, map: lifecycle_policy, unmapped: "" },
];

const REPOSITORY: &[(&str, &str, &str)] = &[("repository", "aws_ecr_repository.repository", "name")];

fn repository(account: &Account, name: &str, fields: &Map<String, Value>) -> Vec<ProviderResource> {
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
        .forcing_new(crate::describe::REPOSITORY_FIELDS.forcing_new(&["name"]))
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
            .referring(REPOSITORY)
            .computing(json!({ "id": name, "registry_id": account.id })),
        );
    }
    resources
}

fn lifecycle_policy(account: &Account, name: &str, fields: &Map<String, Value>) -> Vec<ProviderResource> {
    vec![
        ProviderResource::new(
            Provider::Aws,
            "aws_ecr_lifecycle_policy",
            "repository",
            json!({
                "repository": name,
                "policy": policy_string(fields.get("policy").unwrap_or(&Value::Null)),
            }),
        )
        .referring(REPOSITORY)
        .computing(json!({ "id": name, "registry_id": account.id })),
    ]
}
