//! Values that must never be shown, and text with them taken out.
//!
//! A value taken from the environment (a bake file's listed variable) is not only printed
//! whole: the parsers cut it into parts (an ECR reference into host, account, region and
//! repository; a reference at `:` and `@`), and a part is as much a leak as the whole. So a
//! value is taken out wherever any run of [`WINDOW`] or more of its bytes appears, each maximal
//! run replaced by `${NAME}`; a value shorter than that, wherever it appears whole.

use std::borrow::Cow;

/// The shortest run of a value's bytes that is taken out of text: shorter runs of a long value
/// (a hyphen and a word) are everywhere.
pub const WINDOW: usize = 8;

/// One value never to show.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Secret {
    name: String,
    value: String,
    /// Whether its parts are taken out too, or only the whole value.
    parts: bool,
}

/// The values to take out of text, by the name each is shown as.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Redactor {
    secrets: Vec<Secret>,
}

impl Redactor {
    /// Takes `value` (shown as `${name}`) out of text, its parts too. An empty value is nothing
    /// to take out.
    pub fn add(&mut self, name: &str, value: &str) {
        self.push(name, value, true);
    }

    /// Takes `value` out of text only where it appears whole: for a value whose parts are
    /// shown anyway (an ECR registry's host names an account and a region, which every plan
    /// shows).
    pub fn add_whole(&mut self, name: &str, value: &str) {
        self.push(name, value, false);
    }

    fn push(&mut self, name: &str, value: &str, parts: bool) {
        if value.is_empty() || self.secrets.iter().any(|s| s.value == value && s.parts >= parts) {
            return;
        }
        self.secrets.push(Secret { name: name.to_owned(), value: value.to_owned(), parts });
    }

