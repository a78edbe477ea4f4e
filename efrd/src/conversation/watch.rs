//! The broadcast of row changes: what conversations.watch sends after its snapshot.
//!
//! Source: docs/protocol.md, "The contract": "the lists of the phone": `changed` comes each time a commit changes the
//! title, the status, the working directory, the scope, the project or the count of turns of a conversation;
//! `removed` follows a delete; a watch that falls behind ends with overflow.
//!
//! # Shape
//!
//! Conversation actors call [`RowChanges::committed`] after each commit that carried their summary row (an event is
//! broadcast only after its commit, docs/architecture.md, "The event log"; so is a row). The hub keeps the last facts
//! it saw of each conversation and sends a [`RowChange`] only when one of the watched facts differs, so a commit that
//! only adds events (a streamed message, a tool call) costs watchers nothing.
//!
//! A conversation the hub has not seen since efrd started (loaded from the store) is taken as unchanged at its first
//! commit, unless that commit created it (it holds seq 1): its row is the one the watcher's snapshot read from the
//! store.
//!
//! Each watcher holds a broadcast receiver of `[daemon] subscriber_queue` changes; one that falls further behind
//! gets `Lagged` and its stream ends with overflow, as for conversation.subscribe. Nothing is dropped silently.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use efr_protocol::events::Event;
use efr_protocol::ids::ConversationId;
use serde_json::Value;
use tokio::sync::broadcast;

use crate::store::ConversationSummary;

/// One change that watchers get.
#[derive(Debug, Clone, PartialEq)]
pub enum RowChange {
    /// A conversation's row now (after a commit that changed one of its watched facts, or created it).
    Changed(ConversationSummary),
    /// A conversation was deleted.
    Removed(ConversationId),
}

/// The facts of a row whose change a watcher hears of (the spec's list). `updated_at` and `last_seq` are not
/// among them: every commit moves those.
#[derive(Debug, Clone, PartialEq)]
struct Facts {
    title: Option<String>,
    status: String,
    cwd: Option<String>,
    route: Option<Value>,
    project: Option<Value>,
    turns: u64,
}

impl Facts {
    fn of(summary: &ConversationSummary) -> Self {
        Self {
            title: summary.title.clone(),
            status: summary.status.clone(),
            cwd: summary.cwd.clone(),
            // Not stored by this efrd yet; watched already, so routing needs no change here when it lands.
            route: summary.extra.get("route").cloned(),
            project: summary.extra.get("project").cloned(),
            turns: summary.turn_count,
        }
    }
}

/// The hub: one per daemon, shared by every conversation actor (through `Deps`) and every watch.
#[derive(Debug)]
pub struct RowChanges {
    tx: broadcast::Sender<Arc<RowChange>>,
    seen: Mutex<HashMap<ConversationId, Facts>>,
}

impl RowChanges {
    /// A hub whose watchers may fall `capacity` changes behind (at least 1) before they overflow.
    #[must_use]
    pub fn new(capacity: usize) -> Self {
        Self {
            tx: broadcast::channel(capacity.max(1)).0,
            seen: Mutex::default(),
        }
    }

    /// A receiver of every change sent from now on.
    #[must_use]
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<RowChange>> {
        self.tx.subscribe()
    }

    /// Called by a conversation's actor after a commit that carried `summary` and `events`. Sends
    /// [`RowChange::Changed`] when a watched fact differs from the last commit's, or when the commit created the
    /// conversation. Returns whether it sent one.
    pub fn committed(&self, summary: &ConversationSummary, events: &[Arc<Event>]) -> bool {
        let facts = Facts::of(summary);
        let created = events.iter().any(|event| event.seq == 1);
        let changed = {
            let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
            match seen.insert(summary.id, facts.clone()) {
                Some(before) => before != facts,
                None => created,
            }
        };
        if changed {
            // No watcher is not an error.
            let _ = self.tx.send(Arc::new(RowChange::Changed(summary.clone())));
        }
        changed
    }

    /// Tells watchers that `id` was deleted, and forgets it. (conversation.delete is not served by this efrd yet, so
    /// nothing calls it today; a watch never gets `removed` until it is.)
    pub fn removed(&self, id: ConversationId) {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
        let _ = self.tx.send(Arc::new(RowChange::Removed(id)));
    }
}

#[cfg(test)]
mod tests {
    use efr_protocol::events::{EventBody, UnknownEvent};
    use efr_protocol::ids::Timestamp;
    use tokio::sync::broadcast::error::TryRecvError;

    use super::*;

    fn summary(id: ConversationId) -> ConversationSummary {
        ConversationSummary {
            id,
            title: Some("fix it".into()),
            status: "idle".into(),
            cwd: Some("/tmp".into()),
            created_at: Timestamp::now(),
            updated_at: Timestamp::now(),
            turn_count: 0,
            extra: serde_json::Map::new(),
        }
    }

    fn event(id: ConversationId, seq: u64) -> Arc<Event> {
        Arc::new(Event {
            seq,
            at: Timestamp::now(),
            conversation_id: id,
            turn_id: None,
            body: EventBody::Unknown(UnknownEvent {
                kind: "note".into(),
                members: serde_json::Map::new(),
            }),
        })
    }

    #[test]
    fn a_new_conversation_and_each_change_of_a_watched_fact_are_sent_and_nothing_else() {
        let hub = RowChanges::new(16);
        let mut rx = hub.subscribe();
        let id = ConversationId::new();
        let mut row = summary(id);
        assert!(hub.committed(&row, &[event(id, 1), event(id, 2)]), "created");
        row.updated_at = Timestamp::now();
        row.extra.insert("last_seq".into(), 3.into());
        assert!(
            !hub.committed(&row, &[event(id, 3)]),
            "only updated_at and last_seq moved"
        );
        row.status = "running".into();
        row.turn_count = 1;
        assert!(hub.committed(&row, &[event(id, 4)]));
        row.extra.insert("project".into(), "efr".into());
        assert!(hub.committed(&row, &[event(id, 5)]), "the project is watched too");
        let mut got = Vec::new();
        while let Ok(change) = rx.try_recv() {
            got.push(change);
        }
        assert_eq!(got.len(), 3);
        assert!(matches!(&*got[1], RowChange::Changed(s) if s.status == "running" && s.turn_count == 1));
    }

    #[test]
    fn a_loaded_conversation_is_unchanged_at_its_first_commit() {
        let hub = RowChanges::new(16);
        let mut rx = hub.subscribe();
        let id = ConversationId::new();
        assert!(!hub.committed(&summary(id), &[event(id, 8)]));
        assert_eq!(rx.try_recv().unwrap_err(), TryRecvError::Empty);
        hub.removed(id);
        assert_eq!(*rx.try_recv().unwrap(), RowChange::Removed(id));
    }

    #[test]
    fn a_watcher_that_falls_behind_lags() {
        let hub = RowChanges::new(2);
        let mut rx = hub.subscribe();
        for _ in 0..3 {
            let id = ConversationId::new();
            hub.committed(&summary(id), &[event(id, 1)]);
        }
        assert!(matches!(rx.try_recv(), Err(TryRecvError::Lagged(1))));
    }
}
