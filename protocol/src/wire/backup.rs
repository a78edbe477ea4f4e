//! admin.backup: a consistent copy of the event log while the daemon runs (`efr backup`).
//!
//! Source: docs/protocol.md, the changelog entry on admin.backup, and docs/operations.md, "Backup and restore".

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// admin.backup params (scope admin, no command id: a backup changes no log, and a second send of the same path is
/// refused because the file exists).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AdminBackupParams {
    /// Where the copy goes: an absolute path that must not exist, in a folder that exists. A relative path is
    /// `invalid`, an existing file `conflict`, a missing folder `not_found`, a folder that cannot be written
    /// `invalid`, a full disk `unavailable`; in each case nothing is written.
    pub path: PathBuf,
}

/// admin.backup result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AdminBackupResult {
    /// The copy (mode 0600), as given.
    pub path: PathBuf,
    /// The copy's size in bytes.
    pub bytes: u64,
    /// The events that the copy holds: every event committed when the copy began.
    pub events: u64,
}
