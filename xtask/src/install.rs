//! `cargo xtask install`: installs the five programs of efr — `efr`, `efrd`, `efr-launcher`, `efr-proxy` and
//! `efr-bus-proxy` — with `cargo install --path <crate> --locked` (into `~/.cargo/bin`, or `--root DIR`). efrd finds
//! its helpers next to itself, so the five go to the same folder: without efr-bus-proxy, auto's calls would get no bus
//! filter.

use std::path::Path;

use anyhow::{Result, bail};

/// The crates installed, in order (each one's binary has the crate's name).
pub const CRATES: [&str; 5] = ["efr-launcher", "efr-proxy", "efr-bus-proxy", "efrd", "efr"];

/// Runs `cargo install` for each crate; `args` may be `--root DIR`.
pub fn install(root: &Path, args: &[&str]) -> Result<()> {
    let install_root = match args {
        [] => None,
        ["--root", dir] => Some(*dir),
        _ => bail!("usage: cargo xtask install [--root DIR]"),
    };
    for krate in CRATES {
        let mut command = crate::cmd::cargo();
        command.args(["install", "--locked", "--path"]).arg(root.join(krate));
        if let Some(dir) = install_root {
            command.args(["--root", dir]);
        }
        crate::cmd::run(&format!("cargo install {krate}"), &mut command)?;
    }
    println!("==> installed {}; next: `efr daemon install`", CRATES.join(", "));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every workspace member that builds a program a user runs (a `src/main.rs`) is installed; only the test
    /// support's scripted model server and xtask itself are not.
    #[test]
    fn every_program_of_the_workspace_is_installed() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
        let members = manifest
            .split("members = [")
            .nth(1)
            .and_then(|rest| rest.split(']').next())
            .unwrap();
        let mut programs: Vec<&str> = members
            .split(',')
            .map(|member| member.trim().trim_matches('"'))
            .filter(|member| !member.is_empty() && !["xtask", "tests"].contains(member))
            .filter(|member| root.join(member).join("src/main.rs").exists())
            .collect();
        programs.sort_unstable();
        let mut installed = CRATES.to_vec();
        installed.sort_unstable();
        assert_eq!(programs, installed);
    }
}
