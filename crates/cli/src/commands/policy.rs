//! `reconcile policy read-only|apply`: the policy of a CI role (`[ci]`) as apply derives it, for
//! the bootstrap an administrator does by hand and for review (`docs/read-only-policy.json` is
//! its output for the project's desired.toml).

use reconcile_core::{Account, Desired, json};

use crate::args::PolicyRole;
use crate::aws::{Aws, Purpose};
use crate::error::CliError;
use crate::exit;
use crate::output::out;

pub async fn run(
    desired: &Desired,
    role: PolicyRole,
    account: Option<&str>,
    parallelism: usize,
) -> Result<u8, CliError> {
    let account = match account {
        Some(id) if id.len() == 12 && id.bytes().all(|b| b.is_ascii_digit()) => Account::new(id, &desired.region),
        Some(id) => {
            return Err(CliError::Input(vec![format!("--account: `{id}` is not an AWS account id (12 digits)")]));
        }
        None => {
            let aws = Aws::load(&desired.region, Purpose::Read, parallelism).await;
            aws.account().await.map_err(|error| aws.failed(vec![error]))?
        }
    };
    let policy = match role {
        PolicyRole::ReadOnly => reconcile_iam::read_only_policy(desired, &account),
        PolicyRole::Apply => {
            reconcile_iam::apply_policy(desired, &account).map_err(|why| CliError::Input(vec![why]))?
        }
    };
    out(&format!("{}\n", json::to_pretty(&policy)))?;
    Ok(exit::OK)
}
