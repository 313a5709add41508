//! The nights, priced: each UTC day's builds at their rates, and what the registry and the
//! compiler cache stored that day. Pure: everything read from AWS is handed in.

use std::collections::BTreeMap;

use reconcile_core::markdown::{cell, code, fence, message};
use reconcile_core::plan::{Finding, Severity};
use reconcile_core::time::{date_time, day};
use reconcile_core::units::usd;
use serde_json::{Value, json};

use crate::explorer::{Billed, USD_PER_REQUEST};
use crate::rates::{Rate, Source, usage_type};
use crate::{RATE_DISAGREES, RATES_UNREAD};

const DAY: i64 = 86_400;

/// The version of the JSON report's shape.
pub const FORMAT_VERSION: &str = "1.0";

/// How CodeBuild bills, and the source: the footnote of every report.
pub const BILLING_RULE: &str = "CodeBuild bills EC2 compute by the build-minute, rounded up, from when a build is \
     submitted until it ends, every phase included (`https://aws.amazon.com/codebuild/pricing/`): a build's minutes \
     here are its whole duration rounded up, so 54m 24s is 55 minutes.";

/// The agreement a rate must have with the bill to count as confirmed.
pub const CONFIRMED_WITHIN: f64 = 0.01;

/// One build, as read (see `reconcile_codebuild::builds`).
#[derive(Debug, Clone, PartialEq)]
pub struct BuildRecord {
    pub id: String,
    /// Seconds since the epoch.
    pub start: f64,
    /// `None` while it runs: it counts up to now.
    pub end: Option<f64>,
    pub compute_type: String,
}

/// Everything a report is made from.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    pub account: String,
    pub region: String,
    /// Seconds since the epoch.
    pub now: i64,
    /// How many UTC days, today included.
    pub days: u32,
    pub builds: Vec<BuildRecord>,
    /// The rates found (the Price List's, or the last known).
    pub rates: Vec<Rate>,
    /// What Cost Explorer says was billed; `None` when it was not asked or could not be read.
    pub billed: Option<Billed>,
    /// The registry's images, now: (pushed at, bytes).
    pub registry: Vec<(i64, u64)>,
    /// Dollars per GB-month of ECR storage.
    pub registry_price: f64,
    /// The cache bucket's stored bytes by storage type and day (00:00 UTC).
    pub bucket: BTreeMap<String, BTreeMap<i64, u64>>,
    /// What could not be read, each a warning finding already.
    pub findings: Vec<Finding>,
}

/// Whether a rate is confirmed by the bill.
#[derive(Debug, Clone, PartialEq)]
pub enum Verification {
    /// Not checked against a bill (none asked, or none readable).
    Unverified,
    /// Cost Explorer billed nothing of this usage type in the days it was asked.
    NotBilled,
    /// Within 1% of what was billed per minute.
    Confirmed { billed: f64 },
    /// Further off than 1%.
    Disagrees { billed: f64, off: f64 },
}

