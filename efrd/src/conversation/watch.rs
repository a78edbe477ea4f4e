//! The broadcast of row changes: what conversations.watch sends after its snapshot.
//!
//! Source: docs/protocol.md, "The contract": "the lists of the phone": `changed` comes each time a commit changes the
//! title, the status, the working directory, the scope, the project or the count of turns of a conversation;
//! `removed` follows a delete; a watch that falls behind ends with overflow.
//!
//! # Shape
//!
//! Conversation actors call [`RowChanges::committed`] after each commit that carried their summary row (an event is
//! broadcast only after its commit, docs/architecture.md, "The event log"; so is a row), with the [`RowFacts`] of
//! their last commit. The hub sends a [`RowChange`] only when one of the watched facts differs, so a commit that only
//! adds events (a streamed message, a tool call) costs watchers nothing.
//!
//! The last facts live in each conversation's actor, not here: an actor loaded from the store starts from its stored
//! row (the one a watcher's snapshot read), and a new conversation has none, so its first commit is sent. So the hub
//! holds nothing per conversation, and what it holds is bounded by its queue (a change sent with no watcher is not
//! queued at all): a daemon that runs for months with many conversations and no watcher keeps nothing here.
//!
//! Each watcher holds a broadcast receiver of `[daemon] subscriber_queue` changes; one that falls further behind
//! gets `Lagged` and its stream ends with overflow, as for conversation.subscribe. Nothing is dropped silently.

use std::sync::Arc;

use efr_protocol::ids::ConversationId;
use serde_json::Value;
use tokio::sync::broadcast;

use efr_store::ConversationSummary;

/// One change that watchers get.
#[derive(Debug, Clone, PartialEq)]
pub enum RowChange {
    /// A conversation's row now (after a commit that changed one of its watched facts, or created it).
    Changed(ConversationSummary),
    /// A conversation was deleted.
    Removed(ConversationId),
}

/// The facts of a row whose change a watcher hears of (the spec's list). `updated_at` and `last_seq` are not
/// among them: every commit moves those. Each actor keeps those of its last commit.
#[derive(Debug, Clone, PartialEq)]
pub struct RowFacts {
    title: Option<String>,
    status: String,
    cwd: Option<String>,
    route: Option<Value>,
    project: Option<Value>,
    turns: u64,
}

impl RowFacts {
    /// The watched facts of `summary`.
    #[must_use]
    pub fn of(summary: &ConversationSummary) -> Self {
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
}

impl RowChanges {
    /// A hub whose watchers may fall `capacity` changes behind (at least 1) before they overflow.
    #[must_use]
    pub fn new(capacity: usize) -> Self {
        Self {
            tx: broadcast::channel(capacity.max(1)).0,
        }
    }

    /// A receiver of every change sent from now on.
    #[must_use]
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<RowChange>> {
        self.tx.subscribe()
    }

    /// Called by a conversation's actor after a commit that carried `summary`; `last` holds the facts of its
    /// previous commit (`None` before the conversation's first) and is set to `summary`'s. Sends
    /// [`RowChange::Changed`] when a watched fact differs, or when there was no previous commit. Returns whether it
    /// sent one.
    pub fn committed(&self, last: &mut Option<RowFacts>, summary: &ConversationSummary) -> bool {
        let facts = RowFacts::of(summary);
        let changed = last.as_ref() != Some(&facts);
        *last = Some(facts);
        if changed {
            // No watcher is not an error.
            let _ = self.tx.send(Arc::new(RowChange::Changed(summary.clone())));
        }
        changed
    }

    /// How many changes the hub holds (queued for the slowest watcher).
    #[cfg(test)]
    fn held(&self) -> usize {
        self.tx.len()
    }

    /// Tells watchers that `id` was deleted (conversation.delete, after its commit).
    pub fn removed(&self, id: ConversationId) {
        let _ = self.tx.send(Arc::new(RowChange::Removed(id)));
    }
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn a_new_conversation_and_each_change_of_a_watched_fact_are_sent_and_nothing_else() {
        let hub = RowChanges::new(16);
        let mut rx = hub.subscribe();
        let mut row = summary(ConversationId::new());
        let mut last = None;
        assert!(hub.committed(&mut last, &row), "created");
        row.updated_at = Timestamp::now();
        row.extra.insert("last_seq".into(), 3.into());
        assert!(!hub.committed(&mut last, &row), "only updated_at and last_seq moved");
        row.status = "running".into();
        row.turn_count = 1;
        assert!(hub.committed(&mut last, &row));
        row.extra.insert("project".into(), "efr".into());
        assert!(hub.committed(&mut last, &row), "the project is watched too");
        let mut got = Vec::new();
        while let Ok(change) = rx.try_recv() {
            got.push(change);
        }
        assert_eq!(got.len(), 3);
        assert!(matches!(&*got[1], RowChange::Changed(s) if s.status == "running" && s.turn_count == 1));
    }

    #[test]
    fn a_loaded_conversation_is_compared_with_its_stored_row() {
        let hub = RowChanges::new(16);
        let mut rx = hub.subscribe();
        let id = ConversationId::new();
        let mut row = summary(id);
        let mut last = Some(RowFacts::of(&row));
        assert!(!hub.committed(&mut last, &row));
        assert_eq!(rx.try_recv().unwrap_err(), TryRecvError::Empty);
        // Its first turn after a restart changes the status: a watcher hears of it.
        row.status = "running".into();
        assert!(hub.committed(&mut last, &row));
        assert!(matches!(&*rx.try_recv().unwrap(), RowChange::Changed(s) if s.status == "running"));
        hub.removed(id);
        assert_eq!(*rx.try_recv().unwrap(), RowChange::Removed(id));
    }

    #[test]
    fn with_no_watcher_the_hub_holds_no_more_than_its_queue() {
        let hub = RowChanges::new(16);
        for turns in 0..10_000 {
            let mut row = summary(ConversationId::new());
            let mut last = None;
            hub.committed(&mut last, &row);
            row.turn_count = turns;
            hub.committed(&mut last, &row);
        }
        assert_eq!(hub.held(), 0, "a change with no watcher is not queued");
        // A watcher that reads nothing holds the hub to its queue, no more.
        let _rx = hub.subscribe();
        for _ in 0..100 {
            hub.committed(&mut None, &summary(ConversationId::new()));
        }
        assert_eq!(hub.held(), 16);
    }

    #[test]
    fn a_watcher_that_falls_behind_lags() {
        let hub = RowChanges::new(2);
        let mut rx = hub.subscribe();
        for _ in 0..3 {
            hub.committed(&mut None, &summary(ConversationId::new()));
        }
        assert!(matches!(rx.try_recv(), Err(TryRecvError::Lagged(1))));
    }
}
