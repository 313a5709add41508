//! A plan's cost line (`reconcile_cost::change`): what its changes do to the monthly bill, from
//! what the account measured. Read only for the changes that touch the bill (the nightly's
//! architectures or the runner's compute: the runner's last week of builds; a lifecycle policy's
//! untagged count or a new repository: those repositories' and their siblings' images; the
//! cache's expiry: its daily size), and never failing the plan: what could not be read is a
//! figure that cannot be estimated, with why. It informs: no exit code depends on it.

use reconcile_core::plan::{Action, Change, CostFigure, Observed, Plan};
use reconcile_core::{Account, Address, Desired, ReconcileError};
use reconcile_cost::change::{self, Nights};
use reconcile_cost::rates;
use reconcile_cost::report::{self, BuildRecord};
use reconcile_ecr::usage::Usage;

use crate::aws::Aws;
use crate::session::DriftCosts;

const DAY: i64 = 86_400;

/// The whole nights the builds are measured over.
const NIGHTS: u32 = 7;

/// A value a change sets from and to (`None`: unset).
type FromTo<T> = (Option<T>, Option<T>);

fn text(value: Option<&str>) -> String {
    value.map_or_else(|| "(unset)".to_owned(), |v| format!("{v:?}"))
}

/// What `change` sets its `field` from and to, as the plan shows it. Each kind's crate reads its
/// own fields (`reconcile_codebuild::compute_type_change`, ...): none is read by name here.
fn what(change: &Change, field: &str, before: Option<&str>, after: Option<&str>) -> String {
    format!("{} {field} {} -> {}", change.address, text(before), text(after))
}

pub async fn costs(aws: &Aws, plan: &Plan, desired: &Desired, account: &Account) -> Vec<CostFigure> {
    let mut figures = builds(aws, plan, desired, account).await;
    figures.extend(registry(aws, plan, desired, account).await);
    figures.extend(cache(aws, plan, false).await.into_iter().map(|(_, figure)| figure));
    figures
}

/// The compiler cache: a longer or shorter expiry holds it longer or shorter. Each figure is
/// what `plan`'s change of the expiry does, with its address; or, for a drift check (`drift`),
/// what the live expiry costs while it stays: the same figure, the other way round.
async fn cache(aws: &Aws, plan: &Plan, drift: bool) -> Vec<(Address, CostFigure)> {
    let mut figures = Vec::new();
    for change in &plan.changes {
        let Some((bucket, before, after)) = reconcile_s3::expiry_change(change) else { continue };
        let what = if drift {
            format!("expires objects after {before} days instead of {after}, while it stays")
        } else {
            format!("{} expires objects after {after} days instead of {before}", change.address)
        };
        figures.push((
            change.address.clone(),
            match cache_size(aws, &bucket).await {
                Ok(stored) => {
                    let mut figure =
                        change::cache_expiry(stored.as_ref().map(|(b, s)| (*b, s.as_str())), before, after, what);
                    if drift {
                        figure.monthly_usd = figure.monthly_usd.map(|usd| -usd);
                    }
                    figure
                }
                Err(why) => unread("cache", what, &why),
            },
        ));
    }
    figures
}

/// What each difference the drift check found costs while it stays, where it changes what the
/// registry or the cache keeps: a lifecycle policy missing or not the declared one (what it would
/// hold beyond the declared one a month from now, as the registry was read), the cache's expiry
/// (what putting it back would save, as the plan's cost line prices it: the same figure, the other
/// way).
pub async fn drift(aws: &Aws, plan: &Plan, registry: &Usage, desired: &Desired) -> DriftCosts {
    let price = reconcile_ecr::price_per_gb_month(desired);
    let mut figures = DriftCosts::new();
    for change in &plan.changes {
        if change.address.kind != reconcile_ecr::LIFECYCLE_POLICY || change.action == Action::Delete {
            continue;
        }
        let what = match change.action {
            Action::Create => "no lifecycle policy, while it stays".to_owned(),
            _ => "the live policy, while it stays".to_owned(),
        };
        let held = registry.repositories.iter().find(|r| r.name == change.address.name);
        let figure = match held.and_then(|r| r.month_ahead) {
            Some(ahead) => change::drifted_policy(
                (ahead.live, ahead.declared),
                (ahead.pushes, ahead.days, ahead.mean),
                price,
                what,
            ),
            None => unread("registry", what, "the repository's images were not read"),
        };
        figures.insert(change.address.clone(), figure);
    }
    figures.extend(cache(aws, plan, true).await);
    figures
}

