//! efr's trash: `trash.list` and `trash.restore`, the files a forced undo moved away rather than overwrite.
//!
//! Source: docs/protocol.md, "The contract": "the trash"; how long the trash keeps a file and how much it holds is in
//! `docs/undo.md` ("The trash").

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::{CommandId, Timestamp};
use crate::macros::is_zero;

/// trash.list params (scope read, unary): none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TrashListParams {}

/// One file in the trash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TrashEntry {
    /// The entry's id for trash.restore: `<folder>/<path below its root>`, where the folder is the undo's
    /// (`undo-<hex>`, with `.<n>` for a root after the project).
    pub id: String,
    /// The undo that moved it there.
    pub undo_id: String,
    /// Where it was, absolute: where trash.restore puts it back.
    pub path: String,
    /// Its size in bytes (a symlink: its target's length).
    pub size: u64,
    /// When the undo moved it there.
    pub trashed_at: Timestamp,
    /// When the trash removes it (config `[undo] trash_days` after `trashed_at`); it may go earlier when the trash is
    /// over `[undo] trash_max_bytes` (the oldest undos go first).
    pub expires_at: Timestamp,
}

/// trash.list result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TrashListResult {
    /// The files, newest undo first, each undo's in path order; at most 500.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entries: Vec<TrashEntry>,
    /// Entries that `entries` leaves out.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub entries_more: u64,
    /// The bytes the trash holds now.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bytes: u64,
    /// The most bytes it holds (config `[undo] trash_max_bytes`).
    pub max_bytes: u64,
    /// How many days it keeps a file (config `[undo] trash_days`).
    pub days: u64,
}

impl TrashListResult {
    /// The most entries a result carries.
    pub const MAX_ENTRIES: usize = 500;
}

/// trash.restore params (scope operate, unary, with a command id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TrashRestoreParams {
    /// The write's id.
    pub command_id: CommandId,
    /// The entry (`id` of trash.list).
    pub id: String,
    /// Where to put the file, absolute; absent: where it was. Nothing there is ever overwritten: a path that exists
    /// is a `conflict`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
}

/// trash.restore result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TrashRestoreResult {
    /// The entry restored.
    pub id: String,
    /// Where the file is now, absolute.
    pub path: String,
}
