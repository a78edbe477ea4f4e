//! SIGKILL of efrd at five moments of a turn, and of two of its children (the hidden shell, efr-launcher).
//!
//! After efrd is killed and started again: every event a client saw is in the log as it was seen, seqs have no gap,
//! the turn that ran is closed with turn_interrupted, and a new prompt in the same conversation runs to its end. A
//! killed child costs its call, never the turn or the daemon: the model is told, and the next call works.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::path::Path;

use efr_protocol::ErrorCode;
use efr_test_support::client::Client;
use efr_test_support::daemon::TestDaemon;
use efr_test_support::scripted::Reply;
use efr_test_support::subscription::read_until;
use serde_json::{Value, json};

use super::procs;
use crate::common::auto::{bounded, daemon_with, tempdir};
use crate::common::tools::{event_of, patch_call, prompt_to, shell_call, start, text, tool_output};
use crate::common::{command_id, daemon, events_through, events_until, model, seqs, subscribe, text_of, whole_log};

/// Starts efrd again and checks what a restart after a SIGKILL owes: `seen` in the log as it was seen, no gap, the
/// turn closed with turn_interrupted; then a new prompt in `conversation` (whose model answer is "after") completes.
async fn restart_and_check(efrd: &mut TestDaemon, conversation: &str, project: &Path, seen: &[Value]) -> Vec<Value> {
    efrd.restart().unwrap();
    let mut client = efrd.client().await.unwrap();
    let log = whole_log(&mut client, conversation).await;
    assert_eq!(
        seqs(&log),
        (1..=log.len() as u64).collect::<Vec<_>>(),
        "no gap in the log"
    );
    for event in seen {
        let seq = usize::try_from(event["seq"].as_u64().unwrap()).unwrap();
        assert_eq!(
            &log[seq - 1],
            event,
            "an event a client saw is in the log as it was seen"
        );
    }
    let end = log.last().unwrap();
    assert_eq!(end["kind"], "turn_interrupted", "the killed turn is closed: {end}");
    let before = log.len() as u64;
    prompt_to(&mut client, Some(conversation), project, "full", "still there?").await;
    let (id, _) = subscribe(&mut client, conversation, Some(before)).await;
    let events = bounded(
        "the prompt after the restart",
        events_until(&mut client, id, "turn_completed"),
    )
    .await;
    assert!(
        !text_of(&events).is_empty(),
        "the daemon serves after the restart: {events:?}"
    );
    log
}

/// A reply that streams for about 2 s in many small pieces.
fn long_reply(pieces: usize, delay_ms: u64) -> Reply {
    Reply::streamed((0..pieces).map(|i| format!("piece {i} ")), delay_ms)
}

