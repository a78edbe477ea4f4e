//! Snapshots of real trees: against `git diff` in a real repository, the bounds on a big tree, the store across a
//! "restart" (a new store on the same folder), and every error path.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use efr_protocol::wire::changes::FileChangeKind;
use sha2::Digest as _;

use super::*;
use efr_patch::changes::testing::{git, git_numstat, init_repo, stat_rows, without_extended_headers};
use efr_patch::changes::{Body, DisplayRoots, file_changes, unified_diff};

fn write(root: &Path, rel: &str, bytes: impl AsRef<[u8]>) {
    let path = root.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(path, bytes).expect("write");
}

fn kinds(comparison: &Comparison, root: &Path) -> Vec<(String, FileChangeKind, Option<String>, bool)> {
    let rel = |path: &Path| {
        path.strip_prefix(root)
            .expect("under the root")
            .to_string_lossy()
            .into_owned()
    };
    comparison
        .changes
        .iter()
        .map(|change| {
            (
                rel(&change.path),
                change.kind,
                change.from.as_deref().map(rel),
                change.ignored,
            )
        })
        .collect()
}

const LIB_BEFORE: &str = "use std::fmt;\n\npub fn alpha() -> u32 {\n    1\n}\n\npub fn beta() -> u32 {\n    2\n}\n\n\
pub fn delta() -> u32 {\n    let a = 1;\n    let b = 2;\n    let c = 3;\n    let d = 4;\n    let e = 5;\n    a + b + c + d + e\n}\n\
\npub struct Shown;\n\nimpl fmt::Display for Shown {\n    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {\n        \
write!(f, \"shown\")\n    }\n}\n";

/// The base tree of the git scenario; `.env` is ignored and never committed.
fn base_tree(root: &Path) {
    write(root, ".gitignore", ".env\ntarget/\n");
    write(root, ".env", "KEY=one\n");
    write(root, "src/lib.rs", LIB_BEFORE);
    write(root, "delete_me.txt", "gone\nsoon\n");
    write(root, "old_name.txt", "moved\nas is\n");
    write(root, "no_newline.txt", "a\nb\nc");
    write(root, "gains_newline.txt", "x\ny");
    write(root, "crlf.txt", "one\r\ntwo\r\nthree\r\n");
    write(root, "unicode.txt", "größe\n🙂\n");
    write(root, "image.bin", b"\x89PNG\0\0\x01\x02");
    write(root, "sp ace.txt", "hi\n");
    write(root, "ü.txt", "x\n");
    write(root, "script.sh", "#!/bin/sh\necho hi\n");
    write(root, "target/debug/out.o", b"\0obj");
}

