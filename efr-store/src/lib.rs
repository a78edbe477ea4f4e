//! The SQLite event log, conversations table and command ids.
//!
//! Every conversation's log is a sequence of events numbered by `seq` from 1 with no gap, and an event reaches a
//! subscriber only after its commit (docs/architecture.md, "The event log"). This module is where that becomes true:
//! the conversation actors hand it [`Commit`]s, and [`Store::commit`] returns only once the commit is durable.
//!
//! # Overview
//!
//! - One SQLite file (`$data/efr.db`, mode 0600) in WAL mode with `synchronous=FULL` and `foreign_keys=ON`; numbered
//!   migrations (`migrations/NNNN_name.sql`, version in `PRAGMA user_version`; a file from a newer efrd is refused).
//!   See `schema.rs`.
//! - Tables: `conversations` (the summary row: title, status, cwd, created/updated, turn count, and a JSON `extra`
//!   object for members that come later), `events` (conversation_id, seq, kind, turn_id, at, body — the whole event
//!   JSON as the protocol sends it), `commands` (command_id → the stored outcome of a write).
//! - One writer thread owns the write connection. [`Store::commit`] queues a [`Commit`] (at most 4096 wait; more
//!   wait for room) and awaits its reply; the thread writes whatever is queued (up to 512 commits; under load it
//!   lingers up to 2 ms for the writers it just released) in ONE transaction and replies to each after `COMMIT`
//!   returned (group commit). Each commit has its own savepoint, so a commit that breaks an invariant fails alone.
//!   See `writer.rs`. The WAL gets its size before the writer writes it, so a commit's sync writes over the file's
//!   blocks instead of growing it; see `wal.rs`.
//! - The search index: `search_entries`, written in the same savepoint as the events they come from, and the FTS5
//!   table `search_index` over them, which the writer thread fills after the commits within a bounded lag (a search
//!   reads the entries not indexed yet directly). See `search.rs` and `follow.rs`.
//! - Reads run on a small pool of their own connections, on tokio's blocking pool. See `read.rs`.
//!
//! The store knows no protocol type: an event is an [`EventRow`] whose body is JSON text the caller serialized, and
//! kinds that matter to recovery are parameters ([`Store::open_turns`]).
//!
//! # Invariants a commit must keep
//!
//! - Each event's seq is exactly its conversation's last seq + 1 ([`StoreError::SeqGap`] otherwise).
//! - An event's conversation has a summary row, from this commit or an earlier one
//!   ([`StoreError::UnknownConversation`]).
//! - A command_id is stored once: a commit that carries one already stored writes nothing and fails with
//!   [`StoreError::DuplicateCommand`], which holds the first outcome to answer with.
//!
//! A commit that fails changes nothing, and the store goes on serving other commits — also after
//! [`StoreError::DiskFull`], which a retry overcomes once there is room again.
//!
//! # Example
//!
//! ```no_run
//! # async fn example() -> Result<(), efr_store::StoreError> {
//! use efr_protocol::ids::{ConversationId, Timestamp};
//! use efr_store::{Commit, ConversationSummary, EventRow, Store};
//!
//! let store = Store::open("/home/me/.local/share/efr/efr.db").await?;
//! let id = ConversationId::new();
//! let now = Timestamp::now();
//! let summary = ConversationSummary {
//!     id, title: None, status: "idle".into(), cwd: None, created_at: now, updated_at: now, turn_count: 0,
//!     extra: Default::default(),
//! };
//! let event = EventRow {
//!     conversation_id: id, seq: 1, kind: "conversation_created".into(), turn_id: None, at: now,
//!     body: format!(r#"{{"seq":1,"at":"{now}","conversation_id":"{id}","kind":"conversation_created"}}"#),
//! };
//! store.commit(Commit::events(vec![event]).with_conversation(summary)).await?; // durable now
//! assert_eq!(store.last_seq(id).await?, 1);
//! store.close().await?;
//! # Ok(()) }
//! ```

