//! Which texts of an event the index holds: a prompt's text (`prompt_queued`), an answer
//! (`assistant_message_completed`), a shell call's command line (`tool_call_started` of `shell`), and the title of a
//! new conversation (with its `conversation_created`). Each with its secrets replaced ([`efr_protocol::mask`]) before
//! it leaves this module, and cut to [`MAX_INDEXED_CHARS`].

use efr_protocol::events::{Event, EventBody};
use efr_protocol::ids::{ConversationId, Timestamp};
use efr_protocol::mask::mask_secrets;
use efr_protocol::wire::SearchKind;
use efr_store::IndexEntry;
use efr_store::search::TITLE_KIND;

/// The most characters of one text that the index holds: an answer longer than this is found by its start.
pub const MAX_INDEXED_CHARS: usize = 32_000;

/// The name of the shell tool, whose `command` input is indexed.
const SHELL_TOOL: &str = "shell";

/// The kind and text of `event` that the index holds, before masking; `None` for the kinds it does not hold.
fn text_of(event: &Event) -> Option<(SearchKind, &str)> {
    match &event.body {
        EventBody::PromptQueued(queued) => Some((SearchKind::Prompt, queued.text.as_str())),
        EventBody::AssistantMessageCompleted(done) => Some((SearchKind::Answer, done.text.as_str())),
        EventBody::ToolCallStarted(started) if started.tool == SHELL_TOOL => started
            .input
            .get("command")
            .and_then(|c| c.as_str())
            .map(|command| (SearchKind::Command, command)),
        _ => None,
    }
}

/// `text` with its secrets replaced, cut to [`MAX_INDEXED_CHARS`].
fn prepared(text: &str) -> String {
    let masked = mask_secrets(text);
    match masked.char_indices().nth(MAX_INDEXED_CHARS) {
        Some((cut, _)) => masked[..cut].to_owned(),
        None => masked.into_owned(),
    }
}

/// The index entry of `event`, if the index holds a text of its kind (an empty text gives none).
#[must_use]
pub fn entry_of(event: &Event) -> Option<IndexEntry> {
    let (kind, text) = text_of(event)?;
    if text.trim().is_empty() {
        return None;
    }
    Some(IndexEntry {
        conversation_id: event.conversation_id,
        seq: event.seq,
        kind: kind.as_str().to_owned(),
        turn_id: event.turn_id,
        at: event.at,
        text: prepared(text),
    })
}

/// The title entry of a conversation (seq 0), its secrets replaced.
#[must_use]
pub fn title_entry(conversation_id: ConversationId, title: &str, at: Timestamp) -> IndexEntry {
    IndexEntry {
        conversation_id,
        seq: 0,
        kind: TITLE_KIND.to_owned(),
        turn_id: None,
        at,
        text: prepared(title),
    }
}

/// The entries of a commit's `events`; with `title`, the title's entry too when a `conversation_created` is among
/// them (the title is set once, with the conversation).
#[must_use]
pub fn entries_of(events: &[Event], title: Option<&str>) -> Vec<IndexEntry> {
    let mut entries: Vec<IndexEntry> = events.iter().filter_map(entry_of).collect();
    if let Some(title) = title.filter(|t| !t.trim().is_empty())
        && let Some(created) = events
            .iter()
            .find(|e| matches!(e.body, EventBody::ConversationCreated(_)))
    {
        entries.push(title_entry(created.conversation_id, title, created.at));
    }
    entries
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn event(body: serde_json::Value) -> Event {
        let mut value = json!({"seq": 3, "at": "2026-11-30T18:00:00.000Z",
            "conversation_id": "6f1c1e9e-4c1d-4bb5-9f6e-0c8f9c7d2a11", "turn_id": "7c9e6679-7425-40de-944b-e07fc1f90ae7"});
        if let serde_json::Value::Object(members) = body {
            for (k, v) in members {
                value[k] = v;
            }
        }
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn prompts_answers_and_shell_commands_are_indexed_with_their_secrets_replaced() {
        let prompt = event(
            json!({"kind": "prompt_queued", "text": "use ghp_0123456789abcdefABCDEF0123456789abcd now",
            "origin": "terminal"}),
        );
        let entry = entry_of(&prompt).unwrap();
        assert_eq!(
            (entry.kind.as_str(), entry.text.as_str()),
            ("prompt", "use [secret] now")
        );
        let answer = event(json!({"kind": "assistant_message_completed", "index": 0, "text": "größe 🙂"}));
        assert_eq!(entry_of(&answer).unwrap().kind, "answer");
        let shell = event(json!({"kind": "tool_call_started", "call_id": "c1", "tool": "shell",
            "input": {"command": "curl https://ada:pw12345@x.org"}}));
        assert_eq!(entry_of(&shell).unwrap().text, "curl https://ada:[secret]@x.org");
        let patch = event(json!({"kind": "tool_call_started", "call_id": "c2", "tool": "apply_patch", "input": {}}));
        assert_eq!(entry_of(&patch), None);
        let long = "é".repeat(MAX_INDEXED_CHARS + 5);
        let answer = event(json!({"kind": "assistant_message_completed", "index": 0, "text": long}));
        assert_eq!(entry_of(&answer).unwrap().text.chars().count(), MAX_INDEXED_CHARS);
    }
}
