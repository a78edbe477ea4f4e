//! The Messages stream's events as typed serde shapes, decoded by their SSE name ([`MessagesEvent::decode`]).
//! Members that efr does not read are skipped by serde; unknown events become [`MessagesEvent::Unknown`].

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use super::PROVIDER;
use crate::event::{ModelError, Usage};
use crate::http::ErrorBody;
use crate::parse::{decode, unknown_event};

/// A Messages stream event, typed.
#[derive(Debug)]
pub enum MessagesEvent<'a> {
    /// `message_start`.
    MessageStart(MessageStart),
    /// `content_block_start`.
    ContentBlockStart(BlockStart),
    /// `content_block_delta`.
    ContentBlockDelta {
        /// The block's index.
        index: u32,
        /// The delta.
        delta: Delta<'a>,
    },
    /// `content_block_stop`.
    ContentBlockStop(BlockStop),
    /// `message_delta`.
    MessageDelta(MessageDelta),
    /// `message_stop`: the completion event.
    MessageStop,
    /// `ping`.
    Ping,
    /// `error`.
    Error(ErrorBody),
    /// Any other event: logged at debug and skipped.
    Unknown,
}

impl<'a> MessagesEvent<'a> {
    /// Decodes one SSE event by its name (a nameless event is dispatched on its data's `type`).
    ///
    /// # Errors
    /// [`ModelError::BadResponse`] when the data does not fit the event's shape.
    pub fn decode(name: &'a str, data: &'a str) -> Result<Self, ModelError> {
        let name = if name == "message" {
            decode::<TypeTag<'a>>(PROVIDER, name, data)?.kind
        } else {
            Cow::Borrowed(name)
        };
        Ok(match name.as_ref() {
            "message_start" => Self::MessageStart(decode(PROVIDER, &name, data)?),
            "content_block_start" => Self::ContentBlockStart(decode(PROVIDER, &name, data)?),
            "content_block_delta" => {
                let raw: RawDeltaEvent<'a> = decode(PROVIDER, &name, data)?;
                Self::ContentBlockDelta {
                    index: raw.index,
                    delta: raw.delta.into_delta()?,
                }
            }
            "content_block_stop" => Self::ContentBlockStop(decode(PROVIDER, &name, data)?),
            "message_delta" => Self::MessageDelta(decode(PROVIDER, &name, data)?),
            "message_stop" => Self::MessageStop,
            "ping" => Self::Ping,
            "error" => Self::Error(ErrorBody::parse(data)),
            other => {
                unknown_event(PROVIDER, other);
                Self::Unknown
            }
        })
    }
}

#[derive(Deserialize)]
struct TypeTag<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
}

/// `message_start`.
#[derive(Debug, Deserialize)]
pub struct MessageStart {
    /// The message so far.
    pub message: StartedMessage,
}

/// The message of `message_start`: only its usage matters (the thinking examples have none).
#[derive(Debug, Deserialize)]
pub struct StartedMessage {
    /// Input usage and the first output count.
    #[serde(default)]
    pub usage: Option<AnthropicUsage>,
}

/// `content_block_start`.
#[derive(Debug, Deserialize)]
pub struct BlockStart {
    /// The block's index in the message.
    pub index: u32,
    /// The block, empty but for its kind and ids.
    pub content_block: Block,
}

/// A content block, by `type`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    /// Text.
    Text {
        /// Text already there (usually empty).
        #[serde(default)]
        text: String,
    },
    /// Extended thinking.
    Thinking {
        /// Thinking already there (usually empty).
        #[serde(default)]
        thinking: String,
        /// The signature so far (usually empty; `signature_delta` gives it).
        #[serde(default)]
        signature: String,
    },
    /// Thinking that the provider redacted.
    RedactedThinking {
        /// The encrypted thinking.
        data: String,
    },
    /// A tool call.
    ToolUse {
        /// The call's id.
        id: String,
        /// The tool.
        name: String,
        /// The input object so far (`{}`; `input_json_delta`s give it).
        #[serde(default)]
        input: Value,
    },
    /// Server tools, web search results and other blocks: skipped.
    #[serde(other)]
    Other,
}

