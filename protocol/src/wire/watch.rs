//! conversations.watch: the list of conversations, live, for a phone; and the daemon's own events.
//!
//! Source: docs/protocol.md, "The contract": "the lists of the phone" (params limit, 20 by default and 50 at most;
//! items snapshot with conversations, changed with conversation, removed with conversation_id; overflow as for
//! conversation.subscribe). The item `daemon_event` is this project's (docs/adr/0005-daemon-events-on-the-watch.md):
//! login_completed and logout_completed belong to no conversation, and reach clients on the watch.
//! Its items are [`crate::streams::WatchItem`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// conversations.watch params (scope read, a stream, no command id).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConversationsWatchParams {
    /// The most rows of the snapshot, 1 to 50; absent: 20. Another value is `invalid`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_is_absent_by_default() {
        let params: ConversationsWatchParams = serde_json::from_str("{}").unwrap();
        assert_eq!(params.limit, None);
        assert_eq!(serde_json::to_string(&params).unwrap(), "{}");
    }
}
