//! A reply of the script as the bytes of each provider's stream: Responses (`responses`), Messages (`messages`) and
//! Chat Completions (`chat`), in the shapes of shared/provider-streams.
//!
//! Each encoder yields [`Action`]s: bytes of whole SSE events, pauses, and the end of the body (clean or broken);
//! [`chunked`] then regroups the bytes into writes of a fixed size where the script asks.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::script::{Reply, ReplyEvent, ScriptToolCall, ScriptUsage};

/// One step of writing a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Bytes to write.
    Data(Vec<u8>),
    /// A pause.
    Sleep(Duration),
    /// Break the connection off (the body errors, so the server closes the connection without ending the body).
    Abort,
}

/// The wire format of an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `POST /v1/responses`.
    Responses,
    /// `POST /v1/messages`.
    Messages,
    /// `POST /v1/chat/completions`.
    Chat,
}

/// What an answer needs of its call's body: the model and whether a Chat call asked for usage. Read as this typed
/// shape, which skips the rest of the body (the history) without building it.
#[derive(Debug, Default, Deserialize)]
pub struct CallHead {
    /// The call's `model`.
    #[serde(default)]
    pub model: Option<String>,
    /// The call's `stream_options`.
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
}

/// A Chat call's `stream_options`.
#[derive(Debug, Default, Deserialize)]
pub struct StreamOptions {
    /// `include_usage`.
    #[serde(default)]
    pub include_usage: Option<bool>,
}

impl CallHead {
    /// The head of a call's body; empty when it is not such JSON.
    #[must_use]
    pub fn of(body: &[u8]) -> Self {
        serde_json::from_slice(body).unwrap_or_default()
    }
}

/// The actions of `reply` in `format`; `request` is the call's body (for its model and `stream_options`).
#[must_use]
pub fn encode(format: Format, reply: &Reply, request: &Value) -> Vec<Action> {
    let head = CallHead {
        model: request["model"].as_str().map(str::to_owned),
        stream_options: Some(StreamOptions {
            include_usage: request["stream_options"]["include_usage"].as_bool(),
        }),
    };
    encode_for(format, reply, &head)
}

/// [`encode`] for a call whose body was read as its [`CallHead`].
#[must_use]
pub fn encode_for(format: Format, reply: &Reply, head: &CallHead) -> Vec<Action> {
    let model = head.model.as_deref().unwrap_or("scripted-model");
    let mut sse = Sse::default();
    match format {
        Format::Responses => super::responses::encode(&mut sse, reply, model),
        Format::Messages => super::messages::encode(&mut sse, reply, model),
        Format::Chat => {
            let usage = head
                .stream_options
                .as_ref()
                .and_then(|options| options.include_usage)
                .unwrap_or(false);
            super::chat::encode(&mut sse, reply, model, usage);
        }
    }
    chunked(sse.actions, reply.chunk_bytes, reply.chunk_delay_ms)
}

/// Regroups the data between two pauses into writes of `size` bytes (when given), with `delay_ms` between writes.
#[must_use]
pub fn chunked(actions: Vec<Action>, size: Option<usize>, delay_ms: Option<u64>) -> Vec<Action> {
    let delay = delay_ms.map(Duration::from_millis);
    let mut out = Vec::new();
    let mut pending: Vec<u8> = Vec::new();
    let flush = |pending: &mut Vec<u8>, out: &mut Vec<Action>| {
        if pending.is_empty() {
            return;
        }
        let size = size.unwrap_or(pending.len()).max(1);
        for piece in pending.chunks(size) {
            if let (Some(delay), Some(Action::Data(_))) = (delay, out.last()) {
                out.push(Action::Sleep(delay));
            }
            out.push(Action::Data(piece.to_vec()));
        }
        pending.clear();
    };
    for action in actions {
        match action {
            Action::Data(bytes) if size.is_some() => pending.extend_from_slice(&bytes),
            Action::Data(bytes) => {
                if let (Some(delay), Some(Action::Data(_))) = (delay, out.last()) {
                    out.push(Action::Sleep(delay));
                }
                out.push(Action::Data(bytes));
            }
            other => {
                flush(&mut pending, &mut out);
                out.push(other);
            }
        }
    }
    flush(&mut pending, &mut out);
    out
}

/// The SSE writer the encoders share.
#[derive(Debug, Default)]
pub struct Sse {
    actions: Vec<Action>,
    /// Set once the body ended (an error event, a disconnect, an end): nothing more is written.
    pub ended: bool,
}

impl Sse {
    /// Writes one event: `event: NAME` (when named) and one `data:` line.
    pub fn event(&mut self, name: Option<&str>, data: &Value) {
        self.raw_event(name, &data.to_string());
    }

    /// Writes one event with `data` as given.
    pub fn raw_event(&mut self, name: Option<&str>, data: &str) {
        if self.ended {
            return;
        }
        let mut text = String::new();
        if let Some(name) = name {
            text.push_str("event: ");
            text.push_str(name);
            text.push('\n');
        }
        text.push_str("data: ");
        text.push_str(data);
        text.push_str("\n\n");
        self.actions.push(Action::Data(text.into_bytes()));
    }

    /// Handles the events that every format treats alike: a pause, a disconnect, an end. Returns true when `event`
    /// was one of them.
    pub fn common(&mut self, event: &ReplyEvent) -> bool {
        match event {
            ReplyEvent::DelayMs(ms) => self.actions.push(Action::Sleep(Duration::from_millis(*ms))),
            ReplyEvent::Disconnect => {
                self.actions.push(Action::Abort);
                self.ended = true;
            }
            ReplyEvent::End => self.ended = true,
            _ => return false,
        }
        true
    }
}

/// The stop word of a reply (`end_turn` when absent).
#[must_use]
pub fn stop_of(reply: &Reply) -> &str {
    reply.stop.as_deref().unwrap_or("end_turn")
}

/// A freeform call's pieces as the JSON-string fallback `{"input": "..."}`, piece by piece (each escaped whole).
#[must_use]
pub fn fallback_pieces(call: &ScriptToolCall) -> Vec<String> {
    if !call.freeform {
        return call.input.clone();
    }
    let mut pieces = vec!["{\"input\": \"".to_owned()];
    for piece in &call.input {
        let quoted = Value::String(piece.clone()).to_string();
        pieces.push(quoted[1..quoted.len() - 1].to_owned());
    }
    pieces.push("\"}".to_owned());
    pieces
}

/// Usage in the OpenAI shapes: (`input_tokens`, `input_tokens_details`, ...) for Responses.
#[must_use]
pub fn responses_usage(usage: &ScriptUsage) -> Value {
    json!({
        "input_tokens": usage.input,
        "input_tokens_details": {"cached_tokens": usage.cached_input},
        "output_tokens": usage.output,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning},
        "total_tokens": usage.input + usage.output
    })
}
