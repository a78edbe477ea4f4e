//! The hidden shell: shell.status, shell.interrupt, and the enums of a command left running in it.
//!
//! Source: docs/protocol.md, "The contract": "a command left running in the hidden shell" and "the hidden shell's state
//! and a stop of a command left running".

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::input::InputWait;
use crate::ids::{CallId, CommandId, ConversationId, Timestamp};
use crate::macros::{is_false, wire_enum};

wire_enum! {
    /// How a command left running in the hidden shell ended (`how`).
    pub enum How {
        /// It exited.
        Ended = "ended",
        /// shell.interrupt stopped it.
        Stopped = "stopped",
        /// It ran past its limit.
        Limit = "limit",
        /// The hidden shell was closed.
        Closed = "closed",
        /// The hidden shell itself exited.
        ShellExited = "shell_exited",
        /// call.background moved it to a job.
        Moved = "moved",
    }
    unknown
}

wire_enum! {
    /// Who let a command run outside the sandbox (`approved_by`).
    pub enum ApprovedBy {
        /// The user, in answer to a question.
        You = "you",
        /// One of the user's always rules.
        YourRule = "your_rule",
        /// The classifier model.
        Reviewer = "reviewer",
        /// Full mode, with no question.
        FullMode = "full_mode",
    }
    unknown
}

/// shell.status params (scope read, no command id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ShellStatusParams {
    /// The conversation whose hidden shell to look at.
    pub conversation_id: ConversationId,
}

/// The command that holds the hidden shell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ShellBusy {
    /// The call that started it.
    pub call_id: CallId,
    /// The first 200 characters of its command line.
    pub command: String,
    /// When it started.
    pub since: Timestamp,
    /// It runs in the sandbox.
    pub contained: bool,
    /// Whether it waits for input.
    pub input: InputWait,
    /// A visible wait whose prompt line looks like a password prompt (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub looks_secret: bool,
    /// The screen row that holds the cursor, at most 200 characters; absent when not set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// Who let it run outside the sandbox; absent for a contained or direct command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_by: Option<ApprovedBy>,
}

/// shell.status result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ShellStatusResult {
    /// The command that holds the shell; absent when the shell is free.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy: Option<ShellBusy>,
}

/// shell.interrupt params (scope terminal, a write).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ShellInterruptParams {
    /// The write's id.
    pub command_id: CommandId,
    /// The conversation.
    pub conversation_id: ConversationId,
    /// The call whose command was left running.
    pub call_id: CallId,
    /// Close the hidden shell instead of sending SIGINT to the command's group (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub close: bool,
}

/// shell.interrupt result: empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ShellInterruptResult {}
