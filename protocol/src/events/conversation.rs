//! Events of a conversation's life outside a turn's work: conversation_created and prompt_queued.
//!
//! Source: docs/protocol.md, "The contract": "turn settings", "steer, queue and withdraw", "desktop grants" and
//! "routing by scope". `cwd`, `tty` and `origin` are this project's members.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::CommandId;
use crate::wire::{AttachHow, Origin, PromptContext, PromptSettings, RouteScope};

/// conversation_created: the conversation's first event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConversationCreated {
    /// The working directory of its first prompt, absent when it had none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// The terminal of its first prompt, absent when it had none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tty: Option<String>,
    /// The scope key of its first prompt; absent in conversations from before and for a first prompt without a
    /// working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<RouteScope>,
}

/// terminal_attached: the conversation became the conversation of a terminal's slot for a scope key (routing by
/// scope). It belongs to no turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TerminalAttached {
    /// The terminal, such as `/dev/pts/3`.
    pub tty: String,
    /// The scope key of the slot.
    pub route: RouteScope,
    /// The process id of the terminal's shell; absent when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell_pid: Option<u32>,
    /// How it became the terminal's.
    pub how: AttachHow,
}

/// prompt_queued: a prompt waits for its turn (the envelope's `turn_id` is the turn it will run as).
///
/// The terminal's last and recent commands are never here: they reach only the turn's preamble.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PromptQueued {
    /// The prompt.
    pub text: String,
    /// The write that queued it (prompt.send, or a late turn.steer); absent for a prompt the daemon made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_id: Option<CommandId>,
    /// Where it came from.
    pub origin: Origin,
    /// Where it was typed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<PromptContext>,
    /// The settings it asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<PromptSettings>,
    /// The seqs of the turn_steered events whose text it carries; absent when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steers: Vec<u64>,
}
