//! The writer thread: the only code that writes the database, with group commit.
//!
//! Callers queue [`Request`]s for the thread; a semaphore of [`QUEUE`] permits bounds how many wait, so a flood of
//! writes waits in `commit` instead of growing memory. The thread takes the first request, then everything else
//! already queued, up to [`MAX_BATCH`] commits, and writes them all in ONE transaction: one WAL sync for the whole
//! batch, which is what makes durable throughput reach tens of thousands of events a second.
//!
//! Pacing: a lone commit never waits for company (after a batch of one, the next request is written at once). After
//! a batch of several, the writers that it released are about to come back, so the thread lingers briefly for them
//! ([`Pacing`]): until the batch is as large as the last one and the queue has been quiet for [`QUIET`], and never
//! longer than half the last `COMMIT` (a sync) or [`MAX_LINGER`]. The wait costs less than the extra sync it saves.
//!
//! Each commit runs inside its own savepoint, so a commit that breaks an invariant (a seq gap, a duplicate command
//! id, an unknown conversation) or meets `SQLITE_FULL` is rolled back alone and its batch-mates still commit. When
//! SQLite itself drops the transaction (it may, for `SQLITE_FULL` and I/O errors), the commits applied before it are
//! applied again in a fresh transaction; each round fails at least one commit, so this ends. Every caller gets its
//! reply only after `COMMIT` returned: an acknowledged event is durable (`synchronous=FULL`).

use std::borrow::Borrow;
use std::path::Path;
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use efr_protocol::ids::{ConversationId, Timestamp};
use rusqlite::{Connection, params};
use tokio::sync::{OwnedSemaphorePermit, oneshot};

use super::error::{Result, StoreError};
use super::follow::Follower;
use super::read;
use super::rows::{Commit, ConversationSummary, EventRow};
use super::search;
use super::{delete, wal};

/// The most commits one transaction takes.
pub(crate) const MAX_BATCH: usize = 512;

/// How many requests may wait for the writer before `commit` waits for room.
pub(crate) const QUEUE: usize = 4096;

/// The longest the writer lingers for more commits after a batch of several.
pub(crate) const MAX_LINGER: Duration = Duration::from_millis(2);

/// Once a lingering batch is as large as the last one, a quiet queue for this long ends the wait.
pub(crate) const QUIET: Duration = Duration::from_micros(100);

/// How long a write's outcome stays under its command id: a retry of the same id within this time gets the stored
/// outcome, a later one is a new write (docs/protocol.md, "Scopes"; docs/architecture.md, "The event
/// log"). 30 days: far beyond any retry after a lost connection, a suspended laptop or a phone offline for weeks.
pub const COMMAND_RETENTION: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// How often the writer prunes outcomes past [`COMMAND_RETENTION`] (after a batch; `Store::open` prunes first).
pub(crate) const PRUNE_EVERY: Duration = Duration::from_secs(60 * 60);

/// What the writer thread is asked to do.
#[derive(Debug)]
pub(crate) enum Request {
    /// Write `commit` atomically; reply once its transaction committed (or with why it did not). `permit` is the
    /// commit's place in the bounded queue, given back once it is answered.
    Commit {
        commit: Box<Commit>,
        reply: oneshot::Sender<Result<()>>,
        permit: OwnedSemaphorePermit,
    },
    /// Finish what was queued before, checkpoint the WAL, close the connection and stop.
    Close { reply: oneshot::Sender<Result<()>> },
    /// A small write outside the event log (the devices), run on the write connection; it replies itself.
    Write(WriteJob),
    /// Test hook: run SQL on the write connection (such as `PRAGMA max_page_count`, which is per connection).
    #[cfg(test)]
    Exec {
        sql: String,
        reply: oneshot::Sender<Result<()>>,
    },
    /// Test hook: read a pragma's value on the write connection (`synchronous` is per connection).
    #[cfg(test)]
    Pragma {
        name: String,
        reply: oneshot::Sender<Result<String>>,
    },
}

/// A write of [`Request::Write`]: runs once on the write connection and sends its own reply.
pub(crate) struct WriteJob(pub(crate) Box<dyn FnOnce(&Connection) + Send>);

impl std::fmt::Debug for WriteJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WriteJob")
    }
}

/// A queued commit with its reply channel and queue permit.
type Queued = (Box<Commit>, oneshot::Sender<Result<()>>, OwnedSemaphorePermit);

/// Starts the writer thread on `conn`.
///
/// # Errors
/// [`StoreError::Open`] when the OS cannot start a thread.
pub(crate) fn spawn(
    conn: Connection,
    rx: Receiver<Request>,
    path: &Path,
    options: crate::StoreOptions,
) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("efrd-store-writer".into())
        .spawn(move || run(conn, &rx, options))
        .map_err(|e| StoreError::Open {
            path: path.to_owned(),
            reason: format!("cannot start the writer thread: {e}"),
        })
}

