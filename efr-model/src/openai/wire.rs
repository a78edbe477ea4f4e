//! The Responses stream's events as typed serde shapes, decoded by their SSE name ([`ResponsesEvent::decode`]).
//! Members that efr does not read are skipped by serde; unknown events become [`ResponsesEvent::Unknown`].

use std::borrow::Cow;

use serde::Deserialize;

use super::PROVIDER;
use crate::event::{ModelError, Usage};
use crate::http::ErrorBody;
use crate::parse::{decode, unknown_event};

/// A Responses stream event, typed. Events that efr does not need (`response.created`, `response.content_part.added`,
/// the `.done` events whose content the deltas already gave) are read by name only.
#[derive(Debug)]
pub enum ResponsesEvent<'a> {
    /// `response.created`, `response.in_progress`, `response.queued`, `response.content_part.*`,
    /// `response.output_text.done`, `response.output_text.annotation.added`, `response.refusal.done`,
    /// `response.function_call_arguments.done`, `response.custom_tool_call_input.done`,
    /// `response.reasoning_summary_part.done`, `response.reasoning_summary_text.done`,
    /// `response.reasoning_text.done`: nothing to do (the `.done` members repeat the deltas; `output_item.done` is
    /// read instead).
    Progress,
    /// `response.output_item.added`.
    OutputItemAdded(OutputItemEvent),
    /// `response.output_item.done`.
    OutputItemDone(OutputItemEvent),
    /// `response.output_text.delta`.
    OutputTextDelta(DeltaEvent<'a>),
    /// `response.refusal.delta`.
    RefusalDelta(DeltaEvent<'a>),
    /// `response.function_call_arguments.delta`.
    FunctionCallArgumentsDelta(DeltaEvent<'a>),
    /// `response.custom_tool_call_input.delta`.
    CustomToolCallInputDelta(DeltaEvent<'a>),
    /// `response.reasoning_summary_part.added`.
    ReasoningSummaryPartAdded(SummaryPartEvent),
    /// `response.reasoning_summary_text.delta`.
    ReasoningSummaryTextDelta(SummaryDeltaEvent<'a>),
    /// `response.reasoning_text.delta` (raw reasoning, from open-weight models).
    ReasoningTextDelta(DeltaEvent<'a>),
    /// `response.completed`.
    Completed(ResponseEvent),
    /// `response.incomplete`.
    Incomplete(ResponseEvent),
    /// `response.failed`.
    Failed(ResponseEvent),
    /// `error`.
    Error(ErrorBody),
    /// Any other event: logged at debug and skipped.
    Unknown,
}

impl<'a> ResponsesEvent<'a> {
    /// Decodes one SSE event by its name (the `type`, which the Responses stream sends as the SSE event name too; a
    /// nameless event is dispatched on its data's `type`).
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
            "response.output_item.added" => Self::OutputItemAdded(decode(PROVIDER, &name, data)?),
            "response.output_item.done" => Self::OutputItemDone(decode(PROVIDER, &name, data)?),
            "response.output_text.delta" => Self::OutputTextDelta(decode(PROVIDER, &name, data)?),
            "response.refusal.delta" => Self::RefusalDelta(decode(PROVIDER, &name, data)?),
            "response.function_call_arguments.delta" => {
                Self::FunctionCallArgumentsDelta(decode(PROVIDER, &name, data)?)
            }
            "response.custom_tool_call_input.delta" => Self::CustomToolCallInputDelta(decode(PROVIDER, &name, data)?),
            "response.reasoning_summary_part.added" => Self::ReasoningSummaryPartAdded(decode(PROVIDER, &name, data)?),
            "response.reasoning_summary_text.delta" => Self::ReasoningSummaryTextDelta(decode(PROVIDER, &name, data)?),
            "response.reasoning_text.delta" => Self::ReasoningTextDelta(decode(PROVIDER, &name, data)?),
            "response.completed" => Self::Completed(decode(PROVIDER, &name, data)?),
            "response.incomplete" => Self::Incomplete(decode(PROVIDER, &name, data)?),
            "response.failed" => Self::Failed(decode(PROVIDER, &name, data)?),
            "error" => Self::Error(ErrorBody::parse(data)),
            "response.created"
            | "response.in_progress"
            | "response.queued"
            | "response.content_part.added"
            | "response.content_part.done"
            | "response.output_text.done"
            | "response.output_text.annotation.added"
            | "response.refusal.done"
            | "response.function_call_arguments.done"
            | "response.custom_tool_call_input.done"
            | "response.reasoning_summary_part.done"
            | "response.reasoning_summary_text.done"
            | "response.reasoning_text.done" => Self::Progress,
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

/// `response.output_item.added` / `.done`.
#[derive(Debug, Deserialize)]
pub struct OutputItemEvent {
    /// The item's position in the response's output.
    pub output_index: u32,
    /// The item.
    pub item: OutputItem,
}

/// An item of a response's output, by its `type`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutputItem {
    /// An assistant message.
    Message {},
    /// A call of a function tool.
    FunctionCall {
        /// The call's id, echoed with its output.
        call_id: String,
        /// The tool.
        name: String,
        /// The JSON arguments (empty in `.added`, whole in `.done`).
        #[serde(default)]
        arguments: String,
    },
    /// A call of a custom (freeform) tool.
    CustomToolCall {
        /// The call's id.
        call_id: String,
        /// The tool.
        name: String,
        /// The plain-text input (empty in `.added`, whole in `.done`).
        #[serde(default)]
        input: String,
    },
    /// A reasoning item.
    Reasoning {
        /// `rs_...`.
        #[serde(default)]
        id: Option<String>,
        /// The summary parts.
        #[serde(default)]
        summary: Vec<SummaryText>,
        /// The encrypted reasoning, when asked for.
        #[serde(default)]
        encrypted_content: Option<String>,
    },
    /// Another kind of item (web search, file search, ...): skipped.
    #[serde(other)]
    Other,
}

/// One summary part of a reasoning item.
#[derive(Debug, Deserialize)]
pub struct SummaryText {
    /// The part's text.
    pub text: String,
}

/// A text delta of an output item.
#[derive(Debug, Deserialize)]
pub struct DeltaEvent<'a> {
    /// The item's position.
    pub output_index: u32,
    /// The text added (borrowed when it has no escapes).
    #[serde(borrow)]
    pub delta: Cow<'a, str>,
}

/// `response.reasoning_summary_part.added`.
#[derive(Debug, Deserialize)]
pub struct SummaryPartEvent {
    /// The reasoning item's position.
    pub output_index: u32,
    /// The part's position in the summary.
    pub summary_index: u32,
}

/// `response.reasoning_summary_text.delta`.
#[derive(Debug, Deserialize)]
pub struct SummaryDeltaEvent<'a> {
    /// The reasoning item's position.
    pub output_index: u32,
    /// The part's position in the summary.
    pub summary_index: u32,
    /// The text added.
    #[serde(borrow)]
    pub delta: Cow<'a, str>,
}

/// `response.completed`, `.incomplete`, `.failed`: the members of the response that efr reads.
#[derive(Debug, Deserialize)]
pub struct ResponseEvent {
    /// The response.
    pub response: ResponseBody,
}

/// The final state of a response.
#[derive(Debug, Deserialize)]
pub struct ResponseBody {
    /// Why it failed (`response.failed`).
    #[serde(default)]
    pub error: Option<ResponseError>,
    /// Why it is incomplete (`response.incomplete`).
    #[serde(default)]
    pub incomplete_details: Option<IncompleteDetails>,
    /// Token counts (null in some failures).
    #[serde(default)]
    pub usage: Option<ResponsesUsage>,
}

/// `response.error`.
#[derive(Debug, Deserialize)]
pub struct ResponseError {
    /// `server_error`, `rate_limit_exceeded`, ...
    #[serde(default)]
    pub code: Option<String>,
    /// The provider's message.
    #[serde(default)]
    pub message: String,
}

/// `response.incomplete_details`.
#[derive(Debug, Deserialize)]
pub struct IncompleteDetails {
    /// `max_output_tokens` or `content_filter`.
    #[serde(default)]
    pub reason: Option<String>,
}

/// `response.usage`.
#[derive(Debug, Deserialize)]
pub struct ResponsesUsage {
    /// Input tokens, cached included.
    #[serde(default)]
    pub input_tokens: u64,
    /// `{cached_tokens}`.
    #[serde(default)]
    pub input_tokens_details: Option<CachedTokens>,
    /// Output tokens, reasoning included.
    #[serde(default)]
    pub output_tokens: u64,
    /// `{reasoning_tokens}`.
    #[serde(default)]
    pub output_tokens_details: Option<ReasoningTokens>,
}

/// `input_tokens_details` / `prompt_tokens_details`.
#[derive(Debug, Default, Deserialize)]
pub struct CachedTokens {
    /// Input tokens read from the cache.
    #[serde(default)]
    pub cached_tokens: u64,
}

/// `output_tokens_details` / `completion_tokens_details`.
#[derive(Debug, Default, Deserialize)]
pub struct ReasoningTokens {
    /// Output tokens spent on reasoning.
    #[serde(default)]
    pub reasoning_tokens: u64,
}

impl From<&ResponsesUsage> for Usage {
    fn from(usage: &ResponsesUsage) -> Self {
        Self {
            input: usage.input_tokens,
            cached_input: usage.input_tokens_details.as_ref().map_or(0, |d| d.cached_tokens),
            output: usage.output_tokens,
            reasoning: usage.output_tokens_details.as_ref().map_or(0, |d| d.reasoning_tokens),
            ..Self::default()
        }
    }
}
