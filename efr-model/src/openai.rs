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

use std::collections::HashMap;

use serde_json::{Value, json};

use super::event::{ModelError, ModelEvent, StopReason, Usage};
use super::http::ErrorBody;
use super::parse::{Answer, StreamParser, TextMessage, ToolCall, bold_title};
use super::request::{HistoryItem, ModelRequest, ReasoningCarry, Tool};

mod wire;

pub use wire::*;

const PROVIDER: &str = "openai-api";

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
