//! turn.interrupt: stop the running turn, and in the same step resend or withdraw what waits.
//!
//! Source: docs/protocol.md, "The contract": "steer, queue and withdraw from the input row of a turn": every member is
//! done in the step that records turn_interrupt_requested.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::prompt::QueueAs;
use crate::ids::{CommandId, ConversationId, TurnId};

/// turn.interrupt params (scope operate, a write).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnInterruptParams {
    /// The write's id.
    pub command_id: CommandId,
    /// The conversation.
    pub conversation_id: ConversationId,
    /// The turn to interrupt; absent: the one that runs. A turn that does not run is `conflict`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<TurnId>,
    /// Seqs of unread turn_steered events to send again as one prompt that runs next; absent when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resend_steers: Vec<u64>,
    /// How to queue the resent prompt; absent: with the context and settings of the interrupted turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resend_as: Option<QueueAs>,
    /// Seqs of unread turn_steered events to take back; absent when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub withdraw_steers: Vec<u64>,
    /// Turns of queued prompts to withdraw; absent when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub withdraw: Vec<TurnId>,
}

/// The prompt that resent steers became.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Resent {
    /// Its turn.
    pub turn_id: TurnId,
    /// The seq of its prompt_queued event.
    pub seq: u64,
    /// The seqs of the steers whose text it carries.
    pub steers: Vec<u64>,
}

/// A prompt that was withdrawn before it started (also the result of prompt.withdraw).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WithdrawnPrompt {
    /// Its turn.
    pub turn_id: TurnId,
    /// The seq of its prompt_withdrawn event.
    pub seq: u64,
    /// Its text, so a client can put it back in the input row.
    pub text: String,
}

/// A steer that was taken back before a model call read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WithdrawnSteer {
    /// The seq of its turn_steered event.
    pub seq: u64,
    /// Its text.
    pub text: String,
}

/// turn.interrupt result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnInterruptResult {
    /// The interrupted turn.
    pub turn_id: TurnId,
    /// The seq of its turn_interrupt_requested event.
    pub seq: u64,
    /// The prompt that the resent steers became; absent when none were resent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resent: Option<Resent>,
    /// The withdrawn prompts; absent when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub withdrawn: Vec<WithdrawnPrompt>,
    /// The withdrawn steers; absent when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub withdrawn_steers: Vec<WithdrawnSteer>,
}
