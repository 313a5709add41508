//! The `[iam]` section: the service role and what its derived inline policy is called, and
//! (module [`ci`]) the `[ci]` section. This crate claims both ([`CLAIM`], [`ci::CLAIM`]);
//! [`declared`] and [`ci::declared`] are what they hold, and [`generate`] writes `[iam]` for
//! `import --generate`.
//!
//! The policy's content is not declared here: the IAM reconciler derives it from the rest of
//! the desired state (the repositories, the buckets, the projects that use the role), so that
//! declaring a repository extends the role in the same plan.

use std::collections::BTreeMap;

use reconcile_core::desired::{
    Case, Claim, DesiredError, Locator, Reference, Section, Topic, check_key, check_unique_names, convert_tags,
    schema_of,
};
use reconcile_core::generate::{Entry, Found, Generated, key_for};
use reconcile_core::{Account, Address, Desired};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toml::Spanned;

/// `[iam]`, listed after `[s3]` where the file's keys are. It publishes its roles, by key, for
/// the projects that run as one and the CI roles that may not share a name with one.
pub const CLAIM: Claim = Claim {
    name: "iam",
    after: Some("s3"),
    types: Section::types::<RawIam>,
    publishes: |section| {
        let raw = section.parse::<RawIam>().map(|raw| raw.roles).unwrap_or_default();
        raw.into_iter()
            .map(|(key, role)| {
                let (role_at, policy_at) = (Address::new(crate::ROLE, &key), Address::new(crate::ROLE_POLICY, &key));
                Reference::new(Topic::Role, key, role.into_inner().name.into_inner()).at(role_at).at(policy_at)
            })
            .collect()
    },
    read: |section| section.read(|locate, raw: RawIam, errors| convert(locate, &raw, errors)),
    schema: schema_of::<RawIam>,
};

