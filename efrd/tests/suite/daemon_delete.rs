//! conversation.delete through the real socket of a real efrd on a real SQLite file: the log keeps only
//! conversation_deleted, a subscriber sees it and the end of its stream, the conversation's words are gone from the
//! database file, its snapshots, journals and `$SCRATCH` from the disk; held by another open terminal (a real pty),
//! busy without stop, stopped with it; a conversation that does not exist or was deleted.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use std::os::fd::AsRawFd as _;
use std::path::Path;
use std::time::{Duration, Instant};

use efr_protocol::ErrorCode;
use efr_test_support::client::{Client, StreamFrame};
use efr_test_support::scripted::{Reply, ReplyEvent};
use serde_json::{Value, json};

use common::tools::{shell_call, text};
use common::{command_id, daemon, events_through, model, project, subscribe, text_reply};

/// Words that only the deleted conversation holds: its prompt, its answer and its command.
const PROMPT_WORD: &str = "quokkaprompt7f3e9a1c";
const ANSWER_WORD: &str = "wombatanswer5b2d8e4f";
const COMMAND_WORD: &str = "numbatcommand9c1a7b3d";

/// Counts the places where `needle` is in the files of `data` (the database, its WAL).
fn occurrences(data: &Path, needle: &str) -> usize {
    std::fs::read_dir(data)
        .unwrap()
        .filter_map(Result::ok)
        .map(|entry| std::fs::read(entry.path()).unwrap_or_default())
        .map(|bytes| bytes.windows(needle.len()).filter(|w| *w == needle.as_bytes()).count())
        .sum()
}

async fn delete(client: &mut Client, params: Value) -> Result<Value, efr_protocol::ErrorBody> {
    client.call("conversation.delete", params).await.unwrap()
}

