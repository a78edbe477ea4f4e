//! Approval questions: approval_requested, approval_resolved and approval_expired.
//!
//! Source: docs/protocol.md, "The contract": interactive, "streams for the phone" (local_only), the approval reason,
//! "full mode" (expires_in_secs) and "phase A" (away). `summary` is named by the spec ("the target and the reason
//! stay in summary"); `exit` is the spec's optional exit of "the wire types of the auto sandbox (phase 1)".

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::CallId;
use crate::macros::is_false;
use crate::wire::{ApprovalDecision, ExitInfo};

/// approval_requested: a call waits for the user's answer (approval.respond).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalRequested {
    /// The call.
    pub call_id: CallId,
    /// What the call would do, one line for a person.
    pub summary: String,
    /// The call may wait for input at the terminal, such as a sudo password (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub interactive: bool,
    /// Only the user's own machine may answer (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub local_only: bool,
    /// Why the turn's mode asks, one plain line (such as "cautious asks before any network access").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Seconds until the question expires; absent when it has no fixed limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in_secs: Option<u64>,
    /// The exit of auto mode that the call asks for; absent for a question of another mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<ExitInfo>,
}

/// approval_resolved: the question was answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalResolved {
    /// The call.
    pub call_id: CallId,
    /// The answer.
    pub decision: ApprovalDecision,
}

/// approval_expired: no answer came in time; the call does not run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalExpired {
    /// The call.
    pub call_id: CallId,
    /// The user was away when it expired (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub away: bool,
}
