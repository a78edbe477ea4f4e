//! Every new content computed before anything is written: a [`Plan`] of the files a patch changes.
//!
//! The operations run in patch order against an overlay of the file system: the first time an operation names a
//! path, its state on disk is read and kept (the original, for the rollback and for the check before writing); later
//! operations on the same path see what the earlier ones left. So `*** Delete File: a` then `*** Add File: a`
//! rewrites `a`, and two updates of one file apply one after the other. Nothing touches the disk until
//! [`Plan::commit`].

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use efr_protocol::wire::FileChangeKind;

use super::commit::{self, Step};
use super::disk::{Disk, State};
use super::error::ApplyError;
use super::parse::{Chunk, FileOp, Patch};
use super::text::as_text;
use super::update::apply_chunks;
use crate::changes::{Body, Change, line_counts};

/// What a patch did (or will do) to one file, in patch order; a path that two operations name has two entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileResult {
    /// The absolute path: for a move, where the file went.
    pub path: PathBuf,
    /// `added`, `modified`, `deleted` or `renamed`.
    pub kind: FileChangeKind,
    /// For `renamed`: the absolute path the file had.
    pub from: Option<PathBuf>,
    /// Lines added (a line diff of the old and new text; 0 for a binary file).
    pub added: u64,
    /// Lines removed (as `added`).
    pub removed: u64,
    /// A binary file (deleted, or moved without chunks): `old` and `new` are `None`.
    pub binary: bool,
    /// The text before; `None` for an added or a binary file.
    pub old: Option<String>,
    /// The text after; `None` for a deleted or a binary file.
    pub new: Option<String>,
}

impl FileResult {
    /// The change that an `apply_patch` call made to one file; `ignored` as
    /// [`IgnoreRules::is_ignored`](crate::changes::IgnoreRules::is_ignored) says for its path (the caller checks,
    /// since only it knows the project).
    #[must_use]
    pub fn into_change(self, ignored: bool) -> Change {
        let result = self;
        let added = result.kind == FileChangeKind::Added;
        let deleted = result.kind == FileChangeKind::Deleted;
        let side = |text: Option<String>, absent: bool| match (absent, result.binary, text) {
            (true, _, _) => Body::Absent,
            (false, true, _) => Body::Binary,
            (false, false, Some(text)) => Body::Text(text),
            // The patch library always has a text for a present text file; an empty file is the safe reading.
            (false, false, None) => Body::Text(String::new()),
        };
        Change {
            old: side(result.old, added),
            new: side(result.new, deleted),
            path: result.path,
            from: result.from,
            kind: result.kind,
            ignored,
        }
    }
}

#[derive(Debug)]
struct Entry {
    path: PathBuf,
    original: Disk,
    state: State,
}

/// Paths named so far, in the order first named.
#[derive(Debug, Default)]
struct Overlay {
    entries: Vec<Entry>,
    index: HashMap<PathBuf, usize>,
}

impl Overlay {
    fn entry(&mut self, path: &Path) -> Result<&mut Entry, ApplyError> {
        let at = match self.index.get(path) {
            Some(&at) => at,
            None => {
                let original = Disk::load(path)?;
                let state = match &original {
                    Disk::Missing => State::Missing,
                    Disk::File { bytes, mode, .. } => State::File {
                        bytes: bytes.clone(),
                        mode: Some(*mode),
                    },
                    Disk::Other => State::Other,
                };
                self.entries.push(Entry {
                    path: path.to_owned(),
                    original,
                    state,
                });
                self.index.insert(path.to_owned(), self.entries.len() - 1);
                self.entries.len() - 1
            }
        };
        Ok(&mut self.entries[at])
    }
}

/// The files a patch changes, computed and not yet written.
#[derive(Debug)]
pub struct Plan {
    files: Vec<FileResult>,
    steps: Vec<Step>,
}

