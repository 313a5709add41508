//! What this crate says of itself to everything that goes over every kind: its kinds, its
//! desired resources (the CI roles' policies made of every crate's access), what a CI role
//! needs on the managed roles, and what CloudTrail records of IAM.

use reconcile_core::ResourceKind as K;
use reconcile_core::describe::{Access, Description, Index, KindTrail};
use reconcile_core::{Account, Desired};
use serde_json::{Value, json};

use crate::IamKind;
use crate::derive::boundary_name;

const ROLE_EVENTS: &[&str] = &[
    "CreateRole",
    "DeleteRole",
    "UpdateRole",
    "UpdateRoleDescription",
    "UpdateAssumeRolePolicy",
    "TagRole",
    "UntagRole",
    "PutRolePermissionsBoundary",
    "DeleteRolePermissionsBoundary",
    "AttachRolePolicy",
    "DetachRolePolicy",
];

const fn role(kind: K, findings: &'static [(&'static str, &'static [&'static str])]) -> KindTrail {
    KindTrail {
        kind,
        events: ROLE_EVENTS,
        other_fields: None,
        removals: &["DeleteRole"],
        findings,
        global: true,
        index: Index::Complete,
        names: by_role_name,
    }
}

const fn role_policy(kind: K) -> KindTrail {
    KindTrail {
        kind,
        events: &["PutRolePolicy", "DeleteRolePolicy"],
        other_fields: Some(&["PutRolePolicy"]),
        removals: &["DeleteRolePolicy"],
        findings: &[(crate::POLICY_WIDENED, &["PutRolePolicy"])],
        global: true,
        index: Index::Complete,
        names: by_role_name,
    }
}

/// The reconciler the AWS backend builds.
pub fn reconciler(clients: &reconcile_aws::Clients<'_>) -> Box<dyn reconcile_core::Reconciler> {
    let config = reconcile_aws::configure!(
        aws_sdk_iam::config::Builder::from(clients.sdk),
        clients.interceptor,
        clients.pacing,
        "iam"
    );
    Box::new(
        crate::IamReconciler::new(aws_sdk_iam::Client::from_conf(config), clients.account.clone())
            .with_parallelism(clients.limit("iam")),
    )
}

pub const DESCRIPTION: Description = Description {
    name: "iam",
    kinds: IamKind::KINDS,
    sections: &[crate::section::CLAIM, crate::section::ci::CLAIM],
    desired: crate::spec::desired,
    access: Access { reads, administers, ..Access::NONE },
    trail: &[
        KindTrail {
            kind: crate::ROLE_BOUNDARY,
            events: &[
                "CreatePolicy",
                "CreatePolicyVersion",
                "SetDefaultPolicyVersion",
                "DeletePolicyVersion",
                "DeletePolicy",
                "TagPolicy",
                "UntagPolicy",
            ],
            other_fields: None,
            removals: &["DeletePolicy"],
            findings: &[],
            global: true,
            index: Index::Absent,
            names: boundary_names,
        },
        role(crate::ROLE, &[(crate::ATTACHED_MANAGED_POLICY, &["AttachRolePolicy"])]),
        role(
            crate::CI_ROLE,
            &[
                (crate::ATTACHED_MANAGED_POLICY, &["AttachRolePolicy"]),
                (crate::CI_TRUST_WIDENED, &["UpdateAssumeRolePolicy"]),
                (crate::CI_TRUST_CHANGED, &["UpdateAssumeRolePolicy"]),
            ],
        ),
        role_policy(crate::ROLE_POLICY),
        role_policy(crate::CI_ROLE_POLICY),
        KindTrail {
            kind: crate::OIDC_PROVIDER,
            events: &[
                "CreateOpenIDConnectProvider",
                "DeleteOpenIDConnectProvider",
                "AddClientIDToOpenIDConnectProvider",
                "RemoveClientIDFromOpenIDConnectProvider",
                "UpdateOpenIDConnectProviderThumbprint",
                "TagOpenIDConnectProvider",
                "UntagOpenIDConnectProvider",
            ],
            other_fields: None,
            removals: &["DeleteOpenIDConnectProvider"],
            findings: &[],
            global: true,
            index: Index::Absent,
            names: provider_names,
        },
    ],
    fields: &[
        crate::boundary::FIELDS,
        crate::role::FIELDS,
        crate::role::CI_ROLE_FIELDS,
        crate::role_policy::FIELDS,
        crate::role_policy::CI_ROLE_POLICY_FIELDS,
        crate::oidc_provider::FIELDS,
    ],
    terraform: crate::terraform::MAPPINGS,
    generate: crate::section::generate,
    variables: reconcile_core::describe::derives_no_variables,
};

