//! The search index: the searchable texts of the log in an FTS5 table of the same database (migrations
//! `0003_search.sql` and `0005_search_follow.sql`; docs/adr/0025-search-index.md).
//!
//! The store knows no event type: the caller (efrd's search module) says which texts an event holds, with their
//! secrets already replaced, as [`IndexEntry`]s in the same [`Commit`](crate::Commit) as the events. Their texts are
//! written to `search_entries` in the commit's savepoint, so a failed commit writes none; the writer thread adds
//! them to the FTS5 index `search_index` after the commit, within a bounded lag (`follow.rs`). A title is one entry
//! of kind `title` with seq 0 per conversation; a new one replaces the old.
//!
//! Reads: [`Store::search_index`](crate::Store::search_index) reads the entries not indexed yet (the tail, matched
//! here) and asks the index for the others that hold every term, newest first, in one snapshot, and stops at a row
//! cap or a time cap (the result says which); [`Store::search_entries`](crate::Store::search_entries) reads one
//! conversation's entries newest first, for conversation.search, which matches them itself. Terms of fewer than 3
//! characters cannot use the trigram index: such a term is matched with `LIKE` on the entries the other terms
//! select (or on every entry, newest first, within the same caps, matched here with the same case folding as efrd's
//! ranges).
//!
//! Rebuild: entries of events written before the index existed are added by the caller in the background with
//! [`Store::index_backfill`](crate::Store::index_backfill); [`Store::search_rebuild_state`](crate::Store::search_rebuild_state) says how far it got.

use std::time::{Duration, Instant};

use efr_protocol::ids::ConversationId;
use rusqlite::{Connection, OptionalExtension, params};

use super::Store;
use super::error::{Result, StoreError};
use super::read::{id_from_sql, seq_from_sql, seq_to_sql, time_from_sql};
use super::rows::EventRow;
pub use super::rows::IndexEntry;

/// The kind of the title entry, which the store keeps at one per conversation.
pub const TITLE_KIND: &str = "title";

/// What to find: every term must occur in an entry (case-insensitive, anywhere in a word).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexQuery {
    /// The terms, each non-empty.
    pub terms: Vec<String>,
    /// The most entries to look at, newest first; more give [`Stopped::RowCap`].
    pub row_cap: usize,
    /// The most time to spend; more give [`Stopped::TimeCap`].
    pub time_cap: Duration,
}

/// Why a read stopped before it saw every matching entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// It saw `row_cap` entries.
    RowCap,
    /// It ran out of `time_cap`.
    TimeCap,
}

/// An entry that a read found, with FTS5's bm25 rank (lower is better; 0 when the read did not use the index).
#[derive(Debug, Clone, PartialEq)]
pub struct FoundEntry {
    /// The entry.
    pub entry: IndexEntry,
    /// FTS5's `bm25()`: negative, lower is a better match.
    pub bm25: f64,
}

/// The entries a read found, newest first, and whether it stopped early.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FoundEntries {
    /// The entries, newest (highest entry id) first.
    pub entries: Vec<FoundEntry>,
    /// Why it stopped early; `None` when it saw every match.
    pub stopped: Option<Stopped>,
}

/// How far the rebuild of the index for older events got: the events up to rowid `target` need entries, and those
/// up to `done` have them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RebuildState {
    /// The last event rowid indexed by the rebuild.
    pub done: i64,
    /// The last event rowid that was in the log when the index was made.
    pub target: i64,
}

impl RebuildState {
    /// Whether every older event is indexed.
    #[must_use]
    pub fn complete(self) -> bool {
        self.done >= self.target
    }

    /// The percent indexed, 0 to 100.
    #[must_use]
    pub fn percent(self) -> u8 {
        if self.complete() || self.target <= 0 {
            return 100;
        }
        let percent = self.done.max(0).saturating_mul(100) / self.target;
        u8::try_from(percent.min(99)).unwrap_or(99)
    }
}