impl Plan {
    /// Computes every new content of `patch`, with relative paths resolved against `cwd`.
    ///
    /// # Errors
    ///
    /// [`ApplyError::RelativeCwd`] for a relative `cwd`; [`ApplyError::AlreadyExists`], [`ApplyError::NotFound`],
    /// [`ApplyError::NotAFile`], [`ApplyError::Binary`], [`ApplyError::MoveTargetExists`] and
    /// [`ApplyError::Chunk`] for an operation that does not fit the files; [`ApplyError::Io`] when a file cannot be
    /// read.
    pub fn new(patch: &Patch, cwd: &Path) -> Result<Self, ApplyError> {
        if !cwd.is_absolute() {
            return Err(ApplyError::RelativeCwd(cwd.to_owned()));
        }
        let mut overlay = Overlay::default();
        let mut files = Vec::with_capacity(patch.hunks.len());
        for op in &patch.hunks {
            files.push(apply_op(&mut overlay, op, cwd)?);
        }
        let steps = overlay
            .entries
            .into_iter()
            .filter(|entry| !unchanged(&entry.original, &entry.state))
            .map(|entry| Step {
                path: entry.path,
                original: entry.original,
                state: entry.state,
            })
            .collect();
        Ok(Self { files, steps })
    }

    /// What the patch does to each file, in patch order.
    #[must_use]
    pub fn files(&self) -> &[FileResult] {
        &self.files
    }

    /// The absolute paths that the commit writes or removes, in the order first named: the policy's input. A file
    /// updated through a symlink is listed as the file the link points to, since that is what changes. Paths whose
    /// content ends as it was are not listed.
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        self.steps.iter().map(Step::changes)
    }

    /// Writes the plan: every file changes, or none does.
    ///
    /// Each touched path must still be as the plan read it. Then each new content goes to a temporary file in the
    /// same folder, is flushed to disk and renamed over the path (missing folders are created); removals come last.
    /// When any step fails, what was already done is undone from the originals kept in memory, in reverse order.
    ///
    /// # Errors
    ///
    /// [`ApplyError::Changed`] when a file changed since the plan (nothing written); [`ApplyError::Io`] when a step
    /// failed and everything was restored; [`ApplyError::RollbackIncomplete`] when the restore failed too.
    pub fn commit(self) -> Result<Vec<FileResult>, ApplyError> {
        commit::commit(&self.steps, None)?;
        Ok(self.files)
    }

    /// [`Plan::commit`], where each place written or removed, resolved through its links when it is written, must be
    /// one of `allowed` (the paths the caller judged, resolved the same way: turn/patch_paths.rs). A link that
    /// changed since then fails the commit, and what was written is undone.
    ///
    /// # Errors
    ///
    /// Those of [`Plan::commit`]; [`ApplyError::Io`] for a place not in `allowed`.
    pub fn commit_within(self, allowed: &[PathBuf]) -> Result<Vec<FileResult>, ApplyError> {
        commit::commit(&self.steps, Some(allowed))?;
        Ok(self.files)
    }
}

/// Whether the final state is what the disk already holds, so the path needs no write.
fn unchanged(original: &Disk, state: &State) -> bool {
    match (original, state) {
        (Disk::Missing, State::Missing) | (Disk::Other, State::Other) => true,
        (
            Disk::File { bytes, mode, .. },
            State::File {
                bytes: new,
                mode: new_mode,
            },
        ) => bytes == new && new_mode.is_none_or(|new_mode| new_mode == *mode),
        _ => false,
    }
}

/// `path` made absolute against `cwd`, without `.` components (`..` stays: a link may make it mean another place).
fn resolve(cwd: &Path, path: &Path) -> PathBuf {
    let joined = if path.is_absolute() {
        path.to_owned()
    } else {
        cwd.join(path)
    };
    joined
        .components()
        .filter(|component| *component != Component::CurDir)
        .collect()
}

fn apply_op(overlay: &mut Overlay, op: &FileOp, cwd: &Path) -> Result<FileResult, ApplyError> {
    match op {
        FileOp::Add { path, content, .. } => add(overlay, resolve(cwd, path), content),
        FileOp::Delete { path, .. } => delete(overlay, resolve(cwd, path)),
        FileOp::Update {
            path, move_to, chunks, ..
        } => {
            let target = move_to.as_deref().map(|to| resolve(cwd, to));
            update(overlay, resolve(cwd, path), target, chunks)
        }
    }
}

