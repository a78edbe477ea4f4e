//! What a model call yields: a stream of [`ModelEvent`]s, ended by one [`ModelEvent::Stop`] or one [`ModelError`].
//!
//! Every provider's wire stream (Responses, Messages, Chat Completions) is mapped to these few shapes, so the turn loop
//! never sees a provider's own events. The shapes follow docs/architecture.md, "Models", and the protocol's words: text
//! offsets count UTF-8 bytes, a message index counts the messages of the call that have text, from 0 (docs/protocol.md,
//! "Ids, times and text offsets").
//!
//! A stream is well formed when it ends with exactly one `Stop` (preceded by at most one `Usage`) or with one error;
//! nothing follows either. A stream that closes before the provider's completion event ends with
//! [`ModelError::StreamEnded`], never with a `Stop`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::request::ReasoningCarry;

/// One step of a model's answer, in the order the provider sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelEvent {
    /// Text of an assistant message.
    TextDelta {
        /// The message's index among this call's messages that have text, from 0. A message gets its index with its
        /// first non-empty delta, so a message without text has none (docs/protocol.md, "Ids, times and text offsets").
        index: u32,
        /// UTF-8 byte offset of `delta` in the message's text: the bytes of the message before it.
        offset: u64,
        /// The text added, never empty.
        delta: String,
    },
    /// Text of the model's reasoning (a summary for OpenAI, thinking for Anthropic, `reasoning_content` for servers
    /// that stream it).
    ReasoningDelta {
        /// The text added, never empty.
        delta: String,
        /// A heading for the reasoning that follows, where the provider gives one (OpenAI summaries open with a bold
        /// `**Title**` line; it is also kept in `delta`).
        title: Option<String>,
    },
    /// A reasoning block is complete: what the next request must carry back for the provider to continue it
    /// (OpenAI's encrypted content, Anthropic's signed thinking). The turn loop stores it in the history as-is.
    ReasoningDone {
        /// The block's text as streamed (summary or thinking), for the history.
        text: String,
        /// The provider's opaque carry-over; `None` when the provider gave nothing to carry.
        carry: Option<ReasoningCarry>,
    },
    /// The model began a tool call.
    ToolCallStarted {
        /// The provider's id of the call, echoed with its output.
        call_id: String,
        /// The tool's name, as given in the request's tools.
        tool: String,
        /// True for a freeform tool, whose input is plain text rather than JSON (docs/protocol.md, "The contract":
        /// "freeform tools").
        freeform: bool,
    },
    /// More input of a started tool call.
    ToolInputDelta {
        /// The call this input belongs to.
        call_id: String,
        /// The input text added (a fragment of JSON for a function tool: it may split a token).
        delta: String,
        /// Bytes of input received so far for this call, `delta` included (the `tool_input` draft counts these).
        bytes: u64,
    },
    /// A tool call's input is complete.
    ToolCallDone {
        /// The call.
        call_id: String,
        /// The tool's name.
        tool: String,
        /// True for a freeform tool.
        freeform: bool,
        /// The whole input: the JSON text the model wrote for a function tool (not checked here), the plain text for
        /// a freeform tool.
        input: String,
    },
    /// Token counts of the call, sent once, just before `Stop`, when the provider reported any.
    Usage(Usage),
    /// The call ended normally. Always the last event of a successful stream.
    Stop {
        /// Why the model stopped.
        reason: StopReason,
        /// True when the call gave no text and no tool call (spec: turn_completed's `stop.empty`).
        empty: bool,
    },
}

/// Token counts of one model call. Every count is in tokens; `cached_input`, `cache_write` and `cache_write_1h` are
/// parts of `input`, and `reasoning` is a part of `output`, for every provider (docs/protocol.md, "The contract":
/// "cache writes").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// All input tokens, cached or not.
    pub input: u64,
    /// Input tokens read from the provider's prompt cache.
    pub cached_input: u64,
    /// Input tokens written to the prompt cache (Anthropic's `cache_creation_input_tokens`).
    pub cache_write: u64,
    /// The part of `cache_write` written with a time to live of one hour.
    pub cache_write_1h: u64,
    /// All output tokens, reasoning included.
    pub output: u64,
    /// Output tokens spent on reasoning, where the provider reports them.
    pub reasoning: u64,
}