/// Every kind of change of the issue's list, made to the base tree.
fn change_tree(root: &Path) {
    let lib = LIB_BEFORE
        .replace("pub fn beta", "pub fn gamma() -> u32 {\n    3\n}\n\npub fn beta")
        .replace("    let d = 4;\n", "    let d = 40;\n")
        .replace("\"shown\"", "\"shown!\"");
    write(root, "src/lib.rs", lib);
    std::fs::remove_file(root.join("delete_me.txt")).expect("rm");
    std::fs::rename(root.join("old_name.txt"), root.join("new_name.txt")).expect("mv");
    write(root, "no_newline.txt", "a\nB\nc");
    write(root, "gains_newline.txt", "x\ny\n");
    write(root, "crlf.txt", "one\r\nTWO\r\nthree\r\n");
    write(root, "unicode.txt", "größe\n🙂🙂\nnaïve\n");
    write(root, "image.bin", b"\x89PNG\0\0\x03\x04");
    write(root, "sp ace.txt", "hi\nthere\n");
    write(root, "ü.txt", "x\ny\n");
    std::fs::set_permissions(root.join("script.sh"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    write(root, ".env", "KEY=two, longer\n");
    write(root, "added.txt", "fresh\nfile\n");
    write(root, "empty.txt", "");
    write(root, "added.bin", b"\0\x01");
    write(root, "dir/nested.rs", "fn nested() {}\n");
    write(root, "target/debug/out.o", b"\0obj, rebuilt");
}

#[test]
fn a_comparison_finds_every_change_and_diffs_as_git_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    base_tree(root);
    std::fs::set_permissions(root.join("script.sh"), std::fs::Permissions::from_mode(0o644)).expect("chmod");
    init_repo(root);
    let limits = Limits::default();
    let before = Snapshot::take(root, &limits, None).expect("snapshot");
    assert!(
        !before.files.contains_key("target/debug/out.o"),
        "an ignored folder is not entered"
    );
    assert!(
        before.files.keys().all(|path| !path.starts_with(".git/")),
        "{:?}",
        before.files.keys()
    );
    assert!(before.files[".env"].ignored && before.files[".env"].sha256.is_none());
    assert!(before.files["image.bin"].binary && !before.files["image.bin"].kept);

    change_tree(root);
    let after = Snapshot::take(root, &limits, Some(&before)).expect("snapshot");
    let comparison = compare(&before, &after).expect("compare");
    assert_eq!(comparison.truncated, None);
    let k = |path: &str, kind| (path.to_owned(), kind, None, false);
    assert_eq!(
        kinds(&comparison, root),
        vec![
            (".env".to_owned(), FileChangeKind::Modified, None, true),
            k("added.bin", FileChangeKind::Added),
            k("added.txt", FileChangeKind::Added),
            k("crlf.txt", FileChangeKind::Modified),
            k("delete_me.txt", FileChangeKind::Deleted),
            k("dir/nested.rs", FileChangeKind::Added),
            k("empty.txt", FileChangeKind::Added),
            k("gains_newline.txt", FileChangeKind::Modified),
            k("image.bin", FileChangeKind::Modified),
            (
                "new_name.txt".to_owned(),
                FileChangeKind::Renamed,
                Some("old_name.txt".to_owned()),
                false
            ),
            k("no_newline.txt", FileChangeKind::Modified),
            k("script.sh", FileChangeKind::Modified),
            k("sp ace.txt", FileChangeKind::Modified),
            k("src/lib.rs", FileChangeKind::Modified),
            k("unicode.txt", FileChangeKind::Modified),
            k("ü.txt", FileChangeKind::Modified),
        ]
    );

    git(
        root,
        &[
            "add",
            "-N",
            "added.txt",
            "empty.txt",
            "added.bin",
            "dir/nested.rs",
            "new_name.txt",
        ],
    );
    let git_diff = git(root, &["diff", "--no-color"]);
    let roots = DisplayRoots {
        project: Some(root),
        ..DisplayRoots::default()
    };
    let ours = unified_diff(&comparison.changes, &roots, 20_000);
    let want = format!(
        ".env: ignored file, content not shown\n{}",
        without_extended_headers(&git_diff)
    );
    assert_eq!(ours, want, "git's diff:\n{git_diff}");
    // The parts the issue names, to be sure the comparison above saw them.
    for part in [
        "@@ -4,6 +4,10 @@ pub fn alpha() -> u32 {\n     1\n }\n \n+pub fn gamma() -> u32 {\n+    3\n+}\n+\n",
        "@@ -12,7 +16,7 @@ pub fn delta() -> u32 {\n     let a = 1;\n",
        "-b\n+B\n c\n\\ No newline at end of file\n",
        "-two\r\n+TWO\r\n",
        "-🙂\n+🙂🙂\n+naïve\n",
        "Binary files a/image.bin and b/image.bin differ\n",
        "--- a/sp ace.txt\t\n",
        "--- \"a/\\303\\274.txt\"\n",
        "--- a/old_name.txt\n+++ b/new_name.txt\n",
        "--- a/script.sh\n+++ b/script.sh\n",
    ] {
        assert!(ours.contains(part), "missing {part:?} in\n{ours}");
    }

    let stat = file_changes(&comparison.changes, &roots);
    let mut ours = stat_rows(&stat);
    ours.retain(|(path, ..)| path != ".env");
    assert_eq!(ours, git_numstat(root));
    assert_eq!(stat.files.len(), 16);
}

#[test]
fn unchanged_files_are_not_read_again_and_a_racy_write_is_still_seen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(root, "same.txt", "same\n");
    write(root, "edited.txt", "aaaa\n");
    // Older than the racy window of the first snapshot.
    std::thread::sleep(Duration::from_millis(2100));
    let limits = Limits::default();
    let first = Snapshot::take(root, &limits, None).expect("snapshot");
    // Same size, and the old mtime put back: only the ctime tells.
    let mtime = std::fs::metadata(root.join("edited.txt"))
        .and_then(|meta| meta.modified())
        .expect("mtime");
    write(root, "edited.txt", "bbbb\n");
    std::fs::File::options()
        .write(true)
        .open(root.join("edited.txt"))
        .and_then(|file| file.set_modified(mtime))
        .expect("set mtime");
    let second = Snapshot::take(root, &limits, Some(&first)).expect("snapshot");
    let hash = first.files["same.txt"].sha256.clone().expect("hash");
    assert!(
        Arc::ptr_eq(&first.blobs.memory[&hash], &second.blobs.memory[&hash]),
        "same.txt was reused"
    );
    assert_eq!(second.files["edited.txt"].mtime_ns, first.files["edited.txt"].mtime_ns);
    let comparison = compare(&first, &second).expect("compare");
    assert_eq!(
        kinds(&comparison, root),
        vec![("edited.txt".to_owned(), FileChangeKind::Modified, None, false)]
    );
    assert_eq!(comparison.changes[0].new, Body::Text("bbbb\n".into()));

    // edited.txt changed (its ctime) within 2 s of `second`'s start: it is read again, same.txt is not.
    let third = Snapshot::take(root, &limits, Some(&second)).expect("snapshot");
    let edited = second.files["edited.txt"].sha256.clone().expect("hash");
    assert!(!Arc::ptr_eq(
        &second.blobs.memory[&edited],
        &third.blobs.memory[&edited]
    ));
    assert!(Arc::ptr_eq(&second.blobs.memory[&hash], &third.blobs.memory[&hash]));
}

