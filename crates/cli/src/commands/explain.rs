//! `reconcile explain CODE`: what a finding means, why it matters and what to do, as `rustc
//! --explain` does for its errors. The text is docs/reference/findings.md's, compiled in, so the
//! reference page and the command cannot disagree; a test holds the page to every code the
//! binary can emit.

use crate::error::CliError;
use crate::exit;
use crate::output::out;

/// The findings reference page.
pub const FINDINGS: &str = include_str!("../../../../docs/reference/findings.md");

/// The entry of `code` in [`FINDINGS`]: its heading (`W601: ...`) and body, up to the next
/// entry; `None` for a code it has none for.
pub fn entry(code: &str) -> Option<String> {
    let heading = format!("## {}: ", code.to_ascii_uppercase());
    let start = FINDINGS.find(&heading)?;
    let rest = &FINDINGS[start + 3..];
    let end = rest.find("\n## ").map_or(rest.len(), |end| end + 1);
    Some(rest[..end].trim_end().to_owned())
}

/// What the page says of `code` when it is retired (its `- Retired: CODE: ...` item, to the
/// next item or blank line); `None` for a code never used.
pub fn retired(code: &str) -> Option<String> {
    let item = format!("- Retired: {}: ", code.to_ascii_uppercase());
    let start = FINDINGS.find(&item)? + 2;
    let rest = &FINDINGS[start..];
    let end = rest.find("\n\n").or_else(|| rest.find("\n- ")).unwrap_or(rest.len());
    Some(rest[..end].lines().map(str::trim).collect::<Vec<_>>().join(" "))
}

/// Every code the page has an entry for, in its order.
#[cfg(test)]
fn codes() -> Vec<&'static str> {
    FINDINGS
        .lines()
        .filter_map(|line| line.strip_prefix("## "))
        .filter_map(|line| line.split(':').next())
        .filter(|code| code.len() == 4)
        .collect()
}

pub fn run(code: Option<&str>) -> Result<u8, CliError> {
    let Some(code) = code else {
        // Without a code: the table of every one.
        let table: String = FINDINGS
            .lines()
            .filter(|line| line.starts_with("| ") && !line.starts_with("| code"))
            .map(|line| {
                let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
                format!("{}  {:<7}  {}\n", cells[0], cells[1], cells[2..].join("|"))
            })
            .collect();
        out(&table)?;
        return Ok(exit::OK);
    };
    match entry(code).or_else(|| retired(code)) {
        Some(entry) => {
            out(&format!("{entry}\n"))?;
            Ok(exit::OK)
        }
        None => {
            Err(CliError::Input(vec![format!("no finding has the code `{code}`; `reconcile explain` lists every one")]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_its_heading_and_body_up_to_the_next() {
        let w601 = entry("W601").unwrap();
        assert!(w601.starts_with("W601: a declared resource exists without this deployment's mark\n"), "{w601}");
        assert!(w601.contains("reconcile import"), "{w601}");
        assert!(!w601.contains("## W602"), "{w601}");
        assert_eq!(entry("w601"), Some(w601), "any case");
        let last = entry("E108").unwrap();
        assert!(last.ends_with("the drift check reads it\n```"), "its example closes it: {last}");
        assert_eq!(entry("W999"), None);
        // A retired code: what it was, and what replaced it.
        let w101 = retired("w101").unwrap();
        assert!(w101.starts_with("Retired: W101: a managed policy attached to the runner's role"), "{w101}");
        assert!(w101.ends_with("`reconcile explain S101`."), "{w101}");
        assert_eq!(retired("W999"), None);
        assert_eq!(entry("W60"), None);
        // Every code of the table has an entry, and every entry a row.
        let rows: Vec<&str> = FINDINGS
            .lines()
            .filter(|line| line.starts_with("| ") && !line.starts_with("| code"))
            .filter_map(|line| line.trim_matches('|').split('|').next().map(str::trim))
            .filter(|code| code.len() == 4)
            .collect();
        let mut sorted = codes();
        sorted.sort_unstable();
        let mut rows_sorted = rows.clone();
        rows_sorted.sort_unstable();
        assert_eq!(rows_sorted, sorted);
        assert!(codes().len() > 40);
    }
}
