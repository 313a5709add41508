//! Fuzzes reading a bake file (`--bake`, JSON or HCL): a pull request can change it, so any bytes
//! at all must end in registry references or in an error message, never a panic or a hang.

#![no_main]

use libfuzzer_sys::fuzz_target;
use reconcile_bake as bake;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    // A variable set in the environment, as the nightly sets the registry.
    let env = |name: &str| (name == "ECR_REGISTRY").then(|| "123456789012.dkr.ecr.us-east-1.amazonaws.com".to_owned());
    if let Ok(references) = bake::read(text, &env) {
        let declared = std::collections::BTreeSet::from(["pytorch"]);
        let _ = bake::check("bake.hcl", &references, &declared, reconcile_ecr::REPOSITORY, "us-east-1", None);
        let _ = bake::check(
            "bake.hcl",
            &references,
            &declared,
            reconcile_ecr::REPOSITORY,
            "us-east-1",
            Some("123456789012"),
        );
    }
});
