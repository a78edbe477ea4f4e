//! Waits for input of a running command and input.respond, the answer to one.
//!
//! Source: docs/protocol.md, "The contract": "answers to a running command that waits for input" and "answers at the
//! edges". The answer's text is a [`SecretText`]: a hidden wait is a password, and it must never reach a log.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::{CallId, ConversationId};
use crate::macros::{is_false, wire_enum};
use crate::secret::SecretText;

wire_enum! {
    /// Whether a running command waits for input, and how the terminal shows what is typed.
    pub enum InputWait {
        /// It does not wait.
        None = "none",
        /// It waits, and the terminal echoes what is typed.
        Visible = "visible",
        /// It waits with echo off (a password).
        Hidden = "hidden",
    }
}

wire_enum! {
    /// How an answer was typed: for the wait it answers, or (`manual`) as the user chose.
    pub enum AnswerInput {
        /// Shown while typed.
        Visible = "visible",
        /// Hidden while typed.
        Hidden = "hidden",
    }
}

/// input.respond params (scope terminal, no command id; a phone is refused with `forbidden`).
///
/// An answer after the call's tool_call_completed is `not_found`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InputRespondParams {
    /// The conversation.
    pub conversation_id: ConversationId,
    /// The call whose command waits.
    pub call_id: CallId,
    /// What to type, a plain string (a newline is not added).
    pub text: SecretText,
    /// How it was typed; it must match the reported wait unless `manual`.
    pub input: AnswerInput,
    /// The user chose to type for a command that reported no wait; the daemon takes it while the call's command
    /// runs and a job of it holds the terminal, without the check against a wait (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub manual: bool,
}

/// input.respond result: empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct InputRespondResult {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_never_prints_its_text() {
        let params: InputRespondParams = serde_json::from_str(
            r#"{"conversation_id":"6f1c1e9e-4c1d-4bb5-9f6e-0c8f9c7d2a11","call_id":"c1","text":"hunter2","input":"hidden"}"#,
        )
        .unwrap();
        assert!(!params.manual);
        assert!(!format!("{params:?}").contains("hunter2"));
        assert!(
            serde_json::from_str::<InputRespondParams>(
                r#"{"conversation_id":"6f1c1e9e-4c1d-4bb5-9f6e-0c8f9c7d2a11","call_id":"c1","text":"x","input":"none"}"#
            )
            .is_err(),
            "an answer cannot be of the kind none"
        );
    }
}