#[test]
fn every_unchanged_file_is_reused_where_walk_order_is_not_byte_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    // `-` sorts before `/`: the walk visits a/x.txt before a-b.txt, the map holds them the other way round.
    let paths = [
        "a-b.txt",
        "a/x.txt",
        "a/y.txt",
        "a0.txt",
        "b/c-d/e.txt",
        "b/c/e.txt",
        "b/c.txt",
    ];
    for (n, path) in paths.iter().enumerate() {
        write(root, path, format!("{n}\n"));
    }
    let limits = Limits::default();
    let mut first = Snapshot::take(root, &limits, None).expect("snapshot");
    // As if taken well after the files' last change (no racily clean file).
    first.taken_at += chrono::Duration::seconds(10);
    write(root, "a/new.txt", "new\n");
    let second = Snapshot::take(root, &limits, Some(&first)).expect("snapshot");
    for path in paths {
        let hash = first.files[path].sha256.clone().expect("hash");
        assert_eq!(second.files[path], first.files[path], "{path}");
        assert!(
            Arc::ptr_eq(&first.blobs.memory[&hash], &second.blobs.memory[&hash]),
            "{path} was reused"
        );
    }
    assert!(second.files.contains_key("a/new.txt"));
    assert_eq!(second.files.len(), paths.len() + 1);
}

