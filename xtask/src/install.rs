//! `cargo xtask install`: installs the binaries a user runs — `efr`, `efrd`, `efr-launcher` and `efr-proxy` — with
//! `cargo install --path <crate> --locked` (into `~/.cargo/bin`, or `--root DIR`). efrd finds efr-launcher and
//! efr-proxy next to itself, so the four go to the same folder.

use std::path::Path;

use anyhow::{Result, bail};

/// The crates installed, in order (each one's binary has the crate's name).
const CRATES: [&str; 4] = ["efr-launcher", "efr-proxy", "efrd", "efr"];

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
    println!("==> installed efr, efrd, efr-launcher and efr-proxy; next: `efr daemon install`");
    Ok(())
}
