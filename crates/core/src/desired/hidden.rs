//! What a reviewer cannot see is refused in desired.toml: a bidirectional control (which makes
//! a line read in another order than it is written, as "Trojan Source" does), a control
//! character, an invisible one. A pull request's diff shows desired.toml as it is written, so
//! what it holds must read as what it says, in a comment as in a value; and a value written as
//! an escape (`"\u202e"`) reaches AWS, and every page that renders it, as the character itself.

use toml::de::{DeTable, DeValue};

use super::{DesiredError, Locator, key_path_at};
use crate::text::{escaped, unreadable};

/// Every place in `text` (parsed as `table`) that holds such a character, one per line.
pub(super) fn unreadable_characters(locate: &Locator<'_>, table: &DeTable<'_>) -> Vec<DesiredError> {
    let text = locate.text;
    let mut errors: Vec<DesiredError> = Vec::new();
    let mut lines = std::collections::BTreeSet::new();
    let mut say = |offset: usize, key_path: String, c: char, why: &str, errors: &mut Vec<DesiredError>| {
        let line = text[..offset.min(text.len())].matches('\n').count();
        if lines.insert(line) {
            errors.push(locate.error(
                Some(offset..offset + 1),
                &escaped(&key_path),
                format!(
                    "holds U+{:04X}, {why}: desired.toml holds nothing a reviewer cannot see (write the text without \
                     it)",
                    c as u32
                ),
            ));
        }
    };
    let mut strings = Vec::new();
    for (key, value) in table {
        read_key(key, key.get_ref(), &mut strings);
        walk(key.get_ref(), value, &mut strings);
    }
    // As written: a comment, a key, a string, anywhere (a line ending CRLF is a line ending),
    // named by the string it is in when it is in one.
    let mut chars = text.char_indices().peekable();
    while let Some((offset, c)) = chars.next() {
        if c == '\r' && chars.peek().is_some_and(|(_, next)| *next == '\n') {
            continue;
        }
        if let Some(why) = unreadable(c) {
            let within = strings.iter().find(|s| s.span.contains(&offset)).map(|s| s.key_path.clone());
            say(offset, within.or_else(|| key_path_at(text, offset)).unwrap_or_default(), c, why, &mut errors);
        }
    }
    // As read: a string that holds one only through an escape.
    for string in strings {
        if let Some(c) = string.unreadable {
            say(string.span.start, string.key_path, c, unreadable(c).unwrap_or_default(), &mut errors);
        }
    }
    errors.sort_by_key(|e| (e.line, e.column));
    errors
}

/// A string of desired.toml as read: its key path, where it is written, and the first character
/// in it [`unreadable`] refuses.
struct Read {
    key_path: String,
    span: std::ops::Range<usize>,
    unreadable: Option<char>,
}

/// The first character of `text` [`unreadable`] refuses (a CRLF line ending is a line ending).
fn first_unreadable(text: &str) -> Option<char> {
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' && chars.peek() == Some(&'\n') {
            continue;
        }
        if unreadable(c).is_some() {
            return Some(c);
        }
    }
    None
}

/// A key as read, at `path` (which ends with it).
fn read_key(key: &toml::Spanned<std::borrow::Cow<'_, str>>, path: &str, found: &mut Vec<Read>) {
    let unreadable = first_unreadable(key.get_ref());
    found.push(Read { key_path: path.to_owned(), span: key.span(), unreadable });
}

/// Each string and key under `value` (at `path`).
fn walk(path: &str, value: &toml::Spanned<DeValue<'_>>, found: &mut Vec<Read>) {
    match value.get_ref() {
        DeValue::String(text) => {
            let unreadable = first_unreadable(text);
            found.push(Read { key_path: path.to_owned(), span: value.span(), unreadable });
        }
        DeValue::Table(table) => {
            for (key, value) in table {
                let path = format!("{path}.{}", key.get_ref());
                read_key(key, &path, found);
                walk(&path, value, found);
            }
        }
        DeValue::Array(values) => {
            for (at, value) in values.iter().enumerate() {
                walk(&format!("{path}[{at}]"), value, found);
            }
        }
        _ => {}
    }
}
