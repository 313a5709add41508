//! Fuzzes reading desired.toml: any bytes at all must end in a parsed file or in located
//! errors, never in a panic, a hang or unbounded memory.

#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use reconcile_core::Desired;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match Desired::parse(Path::new("desired.toml"), text) {
        Ok(desired) => {
            // What a valid file declares renders without panicking.
            for bucket in &desired.s3.buckets {
                let _ = bucket.name.render("123456789012", &desired.region);
            }
        }
        Err(errors) => {
            assert!(!errors.0.is_empty());
            let _ = errors.to_string();
        }
    }
});
