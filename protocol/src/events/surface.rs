//! Surface changes in the log: sandbox_surface_changed, surface_question_requested, surface_question_answered and
//! turn_surface_report.
//!
//! Source: docs/protocol.md, "The contract": "the wire types of the auto sandbox (phase 1)" names the kinds; their
//! members are this project's choice (`docs/auto.md`, "Surface changes"). sandbox_surface_changed,
//! surface_question_requested and turn_surface_report belong to their turn (the envelope's `turn_id`).
//! surface_question_answered belongs to no turn: the answer may come after the turn ended, as the turn does not wait
//! for it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::{CallId, QuestionId};
use crate::macros::is_false;
use crate::wire::{Origin, ReportedFile, SurfaceChange, SurfaceOutcome};

/// sandbox_surface_changed: a contained call of auto mode changed files that code outside the sandbox may run from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SandboxSurfaceChanged {
    /// The call.
    pub call_id: CallId,
    /// The changes, sorted by path.
    pub changes: Vec<SurfaceChange>,
}

/// surface_question_requested: efrd asks whether to keep one surface change that can run code. The turn goes on;
/// the change is held until the answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SurfaceQuestionRequested {
    /// The question, for sandbox.surface_respond.
    pub question_id: QuestionId,
    /// The call that made the change.
    pub call_id: CallId,
    /// The change.
    pub change: SurfaceChange,
    /// efrd removed the file's executable bits until the user keeps it, so nothing runs it meanwhile (false when
    /// absent: a file that runs without them, such as an `.envrc`, stays as the call left it).
    #[serde(default, skip_serializing_if = "is_false")]
    pub held: bool,
    /// efrd cannot put back what was there: the old content of the changed file was not kept (binary, or over the
    /// bound of a call's snapshots). An answer not to keep it then leaves the change held (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub cannot_remove: bool,
}

/// surface_question_answered: the user answered a surface question (sandbox.surface_respond).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SurfaceQuestionAnswered {
    /// The question.
    pub question_id: QuestionId,
    /// The answer: keep the change, or put back what was there.
    pub keep: bool,
    /// What became of the change.
    pub outcome: SurfaceOutcome,
    /// Where the answer came from.
    pub origin: Origin,
    /// Why efrd could not do what the answer asked (with outcome `failed`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// turn_surface_report: at a turn's end, each surface change of its calls and what became of it. Recorded only for a
/// turn that made one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnSurfaceReport {
    /// The changes in the order the calls made them.
    pub files: Vec<ReportedFile>,
}
