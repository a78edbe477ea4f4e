//! What a patch knows of a path: its state on disk when the patch first named it ([`Disk`], read once, for the
//! rollback and the check before writing) and the state the plan gives it ([`State`]). The plan computes the second
//! from the first; the commit writes it after checking the first again.

use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::error::ApplyError;

/// The state of a path on disk when the patch first named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Disk {
    /// Nothing there (or a parent is not a folder).
    Missing,
    /// A regular file, or a symlink to one.
    File {
        /// Its bytes.
        bytes: Vec<u8>,
        /// Its permission bits.
        mode: u32,
        /// For a symlink: what the link holds (restored as a link, never as a copy).
        link: Option<PathBuf>,
        /// Where the bytes live: the path itself, or the link's target; writes go there so a link stays a link.
        real: PathBuf,
    },
    /// A folder, a dangling link or a special file: never written or removed by a patch.
    Other,
}

impl Disk {
    /// Reads the state of `path`.
    pub(super) fn load(path: &Path) -> Result<Self, ApplyError> {
        let io_error = |source| ApplyError::Io {
            op: "read",
            path: path.to_owned(),
            source,
        };
        let meta = match fs::symlink_metadata(path) {
            Ok(meta) => meta,
            Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => {
                return Ok(Self::Missing);
            }
            Err(e) => return Err(io_error(e)),
        };
        let (link, real, meta) = if meta.is_symlink() {
            match fs::metadata(path) {
                Ok(target) if target.is_file() => {
                    let link = fs::read_link(path).map_err(io_error)?;
                    (Some(link), fs::canonicalize(path).map_err(io_error)?, target)
                }
                Ok(_) => return Ok(Self::Other),
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Self::Other),
                Err(e) => return Err(io_error(e)),
            }
        } else if meta.is_file() {
            (None, path.to_owned(), meta)
        } else {
            return Ok(Self::Other);
        };
        let bytes = fs::read(&real).map_err(io_error)?;
        Ok(Self::File {
            bytes,
            mode: meta.permissions().mode() & 0o7777,
            link,
            real,
        })
    }
}

/// The state a path has in the overlay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum State {
    Missing,
    /// A file; `mode` is `None` for a new file (created as `0666` less the umask).
    File {
        bytes: Vec<u8>,
        mode: Option<u32>,
    },
    Other,
}
