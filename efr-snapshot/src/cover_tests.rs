//! Covered snapshots on real trees: every covered file's bytes in the store, ignored folders entered, build outputs
//! and files over a bound listed as not covered, git refs recorded, and the stat cache across snapshots.

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

use super::*;
use efr_patch::changes::testing::{git, init_repo};

fn write(root: &Path, rel: &str, bytes: impl AsRef<[u8]>) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, bytes).expect("write");
}

fn limits(blobs: &Path) -> Limits {
    Limits {
        cover: Some(Cover {
            blobs: blobs.to_path_buf(),
            max_file_bytes: 4 << 20,
            max_bytes: 64 << 20,
        }),
        ..Limits::default()
    }
}

#[test]
fn a_covered_snapshot_stores_every_file_enters_ignored_folders_and_lists_what_it_leaves() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("project");
    let store = SnapshotStore::open(&dir.path().join("state")).expect("store");
    write(&root, ".gitignore", "build/\n.env\ntarget/\n");
    write(&root, "src/main.rs", "fn main() {}\n");
    write(&root, "bin.dat", [0u8, 1, 2, 255]);
    write(&root, ".env", "TOKEN=1\n");
    write(&root, "build/out/gen.txt", "generated\n");
    write(&root, "target/debug/app", "elf");
    write(&root, "node_modules/left/index.js", "x");
    write(&root, "big.iso", vec![7u8; (5 << 20) + 1]);
    write(&root, "mid.bin", vec![9u8; 2 << 20]);
    std::fs::set_permissions(root.join("bin.dat"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    symlink("src/main.rs", root.join("link")).expect("symlink");
    init_repo(&root);

    let snapshot = Snapshot::take(&root, &limits(&store.blobs()), None).expect("snapshot");
    assert!(snapshot.covered);
    for rel in [
        "src/main.rs",
        "bin.dat",
        ".env",
        "build/out/gen.txt",
        "link",
        "mid.bin",
        ".gitignore",
    ] {
        let entry = &snapshot.files[rel];
        assert!(entry.stored, "{rel} is stored");
        let hash = entry.sha256.as_deref().expect("hash");
        let bytes = std::fs::read(blob_path(&store.blobs(), hash)).expect("blob");
        let expected = if entry.kind == EntryKind::Symlink {
            b"src/main.rs".to_vec()
        } else {
            std::fs::read(root.join(rel)).expect("read")
        };
        assert_eq!(bytes, expected, "{rel}'s blob holds its bytes");
    }
    assert!(snapshot.files[".env"].ignored && !snapshot.files[".env"].kept);
    assert!(snapshot.files["build/out/gen.txt"].ignored);
    assert_eq!(snapshot.files["bin.dat"].mode, 0o755);
    assert!(!snapshot.files["big.iso"].stored);
    // An ignored build output is not entered; one that is not ignored is recorded (its changes show) but not stored.
    assert!(!snapshot.files.keys().any(|rel| rel.starts_with("target/")));
    let dependency = &snapshot.files["node_modules/left/index.js"];
    assert!(dependency.sha256.is_some() && !dependency.stored);
    assert_eq!(
        snapshot
            .not_covered
            .iter()
            .map(|(k, v)| (k.as_str(), *v))
            .collect::<Vec<_>>(),
        vec![
            ("big.iso", NotCovered::Size),
            ("node_modules/", NotCovered::BuildOutput),
            ("target/", NotCovered::BuildOutput),
        ]
    );
    let refs = snapshot.refs.clone().expect("refs");
    let head = git(&root, &["rev-parse", "HEAD"]);
    assert_eq!(refs.refs.values().next().map(String::as_str), Some(head.trim()));
    assert!(refs.head.starts_with("ref: refs/heads/"));
    assert!(refs.index.is_some());

    // The total bound: a second snapshot with room for less than all leaves the rest not covered, by bytes.
    let tight = Limits {
        cover: Some(Cover {
            max_bytes: 1 << 20,
            ..limits(&store.blobs()).cover.expect("cover")
        }),
        ..Limits::default()
    };
    let cut = Snapshot::take(&root, &tight, None).expect("snapshot");
    assert_eq!(cut.not_covered.get("mid.bin"), Some(&NotCovered::Bytes));
    assert!(!cut.files["mid.bin"].stored && cut.files["src/main.rs"].stored);
}

#[test]
fn a_covered_snapshot_does_not_read_an_unchanged_file_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("project");
    let store = SnapshotStore::open(&dir.path().join("state")).expect("store");
    write(&root, "a.txt", "a\n");
    write(&root, "b.txt", "b\n");
    let mut first = Snapshot::take(&root, &limits(&store.blobs()), None).expect("snapshot");
    // As if the first snapshot were taken well after the files' last change (no racily clean file).
    first.taken_at += chrono::Duration::seconds(10);
    assert!(!first.blobs.memory.is_empty(), "the walk read the files");
    let kept = store.remember(first);
    write(&root, "b.txt", "bb\n");
    let previous = store.last_of(&root).expect("remembered");
    // Kept as it was returned (moved, not copied), its contents left to the store.
    assert!(Arc::ptr_eq(&kept, &previous));
    assert!(previous.blobs.memory.is_empty());
    assert_eq!(previous.blobs.store.as_deref(), Some(store.blobs().as_path()));
    let second = Snapshot::take(&root, &limits(&store.blobs()), Some(&previous)).expect("snapshot");
    let (a, b) = (&second.files["a.txt"], &second.files["b.txt"]);
    assert!(a.stored && b.stored);
    // A file read in this walk has its content in memory; a.txt's came from the stat cache only.
    assert!(!second.blobs.memory.contains_key(a.sha256.as_deref().expect("hash")));
    assert!(second.blobs.memory.contains_key(b.sha256.as_deref().expect("hash")));
    assert_eq!(second.blobs.store.as_deref(), Some(store.blobs().as_path()));
}
