//! Writing a plan so that every file changes or none does.
//!
//! First every touched path is read again and must be as the plan found it. Then writes, in the order the patch
//! first named their paths, then removals (so a move writes its new path before it removes the old one). A write
//! goes to a temporary file in the target's folder (created with any missing parents), is flushed with `fsync` and
//! renamed over the target, so a reader never sees half a file; every write and removal acts inside a folder opened
//! with no link on its path (see `folder.rs`), so a link swapped in meanwhile cannot redirect it; an existing file keeps its permission bits, a new one
//! gets `0666` less the umask. When a step fails, the steps already done are undone in reverse order from the
//! originals kept in memory: written files get their old bytes back (or go, if they were new), removed files come
//! back, and folders the commit created are removed again.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::disk::{Disk, State};
use super::error::ApplyError;
use super::folder::Folder;
use efr_policy::paths::resolve;

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

/// A step done, with what its undo needs: the folder it acted in (still open) and the name.
#[derive(Debug)]
enum Done<'s> {
    Wrote(&'s Step, Folder, OsString),
    Removed(&'s Step, Folder, OsString),
    /// Folders created for a write, outermost first.
    Folders(Vec<PathBuf>),
}

/// A failed step: what was being done, where, and why.
struct Failure {
    op: &'static str,
    path: PathBuf,
    source: io::Error,
}

/// Writes `steps` (see the module doc). With `allowed`, each place written or removed, resolved through its links
/// when the step runs, must be one of these paths (those the caller judged): a link that changed meanwhile fails the
/// step and undoes the commit, instead of writing where nobody looked.
pub(super) fn commit(steps: &[Step], allowed: Option<&[PathBuf]>) -> Result<(), ApplyError> {
    for step in steps {
        if Disk::load(&step.path)? != step.original {
            return Err(ApplyError::Changed {
                path: step.path.clone(),
            });
        }
    }
    let mut done: Vec<Done<'_>> = Vec::new();
    match run(steps, allowed, &mut done) {
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

/// The folder (resolved through its links now) and the name that `path` stands for.
fn place(path: &Path) -> io::Result<(PathBuf, OsString)> {
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => Ok((resolve(parent)?, name.to_owned())),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} names no file", path.display()),
        )),
    }
}

/// Checks `folder/name` against `allowed`.
fn check(folder: &Path, name: &OsStr, allowed: Option<&[PathBuf]>) -> io::Result<()> {
    match allowed {
        Some(allowed) if !allowed.contains(&folder.join(name)) => Err(io::Error::other(format!(
            "a link on the way now leads to {}, not where the patch was checked",
            folder.join(name).display()
        ))),
        _ => Ok(()),
    }
}

fn run<'s>(steps: &'s [Step], allowed: Option<&[PathBuf]>, done: &mut Vec<Done<'s>>) -> Result<(), Failure> {
    for step in steps {
        let State::File { bytes, mode } = &step.state else {
            continue;
        };
        let fail = |op| {
            let path = step.path.clone();
            move |source| Failure { op, path, source }
        };
        // A folder on the way that is a file (`NotADirectory`) fails here: its folder cannot be made.
        let (folder, name) = place(step.real()).map_err(fail("create the folder of"))?;
        check(&folder, &name, allowed).map_err(fail("write"))?;
        let mut created = Vec::new();
        let opened = Folder::open_creating(&folder, &mut created);
        if !created.is_empty() {
            done.push(Done::Folders(created));
        }
        let folder = opened.map_err(fail("create the folder of"))?;
        folder.write_atomic(&name, bytes, *mode).map_err(fail("write"))?;
        done.push(Done::Wrote(step, folder, name));
    }
    for step in steps {
        if step.state != State::Missing {
            continue;
        }
        let fail = |op| {
            let path = step.path.clone();
            move |source| Failure { op, path, source }
        };
        // The path itself: removing a link removes the link, not its target.
        let (folder, name) = place(&step.path).map_err(fail("remove"))?;
        check(&folder, &name, allowed).map_err(fail("remove"))?;
        let folder = Folder::open(&folder).map_err(fail("remove"))?;
        folder.remove(&name).map_err(fail("remove"))?;
        done.push(Done::Removed(step, folder, name));
    }
    Ok(())
}

/// Undoes `done` in reverse order, in the folders the steps acted in; returns the paths that could not be restored.
fn undo(done: Vec<Done<'_>>) -> Vec<PathBuf> {
    let mut unrestored = Vec::new();
    for step in done.into_iter().rev() {
        let restored = match step {
            Done::Wrote(step, folder, name) => match &step.original {
                Disk::File { bytes, mode, .. } => folder
                    .write_atomic(&name, bytes, Some(*mode))
                    .map_err(|_| step.path.clone()),
                Disk::Missing | Disk::Other => match folder.remove(&name) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => Err(step.path.clone()),
                    _ => Ok(()),
                },
            },
            Done::Removed(step, folder, name) => match &step.original {
                Disk::File { link: Some(link), .. } => folder.symlink(link, &name).map_err(|_| step.path.clone()),
                Disk::File { bytes, mode, .. } => folder
                    .write_atomic(&name, bytes, Some(*mode))
                    .map_err(|_| step.path.clone()),
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

#[cfg(test)]
#[path = "commit_tests.rs"]
mod tests;
