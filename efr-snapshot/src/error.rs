//! The errors of taking, comparing, saving and loading snapshots.

use std::path::PathBuf;

/// Why a snapshot could not be taken, compared, saved or loaded. Nothing on disk is lost by any of them: a save
/// that fails leaves no manifest, and a load never writes.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The root to walk is not an absolute path to a folder.
    #[error("snapshot root {} is not an absolute path to a folder", path.display())]
    NotAFolder {
        /// The root as given.
        path: PathBuf,
    },
    /// A file system operation failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path it failed on.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A manifest is not valid JSON of the expected shape, or names a path that is not a relative path below its
    /// root.
    #[error("snapshot manifest {} is not valid: {reason}", path.display())]
    Manifest {
        /// The manifest file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A manifest of a format this efrd does not read.
    #[error("snapshot manifest {} has format version {found}; this efrd reads version {}", path.display(), super::manifest::MANIFEST_VERSION)]
    Version {
        /// The manifest file.
        path: PathBuf,
        /// The version it has.
        found: u64,
    },
    /// An id that is not 1 to 128 of `A-Z a-z 0-9 . _ -`, or that starts with `.`.
    #[error("snapshot id {id:?} is not valid: use 1 to 128 letters, digits, '.', '_' or '-', not starting with '.'")]
    InvalidId {
        /// The id as given.
        id: String,
    },
    /// A snapshot with this id is stored already (ids are never reused).
    #[error("snapshot {id} exists already")]
    Exists {
        /// The id.
        id: String,
    },
    /// No snapshot with this id is stored.
    #[error("snapshot {id} not found")]
    NotFound {
        /// The id.
        id: String,
    },
    /// A content that a snapshot kept is not in its store (or in memory).
    #[error("content {hash} is missing from the snapshot store")]
    MissingBlob {
        /// The SHA-256 it has.
        hash: String,
    },
    /// A stored content does not have the hash it is stored under.
    #[error("content {hash} in the snapshot store is damaged: its hash differs")]
    CorruptBlob {
        /// The SHA-256 it should have.
        hash: String,
    },
    /// Two snapshots of different roots were compared.
    #[error("snapshots of different roots cannot be compared: {} and {}", before.display(), after.display())]
    RootMismatch {
        /// The first snapshot's root.
        before: PathBuf,
        /// The second snapshot's root.
        after: PathBuf,
    },
}

impl SnapshotError {
    /// An [`SnapshotError::Io`] for `path`.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}
