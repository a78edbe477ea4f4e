//! `anthropic-api`: the Messages API (`POST /v1/messages` with `stream: true`, headers `x-api-key` and
//! `anthropic-version: 2023-06-01`).
//!
//! Requests: the history becomes alternating `user`/`assistant` messages (tool results are `user` content); thinking
//! blocks go back with their signatures, since a turn that uses tools must hand them back unchanged; the effort
//! becomes a thinking budget ([`thinking_budget`]); prompt caching puts `cache_control` breakpoints on the last tool,
//! the system prompt and the newest turn's last block. Freeform tools have no Anthropic form, so they go out as a
//! function tool with one string member `input` and the parser gives back the string.
//!
//! The stream: `message_start`, then per content block `content_block_start`, `content_block_delta`s (`text_delta`,
//! `input_json_delta`, `thinking_delta`, `signature_delta`), `content_block_stop`; then `message_delta` (stop reason
//! and output usage) and `message_stop`, the completion event. `ping` comes anywhere; `error` fails the stream.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::event::{ModelError, ModelEvent, StopReason};
use super::parse::{Answer, StreamParser, TextMessage, ToolCall};
use super::request::{HistoryItem, ModelRequest, ReasoningCarry, Tool, freeform_fallback_schema};

mod wire;

pub use wire::*;

const PROVIDER: &str = "anthropic-api";

/// `max_tokens` when the request sets no `max_output` (the Messages API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 32_000;

/// The smallest thinking budget the API takes; a smaller one turns thinking off.
pub const MIN_THINKING_BUDGET: u32 = 1_024;

/// Options of the Anthropic provider that are not part of the neutral request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AnthropicOptions {
    /// Cache the tools and the system prompt for one hour instead of five minutes (the newest turn stays at five:
    /// it changes with every call, and one-hour writes cost more).
    pub cache_1h: bool,
}

/// The thinking budget in tokens for an effort: `low` 4,000, `medium` 10,000, `high` 32,000 (the budgets that
/// Anthropic's docs use for a short, a normal and a deep think); `None` (thinking off) for `minimal`, `none` and
/// efforts efr does not know.
#[must_use]
pub fn thinking_budget(effort: &str) -> Option<u32> {
    match effort {
        "low" => Some(4_000),
        "medium" => Some(10_000),
        "high" => Some(32_000),
        _ => None,
    }
}

/// The JSON body of a streaming Messages request. `max_tokens` is the request's `max_output` (default
/// [`DEFAULT_MAX_TOKENS`]); the thinking budget must stay below it, so it is cut to `max_tokens - 1`, and thinking is
/// off when that is under [`MIN_THINKING_BUDGET`].
#[must_use]
pub fn request_body(request: &ModelRequest, options: AnthropicOptions) -> Value {
    let long = if options.cache_1h {
        json!({"type": "ephemeral", "ttl": "1h"})
    } else {
        json!({"type": "ephemeral"})
    };
    let max_tokens = request.max_output.unwrap_or(DEFAULT_MAX_TOKENS);
    let mut body = json!({
        "model": request.model,
        "max_tokens": max_tokens,
        "messages": messages(request),
        "stream": true,
    });
    if !request.instructions.is_empty() {
        body["system"] = json!([{"type": "text", "text": request.instructions, "cache_control": long}]);
    }
    if !request.tools.is_empty() {
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| match tool {
                Tool::Function {
                    name,
                    description,
                    parameters,
                } => {
                    json!({"name": name, "description": description, "input_schema": parameters})
                }
                Tool::Freeform { name, description } => {
                    json!({"name": name, "description": description, "input_schema": freeform_fallback_schema()})
                }
            })
            .collect();
        if let Some(last) = tools.last_mut() {
            last["cache_control"] = long.clone();
        }
        body["tools"] = json!(tools);
    }
    let budget = request
        .effort
        .as_deref()
        .and_then(thinking_budget)
        .map(|budget| budget.min(max_tokens.saturating_sub(1)));
    if let Some(budget) = budget.filter(|budget| *budget >= MIN_THINKING_BUDGET) {
        body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
    }
    body
}

