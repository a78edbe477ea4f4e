//! turn.undo through the real efrd and a scripted model: a turn that patches, runs `sed -i`, renames, changes a
//! mode, writes an ignored folder, commits with git and runs `rm -rf src/`, undone and redone, checked against the
//! tree's bytes, modes and symlinks and the repository's HEAD; then the refusals, a conflict and force.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::common;

use efr_protocol::ErrorCode;
use serde_json::{Value, json};

use common::tools::{patch_call, shell_call, start, text};
use common::{command_id, daemon, events_until, git, model};

/// Every file below `root` but `.git`: (symlink, mode, bytes or target).
pub(crate) fn tree(root: &Path) -> BTreeMap<String, (bool, u32, Vec<u8>)> {
    let mut found = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if rel == ".git" {
                continue;
            } else if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                found.insert(rel, (true, 0, target.to_string_lossy().as_bytes().to_vec()));
            } else if meta.is_dir() {
                stack.push(path);
            } else {
                found.insert(
                    rel,
                    (false, meta.permissions().mode() & 0o7777, std::fs::read(&path).unwrap()),
                );
            }
        }
    }
    found
}

pub(crate) async fn undo(
    client: &mut efr_test_support::client::Client,
    params: Value,
) -> Result<Value, efr_protocol::ErrorBody> {
    let mut params = params;
    params["command_id"] = json!(command_id());
    client.call("turn.undo", params).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_is_undone_and_redone_byte_for_byte_with_its_commit() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let root = project.path();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "fn one() -> u32 {\n    1\n}\n").unwrap();
    std::fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(root.join("config.txt"), "name = old\n").unwrap();
    std::fs::write(root.join("old-name.txt"), "moving\n").unwrap();
    std::fs::write(root.join("run.sh"), "#!/bin/sh\n").unwrap();
    std::fs::write(root.join(".gitignore"), "cache/\n").unwrap();
    std::fs::create_dir_all(root.join("cache")).unwrap();
    std::fs::write(root.join("cache/state"), "cold\n").unwrap();
    std::os::unix::fs::symlink("config.txt", root.join("link")).unwrap();
    git(root, &["init", "-q"]);
    git(root, &["add", "."]);
    git(root, &["commit", "-qm", "start"]);
    let head = git(root, &["rev-parse", "HEAD"]);
    let before = tree(root);
    let patch = "*** Begin Patch\n*** Update File: src/lib.rs\n@@ fn one() -> u32 {\n-    1\n+    11\n*** End Patch\n";
    let commit = "git -c user.name=m -c user.email=m@m add -A && git -c user.name=m -c user.email=m@m commit -qm model";
    let server = model(vec![
        patch_call("call_patch", patch),
        shell_call(
            "call_sed",
            "sed -i 's/old/new/' config.txt && mv old-name.txt new-name.txt && chmod 755 run.sh",
        ),
        shell_call("call_cache", "echo warm > cache/state && printf 'x' > added.txt"),
        shell_call("call_commit", commit),
        shell_call("call_rm", "rm -rf src/"),
        text("done"),
    ])
    .await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (sent, conversation, id) = start(&mut client, root, "full", "change everything").await;
    let events = events_until(&mut client, id, "turn_completed").await;
    let turn_id = sent["turn_id"].as_str().unwrap().to_owned();
    let taken: Vec<&Value> = events.iter().filter(|e| e["kind"] == "snapshot_taken").collect();
    assert!(
        taken.iter().any(|e| e["phase"] == "pre" && e["root"] == "."),
        "{taken:?}"
    );
    assert!(
        taken.iter().any(|e| e["phase"] == "post" && e["root"] == "."),
        "{taken:?}"
    );
    let done = events.last().unwrap();
    assert_eq!(done["undo"]["undoable"], true, "{done}");
    assert_eq!(done["undo"]["roots"][0]["refs"], 1, "{done}");
    assert!(!root.join("src").exists());
    let after = tree(root);
    let head_after = git(root, &["rev-parse", "HEAD"]);
    assert_ne!(head_after, head);

    // A dry run changes nothing.
    let dry = undo(&mut client, json!({"conversation_id": conversation, "dry_run": true}))
        .await
        .unwrap();
    assert_eq!(dry["turn_id"], json!(turn_id));
    assert!(dry.get("applied").is_none(), "{dry}");
    assert_eq!(tree(root), after);

    let undone = undo(&mut client, json!({"conversation_id": conversation}))
        .await
        .unwrap();
    assert_eq!(undone["applied"], true, "{undone}");
    assert_eq!(tree(root), before, "{undone}");
    assert_eq!(git(root, &["rev-parse", "HEAD"]), head);
    assert_eq!(git(root, &["status", "--porcelain"]), "");
    let commands: Vec<&Value> = undone["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "command")
        .collect();
    assert!(commands.is_empty(), "no command outside efr's reach ran: {commands:?}");

    let again = undo(
        &mut client,
        json!({"conversation_id": conversation, "turn_id": turn_id}),
    )
    .await
    .unwrap_err();
    assert_eq!(again.code, ErrorCode::Conflict);
    assert_eq!(again.data.as_ref().unwrap()["refused"]["kind"], "undone", "{again:?}");
    let list = undo(&mut client, json!({"conversation_id": conversation, "list": true}))
        .await
        .unwrap();
    assert_eq!(list["turns"][0]["undone"], true, "{list}");

    let redone = undo(&mut client, json!({"conversation_id": conversation, "redo": true}))
        .await
        .unwrap();
    assert_eq!(redone["applied"], true, "{redone}");
    assert_eq!(tree(root), after);
    assert_eq!(git(root, &["rev-parse", "HEAD"]), head_after);

    // The user edits a file the turn wrote: undo refuses; force moves the user's version to the trash.
    std::fs::write(root.join("config.txt"), "name = mine\n").unwrap();
    let refused = undo(&mut client, json!({"conversation_id": conversation}))
        .await
        .unwrap_err();
    assert_eq!(
        refused.data.as_ref().unwrap()["refused"]["kind"],
        "conflicts",
        "{refused:?}"
    );
    assert_eq!(
        refused.data.as_ref().unwrap()["refused"]["paths"],
        json!(["config.txt"])
    );
    assert_eq!(
        std::fs::read_to_string(root.join("config.txt")).unwrap(),
        "name = mine\n"
    );
    let forced = undo(&mut client, json!({"conversation_id": conversation, "force": true}))
        .await
        .unwrap();
    assert_eq!(tree(root), before, "{forced}");
    let trash = forced["trash"].as_str().unwrap();
    assert_eq!(
        std::fs::read_to_string(Path::new(trash).join("files/config.txt")).unwrap(),
        "name = mine\n"
    );
    assert!(forced["notes"][0].as_str().unwrap().contains("trash"), "{forced}");
    // undo_applied of the undo, the redo and the forced undo, in order, outside the turn.
    let mut applied = Vec::new();
    for _ in 0..3 {
        applied.push(
            events_until(&mut client, id, "undo_applied")
                .await
                .last()
                .unwrap()
                .clone(),
        );
    }
    let redo: Vec<&Value> = applied.iter().map(|e| &e["redo"]).collect();
    assert_eq!(redo, [&json!(false), &json!(true), &json!(false)], "{applied:?}");
    assert!(
        applied
            .iter()
            .all(|e| e.get("turn_id").is_none() && e["undone_turn_id"] == json!(turn_id))
    );
    assert_eq!(applied[2]["trashed"], 1, "{applied:?}");
}