/// prompt.send of a new conversation from terminal `tty` in `cwd`; returns the conversation.
async fn prompt_from(client: &mut Client, cwd: &Path, tty: &str, text: &str) -> String {
    let params = json!({"command_id": command_id(), "text": text, "context": {"cwd": cwd, "tty": tty}, "new": true});
    let sent = client.ok("prompt.send", params).await.unwrap();
    sent["conversation_id"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_leaves_one_event_ends_the_subscription_and_frees_the_file_and_the_disk() {
    let home = tempfile::tempdir().unwrap();
    let cwd = project();
    std::fs::write(cwd.path().join("a.txt"), "one\n").unwrap();
    let server = model(vec![
        shell_call("call_1", &format!("echo {COMMAND_WORD} > b.txt")),
        text(&format!("Done: {ANSWER_WORD}.")),
    ])
    .await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let params = json!({"command_id": command_id(), "text": format!("write {PROMPT_WORD}"), "context": {"cwd": cwd.path()},
               "settings": {"mode": "full"}});
    let sent = client.ok("prompt.send", params).await.unwrap();
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
    let turn = sent["turn_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
    let events = events_through(&mut client, id, "turn_completed").await;
    assert!(
        events.iter().any(|e| e["kind"] == "snapshot_taken"),
        "the turn took snapshots"
    );

    let state = home.path().join("state");
    let scratch = state.join("scratch").join(&conversation);
    assert!(scratch.is_dir(), "its $SCRATCH, made for the turn's snapshots");
    std::fs::write(scratch.join("notes.txt"), "kept between turns").unwrap();
    let manifest = state.join(format!("snapshots/manifests/{turn}-pre.json"));
    assert!(manifest.is_file(), "its snapshot");
    let data = home.path().join("data");
    for word in [PROMPT_WORD, ANSWER_WORD, COMMAND_WORD] {
        assert!(
            occurrences(&data, word) > 0,
            "{word} is in the database before the delete"
        );
    }

    // A second connection watches the conversation; the first deletes it.
    let mut watcher = efrd.client().await.unwrap();
    let (watch, _) = subscribe(&mut watcher, &conversation, None).await;
    let delete_id = command_id();
    let params = json!({"command_id": delete_id, "conversation_id": conversation});
    let deleted = delete(&mut client, params.clone()).await.unwrap();
    assert_eq!(deleted["kind"], "deleted", "{deleted}");
    assert_eq!(deleted["conversation_id"], json!(conversation));
    assert!(deleted["title"].as_str().unwrap().contains(PROMPT_WORD), "{deleted}");
    assert!(deleted.get("not_removed").is_none(), "{deleted}");

    // The subscriber sees conversation_deleted, then the end of its stream.
    let last = match watcher.next_of(watch).await.unwrap() {
        StreamFrame::Item(item) => item["event"].clone(),
        other => panic!("expected conversation_deleted, got {other:?}"),
    };
    assert_eq!(last["kind"], "conversation_deleted", "{last}");
    assert_eq!(last["origin"], "terminal");
    assert!(matches!(watcher.next_of(watch).await.unwrap(), StreamFrame::End));

    // Gone: not found, not listed, not searched; its log holds only conversation_deleted.
    let again = delete(
        &mut client,
        json!({"command_id": command_id(), "conversation_id": conversation}),
    )
    .await;
    assert_eq!(
        again.unwrap_err().code,
        ErrorCode::NotFound,
        "a delete of a deleted conversation"
    );
    let repeat = delete(&mut client, params).await.unwrap();
    assert_eq!(
        repeat["kind"], "deleted",
        "the same command id answers its stored outcome: {repeat}"
    );
    let subscribed = client
        .call("conversation.subscribe", json!({"conversation_id": conversation}))
        .await
        .unwrap();
    assert_eq!(subscribed.unwrap_err().code, ErrorCode::NotFound);
    let listed = client.ok("conversations.list", json!({})).await.unwrap();
    assert!(!listed.to_string().contains(&conversation), "{listed}");
    let found = client
        .ok("conversations.search", json!({"query": PROMPT_WORD}))
        .await
        .unwrap();
    assert!(found["rows"].as_array().unwrap().is_empty(), "{found}");
    let prompt = client
        .call(
            "prompt.send",
            json!({"command_id": command_id(), "text": "more", "conversation_id": conversation}),
        )
        .await
        .unwrap();
    assert_eq!(prompt.unwrap_err().code, ErrorCode::NotFound);

    // Its bytes are gone from the database file, and its files from the disk.
    for word in [PROMPT_WORD, ANSWER_WORD, COMMAND_WORD] {
        assert_eq!(occurrences(&data, word), 0, "{word} is still in the database files");
    }
    assert!(!scratch.exists(), "its $SCRATCH");
    assert!(!manifest.exists(), "its snapshots");
    let db = rusqlite::Connection::open(data.join("efr.db")).unwrap();
    let kinds: Vec<String> = db
        .prepare("SELECT kind FROM events WHERE conversation_id = ?1")
        .unwrap()
        .query_map([&conversation], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(kinds, ["conversation_deleted"]);
}

/// The path of a pseudo-terminal this test holds open (`/dev/pts/N`), with its two ends.
fn open_terminal() -> (String, nix::pty::OpenptyResult) {
    let pty = nix::pty::openpty(None, None).unwrap();
    let path = std::fs::read_link(format!("/proc/self/fd/{}", pty.slave.as_raw_fd())).unwrap();
    (path.to_str().unwrap().to_owned(), pty)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_by_an_open_terminal_busy_without_stop_and_bad_ids() {
    let home = tempfile::tempdir().unwrap();
    let cwd = project();
    let server = model(vec![
        text_reply("held answer", 64, 0),
        text_reply("closed answer", 64, 0),
        // A turn that runs long enough to be busy: a word, then 20 s before the last.
        Reply::of(vec![
            ReplyEvent::Text("working ".into()),
            ReplyEvent::DelayMs(20_000),
            ReplyEvent::Text("done".into()),
        ]),
    ])
    .await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();

    // Held: its terminal is another open terminal (a real pty).
    let (tty, pty) = open_terminal();
    let held = prompt_from(&mut client, cwd.path(), &tty, "held prompt").await;
    let (id, _) = subscribe(&mut client, &held, Some(0)).await;
    events_through(&mut client, id, "turn_completed").await;
    let answer = delete(
        &mut client,
        json!({"command_id": command_id(), "conversation_id": held}),
    )
    .await
    .unwrap();
    assert_eq!(answer, json!({"kind": "held", "tty": tty, "title": "held prompt"}));
    let still = client.ok("conversations.list", json!({})).await.unwrap();
    assert!(still.to_string().contains(&held), "a held conversation stays");
    // With force it goes although that terminal is open.
    let answer = delete(
        &mut client,
        json!({"command_id": command_id(), "conversation_id": held, "force": true}),
    )
    .await
    .unwrap();
    assert_eq!(answer["kind"], "deleted", "{answer}");
    drop(pty);
    // A terminal that is not open holds nothing (a pts number no terminal has; a closed one's number may be given
    // to another terminal at once, such as a hidden shell of another test).
    let gone = prompt_from(&mut client, cwd.path(), "/dev/pts/987654", "closed terminal").await;
    let (id, _) = subscribe(&mut client, &gone, Some(0)).await;
    events_through(&mut client, id, "turn_completed").await;
    let answer = delete(
        &mut client,
        json!({"command_id": command_id(), "conversation_id": gone}),
    )
    .await
    .unwrap();
    assert_eq!(answer["kind"], "deleted", "{answer}");

    // Busy: a running turn refuses a delete without stop, and a delete with stop ends it.
    let busy = prompt_from(&mut client, cwd.path(), "/dev/pts/9", "slow prompt").await;
    let (id, _) = subscribe(&mut client, &busy, Some(0)).await;
    common::events_until(&mut client, id, "assistant_message_updated").await;
    let refused = delete(
        &mut client,
        json!({"command_id": command_id(), "conversation_id": busy}),
    )
    .await
    .unwrap_err();
    assert_eq!(refused.code, ErrorCode::Busy);
    assert_eq!(refused.data, Some(json!({"busy": "turn"})));
    let started = Instant::now();
    let stopped = delete(
        &mut client,
        json!({"command_id": command_id(), "conversation_id": busy, "stop": true}),
    )
    .await
    .unwrap();
    assert_eq!(stopped["kind"], "deleted", "{stopped}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "the turn was stopped, not waited for"
    );
    // Its subscriber sees the stopped turn's last events, then conversation_deleted and the end.
    let mut kinds = Vec::new();
    loop {
        match client.next_of(id).await.unwrap() {
            StreamFrame::Item(item) => kinds.push(item["event"]["kind"].as_str().unwrap().to_owned()),
            StreamFrame::End => break,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("conversation_deleted"),
        "{kinds:?}"
    );

    // Bad input: a conversation that does not exist, and params that are not valid.
    let unknown = delete(
        &mut client,
        json!({"command_id": command_id(), "conversation_id": uuid::Uuid::new_v4().to_string()}),
    )
    .await
    .unwrap_err();
    assert_eq!(unknown.code, ErrorCode::NotFound);
    let bad = delete(&mut client, json!({"conversation_id": "not-an-id"}))
        .await
        .unwrap_err();
    assert_eq!(bad.code, ErrorCode::Invalid);
}
