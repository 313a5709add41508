//! The repositories desired.toml does not declare: listed, each one's lifecycle policy checked
//! (D103, E108), whether it carries this deployment's mark (D109), and, when pruning, whether it
//! is reconcile's to delete (D104).

use std::collections::BTreeSet;

use reconcile_core::plan::{DesiredResource, Finding, Observed, Severity};
use reconcile_core::{Address, ReconcileError};

use crate::lifecycle::live_tagged_expiry;
use crate::repository::RepositoryState;
use crate::{EcrReconciler, MARKED_UNDECLARED, NOT_PRUNED, UNDECLARED_POLICY_UNREAD};

impl EcrReconciler {
    /// Every repository of the account that `desired` does not declare.
    pub(crate) async fn undeclared(
        &self,
        desired: &[&DesiredResource],
    ) -> Result<Vec<(String, RepositoryState)>, ReconcileError> {
        let declared: BTreeSet<&str> = desired.iter().map(|r| r.remote_name.as_str()).collect();
        Ok(self
            .list_all_repositories()
            .await?
            .iter()
            .filter_map(|repository| self.live_repository(repository))
            .filter(|(name, _)| !declared.contains(name.as_str()))
            .collect())
    }

    /// An undeclared repository: its lifecycle policy checked, and, when pruning, whether it is
    /// reconcile's to delete (then observed with its images) or left alone (a finding).
    pub(crate) async fn observe_undeclared(
        &self,
        name: &str,
        repository: &RepositoryState,
    ) -> Result<Undeclared, ReconcileError> {
        let policy_address = Address::new(crate::LIFECYCLE_POLICY, name);
        let finding = match self.observe_lifecycle_policy(&policy_address, name).await {
            Ok(Observed::Present(fields)) => {
                live_tagged_expiry(&policy_address, fields.get("policy").unwrap_or(&serde_json::Value::Null), false)
            }
            Ok(Observed::Absent) => None,
            // The plan role may read only reconcile's repositories (a pull request's plan is
            // public): said, never taken for the absence of a policy.
            Err(error) if error.kind == reconcile_core::ErrorKind::AccessDenied => Some(Finding {
                code: UNDECLARED_POLICY_UNREAD.to_owned(),
                severity: Severity::Warning,
                address: Some(policy_address.clone()),
                message: "these credentials may not read this undeclared repository's lifecycle policy (the plan \
                          role reads only reconcile's repositories), so whether it can expire tagged images (D103) \
                          was not checked; the drift check reads it"
                    .to_owned(),
                overridden_by: None,
            }),
            Err(error) => return Err(error),
        };
        let Some(prune) = &self.prune else { return Ok(Undeclared { finding, pruned: None }) };
        let address = Address::new(crate::REPOSITORY, name);
        let tags = self.tags(&address, &repository.arn).await?;
        let (key, value) = &prune.marker;
        if tags.get(key) != Some(value) {
            return Ok(Undeclared {
                finding,
                pruned: Some(Err(Finding {
                    code: NOT_PRUNED.to_owned(),
                    severity: Severity::Warning,
                    address: Some(address),
                    message: format!(
                        "repository `{name}` is not in desired.toml, but --prune leaves it: it does not carry this \
                         deployment's mark `{key} = {value}`, so this deployment did not make it; declare it, or \
                         delete it by hand"
                    ),
                    overridden_by: None,
                })),
            });
        }
        let images = self.images(&address, name).await?;
        let state = RepositoryState {
            images: Some(images.len() as u64),
            image_bytes: Some(images.iter().map(|i| i.size).sum()),
            ..repository.with(tags, None)
        };
        Ok(Undeclared {
            finding,
            pruned: Some(Ok((address, Observed::Present(reconcile_core::spec::attributes(&state))))),
        })
    }
}

/// What observing one undeclared repository found.
pub(crate) struct Undeclared {
    /// D103, when its live policy can expire tagged images.
    pub(crate) finding: Option<Finding>,
    /// When pruning: the repository to delete, or why it is left alone.
    pub(crate) pruned: Option<Result<(Address, Observed), Finding>>,
}

/// [`MARKED_UNDECLARED`] for the repository `name`, which carries the mark `key = value`.
pub(crate) fn marked_undeclared(address: Address, name: &str, key: &str, value: &str) -> Finding {
    Finding {
        code: MARKED_UNDECLARED.to_owned(),
        severity: Severity::Error,
        address: Some(address),
        message: format!(
            "repository `{name}` carries this deployment's mark `{key} = {value}`, and desired.toml does not \
             declare it: left from a declaration since removed (an administrator's `apply --prune` deletes it), or \
             marked by someone else, which the mark alone cannot tell apart; reconcile neither shows it in a \
             public plan nor lets a CI role delete it"
        ),
        overridden_by: None,
    }
}
