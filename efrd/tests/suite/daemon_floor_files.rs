//! Floor files through the real efrd, bubblewrap and `efr-launcher`, in auto mode: an approved edit of `~/.bashrc`
//! is copied before the write, recorded as home_file_changed (covered, with its backup), and the turn's undo puts
//! the file back byte for byte.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use serde_json::{Value, json};

use common::auto::{bounded, daemon_with, tempdir};
use common::tools::{shell_call, start, text};
use common::{command_id, events_until, model};

/// The original `~/.bashrc`: not UTF-8 and without a final newline, so "byte for byte" means it.
const ORIGINAL: &[u8] = b"# mine\n\xfe\xff export A=1";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_bashrc_edit_is_backed_up_recorded_and_undone_byte_for_byte() {
    bashrc_edit_in("auto").await;
}

/// Full mode runs every call as the user with no question, but a floor file still asks, and is covered the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_full_mode_a_bashrc_edit_asks_the_user_and_is_undone_byte_for_byte() {
    bashrc_edit_in("full").await;
}

async fn bashrc_edit_in(mode: &str) {
    let home = tempdir();
    let rc = home.path().join(".bashrc");
    std::fs::write(&rc, ORIGINAL).unwrap();
    let project = home.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("notes.txt"), "one\n").unwrap();
    let server = model(vec![
        shell_call("call_rc", "echo 'alias ls=evil' >> ~/.bashrc && echo two >> notes.txt"),
        text("done"),
    ])
    .await;
    let efrd = daemon_with(home.path(), &server, &[]);
    let mut client = efrd.client().await.unwrap();

    let (_, conversation, id) = start(&mut client, &project, mode, "edit my bashrc").await;
    let events = bounded("the question", events_until(&mut client, id, "approval_requested")).await;
    let asked = events.last().unwrap();
    assert_eq!(asked["exit"]["kind"], "floor_edit", "{asked}");
    client
        .ok(
            "approval.respond",
            json!({"command_id": command_id(), "conversation_id": conversation, "call_id": "call_rc", "decision": "allow"}),
        )
        .await
        .unwrap();
    let events = bounded("the turn", events_until(&mut client, id, "turn_completed")).await;
    let mut edited = ORIGINAL.to_vec();
    edited.extend_from_slice(b"alias ls=evil\n");
    assert_eq!(std::fs::read(&rc).unwrap(), edited, "the approved edit ran");

    let changed: Vec<&Value> = events.iter().filter(|e| e["kind"] == "home_file_changed").collect();
    assert_eq!(changed.len(), 1, "{events:#?}");
    let changed = changed[0];
    assert_eq!(changed["call_id"], "call_rc");
    assert_eq!(changed["path"], rc.to_str().unwrap());
    assert_eq!(changed["floor"], true);
    assert_eq!(changed["covered"], true, "{changed}");
    assert!(changed.get("real").is_none(), "no link: {changed}");
    let backup = changed["backup"].as_str().expect("a backup");
    assert_eq!(
        std::fs::read(backup).unwrap(),
        ORIGINAL,
        "the copy is the file before the write"
    );
    let ended = events.last().unwrap();
    assert_eq!(ended["undo"]["home_files"], 1, "{ended}");
    let turn_id = ended["turn_id"].as_str().unwrap().to_owned();

    let undone = client
        .call(
            "turn.undo",
            json!({"command_id": command_id(), "conversation_id": conversation, "turn_id": turn_id}),
        )
        .await
        .unwrap()
        .expect("the undo runs");
    assert_eq!(
        std::fs::read(&rc).unwrap(),
        ORIGINAL,
        "undo restores it byte for byte: {undone}"
    );
    assert_eq!(std::fs::read_to_string(project.join("notes.txt")).unwrap(), "one\n");
    let entries = undone["entries"].as_array().unwrap();
    assert!(
        entries
            .iter()
            .any(|e| e["path"] == rc.to_str().unwrap() && e["action"] == "restore"),
        "{undone}"
    );
}

