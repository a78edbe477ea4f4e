//! An idle conversation retires (`[daemon] conversation_idle_secs`): its hidden shell ends, and the next prompt
//! loads it from the log and goes on with its history; a watched conversation does not retire.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::time::{Duration, Instant};

use efr_test_support::daemon::{TestDaemon, config_for};

use crate::common::tools::{prompt_to, shell_call, start, text};
use crate::common::{efrd_binary, events_until, model, subscribe, text_of};

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_conversation_lets_its_shell_go_and_comes_back_with_its_history() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let server = model(vec![
        shell_call("call_pid", "echo $$ > shell.pid"),
        text("first answer"),
        text("second answer"),
    ])
    .await;
    let config = config_for(&server.base_url()) + "\n[daemon]\nconversation_idle_secs = 1\n";
    let efrd = TestDaemon::start(
        efrd_binary(),
        home.path(),
        Some(&config),
        &[("OPENAI_API_KEY", "sk-proj-testkey0000000000000000a1b2")],
    )
    .unwrap();
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "full", "first").await;
    let first = events_until(&mut client, id, "turn_completed").await;
    let pid: u32 = std::fs::read_to_string(project.path().join("shell.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Watched, it stays live: the shell runs on.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(alive(pid), "a watched conversation keeps its hidden shell");
    client.cancel(id).await.unwrap();
    // Unwatched and idle, it retires within a few idle periods.
    let deadline = Instant::now() + Duration::from_secs(20);
    while alive(pid) {
        assert!(
            Instant::now() < deadline,
            "the idle conversation's hidden shell still runs"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The next prompt loads it from the log; the model gets the earlier turn.
    prompt_to(&mut client, Some(&conversation), project.path(), "full", "second").await;
    let (id, _) = subscribe(&mut client, &conversation, Some(first.len() as u64)).await;
    let events = events_until(&mut client, id, "turn_completed").await;
    assert_eq!(text_of(&events), "second answer");
    let last = server.requests().last().unwrap().body.to_string();
    assert!(last.contains("first answer") && last.contains("call_pid"), "{last}");
}
