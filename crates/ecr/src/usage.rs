//! What the registry holds and costs, and how fast it grows: `reconcile usage`.
//!
//! Billed ECR storage once went from 264 GB to 738 GB in six days and nobody saw it until the
//! bill. The reconciler reads the registry anyway, so it says what each repository holds, what
//! its lifecycle policies will reclaim (with the same evaluator as the plan's expiry lines), what
//! it costs at a declared rate, and, against earlier reports, how fast it grows. Pure: the
//! images come from the reconciler (`EcrReconciler::usage`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use serde_json::{Value, json};

use crate::expiry::{Expiry, Image, Policy};
use reconcile_core::markdown::{cell, code, fence};
use reconcile_core::units::{self, bytes as human_bytes, usd};

/// The version of the JSON usage report; `--since` reads this major version only.
pub const FORMAT_VERSION: &str = "1.1";

/// The footnote every format carries, so nobody mistakes an estimate for an invoice.
pub fn footnote(price_per_gb_month: f64) -> String {
    format!(
        "Sizes are ECR's imageSizeInBytes, each image's compressed layers; layers shared between images are \
         stored once, so these sums can overstate what is billed (no deduplication is claimed). Cost is an \
         estimate at ${price_per_gb_month:.3} per GiB-month (AWS bills storage by the GB-month, a GB being \
         2^30 bytes: a GiB), not an invoice."
    )
}

/// One repository's holdings.
#[derive(Debug, Clone, PartialEq)]
pub struct RepositoryUsage {
    pub name: String,
    pub images: u64,
    pub tagged: u64,
    pub untagged: u64,
    pub bytes: u64,
    /// Whether it has a lifecycle policy at all.
    pub has_policy: bool,
    /// What its live policy expires on its next run.
    pub live_reclaim: u64,
    /// What the policy desired.toml declares for it would expire; `None` when undeclared.
    pub declared_reclaim: Option<u64>,
    /// What the live and the declared policy would hold a month from now; `None` when undeclared.
    pub month_ahead: Option<MonthAhead>,
}

/// The untagged images the live lifecycle policy and the declared one would hold a month from
/// now, if the nightly goes on pushing as it did lately (each push orphans the image it replaces):
/// what a drifted policy costs while it stays, by the same evaluator as the plan's expiry lines.
/// Untagged images only: the nightly keeps its tags current, and a policy that expires a tag is
/// D103's to say, not a saving.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MonthAhead {
    /// Bytes the live policy would hold (no policy: every one).
    pub live: u64,
    /// Bytes the declared policy would hold.
    pub declared: u64,
    /// The pace: images pushed in the last `days` days.
    pub pushes: u64,
    pub days: u64,
    /// The size each image to come is given: the mean untagged image (or the mean image).
    pub mean: u64,
}

/// How far ahead, and how far back the pace is measured: a month.
const MONTH_DAYS: u64 = 30;
/// The most images to come a repository is projected with: a pace past 100 pushes a day is no
/// nightly's, and the evaluator's work stays bounded at any account's size.
const MOST_TO_COME: u64 = 3_000;

impl MonthAhead {
    pub fn of(images: &[Image], live: Option<&Policy>, declared: &Policy, now: i64) -> MonthAhead {
        const DAY: i64 = 86_400;
        let month = DAY * MONTH_DAYS as i64;
        let recent: Vec<i64> =
            images.iter().map(|i| i.pushed_at).filter(|at| *at > now - month && *at <= now).collect();
        let pushes = recent.len() as u64;
        // Measured from the oldest recent push: a repository made a week ago has a week's pace.
        let days = recent
            .iter()
            .min()
            .map_or(MONTH_DAYS, |oldest| ((now - oldest) as u64).div_ceil(DAY as u64))
            .clamp(1, MONTH_DAYS);
        let untagged: Vec<&Image> = images.iter().filter(|i| !i.is_tagged()).collect();
        let sized = if untagged.is_empty() { images.iter().collect() } else { untagged.clone() };
        let mean = if sized.is_empty() { 0 } else { sized.iter().map(|i| i.size).sum::<u64>() / sized.len() as u64 };
        let coming = (pushes * MONTH_DAYS).div_ceil(days).min(MOST_TO_COME);
        let mut future: Vec<Image> = untagged.into_iter().cloned().collect();
        future.extend((0..coming).map(|n| Image {
            digest: format!("sha256:to-come-{n}"),
            tags: Vec::new(),
            pushed_at: now + (n as i64 + 1) * month / coming as i64,
            size: mean,
            last_pulled_at: None,
            archived_at: None,
        }));
        let at = now + month;
        let all: u64 = future.iter().map(|i| i.size).sum();
        let held = |policy: &Policy| all.saturating_sub(Expiry::of(policy, &future, at).bytes);
        MonthAhead { live: live.map_or(all, held), declared: held(declared), pushes, days, mean }
    }
}

impl RepositoryUsage {
    /// Sums up one repository's images and evaluates its policies on them at `now`.
    pub fn of(name: &str, images: &[Image], live: Option<&Policy>, declared: Option<&Policy>, now: i64) -> Self {
        let tagged = images.iter().filter(|i| i.is_tagged()).count() as u64;
        RepositoryUsage {
            name: name.to_owned(),
            images: images.len() as u64,
            tagged,
            untagged: images.len() as u64 - tagged,
            bytes: images.iter().map(|i| i.size).sum(),
            has_policy: live.is_some(),
            live_reclaim: live.map_or(0, |p| Expiry::of(p, images, now).bytes),
            declared_reclaim: declared.map(|p| Expiry::of(p, images, now).bytes),
            month_ahead: declared.map(|p| MonthAhead::of(images, live, p, now)),
        }
    }
}

/// A usage report of the whole registry.
#[derive(Debug, Clone, PartialEq)]
pub struct Usage {
    pub account: String,
    pub region: String,
    /// Seconds since the epoch, when it was read.
    pub generated_at: i64,
    pub price_per_gb_month: f64,
    /// Largest first, then by name.
    pub repositories: Vec<RepositoryUsage>,
    /// What a public report counts instead of naming ([`Usage::publish`]): nothing otherwise.
    pub others: Others,
}

