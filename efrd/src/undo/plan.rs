//! [`plan`]: what an undo (or a redo) of one root does to each path, before anything is written.

use std::collections::BTreeSet;
use std::path::PathBuf;

use efr_snapshot::{FileEntry, NotCovered, Snapshot};

/// What undo does to one path (the wire's `undo_actions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Write the target bytes, mode or symlink (also recreating a deleted file).
    Restore,
    /// Move the current file to efr's trash (a conflict under force), before its restore or delete.
    Trash,
    /// Remove a file that the turn added.
    Delete,
    /// Leave the path: see the reason.
    Skip,
    /// A bound left the path's bytes out of a snapshot: left as it is.
    NotCovered,
}

/// Why an entry is what it is (the wire's `undo_reasons`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// The path is already in its target state.
    Done,
    /// The path changed since the turn ended (the user or another turn).
    Conflict,
    /// A file over the one-file bound.
    Size,
    /// A file in a build output folder.
    BuildOutput,
    /// The snapshot's total bound was reached.
    Bytes,
    /// The file could not be read when the snapshot was taken.
    Unreadable,
    /// A bound on files or time cut the snapshot's walk before the path.
    Truncated,
    /// The undo stopped before this path.
    NotDone,
    /// The write of this path failed.
    Failed,
}

/// One path of a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// What is done.
    pub action: Action,
    /// The path relative to the root, `/`-separated.
    pub path: String,
    /// Why, when the action alone does not say.
    pub reason: Option<Reason>,
    /// The state to write: the target entry (`None`: the path must not exist).
    pub target: Option<FileEntry>,
}

/// What an undo or redo of one root does.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The root.
    pub root: PathBuf,
    /// The store's `blobs` folder, where the target contents are.
    pub blobs: PathBuf,
    /// Every changed path, in path order; a forced conflict has a `trash` entry before its write.
    pub entries: Vec<Entry>,
    /// The conflicting paths (also with force, then with their trash entries).
    pub conflicts: Vec<String>,
}

impl Plan {
    /// Whether the plan writes anything.
    #[must_use]
    pub fn writes(&self) -> bool {
        self.entries
            .iter()
            .any(|entry| matches!(entry.action, Action::Restore | Action::Delete | Action::Trash))
    }
}

fn same(a: Option<&FileEntry>, b: Option<&FileEntry>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.same_content(b),
        _ => false,
    }
}

/// Plans the move of `root` from `from` (the state the turn left, for an undo its post snapshot) to `to` (for an
/// undo its pre snapshot), given `current`, a snapshot of the tree now. Three snapshots of the same root; `blobs` is
/// the store they stored their contents in. With `force`, a conflict becomes a `trash` entry and its write. A path of
/// `others` (relative to the root: a change that may be another turn's, [`efr_snapshot::others`]) is a conflict
/// even when the tree still holds what the turn left: undoing it could undo another turn's work.
#[must_use]
pub fn plan(
    from: &Snapshot,
    to: &Snapshot,
    current: &Snapshot,
    blobs: PathBuf,
    force: bool,
    others: &BTreeSet<String>,
) -> Plan {
    let paths: BTreeSet<&String> = from.files.keys().chain(to.files.keys()).collect();
    let mut entries = Vec::new();
    let mut conflicts = Vec::new();
    for path in paths {
        let (source, target) = (from.files.get(path), to.files.get(path));
        if same(source, target) {
            continue;
        }
        let entry = |action, reason| Entry {
            action,
            path: path.clone(),
            reason,
            target: target.cloned(),
        };
        if !from.covers(path) || !to.covers(path) || !current.covers(path) {
            entries.push(entry(Action::NotCovered, Some(Reason::Truncated)));
            continue;
        }
        let unstored = [(source, from), (target, to)]
            .into_iter()
            .find(|(side, _)| side.is_some_and(|side| !side.stored));
        if let Some((_, snapshot)) = unstored {
            let in_build_output = snapshot
                .not_covered
                .iter()
                .any(|(folder, why)| *why == NotCovered::BuildOutput && path.starts_with(folder.as_str()));
            let reason = match snapshot.not_covered.get(path) {
                Some(NotCovered::Bytes) => Reason::Bytes,
                Some(NotCovered::Unreadable) => Reason::Unreadable,
                _ if in_build_output => Reason::BuildOutput,
                _ => Reason::Size,
            };
            entries.push(entry(Action::NotCovered, Some(reason)));
            continue;
        }
        let now = current.files.get(path);
        let write = if target.is_some() {
            Action::Restore
        } else {
            Action::Delete
        };
        if same(now, target) {
            entries.push(entry(Action::Skip, Some(Reason::Done)));
        } else if same(now, source) && !others.contains(path) {
            entries.push(entry(write, None));
        } else {
            conflicts.push(path.clone());
            if force {
                if now.is_some() {
                    entries.push(entry(Action::Trash, Some(Reason::Conflict)));
                }
                if target.is_some() {
                    entries.push(entry(Action::Restore, Some(Reason::Conflict)));
                }
            } else {
                entries.push(entry(Action::Skip, Some(Reason::Conflict)));
            }
        }
    }
    Plan {
        root: from.root.clone(),
        blobs,
        entries,
        conflicts,
    }
}
