//! Pieces that many methods and events share: the permission mode, turn settings, usage, the context window, why a
//! turn stopped, and where a request came from.
//!
//! Source: docs/protocol.md, "The contract": "turn settings", "the daemon applies turn settings", "the context window
//! and its compaction", "cache writes", "why a turn stopped" and "full mode".

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::macros::{is_false, is_zero, wire_enum};

wire_enum! {
    /// The permission mode of a turn (docs/architecture.md, "Policy and modes").
    pub enum Mode {
        /// Ask before every call that runs a command or changes a file.
        Manual = "manual",
        /// Run read-only commands and edits inside the project; ask before anything else.
        Cautious = "cautious",
        /// Run every call contained in the sandbox and judge each exit.
        Auto = "auto",
        /// Run as the user with no sandbox and no question; the floors still hold.
        Full = "full",
    }
    unknown
}

/// The settings a prompt asks for (prompt.send `settings`, the prompt_queued event): each member absent means none.
///
/// A model that is not in models.list, or an effort that is not one of the model's efforts, fails with `invalid` and
/// data `{setting, value, choices}` (plus `model` for an effort).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PromptSettings {
    /// The mode to run in; absent: the conversation's (or the config's) mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// A model id of models.list; absent: the default model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// A reasoning effort, one of the model's efforts (a plain string such as `high`); absent: the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
}

/// The settings a turn runs with (the turn_started event, the prompt.send result).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnSettings {
    /// The effective mode (a turn from a phone records at most `cautious`).
    pub mode: Mode,
    /// The effective model id.
    pub model: String,
    /// The effective effort, absent when the model has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    /// Set when the turn runs with a lesser mode than the one asked for; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<ModeFallback>,
}

/// Why a turn runs with a lesser mode than it asked for (`mode_fallback`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ModeFallback {
    /// The mode that was asked for.
    pub asked: Mode,
    /// Why it was lowered, one plain sentence (such as "a turn that a job notice starts runs with at most auto").
    pub reason: String,
}

/// Which of a turn's settings came from the prompt rather than the defaults; each flag is false when absent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Overridden {
    /// The mode came from the prompt.
    #[serde(default, skip_serializing_if = "is_false")]
    pub mode: bool,
    /// The model came from the prompt.
    #[serde(default, skip_serializing_if = "is_false")]
    pub model: bool,
    /// The effort came from the prompt.
    #[serde(default, skip_serializing_if = "is_false")]
    pub effort: bool,
}

/// Token counts of a turn, summed over its model calls. The optional counts are absent when zero.
///
/// `cached_input_tokens`, `cache_write_tokens` and `cache_write_1h_tokens` are parts of `input_tokens`;
/// `reasoning_tokens` is a part of `output_tokens`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Usage {
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the provider's prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_input_tokens: u64,
    /// Output tokens spent on reasoning.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
    /// The last model call's input plus its output.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub context_tokens: u64,
    /// Input tokens the provider wrote to its prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
    /// The part of `cache_write_tokens` written with a time to live of one hour.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_1h_tokens: u64,
}

/// How full the model's context is (the `context` member of turn events and the `context` draft part).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ContextFill {
    /// Tokens in the context now.
    pub tokens: u64,
    /// The point a client shows as 100% (where compaction starts).
    pub limit: u64,
    /// The model's whole context window in tokens.
    pub window: u64,
}

wire_enum! {
    /// Why the last model call of a turn stopped.
    pub enum StopReason {
        /// The model ended its answer.
        EndTurn = "end_turn",
        /// The answer reached the output limit.
        MaxTokens = "max_tokens",
        /// The model refused.
        Refusal = "refusal",
        /// The provider's content filter stopped the answer.
        ContentFilter = "content_filter",
        /// The provider paused a long turn.
        PauseTurn = "pause_turn",
    }
}

/// Why a turn stopped (turn_completed `stop`); absent for a normal answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Stop {
    /// The provider's reason.
    pub reason: StopReason,
    /// The last model call gave no text and no tool call (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub empty: bool,
}

wire_enum! {
    /// Where a request that changed a conversation came from. The tailnet listener treats every connection as the
    /// phone origin (docs/protocol.md, "The contract": "Remote devices"); the daemon itself acts at a restart or for a
    /// job notice.
    pub enum Origin {
        /// A client on the Unix socket (a terminal, a script).
        Terminal = "terminal",
        /// A paired device on the tailnet listener.
        Phone = "phone",
        /// The daemon itself.
        Daemon = "daemon",
    }
    unknown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_modes_read_as_unknown() {
        assert_eq!(serde_json::from_str::<Mode>("\"yolo\"").unwrap(), Mode::Unknown);
        assert_eq!(serde_json::from_str::<Mode>("\"full\"").unwrap(), Mode::Full);
        assert_eq!(serde_json::to_string(&Mode::Cautious).unwrap(), "\"cautious\"");
    }

    #[test]
    fn zero_counts_are_absent_and_default_on_input() {
        let usage = Usage {
            input_tokens: 10,
            output_tokens: 2,
            ..Usage::default()
        };
        let wire = serde_json::to_string(&usage).unwrap();
        assert_eq!(wire, r#"{"input_tokens":10,"output_tokens":2}"#);
        assert_eq!(serde_json::from_str::<Usage>(&wire).unwrap(), usage);
        assert!(serde_json::from_str::<Usage>(r#"{"input_tokens":10}"#).is_err());
    }

    #[test]
    fn a_stop_reason_outside_the_set_is_an_error() {
        // The spec names no unknown for stop reasons: a reader refuses what it cannot show.
        assert!(serde_json::from_str::<Stop>(r#"{"reason":"tired"}"#).is_err());
        let stop: Stop = serde_json::from_str(r#"{"reason":"max_tokens"}"#).unwrap();
        assert!(!stop.empty);
    }
}
