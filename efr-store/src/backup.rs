//! A consistent copy of the event log while efrd runs (`admin.backup`, `efr backup`).
//!
//! The copy is made with SQLite's online backup API from a connection of its own that holds one read transaction
//! from the first page to the last: in WAL mode that read sees the log as of its start and blocks no writer, so the
//! copy holds exactly the events committed at that moment, and turns go on streaming meanwhile. The pages go over in
//! steps of [`PAGES_PER_STEP`]; because the read transaction stays open, a commit between two steps never restarts
//! the copy. The only cost to the writer is that a checkpoint cannot pass the copy's snapshot until it ends, so the
//! `-wal` file may grow while a copy runs.
//!
//! The destination must be an absolute path that does not exist: the file is created with `O_EXCL` and mode 0600
//! (the log holds prompts and outputs), so a backup never overwrites anything, also not through a symlink. A copy
//! that fails is removed; the log itself is only read.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use efr_protocol::ErrorCode;
use rusqlite::Connection;
use rusqlite::backup::Backup;

use super::error::StoreError;
use super::schema;

/// Pages copied per backup step (4 MiB with SQLite's default 4 KiB pages).
pub const PAGES_PER_STEP: i32 = 1024;

/// What a finished backup wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupOutcome {
    /// The copy, as given (absolute).
    pub path: PathBuf,
    /// The copy's size in bytes.
    pub bytes: u64,
    /// The events the copy holds: every event committed when the copy's read transaction began.
    pub events: u64,
}

/// Why a backup was refused or failed. In every case the event log is untouched and no copy is left behind.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    /// The destination is not an absolute path (efrd's working directory is not the client's).
    #[error("the backup path {} is not absolute", .0.display())]
    NotAbsolute(PathBuf),
    /// Something already exists at the destination; a backup never overwrites.
    #[error("{} already exists; a backup never overwrites, choose a new path", .0.display())]
    Exists(PathBuf),
    /// The destination's folder does not exist.
    #[error("the folder {} does not exist", .0.display())]
    NoFolder(PathBuf),
    /// The destination cannot be created (no permission, a read-only file system, a folder where a file goes).
    #[error("cannot create {}: {reason}", path.display())]
    Create {
        /// The destination.
        path: PathBuf,
        /// The operating system's words.
        reason: String,
    },
    /// The destination's disk has no room for the copy.
    #[error("the disk of {} is full; the partial copy was removed", .0.display())]
    DiskFull(PathBuf),
    /// Reading the log or writing the copy failed otherwise.
    #[error("the backup failed: {0}")]
    Store(#[from] StoreError),
}

impl BackupError {
    /// The protocol error code for a request that failed with this error (docs/protocol.md, "Errors").
    #[must_use]
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::NotAbsolute(_) | Self::Create { .. } => ErrorCode::Invalid,
            Self::Exists(_) => ErrorCode::Conflict,
            Self::NoFolder(_) => ErrorCode::NotFound,
            Self::DiskFull(_) => ErrorCode::Unavailable,
            Self::Store(error) => error.code(),
        }
    }
}

/// Copies the database at `source` to `dest` (blocking; run it off the async threads).
///
/// # Errors
/// See [`BackupError`].
pub(crate) fn run(source: &Path, dest: &Path) -> Result<BackupOutcome, BackupError> {
    if !dest.is_absolute() {
        return Err(BackupError::NotAbsolute(dest.to_owned()));
    }
    // A side file of another database there would be read into the copy, and removed with a failed one.
    for side in side_files(dest).into_iter().skip(1) {
        if side.symlink_metadata().is_ok() {
            return Err(BackupError::Exists(side));
        }
    }
    let file = create_new(dest)?;
    match copy(source, dest, &file) {
        Ok(events) => {
            let bytes = file.metadata().map_or(0, |m| m.len());
            Ok(BackupOutcome {
                path: dest.to_owned(),
                bytes,
                events,
            })
        }
        Err(error) => {
            remove_partial(dest);
            Err(match error {
                BackupError::Store(StoreError::DiskFull) => BackupError::DiskFull(dest.to_owned()),
                other => other,
            })
        }
    }
}

/// Creates `dest` with `O_EXCL` and mode 0600.
fn create_new(dest: &Path) -> Result<File, BackupError> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(dest)
        .map_err(|error| match error.kind() {
            io::ErrorKind::AlreadyExists => BackupError::Exists(dest.to_owned()),
            io::ErrorKind::NotFound => BackupError::NoFolder(dest.parent().unwrap_or(dest).to_owned()),
            io::ErrorKind::StorageFull => BackupError::DiskFull(dest.to_owned()),
            _ => BackupError::Create {
                path: dest.to_owned(),
                reason: error.to_string(),
            },
        })
}

/// Copies the pages under one read transaction and makes the copy durable; returns the events it holds.
fn copy(source: &Path, dest: &Path, file: &File) -> Result<u64, BackupError> {
    let src = schema::open_reader(source)?;
    // The read transaction that fixes the copy's moment: the count and every page come from the same snapshot.
    src.execute_batch("BEGIN DEFERRED").map_err(StoreError::from)?;
    let events: i64 = src
        .query_row("SELECT count(*) FROM events", [], |row| row.get(0))
        .map_err(StoreError::from)?;
    let mut dst = Connection::open(dest).map_err(StoreError::from)?;
    {
        let backup = Backup::new(&src, &mut dst).map_err(StoreError::from)?;
        backup
            .run_to_completion(PAGES_PER_STEP, Duration::ZERO, None)
            .map_err(StoreError::from)?;
    }
    src.execute_batch("COMMIT").map_err(StoreError::from)?;
    // The copy keeps the log's WAL mode; closing its only connection checkpoints and removes its `-wal` file.
    dst.close().map_err(|(_, e)| StoreError::from(e))?;
    file.sync_all().map_err(|e| io_error(dest, &e))?;
    if let Some(folder) = dest.parent() {
        File::open(folder)
            .and_then(|f| f.sync_all())
            .map_err(|e| io_error(dest, &e))?;
    }
    Ok(u64::try_from(events).unwrap_or(0))
}

fn io_error(dest: &Path, error: &io::Error) -> BackupError {
    if error.kind() == io::ErrorKind::StorageFull {
        BackupError::DiskFull(dest.to_owned())
    } else {
        BackupError::Create {
            path: dest.to_owned(),
            reason: error.to_string(),
        }
    }
}

/// Removes a failed copy and the side files SQLite may have left next to it.
fn remove_partial(dest: &Path) {
    for file in side_files(dest) {
        let _ = std::fs::remove_file(file);
    }
}

/// `dest` and the files SQLite keeps next to it.
fn side_files(dest: &Path) -> Vec<PathBuf> {
    ["", "-journal", "-wal", "-shm"]
        .iter()
        .map(|suffix| {
            let mut name = dest.as_os_str().to_owned();
            name.push(suffix);
            PathBuf::from(name)
        })
        .collect()
}
