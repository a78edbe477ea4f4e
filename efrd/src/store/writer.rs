//! The writer thread: the only code that writes the database, with group commit.
//!
//! Callers queue [`Request`]s on a bounded channel (so a flood of writes waits instead of growing memory). The
//! thread takes the first request, then drains whatever else is already queued, up to [`MAX_BATCH`] commits, and
//! writes them all in ONE transaction: one WAL sync for the whole batch, which is what makes durable throughput
//! reach tens of thousands of events a second. There is no linger timer: while one batch syncs, the next one
//! queues up, so the batch grows exactly as fast as the load does and a lone commit never waits for company.
//!
//! Each commit runs inside its own savepoint, so a commit that breaks an invariant (a seq gap, a duplicate command
//! id, an unknown conversation) or meets `SQLITE_FULL` is rolled back alone and its batch-mates still commit. When
//! SQLite itself drops the transaction (it may, for `SQLITE_FULL` and I/O errors), the commits applied before it are
//! applied again in a fresh transaction; each round fails at least one commit, so this ends. Every caller gets its
//! reply only after `COMMIT` returned: an acknowledged event is durable (`synchronous=FULL`).

use std::path::Path;
use std::thread::JoinHandle;

use efr_protocol::ids::ConversationId;
use rusqlite::{Connection, params};
use tokio::sync::{mpsc, oneshot};

use super::error::{Result, StoreError};
use super::read;
use super::rows::{Commit, ConversationSummary, EventRow};

/// The most commits one transaction takes.
pub(crate) const MAX_BATCH: usize = 512;

/// How many requests may wait for the writer before `commit` waits for room.
pub(crate) const QUEUE: usize = 4096;

/// What the writer thread is asked to do.
#[derive(Debug)]
pub(crate) enum Request {
    /// Write `commit` atomically; reply once its transaction committed (or with why it did not).
    Commit {
        commit: Commit,
        reply: oneshot::Sender<Result<()>>,
    },
    /// Finish what was queued before, checkpoint the WAL, close the connection and stop.
    Close { reply: oneshot::Sender<Result<()>> },
    /// Test hook: run SQL on the write connection (such as `PRAGMA max_page_count`, which is per connection).
    #[cfg(test)]
    Exec {
        sql: String,
        reply: oneshot::Sender<Result<()>>,
    },
}

/// Starts the writer thread on `conn`.
///
/// # Errors
/// [`StoreError::Open`] when the OS cannot start a thread.
pub(crate) fn spawn(conn: Connection, rx: mpsc::Receiver<Request>, path: &Path) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("efrd-store-writer".into())
        .spawn(move || run(conn, rx))
        .map_err(|e| StoreError::Open {
            path: path.to_owned(),
            reason: format!("cannot start the writer thread: {e}"),
        })
}

/// The thread's loop: batch, commit, reply, until `Close` or until every sender is gone.
fn run(conn: Connection, mut rx: mpsc::Receiver<Request>) {
    let mut held: Option<Request> = None;
    let (mut nb, mut nc) = (0u64, 0u64);
    let mut t_apply = std::time::Duration::ZERO;
    let mut t_commit = std::time::Duration::ZERO;
    loop {
        let Some(first) = held.take().or_else(|| rx.blocking_recv()) else {
            // Every Store handle was dropped: what was queued is written; stop cleanly.
            if let Err(e) = close(conn) {
                tracing::warn!(error = %e, "event store: closing after the last handle dropped");
            }
            return;
        };
        match first {
            Request::Commit { commit, reply } => {
                let mut batch = vec![(commit, reply)];
                while batch.len() < MAX_BATCH {
                    match rx.try_recv() {
                        Ok(Request::Commit { commit, reply }) => batch.push((commit, reply)),
                        Ok(other) => {
                            // A close or hook waits until the commits queued before it are written.
                            held = Some(other);
                            break;
                        }
                        Err(_) => break,
                    }
                }
                let (commits, replies): (Vec<_>, Vec<_>) = batch.into_iter().unzip();
                nb += 1; nc += commits.len() as u64;
                let t0 = std::time::Instant::now();
                let outcomes = commit_batch(&conn, &commits);
                t_apply += t0.elapsed();
                let t1 = std::time::Instant::now();
                for (reply, outcome) in replies.into_iter().zip(outcomes) {
                    // The caller may have stopped waiting; the commit stands either way.
                    let _ = reply.send(outcome);
                }
                t_commit += t1.elapsed();
            }
            Request::Close { reply } => {
                eprintln!("PROBE batches {nb} commits {nc} batch-time {t_apply:?} reply-time {t_commit:?}");
                // Dropping `rx` (on return) drops what was queued after the close: those callers see Closed.
                rx.close();
                let _ = reply.send(close(conn));
                return;
            }
            #[cfg(test)]
            Request::Exec { sql, reply } => {
                let _ = reply.send(conn.execute_batch(&sql).map_err(StoreError::from));
            }
        }
    }
}

