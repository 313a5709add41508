//! `iam_role_policy.<key>` and `iam_ci_role_policy.<key>`: a role's one inline policy, named on
//! its role, in canonical form; an undeclared one on a declared role is a member
//! (`<key>/<policy name>`), planned as a delete. Its field table, spec, reads and writes and its
//! Terraform mapping are here.
//!
//! | reconcile | provider resource | arguments |
//! |---|---|---|
//! | `iam_role_policy.<key>[/<name>]` | `aws_iam_role_policy.runner["<key>[/<name>]"]` | `name`, `role`, `policy` (JSON string) |
//! | `iam_ci_role_policy.<key>[/<name>]` | `aws_iam_role_policy.ci["<key>[/<name>]"]` | as `iam_role_policy` |

use reconcile_aws::{absent_if, after_create, failed, gone_if};
use reconcile_core::fields::{Field, Fields};
use reconcile_core::json::to_compact;
use reconcile_core::plan::{Change, DesiredResource, Finding, MarkOrder, Observed, Severity};
use reconcile_core::spec::attributes;
use reconcile_core::terraform::{Provider, ProviderResource, policy_string};
use reconcile_core::{Address, Applied, ReconcileError};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::terraform::{field, str_field};
use crate::{IamReconciler, NO_SUCH_ENTITY, policy};

/// An inline policy's fields: the role it is on and its name name it, as Terraform's `role`
/// and `name`.
const ROLE_POLICY: &[Field] = &[
    Field::identity("role"),
    Field::identity("policy_name").in_terraform("name"),
    Field::in_place("document").set_by(&["PutRolePolicy"]),
];

pub const FIELDS: Fields = Fields { kind: crate::ROLE_POLICY, fields: ROLE_POLICY };
pub const CI_ROLE_POLICY_FIELDS: Fields = Fields { kind: crate::CI_ROLE_POLICY, fields: ROLE_POLICY };

/// `iam_role_policy.<key>`: one inline policy of the role, in canonical form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RolePolicySpec {
    pub role: String,
    pub policy_name: String,
    pub document: Value,
}

impl RolePolicySpec {
    /// The runner's role `role`'s inline policy, `document` derived.
    pub(crate) fn runner(role: &crate::section::Role, document: Value) -> RolePolicySpec {
        RolePolicySpec { role: role.name.clone(), policy_name: role.policy_name.clone(), document }
    }

    /// The CI role `role`'s inline policy, [`crate::spec::CI_POLICY_NAME`].
    pub(crate) fn ci(role: &crate::section::ci::CiRole, document: Value) -> RolePolicySpec {
        RolePolicySpec { role: role.name.clone(), policy_name: crate::spec::CI_POLICY_NAME.to_owned(), document }
    }

    /// Whether it is the policy named `name`.
    pub(crate) fn is(&self, name: &str) -> bool {
        self.policy_name == name
    }
}

/// A role's inline policy, under its role. It grants what carries the mark: changed only once
/// every repository the plan marks is marked.
pub(crate) fn inline_policy_resource(
    address: Address,
    spec: &RolePolicySpec,
    role_address: &Address,
) -> DesiredResource {
    DesiredResource::new(address, &spec.role, attributes(spec)).under(role_address).ordered_by_mark(MarkOrder::Grants)
}

impl IamReconciler {
    pub(crate) async fn inline_policy_names(
        &self,
        address: &Address,
        role_name: &str,
    ) -> Result<Vec<String>, ReconcileError> {
        let mut pages = self.client.list_role_policies().role_name(role_name).into_paginator().send();
        let mut names = Vec::new();
        let mut read = reconcile_aws::Pages::default();
        while let Some(page) = self.parallelism.send_once(|| pages.next()).await {
            let page = page.map_err(failed(Some(address), "list inline policies"))?;
            read.page(page.marker(), Some(address), "list inline policies")?;
            names.extend(page.policy_names().to_vec());
        }
        Ok(names)
    }

