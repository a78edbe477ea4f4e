//! A Python virtual environment made from PyPI, for tests that drive a client written in Python (the reference phone
//! client, `tests/phone/phone.py`).

use std::hash::{Hash as _, Hasher as _};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result, bail};

/// The Python interpreter of a virtual environment under `root` with the packages of the pip requirements file
/// `requirements` installed; made once per content of that file (with `python3 -m venv` and `pip install`), then
/// reused.
///
/// # Errors
/// When the requirements file cannot be read, `python3 -m venv` fails (install python3-venv) or pip cannot install
/// the packages (PyPI unreachable).
pub fn venv(root: &Path, requirements: &Path) -> Result<PathBuf> {
    let wanted =
        std::fs::read_to_string(requirements).with_context(|| format!("cannot read {}", requirements.display()))?;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    wanted.hash(&mut hasher);
    let dir = root.join(format!("venv-{:016x}", hasher.finish()));
    let python = dir.join("bin/python");
    if dir.join("ready").exists() {
        return Ok(python);
    }
    std::fs::create_dir_all(root).with_context(|| format!("cannot create {}", root.display()))?;
    // Made aside and renamed into place, so that a test never sees a half-made environment.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.subsec_nanos());
    let making = root.join(format!("venv-making-{}-{nanos:08x}", std::process::id()));
    run(
        Command::new("python3").arg("-m").arg("venv").arg(&making),
        "python3 -m venv (apt-get install python3-venv)",
    )?;
    run(
        Command::new(making.join("bin/python"))
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(requirements),
        "pip install from PyPI",
    )?;
    std::fs::write(making.join("ready"), &wanted)?;
    if std::fs::rename(&making, &dir).is_err() {
        // Another test made it first.
        let _ = std::fs::remove_dir_all(&making);
    }
    if !dir.join("ready").exists() {
        bail!("the virtual environment {} is not ready", dir.display());
    }
    Ok(python)
}

fn run(command: &mut Command, what: &str) -> Result<()> {
    let output = command.output().with_context(|| format!("{what} does not start"))?;
    if !output.status.success() {
        bail!("{what} failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    Ok(())
}
