//! IAM's kinds as the AWS provider's resources (`plan --format terraform-json`): each kind's
//! module maps it and documents how; this is the list, and what the mappings share.

use reconcile_core::Account;
use reconcile_core::terraform::Mapping;
use serde_json::{Map, Value};

pub const MAPPINGS: &[Mapping] = &[
    Mapping { kind: crate::ROLE_BOUNDARY, map: crate::boundary::terraform, unmapped: "" },
    Mapping {
        kind: crate::ROLE,
        map: |account, _, fields| vec![crate::role::terraform(account, "runner", fields)],
        unmapped: "",
    },
    Mapping {
        kind: crate::ROLE_POLICY,
        map: |_, _, fields| vec![crate::role_policy::terraform("runner", fields)],
        unmapped: "",
    },
    Mapping { kind: crate::OIDC_PROVIDER, map: crate::oidc_provider::terraform, unmapped: "" },
    Mapping {
        kind: crate::CI_ROLE,
        map: |account, _, fields| vec![crate::role::terraform(account, "ci", fields)],
        unmapped: "",
    },
    Mapping {
        kind: crate::CI_ROLE_POLICY,
        map: |_, _, fields| vec![crate::role_policy::terraform("ci", fields)],
        unmapped: "",
    },
];

pub(crate) fn field(fields: &Map<String, Value>, key: &str) -> Value {
    fields.get(key).cloned().unwrap_or(Value::Null)
}

/// `arn:<partition>:iam::<account>:<resource>`
pub(crate) fn arn(account: &Account, resource: &str) -> String {
    format!("arn:{}:iam::{}:{resource}", account.partition, account.id)
}

pub(crate) fn str_field<'a>(fields: &'a Map<String, Value>, key: &str) -> &'a str {
    fields.get(key).and_then(Value::as_str).unwrap_or_default()
}