/// The roles desired.toml declares: none when it has no `[iam]`.
pub fn declared(desired: &Desired) -> &Iam {
    static NONE: Iam = Iam { roles: Vec::new() };
    desired.section(CLAIM.name).and_then(Section::model::<Iam>).unwrap_or(&NONE)
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Iam {
    /// Sorted by key.
    pub roles: Vec<Role>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Role {
    /// The key under `[iam.roles]`; the address name, and how other sections refer to the role.
    pub key: String,
    pub name: String,
    pub description: String,
    /// Services allowed to assume the role, such as `codebuild.amazonaws.com`.
    pub trusted_services: Vec<String>,
    /// Seconds, 3600 to 43200.
    pub max_session_duration: u32,
    pub tags: BTreeMap<String, String>,
    /// The name of the derived inline policy.
    pub policy_name: String,
    /// Takes over a role that exists without reconcile's tag (`adopt = true`).
    pub adopt: bool,
    /// The description of the role's derived permissions boundary, which IAM sets only when it
    /// makes the policy.
    pub boundary_description: String,
}

impl Role {
    /// The name of its one inline policy, as desired.toml gives it.
    pub fn inline_policy(&self) -> &str {
        &self.policy_name
    }
}

/// What a boundary says of itself unless desired.toml says otherwise: what reconcile has
/// always made it with.
pub const BOUNDARY_DESCRIPTION: &str =
    "The most the role may ever do, whatever its own policies say; derived by reconcile";

#[derive(Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct RawIam {
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, RawRole>")]
    roles: BTreeMap<String, Spanned<RawRole>>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawRole {
    #[schemars(with = "String")]
    name: Spanned<String>,
    #[schemars(with = "Option<String>")]
    description: Option<Spanned<String>>,
    #[schemars(with = "Vec<String>")]
    trusted_services: Spanned<Vec<String>>,
    #[schemars(with = "Option<u32>")]
    max_session_duration: Option<Spanned<u32>>,
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, String>")]
    tags: BTreeMap<String, Spanned<String>>,
    #[schemars(with = "Option<String>")]
    policy_name: Option<Spanned<String>>,
    /// The description of its permissions boundary. IAM cannot change it once the policy is
    /// made: a new one is a replacement of the boundary, which apply refuses.
    #[schemars(with = "Option<String>")]
    boundary_description: Option<Spanned<String>>,
    /// Takes it over though it exists without this deployment's mark (someone else made it).
    #[serde(default)]
    adopt: bool,
}

/// Checks the `[iam]` section and converts it to the model.
fn convert(locate: &Locator<'_>, raw: &RawIam, errors: &mut Vec<DesiredError>) -> Iam {
    let mut roles = Vec::new();
    for (key, role) in &raw.roles {
        let key_path = format!("iam.roles.{key}");
        if let Err(why) = check_key(key) {
            errors.push(locate.error(Some(role.span()), &key_path, why));
        }
        let raw_role = role.get_ref();
        if let Err(why) = check_iam_name(raw_role.name.get_ref(), 64) {
            errors.push(locate.error(Some(raw_role.name.span()), &format!("{key_path}.name"), why));
        }
        let policy_name =
            raw_role.policy_name.as_ref().map_or_else(|| raw_role.name.get_ref().clone(), |p| p.get_ref().clone());
        if let Some(raw_policy_name) = &raw_role.policy_name
            && let Err(why) = check_iam_name(raw_policy_name.get_ref(), 128)
        {
            errors.push(locate.error(Some(raw_policy_name.span()), &format!("{key_path}.policy_name"), why));
        }
        if let Some(description) = &raw_role.description
            && let Err(why) = check_description(description.get_ref(), "a role description")
        {
            errors.push(locate.error(Some(description.span()), &format!("{key_path}.description"), why));
        }
        if let Some(description) = &raw_role.boundary_description
            && let Err(why) = check_description(description.get_ref(), "a policy description")
        {
            errors.push(locate.error(Some(description.span()), &format!("{key_path}.boundary_description"), why));
        }
        let services = raw_role.trusted_services.get_ref();
        if services.is_empty() || services.iter().any(|s| !s.ends_with(".amazonaws.com")) {
            errors.push(locate.error(
                Some(raw_role.trusted_services.span()),
                &format!("{key_path}.trusted_services"),
                "list the AWS service principals that assume the role, such as `codebuild.amazonaws.com`",
            ));
        }
        let max_session_duration = raw_role.max_session_duration.as_ref().map_or(3600, |d| *d.get_ref());
        if let Some(duration) = &raw_role.max_session_duration
            && !(3600..=43200).contains(duration.get_ref())
        {
            errors.push(locate.error(
                Some(duration.span()),
                &format!("{key_path}.max_session_duration"),
                "must be 3600 to 43200 seconds (1 to 12 hours)",
            ));
        }
        let mut tags = BTreeMap::new();
        convert_tags(locate, &key_path, &raw_role.tags, &mut tags, errors);
        let mut trusted_services = services.clone();
        trusted_services.sort();
        trusted_services.dedup();
        roles.push(Role {
            key: key.clone(),
            name: raw_role.name.get_ref().clone(),
            description: raw_role.description.as_ref().map_or_else(String::new, |d| d.get_ref().clone()),
            trusted_services,
            max_session_duration,
            tags,
            policy_name,
            adopt: raw_role.adopt,
            boundary_description: raw_role
                .boundary_description
                .as_ref()
                .map_or_else(|| BOUNDARY_DESCRIPTION.to_owned(), |d| d.get_ref().clone()),
        });
    }
    let names = raw
        .roles
        .iter()
        .map(|(key, role)| (key.as_str(), role.get_ref().name.get_ref().clone(), role.get_ref().name.span()))
        .collect();
    check_unique_names(locate, "iam.roles", "role name", names, Case::Insensitive, errors);
    Iam { roles }
}

/// IAM's rule for role and policy names: letters, digits and `+=,.@_-`.
/// A description as IAM takes it (its service model's `roleDescriptionType`: at most 1000
/// characters of `[\t\n\r\x20-\x7E\xA1-\xFF]`; a managed policy's is held to the same): printable
/// Latin-1, so an em dash or a check mark would fail `CreateRole` halfway through an apply.
fn check_description(description: &str, what: &str) -> Result<(), String> {
    if description.chars().count() > 1000 {
        return Err(format!("{what} is at most 1000 characters"));
    }
    let allowed = |c: char| matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{7e}' | '\u{a1}'..='\u{ff}');
    match description.chars().find(|c| !allowed(*c)) {
        Some(c) => Err(format!(
            "IAM takes {what} of printable Latin-1 characters only, not `{}` (U+{:04X})",
            c.escape_default(),
            c as u32
        )),
        None => Ok(()),
    }
}

pub(crate) fn check_iam_name(name: &str, max: usize) -> Result<(), String> {
    if name.is_empty() || name.len() > max {
        return Err(format!("`{name}` must be 1 to {max} characters long"));
    }
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || "+=,.@_-".contains(c)) {
        return Err(format!("`{name}` may only use letters, digits and `+=,.@_-`"));
    }
    Ok(())
}

pub mod ci {
    //! `[ci]`: the identities the nightly repository's workflows run `reconcile` as. GitHub's OIDC
    //! identity provider in the account, and three roles, each trusted by exactly one kind of
    //! workflow run of the `[github]` repository: pull requests plan, the default branch's scheduled
    //! job checks drift, the job in a protected environment applies; and, when declared, a fourth
    //! the drift check's job puts drift back as (`[drift] put_back`). What each role may do is
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

    use super::check_iam_name;

    /// `[ci]`, listed after `[github]` where the file's keys are. It publishes its roles, whose
    /// ARNs the repository variables carry and whose trusts GitHub's subject template waits on.
    pub const CLAIM: Claim = Claim {
        name: "ci",
        after: Some("github"),
        types: Section::types::<RawCi>,
        publishes: |section| {
            let Ok(raw) = section.parse::<RawCi>() else { return Vec::new() };
            let names =
                [Some(&raw.plan_role), Some(&raw.drift_role), Some(&raw.apply_role), raw.put_back_role.as_ref()];
            CiPurpose::ALL
                .into_iter()
                .zip(names)
                .filter_map(|(purpose, name)| Some((purpose, name?)))
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
        /// The scheduled `reconcile drift --put-back` on the default branch (the drift check's own
        /// job, `[ci] put_back_role`): what the drift role reads, the apply lock, and writing back
        /// the settings of the kinds `[drift] put_back` names on this deployment's resources.
        PutBack,
    }

    impl CiPurpose {
        pub const ALL: [CiPurpose; 4] = [CiPurpose::Plan, CiPurpose::Drift, CiPurpose::Apply, CiPurpose::PutBack];

        /// The address name of its role, and its key in `[ci]` without `_role`.
        pub fn key(self) -> &'static str {
            match self {
                CiPurpose::Plan => "plan",
                CiPurpose::Drift => "drift",
                CiPurpose::Apply => "apply",
                CiPurpose::PutBack => "put_back",
            }
        }

        /// The repository variable the workflows read the role's ARN from.
        pub fn variable(self) -> &'static str {
            match self {
                CiPurpose::Plan => "RECONCILE_PLAN_ROLE_ARN",
                CiPurpose::Drift => "RECONCILE_DRIFT_ROLE_ARN",
                CiPurpose::Apply => "RECONCILE_APPLY_ROLE_ARN",
                CiPurpose::PutBack => "RECONCILE_PUT_BACK_ROLE_ARN",
            }
        }

        /// Whether the role only reads.
        pub fn reads_only(self) -> bool {
            matches!(self, CiPurpose::Plan | CiPurpose::Drift)
        }
    }

    #[derive(Debug, Clone, PartialEq)]
    pub struct Ci {
        /// Plan, drift, apply, and put back when declared: in that order.
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
        /// The role the scheduled drift check on `branch` assumes to put back the drift of the
        /// kinds `[drift] put_back` names (and nothing else); none when it is not declared.
        #[schemars(with = "Option<String>")]
        put_back_role: Option<Spanned<String>>,
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
        // The put-back role is trusted by the drift check's own job: it puts back in the run
        // that finds the drift.
        let subjects = [
            (CiPurpose::Plan, Some(&raw.plan_role), &on_branch, &workflows[0]),
            (CiPurpose::Drift, Some(&raw.drift_role), &on_branch, &workflows[1]),
            (CiPurpose::Apply, Some(&raw.apply_role), &environment, &workflows[2]),
            (CiPurpose::PutBack, raw.put_back_role.as_ref(), &on_branch, &workflows[1]),
        ];
        let mut roles = Vec::new();
        for (purpose, name, context, workflow) in subjects {
            let Some(name) = name else { continue };
            let subject = subject(&repository, context, workflow, branch);
            let key = format!("ci.{}_role", purpose.key());
            if let Err(why) = check_iam_name(name.get_ref(), 64) {
                errors.push(locate.error(Some(name.span()), &key, why));
            } else if let Some(other) = other_role_names.iter().find(|other| other.eq_ignore_ascii_case(name.get_ref()))
            {
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

        const ROLES: &str =
            "plan_role = \"p\"\ndrift_role = \"d\"\napply_role = \"a\"\nenvironment = \"aws-production\"\n";

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
                [
                    "RECONCILE_PLAN_ROLE_ARN",
                    "RECONCILE_DRIFT_ROLE_ARN",
                    "RECONCILE_APPLY_ROLE_ARN",
                    "RECONCILE_PUT_BACK_ROLE_ARN"
                ]
            );
            assert!(CiPurpose::Plan.reads_only() && CiPurpose::Drift.reads_only() && !CiPurpose::Apply.reads_only());
            assert!(!CiPurpose::PutBack.reads_only());
            assert_eq!(ci.role(CiPurpose::PutBack), None, "no put-back role unless declared");
        }

        #[test]
        fn the_put_back_role_is_trusted_by_the_drift_checks_own_job() {
            let ci = parse(&format!("{ROLES}put_back_role = \"b\"\n"));
            let (drift, put_back) = (ci.role(CiPurpose::Drift).unwrap(), ci.role(CiPurpose::PutBack).unwrap());
            assert_eq!((put_back.name.as_str(), &put_back.subject), ("b", &drift.subject));
            assert_eq!(ci.roles.len(), 4);
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
            assert!(
                refused("drift_role = \"a/b\"").starts_with("desired.toml:9:14: `ci.drift_role`: `a/b` may only use")
            );
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
}

// `import --generate`'s half of `[iam]`: the service roles the account holds and desired.toml
// does not declare, as `[iam.roles.<key>]`. Their inline policy is never written: reconcile
// derives it from what runs as the role, and a plan that finds the live one grants more says so.

/// desired.toml's lines for the roles in `found`, each published as a role reference so a
/// project written after it names it by its key.
pub fn generate(found: &[&Found], desired: &Desired, account: &Account, _references: &[Reference]) -> Generated {
    let mut generated = Generated::default();
    let mut taken: Vec<String> = desired.referred(Topic::Role).map(|r| r.key.clone()).collect();
    for found in found {
        let live: crate::role::FoundRole = match serde_json::from_value(Value::Object(found.live.clone())) {
            Ok(live) => live,
            Err(why) => {
                generated.left_out.push((format!("role `{}`", found.name), format!("it could not be read ({why})")));
                continue;
            }
        };
        let key = key_for(&found.name, desired, &account.id, "role", &taken);
        taken.push(key.clone());
        let table = ["iam", "roles", key.as_str()];
        generated.push(&found.name, Entry::new(&table, "name", json!(found.name)));
        if !live.description.is_empty() {
            generated.push(&found.name, Entry::new(&table, "description", json!(live.description)));
        }
        generated.push(&found.name, Entry::new(&table, "trusted_services", json!(live.trusted_services)));
        if live.max_session_duration != 3600 {
            generated.push(&found.name, Entry::new(&table, "max_session_duration", json!(live.max_session_duration)));
        }
        if let Some(description) = live.boundary_description.filter(|d| d != BOUNDARY_DESCRIPTION) {
            generated.push(&found.name, Entry::new(&table, "boundary_description", json!(description)));
        }
        match live.policy_names.as_slice() {
            [one] => generated.push(&found.name, Entry::new(&table, "policy_name", json!(one))),
            [] => {}
            many => generated.notes.push(format!(
                "role `{}` has {} inline policies ({}); reconcile keeps one, derived: declare `policy_name` as the \
                 one to keep, and the plan deletes the others",
                found.name,
                many.len(),
                many.join(", ")
            )),
        }
        if !live.tags.is_empty() {
            generated.push(&found.name, Entry::new(&table, "tags", json!(live.tags)));
        }
        generated.derived.extend([Address::new(crate::ROLE_POLICY, &key), Address::new(crate::ROLE_BOUNDARY, &key)]);
        generated.references.push(
            Reference::new(Topic::Role, key.clone(), found.name.clone())
                .at(Address::new(crate::ROLE, &key))
                .at(Address::new(crate::ROLE_POLICY, &key)),
        );
    }
    generated
}

#[cfg(test)]
mod tests {
    use reconcile_core::desired::Topic;

    use super::declared;
    use crate::testing::{parse, try_parse};

    fn role(more: &str) -> String {
        format!(
            "region = \"us-east-1\"\n[iam.roles.codebuild]\nname = \"rocm-bake-codebuild\"\n\
             trusted_services = [\"codebuild.amazonaws.com\"]\n{more}"
        )
    }

    /// The one message a refused file says, without its place.
    fn refusal(text: &str) -> String {
        let said = try_parse(text).expect_err("refused");
        assert_eq!(said.lines().count(), 1, "{said}");
        said.splitn(4, ':').nth(3).unwrap().trim().to_owned()
    }

    #[test]
    fn a_role_is_read_with_its_defaults_and_published_with_its_addresses() {
        let desired = parse(&role(""));
        let read = &declared(&desired).roles[0];
        assert_eq!((read.key.as_str(), read.name.as_str()), ("codebuild", "rocm-bake-codebuild"));
        assert_eq!((read.description.as_str(), read.policy_name.as_str()), ("", "rocm-bake-codebuild"));
        assert_eq!((read.max_session_duration, read.adopt, read.tags.len()), (3600, false, 0));
        let published: Vec<String> = desired
            .referred(Topic::Role)
            .map(|r| {
                let at: Vec<String> = r.addresses.iter().map(ToString::to_string).collect();
                format!("{} {} {}", r.key, r.value, at.join(" "))
            })
            .collect();
        assert_eq!(published, ["codebuild rocm-bake-codebuild iam_role.codebuild iam_role_policy.codebuild"]);
        assert!(declared(&parse("region = \"us-east-1\"\n")).roles.is_empty());

        let set = parse(
            &role(
                "description = \"Runs the nightly\"\npolicy_name = \"p\"\nmax_session_duration = 43200\nadopt = \
                 true\ntags = { team = \"rocm\" }\n",
            )
            .replace(
                "[\"codebuild.amazonaws.com\"]",
                "[\"ec2.amazonaws.com\", \"codebuild.amazonaws.com\", \"ec2.amazonaws.com\"]",
            ),
        );
        let read = &declared(&set).roles[0];
        assert_eq!((read.description.as_str(), read.policy_name.as_str()), ("Runs the nightly", "p"));
        assert_eq!((read.max_session_duration, read.adopt), (43200, true));
        assert_eq!(read.tags["team"], "rocm");
        assert_eq!(read.trusted_services, ["codebuild.amazonaws.com", "ec2.amazonaws.com"], "sorted, once each");
        assert!(try_parse(&role("max_session_duration = 3600\n")).is_ok());
    }

    #[test]
    fn what_iam_would_refuse_is_refused_with_its_key() {
        let name = |name: &str| role("").replace("name = \"rocm-bake-codebuild\"", &format!("name = \"{name}\""));
        assert_eq!(refusal(&name("")), "`iam.roles.codebuild.name`: `` must be 1 to 64 characters long");
        let long = "r".repeat(65);
        assert_eq!(
            refusal(&name(&long)),
            format!("`iam.roles.codebuild.name`: `{long}` must be 1 to 64 characters long")
        );
        assert!(try_parse(&name(&"r".repeat(64))).is_ok());
        assert_eq!(
            refusal(&name("a/b")),
            "`iam.roles.codebuild.name`: `a/b` may only use letters, digits and `+=,.@_-`"
        );
        assert!(try_parse(&name("a+=,.@_-9")).is_ok());
        let policy = "p".repeat(129);
        assert_eq!(
            refusal(&role(&format!("policy_name = \"{policy}\"\n"))),
            format!("`iam.roles.codebuild.policy_name`: `{policy}` must be 1 to 128 characters long")
        );
        assert!(try_parse(&role(&format!("policy_name = \"{}\"\n", "p".repeat(128)))).is_ok());
        assert_eq!(
            refusal(&role(&format!("description = \"{}\"\n", "d".repeat(1001)))),
            "`iam.roles.codebuild.description`: a role description is at most 1000 characters"
        );
        assert!(try_parse(&role(&format!("description = \"{}\"\n", "é".repeat(1000)))).is_ok());
        assert_eq!(
            refusal(&role("description = \"a — b\"\n")),
            "`iam.roles.codebuild.description`: IAM takes a role description of printable Latin-1 characters only, \
             not `\\u{2014}` (U+2014)"
        );
        assert!(try_parse(&role("description = \"tab\\there\\nand ¡ÿ\"\n")).is_ok());
        let services = "`iam.roles.codebuild.trusted_services`: list the AWS service principals that assume the role, \
                        such as `codebuild.amazonaws.com`";
        for listed in ["[]", "[\"codebuild.amazonaws.com\", \"arn:aws:iam::1:root\"]"] {
            let text = role("").replace("[\"codebuild.amazonaws.com\"]", listed);
            assert_eq!(refusal(&text), services, "{listed}");
        }
        for seconds in [3599, 43201] {
            assert_eq!(
                refusal(&role(&format!("max_session_duration = {seconds}\n"))),
                "`iam.roles.codebuild.max_session_duration`: must be 3600 to 43200 seconds (1 to 12 hours)"
            );
        }
        assert!(refusal(&role("tags = { \"aws:x\" = \"y\" }\n")).starts_with("`iam.roles.codebuild.tags.aws:x`"));
    }

    #[test]
    fn a_key_is_a_plain_word_never_an_undeclared_roles_address() {
        let keyed = |key: &str| role("").replace("[iam.roles.codebuild]", &format!("[iam.roles.{key}]"));
        for bad in ["\"role/other-team\"", "\"a.b\"", "\"\"", "\"-x\"", "\"é\""] {
            let message = try_parse(&keyed(bad)).unwrap_err();
            assert!(message.contains("cannot be a key: 1 to 64 letters, digits, `_` or `-`"), "{bad}: {message}");
            assert!(message.starts_with("desired.toml:2:1: `iam.roles."), "at its table: {message}");
        }
        assert!(try_parse(&keyed("Runner_2-x")).is_ok());
        assert_eq!(crate::undeclared_role("codebuild").to_string(), "iam_role.role/codebuild");
    }

    #[test]
    fn one_aws_name_under_two_keys_is_refused_naming_both() {
        let text = r#"
region = "us-east-1"
[iam.roles.builder]
name = "rocm-bake-codebuild"
trusted_services = ["codebuild.amazonaws.com"]
[iam.roles.codebuild]
name = "rocm-bake-codebuild"
trusted_services = ["codebuild.amazonaws.com"]
"#;
        assert_eq!(
            try_parse(text).unwrap_err(),
            "desired.toml:7:8: `iam.roles.codebuild.name`: role name `rocm-bake-codebuild` is also declared by `iam.roles.builder` (line 4); one AWS name can be declared only once"
        );
    }
}
