//! Undo of a turn: `turn.undo` (params, result, refusals), and the undo summary of a turn's end events.
//!
//! Source: docs/protocol.md, "The contract": "undo of a turn (phase B)"; what undo covers and why is in
//! `docs/undo.md`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::{CommandId, ConversationId, TurnId};
use crate::macros::{is_false, is_zero, wire_enum};

wire_enum! {
    /// What undo does to one path (`undo_actions.json`).
    pub enum UndoAction {
        /// The path gets its state from before the turn back (bytes, mode, symlink), a deleted file recreated.
        Restore = "restore",
        /// The path changed since the turn: with force its current file moves to efr's trash first.
        Trash = "trash",
        /// A file the turn added is removed.
        Delete = "delete",
        /// The path is left as it is (see the reason).
        Skip = "skip",
        /// A bound or a rule left the path out of the snapshots: undo cannot restore it.
        NotCovered = "not_covered",
        /// A command that ran outside efr's reach (a `git push`, a package install): undo cannot reverse it.
        Command = "command",
    }
    unknown
}

wire_enum! {
    /// Why an undo entry or ref is what it is (`undo_reasons.json`).
    pub enum UndoReason {
        /// The path is already as undo would leave it.
        Done = "done",
        /// The path changed since the turn ended (the user or another turn).
        Conflict = "conflict",
        /// A file over the one-file bound (`undo.max_file_bytes`).
        Size = "size",
        /// The snapshot's bound on bytes (`undo.max_bytes`) was reached.
        Bytes = "bytes",
        /// A build output folder (`target/`, `node_modules/`, ...), by the rule of docs/undo.md.
        BuildOutput = "build_output",
        /// The file could not be read when the snapshot was taken.
        Unreadable = "unreadable",
        /// A bound on files or time cut the snapshot before the path.
        Truncated = "truncated",
        /// The undo stopped before this path.
        NotDone = "not_done",
        /// The write of this path failed: the undo stopped here.
        Failed = "failed",
    }
    unknown
}

wire_enum! {
    /// Why turn.undo refuses (`undo_refusals.json`): the `kind` of the error's `refused`.
    pub enum UndoRefusalKind {
        /// Snapshots are off (`undo.enabled = false`) or were off for the turn.
        Off = "off",
        /// The turn still runs.
        Running = "running",
        /// The turn is undone already (redo re-applies it).
        Undone = "undone",
        /// A redo of a turn that is not undone.
        NotUndone = "not_undone",
        /// The turn has nothing undo covers (no project, or it changed nothing).
        Nothing = "nothing",
        /// Paths changed since the turn ended: force moves them to the trash.
        Conflicts = "conflicts",
    }
    unknown
}

/// turn.undo params (scope operate, unary, with a command id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnUndoParams {
    /// The write's id.
    pub command_id: CommandId,
    /// Absent: the conversation of the named turn, else the active conversation of the hello's terminal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<ConversationId>,
    /// Absent: the newest ended turn that is not undone (with redo: the newest undone one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<TurnId>,
    /// List the entries, change nothing.
    #[serde(default, skip_serializing_if = "is_false")]
    pub dry_run: bool,
    /// Undo paths changed since the turn too, their current files moved to the trash.
    #[serde(default, skip_serializing_if = "is_false")]
    pub force: bool,
    /// Re-apply an undone turn.
    #[serde(default, skip_serializing_if = "is_false")]
    pub redo: bool,
    /// List the conversation's turns (`turns`), change nothing.
    #[serde(default, skip_serializing_if = "is_false")]
    pub list: bool,
}

/// One path of an undo.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UndoEntry {
    /// What undo does (did) to it.
    pub action: UndoAction,
    /// The path as a client shows it (relative to the project, under `$SCRATCH/`, or absolute); for `command`, the
    /// command line.
    pub path: String,
    /// Why, when the action alone does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<UndoReason>,
}

