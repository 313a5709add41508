//! The sweeper: finds what runs of the suite left (a name with the runs' prefix and a run's id,
//! the same run's tag, and the live suite's deployment's mark: reconcile makes each resource with
//! its tags in the same call, so nothing a run made lacks them, and what another deployment or a
//! person made under a run's name is never taken) and, when asked, deletes it in dependency
//! order: the project (its webhook first), the roles (their policies first), the boundaries, the
//! repositories with their images, the buckets with their objects. A dry run by default; safe to
//! run again.

use std::fmt;
use std::time::Duration;

use aws_types::SdkConfig;

use crate::names::{DEPLOYMENT, PREFIX, RUN_TAG, Run};
use crate::{Failure, chain, fail};

/// Which leftovers to find.
#[derive(Debug, Clone)]
pub struct Filter {
    /// The sandbox account: the credentials must be its, or nothing is found (nor deleted).
    pub account: String,
    /// Only this run's; every run's when `None`.
    pub run: Option<Run>,
    /// Only of runs that started at least this long ago (a run still going is left alone).
    pub older_than: Duration,
}

impl Filter {
    fn admits(&self, run: &Run) -> bool {
        self.run.as_ref().is_none_or(|wanted| wanted == run) && run.age() >= self.older_than
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Project,
    Role,
    Policy,
    Repository,
    Bucket,
}

/// One resource a run left.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Leftover {
    pub kind: Kind,
    pub name: String,
    pub run: String,
}

impl fmt::Display for Leftover {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            Kind::Project => "CodeBuild project",
            Kind::Role => "IAM role",
            Kind::Policy => "IAM policy",
            Kind::Repository => "ECR repository",
            Kind::Bucket => "S3 bucket",
        };
        write!(f, "{kind} {} (run {})", self.name, self.run)
    }
}

/// The run a resource named `name` with `tags` belongs to: the one its name says, when its run
/// tag says the same and it carries the live suite's deployment's mark.
fn run_of<'a>(name: &str, tags: impl IntoIterator<Item = (&'a str, &'a str)>) -> Option<Run> {
    let named = Run::named_in(name)?;
    let tags: Vec<(&str, &str)> = tags.into_iter().collect();
    let tag = |wanted: &str| tags.iter().find(|(key, _)| *key == wanted).map(|(_, value)| *value);
    let marked = tag(reconcile_core::mark::MARK_KEY) == Some(DEPLOYMENT);
    (marked && tag(RUN_TAG).and_then(Run::of).as_ref() == Some(&named)).then_some(named)
}

fn failed(what: &str) -> impl Fn(&dyn std::error::Error) -> Failure + '_ {
    move |error| fail(format!("{what}: {}", chain(error)))
}

