//! Snapshots of a project tree: what a shell call changed in the project while it ran, and a turn's first snapshot
//! against its last (docs/architecture.md, "Tools": tool_call_completed `changes`, turn_completed `changes`,
//! `conversation.diff`).
//!
//! [`Snapshot::take`] walks a root and records every file; [`compare`] turns two snapshots of the same root into
//! [`Change`](efr_patch::changes::Change)s, which [`efr_patch::changes`] shows as `file_changes` and as a
//! unified diff; [`SnapshotStore`] keeps snapshots on disk under an id, so `conversation.diff` can compare a turn's
//! first and last snapshot after a restart.
//!
//! Taking a snapshot reads the file system and blocks: call it from `spawn_blocking`.
//!
//! # What a snapshot records
//!
//! - The walk follows git's ignore rules ([`IgnoreRules`](efr_patch::changes::IgnoreRules): `.gitignore` here
//!   and in the parent folders, `.git/info/exclude`, the global excludes file), never enters `.git`, does not
//!   follow symlinks, and visits each folder's entries sorted by name (so the walk order is the paths' order
//!   component by component, and a cut walk covers a known prefix of it).
//! - Each regular file and symlink gets its path (relative to the root, `/`-separated), kind, size, mode bits,
//!   mtime, ctime and inode, and the SHA-256 of its content (a symlink's content is its target). Folders are not
//!   recorded (git does not track them either); nor are sockets, FIFOs and devices; a name that is not UTF-8 is
//!   counted in `skipped`.
//! - The content of a text file of at most [`Limits::max_file_bytes`] is kept while the kept contents stay within
//!   [`Limits::max_kept_bytes`]; a text file past that budget is counted in `not_kept`. A binary file (a NUL byte
//!   or invalid UTF-8) is marked binary and its content is not kept. A file over [`Limits::max_hash_bytes`] is not
//!   read at all: a change to it is seen from its size and mtime.
//! - An ignored file in a folder that the walk enters (such as `.env`) is recorded by its metadata only: no hash and
//!   no content, so a change is seen (size, mtime, mode) but never shown. An ignored folder (`target/`,
//!   `node_modules/`) is not entered.
//! - With a `previous` snapshot of the same root, a file whose size, mtime, ctime, inode and mode are unchanged and
//!   whose ctime is at least 2 s older than the previous snapshot's start keeps that snapshot's hash and content
//!   without being read again (git's "racily clean" rule: a write inside the clock's granularity would not show).
//!
//! # Cover: what undo can restore
//!
//! With [`Limits::cover`] set (a turn's snapshots, `docs/undo.md`), a snapshot also keeps the bytes of every file
//! it covers in the store's `blobs` (content-addressed by SHA-256, so a file unchanged across turns is stored once):
//!
//! - every regular file and symlink up to [`Cover::max_file_bytes`] while the snapshot's stored bytes stay within
//!   [`Cover::max_bytes`], ignored files included (their content is stored but never shown in a diff);
//! - the walk enters ignored folders too, except build outputs ([`is_build_output`]), which are listed in
//!   `not_covered` as a whole: an ignored one is not entered, the files of one that is not ignored are recorded
//!   (their changes show) but never stored;
//! - a file over a bound is recorded as without cover (`not_covered` with the reason), never silently;
//! - the git refs of the repository holding the root (HEAD, branch heads, the stash) and its index file, in `refs`.
//!
//! The stat cache (the `previous` snapshot, see below) applies to stored contents too: an unchanged file is neither
//! read nor stored again.
//!
//! # Bounds
//!
//! [`Limits::max_files`] recorded files and [`Limits::max_time`] of walking: when one of them cuts the walk, the
//! snapshot says so in `truncated` with the reason and `next`, the first path it did not reach. It covers exactly
//! the paths before `next` in walk order, and [`compare`] reports only paths that both snapshots cover, so a cut
//! never shows an unreached file as deleted; the comparison carries the cut on.
//!
//! # Comparing
//!
//! A path in both snapshots is modified when its kind, mode bits or hash differ (without a hash on either side: its
//! size or mtime; for an ignored file: its size, mtime or mode). A path in one only is added or deleted. An added
//! and a deleted file with the same hash (neither ignored) make a rename; several of the same hash pair up in path
//! order. The changes come sorted by path in byte order (git's order; a rename at its new path).

mod compare;
mod cover;
mod error;
mod manifest;
pub mod others;
mod prefetch;
mod refs;
mod store;
mod sync;
mod walk;

#[cfg(test)]
mod chain_tests;
#[cfg(test)]
mod cover_tests;
#[cfg(test)]
mod git_tests;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

pub use compare::{Comparison, compare};
pub use cover::{BUILD_OUTPUTS, Cover, NotCovered, blob_path, is_build_output};
pub use efr_protocol::events::SnapshotPhase;
pub use error::SnapshotError;
pub use refs::{GitRefs, git as git_in};
pub use store::{SnapshotStore, TrashBounds, UndoBounds};
pub(crate) use sync::{Unsynced, sync_blobs};

/// The bounds of one snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// The most files (ignored ones included) a snapshot records; the walk stops at the next one.
    pub max_files: usize,
    /// The most bytes of file contents a snapshot keeps, in total.
    pub max_kept_bytes: u64,
    /// The biggest file (in bytes) whose content is kept.
    pub max_file_bytes: u64,
    /// The biggest file (in bytes) that is read to hash it; a bigger one is compared by size and mtime.
    pub max_hash_bytes: u64,
    /// The longest a walk may take; it stops at the next entry after that.
    pub max_time: Duration,
    /// Keep every covered file's bytes in a store, for undo; `None` for a snapshot that only finds changes.
    pub cover: Option<Cover>,
}