/// One git ref of an undo.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UndoRef {
    /// The root whose repository holds it, as a client shows it.
    pub root: String,
    /// `HEAD`, `refs/heads/<branch>`, `refs/stash`, or `index` (the index file).
    pub name: String,
    /// Its value as the turn left it; absent: it did not exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// The value undo puts back; absent: undo removes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// It was moved (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub applied: bool,
    /// Why it was not moved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<UndoReason>,
}

/// One turn of `list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UndoTurn {
    /// The turn.
    pub turn_id: TurnId,
    /// Its prompt's first line, shortened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// It ran in auto mode (or full).
    #[serde(default, skip_serializing_if = "is_false")]
    pub auto: bool,
    /// It ran in full mode (auto is true too then).
    #[serde(default, skip_serializing_if = "is_false")]
    pub full: bool,
    /// Undo can undo it now (it ended, has covered changes and is not undone).
    #[serde(default, skip_serializing_if = "is_false")]
    pub undoable: bool,
    /// It is undone.
    #[serde(default, skip_serializing_if = "is_false")]
    pub undone: bool,
    /// Its last undo or redo stopped midway.
    #[serde(default, skip_serializing_if = "is_false")]
    pub stopped: bool,
    /// It ended.
    #[serde(default, skip_serializing_if = "is_false")]
    pub ended: bool,
}

/// turn.undo result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnUndoResult {
    /// The conversation.
    pub conversation_id: ConversationId,
    /// The turn undone (redone); absent for `list`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<TurnId>,
    /// The turn's prompt's first line, shortened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The undo's id (absent for a dry run and for `list`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undo_id: Option<String>,
    /// The folder of efr's trash that holds the files moved there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trash: Option<String>,
    /// Files were written (false for a dry run).
    #[serde(default, skip_serializing_if = "is_false")]
    pub applied: bool,
    /// A write failed after the undo changed files: see the entries with `failed` and `not_done`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub stopped: bool,
    /// It finished an undo that a previous one (or a restart) left stopped.
    #[serde(default, skip_serializing_if = "is_false")]
    pub resumed: bool,
    /// The paths, in path order, at most 500.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entries: Vec<UndoEntry>,
    /// Entries that `entries` leaves out.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub entries_more: u64,
    /// The git refs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refs: Vec<UndoRef>,
    /// Sentences for a person (such as where the trash is, or what a previous undo did before it stopped).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// With `list`: the conversation's turns, newest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<UndoTurn>,
}

impl TurnUndoResult {
    /// The most entries a result carries.
    pub const MAX_ENTRIES: usize = 500;

    /// A result of `conversation_id` with nothing in it: no turn, nothing applied, no entries, refs, notes or turns.
    #[must_use]
    pub fn empty(conversation_id: ConversationId) -> Self {
        Self {
            conversation_id,
            turn_id: None,
            title: None,
            undo_id: None,
            trash: None,
            applied: false,
            stopped: false,
            resumed: false,
            entries: Vec::new(),
            entries_more: 0,
            refs: Vec::new(),
            notes: Vec::new(),
            turns: Vec::new(),
        }
    }
}

/// The `refused` of turn.undo's conflict error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UndoRefusal {
    /// Why.
    pub kind: UndoRefusalKind,
    /// For `conflicts`: the paths changed since the turn, at most 50.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// Paths that `paths` leaves out.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more: u64,
}

/// One root of a turn's undo summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct UndoRoot {
    /// The root as a client shows it (`.` for the project, `$SCRATCH`, or absolute).
    pub shown: String,
    /// Files the turn changed there that undo can restore (0 when absent).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub files: u64,
    /// Git refs the turn moved there (0 when absent).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub refs: u64,
}

/// The `undo` member of turn_completed, turn_failed and turn_interrupted: what undo of the turn covers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnUndoSummary {
    /// Undo can undo the turn (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub undoable: bool,
    /// The roots the turn could write.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roots: Vec<UndoRoot>,
    /// Home files the turn changed that undo covers (0 when absent).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub home_files: u64,
    /// Paths the turn may have changed that undo does not cover (a folder ends with `/`), at most 20.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_covered: Vec<String>,
    /// Paths that `not_covered` leaves out.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_covered_more: u64,
}
