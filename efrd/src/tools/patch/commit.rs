//! Writing a plan so that every file changes or none does.
//!
//! First every touched path is read again and must be as the plan found it. Then writes, in the order the patch
//! first named their paths, then removals (so a move writes its new path before it removes the old one). A write
//! goes to a temporary file in the target's folder (created with any missing parents), is flushed with `fsync` and
//! renamed over the target, so a reader never sees half a file; an existing file keeps its permission bits, a new one
//! gets `0666` less the umask. When a step fails, the steps already done are undone in reverse order from the
//! originals kept in memory: written files get their old bytes back (or go, if they were new), removed files come
//! back, and folders the commit created are removed again.

use std::fs;
use std::io::{self, Write as _};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::error::ApplyError;
use super::plan::{Disk, State};

/// One path to change: where, what it was, what it becomes (`State::File` or `State::Missing`).
#[derive(Debug)]
pub(super) struct Step {
    pub(super) path: PathBuf,
    pub(super) original: Disk,
    pub(super) state: State,
}

impl Step {
    /// The place on disk that the step changes: [`Step::real`] for a write, the path itself (a link is removed, not
    /// its target) for a removal.
    pub(super) fn changes(&self) -> &Path {
        match self.state {
            State::Missing => &self.path,
            State::File { .. } | State::Other => self.real(),
        }
    }

    /// Where the bytes go: the link's target for a symlink, else the path.
    pub(super) fn real(&self) -> &Path {
        match &self.original {
            Disk::File { real, .. } => real,
            Disk::Missing | Disk::Other => &self.path,
        }
    }
}

/// A step done, with what its undo needs.
#[derive(Debug)]
enum Done<'s> {
    Wrote(&'s Step),
    Removed(&'s Step),
    /// Folders created for a write, outermost first.
    Folders(Vec<PathBuf>),
}

/// A failed step: what was being done, where, and why.
struct Failure {
    op: &'static str,
    path: PathBuf,
    source: io::Error,
}

pub(super) fn commit(steps: &[Step]) -> Result<(), ApplyError> {
    for step in steps {
        if Disk::load(&step.path)? != step.original {
            return Err(ApplyError::Changed {
                path: step.path.clone(),
            });
        }
    }
    let mut done: Vec<Done<'_>> = Vec::new();
    match run(steps, &mut done) {
        Ok(()) => Ok(()),
        Err(Failure { op, path, source }) => {
            let unrestored = undo(done);
            if unrestored.is_empty() {
                Err(ApplyError::Io { op, path, source })
            } else {
                Err(ApplyError::RollbackIncomplete {
                    op,
                    path,
                    source,
                    unrestored,
                })
            }
        }
    }
}

fn run<'s>(steps: &'s [Step], done: &mut Vec<Done<'s>>) -> Result<(), Failure> {
    for step in steps {
        let State::File { bytes, mode } = &step.state else {
            continue;
        };
        let real = step.real();
        if let Some(parent) = real.parent() {
            let missing = missing_folders(parent);
            let created = fs::create_dir_all(parent);
            if !missing.is_empty() {
                done.push(Done::Folders(missing));
            }
            created.map_err(|source| Failure {
                op: "create the folder of",
                path: step.path.clone(),
                source,
            })?;
        }
        write_atomic(real, bytes, *mode).map_err(|source| Failure {
            op: "write",
            path: step.path.clone(),
            source,
        })?;
        done.push(Done::Wrote(step));
    }
    for step in steps {
        if step.state != State::Missing {
            continue;
        }
        // `remove_file` on a symlink removes the link, not its target.
        fs::remove_file(&step.path).map_err(|source| Failure {
            op: "remove",
            path: step.path.clone(),
            source,
        })?;
        done.push(Done::Removed(step));
    }
    Ok(())
}

/// The folders from `folder` up that do not exist, outermost first.
fn missing_folders(folder: &Path) -> Vec<PathBuf> {
    let mut missing: Vec<PathBuf> = folder
        .ancestors()
        .take_while(|ancestor| !ancestor.as_os_str().is_empty() && fs::symlink_metadata(ancestor).is_err())
        .map(Path::to_path_buf)
        .collect();
    missing.reverse();
    missing
}

/// Writes `bytes` to `path` through a temporary file in its folder and a rename. `mode` sets the permission bits
/// (not subject to the umask); `None` leaves a new file's `0666` less the umask.
fn write_atomic(path: &Path, bytes: &[u8], mode: Option<u32>) -> io::Result<()> {
    let folder = path.parent().unwrap_or_else(|| Path::new("/"));
    let mut temp = tempfile::Builder::new()
        .prefix(".efr-patch-")
        .permissions(fs::Permissions::from_mode(0o666))
        .tempfile_in(folder)?;
    temp.write_all(bytes)?;
    if let Some(mode) = mode {
        temp.as_file().set_permissions(fs::Permissions::from_mode(mode))?;
    }
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Undoes `done` in reverse order; returns the paths that could not be restored.
fn undo(done: Vec<Done<'_>>) -> Vec<PathBuf> {
    let mut unrestored = Vec::new();
    for step in done.into_iter().rev() {
        let restored = match step {
            Done::Wrote(step) => match &step.original {
                Disk::File { bytes, mode, real, .. } => {
                    write_atomic(real, bytes, Some(*mode)).map_err(|_| step.path.clone())
                }
                Disk::Missing | Disk::Other => remove_if_there(step.real()).map_err(|_| step.path.clone()),
            },
            Done::Removed(step) => match &step.original {
                Disk::File { link: Some(link), .. } => {
                    std::os::unix::fs::symlink(link, &step.path).map_err(|_| step.path.clone())
                }
                Disk::File { bytes, mode, .. } => {
                    write_atomic(&step.path, bytes, Some(*mode)).map_err(|_| step.path.clone())
                }
                Disk::Missing | Disk::Other => Ok(()),
            },
            Done::Folders(folders) => {
                // Innermost first; a folder that something else filled meanwhile stays, which loses nothing.
                for folder in folders.iter().rev() {
                    if let Err(e) = fs::remove_dir(folder)
                        && !matches!(
                            e.kind(),
                            io::ErrorKind::NotFound | io::ErrorKind::NotADirectory | io::ErrorKind::DirectoryNotEmpty
                        )
                    {
                        unrestored.push(folder.clone());
                    }
                }
                Ok(())
            }
        };
        if let Err(path) = restored {
            unrestored.push(path);
        }
    }
    unrestored
}

fn remove_if_there(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
#[path = "commit_tests.rs"]
mod tests;
