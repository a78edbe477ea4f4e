//! Reads: the queries, and the small pool of read connections they run on.
//!
//! In WAL mode a reader sees the last committed state and neither blocks the writer nor waits for it, so reads run
//! on their own connections, never the writer's. [`ReadPool`] holds up to [`READERS`] of them; a read takes one on a
//! blocking-pool thread (`tokio::task::spawn_blocking`: SQLite calls block) and gives it back. The permits bound how
//! many reads run at once, so a burst of subscribers resuming cannot open a connection each.
//!
//! The query functions take a `&Connection`, so the writer uses the same ones inside its transaction (for example
//! to find a command's stored outcome). Every value read back is checked (ids parse, times are in range, `extra` is
//! a JSON object); a value that does not is [`StoreError::Corrupt`], never a panic.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use efr_protocol::ids::{CommandId, ConversationId, Timestamp, TurnId};
use rusqlite::{Connection, OptionalExtension, Row, params, params_from_iter};
use serde_json::{Map, Value};
use tokio::sync::Semaphore;

use super::command::CommandRecord;
use super::error::{Result, StoreError};
use super::rows::{
    ConversationCursor, ConversationPage, ConversationSummary, EventRow, MAX_PAGE, OpenTurn, PageRequest,
};
use super::schema;

/// How many read connections the pool keeps, and how many reads run at once.
pub(crate) const READERS: usize = 4;

/// The read connections of one store.
#[derive(Debug)]
pub(crate) struct ReadPool {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    permits: Semaphore,
}

impl ReadPool {
    /// A pool for the database at `path`, starting with `first` (opened by [`Store::open`](super::Store::open) to
    /// check that reading works).
    pub(crate) fn new(path: PathBuf, first: Connection) -> Self {
        Self {
            path,
            idle: Mutex::new(vec![first]),
            permits: Semaphore::new(READERS),
        }
    }

    /// Runs `query` on a read connection, on the blocking pool.
    ///
    /// # Errors
    /// [`StoreError::Closed`] after [`ReadPool::close`]; what `query` returns; opening a connection's errors.
    pub(crate) async fn run<T, F>(self: &Arc<Self>, query: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        let _permit = self.permits.acquire().await.map_err(|_| StoreError::Closed)?;
        let pool = Arc::clone(self);
        let task = tokio::task::spawn_blocking(move || {
            let taken = pool.idle.lock().unwrap_or_else(PoisonError::into_inner).pop();
            let conn = match taken {
                Some(conn) => conn,
                None => schema::open_reader(&pool.path)?,
            };
            let result = query(&conn);
            if !pool.permits.is_closed() {
                pool.idle.lock().unwrap_or_else(PoisonError::into_inner).push(conn);
            }
            result
        });
        match task.await {
            Ok(result) => result,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            // The runtime is shutting down.
            Err(_) => Err(StoreError::Closed),
        }
    }

    /// Frees the unused pages of the idle connections' caches (`PRAGMA shrink_memory`). Blocks: run it on the
    /// blocking pool.
    pub(crate) fn shrink(&self) {
        let idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        for conn in idle.iter() {
            if let Err(e) = conn.execute_batch("PRAGMA shrink_memory") {
                tracing::debug!(error = %e, "event store: a read connection kept its cache");
            }
        }
    }

    /// Refuses further reads and closes the idle connections (a read still running closes its own when done).
    pub(crate) fn close(&self) {
        self.permits.close();
        self.idle.lock().unwrap_or_else(PoisonError::into_inner).clear();
    }
}

/// A seq or count as SQLite's integer.
///
/// # Errors
/// [`StoreError::Invalid`] above `i64::MAX`.
pub(crate) fn seq_to_sql(value: u64) -> Result<i64> {
    i64::try_from(value).map_err(|_| StoreError::invalid(format!("{value} is over i64::MAX")))
}

/// A stored seq or count back as `u64`.
///
/// # Errors
/// [`StoreError::Corrupt`] for a negative value (the schema's CHECKs forbid it).
pub(crate) fn seq_from_sql(value: i64) -> Result<u64> {
    u64::try_from(value).map_err(|_| StoreError::corrupt(format!("negative seq or count {value}")))
}

pub(crate) fn time_from_sql(millis: i64, what: &str) -> Result<Timestamp> {
    Timestamp::from_millis(millis).ok_or_else(|| StoreError::corrupt(format!("{what} {millis} is out of range")))
}

pub(crate) fn id_from_sql<T: std::str::FromStr>(text: &str, what: &str) -> Result<T> {
    text.parse()
        .map_err(|_| StoreError::corrupt(format!("{what} {text:?} is not a UUID")))
}

