//! `bench`: the benchmarks of ARCHITECTURE.md §12, each printing its numbers next to its budget.
//!
//! Each benchmark is a `harness = false` bench target that measures ratios over several runs (the machine is
//! noisy), so the numbers mean the same on a developer's laptop and on CI.

use std::path::Path;
use std::process::Command;

use anyhow::Result;

use crate::ci::run;

/// The bench targets, as (package, bench) pairs.
const BENCHES: &[(&str, &str)] = &[("efrd", "model_parse"), ("efrd", "store"), ("efrd", "daemon")];

/// Runs every benchmark in release mode.
pub fn bench(_root: &Path) -> Result<()> {
    for (package, bench) in BENCHES {
        run(
            &format!("bench {package}/{bench}"),
            Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
                .args(["bench", "--locked", "-p", package, "--bench", bench]),
        )?;
    }
    Ok(())
}
