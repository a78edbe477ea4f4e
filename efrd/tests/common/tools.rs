//! Replies and requests that the tool tests share: shell and patch calls of the scripted model, a prompt in a folder
//! and mode, and what the model got back for a call.

use efr_test_support::client::Client;
use efr_test_support::scripted::{Reply, ReplyEvent, ScriptToolCall};
use serde_json::{Value, json};

use super::command_id;

pub fn shell_call(id: &str, command: &str) -> Reply {
    let input = json!({ "command": command }).to_string();
    let (a, b) = input.split_at(input.len() / 2);
    Reply {
        events: vec![ReplyEvent::ToolCall(ScriptToolCall {
            id: id.into(),
            name: "shell".into(),
            freeform: false,
            input: vec![a.into(), b.into()],
        })],
        ..Reply::default()
    }
}

/// A shell call with a timeout of 1 s: its command is left running when it runs longer.
pub fn left_running_call(id: &str, command: &str) -> Reply {
    Reply {
        events: vec![ReplyEvent::ToolCall(ScriptToolCall {
            id: id.into(),
            name: "shell".into(),
            freeform: false,
            input: vec![json!({"command": command, "timeout": 1}).to_string()],
        })],
        ..Reply::default()
    }
}

pub fn patch_call(id: &str, patch: &str) -> Reply {
    Reply {
        events: vec![ReplyEvent::ToolCall(ScriptToolCall {
            id: id.into(),
            name: "apply_patch".into(),
            freeform: true,
            input: vec![patch.into()],
        })],
        ..Reply::default()
    }
}

pub fn text(answer: &str) -> Reply {
    Reply {
        events: vec![ReplyEvent::Text(answer.into())],
        ..Reply::default()
    }
}

pub async fn prompt_in(client: &mut Client, cwd: &std::path::Path, mode: &str, text: &str) -> Value {
    client
        .ok(
            "prompt.send",
            json!({"command_id": command_id(), "text": text, "context": {"cwd": cwd}, "settings": {"mode": mode}}),
        )
        .await
        .unwrap()
}

/// What the model got back for `call_id` in the last request that holds it.
pub fn tool_output(server: &efr_test_support::scripted::ScriptedModel, call_id: &str) -> String {
    let requests = server.requests();
    let body = requests
        .iter()
        .rev()
        .map(|r| r.body.to_string())
        .find(|b| b.contains(call_id))
        .unwrap();
    let input: Value = serde_json::from_str(&body).unwrap();
    let items = input["input"].as_array().cloned().unwrap_or_default();
    items
        .iter()
        .find(|item| item["call_id"] == call_id && item["output"].is_string())
        .map(|item| item["output"].as_str().unwrap().to_owned())
        .unwrap_or_else(|| panic!("no output for {call_id} in {body}"))
}

/// A subscription's next event of `kind` for `call`.
pub async fn next_event(client: &mut Client, id: u64, kind: &str) -> Value {
    super::events_through(client, id, kind).await.pop().unwrap()
}
