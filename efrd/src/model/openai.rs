//! `openai-api`: the Responses API (`POST /v1/responses` with `stream: true`).
//!
//! The request keeps nothing on OpenAI's side (`store: false`); reasoning continues across calls through its
//! encrypted content (`include: ["reasoning.encrypted_content"]`), which comes back in a `reasoning` output item and
//! goes out again as an input item. Function tools are `function` tools; freeform tools are `custom` tools with plain
//! text input.
//!
//! The stream: each SSE event names its `type` (also in the data) and carries a `sequence_number`. Text comes as
//! `response.output_text.delta`, tool input as `response.function_call_arguments.delta` and
//! `response.custom_tool_call_input.delta`, reasoning summaries as `response.reasoning_summary_text.delta`, keyed by
//! `output_index`. The stream ends after `response.completed`, `response.incomplete` or `response.failed`; an `error`
//! event fails it. There is no `[DONE]`.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{Value, json};

use super::event::{ModelError, ModelEvent, StopReason, Usage};
use super::http::ErrorBody;
use super::parse::{Answer, StreamParser, TextMessage, ToolCall, bold_title, decode, unknown_event};
use super::request::{HistoryItem, ModelRequest, ReasoningCarry, Tool};

const PROVIDER: &str = "openai-api";

/// The path of the Responses endpoint under the base URL.
pub const PATH: &str = "/v1/responses";

/// The JSON body of a streaming Responses request for `request`.
#[must_use]
pub fn request_body(request: &ModelRequest) -> Value {
    let freeform_calls: HashMap<&str, bool> = request
        .history
        .iter()
        .filter_map(|item| match item {
            HistoryItem::ToolCall { call_id, freeform, .. } => Some((call_id.as_str(), *freeform)),
            _ => None,
        })
        .collect();
    let input: Vec<Value> = request
        .history
        .iter()
        .filter_map(|item| input_item(item, &freeform_calls))
        .collect();
    let tools: Vec<Value> = request
        .tools
        .iter()
        .map(|tool| match tool {
            Tool::Function {
                name,
                description,
                parameters,
            } => json!({
                "type": "function", "name": name, "description": description, "parameters": parameters, "strict": false
            }),
            Tool::Freeform { name, description } => json!({
                "type": "custom", "name": name, "description": description, "format": {"type": "text"}
            }),
        })
        .collect();
    let mut body = json!({
        "model": request.model,
        "input": input,
        "stream": true,
        "store": false,
    });
    if !request.instructions.is_empty() {
        body["instructions"] = json!(request.instructions);
    }
    if !tools.is_empty() {
        body["tools"] = json!(tools);
        body["tool_choice"] = json!("auto");
    }
    // Only reasoning models take `reasoning`; the catalog gives those an effort.
    if let Some(effort) = &request.effort {
        body["reasoning"] = json!({"effort": effort, "summary": "auto"});
        body["include"] = json!(["reasoning.encrypted_content"]);
    }
    if let Some(max) = request.max_output {
        body["max_output_tokens"] = json!(max);
    }
    if let Some(key) = &request.cache_key {
        body["prompt_cache_key"] = json!(key);
    }
    body
}

fn input_item(item: &HistoryItem, freeform_calls: &HashMap<&str, bool>) -> Option<Value> {
    Some(match item {
        HistoryItem::UserText { text } => {
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
        }
        HistoryItem::AssistantText { text } => {
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})
        }
        // Without stored items, a reasoning item is worth sending only with its encrypted content; the item id is
        // left out, since nothing is stored under it. Another provider's reasoning cannot be sent.
        HistoryItem::Reasoning {
            carry:
                Some(ReasoningCarry::OpenAi {
                    summary,
                    encrypted_content,
                    ..
                }),
            ..
        } => {
            let encrypted = encrypted_content.as_ref()?;
            let summary: Vec<Value> = summary
                .iter()
                .map(|text| json!({"type": "summary_text", "text": text}))
                .collect();
            json!({"type": "reasoning", "summary": summary, "encrypted_content": encrypted})
        }
        HistoryItem::Reasoning { .. } => return None,
        HistoryItem::ToolCall {
            call_id,
            tool,
            freeform: true,
            input,
        } => {
            json!({"type": "custom_tool_call", "call_id": call_id, "name": tool, "input": input})
        }
        HistoryItem::ToolCall {
            call_id,
            tool,
            freeform: false,
            input,
        } => {
            json!({"type": "function_call", "call_id": call_id, "name": tool, "arguments": input})
        }
        HistoryItem::ToolOutput { call_id, output, .. } => {
            let kind = if freeform_calls.get(call_id.as_str()).copied().unwrap_or(false) {
                "custom_tool_call_output"
            } else {
                "function_call_output"
            };
            json!({"type": kind, "call_id": call_id, "output": output})
        }
    })
}

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

