//! The CI identities (`[ci]`): GitHub's OIDC provider, each CI role's trust (one exact `sub`),
//! and what each may do, derived from the rest of desired.toml: the read-only policy of the plan
//! and drift roles, and the apply role's, which adds exactly the writes apply makes on exactly
//! the declared resources and nothing on the CI identities themselves.
//!
//! The actions are the ones the resource crates call, each crate's in its own description
//! (`reconcile_core::describe::Access`). A test runs every read command and
//! a sequence of applies that makes every kind of write, maps each request the emulator
//! recorded to its IAM action and resource, and holds these policies to exactly that set: a
//! reconciler that starts calling something new fails it until the derivation names it.

use reconcile_core::Account;
use reconcile_core::describe::Catalog;
use reconcile_core::desired::Desired;

use crate::section::ci::{CiRole, GITHUB_OIDC_AUDIENCE, GITHUB_OIDC_HOST};
use serde_json::{Value, json};

use crate::derive::{INLINE_POLICY_LIMIT, size};

/// The OIDC provider's ARN: IAM names it by its host.
pub fn provider_arn(account: &Account) -> String {
    reconcile_aws::arn(account, "iam", &format!("oidc-provider/{GITHUB_OIDC_HOST}"))
}

/// Whether `arn` is GitHub Actions' OIDC provider, in any account or partition.
pub fn is_github_provider(arn: &str) -> bool {
    arn.starts_with("arn:") && arn.ends_with(&format!(":oidc-provider/{GITHUB_OIDC_HOST}"))
}

/// The trust policy of a CI role: web identity from GitHub's provider only, for the AWS
/// audience, for exactly one subject (`StringEquals`, never `StringLike`).
pub fn trust_policy(role: &CiRole, account: &Account) -> Value {
    json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Principal": { "Federated": provider_arn(account) },
            "Action": "sts:AssumeRoleWithWebIdentity",
            "Condition": {
                "StringEquals": {
                    format!("{GITHUB_OIDC_HOST}:aud"): GITHUB_OIDC_AUDIENCE,
                    format!("{GITHUB_OIDC_HOST}:sub"): role.subject,
                },
            },
        }],
    })
}

/// What a live trust policy allows beyond the `derived` one (both canonical), each as a phrase:
/// another principal, another action, a missing or different audience, a subject matched by
/// pattern or another subject. Empty when it allows nothing more.
pub fn trust_widening(live: &Value, derived: &Value) -> Vec<String> {
    let first = |value: &Value| strings(value).into_iter().next().unwrap_or_default();
    let derived_statement = &derived["Statement"][0];
    let provider = first(&derived_statement["Principal"]["Federated"]);
    let subject = first(&derived_statement["Condition"]["StringEquals"][format!("{GITHUB_OIDC_HOST}:sub")]);
    let Some(statements) = live.get("Statement").and_then(Value::as_array) else {
        return vec!["it is not a policy document".to_owned()];
    };
    let mut reasons = Vec::new();
    for statement in statements.iter().filter(|s| s.get("Effect").and_then(Value::as_str) == Some("Allow")) {
        if statement.get("NotPrincipal").is_some() || statement.get("NotAction").is_some() {
            reasons.push("a statement allows by exclusion (NotPrincipal or NotAction)".to_owned());
            continue;
        }
        match statement.get("Principal") {
            Some(Value::Object(principals)) => {
                for (kind, values) in principals {
                    for value in strings(values) {
                        if !(kind == "Federated" && value == provider) {
                            reasons.push(format!("it trusts {kind} principal `{value}`"));
                        }
                    }
                }
            }
            Some(other) => reasons.push(format!("it trusts principal `{}`", strings(other).join(", "))),
            None => reasons.push("a statement names no principal".to_owned()),
        }
        for action in statement.get("Action").map(strings).unwrap_or_default() {
            if action != "sts:AssumeRoleWithWebIdentity" {
                reasons.push(format!("it allows `{action}`"));
            }
        }
        let conditions = statement.get("Condition").and_then(Value::as_object);
        let equals = |key: &str| -> Option<Vec<String>> {
            conditions?.get("StringEquals")?.get(format!("{GITHUB_OIDC_HOST}:{key}")).map(strings)
        };
        match equals("aud") {
            Some(audiences) if audiences == [GITHUB_OIDC_AUDIENCE] => {}
            Some(audiences) => reasons.push(format!("its audience is {}", quoted(&audiences))),
            None => reasons.push(format!("it does not require the audience `{GITHUB_OIDC_AUDIENCE}`")),
        }
        match equals("sub") {
            Some(subjects) if subjects == [subject.clone()] => {}
            Some(subjects) => reasons.push(format!("it trusts the subjects {}", quoted(&subjects))),
            None => {
                let patterns: Vec<String> = conditions
                    .into_iter()
                    .flat_map(|c| c.iter())
                    .filter_map(|(operator, keys)| {
                        let values = keys.get(format!("{GITHUB_OIDC_HOST}:sub"))?;
                        Some(format!("{operator} {}", quoted(&strings(values))))
                    })
                    .collect();
                if patterns.is_empty() {
                    reasons.push("it trusts any subject (no `sub` condition)".to_owned());
                } else {
                    reasons.push(format!("it matches the subject by {}", patterns.join(", ")));
                }
            }
        }
    }
    reasons.sort();
    reasons.dedup();
    reasons
}