/// The repositories a public report may not name, summed: how many, what they hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Others {
    pub repositories: u64,
    pub images: u64,
    pub tagged: u64,
    pub untagged: u64,
    pub bytes: u64,
    /// What their live policies will reclaim.
    pub live_reclaim: u64,
    /// How many of them have no lifecycle policy, and what those hold.
    pub without_policy: u64,
    pub without_policy_bytes: u64,
}

impl Usage {
    pub fn new(
        account: &str,
        region: &str,
        generated_at: i64,
        price_per_gb_month: f64,
        mut repositories: Vec<RepositoryUsage>,
    ) -> Usage {
        repositories.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.name.cmp(&b.name)));
        Usage {
            account: account.to_owned(),
            region: region.to_owned(),
            generated_at,
            price_per_gb_month,
            repositories,
            others: Others::default(),
        }
    }

    /// This report as a public page may say it: the repositories `shown` allows by name (what
    /// desired.toml declares, and what the nightly's bake file names), every other one only
    /// counted and summed in [`Usage::others`], so the totals stay the registry's.
    pub fn publish(mut self, shown: &dyn Fn(&str) -> bool) -> Usage {
        let (named, unnamed): (Vec<RepositoryUsage>, Vec<RepositoryUsage>) =
            self.repositories.into_iter().partition(|r| shown(&r.name));
        for r in unnamed {
            let others = &mut self.others;
            others.repositories += 1;
            others.images = others.images.saturating_add(r.images);
            others.tagged = others.tagged.saturating_add(r.tagged);
            others.untagged = others.untagged.saturating_add(r.untagged);
            others.bytes = others.bytes.saturating_add(r.bytes);
            others.live_reclaim = others.live_reclaim.saturating_add(r.live_reclaim);
            if !r.has_policy {
                others.without_policy += 1;
                others.without_policy_bytes = others.without_policy_bytes.saturating_add(r.bytes);
            }
        }
        self.repositories = named;
        self
    }

    /// Every repository of the registry, named or counted.
    pub fn repository_count(&self) -> u64 {
        self.repositories.len() as u64 + self.others.repositories
    }

    pub fn total_bytes(&self) -> u64 {
        self.repositories.iter().fold(self.others.bytes, |total, r| total.saturating_add(r.bytes))
    }

    /// The estimated monthly cost of `bytes`, in dollars.
    pub fn cost(&self, bytes: u64) -> f64 {
        monthly_cost(bytes, self.price_per_gb_month)
    }
}

/// What storing `bytes` for a month costs at `price_per_gb_month`, in dollars.
pub fn monthly_cost(bytes: u64, price_per_gb_month: f64) -> f64 {
    units::monthly_cost(bytes, price_per_gb_month)
}

/// How many repositories without a lifecycle policy the drift summary names, the largest first.
pub const LISTED_WITHOUT_POLICY: usize = 10;

/// What `drift` ends with: the largest repositories, the total, and every repository without a
/// lifecycle policy, with sizes and costs; of a published report, the others counted.
pub fn summary(usage: &Usage) -> Value {
    let entry = |r: &RepositoryUsage| json!({ "name": r.name, "bytes": r.bytes, "monthly_cost_usd": round_cents(usage.cost(r.bytes)) });
    let mut value = json!({
        "largest": usage.repositories.iter().take(3).map(entry).collect::<Vec<_>>(),
        "total": { "repositories": usage.repository_count(), "bytes": usage.total_bytes(), "monthly_cost_usd": round_cents(usage.cost(usage.total_bytes())) },
        "without_policy": usage.repositories.iter().filter(|r| !r.has_policy).map(entry).collect::<Vec<_>>(),
        "note": footnote(usage.price_per_gb_month),
    });
    if usage.others.repositories > 0 {
        value["others"] = others_json(usage);
    }
    value
}

/// [`summary`] as text lines (`markdown`: as Markdown). A published report's other repositories
/// are counted: a registry out of control has hundreds, and the drift issue is public.
pub fn summary_text(usage: &Usage, markdown: bool) -> String {
    let name = |r: &RepositoryUsage| if markdown { code(&r.name) } else { r.name.clone() };
    let sized =
        |r: &RepositoryUsage| format!("{} {} ({}/month)", name(r), human_bytes(r.bytes), usd(usage.cost(r.bytes)));
    let mut out = String::new();
    let heading = if markdown { "**Registry**: " } else { "Registry: " };
    let largest: Vec<String> = usage.repositories.iter().take(3).map(sized).collect();
    writeln!(
        out,
        "{heading}{} in {} repositories, about {} a month.{}",
        human_bytes(usage.total_bytes()),
        usage.repository_count(),
        usd(usage.cost(usage.total_bytes())),
        if largest.is_empty() { String::new() } else { format!(" Largest: {}.", largest.join(", ")) }
    )
    .unwrap();
    // The largest few by name, and how many more: the drift comment must still fit GitHub's
    // limit (`reconcile usage` lists them all).
    let without: Vec<&RepositoryUsage> = usage.repositories.iter().filter(|r| !r.has_policy).collect();
    let others = usage.others;
    if !without.is_empty() || others.without_policy > 0 {
        let mut named: Vec<String> = without.iter().take(LISTED_WITHOUT_POLICY).map(|r| sized(r)).collect();
        if without.len() > LISTED_WITHOUT_POLICY {
            let more = without.len() - LISTED_WITHOUT_POLICY;
            let bytes: u64 = without.iter().skip(LISTED_WITHOUT_POLICY).map(|r| r.bytes).sum();
            named.push(format!("and {more} more holding {} (`reconcile usage` lists them)", human_bytes(bytes)));
        }
        if others.without_policy > 0 {
            named.push(format!(
                "{} of the account's other repositories holding {} (counted here; `--private` names them)",
                others.without_policy,
                human_bytes(others.without_policy_bytes)
            ));
        }
        writeln!(out, "{}Without a lifecycle policy: {}.", if markdown { "\n" } else { "" }, named.join(", ")).unwrap();
    }
    writeln!(out, "{}{}", if markdown { "\n" } else { "" }, footnote(usage.price_per_gb_month)).unwrap();
    out
}