fn text<'a>(parameters: &'a Value, key: &str) -> Option<&'a str> {
    parameters.get(key).and_then(Value::as_str)
}

fn by_role_name(name: &str, parameters: &Value, _: &Account) -> bool {
    text(parameters, "roleName") == Some(name)
}

/// A boundary is named by its ARN (`name`), which must be this account's.
fn boundary_names(name: &str, parameters: &Value, account: &Account) -> bool {
    name.split(':').nth(4) == Some(account.id.as_str())
        && (text(parameters, "policyArn") == Some(name)
            || text(parameters, "policyName").is_some_and(|policy| name.ends_with(&format!(":policy/{policy}"))))
}

/// The provider is named by its ARN (`name`), or by its URL when it is made.
fn provider_names(name: &str, parameters: &Value, account: &Account) -> bool {
    name.split(':').nth(4) == Some(account.id.as_str())
        && (text(parameters, "openIDConnectProviderArn") == Some(name)
            || name.rsplit_once("oidc-provider/").is_some_and(|(_, host)| {
                text(parameters, "url").is_some_and(|url| url.trim_start_matches("https://") == host)
            }))
}

fn statement(sid: &str, actions: &[&str], resources: Vec<String>) -> Value {
    json!({ "Sid": sid, "Effect": "Allow", "Action": actions, "Resource": resources })
}

fn role_arn(account: &Account, name: &str) -> String {
    reconcile_aws::arn(account, "iam", &format!("role/{name}"))
}

/// Every change in IAM apply and destroy make, on what desired.toml declares: the roles (the
/// runner's and the CI roles), the runner's boundaries, GitHub's identity provider.
fn administers(desired: &Desired, account: &Account) -> Vec<Value> {
    let mut statements = Vec::new();
    let mut roles: Vec<String> = crate::declared(desired).roles.iter().map(|r| role_arn(account, &r.name)).collect();
    roles.extend(crate::declared_ci(desired).iter().flat_map(|ci| &ci.roles).map(|r| role_arn(account, &r.name)));
    if !roles.is_empty() {
        statements.push(statement(
            "MakeChangeAndDestroyTheRoles",
            &[
                "iam:CreateRole",
                "iam:UpdateRole",
                "iam:UpdateAssumeRolePolicy",
                "iam:TagRole",
                "iam:UntagRole",
                "iam:PutRolePolicy",
                "iam:DeleteRolePolicy",
                "iam:PutRolePermissionsBoundary",
                "iam:DeleteRolePermissionsBoundary",
                "iam:DetachRolePolicy",
                "iam:ListInstanceProfilesForRole",
                "iam:DeleteRole",
            ],
            roles,
        ));
        // Deleting a role someone put in an instance profile takes it out of the profile first.
        statements.push(statement(
            "TakeADestroyedRoleOutOfItsInstanceProfiles",
            &["iam:RemoveRoleFromInstanceProfile"],
            vec![reconcile_aws::arn(account, "iam", "instance-profile/*")],
        ));
    }
    let boundaries: Vec<String> = crate::declared(desired)
        .roles
        .iter()
        .map(|role| crate::spec::policy_arn(account, &boundary_name(role)))
        .collect();
    if !boundaries.is_empty() {
        statements.push(statement(
            "MakeChangeAndDestroyTheBoundaries",
            &[
                "iam:CreatePolicy",
                "iam:CreatePolicyVersion",
                "iam:ListPolicyVersions",
                "iam:DeletePolicyVersion",
                "iam:TagPolicy",
                "iam:UntagPolicy",
                "iam:DeletePolicy",
            ],
            boundaries,
        ));
    }
    if crate::declared_ci(desired).is_some() {
        // Never an audience taken off it, nor it deleted: it is the account's one, and every
        // deployment and team in it may rely on it.
        statements.push(statement(
            "MakeAndChangeGitHubsIdentityProvider",
            &[
                "iam:CreateOpenIDConnectProvider",
                "iam:AddClientIDToOpenIDConnectProvider",
                "iam:TagOpenIDConnectProvider",
                "iam:UntagOpenIDConnectProvider",
            ],
            vec![crate::ci::provider_arn(account)],
        ));
    }
    statements
}