/// The delta of a `content_block_delta`.
#[derive(Debug)]
pub enum Delta<'a> {
    /// `text_delta`.
    Text(Cow<'a, str>),
    /// `input_json_delta` (a fragment of JSON; the first one is often empty).
    InputJson(Cow<'a, str>),
    /// `thinking_delta`.
    Thinking(Cow<'a, str>),
    /// `signature_delta`.
    Signature(Cow<'a, str>),
    /// `citations_delta` and kinds efr does not know: skipped.
    Other,
}

// The delta is read flat (one struct with every member optional) rather than as an internally tagged enum: serde
// buffers a tagged enum's content first, which costs more than the rest of the parse on a text stream.
#[derive(Deserialize)]
struct RawDeltaEvent<'a> {
    index: u32,
    #[serde(borrow)]
    delta: RawDelta<'a>,
}

#[derive(Deserialize)]
struct RawDelta<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    thinking: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    signature: Option<Cow<'a, str>>,
}

impl<'a> RawDelta<'a> {
    fn into_delta(self) -> Result<Delta<'a>, ModelError> {
        let missing = |member: &str| ModelError::bad(format!("{} without {member}", self.kind));
        Ok(match self.kind.as_ref() {
            "text_delta" => Delta::Text(self.text.ok_or_else(|| missing("text"))?),
            "input_json_delta" => Delta::InputJson(self.partial_json.ok_or_else(|| missing("partial_json"))?),
            "thinking_delta" => Delta::Thinking(self.thinking.ok_or_else(|| missing("thinking"))?),
            "signature_delta" => Delta::Signature(self.signature.ok_or_else(|| missing("signature"))?),
            other => {
                unknown_event(PROVIDER, other);
                Delta::Other
            }
        })
    }
}

/// `content_block_stop`.
#[derive(Debug, Deserialize)]
pub struct BlockStop {
    /// The block's index.
    pub index: u32,
}

/// `message_delta`.
#[derive(Debug, Deserialize)]
pub struct MessageDelta {
    /// The stop reason.
    pub delta: StopDelta,
    /// Cumulative usage (output tokens; newer API versions repeat the input counts).
    #[serde(default)]
    pub usage: Option<AnthropicUsage>,
}

/// The `delta` of `message_delta`.
#[derive(Debug, Deserialize)]
pub struct StopDelta {
    /// `end_turn`, `max_tokens`, `stop_sequence`, `tool_use`, `pause_turn`, `refusal`, ...
    #[serde(default)]
    pub stop_reason: Option<String>,
}

/// Anthropic's usage members; each absent member keeps the value an earlier event gave.
#[derive(Debug, Default, Clone, Deserialize)]
pub struct AnthropicUsage {
    /// Input tokens that were neither read from nor written to the cache.
    pub input_tokens: Option<u64>,
    /// Input tokens written to the cache.
    pub cache_creation_input_tokens: Option<u64>,
    /// Input tokens read from the cache.
    pub cache_read_input_tokens: Option<u64>,
    /// The cache writes by time to live.
    pub cache_creation: Option<CacheCreation>,
    /// Output tokens.
    pub output_tokens: Option<u64>,
}

/// `usage.cache_creation`.
#[derive(Debug, Default, Clone, Deserialize)]
pub struct CacheCreation {
    /// Tokens written with a five-minute time to live.
    #[serde(default)]
    pub ephemeral_5m_input_tokens: u64,
    /// Tokens written with a one-hour time to live.
    #[serde(default)]
    pub ephemeral_1h_input_tokens: u64,
}

impl AnthropicUsage {
    pub(super) fn merge(&mut self, newer: Self) {
        self.input_tokens = newer.input_tokens.or(self.input_tokens);
        self.cache_creation_input_tokens = newer.cache_creation_input_tokens.or(self.cache_creation_input_tokens);
        self.cache_read_input_tokens = newer.cache_read_input_tokens.or(self.cache_read_input_tokens);
        self.cache_creation = newer.cache_creation.or(self.cache_creation.take());
        self.output_tokens = newer.output_tokens.or(self.output_tokens);
    }

    /// efr's usage: Anthropic's `input_tokens` leaves out cache reads and writes, efr's `input` holds them.
    pub(super) fn to_usage(&self) -> Usage {
        let read = self.cache_read_input_tokens.unwrap_or(0);
        let written = self.cache_creation_input_tokens.unwrap_or(0);
        Usage {
            input: self.input_tokens.unwrap_or(0) + read + written,
            cached_input: read,
            cache_write: written,
            cache_write_1h: self.cache_creation.as_ref().map_or(0, |c| c.ephemeral_1h_input_tokens),
            output: self.output_tokens.unwrap_or(0),
            reasoning: 0,
        }
    }
}
