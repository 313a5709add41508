//! `[github]`: the nightly's GitHub repository. Its repository variables, the fork pull-request
//! approval policy and the default workflow permissions are reconciled like the AWS side; they
//! are what keeps a stranger's pull request off the runner, and they live outside the workflow
//! file. This crate claims it ([`CLAIM`]); [`declared`] is what it holds.

use std::collections::BTreeMap;

use reconcile_core::Desired;
use reconcile_core::desired::{
    Claim, DesiredError, GITHUB_VARIABLE_LIMIT, Locator, Reference, Section, Topic, schema_of,
};
use reconcile_core::variables::DERIVED_VARIABLES;
use schemars::JsonSchema;
use serde::Deserialize;
use toml::Spanned;

/// `[github]`, listed after `[nightly]` where the file's keys are. It publishes its repository,
/// which `[ci]`'s roles trust.
pub const CLAIM: Claim = Claim {
    name: "github",
    after: Some("nightly"),
    types: Section::types::<RawGithub>,
    publishes: |section| {
        let raw = section.parse::<RawGithub>().ok();
        raw.map(|raw| Reference::new(Topic::Repository, "", raw.repository.into_inner())).into_iter().collect()
    },
    read: |section| section.read(|locate, raw: RawGithub, errors| convert(locate, &raw, errors)),
    schema: schema_of::<Option<RawGithub>>,
};

/// The repository desired.toml declares, when it has `[github]`.
pub fn declared(desired: &Desired) -> Option<&Github> {
    desired.section(CLAIM.name).and_then(Section::model::<Github>)
}

/// GitHub's three fork pull-request approval policies, most permissive first.
pub const APPROVAL_POLICIES: [&str; 3] =
    ["first_time_contributors_new_to_github", "first_time_contributors", "all_external_contributors"];

#[derive(Debug, Clone, PartialEq)]
pub struct Github {
    pub owner: String,
    pub repository: String,
    /// Which fork pull requests wait for a maintainer's approval before any workflow runs:
    /// `all_external_contributors` unless desired.toml says otherwise, because GitHub's default
    /// lets an author who had one pull request merged run anything after it, unapproved.
    pub fork_pr_approval: String,
    /// `read` or `write`: what `GITHUB_TOKEN` may do in a workflow that does not say.
    pub default_workflow_permissions: String,
    /// Whether a workflow's `GITHUB_TOKEN` may approve pull requests.
    pub actions_can_approve_pull_requests: bool,
    /// Variables declared by hand, beside the derived ones: name (as GitHub stores it, upper
    /// case) to value.
    pub variables: BTreeMap<String, String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawGithub {
    /// The nightly's repository, `owner/name`.
    #[schemars(with = "String")]
    repository: Spanned<String>,
    /// `all_external_contributors` (default), `first_time_contributors` or
    /// `first_time_contributors_new_to_github`.
    #[schemars(with = "Option<String>")]
    fork_pr_approval: Option<Spanned<String>>,
    /// `read` (default) or `write`.
    #[schemars(with = "Option<String>")]
    default_workflow_permissions: Option<Spanned<String>>,
    /// Default false.
    actions_can_approve_pull_requests: Option<bool>,
    /// More repository variables, `NAME = "value"`.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, String>")]
    variables: BTreeMap<Spanned<String>, Spanned<String>>,
}

fn convert(locate: &Locator<'_>, raw: &RawGithub, errors: &mut Vec<DesiredError>) -> Github {
    let (owner, repository) = match raw.repository.get_ref().split_once('/') {
        Some((owner, name)) if is_github_name(owner) && is_github_name(name) => (owner.to_owned(), name.to_owned()),
        _ => {
            errors.push(locate.error(
                Some(raw.repository.span()),
                "github.repository",
                format!("`{}` is not a GitHub repository of the form `owner/name`", raw.repository.get_ref()),
            ));
            (String::new(), String::new())
        }
    };
    let one_of = |value: &Option<Spanned<String>>, key: &str, allowed: &[&str], default: &str| match value {
        Some(value) if !allowed.contains(&value.get_ref().as_str()) => {
            let message = format!("`{}` is not one of {}", value.get_ref(), allowed.join(", "));
            (default.to_owned(), Some(locate.error(Some(value.span()), &format!("github.{key}"), message)))
        }
        Some(value) => (value.get_ref().clone(), None),
        None => (default.to_owned(), None),
    };
    let (fork_pr_approval, error) =
        one_of(&raw.fork_pr_approval, "fork_pr_approval", &APPROVAL_POLICIES, "all_external_contributors");
    errors.extend(error);
    let (default_workflow_permissions, error) =
        one_of(&raw.default_workflow_permissions, "default_workflow_permissions", &["read", "write"], "read");
    errors.extend(error);

    let mut variables = BTreeMap::new();
    for (name, value) in &raw.variables {
        let key = format!("github.variables.{}", name.get_ref());
        // GitHub's rules: letters, digits and underscores, not starting with a digit or with
        // GITHUB_; names are case-insensitive and stored in upper case.
        let upper = name.get_ref().to_ascii_uppercase();
        let problem = if upper.is_empty()
            || upper.starts_with(|c: char| c.is_ascii_digit())
            || !upper.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            Some("a variable name has only letters, digits and underscores, and does not start with a digit".to_owned())
        } else if upper.starts_with("GITHUB_") {
            Some("GitHub reserves variable names that start with GITHUB_".to_owned())
        } else if DERIVED_VARIABLES.contains(&upper.as_str()) {
            Some(format!("{upper} is derived from the rest of desired.toml; it cannot be declared here too"))
        } else if variables.contains_key(&upper) {
            Some(format!("{upper} is declared twice (GitHub variable names ignore case)"))
        } else if value.get_ref().len() > GITHUB_VARIABLE_LIMIT {
            Some(format!("a repository variable holds at most {GITHUB_VARIABLE_LIMIT} bytes"))
        } else {
            None
        };
        match problem {
            Some(problem) => errors.push(locate.error(Some(name.span()), &key, problem)),
            None => {
                variables.insert(upper, value.get_ref().clone());
            }
        }
    }
    Github {
        owner,
        repository,
        fork_pr_approval,
        default_workflow_permissions,
        actions_can_approve_pull_requests: raw.actions_can_approve_pull_requests.unwrap_or(false),
        variables,
    }
}

