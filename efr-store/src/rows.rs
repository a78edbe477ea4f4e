//! What goes into the store and what comes out: event rows, conversation summaries, command outcomes, commits,
//! pages and open turns.
//!
//! The store knows no event type of efr-protocol: an event is an [`EventRow`] whose `body` is the event's JSON
//! already serialized by the caller, exactly as the protocol sends it, with the few members the store queries
//! (`kind`, `turn_id`, `at`) copied out as plain fields. Keeping the copies equal to the body is the caller's rule.

use std::fmt;
use std::str::FromStr;

use efr_protocol::ids::{ConversationId, Timestamp, TurnId};
use serde_json::{Map, Value};

use super::command::CommandRecord;
use super::error::{Result, StoreError};

/// One event of a conversation's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRow {
    /// The conversation whose log holds the event.
    pub conversation_id: ConversationId,
    /// Its number in that log: 1 for the first event, then exactly the previous + 1 (docs/architecture.md, "The event
    /// log"). At most `i64::MAX` (SQLite's integer).
    pub seq: u64,
    /// The event kind as on the wire (`prompt_queued`, `turn_started`, ...). Not empty.
    pub kind: String,
    /// The turn the event belongs to; `None` for conversation-level events.
    pub turn_id: Option<TurnId>,
    /// When the event happened (stored in milliseconds).
    pub at: Timestamp,
    /// The whole event as JSON object text, as the protocol sends it (`{"seq", "at", "conversation_id", ...}`).
    pub body: String,
}

/// One searchable text of a conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    /// Its conversation.
    pub conversation_id: ConversationId,
    /// The event that holds it; 0 for the title.
    pub seq: u64,
    /// What it is, as the caller names it (efr: `title`, `prompt`, `answer`, `command`).
    pub kind: String,
    /// The event's turn; `None` outside a turn.
    pub turn_id: Option<TurnId>,
    /// When the event happened (the title: when it was set).
    pub at: Timestamp,
    /// The text, its secrets already replaced.
    pub text: String,
}

/// A conversation's summary row: what `conversations.list` shows without reading the log.
///
/// A commit that carries a summary replaces the stored row, except `created_at`, which keeps its first value.
#[derive(Debug, Clone, PartialEq)]
pub struct ConversationSummary {
    /// The conversation.
    pub id: ConversationId,
    /// Its title, once it has one.
    pub title: Option<String>,
    /// Its status as the conversation actor names it (such as `idle` or `running`); the store does not interpret it.
    pub status: String,
    /// The working directory of its terminal, when known.
    pub cwd: Option<String>,
    /// When it was created; kept from the first upsert.
    pub created_at: Timestamp,
    /// When it last changed; conversations are listed newest `updated_at` first.
    pub updated_at: Timestamp,
    /// How many turns it has had.
    pub turn_count: u64,
    /// Summary members that later versions add, as a JSON object, so they need no migration. Empty by default.
    pub extra: Map<String, Value>,
}

/// One atomic unit of writing: an optional summary upsert, events, and an optional command outcome.
///
/// The store writes all of it or nothing. It is applied in this order: the command (a duplicate refuses the whole
/// commit), the summary, the events (each seq checked against its conversation's last seq), the index entries.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Commit {
    /// The summary row to insert or replace.
    pub conversation: Option<ConversationSummary>,
    /// Events in log order; for each conversation their seqs continue its log without a gap.
    pub events: Vec<EventRow>,
    /// The outcome to store under the write's command_id.
    pub command: Option<CommandRecord>,
    /// The searchable texts of the events (and a new title), written with them ([`crate::search`]).
    pub index: Vec<IndexEntry>,
    /// The delete of this conversation: after this commit's events (its last, conversation_deleted, among them),
    /// every earlier event of it, its index entries and the outcomes of its earlier writes are removed, and its
    /// summary row is emptied and marked deleted (`crate::delete`). Its pages are then given back to the file
    /// system.
    pub deletes: Option<ConversationId>,
}

impl Commit {
    /// A commit of just these events.
    #[must_use]
    pub fn events(events: Vec<EventRow>) -> Self {
        Self {
            events,
            ..Self::default()
        }
    }

    /// Adds the summary upsert.
    #[must_use]
    pub fn with_conversation(mut self, summary: ConversationSummary) -> Self {
        self.conversation = Some(summary);
        self
    }

