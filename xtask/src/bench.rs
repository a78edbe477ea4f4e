//! `bench`: the benchmarks of docs/architecture.md, "Budgets", each printing its numbers next to its budget.
//!
//! Each benchmark is a `harness = false` bench target that measures ratios over several runs (the machine is
//! noisy), so the numbers mean the same on a developer's laptop and on CI. A bench exits non-zero when a budget
//! fails; `bench` runs them all anyway and fails at the end, naming the ones over budget.

use std::path::Path;
use std::process::Command;

use anyhow::{Result, bail};

/// The bench targets, as (package, bench) pairs.
const BENCHES: &[(&str, &str)] = &[
    ("efr-model", "model_parse"),
    ("efr-store", "store"),
    ("efrd", "daemon"),
    ("efr-snapshot", "undo"),
    ("efrd", "phone"),
    ("efrd", "exits"),
    ("efrd", "context"),
    ("efrd", "jobs"),
    ("efrd", "drafts"),
    ("efrd", "search"),
    ("efrd", "index"),
    ("efr-launcher", "contained_true"),
    ("efr-launcher", "contained_read"),
    ("efr-proxy", "tunnel"),
    ("efr-bus-proxy", "roundtrip"),
];

/// Runs every benchmark in release mode.
pub fn bench(_root: &Path) -> Result<()> {
    let mut over = Vec::new();
    for (package, bench) in BENCHES {
        println!("==> bench {package}/{bench}");
        let status = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
            .args(["bench", "--locked", "-p", package, "--bench", bench])
            .status()?;
        if !status.success() {
            over.push(format!("{package}/{bench}"));
        }
    }
    if !over.is_empty() {
        bail!("over budget (or failed): {}", over.join(", "));
    }
    println!("every budget holds");
    Ok(())
}

/// `soak`: the long soak run on a release efrd (`efrd/benches/soak.rs`), on demand; `args` go to it (`--turns N`,
/// `--minutes M`, `--clients C`).
pub fn soak(args: &[String]) -> Result<()> {
    let status = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["bench", "--locked", "-p", "efrd", "--bench", "soak", "--"])
        .args(args)
        .status()?;
    if !status.success() {
        bail!("the soak run failed or a budget does not hold ({status})");
    }
    Ok(())
}
