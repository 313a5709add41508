//! What desired.toml's names and tags may be: a deployment's name, a region, a table's key, a
//! bake variable the nightly may take from its environment, one AWS name declared once, and a
//! tag every service accepts. Each says why a value cannot be, for the error that names its
//! line and key.

use std::ops::Range;

use toml::Spanned;

use super::{DesiredError, Locator, line_column};

/// What a bake variable may not be named in `bake_variables`: names of credentials and of the
/// CI's own settings. A pull request writes desired.toml, so it could list them; no value of
/// them is ever wanted in a bake reference.
const SECRET_VARIABLE_PREFIXES: [&str; 6] = ["AWS_", "GITHUB_", "GH_", "ACTIONS_", "RUNNER_", "CI_"];
const SECRET_VARIABLE_WORDS: [&str; 8] =
    ["TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "PRIVATE", "ACCESS_KEY", "API_KEY"];

/// Why `name` cannot be a bake variable taken from the environment, if it cannot.
pub(crate) fn check_bake_variable(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(format!("`{name}` is not a variable name: letters, digits and `_`, not starting with a digit"));
    }
    let upper = name.to_ascii_uppercase();
    if SECRET_VARIABLE_PREFIXES.iter().any(|p| upper.starts_with(p))
        || SECRET_VARIABLE_WORDS.iter().any(|w| upper.contains(w))
    {
        return Err(format!(
            "`{name}` names a credential or the CI's own setting; a bake reference never needs one, and a pull request \
             could use it to print it"
        ));
    }
    Ok(())
}

/// The most characters a deployment's name may have.
const DEPLOYMENT_LIMIT: usize = 64;

/// Why `name` cannot name a deployment, if it cannot: it is a tag value, an IAM condition's
/// value and part of the nightly's commands, so letters, digits, `.`, `_` and `-` only.
pub(crate) fn check_deployment(name: &str) -> Result<(), String> {
    let valid = name.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    if !valid || name.len() > DEPLOYMENT_LIMIT {
        return Err(format!(
            "`{name}` cannot name a deployment: 1 to {DEPLOYMENT_LIMIT} letters, digits, `.`, `_` or `-`, starting with \
             a letter or digit"
        ));
    }
    Ok(())
}

/// GitHub's limit on a repository variable's value, in bytes (48 KB): `[nightly] arches` and
/// `[github.variables]` are held to it.
pub const GITHUB_VARIABLE_LIMIT: usize = 48 * 1024;

/// AWS region names are `<area>-<direction>-<number>` (`us-gov-west-1` has a two-part area).
/// Checked by form against AWS's areas and directions rather than by a list of today's regions,
/// so a misspelling (`us-est-1`) is caught and a region opened next year is not refused.
pub(crate) fn is_region(region: &str) -> bool {
    const AREAS: [&str; 12] = ["us", "us-gov", "us-iso", "us-isob", "af", "ap", "ca", "cn", "eu", "il", "me", "mx"];
    const MORE_AREAS: [&str; 2] = ["sa", "eusc"];
    const DIRECTIONS: [&str; 9] =
        ["east", "west", "north", "south", "central", "northeast", "northwest", "southeast", "southwest"];
    let Some((rest, number)) = region.rsplit_once('-') else { return false };
    let Some((area, direction)) = rest.rsplit_once('-') else { return false };
    !number.is_empty()
        && number.len() <= 2
        && number.chars().all(|c| c.is_ascii_digit())
        && DIRECTIONS.contains(&direction)
        && (AREAS.contains(&area) || MORE_AREAS.contains(&area))
}

/// Whether AWS tells two names apart by case: IAM does not (`Runner` and `runner` are one role).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    Sensitive,
    Insensitive,
}

impl Case {
    /// The form two names are compared in.
    pub fn fold(self, name: &str) -> String {
        match self {
            Case::Sensitive => name.to_owned(),
            Case::Insensitive => name.to_ascii_lowercase(),
        }
    }
}

/// The most characters a key under a section's table (`[iam.roles.<key>]`) may have.
const KEY_LIMIT: usize = 64;