    pub(crate) async fn observe_inline_policy(
        &self,
        address: &Address,
        role_name: &str,
        policy_name: &str,
    ) -> Result<Observed, ReconcileError> {
        let response = self
            .parallelism
            .send(|| self.client.get_role_policy().role_name(role_name).policy_name(policy_name).send())
            .await;
        let Some(output) =
            absent_if(response, &[NO_SUCH_ENTITY]).map_err(failed(Some(address), "read inline policy"))?
        else {
            return Ok(Observed::Absent);
        };
        let spec = RolePolicySpec {
            role: role_name.to_owned(),
            policy_name: policy_name.to_owned(),
            document: policy::canonical_text(output.policy_document(), &self.account.partition),
        };
        Ok(Observed::Present(attributes(&spec)))
    }

    pub(crate) async fn put_role_policy(&self, change: &Change) -> Result<Applied, ReconcileError> {
        let address = &change.address;
        let after: RolePolicySpec = reconcile_core::spec::after(change)?;
        let document = to_compact(&after.document);
        // Right after the role is created, IAM may not show it everywhere yet.
        let request = || {
            self.client
                .put_role_policy()
                .role_name(&after.role)
                .policy_name(&after.policy_name)
                .policy_document(&document)
                .send()
        };
        after_create(request, &[NO_SUCH_ENTITY]).await.map_err(failed(Some(address), "put inline policy"))?;
        Ok(Applied::Done)
    }

    pub(crate) async fn delete_role_policy(&self, change: &Change) -> Result<Applied, ReconcileError> {
        let address = &change.address;
        let before = reconcile_core::spec::before::<RolePolicySpec>(change)?.ok_or_else(|| {
            ReconcileError::new(Some(address), "delete inline policy", "the change has no observed fields")
        })?;
        let response =
            self.client.delete_role_policy().role_name(&before.role).policy_name(&before.policy_name).send().await;
        gone_if(response, &[NO_SUCH_ENTITY]).map_err(failed(Some(address), "delete inline policy"))?;
        Ok(Applied::Done)
    }
}

/// S105 when the live document an update of an inline policy replaces allows what the derived
/// one does not, by its form: each statement it has that the derived one lacks (its `Sid` aside)
/// allowing an action no derived statement covers (`ecr:*` where the derived policy names
/// `ecr:PutImage`), or a covered action on a resource pattern (`*`, `repository/*`) no derived
/// statement for that action covers. A resource named outright is not judged: the derived policy
/// grants the repositories by this deployment's mark, which a name cannot be compared with.
pub(crate) fn widened(change: &Change) -> Result<Option<Finding>, ReconcileError> {
    let (Some(live), after) = (
        reconcile_core::spec::before::<RolePolicySpec>(change)?,
        reconcile_core::spec::after::<RolePolicySpec>(change)?,
    ) else {
        return Ok(None);
    };
    let derived = allowing(&after.document);
    // Whether a derived statement's pattern covers `value` (taken literally: `*` in it is a
    // character the pattern must match), actions without regard to case.
    let covers = |statement: &Value, key: &str, value: &str| {
        strings(statement.get(key)).iter().any(|pattern| {
            if key == "Action" {
                crate::evaluate::matches(&pattern.to_ascii_lowercase(), &value.to_ascii_lowercase())
            } else {
                crate::evaluate::matches(pattern, value)
            }
        })
    };
    let mut more = Vec::new();
    for statement in allowing(&live.document) {
        if derived.contains(&statement) {
            continue;
        }
        if statement.get("NotAction").is_some() || statement.get("NotResource").is_some() {
            more.push("a statement that allows by exclusion (NotAction or NotResource)".to_owned());
            continue;
        }
        let resources = strings(statement.get("Resource"));
        for action in strings(statement.get("Action")) {
            let granting: Vec<&Value> = derived.iter().filter(|d| covers(d, "Action", &action)).collect();
            if granting.is_empty() {
                more.push(format!("`{action}` on `{}`", resources.join("`, `")));
                continue;
            }
            for resource in resources.iter().filter(|r| r.contains(['*', '?'])) {
                if !granting.iter().any(|d| covers(d, "Resource", resource)) {
                    more.push(format!("`{action}` on `{resource}`"));
                }
            }
        }
    }
    Ok((!more.is_empty()).then(|| widened_finding(change, &live, &more)))
}

