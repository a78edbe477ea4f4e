//! Tests of the event store, on real SQLite files in temporary folders.
//!
//! - `commit`: round trips, the seq and command invariants, bad input, batch isolation.
//! - `read`: paging of events and conversations, open turns, and that recovery uses its indexes.
//! - `durability`: disk full, reopen, close, newer schema, files that are not databases, corrupt values.
//! - `concurrency`: many tasks committing to many conversations.
//! - `kill`: a child process committing in a loop is SIGKILLed; every acknowledged commit survives.

mod commit;
mod concurrency;
mod delete;
mod durability;
mod kill;
mod read;
mod search;

use efr_protocol::ids::{CommandId, ConversationId, Timestamp, TurnId};
use tempfile::TempDir;

use super::{CommandRecord, Commit, ConversationSummary, EventRow, Store};

/// A time `millis` after the epoch.
fn at(millis: i64) -> Timestamp {
    Timestamp::from_millis(millis).unwrap()
}

/// A summary row for `id`, updated at `updated_ms`.
fn summary(id: ConversationId, updated_ms: i64) -> ConversationSummary {
    ConversationSummary {
        id,
        title: Some(format!("title of {id}")),
        status: "idle".into(),
        cwd: Some("/home/me/project".into()),
        created_at: at(1_000),
        updated_at: at(updated_ms),
        turn_count: 0,
        extra: serde_json::Map::new(),
    }
}

/// The body the tests give event `seq` of `conversation_id`: the wire shape, so a reader can check it.
fn body(conversation_id: ConversationId, seq: u64, kind: &str, turn_id: Option<TurnId>) -> String {
    let mut value = serde_json::json!({
        "seq": seq,
        "at": at(1_000 + i64::try_from(seq).unwrap()).to_string(),
        "conversation_id": conversation_id.to_string(),
        "kind": kind,
    });
    if let Some(turn_id) = turn_id {
        value["turn_id"] = turn_id.to_string().into();
    }
    value.to_string()
}

/// Event `seq` of `conversation_id`, of `kind`, in `turn_id`.
fn event(conversation_id: ConversationId, seq: u64, kind: &str, turn_id: Option<TurnId>) -> EventRow {
    EventRow {
        conversation_id,
        seq,
        kind: kind.into(),
        turn_id,
        at: at(1_000 + i64::try_from(seq).unwrap()),
        body: body(conversation_id, seq, kind, turn_id),
    }
}

/// Events `from..=to` of `conversation_id`, kind `note`, no turn.
fn events(conversation_id: ConversationId, from: u64, to: u64) -> Vec<EventRow> {
    (from..=to)
        .map(|seq| event(conversation_id, seq, "note", None))
        .collect()
}

/// A stored outcome of `method` under `command_id`.
fn command(command_id: CommandId, conversation_id: Option<ConversationId>, result: &str) -> CommandRecord {
    CommandRecord {
        command_id,
        method: "prompt.send".into(),
        conversation_id,
        result: result.into(),
        // Now, not a fixed old time: an outcome past `COMMAND_RETENTION` is pruned when the store opens.
        at: Timestamp::now(),
    }
}

/// A store in a fresh temporary folder (the folder lives as long as the returned guard).
async fn temp_store() -> (TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("efr.db")).await.unwrap();
    (dir, store)
}

/// Creates conversation `id` with its first `n` events.
async fn create(store: &Store, id: ConversationId, n: u64) {
    let commit = Commit::events(events(id, 1, n)).with_conversation(summary(id, 2_000));
    store.commit(commit).await.unwrap();
}

/// Every event of `id`, read in pages of 1000.
async fn all_events(store: &Store, id: ConversationId) -> Vec<EventRow> {
    let mut out: Vec<EventRow> = Vec::new();
    loop {
        let after = out.last().map_or(0, |e| e.seq);
        let page = store.events_after(id, after, 1000).await.unwrap();
        if page.is_empty() {
            return out;
        }
        out.extend(page);
    }
}

/// Asserts that `events` are seqs 1..=n of `id` with the bodies [`body`] gives.
fn assert_contiguous(id: ConversationId, events: &[EventRow]) {
    for (i, event) in events.iter().enumerate() {
        let seq = u64::try_from(i).unwrap() + 1;
        assert_eq!(event.seq, seq, "conversation {id}: seq {} at position {i}", event.seq);
        assert_eq!(event.conversation_id, id);
        assert_eq!(event.body, body(id, seq, &event.kind, event.turn_id));
    }
}