/// Writes `entries` inside the open transaction; a title entry replaces its conversation's previous title.
///
/// Each entry gets an id above every id written before and above `search_follow.indexed`: the follower takes every
/// id above `indexed` as not indexed and every id at or below it as indexed, so an id must never come back after a
/// delete (SQLite would reuse the ids of deleted last rows).
pub(crate) fn insert_entries(conn: &Connection, entries: &[IndexEntry]) -> Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    let first: i64 = conn
        .prepare_cached(
            "SELECT max(coalesce((SELECT max(id) FROM search_entries), 0), \
                        (SELECT indexed FROM search_follow WHERE one = 1)) + 1",
        )?
        .query_row([], |row| row.get(0))?;
    for (id, entry) in (first..).zip(entries) {
        let conversation = entry.conversation_id.to_string();
        if entry.kind == TITLE_KIND {
            conn.prepare_cached("DELETE FROM search_entries WHERE conversation_id = ?1 AND seq = 0")?
                .execute([&conversation])?;
        }
        conn.prepare_cached(
            "INSERT INTO search_entries (id, conversation_id, seq, kind, turn_id, at, text) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?
        .execute(params![
            id,
            conversation,
            seq_to_sql(entry.seq)?,
            entry.kind,
            entry.turn_id.map(|t| t.to_string()),
            entry.at.as_millis(),
            entry.text,
        ])?;
    }
    Ok(())
}

/// A term quoted as an FTS5 string: every character literal (`"` doubled), so no query syntax (`NEAR`, `*`, `-`,
/// `AND`, `^`, `:`) reaches the parser.
fn quoted(term: &str) -> String {
    format!("\"{}\"", term.replace('"', "\"\""))
}

