//! `openai-compat`: Chat Completions (`POST /v1/chat/completions` with `stream: true`), for local servers such as
//! llama.cpp, Ollama and vLLM, and any other server that speaks it.
//!
//! Requests ask for usage in the stream (`stream_options.include_usage`); the key is optional (Ollama ignores it,
//! llama.cpp wants one only when started with `--api-key`). Chat Completions has no freeform tools and no reasoning
//! carry-over: freeform tools go out as a function with one string member `input`, and reasoning is not sent back.
//!
//! The stream: nameless SSE events whose data is a `chat.completion.chunk`; text in `choices[0].delta.content`,
//! reasoning in `delta.reasoning_content` (llama.cpp, vLLM) or `delta.reasoning` (Ollama), tool calls in
//! `delta.tool_calls[]` keyed by `index`, the stop in `finish_reason`, usage in a last chunk with empty `choices`, and
//! `data: [DONE]` as the completion event. A chunk with an `error` member fails the stream.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};

use super::event::{ModelError, ModelEvent, StopReason, Usage};
use super::http::ErrorBody;
use super::openai::{CachedTokens, ReasoningTokens};
use super::parse::{Answer, StreamParser, TextMessage, ToolCall, decode, unknown_event};
use super::request::{HistoryItem, ModelRequest, Tool, freeform_fallback_schema};

const PROVIDER: &str = "openai-compat";

/// The JSON body of a streaming Chat Completions request.
#[must_use]
pub fn request_body(request: &ModelRequest) -> Value {
    let mut messages: Vec<Value> = Vec::new();
    if !request.instructions.is_empty() {
        messages.push(json!({"role": "system", "content": request.instructions}));
    }
    for item in &request.history {
        match item {
            HistoryItem::UserText { text } => messages.push(json!({"role": "user", "content": text})),
            HistoryItem::AssistantText { text } => messages.push(json!({"role": "assistant", "content": text})),
            HistoryItem::Reasoning { .. } => {}
            HistoryItem::ToolCall {
                call_id,
                tool,
                freeform,
                input,
            } => {
                let arguments = if *freeform {
                    json!({"input": input}).to_string()
                } else {
                    input.clone()
                };
                let call =
                    json!({"id": call_id, "type": "function", "function": {"name": tool, "arguments": arguments}});
                // The calls of one answer belong to one assistant message, after its text.
                match messages.last_mut() {
                    Some(last) if last["role"] == "assistant" => match last.get_mut("tool_calls") {
                        Some(Value::Array(calls)) => calls.push(call),
                        _ => last["tool_calls"] = json!([call]),
                    },
                    _ => messages.push(json!({"role": "assistant", "content": null, "tool_calls": [call]})),
                }
            }
            HistoryItem::ToolOutput { call_id, output, .. } => {
                messages.push(json!({"role": "tool", "tool_call_id": call_id, "content": output}));
            }
        }
    }
    let mut body = json!({
        "model": request.model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                let (name, description, parameters) = match tool {
                    Tool::Function { name, description, parameters } => (name, description, parameters.clone()),
                    Tool::Freeform { name, description } => (name, description, freeform_fallback_schema()),
                };
                json!({"type": "function", "function": {"name": name, "description": description, "parameters": parameters}})
            })
            .collect();
        body["tools"] = json!(tools);
    }
    if let Some(effort) = &request.effort {
        body["reasoning_effort"] = json!(effort);
    }
    // `max_tokens` rather than `max_completion_tokens`: every local server reads it.
    if let Some(max) = request.max_output {
        body["max_tokens"] = json!(max);
    }
    body
}

/// One `chat.completion.chunk` (or an error chunk), typed.
#[derive(Debug, Deserialize)]
pub struct ChatChunk<'a> {
    /// The choices; efr asks for one (index 0).
    #[serde(borrow, default)]
    pub choices: Vec<Choice<'a>>,
    /// Usage, in the last chunk.
    #[serde(default)]
    pub usage: Option<ChatUsage>,
    /// An error the server reports inside the stream.
    #[serde(default)]
    pub error: Option<Value>,
}

/// One choice of a chunk.
#[derive(Debug, Deserialize)]
pub struct Choice<'a> {
    /// The choice's index.
    #[serde(default)]
    pub index: u32,
    /// What the chunk adds.
    #[serde(borrow, default)]
    pub delta: Option<ChoiceDelta<'a>>,
    /// `stop`, `length`, `tool_calls`, `content_filter`, once.
    #[serde(borrow, default)]
    pub finish_reason: Option<Cow<'a, str>>,
}

/// The delta of a choice.
#[derive(Debug, Deserialize)]
pub struct ChoiceDelta<'a> {
    /// Text.
    #[serde(borrow, default)]
    pub content: Option<Cow<'a, str>>,
    /// A refusal's text.
    #[serde(borrow, default)]
    pub refusal: Option<Cow<'a, str>>,
    /// Reasoning (llama.cpp, vLLM, DeepSeek).
    #[serde(borrow, default)]
    pub reasoning_content: Option<Cow<'a, str>>,
    /// Reasoning (Ollama, OpenRouter).
    #[serde(borrow, default)]
    pub reasoning: Option<Cow<'a, str>>,
    /// Tool call fragments.
    #[serde(default)]
    pub tool_calls: Option<Vec<ToolCallDelta>>,
}

/// A fragment of a tool call.
#[derive(Debug, Deserialize)]
pub struct ToolCallDelta {
    /// The call's position in the answer.
    #[serde(default)]
    pub index: u32,
    /// The call's id, in its first fragment.
    #[serde(default)]
    pub id: Option<String>,
    /// Name and arguments.
    #[serde(default)]
    pub function: Option<FunctionDelta>,
}