/// The runner's builds: more or fewer architectures, another compute.
async fn builds(aws: &Aws, plan: &Plan, desired: &Desired, account: &Account) -> Vec<CostFigure> {
    let mut figures = Vec::new();
    let arches: Vec<(&Change, FromTo<&str>)> = plan
        .changes
        .iter()
        .filter_map(|c| Some((c, reconcile_github::variable_change(c, "NIGHTLY_ARCHES")?)))
        .collect();
    let compute: Vec<(&Change, FromTo<String>)> =
        plan.changes.iter().filter_map(|c| Some((c, reconcile_codebuild::compute_type_change(c)?))).collect();
    if !arches.is_empty() || !compute.is_empty() {
        // Only the projects the plan shows: a public plan hides one it may not name (W602), and
        // prices nothing of it either.
        let shown: Vec<String> = reconcile_codebuild::declared(desired)
            .projects
            .iter()
            .filter(|project| {
                let address = reconcile_core::Address::new(reconcile_codebuild::PROJECT, &project.key);
                matches!(plan.observed.get(&address), Some(Observed::Present(_)))
            })
            .map(|project| project.name.clone())
            .collect();
        let measured = nights(aws, desired, &shown).await;
        for (change, (before, after)) in arches {
            let count = |value: Option<&str>| value.map_or(0, change::architectures);
            let what = what(change, reconcile_github::VALUE, before, after);
            figures.push(match &measured {
                Ok((nights, _)) => change::arches(nights, count(before), count(after), what),
                Err(why) => unread("builds", what, why),
            });
        }
        for (change, (before, after)) in compute {
            let what = what(change, reconcile_codebuild::COMPUTE_TYPE, before.as_deref(), after.as_deref());
            let (old, new) = (before.unwrap_or_default(), after.unwrap_or_default());
            figures.push(match &measured {
                Ok((nights, rates)) => change::compute_type(nights, rates, &account.region, &old, &new, what),
                Err(why) => unread("builds", what, why),
            });
        }
    }
    figures
}

/// The registry: how many untagged images a policy keeps, and what a new repository will hold.
async fn registry(aws: &Aws, plan: &Plan, desired: &Desired, account: &Account) -> Vec<CostFigure> {
    let mut figures = Vec::new();
    let kept: Vec<(&Change, u64, u64)> = plan
        .changes
        .iter()
        .filter_map(|c| {
            let (before, after) = reconcile_ecr::policy_change(c)?;
            Some((c, change::untagged_kept(before)?, change::untagged_kept(after)?))
        })
        .filter(|(_, before, after)| before != after)
        .collect();
    let created: Vec<&Change> = plan
        .changes
        .iter()
        .filter(|c| c.address.kind == reconcile_ecr::REPOSITORY && c.action == Action::Create)
        .collect();
    // A new repository's siblings: the existing repositories the plan shows, of its kind.
    let existing: Vec<String> = plan
        .observed
        .iter()
        .filter(|(a, o)| a.kind == reconcile_ecr::REPOSITORY && matches!(o, Observed::Present(_)))
        .map(|(a, _)| a.name.clone())
        .collect();
    if !kept.is_empty() || !created.is_empty() {
        let mut names: Vec<String> = kept.iter().map(|(c, _, _)| c.address.name.clone()).collect();
        if !created.is_empty() {
            names.extend(existing.iter().cloned());
        }
        names.sort();
        names.dedup();
        let ecr = reconcile_ecr::ecr_reconciler(&aws.clients(account, desired, None, None));
        let held = ecr.held(&names).await.map_err(|e| e.to_string());
        let price = reconcile_ecr::price_per_gb_month(desired);
        figures
            .extend(kept.into_iter().map(|(change, before, after)| kept_figure(&held, change, (before, after), price)));
        // One figure per kind of repository, however many a plan makes (an empty account's first
        // plan makes them all).
        for kind in ["image", "cache"] {
            let new: Vec<String> = created
                .iter()
                .filter(|c| reconcile_ecr::holds(&c.address.name) == kind)
                .map(|c| c.address.to_string())
                .collect();
            if new.is_empty() {
                continue;
            }
            let what = format!("new {kind} repositories: {}", new.join(", "));
            figures.push(match &held {
                Ok(held) => {
                    let siblings: Vec<u64> = held
                        .iter()
                        .filter(|(name, images, _)| reconcile_ecr::holds(name) == kind && *images > 0)
                        .map(|(_, _, bytes)| *bytes)
                        .collect();
                    change::new_repositories(
                        new.len(),
                        &siblings,
                        kind,
                        reconcile_ecr::price_per_gb_month(desired),
                        what,
                    )
                }
                Err(why) => unread("registry", what, why),
            });
        }
    }
    figures
}

