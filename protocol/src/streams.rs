//! The items of the two streams that carry events: conversation.subscribe ([`SubscribeItem`]: a snapshot, then the
//! conversation's events and drafts) and conversations.watch ([`WatchItem`]: the list of conversations, and the
//! daemon's own events). They stand above both [`crate::events`] and [`crate::wire`], which they carry; the
//! params of the two methods and the snapshot's and drafts' shapes are in [`crate::wire`].
//!
//! Source: docs/protocol.md, "Events" and "The contract" ("drafts", "the lists of the phone"). Watch items are tagged
//! by `kind`, like the other tagged objects of the wire; an item of a kind that a reader does not know reads as
//! [`WatchItem::Unknown`], so a daemon can add kinds without breaking a client.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::events::{DaemonEvent, Event};
use crate::ids::ConversationId;
use crate::wire::{Draft, RecentConversation, Snapshot};

/// One item of a conversation.subscribe stream, tagged by its only member's name: `{"snapshot": ...}`,
/// `{"event": ...}` or `{"draft": ...}` (an event has its own `kind`, so the item cannot use that tag).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SubscribeItem {
    /// The conversation's state (first item, only without `after_seq`).
    Snapshot(Box<Snapshot>),
    /// One committed event, in seq order with no gap.
    Event(Box<Event>),
    /// What a running turn got from the model before the log has it (only with `drafts`).
    Draft(Draft),
}

/// One item of a conversations.watch stream, tagged by `kind`.
///
/// The first item is `snapshot`; then `changed`, `removed` and `daemon_event` in the order of their commits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WatchItem {
    /// The recent conversations when the watch started: the rows of conversations.recent without a tty and a pwd,
    /// newest first.
    Snapshot {
        /// The rows.
        conversations: Vec<RecentConversation>,
    },
    /// A commit changed the title, the status, the working directory, the scope, the project or the count of turns
    /// of a conversation (a new conversation included): its row now.
    Changed {
        /// The row.
        conversation: RecentConversation,
    },
    /// A conversation was deleted.
    Removed {
        /// The conversation.
        conversation_id: ConversationId,
    },
    /// An event that belongs to no conversation (login_completed, logout_completed), recorded while the watch is
    /// open.
    DaemonEvent {
        /// The event, `{"seq", "at", "kind", ...members}`.
        event: DaemonEvent,
    },
    /// A kind that this reader does not know. Never sent.
    #[serde(other)]
    Unknown,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_item_of_a_kind_this_reader_does_not_know_reads_as_unknown() {
        let item: WatchItem = serde_json::from_str(r#"{"kind":"pinned","conversation_id":"x"}"#).unwrap();
        assert_eq!(item, WatchItem::Unknown);
    }

    #[test]
    fn a_known_kind_with_bad_members_is_an_error() {
        assert!(serde_json::from_str::<WatchItem>(r#"{"kind":"removed"}"#).is_err());
        assert!(serde_json::from_str::<WatchItem>(r#"{"kind":"daemon_event","event":{"seq":1}}"#).is_err());
    }

    #[test]
    fn a_subscribe_item_of_an_unknown_shape_is_an_error() {
        assert!(serde_json::from_str::<SubscribeItem>(r#"{"rumour":{}}"#).is_err());
    }
}