/// The function part of a tool call fragment.
#[derive(Debug, Deserialize)]
pub struct FunctionDelta {
    /// The tool, in the first fragment.
    #[serde(default)]
    pub name: Option<String>,
    /// A fragment of the JSON arguments.
    #[serde(default)]
    pub arguments: Option<String>,
}

/// Chat usage.
#[derive(Debug, Deserialize)]
pub struct ChatUsage {
    /// Input tokens, cached included.
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Output tokens, reasoning included.
    #[serde(default)]
    pub completion_tokens: u64,
    /// `{cached_tokens}`.
    #[serde(default)]
    pub prompt_tokens_details: Option<CachedTokens>,
    /// `{reasoning_tokens}`.
    #[serde(default)]
    pub completion_tokens_details: Option<ReasoningTokens>,
}

impl From<&ChatUsage> for Usage {
    fn from(usage: &ChatUsage) -> Self {
        Self {
            input: usage.prompt_tokens,
            cached_input: usage.prompt_tokens_details.as_ref().map_or(0, |d| d.cached_tokens),
            output: usage.completion_tokens,
            reasoning: usage
                .completion_tokens_details
                .as_ref()
                .map_or(0, |d| d.reasoning_tokens),
            ..Self::default()
        }
    }
}

#[derive(Debug)]
enum Call {
    /// Fragments came before the call's id and name: held until they come.
    Pending {
        id: Option<String>,
        name: Option<String>,
        arguments: String,
    },
    Started(ToolCall),
}

/// The Chat Completions stream parser (see the module docs).
#[derive(Debug, Default)]
pub struct ChatParser {
    answer: Answer,
    message: TextMessage,
    calls: BTreeMap<u32, Call>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    freeform: Vec<String>,
}

impl ChatParser {
    /// A parser for one completion; `freeform` names the request's freeform tools (sent as the JSON-string
    /// fallback).
    #[must_use]
    pub fn new(freeform: Vec<String>) -> Self {
        Self {
            freeform,
            ..Self::default()
        }
    }

    fn tool_delta(&mut self, delta: ToolCallDelta, out: &mut Vec<ModelEvent>) {
        let (name, arguments) = match delta.function {
            Some(function) => (function.name, function.arguments.unwrap_or_default()),
            None => (None, String::new()),
        };
        let call = self.calls.entry(delta.index).or_insert_with(|| Call::Pending {
            id: None,
            name: None,
            arguments: String::new(),
        });
        if let Call::Pending {
            id,
            name: held_name,
            arguments: held,
        } = call
        {
            *id = delta.id.or(id.take());
            *held_name = name.or(held_name.take());
            held.push_str(&arguments);
            if let (Some(call_id), Some(tool)) = (id.clone(), held_name.clone()) {
                let freeform = self.freeform.contains(&tool);
                let held = std::mem::take(held);
                let mut started = ToolCall::start(&mut self.answer, call_id, tool, freeform, true, out);
                started.push(&held, out);
                *call = Call::Started(started);
            }
        } else if let Call::Started(started) = call {
            started.push(&arguments, out);
        }
    }

    fn close_calls(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        for (index, call) in std::mem::take(&mut self.calls) {
            match call {
                Call::Started(call) => call.done(None, out),
                Call::Pending { .. } => {
                    return Err(ModelError::bad(format!(
                        "tool call {index} ended without an id and a name"
                    )));
                }
            }
        }
        Ok(())
    }
}

impl StreamParser for ChatParser {
    fn event(&mut self, name: &str, data: &str, out: &mut Vec<ModelEvent>) -> Result<bool, ModelError> {
        match name {
            "message" => {}
            // Some servers name an error event instead of sending an error chunk.
            "error" => return Err(ErrorBody::parse(data).into_stream_error(PROVIDER)),
            other => {
                unknown_event(PROVIDER, other);
                return Ok(false);
            }
        }
        if data.trim() == "[DONE]" {
            self.close_calls(out)?;
            let reason = match self.finish_reason.as_deref() {
                Some("stop" | "tool_calls" | "function_call") => StopReason::EndTurn,
                Some("length") => StopReason::MaxTokens,
                Some("content_filter") => StopReason::ContentFilter,
                other => {
                    // Local servers differ here; the completion event itself came, so the answer stands.
                    tracing::debug!(
                        provider = PROVIDER,
                        finish_reason = other,
                        "finish reason read as end_turn"
                    );
                    StopReason::EndTurn
                }
            };
            self.answer.finish(self.usage, reason, out);
            return Ok(true);
        }
        let chunk: ChatChunk<'_> = decode(PROVIDER, name, data)?;
        if chunk.error.is_some() {
            return Err(ErrorBody::parse(data).into_stream_error(PROVIDER));
        }
        if let Some(usage) = &chunk.usage {
            self.usage = Some(Usage::from(usage));
        }
        for choice in chunk.choices.into_iter().filter(|choice| choice.index == 0) {
            if let Some(delta) = choice.delta {
                for reasoning in [delta.reasoning_content, delta.reasoning].into_iter().flatten() {
                    if !reasoning.is_empty() {
                        out.push(ModelEvent::ReasoningDelta {
                            delta: reasoning.into_owned(),
                            title: None,
                        });
                    }
                }
                if let Some(content) = delta.content {
                    self.message.push(&mut self.answer, &content, out);
                }
                if let Some(refusal) = delta.refusal {
                    self.answer.refusal = true;
                    self.message.push(&mut self.answer, &refusal, out);
                }
                for call in delta.tool_calls.into_iter().flatten() {
                    self.tool_delta(call, out);
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.close_calls(out)?;
                self.finish_reason = Some(reason.into_owned());
            }
        }
        Ok(false)
    }
}
