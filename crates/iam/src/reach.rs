//! Who can become what: the roles a principal reaches through the roles and projects it manages,
//! and whether any of them can widen who assumes a role, widen a role past its boundary, move
//! or rewrite a boundary, or assume a role.
//!
//! The tools people reach for do not answer this for reconcile's account: parliament's
//! escalation audit needs `sts:AssumeRole` in the same policy, cloudsplaining ignores conditions
//! (a boundary-conditioned statement still shows), principalmapper counts only paths to an
//! administrator, and none follows `codebuild:UpdateProject` to the build that then runs as the
//! project's role. This is the small model that does, over [`crate::evaluate`].

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde_json::Value;

use crate::evaluate::{Context, Principal, Request};

/// A role of the account: its identity policies and its boundary (the policy document, and the
/// managed policy's ARN).
#[derive(Debug, Clone)]
pub struct Role {
    pub arn: String,
    pub policies: Vec<Value>,
    pub boundary: Option<(String, Value)>,
}

impl Role {
    fn principal(&self) -> Principal<'_> {
        Principal { policies: &self.policies, boundary: self.boundary.as_ref().map(|(_, document)| document) }
    }
}

/// A CodeBuild project: whoever may change it (`UpdateProject`: its buildspec, source, image)
/// runs code as its service role on the next build a webhook starts.
#[derive(Debug, Clone)]
pub struct Project {
    pub arn: String,
    pub service_role: String,
}

/// The account as far as who-can-become-what goes.
#[derive(Debug, Clone)]
pub struct Model {
    pub account: String,
    pub roles: Vec<Role>,
    pub projects: Vec<Project>,
}

/// How one principal reaches a role: the role's ARN and the steps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Path {
    pub role: String,
    pub how: Vec<String>,
}

/// The services a role may be passed to and run as without anyone assuming it.
const SERVICES: [&str; 6] = [
    "codebuild.amazonaws.com",
    "ec2.amazonaws.com",
    "lambda.amazonaws.com",
    "ecs-tasks.amazonaws.com",
    "glue.amazonaws.com",
    "cloudformation.amazonaws.com",
];

/// Writes that make a new identity or give one permissions, on a user or a group: whoever can
/// make them is administrator in all but name.
const USER_WRITES: [&str; 8] = [
    "iam:CreateUser",
    "iam:CreateAccessKey",
    "iam:CreateLoginProfile",
    "iam:UpdateLoginProfile",
    "iam:PutUserPolicy",
    "iam:AttachUserPolicy",
    "iam:PutUserPermissionsBoundary",
    "iam:DeleteUserPermissionsBoundary",
];
const GROUP_WRITES: [&str; 3] = ["iam:AddUserToGroup", "iam:PutGroupPolicy", "iam:AttachGroupPolicy"];

/// Changes to an OIDC provider change who can assume every role that trusts it.
const PROVIDER_WRITES: [&str; 5] = [
    "iam:CreateOpenIDConnectProvider",
    "iam:DeleteOpenIDConnectProvider",
    "iam:AddClientIDToOpenIDConnectProvider",
    "iam:UpdateOpenIDConnectProviderThumbprint",
    "iam:TagOpenIDConnectProvider",
];

impl Model {
    /// The role with this ARN.
    pub fn role(&self, arn: &str) -> Option<&Role> {
        self.roles.iter().find(|role| role.arn.eq_ignore_ascii_case(arn))
    }

    /// A role no one declared, standing for every other role of the account.
    fn any_other_role(&self) -> String {
        format!("arn:aws:iam::{}:role/any-other-role", self.account)
    }