    /// Adds the search index entries of the commit's events.
    #[must_use]
    pub fn with_index(mut self, entries: Vec<IndexEntry>) -> Self {
        self.index = entries;
        self
    }

    /// Makes the commit the delete of `conversation_id` (see [`Commit::deletes`]); its events must hold that
    /// conversation's last event.
    #[must_use]
    pub fn deleting(mut self, conversation_id: ConversationId) -> Self {
        self.deletes = Some(conversation_id);
        self
    }

    /// Adds the command outcome.
    #[must_use]
    pub fn with_command(mut self, command: CommandRecord) -> Self {
        self.command = Some(command);
        self
    }
}

/// Where a page of `conversations.list` continues: the last row of the previous page, by `(updated_at, id)`.
///
/// Its text form (`Display`/`FromStr`) is `<updated_at millis>.<id>`, for a wire cursor that clients treat as opaque.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConversationCursor {
    /// The `updated_at` of the last row seen.
    pub updated_at: Timestamp,
    /// The id of the last row seen (the tie-break among equal times).
    pub id: ConversationId,
}

impl fmt::Display for ConversationCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.updated_at.as_millis(), self.id)
    }
}

impl FromStr for ConversationCursor {
    type Err = StoreError;

    /// # Errors
    /// [`StoreError::Invalid`] for text that is not `<millis>.<uuid>`.
    fn from_str(text: &str) -> Result<Self> {
        let bad = || StoreError::invalid(format!("cursor {text:?} is not <millis>.<conversation id>"));
        let (millis, id) = text.split_once('.').ok_or_else(bad)?;
        let updated_at = millis
            .parse::<i64>()
            .ok()
            .and_then(Timestamp::from_millis)
            .ok_or_else(bad)?;
        let id = id.parse::<ConversationId>().map_err(|_| bad())?;
        Ok(Self { updated_at, id })
    }
}

/// Which page of conversations to read: at most `limit` rows (1..=[`MAX_PAGE`]), newest first, after `after`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    /// How many rows at most, 1..=[`MAX_PAGE`].
    pub limit: u32,
    /// Continue after this row (the previous page's `next`); `None` for the first page.
    pub after: Option<ConversationCursor>,
}

/// The most rows one read returns (conversations or events); a larger limit is refused as invalid.
pub const MAX_PAGE: u32 = 10_000;

/// A page of conversations, newest `updated_at` first.
#[derive(Debug, Clone, PartialEq)]
pub struct ConversationPage {
    /// The rows of this page.
    pub conversations: Vec<ConversationSummary>,
    /// Where the next page starts; `None` when this page is the last.
    pub next: Option<ConversationCursor>,
}

/// A turn that was not finished when the log was last written: it has an opening event and no terminal event.
///
/// For restart recovery (docs/architecture.md, "Conversations and turns"): a turn without `turn_started` among its
/// kinds was waiting and is recorded as `turn_cancelled`; one with it was running and is recorded as
/// `turn_interrupted`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenTurn {
    /// The conversation of the turn.
    pub conversation_id: ConversationId,
    /// The turn.
    pub turn_id: TurnId,
    /// The turn's opening event (for efr `prompt_queued`, whose body holds the prompt's terminal context); the
    /// earliest one if the turn has several. The other members look at the turn's events from this one on.
    pub first: EventRow,
    /// The kind of the turn's last event.
    pub last_kind: String,
    /// The seq of the turn's last event.
    pub last_seq: u64,
    /// Every kind that occurs among the turn's events, sorted (for efr: whether `turn_started` is among them).
    pub kinds: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_text_round_trips_and_rejects_garbage() {
        let cursor = ConversationCursor {
            updated_at: Timestamp::from_millis(1_700_000_000_123).unwrap(),
            id: ConversationId::new(),
        };
        let text = cursor.to_string();
        assert_eq!(text.parse::<ConversationCursor>().unwrap(), cursor);
        for bad in ["", "12", "x.y", "12.not-a-uuid", &format!("abc.{}", cursor.id)] {
            let err = bad.parse::<ConversationCursor>().unwrap_err();
            assert!(matches!(err, StoreError::Invalid { .. }), "{bad}: {err}");
        }
    }
}
