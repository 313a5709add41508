//! Values in Markdown. A pull-request comment, the drift issue and an apply's report show what
//! desired.toml, a bake file and live AWS and GitHub hold, and any of them may have been written
//! by whoever opened the pull request or can write to the account. Every such value reaches
//! Markdown through one of the functions here, which every Markdown renderer uses (the plan's
//! comment in reconcile-render, the cost report, the drift issue), so none can render as markup:
//! open or close HTML (`</details>`), mention a user or team, load an image, add a link, end a
//! code span or fence early, break a table row, or start a new line.

use crate::text::is_bidi;

/// Zero-width joiner: put after `@` (and into `://` and `www.`) it keeps GitHub from seeing a
/// mention or a link, and shows nothing.
const JOINER: char = '\u{200d}';

/// One of our sentences with values in it: each backtick-quoted segment becomes a code span
/// (fenced against any backticks the value held), the rest escaped prose. A value's own
/// backticks only move where segments split: every segment is one or the other, so none renders.
pub fn message(text: &str) -> String {
    let segments: Vec<&str> = text.split('`').collect();
    // An odd number of backticks: the last one is unpaired, and what follows it is prose.
    let unpaired = segments.len().is_multiple_of(2);
    let mut out = String::new();
    for (idx, segment) in segments.iter().enumerate() {
        let last = idx + 1 == segments.len();
        if idx % 2 == 1 && !(unpaired && last) {
            out.push_str(&code(segment));
        } else {
            if idx % 2 == 1 {
                // The unpaired backtick, shown as one.
                out.push_str("\\`");
            }
            out.push_str(&prose(segment));
        }
    }
    out
}

/// Text as prose that renders as itself: HTML escaped, the characters that start emphasis,
/// links, images, code, strikethrough and table cells backslash-escaped, mentions and autolinks
/// broken by a zero-width joiner, line breaks and other control characters made spaces.
pub fn prose(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '@' => {
                out.push('@');
                out.push(JOINER);
            }
            c if c.is_control() => out.push(' '),
            c if is_bidi(c) => out.push_str(&shown(c)),
            c => out.push(c),
        }
    }
    unlinked(&out.replace("://", &format!(":{JOINER}//")).replace("www.", &format!("www{JOINER}.")))
}

/// Prose with GitHub's other autolinks broken by a joiner: an issue reference (`#12`, `GH-12`)
/// and what could be a commit SHA (seven or more hex digits, letters and digits both: an
/// account id stays as it is).
fn unlinked(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        let word_start = at == 0 || !chars[at - 1].is_ascii_alphanumeric();
        if c.is_ascii_hexdigit() && word_start {
            let end = chars[at..].iter().position(|c| !c.is_ascii_alphanumeric()).map_or(chars.len(), |n| at + n);
            let word = &chars[at..end];
            let hex = word.len() >= 7
                && word.iter().all(char::is_ascii_hexdigit)
                && word.iter().any(char::is_ascii_digit)
                && word.iter().any(char::is_ascii_alphabetic);
            out.extend(&word[..word.len().min(6)]);
            if hex {
                out.push(JOINER);
            }
            out.extend(word.iter().skip(6));
            at = end;
            continue;
        }
        out.push(c);
        if (c == '#'
            || (c == '-'
                && at >= 2
                && chars[at - 2].eq_ignore_ascii_case(&'G')
                && chars[at - 1].eq_ignore_ascii_case(&'H')))
            && chars.get(at + 1).is_some_and(char::is_ascii_digit)
        {
            out.push(JOINER);
        }
        at += 1;
    }
    out
}

/// A value as a code span: nothing inside one renders, not HTML, a link or a mention. The fence
/// is one backtick longer than the longest run inside; line breaks become spaces (a code span
/// cannot hold one, and a blank line would end the comment's paragraph).
pub fn code(text: &str) -> String {
    let text: String = text
        .chars()
        .map(|c| match c {
            c if c.is_control() => " ".to_owned(),
            c if is_bidi(c) => shown(c),
            c => c.to_string(),
        })
        .collect();
    if text.is_empty() {
        // An empty span does not exist in Markdown: one space shows there is nothing.
        return "` `".to_owned();
    }
    let longest = longest_run(&text, '`');
    let fence = "`".repeat(longest + 1);
    // A span that starts or ends with a backtick (or a space) needs a space of padding, which
    // CommonMark strips again.
    let pad = text.starts_with(['`', ' ']) || text.ends_with(['`', ' ']);
    let pad = if pad { " " } else { "" };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// A value as a code span in a table cell: `|` would end the cell even inside a code span.
pub fn cell(text: &str) -> String {
    code(text).replace('|', "\\|")
}

/// Text as a fenced code block of `info` (`diff`, `mermaid`): a fence longer than any run of
/// backticks inside, so the text cannot close it; carriage returns dropped, bidirectional
/// controls named.
pub fn fence(text: &str, info: &str) -> String {
    let text: String =
        text.chars().filter(|c| *c != '\r').map(|c| if is_bidi(c) { shown(c) } else { c.to_string() }).collect();
    let fence = "`".repeat((longest_run(&text, '`') + 1).max(3));
    let newline = if text.ends_with('\n') || text.is_empty() { "" } else { "\n" };
    format!("{fence}{info}\n{text}{newline}{fence}\n")
}

/// Text inside HTML (a `<summary>`), where Markdown is not read: entities for what HTML reads,
/// a joiner after `@`, spaces for control characters.
pub fn html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '@' => {
                out.push('@');
                out.push(JOINER);
            }
            c if c.is_control() => out.push(' '),
            c if is_bidi(c) => out.push_str(&shown(c)),
            c => out.push(c),
        }
    }
    out
}

