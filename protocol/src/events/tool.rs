//! A tool call's life: tool_call_started, tool_call_input_changed and tool_call_completed.
//!
//! Source: docs/protocol.md, "The contract": "answers to a running command", "answers at the edges", manual_input,
//! "the wire types of the auto sandbox", survivors, setup_error, refusal, "what the agent changed in files",
//! "freeform tools" and "a command left running" (left_running). `status`, `output` and `exit_code` are this
//! project's base members.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::CallId;
use crate::macros::{is_false, wire_enum};
use crate::wire::{FileChanges, InputWait, Launch, SandboxSummary};

/// tool_call_started: the model called a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCallStarted {
    /// The call.
    pub call_id: CallId,
    /// The tool, such as `shell` or `apply_patch`.
    pub tool: String,
    /// With `freeform`, a JSON string that holds the text as the model wrote it; without, the JSON that the model
    /// wrote (or a JSON string with arguments that were not JSON).
    pub input: Value,
    /// The tool's input is plain text (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub freeform: bool,
    /// The call takes an input the user chooses to type while it reports no wait (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub manual_input: bool,
    /// How it runs; absent when not reported (a call that runs no command).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<Launch>,
}

/// tool_call_input_changed: the call's command began or stopped waiting for input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCallInputChanged {
    /// The call.
    pub call_id: CallId,
    /// Whether it waits now, and how.
    pub input: InputWait,
    /// A visible wait whose prompt line looks like a password prompt: a client hides what is typed and still sends
    /// a visible answer (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub looks_secret: bool,
}

wire_enum! {
    /// How a call ended.
    pub enum CallStatus {
        /// It ran and answered the model.
        Ok = "ok",
        /// It failed (or efr refused it: see `refusal`).
        Failed = "failed",
        /// The user (or a reviewer) denied it.
        Denied = "denied",
    }
    unknown
}

/// tool_call_completed: the call answered the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCallCompleted {
    /// The call.
    pub call_id: CallId,
    /// How it ended.
    pub status: CallStatus,
    /// What the call printed, bounded by the per-call cap of the docs.
    pub output: String,
    /// The command's exit code, absent when it has none (a file tool, a command left running).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Why efr refused the call before it ran, in a few words (such as "efr's config (floor)"); absent for a call
    /// that ran and for one the user denied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    /// The call answered while its command still runs (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub left_running: bool,
    /// What changed in files while the call ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<FileChanges>,
    /// The unified diff of a file tool's write, at most 2000 lines, then `... N more lines`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// What the sandbox reported; absent when not reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxSummary>,
}