/// Reads events of `id` until `n` assistant deltas came; returns all it read.
async fn until_deltas(client: &mut Client, id: efr_protocol::frame::RequestId, n: usize) -> Vec<Value> {
    let mut deltas = 0;
    let counted = |event: &Value| {
        deltas += usize::from(event["kind"] == "assistant_message_updated");
        deltas == n
    };
    read_until(client, id, &format!("{n} deltas"), true, counted)
        .await
        .unwrap_or_else(|error| panic!("{error:#}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn efrd_during_a_commit_batch() {
    // Four conversations stream at once: the store's writer commits their events in shared batches, and efrd is
    // killed while it does.
    const STREAMS: usize = 4;
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let mut replies: Vec<Reply> = (0..STREAMS).map(|_| long_reply(200, 10)).collect();
    replies.extend((0..STREAMS).map(|_| text("after")));
    let server = model(replies).await;
    let mut efrd = daemon(home.path(), &server);
    let mut clients = Vec::new();
    for _ in 0..STREAMS {
        let mut client = efrd.client().await.unwrap();
        let started = start(&mut client, project.path(), "full", "talk").await;
        clients.push((client, started.1, started.2));
    }
    let mut seen = Vec::new();
    for (client, _, id) in &mut clients {
        seen.push(until_deltas(client, *id, 5).await);
    }
    efrd.kill().unwrap();
    let conversations: Vec<String> = clients.into_iter().map(|(_, conversation, _)| conversation).collect();
    for (conversation, seen) in conversations.iter().zip(&seen) {
        restart_and_check(&mut efrd, conversation, project.path(), seen).await;
        efrd.kill().unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn efrd_during_a_model_stream() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![long_reply(100, 20), text("after")]).await;
    let mut efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "full", "talk").await;
    let seen = until_deltas(&mut client, id, 10).await;
    efrd.kill().unwrap();
    drop(client);
    let log = restart_and_check(&mut efrd, &conversation, project.path(), &seen).await;
    let text = text_of(&log);
    assert!(
        text.starts_with("piece 0 piece 1 "),
        "the streamed text is kept: {text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn efrd_during_a_shell_call() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    // A sleep with a length no other process uses, so the test can find it.
    let marker = format!("sleep 97.{}", std::process::id());
    let server = model(vec![shell_call("call_sleep", &marker), text("after")]).await;
    let mut efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "full", "wait").await;
    let seen = events_through(&mut client, id, "tool_call_started").await;
    procs::wait_for_descendant(efrd.pid().unwrap(), |pid| procs::cmdline(pid) == marker);
    efrd.kill().unwrap();
    drop(client);
    // The command dies with efrd's hidden shell: nothing of a killed efrd runs on unseen.
    procs::wait_gone(&marker);
    restart_and_check(&mut efrd, &conversation, project.path(), &seen).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn efrd_during_a_question() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![shell_call("call_touch", "touch asked.txt"), text("after")]).await;
    let mut efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "manual", "touch it").await;
    let seen = events_through(&mut client, id, "approval_requested").await;
    efrd.kill().unwrap();
    drop(client);
    restart_and_check(&mut efrd, &conversation, project.path(), &seen).await;
    // The question ended with its turn: an answer now is refused in words, and nothing ran.
    let mut client = efrd.client().await.unwrap();
    let answer = json!({"command_id": command_id(), "conversation_id": conversation, "call_id": "call_touch",
        "decision": "allow"});
    let error = client.call("approval.respond", answer).await.unwrap().unwrap_err();
    assert!(
        matches!(error.code, ErrorCode::NotFound | ErrorCode::Conflict),
        "{error:?}"
    );
    assert!(
        !project.path().join("asked.txt").exists(),
        "a question that was never answered ran nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn efrd_during_a_patch_write() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    // A patch that writes 4 MiB: efrd is killed as the call starts, while it writes.
    let line = "0123456789abcdef".repeat(4);
    let body: String = (0..65_536).map(|_| format!("+{line}\n")).collect();
    let patch = format!("*** Begin Patch\n*** Add File: big.txt\n{body}*** End Patch\n");
    let whole = (0..65_536).map(|_| format!("{line}\n")).collect::<String>();
    // The model's next answer streams for a while, so the turn still runs whenever the kill lands.
    let server = model(vec![patch_call("call_big", &patch), long_reply(100, 20), text("after")]).await;
    let mut efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "full", "write it").await;
    let seen = events_through(&mut client, id, "tool_call_started").await;
    efrd.kill().unwrap();
    drop(client);
    // A patch's file is whole or absent, never cut.
    let target = project.path().join("big.txt");
    if target.exists() {
        assert!(
            std::fs::read_to_string(&target).unwrap() == whole,
            "a cut file was left"
        );
    }
    restart_and_check(&mut efrd, &conversation, project.path(), &seen).await;
    let stray: Vec<_> = std::fs::read_dir(project.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name != "big.txt")
        .collect();
    assert!(stray.is_empty(), "no temporary file is left in the project: {stray:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hidden_shell() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let marker = format!("sleep 98.{}", std::process::id());
    let server = model(vec![
        shell_call("call_sleep", &marker),
        shell_call("call_next", "echo next-call-works"),
        text("after"),
    ])
    .await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let (_, _, id) = start(&mut client, project.path(), "full", "wait").await;
    events_through(&mut client, id, "tool_call_started").await;
    let sleep = procs::wait_for_descendant(efrd.pid().unwrap(), |pid| procs::cmdline(pid) == marker);
    let shell = procs::parent_of(sleep).unwrap();
    procs::kill(shell);
    let events = bounded(
        "the turn after the shell died",
        events_until(&mut client, id, "turn_completed"),
    )
    .await;
    let first = event_of(&events, "tool_call_completed", "call_sleep");
    assert_eq!(first["status"], "failed", "{first}");
    let told = tool_output(&server, "call_sleep");
    assert!(told.contains("shell"), "the model is told the shell ended: {told}");
    let next = tool_output(&server, "call_next");
    assert!(
        next.contains("next-call-works"),
        "the next call gets a new shell: {next}"
    );
    procs::wait_gone(&marker);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn efr_launcher() {
    let home = tempdir();
    let project = tempdir();
    let marker = format!("sleep 99.{}", std::process::id());
    let server = model(vec![
        shell_call("call_sleep", &marker),
        shell_call("call_next", "echo next-call-works"),
        text("after"),
    ])
    .await;
    let efrd = daemon_with(home.path(), &server, &[]);
    let mut client = efrd.client().await.unwrap();
    let (_, _, id) = start(&mut client, project.path(), "auto", "wait").await;
    events_through(&mut client, id, "tool_call_started").await;
    let sleep = procs::wait_for_descendant(efrd.pid().unwrap(), |pid| procs::cmdline(pid) == marker);
    let launcher = procs::descendants(efrd.pid().unwrap())
        .into_iter()
        .find(|&pid| procs::cmdline(pid).contains("efr-launcher") && procs::descendants(pid).contains(&sleep))
        .expect("the contained sleep runs under efr-launcher");
    procs::kill(launcher);
    let events = bounded(
        "the turn after the launcher died",
        events_until(&mut client, id, "turn_completed"),
    )
    .await;
    let first = event_of(&events, "tool_call_completed", "call_sleep");
    eprintln!("the call after its launcher died: {first}");
    let next = tool_output(&server, "call_next");
    assert!(next.contains("next-call-works"), "the next call works: {next}");
    // The sandbox's processes end with their launcher.
    procs::wait_gone(&marker);
}
