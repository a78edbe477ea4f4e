//! presence.set and the presence of a conversation's user: present or away.
//!
//! Source: docs/protocol.md, "The contract": "presence" (the method) and "phase A" (presence_changed, approval_expired's
//! `away`, the judge `presence_expired`). An approval question to an away user expires after `[permissions]
//! away_question_secs` with `away: true`; a question to a present user waits.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::{CommandId, ConversationId};
use crate::macros::wire_enum;

wire_enum! {
    /// Whether the user of a conversation is at the terminal.
    pub enum Presence {
        /// The user is there: approval questions wait for an answer.
        Present = "present",
        /// The user is away: approval questions expire (approval_expired with `away`).
        Away = "away",
    }
    unknown
}

wire_enum! {
    /// What changed a conversation's presence (presence_changed's `source`).
    pub enum PresenceSource {
        /// The user's input: a prompt (present).
        Input = "input",
        /// The user said so: presence.set.
        User = "user",
        /// No input for a while.
        Timeout = "timeout",
    }
    unknown
}

/// presence.set params (scope operate, unary, with a command id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PresenceSetParams {
    /// The write's id.
    pub command_id: CommandId,
    /// The conversation; absent: each conversation that had input since the daemon started. One that does not exist
    /// is `not_found`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<ConversationId>,
    /// The presence to set. `unknown` is refused with `invalid`.
    pub presence: Presence,
}

/// presence.set result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PresenceSetResult {
    /// The presence that was set.
    pub presence: Presence,
    /// The conversations whose presence changed (each recorded presence_changed); absent when none changed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<ConversationId>,
    /// The seq of the last presence_changed recorded (in the last conversation of `changed`); absent when none
    /// changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_presence_it_does_not_know_reads_as_unknown() {
        assert_eq!(
            serde_json::from_str::<Presence>(r#""asleep""#).unwrap(),
            Presence::Unknown
        );
        assert_eq!(
            serde_json::from_str::<PresenceSource>(r#""phone""#).unwrap(),
            PresenceSource::Unknown
        );
    }

    #[test]
    fn params_need_a_command_id_and_a_presence() {
        assert!(serde_json::from_str::<PresenceSetParams>(r#"{"presence":"away"}"#).is_err());
        assert!(
            serde_json::from_str::<PresenceSetParams>(r#"{"command_id":"6f1c1e9e-4c1d-4bb5-9f6e-0c8f9c7d2a11"}"#)
                .is_err()
        );
        let params: PresenceSetParams =
            serde_json::from_str(r#"{"command_id":"6f1c1e9e-4c1d-4bb5-9f6e-0c8f9c7d2a11","presence":"away"}"#).unwrap();
        assert_eq!(params.conversation_id, None);
        assert_eq!(params.presence, Presence::Away);
    }

    #[test]
    fn a_result_with_no_change_has_only_the_presence() {
        let result = PresenceSetResult {
            presence: Presence::Present,
            changed: Vec::new(),
            seq: None,
        };
        assert_eq!(serde_json::to_string(&result).unwrap(), r#"{"presence":"present"}"#);
    }
}
