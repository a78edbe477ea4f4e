//! `file_changes`: the changed files as the wire lists them (spec: "at most 50 and sorted by path").

use std::os::unix::ffi::OsStrExt;

use efr_protocol::wire::changes::{FileChange, FileChanges};

use super::display::{DisplayRoots, display_path};
use super::unified::counts;
use super::{Body, Change};

/// The wire's [`FileChanges`] of `changes`: paths shown as [`display_path`] makes them, sorted by that path (byte
/// order), at most [`FileChanges::MAX_FILES`] listed, `more` for the others, and line totals over all of them. A
/// binary file counts 0 lines and sets `binary`; an ignored file or one whose content is not known counts 0 lines.
pub fn file_changes(changes: &[Change], roots: &DisplayRoots<'_>) -> FileChanges {
    file_changes_marked(changes, roots, |_| false)
}

/// [`file_changes`], with `maybe_other` set on each change `maybe_other` names (docs/protocol.md, file_change;
/// efrd's `turn::overlap`).
pub fn file_changes_marked(
    changes: &[Change],
    roots: &DisplayRoots<'_>,
    maybe_other: impl Fn(&Change) -> bool,
) -> FileChanges {
    let mut files: Vec<FileChange> = changes
        .iter()
        .map(|change| {
            let (added, removed, binary) = line_counts(change);
            FileChange {
                path: display_path(&change.path, roots),
                kind: change.kind,
                from: change.from.as_deref().map(|from| display_path(from, roots)),
                added,
                removed,
                binary,
                maybe_other: maybe_other(change),
            }
        })
        .collect();
    files.sort_by(|a, b| a.path.as_os_str().as_bytes().cmp(b.path.as_os_str().as_bytes()));
    let added = files.iter().map(|file| file.added).sum();
    let removed = files.iter().map(|file| file.removed).sum();
    let more = files.len().saturating_sub(FileChanges::MAX_FILES) as u64;
    files.truncate(FileChanges::MAX_FILES);
    FileChanges {
        files,
        more,
        added,
        removed,
    }
}

/// Lines added, removed, and the binary flag of one change.
fn line_counts(change: &Change) -> (u64, u64, bool) {
    if change.ignored {
        return (0, 0, false);
    }
    match (&change.old, &change.new) {
        (Body::Unknown, _) | (_, Body::Unknown) => (0, 0, false),
        (Body::Binary, _) | (_, Body::Binary) => (0, 0, true),
        (old, new) => {
            let (added, removed) = counts(old.text().unwrap_or(""), new.text().unwrap_or(""));
            (added, removed, false)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use efr_protocol::wire::changes::FileChangeKind;

    use super::*;

    fn added(path: String, lines: usize) -> Change {
        Change {
            path: PathBuf::from(path),
            from: None,
            kind: FileChangeKind::Added,
            old: Body::Absent,
            new: Body::Text("x\n".repeat(lines)),
            ignored: false,
        }
    }

    #[test]
    fn at_most_fifty_sorted_by_path_with_totals_over_all() {
        // 60 files given in reverse order; "a-b" sorts before "a/b" in byte order, as git sorts.
        let mut changes: Vec<Change> = (0..60).rev().map(|n| added(format!("/p/f{n:02}.txt"), 2)).collect();
        changes.push(added("/p/a/b".into(), 1));
        changes.push(added("/p/a-b".into(), 1));
        let roots = DisplayRoots {
            project: Some(Path::new("/p")),
            ..DisplayRoots::default()
        };
        let stat = file_changes(&changes, &roots);
        assert_eq!(stat.files.len(), 50);
        assert_eq!(stat.more, 12);
        assert_eq!(stat.added, 122);
        assert_eq!(stat.removed, 0);
        assert_eq!(stat.files[0].path, PathBuf::from("a-b"));
        assert_eq!(stat.files[1].path, PathBuf::from("a/b"));
        assert_eq!(stat.files[2].path, PathBuf::from("f00.txt"));
        assert_eq!(stat.files[49].path, PathBuf::from("f47.txt"));
        assert_eq!(file_changes(&[], &roots), FileChanges::default());
    }

    #[test]
    fn binary_ignored_unknown_and_renamed_entries() {
        let roots = DisplayRoots {
            project: Some(Path::new("/p")),
            ..DisplayRoots::default()
        };
        let base = |path: &str, kind, old, new| Change {
            path: PathBuf::from(path),
            from: None,
            kind,
            old,
            new,
            ignored: false,
        };
        let mut renamed = base(
            "/p/new.txt",
            FileChangeKind::Renamed,
            Body::Text("a\nb\n".into()),
            Body::Text("a\nc\nd\n".into()),
        );
        renamed.from = Some(PathBuf::from("/p/old.txt"));
        let mut env = base("/p/.env", FileChangeKind::Modified, Body::Unknown, Body::Unknown);
        env.ignored = true;
        let changes = [
            renamed,
            env,
            base("/p/img.png", FileChangeKind::Modified, Body::Binary, Body::Binary),
            base(
                "/p/huge.log",
                FileChangeKind::Modified,
                Body::Unknown,
                Body::Text("x\n".into()),
            ),
        ];
        let stat = file_changes(&changes, &roots);
        let rows: Vec<(&str, Option<&Path>, u64, u64, bool)> = stat
            .files
            .iter()
            .map(|file| {
                (
                    file.path.to_str().unwrap_or(""),
                    file.from.as_deref(),
                    file.added,
                    file.removed,
                    file.binary,
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                (".env", None, 0, 0, false),
                ("huge.log", None, 0, 0, false),
                ("img.png", None, 0, 0, true),
                ("new.txt", Some(Path::new("old.txt")), 2, 1, false),
            ]
        );
        assert_eq!((stat.added, stat.removed, stat.more), (2, 1, 0));
    }
}
