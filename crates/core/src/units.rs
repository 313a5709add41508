//! One meaning of a gigabyte, and of a dollar figure, in every output.
//!
//! AWS bills storage by the GB-month with a GB of 2^30 bytes (a gibibyte), so every size is shown
//! in binary units labelled as such (`738.0 GiB`) and every price is per GiB-month: the figures
//! on one line multiply out (738.0 GiB at $0.10 is $73.80).

/// Bytes in a GiB: what AWS's storage prices call a GB.
pub const GIB: f64 = 1_073_741_824.0;

/// A size in binary units, one decimal: `512 B`, `1.5 KiB`, `738.0 GiB`.
pub fn bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    // Rounded as shown: 1023.96 MiB shows as 1.0 GiB, not 1024.0 MiB.
    while (value * 10.0).round() / 10.0 >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// What storing `bytes` for a month costs at `usd_per_gib_month`, in dollars.
pub fn monthly_cost(bytes: u64, usd_per_gib_month: f64) -> f64 {
    bytes as f64 / GIB * usd_per_gib_month
}

/// Dollars, to the cent: `$73.80`. A -0.0 (an empty sum, a tiny credit rounded) shows as `$0.00`.
pub fn usd(dollars: f64) -> String {
    format!("${:.2}", dollars + 0.0)
}

/// `value` rounded to `places` decimals, for JSON: adding zero makes a -0.0 0.0.
pub fn rounded(value: f64, places: i32) -> f64 {
    let scale = 10f64.powi(places);
    (value * scale).round() / scale + 0.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_binary_and_labelled_so() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1024), "1.0 KiB");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(347 * (1 << 30)), "347.0 GiB");
        assert_eq!(bytes((1 << 30) - 1), "1.0 GiB");
        assert_eq!(bytes(5 * (1 << 40)), "5.0 TiB");
        assert_eq!(bytes(u64::MAX), "16384.0 PiB");
    }

    #[test]
    fn a_size_and_its_price_multiply_out() {
        let size = 738 * (1 << 30);
        assert_eq!(
            format!("{} at $0.10 a GiB-month is {}", bytes(size), usd(monthly_cost(size, 0.10))),
            "738.0 GiB at $0.10 a GiB-month is $73.80"
        );
        assert_eq!(usd(-0.0), "$0.00");
        assert_eq!(rounded(-0.00001, 4).to_string(), "0");
        assert_eq!(rounded(2.38064, 4), 2.3806);
    }
}
