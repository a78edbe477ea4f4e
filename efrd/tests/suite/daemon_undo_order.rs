//! turn.undo among the conversation's other writes, through the real efrd: a repeat of its command id returns the
//! first result and changes nothing; a prompt sent while an undo writes waits for it; an undo sent the moment a
//! client reads turn_completed is not refused as running; and, in auto mode, what a turn wrote in `$SCRATCH` (from
//! the conversation's first turn on) is undone with the project.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use serde_json::json;

use super::daemon_undo::{find_folder, tree, undo};
use common::auto::{bounded, daemon_with, tempdir};
use common::tools::{prompt_to, shell_call, start, text, tool_output};
use common::{command_id, daemon, events_until, model};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_command_id_returns_the_first_undo_and_changes_nothing() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let root = project.path();
    std::fs::write(root.join("a.txt"), "before\n").unwrap();
    let server = model(vec![shell_call("call_edit", "printf 'after\\n' > a.txt"), text("done")]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, root, "full", "edit").await;
    events_until(&mut client, id, "turn_completed").await;

    let params = json!({"conversation_id": conversation, "command_id": command_id()});
    let first = client.call("turn.undo", params.clone()).await.unwrap().unwrap();
    assert_eq!(first["applied"], true, "{first}");
    assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "before\n");
    let repeat = client.call("turn.undo", params.clone()).await.unwrap().unwrap();
    assert_eq!(repeat, first, "the repeat answers the first result");
    // Redone under a new id; the first id again still answers its result and does not undo a second time.
    let redone = undo(&mut client, json!({"conversation_id": conversation, "redo": true}))
        .await
        .unwrap();
    assert_eq!(redone["applied"], true, "{redone}");
    let after_redo = tree(root);
    let late = client.call("turn.undo", params).await.unwrap().unwrap();
    assert_eq!(late, first);
    assert_eq!(tree(root), after_redo, "a repeat changes nothing");
    // One undo_applied per undo: the undo and the redo, none for the repeats.
    let events = events_until(&mut client, id, "undo_applied").await;
    assert_eq!(events.last().unwrap()["redo"], false);
    let events = events_until(&mut client, id, "undo_applied").await;
    assert_eq!(events.last().unwrap()["redo"], true);
    let list = undo(&mut client, json!({"conversation_id": conversation, "list": true}))
        .await
        .unwrap();
    assert!(list["turns"][0].get("undone").is_none(), "{list}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_sent_while_an_undo_writes_starts_after_it() {
    const FILES: usize = 1000;
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let root = project.path();
    std::fs::create_dir_all(root.join("data")).unwrap();
    for i in 0..FILES {
        std::fs::write(root.join(format!("data/f{i:04}.txt")), format!("file {i}\n")).unwrap();
    }
    let server = model(vec![
        shell_call("call_rm", "rm -rf data/"),
        text("removed"),
        shell_call("call_count", "ls data | wc -l"),
        text("counted"),
    ])
    .await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, root, "full", "remove the data").await;
    events_until(&mut client, id, "turn_completed").await;
    let snapshots = find_folder(home.path(), "snapshots").expect("efrd's snapshot store below its home");

    // The undo runs on a connection of its own; the prompt is sent once its journal shows paths done.
    let mut undoer = efrd.client().await.unwrap();
    let params = json!({"conversation_id": conversation, "command_id": command_id()});
    let call = tokio::spawn(async move { undoer.call("turn.undo", params).await.unwrap() });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let journaled = || {
        std::fs::read_dir(snapshots.join("undo")).is_ok_and(|entries| {
            entries.filter_map(Result::ok).any(|entry| {
                entry.path().extension().is_some_and(|ext| ext == "log")
                    && std::fs::read_to_string(entry.path()).is_ok_and(|log| log.lines().count() >= 10)
            })
        })
    };
    while !journaled() {
        assert!(
            std::time::Instant::now() < deadline,
            "the undo's journal never showed a path done"
        );
        assert!(!call.is_finished(), "the undo finished before the prompt could be sent");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let sent = prompt_to(&mut client, Some(&conversation), root, "full", "count the data").await;
    let undone = bounded("the undo", call).await.unwrap().unwrap();
    assert_eq!(undone["applied"], true, "{undone}");
    let events = events_until(&mut client, id, "turn_completed").await;
    let seq_of = |kind: &str| -> u64 {
        events
            .iter()
            .find(|e| e["kind"] == kind)
            .and_then(|e| e["seq"].as_u64())
            .unwrap_or_else(|| panic!("no {kind} in {events:?}"))
    };
    assert!(
        seq_of("prompt_queued") < seq_of("undo_applied") && seq_of("undo_applied") < seq_of("turn_started"),
        "the prompt is queued during the undo and its turn starts after it: {events:?}"
    );
    assert_eq!(events.last().unwrap()["turn_id"], sent["turn_id"]);
    // The turn after the undo saw every file back.
    let counted = tool_output(&server, "call_count");
    assert!(counted.contains("1000"), "{counted}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undo_sent_as_soon_as_turn_completed_is_read_is_not_refused_as_running() {
    // The turn's task still has its way out to go when its end is committed and broadcast; a client that read the
    // end must find the turn over. Many rounds, as the window is short.
    const TURNS: usize = 20;
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let root = project.path();
    let mut replies = Vec::new();
    for turn in 0..TURNS {
        replies.push(shell_call(
            &format!("call_{turn}"),
            &format!("printf '{turn}\\n' > turn.txt"),
        ));
        replies.push(text("written"));
    }
    let server = model(replies).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, root, "full", "write 0").await;
    for turn in 0..TURNS {
        if turn > 0 {
            prompt_to(&mut client, Some(&conversation), root, "full", &format!("write {turn}")).await;
        }
        events_until(&mut client, id, "turn_completed").await;
        assert!(root.join("turn.txt").exists(), "turn {turn} wrote nothing");
        // No wait between reading the end and the undo.
        let undone = undo(&mut client, json!({"conversation_id": conversation}))
            .await
            .unwrap_or_else(|error| panic!("turn {turn}: the undo right after turn_completed: {error:?}"));
        assert_eq!(undone["applied"], true, "turn {turn}: {undone}");
        assert!(!root.join("turn.txt").exists(), "turn {turn}: the undo left its file");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_an_auto_turn_wrote_in_scratch_is_undone_with_the_project() {
    let home = tempdir();
    let project = tempdir();
    let root = project.path();
    std::fs::write(root.join("a.txt"), "project\n").unwrap();
    let server = model(vec![
        shell_call("call_one", "echo one > \"$SCRATCH/notes\""),
        text("one"),
        shell_call(
            "call_two",
            "echo two >> \"$SCRATCH/notes\" && echo new > \"$SCRATCH/new.txt\" && echo edited > a.txt",
        ),
        text("two"),
    ])
    .await;
    let efrd = daemon_with(home.path(), &server, &[]);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, root, "auto", "one").await;
    let first = bounded("the first turn", events_until(&mut client, id, "turn_completed")).await;
    // The conversation's first turn already covers $SCRATCH, which its first contained call made.
    let done = first.last().unwrap();
    assert_eq!(
        done["undo"]["roots"][1],
        json!({"shown": "$SCRATCH", "files": 1}),
        "{done}"
    );
    let second = prompt_to(&mut client, Some(&conversation), root, "auto", "two").await;
    bounded("the second turn", events_until(&mut client, id, "turn_completed")).await;
    let scratch = find_folder(home.path(), "scratch").unwrap().join(&conversation);
    assert_eq!(std::fs::read_to_string(scratch.join("notes")).unwrap(), "one\ntwo\n");

    let undone = undo(&mut client, json!({"conversation_id": conversation}))
        .await
        .unwrap();
    assert_eq!(undone["turn_id"], second["turn_id"], "{undone}");
    let entries: Vec<(&str, &str)> = undone["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["action"].as_str().unwrap(), e["path"].as_str().unwrap()))
        .collect();
    assert_eq!(
        entries,
        [
            ("restore", "a.txt"),
            ("delete", "$SCRATCH/new.txt"),
            ("restore", "$SCRATCH/notes")
        ],
        "{undone}"
    );
    assert_eq!(std::fs::read_to_string(scratch.join("notes")).unwrap(), "one\n");
    assert!(!scratch.join("new.txt").exists());
    assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "project\n");
    let redone = undo(&mut client, json!({"conversation_id": conversation, "redo": true}))
        .await
        .unwrap();
    assert_eq!(redone["applied"], true, "{redone}");
    assert_eq!(std::fs::read_to_string(scratch.join("new.txt")).unwrap(), "new\n");
}
