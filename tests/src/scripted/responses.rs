//! A reply as a Responses stream (`POST /v1/responses`): `response.created`, output items with their deltas, and
//! `response.completed` / `response.incomplete`, each event with its `sequence_number`.

use serde_json::{Value, json};

use super::encode::{Sse, responses_usage, stop_of};
use super::script::{Reply, ReplyEvent};

enum Open {
    None,
    Message { id: String, text: String, refusal: bool },
    Reasoning { id: String, parts: Vec<String> },
}

struct Writer<'a> {
    sse: &'a mut Sse,
    seq: u64,
    index: u32,
    open: Open,
    output: Vec<Value>,
}

impl Writer<'_> {
    fn emit(&mut self, kind: &str, mut data: Value) {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(self.seq);
        self.seq += 1;
        self.sse.event(Some(kind), &data);
    }

    fn close(&mut self) {
        match std::mem::replace(&mut self.open, Open::None) {
            Open::None => return,
            Open::Message { id, text, refusal } => {
                let (part, done) = if refusal {
                    (json!({"type": "refusal", "refusal": text}), "response.refusal.done")
                } else {
                    (
                        json!({"type": "output_text", "annotations": [], "text": text}),
                        "response.output_text.done",
                    )
                };
                let member = if refusal { "refusal" } else { "text" };
                self.emit(
                    done,
                    json!({"item_id": id, "output_index": self.index, "content_index": 0, member: text}),
                );
                self.emit(
                    "response.content_part.done",
                    json!({"item_id": id, "output_index": self.index, "content_index": 0, "part": part}),
                );
                let item =
                    json!({"id": id, "type": "message", "status": "completed", "role": "assistant", "content": [part]});
                self.emit(
                    "response.output_item.done",
                    json!({"output_index": self.index, "item": item}),
                );
                self.output.push(item);
            }
            Open::Reasoning { id, parts } => {
                for (summary_index, text) in parts.iter().enumerate() {
                    self.emit(
                        "response.reasoning_summary_text.done",
                        json!({"item_id": id, "output_index": self.index, "summary_index": summary_index, "text": text}),
                    );
                }
                let summary: Vec<Value> = parts
                    .iter()
                    .map(|text| json!({"type": "summary_text", "text": text}))
                    .collect();
                let item = json!({"id": id, "type": "reasoning", "summary": summary,
                                  "encrypted_content": format!("scripted-encrypted-{}", self.index)});
                self.emit(
                    "response.output_item.done",
                    json!({"output_index": self.index, "item": item}),
                );
                self.output.push(item);
            }
        }
        self.index += 1;
    }

    fn text(&mut self, delta: &str, refusal: bool) {
        if !matches!(&self.open, Open::Message { refusal: r, .. } if *r == refusal) {
            self.close();
            let id = format!("msg_scripted_{}", self.index);
            self.emit(
                "response.output_item.added",
                json!({"output_index": self.index, "item": {"id": id, "type": "message", "status": "in_progress", "role": "assistant", "content": []}}),
            );
            let part = if refusal {
                json!({"type": "refusal", "refusal": ""})
            } else {
                json!({"type": "output_text", "annotations": [], "text": ""})
            };
            self.emit(
                "response.content_part.added",
                json!({"item_id": id, "output_index": self.index, "content_index": 0, "part": part}),
            );
            self.open = Open::Message {
                id,
                text: String::new(),
                refusal,
            };
        }
        let index = self.index;
        if let Open::Message { id, text, .. } = &mut self.open {
            text.push_str(delta);
            let id = id.clone();
            let kind = if refusal {
                "response.refusal.delta"
            } else {
                "response.output_text.delta"
            };
            self.emit(
                kind,
                json!({"item_id": id, "output_index": index, "content_index": 0, "delta": delta, "logprobs": []}),
            );
        }
    }

    fn reasoning(&mut self, text: &str, title: Option<&str>) {
        if !matches!(self.open, Open::Reasoning { .. }) {
            self.close();
            let id = format!("rs_scripted_{}", self.index);
            self.emit(
                "response.output_item.added",
                json!({"output_index": self.index, "item": {"id": id, "type": "reasoning", "summary": []}}),
            );
            self.open = Open::Reasoning { id, parts: Vec::new() };
        }
        let index = self.index;
        let Open::Reasoning { id, parts } = &mut self.open else {
            return;
        };
        let id = id.clone();
        let delta = match title {
            Some(title) => format!("**{title}**\n\n{text}"),
            None => text.to_owned(),
        };
        let new_part = title.is_some() || parts.is_empty();
        if new_part {
            parts.push(String::new());
        }
        let summary_index = parts.len() - 1;
        if let Some(part) = parts.last_mut() {
            part.push_str(&delta);
        }
        if new_part {
            self.emit(
                "response.reasoning_summary_part.added",
                json!({"item_id": id, "output_index": index, "summary_index": summary_index, "part": {"type": "summary_text", "text": ""}}),
            );
        }
        self.emit(
            "response.reasoning_summary_text.delta",
            json!({"item_id": id, "output_index": index, "summary_index": summary_index, "delta": delta}),
        );
    }
}

