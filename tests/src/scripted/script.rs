//! The script of the scripted model server: what it answers, step by step, in JSON.
//!
//! A script is provider-neutral: each reply is written once as a list of [`ReplyEvent`]s and encoded in the wire
//! format of the endpoint that asks (Responses, Messages or Chat Completions). Example:
//!
//! ```json
//! {
//!   "steps": [
//!     {"http_error": {"status": 429, "retry_after": "1"}},
//!     {"reply": {
//!       "events": [
//!         {"reasoning": {"text": "Look at the files first.", "title": "Plan"}},
//!         {"text": "Gr"}, {"text": "öße 🙂"},
//!         {"tool_call": {"id": "call_1", "name": "shell", "input": ["{\"command\": \"l", "s\"}"]}},
//!         {"delay_ms": 20}
//!       ],
//!       "usage": {"input": 120, "cached_input": 100, "output": 30},
//!       "stop": "tool_use",
//!       "chunk_bytes": 3
//!     }},
//!     {"reply": {"events": [{"text": "cut here"}, "disconnect"]}}
//!   ],
//!   "models": ["gpt-5", "gpt-5-mini"]
//! }
//! ```

use serde::{Deserialize, Serialize};

/// A whole script.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Script {
    /// The answers to model calls (`POST /v1/responses`, `/v1/messages`, `/v1/chat/completions`), in order; each
    /// call takes the next. A call with no step left gets a 500.
    #[serde(default)]
    pub steps: Vec<Step>,
    /// The answers to `GET /v1/models`, in order, before `models` serves.
    #[serde(default)]
    pub model_steps: Vec<ModelsStep>,
    /// The model list served when `model_steps` is spent; empty serves an empty list.
    #[serde(default)]
    pub models: Vec<String>,
    /// Answers by what a model call's request holds, before `steps`: the first rule whose `contains` is in the
    /// request's body answers with its step, which stays for every such request (such as a summary's request, which
    /// comes whenever efrd compacts).
    #[serde(default)]
    pub when: Vec<When>,
    /// A reply without `usage` counts its input as the request body's bytes and its output as its text's bytes,
    /// 4 bytes a token, as a provider's own count grows with the conversation.
    #[serde(default)]
    pub usage_from_body: bool,
}

/// An answer for the model calls whose request holds a text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct When {
    /// The text, found in the request's body as sent (JSON).
    pub contains: String,
    /// The answer.
    pub step: Step,
}

/// The answer to one model call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// A streamed answer.
    Reply(Reply),
    /// An HTTP error with the provider's error body.
    HttpError(HttpError),
    /// Bytes as given (a stream example file, a broken body).
    Raw(Raw),
}

/// The answer to one `GET /v1/models`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelsStep {
    /// A list with these ids.
    Models(Vec<String>),
    /// An HTTP error.
    HttpError(HttpError),
}

/// A streamed answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reply {
    /// What the model says and does, in order.
    #[serde(default)]
    pub events: Vec<ReplyEvent>,
    /// Token counts, sent where the format sends them (Chat only when the request asked with
    /// `stream_options.include_usage`).
    #[serde(default)]
    pub usage: Option<ScriptUsage>,
    /// The stop: `end_turn` (the default), `tool_use`, `max_tokens`, `refusal`, `content_filter`, `pause_turn`, or
    /// any other word, which goes out as it is where the format has a free stop reason.
    #[serde(default)]
    pub stop: Option<String>,
    /// Split the body into writes of this many bytes (boundaries may split a UTF-8 character); whole SSE events when
    /// absent.
    #[serde(default)]
    pub chunk_bytes: Option<usize>,
    /// A pause between two writes, in milliseconds.
    #[serde(default)]
    pub chunk_delay_ms: Option<u64>,
}