/// Everything the filter admits, in the order it is deleted.
pub async fn find(sdk: &SdkConfig, filter: &Filter) -> Result<Vec<Leftover>, Failure> {
    crate::in_sandbox(sdk, &filter.account).await?;
    let mut found = Vec::new();
    let keep = |found: &mut Vec<Leftover>, kind, name: &str, run: Option<Run>| {
        if let Some(run) = run.filter(|run| filter.admits(run)) {
            found.push(Leftover { kind, name: name.to_owned(), run: run.id().to_owned() });
        }
    };

    let codebuild = aws_sdk_codebuild::Client::new(sdk);
    let mut names = Vec::new();
    let mut token = None;
    loop {
        let page =
            codebuild.list_projects().set_next_token(token).send().await.map_err(|e| failed("list projects")(&e))?;
        names.extend(page.projects().iter().filter(|p| p.starts_with(PREFIX)).cloned());
        token = page.next_token().map(str::to_owned);
        if token.is_none() {
            break;
        }
    }
    for chunk in names.chunks(100) {
        let projects = codebuild
            .batch_get_projects()
            .set_names(Some(chunk.to_vec()))
            .send()
            .await
            .map_err(|e| failed("read projects")(&e))?;
        for project in projects.projects() {
            let name = project.name().unwrap_or_default();
            let tags = project.tags().iter().map(|t| (t.key().unwrap_or_default(), t.value().unwrap_or_default()));
            keep(&mut found, Kind::Project, name, run_of(name, tags));
        }
    }

    let iam = aws_sdk_iam::Client::new(sdk);
    let mut marker = None;
    loop {
        let page = iam.list_roles().set_marker(marker).send().await.map_err(|e| failed("list roles")(&e))?;
        for role in page.roles().iter().filter(|r| r.role_name().starts_with(PREFIX)) {
            let tags = iam.list_role_tags().role_name(role.role_name()).send().await;
            let tags = tags.map_err(|e| failed("read a role's tags")(&e))?;
            let run = run_of(role.role_name(), tags.tags().iter().map(|t| (t.key(), t.value())));
            keep(&mut found, Kind::Role, role.role_name(), run);
        }
        marker = page.marker().map(str::to_owned);
        if !page.is_truncated() {
            break;
        }
    }
    let mut marker = None;
    loop {
        let page = iam
            .list_policies()
            .scope(aws_sdk_iam::types::PolicyScopeType::Local)
            .set_marker(marker)
            .send()
            .await
            .map_err(|e| failed("list policies")(&e))?;
        for policy in page.policies() {
            let (Some(name), Some(arn)) = (policy.policy_name(), policy.arn()) else { continue };
            if !name.starts_with(PREFIX) {
                continue;
            }
            let tags = iam.list_policy_tags().policy_arn(arn).send().await;
            let tags = tags.map_err(|e| failed("read a policy's tags")(&e))?;
            keep(&mut found, Kind::Policy, arn, run_of(name, tags.tags().iter().map(|t| (t.key(), t.value()))));
        }
        marker = page.marker().map(str::to_owned);
        if !page.is_truncated() {
            break;
        }
    }

    let ecr = aws_sdk_ecr::Client::new(sdk);
    let mut token = None;
    loop {
        let page = ecr.describe_repositories().set_next_token(token).send().await;
        let page = page.map_err(|e| failed("list repositories")(&e))?;
        for repository in page.repositories() {
            let (Some(name), Some(arn)) = (repository.repository_name(), repository.repository_arn()) else { continue };
            if !name.starts_with(PREFIX) {
                continue;
            }
            let tags = ecr.list_tags_for_resource().resource_arn(arn).send().await;
            let tags = tags.map_err(|e| failed("read a repository's tags")(&e))?;
            keep(&mut found, Kind::Repository, name, run_of(name, tags.tags().iter().map(|t| (t.key(), t.value()))));
        }
        token = page.next_token().map(str::to_owned);
        if token.is_none() {
            break;
        }
    }

    let s3 = aws_sdk_s3::Client::new(sdk);
    let buckets = s3.list_buckets().send().await.map_err(|e| failed("list buckets")(&e))?;
    for bucket in buckets.buckets() {
        let Some(name) = bucket.name().filter(|n| n.starts_with(PREFIX)) else { continue };
        let tags = match s3.get_bucket_tagging().bucket(name).send().await {
            Ok(tags) => tags.tag_set().to_vec(),
            Err(error) if error.as_service_error().and_then(|e| e.meta().code()) == Some("NoSuchTagSet") => Vec::new(),
            // A bucket of another region answers from there: it is that region's sweep's.
            Err(_) => continue,
        };
        keep(&mut found, Kind::Bucket, name, run_of(name, tags.iter().map(|t| (t.key(), t.value()))));
    }
    found.sort();
    Ok(found)
}

