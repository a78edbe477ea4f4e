//! The store's delta manifests on real trees: each snapshot of a chain reads back as it was taken, also after a
//! restart; a full manifest every `MAX_DEPTH` deltas; removing a parent keeps its children readable and their
//! contents stored; version 1 manifests still read; a damaged chain is a clear error, never a wrong snapshot.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use sha2::{Digest, Sha256};

use super::manifest::MAX_DEPTH;
use super::*;

fn write(root: &Path, rel: &str, bytes: impl AsRef<[u8]>) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, bytes).expect("write");
}

fn covered(store: &SnapshotStore) -> Limits {
    Limits {
        cover: Some(Cover {
            blobs: store.blobs(),
            max_file_bytes: 4 << 20,
            max_bytes: 64 << 20,
        }),
        ..Limits::default()
    }
}

/// A snapshot as [`SnapshotStore::load`] gives it back: its contents in the store.
fn as_loaded(snapshot: &Snapshot, store: &SnapshotStore) -> Snapshot {
    Snapshot {
        blobs: Blobs {
            store: Some(store.blobs()),
            ..Blobs::default()
        },
        ..snapshot.clone()
    }
}

fn manifest_bytes(store: &SnapshotStore, id: &str) -> Vec<u8> {
    std::fs::read(store.dir().join("manifests").join(format!("{id}.json"))).expect("read manifest")
}

/// The header line of a stored manifest.
fn header(store: &SnapshotStore, id: &str) -> serde_json::Value {
    let bytes = manifest_bytes(store, id);
    let end = bytes.iter().position(|byte| *byte == b'\n').expect("a header line");
    serde_json::from_slice(&bytes[..end]).expect("header JSON")
}

/// Takes a covered snapshot as a turn does (with the store's last one), saves it under `id` and keeps it.
fn turn(store: &SnapshotStore, root: &Path, id: &str) -> Arc<Snapshot> {
    let previous = store.last_of(root);
    let snapshot = store.remember(Snapshot::take(root, &covered(store), previous.as_deref()).expect("snapshot"));
    store.save(id, &snapshot).expect("save");
    snapshot
}

/// A project of `n` files.
fn project(root: &Path, n: usize) {
    for i in 0..n {
        write(root, &format!("src/f{i:03}.rs"), format!("fn f{i}() {{}}\n"));
    }
}