impl Script {
    /// A script that answers each model call with the next of `replies` and lists the model `gpt-5` (the one
    /// [`config_for`](crate::daemon::config_for) names).
    #[must_use]
    pub fn replies(replies: impl IntoIterator<Item = Reply>) -> Self {
        Self {
            steps: replies.into_iter().map(Step::Reply).collect(),
            models: vec!["gpt-5".into()],
            ..Self::default()
        }
    }
}

impl From<Reply> for Step {
    fn from(reply: Reply) -> Self {
        Self::Reply(reply)
    }
}

/// Replies as tests write them: a constructor for the common shapes, then `with_*` for the rest.
impl Reply {
    /// A reply of `events`, whole: no usage, the default stop, whole SSE events.
    #[must_use]
    pub fn of(events: Vec<ReplyEvent>) -> Self {
        Self {
            events,
            ..Self::default()
        }
    }

    /// A reply that is `text`, as one delta.
    #[must_use]
    pub fn text(text: impl Into<String>) -> Self {
        Self::of(vec![ReplyEvent::Text(text.into())])
    }

    /// A reply that streams each of `pieces` as a text delta followed by a pause of `delay_ms` milliseconds (no
    /// pause when 0): an answer that lasts about `pieces × delay_ms`.
    #[must_use]
    pub fn streamed(pieces: impl IntoIterator<Item = String>, delay_ms: u64) -> Self {
        let mut events = Vec::new();
        for piece in pieces {
            events.push(ReplyEvent::Text(piece));
            if delay_ms > 0 {
                events.push(ReplyEvent::DelayMs(delay_ms));
            }
        }
        Self::of(events)
    }

    /// A reply that is one call of tool `name` (see [`ReplyEvent::tool_call`]).
    #[must_use]
    pub fn tool_call(id: &str, name: &str, freeform: bool, input: Vec<String>) -> Self {
        Self::of(vec![ReplyEvent::tool_call(id, name, freeform, input)])
    }

    /// A reply that is one `shell` call of `command` (see [`ReplyEvent::shell`]).
    #[must_use]
    pub fn shell(id: &str, command: &str) -> Self {
        Self::of(vec![ReplyEvent::shell(id, command)])
    }

    /// A reply that is one `shell` call with the whole input `input` (see [`ReplyEvent::shell_with`]).
    #[must_use]
    pub fn shell_with(id: &str, input: &serde_json::Value) -> Self {
        Self::of(vec![ReplyEvent::shell_with(id, input)])
    }

    /// A reply that is one `apply_patch` call (freeform) with the patch text `patch`.
    #[must_use]
    pub fn patch(id: &str, patch: &str) -> Self {
        Self::tool_call(id, "apply_patch", true, vec![patch.into()])
    }

    /// With the token counts `input` and `output` (the others 0).
    #[must_use]
    pub fn with_usage(mut self, input: u64, output: u64) -> Self {
        self.usage = Some(ScriptUsage {
            input,
            output,
            ..ScriptUsage::default()
        });
        self
    }

    /// With the stop `stop` (`tool_use`, `max_tokens`, ...; see [`Reply::stop`]).
    #[must_use]
    pub fn with_stop(mut self, stop: &str) -> Self {
        self.stop = Some(stop.into());
        self
    }

    /// Written in pieces of `bytes` bytes, `delay_ms` milliseconds apart (see [`Reply::chunk_bytes`]).
    #[must_use]
    pub fn with_chunks(mut self, bytes: usize, delay_ms: u64) -> Self {
        self.chunk_bytes = Some(bytes);
        self.chunk_delay_ms = Some(delay_ms);
        self
    }
}

impl ReplyEvent {
    /// A call of tool `name` with id `id` whose input arrives in `input`'s pieces, one delta each; `freeform` for a
    /// plain-text input (see [`ScriptToolCall::freeform`]).
    #[must_use]
    pub fn tool_call(id: &str, name: &str, freeform: bool, input: Vec<String>) -> Self {
        Self::ToolCall(ScriptToolCall {
            id: id.into(),
            name: name.into(),
            freeform,
            input,
        })
    }