/// What the parser holds for one message or tool call.
#[derive(Debug)]
enum Item {
    Message(TextMessage),
    Call(ToolCall),
}

/// What the parser holds for one reasoning item: the summary parts, whether each part's title was looked for, and
/// raw reasoning text.
#[derive(Debug, Default)]
struct Reasoning {
    parts: Vec<String>,
    titled: Vec<bool>,
    raw: String,
}

impl Reasoning {
    fn part(&mut self, index: u32) -> usize {
        let index = index as usize;
        if self.parts.len() <= index {
            self.parts.resize(index + 1, String::new());
            self.titled.resize(index + 1, false);
        }
        index
    }
}

/// The Responses stream parser (see the module docs).
#[derive(Debug, Default)]
pub struct ResponsesParser {
    answer: Answer,
    items: HashMap<u32, Item>,
    reasoning: HashMap<u32, Reasoning>,
}

impl ResponsesParser {
    /// A parser for one response.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Text of the message item at `output_index`. A text delta for an item that was never added still counts: the
    /// item is taken as a message.
    fn text(&mut self, output_index: u32, delta: &str, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        match self
            .items
            .entry(output_index)
            .or_insert_with(|| Item::Message(TextMessage::default()))
        {
            Item::Message(message) => {
                message.push(&mut self.answer, delta, out);
                Ok(())
            }
            Item::Call(_) => Err(ModelError::bad("a text delta for an item that is a tool call")),
        }
    }

    fn added(&mut self, event: OutputItemEvent, out: &mut Vec<ModelEvent>) {
        let item = match event.item {
            OutputItem::Message {} => Item::Message(TextMessage::default()),
            OutputItem::FunctionCall { call_id, name, .. } => {
                Item::Call(ToolCall::start(&mut self.answer, call_id, name, false, false, out))
            }
            OutputItem::CustomToolCall { call_id, name, .. } => {
                Item::Call(ToolCall::start(&mut self.answer, call_id, name, true, false, out))
            }
            OutputItem::Reasoning { .. } => {
                self.reasoning.insert(event.output_index, Reasoning::default());
                return;
            }
            OutputItem::Other => return,
        };
        self.items.insert(event.output_index, item);
    }

    fn done(&mut self, event: OutputItemEvent, out: &mut Vec<ModelEvent>) {
        let held = self.items.remove(&event.output_index);
        match event.item {
            OutputItem::FunctionCall {
                call_id,
                name,
                arguments,
            } => {
                let call = match held {
                    Some(Item::Call(call)) => call,
                    _ => ToolCall::start(&mut self.answer, call_id, name, false, false, out),
                };
                call.done(Some(arguments), out);
            }
            OutputItem::CustomToolCall { call_id, name, input } => {
                let call = match held {
                    Some(Item::Call(call)) => call,
                    _ => ToolCall::start(&mut self.answer, call_id, name, true, false, out),
                };
                call.done(Some(input), out);
            }
            OutputItem::Reasoning {
                id,
                summary,
                encrypted_content,
            } => {
                let Reasoning { parts, raw, .. } = self.reasoning.remove(&event.output_index).unwrap_or_default();
                // The item's own summary is the whole text; the deltas are the fallback.
                let summary: Vec<String> = if summary.is_empty() {
                    parts
                } else {
                    summary.into_iter().map(|part| part.text).collect()
                };
                let text = if summary.is_empty() { raw } else { summary.join("\n\n") };
                let carry = Some(ReasoningCarry::OpenAi {
                    id,
                    summary,
                    encrypted_content,
                });
                out.push(ModelEvent::ReasoningDone { text, carry });
            }
            OutputItem::Message {} | OutputItem::Other => {}
        }
    }