/// Writes `reply` as a Responses stream.
pub fn encode(sse: &mut Sse, reply: &Reply, model: &str) {
    let response = |status: &str, output: &[Value]| {
        json!({"id": "resp_scripted", "object": "response", "created_at": 1_758_064_436, "status": status,
               "error": null, "incomplete_details": null, "model": model, "output": output, "store": false,
               "usage": null})
    };
    let mut w = Writer {
        sse,
        seq: 0,
        index: 0,
        open: Open::None,
        output: Vec::new(),
    };
    w.emit("response.created", json!({"response": response("in_progress", &[])}));
    w.emit(
        "response.in_progress",
        json!({"response": response("in_progress", &[])}),
    );
    for event in &reply.events {
        if w.sse.common(event) {
            if w.sse.ended {
                return;
            }
            continue;
        }
        match event {
            ReplyEvent::Text(text) => w.text(text, false),
            ReplyEvent::Refusal(text) => w.text(text, true),
            ReplyEvent::Reasoning { text, title } => w.reasoning(text, title.as_deref()),
            ReplyEvent::ToolCall(call) => {
                w.close();
                let (kind, member, delta_kind) = if call.freeform {
                    ("custom_tool_call", "input", "response.custom_tool_call_input.delta")
                } else {
                    ("function_call", "arguments", "response.function_call_arguments.delta")
                };
                let id = format!("fc_scripted_{}", w.index);
                let mut item = json!({"id": id, "type": kind, "status": "in_progress", "call_id": call.id, "name": call.name, member: ""});
                w.emit(
                    "response.output_item.added",
                    json!({"output_index": w.index, "item": item.clone()}),
                );
                for piece in &call.input {
                    w.emit(
                        delta_kind,
                        json!({"item_id": id, "output_index": w.index, "delta": piece}),
                    );
                }
                let whole: String = call.input.concat();
                let done = if call.freeform {
                    "response.custom_tool_call_input.done"
                } else {
                    "response.function_call_arguments.done"
                };
                w.emit(done, json!({"item_id": id, "output_index": w.index, member: whole}));
                item[member] = json!(whole);
                item["status"] = json!("completed");
                w.emit(
                    "response.output_item.done",
                    json!({"output_index": w.index, "item": item.clone()}),
                );
                w.output.push(item);
                w.index += 1;
            }
            ReplyEvent::Error { kind, message } => {
                w.emit("error", json!({"code": kind, "message": message, "param": null}));
                w.sse.ended = true;
                return;
            }
            ReplyEvent::DelayMs(_) | ReplyEvent::Disconnect | ReplyEvent::End => {}
        }
    }
    w.close();
    let mut body = response("completed", &w.output);
    body["usage"] = reply.usage.as_ref().map_or(Value::Null, responses_usage);
    match stop_of(reply) {
        "max_tokens" | "content_filter" => {
            let reason = if stop_of(reply) == "max_tokens" {
                "max_output_tokens"
            } else {
                "content_filter"
            };
            body["status"] = json!("incomplete");
            body["incomplete_details"] = json!({"reason": reason});
            w.emit("response.incomplete", json!({"response": body}));
        }
        _ => w.emit("response.completed", json!({"response": body})),
    }
}