mod backup;
mod check;
mod command;
mod delete;
mod devices;
mod error;
mod follow;
mod read;
mod rows;
mod schema;
pub mod search;
mod wal;
mod writer;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use efr_protocol::ids::{CommandId, ConversationId, TurnId};
use tokio::sync::{Semaphore, oneshot};

pub use backup::{BackupError, BackupOutcome, PAGES_PER_STEP};
pub use command::CommandRecord;
pub use devices::{DeviceRow, Inserted};
pub use error::{Result, StoreError};
pub use rows::{
    Commit, ConversationCursor, ConversationPage, ConversationSummary, EventRow, IndexEntry, MAX_PAGE, OpenTurn,
    PageRequest,
};
pub use schema::{BUSY_TIMEOUT, SCHEMA_VERSION};
pub use search::{FoundEntries, FoundEntry, IndexQuery, RebuildState, Stopped};
pub use writer::COMMAND_RETENTION;

use read::ReadPool;
use writer::Request;

/// How a [`Store`] runs.
#[derive(Debug, Clone, Copy)]
pub struct StoreOptions {
    /// Whether the writer thread adds the search entries to the FTS5 index (the follower; on by default). Off, the
    /// entries' texts are still written with their commits and a search reads them all directly, so it finds the
    /// same entries, more slowly on a long log (within its caps); turned on again, the writer indexes what is
    /// pending as after a crash.
    pub index: bool,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self { index: true }
    }
}

/// A handle to the event store. Cheap to clone; every clone talks to the same writer thread and read pool.
///
/// Dropping the last handle lets the writer finish what was queued and stop; [`Store::close`] does the same and
/// waits for it.
#[derive(Debug, Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    path: PathBuf,
    /// To the writer thread; unbounded, with `queue` as its bound.
    requests: std::sync::mpsc::Sender<Request>,
    /// One permit per commit that may wait for the writer ([`writer::QUEUE`]).
    queue: Arc<Semaphore>,
    reads: Arc<ReadPool>,
    writer: Mutex<Option<JoinHandle<()>>>,
    closed: AtomicBool,
}

