//! The project and webhook in canonical form.
//!
//! Only what desired.toml declares is compared (see `reconcile_core::plan::diff`), so the
//! fields AWS fills in on its own (badge, cache `NO_CACHE`, `encryptionKey`, the
//! `CODEBUILD_CONFIG_AUTO_DISCOVER` variable, `lastModified`, ...) are simply not fields here.
//! A webhook's server-owned fields (`url`, `payloadUrl`, `secret`, `status`,
//! `lastModifiedSecret`) are never read at all, so the secret cannot reach a plan.

use aws_sdk_codebuild as codebuild;
use reconcile_core::desired::{Project, Webhook};
use reconcile_core::json::object;
use serde_json::{Map, Value, json};

/// The desired project's fields.
pub fn desired_project(project: &Project, role_arn: &str) -> Map<String, Value> {
    let mut fields = object(json!({
        "name": project.name,
        "description": project.description,
        "source_type": "GITHUB",
        "source_location": project.source_location,
        "artifacts_type": "NO_ARTIFACTS",
        "environment_type": project.environment_type,
        "compute_type": project.compute_type,
        "image": project.image,
        "privileged_mode": project.privileged_mode,
        "image_pull_credentials_type": "CODEBUILD",
        "service_role": role_arn,
        "timeout_in_minutes": project.build_timeout_minutes,
        "cloudwatch_logs": { "status": "ENABLED", "group_name": project.log_group() },
        "tags": project.tags,
    }));
    if let Some(queued) = project.queued_timeout_minutes {
        fields.insert("queued_timeout_in_minutes".to_owned(), json!(queued));
    }
    fields
}