impl Default for Limits {
    /// 20,000 files, 64 MiB of kept contents, files up to 1 MiB kept, up to 64 MiB hashed, 5 s.
    fn default() -> Self {
        Self {
            max_files: 20_000,
            max_kept_bytes: 64 << 20,
            max_file_bytes: 1 << 20,
            max_hash_bytes: 64 << 20,
            max_time: Duration::from_secs(5),
            cover: None,
        }
    }
}

/// What a snapshot recorded of a root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// The absolute root that was walked.
    pub root: PathBuf,
    /// When the walk started.
    pub taken_at: DateTime<Utc>,
    /// How long the walk took, in milliseconds.
    pub elapsed_ms: u64,
    /// Every recorded file by its path relative to the root (`/`-separated).
    pub files: BTreeMap<String, FileEntry>,
    /// Set when a bound cut the walk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<Truncated>,
    /// Text files whose content the byte budget ([`Limits::max_kept_bytes`]) left out.
    #[serde(default)]
    pub not_kept: u64,
    /// Entries that could not be recorded: unreadable, vanished during the walk, or a name that is not UTF-8.
    #[serde(default)]
    pub skipped: u64,
    /// Taken with [`Limits::cover`]: every file with `stored` set can be restored from the store.
    #[serde(default, skip_serializing_if = "is_false")]
    pub covered: bool,
    /// What a covered snapshot left without cover, by path (a folder ends with `/`), with the reason.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub not_covered: BTreeMap<String, NotCovered>,
    /// The git refs of the repository that holds the root, when it is in one (covered snapshots only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refs: Option<GitRefs>,
    /// Where the kept contents are.
    #[serde(skip)]
    pub(crate) blobs: Blobs,
}

/// Where a snapshot's kept contents are, by their SHA-256 in lowercase hex.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Blobs {
    /// Contents read by this process.
    pub(crate) memory: HashMap<String, Arc<[u8]>>,
    /// The `blobs` folder of a [`SnapshotStore`] that holds the others.
    pub(crate) store: Option<PathBuf>,
    /// The blobs this walk wrote that are not known durable yet (a covered walk syncs them as it goes, so normally
    /// none): [`SnapshotStore::save`] (or [`SnapshotStore::remember`]) syncs them before a manifest can name them.
    pub(crate) unsynced: Unsynced,
}

/// Why and where a bound cut a walk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Truncated {
    /// Which bound.
    pub reason: TruncateReason,
    /// The first path (relative, `/`-separated) the walk did not reach; the snapshot covers the paths before it in
    /// walk order.
    pub next: String,
}

/// The bound that cut a walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TruncateReason {
    /// [`Limits::max_files`].
    Files,
    /// [`Limits::max_time`].
    Time,
}

/// One recorded file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// A regular file or a symlink.
    pub kind: EntryKind,
    /// Size in bytes (a symlink: its target's length).
    pub size: u64,
    /// Permission bits (`st_mode & 0o7777`).
    pub mode: u32,
    /// Last modification, in nanoseconds since the Unix epoch.
    pub mtime_ns: i64,
    /// Last status change, in nanoseconds since the Unix epoch.
    pub ctime_ns: i64,
    /// Inode number.
    pub ino: u64,
    /// SHA-256 of the content in lowercase hex; absent for an ignored file and for one over
    /// [`Limits::max_hash_bytes`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// The content is kept (a text file within the budgets).
    #[serde(default, skip_serializing_if = "is_false")]
    pub kept: bool,
    /// The content has a NUL byte or is not UTF-8.
    #[serde(default, skip_serializing_if = "is_false")]
    pub binary: bool,
    /// The project's ignore rules ignore the file: never shown in a diff (metadata only, unless covered).
    #[serde(default, skip_serializing_if = "is_false")]
    pub ignored: bool,
    /// The whole content (bytes, or a symlink's target) is in the store's blobs under `sha256`: undo can restore it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub stored: bool,
}

impl FileEntry {
    /// Whether two entries hold the same file as undo sees it: kind, mode bits (not for a symlink) and content.
    /// Without a hash on either side, size and mtime stand in for the content.
    #[must_use]
    pub fn same_content(&self, other: &FileEntry) -> bool {
        if self.kind != other.kind || (self.kind == EntryKind::File && self.mode != other.mode) {
            return false;
        }
        match (&self.sha256, &other.sha256) {
            (Some(a), Some(b)) => a == b,
            _ => self.size == other.size && self.mtime_ns == other.mtime_ns,
        }
    }
}

/// The kind of a recorded file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A symbolic link (not followed).
    Symlink,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference.
fn is_false(value: &bool) -> bool {
    !*value
}

impl Snapshot {
    /// The bytes of file contents this snapshot holds in memory (read by this process, not yet in a store): what
    /// keeping it costs.
    #[must_use]
    pub fn memory_bytes(&self) -> u64 {
        self.blobs.memory.values().map(|b| b.len() as u64).sum()
    }

    /// Whether the walk reached `path` (relative, `/`-separated): always, unless a bound cut it before `path`.
    pub fn covers(&self, path: &str) -> bool {
        self.truncated
            .as_ref()
            .is_none_or(|cut| walk_order(path, &cut.next).is_lt())
    }
}

/// The walk's order of two relative paths: component by component, each by its bytes (so `a/b` comes before
/// `a-b`, as a walk that sorts each folder by name visits them).
pub(crate) fn walk_order(a: &str, b: &str) -> std::cmp::Ordering {
    let a = a.split('/').filter(|part| !part.is_empty());
    a.cmp(b.split('/').filter(|part| !part.is_empty()))
}