/// A term as a `LIKE` pattern: `%term%`, with `%`, `_` and the escape `\` escaped.
fn like_pattern(term: &str) -> String {
    let mut pattern = String::with_capacity(term.len() + 2);
    pattern.push('%');
    for c in term.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

/// The entries that hold every term of `query`, newest first, within its caps: the tail that the follower has not
/// indexed yet (read and matched here), then the index's matches, in one read transaction so that both see the same
/// `search_follow.indexed`.
///
/// # Errors
/// [`StoreError::Invalid`] for no term or an empty term; SQLite errors; [`StoreError::Corrupt`].
pub(crate) fn find(conn: &Connection, query: &IndexQuery) -> Result<FoundEntries> {
    if query.terms.is_empty() || query.terms.iter().any(String::is_empty) {
        return Err(StoreError::invalid("a search needs terms that are not empty"));
    }
    let started = Instant::now();
    let snapshot = conn.unchecked_transaction()?;
    let (long, short): (Vec<&String>, Vec<&String>) = query.terms.iter().partition(|t| t.chars().count() >= 3);
    let mut found = FoundEntries::default();
    if long.is_empty() {
        // Every entry, indexed or not.
        let mut statement = conn.prepare_cached(
            "SELECT id, conversation_id, seq, kind, turn_id, at, text, 0.0 FROM search_entries ORDER BY id DESC",
        )?;
        let mut rows = statement.query([])?;
        scan(
            &mut rows,
            &query.terms,
            &mut found,
            query.row_cap,
            started,
            query.time_cap,
        )?;
        return Ok(found);
    }
    let mut tail = conn.prepare_cached(
        "SELECT id, conversation_id, seq, kind, turn_id, at, text, 0.0 FROM search_entries \
         WHERE id > (SELECT indexed FROM search_follow WHERE one = 1) ORDER BY id DESC",
    )?;
    let mut rows = tail.query([])?;
    scan(
        &mut rows,
        &query.terms,
        &mut found,
        query.row_cap,
        started,
        query.time_cap,
    )?;
    drop(rows);
    if found.stopped.is_some() {
        return Ok(found);
    }
    let first_like = 2;
    let likes: Vec<String> = (0..short.len())
        .map(|i| format!("e.text LIKE ?{} ESCAPE '\\'", i + first_like))
        .collect();
    let mut values: Vec<String> = Vec::with_capacity(query.terms.len());
    values.push(long.iter().map(|t| quoted(t)).collect::<Vec<_>>().join(" AND "));
    let likes: String = likes.iter().map(|like| format!(" AND {like}")).collect();
    let sql = format!(
        "SELECT e.id, e.conversation_id, e.seq, e.kind, e.turn_id, e.at, e.text, bm25(search_index) \
         FROM search_index JOIN search_entries e ON e.id = search_index.rowid \
         WHERE search_index MATCH ?1{likes} ORDER BY search_index.rowid DESC"
    );
    values.extend(short.iter().map(|t| like_pattern(t)));
    let mut statement = conn.prepare_cached(&sql)?;
    let mut rows = statement.query(rusqlite::params_from_iter(values.iter()))?;
    collect(&mut rows, &mut found, query.row_cap, started, query.time_cap)?;
    drop(rows);
    drop(statement);
    drop(snapshot);
    Ok(found)
}

/// A code point folded for matching (the first of its lower case), as efrd's ranges fold.
fn fold(c: char) -> char {
    c.to_lowercase().next().unwrap_or(c)
}

/// Whether `folded_hay` holds `needle` (both folded).
fn holds(folded_hay: &[char], needle: &[char]) -> bool {
    needle.len() <= folded_hay.len() && folded_hay.windows(needle.len()).any(|w| w == needle)
}

/// Adds to `found` the rows of `(id, conversation_id, seq, kind, turn_id, at, text, rank)` that hold every term,
/// matched here with the same case folding as efrd's ranges, for entries that the index cannot look up: terms of
/// fewer than 3 characters (which a trigram index cannot look up) and entries not indexed yet. The time cap counts
/// the entries read, not only the matches.
fn scan(
    rows: &mut rusqlite::Rows<'_>,
    terms: &[String],
    found: &mut FoundEntries,
    row_cap: usize,
    started: Instant,
    time_cap: Duration,
) -> Result<()> {
    let needles: Vec<Vec<char>> = terms.iter().map(|t| t.chars().map(fold).collect()).collect();
    let mut read: u64 = 0;
    while let Some(row) = rows.next()? {
        read += 1;
        if read.is_multiple_of(256) && started.elapsed() > time_cap {
            found.stopped = Some(Stopped::TimeCap);
            break;
        }
        let hay: Vec<char> = lossy_text(row.get_ref(6)?).chars().map(fold).collect();
        if !needles.iter().all(|needle| holds(&hay, needle)) {
            continue;
        }
        if found.entries.len() >= row_cap {
            found.stopped = Some(Stopped::RowCap);
            break;
        }
        found.entries.push(found_from_row(row)?);
    }
    Ok(())
}

/// Adds to `found` the rows of `(id, conversation_id, seq, kind, turn_id, at, text, rank)` until the end or a cap
/// (`row_cap` entries in `found`, `time_cap` since `started`).
fn collect(
    rows: &mut rusqlite::Rows<'_>,
    found: &mut FoundEntries,
    row_cap: usize,
    started: Instant,
    time_cap: Duration,
) -> Result<()> {
    loop {
        if found.entries.len() >= row_cap {
            // Only partial when another match follows.
            if rows.next()?.is_some() {
                found.stopped = Some(Stopped::RowCap);
            }
            break;
        }
        // The clock is read every 64 rows: a read of it costs more than a row.
        if found.entries.len() % 64 == 63 && started.elapsed() > time_cap {
            found.stopped = Some(Stopped::TimeCap);
            break;
        }
        let Some(row) = rows.next()? else { break };
        found.entries.push(found_from_row(row)?);
    }
    Ok(())
}

fn found_from_row(row: &rusqlite::Row<'_>) -> Result<FoundEntry> {
    let conversation: String = row.get(1)?;
    let turn: Option<String> = row.get(4)?;
    Ok(FoundEntry {
        entry: IndexEntry {
            conversation_id: id_from_sql(&conversation, "conversation id")?,
            seq: seq_from_sql(row.get(2)?)?,
            kind: row.get(3)?,
            turn_id: turn.map(|t| id_from_sql(&t, "turn id")).transpose()?,
            at: time_from_sql(row.get(5)?, "entry time")?,
            // A text that is not UTF-8 (written around the store) is shown with U+FFFD, not refused.
            text: lossy_text(row.get_ref(6)?),
        },
        bm25: row.get(7)?,
    })
}

/// A text column as a string; bytes that are not UTF-8 become U+FFFD, and a value that is not text is empty.
fn lossy_text(value: rusqlite::types::ValueRef<'_>) -> String {
    match value {
        rusqlite::types::ValueRef::Text(bytes) | rusqlite::types::ValueRef::Blob(bytes) => {
            String::from_utf8_lossy(bytes).into_owned()
        }
        _ => String::new(),
    }
}

/// The entries of one conversation, newest first (the title first), at most `row_cap`, within `time_cap`.
///
/// # Errors
/// SQLite errors; [`StoreError::Corrupt`].
pub(crate) fn scan_conversation(
    conn: &Connection,
    conversation_id: ConversationId,
    row_cap: usize,
    time_cap: Duration,
) -> Result<FoundEntries> {
    let mut statement = conn.prepare_cached(
        "SELECT id, conversation_id, seq, kind, turn_id, at, text, 0.0 FROM search_entries \
         WHERE conversation_id = ?1 ORDER BY seq = 0 DESC, seq DESC, id DESC",
    )?;
    let mut rows = statement.query([conversation_id.to_string()])?;
    let mut found = FoundEntries::default();
    collect(&mut rows, &mut found, row_cap, Instant::now(), time_cap)?;
    Ok(found)
}

/// The rebuild's progress.
///
/// # Errors
/// SQLite errors.
pub(crate) fn rebuild_state(conn: &Connection) -> Result<RebuildState> {
    let state = conn
        .prepare_cached("SELECT done, target FROM search_rebuild WHERE one = 1")?
        .query_row([], |row| {
            Ok(RebuildState {
                done: row.get(0)?,
                target: row.get(1)?,
            })
        })
        .optional()?;
    Ok(state.unwrap_or(RebuildState { done: 0, target: 0 }))
}

/// The events with a rowid in `(after, up_to]`, in rowid order, at most `limit`, each with its rowid.
///
/// # Errors
/// SQLite errors; [`StoreError::Corrupt`].
pub(crate) fn events_for_rebuild(
    conn: &Connection,
    after: i64,
    up_to: i64,
    limit: u32,
) -> Result<Vec<(i64, EventRow)>> {
    let mut statement = conn.prepare_cached(
        "SELECT rowid, conversation_id, seq, kind, turn_id, at, body FROM events \
         WHERE rowid > ?1 AND rowid <= ?2 ORDER BY rowid LIMIT ?3",
    )?;
    let rows = statement.query_map(params![after, up_to, limit], |row| {
        Ok((
            row.get::<_, i64>(0)?,
            row.get::<_, String>(1)?,
            row.get::<_, i64>(2)?,
            row.get::<_, String>(3)?,
            row.get::<_, Option<String>>(4)?,
            row.get::<_, i64>(5)?,
            // A body that is not UTF-8 must not stop the rebuild: it is read with U+FFFD (and then fails to parse
            // as an event, which the rebuild skips).
            lossy_text(row.get_ref(6)?),
        ))
    })?;
    let mut events = Vec::new();
    for row in rows {
        let (rowid, conversation, seq, kind, turn, at, body) = row?;
        events.push((
            rowid,
            EventRow {
                conversation_id: id_from_sql(&conversation, "conversation id")?,
                seq: seq_from_sql(seq)?,
                kind,
                turn_id: turn.map(|t| id_from_sql(&t, "turn id")).transpose()?,
                at: time_from_sql(at, "event time")?,
                body,
            },
        ));
    }
    Ok(events)
}

/// Writes a page of the rebuild inside the open transaction: its entries (only of conversations that still exist,
/// and a title only where the live log set none meanwhile) and how far it got.
pub(crate) fn apply_backfill(conn: &Connection, entries: &[IndexEntry], done: i64) -> Result<()> {
    for entry in entries {
        let (exists, has_title): (bool, bool) = conn
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM conversations WHERE id = ?1 AND deleted_at IS NULL), \
                        EXISTS (SELECT 1 FROM search_entries WHERE conversation_id = ?1 AND seq = 0)",
            )?
            .query_row([entry.conversation_id.to_string()], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })?;
        if exists && !(entry.kind == TITLE_KIND && has_title) {
            insert_entries(conn, std::slice::from_ref(entry))?;
        }
    }
    conn.prepare_cached("UPDATE search_rebuild SET done = max(done, ?1) WHERE one = 1")?
        .execute([done])?;
    Ok(())
}

