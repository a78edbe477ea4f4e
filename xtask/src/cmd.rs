//! Running the commands xtask drives: cargo and the other tools, each named when it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// Runs a command, failing with its name when it fails.
pub fn run(name: &str, command: &mut Command) -> Result<()> {
    println!("==> {name}");
    let status = command.status().with_context(|| format!("cannot start {name}"))?;
    if !status.success() {
        bail!("{name} failed ({status})");
    }
    Ok(())
}

/// The cargo that runs xtask (`$CARGO`), so a toolchain chosen by rustup applies to what xtask starts.
pub fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// Where the build goes when the workspace sits under `/tmp`: a contained call gets a private `/tmp`, so a launcher
/// built there would be hidden inside its own sandbox (efr-launcher refuses that plan, rightly). `/var/tmp` is seen.
pub fn target_outside_tmp(root: &Path) -> Option<PathBuf> {
    if std::env::var_os("CARGO_TARGET_DIR").is_some() || !root.starts_with("/tmp") {
        return None;
    }
    let name: String = root
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    Some(Path::new("/var/tmp/efr-target").join(name))
}
