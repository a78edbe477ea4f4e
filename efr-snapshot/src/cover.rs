//! What a covered snapshot keeps for undo ([`Cover`]), the rule for build outputs ([`is_build_output`]), and how a
//! file's bytes go into the content-addressed store ([`store_file`]).

use std::fs::{self, File};
use std::io::{Read, Write as _};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::SnapshotError;

/// Where the content of SHA-256 `hash` (lowercase hex) is in a store's `blobs` folder.
#[must_use]
pub fn blob_path(blobs: &Path, hash: &str) -> PathBuf {
    let (prefix, rest) = hash.split_at(hash.len().min(2));
    blobs.join(prefix).join(rest)
}

/// The bounds of what a covered snapshot stores (config `[undo]`, `docs/undo.md`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cover {
    /// The store's `blobs` folder, where the contents go.
    pub blobs: PathBuf,
    /// The biggest file (in bytes) that is stored; a bigger one is `not_covered` with [`NotCovered::Size`].
    pub max_file_bytes: u64,
    /// The most bytes one snapshot covers in total (stored or reused); a file past it is `not_covered` with
    /// [`NotCovered::Bytes`].
    pub max_bytes: u64,
}

/// Why a covered snapshot left a path without cover.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotCovered {
    /// The file is bigger than [`Cover::max_file_bytes`].
    Size,
    /// The snapshot's total ([`Cover::max_bytes`]) was reached.
    Bytes,
    /// A build output folder ([`is_build_output`]): not entered.
    BuildOutput,
    /// The file could not be read or stored.
    Unreadable,
}

/// The names of the folders that are build outputs: they are rebuilt, not restored (`docs/undo.md`, "What is not
/// covered"). A folder holding a `CACHEDIR.TAG` (the Cache Directory Tagging convention, which cargo's `target/`
/// follows) is one too, whatever its name.
pub const BUILD_OUTPUTS: &[&str] = &[
    "node_modules",
    "target",
    "__pycache__",
    ".venv",
    ".tox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".gradle",
    ".next",
    ".nuxt",
    ".parcel-cache",
    ".zig-cache",
    "zig-out",
];

/// Whether the folder at `path` (named `name`) is a build output: its name is in [`BUILD_OUTPUTS`], it is the
/// `.cache` of a `node_modules` (one of the cache folders of efr-patch's `changes::CACHE_FOLDERS`), or it holds a
/// `CACHEDIR.TAG`.
#[must_use]
pub fn is_build_output(name: &str, path: &Path) -> bool {
    let in_node_modules = path
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|parent| parent == "node_modules");
    BUILD_OUTPUTS.contains(&name) || (name == ".cache" && in_node_modules) || path.join("CACHEDIR.TAG").is_file()
}

/// Puts `bytes`, whose SHA-256 is `hash`, into the store's `blobs` (nothing is written when they are there); returns
/// the path of a blob it wrote. The blob is not synced yet: [`sync_blobs`] does it before a manifest names it.
///
/// # Errors
/// [`SnapshotError::Io`] when the blob cannot be written.
pub(crate) fn store_bytes_hashed(blobs: &Path, hash: &str, bytes: &[u8]) -> Result<Option<PathBuf>, SnapshotError> {
    let path = blob_path(blobs, hash);
    if path.exists() {
        return Ok(None);
    }
    let folder = private_folder_of(&path)?;
    let mut file = tempfile::NamedTempFile::new_in(&folder).map_err(|error| SnapshotError::io(&folder, error))?;
    file.write_all(bytes)
        .map_err(|error| SnapshotError::io(file.path(), error))?;
    persist(file, &path)?;
    Ok(Some(path))
}

/// Copies the file at `path` into the store's `blobs` while hashing it, in pieces (a big file is never held in
/// memory); returns its hash, whether a NUL byte was seen, and the path of the blob when it wrote one (not synced
/// yet, as with [`store_bytes_hashed`]).
///
/// # Errors
/// [`SnapshotError::Io`] when the file cannot be read or the blob written.
pub(crate) fn store_file(blobs: &Path, path: &Path) -> Result<(String, bool, Option<PathBuf>), SnapshotError> {
    let mut source = File::open(path).map_err(|error| SnapshotError::io(path, error))?;
    let staging = blobs.join("staging");
    fs::create_dir_all(&staging).map_err(|error| SnapshotError::io(&staging, error))?;
    let mut file = tempfile::NamedTempFile::new_in(&staging).map_err(|error| SnapshotError::io(&staging, error))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 256 << 10];
    let mut binary = false;
    loop {
        let read = source
            .read(&mut buffer)
            .map_err(|error| SnapshotError::io(path, error))?;
        if read == 0 {
            break;
        }
        binary |= buffer[..read].contains(&0);
        hasher.update(&buffer[..read]);
        file.write_all(&buffer[..read])
            .map_err(|error| SnapshotError::io(file.path(), error))?;
    }
    let hash = format!("{:x}", hasher.finalize());
    let target = blob_path(blobs, &hash);
    if target.exists() {
        return Ok((hash, binary, None));
    }
    private_folder_of(&target)?;
    persist(file, &target)?;
    Ok((hash, binary, Some(target)))
}

fn private_folder_of(path: &Path) -> Result<PathBuf, SnapshotError> {
    let folder = path.parent().unwrap_or(path).to_path_buf();
    if !folder.is_dir() {
        fs::create_dir_all(&folder).map_err(|error| SnapshotError::io(&folder, error))?;
        fs::set_permissions(&folder, fs::Permissions::from_mode(0o700))
            .map_err(|error| SnapshotError::io(&folder, error))?;
    }
    Ok(folder)
}

fn persist(file: tempfile::NamedTempFile, path: &Path) -> Result<(), SnapshotError> {
    file.persist(path)
        .map(drop)
        .map_err(|error| SnapshotError::io(path, error.error))
}
