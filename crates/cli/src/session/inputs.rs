//! What a run is made from besides AWS: desired.toml and the bake file, read and checked
//! before any AWS call (or even the AWS configuration), and every resource crate's desired
//! resources, derived from them without AWS.

use std::path::Path;

use reconcile_bake::BakeFile;
use reconcile_core::describe::Catalog;
use reconcile_core::engine::{self, DesiredResources};
use reconcile_core::{Account, Desired, Finding, ReconcileError};

use crate::catalog::CATALOG;
use crate::error::CliError;
use crate::files;

/// What a run is made from besides AWS, read and checked before any AWS call (or even the AWS
/// configuration): bad input stops here, every problem at once.
pub struct Inputs {
    /// Where desired.toml is: what it names is read only inside it.
    pub repository: files::Repository,
    pub desired: Desired,
    /// desired.toml as read, which a saved plan fingerprints.
    pub desired_text: String,
    pub bake: Option<BakeFile>,
    /// `--prune`: how the ECR reconciler recognizes what it may delete.
    pub prune: Option<reconcile_core::Prune>,
    /// `destroy` (and `plan --destroy`): the plan deletes what desired.toml declares.
    pub destroy: Option<reconcile_core::Destroy>,
}

/// What a command asks [`Inputs::load`] to read and allow besides desired.toml.
#[derive(Debug, Default, Clone, Copy)]
pub struct Load<'a> {
    /// A bake file named on the command line (`--bake`), instead of desired.toml's own.
    pub bake: Option<&'a Path>,
    /// `--prune`: repositories reconcile manages and desired.toml no longer declares are deleted.
    pub prune: bool,
    /// `--force-delete-images`: a pruned (or destroyed) repository may still hold images.
    pub force_delete_images: bool,
    /// `destroy`, `plan --destroy`: plan deleting what desired.toml declares.
    pub destroy: bool,
    /// `--empty-buckets`: a destroyed bucket may still hold objects.
    pub empty_buckets: bool,
}

impl Inputs {
    /// Reads desired.toml (and the bake file: `load.bake`, or desired.toml's own), and checks
    /// what is derived from it (the role's policy and its size) with a stand-in account: ids are
    /// always 12 digits, so sizes hold.
    pub fn load(path: &Path, load: Load<'_>) -> Result<Inputs, CliError> {
        // Where the file is first: one that leads out of the repository is never read.
        let repository = files::Repository::of(path)?;
        let (desired, desired_text) = files::load_desired(path)?;
        Inputs::of(repository, desired, desired_text, load)
    }

    /// The same inputs with desired.toml's text as `text` (what `import --generate` would
    /// write), read and checked as [`Inputs::load`] reads the file.
    pub fn from_text(path: &Path, text: &str, load: Load<'_>) -> Result<Inputs, CliError> {
        let desired = crate::catalog::parse_desired(path, text)
            .map_err(|errors| CliError::Input(errors.0.iter().map(ToString::to_string).collect()))?;
        Inputs::of(files::Repository::of(path)?, desired, text.to_owned(), load)
    }

    fn of(
        repository: files::Repository,
        desired: Desired,
        desired_text: String,
        load: Load<'_>,
    ) -> Result<Inputs, CliError> {
        let Load { bake, prune, force_delete_images, destroy, empty_buckets } = load;
        let path = desired.path.clone();
        let path = path.as_path();
        let stand_in = Account::new("000000000000", &desired.region);
        let mut resources = unimported(&CATALOG, &desired, &stand_in, true).map_err(|errors| {
            CliError::Input(errors.iter().map(|error| format!("{}: {error}", path.display())).collect())
        })?;
        let wrong = reconcile_core::ownership::import(&desired, &mut resources, &CATALOG.kinds());
        if !wrong.is_empty() {
            return Err(CliError::Input(wrong.iter().map(ToString::to_string).collect()));
        }
        let bake = match (bake, &desired.bake) {
            (Some(typed), _) => {
                let real = repository.typed(typed).map_err(|why| input(format!("{}: {why}", typed.display())))?;
                Some(load_bake(typed, &real, &desired)?)
            }
            (None, Some(named)) => {
                let real = repository.named(&named.path).map_err(|why| {
                    CliError::Input(vec![
                        named.error(format!("the bake file {}: {why}", named.path.display())).to_string(),
                    ])
                })?;
                Some(load_bake(&named.path, &real, &desired)?)
            }
            (None, None) => None,
        };
        let prune = match prune {
            true => Some(reconcile_core::Prune { marker: desired.mark(), force_delete_images }),
            false => None,
        };
        let destroy = destroy.then_some(reconcile_core::Destroy { force_delete_images, empty_buckets });
        Ok(Inputs { repository, desired, desired_text, bake, prune, destroy })
    }

    /// The repositories a public report may name in `account`: what desired.toml declares and
    /// what the nightly's bake file names (the seeds' incident: two cache repositories it made
    /// and pushed to, with no lifecycle policy, held 347 GB). Every other is another team's.
    pub fn public_repositories(&self, account: &Account) -> std::collections::BTreeSet<String> {
        let mut named: std::collections::BTreeSet<String> =
            self.bake.iter().flat_map(|bake| bake.repositories(&account.region, &account.id)).collect();
        named.extend(reconcile_ecr::declared(&self.desired).repositories.iter().map(|r| r.name.clone()));
        named
    }

