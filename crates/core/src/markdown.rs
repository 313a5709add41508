//! The plan as a pull-request comment: readable in ten seconds, and never over GitHub's limit.
//!
//! The summary line stands outside any fold; findings come next (errors first), then what the
//! changes do, destructive changes, and one collapsible block per changed resource. GitHub
//! rejects comments over 65,536 characters, so the space is spent in that order of priority,
//! whole blocks only, and the comment ends by saying what it left out and how to see it.

use std::fmt::Write;

use serde_json::Value;

use crate::json::to_pretty;
use crate::plan::{Action, Change, Plan};
use crate::render::{action_words, is_bidi, severity_word, summary_line, takeover_words, unified_diff};

/// GitHub's limit on a comment's body, in characters.
pub const GITHUB_COMMENT_LIMIT: usize = 65_536;

/// Room kept for the closing lines: what was left out, and what made the plan.
const CLOSING_RESERVE: usize = 500;

/// The plan as Markdown of at most `limit` characters.
pub fn markdown(plan: &Plan, limit: usize) -> String {
    titled(plan, limit, "plan")
}

/// The same, titled after the command that made it (`plan`, `drift`).
pub fn titled(plan: &Plan, limit: usize, command: &str) -> String {
    let mut out = String::new();
    writeln!(out, "### reconcile {command} for account {}, region {}", code(&plan.account), code(&plan.region))
        .unwrap();
    writeln!(out).unwrap();
    let summary = summary_line(plan);
    writeln!(out, "**{}**", summary.trim_end_matches('.')).unwrap();
    // The bill's change beside the summary, each figure with what it rests on.
    let costs = crate::render::cost_lines(plan);
    if let Some((total, causes)) = costs.split_first() {
        writeln!(out, "\n{}", message(total)).unwrap();
        for cause in causes {
            writeln!(out, "- {}", message(cause.trim_start())).unwrap();
        }
    }

    let budget = limit.saturating_sub(CLOSING_RESERVE);
    let mut left_out = LeftOut::default();

    // A refused plan says so, and what resolves it, before anything else.
    if plan.refused() {
        push(&mut out, &refusal(plan), budget);
    }
    // Findings first, errors first (ranked): padding a pull request with changes never pushes one
    // out of the comment.
    if !plan.findings.is_empty() {
        push(&mut out, "\n**Findings**\n\n", budget);
        findings(plan, &mut out, budget, &mut left_out);
    }

    // What changes do beyond their fields (what a new lifecycle policy expires): the line a
    // reviewer needs, beside the summary.
    if !plan.impacts.is_empty() {
        push(&mut out, "\n", budget);
        for (address, impact) in &plan.impacts {
            let warning = if impact.alarming { " :warning:" } else { "" };
            let line = format!("- {}{warning} {}\n", code(&address.to_string()), message(&impact.line));
            if !push(&mut out, &line, budget) {
                left_out.details += 1;
            }
        }
    }

    let destructive: Vec<&Change> = plan.changes.iter().filter(|c| c.action.is_destructive()).collect();
    if !destructive.is_empty() {
        push(&mut out, "\n> [!CAUTION]\n> These changes destroy something; apply needs `--allow-delete`.\n\n", budget);
        for change in &destructive {
            let (sign, what) = action_words(change.action);
            let line = format!("- `{sign}` {} {what}\n", code(&change.address.to_string()));
            if !push(&mut out, &line, budget) {
                left_out.destructive += 1;
            }
        }
    }

    if !plan.attributions.is_empty() {
        push(&mut out, "\n**Who changed it** (CloudTrail)\n\n| resource | who, when, what |\n|---|---|\n", budget);
        attributions(plan, &mut out, budget, &mut left_out);
    }

    if plan.has_changes() {
        push(&mut out, "\n", budget);
        // Destructive changes first here too: if anything's detail is left out, not theirs.
        let ordered = destructive.iter().copied().chain(plan.changes.iter().filter(|c| !c.action.is_destructive()));
        for change in ordered {
            if !push(&mut out, &details(change, plan.takeovers.get(&change.address).copied()), budget) {
                left_out.details += 1;
            }
        }
    }

    if left_out.any() {
        writeln!(out, "\n{}", left_out.sentence()).unwrap();
    }
    if let Some(by) = &plan.made_by {
        writeln!(out, "\n_Planned by {}._", code(by)).unwrap();
    }
    out
}

