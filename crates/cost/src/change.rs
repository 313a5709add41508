//! What a plan's changes do to the monthly bill, from what the account measured: the runner's
//! last nights, the registry's repositories, the cache bucket's daily size. Pure: everything read
//! is handed in. Each figure says what it rests on; what cannot be estimated (no history, no
//! known rate) says why, never a zero.

use reconcile_core::plan::CostFigure;
use reconcile_core::units::{bytes, monthly_cost, usd};

use crate::rates::{self, Rate, Source};
use crate::report::{CostReport, s3_price};

/// Nights in an average month (365.25 / 12).
pub const NIGHTS_PER_MONTH: f64 = 365.25 / 12.0;

/// What the runner's last whole nights measured: the nights before today's (which may still be
/// building), priced as `reconcile cost` prices them.
#[derive(Debug, Clone, PartialEq)]
pub struct Nights {
    /// How many whole nights were looked at.
    pub nights: u32,
    /// What the runner's builds cost over them, and their billed minutes by compute type.
    pub runner: f64,
    pub minutes: Vec<(String, u64)>,
    /// Builds left unpriced (no known rate for their compute).
    pub unpriced: usize,
    pub builds: usize,
}

impl Nights {
    /// The nights of `report` before its own day.
    pub fn of(report: &CostReport) -> Nights {
        let today = report.now.div_euclid(86_400) * 86_400;
        let whole: Vec<_> = report.nights.iter().filter(|n| n.day < today).collect();
        let builds: Vec<_> = report.builds.iter().filter(|b| (b.start as i64) < today).collect();
        let mut minutes: Vec<(String, u64)> = Vec::new();
        for build in &builds {
            match minutes.iter_mut().find(|(compute, _)| *compute == build.compute_type) {
                Some((_, total)) => *total += build.minutes,
                None => minutes.push((build.compute_type.clone(), build.minutes)),
            }
        }
        Nights {
            nights: whole.len() as u32,
            runner: whole.iter().map(|n| n.runner).sum(),
            minutes,
            unpriced: builds.iter().filter(|b| b.cost.is_none()).count(),
            builds: builds.len(),
        }
    }

    /// Why no figure can be made of these nights, if none can.
    fn unmeasured(&self) -> Option<String> {
        if self.builds == 0 {
            return Some(format!(
                "the runner built nothing in the last {} whole night(s), so there is no measured night to scale",
                self.nights
            ));
        }
        (self.unpriced > 0)
            .then(|| format!("{} of the last nights' builds ran on compute with no known rate", self.unpriced))
    }
}

/// A storage price as people write it: `$0.10`, `$0.023`.
fn per_gib_month(price: f64) -> String {
    let text = format!("{price:.3}");
    let text = if text.ends_with('0') { &text[..text.len() - 1] } else { &text };
    format!("${text} a GiB-month")
}

fn figure(cause: &str, what: String, monthly_usd: Option<f64>, basis: String, estimate: bool) -> CostFigure {
    CostFigure { cause: cause.to_owned(), what, monthly_usd, basis, estimate }
}

/// The architectures of a `[nightly] arches` value: `gfx1201,gfx950`.
pub fn architectures(arches: &str) -> usize {
    arches.split(',').map(str::trim).filter(|a| !a.is_empty()).count()
}

/// The nightly builds every architecture: `before` to `after` of them scales what a night cost.
pub fn arches(nights: &Nights, before: usize, after: usize, what: String) -> CostFigure {
    if let Some(why) = nights.unmeasured() {
        return figure("builds", what, None, why, false);
    }
    if before == 0 {
        let why = "the architectures were not set before, so how many the last nights built is not known";
        return figure("builds", what, None, why.to_owned(), false);
    }
    let per_night = nights.runner / f64::from(nights.nights.max(1));
    let per_architecture = per_night / before as f64;
    let monthly = per_architecture * (after as f64 - before as f64) * NIGHTS_PER_MONTH;
    let basis = format!(
        "the last {} whole nights' {} build(s) cost {} ({} a night for {before} architecture(s), {} each); {} \
         architecture(s) more or fewer x {:.1} nights a month",
        nights.nights,
        nights.builds,
        usd(nights.runner),
        usd(per_night),
        usd(per_architecture),
        after as i64 - before as i64,
        NIGHTS_PER_MONTH
    );
    figure("builds", what, Some(monthly), basis, false)
}

