//! conversation_deleted: the last event of a deleted conversation, and the only one its log keeps.
//!
//! Source: docs/protocol.md, "The contract": "the delete of a conversation".

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::wire::Origin;

/// conversation_deleted: the conversation was deleted; a subscription of it ends after this event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConversationDeleted {
    /// Where the delete came from.
    pub origin: Origin,
}
