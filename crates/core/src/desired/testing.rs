//! How the section tests read a desired.toml: accepted, refused (each message with its key
//! path, without its place), or what it warns about. One copy for every section.

use std::path::Path;

use crate::desired::Desired;
use crate::plan::Severity;

/// The file parsed as `desired.toml`, or every error as printed.
pub fn parse(text: &str) -> Result<Desired, String> {
    Desired::parse(Path::new("desired.toml"), text).map_err(|errors| errors.to_string())
}

/// The messages of a refused file, with their key paths, without their places.
pub fn refusals(text: &str) -> Vec<String> {
    let errors = parse(text).expect_err("refused");
    errors.lines().map(|line| line.splitn(4, ':').nth(3).unwrap_or(line).trim().to_owned()).collect()
}

/// The findings of an accepted file: `code severity key-path: message`.
pub fn findings(text: &str) -> Vec<String> {
    let desired = parse(text).expect("accepted");
    desired
        .findings
        .iter()
        .map(|f| {
            let severity = if f.severity == Severity::Error { "error" } else { "warning" };
            format!("{} {severity} {}: {}", f.code, f.location.key_path, f.location.message)
        })
        .collect()
}

/// For each `(file, refusal)`: the file is refused with exactly that one message.
pub fn each_refused_as(cases: impl IntoIterator<Item = (String, String)>) {
    for (text, expected) in cases {
        assert_eq!(refusals(&text), [expected.as_str()], "for\n{text}");
    }
}