impl Store {
    /// The entries that hold every term of `query`, newest first, within its caps (see the module docs).
    ///
    /// # Errors
    /// [`StoreError::Invalid`] for no term or an empty one, [`StoreError::Closed`], [`StoreError::Corrupt`], SQLite
    /// errors.
    pub async fn search_index(&self, query: IndexQuery) -> Result<FoundEntries> {
        self.read(move |conn| find(conn, &query)).await
    }

    /// The entries of `conversation_id`, its title first, then newest first, at most `row_cap`, within `time_cap`.
    ///
    /// # Errors
    /// [`StoreError::Closed`], [`StoreError::Corrupt`], SQLite errors.
    pub async fn search_entries(
        &self,
        conversation_id: ConversationId,
        row_cap: usize,
        time_cap: Duration,
    ) -> Result<FoundEntries> {
        self.read(move |conn| scan_conversation(conn, conversation_id, row_cap, time_cap))
            .await
    }

    /// How far the rebuild of the index for the events older than it got.
    ///
    /// # Errors
    /// [`StoreError::Closed`], SQLite errors.
    pub async fn search_rebuild_state(&self) -> Result<RebuildState> {
        self.read(rebuild_state).await
    }

    /// The next page of events for the rebuild: rowids in `(after, up_to]`, in order, at most `limit`.
    ///
    /// # Errors
    /// [`StoreError::Closed`], [`StoreError::Corrupt`], SQLite errors.
    pub async fn search_rebuild_events(&self, after: i64, up_to: i64, limit: u32) -> Result<Vec<(i64, EventRow)>> {
        self.read(move |conn| events_for_rebuild(conn, after, up_to, limit))
            .await
    }

    /// Writes a page of the rebuild: `entries` and the last event rowid they cover, in one transaction.
    ///
    /// # Errors
    /// [`StoreError::Closed`], [`StoreError::DiskFull`], SQLite errors; nothing of the page is written then.
    pub async fn index_backfill(&self, entries: Vec<IndexEntry>, done: i64) -> Result<()> {
        self.write(move |tx| apply_backfill(tx, &entries, done)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_reach_fts5_and_like_as_literals() {
        assert_eq!(quoted(r#"a"b NEAR(c) -d*"#), r#""a""b NEAR(c) -d*""#);
        assert_eq!(like_pattern(r"5%_\x"), r"%5\%\_\\x%");
    }

    #[test]
    fn the_percent_of_a_rebuild_is_below_100_until_it_is_complete() {
        assert_eq!(RebuildState { done: 0, target: 0 }.percent(), 100);
        assert_eq!(RebuildState { done: 0, target: 400 }.percent(), 0);
        assert_eq!(RebuildState { done: 399, target: 400 }.percent(), 99);
        assert_eq!(RebuildState { done: 400, target: 400 }.percent(), 100);
    }
}
