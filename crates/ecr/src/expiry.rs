//! ECR lifecycle policies, evaluated: which images a policy expires, and why. Pure; the
//! registry summary, the plan's impact and the W30x checks of `[ecr]` all ask it.
//!
//! ECR never shows what a policy will do before it does it (its preview is asynchronous and
//! per repository), and one rule once expired the nightly's live tag along with the orphans it
//! was meant for. So the semantics of the ECR user guide ("Lifecycle policy evaluation rules")
//! are implemented here once, as a pure function, and every check uses it:
//! - rules apply in `rulePriority` order, lowest number first;
//! - a rule selects images by tag status (`tagged` with a prefix or pattern list, `untagged`,
//!   `any`) and storage class; with several prefixes or patterns, an image is selected only if
//!   each of them matches one of its tags;
//! - `imageCountMoreThan N` keeps the N most recently pushed of the images it selects and marks
//!   the rest; `sinceImagePushed N` marks those pushed more than N days ago (`sinceImagePulled`
//!   counts from the last pull, or the push when never pulled; `sinceImageTransitioned` from the
//!   archiving);
//! - an image is expired by at most one rule: a rule never marks an image a higher-priority rule
//!   marked, nor one that matches a higher-priority rule's tag selection, but it still counts
//!   them when it counts ("identifies them as if they had not been expired").
//!
//! Not modelled: images referenced by a manifest list (ECR keeps them until the list goes), and
//! ECR's own schedule (a policy runs within a day of being set, not at once).

use std::collections::BTreeMap;

use serde_json::Value;

/// One image in a repository, as `DescribeImages` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    pub digest: String,
    pub tags: Vec<String>,
    /// Seconds since the Unix epoch.
    pub pushed_at: i64,
    /// `imageSizeInBytes`: the compressed size of its layers (layers shared between images are
    /// stored once, so sizes of several images overstate what they hold together).
    pub size: u64,
    /// When it was last pulled, if ever.
    pub last_pulled_at: Option<i64>,
    /// When it was archived, if it is in the archive storage class.
    pub archived_at: Option<i64>,
}

impl Image {
    pub fn is_tagged(&self) -> bool {
        !self.tags.is_empty()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagStatus {
    Tagged,
    Untagged,
    Any,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    /// Keep the N most recently pushed.
    MoreThan(u64),
    /// Older than N days, counted from the push.
    SincePushed(u64),
    /// Older than N days, counted from the last pull (the push when never pulled).
    SincePulled(u64),
    /// Older than N days, counted from the archiving.
    SinceTransitioned(u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleAction {
    Expire,
    /// Move to the archive storage class: the image stays, but can no longer be pulled.
    Transition,
}

/// One rule of a policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub priority: u32,
    pub tag_status: TagStatus,
    pub tag_prefixes: Vec<String>,
    pub tag_patterns: Vec<String>,
    /// Selects archived images rather than standard ones.
    pub archived: bool,
    pub count: Count,
    pub action: RuleAction,
}

/// A lifecycle policy, its rules in priority order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub rules: Vec<Rule>,
}

/// What one rule did to one image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Index into the images evaluated.
    pub image: usize,
    pub rule_priority: u32,
    pub action: RuleAction,
}

const DAY: i64 = 24 * 60 * 60;

impl Policy {
    /// Reads ECR's JSON form. Fails on anything it cannot evaluate faithfully, naming it.
    pub fn parse(document: &Value) -> Result<Policy, String> {
        let rules = document.get("rules").and_then(Value::as_array).ok_or("the policy has no `rules` list")?;
        let mut parsed = rules.iter().map(parse_rule).collect::<Result<Vec<_>, _>>()?;
        parsed.sort_by_key(|rule| rule.priority);
        Ok(Policy { rules: parsed })
    }