/// `*** Add File`: a path that must not exist yet.
fn add(overlay: &mut Overlay, path: PathBuf, content: &str) -> Result<FileResult, ApplyError> {
    let entry = overlay.entry(&path)?;
    if entry.state != State::Missing {
        return Err(ApplyError::AlreadyExists { path });
    }
    entry.state = State::File {
        bytes: content.as_bytes().to_vec(),
        mode: None,
    };
    Ok(FileResult {
        added: count(content.lines().count()),
        kind: FileChangeKind::Added,
        from: None,
        removed: 0,
        binary: false,
        old: None,
        new: Some(content.to_owned()),
        path,
    })
}

/// `*** Delete File`: a file that must exist.
fn delete(overlay: &mut Overlay, path: PathBuf) -> Result<FileResult, ApplyError> {
    let entry = overlay.entry(&path)?;
    let (bytes, _) = existing_file(&entry.state, &path, "delete")?;
    let old = as_text(&bytes).ok().map(str::to_owned);
    entry.state = State::Missing;
    Ok(FileResult {
        removed: count(old.as_deref().map_or(0, |old| old.lines().count())),
        binary: old.is_none(),
        kind: FileChangeKind::Deleted,
        from: None,
        added: 0,
        old,
        new: None,
        path,
    })
}

/// `*** Update File`: a file that must exist, its chunks applied, moved to `target` when it names another path.
fn update(
    overlay: &mut Overlay,
    path: PathBuf,
    target: Option<PathBuf>,
    chunks: &[Chunk],
) -> Result<FileResult, ApplyError> {
    let entry = overlay.entry(&path)?;
    let (bytes, mode) = existing_file(&entry.state, &path, "update")?;
    let text = as_text(&bytes).ok();
    let new_bytes = if chunks.is_empty() {
        bytes.clone()
    } else {
        let text = as_text(&bytes).map_err(|why| ApplyError::Binary {
            path: path.clone(),
            why: why.to_string(),
        })?;
        apply_chunks(text, chunks)
            .map_err(|error| ApplyError::Chunk {
                path: path.clone(),
                error,
            })?
            .into_bytes()
    };
    let target = target.filter(|to| *to != path);
    let new = State::File {
        bytes: new_bytes.clone(),
        mode,
    };
    let (result_path, from) = match target {
        Some(to) => {
            let target_entry = overlay.entry(&to)?;
            if target_entry.state != State::Missing {
                return Err(ApplyError::MoveTargetExists { from: path, path: to });
            }
            target_entry.state = new;
            overlay.entry(&path)?.state = State::Missing;
            (to, Some(path))
        }
        None => {
            overlay.entry(&path)?.state = new;
            (path, None)
        }
    };
    let old = text.map(str::to_owned);
    let new = as_text(&new_bytes).ok().map(str::to_owned);
    let (added, removed) = match (&old, &new) {
        (Some(old), Some(new)) => line_counts(old, new),
        _ => (0, 0),
    };
    Ok(FileResult {
        path: result_path,
        kind: if from.is_some() {
            FileChangeKind::Renamed
        } else {
            FileChangeKind::Modified
        },
        from,
        added,
        removed,
        binary: old.is_none() || new.is_none(),
        old,
        new,
    })
}

/// The bytes and mode of a path that must be a file for `op`.
fn existing_file(state: &State, path: &Path, op: &'static str) -> Result<(Vec<u8>, Option<u32>), ApplyError> {
    match state {
        State::File { bytes, mode } => Ok((bytes.clone(), *mode)),
        State::Missing => Err(ApplyError::NotFound {
            op,
            path: path.to_owned(),
        }),
        State::Other => Err(ApplyError::NotAFile {
            op,
            path: path.to_owned(),
        }),
    }
}

fn count(lines: usize) -> u64 {
    u64::try_from(lines).unwrap_or(u64::MAX)
}
