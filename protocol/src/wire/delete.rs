//! conversation.delete: the delete of a conversation, its answers and the data of its busy refusal.
//!
//! Source: docs/protocol.md, "The contract": "the delete of a conversation" (params conversation_id, force and stop;
//! a result deleted or held; busy with `{"busy": "turn"}` or `{"busy": "undo"}`; not_found for a conversation that
//! does not exist or is deleted).

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::{CommandId, ConversationId};
use crate::macros::is_false;

/// conversation.delete params (scope terminal, unary, a write).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConversationDeleteParams {
    /// The write's id.
    pub command_id: CommandId,
    /// The conversation to delete.
    pub conversation_id: ConversationId,
    /// Delete it although another open terminal holds it (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub force: bool,
    /// Stop its running turn, its queued prompts or its compaction first (false when absent); without it a busy
    /// conversation refuses the delete.
    #[serde(default, skip_serializing_if = "is_false")]
    pub stop: bool,
}

/// conversation.delete result, tagged by `kind`. A kind that a reader does not know reads as `unknown`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ConversationDeleteResult {
    /// The conversation is gone: its log holds only conversation_deleted.
    Deleted {
        /// The conversation.
        conversation_id: ConversationId,
        /// Its title (its secrets replaced); absent when it had none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        /// How many of its background jobs were stopped; absent when none ran.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        jobs_stopped: Option<u32>,
        /// The files and folders of the conversation that could not be removed (such as a scratch file the user
        /// made read-only); absent when everything went.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        not_removed: Vec<PathBuf>,
    },
    /// Another open terminal holds the conversation and `force` was not set: nothing changed.
    Held {
        /// That terminal.
        tty: String,
        /// The conversation's title; absent when it has none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
    /// A kind that this reader does not know. Never sent.
    #[serde(other)]
    Unknown,
}

/// What makes a conversation busy for a delete: the `busy` member of the data of its `busy` error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeleteBusy {
    /// A turn runs, a prompt is queued or a compaction runs (`stop` overcomes it).
    Turn,
    /// An undo runs (nothing overcomes it: the undo must finish).
    Undo,
    /// A value that this reader does not know. Never sent.
    #[serde(other)]
    Unknown,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_false_when_absent_and_unknown_kinds_read_as_unknown() {
        let params: ConversationDeleteParams = serde_json::from_str(
            r#"{"command_id":"6ba7b810-9dad-41d1-80b4-00c04fd430c8","conversation_id":"0f8fad5b-d9cb-469f-a165-70867728950e"}"#,
        )
        .unwrap();
        assert!(!params.force && !params.stop);
        assert!(!serde_json::to_string(&params).unwrap().contains("force"));
        let result: ConversationDeleteResult = serde_json::from_str(r#"{"kind":"archived","at":1}"#).unwrap();
        assert_eq!(result, ConversationDeleteResult::Unknown);
        assert_eq!(
            serde_json::from_str::<DeleteBusy>("\"io\"").unwrap(),
            DeleteBusy::Unknown
        );
        assert!(serde_json::from_str::<ConversationDeleteParams>(r#"{"conversation_id":"x"}"#).is_err());
    }
}