/// The one subject a live trust admits when it is the `derived` trust (both canonical) in every
/// way but the subject: the trust of another repository, branch or environment, exactly. `None`
/// when it differs in anything else (what [`trust_widening`] names then).
pub fn other_subject(live: &Value, derived: &Value) -> Option<String> {
    let key = format!("{GITHUB_OIDC_HOST}:sub");
    let subject = live.get("Statement")?.get(0)?.get("Condition")?.get("StringEquals")?.get(&key)?;
    let subjects = strings(subject);
    let [one] = subjects.as_slice() else { return None };
    let mut same = derived.clone();
    *same.get_mut("Statement")?.get_mut(0)?.get_mut("Condition")?.get_mut("StringEquals")?.get_mut(&key)? =
        subject.clone();
    (same == *live).then(|| one.clone())
}

/// The subject the `derived` trust admits.
pub fn derived_subject(derived: &Value) -> String {
    let subject = &derived["Statement"][0]["Condition"]["StringEquals"][format!("{GITHUB_OIDC_HOST}:sub")];
    strings(subject).into_iter().next().unwrap_or_default()
}

/// The `sub` conditions of the statements of `trust` (canonical form) that trust GitHub's
/// provider, as `operator value` phrases; `None` when no statement trusts it.
pub fn github_subjects(trust: &Value) -> Option<Vec<String>> {
    let statements = trust.get("Statement")?.as_array()?;
    let mut subjects = Vec::new();
    let mut trusted = false;
    for statement in statements {
        let federated = statement.get("Principal").and_then(|p| p.get("Federated")).map(strings).unwrap_or_default();
        if !federated.iter().any(|arn| is_github_provider(arn)) {
            continue;
        }
        trusted = true;
        let conditions = statement.get("Condition").and_then(Value::as_object);
        let before = subjects.len();
        for (operator, keys) in conditions.into_iter().flat_map(|c| c.iter()) {
            if let Some(values) = keys.get(format!("{GITHUB_OIDC_HOST}:sub")) {
                subjects.push(format!("{operator} {}", quoted(&strings(values))));
            }
        }
        if subjects.len() == before {
            subjects.push("any subject".to_owned());
        }
    }
    trusted.then_some(subjects)
}

fn strings(value: &Value) -> Vec<String> {
    match value {
        Value::Array(items) => items.iter().flat_map(strings).collect(),
        Value::String(text) => vec![text.clone()],
        other => vec![other.to_string()],
    }
}

fn quoted(values: &[String]) -> String {
    values.iter().map(|v| format!("`{v}`")).collect::<Vec<_>>().join(", ")
}

/// Never granted to the apply role, whatever else a policy attached to it by hand may grant: every
/// write in IAM (who may assume a role, what a role may do, a boundary, a new identity, the OIDC
/// provider) and assuming a role, but for the one put below ([`RUNNER_POLICY_PUT`]).
/// `iam:PassRole` is not among them: apply passes the runner's role to CodeBuild, and CodeBuild's
/// statement allows only that.
const NEVER: [&str; 16] = [
    "iam:Add*",
    "iam:Attach*",
    "iam:Change*",
    "iam:Create*",
    "iam:Deactivate*",
    "iam:Delete*",
    "iam:Detach*",
    "iam:Enable*",
    "iam:Remove*",
    "iam:Reset*",
    "iam:Set*",
    "iam:Tag*",
    "iam:Untag*",
    "iam:Update*",
    "iam:Upload*",
    "sts:AssumeRole",
];

