//! A reply as a Messages stream (`POST /v1/messages`): `message_start`, content blocks (`text`, `thinking` with a
//! signature, `tool_use` with `input_json_delta`s, the first one empty as in Anthropic's docs), `message_delta` and
//! `message_stop`.

use serde_json::{Value, json};

use super::encode::{Sse, fallback_pieces, stop_of};
use super::script::{Reply, ReplyEvent};

#[derive(PartialEq, Eq)]
enum Open {
    None,
    Text,
    Thinking,
}

struct Writer<'a> {
    sse: &'a mut Sse,
    index: u32,
    open: Open,
    pinged: bool,
}

impl Writer<'_> {
    fn emit(&mut self, kind: &str, mut data: Value) {
        data["type"] = json!(kind);
        self.sse.event(Some(kind), &data);
    }

    fn close(&mut self) {
        match std::mem::replace(&mut self.open, Open::None) {
            Open::None => return,
            Open::Text => {}
            Open::Thinking => {
                let signature = format!("scripted-signature-{}", self.index);
                self.emit(
                    "content_block_delta",
                    json!({"index": self.index, "delta": {"type": "signature_delta", "signature": signature}}),
                );
            }
        }
        self.emit("content_block_stop", json!({"index": self.index}));
        self.index += 1;
    }

    fn open(&mut self, open: Open, block: &Value) {
        if self.open == open {
            return;
        }
        self.close();
        self.emit(
            "content_block_start",
            json!({"index": self.index, "content_block": block.clone()}),
        );
        if !self.pinged {
            self.pinged = true;
            self.emit("ping", json!({}));
        }
        self.open = open;
    }
}

/// Writes `reply` as a Messages stream.
pub fn encode(sse: &mut Sse, reply: &Reply, model: &str) {
    let usage = reply.usage.unwrap_or_default();
    let start_usage = json!({
        "input_tokens": usage.input.saturating_sub(usage.cached_input + usage.cache_write),
        "cache_creation_input_tokens": usage.cache_write,
        "cache_read_input_tokens": usage.cached_input,
        "cache_creation": {
            "ephemeral_5m_input_tokens": usage.cache_write.saturating_sub(usage.cache_write_1h),
            "ephemeral_1h_input_tokens": usage.cache_write_1h
        },
        "output_tokens": 1
    });
    let mut message = json!({"id": "msg_scripted", "type": "message", "role": "assistant", "content": [],
                             "model": model, "stop_reason": null, "stop_sequence": null});
    if reply.usage.is_some() {
        message["usage"] = start_usage;
    }
    let mut w = Writer {
        sse,
        index: 0,
        open: Open::None,
        pinged: false,
    };
    w.emit("message_start", json!({"message": message}));
    for event in &reply.events {
        if w.sse.common(event) {
            if w.sse.ended {
                return;
            }
            continue;
        }
        match event {
            ReplyEvent::Text(text) | ReplyEvent::Refusal(text) => {
                w.open(Open::Text, &json!({"type": "text", "text": ""}));
                w.emit(
                    "content_block_delta",
                    json!({"index": w.index, "delta": {"type": "text_delta", "text": text}}),
                );
            }
            ReplyEvent::Reasoning { text, .. } => {
                w.open(
                    Open::Thinking,
                    &json!({"type": "thinking", "thinking": "", "signature": ""}),
                );
                w.emit(
                    "content_block_delta",
                    json!({"index": w.index, "delta": {"type": "thinking_delta", "thinking": text}}),
                );
            }
            ReplyEvent::ToolCall(call) => {
                w.close();
                w.emit(
                    "content_block_start",
                    json!({"index": w.index, "content_block": {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}}),
                );
                let pieces = std::iter::once(String::new()).chain(fallback_pieces(call));
                for piece in pieces {
                    w.emit(
                        "content_block_delta",
                        json!({"index": w.index, "delta": {"type": "input_json_delta", "partial_json": piece}}),
                    );
                }
                w.emit("content_block_stop", json!({"index": w.index}));
                w.index += 1;
            }
            ReplyEvent::Error { kind, message } => {
                w.emit("error", json!({"error": {"type": kind, "message": message}}));
                w.sse.ended = true;
                return;
            }
            ReplyEvent::DelayMs(_) | ReplyEvent::Disconnect | ReplyEvent::End => {}
        }
    }
    w.close();
    let mut delta = json!({"delta": {"stop_reason": stop_of(reply), "stop_sequence": null}});
    if reply.usage.is_some() {
        delta["usage"] = json!({"output_tokens": usage.output});
    }
    w.emit("message_delta", delta);
    w.emit("message_stop", json!({}));
}
