//! [`Snapshot::take`]: the walk of a root, its bounds, hashing and the contents it keeps.
//!
//! The walk lists each folder once (names and metadata, read ahead by [`prefetch`]'s threads), visits its entries
//! in name order, and asks the ignore rules (`ignore`'s [`IncrementalIgnore`], loaded folder by folder, the same
//! rules as [`efr_patch::changes::IgnoreRules`]) about each entry: an ignored file is recorded as such, an
//! ignored folder is entered only by a covered walk. Walking itself rather than through `ignore`'s walker cuts a warm
//! walk of 20,000 files by about a quarter: each folder is read once instead of twice, and no path is built for an
//! entry whose stat is reused.

use std::collections::btree_map;
use std::fs::{self, File, Metadata};
use std::io::Read;
use std::iter::Peekable;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use chrono::Utc;
use ignore::IncrementalIgnore;
use sha2::{Digest, Sha256};

use super::cover::{NotCovered, is_build_output, store_bytes_hashed, store_file};
use super::prefetch::{self, Prefetch};
use super::{Blobs, EntryKind, FileEntry, GitRefs, Limits, Snapshot, TruncateReason, Truncated};
use crate::SnapshotError;
use efr_patch::changes::{is_binary, walk_builder};

/// How much older than the previous snapshot's start a file's ctime must be for its hash to be reused.
const RACY_NS: i64 = 2_000_000_000;

/// The size of a read when a big file is hashed in pieces.
const HASH_CHUNK: usize = 64 << 10;

impl Snapshot {
    /// Walks `root` (an absolute folder) within `limits` and records it; with `previous` (a snapshot of the same
    /// root, such as the one before a shell call) unchanged files are not read again. The rules are in the module
    /// docs of [`crate`]. Blocks while it reads the tree.
    ///
    /// # Errors
    ///
    /// [`SnapshotError::NotAFolder`] when `root` is not an absolute path to a folder. Files that cannot be read
    /// are counted in `skipped`, never an error.
    pub fn take(root: &Path, limits: &Limits, previous: Option<&Snapshot>) -> Result<Self, SnapshotError> {
        let started = Instant::now();
        let taken_at = Utc::now();
        if !root.is_absolute() || !fs::metadata(root).is_ok_and(|meta| meta.is_dir()) {
            return Err(SnapshotError::NotAFolder {
                path: root.to_path_buf(),
            });
        }
        let matcher = walk_builder(root).build_matchers().into_iter().next();
        let previous = previous.filter(|previous| previous.root == root);
        let prefetch = Prefetch::default();
        let threads = prefetch::threads();
        let walk = Walk {
            root,
            limits,
            reuse_before_ns: previous
                .and_then(|p| p.taken_at.timestamp_nanos_opt())
                .map(|ns| ns - RACY_NS),
            previous,
            cursor: previous.map(|previous| previous.files.iter().peekable()),
            matcher,
            snapshot: Snapshot {
                root: root.to_path_buf(),
                taken_at,
                elapsed_ms: 0,
                files: Default::default(),
                truncated: None,
                not_kept: 0,
                skipped: 0,
                covered: limits.cover.is_some(),
                not_covered: Default::default(),
                refs: None,
                blobs: Blobs::default(),
            },
            files: Vec::new(),
            kept_bytes: 0,
            stored_bytes: 0,
            build_outputs: Vec::new(),
            prefetch: (threads > 0).then_some(&prefetch),
        };
        let unsynced = walk.snapshot.blobs.unsynced.clone();
        let mut snapshot = std::thread::scope(|scope| {
            // Stops the threads however the walk ends (they are joined when the scope ends).
            let _stop = StopOnDrop(&prefetch);
            for _ in 0..threads {
                scope.spawn(|| prefetch.work());
            }
            // A covered walk's blobs are synced while it goes on, and the refs (the git index, a blob of a few
            // megabytes) are read beside it, so their syncs overlap the walk too.
            let refs = limits.cover.as_ref().map(|cover| {
                let ahead = unsynced.sync_ahead();
                scope.spawn(|| ahead.run());
                scope.spawn(|| GitRefs::read(root, &cover.blobs, &unsynced))
            });
            // Ends the sync thread's feed however the walk ends (dropped first, before the scope joins it).
            let _end = EndAheadOnDrop(&unsynced);
            let mut snapshot = walk.run(started);
            snapshot.refs = refs.and_then(|refs| refs.join().ok()).flatten();
            snapshot
        });
        snapshot.elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        Ok(snapshot)
    }
}

/// Stops the read-ahead threads when dropped.
struct StopOnDrop<'a>(&'a Prefetch);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.stop();
    }
}

/// Ends the feed of a sync-ahead thread when dropped.
struct EndAheadOnDrop<'a>(&'a super::Unsynced);

