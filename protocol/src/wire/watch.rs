//! conversations.watch: the list of conversations, live, for a phone; and the daemon's own events.
//!
//! Source: docs/protocol.md, "The contract": "the lists of the phone" (params limit, 20 by default and 50 at most;
//! items snapshot with conversations, changed with conversation, removed with conversation_id; overflow as for
//! conversation.subscribe). The item `daemon_event` is this project's (docs/adr/0005-daemon-events-on-the-watch.md):
//! login_completed and logout_completed belong to no conversation, and reach clients on the watch.
//!
//! Items are tagged by `kind`, like the other tagged objects of the wire. An item of a kind that a reader does not
//! know reads as [`WatchItem::Unknown`], so a daemon can add kinds without breaking a client.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::recent::RecentConversation;
use crate::events::DaemonEvent;
use crate::ids::ConversationId;

/// conversations.watch params (scope read, a stream, no command id).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConversationsWatchParams {
    /// The most rows of the snapshot, 1 to 50; absent: 20. Another value is `invalid`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
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
    fn limit_is_absent_by_default() {
        let params: ConversationsWatchParams = serde_json::from_str("{}").unwrap();
        assert_eq!(params.limit, None);
        assert_eq!(serde_json::to_string(&params).unwrap(), "{}");
    }
}