/// GitHub's owner and repository names: letters, digits, `-`, `_` and `.`, at most 100.
fn is_github_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && name != "."
        && name != ".."
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

#[cfg(test)]
mod tests {
    //! `[github]`: the repository's form, the settings' allowed values and defaults, and the
    //! variables declared by hand, each refusal with its key.

    use reconcile_core::desired::testing::Files;

    use super::*;

    const FILES: Files = Files(&[&CLAIM]);

    fn file(more: &str) -> String {
        format!("region = \"us-east-1\"\n[github]\nrepository = \"ROCm/rocm-bake\"\n{more}")
    }

    #[test]
    fn the_repository_is_read_with_safe_defaults_and_published() {
        let desired = FILES.parse(&file("")).unwrap();
        let github = declared(&desired).unwrap();
        assert_eq!((github.owner.as_str(), github.repository.as_str()), ("ROCm", "rocm-bake"));
        assert_eq!(github.fork_pr_approval, "all_external_contributors");
        assert_eq!(github.default_workflow_permissions, "read");
        assert!(!github.actions_can_approve_pull_requests);
        assert!(github.variables.is_empty());
        let published: Vec<(&str, &str)> =
            desired.referred(Topic::Repository).map(|r| (r.key.as_str(), r.value.as_str())).collect();
        assert_eq!(published, [("", "ROCm/rocm-bake")]);
        assert!(declared(&FILES.parse("region = \"us-east-1\"\n").unwrap()).is_none());

        let set = FILES
            .parse(&file(
                "fork_pr_approval = \"first_time_contributors\"\ndefault_workflow_permissions = \"write\"\n\
                 actions_can_approve_pull_requests = true\n[github.variables]\nbuild_arch = \"gfx942\"\n",
            ))
            .unwrap();
        let github = declared(&set).unwrap();
        assert_eq!(github.fork_pr_approval, "first_time_contributors");
        assert_eq!(github.default_workflow_permissions, "write");
        assert!(github.actions_can_approve_pull_requests);
        assert_eq!(github.variables, BTreeMap::from([("BUILD_ARCH".to_owned(), "gfx942".to_owned())]));
    }

