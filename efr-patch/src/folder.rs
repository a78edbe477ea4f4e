//! Writes that no symbolic link can redirect: each one goes through a folder opened with no link anywhere on its
//! path, and then only names inside that folder are touched.
//!
//! A patch is judged at the paths it resolves to (turn/patch_paths.rs); something else that runs meanwhile (a command
//! left running) could swap a folder on the way for a link and so send a path-based write elsewhere. Here the folder
//! is opened from its canonical path one name at a time from `/`, each with `O_NOFOLLOW | O_DIRECTORY` (what
//! `openat2(RESOLVE_NO_SYMLINKS)` does, without needing Linux 5.6): a link that appears on the way makes the open
//! fail, and once the folder is open, the writes (`openat` of a new temporary file with `O_EXCL`,
//! `renameat`, `unlinkat`, `mkdirat`) act in that very folder whatever its path leads to later. A final name that is
//! a link is replaced or removed as a link, never followed.

use std::ffi::{OsStr, OsString};
use std::io::{self, Write as _};
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use nix::fcntl::{AT_FDCWD, OFlag, openat, renameat};
use nix::sys::stat::{Mode, fchmod, mkdirat};
use nix::unistd::{UnlinkatFlags, unlinkat};
use rand::RngCore;

/// A folder opened with no link on its path.
#[derive(Debug)]
pub(super) struct Folder {
    fd: OwnedFd,
    path: PathBuf,
}

fn io(error: nix::Error) -> io::Error {
    io::Error::from_raw_os_error(error as i32)
}

impl Folder {
    /// Opens the folder at `path`, which must be absolute and canonical: a link anywhere on it fails the open
    /// (`ENOTDIR` or `ELOOP`), as does a `..` or `.` in it.
    pub(super) fn open(path: &Path) -> io::Result<Self> {
        let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let mut fd = openat(AT_FDCWD, "/", flags, Mode::empty()).map_err(io)?;
        for component in path.components() {
            match component {
                Component::RootDir => {}
                Component::Normal(name) => fd = openat(&fd, name, flags, Mode::empty()).map_err(io)?,
                _ => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("{} is not a canonical path", path.display()),
                    ));
                }
            }
        }
        Ok(Self {
            fd,
            path: path.to_owned(),
        })
    }

    /// Opens `path` (absolute, canonical where it exists), creating the missing folders one by one inside the
    /// deepest one that exists; `created` gets each folder made here, outermost first.
    pub(super) fn open_creating(path: &Path, created: &mut Vec<PathBuf>) -> io::Result<Self> {
        let mut existing = path;
        let mut missing: Vec<&OsStr> = Vec::new();
        let mut folder = loop {
            match Self::open(existing) {
                Ok(folder) => break folder,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    let (Some(parent), Some(Component::Normal(name))) =
                        (existing.parent(), existing.components().next_back())
                    else {
                        return Err(e);
                    };
                    missing.push(name);
                    existing = parent;
                }
                Err(e) => return Err(e),
            }
        };
        for name in missing.into_iter().rev() {
            match mkdirat(&folder.fd, name, Mode::from_bits_truncate(0o777)) {
                Ok(()) => created.push(folder.path.join(name)),
                // Made meanwhile: used if it is a folder (the open below refuses a link).
                Err(nix::Error::EEXIST) => {}
                Err(e) => return Err(io(e)),
            }
            let fd = openat(
                &folder.fd,
                name,
                OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
                Mode::empty(),
            )
            .map_err(io)?;
            folder = Self {
                fd,
                path: folder.path.join(name),
            };
        }
        Ok(folder)
    }

    /// The folder's path when it was opened.
    #[cfg(test)]
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `bytes` as `name` in this folder: a new temporary file (`O_EXCL`, never through a link), flushed, then
    /// renamed over `name`, so a reader never sees half a file. `mode` sets the permission bits (not subject to the
    /// umask); `None` leaves `0666` less the umask.
    pub(super) fn write_atomic(&self, name: &OsStr, bytes: &[u8], mode: Option<u32>) -> io::Result<()> {
        let temp = temp_name();
        // With a mode to keep (a 0600 file's), the new bytes are the owner's alone until the final fchmod.
        let created = if mode.is_some() { 0o600 } else { 0o666 };
        let fd = openat(
            &self.fd,
            temp.as_os_str(),
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::from_bits_truncate(created),
        )
        .map_err(io)?;
        let written = (|| {
            let mut file = std::fs::File::from(fd);
            file.write_all(bytes)?;
            if let Some(mode) = mode {
                fchmod(&file, Mode::from_bits_truncate(mode)).map_err(io)?;
            }
            file.sync_all()?;
            renameat(&self.fd, temp.as_os_str(), &self.fd, name).map_err(io)
        })();
        if written.is_err() {
            let _ = unlinkat(&self.fd, temp.as_os_str(), UnlinkatFlags::NoRemoveDir);
        }
        written
    }

    /// Removes the file or link `name` of this folder (a link goes, not its target).
    pub(super) fn remove(&self, name: &OsStr) -> io::Result<()> {
        unlinkat(&self.fd, name, UnlinkatFlags::NoRemoveDir).map_err(io)
    }

    /// Makes `name` a link to `target` in this folder.
    pub(super) fn symlink(&self, target: &Path, name: &OsStr) -> io::Result<()> {
        nix::unistd::symlinkat(target, &self.fd, name).map_err(io)
    }
}