/// A published report's other repositories, summed, as JSON.
fn others_json(usage: &Usage) -> Value {
    let others = usage.others;
    json!({
        "repositories": others.repositories,
        "images": others.images,
        "tagged": others.tagged,
        "untagged": others.untagged,
        "bytes": others.bytes,
        "live_policy_reclaims_bytes": others.live_reclaim,
        "without_policy": others.without_policy,
        "without_policy_bytes": others.without_policy_bytes,
        "monthly_cost_usd": round_cents(usage.cost(others.bytes)),
    })
}

/// The sentence under a published report's table.
fn others_note(others: &Others) -> String {
    format!(
        "{} other repositories of the registry are counted, not named: a public report names only what desired.toml \
         declares and the nightly's bake file names (`reconcile usage --private` names them all).",
        others.repositories
    )
}

/// The report as a table that fits 100 columns.
pub fn text(usage: &Usage) -> String {
    let mut out = String::new();
    writeln!(out, "ECR usage of account {}, region {}.", usage.account, usage.region).unwrap();
    writeln!(out).unwrap();
    writeln!(
        out,
        "{:<26} {:>7} {:>6} {:>8} {:>10} {:>10} {:>10} {:>6} {:>8}",
        "REPOSITORY", "IMAGES", "TAGGED", "UNTAGGED", "SIZE", "LIVE FREES", "DECL FREES", "POLICY", "$/MONTH"
    )
    .unwrap();
    for r in &usage.repositories {
        let [images, tagged, untagged, size, live, declared] = cells(r);
        writeln!(
            out,
            "{:<26} {images:>7} {tagged:>6} {untagged:>8} {size:>10} {live:>10} {declared:>10} {:>6} {:>8.2}",
            short(&r.name, 26),
            if r.has_policy { "yes" } else { "NONE" },
            usage.cost(r.bytes)
        )
        .unwrap();
    }
    let others = &usage.others;
    if others.repositories > 0 {
        writeln!(
            out,
            "{:<26} {:>7} {:>6} {:>8} {:>10} {:>10} {:>10} {:>6} {:>8.2}",
            format!("({} others)", others.repositories),
            others.images,
            others.tagged,
            others.untagged,
            human_bytes(others.bytes),
            human_bytes(others.live_reclaim),
            "-",
            others.without_policy.to_string() + " NONE",
            usage.cost(others.bytes)
        )
        .unwrap();
    }
    let (images, tagged, untagged) = totals(usage);
    writeln!(
        out,
        "{:<26} {:>7} {:>6} {:>8} {:>10} {:>10} {:>10} {:>6} {:>8.2}",
        format!("TOTAL ({} repositories)", usage.repository_count()),
        images,
        tagged,
        untagged,
        human_bytes(usage.total_bytes()),
        human_bytes(usage.repositories.iter().map(|r| r.live_reclaim).sum::<u64>() + others.live_reclaim),
        human_bytes(usage.repositories.iter().filter_map(|r| r.declared_reclaim).sum()),
        "",
        usage.cost(usage.total_bytes())
    )
    .unwrap();
    writeln!(out).unwrap();
    let mut notes = Vec::new();
    if others.repositories > 0 {
        notes.push(others_note(others));
    }
    notes.push(footnote(usage.price_per_gb_month));
    for note in notes {
        for line in wrap(&note, 100) {
            writeln!(out, "{line}").unwrap();
        }
    }
    out
}

/// `text` in lines of at most `width` characters, broken between words.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let line = lines.last_mut().expect("never empty");
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(word.to_owned());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines
}

/// A repository's figures as every table shows them: images, tagged, untagged, size, what the
/// live policy frees, what the declared one frees (`-` when undeclared).
fn cells(r: &RepositoryUsage) -> [String; 6] {
    [
        r.images.to_string(),
        r.tagged.to_string(),
        r.untagged.to_string(),
        human_bytes(r.bytes),
        human_bytes(r.live_reclaim),
        r.declared_reclaim.map_or_else(|| "-".to_owned(), human_bytes),
    ]
}

fn totals(usage: &Usage) -> (u64, u64, u64) {
    let others = (usage.others.images, usage.others.tagged, usage.others.untagged);
    usage.repositories.iter().fold(others, |(i, t, u), r| (i + r.images, t + r.tagged, u + r.untagged))
}

/// A name cut to `width` characters, marked when cut.
fn short(name: &str, width: usize) -> String {
    if name.chars().count() <= width {
        return name.to_owned();
    }
    let kept: String = name.chars().take(width - 1).collect();
    format!("{kept}…")
}

/// The report as JSON, exact bytes; what `--since` reads back.
pub fn json(usage: &Usage) -> Value {
    let repositories: Vec<Value> = usage
        .repositories
        .iter()
        .map(|r| {
            json!({
                "name": r.name,
                "images": r.images,
                "tagged": r.tagged,
                "untagged": r.untagged,
                "bytes": r.bytes,
                "has_policy": r.has_policy,
                "live_policy_reclaims_bytes": r.live_reclaim,
                "declared_policy_reclaims_bytes": r.declared_reclaim,
                "monthly_cost_usd": round_cents(usage.cost(r.bytes)),
            })
        })
        .collect();
    json!({
        "format_version": FORMAT_VERSION,
        "account": usage.account,
        "region": usage.region,
        "generated_at": usage.generated_at,
        "price_per_gb_month_usd": usage.price_per_gb_month,
        "repositories": repositories,
        "others": others_json(usage),
        "total": {
            "repositories": usage.repository_count(),
            "bytes": usage.total_bytes(),
            "monthly_cost_usd": round_cents(usage.cost(usage.total_bytes())),
        },
        "note": footnote(usage.price_per_gb_month),
    })
}