    /// The images the policy acts on when it next runs at `now` (seconds since the epoch), each
    /// with the rule that acts on it. In the order of `images`.
    pub fn evaluate(&self, images: &[Image], now: i64) -> Vec<Verdict> {
        // Newest first; ties by digest, so the result never depends on the input order.
        let mut order: Vec<usize> = (0..images.len()).collect();
        order.sort_by(|&a, &b| {
            images[b].pushed_at.cmp(&images[a].pushed_at).then_with(|| images[a].digest.cmp(&images[b].digest))
        });
        let mut marked: BTreeMap<usize, Verdict> = BTreeMap::new();
        for (position, rule) in self.rules.iter().enumerate() {
            let earlier = &self.rules[..position];
            let selected: Vec<usize> = order.iter().copied().filter(|&i| rule.selects(&images[i])).collect();
            let candidates: Vec<usize> = match rule.count {
                Count::MoreThan(keep) => {
                    selected.iter().copied().skip(usize::try_from(keep).unwrap_or(usize::MAX)).collect()
                }
                Count::SincePushed(days) => older(&selected, days, now, |i| Some(images[i].pushed_at)),
                Count::SincePulled(days) => {
                    older(&selected, days, now, |i| Some(images[i].last_pulled_at.unwrap_or(images[i].pushed_at)))
                }
                Count::SinceTransitioned(days) => older(&selected, days, now, |i| images[i].archived_at),
            };
            for image in candidates {
                if marked.contains_key(&image) || earlier.iter().any(|r| r.matches_tags(&images[image])) {
                    continue;
                }
                marked.insert(image, Verdict { image, rule_priority: rule.priority, action: rule.action });
            }
        }
        marked.into_values().collect()
    }

    /// The first rule that can expire or archive a tagged image, whatever the repository holds.
    pub fn rule_over_tagged_images(&self) -> Option<&Rule> {
        self.rules.iter().find(|rule| rule.tag_status != TagStatus::Untagged)
    }

    /// The rule that governs untagged images: the first that selects them.
    pub fn untagged_rule(&self) -> Option<&Rule> {
        self.rules.iter().find(|rule| rule.tag_status != TagStatus::Tagged && !rule.archived)
    }
}

impl Rule {
    /// Whether the rule's tag selection matches the image, whatever its storage class.
    fn matches_tags(&self, image: &Image) -> bool {
        match self.tag_status {
            TagStatus::Any => true,
            TagStatus::Untagged => !image.is_tagged(),
            TagStatus::Tagged => {
                image.is_tagged()
                    && self
                        .tag_prefixes
                        .iter()
                        .all(|prefix| image.tags.iter().any(|tag| tag.starts_with(prefix.as_str())))
                    && self.tag_patterns.iter().all(|pattern| image.tags.iter().any(|tag| wildcard_match(pattern, tag)))
            }
        }
    }

    fn selects(&self, image: &Image) -> bool {
        self.archived == image.archived_at.is_some() && self.matches_tags(image)
    }
}

fn older(selected: &[usize], days: u64, now: i64, since: impl Fn(usize) -> Option<i64>) -> Vec<usize> {
    let age = i64::try_from(days).unwrap_or(i64::MAX / DAY).saturating_mul(DAY);
    selected.iter().copied().filter(|&i| since(i).is_some_and(|t| now.saturating_sub(t) > age)).collect()
}

/// ECR's `tagPatternList` match: `*` stands for any run of characters, everything else for
/// itself, and the pattern covers the whole tag.
pub fn wildcard_match(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, rest) = parts.split_first().expect("split yields at least one part");
    let Some(mut remaining) = text.strip_prefix(first) else { return false };
    let Some((last, middle)) = rest.split_last() else { return remaining.is_empty() };
    for part in middle {
        match remaining.find(part) {
            Some(at) => remaining = &remaining[at + part.len()..],
            None => return false,
        }
    }
    remaining.ends_with(last)
}

