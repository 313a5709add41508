//! `[ci]`: the identities the nightly repository's workflows run `reconcile` as. GitHub's OIDC
//! identity provider in the account, and three roles, each trusted by exactly one kind of
//! workflow run of the `[github]` repository: pull requests plan, the default branch's scheduled
//! job checks drift, the job in a protected environment applies. What each role may do is
//! derived from the rest of desired.toml, as the runner role's is.
//!
//! These roles are the account's real boundary: whoever can assume the apply role can change
//! everything reconcile manages. So the apply role can never change this section's resources;
//! an administrator applies those (see docs/reference/desired.md).
//!
//! This crate claims it ([`CLAIM`]); [`declared`] is what it holds.

use std::collections::BTreeMap;

use reconcile_core::desired::{Claim, DesiredError, Locator, Reference, Section, Topic, convert_tags, schema_of};
use reconcile_core::{Address, Desired};
use schemars::JsonSchema;
use serde::Deserialize;
use toml::Spanned;

use crate::section::check_iam_name;

/// `[ci]`, listed after `[github]` where the file's keys are. It publishes its roles, whose
/// ARNs the repository variables carry and whose trusts GitHub's subject template waits on.
pub const CLAIM: Claim = Claim {
    name: "ci",
    after: Some("github"),
    types: Section::types::<RawCi>,
    publishes: |section| {
        let Ok(raw) = section.parse::<RawCi>() else { return Vec::new() };
        let names = [&raw.plan_role, &raw.drift_role, &raw.apply_role];
        CiPurpose::ALL
            .into_iter()
            .zip(names)
            .map(|(purpose, name)| {
                Reference::new(Topic::CiRole, purpose.variable(), name.get_ref())
                    .at(Address::new(crate::CI_ROLE, purpose.key()))
            })
            .collect()
    },
    read: |section| {
        section.read(|locate, raw: Spanned<RawCi>, errors| {
            let repository = section.referred(Topic::Repository).next().map(|r| r.value.as_str());
            let roles: Vec<&str> = section.referred(Topic::Role).map(|role| role.value.as_str()).collect();
            convert(locate, &raw, repository, &roles, errors)
        })
    },
    schema: schema_of::<Option<RawCi>>,
};

/// The CI identities desired.toml declares, when it has `[ci]`.
pub fn declared(desired: &Desired) -> Option<&Ci> {
    desired.section(CLAIM.name).and_then(Section::model::<Ci>)
}

/// The host of GitHub Actions' OIDC tokens: the identity provider's URL without `https://`,
/// and the prefix of its condition keys (`token.actions.githubusercontent.com:sub`).
pub const GITHUB_OIDC_HOST: &str = "token.actions.githubusercontent.com";

/// The audience GitHub's tokens carry for AWS (what `configure-aws-credentials` asks for).
pub const GITHUB_OIDC_AUDIENCE: &str = "sts.amazonaws.com";

/// What a CI role is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CiPurpose {
    /// `reconcile plan` on pull requests: reads only.
    Plan,
    /// The scheduled `reconcile drift` on the default branch: reads only.
    Drift,
    /// `reconcile apply`, in the protected environment: reads and the writes apply makes.
    Apply,
}

impl CiPurpose {
    pub const ALL: [CiPurpose; 3] = [CiPurpose::Plan, CiPurpose::Drift, CiPurpose::Apply];