/// Why a model call stopped: the spec's closed set of turn_completed `stop.reason`.
///
/// A provider's stop for tool use (`tool_use`, `tool_calls`) and for a stop sequence is [`StopReason::EndTurn`]: the
/// call ended normally and its tool calls say the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its answer (or asked for tools).
    EndTurn,
    /// The output limit cut the answer (Anthropic `max_tokens` and `model_context_window_exceeded`, Responses
    /// `incomplete` for `max_output_tokens`, Chat `length`).
    MaxTokens,
    /// The model refused (Anthropic `refusal`; a refusal part in Responses or Chat).
    Refusal,
    /// The provider's content filter cut the answer.
    ContentFilter,
    /// Anthropic paused a long turn (`pause_turn`); the caller sends the answer back to let it continue.
    PauseTurn,
}

/// Why a model call failed. Each variant says whether a retry may help ([`ModelError::is_retryable`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// No key is available for a provider that needs one (nothing stored, no environment key).
    #[error("{}", efr_protocol::error::login::no_api_key(provider))]
    MissingKey {
        /// The provider's name, such as `anthropic-api`.
        provider: String,
    },
    /// The provider refused the key (HTTP 401). Never retried; the key is marked refused.
    #[error("{}", efr_protocol::error::login::key_refused(provider, message))]
    KeyRefused {
        /// The provider's name.
        provider: String,
        /// The provider's message, which never holds the key.
        message: String,
    },
    /// Too many requests (HTTP 429 or a `rate_limit` error event).
    #[error("rate limited: {message}")]
    RateLimited {
        /// How long the provider asked to wait (`Retry-After`, `retry-after-ms`), when it said.
        retry_after: Option<Duration>,
        /// The provider's message.
        message: String,
    },
    /// The request does not fit the model's context window.
    #[error("the conversation does not fit the model's context window: {message}")]
    ContextOverflow {
        /// The provider's message.
        message: String,
    },
    /// The provider is overloaded (HTTP 529, `overloaded_error`).
    #[error("the provider is overloaded: {message}")]
    Overloaded {
        /// How long the provider asked to wait, when it said.
        retry_after: Option<Duration>,
        /// The provider's message.
        message: String,
    },
    /// The provider failed (HTTP 5xx, `api_error`, `server_error`, a `response.failed`).
    #[error("the provider failed{}: {message}", status.map(|s| format!(" (HTTP {s})")).unwrap_or_default())]
    Server {
        /// The HTTP status, when the failure came as one (absent for an error event inside a stream).
        status: Option<u16>,
        /// The provider's message.
        message: String,
    },
    /// The provider refused the request for another reason (HTTP 400, 403, 404, 413, ...). Not retried.
    #[error("the provider rejected the request (HTTP {status}): {message}")]
    Rejected {
        /// The HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The connection failed, timed out or broke (no HTTP answer, or a body cut short).
    #[error("connection to the provider failed: {message}")]
    Transport {
        /// What failed.
        message: String,
    },
    /// The stream closed before the provider's completion event (`response.completed`, `message_stop`,
    /// `data: [DONE]`).
    #[error("the model's stream ended before it was complete")]
    StreamEnded,
    /// The provider sent something that breaks its own format (invalid JSON, a delta for a block that never started).
    #[error("the provider sent a response efr cannot read: {message}")]
    BadResponse {
        /// What was wrong.
        message: String,
    },
}

impl ModelError {
    /// Whether a new attempt may succeed: rate limits, overload, server and transport errors, and a stream that was
    /// cut. A refused or missing key, a rejected request, a context overflow and a bad response are final.
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Self::RateLimited { .. }
                | Self::Overloaded { .. }
                | Self::Server { .. }
                | Self::Transport { .. }
                | Self::StreamEnded
        )
    }

    /// The wait the provider asked for, if any.
    #[must_use]
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::RateLimited { retry_after, .. } | Self::Overloaded { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// A [`ModelError::BadResponse`] with `message`.
    pub(crate) fn bad(message: impl Into<String>) -> Self {
        Self::BadResponse {
            message: message.into(),
        }
    }
}
