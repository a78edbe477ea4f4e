//! A command left running in the hidden shell: shell_command_detached, shell_command_input_changed and
//! shell_command_ended. They belong to the conversation, not to a turn (no `turn_id`); a client links them to the
//! call by `call_id`, and the detach and tool_call_completed come in either order.
//!
//! Source: docs/protocol.md, "The contract": "a command left running in the hidden shell".

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::{CallId, Timestamp};
use crate::macros::is_false;
use crate::wire::{ApprovedBy, How, InputWait};

/// shell_command_detached: the command still runs after its call answered; the shell takes no other call until it
/// ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ShellCommandDetached {
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
    /// A visible wait that looks like a password prompt (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub looks_secret: bool,
    /// The screen row that holds the cursor, at most 200 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// Who let it run outside the sandbox.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_by: Option<ApprovedBy>,
}

/// shell_command_input_changed: the command began or stopped waiting for input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ShellCommandInputChanged {
    /// The call that started it.
    pub call_id: CallId,
    /// Whether it waits now.
    pub input: InputWait,
    /// It runs in the sandbox.
    pub contained: bool,
    /// A visible wait that looks like a password prompt (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub looks_secret: bool,
    /// The screen row that holds the cursor, at most 200 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
}

/// shell_command_ended: the command ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ShellCommandEnded {
    /// The call that started it.
    pub call_id: CallId,
    /// How it ended.
    pub how: How,
    /// Its exit code, absent when not known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// What efrd set right after a contained command's end, one line each, as the model reads them: a project's
    /// `.git` link put back, a planted git folder removed. Absent when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}