/// What a policy that keeps `after` untagged images instead of `before` does to the bill, at
/// what the repository holds (`held`, as the registry was read).
fn kept_figure(
    held: &Result<Vec<(String, u64, u64)>, String>,
    change: &Change,
    (before, after): (u64, u64),
    price: f64,
) -> CostFigure {
    let what = format!("{} keeps {after} untagged images instead of {before}", change.address);
    match held {
        Ok(held) => {
            let (images, bytes) = held
                .iter()
                .find(|(name, _, _)| *name == change.address.name)
                .map_or((0, 0), |(_, images, bytes)| (*images, *bytes));
            change::kept_untagged(images, bytes, before, after, price, what)
        }
        Err(why) => unread("registry", what, why),
    }
}

fn unread(cause: &str, what: String, why: &str) -> CostFigure {
    CostFigure {
        cause: cause.to_owned(),
        what,
        monthly_usd: None,
        basis: format!("what it rests on could not be read: {why}"),
        estimate: false,
    }
}

/// Every build of the runner projects named `projects` since `first` (Unix seconds), as the cost
/// report takes them: `cost`'s nights (every declared project), and a plan's cost line (those it
/// shows).
pub async fn runner_builds(aws: &Aws, projects: &[String], first: i64) -> Result<Vec<BuildRecord>, ReconcileError> {
    let codebuild = aws.codebuild();
    let mut builds = Vec::new();
    for project in projects {
        let (found, reads) = reconcile_codebuild::builds::since(&codebuild, project, first as f64).await?;
        tracing::info!(
            "cost: {} builds of {} in {} list pages and {} batch reads",
            found.len(),
            project,
            reads.list_pages,
            reads.batch_reads
        );
        builds.extend(found.into_iter().map(|b| BuildRecord {
            id: b.id,
            start: b.start,
            end: b.end,
            compute_type: b.compute,
        }));
    }
    Ok(builds)
}

/// The last whole nights of the runner projects `projects`, priced at the last known rates (a
/// plan asks no Price List), and those rates.
async fn nights(aws: &Aws, desired: &Desired, projects: &[String]) -> Result<(Nights, Vec<rates::Rate>), String> {
    let now = reconcile_core::time::now();
    let today = now.div_euclid(DAY) * DAY;
    let first = today - DAY * i64::from(NIGHTS);
    let builds = runner_builds(aws, projects, first).await.map_err(|e| e.to_string())?;
    let mut known: Vec<rates::Rate> = builds
        .iter()
        .filter_map(|b| rates::usage_type(&desired.region, &b.compute_type))
        .filter_map(|usage| rates::known(&usage))
        .collect();
    known.sort_by(|a, b| a.usage_type.cmp(&b.usage_type));
    known.dedup_by(|a, b| a.usage_type == b.usage_type);
    let report = report::report(report::Inputs {
        region: desired.region.clone(),
        now,
        days: NIGHTS + 1,
        builds,
        rates: known.clone(),
        ..report::Inputs::default()
    });
    Ok((Nights::of(&report), known))
}

/// The cache bucket's last daily size CloudWatch has, in its largest storage type.
async fn cache_size(aws: &Aws, bucket: &str) -> Result<Option<(u64, String)>, String> {
    let now = reconcile_core::time::now();
    let today = now.div_euclid(DAY) * DAY;
    let days =
        reconcile_s3::storage::daily_bytes(&aws.cloudwatch(), bucket, today - DAY * i64::from(NIGHTS), today + DAY)
            .await
            .map_err(|e| e.to_string())?;
    Ok(days
        .into_iter()
        .filter_map(|(storage, by_day)| {
            by_day.into_iter().max_by_key(|(day, _)| *day).map(|(day, bytes)| (day, bytes, storage))
        })
        .max_by_key(|(day, bytes, _)| (*day, *bytes))
        .map(|(_, bytes, storage)| (bytes, storage)))
}