#[test]
fn each_snapshot_of_a_chain_reads_back_as_taken_also_after_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("project");
    project(&root, 40);
    let folder = dir.path().join("state");
    let store = SnapshotStore::open(&folder).expect("store");
    let mut taken = vec![turn(&store, &root, "s0")];
    // A change of each kind: content, a new file, a removed one, a mode, a symlink.
    write(&root, "src/f001.rs", "fn changed() {}\n");
    taken.push(turn(&store, &root, "s1"));
    write(&root, "src/new.rs", "fn new() {}\n");
    std::fs::remove_file(root.join("src/f002.rs")).expect("rm");
    taken.push(turn(&store, &root, "s2"));
    std::fs::set_permissions(root.join("src/f003.rs"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::os::unix::fs::symlink("f004.rs", root.join("src/link.rs")).expect("symlink");
    taken.push(turn(&store, &root, "s3"));

    assert!(header(&store, "s0").get("parent").is_none());
    for (id, parent, depth) in [("s1", "s0", 1), ("s2", "s1", 2), ("s3", "s2", 3)] {
        assert_eq!(header(&store, id)["parent"], parent, "{id}");
        assert_eq!(header(&store, id)["depth"], depth, "{id}");
        // A delta lists what changed, not the 40 files.
        assert!(
            manifest_bytes(&store, id).len() * 4 < manifest_bytes(&store, "s0").len(),
            "{id} is not small"
        );
    }
    for (i, snapshot) in taken.iter().enumerate() {
        assert_eq!(
            store.load(&format!("s{i}")).expect("load"),
            as_loaded(snapshot, &store),
            "s{i}"
        );
    }

    // A new store on the same folder, as after a restart: the chain reads, and the first save is a full manifest
    // (this store has not saved the root yet), which the next one deltas on.
    drop(store);
    let store = SnapshotStore::open(&folder).expect("store");
    for (i, snapshot) in taken.iter().enumerate() {
        assert_eq!(
            store.load(&format!("s{i}")).expect("load"),
            as_loaded(snapshot, &store),
            "s{i}"
        );
    }
    write(&root, "src/f005.rs", "fn after_restart() {}\n");
    let s4 = turn(&store, &root, "s4");
    assert!(header(&store, "s4").get("parent").is_none());
    write(&root, "src/f006.rs", "fn after_restart_too() {}\n");
    let s5 = turn(&store, &root, "s5");
    assert_eq!(header(&store, "s5")["parent"], "s4");
    assert_eq!(store.load("s4").expect("load"), as_loaded(&s4, &store));
    assert_eq!(store.load("s5").expect("load"), as_loaded(&s5, &store));
    assert_eq!(
        compare(&store.load("s0").expect("load"), &store.load("s5").expect("load"))
            .expect("compare")
            .changes
            .len(),
        7
    );
}

#[test]
fn a_full_manifest_bounds_every_chain_and_a_big_change_is_written_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("project");
    project(&root, 20);
    let store = SnapshotStore::open(&dir.path().join("state")).expect("store");
    let max = usize::try_from(MAX_DEPTH).expect("depth");
    for i in 0..=max + 1 {
        write(&root, "src/f000.rs", format!("fn turn_{i}() {{}}\n"));
        turn(&store, &root, &format!("t{i:03}"));
    }
    assert_eq!(header(&store, &format!("t{max:03}"))["depth"], MAX_DEPTH);
    assert!(header(&store, &format!("t{:03}", max + 1)).get("parent").is_none());
    let last = store.load(&format!("t{:03}", max + 1)).expect("load");
    assert_eq!(last.files.len(), 20);

    // Half the files changed: a delta would be as big as the whole.
    for i in 0..10 {
        write(&root, &format!("src/f{i:03}.rs"), format!("fn rewritten_{i}() {{}}\n"));
    }
    let big = turn(&store, &root, "big");
    assert!(header(&store, "big").get("parent").is_none());
    assert_eq!(store.load("big").expect("load"), as_loaded(&big, &store));
}

#[test]
fn removing_a_parent_rewrites_its_kept_children_whole_and_keeps_their_contents() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("project");
    project(&root, 20);
    write(&root, "only-first.txt", "gone after the first snapshot\n");
    let store = SnapshotStore::open(&dir.path().join("state")).expect("store");
    turn(&store, &root, "a");
    std::fs::remove_file(root.join("only-first.txt")).expect("rm");
    write(&root, "src/f001.rs", "fn b() {}\n");
    turn(&store, &root, "b");
    write(&root, "src/f002.rs", "fn c() {}\n");
    let c = turn(&store, &root, "c");
    write(&root, "src/f003.rs", "fn d() {}\n");
    let d = turn(&store, &root, "d");
    assert_eq!(header(&store, "d")["parent"], "c");

    // Both of c's ancestors go: c is rewritten whole, d stays a delta on c.
    let (removed, contents) = store.prune(|id| matches!(id, "a" | "b")).expect("prune");
    assert_eq!(removed, 2);
    assert_eq!(
        contents, 3,
        "only-first.txt and the first versions of f001 and f002 are held by no kept snapshot"
    );
    assert_eq!(store.ids().expect("ids"), ["c", "d"]);
    assert!(header(&store, "c").get("parent").is_none());
    assert_eq!(header(&store, "d")["parent"], "c");
    for (id, snapshot) in [("c", &c), ("d", &d)] {
        let loaded = store.load(id).expect("load");
        assert_eq!(loaded, as_loaded(snapshot, &store), "{id}");
        // Every content a kept snapshot holds is still in the store.
        for entry in loaded.files.values() {
            let hash = entry.sha256.as_deref().expect("hash");
            loaded.blob(hash).expect("stored");
        }
    }

    // One removal alone: the same.
    assert!(store.remove("c").expect("remove"));
    assert_eq!(store.load("d").expect("load"), as_loaded(&d, &store));
    assert!(header(&store, "d").get("parent").is_none());
    // And the next save deltas on what is there.
    write(&root, "src/f004.rs", "fn e() {}\n");
    let e = turn(&store, &root, "e");
    assert_eq!(header(&store, "e")["parent"], "d");
    assert_eq!(store.load("e").expect("load"), as_loaded(&e, &store));
}