/// Checkpoints the WAL into the database file and closes the connection, so the file stands alone after a stop.
fn close(conn: Connection) -> Result<()> {
    // A reader that still holds a snapshot makes the truncate incomplete; that is harmless (SQLite finishes it later).
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    conn.close().map_err(|(_, e)| StoreError::from(e))
}

/// Writes `commits` in one transaction, each in its own savepoint; returns each commit's outcome, in order.
pub(crate) fn commit_batch(conn: &Connection, commits: &[Commit]) -> Vec<Result<()>> {
    // None: applied in the open transaction, waiting for COMMIT (or not tried yet).
    let mut outcomes: Vec<Option<Result<()>>> = vec![None; commits.len()];
    loop {
        if let Err(e) = conn.execute_batch("BEGIN IMMEDIATE") {
            let e = StoreError::from(e);
            fill(&mut outcomes, &e);
            break;
        }
        let mut applied = Vec::new();
        let mut lost_transaction = false;
        for (i, commit) in commits.iter().enumerate() {
            if outcomes[i].is_some() {
                continue;
            }
            match apply_in_savepoint(conn, commit) {
                Ok(()) => applied.push(i),
                Err(e) => {
                    outcomes[i] = Some(Err(e));
                    if conn.is_autocommit() {
                        // SQLite rolled the whole transaction back: redo the ones applied so far.
                        lost_transaction = true;
                        break;
                    }
                }
            }
        }
        if lost_transaction {
            tracing::warn!("event store: SQLite dropped a batch transaction; writing its other commits again");
            continue;
        }
        if let Err(e) = conn.execute_batch("COMMIT") {
            let e = StoreError::from(e);
            if !conn.is_autocommit() {
                let _ = conn.execute_batch("ROLLBACK");
            }
            tracing::warn!(error = %e, commits = applied.len(), "event store: a batch failed to commit");
            fill(&mut outcomes, &e);
            break;
        }
        for i in applied {
            outcomes[i] = Some(Ok(()));
        }
        break;
    }
    outcomes
        .into_iter()
        .map(|o| o.unwrap_or(Err(StoreError::Closed)))
        .collect()
}

/// Sets every outcome not yet decided to `error`.
fn fill(outcomes: &mut [Option<Result<()>>], error: &StoreError) {
    for outcome in outcomes.iter_mut().filter(|o| o.is_none()) {
        *outcome = Some(Err(error.clone()));
    }
}

/// Applies one commit inside a savepoint: released on success, rolled back on any error.
fn apply_in_savepoint(conn: &Connection, commit: &Commit) -> Result<()> {
    conn.execute_batch("SAVEPOINT efr_commit")?;
    match apply(conn, commit) {
        Ok(()) => {
            conn.execute_batch("RELEASE efr_commit")?;
            Ok(())
        }
        Err(e) => {
            if !conn.is_autocommit() {
                conn.execute_batch("ROLLBACK TO efr_commit; RELEASE efr_commit")?;
            }
            if matches!(e, StoreError::DiskFull) {
                tracing::warn!("event store: disk full; a commit was refused");
            }
            Err(e)
        }
    }
}

