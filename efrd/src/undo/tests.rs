//! Undo and redo on real trees (real files, modes, symlinks, real git): every kind of change a turn makes, checked
//! against the tree's bytes, modes and symlinks; conflicts and the trash; a write that fails midway and the undo
//! that finishes it.

use std::collections::BTreeMap;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;

use super::journal::{self, Journal, State};
use super::trash::{self, Trash, TrashBounds};
use super::*;
use efr_patch::changes::testing::{git, init_repo};
use efr_snapshot::{Cover, Limits, Snapshot, SnapshotStore};

/// A file as undo must put it back: kind, mode, bytes (a symlink: its target).
type Tree = BTreeMap<String, (bool, u32, Vec<u8>)>;

fn tree(root: &Path) -> Tree {
    let mut found = Tree::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).expect("list") {
            let entry = entry.expect("entry");
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path).expect("meta");
            let rel = path.strip_prefix(root).expect("below").to_string_lossy().into_owned();
            if rel == ".git" {
                continue;
            }
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).expect("link");
                found.insert(rel, (true, 0, target.to_string_lossy().as_bytes().to_vec()));
            } else if meta.is_dir() {
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).expect("read");
                found.insert(rel, (false, meta.permissions().mode() & 0o7777, bytes));
            }
        }
    }
    found
}

fn write(root: &Path, rel: &str, bytes: impl AsRef<[u8]>) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, bytes).expect("write");
}

fn sh(root: &Path, line: &str) {
    let status = Command::new("sh")
        .arg("-c")
        .arg(line)
        .current_dir(root)
        .status()
        .expect("sh");
    assert!(status.success(), "{line}");
}

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    store: SnapshotStore,
    state: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("project");
        std::fs::create_dir_all(&root).expect("mkdir");
        let state = dir.path().join("state");
        let store = SnapshotStore::open(&state.join("snapshots")).expect("store");
        Self {
            _dir: dir,
            root,
            store,
            state,
        }
    }

    fn limits(&self) -> Limits {
        Limits {
            cover: Some(Cover {
                blobs: self.store.blobs(),
                max_file_bytes: 64 << 20,
                max_bytes: 1 << 30,
            }),
            ..Limits::default()
        }
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot::take(&self.root, &self.limits(), None).expect("snapshot")
    }

    /// Moves the tree from `from` to `to` as undo does (an undo: post → pre; a redo: pre → post).
    fn apply(&self, from: &Snapshot, to: &Snapshot, force: bool, undo_id: &str) -> (Plan, Applied) {
        let current = self.snapshot();
        let plan = plan(from, to, &current, self.store.blobs(), force, &Default::default());
        let mut journal = Journal::begin(&self.state.join("undo"), "turn", undo_id, false).expect("journal");
        let trash = Trash::new(&self.state.join("trash"), undo_id, 0);
        let applied = apply(&plan, &trash, &mut journal);
        journal
            .finish(if applied.stopped { State::Stopped } else { State::Done })
            .expect("finish");
        if let (Some(from), Some(to), Some(current)) = (&from.refs, &to.refs, &current.refs) {
            let moved = refs::move_refs(&self.root, &self.store.blobs(), from, to, current, force, true);
            assert!(moved.iter().all(|one| one.applied || one.conflict), "{moved:?}");
        }
        (plan, applied)
    }
}

fn actions(applied: &Applied) -> Vec<(Action, &str, Option<Reason>)> {
    applied
        .entries
        .iter()
        .map(|entry| (entry.action, entry.path.as_str(), entry.reason))
        .collect()
}

#[test]
fn every_kind_of_change_in_a_repository_is_undone_and_redone() {
    let f = Fixture::new();
    let root = &f.root;
    write(root, ".gitignore", "cache/\n");
    write(root, "src/main.rs", "fn main() {\n    println!(\"hi\");\n}\n");
    write(root, "src/lib.rs", "pub fn lib() {}\n");
    write(root, "config.txt", "name = old\n");
    write(root, "moved.txt", "moving\n");
    write(root, "run.sh", "#!/bin/sh\n");
    write(root, "cache/state.bin", [0u8, 1, 2]);
    symlink("config.txt", root.join("link")).expect("symlink");
    init_repo(root);
    let head = git(root, &["rev-parse", "HEAD"]);
    let pre = f.snapshot();
    let before = tree(root);

    // The turn: a patch, a `sed -i`, a rename, a mode change, a symlink moved, a file in an ignored folder, a new
    // file, `rm -rf src/`, and a commit.
    write(root, "config.txt", "name = new\nadded = 1\n");
    sh(root, "sed -i 's/new/sed/' config.txt");
    sh(
        root,
        "mv moved.txt renamed.txt && chmod 755 run.sh && ln -sfn run.sh link",
    );
    write(root, "cache/state.bin", [9u8; 10]);
    write(root, "docs/new.md", "# new\n");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "the model's commit"]);
    sh(root, "rm -rf src/");
    let post = f.snapshot();
    let after = tree(root);
    assert_ne!(head, git(root, &["rev-parse", "HEAD"]));

    let (plan, applied) = f.apply(&post, &pre, false, "u1");
    assert!(plan.conflicts.is_empty());
    assert!(!applied.stopped);
    assert_eq!(tree(root), before, "undo puts back every byte, mode and symlink");
    assert!(
        !root.join("docs").exists(),
        "the folder a deleted file leaves empty goes too"
    );
    assert_eq!(git(root, &["rev-parse", "HEAD"]), head, "the branch is back");
    assert_eq!(git(root, &["status", "--porcelain"]), "", "the index is back");
    assert_eq!(applied.deleted, 2, "{:?}", actions(&applied));

    let (_, redone) = f.apply(&pre, &post, false, "u2");
    assert!(!redone.stopped);
    assert_eq!(tree(root), after, "redo re-applies the turn");
    assert_ne!(git(root, &["rev-parse", "HEAD"]), head);
    // Undo again: nothing but the tree as the turn left it.
    f.apply(&post, &pre, false, "u3");
    assert_eq!(tree(root), before);
}

