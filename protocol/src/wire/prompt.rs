//! prompt.send, and the terminal context that a prompt carries.
//!
//! Source: docs/protocol.md, "The contract": "turn settings", "the recent commands of a terminal", "desktop grants" and
//! "routing by scope"; the phone limits of "Remote devices" (a phone's context names no tty).

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{Overridden, PromptSettings, TurnSettings};
use super::route::PromptRoute;
use crate::ids::{CommandId, ConversationId, Timestamp, TurnId};
use crate::macros::is_false;

/// The desktop variables of the user's shell (`shell_context.desktop`): absent when the shell has none of the six.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Desktop {
    /// `$WAYLAND_DISPLAY`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wayland_display: Option<String>,
    /// `$DISPLAY`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<String>,
    /// `$HYPRLAND_INSTANCE_SIGNATURE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hyprland_instance_signature: Option<String>,
    /// `$SWAYSOCK`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swaysock: Option<String>,
    /// `$I3SOCK`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub i3sock: Option<String>,
    /// `$NIRI_SOCKET`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub niri_socket: Option<String>,
    /// The shell has `$XAUTHORITY` (never its path; false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub has_xauthority: bool,
}

/// The user's interactive shell that sent the prompt. `shell` and `pid` are this project's members; `desktop` is
/// the spec's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ShellContext {
    /// The shell's name, such as `bash` or `zsh`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell: Option<String>,
    /// The shell's process id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The shell's desktop variables; absent when it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desktop: Option<Desktop>,
}

/// Where a prompt was typed. A prompt from a phone names no tty (`invalid` otherwise).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PromptContext {
    /// The working directory, absolute; absent when the client has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// The terminal, such as `/dev/pts/3`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tty: Option<String>,
    /// The user's shell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell_context: Option<ShellContext>,
}

/// A command line the terminal ran (`last_command` and each of `recent_commands`). These reach only the turn's
/// preamble: never an event or the store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TerminalCommand {
    /// The command line.
    pub command: String,
    /// Its exit status, absent when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<i32>,
    /// Where it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// When it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<Timestamp>,
    /// How long it ran, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// prompt.send params (scope operate, a write).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PromptSendParams {
    /// The write's id: a repeat returns the stored result and changes nothing.
    pub command_id: CommandId,
    /// The prompt.
    pub text: String,
    /// The conversation; absent: the terminal's conversation for the prompt's scope (see `route` of the result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<ConversationId>,
    /// `,new`: start a new conversation, which becomes the conversation of the terminal's slot for the prompt's
    /// scope; false when absent. With `conversation_id` it is `invalid`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub new: bool,
    /// Where the prompt was typed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<PromptContext>,
    /// The terminal's last command before the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_command: Option<TerminalCommand>,
    /// The terminal's recent command lines, oldest first; absent when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recent_commands: Vec<TerminalCommand>,
    /// The settings the prompt asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<PromptSettings>,
}

/// prompt.send result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PromptSendResult {
    /// The conversation the prompt went to (new or existing).
    pub conversation_id: ConversationId,
    /// The prompt's turn.
    pub turn_id: TurnId,
    /// The seq of its prompt_queued event.
    pub seq: u64,
    /// The settings the turn will run with; absent only from a daemon before turn settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<TurnSettings>,
    /// Which settings came from the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overridden: Option<Overridden>,
    /// Where a terminal's prompt went; absent for a prompt with no terminal or with a conversation id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<PromptRoute>,
}

/// Run a prompt later instead (turn.steer `if_late`, turn.interrupt `resend_as`), tagged by `kind`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum QueueAs {
    /// Queue it as a prompt, with the members of prompt.send.
    Queue {
        /// Where it was typed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context: Option<PromptContext>,
        /// The terminal's last command.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        last_command: Option<TerminalCommand>,
        /// The terminal's recent commands, oldest first; absent when empty.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        recent_commands: Vec<TerminalCommand>,
        /// The settings it asks for.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        settings: Option<PromptSettings>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_needs_a_command_id_and_text() {
        let err = serde_json::from_str::<PromptSendParams>(r#"{"text":"hi"}"#).unwrap_err();
        assert!(err.to_string().contains("command_id"), "{err}");
        let ok: PromptSendParams =
            serde_json::from_str(r#"{"command_id":"6f1c1e9e-4c1d-4bb5-9f6e-0c8f9c7d2a11","text":"hi"}"#).unwrap();
        assert!(ok.recent_commands.is_empty() && ok.context.is_none());
        assert!(serde_json::from_str::<PromptSendParams>(r#"{"command_id":"not-a-uuid","text":"hi"}"#).is_err());
    }
}