/// `?, ?, ?` with `n` placeholders, for an `IN (...)` list.
fn placeholders(n: usize) -> String {
    vec!["?"; n].join(", ")
}

/// The columns every event query selects, in the order [`RawEvent::from_row`] reads them.
const EVENT_COLUMNS: &str = "conversation_id, seq, kind, turn_id, at, body";

/// An event row as SQLite gives it, before its values are checked.
struct RawEvent {
    conversation_id: String,
    seq: i64,
    kind: String,
    turn_id: Option<String>,
    at: i64,
    body: String,
}

impl RawEvent {
    fn from_row(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            conversation_id: row.get(0)?,
            seq: row.get(1)?,
            kind: row.get(2)?,
            turn_id: row.get(3)?,
            at: row.get(4)?,
            body: row.get(5)?,
        })
    }

    fn check(self) -> Result<EventRow> {
        Ok(EventRow {
            conversation_id: id_from_sql(&self.conversation_id, "events.conversation_id")?,
            seq: seq_from_sql(self.seq)?,
            kind: self.kind,
            turn_id: self
                .turn_id
                .map(|t| id_from_sql::<TurnId>(&t, "events.turn_id"))
                .transpose()?,
            at: time_from_sql(self.at, "events.at")?,
            body: self.body,
        })
    }
}

/// The events of `conversation_id` with seq above `after_seq`, in seq order, at most `limit` (1..=[`MAX_PAGE`]).
/// An unknown conversation has no events (an empty list).
///
/// # Errors
/// [`StoreError::Invalid`] for a limit out of range; [`StoreError::Corrupt`]; SQLite errors.
pub(crate) fn events_after(
    conn: &Connection,
    conversation_id: ConversationId,
    after_seq: u64,
    limit: u32,
) -> Result<Vec<EventRow>> {
    check_limit(limit)?;
    let mut stmt = conn.prepare_cached(&events_after_sql())?;
    // A seq above i64::MAX cannot be stored, so nothing comes after it.
    let Ok(after) = i64::try_from(after_seq) else {
        return Ok(Vec::new());
    };
    let raw = stmt
        .query_map(params![conversation_id.to_string(), after, limit], RawEvent::from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    raw.into_iter().map(RawEvent::check).collect()
}

/// The query of [`events_after`]: `?1` conversation, `?2` after seq, `?3` limit.
pub(crate) fn events_after_sql() -> String {
    format!("SELECT {EVENT_COLUMNS} FROM events WHERE conversation_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3")
}

fn check_limit(limit: u32) -> Result<()> {
    if limit == 0 || limit > MAX_PAGE {
        return Err(StoreError::invalid(format!("limit {limit} is not in 1..={MAX_PAGE}")));
    }
    Ok(())
}

/// The last seq of `conversation_id`'s log; 0 when it has no events (or does not exist).
///
/// # Errors
/// SQLite errors; [`StoreError::Corrupt`].
pub(crate) fn last_seq(conn: &Connection, conversation_id: ConversationId) -> Result<u64> {
    let last: Option<i64> = conn
        .prepare_cached("SELECT max(seq) FROM events WHERE conversation_id = ?1")?
        .query_row([conversation_id.to_string()], |row| row.get(0))?;
    seq_from_sql(last.unwrap_or(0))
}

/// The columns every conversation query selects, in the order [`RawSummary::from_row`] reads them.
const SUMMARY_COLUMNS: &str = "id, title, status, cwd, created_at, updated_at, turn_count, extra";

/// A summary row as SQLite gives it, before its values are checked.
struct RawSummary {
    id: String,
    title: Option<String>,
    status: String,
    cwd: Option<String>,
    created_at: i64,
    updated_at: i64,
    turn_count: i64,
    extra: String,
}

impl RawSummary {
    fn from_row(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: row.get(0)?,
            title: row.get(1)?,
            status: row.get(2)?,
            cwd: row.get(3)?,
            created_at: row.get(4)?,
            updated_at: row.get(5)?,
            turn_count: row.get(6)?,
            extra: row.get(7)?,
        })
    }

    fn check(self) -> Result<ConversationSummary> {
        let extra: Map<String, Value> = serde_json::from_str(&self.extra).map_err(|e| {
            StoreError::corrupt(format!("conversations.extra of {} is not a JSON object: {e}", self.id))
        })?;
        Ok(ConversationSummary {
            id: id_from_sql(&self.id, "conversations.id")?,
            title: self.title,
            status: self.status,
            cwd: self.cwd,
            created_at: time_from_sql(self.created_at, "conversations.created_at")?,
            updated_at: time_from_sql(self.updated_at, "conversations.updated_at")?,
            turn_count: seq_from_sql(self.turn_count)?,
            extra,
        })
    }
}

