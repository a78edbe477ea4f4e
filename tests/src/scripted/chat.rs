//! A reply as a Chat Completions stream (`POST /v1/chat/completions`): `chat.completion.chunk`s with `delta`s, a
//! `finish_reason`, a usage chunk when the request asked for it, and `data: [DONE]`.

use serde_json::{Value, json};

use super::encode::{Sse, fallback_pieces, stop_of};
use super::script::{Reply, ReplyEvent};

/// Writes `reply` as a Chat Completions stream; `include_usage` says whether the request asked for usage.
pub fn encode(sse: &mut Sse, reply: &Reply, model: &str, include_usage: bool) {
    let chunk = |choices: Value| {
        json!({"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 1_755_101_700,
               "model": model, "system_fingerprint": "fp_scripted", "choices": choices})
    };
    let delta = |delta: Value| json!([{"index": 0, "delta": delta, "finish_reason": null}]);
    sse.event(None, &chunk(delta(json!({"role": "assistant", "content": ""}))));
    let mut calls = 0;
    for event in &reply.events {
        if sse.common(event) {
            if sse.ended {
                return;
            }
            continue;
        }
        match event {
            ReplyEvent::Text(text) => sse.event(None, &chunk(delta(json!({"content": text})))),
            ReplyEvent::Refusal(text) => sse.event(None, &chunk(delta(json!({"refusal": text})))),
            ReplyEvent::Reasoning { text, .. } => sse.event(None, &chunk(delta(json!({"reasoning_content": text})))),
            ReplyEvent::ToolCall(call) => {
                let first = json!({"tool_calls": [{"index": calls, "id": call.id, "type": "function",
                                                   "function": {"name": call.name, "arguments": ""}}]});
                sse.event(None, &chunk(delta(first)));
                for piece in fallback_pieces(call) {
                    let more = json!({"tool_calls": [{"index": calls, "function": {"arguments": piece}}]});
                    sse.event(None, &chunk(delta(more)));
                }
                calls += 1;
            }
            ReplyEvent::Error { kind, message } => {
                sse.event(
                    None,
                    &json!({"error": {"message": message, "type": kind, "code": null}}),
                );
                sse.ended = true;
                return;
            }
            ReplyEvent::DelayMs(_) | ReplyEvent::Disconnect | ReplyEvent::End => {}
        }
    }
    let finish = match stop_of(reply) {
        "max_tokens" => "length",
        "content_filter" => "content_filter",
        "tool_use" => "tool_calls",
        _ if calls > 0 => "tool_calls",
        _ => "stop",
    };
    sse.event(
        None,
        &chunk(json!([{"index": 0, "delta": {}, "finish_reason": finish}])),
    );
    if include_usage && let Some(usage) = &reply.usage {
        let mut last = chunk(json!([]));
        last["usage"] = json!({
            "prompt_tokens": usage.input,
            "completion_tokens": usage.output,
            "total_tokens": usage.input + usage.output,
            "prompt_tokens_details": {"cached_tokens": usage.cached_input},
            "completion_tokens_details": {"reasoning_tokens": usage.reasoning}
        });
        sse.event(None, &last);
    }
    sse.raw_event(None, "[DONE]");
}
