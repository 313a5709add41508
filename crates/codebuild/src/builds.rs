//! The runner's builds of the last days, for `reconcile cost`: read only. `ListBuildsForProject`
//! answers ids newest first, 100 a page (never with `sortOrder`, which CodeBuild refuses past
//! 100 builds); each page's builds are read with one `BatchGetBuilds`, and paging stops at the
//! first page that reaches back past the window, so a month of a busy runner costs one list page
//! and one batch read per hundred builds.

use aws_sdk_codebuild as codebuild;
use reconcile_aws::failed;
use reconcile_core::{Address, ReconcileError};

/// One build, as billing sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Build {
    pub id: String,
    /// Seconds since the epoch: when it was submitted (every phase after counts).
    pub start: f64,
    /// `None` while it runs.
    pub end: Option<f64>,
    pub status: String,
    /// The compute the build ran on (`environment.computeType`), which a runner job's
    /// `instance-size:` label overrides.
    pub compute: String,
}

/// The most pages of build ids read: 100,000 builds, far more than a month of any runner.
const MAX_PAGES: usize = 1000;

/// What reading the builds took, for the benchmark and `-v`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Reads {
    pub list_pages: usize,
    pub batch_reads: usize,
}

/// The builds of `project` that started at or after `since` (seconds since the epoch), newest
/// first.
pub async fn since(
    client: &codebuild::Client,
    project: &str,
    since: f64,
) -> Result<(Vec<Build>, Reads), ReconcileError> {
    let address = Address::new(crate::PROJECT, project);
    let mut builds = Vec::new();
    let mut reads = Reads::default();
    let mut token: Option<String> = None;
    let mut pages = reconcile_core::pages::Pages::new(MAX_PAGES);
    loop {
        let page = client
            .list_builds_for_project()
            .project_name(project)
            .set_next_token(token.take())
            .send()
            .await
            .map_err(failed(Some(&address), "list builds"))?;
        reads.list_pages += 1;
        let ids = page.ids().to_vec();
        if ids.is_empty() {
            break;
        }
        let answer =
            client.batch_get_builds().set_ids(Some(ids)).send().await.map_err(failed(Some(&address), "read builds"))?;
        reads.batch_reads += 1;
        let mut reached_back = false;
        for build in answer.builds() {
            let start = build.start_time().map_or(0.0, |t| t.as_secs_f64());
            if start < since {
                reached_back = true;
                continue;
            }
            builds.push(Build {
                id: build.id().unwrap_or_default().to_owned(),
                start,
                end: build.end_time().map(|t| t.as_secs_f64()),
                status: build.build_status().map_or_else(String::new, |s| s.as_str().to_owned()),
                compute: build.environment().map_or_else(String::new, |e| e.compute_type().as_str().to_owned()),
            });
        }
        if reached_back {
            break;
        }
        // A cost from part of the builds would be too low, and look right: an error instead.
        token = pages.next(page.next_token()).map_err(|stop| {
            ReconcileError::new(Some(&address), "list builds", format!("{stop}; the builds before are not read"))
        })?;
        if token.is_none() {
            break;
        }
    }
    builds.sort_by(|a, b| b.start.total_cmp(&a.start));
    Ok((builds, reads))
}