/// What a refused plan leads with: the refusal, and each step that resolves it.
fn refusal(plan: &Plan) -> String {
    let mut lead = format!("\n> [!CAUTION]\n> {}\n", message(&crate::render::refusal_line(plan)));
    for step in &plan.next_steps {
        write!(lead, ">\n> To resolve it: {}\n", message(&step.say)).unwrap();
        if !step.lines.is_empty() {
            let block: String = step.lines.iter().map(|line| format!("{line}\n")).collect();
            for line in fence(&block, "toml").lines() {
                writeln!(lead, "> {line}").unwrap();
            }
        }
    }
    lead
}

/// The findings, ranked, as far as `budget` allows: many of one kind fold into one, the rest in
/// a fold of their own.
fn findings(plan: &Plan, out: &mut String, budget: usize, left_out: &mut LeftOut) {
    for folded in crate::render::folded(plan) {
        let more = code(&crate::render::learn_more(&folded.first.code));
        let line = format!("{} ({more})\n", finding_item(folded.first));
        if !push(out, &line, budget) {
            left_out.findings += 1 + folded.others.len();
            continue;
        }
        if folded.others.is_empty() {
            continue;
        }
        let summary = format!("and {} more like it", folded.others.len());
        push(out, &format!("\n  <details><summary>{summary}</summary>\n\n"), budget);
        for other in &folded.others {
            if !push(out, &format!("  {}\n", finding_item(other)), budget) {
                left_out.findings += 1;
            }
        }
        push(out, "\n  </details>\n\n", budget);
    }
}

/// Who changed each resource, a row each as far as `budget` allows, and the trail's note.
fn attributions(plan: &Plan, out: &mut String, budget: usize, left_out: &mut LeftOut) {
    for (address, attribution) in &plan.attributions {
        let said = match attribution.event_parts() {
            Some(parts) => parts.iter().map(|(words, value)| format!("{}{}", prose(words), code(value))).collect(),
            None => message(&attribution.line()),
        };
        let line = format!("| {} | {} |\n", cell(&address.to_string()), in_cell(&said));
        if !push(out, &line, budget) {
            left_out.attributions += 1;
        }
    }
    if let Some(note) = &plan.attribution_note {
        push(out, &format!("\n{}\n", message(note)), budget);
    }
}

/// A finding as a list item: `- Error `W601` `address`: message`.
fn finding_item(finding: &crate::plan::Finding) -> String {
    let address = finding.address.as_ref().map(|a| format!(" {}:", code(&a.to_string()))).unwrap_or_default();
    format!(
        "- {} {}{address} {}{}",
        severity_word(finding.severity),
        code(&finding.code),
        message(&finding.message),
        message(&crate::render::overridden_note(finding))
    )
}

/// Rendered Markdown made safe in a table cell: a `|` that nothing escaped yet (one inside a code
/// span) is escaped, which GFM honours even inside a span; prose's `\|` is left as it is.
fn in_cell(rendered: &str) -> String {
    let mut out = String::with_capacity(rendered.len());
    let mut previous = None;
    for c in rendered.chars() {
        if c == '|' && previous != Some('\\') {
            out.push('\\');
        }
        out.push(c);
        previous = Some(c);
    }
    out
}

/// Appends `text` when it fits in `budget`; says whether it did. Counts bytes, which are never
/// fewer than characters, so the limit holds for any text.
fn push(out: &mut String, text: &str, budget: usize) -> bool {
    if out.len() + text.len() > budget {
        return false;
    }
    out.push_str(text);
    true
}

#[derive(Default)]
struct LeftOut {
    destructive: usize,
    findings: usize,
    attributions: usize,
    details: usize,
}

impl LeftOut {
    fn any(&self) -> bool {
        self.destructive + self.findings + self.attributions + self.details > 0
    }

