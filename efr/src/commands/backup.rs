//! `efr backup PATH [--json]`: admin.backup — efrd writes a consistent copy of its event log (`efr.db`) while it
//! runs.
//!
//! ```text
//! backup written: /home/me/backups/efr.db (18.0 MiB, 41210 events, mode 0600)
//! ```
//!
//! A relative PATH is taken from efr's working directory (efrd's is not the user's). PATH must not exist: efrd
//! never overwrites; its refusal prints `efr: <message>` and exits 1. How to restore: docs/operations.md, "Backup
//! and restore".

use std::path::Path;
use std::process::ExitCode;

use efr_protocol::wire::{AdminBackupParams, AdminBackupResult};
use serde_json::json;

use super::{read, run_unary};

/// Runs `efr backup PATH`.
pub async fn run(path: &Path, json: bool) -> ExitCode {
    let path = match std::path::absolute(path) {
        Ok(path) => path,
        Err(error) => {
            crate::report::error(&format!("cannot resolve {}: {error}", path.display()));
            return ExitCode::from(crate::report::FAILED);
        }
    };
    let params = json!(AdminBackupParams { path });
    run_unary("admin.backup", params, json, None, |value| {
        let result: AdminBackupResult = read("admin.backup", value)?;
        crate::out::println(&render(&result));
        Ok(())
    })
    .await
}

/// The readable line of a backup's result.
#[must_use]
pub fn render(result: &AdminBackupResult) -> String {
    format!(
        "backup written: {} ({}, {} events, mode 0600)",
        result.path.display(),
        size(result.bytes),
        result.events
    )
}

/// `bytes` in the largest binary unit that keeps the number at 1 or more, one decimal.
pub(crate) fn size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    #[allow(clippy::cast_precision_loss)] // A size shown with one decimal.
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(size(900), "900 bytes");
        assert_eq!(size(18_874_368), "18.0 MiB");
        assert_eq!(size(1536), "1.5 KiB");
    }
}
