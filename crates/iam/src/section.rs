//! The `[iam]` section: the service role and what its derived inline policy is called. This
//! crate claims it ([`CLAIM`]); [`declared`] is what it holds.
//!
//! The policy's content is not declared here: the IAM reconciler derives it from the rest of
//! the desired state (the repositories, the buckets, the projects that use the role), so that
//! declaring a repository extends the role in the same plan.

use std::collections::BTreeMap;

use reconcile_core::desired::{
    Case, Claim, DesiredError, Locator, Reference, Section, Topic, check_key, check_unique_names, convert_tags,
    schema_of,
};
use reconcile_core::{Address, Desired};
use schemars::JsonSchema;
use serde::Deserialize;
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
