//! The errors of the event store.
//!
//! Each failure that a caller handles differently has its own variant: a full disk ([`StoreError::DiskFull`]) is an
//! operator's problem and retryable, a broken invariant ([`StoreError::SeqGap`]) is a bug in the caller, a duplicate
//! command ([`StoreError::DuplicateCommand`]) carries the outcome to answer with. SQLite's own result codes are
//! classified once, in [`StoreError::from`], so that `SQLITE_FULL` is always `DiskFull` whichever statement met it.
//!
//! A failed commit changes nothing: the writer rolls its savepoint back (or the whole transaction, when SQLite has
//! already dropped it), so the log never holds half of a [`Commit`](super::Commit).

use std::path::PathBuf;
use std::sync::Arc;

use efr_protocol::ids::{CommandId, ConversationId};
use efr_protocol::{ErrorBody, ErrorCode};
use rusqlite::ErrorCode as SqliteCode;

use super::command::CommandRecord;

/// A `Result` whose error is a [`StoreError`].
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Why the store refused or failed an operation.
///
/// `Clone` so that one failed transaction can answer every commit of its batch with the same error.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// SQLite returned `SQLITE_FULL`: the disk (or the configured page limit) has no room. The commit that met it
    /// wrote nothing; the store keeps serving, and a retry succeeds once space is given back.
    #[error("the event store's disk is full; nothing of this write was stored")]
    DiskFull,

    /// The file at `path` is not an SQLite database (`SQLITE_NOTADB`), for example another program's file.
    #[error("{} is not an efr database", path.display())]
    NotADatabase {
        /// The database path given to [`Store::open`](super::Store::open).
        path: PathBuf,
    },

    /// SQLite found the database damaged (`SQLITE_CORRUPT`), or a stored value does not read back (an id that is not
    /// a UUID, a time out of range, `extra` that is not a JSON object). `detail` says which.
    #[error("the event store is corrupt: {detail}")]
    Corrupt {
        /// What was found damaged.
        detail: String,
    },

    /// The database was written by a newer efrd: its schema version (`PRAGMA user_version`) is above the newest
    /// migration this build knows. Nothing was changed; run the newer efrd, or move the file away.
    #[error(
        "the event store has schema version {found}, newer than this efrd's {supported}; \
         nothing was changed (use a newer efrd)"
    )]
    NewerSchema {
        /// The version found in the file.
        found: i64,
        /// The newest version this build can read and write.
        supported: i64,
    },

    /// The database could not be opened at all (a missing folder, no permission, WAL not available there).
    #[error("cannot open the event store at {}: {reason}", path.display())]
    Open {
        /// The database path given to [`Store::open`](super::Store::open).
        path: PathBuf,
        /// What went wrong, in words.
        reason: String,
    },

    /// An event's seq is not exactly the conversation's last seq + 1 (seqs count from 1 with no gap;
    /// docs/architecture.md, "The event log"). The commit was refused whole.
    #[error("event seq {got} of conversation {conversation_id} is not the next one (expected {expected})")]
    SeqGap {
        /// The conversation of the event.
        conversation_id: ConversationId,
        /// The seq the log needs next: its last seq + 1.
        expected: u64,
        /// The seq the commit gave.
        got: u64,
    },

    /// An event names a conversation that has no summary row; the commit must upsert the summary first (in the same
    /// commit or an earlier one).
    #[error("conversation {conversation_id} is not in the store")]
    UnknownConversation {
        /// The conversation the event named.
        conversation_id: ConversationId,
    },

    /// The commit's command_id already has a stored outcome. Nothing of the commit was written; answer the request
    /// with `stored` (docs/architecture.md, "The event log": the same command_id again returns the stored result and
    /// changes nothing).
    #[error("command {command_id} was already applied")]
    DuplicateCommand {
        /// The repeated command id.
        command_id: CommandId,
        /// The first outcome, as stored.
        stored: Box<CommandRecord>,
    },

    /// The caller passed something the store does not take (an event body that is not a JSON object, a limit of 0,
    /// an empty commit). `what` names the field.
    #[error("invalid store input: {what}")]
    Invalid {
        /// Which field, and why.
        what: String,
    },

    /// The store was closed ([`Store::close`](super::Store::close)) or its writer stopped; nothing was written.
    #[error("the event store is closed")]
    Closed,

    /// Any other SQLite failure (an I/O error, a lock held past the busy timeout).
    #[error("SQLite: {0}")]
    Sqlite(#[source] Arc<rusqlite::Error>),
}

