//! The model's view of a conversation, rebuilt from its log, and the conversation's title.
//!
//! Only what the log holds can come back after a restart: each started turn's prompt and the assistant's completed
//! messages. Reasoning carry-overs live in memory only, so the first turn after a restart sends none.

use std::collections::HashMap;

use efr_protocol::ErrorBody;
use efr_protocol::events::{Event, EventBody};
use efr_protocol::ids::{ConversationId, TurnId};

use super::actor::store_error;
use crate::model::HistoryItem;
use crate::store::Store;

/// How many events one read of the log takes.
const PAGE: u32 = 1000;

/// The longest title in characters.
const TITLE_CHARS: usize = 80;

/// Reads the whole log of `id` and returns the history it implies and the last seq.
///
/// # Errors
/// `unavailable` when the store fails; `internal` for an event that does not parse (a corrupt log).
pub async fn rebuild(store: &Store, id: ConversationId) -> Result<(Vec<HistoryItem>, u64), ErrorBody> {
    let mut history = Vec::new();
    let mut prompts: HashMap<TurnId, String> = HashMap::new();
    let mut last_seq = 0;
    loop {
        let rows = store.events_after(id, last_seq, PAGE).await.map_err(store_error)?;
        let full = rows.len() == PAGE as usize;
        for row in rows {
            last_seq = row.seq;
            let event: Event = serde_json::from_str(&row.body)
                .map_err(|e| ErrorBody::internal(format!("event {} of {id} does not parse: {e}", row.seq)))?;
            apply(&mut history, &mut prompts, &event);
        }
        if !full {
            return Ok((history, last_seq));
        }
    }
}

fn apply(history: &mut Vec<HistoryItem>, prompts: &mut HashMap<TurnId, String>, event: &Event) {
    match (&event.body, event.turn_id) {
        (EventBody::PromptQueued(queued), Some(turn_id)) => {
            prompts.insert(turn_id, queued.text.clone());
        }
        (EventBody::TurnStarted(_), Some(turn_id)) => {
            if let Some(text) = prompts.remove(&turn_id) {
                history.push(HistoryItem::UserText { text });
            }
        }
        (EventBody::AssistantMessageCompleted(message), _) => {
            history.push(HistoryItem::AssistantText {
                text: message.text.clone(),
            });
        }
        _ => {}
    }
}

/// A conversation's title from its first prompt: the first line, at most 80 characters (cut at a character
/// boundary, with `…` when cut).
#[must_use]
pub fn title_of(prompt: &str) -> String {
    let line = prompt.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let mut title: String = line.chars().take(TITLE_CHARS).collect();
    if line.chars().count() > TITLE_CHARS {
        title.push('…');
    }
    title
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_take_the_first_non_empty_line_and_cut_on_characters() {
        assert_eq!(title_of("\n  fix the build \nmore"), "fix the build");
        let long = "ü".repeat(100);
        let title = title_of(&long);
        assert_eq!(title.chars().count(), 81);
        assert!(title.ends_with('…'));
        assert_eq!(title_of(""), "");
    }
}