/// What the last batch says about the next one.
#[derive(Debug, Default)]
pub(crate) struct Pacing {
    /// How many commits the last batch held.
    last_batch: usize,
    /// How long its `COMMIT` took (mostly the WAL sync).
    last_commit: Duration,
}

impl Pacing {
    /// The longest to wait for more commits from now, or `None` not to wait: after a batch of one nobody is coming.
    fn linger(&self) -> Option<Duration> {
        (self.last_batch > 1).then(|| (self.last_commit / 2).min(MAX_LINGER))
    }
}

/// The thread's loop: batch, commit, reply, until `Close` or until every sender is gone.
fn run(conn: Connection, rx: &Receiver<Request>, options: crate::StoreOptions) {
    // Before the first commit: its sync writes over the WAL's blocks instead of growing the file (`crate::wal`).
    wal::presize(&conn);
    let mut held: Option<Request> = None;
    let mut pacing = Pacing::default();
    // `Store::open` pruned just before.
    let mut pruned = Instant::now();
    let mut follower = if options.index {
        Follower::start(&conn)
    } else {
        Follower::off()
    };
    loop {
        let first = match held.take() {
            Some(request) => Ok(request),
            None => next_request(rx, &conn, &mut follower),
        };
        let Ok(first) = first else {
            // Every Store handle was dropped: what was queued is written; stop cleanly.
            follower.pass(&conn);
            if let Err(e) = close(conn) {
                tracing::warn!(error = %e, "event store: closing after the last handle dropped");
            }
            return;
        };
        match first {
            Request::Commit { commit, reply, permit } => {
                let mut batch = vec![(commit, reply, permit)];
                held = gather(rx, &mut batch, &pacing);
                let commits: Vec<&Commit> = batch.iter().map(|(commit, _, _)| &**commit).collect();
                let started = Instant::now();
                let outcomes = commit_batch(&conn, &commits);
                let deleted = commits
                    .iter()
                    .zip(&outcomes)
                    .any(|(commit, outcome)| commit.deletes.is_some() && outcome.is_ok());
                pacing = Pacing {
                    last_batch: batch.len(),
                    last_commit: started.elapsed(),
                };
                let mut entries = 0;
                for ((commit, reply, permit), outcome) in batch.into_iter().zip(outcomes) {
                    if outcome.is_ok() {
                        entries += commit.index.len();
                    }
                    // The caller may have stopped waiting; the commit stands either way.
                    let _ = reply.send(outcome);
                    drop(permit);
                }
                // After the replies, so no caller waits for the index.
                follower.wrote(entries);
                if follower.due() {
                    follower.pass(&conn);
                }
                // After the replies: a delete is answered once it is durable, its space freed right after.
                if deleted {
                    delete::reclaim(&conn);
                    // The reclaim emptied the WAL: the next commits write over its room again.
                    wal::presize(&conn);
                }
                // After the replies, so no caller waits for it; an idle store has nothing new to prune.
                if pruned.elapsed() >= PRUNE_EVERY {
                    prune(&conn);
                    pruned = Instant::now();
                }
            }
            Request::Write(WriteJob(job)) => {
                job(&conn);
                // A rebuild's page writes entries too.
                follower.recount(&conn);
            }
            Request::Close { reply } => {
                // The file stands whole: every entry indexed.
                follower.pass(&conn);
                // What was queued after the close is dropped with `rx`: those callers see Closed.
                let _ = reply.send(close(conn));
                return;
            }
            #[cfg(test)]
            Request::Exec { sql, reply } => {
                let _ = reply.send(conn.execute_batch(&sql).map_err(StoreError::from));
            }
            #[cfg(test)]
            Request::Pragma { name, reply } => {
                let _ = reply.send(pragma_text(&conn, &name));
            }
        }
    }
}

/// The next request; while entries wait for the index, a pass runs when they are due and no request came.
fn next_request(
    rx: &Receiver<Request>,
    conn: &Connection,
    follower: &mut Follower,
) -> std::result::Result<Request, RecvTimeoutError> {
    loop {
        let Some(wait) = follower.wait() else {
            return rx.recv().map_err(|_| RecvTimeoutError::Disconnected);
        };
        match rx.recv_timeout(wait) {
            Err(RecvTimeoutError::Timeout) => follower.pass(conn),
            other => return other,
        }
    }
}

/// Adds to `batch` what is queued, lingering as [`Pacing`] allows. Returns a non-commit request that ended the
/// gathering; it waits until this batch is written.
fn gather(rx: &Receiver<Request>, batch: &mut Vec<Queued>, pacing: &Pacing) -> Option<Request> {
    let deadline = pacing.linger().map(|linger| Instant::now() + linger);
    while batch.len() < MAX_BATCH {
        let next = match rx.try_recv() {
            Ok(request) => request,
            Err(TryRecvError::Disconnected) => return None,
            Err(TryRecvError::Empty) => {
                let deadline = deadline?;
                let left = deadline.saturating_duration_since(Instant::now());
                let wait = if batch.len() < pacing.last_batch {
                    left
                } else {
                    left.min(QUIET)
                };
                if wait.is_zero() {
                    return None;
                }
                match rx.recv_timeout(wait) {
                    Ok(request) => request,
                    Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => return None,
                }
            }
        };
        match next {
            Request::Commit { commit, reply, permit } => batch.push((commit, reply, permit)),
            other => return Some(other),
        }
    }
    None
}