#[test]
fn bounds_cut_a_big_tree_in_bounded_time_and_say_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    for folder in 0..100 {
        for file in 0..200 {
            write(
                root,
                &format!("d{folder:03}/f{file:03}.txt"),
                format!("{folder} {file}\n"),
            );
        }
    }
    let files = Limits {
        max_files: 5_000,
        ..Limits::default()
    };
    let started = Instant::now();
    let cut = Snapshot::take(root, &files, None).expect("snapshot");
    assert_eq!(cut.files.len(), 5_000);
    assert_eq!(
        cut.truncated,
        Some(Truncated {
            reason: TruncateReason::Files,
            next: "d025/f000.txt".into()
        })
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );

    let time = Limits {
        max_time: Duration::from_millis(50),
        ..Limits::default()
    };
    let started = Instant::now();
    let quick = Snapshot::take(root, &time, None).expect("snapshot");
    let elapsed = started.elapsed();
    assert_eq!(
        quick.truncated.as_ref().map(|cut| cut.reason),
        Some(TruncateReason::Time)
    );
    assert!(quick.files.len() < 20_000);
    assert!(
        elapsed < Duration::from_millis(1_500),
        "a 50 ms budget took {elapsed:?}"
    );

    let whole = Snapshot::take(root, &Limits::default(), None).expect("snapshot");
    assert_eq!((whole.files.len(), whole.truncated.as_ref()), (20_000, None));

    // Inside the cut a change shows; past it nothing shows, not even as deleted.
    write(root, "d001/f001.txt", "changed\n");
    std::fs::remove_file(root.join("d090/f000.txt")).expect("rm");
    let later = Snapshot::take(root, &files, Some(&cut)).expect("snapshot");
    let comparison = compare(&cut, &later).expect("compare");
    assert_eq!(
        kinds(&comparison, root),
        vec![("d001/f001.txt".to_owned(), FileChangeKind::Modified, None, false)]
    );
    assert_eq!(comparison.truncated.map(|cut| cut.reason), Some(TruncateReason::Files));
    let comparison = compare(&whole, &later).expect("compare");
    assert_eq!(
        comparison.changes.len(),
        1,
        "a file past the later cut is not reported deleted"
    );
}

#[test]
fn the_byte_budget_and_size_bounds_keep_no_content_and_the_diff_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(root, "a.txt", "a\n".repeat(10));
    write(root, "b.txt", "b\n".repeat(10));
    write(root, "big.txt", "x".repeat(3_000));
    write(root, "huge.bin", vec![0u8; 5_000]);
    let limits = Limits {
        max_kept_bytes: 25,
        max_file_bytes: 2_000,
        max_hash_bytes: 4_000,
        ..Limits::default()
    };
    let before = Snapshot::take(root, &limits, None).expect("snapshot");
    assert!(before.files["a.txt"].kept && !before.files["b.txt"].kept);
    assert_eq!(before.not_kept, 1);
    assert!(before.files["big.txt"].sha256.is_some() && !before.files["big.txt"].kept);
    assert!(before.files["huge.bin"].sha256.is_none());
    write(root, "b.txt", "c\n".repeat(10));
    write(root, "big.txt", "y".repeat(3_000));
    write(root, "huge.bin", vec![1u8; 5_001]);
    let after = Snapshot::take(root, &limits, Some(&before)).expect("snapshot");
    let comparison = compare(&before, &after).expect("compare");
    let roots = DisplayRoots {
        project: Some(root),
        ..DisplayRoots::default()
    };
    assert_eq!(
        unified_diff(&comparison.changes, &roots, 100),
        "b.txt: content not kept, not shown\nbig.txt: content not kept, not shown\n\
         huge.bin: content not kept, not shown\n"
    );
}

#[test]
fn ignored_files_symlinks_and_odd_names() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(root, ".gitignore", "*.log\nbuild/\n");
    write(root, "sub/.gitignore", "secret.txt\n");
    write(root, "sub/secret.txt", "s\n");
    write(root, "sub/kept.txt", "k\n");
    write(root, "run.log", "log\n");
    write(root, "build/x", "x\n");
    write(root, ".git/config", "[core]\n");
    std::os::unix::fs::symlink("sub/kept.txt", root.join("link")).expect("symlink");
    let odd = root.join(std::ffi::OsStr::from_bytes(b"bad\xffname"));
    std::fs::write(odd, "?").expect("write");
    let snapshot = Snapshot::take(root, &Limits::default(), None).expect("snapshot");
    let paths: Vec<(&str, bool)> = snapshot
        .files
        .iter()
        .map(|(path, entry)| (path.as_str(), entry.ignored))
        .collect();
    assert_eq!(
        paths,
        vec![
            (".gitignore", false),
            ("link", false),
            ("run.log", true),
            ("sub/.gitignore", false),
            ("sub/kept.txt", false),
            ("sub/secret.txt", true),
        ]
    );
    assert_eq!(snapshot.skipped, 1, "the name that is not UTF-8");
    assert_eq!(snapshot.files["link"].kind, EntryKind::Symlink);
    assert_eq!(
        snapshot
            .blob(snapshot.files["link"].sha256.as_deref().expect("hash"))
            .expect("blob"),
        b"sub/kept.txt"
    );

    // An ignored file that is deleted, and one that is added, show as such (content never).
    std::fs::remove_file(root.join("run.log")).expect("rm");
    write(root, "sub/new.log", "n\n");
    let after = Snapshot::take(root, &Limits::default(), Some(&snapshot)).expect("snapshot");
    let comparison = compare(&snapshot, &after).expect("compare");
    assert_eq!(
        kinds(&comparison, root),
        vec![
            ("run.log".to_owned(), FileChangeKind::Deleted, None, true),
            ("sub/new.log".to_owned(), FileChangeKind::Added, None, true),
        ]
    );
}

