//! The characters no live value may bring to a reader as themselves. Every rendering (the text
//! plan, its JSON, the Markdown comment) asks here, and nothing here knows of a plan: JSON's
//! escaping uses it too, so it sits below both.

/// A character that must not reach a reader as itself: a control character (an escape sequence
/// that would clear the screen or recolour what follows, a carriage return that would overwrite
/// the line, a line break that would start a workflow command in a job log) or a bidirectional
/// control (U+202E and its kin), which makes text read in another order than it is written.
pub fn is_hidden(c: char) -> bool {
    c.is_control() || is_bidi(c)
}

/// A character that shows nothing where it stands (a zero-width space or joiner, a word joiner,
/// a byte-order mark, a soft hyphen, a line or paragraph separator): two strings a reviewer
/// reads as the same differ by it.
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00ad}' | '\u{180e}' | '\u{200b}'..='\u{200d}' | '\u{2028}' | '\u{2029}' | '\u{2060}'..='\u{2064}' | '\u{feff}'
    )
}

/// What a character a person wrote must not be in text a reviewer reads as it is (desired.toml):
/// a control but a tab or a line break, a bidirectional control, or an invisible character.
pub fn unreadable(c: char) -> Option<&'static str> {
    if is_bidi(c) {
        Some("a bidirectional control, which makes text read in another order than it is written")
    } else if c.is_control() && !matches!(c, '\t' | '\n') {
        Some("a control character")
    } else if is_invisible(c) {
        Some("an invisible character")
    } else {
        None
    }
}

/// `text` with each character [`unreadable`] refuses written as its escape (`\u{202e}`).
pub fn escaped(text: &str) -> String {
    text.chars()
        .map(|c| if unreadable(c).is_some() { format!("\\u{{{:x}}}", c as u32) } else { c.to_string() })
        .collect()
}

/// A bidirectional control: the marks, embeddings, overrides and isolates.
pub fn is_bidi(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` as it may be shown on a terminal or a log line: every [hidden](is_hidden) character a
/// live value carried is shown escaped, as `\u{1b}`, not sent.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(is_hidden) {
        return std::borrow::Cow::Borrowed(text);
    }
    let escaped =
        text.chars().map(|c| if is_hidden(c) { c.escape_unicode().to_string() } else { c.to_string() }).collect();
    std::borrow::Cow::Owned(escaped)
}

/// How a reader learns more about a finding: what every finding line ends with.
pub fn learn_more(code: &str) -> String {
    format!("reconcile explain {code}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_terminal_is_sent_no_control_character() {
        assert_eq!(printable("plain"), "plain");
        assert_eq!(printable("a\u{1b}[2Jb\r"), "a\\u{1b}[2Jb\\u{d}");
    }
}