fn parse_rule(rule: &Value) -> Result<Rule, String> {
    let priority = rule.get("rulePriority").and_then(Value::as_u64).ok_or("a rule has no numeric `rulePriority`")?;
    let priority = u32::try_from(priority).map_err(|_| format!("`rulePriority` {priority} is out of range"))?;
    let field = |name: &str| rule.get("selection").and_then(|s| s.get(name));
    let text = |name: &str| field(name).and_then(Value::as_str);
    let list = |name: &str| -> Vec<String> {
        field(name)
            .and_then(Value::as_array)
            .map(|items| items.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default()
    };
    let tag_status = match text("tagStatus") {
        Some("tagged") => TagStatus::Tagged,
        Some("untagged") => TagStatus::Untagged,
        Some("any") => TagStatus::Any,
        other => return Err(format!("rule {priority}: unknown `tagStatus` {other:?}")),
    };
    let number = field("countNumber").and_then(Value::as_u64).ok_or(format!("rule {priority}: no `countNumber`"))?;
    let count = match text("countType") {
        Some("imageCountMoreThan") => Count::MoreThan(number),
        Some("sinceImagePushed") => Count::SincePushed(number),
        Some("sinceImagePulled") => Count::SincePulled(number),
        Some("sinceImageTransitioned") => Count::SinceTransitioned(number),
        other => return Err(format!("rule {priority}: unknown `countType` {other:?}")),
    };
    let archived = match text("storageClass") {
        None | Some("standard") => false,
        Some("archive") => true,
        Some(other) => return Err(format!("rule {priority}: unknown `storageClass` {other:?}")),
    };
    let action = match rule.get("action").and_then(|a| a.get("type")).and_then(Value::as_str) {
        Some("expire") => RuleAction::Expire,
        Some("transition") => RuleAction::Transition,
        other => return Err(format!("rule {priority}: unknown action {other:?}")),
    };
    Ok(Rule {
        priority,
        tag_status,
        tag_prefixes: list("tagPrefixList"),
        tag_patterns: list("tagPatternList"),
        archived,
        count,
        action,
    })
}

/// What a policy will expire in one repository when it next runs: the line a reviewer needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expiry {
    /// Images expired (not archived).
    pub images: u64,
    /// Their `imageSizeInBytes`, summed.
    pub bytes: u64,
    /// The tags of every tagged image among them, sorted: each one is an outage.
    pub tagged: Vec<String>,
    /// Images archived by a `transition` rule.
    pub archived: u64,
}

