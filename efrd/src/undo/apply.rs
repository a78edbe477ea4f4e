//! [`apply`]: writes a [`Plan`], path by path, each write atomic, each path journaled when done.

use std::fs;
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use super::journal::Journal;
use super::plan::{Action, Entry, Plan, Reason};
use super::trash::Trash;
use efr_snapshot::{EntryKind, FileEntry, blob_path};

/// What [`apply`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Applied {
    /// The plan's entries; a write that failed has reason `failed`, one after it `not_done`.
    pub entries: Vec<Entry>,
    /// A write failed: the undo stopped there.
    pub stopped: bool,
    /// Paths written from the target state.
    pub restored: u64,
    /// Paths moved to the trash.
    pub trashed: u64,
    /// Paths removed.
    pub deleted: u64,
}

/// Writes `plan` to its root; moves conflicting files into `trash`; records each path done in `journal`. Stops at
/// the first write that fails (a full disk, a folder where a file goes): what follows is `not_done`.
pub fn apply(plan: &Plan, trash: &Trash, journal: &mut Journal) -> Applied {
    remove_stale_temporaries(plan);
    let mut applied = Applied::default();
    for entry in &plan.entries {
        let mut entry = entry.clone();
        if applied.stopped {
            if matches!(entry.action, Action::Restore | Action::Delete | Action::Trash) {
                entry.reason = Some(Reason::NotDone);
            }
            applied.entries.push(entry);
            continue;
        }
        let path = plan.root.join(&entry.path);
        let written = match entry.action {
            Action::Restore => entry
                .target
                .as_ref()
                .map_or(Ok(()), |target| restore(&plan.blobs, target, &path)),
            Action::Delete => remove(&plan.root, &path),
            Action::Trash => trash
                .put(&plan.root, &entry.path)
                .and_then(|_| prune(&plan.root, &path)),
            Action::Skip | Action::NotCovered => {
                applied.entries.push(entry);
                continue;
            }
        };
        match written.and_then(|()| journal.done(&entry.path, entry.action)) {
            Ok(()) => match entry.action {
                Action::Restore => applied.restored += 1,
                Action::Delete => applied.deleted += 1,
                Action::Trash => applied.trashed += 1,
                Action::Skip | Action::NotCovered => {}
            },
            Err(error) => {
                tracing::warn!(%error, path = %entry.path, "an undo write failed; the undo stops here");
                entry.reason = Some(Reason::Failed);
                applied.stopped = true;
            }
        }
        applied.entries.push(entry);
    }
    applied
}

/// Writes `target` (bytes and mode, or a symlink) at `path` through a temporary file renamed over it.
fn restore(blobs: &Path, target: &FileEntry, path: &Path) -> std::io::Result<()> {
    let hash = target
        .sha256
        .as_deref()
        .ok_or_else(|| std::io::Error::other("the snapshot has no content for this path"))?;
    let parent = path
        .parent()
        .ok_or_else(|| std::io::Error::other("a path without a folder"))?;
    fs::create_dir_all(parent)?;
    if fs::symlink_metadata(path).is_ok_and(|meta| meta.is_dir()) {
        return Err(std::io::Error::other(format!("{} is a folder now", path.display())));
    }
    let bytes = fs::read(blob_path(blobs, hash))?;
    match target.kind {
        EntryKind::Symlink => {
            let temporary = parent.join(format!("{TEMPORARY_PREFIX}{}", std::process::id()));
            let _ = fs::remove_file(&temporary);
            symlink(std::ffi::OsStr::from_bytes(&bytes), &temporary)?;
            fs::rename(&temporary, path)
        }
        EntryKind::File => {
            let mut file = tempfile::Builder::new().prefix(TEMPORARY_PREFIX).tempfile_in(parent)?;
            file.write_all(&bytes)?;
            file.as_file()
                .set_permissions(fs::Permissions::from_mode(target.mode))?;
            file.as_file().sync_all()?;
            file.persist(path).map(drop).map_err(|error| error.error)
        }
    }
}

/// The name prefix of the temporary files an undo writes next to the files it restores.
const TEMPORARY_PREFIX: &str = ".efr-undo-";

/// Removes the temporary files an undo killed midway left in the folders `plan` writes to (they are efr's own: a
/// restore writes a temporary file, then renames it over its path).
fn remove_stale_temporaries(plan: &Plan) {
    let folders: std::collections::BTreeSet<PathBuf> = plan
        .entries
        .iter()
        .filter(|entry| matches!(entry.action, Action::Restore))
        .filter_map(|entry| plan.root.join(&entry.path).parent().map(Path::to_path_buf))
        .collect();
    for folder in folders {
        let Ok(entries) = fs::read_dir(&folder) else { continue };
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(TEMPORARY_PREFIX) {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
}

/// Removes the file at `path` (gone already is fine), then the folders it leaves empty up to `root`.
fn remove(root: &Path, path: &Path) -> std::io::Result<()> {
    match fs::remove_file(path) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(error),
    }
    prune(root, path)
}

/// Removes the empty folders above `path`, up to (not including) `root`.
fn prune(root: &Path, path: &Path) -> std::io::Result<()> {
    let mut folder = path.parent();
    while let Some(current) = folder {
        if current == root || !current.starts_with(root) || fs::remove_dir(current).is_err() {
            break;
        }
        folder = current.parent();
    }
    Ok(())
}