fn round_cents(dollars: f64) -> f64 {
    units::rounded(dollars, 2)
}

/// The report as a Markdown table.
pub fn markdown(usage: &Usage) -> String {
    let mut out = String::new();
    writeln!(out, "### ECR usage of account {}, region {}", code(&usage.account), code(&usage.region)).unwrap();
    writeln!(out).unwrap();
    writeln!(
        out,
        "**{} in {} repositories, about {} a month**",
        human_bytes(usage.total_bytes()),
        usage.repository_count(),
        usd(usage.cost(usage.total_bytes()))
    )
    .unwrap();
    writeln!(out).unwrap();
    writeln!(out, "| repository | images | tagged | untagged | size | live policy frees | declared policy frees | policy | $/month |").unwrap();
    writeln!(out, "|---|--:|--:|--:|--:|--:|--:|---|--:|").unwrap();
    for r in &usage.repositories {
        writeln!(
            out,
            "| {} | {} | {} | {:.2} |",
            cell(&r.name),
            cells(r).join(" | "),
            if r.has_policy { "yes" } else { "**none**" },
            usage.cost(r.bytes)
        )
        .unwrap();
    }
    let others = &usage.others;
    if others.repositories > 0 {
        let policy =
            if others.without_policy > 0 { format!("**{} none**", others.without_policy) } else { "yes".into() };
        writeln!(
            out,
            "| *{} others* | {} | {} | {} | {} | {} | - | {policy} | {:.2} |",
            others.repositories,
            others.images,
            others.tagged,
            others.untagged,
            human_bytes(others.bytes),
            human_bytes(others.live_reclaim),
            usage.cost(others.bytes)
        )
        .unwrap();
        writeln!(out).unwrap();
        writeln!(out, "{}", others_note(others)).unwrap();
    }
    writeln!(out).unwrap();
    writeln!(out, "{}", footnote(usage.price_per_gb_month)).unwrap();
    out
}

/// The most bytes (or images) a report may say a repository holds: an exbibyte, past any
/// registry, and far enough below `u64::MAX` that no sum of a report's repositories overflows.
const MAX_PLAUSIBLE: u64 = 1 << 60;
/// ECR's quota of repositories in one region.
const MAX_REPOSITORIES: usize = 100_000;