fn reads(desired: &Desired, account: &Account) -> Vec<Value> {
    let mut statements = Vec::new();
    let mut roles: Vec<String> = crate::declared(desired).roles.iter().map(|r| role_arn(account, &r.name)).collect();
    roles.extend(crate::declared_ci(desired).iter().flat_map(|ci| &ci.roles).map(|r| role_arn(account, &r.name)));
    if !roles.is_empty() {
        statements.push(statement(
            "TheManagedRoles",
            &["iam:GetRole", "iam:ListRolePolicies", "iam:GetRolePolicy", "iam:ListAttachedRolePolicies"],
            roles,
        ));
    }
    let boundaries: Vec<String> = crate::declared(desired)
        .roles
        .iter()
        .map(|role| crate::spec::policy_arn(account, &boundary_name(role)))
        .collect();
    if !boundaries.is_empty() {
        statements.push(statement("TheRunnersRolesBoundaries", &["iam:GetPolicy", "iam:GetPolicyVersion"], boundaries));
    }
    if crate::declared_ci(desired).is_some() {
        statements.push(statement(
            "GitHubsIdentityProvider",
            &["iam:GetOpenIDConnectProvider"],
            vec![crate::ci::provider_arn(account)],
        ));
        // ListRoles has no resource to scope to: the search for other roles that trust GitHub.
        statements.push(statement("RolesThatTrustGitHub", &["iam:ListRoles"], vec!["*".to_owned()]));
        // Whose each of those few is: another deployment's CI role is not this one's drift.
        statements.push(statement("WhoseRolesThatTrustGitHub", &["iam:ListRoleTags"], vec![role_arn(account, "*")]));
    }
    statements
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_names_a_role_by_name_and_a_provider_or_boundary_by_its_arn_in_this_account() {
        let account = Account::new("123456789012", "eu-west-1");
        assert!(by_role_name("r", &json!({ "roleName": "r", "policyName": "p" }), &account));
        assert!(!by_role_name("r", &json!({ "roleName": "s" }), &account));
        let provider = "arn:aws:iam::123456789012:oidc-provider/token.actions.githubusercontent.com";
        assert!(provider_names(provider, &json!({ "url": "https://token.actions.githubusercontent.com" }), &account));
        assert!(provider_names(provider, &json!({ "openIDConnectProviderArn": provider }), &account));
        let theirs = "arn:aws:iam::210987654321:oidc-provider/token.actions.githubusercontent.com";
        assert!(!provider_names(theirs, &json!({ "openIDConnectProviderArn": theirs }), &account));
        let boundary = "arn:aws:iam::123456789012:policy/rocm-bake-codebuild-boundary";
        assert!(boundary_names(boundary, &json!({ "policyArn": boundary }), &account));
        assert!(boundary_names(boundary, &json!({ "policyName": "rocm-bake-codebuild-boundary" }), &account));
        assert!(!boundary_names(boundary, &json!({ "policyName": "other" }), &account));
    }
}