    #[test]
    fn a_repository_or_setting_github_would_not_take_is_refused_with_its_key() {
        let long = "a".repeat(101);
        let cases = [
            ("rocm-bake", "`rocm-bake` is not a GitHub repository of the form `owner/name`".to_owned()),
            ("ROCm/", "`ROCm/` is not a GitHub repository of the form `owner/name`".to_owned()),
            ("/x", "`/x` is not a GitHub repository of the form `owner/name`".to_owned()),
            ("ROCm/..", "`ROCm/..` is not a GitHub repository of the form `owner/name`".to_owned()),
            ("ROCm/.", "`ROCm/.` is not a GitHub repository of the form `owner/name`".to_owned()),
            ("RO Cm/x", "`RO Cm/x` is not a GitHub repository of the form `owner/name`".to_owned()),
            ("a/b/c", "`a/b/c` is not a GitHub repository of the form `owner/name`".to_owned()),
        ];
        FILES.each_refused_as(cases.into_iter().map(|(repository, message)| {
            let text = file("").replace("ROCm/rocm-bake", repository);
            (text, format!("`github.repository`: {message}"))
        }));
        let too_long = format!("ROCm/{long}");
        assert_eq!(
            FILES.refusals(&file("").replace("ROCm/rocm-bake", &too_long)),
            [format!("`github.repository`: `{too_long}` is not a GitHub repository of the form `owner/name`")]
        );
        for name in ["a", &"a".repeat(100), "a.b-c_d", "..a"] {
            let text = file("").replace("rocm-bake", name);
            assert!(FILES.parse(&text).is_ok(), "{name}");
        }
        FILES.each_refused_as([
            (
                file("fork_pr_approval = \"everyone\"\n"),
                "`github.fork_pr_approval`: `everyone` is not one of first_time_contributors_new_to_github, \
                 first_time_contributors, all_external_contributors"
                    .to_owned(),
            ),
            (
                file("default_workflow_permissions = \"admin\"\n"),
                "`github.default_workflow_permissions`: `admin` is not one of read, write".to_owned(),
            ),
        ]);
    }

    #[test]
    fn a_variable_github_would_refuse_or_one_reconcile_derives_is_refused() {
        let variable = |name: &str, value: &str| file(&format!("[github.variables]\n{name} = \"{value}\"\n"));
        let letters = "a variable name has only letters, digits and underscores, and does not start with a digit";
        FILES.each_refused_as([
            (variable("\"\"", "x"), format!("`github.variables.`: {letters}")),
            (variable("9lives", "x"), format!("`github.variables.9lives`: {letters}")),
            (variable("\"a-b\"", "x"), format!("`github.variables.a-b`: {letters}")),
            (
                variable("github_sha", "x"),
                "`github.variables.github_sha`: GitHub reserves variable names that start with GITHUB_".to_owned(),
            ),
            (
                variable("aws_region", "x"),
                "`github.variables.aws_region`: AWS_REGION is derived from the rest of desired.toml; it cannot be \
                 declared here too"
                    .to_owned(),
            ),
            (
                variable("x", &"v".repeat(GITHUB_VARIABLE_LIMIT + 1)),
                format!("`github.variables.x`: a repository variable holds at most {GITHUB_VARIABLE_LIMIT} bytes"),
            ),
        ]);
        let limit = variable("x", &"v".repeat(GITHUB_VARIABLE_LIMIT));
        assert_eq!(declared(&FILES.parse(&limit).unwrap()).unwrap().variables["X"].len(), GITHUB_VARIABLE_LIMIT);
        let twice = file("[github.variables]\nArch = \"a\"\nARCH = \"b\"\n");
        let said = FILES.refusals(&twice);
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(said[0].ends_with("ARCH is declared twice (GitHub variable names ignore case)"), "{said:?}");
        assert_eq!(APPROVAL_POLICIES[2], "all_external_contributors", "the default is the strictest");
    }
}