/// The folder named `name` below `dir` (depth first), if any.
pub(crate) fn find_folder(dir: &Path, name: &str) -> Option<std::path::PathBuf> {
    for entry in std::fs::read_dir(dir).ok()? {
        let path = entry.ok()?.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == name) {
                return Some(path);
            }
            if let Some(found) = find_folder(&path, name) {
                return Some(found);
            }
        }
    }
    None
}

/// An undo that restores many files, efrd killed with SIGKILL once its journal shows paths done: after a restart
/// turn.undo says the undo did not finish and how far it got, the next undo finishes it, and every file the user
/// had before the turn is back byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undo_killed_midway_is_reported_and_finished_after_a_restart() {
    const FILES: usize = 1000;
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let root = project.path();
    std::fs::create_dir_all(root.join("data")).unwrap();
    for i in 0..FILES {
        std::fs::write(root.join(format!("data/f{i:04}.txt")), format!("the user's file {i}\n")).unwrap();
    }
    std::fs::write(root.join("notes.txt"), "not touched by the turn\n").unwrap();
    let before = tree(root);
    let server = model(vec![shell_call("call_rm", "rm -rf data/"), text("done")]).await;
    let mut efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (sent, conversation, id) = start(&mut client, root, "full", "remove the data").await;
    let done = events_until(&mut client, id, "turn_completed").await;
    assert_eq!(done.last().unwrap()["undo"]["undoable"], true, "{:?}", done.last());
    assert!(!root.join("data").exists());
    let turn_id = sent["turn_id"].as_str().unwrap().to_owned();
    let snapshots = find_folder(home.path(), "snapshots").expect("efrd's snapshot store below its home");
    let record = snapshots.join("undo").join(format!("{turn_id}.json"));

    // The undo runs in its own task; efrd is killed once its log has paths done and before it finishes.
    let call = {
        let conversation = conversation.clone();
        let params = json!({"conversation_id": conversation, "command_id": command_id()});
        // The call ends with the connection when efrd is killed: its result is not looked at.
        tokio::spawn(async move { client.call("turn.undo", params).await.is_ok() })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let log_lines = || -> usize {
        let Ok(record) = std::fs::read(&record) else { return 0 };
        let record: Value = serde_json::from_slice(&record).unwrap();
        let log = snapshots
            .join("undo")
            .join(format!("{}.log", record["undo_id"].as_str().unwrap()));
        std::fs::read_to_string(log).map_or(0, |text| text.lines().count())
    };
    while log_lines() < 10 {
        assert!(
            std::time::Instant::now() < deadline,
            "the undo's journal never showed a path done"
        );
        assert!(
            !call.is_finished(),
            "the undo finished before it could be killed: {:?}",
            call.await
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    efrd.kill().unwrap();
    let _ = call.await;
    let written = log_lines();
    let restored = std::fs::read_dir(root.join("data")).map_or(0, Iterator::count);
    assert!(
        restored >= written && restored < FILES,
        "the kill came midway: {restored} of {FILES} files restored, {written} journaled"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("notes.txt")).unwrap(),
        "not touched by the turn\n"
    );

    efrd.restart().unwrap();
    let mut client = efrd.client().await.unwrap();
    // The list says the turn is undone in part (a stopped undo), and a dry run says what was done.
    let list = undo(&mut client, json!({"conversation_id": conversation, "list": true}))
        .await
        .unwrap();
    assert_eq!(list["turns"][0]["turn_id"], json!(turn_id), "{list}");
    assert_eq!(list["turns"][0]["undone"], true, "{list}");
    assert_eq!(list["turns"][0]["stopped"], true, "{list}");
    let dry = undo(&mut client, json!({"conversation_id": conversation, "dry_run": true}))
        .await
        .unwrap();
    let note = dry["notes"][0].as_str().unwrap_or_default();
    assert!(
        note.contains("did not finish") && note.contains(&format!("it had done {written} paths")),
        "{dry}"
    );
    // The second undo finishes the first: every file of the user is back, nothing else changed.
    let finished = undo(&mut client, json!({"conversation_id": conversation}))
        .await
        .unwrap();
    assert_eq!(finished["applied"], true, "{finished}");
    assert_eq!(finished["resumed"], true, "{finished}");
    let after = tree(root);
    let differ: Vec<&String> = after
        .keys()
        .chain(before.keys())
        .filter(|path| after.get(*path) != before.get(*path))
        .collect();
    assert!(differ.is_empty(), "paths not as before the turn: {differ:?}");
    let again = undo(&mut client, json!({"conversation_id": conversation}))
        .await
        .unwrap_err();
    assert_eq!(again.code, ErrorCode::Conflict, "{again:?}");
    // The turn is undone (not "nothing to undo"), with or without its id named.
    assert_eq!(again.data.as_ref().unwrap()["refused"]["kind"], "undone", "{again:?}");
    let named = undo(
        &mut client,
        json!({"conversation_id": conversation, "turn_id": turn_id}),
    )
    .await
    .unwrap_err();
    assert_eq!(named.data.as_ref().unwrap()["refused"]["kind"], "undone", "{named:?}");
    let list = undo(&mut client, json!({"conversation_id": conversation, "list": true}))
        .await
        .unwrap();
    assert_eq!(list["turns"][0]["undone"], true, "{list}");
    assert!(list["turns"][0].get("stopped").is_none(), "{list}");
}