impl Drop for EndAheadOnDrop<'_> {
    fn drop(&mut self) {
        self.0.end_ahead();
    }
}

/// A folder the walk is inside, and its entries the walk has not visited yet (in name order), each with its
/// metadata when it could be read as the folder was listed.
struct OpenFolder {
    rel: String,
    path: PathBuf,
    /// Whether the folder is ignored (so is everything in it).
    ignored: bool,
    entries: std::vec::IntoIter<(String, Option<Metadata>)>,
}

struct Walk<'a> {
    root: &'a Path,
    limits: &'a Limits,
    previous: Option<&'a Snapshot>,
    /// Where the walk is in the previous snapshot's files. Walk order is their order but where a name sorts before
    /// `/` (`a-b` before `a/x`), so a file is most often the next one there and is found without a search.
    cursor: Option<Peekable<btree_map::Iter<'a, String, FileEntry>>>,
    reuse_before_ns: Option<i64>,
    matcher: Option<IncrementalIgnore>,
    /// The snapshot, its files aside (in `files`).
    snapshot: Snapshot,
    /// The files recorded so far, in walk order: the snapshot's map is built from them at the end, one bulk build
    /// from keys nearly in order, which costs a fraction of an insert for each.
    files: Vec<(String, FileEntry)>,
    kept_bytes: u64,
    /// The bytes a covered walk has stored or reused so far ([`super::Cover::max_bytes`]).
    stored_bytes: u64,
    /// The build output folders the walk entered (not ignored ones): their files are recorded, never stored.
    build_outputs: Vec<String>,
    /// The read-ahead of the folders the walk is about to enter; `None` on one core.
    prefetch: Option<&'a Prefetch>,
}

impl<'a> Walk<'a> {
    /// Walks the root, each folder in name order, and returns the snapshot (its refs not read yet).
    fn run(mut self, started: Instant) -> Snapshot {
        let mut open = vec![self.open(String::new(), self.root.to_path_buf(), false)];
        while let Some(folder) = open.last_mut() {
            let Some((name, meta)) = folder.entries.next() else {
                open.pop();
                continue;
            };
            let rel = child(&folder.rel, &name);
            if started.elapsed() > self.limits.max_time {
                self.cut(TruncateReason::Time, rel);
                break;
            }
            let (parent_ignored, parent) = (folder.ignored, &folder.path);
            let Some(meta) = meta.or_else(|| fs::symlink_metadata(parent.join(&name)).ok()) else {
                self.snapshot.skipped += 1;
                continue;
            };
            let is_dir = meta.is_dir();
            // Below an ignored folder everything is ignored (git cannot take a file back there).
            let ignored = parent_ignored
                || self
                    .matcher
                    .as_mut()
                    .is_some_and(|matcher| matcher.matched(&rel, is_dir).is_ignore());
            if is_dir {
                let path = parent.join(&name);
                if let Some(folder) = self.enter(rel, path, &name, ignored) {
                    open.push(folder);
                }
            } else if let Some(kind) = kind_of(&meta) {
                if self.files.len() >= self.limits.max_files {
                    self.cut(TruncateReason::Files, rel);
                    break;
                }
                self.record_meta(rel, (parent, &name), kind, &meta, ignored);
            }
        }
        self.snapshot.files = self.files.into_iter().collect();
        self.snapshot
    }

    /// Decides whether the walk enters the folder at `rel`: a folder that is not ignored always (a build output's
    /// files are recorded, never stored), an ignored one only in a covered walk and when it is no build output.
    fn enter(&mut self, rel: String, path: PathBuf, name: &str, ignored: bool) -> Option<OpenFolder> {
        if ignored && self.limits.cover.is_none() {
            return None;
        }
        if self.limits.cover.is_some() && is_build_output(name, &path) {
            self.snapshot
                .not_covered
                .insert(format!("{rel}/"), NotCovered::BuildOutput);
            if ignored {
                return None;
            }
            self.build_outputs.push(format!("{rel}/"));
        }
        Some(self.open(rel, path, ignored))
    }

    /// Lists a folder the walk enters (from the read-ahead when it has it) and hands the subfolders the walk will
    /// enter to the read-ahead.
    fn open(&mut self, rel: String, path: PathBuf, ignored: bool) -> OpenFolder {
        let listing = match self.prefetch {
            Some(prefetch) => prefetch.take(&path),
            None => prefetch::list(&path),
        };
        self.snapshot.skipped += listing.not_utf8 + u64::from(listing.unreadable);
        if let Some(prefetch) = self.prefetch {
            // An uncovered walk never enters an ignored folder (such as `target/`): it is not read ahead. Which of
            // them a covered walk skips as build outputs is left to `enter`, which looks for the marker file once.
            let covered = self.limits.cover.is_some();
            let mut ahead = Vec::new();
            for (name, meta) in &listing.entries {
                if meta.as_ref().is_some_and(Metadata::is_dir)
                    && (covered || !self.is_ignored_folder(&child(&rel, name)))
                {
                    ahead.push(path.join(name));
                }
            }
            prefetch.ahead(ahead);
        }
        OpenFolder {
            rel,
            path,
            ignored,
            entries: listing.entries.into_iter(),
        }
    }