/// The kills that reach efr, pid 1 or the user's session: refused before they run, in auto and in full, and efrd
/// lives on to answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kills_of_efr_and_the_users_session_are_refused_in_auto_and_full() {
    let home = tempdir();
    let project = home.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let lines = [
        "pkill efrd",
        "kill -9 $PPID",
        "killall -u $USER",
        "pkill -f efr-launcher",
    ];
    let mut replies = Vec::new();
    for mode in ["auto", "full"] {
        for (n, line) in lines.iter().enumerate() {
            replies.push(shell_call(&format!("{mode}_{n}"), line));
        }
        replies.push(text("done"));
    }
    let server = model(replies).await;
    let efrd = daemon_with(home.path(), &server, &[]);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, &project, "auto", "stop things").await;
    for mode in ["auto", "full"] {
        if mode == "full" {
            common::tools::prompt_to(&mut client, Some(&conversation), &project, "full", "again").await;
        }
        let events = bounded(mode, events_until(&mut client, id, "turn_completed")).await;
        assert!(
            !events
                .iter()
                .any(|e| e["kind"] == "approval_requested" || e["kind"] == "exit_requested"),
            "a floor never asks: {events:#?}"
        );
        for n in 0..lines.len() {
            let call_id = format!("{mode}_{n}");
            let done = events
                .iter()
                .find(|e| e["kind"] == "tool_call_completed" && e["call_id"] == call_id.as_str())
                .unwrap_or_else(|| panic!("{call_id} completed: {events:#?}"));
            assert_eq!(done["status"], "failed", "{done}");
            assert!(done["refusal"].as_str().unwrap().contains("(floor)"), "{done}");
        }
    }
    // efrd still answers.
    client.ok("admin.status", json!({})).await.unwrap();
}

/// A delete in a real cache runs without a question and is recorded with the bytes it freed; a delete elsewhere in
/// the home still asks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cache_delete_runs_without_a_question_and_records_the_bytes_freed() {
    let home = tempdir();
    let pip = home.path().join(".cache/pip");
    std::fs::create_dir_all(pip.join("wheels")).unwrap();
    std::fs::write(pip.join("wheels/a.whl"), vec![7u8; 150_000]).unwrap();
    std::fs::write(pip.join("index"), vec![1u8; 4_000]).unwrap();
    std::fs::create_dir_all(home.path().join("notes")).unwrap();
    std::fs::write(home.path().join("notes/keep.md"), "mine\n").unwrap();
    let project = home.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let server = model(vec![
        shell_call("call_cache", "rm -rf ~/.cache/pip"),
        shell_call("call_notes", "rm -rf ~/notes"),
        text("done"),
    ])
    .await;
    let efrd = daemon_with(home.path(), &server, &[]);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, &project, "auto", "free some space").await;
    let events = bounded("the question", events_until(&mut client, id, "approval_requested")).await;
    let asked = events.last().unwrap();
    assert_eq!(
        asked["call_id"], "call_notes",
        "only the delete outside a cache asks: {asked}"
    );
    assert!(!pip.exists(), "the cache delete ran");
    let applied: Vec<&Value> = events.iter().filter(|e| e["kind"] == "cache_delete_applied").collect();
    assert_eq!(applied.len(), 1, "{events:#?}");
    assert_eq!(applied[0]["call_id"], "call_cache");
    assert_eq!(applied[0]["paths"], json!([pip.to_str().unwrap()]));
    assert_eq!(applied[0]["freed_bytes"], 154_000, "{}", applied[0]);
    assert!(
        !events
            .iter()
            .any(|e| e["call_id"] == "call_cache" && (e["kind"] == "exit_judged" || e["kind"] == "approval_requested")),
        "no judge: {events:#?}"
    );
    client
        .ok(
            "approval.respond",
            json!({"command_id": command_id(), "conversation_id": conversation, "call_id": "call_notes", "decision": "deny"}),
        )
        .await
        .unwrap();
    bounded("the turn", events_until(&mut client, id, "turn_completed")).await;
    assert!(home.path().join("notes/keep.md").exists());
}
