//! The delete of a conversation and the space it frees.
//!
//! A delete is a [`crate::Commit`] with [`crate::Commit::deletes`]: its events end with conversation_deleted, and in
//! the same savepoint [`purge`] removes every earlier event of the conversation, its search index entries (the FTS5
//! table has `secure-delete` on, so the words leave the index too) and the outcomes of its earlier writes, and
//! empties its summary row (no title, no cwd, `extra` with only `last_seq`) with `deleted_at` set. Later commits of
//! the conversation are refused as for one that does not exist, and the reads of summaries leave it out.
//!
//! The bytes leave the file: `secure_delete` is on while the purge runs, so SQLite overwrites what it removes with
//! zeros in the pages that stay; once the batch committed, [`reclaim`] runs `PRAGMA incremental_vacuum` (the file is
//! `auto_vacuum = INCREMENTAL`, see `schema.rs`), which moves the pages in use into the freed ones and cuts the
//! file's tail, and a `wal_checkpoint(TRUNCATE)` that writes the result into the file and empties the WAL, whose
//! frames held the old pages.

use efr_protocol::ids::{CommandId, ConversationId, Timestamp};
use rusqlite::{Connection, params};

use super::error::{Result, StoreError};

/// Removes what a delete of `conversation_id` removes (see the module docs), inside the open savepoint. `from_seq`
/// is the first seq of the delete's own events, which stay; `command_id` is the delete's own write, whose outcome
/// stays.
///
/// # Errors
/// SQLite errors; [`StoreError::Invalid`] for a seq out of range.
pub(crate) fn purge(
    conn: &Connection,
    conversation_id: ConversationId,
    from_seq: u64,
    command_id: Option<CommandId>,
) -> Result<()> {
    let id = conversation_id.to_string();
    let from = i64::try_from(from_seq).map_err(|_| StoreError::invalid("a seq over i64::MAX"))?;
    let secure: i64 = conn.query_row("PRAGMA secure_delete", [], |row| row.get(0))?;
    conn.pragma_update(None, "secure_delete", 1)?;
    let purged = (|| -> Result<()> {
        conn.prepare_cached("DELETE FROM events WHERE conversation_id = ?1 AND seq < ?2")?
            .execute(params![id, from])?;
        conn.prepare_cached("DELETE FROM search_entries WHERE conversation_id = ?1")?
            .execute([&id])?;
        conn.prepare_cached("DELETE FROM commands WHERE conversation_id = ?1 AND command_id IS NOT ?2")?
            .execute(params![id, command_id.map(|c| c.to_string())])?;
        conn.prepare_cached(
            "UPDATE conversations SET title = NULL, cwd = NULL, deleted_at = ?2, \
             extra = json_object('last_seq', (SELECT max(seq) FROM events WHERE conversation_id = ?1)) \
             WHERE id = ?1",
        )?
        .execute(params![id, Timestamp::now().as_millis()])?;
        Ok(())
    })();
    conn.pragma_update(None, "secure_delete", secure)?;
    purged
}

/// Gives the pages that deletes freed back to the file system and empties the WAL (see the module docs); returns
/// how many pages the file lost. A failure is logged: the pages stay free inside the file, and the next delete
/// tries again.
pub(crate) fn reclaim(conn: &Connection) -> u64 {
    let freed = (|| -> rusqlite::Result<u64> {
        let before: i64 = conn.query_row("PRAGMA freelist_count", [], |row| row.get(0))?;
        // Each step of the pragma frees one page: every row must be read.
        let mut statement = conn.prepare("PRAGMA incremental_vacuum")?;
        let mut rows = statement.query([])?;
        while rows.next()?.is_some() {}
        drop(rows);
        let after: i64 = conn.query_row("PRAGMA freelist_count", [], |row| row.get(0))?;
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        Ok(u64::try_from(before - after).unwrap_or(0))
    })();
    match freed {
        Ok(pages) => {
            tracing::info!(pages, "event store: gave the pages of a delete back to the file system");
            pages
        }
        Err(error) => {
            tracing::warn!(%error, "event store: the space of a delete stays free inside the file");
            0
        }
    }
}