    fn is_ignored_folder(&mut self, rel: &str) -> bool {
        self.matcher
            .as_mut()
            .is_some_and(|matcher| matcher.matched(rel, true).is_ignore())
    }

    /// Marks the walk cut before `next`, the entry it stops at. Everything recorded so far comes before it: the walk
    /// visits entries in walk order.
    fn cut(&mut self, reason: TruncateReason, next: String) {
        self.snapshot.truncated = Some(Truncated { reason, next });
    }

    /// Records a file or a symlink from its metadata: reused from the previous snapshot, or read (and stored, in a
    /// covered walk). Without cover, an ignored file gets its metadata only.
    /// The file is `name` in the folder `parent`, its path only built when the file is read.
    fn record_meta(
        &mut self,
        rel: String,
        (parent, name): (&Path, &str),
        kind: EntryKind,
        meta: &Metadata,
        ignored: bool,
    ) {
        let mut entry = entry_of(kind, meta);
        entry.ignored = ignored;
        if self.reuse(&rel, &mut entry) || (ignored && self.limits.cover.is_none()) {
            self.files.push((rel, entry));
            return;
        }
        match self.read_content(&rel, &parent.join(name), &mut entry) {
            Ok(()) => self.files.push((rel, entry)),
            Err(()) => {
                self.snapshot.skipped += 1;
                if self.limits.cover.is_some() {
                    self.snapshot.not_covered.insert(rel, NotCovered::Unreadable);
                }
            }
        }
    }

    /// Whether a covered walk stores a file of `size` bytes: within both bounds (else the path is recorded as not
    /// covered, with the bound).
    fn may_store(&mut self, rel: &str, size: u64) -> bool {
        let Some(cover) = &self.limits.cover else {
            return false;
        };
        if self.build_outputs.iter().any(|folder| rel.starts_with(folder.as_str())) {
            return false;
        }
        let reason = if size > cover.max_file_bytes {
            NotCovered::Size
        } else if self.stored_bytes + size > cover.max_bytes {
            NotCovered::Bytes
        } else {
            self.stored_bytes += size;
            return true;
        };
        self.snapshot.not_covered.insert(rel.to_owned(), reason);
        false
    }

    /// Reads a file's content (a symlink's target): hashes it, keeps it for diffs, and in a covered walk stores it.
    fn read_content(&mut self, rel: &str, path: &Path, entry: &mut FileEntry) -> Result<(), ()> {
        let blobs = self.limits.cover.as_ref().map(|cover| cover.blobs.clone());
        let store = match entry.kind {
            EntryKind::Symlink => blobs.is_some(),
            EntryKind::File => self.may_store(rel, entry.size),
        };
        let bytes = match entry.kind {
            EntryKind::Symlink => fs::read_link(path)
                .map(|target| target.as_os_str().as_bytes().to_vec())
                .map_err(drop)?,
            EntryKind::File if entry.size > self.limits.max_file_bytes => {
                let (hash, binary) = match (&blobs, store) {
                    (Some(blobs), true) => {
                        let (hash, binary, written) = store_file(blobs, path).map_err(drop)?;
                        self.snapshot.blobs.unsynced.add(written);
                        (hash, binary)
                    }
                    _ if entry.size > self.limits.max_hash_bytes => return Ok(()),
                    _ => hash_in_pieces(path).map_err(drop)?,
                };
                entry.sha256 = Some(hash);
                entry.binary = binary;
                entry.stored = store;
                return Ok(());
            }
            EntryKind::File => fs::read(path).map_err(drop)?,
        };
        let hash = format!("{:x}", Sha256::digest(&bytes));
        if let (Some(blobs), true) = (&blobs, store) {
            let written = store_bytes_hashed(blobs, &hash, &bytes).map_err(drop)?;
            self.snapshot.blobs.unsynced.add(written);
            entry.stored = true;
        }
        if entry.ignored {
            entry.sha256 = Some(hash);
            entry.binary = is_binary(&bytes);
        } else {
            self.keep(entry, hash, bytes);
        }
        Ok(())
    }