/// The live project's fields, named as in [`desired_project`].
pub fn observed_project(project: &codebuild::types::Project) -> Map<String, Value> {
    let environment = project.environment();
    let logs = project.logs_config().and_then(|l| l.cloud_watch_logs());
    let tags: Map<String, Value> = project
        .tags()
        .iter()
        .filter_map(|t| Some((t.key()?.to_owned(), json!(t.value().unwrap_or_default()))))
        .filter(|(k, _)| !k.starts_with("aws:"))
        .collect();
    object(json!({
        "name": project.name(),
        "arn": project.arn(),
        "description": project.description().unwrap_or_default(),
        "source_type": project.source().map(|s| s.r#type().as_str()),
        "source_location": project.source().and_then(|s| s.location()),
        "artifacts_type": project.artifacts().map(|a| a.r#type().as_str()),
        "environment_type": environment.map(|e| e.r#type().as_str()),
        "compute_type": environment.map(|e| e.compute_type().as_str()),
        "image": environment.map(|e| e.image()),
        "privileged_mode": environment.and_then(|e| e.privileged_mode()).unwrap_or(false),
        "image_pull_credentials_type": environment
            .and_then(|e| e.image_pull_credentials_type())
            .map_or("CODEBUILD", |t| t.as_str()),
        "service_role": project.service_role(),
        "timeout_in_minutes": project.timeout_in_minutes(),
        "queued_timeout_in_minutes": project.queued_timeout_in_minutes(),
        // Logs are on unless turned off, and have no group until one is set.
        "cloudwatch_logs": {
            "status": logs.map_or("ENABLED", |l| l.status().as_str()),
            "group_name": logs.and_then(|l| l.group_name()),
        },
        "tags": tags,
    }))
}

/// The desired webhook's fields.
pub fn desired_webhook(project_name: &str, webhook: &Webhook) -> Map<String, Value> {
    let groups = webhook
        .filter_groups
        .iter()
        .map(|group| group.iter().map(|f| filter(&f.kind, &f.pattern, f.exclude_matched_pattern)).collect::<Vec<_>>())
        .collect();
    object(json!({
        "project": project_name,
        "build_type": webhook.build_type,
        "filter_groups": canonical_groups(groups),
        "manual_creation": webhook.manual_creation,
        "scope_configuration": webhook.scope.as_ref().map(|s| json!({
            "name": s.name,
            "scope": s.scope,
            "domain": s.domain,
        })),
    }))
}

/// The live webhook's fields, named as in [`desired_webhook`].
pub fn observed_webhook(project_name: &str, webhook: &codebuild::types::Webhook) -> Map<String, Value> {
    let groups = webhook
        .filter_groups()
        .iter()
        .map(|group| {
            group
                .iter()
                .map(|f| filter(f.r#type().as_str(), f.pattern(), f.exclude_matched_pattern().unwrap_or(false)))
                .collect::<Vec<_>>()
        })
        .collect();
    object(json!({
        "project": project_name,
        "build_type": webhook.build_type().map_or("BUILD", |t| t.as_str()),
        "filter_groups": canonical_groups(groups),
        "manual_creation": webhook.manual_creation().unwrap_or(false),
        "scope_configuration": webhook.scope_configuration().map(|s| json!({
            "name": s.name(),
            "scope": s.scope().as_str(),
            "domain": s.domain(),
        })),
    }))
}

/// One filter; an EVENT pattern is a comma-separated set of event names.
fn filter(kind: &str, pattern: &str, exclude_matched_pattern: bool) -> Value {
    let pattern = if kind == "EVENT" {
        let mut events: Vec<&str> = pattern.split(',').map(str::trim).filter(|e| !e.is_empty()).collect();
        events.sort_unstable();
        events.dedup();
        events.join(",")
    } else {
        pattern.to_owned()
    };
    json!({ "type": kind, "pattern": pattern, "exclude_matched_pattern": exclude_matched_pattern })
}

/// Groups are a set (any one passing starts a build), and so are the filters of a group (all
/// must pass). They are ordered the way a reader scans them, EVENT first and then by type and
/// pattern, so that a diff of two sets lines up the groups that differ least.
fn canonical_groups(groups: Vec<Vec<Value>>) -> Value {
    fn filter_key(filter: &Value) -> (bool, String, String, bool) {
        let text = |key: &str| filter[key].as_str().unwrap_or_default().to_owned();
        (text("type") != "EVENT", text("type"), text("pattern"), filter["exclude_matched_pattern"] == true)
    }
    let mut groups: Vec<Vec<Value>> = groups
        .into_iter()
        .map(|mut group| {
            group.sort_by_key(filter_key);
            group.dedup();
            group
        })
        .collect();
    groups.sort_by_key(|group| group.iter().map(filter_key).collect::<Vec<_>>());
    groups.dedup();
    Value::Array(groups.into_iter().map(Value::Array).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use reconcile_core::desired::WebhookFilter;

    fn webhook(groups: Vec<Vec<(&str, &str)>>) -> Webhook {
        Webhook {
            build_type: "BUILD".into(),
            filter_groups: groups
                .into_iter()
                .map(|g| {
                    g.into_iter()
                        .map(|(kind, pattern)| WebhookFilter {
                            kind: kind.into(),
                            pattern: pattern.into(),
                            exclude_matched_pattern: false,
                        })
                        .collect()
                })
                .collect(),
            manual_creation: false,
            scope: None,
        }
    }

    #[test]
    fn groups_filters_and_events_are_sets() {
        let a = webhook(vec![
            vec![("EVENT", "WORKFLOW_JOB_QUEUED"), ("REPOSITORY_NAME", "^ROCm/rocm-bake$")],
            vec![("EVENT", "PUSH, PULL_REQUEST_MERGED")],
        ]);
        let b = webhook(vec![
            vec![("EVENT", "PULL_REQUEST_MERGED,PUSH")],
            vec![("REPOSITORY_NAME", "^ROCm/rocm-bake$"), ("EVENT", " WORKFLOW_JOB_QUEUED")],
        ]);
        assert_eq!(desired_webhook("p", &a), desired_webhook("p", &b));
    }

    #[test]
    fn a_removed_filter_or_another_pattern_is_a_difference() {
        let full = webhook(vec![vec![("EVENT", "WORKFLOW_JOB_QUEUED"), ("ACTOR_ACCOUNT_ID", "123")]]);
        let fewer = webhook(vec![vec![("EVENT", "WORKFLOW_JOB_QUEUED")]]);
        let other = webhook(vec![vec![("EVENT", "WORKFLOW_JOB_QUEUED"), ("ACTOR_ACCOUNT_ID", "124")]]);
        assert_ne!(desired_webhook("p", &full), desired_webhook("p", &fewer));
        assert_ne!(desired_webhook("p", &full), desired_webhook("p", &other));
    }
}
