//! What this crate says of itself to everything that goes over every kind: its kinds, its
//! desired resources, what a CI role needs on the runner project, and what CloudTrail records of
//! it.

use reconcile_core::describe::{Access, Description, Index, KindTrail, PutBack, Runner, arn_names};
use reconcile_core::desired::Topic;
use reconcile_core::terraform::Mapping;
use reconcile_core::{Account, Action, Desired};
use serde_json::{Value, json};

use crate::CodebuildKind;

/// The reconciler the AWS backend builds: it waits out IAM's propagation after a create, and
/// asks CodeConnections whether a project's connection is usable.
pub fn reconciler(clients: &reconcile_aws::Clients<'_>) -> Box<dyn reconcile_core::Reconciler> {
    let codebuild = reconcile_aws::configure!(
        aws_sdk_codebuild::config::Builder::from(clients.sdk),
        clients.interceptor,
        clients.pacing,
        "codebuild"
    );
    let connections = reconcile_aws::configure!(
        aws_sdk_codeconnections::config::Builder::from(clients.sdk),
        clients.interceptor,
        clients.pacing,
        "codeconnections"
    );
    Box::new(
        crate::CodebuildReconciler::new(
            aws_sdk_codebuild::Client::from_conf(codebuild),
            clients.account.clone(),
            crate::IAM_PROPAGATION,
        )
        .with_connections(aws_sdk_codeconnections::Client::from_conf(connections)),
    )
}

pub const DESCRIPTION: Description = Description {
    name: "codebuild",
    kinds: CodebuildKind::KINDS,
    sections: &[crate::CLAIM],
    desired: |desired, account, _| crate::desired(desired, account),
    access: Access {
        reads,
        cost_reads,
        drift_reads,
        writes,
        administers,
        runner,
        put_back: &[PutBack { kind: crate::WEBHOOK, actions: &[Action::Update], writes: webhook_put_back }],
        ..Access::NONE
    },
    trail: &[
        KindTrail {
            kind: crate::PROJECT,
            events: &["CreateProject", "UpdateProject", "UpdateProjectVisibility", "DeleteProject"],
            other_fields: Some(&["UpdateProject"]),
            removals: &["DeleteProject"],
            findings: &[],
            global: false,
            index: Index::Partial,
            names,
        },
        KindTrail {
            kind: crate::WEBHOOK,
            events: &["CreateWebhook", "UpdateWebhook", "DeleteWebhook"],
            other_fields: Some(&["UpdateWebhook", "CreateWebhook"]),
            removals: &["DeleteWebhook"],
            findings: &[],
            global: false,
            index: Index::Partial,
            names,
        },
    ],
    fields: &[crate::project::FIELDS, crate::webhook::FIELDS],
    terraform: &[
        Mapping { kind: crate::PROJECT, map: crate::project::terraform, unmapped: "" },
        Mapping { kind: crate::WEBHOOK, map: crate::webhook::terraform, unmapped: "" },
    ],
    generate: crate::section::generate,
    variables: reconcile_core::describe::derives_no_variables,
};

/// A project (and its webhook) is named by `name`, `projectName` or its ARN.
fn names(name: &str, parameters: &Value, account: &Account) -> bool {
    let text = |key: &str| parameters.get(key).and_then(Value::as_str);
    text("name") == Some(name)
        || text("projectName") == Some(name)
        || text("projectArn").is_some_and(|arn| arn_names(arn, account, true, &format!("project/{name}")))
}

/// A webhook a project does not declare is deleted; only a declared one is made or updated.
const PROJECT_WRITES: [&str; 4] = [
    "codebuild:CreateProject",
    "codebuild:UpdateProject",
    "codebuild:UpdateProjectVisibility",
    "codebuild:DeleteWebhook",
];
const WEBHOOK_WRITES: [&str; 2] = ["codebuild:CreateWebhook", "codebuild:UpdateWebhook"];

fn statement(sid: &str, actions: &[&str], resources: Vec<String>) -> Value {
    json!({ "Sid": sid, "Effect": "Allow", "Action": actions, "Resource": resources })
}

fn project_arns<'a>(projects: impl Iterator<Item = &'a crate::Project>, account: &Account) -> Vec<String> {
    projects.map(|p| reconcile_aws::arn(account, "codebuild", &format!("project/{}", p.name))).collect()
}

fn reads(desired: &Desired, account: &Account) -> Vec<Value> {
    let mut statements = Vec::new();
    let projects = project_arns(crate::declared(desired).projects.iter(), account);
    if !projects.is_empty() {
        statements.push(statement("TheRunnerProjectAndItsWebhook", &["codebuild:BatchGetProjects"], projects));
    }
    if crate::declared(desired).projects.iter().any(|p| p.connection().is_none()) {
        statements.push(statement(
            "HowCodeBuildReachesGitHub",
            &["codebuild:ListSourceCredentials"],
            vec!["*".to_owned()],
        ));
    }
    let connections: Vec<String> =
        crate::declared(desired).projects.iter().filter_map(|p| p.connection().map(str::to_owned)).collect();
    if !connections.is_empty() {
        statements.push(statement("TheConnectionToGitHub", &["codeconnections:GetConnection"], connections));
    }
    statements
}

/// The runner's builds, for the nights' cost and for a plan whose changes touch the builds.
fn cost_reads(desired: &Desired, account: &Account) -> Vec<Value> {
    let projects = project_arns(crate::declared(desired).projects.iter(), account);
    if projects.is_empty() {
        return Vec::new();
    }
    vec![statement("TheRunnersBuilds", &["codebuild:ListBuildsForProject", "codebuild:BatchGetBuilds"], projects)]
}