impl Verification {
    pub fn confirmed(&self) -> bool {
        matches!(self, Verification::Confirmed { .. })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct PricedRate {
    pub rate: Rate,
    pub verification: Verification,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PricedBuild {
    pub id: String,
    pub start: f64,
    pub running: bool,
    /// From start to end (or now).
    pub seconds: f64,
    /// Billed minutes: `seconds` rounded up.
    pub minutes: u64,
    pub compute_type: String,
    pub usage_type: Option<String>,
    /// `None` when no rate is known for its compute.
    pub cost: Option<f64>,
    pub confirmed: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Night {
    /// 00:00 UTC, seconds since the epoch.
    pub day: i64,
    pub builds: usize,
    pub minutes: u64,
    pub runner: f64,
    /// Whether every build's rate is confirmed.
    pub runner_confirmed: bool,
    pub registry_bytes: u64,
    pub registry: f64,
    /// `None` when CloudWatch has no figure for the day (S3 publishes a day's the day after).
    pub bucket_bytes: Option<u64>,
    pub bucket: f64,
    pub total: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CostReport {
    pub account: String,
    pub region: String,
    pub now: i64,
    pub days: u32,
    pub nights: Vec<Night>,
    pub builds: Vec<PricedBuild>,
    pub rates: Vec<PricedRate>,
    pub registry_price: f64,
    /// Cost Explorer requests made, and whether more pages were left unread.
    pub explorer: Option<(usize, Option<String>)>,
    pub findings: Vec<Finding>,
}

/// S3's us-east-1 list prices per GB-month by storage type (https://aws.amazon.com/s3/pricing/,
/// first 50 TB); `None` for a storage type this table does not know.
pub fn s3_price(storage_type: &str) -> Option<f64> {
    Some(match storage_type {
        "StandardStorage" | "IntelligentTieringFAStorage" => 0.023,
        "ReducedRedundancyStorage" => 0.024,
        "StandardIAStorage" => 0.0125,
        "OneZoneIAStorage" => 0.01,
        "IntelligentTieringIAStorage" => 0.0125,
        "GlacierInstantRetrievalStorage" => 0.004,
        "GlacierStorage" => 0.0036,
        "DeepArchiveStorage" => 0.000_99,
        _ => return None,
    })
}

/// How many days the calendar month of `seconds` has: a GB-month is prorated over it.
fn days_in_month(seconds: i64) -> i64 {
    let date = day(seconds);
    let (year, month): (i64, u32) = (date[..4].parse().unwrap_or(1970), date[5..7].parse().unwrap_or(1));
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        _ => 31,
    }
}

/// One day's share of a month's storage of `bytes` at `usd_per_gb_month`.
fn day_of_storage(bytes: u64, usd_per_gb_month: f64, day: i64) -> f64 {
    reconcile_core::units::monthly_cost(bytes, usd_per_gb_month) / days_in_month(day) as f64
}

pub fn report(inputs: Inputs) -> CostReport {
    let today = inputs.now.div_euclid(DAY) * DAY;
    let first = today - DAY * (i64::from(inputs.days.max(1)) - 1);
    let mut findings = inputs.findings;
    let rates: Vec<PricedRate> = inputs
        .rates
        .iter()
        .map(|rate| {
            let verification = verify(rate, inputs.billed.as_ref());
            if let Verification::Disagrees { billed, off } = verification {
                findings.push(Finding {
                    code: RATE_DISAGREES.to_owned(),
                    severity: Severity::Warning,
                    address: None,
                    message: format!(
                        "{}: the rate used is ${:.4}/min ({}), but Cost Explorer billed ${billed:.4}/min, {:.1}% off; \
                         the figures using it are unverified",
                        rate.usage_type,
                        rate.usd_per_minute,
                        source_text(&rate.source),
                        off * 100.0
                    ),
                    overridden_by: None,
                });
            }
            PricedRate { rate: rate.clone(), verification }
        })
        .collect();
    let rate_of = |usage: &str| rates.iter().find(|r| r.rate.usage_type == usage);

    let mut builds: Vec<PricedBuild> = inputs
        .builds
        .iter()
        .filter(|b| b.start >= first as f64)
        .map(|build| {
            let end = build.end.unwrap_or(inputs.now as f64);
            let seconds = (end - build.start).max(0.0);
            let minutes = (seconds / 60.0).ceil() as u64;
            let usage = usage_type(&inputs.region, &build.compute_type);
            let rate = usage.as_deref().and_then(rate_of);
            PricedBuild {
                id: build.id.clone(),
                start: build.start,
                running: build.end.is_none(),
                seconds,
                minutes,
                compute_type: build.compute_type.clone(),
                usage_type: usage.clone(),
                cost: rate.map(|r| minutes as f64 * r.rate.usd_per_minute),
                confirmed: rate.is_some_and(|r| r.verification.confirmed()),
            }
        })
        .collect();
    builds.sort_by(|a, b| b.start.total_cmp(&a.start));

    let nights = (0..inputs.days.max(1))
        .map(|n| {
            let day = first + DAY * i64::from(n);
            let mine: Vec<&PricedBuild> =
                builds.iter().filter(|b| (b.start as i64).div_euclid(DAY) * DAY == day).collect();
            let runner: f64 = mine.iter().filter_map(|b| b.cost).sum();
            let registry_bytes: u64 =
                inputs.registry.iter().filter(|(pushed, _)| *pushed < day + DAY).map(|(_, bytes)| bytes).sum();
            let registry = day_of_storage(registry_bytes, inputs.registry_price, day);
            let stored: Vec<(u64, f64)> = inputs
                .bucket
                .iter()
                .filter_map(|(storage, days)| {
                    let bytes = *days.get(&day)?;
                    Some((bytes, s3_price(storage).map_or(0.0, |price| day_of_storage(bytes, price, day))))
                })
                .collect();
            let bucket_bytes = (!stored.is_empty()).then(|| stored.iter().map(|(b, _)| b).sum());
            let bucket: f64 = stored.iter().map(|(_, usd)| usd).sum();
            Night {
                day,
                builds: mine.len(),
                minutes: mine.iter().map(|b| b.minutes).sum(),
                runner,
                runner_confirmed: mine.iter().all(|b| b.confirmed),
                registry_bytes,
                registry,
                bucket_bytes,
                bucket,
                total: runner + registry + bucket,
            }
        })
        .collect();
    // Builds without a rate, one finding per compute: a busy month is thousands of builds.
    let mut unpriced: BTreeMap<(&str, Option<&str>), usize> = BTreeMap::new();
    for build in builds.iter().filter(|b| b.cost.is_none()) {
        *unpriced.entry((build.compute_type.as_str(), build.usage_type.as_deref())).or_default() += 1;
    }
    for ((compute_type, usage), count) in unpriced {
        findings.push(Finding {
            code: RATES_UNREAD.to_owned(),
            severity: Severity::Warning,
            address: None,
            message: format!(
                "{count} build(s) ran on {compute_type}, whose rate is not known here ({}): they are counted in \
                 minutes, not dollars",
                usage.unwrap_or("no usage type known for it in this region")
            ),
            overridden_by: None,
        });
    }
    CostReport {
        account: inputs.account,
        region: inputs.region,
        now: inputs.now,
        days: inputs.days.max(1),
        nights,
        builds,
        rates,
        registry_price: inputs.registry_price,
        explorer: inputs.billed.as_ref().map(|b| (b.requests, b.unread.clone())),
        findings,
    }
}

fn verify(rate: &Rate, billed: Option<&Billed>) -> Verification {
    let Some(billed) = billed else { return Verification::Unverified };
    match billed.by_usage_type.get(&rate.usage_type) {
        Some((cost, quantity)) if *quantity > 0.0 => {
            let per_minute = cost / quantity;
            let off = if rate.usd_per_minute > 0.0 {
                (per_minute - rate.usd_per_minute).abs() / rate.usd_per_minute
            } else {
                f64::INFINITY
            };
            if off <= CONFIRMED_WITHIN {
                Verification::Confirmed { billed: per_minute }
            } else {
                Verification::Disagrees { billed: per_minute, off }
            }
        }
        _ => Verification::NotBilled,
    }
}

fn source_text(source: &Source) -> String {
    match source {
        Source::PriceList => "the Price List API".to_owned(),
        Source::Known { as_of, from } => format!("the last known rate, {as_of}, from {from}"),
    }
}

/// A dollar figure, marked when a rate in it is not confirmed by the bill.
fn marked(value: f64, confirmed: bool) -> String {
    if confirmed { usd(value) } else { format!("{} (rate unverified)", usd(value)) }
}

fn duration(seconds: f64) -> String {
    let seconds = seconds.round() as u64;
    format!("{}m {:02}s", seconds / 60, seconds % 60)
}

impl CostReport {
    pub fn total(&self) -> f64 {
        self.nights.iter().map(|n| n.total).sum()
    }

    fn runner_confirmed(&self) -> bool {
        self.nights.iter().all(|n| n.runner_confirmed)
    }

    fn verification_text(verification: &Verification) -> String {
        match verification {
            Verification::Unverified => "(rate unverified): not yet checked against a bill".to_owned(),
            Verification::NotBilled => {
                "(rate unverified): Cost Explorer billed none of it in the days asked".to_owned()
            }
            Verification::Confirmed { billed } => format!("confirmed: Cost Explorer billed ${billed:.4}/min"),
            Verification::Disagrees { billed, off } => {
                format!("(rate unverified): Cost Explorer billed ${billed:.4}/min, {:.1}% off (E104)", off * 100.0)
            }
        }
    }

    fn footnotes(&self) -> Vec<String> {
        let mut notes = vec![BILLING_RULE.to_owned()];
        notes.push(format!(
            "Storage is priced by the GiB-month (AWS's GB-month, a GB being 2^30 bytes), a day being its share of the month: the registry at \
             ${:.3} (desired.toml's [usage] price), from the images it holds now by the day each was pushed (an image \
             expired since is not counted, so earlier days are a lower bound); the compiler cache at S3's list prices \
             by storage type, from CloudWatch's daily BucketSizeBytes (S3 publishes a day's the day after: a day \
             without one shows no figure).",
            self.registry_price
        ));
        notes.push(match &self.explorer {
            Some((requests, unread)) => format!(
                "Cost Explorer: {requests} request(s), ${:.2}{}; only days at least two days old are asked, as its data \
                 lags.",
                *requests as f64 * USD_PER_REQUEST,
                unread.as_ref().map(|why| format!(", more pages left unread ({why})")).unwrap_or_default()
            ),
            None => "Cost Explorer was not asked: every rate is unverified.".to_owned(),
        });
        notes
    }

    pub fn text(&self) -> String {
        let mut out = format!(
            "Cost of the last {} night(s) (UTC days), account {}, {}, as of {}.\n\n",
            self.days,
            self.account,
            self.region,
            date_time(self.now)
        );
        out.push_str(&self.nights_table());
        if !self.builds.is_empty() {
            out.push_str("\nBuilds, newest first:\n");
            for build in &self.builds {
                out.push_str(&format!(
                    "  {}  {}  {}{} -> {} min  {}  {}\n",
                    date_time(build.start as i64),
                    build.id,
                    if build.running { "running, so far " } else { "" },
                    duration(build.seconds),
                    build.minutes,
                    build.compute_type,
                    build.cost.map_or_else(|| "no rate known".to_owned(), |c| marked(c, build.confirmed)),
                ));
            }
        }
        if !self.rates.is_empty() {
            out.push_str("\nRates:\n");
            for rate in &self.rates {
                out.push_str(&format!(
                    "  {}  ${:.4}/min, from {}; {}\n",
                    rate.rate.usage_type,
                    rate.rate.usd_per_minute,
                    source_text(&rate.rate.source),
                    Self::verification_text(&rate.verification)
                ));
            }
        }
        if !self.findings.is_empty() {
            out.push('\n');
            for finding in &self.findings {
                let more = reconcile_core::text::learn_more(&finding.code);
                out.push_str(&format!("Warning [{}] {} ({more})\n", finding.code, finding.message));
            }
        }
        out.push('\n');
        for note in self.footnotes() {
            out.push_str(&note);
            out.push('\n');
        }
        out
    }

    /// The nights as a table, a row each and the total last, columns aligned.
    fn nights_table(&self) -> String {
        let mut table = String::new();
        let mut rows: Vec<[String; 7]> =
            vec![["night", "builds", "minutes", "runner", "registry", "cache bucket", "total"].map(str::to_owned)];
        for night in &self.nights {
            rows.push([
                day(night.day),
                night.builds.to_string(),
                night.minutes.to_string(),
                marked(night.runner, night.runner_confirmed || night.builds == 0),
                usd(night.registry),
                night.bucket_bytes.map_or_else(|| "-".to_owned(), |_| usd(night.bucket)),
                marked(night.total, night.runner_confirmed || night.builds == 0),
            ]);
        }
        let confirmed = self.runner_confirmed() || self.builds.is_empty();
        rows.push([
            "total".to_owned(),
            self.builds.len().to_string(),
            self.nights.iter().map(|n| n.minutes).sum::<u64>().to_string(),
            marked(self.nights.iter().map(|n| n.runner).sum(), confirmed),
            usd(self.nights.iter().map(|n| n.registry).sum()),
            usd(self.nights.iter().map(|n| n.bucket).sum()),
            marked(self.total(), confirmed),
        ]);
        let widths: Vec<usize> = (0..7).map(|c| rows.iter().map(|r| r[c].len()).max().unwrap_or(0)).collect();
        for row in &rows {
            let line: Vec<String> = row
                .iter()
                .enumerate()
                .map(
                    |(c, v)| if c == 0 { format!("{v:<w$}", w = widths[c]) } else { format!("{v:>w$}", w = widths[c]) },
                )
                .collect();
            table.push_str(line.join("  ").trim_end());
            table.push('\n');
        }
        table
    }

    pub fn json(&self) -> Value {
        // Adding zero makes a -0.0 (an empty sum, a rounded tiny credit) 0.0: JSON says `0.0`.
        let round = |v: f64| reconcile_core::units::rounded(v, 4);
        json!({
            "format_version": FORMAT_VERSION,
            "account": self.account,
            "region": self.region,
            "generated_at": self.now,
            "days": self.days,
            "nights": self.nights.iter().map(|n| json!({
                "date": day(n.day),
                "builds": n.builds,
                "billed_minutes": n.minutes,
                "runner_usd": round(n.runner),
                "runner_rate_verified": n.runner_confirmed,
                "registry_bytes": n.registry_bytes,
                "registry_usd": round(n.registry),
                "cache_bucket_bytes": n.bucket_bytes,
                "cache_bucket_usd": round(n.bucket),
                "total_usd": round(n.total),
            })).collect::<Vec<_>>(),
            "builds": self.builds.iter().map(|b| json!({
                "id": b.id,
                "started_at": date_time(b.start as i64),
                "running": b.running,
                "seconds": b.seconds.round(),
                "billed_minutes": b.minutes,
                "compute_type": b.compute_type,
                "usage_type": b.usage_type,
                "cost_usd": b.cost.map(round),
                "rate_verified": b.confirmed,
            })).collect::<Vec<_>>(),
            "rates": self.rates.iter().map(|r| {
                let (status, billed, off) = match r.verification {
                    Verification::Unverified => ("unverified", None, None),
                    Verification::NotBilled => ("not_billed", None, None),
                    Verification::Confirmed { billed } => ("confirmed", Some(billed), None),
                    Verification::Disagrees { billed, off } => ("disagrees", Some(billed), Some(off)),
                };
                let (source, as_of) = match &r.rate.source {
                    Source::PriceList => ("price_list", day(self.now)),
                    Source::Known { as_of, .. } => ("known", (*as_of).to_owned()),
                };
                json!({
                    "usage_type": r.rate.usage_type,
                    "usd_per_minute": r.rate.usd_per_minute,
                    "source": source,
                    "as_of": as_of,
                    "verification": status,
                    "billed_usd_per_minute": billed.map(round),
                    "off": off.map(round),
                })
            }).collect::<Vec<_>>(),
            "total_usd": round(self.total()),
            "total_rate_verified": self.runner_confirmed() || self.builds.is_empty(),
            "cost_explorer_requests": self.explorer.as_ref().map_or(0, |(requests, _)| *requests),
            "cost_explorer_unread": self.explorer.as_ref().and_then(|(_, unread)| unread.clone()),
            "findings": self.findings.iter().map(|f| json!({ "code": f.code, "message": f.message })).collect::<Vec<_>>(),
            "notes": self.footnotes(),
        })
    }

    pub fn markdown(&self) -> String {
        let mut out = format!(
            "### What the last {} night(s) cost\n\nAccount {}, {}, as of {}.\n\n",
            self.days,
            code(&self.account),
            code(&self.region),
            date_time(self.now)
        );
        out.push_str("| night | builds | minutes | runner | registry | cache bucket | total |\n|---|---:|---:|---:|---:|---:|---:|\n");
        for night in &self.nights {
            let confirmed = night.runner_confirmed || night.builds == 0;
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} |\n",
                day(night.day),
                night.builds,
                night.minutes,
                marked(night.runner, confirmed),
                usd(night.registry),
                night.bucket_bytes.map_or_else(|| "-".to_owned(), |_| usd(night.bucket)),
                marked(night.total, confirmed),
            ));
        }
        let confirmed = self.runner_confirmed() || self.builds.is_empty();
        out.push_str(&format!(
            "| **total** | {} | {} | {} | {} | {} | **{}** |\n\n",
            self.builds.len(),
            self.nights.iter().map(|n| n.minutes).sum::<u64>(),
            marked(self.nights.iter().map(|n| n.runner).sum(), confirmed),
            usd(self.nights.iter().map(|n| n.registry).sum()),
            usd(self.nights.iter().map(|n| n.bucket).sum()),
            marked(self.total(), confirmed),
        ));
        // Nights as bars: the whole night, and the runner's part of it drawn over it, so the
        // lighter top of each bar is storage.
        let labels: Vec<String> = self.nights.iter().map(|n| format!("\"{}\"", &day(n.day)[5..])).collect();
        let totals: Vec<String> = self.nights.iter().map(|n| format!("{:.2}", n.total)).collect();
        let runner: Vec<String> = self.nights.iter().map(|n| format!("{:.2}", n.runner)).collect();
        let chart = format!(
            "xychart-beta\n    title \"Nights (USD): storage on top of the runner\"\n    x-axis [{}]\n    y-axis \"USD\"\n    bar [{}]\n    bar [{}]\n",
            labels.join(", "),
            totals.join(", "),
            runner.join(", ")
        );
        out.push_str(&fence(&chart, "mermaid"));
        out.push('\n');
        if !self.builds.is_empty() {
            out.push_str("<details><summary>Builds</summary>\n\n| started | build | duration | minutes | compute | cost |\n|---|---|---:|---:|---|---:|\n");
            for build in &self.builds {
                out.push_str(&format!(
                    "| {} | {} | {}{} | {} | {} | {} |\n",
                    date_time(build.start as i64),
                    cell(&build.id),
                    if build.running { "running, so far " } else { "" },
                    duration(build.seconds),
                    build.minutes,
                    cell(&build.compute_type),
                    build.cost.map_or_else(|| "no rate known".to_owned(), |c| marked(c, build.confirmed)),
                ));
            }
            out.push_str("\n</details>\n\n");
        }
        for rate in &self.rates {
            out.push_str(&format!(
                "- {}: ${:.4}/min, from {}; {}\n",
                code(&rate.rate.usage_type),
                rate.rate.usd_per_minute,
                message(&source_text(&rate.rate.source)),
                message(&Self::verification_text(&rate.verification))
            ));
        }
        for finding in &self.findings {
            out.push_str(&format!("- Warning `{}`: {}\n", finding.code, message(&finding.message)));
        }
        out.push('\n');
        for note in self.footnotes() {
            out.push_str(&format!("_{}_\n\n", message(&note)));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-12-01T12:00:00Z.
    const NOW: i64 = 1_796_126_400;
    const TODAY: i64 = NOW - 12 * 3600;

    fn build(id: &str, start: i64, seconds: Option<i64>) -> BuildRecord {
        BuildRecord {
            id: format!("rocm-bake:{id}"),
            start: start as f64,
            end: seconds.map(|s| (start + s) as f64),
            compute_type: "BUILD_GENERAL1_XLARGE".to_owned(),
        }
    }

    /// The team's two measured builds, a build still running, a day of stored images and of the
    /// cache, at the xlarge rate from the Price List.
    fn inputs(billed: Option<Billed>) -> Inputs {
        let rate = Rate {
            usage_type: "USE1-Build-Min:Linux:g1.xlarge".to_owned(),
            usd_per_minute: 0.0798,
            source: Source::PriceList,
        };
        Inputs {
            account: "123456789012".to_owned(),
            region: "us-east-1".to_owned(),
            now: NOW,
            days: 3,
            builds: vec![
                build("warm", TODAY - DAY + 2 * 3600 + 17 * 60, Some(34 * 60)),
                build("cold", TODAY - 2 * DAY + 2 * 3600 + 17 * 60, Some(54 * 60 + 24)),
                build("now", NOW - 12 * 60 - 30, None),
                // Before the window: not counted.
                build("old", TODAY - 3 * DAY, Some(600)),
            ],
            rates: vec![rate],
            billed,
            registry: vec![(TODAY - 10 * DAY, 400 * 1_073_741_824), (TODAY - DAY + 3600, 338 * 1_073_741_824)],
            registry_price: 0.10,
            bucket: BTreeMap::from([(
                "StandardStorage".to_owned(),
                BTreeMap::from([(TODAY - 2 * DAY, 50 * 1_073_741_824), (TODAY - DAY, 60 * 1_073_741_824)]),
            )]),
            findings: Vec::new(),
        }
    }

    #[test]
    fn the_measured_builds_cost_what_the_team_said_rounded_up_by_the_minute() {
        let report = report(inputs(None));
        let costs: Vec<(&str, u64, Option<f64>)> = report
            .builds
            .iter()
            .map(|b| (b.id.as_str(), b.minutes, b.cost.map(|c| (c * 100.0).round() / 100.0)))
            .collect();
        assert_eq!(
            costs,
            [("rocm-bake:now", 13, Some(1.04)), ("rocm-bake:warm", 34, Some(2.71)), ("rocm-bake:cold", 55, Some(4.39)),]
        );
        assert!(report.builds[0].running);
        insta::assert_snapshot!("cost_text", report.text());
        insta::assert_snapshot!("cost_json", reconcile_core::json::to_pretty(&report.json()));
        insta::assert_snapshot!("cost_markdown", report.markdown());
    }

    #[test]
    fn a_rate_is_confirmed_within_one_percent_of_the_bill_and_a_finding_when_further() {
        let billed = |per_minute: f64| Billed {
            by_usage_type: BTreeMap::from([("USE1-Build-Min:Linux:g1.xlarge".to_owned(), (89.0 * per_minute, 89.0))]),
            requests: 1,
            unread: None,
        };
        let confirmed = report(inputs(Some(billed(0.0800))));
        assert!(confirmed.rates[0].verification.confirmed());
        assert!(!confirmed.text().contains("(rate unverified)"), "{}", confirmed.text());
        assert!(confirmed.findings.is_empty());

        let off = report(inputs(Some(billed(0.0878))));
        assert!(matches!(off.rates[0].verification, Verification::Disagrees { .. }));
        assert_eq!(off.findings.len(), 1);
        assert_eq!(
            off.findings[0].message,
            "USE1-Build-Min:Linux:g1.xlarge: the rate used is $0.0798/min (the Price List API), but Cost Explorer billed \
             $0.0878/min, 10.0% off; the figures using it are unverified"
        );
        assert!(off.text().contains("$2.71 (rate unverified)"));

        let nothing_billed = report(inputs(Some(Billed { requests: 1, ..Billed::default() })));
        assert_eq!(nothing_billed.rates[0].verification, Verification::NotBilled);
        assert!(nothing_billed.text().contains("Cost Explorer billed none of it in the days asked"));
    }

    #[test]
    fn storage_is_a_days_share_of_the_month_and_a_build_without_a_rate_is_said() {
        let mut unpriced = inputs(None);
        unpriced.rates.clear();
        unpriced.builds[0].compute_type = "BUILD_LAMBDA_1GB".to_owned();
        let report = report(unpriced);
        // 2026-11-30: 738 GiB of images at $0.10 a GiB-month, over November's 30 days.
        let yesterday = &report.nights[1];
        assert_eq!(yesterday.registry_bytes, 738 * 1_073_741_824);
        assert!((yesterday.registry - 73.8 / 30.0).abs() < 1e-9, "{}", yesterday.registry);
        assert!((yesterday.bucket - 60.0 * 0.023 / 30.0).abs() < 1e-9);
        // Today: December, 31 days; no bucket figure yet.
        assert!((report.nights[2].registry - 73.8 / 31.0).abs() < 1e-9);
        assert_eq!(report.nights[2].bucket_bytes, None);
        let unread: Vec<&str> =
            report.findings.iter().filter(|f| f.code == RATES_UNREAD).map(|f| f.message.as_str()).collect();
        assert_eq!(
            unread,
            [
                "2 build(s) ran on BUILD_GENERAL1_XLARGE, whose rate is not known here (USE1-Build-Min:Linux:g1.xlarge): \
                 they are counted in minutes, not dollars",
                "1 build(s) ran on BUILD_LAMBDA_1GB, whose rate is not known here (no usage type known for it in this \
                 region): they are counted in minutes, not dollars",
            ]
        );
        assert_eq!(days_in_month(TODAY - 92 * DAY + 1), 31, "August");
        assert_eq!(days_in_month(1_709_164_800), 29, "2024-02-29");
        assert_eq!(days_in_month(1_677_628_800 - 1), 28, "the last second of 2023-02-28");
    }
}