    /// The address name of its role, and its key in `[ci]` without `_role`.
    pub fn key(self) -> &'static str {
        match self {
            CiPurpose::Plan => "plan",
            CiPurpose::Drift => "drift",
            CiPurpose::Apply => "apply",
        }
    }

    /// The repository variable the workflows read the role's ARN from.
    pub fn variable(self) -> &'static str {
        match self {
            CiPurpose::Plan => "RECONCILE_PLAN_ROLE_ARN",
            CiPurpose::Drift => "RECONCILE_DRIFT_ROLE_ARN",
            CiPurpose::Apply => "RECONCILE_APPLY_ROLE_ARN",
        }
    }

    /// Whether the role only reads.
    pub fn reads_only(self) -> bool {
        !matches!(self, CiPurpose::Apply)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Ci {
    /// Plan, drift, apply: in that order.
    pub roles: Vec<CiRole>,
    /// The default branch, whose workflow files the roles trust.
    pub branch: String,
    /// Seconds, 3600 to 43200, for every CI role.
    pub max_session_duration: u32,
    /// On the identity provider and every CI role.
    pub tags: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CiRole {
    pub purpose: CiPurpose,
    pub name: String,
    /// The workflow file (under `.github/workflows/`) whose jobs assume the role.
    pub workflow: String,
    /// The one `sub` claim the role trusts, in the form
    /// [`SUBJECT_CLAIMS`](reconcile_core::desired::SUBJECT_CLAIMS) makes:
    /// `repo:ROCm/rocm-bake:ref:refs/heads/main:job_workflow_ref:ROCm/rocm-bake/.github/workflows/pull-request-plan.yml@refs/heads/main`.
    pub subject: String,
}

impl Ci {
    pub fn role(&self, purpose: CiPurpose) -> Option<&CiRole> {
        self.roles.iter().find(|role| role.purpose == purpose)
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCi {
    /// The role the trusted pull-request plan workflow (`workflow_run`, on `branch`) assumes to
    /// plan (read only).
    #[schemars(with = "String")]
    plan_role: Spanned<String>,
    /// The role the scheduled drift check on `branch` assumes (read only).
    #[schemars(with = "String")]
    drift_role: Spanned<String>,
    /// The role the apply job, in `environment`, assumes.
    #[schemars(with = "String")]
    apply_role: Spanned<String>,
    /// The default branch, whose workflow files the roles trust; default `main`.
    #[schemars(with = "Option<String>")]
    branch: Option<Spanned<String>>,
    /// The trusted plan workflow's file under `.github/workflows/`; default `pull-request-plan.yml`.
    #[schemars(with = "Option<String>")]
    plan_workflow: Option<Spanned<String>>,
    /// The drift check's workflow file; default `nightly-drift.yml`.
    #[schemars(with = "Option<String>")]
    drift_workflow: Option<Spanned<String>>,
    /// The apply workflow's file; default `apply-after-merge.yml`.
    #[schemars(with = "Option<String>")]
    apply_workflow: Option<Spanned<String>>,
    /// The GitHub environment (with required reviewers) the apply job runs in.
    #[schemars(with = "String")]
    environment: Spanned<String>,
    /// Seconds a CI session may last, 3600 (default) to 43200.
    #[schemars(with = "Option<u32>")]
    max_session_duration: Option<Spanned<u32>>,
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, String>")]
    tags: BTreeMap<String, Spanned<String>>,
}

/// Checks `[ci]` against `[github]`'s repository (`owner/name`, which the roles trust) and the
/// other roles' names, and converts it.
fn convert(
    locate: &Locator<'_>,
    raw: &Spanned<RawCi>,
    repository: Option<&str>,
    other_role_names: &[&str],
    errors: &mut Vec<DesiredError>,
) -> Ci {
    let section = raw.span();
    let raw = raw.get_ref();
    let repository = match repository {
        Some(repository) => repository.to_owned(),
        None => {
            errors.push(locate.error(
                Some(section.clone()),
                "ci",
                "the CI roles trust workflows of the repository `[github]` names: declare `[github]` with its \
                 `repository`",
            ));
            String::new()
        }
    };
    let branch = raw.branch.as_ref().map_or("main", |b| b.get_ref().as_str());
    if let Some(written) = &raw.branch
        && let Err(why) = check_branch(written.get_ref())
    {
        errors.push(locate.error(Some(written.span()), "ci.branch", why));
    }
    if let Err(why) = check_environment(raw.environment.get_ref()) {
        errors.push(locate.error(Some(raw.environment.span()), "ci.environment", why));
    }
    let mut workflow = |written: &Option<Spanned<String>>, key: &str, default: &str| -> String {
        let Some(written) = written else { return default.to_owned() };
        if let Err(why) = check_workflow(written.get_ref()) {
            errors.push(locate.error(Some(written.span()), &format!("ci.{key}"), why));
        }
        written.get_ref().clone()
    };
    let workflows = [
        workflow(&raw.plan_workflow, "plan_workflow", "pull-request-plan.yml"),
        workflow(&raw.drift_workflow, "drift_workflow", "nightly-drift.yml"),
        workflow(&raw.apply_workflow, "apply_workflow", "apply-after-merge.yml"),
    ];
    let on_branch = format!("ref:refs/heads/{branch}");
    let environment = format!("environment:{}", raw.environment.get_ref());
    let subjects = [
        (CiPurpose::Plan, &raw.plan_role, &on_branch, &workflows[0]),
        (CiPurpose::Drift, &raw.drift_role, &on_branch, &workflows[1]),
        (CiPurpose::Apply, &raw.apply_role, &environment, &workflows[2]),
    ];
    let mut roles = Vec::new();
    for (purpose, name, context, workflow) in subjects {
        let subject = subject(&repository, context, workflow, branch);
        let key = format!("ci.{}_role", purpose.key());
        if let Err(why) = check_iam_name(name.get_ref(), 64) {
            errors.push(locate.error(Some(name.span()), &key, why));
        } else if let Some(other) = other_role_names.iter().find(|other| other.eq_ignore_ascii_case(name.get_ref())) {
            let spelt = if *other == name.get_ref() {
                String::new()
            } else {
                format!(" as `{other}`: IAM does not tell role names apart by case")
            };
            errors.push(locate.error(
                Some(name.span()),
                &key,
                format!(
                    "role `{}` is also declared under `[iam.roles]`{spelt}; one AWS name can be declared only once",
                    name.get_ref()
                ),
            ));
        } else if roles.iter().any(|role: &CiRole| role.name.eq_ignore_ascii_case(name.get_ref())) {
            errors.push(locate.error(
                Some(name.span()),
                &key,
                format!(
                    "role `{}` is declared for two purposes; each CI role is trusted by one kind of run only",
                    name.get_ref()
                ),
            ));
        }
        roles.push(CiRole { purpose, name: name.get_ref().clone(), workflow: workflow.clone(), subject });
    }
    let max_session_duration = raw.max_session_duration.as_ref().map_or(3600, |d| *d.get_ref());
    if let Some(duration) = &raw.max_session_duration
        && !(3600..=43200).contains(duration.get_ref())
    {
        errors.push(locate.error(
            Some(duration.span()),
            "ci.max_session_duration",
            "must be 3600 to 43200 seconds (1 to 12 hours)",
        ));
    }
    let mut tags = BTreeMap::new();
    convert_tags(locate, "ci", &raw.tags, &mut tags, errors);
    Ci { roles, branch: branch.to_owned(), max_session_duration, tags }
}

/// The `sub` GitHub mints, with the template
/// [`SUBJECT_CLAIMS`](reconcile_core::desired::SUBJECT_CLAIMS), for a job of `workflow` (a file
/// under `.github/workflows/` on `branch`) of `repository` running in `context`.
fn subject(repository: &str, context: &str, workflow: &str, branch: &str) -> String {
    format!(
        "repo:{repository}:{context}:job_workflow_ref:{repository}/.github/workflows/{workflow}@refs/heads/{branch}"
    )
}

/// A workflow file's name: letters, digits and `._-`, ending `.yml` or `.yaml` (nothing that
/// could read as a pattern, a path or another claim).
fn check_workflow(file: &str) -> Result<(), String> {
    let valid = (file.ends_with(".yml") || file.ends_with(".yaml"))
        && file.len() <= 255
        && file.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        && !file.starts_with('.');
    if valid {
        Ok(())
    } else {
        Err(format!("`{file}` is not a workflow file name: letters, digits and `._-`, ending `.yml` or `.yaml`"))
    }
}

/// A branch name as it appears in a `sub` claim: git's rules, narrowed to what a condition
/// value can hold without being read as something else (no `*`, `?`, `$`, `:`).
fn check_branch(branch: &str) -> Result<(), String> {
    let valid = !branch.is_empty()
        && branch.len() <= 255
        && branch.chars().all(|c| c.is_ascii_alphanumeric() || "._/-".contains(c))
        && !branch.starts_with(['/', '-', '.'])
        && !branch.ends_with(['/', '.'])
        && !branch.contains("..")
        && !branch.contains("//")
        && !branch.ends_with(".lock");
    if valid {
        Ok(())
    } else {
        Err(format!("`{branch}` is not a branch name: letters, digits and `._/-`, as git allows them"))
    }
}

/// A GitHub environment name, narrowed the same way.
fn check_environment(environment: &str) -> Result<(), String> {
    let valid = !environment.is_empty()
        && environment.len() <= 255
        && environment.chars().all(|c| c.is_ascii_alphanumeric() || "._- ".contains(c))
        && environment.trim() == environment;
    if valid {
        Ok(())
    } else {
        Err(format!("`{environment}` is not an environment name: letters, digits, spaces and `._-`"))
    }
}

#[cfg(test)]
mod tests {
    use super::{Ci, CiPurpose};

    fn parse(ci: &str) -> Ci {
        let text = format!("region = \"us-east-1\"\n[github]\nrepository = \"ROCm/rocm-bake\"\n[ci]\n{ci}");
        super::declared(&crate::testing::parse(&text)).unwrap().clone()
    }

    const ROLES: &str = "plan_role = \"p\"\ndrift_role = \"d\"\napply_role = \"a\"\nenvironment = \"aws-production\"\n";

    #[test]
    fn each_role_trusts_one_kind_of_run_of_the_github_repository() {
        let ci = parse(ROLES);
        let subjects: Vec<(CiPurpose, &str, &str)> =
            ci.roles.iter().map(|r| (r.purpose, r.name.as_str(), r.subject.as_str())).collect();
        let file = |name: &str| format!("job_workflow_ref:ROCm/rocm-bake/.github/workflows/{name}@refs/heads/main");
        assert_eq!(
            subjects,
            [
                (
                    CiPurpose::Plan,
                    "p",
                    format!("repo:ROCm/rocm-bake:ref:refs/heads/main:{}", file("pull-request-plan.yml")).as_str()
                ),
                (
                    CiPurpose::Drift,
                    "d",
                    format!("repo:ROCm/rocm-bake:ref:refs/heads/main:{}", file("nightly-drift.yml")).as_str()
                ),
                (
                    CiPurpose::Apply,
                    "a",
                    format!("repo:ROCm/rocm-bake:environment:aws-production:{}", file("apply-after-merge.yml"))
                        .as_str()
                ),
            ]
        );
        assert_eq!((ci.max_session_duration, ci.tags.len()), (3600, 0));
        let release = parse(&format!(
            "{ROLES}branch = \"release/7.1\"\nmax_session_duration = 7200\ndrift_workflow = \"drift.yaml\"\n"
        ));
        assert_eq!(
            release.role(CiPurpose::Drift).unwrap().subject,
            "repo:ROCm/rocm-bake:ref:refs/heads/release/7.1:job_workflow_ref:ROCm/rocm-bake/.github/workflows/\
             drift.yaml@refs/heads/release/7.1"
        );
        assert_eq!(release.max_session_duration, 7200);
        assert_eq!(
            CiPurpose::ALL.map(CiPurpose::variable),
            ["RECONCILE_PLAN_ROLE_ARN", "RECONCILE_DRIFT_ROLE_ARN", "RECONCILE_APPLY_ROLE_ARN"]
        );
        assert!(CiPurpose::Plan.reads_only() && CiPurpose::Drift.reads_only() && !CiPurpose::Apply.reads_only());
    }

    #[test]
    fn the_roles_are_published_with_their_variables_and_addresses() {
        let text = format!("region = \"us-east-1\"\n[github]\nrepository = \"ROCm/rocm-bake\"\n[ci]\n{ROLES}");
        let desired = crate::testing::parse(&text);
        let published: Vec<String> = desired
            .referred(reconcile_core::desired::Topic::CiRole)
            .map(|r| format!("{} {} {}", r.key, r.value, r.addresses[0]))
            .collect();
        assert_eq!(
            published,
            [
                "RECONCILE_PLAN_ROLE_ARN p iam_ci_role.plan",
                "RECONCILE_DRIFT_ROLE_ARN d iam_ci_role.drift",
                "RECONCILE_APPLY_ROLE_ARN a iam_ci_role.apply",
            ]
        );
    }

    #[test]
    fn a_ci_role_named_as_another_role_is_refused_saying_how_they_collide() {
        let role = "[iam.roles.runner]\nname = \"Runner\"\ntrusted_services = [\"codebuild.amazonaws.com\"]\n";
        let refused = |ci: &str| {
            let text = format!(
                "region = \"us-east-1\"\n{role}[github]\nrepository = \"ROCm/rocm-bake\"\n[ci]\n{}",
                ROLES.replace("drift_role = \"d\"", ci)
            );
            crate::testing::try_parse(&text).expect_err("refused")
        };
        assert_eq!(
            refused("drift_role = \"Runner\""),
            "desired.toml:9:14: `ci.drift_role`: role `Runner` is also declared under `[iam.roles]`; one AWS name \
             can be declared only once"
        );
        assert_eq!(
            refused("drift_role = \"runner\""),
            "desired.toml:9:14: `ci.drift_role`: role `runner` is also declared under `[iam.roles]` as `Runner`: IAM \
             does not tell role names apart by case; one AWS name can be declared only once"
        );
        assert_eq!(
            refused("drift_role = \"P\""),
            "desired.toml:9:14: `ci.drift_role`: role `P` is declared for two purposes; each CI role is trusted by one \
             kind of run only"
        );
        assert!(refused("drift_role = \"a/b\"").starts_with("desired.toml:9:14: `ci.drift_role`: `a/b` may only use"));
    }

    #[test]
    fn a_branch_or_environment_that_could_read_as_a_pattern_or_another_claim_is_refused() {
        for branch in ["*", "main*", "a..b", "/main", "main/", "a:b", "x.lock", "-x", ""] {
            assert!(super::check_branch(branch).is_err(), "{branch}");
        }
        for branch in ["main", "release/7.1", "feature_x-y"] {
            assert!(super::check_branch(branch).is_ok(), "{branch}");
        }
        for environment in ["a:b", "prod*", " prod", "", "a/b"] {
            assert!(super::check_environment(environment).is_err(), "{environment}");
        }
        for workflow in ["x", "a/b.yml", "../x.yml", "*.yml", "a:b.yml", ".yml", "x.yml@main"] {
            assert!(super::check_workflow(workflow).is_err(), "{workflow}");
        }
        for workflow in ["pull-request-plan.yml", "drift_1.yaml"] {
            assert!(super::check_workflow(workflow).is_ok(), "{workflow}");
        }
        assert!(super::check_environment("aws production_1.x").is_ok());
    }
}