/// What a minute of the runner's builds costs and what was billed, for the nights' cost.
fn drift_reads(desired: &Desired, account: &Account) -> Vec<Value> {
    let projects = project_arns(crate::declared(desired).projects.iter(), account);
    if projects.is_empty() {
        return Vec::new();
    }
    vec![
        // None of these has a resource to scope to.
        statement(
            "WhatAMinuteCostsAndWhatWasBilled",
            &["pricing:GetProducts", "ce:GetCostAndUsage"],
            vec!["*".to_owned()],
        ),
    ]
}

/// A destroy's: the runner's project deleted, which stops the nightly.
fn administers(desired: &Desired, account: &Account) -> Vec<Value> {
    let projects = project_arns(crate::declared(desired).projects.iter(), account);
    if projects.is_empty() {
        return Vec::new();
    }
    vec![statement("DestroyTheRunnersProject", &["codebuild:DeleteProject"], projects)]
}

fn writes(desired: &Desired, account: &Account) -> Vec<Value> {
    let mut statements = Vec::new();
    // The roles the projects run as, passed to CodeBuild and nothing else.
    let passed: Vec<String> = desired
        .referred(Topic::Role)
        .filter(|role| crate::declared(desired).projects.iter().any(|p| p.runs_as(&role.key)))
        .map(|role| reconcile_aws::arn(account, "iam", &format!("role/{}", role.value)))
        .collect();
    if !passed.is_empty() {
        statements.push(json!({
            "Sid": "PassTheRunnersRoleToCodeBuildOnly",
            "Effect": "Allow",
            "Action": ["iam:PassRole"],
            "Resource": passed,
            "Condition": { "StringEquals": { "iam:PassedToService": "codebuild.amazonaws.com" } },
        }));
    }
    let projects = project_arns(crate::declared(desired).projects.iter(), account);
    if !projects.is_empty() {
        statements.push(statement("TheRunnerProject", &PROJECT_WRITES, projects));
    }
    let hooked = project_arns(crate::declared(desired).projects.iter().filter(|p| p.webhook.is_some()), account);
    if !hooked.is_empty() {
        statements.push(statement("TheRunnersWebhook", &WEBHOOK_WRITES, hooked));
    }
    statements
}

/// Putting a webhook's filter back: an update of the hook of a declared project (never making
/// one, which registers a hook on GitHub, nor deleting one).
fn webhook_put_back(desired: &Desired, account: &Account) -> Vec<Value> {
    let hooked = project_arns(crate::declared(desired).projects.iter().filter(|p| p.webhook.is_some()), account);
    if hooked.is_empty() {
        return Vec::new();
    }
    vec![statement("PutTheRunnersWebhookFilterBack", &["codebuild:UpdateWebhook"], hooked)]
}

/// What a build needs of its own project: the log group of each project that runs as the role.
fn runner(desired: &Desired, account: &Account, runner: &Runner<'_>) -> Vec<Value> {
    let groups: Vec<String> = crate::declared(desired)
        .projects
        .iter()
        .filter(|project| project.runs_as(runner.role))
        .flat_map(|project| {
            let group = reconcile_aws::arn(account, "logs", &format!("log-group:{}", project.log_group()));
            [group.clone(), format!("{group}:*")]
        })
        .collect();
    if groups.is_empty() {
        return Vec::new();
    }
    vec![json!({
        "Sid": "BuildLogs",
        "Effect": "Allow",
        "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
        "Resource": groups,
    })]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_may_write_the_logs_of_the_projects_that_run_as_its_role_and_no_others() {
        let text = "region = \"us-east-1\"\n[iam.roles.codebuild]\nname = \"r\"\ntrusted_services = [\"codebuild.amazonaws.com\"]\n[iam.roles.other]\nname = \"o\"\ntrusted_services = [\"codebuild.amazonaws.com\"]\n[codebuild.projects.runner]\nname = \"rocm-bake\"\nsource_location = \"https://github.com/ROCm/rocm-bake\"\nservice_role = \"codebuild\"\nbuild_timeout_hours = 4\n";
        let claims = [&crate::CLAIM, &reconcile_core::desired::testing::IAM];
        let desired = Desired::parse_claimed(std::path::Path::new("desired.toml"), text, &claims).unwrap();
        let account = Account::new("123456789012", "us-east-1");
        let group = "arn:aws:logs:us-east-1:123456789012:log-group:/aws/codebuild/rocm-bake";
        for boundary in [false, true] {
            let statements = runner(&desired, &account, &Runner { role: "codebuild", boundary, over_by: 0 });
            assert_eq!(statements.len(), 1);
            assert_eq!(statements[0]["Sid"], "BuildLogs");
            assert_eq!(statements[0]["Resource"], json!([group, format!("{group}:*")]));
        }
        assert!(runner(&desired, &account, &Runner { role: "other", ..Runner::default() }).is_empty());
    }

    #[test]
    fn a_call_names_a_project_by_name_or_by_its_arn_here() {
        let account = Account::new("123456789012", "us-east-1");
        let named = |parameters: Value| names("rocm-bake", &parameters, &account);
        assert!(named(json!({ "name": "rocm-bake" })));
        assert!(named(json!({ "projectName": "rocm-bake" })));
        assert!(named(json!({ "projectArn": "arn:aws:codebuild:us-east-1:123456789012:project/rocm-bake" })));
        assert!(!named(json!({ "projectArn": "arn:aws:codebuild:us-east-1:210987654321:project/rocm-bake" })));
        assert!(!named(json!({ "name": "other" })));
    }
}