/// Deletes `leftovers` (as [`find`] ordered them), each as the service requires.
pub async fn delete(
    sdk: &SdkConfig,
    account: &str,
    leftovers: &[Leftover],
    say: &mut dyn FnMut(&str),
) -> Result<(), Failure> {
    crate::in_sandbox(sdk, account).await?;
    let codebuild = aws_sdk_codebuild::Client::new(sdk);
    let iam = aws_sdk_iam::Client::new(sdk);
    let ecr = aws_sdk_ecr::Client::new(sdk);
    let s3 = aws_sdk_s3::Client::new(sdk);
    for leftover in leftovers {
        let name = leftover.name.as_str();
        match leftover.kind {
            Kind::Project => {
                // No webhook is not a failure.
                let _ = codebuild.delete_webhook().project_name(name).send().await;
                codebuild.delete_project().name(name).send().await.map_err(|e| failed("delete a project")(&e))?;
            }
            Kind::Role => {
                let inline = iam.list_role_policies().role_name(name).send().await;
                for policy in inline.map_err(|e| failed("list a role's policies")(&e))?.policy_names() {
                    let deleted = iam.delete_role_policy().role_name(name).policy_name(policy).send().await;
                    deleted.map_err(|e| failed("delete a role's policy")(&e))?;
                }
                let attached = iam.list_attached_role_policies().role_name(name).send().await;
                let attached = attached.map_err(|e| failed("list a role's managed policies")(&e))?;
                for arn in attached.attached_policies().iter().filter_map(|p| p.policy_arn()) {
                    let detached = iam.detach_role_policy().role_name(name).policy_arn(arn).send().await;
                    detached.map_err(|e| failed("detach a managed policy")(&e))?;
                }
                iam.delete_role().role_name(name).send().await.map_err(|e| failed("delete a role")(&e))?;
            }
            Kind::Policy => {
                let versions = iam.list_policy_versions().policy_arn(name).send().await;
                let versions = versions.map_err(|e| failed("list a policy's versions")(&e))?;
                for version in versions.versions().iter().filter(|v| !v.is_default_version()) {
                    let Some(id) = version.version_id() else { continue };
                    let deleted = iam.delete_policy_version().policy_arn(name).version_id(id).send().await;
                    deleted.map_err(|e| failed("delete a policy version")(&e))?;
                }
                iam.delete_policy().policy_arn(name).send().await.map_err(|e| failed("delete a policy")(&e))?;
            }
            Kind::Repository => {
                let deleted = ecr.delete_repository().repository_name(name).force(true).send().await;
                deleted.map_err(|e| failed("delete a repository")(&e))?;
            }
            Kind::Bucket => {
                loop {
                    let page = s3.list_object_versions().bucket(name).send().await;
                    let page = page.map_err(|e| failed("list a bucket's objects")(&e))?;
                    let mut objects = Vec::new();
                    let versions = page.versions().iter().map(|v| (v.key(), v.version_id()));
                    let markers = page.delete_markers().iter().map(|m| (m.key(), m.version_id()));
                    for (key, version) in versions.chain(markers) {
                        let object = aws_sdk_s3::types::ObjectIdentifier::builder()
                            .set_key(key.map(str::to_owned))
                            .set_version_id(version.map(str::to_owned))
                            .build()
                            .map_err(|e| failed("an object to delete")(&e))?;
                        objects.push(object);
                    }
                    if objects.is_empty() {
                        break;
                    }
                    let delete = aws_sdk_s3::types::Delete::builder()
                        .set_objects(Some(objects))
                        .quiet(true)
                        .build()
                        .map_err(|e| failed("objects to delete")(&e))?;
                    let deleted = s3.delete_objects().bucket(name).delete(delete).send().await;
                    deleted.map_err(|e| failed("empty a bucket")(&e))?;
                }
                s3.delete_bucket().bucket(name).send().await.map_err(|e| failed("delete a bucket")(&e))?;
            }
        }
        say(&format!("deleted {leftover}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leftover_is_one_whose_name_run_tag_and_mark_all_say_so() {
        let run = Run::start();
        let name = format!("{}/base", run.prefix());
        let mark = reconcile_core::mark::MARK_KEY;
        assert_eq!(run_of(&name, [(RUN_TAG, run.id()), (mark, DEPLOYMENT)]), Some(run.clone()));
        // The name alone, the name and the run tag without the mark, or another deployment's
        // mark: made by someone else under a run's name, never swept.
        assert_eq!(run_of(&name, []), None);
        assert_eq!(run_of(&name, [("managed-by", "reconcile")]), None);
        assert_eq!(run_of(&name, [(RUN_TAG, run.id())]), None);
        assert_eq!(run_of(&name, [(RUN_TAG, run.id()), (mark, "rocm-bake")]), None);
        // A tag alone, or a name and a tag naming different runs: not the sweeper's.
        assert_eq!(run_of("rocm-bake/pytorch", [(RUN_TAG, run.id()), (mark, DEPLOYMENT)]), None);
        let other = Run::of("0000000abc").unwrap();
        assert_eq!(run_of(&name, [(RUN_TAG, other.id()), (mark, DEPLOYMENT)]), None);
        assert_eq!(run_of(&name, [(RUN_TAG, "not-a-run"), (mark, DEPLOYMENT)]), None);
        let old = Filter { account: String::new(), run: None, older_than: Duration::from_secs(3600) };
        assert!(!old.admits(&run) && old.admits(&other));
        let this = Filter { account: String::new(), run: Some(run.clone()), older_than: Duration::ZERO };
        assert!(this.admits(&run) && !this.admits(&other));
    }
}