    /// Every role `from` can act as, itself first, with how: by assuming it, or by changing a
    /// project that runs as it (or passing it to one it may change), transitively.
    pub fn reach(&self, from: &str) -> Vec<Path> {
        let mut found: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut queue = VecDeque::from([Path { role: from.to_owned(), how: Vec::new() }]);
        while let Some(path) = queue.pop_front() {
            if found.contains_key(&path.role) {
                continue;
            }
            let Some(role) = self.role(&path.role) else { continue };
            for next in self.steps(role) {
                if !found.contains_key(&next.role) {
                    let mut how = path.how.clone();
                    how.extend(next.how);
                    queue.push_back(Path { role: next.role, how });
                }
            }
            found.insert(path.role, path.how);
        }
        let mut paths: Vec<Path> = found.into_iter().map(|(role, how)| Path { role, how }).collect();
        paths.sort_by_key(|path| (path.role != from, path.how.len(), path.role.clone()));
        paths
    }

    /// The roles one step from `role`.
    fn steps(&self, role: &Role) -> Vec<Path> {
        let principal = role.principal();
        let none = Context::new();
        let mut steps = Vec::new();
        for target in &self.roles {
            if principal.allows(Request { action: "sts:AssumeRole", resource: &target.arn, context: &none }) {
                steps.push(Path { role: target.arn.clone(), how: vec![format!("sts:AssumeRole on {}", target.arn)] });
            }
        }
        for project in &self.projects {
            let changes = |action: &str| principal.allows(Request { action, resource: &project.arn, context: &none });
            if !(changes("codebuild:UpdateProject") || changes("codebuild:CreateProject")) {
                continue;
            }
            // The project's own role, without passing anything: a new buildspec runs as it.
            if changes("codebuild:UpdateProject") {
                steps.push(Path {
                    role: project.service_role.clone(),
                    how: vec![format!("codebuild:UpdateProject on {} (a build runs as its role)", project.arn)],
                });
            }
            // Any role it may pass to CodeBuild, made the project's.
            let to_codebuild = Context::new().with("iam:PassedToService", &["codebuild.amazonaws.com"]);
            for target in &self.roles {
                if principal.allows(Request { action: "iam:PassRole", resource: &target.arn, context: &to_codebuild }) {
                    steps.push(Path {
                        role: target.arn.clone(),
                        how: vec![format!(
                            "iam:PassRole of {} to the project {} it may change (a build runs as it)",
                            target.arn, project.arn
                        )],
                    });
                }
            }
        }
        steps
    }

    /// What `role` can do that widens anything: who may assume a role, what a role may do past
    /// its boundary, a boundary itself, a new identity, or assuming a role. Empty when nothing.
    pub fn escalations(&self, role: &Role) -> Vec<String> {
        let principal = role.principal();
        let mut found = BTreeSet::new();
        let none = Context::new();
        let can =
            |action: &str, resource: &str, context: &Context| principal.allows(Request { action, resource, context });
        let mut targets: Vec<(String, Option<String>)> =
            self.roles.iter().map(|r| (r.arn.clone(), r.boundary.as_ref().map(|(arn, _)| arn.clone()))).collect();
        targets.push((self.any_other_role(), None));
        for (target, boundary) in &targets {
            for action in [
                "iam:UpdateAssumeRolePolicy",
                "iam:PutRolePermissionsBoundary",
                "iam:DeleteRolePermissionsBoundary",
                "sts:AssumeRole",
                "iam:CreateRole",
            ] {
                let other =
                    Context::new().with("iam:PermissionsBoundary", &["arn:aws:iam::000000000000:policy/another"]);
                if can(action, target, &none) || can(action, target, &other) {
                    found.insert(format!("{action} on {target}"));
                }
            }
            // Writing a role's policies widens it only where no boundary bounds it: with the
            // role's own boundary in the request (IAM fills it in), or none.
            let context = match boundary {
                Some(arn) => Context::new().with("iam:PermissionsBoundary", &[arn]),
                None => Context::new(),
            };
            for action in ["iam:PutRolePolicy", "iam:AttachRolePolicy"] {
                if boundary.is_none() && can(action, target, &context) {
                    found.insert(format!("{action} on {target}, which no boundary bounds"));
                }
            }
            for service in SERVICES {
                let passed = Context::new().with("iam:PassedToService", &[service]);
                if service != "codebuild.amazonaws.com" && can("iam:PassRole", target, &passed) {
                    found.insert(format!("iam:PassRole of {target} to {service}"));
                }
            }
        }
        let boundaries: BTreeSet<&str> =
            self.roles.iter().filter_map(|r| r.boundary.as_ref().map(|(arn, _)| arn.as_str())).collect();
        let any_policy = format!("arn:aws:iam::{}:policy/any-other-policy", self.account);
        for policy in boundaries.into_iter().chain([any_policy.as_str()]) {
            for action in [
                "iam:CreatePolicyVersion",
                "iam:SetDefaultPolicyVersion",
                "iam:DeletePolicy",
                "iam:DeletePolicyVersion",
            ] {
                if can(action, policy, &none) {
                    found.insert(format!("{action} on {policy}"));
                }
            }
        }
        let user = format!("arn:aws:iam::{}:user/any-user", self.account);
        let group = format!("arn:aws:iam::{}:group/any-group", self.account);
        for (actions, resource) in [(&USER_WRITES[..], &user), (&GROUP_WRITES[..], &group)] {
            for action in actions {
                if can(action, resource, &none) {
                    found.insert(format!("{action} on {resource}"));
                }
            }
        }
        let provider = format!("arn:aws:iam::{}:oidc-provider/token.actions.githubusercontent.com", self.account);
        for action in PROVIDER_WRITES {
            if can(action, &provider, &none) {
                found.insert(format!("{action} on {provider}"));
            }
        }
        found.into_iter().collect()
    }

