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

/// A bidirectional control: the marks, embeddings, overrides and isolates.
pub fn is_bidi(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}
