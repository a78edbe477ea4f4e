//! presence_changed: the user of a conversation became present or away.
//!
//! Source: docs/protocol.md, "The contract": "phase A" (presence_changed: `conversation_id`, the envelope's, `presence`
//! and `source`; it belongs to no turn).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::wire::{Presence, PresenceSource};

/// presence_changed: the conversation's presence changed (recorded only on a change; it belongs to no turn).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PresenceChanged {
    /// The presence now.
    pub presence: Presence,
    /// What changed it.
    pub source: PresenceSource,
}