impl Expiry {
    /// Evaluates `policy` on `images` at `now` and sums up.
    pub fn of(policy: &Policy, images: &[Image], now: i64) -> Expiry {
        let mut expiry = Expiry::default();
        for verdict in policy.evaluate(images, now) {
            let image = &images[verdict.image];
            match verdict.action {
                RuleAction::Expire => {
                    expiry.images += 1;
                    expiry.bytes += image.size;
                    expiry.tagged.extend(image.tags.iter().cloned());
                }
                RuleAction::Transition => expiry.archived += 1,
            }
        }
        expiry.tagged.sort();
        expiry
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: i64 = 1_800_000_000;
    /// Written out, not `DAY`, so a wrong `DAY` cannot cancel itself out.
    const SECONDS_A_DAY: i64 = 86_400;

    /// An image pushed `days_ago`, with `tags`, of `size` bytes.
    fn image(name: &str, tags: &[&str], days_ago: i64, size: u64) -> Image {
        Image {
            digest: format!("sha256:{name}"),
            tags: tags.iter().map(|t| (*t).to_owned()).collect(),
            pushed_at: NOW - days_ago * SECONDS_A_DAY,
            size,
            last_pulled_at: None,
            archived_at: None,
        }
    }

    fn rule(priority: u32, selection: Value) -> Value {
        json!({ "rulePriority": priority, "selection": selection, "action": { "type": "expire" } })
    }

    /// The names of the images `rules` expire, in image order.
    fn expired(rules: Vec<Value>, images: &[Image]) -> Vec<String> {
        let policy = Policy::parse(&json!({ "rules": rules })).unwrap();
        policy
            .evaluate(images, NOW)
            .into_iter()
            .map(|v| images[v.image].digest.trim_start_matches("sha256:").to_owned())
            .collect()
    }

    // The user guide's "Filtering on image age": tagged `prod*`, older than 14 days.
    #[test]
    fn expires_tagged_images_by_pattern_and_age() {
        let images = [
            image("a", &["prod-1"], 20, 1),
            image("b", &["prod-2"], 10, 1),
            image("c", &["dev-1"], 30, 1),
            image("d", &[], 30, 1),
        ];
        let rules = vec![rule(
            1,
            json!({"tagStatus": "tagged", "tagPatternList": ["prod*"], "countType": "sinceImagePushed", "countUnit": "days", "countNumber": 14}),
        )];
        assert_eq!(expired(rules, &images), ["a"]);
    }

    // "Filtering on image count": keep one untagged image, expire all others.
    #[test]
    fn keeps_the_newest_untagged_images_by_count() {
        let images = [
            image("old", &[], 5, 1),
            image("new", &[], 1, 1),
            image("mid", &[], 3, 1),
            image("tagged", &["latest"], 9, 1),
        ];
        let rules =
            vec![rule(1, json!({"tagStatus": "untagged", "countType": "imageCountMoreThan", "countNumber": 1}))];
        assert_eq!(expired(rules, &images), ["old", "mid"]);
    }

    // "Filtering on multiple rules", example A: rule 2 would mark B, but B carries a `prod` tag,
    // which rule 1 selects, so only rule 1 may expire it.
    #[test]
    fn a_lower_priority_rule_never_expires_what_a_higher_one_selects() {
        let images = [
            image("A", &["beta-1", "prod-1"], 10, 1),
            image("B", &["beta-2", "prod-2"], 9, 1),
            image("C", &["beta-3"], 8, 1),
        ];
        let rules = vec![
            rule(
                1,
                json!({"tagStatus": "tagged", "tagPatternList": ["prod*"], "countType": "imageCountMoreThan", "countNumber": 1}),
            ),
            rule(
                2,
                json!({"tagStatus": "tagged", "tagPatternList": ["beta*"], "countType": "imageCountMoreThan", "countNumber": 1}),
            ),
        ];
        assert_eq!(expired(rules, &images), ["A"]);
    }

    // Example B: rule 2 counts the images rule 1 already marked as if they were still there.
    #[test]
    fn a_rule_counts_images_a_higher_rule_marked() {
        let images = [
            image("A", &["beta-1", "prod-1"], 10, 1),
            image("B", &["beta-2", "prod-2"], 9, 1),
            image("C", &["beta-3", "prod-3"], 8, 1),
            image("D", &["beta-4"], 7, 1),
            image("E", &["beta-5"], 6, 1),
        ];
        let rules = vec![
            rule(
                1,
                json!({"tagStatus": "tagged", "tagPrefixList": ["prod"], "countType": "imageCountMoreThan", "countNumber": 1}),
            ),
            rule(
                2,
                json!({"tagStatus": "tagged", "tagPrefixList": ["beta"], "countType": "imageCountMoreThan", "countNumber": 1}),
            ),
        ];
        // Rule 1 marks A and B; rule 2 keeps E and would mark A to D, of which C has a prod tag.
        assert_eq!(expired(rules, &images), ["A", "B", "D"]);
    }

    // Several prefixes (or patterns) in one rule: every one must match a tag of the image.
    #[test]
    fn every_prefix_and_pattern_of_a_rule_must_match() {
        let images = [
            image("A", &["alpha-1", "beta-1"], 10, 1),
            image("B", &["alpha-2"], 9, 1),
            image("C", &["alpha-3", "beta-3"], 8, 1),
        ];
        let prefixes = vec![rule(
            1,
            json!({"tagStatus": "tagged", "tagPrefixList": ["alpha", "beta"], "countType": "imageCountMoreThan", "countNumber": 1}),
        )];
        assert_eq!(expired(prefixes, &images), ["A"]);
        let patterns = vec![rule(
            1,
            json!({"tagStatus": "tagged", "tagPatternList": ["alpha-*", "*-3"], "countType": "sinceImagePushed", "countUnit": "days", "countNumber": 1}),
        )];
        assert_eq!(expired(patterns, &images), ["C"]);
    }

    // The incident: `any` older than 14 days also takes the live nightly tag after a quiet fortnight.
    #[test]
    fn an_any_rule_by_age_expires_the_live_tag() {
        let images = [
            image("nightly", &["latest-gfx1201-nightly"], 15, 7),
            image("orphan", &[], 20, 3),
            image("fresh", &[], 2, 5),
        ];
        let rules = vec![rule(
            1,
            json!({"tagStatus": "any", "countType": "sinceImagePushed", "countUnit": "days", "countNumber": 14}),
        )];
        let policy = Policy::parse(&json!({ "rules": rules })).unwrap();
        let expiry = Expiry::of(&policy, &images, NOW);
        assert_eq!(expiry, Expiry { images: 2, bytes: 10, tagged: vec!["latest-gfx1201-nightly".into()], archived: 0 });
        assert_eq!(policy.rule_over_tagged_images().map(|r| r.priority), Some(1));
    }

    // `any` last, after an untagged rule: untagged images are the untagged rule's alone.
    #[test]
    fn an_any_rule_after_an_untagged_rule_leaves_untagged_images_to_it() {
        let images =
            [image("u1", &[], 30, 1), image("u2", &[], 20, 1), image("t1", &["v1"], 30, 1), image("t2", &["v2"], 1, 1)];
        let rules = vec![
            rule(1, json!({"tagStatus": "untagged", "countType": "imageCountMoreThan", "countNumber": 5})),
            rule(2, json!({"tagStatus": "any", "countType": "imageCountMoreThan", "countNumber": 1})),
        ];
        // Rule 2 counts all four, keeps t2 (the newest) and may only take the tagged t1.
        assert_eq!(expired(rules, &images), ["t1"]);
    }

    #[test]
    fn pull_and_archive_ages_and_transitions() {
        let mut pulled = image("pulled", &[], 40, 1);
        pulled.last_pulled_at = Some(NOW - 2 * SECONDS_A_DAY);
        let never = image("never", &[], 40, 1);
        let rules = vec![json!({
            "rulePriority": 1,
            "selection": {"tagStatus": "any", "countType": "sinceImagePulled", "countUnit": "days", "countNumber": 30},
            "action": {"type": "transition", "targetStorageClass": "archive"}
        })];
        let policy = Policy::parse(&json!({ "rules": rules })).unwrap();
        let images = [pulled, never];
        let verdicts = policy.evaluate(&images, NOW);
        assert_eq!(verdicts, [Verdict { image: 1, rule_priority: 1, action: RuleAction::Transition }]);
        assert_eq!(Expiry::of(&policy, &images, NOW), Expiry { archived: 1, ..Expiry::default() });

        let mut archived = image("archived", &["v1"], 400, 1);
        archived.archived_at = Some(NOW - 100 * SECONDS_A_DAY);
        let standard = image("standard", &["v2"], 400, 1);
        let rules = vec![rule(
            1,
            json!({"tagStatus": "any", "storageClass": "archive", "countType": "sinceImageTransitioned", "countUnit": "days", "countNumber": 90}),
        )];
        assert_eq!(expired(rules, &[archived, standard]), ["archived"]);
    }

    #[test]
    fn count_ties_break_by_digest_whatever_the_input_order() {
        let a = [image("x", &[], 1, 1), image("y", &[], 1, 1), image("z", &[], 1, 1)];
        let b = [image("z", &[], 1, 1), image("x", &[], 1, 1), image("y", &[], 1, 1)];
        let keep_one =
            || vec![rule(1, json!({"tagStatus": "untagged", "countType": "imageCountMoreThan", "countNumber": 1}))];
        assert_eq!(expired(keep_one(), &a), ["y", "z"]);
        assert_eq!(expired(keep_one(), &b), ["z", "y"], "same images, in b's order");
    }

    #[test]
    fn an_age_is_more_than_whole_days() {
        let mut just_over = image("just-over", &[], 14, 1);
        just_over.pushed_at -= 1;
        let images = [image("exactly", &[], 14, 1), image("older", &[], 15, 1), just_over];
        let rules = vec![rule(
            1,
            json!({"tagStatus": "untagged", "countType": "sinceImagePushed", "countUnit": "days", "countNumber": 14}),
        )];
        assert_eq!(expired(rules, &images), ["older", "just-over"]);
        // An age beyond any clock expires nothing.
        let forever = vec![rule(
            1,
            json!({"tagStatus": "untagged", "countType": "sinceImagePushed", "countUnit": "days", "countNumber": u64::MAX}),
        )];
        assert_eq!(expired(forever, &[image("ancient", &[], 60_000, 1)]), Vec::<String>::new());
    }

    #[test]
    fn wildcards_cover_the_whole_tag() {
        for (pattern, tag, matches) in [
            ("prod*", "prod-1", true),
            ("prod*", "xprod", false),
            ("*nightly", "latest-gfx1201-nightly", true),
            ("*nightly", "nightly-x", false),
            ("latest-*-nightly", "latest-gfx1201-nightly", true),
            ("a*b*c", "abc", true),
            ("a*b*c", "acb", false),
            ("exact", "exact", true),
            ("exact", "exact1", false),
            ("*", "", true),
            ("ab*ba", "aba", false),
            ("a*bc*cd", "axbcd", false),
        ] {
            assert_eq!(wildcard_match(pattern, tag), matches, "{pattern} ~ {tag}");
        }
    }

    #[test]
    fn what_cannot_be_evaluated_is_refused_by_name() {
        for (policy, why) in [
            (json!({}), "no `rules`"),
            (json!({"rules": [{"selection": {}}]}), "rulePriority"),
            (
                json!({"rules": [rule(1, json!({"tagStatus": "some", "countType": "imageCountMoreThan", "countNumber": 1}))]}),
                "tagStatus",
            ),
            (json!({"rules": [rule(1, json!({"tagStatus": "any", "countType": "x", "countNumber": 1}))]}), "countType"),
            (
                json!({"rules": [rule(1, json!({"tagStatus": "any", "countType": "imageCountMoreThan"}))]}),
                "countNumber",
            ),
        ] {
            let error = Policy::parse(&policy).unwrap_err();
            assert!(error.contains(why), "{error}");
        }
    }

    #[test]
    fn the_untagged_rule_and_the_first_rule_over_tagged_images() {
        let policy = Policy::parse(&json!({"rules": [
            rule(2, json!({"tagStatus": "any", "countType": "imageCountMoreThan", "countNumber": 9})),
            rule(1, json!({"tagStatus": "tagged", "tagPrefixList": ["pr-"], "countType": "imageCountMoreThan", "countNumber": 9})),
        ]}))
        .unwrap();
        assert_eq!(policy.rule_over_tagged_images().map(|r| r.priority), Some(1));
        assert_eq!(policy.untagged_rule().map(|r| r.priority), Some(2));
        let untagged_only = Policy::parse(&json!({"rules": [
            rule(1, json!({"tagStatus": "untagged", "countType": "imageCountMoreThan", "countNumber": 3})),
        ]}))
        .unwrap();
        assert_eq!(untagged_only.rule_over_tagged_images(), None);
    }
}
