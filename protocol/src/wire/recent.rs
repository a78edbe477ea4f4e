//! conversations.recent: the recent conversations, to resume one (`,resume`, `efr resume`) or to list them on a
//! phone (the rows of conversations.watch).
//!
//! Source: docs/protocol.md, "The contract": "resuming a conversation" (params tty, pwd and limit; a result with scope,
//! current and conversations, each row with summary, route, project, turns, open_in and here) and the entry "the
//! summary.title of each row of conversations.recent is now the title with its secrets replaced". The default and
//! the largest `limit` (20 and 50) are this project's, the same as conversations.watch's.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::conversation::ConversationSummary;
use super::route::RouteScope;
use crate::ids::ConversationId;
use crate::macros::is_false;

/// conversations.recent params (scope read, unary, no command id); every member is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConversationsRecentParams {
    /// The asking terminal, such as `/dev/pts/3`: sets `current`, and `open_in` leaves it out. Absent: no terminal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tty: Option<String>,
    /// The asking terminal's working directory: the conversations of its scope key come first (`here`). Absent: one
    /// list, newest first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pwd: Option<PathBuf>,
    /// The most rows, 1 to 50; absent: 20. Another value is `invalid`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// One row of conversations.recent (and of conversations.watch's `snapshot` and `changed`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RecentConversation {
    /// The conversation's summary row; its `title` has its secrets replaced.
    pub summary: ConversationSummary,
    /// The conversation's scope key; absent when it has none (an old conversation, a first prompt without a
    /// directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<RouteScope>,
    /// The name of its project; absent outside projects and for a removed project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// Its prompt turns.
    pub turns: u64,
    /// Another open terminal that holds it (a tty path); absent when none does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_in: Option<String>,
    /// It belongs to the scope key of the params' `pwd` (the first part of the list); false when absent.
    #[serde(default, skip_serializing_if = "is_false")]
    pub here: bool,
}

/// conversations.recent result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConversationsRecentResult {
    /// The scope key of `pwd`; absent without a `pwd` or when the daemon names no scope for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<RouteScope>,
    /// The terminal's current conversation; absent without a `tty` or when the terminal holds none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<ConversationId>,
    /// The rows: those of the scope key of `pwd` first, each part newest first (by `summary.updated_at`).
    pub conversations: Vec<RecentConversation>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_param_is_optional_and_unknown_members_are_ignored() {
        let params: ConversationsRecentParams = serde_json::from_str(r#"{"later":1}"#).unwrap();
        assert_eq!(params, ConversationsRecentParams::default());
        assert_eq!(serde_json::to_string(&params).unwrap(), "{}");
        assert!(serde_json::from_str::<ConversationsRecentParams>(r#"{"limit":-1}"#).is_err());
    }

    #[test]
    fn here_is_false_when_absent_and_a_row_needs_its_summary() {
        let error = serde_json::from_str::<RecentConversation>(r#"{"turns":1}"#).unwrap_err();
        assert!(error.to_string().contains("summary"), "{error}");
        let wire = serde_json::json!({
            "summary": {
                "conversation_id": "0f8fad5b-d9cb-469f-a165-70867728950e",
                "status": "idle",
                "created_at": "2026-11-30T14:33:11.042Z",
                "updated_at": "2026-11-30T14:33:11.042Z",
                "turns": 0,
                "last_seq": 1
            },
            "turns": 0
        });
        let row: RecentConversation = serde_json::from_value(wire.clone()).unwrap();
        assert!(!row.here && row.open_in.is_none() && row.route.is_none() && row.project.is_none());
        assert_eq!(serde_json::to_value(&row).unwrap(), wire, "absent members stay absent");
    }
}