/// The summary of `id`, or `None` when the store has no such conversation.
///
/// # Errors
/// SQLite errors; [`StoreError::Corrupt`].
pub(crate) fn conversation(conn: &Connection, id: ConversationId) -> Result<Option<ConversationSummary>> {
    conn.prepare_cached(&format!(
        "SELECT {SUMMARY_COLUMNS} FROM conversations WHERE id = ?1 AND deleted_at IS NULL"
    ))?
    .query_row([id.to_string()], RawSummary::from_row)
    .optional()?
    .map(RawSummary::check)
    .transpose()
}

/// The summaries of `ids` that exist, in no particular order (at most [`MAX_PAGE`] ids).
///
/// # Errors
/// [`StoreError::Invalid`] for more than [`MAX_PAGE`] ids; SQLite errors; [`StoreError::Corrupt`].
pub(crate) fn conversations(conn: &Connection, ids: &[ConversationId]) -> Result<Vec<ConversationSummary>> {
    if ids.len() > MAX_PAGE as usize {
        return Err(StoreError::invalid(format!("at most {MAX_PAGE} conversations at once")));
    }
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT {SUMMARY_COLUMNS} FROM conversations WHERE id IN ({}) AND deleted_at IS NULL",
        placeholders(ids.len())
    );
    conn.prepare(&sql)?
        .query_map(
            params_from_iter(ids.iter().map(ToString::to_string)),
            RawSummary::from_row,
        )?
        .collect::<rusqlite::Result<Vec<_>>>()?
        .into_iter()
        .map(RawSummary::check)
        .collect()
}

/// A page of conversations, newest `updated_at` first (ties: higher id first), continuing after `page.after`.
///
/// # Errors
/// [`StoreError::Invalid`] for a limit out of range; SQLite errors; [`StoreError::Corrupt`].
pub(crate) fn list_conversations(conn: &Connection, page: PageRequest) -> Result<ConversationPage> {
    check_limit(page.limit)?;
    // One row more than asked says whether another page follows.
    let fetch = i64::from(page.limit) + 1;
    let raw = match page.after {
        None => conn
            .prepare_cached(&list_sql(false))?
            .query_map([fetch], RawSummary::from_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?,
        Some(after) => conn
            .prepare_cached(&list_sql(true))?
            .query_map(
                params![after.updated_at.as_millis(), after.id.to_string(), fetch],
                RawSummary::from_row,
            )?
            .collect::<rusqlite::Result<Vec<_>>>()?,
    };
    let mut conversations = raw.into_iter().map(RawSummary::check).collect::<Result<Vec<_>>>()?;
    let next = if conversations.len() > page.limit as usize {
        conversations.truncate(page.limit as usize);
        conversations.last().map(|last| ConversationCursor {
            updated_at: last.updated_at,
            id: last.id,
        })
    } else {
        None
    };
    Ok(ConversationPage { conversations, next })
}

/// The query of [`list_conversations`]: with a cursor, `?1` updated_at, `?2` id, `?3` limit; else `?1` limit.
pub(crate) fn list_sql(with_cursor: bool) -> String {
    if with_cursor {
        format!(
            "SELECT {SUMMARY_COLUMNS} FROM conversations WHERE (updated_at, id) < (?1, ?2) \
             AND deleted_at IS NULL ORDER BY updated_at DESC, id DESC LIMIT ?3"
        )
    } else {
        format!(
            "SELECT {SUMMARY_COLUMNS} FROM conversations WHERE deleted_at IS NULL \
             ORDER BY updated_at DESC, id DESC LIMIT ?1"
        )
    }
}

/// Every turn that has an event of `kind`, with its conversation, in commit order.
///
/// # Errors
/// SQLite errors; [`StoreError::Corrupt`] for an id that is not a UUID.
pub(crate) fn turns_of_kind(conn: &Connection, kind: &str) -> Result<Vec<(ConversationId, TurnId)>> {
    let mut statement = conn.prepare_cached(
        "SELECT conversation_id, turn_id FROM events WHERE kind = ?1 AND turn_id IS NOT NULL ORDER BY rowid",
    )?;
    let rows = statement.query_map([kind], |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?)))?;
    let mut turns = Vec::new();
    for row in rows {
        let (conversation, turn) = row?;
        turns.push((
            id_from_sql(&conversation, "events.conversation_id")?,
            id_from_sql(&turn, "events.turn_id")?,
        ));
    }
    Ok(turns)
}

