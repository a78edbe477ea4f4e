//! The copies of home files that a turn's approved exits wrote (a target with `backup_before_write`: a floor file),
//! and their undo.
//!
//! A turn snapshots its project and `$SCRATCH` only; a floor file (`~/.bashrc`, `~/.gitconfig`, a user unit) lies
//! outside them. Before the call that writes one runs, [`back_up`] copies the file (its real file, when the path is
//! a link) into `<snapshot store>/home/<turn_id>/<n>-pre`; when the call answered, [`after`] copies what it left
//! into `<n>-post` and keeps the entry only if the bytes changed. Each entry is `<n>.json` ([`Entry`]).
//!
//! Undo ([`plan`], [`apply`]) takes each file from the state the turn's last call left to the one before its first
//! (redo the other way): a file as the call left it is restored (or removed, when it did not
//! exist before); a file already as it was is `skip`; a file changed since is a conflict, which force moves to
//! efr's trash before the restore, as it does for the project's files.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use efr_protocol::ids::TurnId;
use serde::{Deserialize, Serialize};

use super::trash::Trash;

/// The folder of a turn's copies in the snapshot store `store_dir`.
#[must_use]
pub fn folder(store_dir: &Path, turn_id: TurnId) -> PathBuf {
    store_dir.join("home").join(turn_id.to_string())
}

/// One home file that a call of the turn wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The entry's number in the turn, from 0 (the order of the calls).
    pub index: usize,
    /// The file as the call named it.
    pub path: PathBuf,
    /// The real file, when `path` reaches it through a link.
    pub real: Option<PathBuf>,
    /// The copy before the call, absent when the file did not exist.
    pub pre: Option<PathBuf>,
    /// The copy after the call, absent when the call removed it (or the call has not answered yet).
    pub post: Option<PathBuf>,
    /// The file's permission bits before the call (0 when it did not exist).
    pub pre_mode: u32,
    /// Its permission bits after the call.
    pub post_mode: u32,
    /// The call has answered and the file changed.
    pub changed: bool,
}

impl Entry {
    /// The file that is written: the real file behind a link, else the path.
    #[must_use]
    pub fn target(&self) -> &Path {
        self.real.as_deref().unwrap_or(&self.path)
    }
}

/// Copies `path` (its real file, when it is a link) before a call writes it, and records the entry.
///
/// # Errors
/// The folder, the copy or the entry cannot be written: the call must not run (its write could not be undone).
pub fn back_up(store_dir: &Path, turn_id: TurnId, path: &Path) -> std::io::Result<Entry> {
    let folder = folder(store_dir, turn_id);
    fs::DirBuilder::new().recursive(true).mode(0o700).create(&folder)?;
    let is_link = fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink());
    let real = if is_link { Some(real_of(path)?) } else { None };
    let (index, mut file) = reserve(&folder)?;
    let target = real.as_deref().unwrap_or(path);
    let (pre, pre_mode) = match fs::metadata(target) {
        Ok(meta) => {
            let copy = folder.join(format!("{index}-pre"));
            fs::copy(target, &copy)?;
            (Some(copy), meta.permissions().mode() & 0o7777)
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => (None, 0),
        Err(error) => return Err(error),
    };
    let entry = Entry {
        index,
        path: path.to_path_buf(),
        real,
        pre,
        post: None,
        pre_mode,
        post_mode: 0,
        changed: false,
    };
    file.write_all(&serde_json::to_vec(&entry)?)?;
    file.sync_all()?;
    Ok(entry)
}

/// The real file behind the link `path`: the link resolved, also when its last target does not exist yet.
fn real_of(path: &Path) -> std::io::Result<PathBuf> {
    if let Ok(real) = fs::canonicalize(path) {
        return Ok(real);
    }
    let target = fs::read_link(path)?;
    let parent = path.parent().unwrap_or(Path::new("/"));
    Ok(parent.join(target))
}

/// The next free entry number of `folder`, its `<n>.json` created.
fn reserve(folder: &Path) -> std::io::Result<(usize, fs::File)> {
    for index in 0..10_000 {
        let opened = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(folder.join(format!("{index}.json")));
        match opened {
            Ok(file) => return Ok((index, file)),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(error) => return Err(error),
        }
    }
    Err(std::io::Error::other("a turn wrote over 10000 home files"))
}

