//! Making the blobs a covered walk writes durable before a manifest names them ([`sync_blobs`]), and syncing them
//! while the walk goes on ([`Unsynced::sync_ahead`]).
//!
//! A blob is durable once the file and the folder that names it are synced. One sync costs a journal commit, a few
//! milliseconds on an ordinary disk: after a one-file change a turn's snapshot writes two blobs (the file and the git
//! index), and syncing them after the walk cost a tenth of the snapshot. So a covered walk hands each blob it writes
//! to a thread that syncs it at once, while the walk reads the rest of the tree, and the walk ends with only the
//! blobs whose sync failed still listed: [`sync_blobs`] tries those again and reports the failure. Past
//! [`SYNC_EACH_MAX`] blobs (a first snapshot writes thousands) the thread stops syncing them one by one and
//! [`sync_blobs`] syncs the whole file system once.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, PoisonError};

use super::SnapshotError;

/// Above this many blobs, they are not synced one by one: [`sync_blobs`] syncs the whole file system once
/// (`syncfs(2)`; one sync each cost more than the walk; git's `core.fsyncMethod=batch` does the same).
const SYNC_EACH_MAX: usize = 64;

/// The blobs a walk wrote and that are not known durable yet. Clones share the list, so the first sync (by
/// [`SnapshotStore::save`](super::SnapshotStore::save) or [`SnapshotStore::remember`](super::SnapshotStore::remember),
/// whichever comes first) empties it for all of them. Never part of a snapshot's equality.
#[derive(Debug, Clone, Default)]
pub(crate) struct Unsynced(Arc<Mutex<Pending>>);

#[derive(Debug, Default)]
struct Pending {
    /// Written, not known durable.
    paths: Vec<PathBuf>,
    /// The sync-ahead thread's feed, while one runs.
    ahead: Option<Sender<PathBuf>>,
}

impl PartialEq for Unsynced {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Unsynced {}

impl Unsynced {
    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds a blob written, if any, and hands it to the sync-ahead thread when one runs.
    pub(crate) fn add(&self, written: Option<PathBuf>) {
        let Some(path) = written else { return };
        let mut pending = self.lock();
        if let Some(ahead) = &pending.ahead {
            // A thread that has stopped leaves the blob listed: sync_blobs syncs it.
            let _ = ahead.send(path.clone());
        }
        pending.paths.push(path);
    }

    /// Starts feeding the blobs added from now on to a sync-ahead thread: run [`SyncAhead::run`] on a thread of
    /// its own, and call [`Unsynced::end_ahead`] when the walk has written its last blob.
    pub(crate) fn sync_ahead(&self) -> SyncAhead {
        let (sender, receiver) = channel();
        self.lock().ahead = Some(sender);
        SyncAhead {
            receiver,
            unsynced: self.clone(),
        }
    }

    /// Ends the feed: the sync-ahead thread syncs the folders of what it synced and returns.
    pub(crate) fn end_ahead(&self) {
        self.lock().ahead = None;
    }

    fn take(&self) -> Vec<PathBuf> {
        std::mem::take(&mut self.lock().paths)
    }

