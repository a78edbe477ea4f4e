//! turn.steer and prompt.withdraw: what a user adds to a running turn, and takes back from the queue.
//!
//! Source: docs/protocol.md, "The contract": "steer, queue and withdraw from the input row of a turn". The members
//! `text`, `turn_id` and `seq` of turn.steer are this project's (the spec names them through the results of
//! turn.interrupt and prompt_queued).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::prompt::QueueAs;
use super::turn::WithdrawnPrompt;
use crate::ids::{CommandId, ConversationId, TurnId};

/// turn.steer params (scope operate, a write): a message that the running turn's next model call reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnSteerParams {
    /// The write's id.
    pub command_id: CommandId,
    /// The conversation.
    pub conversation_id: ConversationId,
    /// The turn to steer; absent: the one that runs. A turn that does not run makes the steer late.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<TurnId>,
    /// The message.
    pub text: String,
    /// What to do with a late steer (the turn makes no more model calls); absent: `conflict`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub if_late: Option<QueueAs>,
}

/// turn.steer result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnSteerResult {
    /// The steered turn; for a queued steer, the new turn that its prompt runs as.
    pub turn_id: TurnId,
    /// The seq of turn_steered; for a queued steer, the seq of prompt_queued.
    pub seq: u64,
    /// The steer was late and became a queued prompt (false when absent).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub queued: bool,
}

/// The prompt that prompt.withdraw takes back, tagged by `kind` (fixture `withdraw_targets.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WithdrawTarget {
    /// The queued prompt of this turn.
    Turn {
        /// Its turn.
        turn_id: TurnId,
    },
    /// The newest prompt that waits and came from this terminal (the `tty` of its context).
    NewestFromTty {
        /// The terminal, such as `/dev/pts/3`.
        tty: String,
    },
}

/// prompt.withdraw params (scope operate, a write).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PromptWithdrawParams {
    /// The write's id.
    pub command_id: CommandId,
    /// The conversation.
    pub conversation_id: ConversationId,
    /// The prompt to take back.
    pub target: WithdrawTarget,
}

/// prompt.withdraw result: the withdrawn prompt. A prompt that started is `conflict`; a target without a waiting
/// prompt is `not_found`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PromptWithdrawResult {
    /// The prompt that was withdrawn.
    pub withdrawn: WithdrawnPrompt,
}
