//! Replies and requests that the tool tests share: shell and patch calls of the scripted model, a prompt in a folder
//! and mode, a turn started and subscribed to, and what the model got back for a call.

use efr_protocol::frame::RequestId;
use efr_test_support::client::Client;
use efr_test_support::scripted::{Reply, ScriptedModel};
use serde_json::{Value, json};

use super::{command_id, subscribe};

/// A shell call whose input arrives in two pieces (the model layer joins them).
pub fn shell_call(id: &str, command: &str) -> Reply {
    let input = json!({ "command": command }).to_string();
    let (a, b) = input.split_at(input.len() / 2);
    Reply::tool_call(id, "shell", false, vec![a.into(), b.into()])
}

/// A shell call with this whole input (`command`, `timeout`).
pub fn shell_call_with(id: &str, input: &Value) -> Reply {
    Reply::shell_with(id, input)
}

/// A shell call with a timeout of 1 s: its command is left running when it runs longer.
pub fn left_running_call(id: &str, command: &str) -> Reply {
    shell_call_with(id, &json!({"command": command, "timeout": 1}))
}

/// An apply_patch call (freeform) with this patch text.
pub fn patch_call(id: &str, patch: &str) -> Reply {
    Reply::patch(id, patch)
}

/// A text answer, whole.
pub fn text(answer: &str) -> Reply {
    Reply::text(answer)
}

/// prompt.send in `cwd` with `mode`: to `conversation`, or a new one.
pub async fn prompt_to(
    client: &mut Client,
    conversation: Option<&str>,
    cwd: &std::path::Path,
    mode: &str,
    text: &str,
) -> Value {
    let mut params =
        json!({"command_id": command_id(), "text": text, "context": {"cwd": cwd}, "settings": {"mode": mode}});
    if let Some(id) = conversation {
        params["conversation_id"] = json!(id);
    }
    client.ok("prompt.send", params).await.unwrap()
}

/// prompt.send of a new conversation in `cwd` with `mode`.
pub async fn prompt_in(client: &mut Client, cwd: &std::path::Path, mode: &str, text: &str) -> Value {
    prompt_to(client, None, cwd, mode, text).await
}

/// A new conversation's first prompt, and a subscription to it from its first event: the prompt's result, the
/// conversation id and the subscription.
pub async fn start(client: &mut Client, cwd: &std::path::Path, mode: &str, text: &str) -> (Value, String, RequestId) {
    let sent = prompt_in(client, cwd, mode, text).await;
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(client, &conversation, Some(0)).await;
    (sent, conversation, id)
}

/// What the model got back for `call_id` in the last request that holds it (Responses format).
pub fn tool_output(server: &ScriptedModel, call_id: &str) -> String {
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

/// A subscription's next event of `kind`.
pub async fn next_event(client: &mut Client, id: RequestId, kind: &str) -> Value {
    super::events_through(client, id, kind).await.pop().unwrap()
}

/// The event of `kind` for `call_id` among `events`.
pub fn event_of<'a>(events: &'a [Value], kind: &str, call_id: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["kind"] == kind && e["call_id"] == call_id)
        .unwrap_or_else(|| panic!("no {kind} of {call_id} in {events:#?}"))
}