use std::os::unix::ffi::OsStrExt;

#[test]
fn roots_that_are_not_folders_and_snapshots_of_two_roots_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "file", "x");
    for root in [
        PathBuf::from("relative"),
        dir.path().join("file"),
        dir.path().join("missing"),
    ] {
        let error = Snapshot::take(&root, &Limits::default(), None).expect_err("not a folder");
        assert!(matches!(error, SnapshotError::NotAFolder { .. }), "{error}");
    }
    std::fs::create_dir(dir.path().join("one")).expect("mkdir");
    std::fs::create_dir(dir.path().join("two")).expect("mkdir");
    let one = Snapshot::take(&dir.path().join("one"), &Limits::default(), None).expect("snapshot");
    let two = Snapshot::take(&dir.path().join("two"), &Limits::default(), None).expect("snapshot");
    let error = compare(&one, &two).expect_err("two roots");
    assert!(error.to_string().contains("different roots"), "{error}");
}

#[test]
fn the_store_keeps_snapshots_across_a_restart() {
    let project = tempfile::tempdir().expect("tempdir");
    let state = tempfile::tempdir().expect("tempdir");
    let root = project.path();
    write(root, "keep.txt", "one\ntwo\n");
    write(root, "move.txt", "moving\n");
    let before = Snapshot::take(root, &Limits::default(), None).expect("snapshot");
    let folder = state.path().join("snapshots");
    let store = SnapshotStore::open(&folder).expect("open");
    store.save("turn-1.pre", &Arc::new(before.clone())).expect("save");
    write(root, "keep.txt", "one\n2\n");
    std::fs::rename(root.join("move.txt"), root.join("moved.txt")).expect("mv");
    let after = Snapshot::take(root, &Limits::default(), Some(&before)).expect("snapshot");
    store.save("turn-1.post", &Arc::new(after.clone())).expect("save");
    let live = compare(&before, &after).expect("compare");
    drop((store, before, after));

    // A new store on the same folder, as after a restart of efrd.
    let store = SnapshotStore::open(&folder).expect("open");
    assert_eq!(
        store.ids().expect("ids"),
        vec!["turn-1.post".to_owned(), "turn-1.pre".to_owned()]
    );
    let before = store.load("turn-1.pre").expect("load");
    let after = store.load("turn-1.post").expect("load");
    assert!(before.blobs.memory.is_empty());
    assert_eq!(compare(&before, &after).expect("compare"), live);
    assert_eq!(
        kinds(&live, root),
        vec![
            ("keep.txt".to_owned(), FileChangeKind::Modified, None, false),
            (
                "moved.txt".to_owned(),
                FileChangeKind::Renamed,
                Some("move.txt".to_owned()),
                false
            ),
        ]
    );

    // Private files and folders.
    let mode = |path: &Path| std::fs::metadata(path).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(&folder), 0o700);
    assert_eq!(mode(&folder.join("blobs")), 0o700);
    assert_eq!(mode(&folder.join("manifests/turn-1.pre.json")), 0o600);
    let hash = before.files["keep.txt"].sha256.clone().expect("hash");
    let blob = folder.join("blobs").join(&hash[..2]).join(&hash[2..]);
    assert_eq!(mode(&blob), 0o600);

    // Garbage: the contents only the removed snapshot kept go, the others stay.
    assert!(store.remove("turn-1.pre").expect("remove"));
    assert!(!store.remove("turn-1.pre").expect("remove"));
    assert_eq!(store.collect_garbage().expect("gc"), 1);
    assert!(!blob.exists());
    assert!(compare(&after, &after).expect("compare").changes.is_empty());
}

