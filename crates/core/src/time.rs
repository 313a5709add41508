//! Times for people: a Unix time as a civil date, in UTC, whatever it is (a lock's lease, a
//! report's date, a chart's label). Pure, but for [`now`], the one place the clock is read.

/// Now, in Unix seconds (0 for a clock set before 1970).
pub fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

/// `YYYY-MM-DD` of a Unix time (civil-from-days, proleptic Gregorian).
pub fn day(seconds: i64) -> String {
    let days = seconds.div_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// `YYYY-MM-DDTHH:MM:SSZ` (ISO 8601, UTC) of a Unix time.
pub fn date_time(seconds: i64) -> String {
    let of_day = seconds.rem_euclid(86_400);
    format!("{}T{:02}:{:02}:{:02}Z", day(seconds), of_day / 3600, of_day % 3600 / 60, of_day % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_are_civil_dates() {
        assert_eq!(day(0), "1970-01-01");
        assert_eq!(day(1_795_996_800), "2026-11-30");
        assert_eq!(day(951_782_400), "2000-02-29");
        // The edges of the calendar's years (they begin on 1 March) and centuries.
        for (seconds, expected) in [
            (951_868_800, "2000-03-01"),
            (4_107_456_000, "2100-02-28"),
            (4_107_542_400, "2100-03-01"),
            (-2_203_891_200, "1900-03-01"),
            (13_574_563_200, "2400-02-29"),
            (946_598_400, "1999-12-31"),
        ] {
            assert_eq!(day(seconds), expected, "{seconds}");
        }
    }

    #[test]
    fn a_time_is_its_day_and_its_clock_in_utc() {
        assert_eq!(date_time(0), "1970-01-01T00:00:00Z");
        assert_eq!(date_time(1_795_996_800 + 3_661), "2026-11-30T01:01:01Z");
        assert_eq!(date_time(86_399), "1970-01-01T23:59:59Z");
        assert_eq!(date_time(-1), "1969-12-31T23:59:59Z");
        // The end of time is a date too, never a bare number.
        assert!(date_time(i64::MAX).ends_with('Z'));
        assert!(date_time(i64::MIN).ends_with('Z'));
    }

    #[test]
    fn now_is_the_clocks_time() {
        let clock = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
        assert!((now() - clock).abs() <= 1, "{} vs {clock}", now());
    }
}
