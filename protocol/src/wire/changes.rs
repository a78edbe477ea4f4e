//! What the agent changed in files: `file_change` and `file_changes`.
//!
//! Source: docs/protocol.md, "The contract": "what the agent changed in files" and "a file tool's call can change
//! several files". They appear in tool_call_completed, turn_completed, turn_failed, turn_interrupted and
//! conversation.diff.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::macros::{is_false, wire_enum};

wire_enum! {
    /// How a file changed.
    pub enum FileChangeKind {
        /// The file is new.
        Added = "added",
        /// The file's content changed.
        Modified = "modified",
        /// The file is gone.
        Deleted = "deleted",
        /// The file moved (`from` names where it was).
        Renamed = "renamed",
    }
}

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FileChange {
    /// The path as a client shows it: relative to the turn's project root, under `$SCRATCH/`, under `~/`, or absolute.
    pub path: PathBuf,
    /// How it changed.
    pub kind: FileChangeKind,
    /// For `renamed`: the path it had, in the same form as `path`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<PathBuf>,
    /// Lines added.
    pub added: u64,
    /// Lines removed.
    pub removed: u64,
    /// A binary file: `added` and `removed` are 0 (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub binary: bool,
    /// Possibly another turn's change: it happened while another turn ran in the same project and no call of this
    /// turn is known to have made it (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub maybe_other: bool,
}

/// The changed files of a call, a turn or a diff.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FileChanges {
    /// At most 50 files, sorted by path.
    pub files: Vec<FileChange>,
    /// How many files `files` leaves out.
    pub more: u64,
    /// Lines added over every changed file, those left out included.
    pub added: u64,
    /// Lines removed over every changed file, those left out included.
    pub removed: u64,
}

impl FileChanges {
    /// The most files that `files` lists (spec: "at most 50 and sorted by path").
    pub const MAX_FILES: usize = 50;
}