impl Store {
    /// Opens the database at `path` (creating it, mode 0600, when missing), migrates it to [`SCHEMA_VERSION`] and
    /// starts the writer thread. The folder must exist. Needs a tokio runtime.
    ///
    /// # Errors
    /// [`StoreError::Open`] (missing folder, no permission, WAL unavailable, a failed migration),
    /// [`StoreError::NotADatabase`], [`StoreError::Corrupt`], [`StoreError::NewerSchema`] (the file is left as it
    /// was), [`StoreError::DiskFull`].
    pub async fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, StoreOptions::default()).await
    }

    /// [`Store::open`] with `options`.
    ///
    /// # Errors
    /// As [`Store::open`].
    pub async fn open_with(path: impl AsRef<Path>, options: StoreOptions) -> Result<Self> {
        let path = path.as_ref().to_owned();
        let opened = {
            let path = path.clone();
            tokio::task::spawn_blocking(move || -> Result<_> {
                let writer = schema::open_writer(&path)?;
                // Before the store answers anything: a read right after opening sees no outcome past its retention.
                writer::prune(&writer);
                let reader = schema::open_reader(&path)?;
                Ok((writer, reader))
            })
            .await
        };
        let (writer_conn, reader_conn) = match opened {
            Ok(result) => result?,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => return Err(StoreError::Closed),
        };
        let (requests, rx) = std::sync::mpsc::channel();
        let handle = writer::spawn(writer_conn, rx, &path, options)?;
        tracing::info!(path = %path.display(), schema = SCHEMA_VERSION, index = options.index, "event store open");
        Ok(Self {
            inner: Arc::new(Inner {
                reads: Arc::new(ReadPool::new(path.clone(), reader_conn)),
                path,
                requests,
                queue: Arc::new(Semaphore::new(writer::QUEUE)),
                writer: Mutex::new(Some(handle)),
                closed: AtomicBool::new(false),
            }),
        })
    }

    /// The database path given to [`Store::open`].
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Writes `commit` atomically and returns once it is durable (its transaction's `COMMIT` returned with
    /// `synchronous=FULL`). Only then may its events be broadcast.
    ///
    /// Dropping the returned future after the commit was queued does not withdraw it: it may still be written.
    ///
    /// # Errors
    /// [`StoreError::Invalid`] (checked before queueing: an empty commit, a body that is not a JSON object, a seq of
    /// 0), [`StoreError::SeqGap`], [`StoreError::UnknownConversation`], [`StoreError::DuplicateCommand`] (with the
    /// first outcome), [`StoreError::DiskFull`], [`StoreError::Closed`], SQLite errors. Each means nothing of the
    /// commit was written.
    pub async fn commit(&self, commit: Commit) -> Result<()> {
        self.send_commit(commit).await?.await
    }

    /// Queues `commit` for the writer and returns once it is queued, with the wait for its outcome: the caller may
    /// do other work while the writer writes it. The writer writes commits in the order they were queued; the
    /// outcome is [`Store::commit`]'s, and only once it is `Ok` is the commit durable.
    ///
    /// # Errors
    /// What [`Store::commit`] returns before queueing: [`StoreError::Invalid`], [`StoreError::Closed`]. The rest
    /// come with the outcome.
    pub async fn send_commit(&self, commit: Commit) -> Result<Committing> {
        commit.validate()?;
        let permit = Arc::clone(&self.inner.queue)
            .acquire_owned()
            .await
            .map_err(|_| StoreError::Closed)?;
        let commit = Box::new(commit);
        let answer = self.send_request(|reply| Request::Commit { commit, reply, permit })?;
        Ok(Committing { answer })
    }

    /// Sends one request to the writer and waits for its reply.
    async fn request<T>(&self, make: impl FnOnce(oneshot::Sender<Result<T>>) -> Request) -> Result<T> {
        let answer = self.send_request(make)?;
        // A dropped reply means the writer stopped before it got to the request: nothing was written.
        answer.await.map_err(|_| StoreError::Closed)?
    }

    /// Sends one request to the writer; returns where its reply comes.
    fn send_request<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<Result<T>>) -> Request,
    ) -> Result<oneshot::Receiver<Result<T>>> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(StoreError::Closed);
        }
        let (reply, answer) = oneshot::channel();
        self.inner.requests.send(make(reply)).map_err(|_| StoreError::Closed)?;
        Ok(answer)
    }

    /// The events of `conversation_id` after `after_seq` (0 for all), in seq order, at most `limit`
    /// (1..=[`MAX_PAGE`]). Fewer than `limit` means the end of the log; an unknown conversation gives none.
    ///
    /// # Errors
    /// [`StoreError::Invalid`] for a limit out of range, [`StoreError::Closed`], [`StoreError::Corrupt`], SQLite
    /// errors.
    pub async fn events_after(
        &self,
        conversation_id: ConversationId,
        after_seq: u64,
        limit: u32,
    ) -> Result<Vec<EventRow>> {
        self.read(move |conn| read::events_after(conn, conversation_id, after_seq, limit))
            .await
    }

    /// The last seq of `conversation_id`'s log; 0 when it has no event (or is unknown).
    ///
    /// # Errors
    /// [`StoreError::Closed`], SQLite errors.
    pub async fn last_seq(&self, conversation_id: ConversationId) -> Result<u64> {
        self.read(move |conn| read::last_seq(conn, conversation_id)).await
    }

    /// The summary row of `id`; `None` when the store has no such conversation.
    ///
    /// # Errors
    /// [`StoreError::Closed`], [`StoreError::Corrupt`], SQLite errors.
    pub async fn conversation(&self, id: ConversationId) -> Result<Option<ConversationSummary>> {
        self.read(move |conn| read::conversation(conn, id)).await
    }

    /// The summaries of `ids` that exist, in no particular order; at most [`MAX_PAGE`] ids.
    ///
    /// # Errors
    /// [`StoreError::Invalid`] for too many ids, [`StoreError::Closed`], [`StoreError::Corrupt`], SQLite errors.
    pub async fn conversations(&self, ids: Vec<ConversationId>) -> Result<Vec<ConversationSummary>> {
        self.read(move |conn| read::conversations(conn, &ids)).await
    }

    /// A page of conversations, newest `updated_at` first; `page.after` continues from the previous page's `next`.
    ///
    /// # Errors
    /// [`StoreError::Invalid`] for a limit out of range, [`StoreError::Closed`], [`StoreError::Corrupt`], SQLite
    /// errors.
    pub async fn list_conversations(&self, page: PageRequest) -> Result<ConversationPage> {
        self.read(move |conn| read::list_conversations(conn, page)).await
    }

    /// The stored outcome of `command_id`; `None` when no write with that id was stored.
    ///
    /// # Errors
    /// [`StoreError::Closed`], [`StoreError::Corrupt`], SQLite errors.
    pub async fn command_outcome(&self, command_id: CommandId) -> Result<Option<CommandRecord>> {
        self.read(move |conn| read::command_outcome(conn, command_id)).await
    }

    /// For restart recovery: the turns that have an event of one of `opening_kinds` (efr: `prompt_queued`) and none
    /// of `terminal_kinds` (efr: every kind that ends a turn). See [`OpenTurn`] for what each holds and how efrd
    /// closes it. Ordered by conversation, then by the seq of the turn's first event.
    ///
    /// # Errors
    /// [`StoreError::Invalid`] when `opening_kinds` is empty, [`StoreError::Closed`], [`StoreError::Corrupt`],
    /// SQLite errors.
    pub async fn open_turns(&self, opening_kinds: &[&str], terminal_kinds: &[&str]) -> Result<Vec<OpenTurn>> {
        let opening: Vec<String> = opening_kinds.iter().map(|k| (*k).to_owned()).collect();
        let terminal: Vec<String> = terminal_kinds.iter().map(|k| (*k).to_owned()).collect();
        self.read(move |conn| read::open_turns(conn, &opening, &terminal)).await
    }

    /// Every turn that has an event of `kind` (efr: `turn_started`), with its conversation, in log order (the order
    /// the events were committed). Uses the index on kind: O(turns), not O(events).
    ///
    /// # Errors
    /// [`StoreError::Closed`], [`StoreError::Corrupt`], SQLite errors.
    pub async fn turns_of_kind(&self, kind: &str) -> Result<Vec<(ConversationId, TurnId)>> {
        let kind = kind.to_owned();
        self.read(move |conn| read::turns_of_kind(conn, &kind)).await
    }

    /// Writes a consistent copy of the database to `dest`, an absolute path that must not exist, with mode 0600,
    /// while commits go on (SQLite's online backup API under one read transaction; see `backup.rs`). The copy
    /// holds every event committed when it began. Runs on the blocking pool with a connection of its own, so it
    /// takes no read-pool connection and blocks no writer.
    ///
    /// # Errors
    /// [`BackupError`]: a relative path, an existing file, a missing folder, a folder that cannot be written, a
    /// full disk, [`StoreError::Closed`], SQLite errors. The log is only read, and a failed copy is removed.
    pub async fn backup(&self, dest: PathBuf) -> std::result::Result<BackupOutcome, BackupError> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(StoreError::Closed.into());
        }
        let source = self.inner.path.clone();
        match tokio::task::spawn_blocking(move || backup::run(&source, &dest)).await {
            Ok(outcome) => outcome,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => Err(StoreError::Closed.into()),
        }
    }

    async fn read<T, F>(&self, query: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&rusqlite::Connection) -> Result<T> + Send + 'static,
    {
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(StoreError::Closed);
        }
        self.inner.reads.run(query).await
    }

    /// Graceful stop: writes every commit queued before this call, checkpoints the WAL into the database file,
    /// closes every connection and joins the writer thread. Afterwards every call on any clone is
    /// [`StoreError::Closed`]. A second close is `Ok` and does nothing.
    ///
    /// # Errors
    /// SQLite errors of the final checkpoint or close (what was committed stays committed).
    pub async fn close(&self) -> Result<()> {
        if self.inner.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.inner.reads.close();
        self.inner.queue.close();
        let (reply, answer) = oneshot::channel();
        let closed = match self.inner.requests.send(Request::Close { reply }) {
            Ok(()) => answer.await.unwrap_or(Ok(())),
            // The writer already stopped.
            Err(_) => Ok(()),
        };
        let handle = self.inner.writer.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(handle) = handle {
            let joined = tokio::task::spawn_blocking(move || handle.join()).await;
            if !matches!(joined, Ok(Ok(()))) {
                tracing::error!("event store: the writer thread panicked");
            }
        }
        tracing::info!(path = %self.inner.path.display(), "event store closed");
        closed
    }

    /// Test hook: runs `sql` on the write connection, between batches.
    #[cfg(test)]
    pub(crate) async fn exec_on_writer(&self, sql: &str) -> Result<()> {
        let sql = sql.to_owned();
        self.request(|reply| Request::Exec { sql, reply }).await
    }

    /// Sets `PRAGMA secure_delete` of the write connection to FAST (`true`, as the store opens it) or OFF. For the
    /// store bench, which measures what FAST costs the writes; a delete's purge turns it fully on for itself
    /// either way (`delete.rs`), so a delete's bytes still leave the file.
    ///
    /// # Errors
    /// [`StoreError::Closed`], SQLite errors.
    pub async fn set_secure_delete(&self, fast: bool) -> Result<()> {
        self.write(move |tx| {
            tx.pragma_update(None, "secure_delete", if fast { "FAST" } else { "OFF" })?;
            Ok(())
        })
        .await
    }

    /// Frees what the page caches of every connection hold unused (`PRAGMA shrink_memory`), for a store that is
    /// quiet: the writer's after what it has queued, the idle readers' at once. The caches fill again as they are
    /// used.
    ///
    /// # Errors
    /// [`StoreError::Closed`]; SQLite errors of the writer's connection.
    pub async fn release_memory(&self) -> Result<()> {
        self.write(|conn| Ok(conn.execute_batch("PRAGMA shrink_memory")?))
            .await?;
        let reads = Arc::clone(&self.inner.reads);
        tokio::task::spawn_blocking(move || reads.shrink())
            .await
            .map_err(|_| StoreError::Closed)
    }

    /// Test hook: a pragma's value on the write connection, as text.
    #[cfg(test)]
    pub(crate) async fn writer_pragma(&self, name: &str) -> Result<String> {
        let name = name.to_owned();
        self.request(|reply| Request::Pragma { name, reply }).await
    }

    /// Test hook: a pragma's value on a connection of the read pool, as text.
    #[cfg(test)]
    pub(crate) async fn reader_pragma(&self, name: &str) -> Result<String> {
        let name = name.to_owned();
        self.inner.reads.run(move |conn| writer::pragma_text(conn, &name)).await
    }
}

/// A commit queued by [`Store::send_commit`]: awaiting it gives the commit's outcome. Dropping it does not withdraw the
/// commit.
#[derive(Debug)]
#[must_use = "the commit is durable only once its outcome is Ok"]
pub struct Committing {
    answer: oneshot::Receiver<Result<()>>,
}

impl std::future::Future for Committing {
    type Output = Result<()>;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<()>> {
        // A dropped reply means the writer stopped before it got to the commit: nothing was written.
        std::pin::Pin::new(&mut self.answer)
            .poll(cx)
            .map(|answer| answer.map_err(|_| StoreError::Closed)?)
    }
}