/// The rate a build on `compute_type` is billed at here: the report's (the Price List's, or the
/// last known), else the last known one.
fn rate(rates_read: &[Rate], region: &str, compute_type: &str) -> Option<Rate> {
    let usage = rates::usage_type(region, compute_type)?;
    rates_read.iter().find(|r| r.usage_type == usage).cloned().or_else(|| rates::known(&usage))
}

fn rate_text(rate: &Rate) -> String {
    match &rate.source {
        Source::PriceList => format!("${}/min (the Price List)", rate.usd_per_minute),
        Source::Known { as_of, .. } => format!("${}/min (the last known rate, {as_of})", rate.usd_per_minute),
    }
}

/// The runner's default compute changes from `old` to `new`: the same minutes at the new rate.
pub fn compute_type(
    nights: &Nights,
    rates_read: &[Rate],
    region: &str,
    old: &str,
    new: &str,
    what: String,
) -> CostFigure {
    if let Some(why) = nights.unmeasured() {
        return figure("builds", what, None, why, false);
    }
    let minutes = nights.minutes.iter().find(|(compute, _)| compute == old).map_or(0, |(_, m)| *m);
    if minutes == 0 {
        let why = format!("no build ran on {old} in the last {} whole night(s): no minutes to reprice", nights.nights);
        return figure("builds", what, None, why, false);
    }
    let (Some(was), Some(is)) = (rate(rates_read, region, old), rate(rates_read, region, new)) else {
        let missing = if rate(rates_read, region, old).is_none() { old } else { new };
        return figure("builds", what, None, format!("no rate is known for {missing} in {region}"), false);
    };
    let per_night = minutes as f64 / f64::from(nights.nights.max(1));
    let monthly = per_night * (is.usd_per_minute - was.usd_per_minute) * NIGHTS_PER_MONTH;
    let basis = format!(
        "{minutes} minutes on {old} in the last {} whole nights ({per_night:.1} a night) x {:.1} nights a month, at \
         {} instead of {}",
        nights.nights,
        NIGHTS_PER_MONTH,
        rate_text(&is),
        rate_text(&was)
    );
    figure("builds", what, Some(monthly), basis, false)
}

/// How many untagged images a lifecycle policy keeps (its `imageCountMoreThan` rule on untagged
/// images), if it says.
pub fn untagged_kept(policy: &serde_json::Value) -> Option<u64> {
    policy["rules"].as_array()?.iter().find_map(|rule| {
        let selection = &rule["selection"];
        (selection["tagStatus"] == "untagged" && selection["countType"] == "imageCountMoreThan")
            .then(|| selection["countNumber"].as_u64())
            .flatten()
    })
}

/// A repository's lifecycle policy keeps `after` untagged images instead of `before`: that many
/// more (or fewer) at the size its images have now (`images`, `held` bytes).
pub fn kept_untagged(images: u64, held: u64, before: u64, after: u64, price: f64, what: String) -> CostFigure {
    if images == 0 {
        return figure("registry", what, None, "the repository holds no image to size one by".to_owned(), false);
    }
    let each = held as f64 / images as f64;
    let more = after as f64 - before as f64;
    let monthly = more * monthly_cost(each as u64, price);
    let basis = format!(
        "{} untagged image(s) {} kept, at the repository's mean image of {} (its {images} images, {}), at {}",
        more.abs(),
        if more < 0.0 { "fewer" } else { "more" },
        bytes(each as u64),
        bytes(held),
        per_gib_month(price)
    );
    figure("registry", what, Some(monthly), basis, false)
}

/// A repository's lifecycle policy is not the declared one: what the untagged images it holds
/// beyond the declared one's a month from now cost, at the pace the repository was pushed to
/// lately (`pushes` in `days`, each orphaning an image of about `mean`): the figure of a drift
/// while it stays. `live` and `declared`: the bytes each policy would hold then.
pub fn drifted_policy(
    (live, declared): (u64, u64),
    (pushes, days, mean): (u64, u64, u64),
    price: f64,
    what: String,
) -> CostFigure {
    let more = live as f64 - declared as f64;
    let monthly = more.signum() * monthly_cost(live.abs_diff(declared), price);
    let pace = if pushes == 0 {
        "with nothing pushed in the last 30 days".to_owned()
    } else {
        format!("at the last {days} days' pace ({pushes} pushes, each orphaning an image of about {})", bytes(mean))
    };
    let basis = format!(
        "a month from now, {pace}, the live policy would hold {} of untagged images and desired.toml's {}, at {}",
        bytes(live),
        bytes(declared),
        per_gib_month(price)
    );
    figure("registry", what, Some(monthly), basis, false)
}