/// The one IAM write the apply role makes: a runner role's inline policy, which names the
/// repositories a build may push to and make (ECR's `runner.rs`), so that declaring one (a bake
/// target added) needs no administrator. Only on a role that carries its own boundary, which
/// only an administrator writes: whatever the apply role puts, the role may never do more than
/// the boundary allows (IAM's delegated role management, with `iam:PermissionsBoundary`).
const RUNNER_POLICY_PUT: &str = "iam:PutRolePolicy";

/// The apply role's statements on the runner roles: putting each one's inline policy while it
/// carries its own boundary, and denying every other `iam:Put*` (and that one elsewhere, or on a
/// role without its boundary), so that nothing attached to the role later grants them.
fn runner_policy_puts(desired: &Desired, account: &Account) -> Vec<Value> {
    let roles: Vec<(String, String)> = crate::declared(desired)
        .roles
        .iter()
        .map(|role| {
            let arn = reconcile_aws::arn(account, "iam", &format!("role/{}", role.name));
            (arn, crate::spec::policy_arn(account, &crate::derive::boundary_name(role)))
        })
        .collect();
    let mut statements = Vec::new();
    if roles.is_empty() {
        statements
            .push(json!({ "Sid": "NeverAPolicyPut", "Effect": "Deny", "Action": ["iam:Put*"], "Resource": ["*"] }));
        return statements;
    }
    let arns: Vec<&str> = roles.iter().map(|(arn, _)| arn.as_str()).collect();
    for (index, (role, boundary)) in roles.iter().enumerate() {
        statements.push(json!({
            "Sid": format!("PutTheRunnersInlinePolicyWithinItsBoundary{index}"),
            "Effect": "Allow",
            "Action": [RUNNER_POLICY_PUT],
            "Resource": [role],
            "Condition": { "ArnEquals": { "iam:PermissionsBoundary": boundary } },
        }));
        statements.push(json!({
            "Sid": format!("NeverPutTheRunnersInlinePolicyWithoutItsBoundary{index}"),
            "Effect": "Deny",
            "Action": [RUNNER_POLICY_PUT],
            "Resource": [role],
            "Condition": { "ArnNotEquals": { "iam:PermissionsBoundary": boundary } },
        }));
    }
    statements.push(json!({
        "Sid": "NeverAPolicyPutElsewhere",
        "Effect": "Deny",
        "Action": ["iam:Put*"],
        "NotResource": arns,
    }));
    statements.push(json!({
        "Sid": "NeverMoveTheRunnersBoundary",
        "Effect": "Deny",
        "Action": ["iam:PutRolePermissionsBoundary"],
        "Resource": arns,
    }));
    statements
}

/// The plan role's policy: what a plan reads of the resources reconcile manages, and nothing
/// else. Its plans are public (every pull request's, a fork's included), so it reads no other
/// team's repository, and nothing only the drift check needs.
pub fn plan_policy(desired: &Desired, account: &Account, catalog: &Catalog) -> Value {
    let mut statements = catalog.statements(desired, account, |access| access.reads);
    // A plan's cost line prices a change to the builds or the cache from what they measured.
    statements.extend(catalog.statements(desired, account, |access| access.cost_reads));
    json!({ "Version": "2012-10-17", "Statement": statements })
}

/// The drift role's policy, and `docs/read-only-policy.json`'s: what a plan reads of every
/// crate's resources, what a survey of the account reads, and what the drift check reads
/// besides (the nights' cost, and who made the drift: CloudTrail's event history, which has no
/// resource to scope to).
pub fn read_only_policy(desired: &Desired, account: &Account, catalog: &Catalog) -> Value {
    let mut statements = catalog.statements(desired, account, |access| access.reads);
    statements.extend(catalog.statements(desired, account, |access| access.survey_reads));
    statements.extend(catalog.statements(desired, account, |access| access.cost_reads));
    statements.extend(catalog.statements(desired, account, |access| access.drift_reads));
    statements.push(json!({
        "Sid": "WhoChangedIt",
        "Effect": "Allow",
        "Action": ["cloudtrail:LookupEvents"],
        "Resource": ["*"],
    }));
    json!({ "Version": "2012-10-17", "Statement": statements })
}

