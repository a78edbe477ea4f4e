//! What the launcher's benches share: where they run, and timing one whole process.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Bubblewrap's path, a temporary folder of the bench (named `prefix…`, under cargo's target tmp dir) and an empty
/// `project` folder in it.
///
/// # Errors
/// bubblewrap is missing, or a folder cannot be made.
pub fn workspace(prefix: &str) -> Result<(PathBuf, tempfile::TempDir, PathBuf), String> {
    let bwrap = PathBuf::from("/usr/bin/bwrap");
    if !bwrap.exists() {
        return Err("bubblewrap is not installed at /usr/bin/bwrap".into());
    }
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .map_err(|e| e.to_string())?;
    let project = dir.path().join("project");
    std::fs::create_dir(&project).map_err(|e| e.to_string())?;
    Ok((bwrap, dir, project))
}

/// Runs a command to its end and returns how long it took; a failed run is an error (a broken sandbox is not fast).
pub fn time(command: &mut Command) -> Result<Duration, String> {
    let started = Instant::now();
    let status = command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| e.to_string())?;
    let elapsed = started.elapsed();
    if !status.success() {
        return Err(format!("{command:?} failed: {status}"));
    }
    Ok(elapsed)
}