    fn sentence(&self) -> String {
        let mut parts = Vec::new();
        if self.destructive > 0 {
            parts.push(format!("{} destructive changes", self.destructive));
        }
        if self.findings > 0 {
            parts.push(format!("{} findings", self.findings));
        }
        if self.attributions > 0 {
            parts.push(format!("who changed {} resources", self.attributions));
        }
        if self.details > 0 {
            parts.push(format!("the details of {} changed resources", self.details));
        }
        format!(
            "_Left out to stay under GitHub's comment limit: {}. Run `reconcile plan` (or see the job's \
             `plan --format json` output) for the whole plan._",
            parts.join(", ")
        )
    }
}

/// One changed resource as a collapsible block: scalar fields as a list, documents as a
/// fenced `diff` block.
fn details(change: &Change, takeover: Option<crate::plan::Takeover>) -> String {
    let (sign, what) = action_words(change.action);
    let what = takeover_words(change, takeover).unwrap_or(what);
    let address = html(&change.address.to_string());
    let mut out = format!("<details><summary><code>{sign} {address}</code> {what}</summary>\n\n");
    for field in change.field_changes() {
        let name = field.name;
        match (field.before, field.after) {
            (before, after) if before.is_none_or(is_scalar) && after.is_none_or(is_scalar) => {
                let show = |v: Option<&Value>| v.map_or("(none)".to_owned(), |v| code(&to_pretty(v)));
                match change.action {
                    Action::Create => writeln!(out, "- `{name}` = {}", show(field.after)),
                    Action::Delete => writeln!(out, "- `{name}` was {}", show(field.before)),
                    _ => writeln!(out, "- `{name}`: {} → {}", show(field.before), show(field.after)),
                }
                .unwrap();
            }
            (before, after) => {
                let before = before.map(to_pretty).unwrap_or_default();
                let after = after.map(to_pretty).unwrap_or_default();
                let diff = match (before.is_empty(), after.is_empty()) {
                    (true, _) => prefix_lines(&after, '+'),
                    (_, true) => prefix_lines(&before, '-'),
                    _ => unified_diff(&before, &after),
                };
                writeln!(out, "\n`{name}`:\n\n{}", fence(&diff, "diff")).unwrap();
            }
        }
    }
    out.push_str("\n</details>\n");
    out
}

fn is_scalar(value: &Value) -> bool {
    !matches!(value, Value::Object(_) | Value::Array(_))
}

fn prefix_lines(text: &str, sign: char) -> String {
    text.lines().map(|line| format!("{sign}{line}\n")).collect()
}