/// The apply role's policy: the reads, and exactly the writes apply makes on the declared
/// resources, as every crate derives them. No write in IAM but a runner role's inline policy,
/// within its boundary ([`RUNNER_POLICY_PUT`]), and statements that deny every other one, and
/// assuming a role, so that nothing attached to the role later grants them. `Err` when it would
/// not fit in a role's inline policies.
pub fn apply_policy(desired: &Desired, account: &Account, catalog: &Catalog) -> Result<Value, String> {
    let mut statements = catalog.statements(desired, account, |access| access.reads);
    statements.extend(catalog.statements(desired, account, |access| access.survey_reads));
    statements.extend(catalog.statements(desired, account, |access| access.writes));
    statements.extend(catalog.statements(desired, account, |access| access.lock));
    statements.extend(runner_policy_puts(desired, account));
    statements.push(json!({
        "Sid": "NeverAnIdentityOrPermissionChangeNorAnotherRole",
        "Effect": "Deny",
        "Action": NEVER,
        "Resource": ["*"],
    }));
    let policy = json!({ "Version": "2012-10-17", "Statement": statements });
    if size(&policy) > INLINE_POLICY_LIMIT {
        return Err(format!(
            "the derived policy of the apply role would be {} characters, over IAM's limit of {INLINE_POLICY_LIMIT} \
             for a role's inline policies",
            size(&policy)
        ));
    }
    Ok(policy)
}

/// The put-back role's policy: what the drift role reads (it runs the drift check), the apply
/// lock, and exactly the writes that put back the kinds `[drift] put_back` names, each on this
/// deployment's resources only (as each kind's crate scopes it); nothing of any other kind, no
/// delete, no create, and every write in IAM and assuming a role denied, so that nothing attached
/// to the role later grants them.
pub fn put_back_policy(desired: &Desired, account: &Account, catalog: &Catalog) -> Value {
    let mut statements =
        read_only_policy(desired, account, catalog)["Statement"].as_array().cloned().unwrap_or_default();
    statements.extend(catalog.statements(desired, account, |access| access.lock));
    for named in &desired.put_back {
        if let Some(kind) = catalog.put_back(&named.kind) {
            statements.extend((kind.writes)(desired, account));
        }
    }
    // The apply role's denials, and the two IAM writes it alone makes: putting a runner's inline
    // policy, passing the runner's role.
    let mut never: Vec<&str> = NEVER.to_vec();
    never.extend(["iam:PassRole", "iam:Put*"]);
    statements.push(json!({
        "Sid": "NeverAnIdentityOrPermissionChangeNorAnotherRole",
        "Effect": "Deny",
        "Action": never,
        "Resource": ["*"],
    }));
    json!({ "Version": "2012-10-17", "Statement": statements })
}

/// The policy of the CI role for `purpose`. `Err` when it would not fit in a role's inline
/// policies.
pub fn policy(
    purpose: crate::CiPurpose,
    desired: &Desired,
    account: &Account,
    catalog: &Catalog,
) -> Result<Value, String> {
    use crate::CiPurpose;
    Ok(match purpose {
        CiPurpose::Plan => plan_policy(desired, account, catalog),
        CiPurpose::Drift => read_only_policy(desired, account, catalog),
        CiPurpose::Apply => apply_policy(desired, account, catalog)?,
        CiPurpose::PutBack => put_back_policy(desired, account, catalog),
    })
}

/// An administrator's policy for desired.toml: everything a plan, the drift check, apply and
/// destroy read and write on what it declares, and nothing else (the live suite's sandbox role,
/// least privilege). No denial: it is the role that makes what the CI roles may not.
pub fn administrator_policy(desired: &Desired, account: &Account, catalog: &Catalog) -> Result<Value, String> {
    let mut statements = catalog.statements(desired, account, |access| access.reads);
    statements.extend(catalog.statements(desired, account, |access| access.survey_reads));
    statements.extend(catalog.statements(desired, account, |access| access.cost_reads));
    statements.extend(catalog.statements(desired, account, |access| access.drift_reads));
    statements.extend(catalog.statements(desired, account, |access| access.writes));
    statements.extend(catalog.statements(desired, account, |access| access.lock));
    statements.extend(catalog.statements(desired, account, |access| access.administers));
    let policy = json!({ "Version": "2012-10-17", "Statement": statements });
    if size(&policy) > INLINE_POLICY_LIMIT {
        return Err(format!(
            "the derived administrator policy would be {} characters, over IAM's limit of {INLINE_POLICY_LIMIT} for a \
             role's inline policies",
            size(&policy)
        ));
    }
    Ok(policy)
}