#[test]
fn a_version_1_manifest_still_reads_and_gets_deltas_after_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("project");
    project(&root, 5);
    let store = SnapshotStore::open(&dir.path().join("state")).expect("store");
    let old = Snapshot::take(&root, &covered(&store), None).expect("snapshot");
    // The JSON of an efrd before the deltas: the snapshot, "version": 1 first.
    let mut json = serde_json::to_value(&old).expect("json");
    let object = json.as_object_mut().expect("object");
    object.insert("version".to_owned(), 1.into());
    std::fs::write(
        store.dir().join("manifests/old.json"),
        serde_json::to_vec(&json).expect("bytes"),
    )
    .expect("write");
    let old = store.remember(old);
    assert_eq!(store.load("old").expect("load"), as_loaded(&old, &store));
    assert_eq!(store.collect_garbage().expect("gc"), 0);
    // An old manifest is removed like any other.
    turn(&store, &root, "new");
    assert!(store.remove("old").expect("remove"));
    assert!(store.load("new").is_ok());
}

/// Rewrites a version 2 manifest's body with `edit` and a matching header hash (a damage its hash cannot see).
fn rewrite_body(store: &SnapshotStore, id: &str, edit: impl Fn(&mut serde_json::Value)) {
    let bytes = manifest_bytes(store, id);
    let end = bytes.iter().position(|byte| *byte == b'\n').expect("header");
    let mut head: serde_json::Value = serde_json::from_slice(&bytes[..end]).expect("header");
    let mut body: serde_json::Value = serde_json::from_slice(&bytes[end + 1..]).expect("body");
    edit(&mut body);
    let body = serde_json::to_vec(&body).expect("body");
    head["sha256"] = format!("{:x}", Sha256::digest(&body)).into();
    let mut out = serde_json::to_vec(&head).expect("header");
    out.push(b'\n');
    out.extend(body);
    std::fs::write(store.dir().join("manifests").join(format!("{id}.json")), out).expect("write");
}

#[test]
fn a_damaged_chain_is_a_clear_error_never_a_wrong_snapshot() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("project");
    project(&root, 10);
    let store = SnapshotStore::open(&dir.path().join("state")).expect("store");
    turn(&store, &root, "p");
    write(&root, "src/f001.rs", "fn changed() {}\n");
    turn(&store, &root, "q");
    let path = store.dir().join("manifests/q.json");
    let good = std::fs::read(&path).expect("read");
    let expect_manifest_error = |what: &str, needle: &str| {
        let error = store.load("q").expect_err(what);
        assert!(
            matches!(error, SnapshotError::Manifest { .. }) && error.to_string().contains(needle),
            "{what}: {error}"
        );
        assert!(error.to_string().contains("q.json"), "{what} names the delta: {error}");
    };

    // A byte changed in the delta's body (the hash a mode would have, say).
    let mut flipped = good.clone();
    let at = flipped.len() - 10;
    flipped[at] ^= 0x01;
    std::fs::write(&path, &flipped).expect("write");
    expect_manifest_error("a flipped byte", "damaged");
    // Cut short.
    std::fs::write(&path, &good[..good.len() / 2]).expect("write");
    expect_manifest_error("cut short", "damaged");

    // Consistent bytes that do not fit the parent: a removed path it lacks, a wrong count, a wrong depth.
    std::fs::write(&path, &good).expect("write");
    rewrite_body(&store, "q", |body| body["removed"] = serde_json::json!(["src/none.rs"]));
    expect_manifest_error("a removal", "does not have");
    std::fs::write(&path, &good).expect("write");
    rewrite_body(&store, "q", |body| body["count"] = 11.into());
    expect_manifest_error("a count", "records 11 files");
    std::fs::write(&path, &good).expect("write");
    rewrite_body(&store, "q", |body| body["depth"] = 2.into());
    expect_manifest_error("a depth", "parent differs");

    // The parent gone behind the store's back: the delta says so, and the collection refuses to guess.
    std::fs::write(&path, &good).expect("write");
    assert!(store.load("q").is_ok());
    std::fs::remove_file(store.dir().join("manifests/p.json")).expect("rm");
    expect_manifest_error("no parent", "parent snapshot p is missing");
    let error = store.collect_garbage().expect_err("gc over a broken chain");
    assert!(error.to_string().contains("parent snapshot p is missing"), "{error}");
}
