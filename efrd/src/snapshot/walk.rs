//! [`Snapshot::take`]: the walk of a root, its bounds, hashing and the contents it keeps.
//!
//! The walk is `ignore`'s sequential walk with each folder sorted by name. It does not yield ignored entries, so
//! each folder it enters is also listed once with `read_dir`: the names the walk did not yield by the time it leaves
//! the folder, confirmed by the ignore rules, are the ignored files, recorded by metadata only.

use std::fs::{self, File, Metadata};
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use chrono::Utc;
use ignore::IncrementalIgnore;
use sha2::{Digest, Sha256};

use super::cover::{NotCovered, is_build_output, store_bytes_hashed, store_file};
use super::prefetch::{self, Listing, Prefetch};
use super::{Blobs, EntryKind, FileEntry, GitRefs, Limits, Snapshot, TruncateReason, Truncated, walk_order};
use crate::snapshot::SnapshotError;
use crate::tools::changes::{is_binary, walk_builder};

/// How much older than the previous snapshot's start a file's ctime must be for its hash to be reused.
const RACY_NS: i64 = 2_000_000_000;

/// The size of a read when a big file is hashed in pieces.
const HASH_CHUNK: usize = 64 << 10;

impl Snapshot {
    /// Walks `root` (an absolute folder) within `limits` and records it; with `previous` (a snapshot of the same
    /// root, such as the one before a shell call) unchanged files are not read again. The rules are in the module
    /// docs of [`crate::snapshot`]. Blocks while it reads the tree.
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
        let mut builder = walk_builder(root);
        builder
            .sort_by_file_name(std::ffi::OsStr::cmp)
            .filter_entry(|entry| entry.file_name() != ".git");
        let matcher = builder.build_matchers().into_iter().next();
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
            kept_bytes: 0,
            stored_bytes: 0,
            build_outputs: Vec::new(),
            open: Vec::new(),
            prefetch: (threads > 0).then_some(&prefetch),
        };
        let mut snapshot = std::thread::scope(|scope| {
            // Stops the threads however the walk ends (they are joined when the scope ends).
            let _stop = StopOnDrop(&prefetch);
            for _ in 0..threads {
                scope.spawn(|| prefetch.work());
            }
            walk.run(&builder, started)
        });
        if let Some(cover) = &limits.cover {
            snapshot.refs = GitRefs::read(root, &cover.blobs, &snapshot.blobs.unsynced);
        }
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

impl Walk<'_> {
    /// Walks the root in the builder's order and returns the snapshot (its refs not read yet).
    fn run(mut self, builder: &ignore::WalkBuilder, started: Instant) -> Snapshot {
        let (root, limits) = (self.root, self.limits);
        let walk = &mut self;
        for result in builder.build() {
            let Ok(entry) = result else {
                walk.snapshot.skipped += 1;
                continue;
            };
            if entry.depth() == 0 {
                walk.open(String::new(), root);
                continue;
            }
            let Some(rel) = relative(root, entry.path()) else {
                walk.snapshot.skipped += 1;
                continue;
            };
            if started.elapsed() > limits.max_time {
                walk.cut(TruncateReason::Time, rel);
                break;
            }
            walk.close_until_inside(&rel);
            let stat = walk
                .open
                .last_mut()
                .and_then(|parent| parent.pending.remove(rel.rsplit('/').next().unwrap_or(&rel)))
                .flatten();
            let Some(file_type) = entry.file_type() else { continue };
            if file_type.is_dir() {
                walk.note_build_output(&rel, entry.path());
                walk.open(rel, entry.path());
            } else if file_type.is_file() || file_type.is_symlink() {
                if walk.snapshot.files.len() >= limits.max_files {
                    walk.cut(TruncateReason::Files, rel);
                    break;
                }
                walk.record(rel, entry.path(), stat);
            }
        }
        self.close_all();
        self.snapshot
    }
}

/// A folder the walk is inside, and its entries the walk has not yielded yet, each with its metadata when it could
/// be read as the folder was listed.
struct OpenFolder {
    rel: String,
    pending: Listing,
}

struct Walk<'a> {
    root: &'a Path,
    limits: &'a Limits,
    previous: Option<&'a Snapshot>,
    reuse_before_ns: Option<i64>,
    matcher: Option<IncrementalIgnore>,
    snapshot: Snapshot,
    kept_bytes: u64,
    /// The bytes a covered walk has stored or reused so far ([`super::Cover::max_bytes`]).
    stored_bytes: u64,
    /// The build output folders the walk entered (not ignored ones): their files are recorded, never stored.
    build_outputs: Vec<String>,
    open: Vec<OpenFolder>,
    /// The read-ahead of the folders the walk is about to enter; `None` on one core.
    prefetch: Option<&'a Prefetch>,
}