    /// Drops `durable` from the list.
    fn synced(&self, durable: &[PathBuf]) {
        self.lock().paths.retain(|path| !durable.contains(path));
    }
}

/// The receiving end of [`Unsynced::sync_ahead`].
pub(crate) struct SyncAhead {
    receiver: Receiver<PathBuf>,
    unsynced: Unsynced,
}

impl SyncAhead {
    /// Syncs each blob as it comes, until the feed ends, then the folders that name them, and drops what is durable
    /// from the list. Past [`SYNC_EACH_MAX`] blobs it syncs nothing more and drops nothing: [`sync_blobs`] syncs the
    /// file system once. A failed sync leaves its blob listed, for [`sync_blobs`] to report.
    pub(crate) fn run(self) {
        let (mut synced, mut count) = (Vec::new(), 0usize);
        for path in &self.receiver {
            count += 1;
            if count <= SYNC_EACH_MAX && sync(&path).is_ok() {
                synced.push(path);
            }
        }
        if count > SYNC_EACH_MAX {
            return;
        }
        let failed: Vec<PathBuf> = folders(&synced)
            .into_iter()
            .filter(|folder| sync(folder).is_err())
            .map(Path::to_path_buf)
            .collect();
        synced.retain(|path| {
            path.parent()
                .is_some_and(|folder| !failed.iter().any(|one| one == folder))
        });
        self.unsynced.synced(&synced);
    }
}

/// The folders that hold `paths`, each once: syncing them makes the blobs' names durable.
fn folders(paths: &[PathBuf]) -> Vec<&Path> {
    let mut folders: Vec<&Path> = Vec::new();
    for folder in paths.iter().filter_map(|path| path.parent()) {
        if !folders.contains(&folder) {
            folders.push(folder);
        }
    }
    folders
}

fn sync(path: &Path) -> Result<(), SnapshotError> {
    File::open(path)
        .and_then(|file| file.sync_all())
        .map_err(|error| SnapshotError::io(path, error))
}

/// Makes the blobs still listed in `unsynced` durable, before a manifest names them: each file and its folder when
/// they are few, else one `syncfs(2)` of the store's file system.
///
/// # Errors
/// [`SnapshotError::Io`] when a sync fails.
pub(crate) fn sync_blobs(blobs: &Path, unsynced: &Unsynced) -> Result<(), SnapshotError> {
    let written = unsynced.take();
    if written.is_empty() {
        return Ok(());
    }
    if written.len() > SYNC_EACH_MAX {
        let folder = File::open(blobs).map_err(|error| SnapshotError::io(blobs, error))?;
        return nix::unistd::syncfs(&folder).map_err(|errno| SnapshotError::io(blobs, errno.into()));
    }
    written.iter().try_for_each(|path| sync(path))?;
    folders(&written).into_iter().try_for_each(sync)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(dir: &Path, name: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, name).expect("write");
        path
    }

    #[test]
    fn blobs_synced_ahead_leave_the_list_and_a_failed_one_stays() {
        let dir = tempfile::tempdir().expect("tempdir");
        let unsynced = Unsynced::default();
        let before = blob(dir.path(), "before");
        unsynced.add(Some(before.clone()));
        let ahead = unsynced.sync_ahead();
        std::thread::scope(|scope| {
            let thread = scope.spawn(|| ahead.run());
            unsynced.add(Some(blob(dir.path(), "a")));
            unsynced.add(None);
            // Gone before it could be synced: a sync that fails.
            unsynced.add(Some(dir.path().join("gone")));
            unsynced.add(Some(blob(dir.path(), "b")));
            unsynced.end_ahead();
            thread.join().expect("the sync thread");
        });
        // Added before the feed started: still listed; so is the one whose sync failed.
        assert_eq!(unsynced.take(), vec![before, dir.path().join("gone")]);
    }

    #[test]
    fn past_the_limit_nothing_is_dropped_and_sync_blobs_syncs_the_file_system() {
        let dir = tempfile::tempdir().expect("tempdir");
        let unsynced = Unsynced::default();
        let ahead = unsynced.sync_ahead();
        std::thread::scope(|scope| {
            let thread = scope.spawn(|| ahead.run());
            for n in 0..=SYNC_EACH_MAX {
                unsynced.add(Some(blob(dir.path(), &format!("b{n}"))));
            }
            unsynced.end_ahead();
            thread.join().expect("the sync thread");
        });
        assert_eq!(unsynced.lock().paths.len(), SYNC_EACH_MAX + 1);
        sync_blobs(dir.path(), &unsynced).expect("syncfs");
        assert!(unsynced.take().is_empty());
    }

    #[test]
    fn a_blob_that_cannot_be_synced_is_an_error_of_sync_blobs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let unsynced = Unsynced::default();
        unsynced.add(Some(dir.path().join("missing")));
        let error = sync_blobs(dir.path(), &unsynced).expect_err("a missing blob");
        assert!(error.to_string().contains("missing"), "{error}");
    }
}
