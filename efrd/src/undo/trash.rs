//! efr's trash: where undo with force puts a file that changed since the turn (`<dir>/<undo_id>/<path>`), never
//! away. Bounded in bytes and in age ([`Trash::expire`]); [`Trash::list`] and [`Trash::restore`] give it back.

use std::fs;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

/// One file in the trash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trashed {
    /// The undo that put it there.
    pub undo_id: String,
    /// Where it was: the root and the path below it.
    pub root: PathBuf,
    /// The path below the root, `/`-separated.
    pub path: String,
}

/// The trash of one undo at a time: files under `<dir>/<undo_id>/files/`, each root in `<dir>/<undo_id>/root`.
#[derive(Debug, Clone)]
pub struct Trash {
    dir: PathBuf,
    undo_id: String,
}

impl Trash {
    /// The trash folder `dir` (created on the first put), for the files of undo `undo_id`.
    #[must_use]
    pub fn new(dir: &Path, undo_id: &str) -> Self {
        Self {
            dir: dir.to_path_buf(),
            undo_id: undo_id.to_owned(),
        }
    }

    /// The folder of this undo's trash.
    #[must_use]
    pub fn folder(&self) -> PathBuf {
        self.dir.join(&self.undo_id)
    }

    /// Moves `root/rel` into the trash (a rename; a copy then a remove across file systems).
    ///
    /// # Errors
    /// The file cannot be moved: it stays where it is.
    pub fn put(&self, root: &Path, rel: &str) -> std::io::Result<PathBuf> {
        let folder = self.folder();
        fs::create_dir_all(folder.join("files"))?;
        fs::write(folder.join("root"), root.as_os_str().as_encoded_bytes())?;
        let to = folder.join("files").join(rel);
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent)?;
        }
        let from = root.join(rel);
        if fs::rename(&from, &to).is_err() {
            let meta = fs::symlink_metadata(&from)?;
            if meta.file_type().is_symlink() {
                std::os::unix::fs::symlink(fs::read_link(&from)?, &to)?;
            } else {
                fs::copy(&from, &to)?;
            }
            fs::remove_file(&from)?;
        }
        Ok(to)
    }

    /// Every file in the trash `dir`, by undo and path.
    #[must_use]
    pub fn list(dir: &Path) -> Vec<Trashed> {
        let mut found = Vec::new();
        let Ok(undos) = fs::read_dir(dir) else {
            return found;
        };
        for undo in undos.filter_map(Result::ok) {
            let Ok(undo_id) = undo.file_name().into_string() else {
                continue;
            };
            let Ok(root) = fs::read(undo.path().join("root")) else {
                continue;
            };
            let root = PathBuf::from(std::ffi::OsStr::from_bytes(&root));
            let files = undo.path().join("files");
            let mut stack = vec![files.clone()];
            while let Some(folder) = stack.pop() {
                for entry in fs::read_dir(&folder).into_iter().flatten().filter_map(Result::ok) {
                    let path = entry.path();
                    if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                        stack.push(path);
                    } else if let Ok(rel) = path.strip_prefix(&files) {
                        found.push(Trashed {
                            undo_id: undo_id.clone(),
                            root: root.clone(),
                            path: rel.to_string_lossy().into_owned(),
                        });
                    }
                }
            }
        }
        found.sort_by(|a, b| (&a.undo_id, &a.path).cmp(&(&b.undo_id, &b.path)));
        found
    }

    /// Puts a trashed file back where it was; refuses when a file is there now (nothing is overwritten).
    ///
    /// # Errors
    /// `AlreadyExists` when the path is taken; another error when the file cannot be moved.
    pub fn restore(dir: &Path, item: &Trashed) -> std::io::Result<PathBuf> {
        let from = dir.join(&item.undo_id).join("files").join(&item.path);
        let to = item.root.join(&item.path);
        if fs::symlink_metadata(&to).is_ok() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                format!("{} exists: move it away first", to.display()),
            ));
        }
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::rename(&from, &to).or_else(|_| fs::copy(&from, &to).and_then(|_| fs::remove_file(&from)))?;
        Ok(to)
    }

    /// Removes the undos' trash older than `max_age`, then the oldest until the trash holds at most `max_bytes`;
    /// returns how many undos' trash it removed.
    pub fn expire(dir: &Path, max_age: Duration, max_bytes: u64) -> usize {
        let mut undos: Vec<(SystemTime, u64, PathBuf)> = fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let modified = entry.metadata().ok()?.modified().ok()?;
                Some((modified, size_of(&entry.path()), entry.path()))
            })
            .collect();
        undos.sort();
        let now = SystemTime::now();
        let mut total: u64 = undos.iter().map(|(_, size, _)| size).sum();
        let mut removed = 0;
        for (modified, size, path) in undos {
            let old = now.duration_since(modified).unwrap_or_default() > max_age;
            if (old || total > max_bytes) && fs::remove_dir_all(&path).is_ok() {
                total -= size;
                removed += 1;
            }
        }
        removed
    }
}

fn size_of(path: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![path.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in fs::read_dir(&folder).into_iter().flatten().filter_map(Result::ok) {
            match entry.metadata() {
                Ok(meta) if meta.is_dir() => stack.push(entry.path()),
                Ok(meta) => total += meta.len(),
                Err(_) => {}
            }
        }
    }
    total
}
