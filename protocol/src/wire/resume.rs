//! conversation.resume: a terminal takes up a conversation (`,resume`, `efr resume`).
//!
//! Source: docs/protocol.md, "The contract": "resuming a conversation": params conversation_id, the terminal's context
//! and take (false when absent); the conversation becomes the conversation of the terminal's slot for its own scope
//! key, and efrd records terminal_attached with how `resumed`. The result is `resumed` (conversation_id, scope, title,
//! updated_at, shell_dir, here and continues_here, each flag false when absent) or `held` (tty and title: another open
//! terminal holds it and take was not set, so nothing moved). What `shell_dir`, `here` and `continues_here` mean
//! beyond their names is this project's reading, written on each member.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::prompt::PromptContext;
use super::route::RouteScope;
use crate::ids::{CommandId, ConversationId, Timestamp};
use crate::macros::is_false;

/// conversation.resume params (scope operate, unary, a write).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConversationResumeParams {
    /// The write's id.
    pub command_id: CommandId,
    /// The conversation to take up.
    pub conversation_id: ConversationId,
    /// The terminal that takes it up: its tty (required) and working directory.
    pub context: PromptContext,
    /// Take it although another open terminal holds it (false when absent): that terminal's slot lets it go.
    #[serde(default, skip_serializing_if = "is_false")]
    pub take: bool,
}

/// conversation.resume result, tagged by `kind`. A kind that a reader does not know reads as `unknown`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ConversationResumeResult {
    /// The conversation is now the terminal's conversation of its own scope key.
    Resumed {
        /// The conversation.
        conversation_id: ConversationId,
        /// Its scope key (the slot it took).
        scope: RouteScope,
        /// Its title (its secrets replaced); absent when it has none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        /// When it last changed.
        updated_at: Timestamp,
        /// The folder the terminal's shell may change to, to continue there: the conversation's working directory;
        /// absent when it has none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        shell_dir: Option<PathBuf>,
        /// The terminal's working directory is in the conversation's scope key (false when absent).
        #[serde(default, skip_serializing_if = "is_false")]
        here: bool,
        /// The terminal's next prompt from its working directory goes to this conversation: `here`, and the slot of
        /// that scope key is this conversation's now (false when absent).
        #[serde(default, skip_serializing_if = "is_false")]
        continues_here: bool,
    },
    /// Another open terminal holds it and `take` was not set: nothing moved.
    Held {
        /// The terminal that holds it.
        tty: String,
        /// Its title (its secrets replaced); absent when it has none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
    },
    /// A kind that this reader does not know. Never sent.
    #[serde(other)]
    Unknown,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

    use super::*;

    #[test]
    fn flags_are_false_when_absent_and_an_unknown_kind_reads_as_unknown() {
        let params: ConversationResumeParams = serde_json::from_str(
            r#"{"command_id":"6ba7b810-9dad-41d1-80b4-00c04fd430c8","conversation_id":"0f8fad5b-d9cb-469f-a165-70867728950e","context":{"tty":"/dev/pts/2"}}"#,
        )
        .unwrap();
        assert!(!params.take);
        let result: ConversationResumeResult = serde_json::from_str(r#"{"kind":"moved_elsewhere","tty":"x"}"#).unwrap();
        assert_eq!(result, ConversationResumeResult::Unknown);
        assert!(
            serde_json::from_str::<ConversationResumeParams>(
                r#"{"command_id":"6ba7b810-9dad-41d1-80b4-00c04fd430c8","context":{}}"#
            )
            .is_err()
        );
    }
}