impl Walk<'_> {
    /// Enters a folder: lists its entries (UTF-8 names other than `.git`, each with its metadata) to find the
    /// ignored ones later, and hands its subfolders to the read-ahead.
    fn open(&mut self, rel: String, path: &Path) {
        let pending = match self.prefetch {
            Some(prefetch) => {
                let listing = prefetch.take(path);
                prefetch.ahead(path, &listing);
                listing
            }
            None => prefetch::list(path),
        };
        self.open.push(OpenFolder { rel, pending });
    }

    /// Leaves every open folder below the root that does not hold `rel`.
    fn close_until_inside(&mut self, rel: &str) {
        while let Some(top) = self.open.last() {
            let inside = rel
                .strip_prefix(top.rel.as_str())
                .is_some_and(|rest| rest.starts_with('/'));
            if top.rel.is_empty() || inside {
                return;
            }
            if let Some(folder) = self.open.pop() {
                self.close(folder);
            }
        }
    }

    /// Leaves every open folder, the root last.
    fn close_all(&mut self) {
        while let Some(folder) = self.open.pop() {
            self.close(folder);
        }
    }

    /// Records the ignored files among the entries of a folder the walk did not yield (only those before the cut,
    /// when a bound cut the walk); a covered walk also enters its ignored folders, build outputs aside.
    fn close(&mut self, folder: OpenFolder) {
        for (name, stat) in folder.pending {
            let rel = if folder.rel.is_empty() {
                name
            } else {
                format!("{}/{name}", folder.rel)
            };
            if !self.snapshot.covers(&rel) {
                continue;
            }
            let path = self.root.join(&rel);
            let Some(meta) = stat.or_else(|| fs::symlink_metadata(&path).ok()) else {
                continue;
            };
            let is_dir = meta.is_dir();
            if is_dir && self.limits.cover.is_none() {
                continue;
            }
            if is_dir && is_build_output(&name_of(&rel), &path) {
                self.snapshot
                    .not_covered
                    .insert(format!("{rel}/"), NotCovered::BuildOutput);
                continue;
            }
            let ignored = self
                .matcher
                .as_mut()
                .is_some_and(|matcher| matcher.matched(&rel, is_dir).is_ignore());
            if !ignored {
                continue;
            }
            if is_dir {
                self.cover_folder(&rel, &path);
            } else if let Some(kind) = kind_of(&meta) {
                self.record_meta(rel, &path, kind, &meta, true);
            }
        }
    }

    /// Records, in a covered walk, the files of an ignored folder, its folders in name order (build outputs are
    /// listed as not covered instead).
    fn cover_folder(&mut self, rel: &str, path: &Path) {
        if is_build_output(&name_of(rel), path) {
            self.snapshot
                .not_covered
                .insert(format!("{rel}/"), NotCovered::BuildOutput);
            return;
        }
        let Ok(entries) = fs::read_dir(path) else {
            self.snapshot.skipped += 1;
            return;
        };
        let mut names: Vec<String> = entries
            .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .filter(|name| name != ".git")
            .collect();
        names.sort();
        for name in names {
            let rel = format!("{rel}/{name}");
            if !self.snapshot.covers(&rel) {
                return;
            }
            let path = path.join(&name);
            let Ok(meta) = fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.is_dir() {
                self.cover_folder(&rel, &path);
            } else if let Some(kind) = kind_of(&meta) {
                self.record_meta(rel, &path, kind, &meta, true);
            }
        }
    }

    /// Marks the walk cut before `next` (or before an earlier `next` already set), and drops what lies after it.
    fn cut(&mut self, reason: TruncateReason, next: String) {
        if let Some(cut) = &self.snapshot.truncated
            && walk_order(&cut.next, &next).is_le()
        {
            return;
        }
        self.snapshot.files.retain(|path, _| walk_order(path, &next).is_lt());
        self.snapshot.truncated = Some(Truncated { reason, next });
    }

    /// Records a file or a symlink the walk yielded, with its metadata read as its folder was listed (else read now).
    fn record(&mut self, rel: String, path: &Path, stat: Option<Metadata>) {
        let Some((kind, meta)) = stat
            .or_else(|| fs::symlink_metadata(path).ok())
            .and_then(|meta| Some((kind_of(&meta)?, meta)))
        else {
            self.snapshot.skipped += 1;
            return;
        };
        self.record_meta(rel, path, kind, &meta, false);
    }

    /// Records a file or a symlink from its metadata: reused from the previous snapshot, or read (and stored, in a
    /// covered walk). Without cover, an ignored file gets its metadata only.
    fn record_meta(&mut self, rel: String, path: &Path, kind: EntryKind, meta: &Metadata, ignored: bool) {
        if self.snapshot.files.len() >= self.limits.max_files {
            self.cut(TruncateReason::Files, rel);
            return;
        }
        let mut entry = entry_of(kind, meta);
        entry.ignored = ignored;
        if self.reuse(&rel, &mut entry) {
            self.snapshot.files.insert(rel, entry);
            return;
        }
        if ignored && self.limits.cover.is_none() {
            self.snapshot.files.insert(rel, entry);
            return;
        }
        match self.read_content(&rel, path, &mut entry) {
            Ok(()) => {
                self.snapshot.files.insert(rel, entry);
            }
            Err(()) => {
                self.snapshot.skipped += 1;
                if self.limits.cover.is_some() {
                    self.snapshot.not_covered.insert(rel, NotCovered::Unreadable);
                }
            }
        }
    }

    /// Notes, in a covered walk, a folder that is a build output: listed as not covered, its files never stored.
    fn note_build_output(&mut self, rel: &str, path: &Path) {
        if self.limits.cover.is_some() && is_build_output(&name_of(rel), path) {
            self.snapshot
                .not_covered
                .insert(format!("{rel}/"), NotCovered::BuildOutput);
            self.build_outputs.push(format!("{rel}/"));
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

    /// Takes the hash and content of the previous snapshot for a file that did not change since well before it.
    fn reuse(&mut self, rel: &str, entry: &mut FileEntry) -> bool {
        let (Some(previous), Some(before_ns)) = (self.previous, self.reuse_before_ns) else {
            return false;
        };
        let Some(old) = previous.files.get(rel) else {
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

/// The last component of a relative path.
fn name_of(rel: &str) -> String {
    rel.rsplit('/').next().unwrap_or(rel).to_owned()
}

/// The path of `path` relative to `root`, `/`-separated, when it is UTF-8.
fn relative(root: &Path, path: &Path) -> Option<String> {
    let rest = path.strip_prefix(root).ok()?;
    let parts: Option<Vec<&str>> = rest.components().map(|part| part.as_os_str().to_str()).collect();
    Some(parts?.join("/"))
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
