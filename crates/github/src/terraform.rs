//! GitHub's kinds as the integrations/github provider's resources (`plan --format
//! terraform-json`).
//!
//! | reconcile | provider resource | arguments |
//! |---|---|---|
//! | `github_fork_pr_approval.<owner/repo>` | none: the provider has no resource for the fork pull-request approval policy | |
//! | `github_workflow_permissions.<owner/repo>` | `github_workflow_repository_permissions.repository["<owner/repo>"]` | `repository` (the name, without its owner), `default_workflow_permissions`, `can_approve_pull_request_reviews` |
//! | `github_oidc_subject.<owner/repo>` | `github_actions_repository_oidc_subject_claim_customization_template.repository["<owner/repo>"]` | `repository`, `use_default`, `include_claim_keys` |
//! | `github_variable.<NAME>` | `github_actions_variable.variable["<NAME>"]` | `variable_name`, `value` (`repository` is the `[github]` repository's, which the variable's fields do not carry, so it is left out) |

use reconcile_core::Account;
use reconcile_core::terraform::{Mapping, Provider, ProviderResource};
use serde_json::{Map, Value, json};

pub const MAPPINGS: &[Mapping] = &[
    Mapping {
        kind: crate::FORK_PR_APPROVAL,
        map: |_, _, _| Vec::new(),
        unmapped: "all of it: integrations/github has no resource for the fork pull-request approval policy",
    },
    Mapping { kind: crate::WORKFLOW_PERMISSIONS, map: workflow_permissions, unmapped: "" },
    Mapping { kind: crate::OIDC_SUBJECT, map: oidc_subject, unmapped: "" },
    Mapping { kind: crate::VARIABLE, map: variable, unmapped: "`repository`" },
];

/// The repository's name, as the provider takes it (its owner is the provider's).
fn repository(full: &str) -> &str {
    full.split_once('/').map_or(full, |(_, name)| name)
}

fn workflow_permissions(_: &Account, full: &str, fields: &Map<String, Value>) -> Vec<ProviderResource> {
    vec![
        ProviderResource::new(
            Provider::Github,
            "github_workflow_repository_permissions",
            "repository",
            json!({
                "repository": repository(full),
                "default_workflow_permissions": fields.get("default_workflow_permissions"),
                "can_approve_pull_request_reviews": fields.get("can_approve_pull_request_reviews"),
            }),
        )
        .computing(json!({ "id": repository(full) })),
    ]
}

fn oidc_subject(_: &Account, full: &str, fields: &Map<String, Value>) -> Vec<ProviderResource> {
    vec![
        ProviderResource::new(
            Provider::Github,
            "github_actions_repository_oidc_subject_claim_customization_template",
            "repository",
            json!({
                "repository": repository(full),
                "use_default": fields.get("use_default"),
                "include_claim_keys": fields.get("include_claim_keys"),
            }),
        )
        .computing(json!({ "id": repository(full) })),
    ]
}

fn variable(_: &Account, name: &str, fields: &Map<String, Value>) -> Vec<ProviderResource> {
    vec![
        ProviderResource::new(
            Provider::Github,
            "github_actions_variable",
            "variable",
            json!({ "variable_name": name, "value": fields.get("value") }),
        )
        .forcing_new(crate::VARIABLE_FIELDS.forcing_new(&[]))
        // The provider's `<repository>:<name>` needs the repository, which the fields lack.
        .computing(json!({ "id": name })),
    ]
}