    /// What a public page may show of `planned`, made from this desired.toml as the default
    /// branch's (the drift check's and the apply job's): everything it declares, and of what it
    /// does not, the repositories the bake file names; the rest counted.
    pub fn public_audience(&self, planned: &super::Planned) -> reconcile_core::audience::Public {
        let account = &planned.account;
        let nightly = self.bake.iter().flat_map(|bake| bake.repositories(&account.region, &account.id));
        reconcile_core::audience::Public {
            base: Some(planned.resources.values().map(|r| (r.address.clone(), r.remote_name.clone())).collect()),
            named: nightly
                .flat_map(|name| {
                    [
                        reconcile_core::Address::new(reconcile_ecr::REPOSITORY, &name),
                        reconcile_core::Address::new(reconcile_ecr::LIFECYCLE_POLICY, &name),
                    ]
                })
                .collect(),
            review: false,
            merged: false,
            deployment: Some(self.desired.deployment.clone()),
        }
    }

    /// What the bake cross-check finds, for `account` when it is known (any account's registry
    /// in the region otherwise).
    pub fn bake_findings(&self, account: Option<&str>) -> Vec<Finding> {
        self.bake.iter().flat_map(|bake| bake_check(bake, &self.desired, account).findings).collect()
    }

    /// What the files themselves hold for a reviewer (desired.toml's findings and the bake
    /// cross-check's), ranked.
    pub fn findings(&self, account: Option<&str>) -> Vec<Finding> {
        engine::desired_findings(&self.desired, self.bake_findings(account))
    }
}

pub(super) fn input(line: String) -> CliError {
    CliError::Input(vec![line])
}

/// Reads the bake file at `real` (given as `name`): its variables from the environment as bake
/// resolves them, but only those desired.toml lists, and none at all with
/// `BUILDX_BAKE_DISABLE_VARS_ENV_LOOKUP=1`, as bake.
fn load_bake(name: &Path, real: &Path, desired: &Desired) -> Result<BakeFile, CliError> {
    let name = name.display().to_string();
    let text = files::read_capped(real).map_err(|why| input(format!("{name}: failed to read the bake file: {why}")))?;
    let env = |variable: &str| {
        if std::env::var_os("BUILDX_BAKE_DISABLE_VARS_ENV_LOOKUP").is_some_and(|v| v == "1") {
            return None;
        }
        std::env::var(variable).ok()
    };
    let bake = BakeFile::read(&name, &text, &desired.bake_variables, &env).map_err(|error| match error {
        reconcile_bake::Error::Refusal(why) => CliError::RefusedInput(format!("{name}: {why}")),
        reconcile_bake::Error::Unreadable(why) => input(format!("{name}: {why}")),
    })?;
    // Whatever any part of the run prints, these values are not in it.
    crate::output::never_show(bake.redactor());
    Ok(bake)
}

/// Every desired resource of every resource crate in `catalog` (GitHub's when `github`), keyed
/// by address, those desired.toml's `import` lists taken over (its entries were checked when the
/// file was read, [`Inputs::load`]). Pure: no AWS.
pub fn desired_resources(
    catalog: &Catalog,
    desired: &Desired,
    account: &Account,
    github: bool,
) -> Result<DesiredResources, Vec<ReconcileError>> {
    let mut resources = unimported(catalog, desired, account, github)?;
    reconcile_core::ownership::import(desired, &mut resources, &catalog.kinds());
    Ok(resources)
}

/// [`desired_resources`], without desired.toml's `import` list.
fn unimported(
    catalog: &Catalog,
    desired: &Desired,
    account: &Account,
    github: bool,
) -> Result<DesiredResources, Vec<ReconcileError>> {
    let crates =
        catalog.0.iter().filter(|description| github || description.name != reconcile_github::DESCRIPTION.name);
    let mut resources = Vec::new();
    let mut errors = Vec::new();
    for description in crates {
        match (description.desired)(desired, account, catalog) {
            Ok(list) => resources.extend(list),
            Err(error) => errors.push(error),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(engine::desired_resources(resources))
}

pub fn refuse_on(findings: &[Finding]) -> Result<(), CliError> {
    let refusing: Vec<String> = findings
        .iter()
        .filter(|finding| finding.refuses())
        .map(|finding| match &finding.address {
            Some(address) => format!("{} on {address}", finding.code),
            None => finding.code.clone(),
        })
        .collect();
    if refusing.is_empty() { Ok(()) } else { Err(CliError::RefusedFindings(refusing)) }
}

/// The bake cross-check of `bake` against the ECR repositories `desired` declares, for `account`
/// when it is known (any account's registry in the region otherwise).
pub fn bake_check(bake: &reconcile_bake::BakeFile, desired: &Desired, account: Option<&str>) -> reconcile_bake::Check {
    bake.check(&reconcile_ecr::declared(desired).names(), reconcile_ecr::REPOSITORY, &desired.region, account)
}