#[cfg(test)]
mod tests {

    use crate::section::ci::CiPurpose;

    use super::*;
    use crate::policy::canonical;

    /// A small account with the three CI roles: the runner's role and project, one repository.
    const BASE: &str = include_str!("../../../tests/fixtures/ci.desired.toml");

    fn account() -> Account {
        Account::new("123456789012", "us-east-1")
    }

    #[test]
    fn the_derived_trust_admits_nothing_more_and_each_widening_is_named() {
        let desired = crate::testing::parse(BASE);
        let role = crate::declared_ci(&desired).unwrap().role(CiPurpose::Apply).unwrap().clone();
        let derived = canonical(&trust_policy(&role, &account()), "aws");
        assert_eq!(trust_widening(&derived, &derived), Vec::<String>::new());
        assert_eq!(
            github_subjects(&derived),
            Some(vec![
                "StringEquals `repo:ROCm/rocm-bake:environment:prod:job_workflow_ref:ROCm/rocm-bake/.github/workflows/\
                 apply-after-merge.yml@refs/heads/main`"
                    .to_owned()
            ])
        );

        // Exactly another subject: the plan's change of whom it trusts, not a widening.
        let mut forked = derived.clone();
        forked["Statement"][0]["Condition"]["StringEquals"][format!("{GITHUB_OIDC_HOST}:sub")] =
            json!(["repo:attacker/fork:environment:prod"]);
        assert_eq!(other_subject(&forked, &derived), Some("repo:attacker/fork:environment:prod".to_owned()));
        let subject = "repo:ROCm/rocm-bake:environment:prod:job_workflow_ref:ROCm/rocm-bake/.github/workflows/\
                       apply-after-merge.yml@refs/heads/main";
        assert_eq!(derived_subject(&derived), subject);
        assert_eq!(other_subject(&derived, &derived), Some(subject.to_owned()));
        let mut two = derived.clone();
        two["Statement"][0]["Condition"]["StringEquals"][format!("{GITHUB_OIDC_HOST}:sub")] =
            json!(["repo:a/b:pull_request", subject]);
        assert_eq!(other_subject(&two, &derived), None, "two subjects admit more");
        let mut pattern = derived.clone();
        pattern["Statement"][0]["Condition"] = json!({
            "StringEquals": { format!("{GITHUB_OIDC_HOST}:aud"): ["sts.amazonaws.com"] },
            "StringLike": { format!("{GITHUB_OIDC_HOST}:sub"): ["repo:ROCm/*"] },
        });
        assert_eq!(other_subject(&pattern, &derived), None);
        assert_eq!(trust_widening(&pattern, &derived), ["it matches the subject by StringLike `repo:ROCm/*`"]);
        let mut no_audience = forked.clone();
        no_audience["Statement"][0]["Condition"]["StringEquals"]
            .as_object_mut()
            .unwrap()
            .remove(&format!("{GITHUB_OIDC_HOST}:aud"));
        assert_eq!(other_subject(&no_audience, &derived), None);

        let mut open = derived.clone();
        open["Statement"][0]["Condition"] = json!({});
        assert_eq!(
            trust_widening(&open, &derived),
            ["it does not require the audience `sts.amazonaws.com`", "it trusts any subject (no `sub` condition)",]
        );
        assert_eq!(github_subjects(&open), Some(vec!["any subject".to_owned()]));
        let mut other = derived.clone();
        other["Statement"][0]["Principal"] = json!({ "AWS": ["*"] });
        other["Statement"][0]["Action"] = json!(["sts:AssumeRole"]);
        assert_eq!(trust_widening(&other, &derived), ["it allows `sts:AssumeRole`", "it trusts AWS principal `*`"]);
        assert_eq!(github_subjects(&other), None);
        assert_eq!(trust_widening(&json!("not json"), &derived), ["it is not a policy document"]);
        // A deny narrows: it is not a widening.
        let mut denied = derived.clone();
        denied["Statement"].as_array_mut().unwrap().push(json!({ "Effect": "Deny", "Principal": "*", "Action": "*" }));
        assert_eq!(trust_widening(&denied, &derived), Vec::<String>::new());
    }
}
