//! [`compare`]: two snapshots of one root → the files that changed between them.
//!
//! The rules are in the module docs of [`super`].

use std::collections::{HashMap, VecDeque};

use efr_protocol::wire::changes::FileChangeKind;

use super::{EntryKind, FileEntry, Snapshot, SnapshotError, Truncated};
use efr_patch::changes::{Body, Change};

/// The files that changed between two snapshots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comparison {
    /// The changes, sorted by path in byte order (a rename at its new path), with the contents the snapshots kept.
    pub changes: Vec<Change>,
    /// Set when a bound cut either walk: only the paths that both walks reached are compared (the later
    /// snapshot's cut when both were cut).
    pub truncated: Option<Truncated>,
}

/// Compares `before` and `after`, two snapshots of the same root.
///
/// # Errors
///
/// [`SnapshotError::RootMismatch`] for snapshots of different roots; [`SnapshotError::MissingBlob`],
/// [`SnapshotError::CorruptBlob`] or [`SnapshotError::Io`] when a kept content cannot be read back from the store.
pub fn compare(before: &Snapshot, after: &Snapshot) -> Result<Comparison, SnapshotError> {
    if before.root != after.root {
        return Err(SnapshotError::RootMismatch {
            before: before.root.clone(),
            after: after.root.clone(),
        });
    }
    let covered = |path: &str| before.covers(path) && after.covers(path);
    let mut deleted: Vec<&str> = Vec::new();
    let mut added: Vec<&str> = Vec::new();
    let mut changes: Vec<(String, Change)> = Vec::new();
    for (path, old) in &before.files {
        match after.files.get(path) {
            Some(new) if differs(old, new) => {
                let change = Change {
                    path: before.root.join(path),
                    from: None,
                    kind: FileChangeKind::Modified,
                    old: body(before, old)?,
                    new: body(after, new)?,
                    ignored: old.ignored || new.ignored,
                };
                changes.push((path.clone(), change));
            }
            Some(_) => {}
            None if covered(path) => deleted.push(path),
            None => {}
        }
    }
    for path in after.files.keys() {
        if !before.files.contains_key(path) && covered(path) {
            added.push(path);
        }
    }

    // Renames: a deleted and an added file with one hash, paired in path order.
    let mut sources: HashMap<&str, VecDeque<&str>> = HashMap::new();
    for path in &deleted {
        if let Some(hash) = rename_hash(&before.files[*path]) {
            sources.entry(hash).or_default().push_back(path);
        }
    }
    let mut renamed_from: HashMap<&str, &str> = HashMap::new();
    for path in &added {
        let from = rename_hash(&after.files[*path]).and_then(|hash| sources.get_mut(hash)?.pop_front());
        if let Some(from) = from {
            renamed_from.insert(path, from);
        }
    }
    let moved: std::collections::HashSet<&str> = renamed_from.values().copied().collect();

    for path in deleted.into_iter().filter(|path| !moved.contains(path)) {
        let old = &before.files[path];
        let change = Change {
            path: before.root.join(path),
            from: None,
            kind: FileChangeKind::Deleted,
            old: body(before, old)?,
            new: Body::Absent,
            ignored: old.ignored,
        };
        changes.push((path.to_owned(), change));
    }
    for path in added {
        let new = &after.files[path];
        let change = match renamed_from.get(path) {
            Some(from) => {
                let old = &before.files[*from];
                Change {
                    path: after.root.join(path),
                    from: Some(before.root.join(from)),
                    kind: FileChangeKind::Renamed,
                    old: body(before, old)?,
                    new: body(after, new)?,
                    ignored: false,
                }
            }
            None => Change {
                path: after.root.join(path),
                from: None,
                kind: FileChangeKind::Added,
                old: Body::Absent,
                new: body(after, new)?,
                ignored: new.ignored,
            },
        };
        changes.push((path.to_owned(), change));
    }
    changes.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    Ok(Comparison {
        changes: changes.into_iter().map(|(_, change)| change).collect(),
        truncated: after.truncated.clone().or_else(|| before.truncated.clone()),
    })
}

/// Whether a file present in both snapshots changed.
fn differs(old: &FileEntry, new: &FileEntry) -> bool {
    // A symlink's mode bits mean nothing (always 0777 on Linux).
    let mode = old.kind == EntryKind::File && old.mode != new.mode;
    if old.kind != new.kind || mode {
        return true;
    }
    if old.ignored || new.ignored {
        return old.size != new.size || old.mtime_ns != new.mtime_ns;
    }
    match (&old.sha256, &new.sha256) {
        (Some(old), Some(new)) => old != new,
        _ => old.size != new.size || old.mtime_ns != new.mtime_ns,
    }
}

/// The hash by which a file may pair into a rename: a hashed file that is not ignored.
fn rename_hash(entry: &FileEntry) -> Option<&str> {
    if entry.ignored { None } else { entry.sha256.as_deref() }
}

/// What a snapshot knows of a file's content.
fn body(snapshot: &Snapshot, entry: &FileEntry) -> Result<Body, SnapshotError> {
    if entry.ignored {
        return Ok(Body::Unknown);
    }
    match (&entry.sha256, entry.kept, entry.binary) {
        (Some(hash), true, _) => Ok(Body::from_bytes(snapshot.blob(hash)?)),
        (_, _, true) => Ok(Body::Binary),
        _ => Ok(Body::Unknown),
    }
}
