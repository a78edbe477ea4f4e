//! [`SnapshotStore`]: snapshots on disk under an id, in a folder the caller names (a folder of the state root).
//!
//! # Layout
//!
//! ```text
//! <dir>/manifests/<id>.json      a header line {"version": 2, "sha256", "parent", "depth"}, then the snapshot
//! <dir>/blobs/<2 hex>/<62 hex>   a kept content, named by its SHA-256
//! ```
//!
//! The manifest format is [`super::manifest`]'s: a save after another save of the same root (by this store) writes a
//! *delta* naming that snapshot as its parent and listing only what changed, so a snapshot after a one-file change
//! writes a few hundred bytes rather than every file; a full manifest is written every [`MAX_DEPTH`] deltas, and
//! version 1 manifests (full, from an older efrd) still read. Contents are stored once however many snapshots keep
//! them. A save writes the missing contents first and syncs them (a covered walk wrote and synced its own as it went,
//! [`super::sync`]; the save syncs what is still listed), then the manifest to a temporary file that is
//! synced and renamed into place, then syncs the folder: a manifest never names a content or a parent that a crash
//! could lose, and a crash leaves no half manifest. Removing a snapshot ([`SnapshotStore::remove`],
//! [`SnapshotStore::prune`]) first rewrites each kept delta that names it as a full manifest, so no kept snapshot
//! ever loses its parent. Folders are 0700 and files 0600: a project's files can hold secrets even when no ignore
//! rule says so. A content read back is checked against its hash, a manifest against the hash in its header.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::{BufRead as _, Write as _};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use super::cover::blob_path;
use super::manifest::{self, Contents, MAX_DEPTH, Manifest};
use super::{Blobs, Cover, Limits, Snapshot, SnapshotError};

/// The longest id.
const MAX_ID_LEN: usize = 128;

/// The bounds of a turn's covered snapshots, as config `[undo]` sets them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UndoBounds {
    /// The most files a snapshot records.
    pub max_files: usize,
    /// The most bytes one snapshot covers.
    pub max_bytes: u64,
    /// The biggest file covered, in bytes.
    pub max_file_bytes: u64,
    /// The longest a snapshot's walk may take.
    pub max_time: std::time::Duration,
}

/// The bounds of the trash, config `[undo] trash_max_bytes` and `trash_days`
/// (efrd's `undo::trash`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrashBounds {
    /// The most bytes the trash holds; past it the oldest undos' files go first.
    pub max_bytes: u64,
    /// How long the trash keeps an undo's files.
    pub max_age: std::time::Duration,
}

impl Default for TrashBounds {
    /// 4 GiB, 30 days.
    fn default() -> Self {
        Self {
            max_bytes: 4 << 30,
            max_age: std::time::Duration::from_secs(30 * 24 * 3600),
        }
    }
}

/// Snapshots stored in one folder. Cheap to clone; several may use one folder (saves of different ids do not meet;
/// [`SnapshotStore::collect_garbage`] must not run while a save does).
#[derive(Debug, Clone)]
pub struct SnapshotStore {
    dir: PathBuf,
    /// The last covered snapshot of each root this process took: the stat cache of the next one.
    last: Arc<Mutex<HashMap<PathBuf, Arc<Snapshot>>>>,
    /// The bounds of a turn's covered snapshots (config `[undo]`); `None`: undo is off.
    undo: Arc<Mutex<Option<Limits>>>,
    /// The last snapshot of each root this store saved: the parent of the next save's delta.
    saved: Arc<Mutex<HashMap<PathBuf, Saved>>>,
    /// The bounds of the trash (config `[undo]`).
    trash: Arc<Mutex<TrashBounds>>,
    /// Held (shared) by each walk and save of a covered snapshot and each undo, and (alone) by a collection, which
    /// removes the contents that no saved manifest names: a walk writes its contents before its manifest names them.
    gate: Arc<tokio::sync::RwLock<()>>,
}

/// A snapshot this store saved, as the parent of the next delta of its root.
#[derive(Debug, Clone)]
struct Saved {
    id: String,
    depth: u32,
    /// Shared with `last` when it is the same snapshot (a turn keeps and saves each one): one copy, not two.
    snapshot: Arc<Snapshot>,
}

