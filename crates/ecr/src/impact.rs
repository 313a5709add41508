//! What a lifecycle policy the plan puts will expire when it first runs, as the plan shows it:
//! the line a reviewer needs, the numbers for the JSON plan, and what it saves a month.

use crate::expiry::Expiry;
use reconcile_core::Impact;
use reconcile_core::units::{bytes as human_bytes, usd};
use serde_json::json;

use crate::usage::monthly_cost;

/// The plan's impact line of a policy that expires `expiry`, priced at `price_per_gb_month`.
pub(crate) fn impact(expiry: &Expiry, price_per_gb_month: f64) -> Impact {
    let saving = monthly_cost(expiry.bytes, price_per_gb_month);
    let numbers = json!({
        "images": expiry.images,
        "bytes": expiry.bytes,
        "tagged": expiry.tagged,
        "archived": expiry.archived,
        "monthly_saving_usd": (saving * 100.0).round() / 100.0,
    });
    Impact {
        context: "when it first runs, the policy".to_owned(),
        line: describe(expiry, saving),
        alarming: !expiry.tagged.is_empty(),
        numbers: reconcile_core::json::object(numbers),
    }
}

/// The line a reviewer needs: `expires 11 untagged images, 412.3 GB (about $38.40 a month); no
/// tagged image`.
fn describe(expiry: &Expiry, monthly_saving: f64) -> String {
    if expiry.images == 0 && expiry.archived == 0 {
        return "expires no image".to_owned();
    }
    let saving = if monthly_saving > 0.0 { format!(" (about {} a month)", usd(monthly_saving)) } else { String::new() };
    let mut line = match expiry.images {
        0 => "expires no image".to_owned(),
        1 => format!("expires 1 image, {}{saving}", human_bytes(expiry.bytes)),
        n => format!("expires {n} images, {}{saving}", human_bytes(expiry.bytes)),
    };
    if expiry.tagged.is_empty() {
        if expiry.images > 0 {
            line = line.replacen(" image", " untagged image", 1);
        }
        line.push_str("; no tagged image");
    } else {
        line.push_str(&format!("; TAGGED: {}", expiry.tagged.join(", ")));
    }
    if expiry.archived > 0 {
        line.push_str(&format!("; archives {}", expiry.archived));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expiry(images: u64, bytes: u64, tagged: &[&str], archived: u64) -> Expiry {
        Expiry { images, bytes, tagged: tagged.iter().map(|t| (*t).to_owned()).collect(), archived }
    }

    #[test]
    fn an_expiry_reads_as_one_line() {
        assert_eq!(describe(&expiry(0, 0, &[], 0), 0.0), "expires no image");
        assert_eq!(describe(&expiry(0, 0, &[], 2), 0.0), "expires no image; no tagged image; archives 2");
        assert_eq!(describe(&expiry(1, 5, &[], 0), 0.0), "expires 1 untagged image, 5 B; no tagged image");
        assert_eq!(
            describe(&expiry(11, 4123 * (1 << 30) / 10, &[], 0), 0.0),
            "expires 11 untagged images, 412.3 GiB; no tagged image"
        );
        assert_eq!(
            describe(&expiry(2, 2048, &["a", "b"], 3), 0.0),
            "expires 2 images, 2.0 KiB; TAGGED: a, b; archives 3"
        );
        assert_eq!(
            describe(&expiry(3, 3 << 30, &[], 0), 0.30),
            "expires 3 untagged images, 3.0 GiB (about $0.30 a month); no tagged image"
        );
    }

    #[test]
    fn the_impact_prices_what_it_frees_and_alarms_on_a_tag() {
        let freed = impact(&expiry(7, 1 << 30, &[], 0), 0.10);
        assert_eq!(freed.context, "when it first runs, the policy");
        assert_eq!(freed.line, "expires 7 untagged images, 1.0 GiB (about $0.10 a month); no tagged image");
        assert!(!freed.alarming);
        assert_eq!(
            serde_json::Value::Object(freed.numbers),
            json!({"images": 7, "bytes": 1u64 << 30, "tagged": [], "archived": 0, "monthly_saving_usd": 0.1})
        );
        let tagged = impact(&expiry(1, 10, &["nightly"], 0), 0.10);
        assert!(tagged.alarming);
        assert_eq!(tagged.numbers["monthly_saving_usd"], json!(0.0));
    }
}
