//! efr's trash: where undo with force puts a file that changed since the turn, never away (`docs/undo.md`, "The
//! trash").
//!
//! # Layout
//!
//! ```text
//! <dir>/<folder>/root            the absolute root the files came from (its bytes)
//! <dir>/<folder>/files/<path>    each file, at its path below the root
//! ```
//!
//! The folder is the undo's id for its first root (the project) and `<undo_id>.<n>` for root `n` (`$SCRATCH`, ...),
//! so an undo that trashed files of two roots puts each back where it was. An entry's id is `<folder>/<path>`.
//! When the undo trashed its files is the mtime of `root`. [`expire`] removes an undo's folders past
//! [`TrashBounds::max_age`], then the oldest until the trash holds at most [`TrashBounds::max_bytes`]; efrd runs it
//! when an undo writes the trash and at its start. [`list`] and [`restore`] give the files back (trash.list,
//! trash.restore); a restore never overwrites a file.

use std::fs;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;

pub use efr_snapshot::TrashBounds;

/// One file in the trash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trashed {
    /// Its id: `<folder>/<path>`.
    pub id: String,
    /// The undo that put it there.
    pub undo_id: String,
    /// The root it came from.
    pub root: PathBuf,
    /// The path below the root, `/`-separated.
    pub path: String,
    /// Its size in bytes (`lstat`).
    pub size: u64,
    /// When the undo put it there.
    pub trashed_at: SystemTime,
}

impl Trashed {
    /// Where it was: the root joined with the path.
    #[must_use]
    pub fn original(&self) -> PathBuf {
        self.root.join(&self.path)
    }

    fn stored(&self, dir: &Path) -> PathBuf {
        let (folder, _) = self.id.split_once('/').unwrap_or((&self.id, ""));
        dir.join(folder).join("files").join(&self.path)
    }
}

/// The trash of one undo's root: files under `<dir>/<folder>/files/`.
#[derive(Debug, Clone)]
pub struct Trash {
    dir: PathBuf,
    folder: String,
}

impl Trash {
    /// The trash folder `dir` (created on the first put), for the files of root number `root_index` (0: the
    /// project) of undo `undo_id`.
    #[must_use]
    pub fn new(dir: &Path, undo_id: &str, root_index: usize) -> Self {
        let folder = if root_index == 0 {
            undo_id.to_owned()
        } else {
            format!("{undo_id}.{root_index}")
        };
        Self {
            dir: dir.to_path_buf(),
            folder,
        }
    }

    /// The folder of this undo's root in the trash.
    #[must_use]
    pub fn folder(&self) -> PathBuf {
        self.dir.join(&self.folder)
    }

    /// Moves `root/rel` into the trash (a rename; a copy then a remove across file systems).
    ///
    /// # Errors
    /// The file cannot be moved: it stays where it is.
    pub fn put(&self, root: &Path, rel: &str) -> std::io::Result<PathBuf> {
        let folder = self.folder();
        fs::create_dir_all(folder.join("files"))?;
        fs::write(folder.join("root"), root.as_os_str().as_bytes())?;
        let to = folder.join("files").join(rel);
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent)?;
        }
        let from = root.join(rel);
        if fs::rename(&from, &to).is_err() {
            copy_new(&from, &to)?;
            fs::remove_file(&from)?;
        }
        Ok(to)
    }
}

/// Every file in the trash `dir`: the newest undo first, each undo's files in path order.
#[must_use]
pub fn list(dir: &Path) -> Vec<Trashed> {
    let mut found = Vec::new();
    for (folder, root, trashed_at) in folders(dir) {
        let files = dir.join(&folder).join("files");
        let mut stack = vec![files.clone()];
        while let Some(current) = stack.pop() {
            for entry in fs::read_dir(&current).into_iter().flatten().filter_map(Result::ok) {
                let path = entry.path();
                let Ok(meta) = fs::symlink_metadata(&path) else {
                    continue;
                };
                if meta.is_dir() {
                    stack.push(path);
                    continue;
                }
                let Some(rel) = path.strip_prefix(&files).ok().and_then(Path::to_str) else {
                    continue;
                };
                found.push(Trashed {
                    id: format!("{folder}/{rel}"),
                    undo_id: undo_of(&folder).to_owned(),
                    root: root.clone(),
                    path: rel.to_owned(),
                    size: meta.len(),
                    trashed_at,
                });
            }
        }
    }
    found.sort_by(|a, b| b.trashed_at.cmp(&a.trashed_at).then_with(|| a.id.cmp(&b.id)));
    found
}

/// The entry `id` (`<folder>/<path>`) of the trash `dir`; `None` when there is none (or the id names no file of
/// the trash: an absolute path, a `..`).
#[must_use]
pub fn find(dir: &Path, id: &str) -> Option<Trashed> {
    let (folder, rel) = id.split_once('/')?;
    let plain = |path: &str| {
        !path.is_empty()
            && Path::new(path)
                .components()
                .all(|part| matches!(part, Component::Normal(_)))
    };
    if !plain(folder) || folder.contains('/') || !plain(rel) {
        return None;
    }
    let (_, root, trashed_at) = folders(dir).into_iter().find(|(name, _, _)| name == folder)?;
    let meta = fs::symlink_metadata(dir.join(folder).join("files").join(rel)).ok()?;
    (!meta.is_dir()).then(|| Trashed {
        id: id.to_owned(),
        undo_id: undo_of(folder).to_owned(),
        root,
        path: rel.to_owned(),
        size: meta.len(),
        trashed_at,
    })
}