/// `count` new repositories of a kind: each what the same kind of repository holds for the other
/// targets now (the median of `siblings`' bytes), said as an estimate.
pub fn new_repositories(count: usize, siblings: &[u64], kind: &str, price: f64, what: String) -> CostFigure {
    if siblings.is_empty() {
        let why = format!("no {kind} repository of another target holds images yet to estimate from");
        return figure("registry", what, None, why, true);
    }
    let mut sorted = siblings.to_vec();
    sorted.sort_unstable();
    let median = if sorted.len() % 2 == 1 {
        sorted[sorted.len() / 2] as f64
    } else {
        (sorted[sorted.len() / 2 - 1] + sorted[sorted.len() / 2]) as f64 / 2.0
    };
    let monthly = count as f64 * monthly_cost(median as u64, price);
    let basis = format!(
        "{count} x the median of what the {} other {kind} repositories hold now, {}, at {}",
        sorted.len(),
        bytes(median as u64),
        per_gib_month(price)
    );
    figure("registry", what, Some(monthly), basis, true)
}

/// The cache bucket expires objects after `after` days instead of `before`: its size, which the
/// expiry bounds, scales with it (from its last daily size, `stored`, in `storage`).
pub fn cache_expiry(stored: Option<(u64, &str)>, before: u64, after: u64, what: String) -> CostFigure {
    let Some((held, storage)) = stored else {
        let why = "CloudWatch has no daily size of the bucket in the last days".to_owned();
        return figure("cache", what, None, why, false);
    };
    let Some(price) = s3_price(storage) else {
        return figure("cache", what, None, format!("no price is known for S3's {storage}"), false);
    };
    if before == 0 {
        return figure("cache", what, None, "it expired nothing before: no bound to scale".to_owned(), false);
    }
    let monthly = monthly_cost(held, price) * (after as f64 / before as f64 - 1.0);
    let basis = format!(
        "its last daily size, {}, held under a {before}-day expiry, scaled to {after} days, at {}",
        bytes(held),
        per_gib_month(price)
    );
    figure("cache", what, Some(monthly), basis, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nights(nights: u32, runner: f64, minutes: &[(&str, u64)], builds: usize) -> Nights {
        Nights {
            nights,
            runner,
            minutes: minutes.iter().map(|(c, m)| ((*c).to_owned(), *m)).collect(),
            unpriced: 0,
            builds,
        }
    }

    #[test]
    fn the_nights_are_the_whole_ones_before_today() {
        use crate::report::{BuildRecord, Inputs, report};
        const DAY: i64 = 86_400;
        assert!((NIGHTS_PER_MONTH - 30.4375).abs() < 1e-12);
        let today = 20_000 * DAY;
        let build = |start: i64, minutes: i64, compute: &str| BuildRecord {
            id: format!("b{start}"),
            start: start as f64,
            end: Some((start + minutes * 60) as f64),
            compute_type: compute.to_owned(),
        };
        let rate = rates::known("USE1-Build-Min:Linux:g1.xlarge").unwrap();
        let measured = report(Inputs {
            region: "us-east-1".to_owned(),
            now: today + 3 * 3600,
            days: 8,
            builds: vec![
                build(today - 2 * DAY, 34, "BUILD_GENERAL1_XLARGE"),
                build(today - DAY, 10, "BUILD_GENERAL1_XLARGE"),
                build(today - DAY + 600, 5, "BUILD_GENERAL1_LARGE"),
                // Tonight's, still counting: not a whole night.
                build(today, 30, "BUILD_GENERAL1_XLARGE"),
            ],
            rates: vec![rate],
            ..Inputs::default()
        });
        let nights = Nights::of(&measured);
        assert_eq!(nights.nights, 7);
        assert_eq!(nights.builds, 3);
        // Newest first, as the report lists them.
        assert_eq!(nights.minutes, [("BUILD_GENERAL1_LARGE".to_owned(), 5), ("BUILD_GENERAL1_XLARGE".to_owned(), 44)]);
        assert_eq!(nights.unpriced, 1, "large has no rate in the report");
        assert!((nights.runner - 44.0 * 0.0798).abs() < 1e-9, "{nights:?}");
    }

    #[test]
    fn a_drifted_policy_costs_what_it_holds_beyond_the_declared_one_a_month_ahead() {
        const GIB: u64 = 1 << 30;
        let missing = drifted_policy((450 * GIB, 27 * GIB), (20, 20, 9 * GIB), 0.10, "policy missing".to_owned());
        assert!((missing.monthly_usd.unwrap() - 42.3).abs() < 1e-9, "{missing:?}");
        assert_eq!(
            missing.line(),
            "registry: about +$42.30 a month (policy missing): a month from now, at the last 20 days' pace (20 \
             pushes, each orphaning an image of about 9.0 GiB), the live policy would hold 450.0 GiB of untagged \
             images and desired.toml's 27.0 GiB, at $0.10 a GiB-month"
        );
        // A live policy that holds less (and may expire what desired.toml keeps) costs less.
        let tighter = drifted_policy((GIB, 3 * GIB), (0, 30, GIB), 0.10, "tighter".to_owned());
        assert!((tighter.monthly_usd.unwrap() + 0.2).abs() < 1e-9, "{tighter:?}");
        assert!(tighter.basis.contains("with nothing pushed in the last 30 days"), "{}", tighter.basis);
    }

    #[test]
    fn an_architecture_more_costs_what_one_architectures_nights_cost() {
        // The seeds' week: four builds, $2.71 + $2.71 + $4.39 + $2.71 over seven nights.
        let week = nights(7, 12.52, &[("BUILD_GENERAL1_XLARGE", 157)], 4);
        let one_more = arches(&week, 1, 2, "arches".to_owned());
        let expected = 12.52 / 7.0 * NIGHTS_PER_MONTH;
        assert!((one_more.monthly_usd.unwrap() - expected).abs() < 1e-9, "{one_more:?}");
        assert!(one_more.basis.contains("$1.79 a night for 1 architecture"), "{}", one_more.basis);
        let fewer = arches(&week, 2, 1, "arches".to_owned());
        assert!((fewer.monthly_usd.unwrap() + expected / 2.0).abs() < 1e-9);
        assert_eq!(architectures("gfx1201, gfx950,,,"), 2);
        let two_more = arches(&week, 1, 3, "arches".to_owned());
        assert!((two_more.monthly_usd.unwrap() - 2.0 * expected).abs() < 1e-9);
        // No build: said, never a zero.
        let none = arches(&nights(7, 0.0, &[], 0), 1, 2, "arches".to_owned());
        assert_eq!(none.monthly_usd, None);
        assert!(none.basis.contains("built nothing in the last 7 whole night(s)"), "{}", none.basis);
        let unpriced = Nights { unpriced: 1, ..week.clone() };
        assert_eq!(arches(&unpriced, 1, 2, String::new()).monthly_usd, None);
        assert_eq!(arches(&week, 0, 1, String::new()).monthly_usd, None);
    }

    #[test]
    fn another_compute_type_reprices_the_same_minutes() {
        let week = nights(7, 12.52, &[("BUILD_GENERAL1_XLARGE", 157), ("BUILD_GENERAL1_LARGE", 10)], 5);
        let bigger =
            compute_type(&week, &[], "us-east-1", "BUILD_GENERAL1_XLARGE", "BUILD_GENERAL1_2XLARGE", String::new());
        let expected = 157.0 / 7.0 * (0.2 - 0.0798) * NIGHTS_PER_MONTH;
        assert!((bigger.monthly_usd.unwrap() - expected).abs() < 1e-9, "{bigger:?}");
        assert!(bigger.basis.contains("the last known rate, 2026-11-12"), "{}", bigger.basis);
        let read = Rate {
            usage_type: "USE1-Build-Min:Linux:g1.2xlarge".to_owned(),
            usd_per_minute: 0.25,
            source: Source::PriceList,
        };
        let priced =
            compute_type(&week, &[read], "us-east-1", "BUILD_GENERAL1_XLARGE", "BUILD_GENERAL1_2XLARGE", String::new());
        assert!((priced.monthly_usd.unwrap() - 157.0 / 7.0 * (0.25 - 0.0798) * NIGHTS_PER_MONTH).abs() < 1e-9);
        let unknown = compute_type(&week, &[], "us-east-1", "BUILD_GENERAL1_XLARGE", "BUILD_LAMBDA_1GB", String::new());
        assert_eq!(unknown.monthly_usd, None);
        assert!(unknown.basis.contains("no rate is known for BUILD_LAMBDA_1GB"), "{}", unknown.basis);
        let unused =
            compute_type(&week, &[], "us-east-1", "BUILD_GENERAL1_SMALL", "BUILD_GENERAL1_2XLARGE", String::new());
        assert!(unused.basis.contains("no build ran on BUILD_GENERAL1_SMALL"), "{}", unused.basis);
        let none = nights(7, 0.0, &[], 0);
        assert_eq!(compute_type(&none, &[], "us-east-1", "A", "B", String::new()).monthly_usd, None);
    }

    #[test]
    fn keeping_more_untagged_images_holds_more_of_them_at_their_size() {
        let policy = json!({ "rules": [
            { "selection": { "tagStatus": "tagged", "countType": "imageCountMoreThan", "countNumber": 9 } },
            { "selection": { "tagStatus": "untagged", "countType": "imageCountMoreThan", "countNumber": 3 } },
        ]});
        assert_eq!(untagged_kept(&policy), Some(3));
        assert_eq!(untagged_kept(&json!({ "rules": [] })), None);
        let more = kept_untagged(4, 40_000_000_000, 3, 10, 0.10, String::new());
        assert!((more.monthly_usd.unwrap() - 7.0 * monthly_cost(10_000_000_000, 0.10)).abs() < 1e-9, "{more:?}");
        assert!(more.basis.contains("7 untagged image(s) more kept"), "{}", more.basis);
        let fewer = kept_untagged(4, 40_000_000_000, 10, 3, 0.10, String::new());
        assert!(fewer.monthly_usd.unwrap() < 0.0 && fewer.basis.contains("fewer"));
        assert_eq!(kept_untagged(0, 0, 3, 10, 0.10, String::new()).monthly_usd, None);
    }

    #[test]
    fn a_new_repository_is_estimated_from_its_siblings_median() {
        let odd = new_repositories(1, &[3_000_000_000, 1_000_000_000, 2_000_000_000], "image", 0.10, String::new());
        let two = monthly_cost(2_000_000_000, 0.10);
        assert!((odd.monthly_usd.unwrap() - two).abs() < 1e-9 && odd.estimate, "{odd:?}");
        assert!(odd.basis.starts_with("1 x the median of what the 3 other image repositories"), "{}", odd.basis);
        assert!(odd.basis.ends_with("at $0.10 a GiB-month"), "{}", odd.basis);
        assert_eq!(per_gib_month(0.023), "$0.023 a GiB-month");
        let five = new_repositories(1, &[5, 1, 2_000_000_000, 4, 3_000_000_000], "image", 0.10, String::new());
        assert!((five.monthly_usd.unwrap() - monthly_cost(5, 0.10)).abs() < 1e-15, "the middle of five");
        let even = new_repositories(2, &[1_000_000_000, 3_000_000_000], "cache", 0.10, String::new());
        assert!((even.monthly_usd.unwrap() - 2.0 * two).abs() < 1e-9);
        let none = new_repositories(1, &[], "cache", 0.10, String::new());
        assert_eq!((none.monthly_usd, none.estimate), (None, true));
    }

    #[test]
    fn a_longer_expiry_holds_the_cache_longer() {
        let longer = cache_expiry(Some((45_000_000_000, "StandardStorage")), 30, 60, String::new());
        assert!((longer.monthly_usd.unwrap() - monthly_cost(45_000_000_000, 0.023)).abs() < 1e-9, "{longer:?}");
        let triple = cache_expiry(Some((45_000_000_000, "StandardStorage")), 30, 90, String::new());
        assert!((triple.monthly_usd.unwrap() - 2.0 * monthly_cost(45_000_000_000, 0.023)).abs() < 1e-9);
        let shorter = cache_expiry(Some((45_000_000_000, "StandardStorage")), 30, 15, String::new());
        assert!(shorter.monthly_usd.unwrap() < 0.0);
        assert_eq!(cache_expiry(None, 30, 60, String::new()).monthly_usd, None);
        assert_eq!(cache_expiry(Some((1, "Mystery")), 30, 60, String::new()).monthly_usd, None);
        assert_eq!(cache_expiry(Some((1, "StandardStorage")), 0, 60, String::new()).monthly_usd, None);
    }
}
