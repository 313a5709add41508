//! `reconcile policy read-only|apply|put-back|runner|boundary`: the policy of a CI role (`[ci]`), or the
//! runner's role's inline policy or permissions boundary, as apply derives it, for the bootstrap
//! an administrator does and for review (`docs/read-only-policy.json` is the read-only one for
//! the project's desired.toml).

use reconcile_core::{Account, Desired, json};
use reconcile_iam::Role;

use crate::args::PolicyRole;
use crate::aws::{Aws, Purpose};
use crate::catalog::CATALOG;
use crate::error::CliError;
use crate::exit;
use crate::output::out;

pub async fn run(
    desired: &Desired,
    role: PolicyRole,
    key: Option<&str>,
    account: Option<&str>,
    limits: crate::aws::Limits,
) -> Result<u8, CliError> {
    // Which role is known before any AWS call.
    let which = match role {
        PolicyRole::Plan => Which::Plan,
        PolicyRole::ReadOnly => Which::ReadOnly,
        PolicyRole::Apply => Which::Apply,
        PolicyRole::PutBack => Which::PutBack,
        PolicyRole::Administrator => Which::Administrator,
        PolicyRole::Runner => Which::Runner(runner_role(desired, key)?),
        PolicyRole::Boundary => Which::Boundary(runner_role(desired, key)?),
    };
    let account = match account {
        Some(id) if id.len() == 12 && id.bytes().all(|b| b.is_ascii_digit()) => Account::new(id, &desired.region),
        Some(id) => {
            return Err(CliError::Input(vec![format!("--account: `{id}` is not an AWS account id (12 digits)")]));
        }
        None => {
            let aws = Aws::load(&desired.region, Purpose::Read, limits).await;
            aws.account().await.map_err(|error| aws.failed(vec![error]))?
        }
    };
    let policy = match which {
        Which::Plan => Ok(reconcile_iam::plan_policy(desired, &account, &CATALOG)),
        Which::ReadOnly => Ok(reconcile_iam::read_only_policy(desired, &account, &CATALOG)),
        Which::Apply => reconcile_iam::apply_policy(desired, &account, &CATALOG),
        Which::PutBack => Ok(reconcile_iam::put_back_policy(desired, &account, &CATALOG)),
        Which::Administrator => reconcile_iam::administrator_policy(desired, &account, &CATALOG),
        Which::Runner(role) => reconcile_iam::inline_policy(desired, &CATALOG, role, &account),
        Which::Boundary(role) => reconcile_iam::boundary_policy(desired, &CATALOG, role, &account),
    }
    .map_err(|why| CliError::Input(vec![why]))?;
    out(&format!("{}\n", json::to_pretty(&policy)))?;
    Ok(exit::OK)
}

enum Which<'a> {
    Plan,
    ReadOnly,
    Apply,
    PutBack,
    Administrator,
    Runner(&'a Role),
    Boundary(&'a Role),
}

/// The role under `[iam.roles]` that `key` names, or the only one.
fn runner_role<'a>(desired: &'a Desired, key: Option<&str>) -> Result<&'a Role, CliError> {
    let keys: Vec<&str> = reconcile_iam::declared(desired).roles.iter().map(|role| role.key.as_str()).collect();
    match key {
        Some(key) => reconcile_iam::declared(desired).roles.iter().find(|role| role.key == key).ok_or_else(|| {
            CliError::Input(vec![format!(
                "--role: desired.toml declares no `[iam.roles.{key}]` (it declares: {})",
                keys.join(", ")
            )])
        }),
        None => match reconcile_iam::declared(desired).roles.as_slice() {
            [role] => Ok(role),
            [] => Err(CliError::Input(vec!["desired.toml declares no role under `[iam.roles]`".to_owned()])),
            _ => Err(CliError::Input(vec![format!(
                "desired.toml declares several roles under `[iam.roles]` ({}): say which with --role",
                keys.join(", ")
            )])),
        },
    }
}