    fn finish(&mut self, usage: Option<&ResponsesUsage>, reason: StopReason, out: &mut Vec<ModelEvent>) {
        // A call whose `output_item.done` never came is closed with the input the deltas gave.
        let mut open: Vec<(u32, Item)> = self.items.drain().collect();
        open.sort_by_key(|(index, _)| *index);
        for (_, item) in open {
            if let Item::Call(call) = item {
                call.done(None, out);
            }
        }
        self.reasoning.clear();
        self.answer.finish(usage.map(Usage::from), reason, out);
    }
}

impl StreamParser for ResponsesParser {
    fn event(&mut self, name: &str, data: &str, out: &mut Vec<ModelEvent>) -> Result<bool, ModelError> {
        match ResponsesEvent::decode(name, data)? {
            ResponsesEvent::Progress | ResponsesEvent::Unknown => {}
            ResponsesEvent::OutputItemAdded(event) => self.added(event, out),
            ResponsesEvent::OutputItemDone(event) => self.done(event, out),
            ResponsesEvent::OutputTextDelta(event) => self.text(event.output_index, &event.delta, out)?,
            ResponsesEvent::RefusalDelta(event) => {
                self.answer.refusal = true;
                self.text(event.output_index, &event.delta, out)?;
            }
            ResponsesEvent::FunctionCallArgumentsDelta(event) | ResponsesEvent::CustomToolCallInputDelta(event) => {
                match self.items.get_mut(&event.output_index) {
                    Some(Item::Call(call)) => call.push(&event.delta, out),
                    _ => return Err(ModelError::bad("tool input delta for a call that never started")),
                }
            }
            ResponsesEvent::ReasoningSummaryPartAdded(event) => {
                self.reasoning
                    .entry(event.output_index)
                    .or_default()
                    .part(event.summary_index);
            }
            ResponsesEvent::ReasoningSummaryTextDelta(event) => {
                if event.delta.is_empty() {
                    return Ok(false);
                }
                let reasoning = self.reasoning.entry(event.output_index).or_default();
                let index = reasoning.part(event.summary_index);
                let part = &mut reasoning.parts[index];
                part.push_str(&event.delta);
                // The title goes with the delta that completes it; a part that does not open with `**` has none.
                let mut title = None;
                if !reasoning.titled[index] {
                    if let Some(found) = bold_title(part) {
                        title = Some(found.to_owned());
                        reasoning.titled[index] = true;
                    } else if part.len() >= 2 && !part.starts_with("**") {
                        reasoning.titled[index] = true;
                    }
                }
                out.push(ModelEvent::ReasoningDelta {
                    delta: event.delta.into_owned(),
                    title,
                });
            }
            ResponsesEvent::ReasoningTextDelta(event) => {
                if !event.delta.is_empty() {
                    self.reasoning
                        .entry(event.output_index)
                        .or_default()
                        .raw
                        .push_str(&event.delta);
                    out.push(ModelEvent::ReasoningDelta {
                        delta: event.delta.into_owned(),
                        title: None,
                    });
                }
            }
            ResponsesEvent::Completed(event) => {
                self.finish(event.response.usage.as_ref(), StopReason::EndTurn, out);
                return Ok(true);
            }
            ResponsesEvent::Incomplete(event) => {
                let reason = match event
                    .response
                    .incomplete_details
                    .and_then(|details| details.reason)
                    .as_deref()
                {
                    Some("content_filter") => StopReason::ContentFilter,
                    // `max_output_tokens` (the API) or `max_tokens` (its spec's example): the output limit.
                    _ => StopReason::MaxTokens,
                };
                self.finish(event.response.usage.as_ref(), reason, out);
                return Ok(true);
            }
            ResponsesEvent::Failed(event) => {
                let error = event.response.error.unwrap_or(ResponseError {
                    code: None,
                    message: String::new(),
                });
                let body = ErrorBody {
                    kind: None,
                    code: error.code,
                    message: error.message,
                };
                return Err(body.into_stream_error(PROVIDER));
            }
            ResponsesEvent::Error(body) => return Err(body.into_stream_error(PROVIDER)),
        }
        Ok(false)
    }
}
