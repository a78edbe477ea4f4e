//! Restart recovery: close every turn that a previous efrd left open, so that the log says what happened.
//!
//! At start, before any connection is served, each turn that has a `prompt_queued` and no terminal event gets one:
//! `turn_cancelled` when it never started (a prompt that waited; nothing runs it later — spec, "a restart no longer
//! holds queued prompts"), `turn_interrupted` when it was running. The notice for the prompt's terminal is the
//! `turn_cancelled` reason itself, which names the prompt and says to send it again; a terminal that subscribes
//! sees it. Seqs go on from the conversation's last one, so the log never has a gap. The daemon then takes each
//! interrupted turn's last snapshot before it serves, so conversation.diff shows what that turn changed.

use std::collections::BTreeMap;

use efr_protocol::ErrorBody;
use efr_protocol::events::{Event, EventBody, TurnCancelled, TurnInterrupted};
use efr_protocol::ids::{ConversationId, Timestamp, TurnId};
use tracing::info;

use efr_store::{Commit, EventRow, OpenTurn, Store};

/// The kinds that end a turn.
pub const TERMINAL_KINDS: &[&str] = &[
    "turn_cancelled",
    "turn_interrupted",
    "turn_completed",
    "turn_failed",
    "prompt_withdrawn",
];

/// The longest piece of a prompt that a notice quotes, in characters.
const QUOTE_CHARS: usize = 60;

/// Records the end of every open turn. Returns the turns it closed: those that had started (now interrupted) first,
/// then how many it closed in all. The caller takes the interrupted turns' last snapshots
/// ([`crate::turn::snapshots::close_after_restart`]), so that conversation.diff shows what they changed.
///
/// # Errors
/// `unavailable` when the store fails; `internal` for a log that does not parse.
pub async fn close_open_turns(store: &Store) -> Result<(Vec<TurnId>, usize), ErrorBody> {
    let open = store
        .open_turns(&["prompt_queued"], TERMINAL_KINDS)
        .await
        .map_err(ErrorBody::from)?;
    let mut by_conversation: BTreeMap<ConversationId, Vec<OpenTurn>> = BTreeMap::new();
    for turn in open {
        by_conversation.entry(turn.conversation_id).or_default().push(turn);
    }
    let mut closed = 0;
    let mut interrupted = Vec::new();
    for (conversation_id, turns) in by_conversation {
        let mut summary = store
            .conversation(conversation_id)
            .await
            .map_err(ErrorBody::from)?
            .ok_or_else(|| ErrorBody::internal(format!("events of {conversation_id} have no summary row")))?;
        let mut seq = store.last_seq(conversation_id).await.map_err(ErrorBody::from)?;
        let at = Timestamp::now();
        let mut rows = Vec::new();
        for turn in &turns {
            seq += 1;
            let body = if turn.kinds.iter().any(|k| k == "turn_started") {
                interrupted.push(turn.turn_id);
                EventBody::TurnInterrupted(TurnInterrupted::default())
            } else {
                EventBody::TurnCancelled(TurnCancelled {
                    reason: notice(&turn.first),
                })
            };
            let event = Event {
                seq,
                at,
                conversation_id,
                turn_id: Some(turn.turn_id),
                body,
            };
            let body = serde_json::to_string(&event)
                .map_err(|e| ErrorBody::internal(format!("cannot serialize an event: {e}")))?;
            info!(conversation = %conversation_id, turn = %turn.turn_id, kind = event.body.kind(), "closing a turn left open");
            rows.push(EventRow {
                conversation_id,
                seq,
                kind: event.body.kind().to_owned(),
                turn_id: Some(turn.turn_id),
                at,
                body,
            });
        }
        summary.status = "idle".to_owned();
        summary.updated_at = at;
        summary.extra.insert("last_seq".to_owned(), seq.into());
        closed += rows.len();
        store
            .commit(Commit::events(rows).with_conversation(summary))
            .await
            .map_err(ErrorBody::from)?;
    }
    Ok((interrupted, closed))
}

/// The notice of a prompt that never ran: it names the prompt and says to send it again.
fn notice(first: &EventRow) -> String {
    let text = serde_json::from_str::<Event>(&first.body)
        .ok()
        .and_then(|event| match event.body {
            EventBody::PromptQueued(queued) => Some(queued.text),
            _ => None,
        })
        .unwrap_or_default();
    let mut quote: String = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(QUOTE_CHARS)
        .collect();
    if text.chars().count() > QUOTE_CHARS {
        quote.push('…');
    }
    format!("efrd restarted before this prompt ran; nothing will run it, send it again: \"{quote}\"")
}