/// `after - before`, as the difference it is, within `i64`.
fn delta(after: u64, before: u64) -> i64 {
    (i128::from(after) - i128::from(before)).clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// Reads a report `json` wrote.
pub fn from_json(value: &Value) -> Result<Usage, String> {
    let version = value["format_version"].as_str().ok_or("it is not a usage report (no `format_version`)")?;
    if version.split('.').next() != FORMAT_VERSION.split('.').next() {
        return Err(format!("it is a usage report of format {version}, and this reconcile reads {FORMAT_VERSION}"));
    }
    // Any number past these is no registry's: refused, so no sum or difference can overflow.
    let number = |v: &Value, key: &str| match v[key].as_u64() {
        Some(n) if n <= MAX_PLAUSIBLE => Ok(n),
        Some(n) => Err(format!("`{key}` is {n}, more than any registry holds")),
        None => Err(format!("`{key}` is missing or not a number")),
    };
    let mut repositories = Vec::new();
    let listed = value["repositories"].as_array().ok_or("it has no `repositories` list")?;
    if listed.len() > MAX_REPOSITORIES {
        return Err(format!("it lists {} repositories, more than ECR allows in a region", listed.len()));
    }
    for r in listed {
        repositories.push(RepositoryUsage {
            name: r["name"].as_str().ok_or("a repository has no `name`")?.to_owned(),
            images: number(r, "images")?,
            tagged: number(r, "tagged")?,
            untagged: number(r, "untagged")?,
            bytes: number(r, "bytes")?,
            has_policy: r["has_policy"].as_bool().unwrap_or(false),
            live_reclaim: r["live_policy_reclaims_bytes"].as_u64().unwrap_or(0).min(MAX_PLAUSIBLE),
            declared_reclaim: r["declared_policy_reclaims_bytes"].as_u64().map(|n| n.min(MAX_PLAUSIBLE)),
            month_ahead: None,
        });
    }
    let mut usage = Usage::new(
        value["account"].as_str().unwrap_or_default(),
        value["region"].as_str().unwrap_or_default(),
        value["generated_at"].as_i64().filter(|at| *at >= 0).ok_or("`generated_at` is missing or before 1970")?,
        value["price_per_gb_month_usd"].as_f64().unwrap_or(0.10),
        repositories,
    );
    // A published report's others (absent from a report of before them: none).
    let others = &value["others"];
    if others.is_object() {
        let count = |key: &str| number(others, key).map(|n| n.min(MAX_REPOSITORIES as u64));
        usage.others = Others {
            repositories: count("repositories")?,
            images: number(others, "images")?,
            tagged: number(others, "tagged")?,
            untagged: number(others, "untagged")?,
            bytes: number(others, "bytes")?,
            live_reclaim: number(others, "live_policy_reclaims_bytes").unwrap_or(0),
            without_policy: count("without_policy").unwrap_or(0),
            without_policy_bytes: number(others, "without_policy_bytes").unwrap_or(0),
        };
    }
    Ok(usage)
}

/// How one repository changed between the earliest report and now.
#[derive(Debug, Clone, PartialEq)]
pub struct RepositoryGrowth {
    pub name: String,
    /// `new` (not in the earlier report), `gone` (not in this one), or empty.
    pub status: &'static str,
    pub images: i64,
    pub bytes: i64,
    pub untagged: i64,
    pub bytes_per_day: f64,
    /// Its untagged count grew although it has a policy that should bound it.
    pub unbounded: bool,
}

/// Growth from the earliest of `earlier` to `now`, per repository, fastest first.
pub fn growth(earlier: &[Usage], now: &Usage) -> Vec<RepositoryGrowth> {
    let Some(first) = earlier.iter().min_by_key(|u| u.generated_at) else { return Vec::new() };
    let days = ((now.generated_at - first.generated_at) as f64 / 86_400.0).max(1.0 / 24.0);
    let before: BTreeMap<&str, &RepositoryUsage> = first.repositories.iter().map(|r| (r.name.as_str(), r)).collect();
    let after: BTreeMap<&str, &RepositoryUsage> = now.repositories.iter().map(|r| (r.name.as_str(), r)).collect();
    let names: BTreeSet<&str> = before.keys().chain(after.keys()).copied().collect();
    let mut rows: Vec<RepositoryGrowth> = names
        .into_iter()
        .map(|name| {
            let (b, a) = (before.get(name), after.get(name));
            let field = |r: Option<&&RepositoryUsage>, f: fn(&RepositoryUsage) -> u64| r.map_or(0, |r| f(r));
            let bytes = delta(field(a, |r| r.bytes), field(b, |r| r.bytes));
            let untagged = delta(field(a, |r| r.untagged), field(b, |r| r.untagged));
            RepositoryGrowth {
                name: name.to_owned(),
                status: match (b, a) {
                    (None, Some(_)) => "new",
                    (Some(_), None) => "gone",
                    _ => "",
                },
                images: delta(field(a, |r| r.images), field(b, |r| r.images)),
                bytes,
                untagged,
                bytes_per_day: bytes as f64 / days,
                unbounded: b.is_some() && untagged > 0 && a.is_some_and(|r| r.has_policy),
            }
        })
        .collect();
    rows.sort_by(|x, y| y.bytes.cmp(&x.bytes).then_with(|| x.name.cmp(&y.name)));
    rows
}

/// Signed bytes for people.
fn signed_bytes(bytes: i64) -> String {
    let sign = if bytes < 0 { "-" } else { "+" };
    format!("{sign}{}", human_bytes(bytes.unsigned_abs()))
}

/// The growth as text, to follow the report.
pub fn growth_text(earlier: &[Usage], now: &Usage) -> String {
    let rows = growth(earlier, now);
    let mut out = String::new();
    let Some(first) = earlier.iter().min_by_key(|u| u.generated_at) else { return out };
    let days = (now.generated_at - first.generated_at) as f64 / 86_400.0;
    let total = delta(now.total_bytes(), first.total_bytes());
    writeln!(out).unwrap();
    writeln!(
        out,
        "Growth over {days:.1} days: {} in total, {} a day.",
        signed_bytes(total),
        signed_bytes((total as f64 / days.max(1.0 / 24.0)) as i64)
    )
    .unwrap();
    let fastest = fastest(&rows);
    for row in changed(&rows) {
        let notes = notes(row, &fastest, "FASTEST");
        writeln!(
            out,
            "  {:<28} {:>+7} images {:>11} {:>11}/day  {}",
            short(&row.name, 28),
            row.images,
            signed_bytes(row.bytes),
            signed_bytes(row.bytes_per_day as i64),
            notes
        )
        .unwrap();
    }
    out
}

/// The growth as Markdown: a table and, with more than one earlier report, a Mermaid
/// `xychart-beta` of the total over time, which GitHub renders in a comment.
pub fn growth_markdown(earlier: &[Usage], now: &Usage) -> String {
    let mut out = String::new();
    let rows = growth(earlier, now);
    if rows.is_empty() {
        return out;
    }
    writeln!(out).unwrap();
    writeln!(out, "#### Growth since the earliest report").unwrap();
    writeln!(out).unwrap();
    writeln!(out, "| repository | images | bytes | per day | note |").unwrap();
    writeln!(out, "|---|--:|--:|--:|---|").unwrap();
    let fastest = fastest(&rows);
    for row in changed(&rows) {
        let note = notes(row, &fastest, "**fastest**");
        writeln!(
            out,
            "| {} | {:+} | {} | {} | {note} |",
            cell(&row.name),
            row.images,
            signed_bytes(row.bytes),
            signed_bytes(row.bytes_per_day as i64)
        )
        .unwrap();
    }
    if earlier.len() > 1 {
        let mut series: Vec<&Usage> = earlier.iter().collect();
        series.sort_by_key(|u| u.generated_at);
        series.push(now);
        let labels: Vec<String> =
            series.iter().map(|u| format!("\"{}\"", reconcile_core::time::day(u.generated_at))).collect();
        let totals: Vec<String> =
            series.iter().map(|u| format!("{:.1}", u.total_bytes() as f64 / units::GIB)).collect();
        chart(&mut out, "ECR storage, GiB", &labels, &totals);
        // One chart per fast-growing repository: xychart-beta draws no legend, so lines of
        // several repositories in one chart could not be told apart.
        for name in fastest {
            let bytes: Vec<String> = series
                .iter()
                .map(|u| {
                    let held = u.repositories.iter().find(|r| r.name == name).map_or(0, |r| r.bytes);
                    format!("{:.1}", held as f64 / units::GIB)
                })
                .collect();
            chart(&mut out, &format!("{name}, GiB"), &labels, &bytes);
        }
    }
    out
}

/// A Mermaid line chart. The title is a repository's name, which an earlier report (`--since`)
/// may have carried in from anywhere: kept to what a title can hold, and fenced.
fn chart(out: &mut String, title: &str, labels: &[String], values: &[String]) {
    let title: String = title.chars().map(|c| if c.is_control() || c == '"' { '\'' } else { c }).collect();
    let body = format!(
        "xychart-beta\n    title \"{title}\"\n    x-axis [{}]\n    y-axis \"GiB\"\n    line [{}]\n",
        labels.join(", "),
        values.join(", ")
    );
    writeln!(out).unwrap();
    out.push_str(&fence(&body, "mermaid"));
}

/// The rows worth a line: those whose bytes changed, and those new or gone.
fn changed(rows: &[RepositoryGrowth]) -> impl Iterator<Item = &RepositoryGrowth> {
    rows.iter().filter(|r| r.bytes != 0 || !r.status.is_empty())
}

/// What a growth row says besides its numbers: fastest (in `fastest_word`), new or gone, and an
/// untagged count that grew despite a policy.
fn notes(row: &RepositoryGrowth, fastest: &[&str], fastest_word: &str) -> String {
    let mut notes = Vec::new();
    if fastest.contains(&row.name.as_str()) {
        notes.push(fastest_word.to_owned());
    }
    if !row.status.is_empty() {
        notes.push(row.status.to_owned());
    }
    if row.unbounded {
        notes.push(format!("untagged +{} despite its policy", row.untagged));
    }
    notes.join("; ")
}

/// The (at most three) repositories that grew most, in bytes.
fn fastest(rows: &[RepositoryGrowth]) -> Vec<&str> {
    rows.iter().filter(|r| r.bytes > 0).take(3).map(|r| r.name.as_str()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000;
    const GIB: u64 = 1 << 30;

    /// A nightly's push history: one image a night for `nights`, each `size`, the last tagged.
    fn nightly(nights: i64, size: u64) -> Vec<Image> {
        (0..nights)
            .map(|n| Image {
                digest: format!("sha256:{n}"),
                tags: if n == nights - 1 { vec!["nightly".to_owned()] } else { Vec::new() },
                pushed_at: NOW - (nights - n) * 86_400 + 3_600,
                size,
                last_pulled_at: None,
                archived_at: None,
            })
            .collect()
    }

    fn policy(selection: Value) -> Policy {
        Policy::parse(&json!({"rules": [{"rulePriority": 1, "selection": selection, "action": {"type": "expire"}}]}))
            .unwrap()
    }

    #[test]
    fn a_month_ahead_a_missing_policy_holds_every_untagged_image_and_an_age_rule_a_fortnights() {
        let keep_three = policy(json!({"tagStatus": "untagged", "countType": "imageCountMoreThan", "countNumber": 3}));
        let fourteen_days = policy(
            json!({"tagStatus": "any", "countType": "sinceImagePushed", "countUnit": "days", "countNumber": 14}),
        );
        let images = nightly(20, GIB);
        // No policy: the 19 untagged now and the 30 nights to come.
        let none = MonthAhead::of(&images, None, &keep_three, NOW);
        assert_eq!(none, MonthAhead { live: 49 * GIB, declared: 3 * GIB, pushes: 20, days: 20, mean: GIB });
        // The old 14-day rule keeps a fortnight of nights (a push exactly 14 days old is not older).
        let aged = MonthAhead::of(&images, Some(&fourteen_days), &keep_three, NOW);
        assert_eq!((aged.live, aged.declared), (15 * GIB, 3 * GIB));
        // The declared policy itself: nothing to price.
        let same = MonthAhead::of(&images, Some(&keep_three), &keep_three, NOW);
        assert_eq!(same.live, same.declared);
        // Nothing pushed lately: only what is held now.
        let quiet = MonthAhead::of(&nightly(3, GIB), None, &keep_three, NOW + 60 * 86_400);
        assert_eq!((quiet.live, quiet.pushes, quiet.declared), (2 * GIB, 0, 2 * GIB));
    }

    fn repository(name: &str, bytes: u64, untagged: u64, has_policy: bool) -> RepositoryUsage {
        RepositoryUsage {
            name: name.into(),
            images: untagged + 1,
            tagged: 1,
            untagged,
            bytes,
            has_policy,
            live_reclaim: 0,
            declared_reclaim: None,
            month_ahead: None,
        }
    }

    fn usage(at: i64, repositories: Vec<RepositoryUsage>) -> Usage {
        Usage::new("123456789012", "us-east-1", at, 0.10, repositories)
    }

    #[test]
    fn a_published_report_names_only_what_it_may_and_keeps_the_registrys_totals() {
        let gb = 1 << 30;
        let mut theirs = repository("team-x/secret-model", 300 * gb, 7, false);
        theirs.live_reclaim = gb;
        let full =
            usage(0, vec![repository("pytorch", 10 * gb, 2, true), theirs, repository("team-y/app", gb, 0, true)]);
        let shown = |name: &str| name == "pytorch";
        let public = full.clone().publish(&shown);
        assert_eq!(public.repositories.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["pytorch"]);
        assert_eq!((public.total_bytes(), public.repository_count()), (full.total_bytes(), 3));
        assert_eq!(
            public.others,
            Others {
                repositories: 2,
                images: 9,
                tagged: 2,
                untagged: 7,
                bytes: 301 * gb,
                live_reclaim: gb,
                without_policy: 1,
                without_policy_bytes: 300 * gb,
            }
        );
        let renderings = [
            text(&public),
            markdown(&public),
            reconcile_core::json::to_pretty(&json(&public)),
            summary_text(&public, false),
            summary_text(&public, true),
            reconcile_core::json::to_pretty(&summary(&public)),
            // Against earlier reports published alike, as `usage` reads them.
            growth_text(&[full.clone().publish(&shown)], &public),
            growth_markdown(&[full.clone().publish(&shown), full.clone().publish(&shown)], &public),
        ];
        for rendered in &renderings {
            assert!(!rendered.contains("team-"), "{rendered}");
        }
        assert!(renderings[0].contains("(2 others)"), "{}", renderings[0]);
        assert!(renderings[0].contains("TOTAL (3 repositories)"), "{}", renderings[0]);
        assert!(renderings[1].contains("| *2 others* | 9 | 2 | 7 | 301.0 GiB |"), "{}", renderings[1]);
        assert!(renderings[3].contains("1 of the account's other repositories holding 300.0 GiB"), "{}", renderings[3]);
        assert!(renderings[0].contains("2 other repositories of the registry are counted, not named"));
        assert!(!text(&full).contains("other repositories of the registry"), "{}", text(&full));
        assert!(renderings[1].contains("| **1 none** |"), "{}", renderings[1]);
        assert!(renderings[1].contains("2 other repositories of the registry are counted"), "{}", renderings[1]);
        assert_eq!(summary(&public)["others"]["repositories"], 2);
        assert!(summary(&full).get("others").is_none());
        // Others that all have a policy: said so.
        let policed = full.clone().publish(&|name| name != "team-y/app");
        assert!(
            markdown(&policed).contains("| *1 others* | 1 | 1 | 0 | 1.0 GiB | 0 B | - | yes |"),
            "{}",
            markdown(&policed)
        );
        // Read back (`--since`), the others are what was written.
        assert_eq!(from_json(&json(&public)).unwrap(), public);
        // Nothing to count: the report as it was.
        assert_eq!(full.clone().publish(&|_| true), full);
    }

    #[test]
    fn the_summary_names_ten_without_a_policy_and_counts_the_rest() {
        let gb = 1 << 30;
        let ten: Vec<_> = (0..10).map(|i| repository(&format!("big-{i}"), gb * (20 - i), 0, false)).collect();
        let named = summary_text(&usage(0, ten.clone()), false);
        assert!(!named.contains(" more holding "), "{named}");
        // A size and its cost multiply out: 11 GiB at $0.10 a GiB-month.
        assert!(named.contains("big-9 11.0 GiB ($1.10/month)"), "{named}");

        let mut twelve = ten;
        twelve.extend([repository("small-a", 3 * gb, 0, false), repository("small-b", 2 * gb, 0, false)]);
        twelve.push(repository("with-a-policy", 100 * gb, 0, true));
        let counted = summary_text(&usage(0, twelve), true);
        let more = format!("and 2 more holding {} (`reconcile usage` lists them)", human_bytes(5 * gb));
        assert!(counted.contains(&more), "{counted}");
        let without = counted.lines().find(|line| line.starts_with("Without a lifecycle policy")).unwrap();
        assert!(!without.contains("small-a") && !without.contains("with-a-policy"), "{without}");
        // Every repository bounded: no line about those without a policy.
        let bounded = summary_text(&usage(0, vec![repository("with-a-policy", gb, 0, true)]), false);
        assert!(!bounded.contains("Without a lifecycle policy"), "{bounded}");
    }

    #[test]
    fn a_report_past_any_registry_is_refused_and_one_at_the_bound_is_read() {
        let report = usage(0, vec![repository("a", 5, 2, true)]);
        let mut bounded = json(&report);
        bounded["repositories"][0]["bytes"] = json!(MAX_PLAUSIBLE);
        assert_eq!(from_json(&bounded).unwrap().repositories[0].bytes, MAX_PLAUSIBLE);
        bounded["repositories"][0]["bytes"] = json!(MAX_PLAUSIBLE + 1);
        assert!(from_json(&bounded).unwrap_err().contains("more than any registry holds"));

        let one = json(&report)["repositories"][0].clone();
        let mut most = json(&report);
        most["repositories"] = Value::Array(vec![one.clone(); MAX_REPOSITORIES]);
        assert_eq!(from_json(&most).unwrap().repositories.len(), MAX_REPOSITORIES);
        most["repositories"] = Value::Array(vec![one; MAX_REPOSITORIES + 1]);
        assert!(from_json(&most).unwrap_err().contains("more than ECR allows"));
    }

    #[test]
    fn a_chart_title_keeps_no_quote_or_control_character() {
        let mut out = String::new();
        chart(&mut out, "a\"b\nc", &["d1".to_owned()], &["1".to_owned()]);
        assert!(out.contains("title \"a'b'c\""), "{out}");
    }

    #[test]
    fn a_report_reads_back_as_it_was_written() {
        let report = usage(1_800_000_000, vec![repository("a", 5, 2, true), repository("b", 9, 0, false)]);
        assert_eq!(from_json(&json(&report)).unwrap(), report);
        assert_eq!(report.repositories[0].name, "b", "largest first");
        let mut other = json(&report);
        other["format_version"] = json!("2.0");
        assert!(from_json(&other).unwrap_err().contains("format 2.0"));
    }

    #[test]
    fn growth_per_repository_with_new_and_gone_ones_and_unbounded_untagged() {
        let day = 86_400;
        let before = usage(
            0,
            vec![
                repository("steady", 100, 3, true),
                repository("grows", 1_000, 3, true),
                repository("old", 50, 0, false),
            ],
        );
        let now = usage(
            2 * day,
            vec![
                repository("steady", 100, 3, true),
                repository("grows", 159_001_000, 40, true),
                repository("fresh", 10, 0, true),
            ],
        );
        let rows = growth(std::slice::from_ref(&before), &now);
        let find = |name: &str| rows.iter().find(|r| r.name == name).unwrap();
        assert_eq!(rows[0].name, "grows", "fastest first");
        assert_eq!(find("grows").bytes, 159_000_000);
        assert_eq!(find("grows").bytes_per_day, 79_500_000.0);
        assert!(find("grows").unbounded);
        assert_eq!((find("fresh").status, find("old").status, find("steady").status), ("new", "gone", ""));
        assert!(!find("steady").unbounded, "its untagged count did not grow");
        assert_eq!(fastest(&rows), ["grows", "fresh"], "only what grew");
        assert_eq!(signed_bytes(0), "+0 B");
        assert_eq!(signed_bytes(-1), "-1 B");
        // Reports half an hour apart count as an hour: growth per day is not divided by zero.
        let soon = usage(1_800, vec![repository("steady", 124, 3, true)]);
        let quick = growth(&[usage(0, vec![repository("steady", 100, 3, true)])], &soon);
        assert_eq!(quick[0].bytes_per_day, 24.0 * 24.0);
        assert!(!find("fresh").unbounded, "no earlier count to grow from");
        let text = growth_text(std::slice::from_ref(&before), &now);
        assert!(text.contains("Growth over 2.0 days: +151.6 MiB in total, +75.8 MiB a day."), "{text}");
        assert!(text.contains("untagged +37 despite its policy"), "{text}");
        assert!(!text.contains("steady"), "{text}");
        let markdown =
            growth_markdown(&[before.clone(), usage(day, vec![repository("grows", 80_000_000, 20, true)])], &now);
        assert!(markdown.contains("```mermaid\nxychart-beta\n"), "{markdown}");
        assert!(!markdown.contains("`steady`"), "what did not change is not listed: {markdown}");
        let one = growth_markdown(std::slice::from_ref(&before), &now);
        assert!(one.contains("`grows`") && !one.contains("mermaid"), "one earlier report makes no chart: {one}");
        assert!(markdown.contains("x-axis [\"1970-01-01\", \"1970-01-02\", \"1970-01-03\"]"), "{markdown}");
        assert!(markdown.contains("line [0.0, 0.1, 0.1]"), "{markdown}");
        assert!(markdown.contains("title \"grows, GiB\""), "{markdown}");
        assert!(
            markdown
                .contains("| `grows` | +37 | +151.6 MiB | +75.8 MiB | **fastest**; untagged +37 despite its policy |"),
            "{markdown}"
        );
        assert!(text.contains("FASTEST; untagged +37 despite its policy"), "{text}");
    }

    /// One registry in every rendering, pinned: a repository with and one without a policy, one
    /// declared and one not, a name too long for the table.
    #[test]
    fn every_rendering_of_a_fixed_registry() {
        let images = |sizes: &[(u64, bool)]| -> Vec<Image> {
            sizes
                .iter()
                .enumerate()
                .map(|(idx, (size, tagged))| Image {
                    digest: format!("sha256:{idx}"),
                    tags: if *tagged { vec![format!("v{idx}")] } else { vec![] },
                    pushed_at: 1_000 + idx as i64,
                    size: *size,
                    last_pulled_at: None,
                    archived_at: None,
                })
                .collect()
        };
        let keep = |n: u64| {
            Policy::parse(&json!({"rules": [{"rulePriority": 1, "selection": {"tagStatus": "untagged", "countType": "imageCountMoreThan", "countNumber": n}, "action": {"type": "expire"}}]})).unwrap()
        };
        let cache =
            images(&[(3_000_000_000, true), (1_000_000_000, false), (2_000_000_000, false), (4_000_000_000, false)]);
        let repositories = vec![
            RepositoryUsage::of("pytorch-cache", &cache, Some(&keep(2)), Some(&keep(1)), 2_000),
            RepositoryUsage::of(
                "a-repository-name-longer-than-the-table-allows",
                &images(&[(5, false)]),
                None,
                None,
                2_000,
            ),
        ];
        assert_eq!(
            (repositories[0].images, repositories[0].tagged, repositories[0].untagged, repositories[0].bytes),
            (4, 1, 3, 10_000_000_000)
        );
        assert_eq!(
            (repositories[0].live_reclaim, repositories[0].declared_reclaim),
            (1_000_000_000, Some(3_000_000_000))
        );
        let now = usage(1_800_000_000, repositories);
        // 10^10 bytes at $0.10 per 2^30 bytes.
        assert_eq!(round_cents(now.cost(10_000_000_000)), 0.93);
        assert_eq!(monthly_cost(1 << 30, 0.25), 0.25);
        insta::assert_snapshot!("usage_text", text(&now));
        insta::assert_snapshot!("usage_json", reconcile_core::json::to_pretty(&json(&now)));
        insta::assert_snapshot!("usage_markdown", markdown(&now));
        insta::assert_snapshot!("usage_summary_text", summary_text(&now, false));
        insta::assert_snapshot!("usage_summary_markdown", summary_text(&now, true));
        insta::assert_snapshot!("usage_summary_json", reconcile_core::json::to_pretty(&summary(&now)));
        assert!(text(&now).lines().all(|line| line.chars().count() <= 100));
        // The table's total, in the unit it is shown in, times the price is its dollars.
        let table = text(&now);
        let total = table.lines().find(|line| line.starts_with("TOTAL")).unwrap();
        let cells: Vec<&str> = total.split_whitespace().collect();
        let size =
            cells.iter().position(|cell| *cell == "GiB").map(|at| cells[at - 1].parse::<f64>().unwrap()).unwrap();
        let dollars: f64 = cells.last().unwrap().parse().unwrap();
        assert!((size * now.price_per_gb_month - dollars).abs() < 0.01, "{total}");

        let mut earlier = now.clone();
        earlier.generated_at -= 3 * 86_400;
        earlier.repositories[0].bytes -= 600_000_000;
        earlier.repositories[0].untagged -= 2;
        earlier.repositories[0].images -= 2;
        earlier.repositories.pop();
        earlier.repositories.push(repository("gone", 7, 0, false));
        let mut middle = now.clone();
        middle.generated_at -= 86_400;
        insta::assert_snapshot!("usage_growth_text", growth_text(std::slice::from_ref(&earlier), &now));
        insta::assert_snapshot!("usage_growth_markdown", growth_markdown(&[earlier.clone(), middle], &now));
        let smaller = earlier.repositories[0].bytes - 600_000_000;
        let shrunk = usage(
            earlier.generated_at + 86_400,
            vec![repository("pytorch-cache", smaller, 0, true), repository("gone", 7, 0, false)],
        );
        assert!(
            growth_text(std::slice::from_ref(&earlier), &shrunk).contains("-572.2 MiB"),
            "{}",
            growth_text(&[earlier.clone()], &shrunk)
        );
    }

    #[test]
    fn the_footnote_wraps_between_words() {
        assert_eq!(wrap("aa bb cc", 5), ["aa bb", "cc"]);
        assert_eq!(wrap("aaaaaa b", 5), ["aaaaaa", "b"]);
        assert_eq!(wrap("a b", 3), ["a b"]);
        assert_eq!(wrap("aa bbb", 5), ["aa", "bbb"]);
        assert_eq!(wrap("", 3), [""]);
        assert!(footnote(0.1).contains("$0.100 per GiB-month (AWS bills storage by the GB-month, a GB being 2^30"));
    }

    #[test]
    fn long_names_are_cut_and_marked() {
        assert_eq!(short("abc", 5), "abc");
        assert_eq!(short("abcdefgh", 5), "abcd…");
    }
}