/// Deletes the command outcomes stored more than [`COMMAND_RETENTION`] ago. A failure (a full disk) is logged and
/// tried again at the next prune: the outcomes stay, and nothing else depends on it.
pub(crate) fn prune(conn: &Connection) {
    let retention = i64::try_from(COMMAND_RETENTION.as_millis()).unwrap_or(i64::MAX);
    let before = Timestamp::now().as_millis().saturating_sub(retention);
    match conn
        .prepare_cached("DELETE FROM commands WHERE at < ?1")
        .and_then(|mut s| s.execute([before]))
    {
        Ok(0) => {}
        Ok(deleted) => tracing::info!(deleted, "event store: pruned command outcomes past their retention"),
        Err(e) => tracing::warn!(error = %e, "event store: cannot prune command outcomes"),
    }
}

/// Checkpoints the WAL into the database file and closes the connection, so the file stands alone after a stop.
fn close(conn: Connection) -> Result<()> {
    // A reader that still holds a snapshot makes the truncate incomplete; that is harmless (SQLite finishes it later).
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    conn.close().map_err(|(_, e)| StoreError::from(e))
}

/// Writes `commits` in one transaction, each in its own savepoint; returns each commit's outcome, in order.
pub(crate) fn commit_batch<C: Borrow<Commit>>(conn: &Connection, commits: &[C]) -> Vec<Result<()>> {
    // None: applied in the open transaction, waiting for COMMIT (or not tried yet).
    let mut outcomes: Vec<Option<Result<()>>> = vec![None; commits.len()];
    loop {
        if let Err(e) = exec(conn, "BEGIN IMMEDIATE") {
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
            match apply_in_savepoint(conn, commit.borrow()) {
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
        if let Err(e) = exec(conn, "COMMIT") {
            let e = StoreError::from(e);
            if !conn.is_autocommit() {
                let _ = exec(conn, "ROLLBACK");
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

/// Runs one control statement (BEGIN, SAVEPOINT, ...) from the statement cache: they run thousands of times a second.
fn exec(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([])?;
    Ok(())
}

/// Sets every outcome not yet decided to `error`.
fn fill(outcomes: &mut [Option<Result<()>>], error: &StoreError) {
    for outcome in outcomes.iter_mut().filter(|o| o.is_none()) {
        *outcome = Some(Err(error.clone()));
    }
}

/// Applies one commit inside a savepoint: released on success, rolled back on any error.
fn apply_in_savepoint(conn: &Connection, commit: &Commit) -> Result<()> {
    exec(conn, "SAVEPOINT efr_commit")?;
    match apply(conn, commit) {
        Ok(()) => {
            exec(conn, "RELEASE efr_commit")?;
            Ok(())
        }
        Err(e) => {
            if !conn.is_autocommit() {
                exec(conn, "ROLLBACK TO efr_commit")?;
                exec(conn, "RELEASE efr_commit")?;
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
    search::insert_entries(conn, &commit.index)?;
    if let Some(deleted) = commit.deletes {
        let Some(from) = next.iter().find(|(c, _)| *c == deleted).map(|(_, next)| *next) else {
            return Err(StoreError::invalid(
                "a delete's commit holds no event of its conversation",
            ));
        };
        let first = commit
            .events
            .iter()
            .filter(|e| e.conversation_id == deleted)
            .map(|e| e.seq)
            .min()
            .unwrap_or(from);
        delete::purge(conn, deleted, first, commit.command.as_ref().map(|c| c.command_id))?;
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
            "SELECT EXISTS (SELECT 1 FROM conversations WHERE id = ?1 AND deleted_at IS NULL), \
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

/// Test hook: a pragma's value on `conn`, as text (`2` for `synchronous = FULL`, `wal` for `journal_mode`).
#[cfg(test)]
pub(crate) fn pragma_text(conn: &Connection, name: &str) -> Result<String> {
    use rusqlite::types::Value;
    let value: Value = conn.pragma_query_value(None, name, |row| row.get(0))?;
    Ok(match value {
        Value::Integer(i) => i.to_string(),
        Value::Text(text) => text,
        other => format!("{other:?}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lone_commit_never_lingers_and_a_busy_one_lingers_briefly() {
        assert_eq!(Pacing::default().linger(), None);
        let after = |last_batch, millis| {
            Pacing {
                last_batch,
                last_commit: Duration::from_millis(millis),
            }
            .linger()
        };
        assert_eq!(after(1, 10), None, "after a batch of one nobody is coming back");
        assert_eq!(after(40, 1), Some(Duration::from_micros(500)), "half a sync");
        assert_eq!(after(40, 30), Some(MAX_LINGER), "never longer than MAX_LINGER");
    }
}