impl SnapshotStore {
    /// Opens (creating as needed, mode 0700) the store in `dir`.
    ///
    /// # Errors
    ///
    /// [`SnapshotError::Io`] when a folder cannot be created.
    pub fn open(dir: &Path) -> Result<Self, SnapshotError> {
        for folder in [dir.to_path_buf(), dir.join("manifests"), dir.join("blobs")] {
            private_folder(&folder)?;
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            last: Arc::default(),
            undo: Arc::default(),
            saved: Arc::default(),
            trash: Arc::default(),
            gate: Arc::default(),
        })
    }

    /// A hold on the store for a walk and its save, or an undo: a collection waits until every hold ends, and a
    /// hold asked for while a collection waits or runs waits for it ([`SnapshotStore::exclusive`]).
    pub async fn hold(&self) -> tokio::sync::OwnedRwLockReadGuard<()> {
        Arc::clone(&self.gate).read_owned().await
    }

    /// The store alone, for a collection: `None` when the holds of the moment do not all end within `wait` (a
    /// collection never makes a turn wait longer than that, nor longer than its own pass).
    pub async fn exclusive(&self, wait: std::time::Duration) -> Option<tokio::sync::OwnedRwLockWriteGuard<()>> {
        tokio::time::timeout(wait, Arc::clone(&self.gate).write_owned())
            .await
            .ok()
    }

    /// The store's `blobs` folder.
    #[must_use]
    pub fn blobs(&self) -> PathBuf {
        self.dir.join("blobs")
    }

    /// Sets the bounds of a turn's covered snapshots from config `[undo]` (`None` when undo is off); the cover's
    /// `blobs` is this store's.
    pub fn set_undo(&self, bounds: Option<UndoBounds>) {
        let limits = bounds.map(|bounds| Limits {
            max_files: bounds.max_files,
            max_time: bounds.max_time,
            cover: Some(Cover {
                blobs: self.blobs(),
                max_file_bytes: bounds.max_file_bytes,
                max_bytes: bounds.max_bytes,
            }),
            ..Limits::default()
        });
        if let Ok(mut undo) = self.undo.lock() {
            *undo = limits;
        }
    }

    /// The trash's folder (`<dir>/trash`, efrd's `undo::trash`).
    #[must_use]
    pub fn trash_dir(&self) -> PathBuf {
        self.dir.join("trash")
    }

    /// The trash's bounds, as config `[undo]` last set them.
    #[must_use]
    pub fn trash_bounds(&self) -> TrashBounds {
        self.trash.lock().map(|bounds| *bounds).unwrap_or_default()
    }

    /// Sets the bounds of a turn's covered snapshots (`None`: undo is off), and of the trash, as config `[undo]`
    /// says.
    pub fn set_bounds(&self, undo: Option<UndoBounds>, trash: TrashBounds) {
        if let Ok(mut bounds) = self.trash.lock() {
            *bounds = trash;
        }
        self.set_undo(undo);
    }

    /// The bounds of a turn's covered snapshots; `None` when undo is off.
    #[must_use]
    pub fn undo_limits(&self) -> Option<Limits> {
        self.undo.lock().ok()?.clone()
    }

    /// The last snapshot of `root` that [`SnapshotStore::remember`] kept, to reuse its hashes: shared, not copied
    /// (a copy of 20,000 entries costs more than a tenth of a warm walk).
    #[must_use]
    pub fn last_of(&self, root: &Path) -> Option<Arc<Snapshot>> {
        self.last.lock().ok()?.get(root).cloned()
    }

    /// `snapshot` as the store keeps it: shared as it is when it holds no contents in memory, else a copy without
    /// them (a covered snapshot's contents are in the store; copying 20,000 entries costs a tenth of a warm walk, so
    /// [`SnapshotStore::remember`] strips them before a snapshot is shared and this copy is the rare case).
    fn kept(&self, snapshot: &Arc<Snapshot>) -> Arc<Snapshot> {
        if snapshot.blobs.memory.is_empty() {
            return Arc::clone(snapshot);
        }
        let mut copy = Snapshot::clone(snapshot);
        copy.blobs = Blobs {
            store: Some(self.blobs()),
            ..Blobs::default()
        };
        Arc::new(copy)
    }

    /// Keeps a covered `snapshot` as the last of its root, the stat cache of the next one, and returns it shared
    /// (moved, not copied). Its contents in memory are dropped first (they are in the store, synced here: the next
    /// snapshot reuses them without writing them again), so a kept snapshot holds entries, not bytes; a content is
    /// read back from the store when a diff needs it. A snapshot without cover, or whose contents fail to sync, is
    /// returned as it is and not kept (the next snapshot reads the files again).
    pub fn remember(&self, mut snapshot: Snapshot) -> Arc<Snapshot> {
        if !snapshot.covered || super::sync_blobs(&self.blobs(), &snapshot.blobs.unsynced).is_err() {
            return Arc::new(snapshot);
        }
        snapshot.blobs = Blobs {
            store: Some(self.blobs()),
            ..Blobs::default()
        };
        let kept = Arc::new(snapshot);
        if let Ok(mut last) = self.last.lock() {
            last.insert(kept.root.clone(), Arc::clone(&kept));
        }
        kept
    }

    /// The store's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Saves `snapshot` under `id`, and keeps it (shared, see [`SnapshotStore::remember`]) as the parent of its
    /// root's next delta.
    ///
    /// # Errors
    ///
    /// [`SnapshotError::InvalidId`], [`SnapshotError::Exists`] when the id is taken (nothing is overwritten),
    /// [`SnapshotError::MissingBlob`] when a kept content is neither in memory nor in a store, [`SnapshotError::Io`].
    pub fn save(&self, id: &str, snapshot: &Arc<Snapshot>) -> Result<(), SnapshotError> {
        check_id(id)?;
        let manifest = self.manifest_path(id);
        if manifest.exists() {
            return Err(SnapshotError::Exists { id: id.to_owned() });
        }
        let mut written = HashSet::new();
        // A covered snapshot's stored contents are in the store already (its walk wrote them): only the kept contents
        // of a snapshot without cover are written here, so a save does not look up every blob again.
        for entry in snapshot.files.values().filter(|entry| entry.kept && !entry.stored) {
            let Some(hash) = entry.sha256.as_deref() else { continue };
            if !written.insert(hash) {
                continue;
            }
            let path = self.blob_path(hash);
            if path.exists() {
                continue;
            }
            let bytes = snapshot.blob(hash)?;
            let Some(folder) = path.parent() else { continue };
            private_folder(folder)?;
            write_new(folder, &path, &bytes, true)?;
        }
        super::sync_blobs(&self.blobs(), &snapshot.blobs.unsynced)?;
        // The parent: this store's last save of the root, while its manifest is there (a removal may have taken it)
        // and the chain is not at its longest.
        let parent = self
            .saved
            .lock()
            .ok()
            .and_then(|saved| saved.get(&snapshot.root).cloned())
            .filter(|parent| parent.depth < MAX_DEPTH && self.manifest_path(&parent.id).is_file());
        let contents = parent
            .as_ref()
            .and_then(|parent| Contents::delta(snapshot, &parent.snapshot.files, &parent.id, parent.depth + 1))
            .unwrap_or_else(|| Contents::full(snapshot));
        let depth = contents.depth;
        match self.write_manifest(&manifest, snapshot, &contents, false) {
            Err(SnapshotError::Io { source, .. }) if source.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(SnapshotError::Exists { id: id.to_owned() });
            }
            other => other?,
        }
        let kept = self.kept(snapshot);
        if let Ok(mut saved) = self.saved.lock() {
            saved.insert(
                snapshot.root.clone(),
                Saved {
                    id: id.to_owned(),
                    depth,
                    snapshot: kept,
                },
            );
        }
        Ok(())
    }

    /// Writes the manifest of `snapshot` listing `contents` at `path` (over one there when `replace`), and syncs the
    /// manifests folder so that the new name is durable before any later manifest can name it as a parent.
    fn write_manifest(
        &self,
        path: &Path,
        snapshot: &Snapshot,
        contents: &Contents<'_>,
        replace: bool,
    ) -> Result<(), SnapshotError> {
        let bytes = manifest::encode(snapshot, contents).map_err(|error| SnapshotError::Manifest {
            path: path.to_path_buf(),
            reason: error.to_string(),
        })?;
        let folder = self.dir.join("manifests");
        write_new(&folder, path, &bytes, replace)?;
        fs::File::open(&folder)
            .and_then(|folder| folder.sync_all())
            .map_err(|error| SnapshotError::io(&folder, error))
    }

    /// Reads the one manifest stored under `id`, without its chain.
    fn read_manifest(&self, id: &str) -> Result<Manifest, SnapshotError> {
        let path = self.manifest_path(id);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(SnapshotError::NotFound { id: id.to_owned() });
            }
            Err(error) => return Err(SnapshotError::io(path, error)),
        };
        manifest::decode(&path, &bytes)
    }

    /// The parent a stored manifest names, read from its header line only (`None` for a full manifest).
    fn parent_of(&self, id: &str) -> Result<Option<String>, SnapshotError> {
        let path = self.manifest_path(id);
        let file = fs::File::open(&path).map_err(|error| SnapshotError::io(&path, error))?;
        let mut head = Vec::new();
        std::io::BufReader::new(file)
            .read_until(b'\n', &mut head)
            .map_err(|error| SnapshotError::io(&path, error))?;
        manifest::parent_in_header(&path, &head)
    }

    /// Loads the snapshot saved under `id`; its contents are read from the store when a comparison needs them.
    ///
    /// # Errors
    ///
    /// [`SnapshotError::InvalidId`], [`SnapshotError::NotFound`], [`SnapshotError::Version`] for another format,
    /// [`SnapshotError::Manifest`] for a damaged manifest, [`SnapshotError::Io`].
    pub fn load(&self, id: &str) -> Result<Snapshot, SnapshotError> {
        check_id(id)?;
        let path = self.manifest_path(id);
        let invalid = |reason: String| SnapshotError::Manifest {
            path: path.clone(),
            reason,
        };
        let mut chain = vec![(id.to_owned(), self.read_manifest(id)?)];
        while let Some((child_id, child)) = chain.last() {
            let Some(parent_id) = child.parent.clone() else { break };
            let child_path = self.manifest_path(child_id);
            let broken = |reason: String| SnapshotError::Manifest {
                path: child_path.clone(),
                reason,
            };
            check_id(&parent_id).map_err(|_| broken(format!("its parent id {parent_id:?} is not valid")))?;
            let parent = match self.read_manifest(&parent_id) {
                Err(SnapshotError::NotFound { .. }) => {
                    return Err(broken(format!("its parent snapshot {parent_id} is missing")));
                }
                other => other?,
            };
            // Depths fall along a chain (a parent rewritten whole by a removal is at 0), so a chain never loops.
            if parent.depth >= child.depth || parent.snapshot.root != child.snapshot.root {
                return Err(broken(format!(
                    "its parent snapshot {parent_id} is not the one it was taken after"
                )));
            }
            chain.push((parent_id, parent));
        }
        let mut snapshot = manifest::apply_chain(chain, |id| self.manifest_path(id))?;
        if !snapshot.root.is_absolute() {
            return Err(invalid(format!("root {} is not absolute", snapshot.root.display())));
        }
        if let Some(bad) = snapshot.files.keys().find(|rel| !is_plain_relative(rel)) {
            return Err(invalid(format!("path {bad:?} is not a relative path below the root")));
        }
        snapshot.blobs = Blobs {
            store: Some(self.dir.join("blobs")),
            ..Blobs::default()
        };
        Ok(snapshot)
    }

    /// Removes the snapshot saved under `id` (its contents stay until [`SnapshotStore::collect_garbage`]); returns
    /// whether there was one. A stored delta that names it as its parent is first rewritten as a full manifest.
    ///
    /// # Errors
    ///
    /// [`SnapshotError::InvalidId`], an error of [`SnapshotStore::load`] for a delta that names it (nothing is
    /// removed then), [`SnapshotError::Io`].
    pub fn remove(&self, id: &str) -> Result<bool, SnapshotError> {
        check_id(id)?;
        self.detach(&HashSet::from([id.to_owned()]))?;
        self.remove_manifest(id)
    }

    fn remove_manifest(&self, id: &str) -> Result<bool, SnapshotError> {
        let path = self.manifest_path(id);
        match fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(error) => Err(SnapshotError::io(path, error)),
        }
    }

    /// The ids of the stored snapshots, sorted.
    ///
    /// # Errors
    ///
    /// [`SnapshotError::Io`] when the manifests folder cannot be listed.
    pub fn ids(&self) -> Result<Vec<String>, SnapshotError> {
        let folder = self.dir.join("manifests");
        let entries = fs::read_dir(&folder).map_err(|error| SnapshotError::io(&folder, error))?;
        let mut ids: Vec<String> = entries
            .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .filter_map(|name| name.strip_suffix(".json").map(str::to_owned))
            .filter(|id| check_id(id).is_ok())
            .collect();
        ids.sort();
        Ok(ids)
    }

    /// Removes the contents that no stored snapshot keeps; returns how many. Run it while no save runs.
    ///
    /// # Errors
    ///
    /// Any error of [`SnapshotStore::load`] for a stored manifest (nothing is removed then), or [`SnapshotError::Io`].
    pub fn collect_garbage(&self) -> Result<u64, SnapshotError> {
        let mut live = HashSet::new();
        let ids = self.ids()?;
        // Each manifest alone: a delta's files are its parent's, which is stored too, and its own changes.
        for id in &ids {
            let manifest = self.read_manifest(id)?;
            if let Some(parent) = manifest.parent.filter(|parent| ids.binary_search(parent).is_err()) {
                return Err(SnapshotError::Manifest {
                    path: self.manifest_path(id),
                    reason: format!("its parent snapshot {parent} is missing"),
                });
            }
            let snapshot = manifest.snapshot;
            live.extend(
                snapshot
                    .files
                    .into_values()
                    .filter(|entry| entry.kept || entry.stored)
                    .filter_map(|entry| entry.sha256),
            );
            live.extend(snapshot.refs.and_then(|refs| refs.index));
        }
        let blobs = self.dir.join("blobs");
        let mut removed = 0;
        for folder in fs::read_dir(&blobs).map_err(|error| SnapshotError::io(&blobs, error))? {
            let folder = folder.map_err(|error| SnapshotError::io(&blobs, error))?.path();
            let Some(prefix) = folder.file_name().and_then(|name| name.to_str()).map(str::to_owned) else {
                continue;
            };
            let files = fs::read_dir(&folder).map_err(|error| SnapshotError::io(&folder, error))?;
            for file in files {
                let path = file.map_err(|error| SnapshotError::io(&folder, error))?.path();
                let Some(rest) = path.file_name().and_then(|name| name.to_str()) else {
                    continue;
                };
                if !live.contains(&format!("{prefix}{rest}")) {
                    fs::remove_file(&path).map_err(|error| SnapshotError::io(&path, error))?;
                    removed += 1;
                }
            }
        }
        Ok(removed)
    }

    /// Removes every stored snapshot whose id `drop` selects, then, when it removed one, the contents that no kept
    /// snapshot holds ([`SnapshotStore::collect_garbage`], which reads every manifest); returns (snapshots removed,
    /// contents removed). Run it while no save runs.
    ///
    /// # Errors
    /// As [`SnapshotStore::collect_garbage`]; the snapshots removed before an error stay removed.
    pub fn prune(&self, drop: impl Fn(&str) -> bool) -> Result<(u64, u64), SnapshotError> {
        let dropped: HashSet<String> = self.ids()?.into_iter().filter(|id| drop(id)).collect();
        self.detach(&dropped)?;
        let mut removed = 0;
        for id in &dropped {
            if self.remove_manifest(id)? {
                removed += 1;
            }
        }
        self.forget(&dropped);
        let contents = if removed > 0 { self.collect_garbage()? } else { 0 };
        Ok((removed, contents))
    }

    /// Rewrites as a full manifest each stored delta, not itself in `dropped`, whose parent is: after it, removing
    /// the snapshots of `dropped` takes no kept snapshot's parent. All are rewritten before any is removed, so a
    /// chain through several removed snapshots still reads; a crash between leaves the same snapshots, some of them
    /// full.
    fn detach(&self, dropped: &HashSet<String>) -> Result<(), SnapshotError> {
        if dropped.is_empty() {
            return Ok(());
        }
        for id in self.ids()?.iter().filter(|id| !dropped.contains(*id)) {
            if self.parent_of(id)?.is_some_and(|parent| dropped.contains(&parent)) {
                let snapshot = self.load(id)?;
                self.write_manifest(&self.manifest_path(id), &snapshot, &Contents::full(&snapshot), true)?;
            }
        }
        Ok(())
    }

    /// Forgets the last snapshot of each root whose last save is in `dropped`: the next walk of that root reads its
    /// files again rather than reuse contents a collection may just have removed, and its save is a full manifest.
    fn forget(&self, dropped: &HashSet<String>) {
        let Ok(mut saved) = self.saved.lock() else { return };
        let roots: Vec<PathBuf> = saved
            .iter()
            .filter(|(_, last)| dropped.contains(&last.id))
            .map(|(root, _)| root.clone())
            .collect();
        for root in &roots {
            saved.remove(root);
        }
        drop(saved);
        if let Ok(mut last) = self.last.lock() {
            for root in &roots {
                last.remove(root);
            }
        }
    }

    fn manifest_path(&self, id: &str) -> PathBuf {
        self.dir.join("manifests").join(format!("{id}.json"))
    }

    fn blob_path(&self, hash: &str) -> PathBuf {
        blob_path(&self.dir.join("blobs"), hash)
    }
}

