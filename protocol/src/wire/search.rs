//! conversations.search and conversation.search: full-text search of every conversation, or of one.
//!
//! Source: docs/protocol.md, changelog entry "the search of conversations": the params (query, tty, pwd, limit,
//! stats; conversation_id, query, limit), the rows and hits, ranges as half-open pairs of Unicode code points, and
//! `partial` (row_cap or time_cap). How efrd ranks the rows is in README.md, "Search".

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::recent::RecentConversation;
use super::route::RouteScope;
use crate::ids::{ConversationId, Timestamp, TurnId};
use crate::macros::{is_false, wire_enum};

wire_enum! {
    /// What a hit is in: the conversation's title, a prompt, an answer of the model, or a command that it ran.
    pub enum SearchKind {
        /// The conversation's title (its secrets replaced).
        Title = "title",
        /// A prompt of the user.
        Prompt = "prompt",
        /// An answer of the model.
        Answer = "answer",
        /// The command line of a shell call.
        Command = "command",
    }
    unknown
}

wire_enum! {
    /// Why a result is partial: the search stopped before it looked at every matching entry of the index.
    pub enum SearchPartial {
        /// It looked at the most entries one search looks at (the newest first).
        RowCap = "row_cap",
        /// It ran out of its time.
        TimeCap = "time_cap",
    }
    unknown
}

/// A half-open range of Unicode code points (not bytes, not UTF-16 units) in a text: `start..end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TextRange {
    /// The first code point of the match, from 0.
    pub start: u32,
    /// The code point after the match.
    pub end: u32,
}

/// A line of text with the ranges of the query's matches in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RangedText {
    /// The text (a line of the hit, at most a few hundred characters around its matches; its secrets replaced).
    pub text: String,
    /// The matches, in order, not overlapping.
    pub ranges: Vec<TextRange>,
}

/// Where the best match of a conversation is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SearchHit {
    /// What the match is in.
    pub kind: SearchKind,
    /// The event that holds it (0 for the title, which belongs to no event).
    pub seq: u64,
    /// Its turn; absent outside a turn (the title).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<TurnId>,
    /// When the event happened (the conversation's last change for the title).
    pub at: Timestamp,
    /// Where a client reads the log to show the hit in its place: conversation.subscribe's `after_seq`, as text (the
    /// seq before the turn's first event, or before the hit's event outside a turn).
    pub history_cursor: String,
    /// The lines of the text that hold a match, in order, each with its ranges.
    pub lines: Vec<RangedText>,
}

/// conversations.search params (scope read, no command id).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConversationsSearchParams {
    /// What to find: words, each matched as a part of a word, in any order (every word must match). At most 1 KiB;
    /// empty: the recent conversations, as conversations.recent orders them.
    pub query: String,
    /// The asking terminal, such as `/dev/pts/3`: sets `current`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tty: Option<String>,
    /// The asking terminal's working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pwd: Option<PathBuf>,
    /// The most rows, 1 to 200; absent: 50.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Add `stats` to the result; false when absent.
    #[serde(default, skip_serializing_if = "is_false")]
    pub stats: bool,
}

/// One conversation that matches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SearchRow {
    /// Its row of conversations.recent (the title with its secrets replaced).
    pub conversation: RecentConversation,
    /// The first 8 hex digits of its id, enough to name it to `efr resume` or `efr delete`.
    pub short_id: String,
    /// The matches in `conversation.summary.title`; absent when the title has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title_ranges: Option<Vec<TextRange>>,
    /// Its best match outside the title; absent when only the title matches (or the query is empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hit: Option<SearchHit>,
}

/// What a search cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SearchStats {
    /// The index entries it looked at.
    pub rows_scanned: u64,
    /// The conversations it ranked.
    pub conversations_scored: u64,
    /// The titles among the entries.
    pub titles_scored: u64,
    /// Its time in microseconds.
    pub elapsed_us: u64,
}

/// conversations.search result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConversationsSearchResult {
    /// The rows, best first.
    pub rows: Vec<SearchRow>,
    /// The scope key of `pwd`; absent when the daemon names none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<RouteScope>,
    /// The terminal's current conversation; absent without a `tty` or when the terminal holds none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<ConversationId>,
    /// Why the rows may miss a match; absent when the search looked at every match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<SearchPartial>,
    /// The percent of the log indexed while a rebuild of the index runs; absent when the index is complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u8>,
    /// What the search cost; only with the `stats` param.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<SearchStats>,
}

/// conversation.search params (scope read, no command id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConversationSearchParams {
    /// The conversation to search.
    pub conversation_id: ConversationId,
    /// What to find, as in conversations.search; not empty.
    pub query: String,
    /// The most hits, 1 to 50; absent: 20.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

/// conversation.search result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConversationSearchResult {
    /// The hits, newest first (a title hit, when the title matches, first).
    pub hits: Vec<SearchHit>,
    /// The conversation's title with its secrets replaced; absent when it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Why the hits may miss a match; absent when the search looked at every match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<SearchPartial>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_kinds_and_reasons_read_as_unknown_and_defaults_stay_off_the_wire() {
        let kind: SearchKind = serde_json::from_str(r#""reasoning""#).unwrap();
        assert_eq!(kind, SearchKind::Unknown);
        let partial: SearchPartial = serde_json::from_str(r#""memory_cap""#).unwrap();
        assert_eq!(partial, SearchPartial::Unknown);
        let params: ConversationsSearchParams = serde_json::from_str(r#"{"query":"x"}"#).unwrap();
        assert_eq!(serde_json::to_string(&params).unwrap(), r#"{"query":"x"}"#);
        assert!(serde_json::from_str::<ConversationsSearchParams>("{}").is_err());
    }
}