/// After the call: copies what it left and returns the entry when the file changed; forgets it otherwise.
///
/// # Errors
/// The copy or the entry cannot be written: the change is reported, but undo does not cover it.
pub fn after(store_dir: &Path, turn_id: TurnId, mut entry: Entry) -> std::io::Result<Option<Entry>> {
    let folder = folder(store_dir, turn_id);
    let now = fs::read(entry.target()).ok();
    let before = entry.pre.as_deref().map(fs::read).transpose()?;
    let mode_now = mode_of(entry.target());
    if now == before && (now.is_none() || mode_now == entry.pre_mode) {
        forget(&folder, entry.index);
        return Ok(None);
    }
    if now.is_some() {
        let copy = folder.join(format!("{}-post", entry.index));
        fs::copy(entry.target(), &copy)?;
        entry.post = Some(copy);
    }
    entry.post_mode = mode_now;
    entry.changed = true;
    let json = folder.join(format!("{}.json", entry.index));
    let temporary = folder.join(format!("{}.json.new", entry.index));
    fs::write(&temporary, serde_json::to_vec(&entry)?)?;
    fs::rename(&temporary, &json)?;
    Ok(Some(entry))
}

fn mode_of(path: &Path) -> u32 {
    fs::metadata(path).map_or(0, |meta| meta.permissions().mode() & 0o7777)
}

fn forget(folder: &Path, index: usize) {
    for name in [format!("{index}.json"), format!("{index}-pre"), format!("{index}-post")] {
        let _ = fs::remove_file(folder.join(name));
    }
}

/// The changed entries of a turn, in the order of its calls.
#[must_use]
pub fn entries(store_dir: &Path, turn_id: TurnId) -> Vec<Entry> {
    let Ok(read) = fs::read_dir(folder(store_dir, turn_id)) else {
        return Vec::new();
    };
    let mut found: Vec<Entry> = read
        .flatten()
        .filter(|item| item.file_name().to_str().is_some_and(|name| name.ends_with(".json")))
        .filter_map(|item| serde_json::from_slice::<Entry>(&fs::read(item.path()).ok()?).ok())
        .filter(|entry| entry.changed)
        .collect();
    found.sort_by_key(|entry| entry.index);
    found
}

/// What undo does to one home file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Write the other state (restore, or remove when it is absent).
    Write,
    /// The file is as undo leaves it already.
    Skip,
    /// The file changed since the call: a conflict (force trashes it, then writes).
    Conflict,
}

/// The plan of a turn's home files: one entry per file (the first call's state before, the last call's after, so a
/// file that several calls edited goes back to how it was before the first), each with its step.
#[must_use]
pub fn plan(store_dir: &Path, turn_id: TurnId, redo: bool) -> Vec<(Entry, Step)> {
    let mut files: Vec<Entry> = Vec::new();
    for entry in entries(store_dir, turn_id) {
        match files.iter_mut().find(|file| file.target() == entry.target()) {
            Some(file) => {
                file.post = entry.post;
                file.post_mode = entry.post_mode;
            }
            None => files.push(entry),
        }
    }
    files
        .into_iter()
        .map(|file| {
            let now = fs::read(file.target()).ok();
            let (from, to) = sides(&file, redo);
            let step = if now == read_copy(to) {
                Step::Skip
            } else if now == read_copy(from) {
                Step::Write
            } else {
                Step::Conflict
            };
            (file, step)
        })
        .collect()
}

/// The copies an undo (redo) goes from and to.
fn sides(entry: &Entry, redo: bool) -> (Option<&Path>, Option<&Path>) {
    let (pre, post) = (entry.pre.as_deref(), entry.post.as_deref());
    if redo { (pre, post) } else { (post, pre) }
}

fn read_copy(copy: Option<&Path>) -> Option<Vec<u8>> {
    copy.and_then(|copy| fs::read(copy).ok())
}

