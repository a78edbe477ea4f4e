//! [`SnapshotStore`]: snapshots on disk under an id, in a folder the caller names (a folder of the state root).
//!
//! # Layout
//!
//! ```text
//! <dir>/manifests/<id>.json      {"version": 1, "root", "taken_at", "elapsed_ms", "files": {path: entry}, ...}
//! <dir>/blobs/<2 hex>/<62 hex>   a kept content, named by its SHA-256
//! ```
//!
//! A manifest is the JSON of [`Snapshot`] with a format `version` first. Contents are stored once however many
//! snapshots keep them. A save writes the missing contents first, then the manifest to a temporary file that is
//! renamed into place, so a manifest never names a content that is not there and a crash leaves no half manifest.
//! Folders are 0700 and files 0600: a project's files can hold secrets even when no ignore rule says so.
//! A content read back is checked against its hash.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{Blobs, Cover, Limits, Snapshot, SnapshotError};

/// The manifest format this efrd writes and reads.
pub(crate) const MANIFEST_VERSION: u64 = 1;

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
/// (`crate::undo::trash`).
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
    last: Arc<Mutex<HashMap<PathBuf, Snapshot>>>,
    /// The bounds of a turn's covered snapshots (config `[undo]`); `None`: undo is off.
    undo: Arc<Mutex<Option<Limits>>>,
    /// The bounds of the trash (config `[undo]`).
    trash: Arc<Mutex<TrashBounds>>,
}

#[derive(Serialize)]
struct ManifestOut<'a> {
    version: u64,
    #[serde(flatten)]
    snapshot: &'a Snapshot,
}

#[derive(Deserialize)]
struct ManifestVersion {
    version: u64,
}

#[derive(Deserialize)]
struct ManifestIn {
    #[serde(flatten)]
    snapshot: Snapshot,
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
            trash: Arc::default(),
        })
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

    /// The trash's folder (`<dir>/trash`, `crate::undo::trash`).
    #[must_use]
    pub fn trash_dir(&self) -> PathBuf {
        self.dir.join("trash")
    }

    /// The trash's bounds, as config `[undo]` last set them.
    #[must_use]
    pub fn trash_bounds(&self) -> TrashBounds {
        self.trash.lock().map(|bounds| *bounds).unwrap_or_default()
    }

    /// Sets the bounds of a turn's covered snapshots, and of the trash, from config `[undo]`.
    pub fn set_undo_config(&self, section: &crate::config::schema::UndoSection) {
        if let Ok(mut trash) = self.trash.lock() {
            *trash = TrashBounds {
                max_bytes: section.trash_max_bytes,
                max_age: std::time::Duration::from_secs(section.trash_days.saturating_mul(86_400)),
            };
        }
        self.set_undo(section.enabled.then(|| UndoBounds {
            max_files: section.max_files,
            max_bytes: section.max_bytes,
            max_file_bytes: section.max_file_bytes,
            max_time: std::time::Duration::from_secs(section.max_secs),
        }));
    }

    /// The bounds of a turn's covered snapshots; `None` when undo is off.
    #[must_use]
    pub fn undo_limits(&self) -> Option<Limits> {
        self.undo.lock().ok()?.clone()
    }

    /// The last snapshot of `root` that [`SnapshotStore::remember`] kept, to reuse its hashes.
    #[must_use]
    pub fn last_of(&self, root: &Path) -> Option<Snapshot> {
        self.last.lock().ok()?.get(root).cloned()
    }

    /// Keeps `snapshot` as the last of its root (without its contents in memory: a covered snapshot's are stored).
    /// Its stored contents are synced first: the next snapshot reuses them without writing them again. When the sync
    /// fails, nothing is kept (the next snapshot reads the files again).
    pub fn remember(&self, snapshot: &Snapshot) {
        if !snapshot.covered || super::sync_blobs(&self.blobs(), &snapshot.blobs.unsynced).is_err() {
            return;
        }
        let mut kept = snapshot.clone();
        kept.blobs = Blobs {
            store: Some(self.blobs()),
            ..Blobs::default()
        };
        if let Ok(mut last) = self.last.lock() {
            last.insert(kept.root.clone(), kept);
        }
    }

    /// The store's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Saves `snapshot` under `id`.
    ///
    /// # Errors
    ///
    /// [`SnapshotError::InvalidId`], [`SnapshotError::Exists`] when the id is taken (nothing is overwritten),
    /// [`SnapshotError::MissingBlob`] when a kept content is neither in memory nor in a store, [`SnapshotError::Io`].
    pub fn save(&self, id: &str, snapshot: &Snapshot) -> Result<(), SnapshotError> {
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
        let json = serde_json::to_vec(&ManifestOut {
            version: MANIFEST_VERSION,
            snapshot,
        })
        .map_err(|error| SnapshotError::Manifest {
            path: manifest.clone(),
            reason: error.to_string(),
        })?;
        match write_new(&self.dir.join("manifests"), &manifest, &json, false) {
            Err(SnapshotError::Io { source, .. }) if source.kind() == std::io::ErrorKind::AlreadyExists => {
                Err(SnapshotError::Exists { id: id.to_owned() })
            }
            other => other,
        }
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
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(SnapshotError::NotFound { id: id.to_owned() });
            }
            Err(error) => return Err(SnapshotError::io(path, error)),
        };
        let invalid = |reason: String| SnapshotError::Manifest {
            path: path.clone(),
            reason,
        };
        let version: ManifestVersion = serde_json::from_slice(&bytes).map_err(|error| invalid(error.to_string()))?;
        if version.version != MANIFEST_VERSION {
            return Err(SnapshotError::Version {
                path,
                found: version.version,
            });
        }
        let mut snapshot = serde_json::from_slice::<ManifestIn>(&bytes)
            .map_err(|error| invalid(error.to_string()))?
            .snapshot;
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
    /// whether there was one.
    ///
    /// # Errors
    ///
    /// [`SnapshotError::InvalidId`], [`SnapshotError::Io`].
    pub fn remove(&self, id: &str) -> Result<bool, SnapshotError> {
        check_id(id)?;
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
        for id in self.ids()? {
            let snapshot = self.load(&id)?;
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
        let mut removed = 0;
        for id in self.ids()? {
            if drop(&id) && self.remove(&id)? {
                removed += 1;
            }
        }
        let contents = if removed > 0 { self.collect_garbage()? } else { 0 };
        Ok((removed, contents))
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

/// Where the content of SHA-256 `hash` (lowercase hex) is in a store's `blobs` folder.
#[must_use]
pub fn blob_path(blobs: &Path, hash: &str) -> PathBuf {
    let (prefix, rest) = hash.split_at(hash.len().min(2));
    blobs.join(prefix).join(rest)
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