    /// Every value of `other` too.
    pub fn extend(&mut self, other: &Redactor) {
        for secret in &other.secrets {
            self.push(&secret.name, &secret.value, secret.parts);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// `text` with every value, and every run of [`WINDOW`] or more bytes of a value whose parts
    /// are secret, replaced by `${NAME}` (the longest match at each place wins).
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if self.secrets.is_empty() {
            return Cow::Borrowed(text);
        }
        let bytes = text.as_bytes();
        let mut out = String::new();
        let (mut copied, mut at) = (0, 0);
        while at < bytes.len() {
            if !text.is_char_boundary(at) {
                at += 1;
                continue;
            }
            let best = self
                .secrets
                .iter()
                .filter_map(|secret| Some((secret.matched(&bytes[at..])?, secret)))
                .max_by_key(|(length, _)| *length);
            let Some((length, secret)) = best else {
                at += 1;
                continue;
            };
            // A match that ends inside a character takes the whole character.
            let mut end = at + length;
            while !text.is_char_boundary(end) {
                end += 1;
            }
            out.push_str(&text[copied..at]);
            out.push_str("${");
            out.push_str(&secret.name);
            out.push('}');
            (copied, at) = (end, end);
        }
        // Nothing was taken out.
        if out.is_empty() {
            return Cow::Borrowed(text);
        }
        out.push_str(&text[copied..]);
        Cow::Owned(out)
    }
}

impl Secret {
    /// How many bytes at the start of `text` are to be taken out for this value: the whole
    /// value, or the longest run of it of [`WINDOW`] bytes or more.
    fn matched(&self, text: &[u8]) -> Option<usize> {
        let value = self.value.as_bytes();
        if text.starts_with(value) {
            return Some(value.len());
        }
        if !self.parts || value.len() <= WINDOW || text.len() < WINDOW || !contains(value, &text[..WINDOW]) {
            return None;
        }
        let mut length = WINDOW;
        while length < text.len() && contains(value, &text[..=length]) {
            length += 1;
        }
        Some(length)
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|window| window == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CANARY: &str = "canary-3f9a1c7e-printed-means-leaked";

    fn redactor() -> Redactor {
        let mut redactor = Redactor::default();
        redactor.add("LEAK", CANARY);
        redactor
    }

    #[test]
    fn a_value_and_every_part_of_eight_bytes_or_more_is_taken_out() {
        let redactor = redactor();
        assert_eq!(redactor.redact(&format!("x{CANARY}y")), "x${LEAK}y");
        // Cut where a parser would cut it, each part is still taken out.
        assert_eq!(redactor.redact("repo canary-3f9a1c7e tag printed-means"), "repo ${LEAK} tag ${LEAK}");
        // Eight at the very end of the text are.
        assert_eq!(redactor.redact("tail: printed-"), "tail: ${LEAK}");
        // Seven bytes of it are not a part.
        assert_eq!(redactor.redact("canary- and -leaked"), "canary- and -leaked");
        // Nothing to take out borrows.
        assert!(matches!(redactor.redact("plain"), Cow::Borrowed(_)));
        assert!(matches!(Redactor::default().redact(CANARY), Cow::Borrowed(_)));
    }

    #[test]
    fn no_run_of_eight_bytes_survives_whatever_surrounds_it() {
        let redactor = redactor();
        for start in 0..CANARY.len() - WINDOW {
            for end in start + WINDOW..=CANARY.len() {
                let text = format!("é:{}@é", &CANARY[start..end]);
                let redacted = redactor.redact(&text);
                for window in CANARY.as_bytes().windows(WINDOW) {
                    let window = std::str::from_utf8(window).unwrap();
                    assert!(!redacted.contains(window), "{text} -> {redacted}");
                }
            }
        }
    }

    #[test]
    fn a_whole_only_value_keeps_its_parts_and_a_short_value_goes_whole() {
        let mut redactor = Redactor::default();
        redactor.add_whole("ECR_REGISTRY", "123456789012.dkr.ecr.us-east-1.amazonaws.com");
        redactor.add("SHORT", "abc");
        assert_eq!(
            redactor.redact("123456789012.dkr.ecr.us-east-1.amazonaws.com/x in account 123456789012, abc"),
            "${ECR_REGISTRY}/x in account 123456789012, ${SHORT}"
        );
    }

    #[test]
    fn a_value_with_multibyte_characters_is_cut_on_character_boundaries() {
        let mut redactor = Redactor::default();
        redactor.add("V", "ééééééééé");
        assert_eq!(redactor.redact("xéééééy"), "x${V}y");
        // A run that ends inside a character takes the whole character.
        let mut redactor = Redactor::default();
        redactor.add("V", "aaaaaaaé");
        assert_eq!(redactor.redact("aaaaaaaè!"), "${V}!");
    }

    #[test]
    fn values_are_kept_once_each_an_empty_one_never_and_a_whole_one_can_gain_its_parts() {
        let mut redactor = Redactor::default();
        assert!(redactor.is_empty());
        redactor.add("EMPTY", "");
        assert!(redactor.is_empty(), "an empty value is nothing to take out");
        assert_eq!(redactor.redact("anything"), "anything");
        redactor.add("A", "aaaaaaaaaa-one");
        redactor.add("B", "bbbbbbbbbb-two");
        assert!(!redactor.is_empty());
        assert_eq!(redactor.redact("aaaaaaaaaa-one bbbbbbbbbb-two"), "${A} ${B}");
        // The same value again under another name changes nothing.
        redactor.add("A2", "aaaaaaaaaa-one");
        assert_eq!(redactor.redact("aaaaaaaaaa-one"), "${A}");
        // A value taken out whole, then with its parts: its parts go too.
        let mut whole = Redactor::default();
        whole.add_whole("W", "wwwwwwwwww-three");
        assert_eq!(whole.redact("wwwwwwwwww"), "wwwwwwwwww");
        whole.add("P", "wwwwwwwwww-three");
        assert_eq!(whole.redact("wwwwwwwwww"), "${P}");
        // Every value of another redactor too.
        let mut merged = Redactor::default();
        merged.extend(&redactor);
        assert_eq!(merged, redactor);
        assert_eq!(merged.redact("bbbbbbbbbb-two"), "${B}");
    }
}