/// Applies one step: the file written from its copy (atomically: a temporary file renamed into place, with the mode
/// of that state), or removed when that state had no file. A conflict is moved to `trash` first.
///
/// # Errors
/// The file cannot be written, moved or removed.
pub fn apply(entry: &Entry, step: Step, redo: bool, trash: &Trash) -> std::io::Result<()> {
    let target = entry.target();
    if step == Step::Skip {
        return Ok(());
    }
    let parent = target.parent().unwrap_or(Path::new("/"));
    if step == Step::Conflict && fs::symlink_metadata(target).is_ok() {
        let name = target.file_name().and_then(|n| n.to_str()).unwrap_or("file");
        trash.put(parent, name)?;
    }
    let (_, to) = sides(entry, redo);
    let mode = if redo { entry.post_mode } else { entry.pre_mode };
    match to {
        Some(copy) => {
            let temporary = parent.join(format!(
                ".{}.efr-undo",
                target.file_name().and_then(|n| n.to_str()).unwrap_or("file")
            ));
            fs::copy(copy, &temporary)?;
            fs::set_permissions(&temporary, fs::Permissions::from_mode(mode))?;
            fs::rename(&temporary, target)
        }
        None => match fs::remove_file(target) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(error),
            _ => Ok(()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn() -> TurnId {
        TurnId::new()
    }

    #[test]
    fn a_file_edited_twice_and_a_file_made_go_back_byte_for_byte_and_redo_brings_them_again() {
        let dir = tempfile::tempdir().unwrap();
        let (store, home) = (dir.path().join("store"), dir.path().join("home"));
        fs::create_dir_all(&home).unwrap();
        let rc = home.join(".bashrc");
        fs::write(&rc, b"# mine\n\xff").unwrap();
        fs::set_permissions(&rc, fs::Permissions::from_mode(0o640)).unwrap();
        let turn_id = turn();
        for line in ["alias a=b\n", "alias c=d\n"] {
            let entry = back_up(&store, turn_id, &rc).unwrap();
            fs::OpenOptions::new()
                .append(true)
                .open(&rc)
                .unwrap()
                .write_all(line.as_bytes())
                .unwrap();
            assert!(after(&store, turn_id, entry).unwrap().is_some());
        }
        let made = home.join(".profile");
        let entry = back_up(&store, turn_id, &made).unwrap();
        assert_eq!(entry.pre, None);
        fs::write(&made, "new\n").unwrap();
        after(&store, turn_id, entry).unwrap().unwrap();
        // A call that changed nothing leaves no entry.
        let entry = back_up(&store, turn_id, &rc).unwrap();
        assert_eq!(after(&store, turn_id, entry).unwrap(), None);
        assert_eq!(entries(&store, turn_id).len(), 3);

        let trash = Trash::new(&dir.path().join("trash"), "undo-1", 1000);
        let steps = plan(&store, turn_id, false);
        assert!(steps.iter().all(|(_, step)| *step == Step::Write), "{steps:?}");
        for (entry, step) in &steps {
            apply(entry, *step, false, &trash).unwrap();
        }
        assert_eq!(fs::read(&rc).unwrap(), b"# mine\n\xff");
        assert_eq!(mode_of(&rc), 0o640);
        assert!(!made.exists());
        assert!(plan(&store, turn_id, false).iter().all(|(_, step)| *step == Step::Skip));

        for (entry, step) in plan(&store, turn_id, true) {
            apply(&entry, step, true, &trash).unwrap();
        }
        assert_eq!(fs::read(&rc).unwrap(), b"# mine\n\xffalias a=b\nalias c=d\n");
        assert_eq!(fs::read_to_string(&made).unwrap(), "new\n");
    }

    #[test]
    fn a_link_is_followed_kept_and_a_file_changed_since_is_a_conflict() {
        let dir = tempfile::tempdir().unwrap();
        let (store, home) = (dir.path().join("store"), dir.path().join("home"));
        fs::create_dir_all(home.join("dotfiles")).unwrap();
        fs::write(home.join("dotfiles/bashrc"), "# mine\n").unwrap();
        std::os::unix::fs::symlink("dotfiles/bashrc", home.join(".bashrc")).unwrap();
        let turn_id = turn();
        let entry = back_up(&store, turn_id, &home.join(".bashrc")).unwrap();
        assert_eq!(entry.real, Some(home.join("dotfiles/bashrc")));
        fs::write(home.join(".bashrc"), "evil\n").unwrap();
        after(&store, turn_id, entry).unwrap().unwrap();
        fs::write(home.join("dotfiles/bashrc"), "the user's own edit\n").unwrap();
        let steps = plan(&store, turn_id, false);
        assert_eq!(steps.len(), 1);
        assert_eq!(steps[0].1, Step::Conflict);
        let trash = Trash::new(&dir.path().join("trash"), "undo-1", 1000);
        apply(&steps[0].0, Step::Conflict, false, &trash).unwrap();
        assert_eq!(fs::read_to_string(home.join(".bashrc")).unwrap(), "# mine\n");
        assert!(
            fs::symlink_metadata(home.join(".bashrc"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(
            fs::read_to_string(trash.folder().join("files/bashrc")).unwrap(),
            "the user's own edit\n"
        );
    }
}
