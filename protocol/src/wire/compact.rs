//! A compaction of a conversation: conversation.compact (scope operate, a command id) and the members of the event
//! conversation_compacted, which its result carries.
//!
//! Source: docs/protocol.md, "The contract": "the context window and its compaction", "cache writes" (`usage`) and
//! "the stored fresh context block" (`fresh`). What a compaction keeps and why is in docs/context.md.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::Usage;
use super::subscribe::CompactTrigger;
use crate::ids::{CommandId, CompactionId, ConversationId, TurnId};
use crate::macros::is_zero;

/// conversation.compact params (scope operate).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConversationCompactParams {
    /// The write's id: a repeat returns the stored outcome and compacts nothing.
    pub command_id: CommandId,
    /// The conversation.
    pub conversation_id: ConversationId,
    /// What the summary should keep above all (a sentence from the user); absent for none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focus: Option<String>,
}

/// conversation.compact result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConversationCompactResult {
    /// The seq of the conversation_compacted event.
    pub seq: u64,
    /// The compaction, as the event holds it.
    pub compaction: Compaction,
}

/// A compaction: the members of conversation_compacted. Its optional `turn_id` is the event's own (the turn it ran
/// in; absent for conversation.compact, which runs outside a turn). Token counts are efrd's estimates of the model's context
/// (see docs/context.md), except `usage`, the provider's count of the summary's model call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Compaction {
    /// The compaction.
    pub compaction_id: CompactionId,
    /// What started it.
    pub trigger: CompactTrigger,
    /// The user's focus of a manual compaction; absent for none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focus: Option<String>,
    /// The model that wrote the summary.
    pub model: String,
    /// The model's context window in tokens.
    pub window: u64,
    /// The count at which an automatic compaction starts, in tokens (the point a client shows as 100%).
    pub limit: u64,
    /// The context before the compaction, in tokens.
    pub tokens_before: u64,
    /// The context after it, in tokens.
    pub tokens_after: u64,
    /// The last turn the summary covers.
    pub through_turn: TurnId,
    /// The index of the last assistant message of `through_turn` that the summary covers, when it covers only a
    /// part of that turn (a compaction in a running turn); absent when it covers the turn whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub through_message: Option<u32>,
    /// The turns after the summary that the model's context keeps whole.
    pub kept_turns: u32,
    /// Tool outputs that the summary's request carried shortened, so that it fit the window; absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pruned_outputs: u64,
    /// The tokens that shortening left out; absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pruned_tokens: u64,
    /// The oldest turns that the summary's request could not carry even shortened (the summary never saw them);
    /// absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub omitted_turns: u64,
    /// The messages of those turns; absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub omitted_messages: u64,
    /// The summary the model wrote.
    pub summary: String,
    /// The tokens of the summary's model call.
    pub usage: Usage,
    /// The fresh context block that every request after the compaction sends before the summary, as efrd read it
    /// when the compaction ended; absent for a compaction from before the member.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fresh: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_focus_is_optional_and_the_command_id_is_not() {
        let params: ConversationCompactParams = serde_json::from_str(
            r#"{"command_id":"6f1c1e9e-4c1d-4bb5-9f6e-0c8f9c7d2a12","conversation_id":"6f1c1e9e-4c1d-4bb5-9f6e-0c8f9c7d2a11"}"#,
        )
        .unwrap();
        assert_eq!(params.focus, None);
        assert!(
            serde_json::from_str::<ConversationCompactParams>(
                r#"{"conversation_id":"6f1c1e9e-4c1d-4bb5-9f6e-0c8f9c7d2a11"}"#
            )
            .is_err()
        );
    }
}
