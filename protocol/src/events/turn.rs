//! The events of a turn's life: turn_started, turn_cancelled, turn_interrupt_requested, turn_interrupted,
//! turn_completed and turn_failed.
//!
//! Source: docs/protocol.md, "The contract": "turn settings", "the daemon applies turn settings", "a restart no longer
//! holds queued prompts", "what the agent changed in files", "the context window and its compaction" and "why a turn
//! stopped" and "undo of a turn (phase B)" (the `undo` member of the end events); `reason` and `origin` are this
//! project's members.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::ErrorBody;
use crate::wire::{ContextFill, FileChanges, Origin, Overridden, Stop, TurnSettings, TurnUndoSummary, Usage};

/// turn_started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnStarted {
    /// The settings the turn runs with; absent in turns from before turn settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<TurnSettings>,
    /// Which settings came from the prompt; absent when not recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overridden: Option<Overridden>,
}

/// turn_cancelled: the prompt was not run (no turn_started before it); nothing runs it later.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnCancelled {
    /// Why, one sentence for a person (such as "efrd restarted while the prompt waited").
    pub reason: String,
}

/// turn_interrupt_requested: the interrupt is recorded; the turn stops at its next safe point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnInterruptRequested {
    /// Who asked.
    pub origin: Origin,
}

/// turn_interrupted: the turn stopped on an interrupt.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnInterrupted {
    /// Tokens the turn used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// How full the context was at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextFill>,
    /// What the turn changed in files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<FileChanges>,
    /// What undo of the turn covers; absent for a turn without covered snapshots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undo: Option<TurnUndoSummary>,
}

/// turn_completed: the turn ended with an answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnCompleted {
    /// Tokens the turn used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// How full the context was at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextFill>,
    /// Why it stopped; absent for a normal answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Stop>,
    /// The turn's first snapshot against its last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<FileChanges>,
    /// What undo of the turn covers; absent for a turn without covered snapshots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undo: Option<TurnUndoSummary>,
}

/// turn_failed: the turn ended with an error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TurnFailed {
    /// What went wrong, in the form of an error frame (a setting that no longer fits is `invalid` with data
    /// `{setting, value, choices}`).
    pub error: ErrorBody,
    /// Tokens the turn used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// How full the context was at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextFill>,
    /// What the turn changed in files before it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<FileChanges>,
    /// What undo of the turn covers; absent for a turn without covered snapshots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undo: Option<TurnUndoSummary>,
}
