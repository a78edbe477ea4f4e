//! Full mode's reports in admin.status: whether the config allows it, why the daemon refuses it, and a loosening
//! change of `config.toml` that waits while it runs.
//!
//! Source: docs/protocol.md, "The contract": "full mode" (the wire enum full_refusal: root, snapshot_off, undo_off,
//! no_zsh; admin.status's `full_mode` with `allowed` and `refused`; the config object's `held` with `loosens`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::macros::wire_enum;

wire_enum! {
    /// Why the daemon refuses full mode although `permissions.allow_full` is true (frozen in `full_refusals.json`).
    pub enum FullRefusal {
        /// efrd runs as root.
        Root = "root",
        /// The turns' snapshots cannot be taken, so a full turn could not be undone.
        SnapshotOff = "snapshot_off",
        /// Undo is off (`[undo] enabled = false`).
        UndoOff = "undo_off",
        /// The hidden shell is zsh, whose syntax the floors' parser does not read.
        NoZsh = "no_zsh",
    }
    unknown
}

/// admin.status `full_mode`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FullModeStatus {
    /// `permissions.allow_full`.
    pub allowed: bool,
    /// Why the daemon refuses full mode; absent when it does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<FullRefusal>,
}

/// admin.status `config.held`: a change of `config.toml` that loosens permissions and came while full mode ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HeldConfig {
    /// The dotted config keys that loosen.
    pub loosens: Vec<String>,
}