    /// A `shell` call of `command`: the input `{"command": command}`, in one piece.
    #[must_use]
    pub fn shell(id: &str, command: &str) -> Self {
        Self::shell_with(id, &serde_json::json!({ "command": command }))
    }

    /// A `shell` call with the whole input `input` (`{"command": ..., "timeout": ...}`), in one piece.
    #[must_use]
    pub fn shell_with(id: &str, input: &serde_json::Value) -> Self {
        Self::tool_call(id, "shell", false, vec![input.to_string()])
    }
}

/// One thing in a reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplyEvent {
    /// Text, as one delta (consecutive texts form one message).
    Text(String),
    /// Reasoning, as one delta; a title opens a new summary part (Responses writes it as `**title**`).
    Reasoning {
        /// The reasoning text.
        text: String,
        /// A heading.
        #[serde(default)]
        title: Option<String>,
    },
    /// A tool call.
    ToolCall(ScriptToolCall),
    /// A refusal's text (Responses and Chat have a part of their own for it; Messages sends text).
    Refusal(String),
    /// An error event inside the stream; the stream ends after it.
    Error {
        /// The provider's error type or code: `overloaded_error`, `rate_limit_error`, `api_error`, ...
        kind: String,
        /// Its message.
        message: String,
    },
    /// A pause, in milliseconds.
    DelayMs(u64),
    /// Abort the connection here (the body breaks off; the client sees a transport error).
    Disconnect,
    /// End the body cleanly here, before the completion event (a truncated stream).
    End,
}

/// A tool call of a reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScriptToolCall {
    /// The call id.
    pub id: String,
    /// The tool.
    pub name: String,
    /// A freeform tool: the input is plain text (Responses `custom_tool_call`; the others get it wrapped as the JSON
    /// string fallback `{"input": "..."}`).
    #[serde(default)]
    pub freeform: bool,
    /// The input in pieces, one delta each (a piece may end mid-token).
    pub input: Vec<String>,
}

/// Token counts of a reply, in efr's terms (`cached_input` and the cache writes are parts of `input`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScriptUsage {
    /// All input tokens.
    #[serde(default)]
    pub input: u64,
    /// Read from the cache.
    #[serde(default)]
    pub cached_input: u64,
    /// Written to the cache.
    #[serde(default)]
    pub cache_write: u64,
    /// The one-hour part of `cache_write`.
    #[serde(default)]
    pub cache_write_1h: u64,
    /// All output tokens.
    #[serde(default)]
    pub output: u64,
    /// The reasoning part of `output`.
    #[serde(default)]
    pub reasoning: u64,
}

/// An HTTP error answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpError {
    /// The status: 401, 429, 500, 529, 400, ...
    pub status: u16,
    /// The `Retry-After` header's value, such as `1`.
    #[serde(default)]
    pub retry_after: Option<String>,
    /// A `retry-after-ms` header (OpenAI).
    #[serde(default)]
    pub retry_after_ms: Option<u64>,
    /// The error's message; a default for the status when absent.
    #[serde(default)]
    pub message: Option<String>,
    /// A 400 that says the prompt does not fit the context window, in the provider's words.
    #[serde(default)]
    pub context_overflow: bool,
    /// The body as given, instead of the provider's error shape.
    #[serde(default)]
    pub body: Option<String>,
    /// A pause before the answer, in milliseconds.
    #[serde(default)]
    pub delay_ms: Option<u64>,
}

/// Bytes as given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Raw {
    /// The status (200 when absent).
    #[serde(default)]
    pub status: Option<u16>,
    /// The content type (`text/event-stream; charset=utf-8` when absent).
    #[serde(default)]
    pub content_type: Option<String>,
    /// The body.
    pub body: String,
    /// Split the body into writes of this many bytes.
    #[serde(default)]
    pub chunk_bytes: Option<usize>,
    /// Abort the connection after the body instead of ending it.
    #[serde(default)]
    pub disconnect: bool,
}