impl StoreError {
    /// The protocol error code for a request that failed with this error (the closed set of docs/protocol.md,
    /// "Errors").
    ///
    /// A duplicate command is not an error on the wire (the stored result is the answer), so it maps to `conflict`
    /// only for a caller that cannot answer with the stored outcome.
    #[must_use]
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::DiskFull | Self::Closed => ErrorCode::Unavailable,
            Self::DuplicateCommand { .. } => ErrorCode::Conflict,
            Self::Invalid { .. } => ErrorCode::Invalid,
            Self::UnknownConversation { .. } => ErrorCode::NotFound,
            Self::NotADatabase { .. }
            | Self::Corrupt { .. }
            | Self::NewerSchema { .. }
            | Self::Open { .. }
            | Self::SeqGap { .. }
            | Self::Sqlite(_) => ErrorCode::Internal,
        }
    }

    /// An [`StoreError::Invalid`] naming `what`.
    pub(crate) fn invalid(what: impl Into<String>) -> Self {
        Self::Invalid { what: what.into() }
    }

    /// A [`StoreError::Corrupt`] with `detail`.
    pub(crate) fn corrupt(detail: impl Into<String>) -> Self {
        Self::Corrupt { detail: detail.into() }
    }

    /// Classifies an SQLite error met while opening `path`: like [`StoreError::from`], but `SQLITE_NOTADB` names the
    /// file and `SQLITE_CANTOPEN` becomes [`StoreError::Open`].
    pub(crate) fn at_open(path: &std::path::Path, error: rusqlite::Error) -> Self {
        match error.sqlite_error_code() {
            Some(SqliteCode::NotADatabase) => Self::NotADatabase { path: path.to_owned() },
            Some(SqliteCode::CannotOpen | SqliteCode::PermissionDenied | SqliteCode::ReadOnly) => Self::Open {
                path: path.to_owned(),
                reason: error.to_string(),
            },
            _ => Self::from(error),
        }
    }
}

/// The answer to a client whose request the store failed: `unavailable` (the closed set of docs/protocol.md,
/// "Errors"), since nothing a client can change makes the same request work; a full disk says so. One mapping for
/// every method, so the same failure reads the same whichever method met it. A caller that must answer otherwise
/// (a duplicate command answers with its stored outcome; the device checks answer the spec's `busy` with
/// `starting`) matches the error before it gets here.
impl From<StoreError> for ErrorBody {
    fn from(error: StoreError) -> Self {
        Self::from(&error)
    }
}

impl From<&StoreError> for ErrorBody {
    fn from(error: &StoreError) -> Self {
        match error {
            StoreError::DiskFull => Self::new(ErrorCode::Unavailable, "the disk is full: nothing was recorded"),
            other => Self::new(ErrorCode::Unavailable, format!("the event store failed: {other}")),
        }
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> Self {
        match error.sqlite_error_code() {
            Some(SqliteCode::DiskFull) => Self::DiskFull,
            Some(SqliteCode::DatabaseCorrupt) => Self::Corrupt {
                detail: error.to_string(),
            },
            Some(SqliteCode::NotADatabase) => Self::Corrupt {
                detail: format!("not a database: {error}"),
            },
            _ => Self::Sqlite(Arc::new(error)),
        }
    }
}