/// The `Allow` statements of `document`, each without its `Sid` (a name, not a grant).
fn allowing(document: &Value) -> Vec<Value> {
    let statements = document.get("Statement").and_then(Value::as_array).cloned().unwrap_or_default();
    statements
        .into_iter()
        .filter(|statement| statement.get("Effect").and_then(Value::as_str) == Some("Allow"))
        .map(|mut statement| {
            if let Some(fields) = statement.as_object_mut() {
                fields.remove("Sid");
            }
            statement
        })
        .collect()
}

/// A statement's `Action` or `Resource`, one string or a list.
fn strings(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        Some(Value::String(one)) => vec![one.clone()],
        _ => Vec::new(),
    }
}

/// S105 naming the first few of `more`, what `live` allows beyond the derived policy.
fn widened_finding(change: &Change, live: &RolePolicySpec, more: &[String]) -> Finding {
    let shown = more.len().min(5);
    let rest = if more.len() > shown { format!(" and {} more", more.len() - shown) } else { String::new() };
    Finding {
        code: crate::POLICY_WIDENED.to_owned(),
        severity: Severity::Error,
        address: Some(change.address.clone()),
        message: format!(
            "the inline policy `{}` of role `{}` allows more than desired.toml derives: {}{rest}; whoever runs as the \
             role can do it until the plan puts the derived policy back",
            live.policy_name,
            live.role,
            more[..shown].join(", ")
        ),
        overridden_by: None,
    }
}

pub(crate) fn terraform(block: &'static str, fields: &Map<String, Value>) -> ProviderResource {
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
    .forcing_new(FIELDS.forcing_new(&[]))
    .computing(json!({ "id": format!("{}:{}", str_field(fields, "role"), str_field(fields, "policy_name")) }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(live: Value, derived: Value) -> Change {
        let spec = |document| RolePolicySpec { role: "runner".into(), policy_name: "nightly".into(), document };
        Change {
            address: Address::new(crate::ROLE_POLICY, "codebuild"),
            action: reconcile_core::Action::Update,
            before: Some(attributes(&spec(live))),
            after: Some(attributes(&spec(derived))),
            depends_on: Vec::new(),
        }
    }

    #[test]
    fn an_inline_policy_that_allows_more_than_derived_is_a_security_finding_naming_what() {
        let push = json!({ "Sid": "Push", "Effect": "Allow", "Action": ["ecr:PutImage"], "Resource": ["arn:aws:ecr:us-east-1:1:repository/pytorch"] });
        let derived = json!({ "Version": "2012-10-17", "Statement": [push.clone()] });
        let mut widened = derived.clone();
        widened["Statement"]
            .as_array_mut()
            .unwrap()
            .push(json!({ "Effect": "Allow", "Action": ["ecr:*"], "Resource": ["*"] }));
        let finding = finding_of(&update(widened, derived.clone()));
        assert_eq!(
            finding.as_ref().map(|f| (f.code.as_str(), f.severity)),
            Some((crate::POLICY_WIDENED, Severity::Error))
        );
        assert!(finding.unwrap().message.contains("allows more than desired.toml derives: `ecr:*` on `*`;"));
        // Narrower, renamed or split: nothing more is allowed.
        let narrower = json!({ "Version": "2012-10-17", "Statement": [] });
        assert_eq!(finding_of(&update(narrower, derived.clone())), None);
        let mut split = derived.clone();
        split["Statement"][0]["Sid"] = json!("Renamed");
        assert_eq!(finding_of(&update(split, derived.clone())), None);
        // A resource widened is named too.
        let mut everywhere = derived.clone();
        everywhere["Statement"][0]["Resource"] = json!(["arn:aws:ecr:us-east-1:1:repository/*"]);
        let finding = finding_of(&update(everywhere, derived)).unwrap();
        assert!(
            finding.message.contains("`ecr:PutImage` on `arn:aws:ecr:us-east-1:1:repository/*`"),
            "{}",
            finding.message
        );
    }

    fn finding_of(change: &Change) -> Option<Finding> {
        widened(change).unwrap()
    }
}
