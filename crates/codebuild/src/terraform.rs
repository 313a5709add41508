//! CodeBuild's kinds as the AWS provider's resources (`plan --format terraform-json`).
//!
//! | reconcile | provider resource | arguments |
//! |---|---|---|
//! | `codebuild_project.<key>` | `aws_codebuild_project.runner["<key>"]` | `name`, `description`, `service_role`, `build_timeout`, `queued_timeout`, `project_visibility`, `artifacts[0].type`, `environment[0].{type,compute_type,image,privileged_mode,image_pull_credentials_type,certificate,environment_variable[],registry_credential[],fleet[]}`, `source[0].{type,location,buildspec,insecure_ssl,auth[]}`, `logs_config[0].{cloudwatch_logs[0],s3_logs[0]}`, `cache[0]`, `vpc_config[]`, `secondary_sources`, `secondary_artifacts`, `file_system_locations`, `build_batch_config[0].service_role`, `tags`, `tags_all` |
//! | `codebuild_webhook.<key>` | `aws_codebuild_webhook.runner["<key>"]` | `project_name`, `build_type`, `manual_creation` (replaces), `scope_configuration[]` (replaces), `filter_group[].filter[].{type,pattern,exclude_matched_pattern}` |
//!
//! A plain-text environment variable's value is never read (observe writes a placeholder), so
//! the view holds none either.

use reconcile_core::Account;
use reconcile_core::terraform::{Mapping, Provider, ProviderResource, tags};
use serde_json::{Map, Value, json};

pub const MAPPINGS: &[Mapping] = &[
    Mapping { kind: crate::PROJECT, map: project, unmapped: "" },
    Mapping { kind: crate::WEBHOOK, map: webhook, unmapped: "" },
];

/// A nested block of zero or one: the provider's list form.
fn block(value: Option<&Value>) -> Value {
    match value {
        None | Some(Value::Null) => json!([]),
        Some(value) => json!([value]),
    }
}

fn project(account: &Account, _key: &str, fields: &Map<String, Value>) -> Vec<ProviderResource> {
    let field = |key: &str| fields.get(key).cloned().unwrap_or(Value::Null);
    let (tags, tags_all) = tags(fields);
    let variables: Vec<Value> = fields
        .get("environment_variables")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|v| json!({ "name": v["name"], "type": v["type"], "value": v["value"] }))
        .collect();
    let auth =
        fields.get("source_auth").filter(|a| !a.is_null()).map(|a| json!({ "type": "CODECONNECTIONS", "resource": a }));
    let logs = fields.get("cloudwatch_logs").cloned().unwrap_or(Value::Null);
    let s3_logs = fields.get("s3_logs").cloned().unwrap_or(Value::Null);
    let batch = fields.get("build_batch_service_role").filter(|r| !r.is_null()).map(|r| json!({ "service_role": r }));
    let registry = fields
        .get("registry_credential")
        .filter(|c| !c.is_null())
        .map(|c| json!({ "credential": c, "credential_provider": "SECRETS_MANAGER" }));
    let fleet = fields.get("fleet").filter(|f| !f.is_null()).map(|f| json!({ "fleet_arn": f }));
    let name = fields.get("name").and_then(Value::as_str).unwrap_or_default();
    let arn = format!("arn:{}:codebuild:{}:{}:project/{name}", account.partition, account.region, account.id);
    vec![
        ProviderResource::new(
            Provider::Aws,
            "aws_codebuild_project",
            "runner",
            json!({
                "name": field("name"),
                "description": field("description"),
                "service_role": field("service_role"),
                "build_timeout": field("timeout_in_minutes"),
                "queued_timeout": field("queued_timeout_in_minutes"),
                "project_visibility": field("project_visibility"),
                "artifacts": [{ "type": field("artifacts_type") }],
                "environment": [{
                    "type": field("environment_type"),
                    "compute_type": field("compute_type"),
                    "image": field("image"),
                    "privileged_mode": field("privileged_mode"),
                    "image_pull_credentials_type": field("image_pull_credentials_type"),
                    "certificate": field("certificate"),
                    "environment_variable": variables,
                    "registry_credential": block(registry.as_ref()),
                    "fleet": block(fleet.as_ref()),
                }],
                "source": [{
                    "type": field("source_type"),
                    "location": field("source_location"),
                    "buildspec": field("buildspec"),
                    "insecure_ssl": field("insecure_ssl"),
                    "auth": block(auth.as_ref()),
                }],
                "logs_config": [{
                    "cloudwatch_logs": [{ "status": logs["status"], "group_name": logs["group_name"] }],
                    "s3_logs": [{ "status": s3_logs["status"], "location": s3_logs["location"] }],
                }],
                "cache": [{ "type": fields.get("cache").map(|c| c["type"].clone()), "location": fields.get("cache").map(|c| c["location"].clone()), "modes": fields.get("cache").and_then(|c| c.get("modes")).cloned().unwrap_or(json!([])) }],
                "vpc_config": block(fields.get("vpc_config")),
                "secondary_sources": field("secondary_sources"),
                "secondary_artifacts": field("secondary_artifacts"),
                "file_system_locations": field("file_system_locations"),
                "build_batch_config": block(batch.as_ref()),
                "tags": tags,
                "tags_all": tags_all,
            }),
        )
        .forcing_new(crate::describe::PROJECT_FIELDS.forcing_new(&[]))
        .referring(&[("service_role", "aws_iam_role.runner", "arn")])
        .computing(json!({ "arn": arn, "id": arn }))
        // What desired.toml does not set: AWS's default when it is made, then as read (apply
        // leaves it as it is).
        .leaving(json!({
            "badge_enabled": fields.get("badge_enabled").cloned().unwrap_or(json!(false)),
            "concurrent_build_limit": field("concurrent_build_limit"),
            "source_version": fields.get("source_version").cloned().unwrap_or(json!("")),
        })),
    ]
}

fn webhook(_: &Account, _key: &str, fields: &Map<String, Value>) -> Vec<ProviderResource> {
    let groups: Vec<Value> = fields
        .get("filter_groups")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|group| {
            let filters: Vec<Value> = group
                .as_array()
                .into_iter()
                .flatten()
                .map(|f| json!({ "type": f["type"], "pattern": f["pattern"], "exclude_matched_pattern": f["exclude_matched_pattern"] }))
                .collect();
            json!({ "filter": filters })
        })
        .collect();
    vec![
        ProviderResource::new(
            Provider::Aws,
            "aws_codebuild_webhook",
            "runner",
            json!({
                "project_name": fields.get("project"),
                "build_type": fields.get("build_type"),
                "manual_creation": fields.get("manual_creation"),
                "scope_configuration": block(fields.get("scope_configuration")),
                "filter_group": groups,
            }),
        )
        .forcing_new(crate::describe::WEBHOOK_FIELDS.forcing_new(&[]))
        .referring(&[("project_name", "aws_codebuild_project.runner", "name")])
        // The hook's URL on the source provider, as CodeBuild answers it (never its secret).
        .computing(json!({ "id": fields.get("project"), "url": fields.get("url") })),
    ]
}
