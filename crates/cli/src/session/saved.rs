//! A saved plan (`plan --out`) carried out by `apply FILE`: admitted from the file and this run
//! alone before anything is locked, then verified against the account under the lock.

use std::path::Path;

use reconcile_core::Account;
use reconcile_render::saved::{self, SavedPlan};

use super::{Backend, Planned, Session, refuse_on};
use crate::error::CliError;
use crate::github::GithubSide;

impl<B: Backend> Session<B> {
    /// The saved plan at `path`, if it still holds: made for this account, desired.toml and
    /// every resource it touches as they were, and its changes exactly the ones desired.toml and
    /// the account give now (planned again the way it was made), none edited, added or left out.
    /// Never writes. The plan returned is the one made now, with its findings and impacts.
    pub async fn verify_saved(&self, account: Account, saved: SavedPlan, path: &Path) -> Result<Planned, CliError> {
        let stale = |reasons: Vec<String>| CliError::Stale { path: path.to_owned(), reasons };
        if saved.plan.account != account.id || saved.plan.region != account.region {
            return Err(stale(vec![format!(
                "it was made for account {} in {}, but these credentials are for account {} in {}",
                saved.plan.account, saved.plan.region, account.id, account.region
            )]));
        }
        // desired.toml's own refusals hold for a saved plan too (a refused plan is never saved).
        refuse_on(&self.inputs.findings(Some(&account.id)))?;
        self.admit_saved(&saved, path)?;
        let now = self.plan_in(account, self.inputs.prune.clone()).await?;
        let mut reasons = saved::staleness(&saved, &self.inputs.desired_text, &now.plan.observed);
        // Only when nothing moved can the changes be derived again and compared with the file's.
        if reasons.is_empty() {
            reasons = saved::tampering(&saved, &now.plan);
        }
        if !reasons.is_empty() {
            return Err(stale(reasons));
        }
        Ok(now)
    }

    /// What can be told of a saved plan from the file and this run alone, before anything is
    /// locked or read. Nothing in the file decides how it is checked: it is planned again the way
    /// desired.toml and this apply say (the GitHub side whenever desired.toml declares one, so the
    /// token is needed; `--prune` only when this apply is given it), and the file must say it was
    /// made that way too, or it is not the plan this apply would make.
    pub(super) fn admit_saved(&self, saved: &SavedPlan, path: &Path) -> Result<(), CliError> {
        let declared = !matches!(self.github, GithubSide::Undeclared);
        if declared && !self.github.is_checked() {
            return Err(CliError::Input(vec![format!(
                "{}: desired.toml declares [github], so a saved plan is checked with the GitHub side too, which \
                 needs a token: set GITHUB_TOKEN or GH_TOKEN",
                path.display()
            )]));
        }
        let stale = |reason: String| CliError::Stale { path: path.to_owned(), reasons: vec![reason] };
        if saved.made_with.github != declared {
            return Err(stale(if declared {
                "it says it was made without the GitHub side, but desired.toml declares [github]: plan again with a \
                 token (a plan made without one, or an edited file, is not the whole plan)"
                    .to_owned()
            } else {
                "it says it was made with the GitHub side, but desired.toml declares no [github]: the plan file was \
                 edited"
                    .to_owned()
            }));
        }
        let pruning = self.inputs.prune.is_some();
        if saved.made_with.prune != pruning {
            return Err(stale(if pruning {
                "this apply was given --prune, but the plan was made without it: plan again with --prune".to_owned()
            } else {
                "it was made with --prune: apply it with --prune too (deleting repositories is this command's to \
                 ask for, not the file's)"
                    .to_owned()
            }));
        }
        let destroying = self.inputs.destroy.is_some();
        if saved.made_with.destroy != destroying {
            return Err(stale(if destroying {
                "it is not a destroy plan: `reconcile apply` carries it out; `destroy` carries out a plan made with \
                 `plan --destroy`"
                    .to_owned()
            } else {
                "it is a destroy plan (`plan --destroy`): `reconcile destroy` carries it out, not apply".to_owned()
            }));
        }
        if saved.plan.changes.iter().any(reconcile_ecr::prunes) && !pruning && !destroying {
            return Err(stale(
                "it deletes a repository, but was not made with --prune: the plan file was edited".to_owned(),
            ));
        }
        Ok(())
    }

    /// How a plan made by this session is made, for saving it.
    pub fn made_with(&self) -> saved::MadeWith {
        saved::MadeWith {
            prune: self.inputs.prune.is_some(),
            github: matches!(self.github, GithubSide::Checked(_)),
            destroy: self.inputs.destroy.is_some(),
        }
    }
}
