//! efr's trash and the collection of old snapshots through the real efrd: a forced undo's file listed by trash.list,
//! trash.restore refusing to overwrite and restoring to another path (its command id answered once), and, after a
//! restart with `[undo] keep_turns = 1`, the older turns' snapshots and the contents only they held removed by the
//! collection's first pass after the start.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::path::Path;

use crate::common;

use efr_protocol::ErrorCode;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::daemon_undo::{find_folder, undo};
use common::tools::{prompt_to, shell_call, start, text};
use common::{command_id, daemon, events_until, model};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_undos_file_is_listed_and_restored_never_over_a_file() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let root = project.path();
    std::fs::write(root.join("a.txt"), "mine\n").unwrap();
    let server = model(vec![shell_call("call_edit", "printf 'turn\\n' > a.txt"), text("done")]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, root, "full", "edit a").await;
    events_until(&mut client, id, "turn_completed").await;
    std::fs::write(root.join("a.txt"), "the user's edit\n").unwrap();
    let forced = undo(&mut client, json!({"conversation_id": conversation, "force": true}))
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "mine\n",
        "{forced}"
    );

    let list = client.call("trash.list", json!({})).await.unwrap().unwrap();
    let entries = list["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{list}");
    let entry = &entries[0];
    assert_eq!(entry["path"], json!(root.join("a.txt").display().to_string()), "{list}");
    assert_eq!(entry["undo_id"], forced["undo_id"], "{list}");
    assert_eq!(entry["size"], 16, "{list}");
    let (trashed, expires) = (
        chrono::DateTime::parse_from_rfc3339(entry["trashed_at"].as_str().unwrap()).unwrap(),
        chrono::DateTime::parse_from_rfc3339(entry["expires_at"].as_str().unwrap()).unwrap(),
    );
    assert_eq!((expires - trashed).num_days(), 30, "{list}");
    assert_eq!(
        (list["max_bytes"].as_u64(), list["days"].as_u64()),
        (Some(4 << 30), Some(30))
    );
    let id = entry["id"].as_str().unwrap();

    // The path holds a file again (the undo put the user's first version back): refused, nothing moves.
    let refused = client
        .call("trash.restore", json!({"command_id": command_id(), "id": id}))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(refused.code, ErrorCode::Conflict, "{refused:?}");
    assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "mine\n");
    let relative = client
        .call(
            "trash.restore",
            json!({"command_id": command_id(), "id": id, "to": "a.txt"}),
        )
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(relative.code, ErrorCode::Invalid, "{relative:?}");

    // To another path: the user's edit is back there; the same command id again answers the same and moves nothing.
    let to = root.join("a.user.txt");
    let params = json!({"command_id": command_id(), "id": id, "to": to.display().to_string()});
    let restored = client.call("trash.restore", params.clone()).await.unwrap().unwrap();
    assert_eq!(restored["path"], json!(to.display().to_string()), "{restored}");
    assert_eq!(std::fs::read_to_string(&to).unwrap(), "the user's edit\n");
    std::fs::remove_file(&to).unwrap();
    let again = client.call("trash.restore", params).await.unwrap().unwrap();
    assert_eq!(again, restored);
    assert!(!to.exists(), "a repeat changes nothing");
    let list = client.call("trash.list", json!({})).await.unwrap().unwrap();
    assert!(list.get("entries").is_none(), "{list}");
    let gone = client
        .call("trash.restore", json!({"command_id": command_id(), "id": id}))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(gone.code, ErrorCode::NotFound, "{gone:?}");
}

fn blob(snapshots: &Path, content: &str) -> std::path::PathBuf {
    let hash = format!("{:x}", Sha256::digest(content.as_bytes()));
    snapshots.join("blobs").join(&hash[..2]).join(&hash[2..])
}

fn manifests(snapshots: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(snapshots.join("manifests"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_start_only_the_newest_turns_snapshots_are_kept_and_their_contents() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let root = project.path();
    std::fs::write(root.join("a.txt"), "first version\n").unwrap();
    let server = model(vec![
        shell_call("call_one", "printf 'second version\\n' > a.txt"),
        text("one"),
        shell_call("call_two", "printf 'third version\\n' > a.txt"),
        text("two"),
    ])
    .await;
    let mut efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (first, conversation, id) = start(&mut client, root, "full", "one").await;
    events_until(&mut client, id, "turn_completed").await;
    let second = prompt_to(&mut client, Some(&conversation), root, "full", "two").await;
    events_until(&mut client, id, "turn_completed").await;
    let (first, second) = (first["turn_id"].as_str().unwrap(), second["turn_id"].as_str().unwrap());
    let snapshots = find_folder(home.path(), "snapshots").expect("efrd's snapshot store below its home");
    assert!(blob(&snapshots, "first version\n").is_file());
    // Two turns, each a pre and a post snapshot of the project and of $SCRATCH.
    assert_eq!(manifests(&snapshots).len(), 8, "{:?}", manifests(&snapshots));

    let config = home.path().join("config/config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[undo]\nkeep_turns = 1\n");
    std::fs::write(&config, text).unwrap();
    drop(client);
    efrd.kill().unwrap();
    efrd.restart().unwrap();
    let mut client = efrd.client().await.unwrap();
    let kept: Vec<String> = ["post-1", "post", "pre-1", "pre"]
        .iter()
        .map(|phase| format!("{second}-{phase}.json"))
        .collect();
    // The collection runs after READY=1, so the start never waits for it: its first pass comes at once.
    let waited = std::time::Instant::now();
    while manifests(&snapshots) != kept && waited.elapsed() < std::time::Duration::from_secs(20) {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(manifests(&snapshots), kept);
    // The first version was only in the first turn's snapshots; the second is the kept turn's pre state.
    assert!(!blob(&snapshots, "first version\n").exists());
    assert!(blob(&snapshots, "second version\n").is_file());
    let old: Value = undo(&mut client, json!({"conversation_id": conversation, "turn_id": first}))
        .await
        .unwrap_err()
        .data
        .unwrap();
    assert_eq!(old["refused"]["kind"], "nothing", "{old}");
    let undone = undo(&mut client, json!({"conversation_id": conversation}))
        .await
        .unwrap();
    assert_eq!(undone["turn_id"], json!(second), "{undone}");
    assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "second version\n");
}