/// Writes one commit: the command (refusing a duplicate), the summary, then the events with their seqs checked.
fn apply(conn: &Connection, commit: &Commit) -> Result<()> {
    if let Some(command) = &commit.command {
        if let Some(stored) = read::command_outcome(conn, command.command_id)? {
            return Err(StoreError::DuplicateCommand {
                command_id: command.command_id,
                stored: Box::new(stored),
            });
        }
        conn.prepare_cached(
            "INSERT INTO commands (command_id, method, conversation_id, result, at) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?
        .execute(params![
            command.command_id.to_string(),
            command.method,
            command.conversation_id.map(|c| c.to_string()),
            command.result,
            command.at.as_millis(),
        ])?;
    }
    if let Some(summary) = &commit.conversation {
        upsert_conversation(conn, summary)?;
    }
    // The next seq of each conversation this commit touched; usually one or two, so a list beats a map.
    let mut next: Vec<(ConversationId, u64)> = Vec::new();
    for event in &commit.events {
        let slot = match next.iter().position(|(c, _)| *c == event.conversation_id) {
            Some(slot) => slot,
            None => {
                let expected = next_seq(conn, event.conversation_id)?;
                next.push((event.conversation_id, expected));
                next.len() - 1
            }
        };
        let expected = next[slot].1;
        if event.seq != expected {
            return Err(StoreError::SeqGap {
                conversation_id: event.conversation_id,
                expected,
                got: event.seq,
            });
        }
        insert_event(conn, event)?;
        next[slot].1 = expected + 1;
    }
    Ok(())
}

/// The seq the next event of `conversation_id` must have, inside the open transaction.
///
/// # Errors
/// [`StoreError::UnknownConversation`] when it has no summary row.
fn next_seq(conn: &Connection, conversation_id: ConversationId) -> Result<u64> {
    let (exists, last): (bool, Option<i64>) = conn
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM conversations WHERE id = ?1), \
                    (SELECT max(seq) FROM events WHERE conversation_id = ?1)",
        )?
        .query_row([conversation_id.to_string()], |row| Ok((row.get(0)?, row.get(1)?)))?;
    if !exists {
        return Err(StoreError::UnknownConversation { conversation_id });
    }
    Ok(read::seq_from_sql(last.unwrap_or(0))? + 1)
}

/// Inserts the summary, or replaces every member but `created_at` of the stored one.
fn upsert_conversation(conn: &Connection, summary: &ConversationSummary) -> Result<()> {
    let extra = serde_json::to_string(&summary.extra)
        .map_err(|e| StoreError::invalid(format!("conversation.extra does not serialize: {e}")))?;
    conn.prepare_cached(
        "INSERT INTO conversations (id, title, status, cwd, created_at, updated_at, turn_count, extra) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) \
         ON CONFLICT (id) DO UPDATE SET title = excluded.title, status = excluded.status, cwd = excluded.cwd, \
         updated_at = excluded.updated_at, turn_count = excluded.turn_count, extra = excluded.extra",
    )?
    .execute(params![
        summary.id.to_string(),
        summary.title,
        summary.status,
        summary.cwd,
        summary.created_at.as_millis(),
        summary.updated_at.as_millis(),
        read::seq_to_sql(summary.turn_count)?,
        extra,
    ])?;
    Ok(())
}

/// Inserts one event row (its seq already checked).
fn insert_event(conn: &Connection, event: &EventRow) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO events (conversation_id, seq, kind, turn_id, at, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        event.conversation_id.to_string(),
        read::seq_to_sql(event.seq)?,
        event.kind,
        event.turn_id.map(|t| t.to_string()),
        event.at.as_millis(),
        event.body,
    ])?;
    Ok(())
}
