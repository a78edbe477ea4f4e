//! What the launcher's benches share: timing one whole process and the median of runs.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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

/// The median of `runs` (sorted in place).
pub fn median(runs: &mut [Duration]) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}