    /// The previous snapshot's entry at `rel`: the next one at the cursor, else found by a search.
    fn previous_entry(&mut self, rel: &str) -> Option<&'a FileEntry> {
        let cursor = self.cursor.as_mut()?;
        while cursor.next_if(|(path, _)| path.as_str() < rel).is_some() {}
        if let Some((_, entry)) = cursor.next_if(|(path, _)| path.as_str() == rel) {
            return Some(entry);
        }
        self.previous?.files.get(rel)
    }

    /// Takes the hash and content of the previous snapshot for a file that did not change since well before it.
    fn reuse(&mut self, rel: &str, entry: &mut FileEntry) -> bool {
        let (Some(previous), Some(before_ns)) = (self.previous, self.reuse_before_ns) else {
            return false;
        };
        let Some(old) = self.previous_entry(rel) else {
            return false;
        };
        let same = old.kind == entry.kind
            && old.size == entry.size
            && old.mode == entry.mode
            && old.mtime_ns == entry.mtime_ns
            && old.ctime_ns == entry.ctime_ns
            && old.ino == entry.ino;
        if !same || entry.ctime_ns >= before_ns {
            return false;
        }
        if self.limits.cover.is_some() {
            // A covered walk reuses a stored content, or a file a bound left out that stays over it.
            let over = self
                .limits
                .cover
                .as_ref()
                .is_some_and(|cover| old.size > cover.max_file_bytes);
            if over {
                self.snapshot.not_covered.insert(rel.to_owned(), NotCovered::Size);
            } else if !old.stored || !self.may_store(rel, old.size) {
                return false;
            }
            entry.stored = old.stored;
        } else if old.ignored {
            return false;
        }
        // A text file the byte budget left out is read again: the budget may hold it this time.
        if !old.kept && !old.binary && old.sha256.is_some() && old.size <= self.limits.max_file_bytes {
            return false;
        }
        if old.kept {
            let Some(hash) = &old.sha256 else { return false };
            if self.kept_bytes + old.size > self.limits.max_kept_bytes {
                return false;
            }
            if let Some(bytes) = previous.blobs.memory.get(hash) {
                self.snapshot.blobs.memory.insert(hash.clone(), Arc::clone(bytes));
            } else if let Some(store) = &previous.blobs.store {
                self.snapshot.blobs.store = Some(store.clone());
            } else {
                return false;
            }
            self.kept_bytes += old.size;
        }
        entry.sha256.clone_from(&old.sha256);
        entry.kept = old.kept;
        entry.binary = old.binary;
        true
    }

    /// Records a content's hash and keeps the content when it is text within the budgets (in a covered walk, only a
    /// stored one: the kept contents of a covered snapshot are read back from the store).
    fn keep(&mut self, entry: &mut FileEntry, hash: String, bytes: Vec<u8>) {
        entry.binary = is_binary(&bytes);
        entry.sha256 = Some(hash.clone());
        if entry.binary || (self.limits.cover.is_some() && !entry.stored) {
            return;
        }
        let len = bytes.len() as u64;
        if self.kept_bytes + len > self.limits.max_kept_bytes {
            self.snapshot.not_kept += 1;
            return;
        }
        self.kept_bytes += len;
        entry.kept = true;
        self.snapshot
            .blobs
            .memory
            .entry(hash)
            .or_insert_with(|| Arc::from(bytes));
    }
}

/// The relative path of `name` in the folder at `rel` (the root's is empty).
fn child(rel: &str, name: &str) -> String {
    if rel.is_empty() {
        return name.to_owned();
    }
    let mut path = String::with_capacity(rel.len() + 1 + name.len());
    path.push_str(rel);
    path.push('/');
    path.push_str(name);
    path
}

fn kind_of(meta: &Metadata) -> Option<EntryKind> {
    let file_type = meta.file_type();
    if file_type.is_symlink() {
        Some(EntryKind::Symlink)
    } else if file_type.is_file() {
        Some(EntryKind::File)
    } else {
        None
    }
}

fn entry_of(kind: EntryKind, meta: &Metadata) -> FileEntry {
    FileEntry {
        kind,
        size: meta.size(),
        mode: meta.mode() & 0o7777,
        mtime_ns: meta
            .mtime()
            .saturating_mul(1_000_000_000)
            .saturating_add(meta.mtime_nsec()),
        ctime_ns: meta
            .ctime()
            .saturating_mul(1_000_000_000)
            .saturating_add(meta.ctime_nsec()),
        ino: meta.ino(),
        sha256: None,
        kept: false,
        binary: false,
        ignored: false,
        stored: false,
    }
}

/// The SHA-256 of a big file read in pieces, and whether a NUL byte was seen (its UTF-8 is not checked).
fn hash_in_pieces(path: &Path) -> std::io::Result<(String, bool)> {
    let mut file = File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; HASH_CHUNK];
    let mut binary = false;
    loop {
        let read = file.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        binary |= buffer[..read].contains(&0);
        hasher.update(&buffer[..read]);
    }
    Ok((format!("{:x}", hasher.finalize()), binary))
}
