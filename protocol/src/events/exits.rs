//! The exits of auto mode in the log: exit_requested, exit_review_started, exit_judged and classifier_paused.
//!
//! Source: docs/protocol.md, "The contract": "the wire types of the auto sandbox (phase 1)" (the kinds exit_requested
//! and exit_judged), "phase A" (exit_review_started with `kinds`, classifier_paused with `reason` and `denials`,
//! exit_judged's `chain_step` and `skipped`), "full mode" (the judge `full`) and "exit_judged gains reasked". Each
//! belongs to its turn: the spec's `turn_id` is the envelope's. Members that the spec does not spell out (the call,
//! exit_requested's `exit`, exit_judged's `exit_kind`, `verdict` and `reason`) are this project's choice.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::CallId;
use crate::macros::{is_false, wire_enum};
use crate::wire::{ChainStep, ExitKind, ExitRecord, JudgeKind, Verdict};

/// exit_requested: a call asks for one exit from the sandbox; a call with several exits records one each.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExitRequested {
    /// The call.
    pub call_id: CallId,
    /// The exit's record, not judged yet.
    pub exit: ExitRecord,
    /// The turn's exits judged before this one, oldest first, at most [`MAX_PREVIOUS_EXITS`] (the newest): each a
    /// pair `[exit kind, verdict]` in their wire names, such as `["upload", "deny"]`; absent when none. A list of
    /// two-item lists, not a tuple (docs/protocol.md, "The contract": "docs/protocol.schema.json").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub previous_exits_this_turn: Vec<[String; 2]>,
}

/// The most pairs of exit_requested's `previous_exits_this_turn`: a turn's judge and reader need the recent pattern
/// (a run of denials, a kind asked again), not its whole history.
pub const MAX_PREVIOUS_EXITS: usize = 32;

/// One pair of `previous_exits_this_turn`: an exit's kind and the verdict it got, by their wire names.
#[must_use]
pub fn previous_exit(kind: ExitKind, verdict: Verdict) -> [String; 2] {
    [kind.as_str().to_owned(), verdict.as_str().to_owned()]
}

/// exit_review_started: the judge chain starts on a call's exits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExitReviewStarted {
    /// The call.
    pub call_id: CallId,
    /// The kinds of its exits, in the order of their exit_requested events.
    pub kinds: Vec<ExitKind>,
}

/// exit_judged: the chain decided one exit of a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExitJudged {
    /// The call.
    pub call_id: CallId,
    /// The exit's kind (an exit_requested of the call names it). Not `kind`, which is the envelope's tag.
    pub exit_kind: ExitKind,
    /// Who decided.
    pub judge: JudgeKind,
    /// The answer: approve or deny (a judge that abstains passes the exit on and decides nothing).
    pub verdict: Verdict,
    /// Why, one line; empty when the judge gave none.
    pub reason: String,
    /// The step of the chain that decided; absent when no step of the chain did (an always rule, full mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain_step: Option<ChainStep>,
    /// The models that the chain skipped (not available, or paused), absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
    /// The model judge (the classifier, or the turn's model when it judged) wrote no real reason (empty, too short or a
    /// placeholder) and was asked once more (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub reasked: bool,
}

wire_enum! {
    /// Why the classifier was paused.
    pub enum PauseReason {
        /// It denied the configured number of exits in a row.
        InARow = "in_a_row",
        /// It denied the configured number of exits in this turn.
        PerTurn = "per_turn",
    }
    unknown
}

/// classifier_paused: after too many denials, the turn's exits go past the model judges to the user (efrd does not
/// let the turn's model, the one asking, judge alone; docs/auto.md, "The pause after denials").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClassifierPaused {
    /// Which limit it reached.
    pub reason: PauseReason,
    /// The denials that reached it.
    pub denials: u64,
}
