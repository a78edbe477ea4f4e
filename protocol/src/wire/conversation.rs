//! The conversation summary row, conversations.list and conversation.diff.
//!
//! Source: docs/protocol.md, "The contract": "routing by scope" (the tty of conversations.list) and "what the agent
//! changed in files" (conversation.diff). The members of the summary row are this project's: the spec names the
//! row's facts (title, status, working directory, scope, count of turns) without their wire form.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::changes::FileChanges;
use super::route::RouteScope;
use crate::ids::{ConversationId, Timestamp, TurnId};
use crate::macros::{is_false, wire_enum};

wire_enum! {
    /// What a conversation is doing.
    pub enum ConversationStatus {
        /// No turn runs and no prompt waits.
        Idle = "idle",
        /// A turn runs (or a prompt waits for one).
        Running = "running",
        /// A turn waits for the user: an approval or an input.
        Waiting = "waiting",
    }
    unknown
}

/// One conversation as a list shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConversationSummary {
    /// The conversation.
    pub conversation_id: ConversationId,
    /// Its title, absent until it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is doing.
    pub status: ConversationStatus,
    /// When it was created.
    pub created_at: Timestamp,
    /// When its last event was committed.
    pub updated_at: Timestamp,
    /// Its working directory, absent when it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// The scope key of its first prompt; absent for old conversations and a first prompt without a directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<RouteScope>,
    /// The terminal that holds it, absent when none does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tty: Option<String>,
    /// Its prompt turns.
    pub turns: u64,
    /// The seq of its last event.
    pub last_seq: u64,
}

/// conversations.list params (scope read): newest first, in pages.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConversationsListParams {
    /// Only that terminal's conversations, its current one first, in one page (`limit` and `cursor` do not apply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tty: Option<String>,
    /// The most rows in the page; absent: 50.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// The `next_cursor` of the previous page; absent: the first page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// conversations.list result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConversationsListResult {
    /// The rows of the page.
    pub conversations: Vec<ConversationSummary>,
    /// Pass it as `cursor` for the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// conversation.diff params (scope read, no command id).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConversationDiffParams {
    /// Absent: the conversation of the named turn, else the active conversation of the hello's terminal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<ConversationId>,
    /// Absent: the newest turn of the conversation that started and ended (not a cancelled one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<TurnId>,
    /// Only the changed files, no diff (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub stat: bool,
}

/// conversation.diff result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConversationDiffResult {
    /// The turn.
    pub turn_id: TurnId,
    /// Its first snapshot against its last.
    pub changes: FileChanges,
    /// The unified diff, at most 20000 lines; a changed ignored file (such as `.env`) has only the line
    /// `<path>: ignored file, content not shown`. Absent with `stat`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}
