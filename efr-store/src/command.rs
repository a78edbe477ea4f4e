//! The stored outcome of a write under its command id: a leaf, since both a commit ([`super::rows::Commit`]) and the
//! error of a repeated command ([`super::StoreError::DuplicateCommand`]) carry one.

use efr_protocol::ids::{CommandId, ConversationId, Timestamp};

/// The stored outcome of a write, under its client-generated `command_id` (docs/architecture.md, "The event log":
/// the same command_id again returns this outcome and changes nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRecord {
    /// The write's id.
    pub command_id: CommandId,
    /// The method that ran, such as `prompt.send`.
    pub method: String,
    /// The conversation the write addressed, when it named or created one.
    pub conversation_id: Option<ConversationId>,
    /// The outcome as JSON text: the result object or the error body, as the caller chose to store it.
    pub result: String,
    /// When the outcome was stored.
    pub at: Timestamp,
}