    /// For each role `from` reaches (itself included), what it can widen: empty when `from` can
    /// become nothing more than it, and the boundaries, already allow.
    pub fn escalations_through(&self, from: &str) -> Vec<(Path, Vec<String>)> {
        self.reach(from)
            .into_iter()
            .filter_map(|path| {
                let role = self.role(&path.role)?;
                let escalations = self.escalations(role);
                (!escalations.is_empty()).then_some((path, escalations))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn role(name: &str, policy: Value, boundary: Option<Value>) -> Role {
        Role {
            arn: format!("arn:aws:iam::1:role/{name}"),
            policies: vec![policy],
            boundary: boundary.map(|b| (format!("arn:aws:iam::1:policy/{name}-boundary"), b)),
        }
    }

    fn allow(action: &str, resource: &str) -> Value {
        json!({ "Statement": [{ "Effect": "Allow", "Action": action, "Resource": resource }] })
    }

    #[test]
    fn the_four_call_attack_is_an_escalation_and_a_boundary_condition_closes_the_first_call() {
        // The apply role as it was: its writes on the runner's role unconditioned.
        let apply = role(
            "apply",
            json!({ "Statement": [
                { "Effect": "Allow", "Action": ["iam:PutRolePolicy", "iam:UpdateAssumeRolePolicy"], "Resource": "arn:aws:iam::1:role/runner" },
                { "Effect": "Allow", "Action": "codebuild:UpdateProject", "Resource": "arn:aws:codebuild:r:1:project/p" },
            ]}),
            None,
        );
        let runner = role("runner", allow("s3:GetObject", "*"), None);
        let model = Model {
            account: "1".to_owned(),
            roles: vec![apply.clone(), runner.clone()],
            projects: vec![Project {
                arn: "arn:aws:codebuild:r:1:project/p".to_owned(),
                service_role: runner.arn.clone(),
            }],
        };
        assert_eq!(
            model.escalations(&apply),
            [
                "iam:PutRolePolicy on arn:aws:iam::1:role/runner, which no boundary bounds",
                "iam:UpdateAssumeRolePolicy on arn:aws:iam::1:role/runner",
            ]
        );
        let reach = model.reach(&apply.arn);
        assert_eq!(reach.len(), 2);
        assert_eq!(reach[1].role, runner.arn);
        assert_eq!(
            reach[1].how,
            ["codebuild:UpdateProject on arn:aws:codebuild:r:1:project/p (a build runs as its role)"]
        );

        // Bounded: the policy may be written only while the role carries its boundary, and the
        // boundary itself is out of reach. Writing it is then no escalation.
        let bounded_apply = role(
            "apply",
            json!({ "Statement": [{
                "Effect": "Allow", "Action": "iam:PutRolePolicy", "Resource": "arn:aws:iam::1:role/runner",
                "Condition": { "ArnEquals": { "iam:PermissionsBoundary": "arn:aws:iam::1:policy/runner-boundary" } },
            }]}),
            None,
        );
        let bounded_runner = role("runner", allow("s3:GetObject", "*"), Some(allow("s3:GetObject", "*")));
        let model =
            Model { account: "1".to_owned(), roles: vec![bounded_apply.clone(), bounded_runner], projects: Vec::new() };
        assert_eq!(model.escalations(&bounded_apply), Vec::<String>::new());
        assert_eq!(model.escalations_through(&bounded_apply.arn), Vec::new());
    }

    #[test]
    fn assuming_passing_and_rewriting_a_boundary_or_a_provider_are_each_named() {
        let everything = role("admin", allow("*", "*"), None);
        let model = Model { account: "1".to_owned(), roles: vec![everything.clone()], projects: Vec::new() };
        let found = model.escalations(&everything);
        for expected in [
            "sts:AssumeRole on arn:aws:iam::1:role/admin",
            "iam:CreateRole on arn:aws:iam::1:role/any-other-role",
            "iam:PassRole of arn:aws:iam::1:role/admin to ec2.amazonaws.com",
            "iam:CreatePolicyVersion on arn:aws:iam::1:policy/any-other-policy",
            "iam:CreateUser on arn:aws:iam::1:user/any-user",
            "iam:AddClientIDToOpenIDConnectProvider on arn:aws:iam::1:oidc-provider/token.actions.githubusercontent.com",
        ] {
            assert!(found.iter().any(|f| f == expected), "{expected}: {found:#?}");
        }
        // Reaching a role by assuming it, and through a project by passing it.
        let chained = role(
            "ci",
            json!({ "Statement": [
                { "Effect": "Allow", "Action": "sts:AssumeRole", "Resource": "arn:aws:iam::1:role/admin" },
            ]}),
            None,
        );
        let passer = role(
            "passer",
            json!({ "Statement": [
                { "Effect": "Allow", "Action": "codebuild:CreateProject", "Resource": "*" },
                { "Effect": "Allow", "Action": "iam:PassRole", "Resource": "arn:aws:iam::1:role/ci",
                  "Condition": { "StringEquals": { "iam:PassedToService": "codebuild.amazonaws.com" } } },
            ]}),
            None,
        );
        let model = Model {
            account: "1".to_owned(),
            roles: vec![everything, chained.clone(), passer.clone()],
            projects: vec![Project {
                arn: "arn:aws:codebuild:r:1:project/p".to_owned(),
                service_role: chained.arn.clone(),
            }],
        };
        let through = model.escalations_through(&passer.arn);
        let reached: Vec<&str> = through.iter().map(|(path, _)| path.role.as_str()).collect();
        assert_eq!(reached, ["arn:aws:iam::1:role/ci", "arn:aws:iam::1:role/admin"]);
        assert_eq!(through[1].0.how.len(), 2, "{:?}", through[1].0.how);
    }

    #[test]
    fn a_write_allowed_with_no_boundary_or_with_another_is_each_an_escalation() {
        // Allowed only when the request names no boundary, or only when it names one.
        for operator in ["Null", "StringLike"] {
            let value = if operator == "Null" { json!("true") } else { json!("arn:aws:iam::*:policy/*") };
            let writer = role(
                "writer",
                json!({ "Statement": [{ "Effect": "Allow", "Action": "iam:UpdateAssumeRolePolicy", "Resource": "*",
                    "Condition": { operator: { "iam:PermissionsBoundary": value } } }]}),
                None,
            );
            let model = Model { account: "1".to_owned(), roles: vec![writer.clone()], projects: Vec::new() };
            let found = model.escalations(&writer);
            assert!(
                found.contains(&"iam:UpdateAssumeRolePolicy on arn:aws:iam::1:role/writer".to_owned()),
                "{operator}: {found:#?}"
            );
        }
    }
}
