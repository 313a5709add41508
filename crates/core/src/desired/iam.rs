//! The `[iam]` section: the service role and what its derived inline policy is called.
//!
//! The policy's content is not declared here: the IAM reconciler derives it from the rest of
//! the desired state (the repositories, the buckets, the projects that use the role), so that
//! declaring a repository extends the role in the same plan.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use toml::Spanned;

use super::{DesiredError, Locator, convert_tags};

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
}

#[derive(Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawIam {
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
    /// Takes it over though it exists without reconcile's `managed-by` tag (someone else made it).
    #[serde(default)]
    adopt: bool,
}

/// Checks the `[iam]` section and converts it to the model.
pub(super) fn convert(locate: &Locator<'_>, raw: &RawIam, errors: &mut Vec<DesiredError>) -> Iam {
    let mut roles = Vec::new();
    for (key, role) in &raw.roles {
        let key_path = format!("iam.roles.{key}");
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
            && let Err(why) = check_role_description(description.get_ref())
        {
            errors.push(locate.error(Some(description.span()), &format!("{key_path}.description"), why));
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
        });
    }
    let names = raw
        .roles
        .iter()
        .map(|(key, role)| (key.as_str(), role.get_ref().name.get_ref().clone(), role.get_ref().name.span()))
        .collect();
    super::check_unique_names(locate, "iam.roles", "role name", names, super::Case::Insensitive, errors);
    Iam { roles }
}

/// IAM's rule for role and policy names: letters, digits and `+=,.@_-`.
/// A role description as IAM takes it (its service model's `roleDescriptionType`: at most 1000
/// characters of `[\t\n\r\x20-\x7E\xA1-\xFF]`): printable Latin-1, so an em dash or a check mark
/// would fail `CreateRole` halfway through an apply.
fn check_role_description(description: &str) -> Result<(), String> {
    if description.chars().count() > 1000 {
        return Err("a role description is at most 1000 characters".to_owned());
    }
    let allowed = |c: char| matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{7e}' | '\u{a1}'..='\u{ff}');
    match description.chars().find(|c| !allowed(*c)) {
        Some(c) => Err(format!(
            "IAM takes a role description of printable Latin-1 characters only, not `{}` (U+{:04X})",
            c.escape_default(),
            c as u32
        )),
        None => Ok(()),
    }
}

pub(super) fn check_iam_name(name: &str, max: usize) -> Result<(), String> {
    if name.is_empty() || name.len() > max {
        return Err(format!("`{name}` must be 1 to {max} characters long"));
    }
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || "+=,.@_-".contains(c)) {
        return Err(format!("`{name}` may only use letters, digits and `+=,.@_-`"));
    }
    Ok(())
}