/// `.efr-patch-<random>`: the name of a temporary file, never there before (`O_EXCL` makes sure).
fn temp_name() -> OsString {
    let mut bytes = [0u8; 8];
    rand::rng().fill_bytes(&mut bytes);
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    OsString::from(format!(".efr-patch-{hex}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_link_on_the_way_is_refused_and_a_folder_once_open_stays_the_same_folder() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let (inside, outside) = (base.join("p/d"), base.join("outside"));
        std::fs::create_dir_all(&inside).unwrap();
        std::fs::create_dir_all(&outside).unwrap();

        let folder = Folder::open(&inside).unwrap();
        // The folder is swapped for a link to outside after it was opened: the write stays in the real folder.
        std::fs::rename(&inside, base.join("p/moved")).unwrap();
        symlink(&outside, &inside).unwrap();
        folder.write_atomic(OsStr::new("x.txt"), b"safe", None).unwrap();
        assert_eq!(std::fs::read(base.join("p/moved/x.txt")).unwrap(), b"safe");
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);

        // Opening through the link now fails, and so does creating below it.
        let error = Folder::open(&inside).unwrap_err();
        assert!(
            [nix::Error::ENOTDIR as i32, nix::Error::ELOOP as i32].contains(&error.raw_os_error().unwrap()),
            "{error}"
        );
        let mut created = Vec::new();
        assert!(Folder::open_creating(&inside.join("new/deeper"), &mut created).is_err());
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    }

    #[test]
    fn missing_folders_are_made_one_by_one_and_a_final_link_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let mut created = Vec::new();
        let folder = Folder::open_creating(&base.join("a/b"), &mut created).unwrap();
        assert_eq!(created, vec![base.join("a"), base.join("a/b")]);
        assert_eq!(folder.path(), base.join("a/b"));
        std::fs::write(base.join("target.txt"), "keep").unwrap();
        symlink(base.join("target.txt"), base.join("a/b/link")).unwrap();
        folder.write_atomic(OsStr::new("link"), b"new", Some(0o600)).unwrap();
        assert_eq!(std::fs::read(base.join("target.txt")).unwrap(), b"keep");
        assert!(!std::fs::symlink_metadata(base.join("a/b/link")).unwrap().is_symlink());
        folder.remove(OsStr::new("link")).unwrap();
        let left: Vec<_> = std::fs::read_dir(base.join("a/b")).unwrap().flatten().collect();
        assert!(left.is_empty(), "no temporary file is left: {left:?}");
    }
}