impl Snapshot {
    /// A kept content by its hash: from memory, or from the store it was loaded from (checked against the hash).
    pub(crate) fn blob(&self, hash: &str) -> Result<Vec<u8>, SnapshotError> {
        if let Some(bytes) = self.blobs.memory.get(hash) {
            return Ok(bytes.to_vec());
        }
        let Some(store) = &self.blobs.store else {
            return Err(SnapshotError::MissingBlob { hash: hash.to_owned() });
        };
        let path = blob_path(store, hash);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(SnapshotError::MissingBlob { hash: hash.to_owned() });
            }
            Err(error) => return Err(SnapshotError::io(path, error)),
        };
        if format!("{:x}", Sha256::digest(&bytes)) != hash {
            return Err(SnapshotError::CorruptBlob { hash: hash.to_owned() });
        }
        Ok(bytes)
    }
}

fn check_id(id: &str) -> Result<(), SnapshotError> {
    let valid = !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-'));
    if valid {
        Ok(())
    } else {
        Err(SnapshotError::InvalidId { id: id.to_owned() })
    }
}

/// A path of normal components only (no root, `.` or `..`).
fn is_plain_relative(rel: &str) -> bool {
    !rel.is_empty()
        && Path::new(rel)
            .components()
            .all(|part| matches!(part, Component::Normal(_)))
}

fn private_folder(folder: &Path) -> Result<(), SnapshotError> {
    fs::create_dir_all(folder).map_err(|error| SnapshotError::io(folder, error))?;
    fs::set_permissions(folder, fs::Permissions::from_mode(0o700)).map_err(|error| SnapshotError::io(folder, error))
}

/// Writes `bytes` to a temporary file (0600) in `folder` and moves it to `path`: over whatever is there when
/// `replace`, else failing with `AlreadyExists`.
fn write_new(folder: &Path, path: &Path, bytes: &[u8], replace: bool) -> Result<(), SnapshotError> {
    let mut file = tempfile::NamedTempFile::new_in(folder).map_err(|error| SnapshotError::io(folder, error))?;
    file.write_all(bytes)
        .map_err(|error| SnapshotError::io(file.path(), error))?;
    file.as_file()
        .sync_all()
        .map_err(|error| SnapshotError::io(file.path(), error))?;
    let persisted = if replace {
        file.persist(path)
    } else {
        file.persist_noclobber(path)
    };
    persisted
        .map(drop)
        .map_err(|error| SnapshotError::io(path, error.error))
}
