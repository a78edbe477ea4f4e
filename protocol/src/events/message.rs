//! The assistant's text: assistant_message_updated and assistant_message_completed.
//!
//! Source: docs/protocol.md ("Ids, times and text offsets": offsets count bytes of UTF-8; the index counts the turn's
//! assistant messages that have text, from 0) and the contract's changelog entry that made updates carry `offset`
//! and `delta`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// assistant_message_updated: text added to a message since the previous update.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AssistantMessageUpdated {
    /// The message's index in the turn.
    pub index: u32,
    /// Where `delta` starts in the message, in bytes of UTF-8 (not characters, not UTF-16 units).
    pub offset: u64,
    /// The text added.
    pub delta: String,
}

/// assistant_message_completed: the message is whole.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AssistantMessageCompleted {
    /// The message's index in the turn.
    pub index: u32,
    /// The whole message.
    pub text: String,
}