/// The history as Messages `messages`: consecutive items of one role share a message.
fn messages(request: &ModelRequest) -> Vec<Value> {
    let mut messages: Vec<(&str, Vec<Value>)> = Vec::new();
    for item in &request.history {
        let (role, block) = match item {
            HistoryItem::UserText { text } => ("user", json!({"type": "text", "text": text})),
            HistoryItem::AssistantText { text } => ("assistant", json!({"type": "text", "text": text})),
            HistoryItem::Reasoning {
                text,
                carry: Some(ReasoningCarry::Anthropic { signature }),
            } => (
                "assistant",
                json!({"type": "thinking", "thinking": text, "signature": signature}),
            ),
            HistoryItem::Reasoning {
                carry: Some(ReasoningCarry::AnthropicRedacted { data }),
                ..
            } => ("assistant", json!({"type": "redacted_thinking", "data": data})),
            // Reasoning without an Anthropic signature cannot be sent back.
            HistoryItem::Reasoning { .. } => continue,
            HistoryItem::ToolCall {
                call_id,
                tool,
                freeform,
                input,
            } => {
                let input = if *freeform {
                    json!({"input": input})
                } else {
                    tool_input(input)
                };
                (
                    "assistant",
                    json!({"type": "tool_use", "id": call_id, "name": tool, "input": input}),
                )
            }
            HistoryItem::ToolOutput {
                call_id,
                output,
                is_error,
            } => {
                let mut block = json!({"type": "tool_result", "tool_use_id": call_id, "content": output});
                if *is_error {
                    block["is_error"] = json!(true);
                }
                ("user", block)
            }
        };
        match messages.last_mut() {
            Some((last, blocks)) if *last == role => blocks.push(block),
            _ => messages.push((role, vec![block])),
        }
    }
    // The newest turn's breakpoint: its last block that may carry one (thinking blocks may not).
    if let Some((_, blocks)) = messages.last_mut()
        && let Some(block) = blocks
            .iter_mut()
            .rev()
            .find(|block| !matches!(block["type"].as_str(), Some("thinking" | "redacted_thinking")))
    {
        block["cache_control"] = json!({"type": "ephemeral"});
    }
    messages
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

/// A function tool's input as the object Anthropic wants: the model's JSON when it is an object, else wrapped.
fn tool_input(input: &str) -> Value {
    match serde_json::from_str::<Value>(input) {
        Ok(value @ Value::Object(_)) => value,
        Ok(other) => json!({"input": other}),
        Err(_) => json!({"input": input}),
    }
}

#[derive(Debug)]
enum Open {
    Text(TextMessage),
    Thinking { text: String, signature: String },
    Tool { call: ToolCall, initial: Value },
}

/// The Messages stream parser (see the module docs).
#[derive(Debug, Default)]
pub struct MessagesParser {
    answer: Answer,
    blocks: HashMap<u32, Open>,
    usage: Option<AnthropicUsage>,
    stop_reason: Option<String>,
    freeform: Vec<String>,
}

impl MessagesParser {
    /// A parser for one message; `freeform` names the request's freeform tools (sent as the JSON-string fallback).
    #[must_use]
    pub fn new(freeform: Vec<String>) -> Self {
        Self {
            freeform,
            ..Self::default()
        }
    }

    fn usage(&mut self, usage: Option<AnthropicUsage>) {
        if let Some(usage) = usage {
            self.usage.get_or_insert_with(AnthropicUsage::default).merge(usage);
        }
    }

    fn start(&mut self, start: BlockStart, out: &mut Vec<ModelEvent>) {
        let open = match start.content_block {
            Block::Text { text } => {
                let mut message = TextMessage::default();
                message.push(&mut self.answer, &text, out);
                Open::Text(message)
            }
            Block::Thinking { thinking, signature } => {
                if !thinking.is_empty() {
                    out.push(ModelEvent::ReasoningDelta {
                        delta: thinking.clone(),
                        title: None,
                    });
                }
                Open::Thinking {
                    text: thinking,
                    signature,
                }
            }
            Block::RedactedThinking { data } => {
                let carry = Some(ReasoningCarry::AnthropicRedacted { data });
                out.push(ModelEvent::ReasoningDone {
                    text: String::new(),
                    carry,
                });
                return;
            }
            Block::ToolUse { id, name, input } => {
                let freeform = self.freeform.contains(&name);
                let call = ToolCall::start(&mut self.answer, id, name, freeform, true, out);
                Open::Tool { call, initial: input }
            }
            Block::Other => return,
        };
        self.blocks.insert(start.index, open);
    }

    fn stop(open: Open, out: &mut Vec<ModelEvent>) {
        match open {
            Open::Text(_) => {}
            Open::Thinking { text, signature } => {
                let carry = (!signature.is_empty()).then_some(ReasoningCarry::Anthropic { signature });
                out.push(ModelEvent::ReasoningDone { text, carry });
            }
            Open::Tool { call, initial } => {
                // With no deltas, the start's input is the whole input (always an object).
                let input = if call.bytes() > 0 {
                    None
                } else {
                    Some(match initial {
                        Value::Object(map) if !map.is_empty() => Value::Object(map).to_string(),
                        _ => "{}".to_owned(),
                    })
                };
                call.done(input, out);
            }
        }
    }
}

impl StreamParser for MessagesParser {
    fn event(&mut self, name: &str, data: &str, out: &mut Vec<ModelEvent>) -> Result<bool, ModelError> {
        match MessagesEvent::decode(name, data)? {
            MessagesEvent::Ping | MessagesEvent::Unknown => {}
            MessagesEvent::MessageStart(start) => self.usage(start.message.usage),
            MessagesEvent::ContentBlockStart(start) => self.start(start, out),
            MessagesEvent::ContentBlockDelta { index, delta } => match (self.blocks.get_mut(&index), delta) {
                (_, Delta::Other) => {}
                (Some(Open::Text(message)), Delta::Text(text)) => message.push(&mut self.answer, &text, out),
                (Some(Open::Thinking { text, .. }), Delta::Thinking(delta)) => {
                    if !delta.is_empty() {
                        text.push_str(&delta);
                        out.push(ModelEvent::ReasoningDelta {
                            delta: delta.into_owned(),
                            title: None,
                        });
                    }
                }
                (Some(Open::Thinking { signature, .. }), Delta::Signature(delta)) => signature.push_str(&delta),
                (Some(Open::Tool { call, .. }), Delta::InputJson(json)) => call.push(&json, out),
                (None, _) => {
                    return Err(ModelError::bad(format!(
                        "content_block_delta for block {index}, not started"
                    )));
                }
                (Some(_), _) => {
                    return Err(ModelError::bad(format!(
                        "content_block_delta of the wrong kind for block {index}"
                    )));
                }
            },
            MessagesEvent::ContentBlockStop(stop) => {
                if let Some(open) = self.blocks.remove(&stop.index) {
                    Self::stop(open, out);
                }
            }
            MessagesEvent::MessageDelta(delta) => {
                self.usage(delta.usage);
                if delta.delta.stop_reason.is_some() {
                    self.stop_reason = delta.delta.stop_reason;
                }
            }
            MessagesEvent::MessageStop => {
                let reason = match self.stop_reason.as_deref() {
                    Some("end_turn" | "tool_use" | "stop_sequence") => StopReason::EndTurn,
                    Some("max_tokens" | "model_context_window_exceeded") => StopReason::MaxTokens,
                    Some("refusal") => StopReason::Refusal,
                    Some("pause_turn") => StopReason::PauseTurn,
                    Some(other) => {
                        tracing::debug!(
                            provider = PROVIDER,
                            stop_reason = other,
                            "unknown stop reason read as end_turn"
                        );
                        StopReason::EndTurn
                    }
                    None => return Err(ModelError::bad("message_stop before any stop_reason")),
                };
                let mut open: Vec<(u32, Open)> = self.blocks.drain().collect();
                open.sort_by_key(|(index, _)| *index);
                for (_, block) in open {
                    Self::stop(block, out);
                }
                let usage = self.usage.as_ref().map(AnthropicUsage::to_usage);
                self.answer.finish(usage, reason, out);
                return Ok(true);
            }
            MessagesEvent::Error(body) => return Err(body.into_stream_error(PROVIDER)),
        }
        Ok(false)
    }
}