#[test]
fn a_tree_outside_git_and_a_file_over_the_bound() {
    let f = Fixture::new();
    let root = &f.root;
    write(root, "notes.txt", "one\n");
    let pre = f.snapshot();
    let before = tree(root);
    write(root, "notes.txt", "two\n");
    // 100 MiB (sparse): over the one-file bound of 64 MiB.
    let big = std::fs::File::create(root.join("disk.img")).expect("create");
    big.set_len(100 << 20).expect("set_len");
    let post = f.snapshot();
    assert_eq!(post.not_covered.get("disk.img"), Some(&efr_snapshot::NotCovered::Size));
    let (_, applied) = f.apply(&post, &pre, false, "u1");
    assert_eq!(
        actions(&applied),
        vec![
            (Action::NotCovered, "disk.img", Some(Reason::Size)),
            (Action::Restore, "notes.txt", None),
        ]
    );
    assert_eq!(std::fs::read(root.join("notes.txt")).expect("read"), b"one\n");
    assert!(root.join("disk.img").exists(), "a file without cover is left as it is");
    std::fs::remove_file(root.join("disk.img")).expect("rm");
    assert_eq!(tree(root), before);
}

#[test]
fn a_conflict_is_refused_and_with_force_the_users_version_goes_to_the_trash() {
    let f = Fixture::new();
    let root = &f.root;
    write(root, "a.txt", "mine\n");
    let pre = f.snapshot();
    write(root, "a.txt", "the turn's\n");
    let post = f.snapshot();
    write(root, "a.txt", "the user's edit after the turn\n");

    let current = f.snapshot();
    let refused = plan(&post, &pre, &current, f.store.blobs(), false, &Default::default());
    assert_eq!(refused.conflicts, vec!["a.txt".to_owned()]);
    assert!(!refused.writes(), "without force nothing is written");

    let (_, applied) = f.apply(&post, &pre, true, "u1");
    assert_eq!(
        actions(&applied),
        vec![
            (Action::Trash, "a.txt", Some(Reason::Conflict)),
            (Action::Restore, "a.txt", Some(Reason::Conflict)),
        ]
    );
    assert_eq!(std::fs::read(root.join("a.txt")).expect("read"), b"mine\n");
    let trash = f.state.join("trash");
    let items = trash::list(&trash);
    assert_eq!(items.len(), 1);
    assert_eq!(
        std::fs::read(trash.join("u1/files/a.txt")).expect("trashed"),
        b"the user's edit after the turn\n"
    );
    // Restore from the trash refuses to overwrite, and puts the file back once the path is free.
    assert!(trash::restore(&trash, &items[0], None).is_err());
    std::fs::remove_file(root.join("a.txt")).expect("rm");
    trash::restore(&trash, &items[0], None).expect("restore");
    assert_eq!(
        std::fs::read(root.join("a.txt")).expect("read"),
        b"the user's edit after the turn\n"
    );
    // The restore took the undo's last file: its folder went with it.
    assert!(trash::list(&trash).is_empty());
    assert_eq!(trash::expire(&trash, TrashBounds::default(), None), 0);
}

#[test]
fn a_write_that_fails_midway_stops_and_a_second_undo_finishes() {
    let f = Fixture::new();
    let root = &f.root;
    write(root, "a.txt", "a\n");
    write(root, "b.txt", "b\n");
    write(root, "c.txt", "c\n");
    let pre = f.snapshot();
    let before = tree(root);
    for name in ["a.txt", "b.txt", "c.txt"] {
        write(root, name, "changed\n");
    }
    let post = f.snapshot();
    // b.txt's folder entry is taken by a folder now: its write fails, c.txt is not reached.
    std::fs::remove_file(root.join("b.txt")).expect("rm");
    let current_before_fault = post.clone();
    let plan_ = plan(
        &post,
        &pre,
        &current_before_fault,
        f.store.blobs(),
        false,
        &Default::default(),
    );
    std::fs::create_dir(root.join("b.txt")).expect("mkdir");
    let mut journal = Journal::begin(&f.state.join("undo"), "turn", "u1", false).expect("journal");
    let applied = apply(&plan_, &Trash::new(&f.state.join("trash"), "u1", 0), &mut journal);
    assert!(applied.stopped);
    assert_eq!(
        actions(&applied),
        vec![
            (Action::Restore, "a.txt", None),
            (Action::Restore, "b.txt", Some(Reason::Failed)),
            (Action::Restore, "c.txt", Some(Reason::NotDone)),
        ]
    );
    // As after a SIGKILL: the journal was never finished; it says what was done.
    drop(journal);
    let record = journal::read(&f.state.join("undo"), "turn").expect("record");
    assert_eq!(record.state, State::Running);
    assert_eq!(record.done, vec!["Restore a.txt".to_owned()]);

    // A second undo, planned afresh: a.txt is done, b.txt is a conflict (a folder is there now) until it is moved.
    std::fs::remove_dir(root.join("b.txt")).expect("rmdir");
    write(root, "b.txt", "changed\n");
    let (_, second) = f.apply(&post, &pre, false, "u2");
    assert_eq!(
        actions(&second),
        vec![
            (Action::Skip, "a.txt", Some(Reason::Done)),
            (Action::Restore, "b.txt", None),
            (Action::Restore, "c.txt", None),
        ]
    );
    assert_eq!(tree(root), before);
}