/// The stored outcome of `command_id`, or `None` when no write with that id was stored.
///
/// # Errors
/// SQLite errors; [`StoreError::Corrupt`].
pub(crate) fn command_outcome(conn: &Connection, command_id: CommandId) -> Result<Option<CommandRecord>> {
    let raw = conn
        .prepare_cached("SELECT method, conversation_id, result, at FROM commands WHERE command_id = ?1")?
        .query_row([command_id.to_string()], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, Option<String>>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, i64>(3)?,
            ))
        })
        .optional()?;
    let Some((method, conversation_id, result, at)) = raw else {
        return Ok(None);
    };
    Ok(Some(CommandRecord {
        command_id,
        method,
        conversation_id: conversation_id
            .map(|c| id_from_sql(&c, "commands.conversation_id"))
            .transpose()?,
        result,
        at: time_from_sql(at, "commands.at")?,
    }))
}

/// The turns left open: every turn that has an event whose kind is in `opening_kinds` and no event whose kind is in
/// `terminal_kinds`, ordered by conversation and then by the seq of their opening event.
///
/// The store does not know the protocol's kinds; the caller names them (restart recovery, docs/architecture.md,
/// "Conversations and turns": for efr's protocol, opening is `prompt_queued`, and terminal is every kind that ends a
/// turn, such as `turn_completed`, `turn_failed`, `turn_interrupted`, `turn_cancelled`, `prompt_withdrawn`). Both kind
/// lists are index seeks on `events_by_kind`, so finding the turns costs O(turns), not O(events); the details of each
/// open turn read the conversation's log from the turn's opening event on, which is the log's tail.
///
/// # Errors
/// [`StoreError::Invalid`] when `opening_kinds` is empty; SQLite errors; [`StoreError::Corrupt`].
pub(crate) fn open_turns(
    conn: &Connection,
    opening_kinds: &[String],
    terminal_kinds: &[String],
) -> Result<Vec<OpenTurn>> {
    if opening_kinds.is_empty() {
        return Err(StoreError::invalid(
            "opening_kinds is empty; name the kind that opens a turn",
        ));
    }
    let ids = conn
        .prepare(&open_turns_sql(opening_kinds.len(), terminal_kinds.len()))?
        .query_map(params_from_iter(opening_kinds.iter().chain(terminal_kinds)), |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, i64>(2)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut turns = Vec::with_capacity(ids.len());
    for (conversation_id, turn_id, opened_at) in ids {
        turns.push(open_turn(conn, &conversation_id, &turn_id, opened_at)?);
    }
    turns.sort_by(|a, b| {
        (a.conversation_id.to_string(), a.first.seq).cmp(&(b.conversation_id.to_string(), b.first.seq))
    });
    Ok(turns)
}

/// The query of [`open_turns`], with `opening` then `terminal` placeholders: each open turn's conversation, turn id
/// and the seq of its (first) opening event.
pub(crate) fn open_turns_sql(opening: usize, terminal: usize) -> String {
    format!(
        "SELECT o.conversation_id, o.turn_id, min(o.seq) FROM events o \
         WHERE o.turn_id IS NOT NULL AND o.kind IN ({}) \
         AND o.turn_id NOT IN (SELECT t.turn_id FROM events t WHERE t.turn_id IS NOT NULL AND t.kind IN ({})) \
         GROUP BY o.conversation_id, o.turn_id",
        placeholders(opening),
        placeholders(terminal),
    )
}

/// The events of turn `?3` of conversation `?1` from seq `?2` on: a range of the primary key, filtered.
pub(crate) const TURN_TAIL: &str = "FROM events WHERE conversation_id = ?1 AND seq >= ?2 AND turn_id = ?3";

/// The details of one open turn, whose opening event has seq `opened_at`: its events are read from there on.
fn open_turn(conn: &Connection, conversation_id: &str, turn_id: &str, opened_at: i64) -> Result<OpenTurn> {
    let edge = |order: &str| -> Result<EventRow> {
        conn.prepare_cached(&format!(
            "SELECT {EVENT_COLUMNS} {TURN_TAIL} ORDER BY seq {order} LIMIT 1"
        ))?
        .query_row(params![conversation_id, opened_at, turn_id], RawEvent::from_row)?
        .check()
    };
    let first = edge("ASC")?;
    let last = edge("DESC")?;
    let kinds = conn
        .prepare_cached(&format!("SELECT DISTINCT kind {TURN_TAIL} ORDER BY kind"))?
        .query_map(params![conversation_id, opened_at, turn_id], |row| {
            row.get::<_, String>(0)
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(OpenTurn {
        conversation_id: first.conversation_id,
        turn_id: id_from_sql(turn_id, "events.turn_id")?,
        last_kind: last.kind,
        last_seq: last.seq,
        first,
        kinds,
    })
}