/// A bidirectional control as what it is (`U+202E`): as itself it would reorder the text around
/// it, in a browser as on a terminal.
fn shown(c: char) -> String {
    format!("U+{:04X}", c as u32)
}

fn longest_run(text: &str, of: char) -> usize {
    let (mut longest, mut run) = (0, 0);
    for c in text.chars() {
        run = if c == of { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    longest
}

#[cfg(test)]
mod tests {
    //! The escaping, against the values a hostile review put into live AWS and desired.toml.

    use super::*;

    /// A CodeBuild description someone with account access wrote, as found by the review.
    const HOSTILE: &str = "x` </details></details> @org/team <img src=https://evil.example/p.png> [y](https://evil.example) ![i](https://evil.example/i.png)\r\nmore";

    /// Whether `markdown` holds anything that renders beyond text: raw HTML, a mention, a link
    /// or image, a bare URL GitHub would link, a line break.
    fn renders_nothing(markdown: &str) {
        assert!(!markdown.contains('<'), "raw HTML: {markdown}");
        assert!(!markdown.contains('\n') && !markdown.contains('\r'), "a line break: {markdown:?}");
        assert!(!markdown.contains("@org"), "a mention: {markdown}");
        assert!(!markdown.contains("https://"), "a link GitHub would make: {markdown}");
    }

    #[test]
    fn prose_escapes_html_markup_mentions_links_and_line_breaks() {
        let escaped = prose(HOSTILE);
        renders_nothing(&escaped);
        assert!(escaped.contains("&lt;/details&gt;"), "{escaped}");
        assert!(escaped.contains("\\[y\\]"), "a link's brackets are escaped: {escaped}");
        assert!(escaped.contains("!\\[i\\]"), "an image's too: {escaped}");
        assert!(escaped.contains("@\u{200d}org/team"), "{escaped}");
        assert!(escaped.contains("https:\u{200d}//evil.example"), "{escaped}");
        assert_eq!(prose("www.evil.example"), "www\u{200d}.evil.example");
        assert_eq!(prose("a & b | c ~~d~~ *e* _f_ \\g"), "a &amp; b \\| c \\~\\~d\\~\\~ \\*e\\* \\_f\\_ \\\\g");
        assert_eq!(prose("plain words, (parentheses) and: colons."), "plain words, (parentheses) and: colons.");
    }

    #[test]
    fn a_code_span_is_fenced_past_any_backticks_inside() {
        assert_eq!(code("rocm-bake"), "`rocm-bake`");
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("a``b`"), "``` a``b` ```");
        assert_eq!(code("`x"), "`` `x ``");
        assert_eq!(code(" x "), "`  x  `");
        assert_eq!(code(""), "` `");
        assert_eq!(code("a\r\nb"), "`a  b`");
        let hostile = code(HOSTILE);
        assert!(hostile.starts_with("``x` ") && hostile.ends_with("more``"), "{hostile}");
        assert!(!hostile.contains('\n'));
        assert_eq!(cell("a|b"), "`a\\|b`");
    }

    #[test]
    fn a_fence_is_longer_than_any_run_of_backticks_inside() {
        assert_eq!(fence("-a\n+b\n", "diff"), "```diff\n-a\n+b\n```\n");
        assert_eq!(fence("x", ""), "```\nx\n```\n");
        assert_eq!(fence("```\n</details>\r\n", "diff"), "````diff\n```\n</details>\n````\n");
        assert_eq!(fence("", "diff"), "```diff\n```\n");
    }

    #[test]
    fn html_text_is_entities() {
        assert_eq!(html("<b>\"x\" & 'y' @z\n"), "&lt;b&gt;&quot;x&quot; &amp; &#39;y&#39; @\u{200d}z ");
    }

    #[test]
    fn a_message_keeps_its_code_spans_and_escapes_the_rest_whatever_backticks_a_value_holds() {
        assert_eq!(message("repository `pytorch` has no policy"), "repository `pytorch` has no policy");
        // A value with a backtick moves where segments split; every segment is still safe.
        let message_of = |value: &str| message(&format!("the description `{value}` changed"));
        let hostile = message_of(HOSTILE);
        renders_nothing(&hostile);
        assert!(hostile.starts_with("the description `x` "), "{hostile}");
        assert_eq!(message("an unpaired ` backtick"), "an unpaired \\` backtick");
        assert_eq!(message("a `b` c `d"), "a `b` c \\`d");
        assert_eq!(message("``"), "` `");
    }

    #[test]
    fn prose_breaks_issue_references_and_commit_shas_but_not_account_ids() {
        assert_eq!(prose("see #12 and gh-7"), "see #\u{200d}12 and gh-\u{200d}7");
        // A hyphen before digits is no reference without its GH, at the start or further in.
        assert_eq!(prose("-1 x-12 ah-3"), "-1 x-12 ah-3");
        assert_eq!(prose("commit 3f9a1c7e0b"), "commit 3f9a1c\u{200d}7e0b");
        assert_eq!(prose("account 123456789012, word deadbeef-free"), "account 123456789012, word deadbeef-free");
        assert_eq!(prose("# heading-ish"), "# heading-ish");
    }

    #[test]
    fn a_bidirectional_control_is_named_in_every_markdown_form() {
        let value = "abc\u{202e}xyz";
        for rendered in [prose(value), code(value), html(value), fence(value, "diff")] {
            assert!(!rendered.chars().any(is_bidi), "{rendered:?}");
            assert!(rendered.contains("abcU+202Exyz"), "{rendered:?}");
        }
    }
}