#[test]
fn the_store_refuses_bad_ids_duplicates_and_damaged_data_clearly() {
    let project = tempfile::tempdir().expect("tempdir");
    let state = tempfile::tempdir().expect("tempdir");
    let root = project.path();
    write(root, "a.txt", "a\n");
    let snapshot = Arc::new(Snapshot::take(root, &Limits::default(), None).expect("snapshot"));
    let store = SnapshotStore::open(state.path()).expect("open");
    let long = "x".repeat(129);
    for id in ["", "../x", ".hidden", "a/b", "a b", long.as_str()] {
        let error = store.save(id, &snapshot).expect_err("bad id");
        assert!(matches!(error, SnapshotError::InvalidId { .. }), "{id:?}: {error}");
        assert!(matches!(store.load(id), Err(SnapshotError::InvalidId { .. })));
    }
    store.save("s1", &snapshot).expect("save");
    let error = store.save("s1", &snapshot).expect_err("taken");
    assert!(matches!(error, SnapshotError::Exists { .. }), "{error}");
    assert_eq!(
        store.load("s1").expect("the first save is intact"),
        Snapshot {
            blobs: Blobs {
                store: Some(state.path().join("blobs")),
                ..Blobs::default()
            },
            ..Snapshot::clone(&snapshot)
        }
    );
    assert!(matches!(store.load("nope"), Err(SnapshotError::NotFound { .. })));

    let manifests = state.path().join("manifests");
    std::fs::write(manifests.join("broken.json"), "{not json").expect("write");
    let error = store.load("broken").expect_err("broken");
    assert!(
        matches!(error, SnapshotError::Manifest { .. }) && error.to_string().contains("broken.json"),
        "{error}"
    );
    std::fs::write(manifests.join("future.json"), r#"{"version": 99, "whatever": []}"#).expect("write");
    let error = store.load("future").expect_err("future");
    assert!(matches!(error, SnapshotError::Version { found: 99, .. }), "{error}");
    // A path out of the root, in a manifest whose hash matches (so only the path check can see it).
    let text = std::fs::read_to_string(manifests.join("s1.json")).expect("read");
    let (head, body) = text.split_once('\n').expect("header line");
    let body = body.replace("\"a.txt\"", "\"../a.txt\"");
    let mut head: serde_json::Value = serde_json::from_str(head).expect("header");
    head["sha256"] = format!("{:x}", sha2::Sha256::digest(body.as_bytes())).into();
    std::fs::write(manifests.join("escape.json"), format!("{head}\n{body}")).expect("write");
    let error = store.load("escape").expect_err("escape");
    assert!(
        error.to_string().contains("not a relative path below the root"),
        "{error}"
    );
    // collect_garbage refuses to run over a damaged manifest rather than drop contents it cannot account for.
    assert!(store.collect_garbage().is_err());
    for name in ["broken.json", "future.json", "escape.json"] {
        std::fs::remove_file(manifests.join(name)).expect("rm");
    }

    // A content changed or lost in the store.
    let hash = snapshot.files["a.txt"].sha256.clone().expect("hash");
    let blob = state.path().join("blobs").join(&hash[..2]).join(&hash[2..]);
    let loaded = store.load("s1").expect("load");
    write(root, "a.txt", "b\n");
    let later = Snapshot::take(root, &Limits::default(), None).expect("snapshot");
    std::fs::write(&blob, "tampered\n").expect("write");
    assert!(matches!(
        compare(&loaded, &later),
        Err(SnapshotError::CorruptBlob { .. })
    ));
    std::fs::remove_file(&blob).expect("rm");
    let error = compare(&loaded, &later).expect_err("missing");
    assert!(matches!(error, SnapshotError::MissingBlob { .. }), "{error}");
}
