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
        assert!(last.ends_with("(reconcile explain E108)\n```"), "its example closes it: {last}");
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

    /// The source of every crate, without its unit tests: where each finding's message is made.
    fn production_sources() -> Vec<String> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut files = Vec::new();
        let mut dirs: Vec<std::path::PathBuf> =
            std::fs::read_dir(root.join("crates")).unwrap().map(|e| e.unwrap().path().join("src")).collect();
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for path in entries.map(|e| e.unwrap().path()) {
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if path.is_dir() {
                    dirs.push(path);
                } else if name.ends_with(".rs") && !name.contains("test") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    let end = text.find("#[cfg(test)]\nmod tests {").unwrap_or(text.len());
                    files.push(text[..end].to_owned());
                }
            }
        }
        files
    }

    /// The string literals of a source file, each with where it starts (comments and character
    /// literals skipped; a `\` line continuation and escapes read as Rust reads them).
    fn literals(code: &str) -> Vec<(usize, String)> {
        let mut out = Vec::new();
        let mut chars = code.char_indices().peekable();
        while let Some((at, c)) = chars.next() {
            match c {
                '/' if chars.peek().is_some_and(|(_, c)| *c == '/') => {
                    while chars.next_if(|(_, c)| *c != '\n').is_some() {}
                }
                // A character literal (`'"'`, `'\''`), not a lifetime.
                '\'' if code[at + 1..].starts_with('\\') => {
                    chars.next();
                    chars.next();
                    chars.next_if(|(_, c)| *c == '\'');
                }
                '\'' if code[at + 1..].chars().nth(1) == Some('\'') => {
                    chars.next();
                    chars.next();
                }
                '"' => {
                    let mut literal = String::new();
                    while let Some((_, c)) = chars.next() {
                        match c {
                            '"' => break,
                            '\\' => match chars.next().map(|(_, c)| c) {
                                Some('\n') => while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {},
                                Some('n') => literal.push('\n'),
                                Some(other) => literal.push(other),
                                None => {}
                            },
                            _ => literal.push(c),
                        }
                    }
                    out.push((at, literal));
                }
                _ => {}
            }
        }
        out
    }

    /// Whether `message` is what the format string `template` makes: its fixed text (between
    /// `{...}`), every piece of six characters or more, in order, one of them long enough to say
    /// something (15).
    fn made_by(template: &str, message: &str) -> bool {
        let mut pieces = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            pieces.push(&rest[..open]);
            rest = rest[open..].find('}').map_or("", |close| &rest[open + close + 1..]);
        }
        pieces.push(rest);
        let pieces: Vec<&str> = pieces.into_iter().filter(|p| p.len() >= 6).collect();
        if !pieces.iter().any(|p| p.len() >= 15) {
            return false;
        }
        let mut at = 0;
        pieces.iter().all(|piece| match message[at..].find(piece) {
            Some(found) => {
                at += found + piece.len();
                true
            }
            None => false,
        })
    }

    /// Every entry's example is a line the binary prints for that code: the text plan's format
    /// (rendered here by the renderer itself, so severity, address and the closing `reconcile
    /// explain` are its), and a message the code that emits the finding makes (its format
    /// string's fixed text, found at the code's constant in the source). Its links lead somewhere
    /// from a terminal: a full URL, never a path relative to this page.
    #[test]
    fn every_example_is_a_line_the_binary_prints_for_its_code() {
        let sources: Vec<(String, Vec<(usize, String)>)> = production_sources()
            .into_iter()
            .map(|text| {
                let literals = literals(&text);
                (text, literals)
            })
            .collect();
        let kinds: Vec<reconcile_core::address::ResourceKind> =
            crate::catalog::CATALOG.0.iter().flat_map(|d| d.kinds.iter().copied()).collect();
        let mut wrong = Vec::new();
        for row in FINDINGS.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| code")) {
            let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
            let (code, severity) = (cells[0], cells[1]);
            let entry = entry(code).unwrap();
            if entry.split("](").skip(1).any(|target| !target.starts_with("https://")) {
                wrong.push(format!("{code}: a link relative to the page, which a terminal cannot follow"));
            }
            let example: Vec<&str> = entry
                .split_once("```text\n")
                .and_then(|(_, rest)| rest.split_once("```"))
                .map(|(block, _)| block.lines().collect())
                .unwrap_or_default();
            if example.is_empty() {
                wrong.push(format!("{code}: no example"));
            }
            // The templates: string literals near each use of the code (its constant, or itself).
            let names: Vec<String> = sources
                .iter()
                .flat_map(|(text, _)| text.lines())
                .filter(|line| line.contains("const ") && line.contains(&format!("&str = \"{code}\";")))
                .filter_map(|line| line.split("const ").nth(1)?.split(':').next().map(str::to_owned))
                .chain([format!("\"{code}\"")])
                .collect();
            let mut templates = Vec::new();
            for (text, literals) in &sources {
                for name in &names {
                    for (at, _) in text.match_indices(name.as_str()) {
                        let before = &text[at.saturating_sub(1)..at];
                        let after = text[at + name.len()..].chars().next().unwrap_or(' ');
                        if before.chars().any(|c| c.is_alphanumeric() || c == '_')
                            || after.is_alphanumeric()
                            || after == '_'
                            || text[at.saturating_sub(40)..at].contains("const ")
                        {
                            continue;
                        }
                        // The message may be made before the finding that carries it.
                        let near = literals.iter().filter(|(start, _)| start.abs_diff(at) < 1500);
                        templates.extend(near.map(|(_, literal)| literal.as_str()));
                    }
                }
            }
            for line in example {
                // `validate` prints what it finds in desired.toml its own way, with no address.
                let validated = line.starts_with("error: ") || line.starts_with("warning: ");
                let Some((head, tail)) = line.split_once("] ") else {
                    wrong.push(format!("{code}: `{line}` is not `Severity [CODE] ...`"));
                    continue;
                };
                let Some(message) = tail.strip_suffix(&format!(" (reconcile explain {code})")) else {
                    wrong.push(format!("{code}: `{line}` does not end as the binary's does"));
                    continue;
                };
                let (address, message) = match message.split_once(": ") {
                    Some((first, rest)) if !validated => match reconcile_core::Address::parse(first, &kinds) {
                        Ok(address) => (Some(address), rest),
                        Err(_) => (None, message),
                    },
                    _ => (None, message),
                };
                let finding = reconcile_core::Finding {
                    code: code.to_owned(),
                    severity: if severity.starts_with("error") {
                        reconcile_core::plan::Severity::Error
                    } else {
                        reconcile_core::plan::Severity::Warning
                    },
                    address,
                    message: message.to_owned(),
                    overridden_by: None,
                };
                let printed = match validated {
                    true => crate::commands::validate::finding_line(&finding),
                    false => reconcile_render::plan::finding_line(&finding),
                };
                if printed != line || !head.ends_with(code) {
                    wrong.push(format!("{code}: `{line}` is not as a plan prints it (severity {severity})"));
                } else if !templates.iter().any(|template| made_by(template, message)) {
                    wrong.push(format!("{code}: `{message}` is made by no format string of the code's emitters"));
                }
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
        assert!(made_by("role `{name}` is not in desired.toml ({}): act", "role `x` is not in desired.toml (y): act"));
        assert!(!made_by("role `{name}` is not in desired.toml ({}): act", "role `x` is in desired.toml (y): act"));
    }
}