// Values in Markdown. A pull-request comment shows what desired.toml, a bake file and live AWS
// and GitHub hold, and any of them may have been written by whoever opened the pull request or
// can write to the account. Every such value reaches Markdown through one of the functions
// below, which every Markdown renderer uses, so none can render as markup: open or close HTML
// (`</details>`), mention a user or team, load an image, add a link, end a code span or fence
// early, break a table row, or start a new line.

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
    fn a_terminal_is_sent_no_control_character() {
        assert_eq!(crate::render::printable("plain"), "plain");
        assert_eq!(crate::render::printable("a\u{1b}[2Jb\r"), "a\\u{1b}[2Jb\\u{d}");
    }

    #[test]
    fn what_fits_the_budget_exactly_is_kept_and_not_a_byte_more() {
        let mut out = "ab".to_owned();
        assert!(push(&mut out, "cd", 4));
        assert!(!push(&mut out, "e", 4));
        assert_eq!(out, "abcd");
    }

    #[test]
    fn what_was_left_out_is_counted_by_kind_and_said_only_when_there_is_some() {
        use crate::address::Address;
        use crate::plan::{Action, Attribution, Change, Finding, Impact, Severity};
        let address = |name: &str| Address::new(crate::fake::kinds::ECR_REPOSITORY, name);
        let change = |name: &str, action| Change {
            address: address(name),
            action,
            before: Some(serde_json::Map::new()),
            after: None,
            depends_on: vec![],
        };
        let finding = |name: &str| Finding {
            code: "D101".into(),
            severity: Severity::Warning,
            address: Some(address(name)),
            message: "m".into(),
            overridden_by: None,
        };
        let impact = Impact { context: "c".into(), line: "l".into(), alarming: false, numbers: serde_json::Map::new() };
        let plan = Plan {
            changes: vec![change("a", Action::Delete), change("b", Action::Delete), change("c", Action::Update)],
            findings: ["a", "b", "c", "d"].map(finding).to_vec(),
            impacts: ["x", "y", "z"].map(|n| (address(n), impact.clone())).into_iter().collect(),
            attributions: [
                (address("a"), Attribution::NoneFound { days: 7 }),
                (address("b"), Attribution::Unknown("throttled".into())),
            ]
            .into_iter()
            .collect(),
            attribution_note: Some("looked back 7 days".into()),
            ..Plan::new("123456789012", "us-east-1")
        };
        // Room for the heading and the summary line only.
        let head = titled(&plan, usize::MAX, "plan").find("\n\n- ").unwrap() + 1;
        let comment = titled(&plan, head + CLOSING_RESERVE, "plan");
        assert!(comment.ends_with(
            "_Left out to stay under GitHub's comment limit: 2 destructive changes, 4 findings, who changed 2 \
             resources, the details of 6 changed resources. Run `reconcile plan` (or see the job's `plan --format json` output) for the whole plan._\n"
        ), "{comment}");
        let whole = titled(&plan, usize::MAX, "plan");
        assert!(!whole.contains("Left out"), "{whole}");
        assert!(
            whole.contains(
                "| resource | who, when, what |\n|---|---|\n\
                 | `ecr_repository.a` | no CloudTrail event that could have changed it in the last 7 days |\n\
                 | `ecr_repository.b` | who changed it is unknown: throttled |\n\nlooked back 7 days\n"
            ),
            "{whole}"
        );

        let sentence =
            |destructive, findings, attributions, details| LeftOut { destructive, findings, attributions, details };
        assert!(!sentence(0, 0, 0, 0).any());
        for (left, said, unsaid) in [
            (sentence(1, 0, 0, 0), "1 destructive changes", ["findings", "who changed", "the details"]),
            (sentence(0, 1, 0, 0), "1 findings", ["destructive", "who changed", "the details"]),
            (sentence(0, 0, 1, 0), "who changed 1 resources", ["destructive", "findings", "the details"]),
            (sentence(0, 0, 0, 1), "the details of 1 changed resources", ["destructive", "findings", "who changed"]),
        ] {
            assert!(left.any());
            let text = left.sentence();
            assert!(text.contains(said), "{text}");
            assert!(unsaid.iter().all(|word| !text.contains(word)), "{text}");
        }
    }

    #[test]
    fn a_table_cell_escapes_the_pipes_nothing_escaped_yet() {
        // One inside a code span (which `message` leaves alone) would end the cell; prose's `\|`
        // is escaped already and must not become `\\|`.
        assert_eq!(in_cell("role `a|b` and c \\| d|"), "role `a\\|b` and c \\| d\\|");
        assert_eq!(in_cell(&message("session `x|y` | z")), "session `x\\|y` \\| z");
        assert_eq!(in_cell(""), "");
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
            assert!(!rendered.chars().any(crate::render::is_bidi), "{rendered:?}");
            assert!(rendered.contains("abcU+202Exyz"), "{rendered:?}");
        }
    }

    #[test]
    fn an_attribution_quotes_each_live_value_whatever_backticks_it_holds() {
        use crate::plan::{Attribution, ChangeEvent};
        let event = ChangeEvent {
            event: "PutLifecyclePolicy".into(),
            at: 1_796_000_000,
            principal: "arn:aws:iam::123456789012:user/bob".into(),
            role: None,
            session: None,
            source_ip: "192.0.2.7".into(),
            user_agent: "x` see #1 3f9a1c7e0b @org ``".into(),
            event_id: "e-1".into(),
            by_reconcile: false,
        };
        let address = crate::Address::new(crate::fake::kinds::ECR_REPOSITORY, "pytorch");
        let plan = Plan {
            attributions: [(address, Attribution::Event(event))].into_iter().collect(),
            ..Plan::new("123456789012", "us-east-1")
        };
        let rendered = markdown(&plan, usize::MAX);
        assert!(rendered.contains("user agent ``` x` see #1 3f9a1c7e0b @org `` ```, event `e-1`"), "{rendered}");
    }
}
