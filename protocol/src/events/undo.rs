//! The events of undo: snapshot_taken (a turn's snapshot of one root) and undo_applied (an undo or redo, which
//! belongs to no turn).
//!
//! Source: docs/protocol.md, "The contract": "undo of a turn (phase B)".

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::TurnId;
use crate::macros::{is_false, wire_enum};
use crate::wire::Origin;

wire_enum! {
    /// Which of a turn's snapshots.
    pub enum SnapshotPhase {
        /// Before the turn's first call that can write.
        Pre = "pre",
        /// At the turn's end.
        Post = "post",
    }
    unknown
}

/// snapshot_taken: a turn took a snapshot of one root it could write. The spec's `turn_id` is the envelope's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SnapshotTaken {
    /// The root as a client shows it (`.` for the project, `$SCRATCH`, or absolute).
    pub root: String,
    /// Which snapshot.
    pub phase: SnapshotPhase,
    /// The snapshot's id in efr's store.
    pub commit: String,
    /// Files it covers.
    pub files: u64,
    /// Entries it could not record or store (unreadable, over a bound, build outputs).
    pub skipped: u64,
    /// How long it took, in milliseconds.
    pub ms: u64,
}

/// undo_applied: an undo (or redo) of a turn wrote files. The spec's `conversation_id` is the envelope's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UndoApplied {
    /// The turn undone (or redone).
    pub undone_turn_id: TurnId,
    /// The undo's id.
    pub undo_id: String,
    /// A redo.
    pub redo: bool,
    /// Who asked.
    pub origin: Origin,
    /// Paths restored.
    pub restored: u64,
    /// Paths moved to the trash.
    pub trashed: u64,
    /// Paths deleted.
    pub deleted: u64,
    /// Paths changed since the turn.
    pub conflicts: u64,
    /// Paths undo could not restore.
    pub not_covered: u64,
    /// Git refs moved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refs: Option<u64>,
    /// The folder of efr's trash that holds what was moved there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trash: Option<String>,
    /// A write failed and the undo stopped (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub stopped: bool,
}
