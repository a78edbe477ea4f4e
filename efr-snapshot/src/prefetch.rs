//! The listings of folders a walk is about to enter, read ahead by a few threads.
//!
//! A warm walk spends most of its time reading one entry's metadata after another (one `statx` each). As git's
//! `core.preloadIndex` stats the index's entries in several threads, a walk hands the subfolders of each folder it
//! enters to [`Prefetch`]'s threads, which list them (names and metadata) while the walk reads the folder's files.
//! The walk takes a listing when it enters the folder, or lists the folder itself when no thread has started on it,
//! so the result is the same as a walk in one thread; only folders the walk listed as entries are read ahead, one
//! level at a time, so the read-ahead stays within the walk's own bounds.

use std::collections::{HashMap, VecDeque};
use std::fs::{self, Metadata};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, PoisonError};

/// A folder's entries, as read by [`list`].
#[derive(Debug, Default)]
pub(super) struct Listing {
    /// The UTF-8 names other than `.git`, sorted by their bytes, each with its metadata when it could be read.
    pub entries: Vec<(String, Option<Metadata>)>,
    /// The names that are not UTF-8 (left out of `entries`).
    pub not_utf8: u64,
    /// Whether the folder could not be read at all (`entries` is empty).
    pub unreadable: bool,
}

/// The most threads that read ahead.
const MAX_THREADS: usize = 3;

/// Lists `path`: each entry's metadata is read relative to the open folder (the kernel looks up one name, where a
/// stat by the whole path looks up every folder from `/` again).
pub(super) fn list(path: &Path) -> Listing {
    let Ok(read) = fs::read_dir(path) else {
        return Listing {
            unreadable: true,
            ..Listing::default()
        };
    };
    let mut listing = Listing::default();
    for entry in read {
        let Ok(entry) = entry else {
            listing.unreadable = true;
            continue;
        };
        match entry.file_name().into_string() {
            Ok(name) if name == ".git" => {}
            Ok(name) => listing.entries.push((name, entry.metadata().ok())),
            Err(_) => listing.not_utf8 += 1,
        }
    }
    listing.entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    listing
}

/// How many threads read ahead on this machine: one a core, none on one core. The walk's own thread mostly waits
/// for listings (a warm walk of 20,000 files on 2 cores: 65 ms with no thread, 53 ms with one, 35 ms with two; a
/// third changed nothing), so it does not count as a core's work; git's `core.preloadIndex` likewise starts a thread
/// per 500 index entries whatever the cores.
pub(super) fn threads() -> usize {
    match std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get) {
        1 => 0,
        cores => cores.min(MAX_THREADS),
    }
}

enum Slot {
    /// Handed out; not started.
    Queued,
    /// A thread is listing it.
    Started,
    Done(Listing),
}

#[derive(Default)]
struct State {
    queue: VecDeque<PathBuf>,
    slots: HashMap<PathBuf, Slot>,
    stopped: bool,
}

/// The folders handed to the read-ahead threads and their listings.
#[derive(Default)]
pub(super) struct Prefetch {
    state: Mutex<State>,
    changed: Condvar,
}

impl Prefetch {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands the folders `folders` (those of a listing the walk will enter) to the threads.
    pub(super) fn ahead(&self, folders: impl IntoIterator<Item = PathBuf>) {
        let mut state = self.lock();
        if state.stopped {
            return;
        }
        for folder in folders {
            state.slots.insert(folder.clone(), Slot::Queued);
            state.queue.push_back(folder);
        }
        drop(state);
        self.changed.notify_all();
    }

    /// The listing of `path`: read ahead, waited for when a thread is reading it, else read now.
    pub(super) fn take(&self, path: &Path) -> Listing {
        let mut state = self.lock();
        loop {
            match state.slots.remove(path) {
                Some(Slot::Done(listing)) => return listing,
                Some(Slot::Started) => {
                    state.slots.insert(path.to_path_buf(), Slot::Started);
                    state = self.changed.wait(state).unwrap_or_else(PoisonError::into_inner);
                }
                // Not started (its queue entry is skipped) or never handed out: read it here.
                Some(Slot::Queued) | None => {
                    drop(state);
                    return list(path);
                }
            }
        }
    }

    /// Stops the threads once they finish the folder they are reading.
    pub(super) fn stop(&self) {
        let mut state = self.lock();
        state.stopped = true;
        state.queue.clear();
        drop(state);
        self.changed.notify_all();
    }

    /// A thread's loop: lists the folders handed out until [`Self::stop`].
    pub(super) fn work(&self) {
        let mut state = self.lock();
        loop {
            if state.stopped {
                return;
            }
            let Some(path) = state.queue.pop_front() else {
                state = self.changed.wait(state).unwrap_or_else(PoisonError::into_inner);
                continue;
            };
            // A folder the walk took (and read) itself is no longer queued.
            if !matches!(state.slots.get(&path), Some(Slot::Queued)) {
                continue;
            }
            state.slots.insert(path.clone(), Slot::Started);
            drop(state);
            let listing = list(&path);
            state = self.lock();
            state.slots.insert(path, Slot::Done(listing));
            self.changed.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names and kinds of a listing, to compare two listings of the same folder.
    fn shape(listing: &Listing) -> Vec<(String, bool)> {
        listing
            .entries
            .iter()
            .map(|(name, meta)| (name.clone(), meta.as_ref().is_some_and(Metadata::is_dir)))
            .collect()
    }

    #[test]
    fn read_ahead_listings_are_those_of_one_thread_and_the_threads_stop() {
        let dir = tempfile::tempdir().expect("tempdir");
        for folder in 0..20 {
            let path = dir.path().join(format!("d{folder:02}"));
            fs::create_dir_all(path.join("inner")).expect("mkdir");
            for file in 0..30 {
                fs::write(path.join(format!("f{file}")), b"x").expect("write");
            }
        }
        fs::create_dir_all(dir.path().join(".git")).expect("mkdir .git");
        let prefetch = Prefetch::default();
        std::thread::scope(|scope| {
            for _ in 0..2 {
                scope.spawn(|| prefetch.work());
            }
            let root = prefetch.take(dir.path());
            assert_eq!(root.entries.len(), 20, ".git is not listed: {:?}", shape(&root));
            prefetch.ahead(root.entries.iter().map(|(name, _)| dir.path().join(name)));
            for (name, _) in &root.entries {
                let path = dir.path().join(name);
                let listing = prefetch.take(&path);
                assert_eq!(shape(&listing), shape(&list(&path)));
                assert_eq!(listing.entries.len(), 31);
            }
            prefetch.stop();
        });
        // The scope ended: every thread returned after stop.
    }
}