/// Puts a trashed file back where it was, or at `to` (absolute); never over a file: a path that exists is refused
/// with `AlreadyExists`, and the file stays in the trash. Returns where it is now.
///
/// # Errors
/// `AlreadyExists` when the path is taken, `InvalidInput` for a relative `to`, another error when the file cannot be
/// moved (it stays in the trash).
pub fn restore(dir: &Path, item: &Trashed, to: Option<&Path>) -> std::io::Result<PathBuf> {
    let target = match to {
        Some(to) if !to.is_absolute() => {
            return Err(std::io::Error::new(
                ErrorKind::InvalidInput,
                format!("{} is not an absolute path", to.display()),
            ));
        }
        Some(to) => to.to_path_buf(),
        None => item.original(),
    };
    if fs::symlink_metadata(&target).is_ok() {
        return Err(std::io::Error::new(
            ErrorKind::AlreadyExists,
            format!(
                "{} exists: move it away first, or restore to another path",
                target.display()
            ),
        ));
    }
    if let Some(parent) = target.parent() {
        fs::create_dir_all(parent)?;
    }
    let from = item.stored(dir);
    // A hard link is a move that cannot overwrite (link(2) fails on an existing path); across file systems, a copy
    // that creates the path new.
    match fs::hard_link(&from, &target) {
        Ok(()) => {}
        Err(error) if error.kind() == ErrorKind::AlreadyExists => return Err(error),
        Err(_) => copy_new(&from, &target)?,
    }
    fs::remove_file(&from)?;
    remove_empty_folders(dir, &from);
    Ok(target)
}

/// Removes the undos' folders older than `bounds.max_age`, then the oldest until the trash holds at most
/// `bounds.max_bytes`, never the folders of undo `keep` (the one that just wrote: the user's files it moved stay
/// at least until the next undo); returns how many folders it removed.
pub fn expire(dir: &Path, bounds: TrashBounds, keep: Option<&str>) -> usize {
    let mut undos: Vec<(SystemTime, u64, PathBuf)> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
        .map(|entry| {
            let path = entry.path();
            (trashed_at(&path), size_of(&path), path)
        })
        .collect();
    undos.sort();
    let now = SystemTime::now();
    let mut total: u64 = undos.iter().map(|(_, size, _)| size).sum();
    let mut removed = 0;
    for (at, size, path) in undos {
        let kept = keep.is_some_and(|keep| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| undo_of(name) == keep)
        });
        if kept {
            continue;
        }
        let old = now.duration_since(at).unwrap_or_default() > bounds.max_age;
        if (old || total > bounds.max_bytes) && fs::remove_dir_all(&path).is_ok() {
            total -= size;
            removed += 1;
        }
    }
    removed
}

/// The bytes the trash `dir` holds.
#[must_use]
pub fn bytes(dir: &Path) -> u64 {
    size_of(dir)
}

/// The undos' folders of the trash: (name, root, when trashed).
fn folders(dir: &Path) -> Vec<(String, PathBuf, SystemTime)> {
    fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let root = fs::read(entry.path().join("root")).ok()?;
            let root = PathBuf::from(std::ffi::OsStr::from_bytes(&root));
            Some((name, root, trashed_at(&entry.path())))
        })
        .collect()
}

/// The undo id of a trash folder (`<undo_id>` or `<undo_id>.<n>`).
fn undo_of(folder: &str) -> &str {
    folder.split('.').next().unwrap_or(folder)
}

/// When an undo's folder got its files: the mtime of its `root` (else of the folder).
fn trashed_at(folder: &Path) -> SystemTime {
    fs::symlink_metadata(folder.join("root"))
        .or_else(|_| fs::symlink_metadata(folder))
        .and_then(|meta| meta.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// Copies a file or a symlink from `from` to `to`, which must not exist (its mode bits kept).
fn copy_new(from: &Path, to: &Path) -> std::io::Result<()> {
    let meta = fs::symlink_metadata(from)?;
    if meta.file_type().is_symlink() {
        return std::os::unix::fs::symlink(fs::read_link(from)?, to);
    }
    let mut source = fs::File::open(from)?;
    let mut target = fs::OpenOptions::new().write(true).create_new(true).open(to)?;
    std::io::copy(&mut source, &mut target)?;
    target.set_permissions(meta.permissions())?;
    target.sync_all()
}

/// Removes the folders left empty below an undo's `files` after `removed` went, and the undo's folder when it has
/// no file left.
fn remove_empty_folders(dir: &Path, removed: &Path) {
    let mut current = removed.parent();
    while let Some(folder) = current {
        if folder == dir || !folder.starts_with(dir) {
            return;
        }
        if folder.file_name().is_some_and(|name| name == "files") {
            if fs::remove_dir(folder).is_ok()
                && let Some(undo) = folder.parent()
            {
                let _ = fs::remove_file(undo.join("root"));
                let _ = fs::remove_dir(undo);
            }
            return;
        }
        if fs::remove_dir(folder).is_err() {
            return;
        }
        current = folder.parent();
    }
}

fn size_of(path: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![path.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in fs::read_dir(&folder).into_iter().flatten().filter_map(Result::ok) {
            match fs::symlink_metadata(entry.path()) {
                Ok(meta) if meta.is_dir() => stack.push(entry.path()),
                Ok(meta) => total += meta.len(),
                Err(_) => {}
            }
        }
    }
    total
}

#[cfg(test)]
#[path = "trash_tests.rs"]
mod tests;