/// Why `key` cannot key a table under a section (`[iam.roles.<key>]`), if it cannot: letters,
/// digits, `_` and `-`, as Terraform's resource names. A key is its resource's address name, and
/// what desired.toml does not declare is addressed by a name no key can be (an undeclared role
/// is `iam_role.role/<its name>`), so a pull request cannot make a finding about another team's
/// role look like one about its own, nor the other way round.
pub fn check_key(key: &str) -> Result<(), String> {
    let valid = key.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && key.chars().all(|c| c.is_ascii_alphanumeric() || "_-".contains(c));
    if !valid || key.len() > KEY_LIMIT {
        return Err(format!(
            "`{}` cannot be a key: 1 to {KEY_LIMIT} letters, digits, `_` or `-`, starting with a letter or digit (the \
             AWS name goes in `name`)",
            key.escape_debug()
        ));
    }
    Ok(())
}

/// One AWS name declared under two keys is refused: the two would fight over one resource,
/// plans flipping between them forever (and with two roles, one's apply would delete the other's
/// inline policy). `names` are (key, name as AWS will see it, where the name is written), under
/// `section` (such as `iam.roles`), compared as AWS compares them (`case`); the error names both
/// keys and both lines.
pub fn check_unique_names(
    locate: &Locator<'_>,
    section: &str,
    what: &str,
    mut names: Vec<(&str, String, Range<usize>)>,
    case: Case,
    errors: &mut Vec<DesiredError>,
) {
    // In the order they are written, so the later one is the one reported.
    names.sort_by_key(|(_, _, span)| span.start);
    let mut first: std::collections::HashMap<String, (&str, &str, Range<usize>)> = std::collections::HashMap::new();
    for (key, name, span) in &names {
        match first.get(&case.fold(name)) {
            Some((first_key, first_name, first_span)) => {
                let (line, _) = line_column(locate.text, first_span.start);
                let spelt = if first_name == name {
                    String::new()
                } else {
                    format!(" as `{first_name}`: AWS does not tell them apart by case")
                };
                errors.push(locate.error(
                    Some(span.clone()),
                    &format!("{section}.{key}.name"),
                    format!(
                        "{what} `{name}` is also declared by `{section}.{first_key}` (line {line}){spelt}; one AWS \
                         name can be declared only once"
                    ),
                ));
            }
            None => {
                first.insert(case.fold(name), (*key, name.as_str(), span.clone()));
            }
        }
    }
}

/// Checks the tags written under `key_path` (such as `iam.roles.codebuild`), putting each valid
/// one into `into` (a later section's value wins) and an error for each other.
pub fn convert_tags(
    locate: &Locator<'_>,
    key_path: &str,
    raw: &std::collections::BTreeMap<String, Spanned<String>>,
    into: &mut std::collections::BTreeMap<String, String>,
    errors: &mut Vec<DesiredError>,
) {
    for (key, value) in raw {
        match check_tag(key, value.get_ref()) {
            Ok(()) => {
                into.insert(key.clone(), value.get_ref().clone());
            }
            Err(why) => errors.push(locate.error(Some(value.span()), &format!("{key_path}.tags.{key}"), why)),
        }
    }
}

/// Why a tag cannot be put on a resource, if it cannot.
pub fn check_tag(key: &str, value: &str) -> Result<(), String> {
    if key.is_empty() || key.chars().count() > 128 {
        return Err("a tag key must be 1 to 128 characters long".to_owned());
    }
    if key.starts_with("aws:") {
        return Err("tag keys starting with `aws:` are reserved for AWS".to_owned());
    }
    if crate::mark::is_reserved(key) {
        return Err(format!(
            "tag keys starting with `{}` are reconcile's own: it marks what it makes or takes over with `{} = \
             <deployment>`, and no file may write or change that",
            crate::mark::RESERVED_PREFIX,
            crate::mark::MARK_KEY
        ));
    }
    if value.chars().count() > 256 {
        return Err("a tag value must be at most 256 characters long".to_owned());
    }
    // The character set IAM, ECR, S3 and CodeBuild all accept in tags.
    let allowed = |c: char| c.is_alphanumeric() || c == ' ' || "_.:/=+-@".contains(c);
    if let Some(c) = key.chars().chain(value.chars()).find(|c| !allowed(*c)) {
        return Err(format!(
            "tags may hold only letters, digits, spaces and `_ . : / = + - @`, not `{}`",
            c.escape_default()
        ));
    }
    Ok(())
}
