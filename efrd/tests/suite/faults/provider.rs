//! A provider that hangs mid-stream, and one that answers 500 before it answers 200.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::time::{Duration, Instant};

use efr_test_support::daemon::{TestDaemon, config_for};
use efr_test_support::scripted::{HttpError, Reply, Script, ScriptedModel, Step};

use crate::common::auto::bounded;
use crate::common::{efrd_binary, events_until, prompt, subscribe, text_of, text_reply};

async fn scripted(steps: Vec<Step>) -> ScriptedModel {
    ScriptedModel::start(Script {
        steps,
        models: vec!["gpt-5".into()],
        ..Script::default()
    })
    .await
    .unwrap()
}

fn daemon_with_config(home: &std::path::Path, config: &str) -> TestDaemon {
    TestDaemon::start(
        efrd_binary(),
        home,
        Some(config),
        &[("OPENAI_API_KEY", "sk-proj-testkey0000000000000000a1b2")],
    )
    .unwrap()
}

fn server_error(status: u16) -> Step {
    Step::HttpError(HttpError {
        status,
        ..HttpError::default()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_that_hangs() {
    let home = tempfile::tempdir().unwrap();
    let project = crate::common::project();
    // Some text, then nothing for 10 minutes.
    let hang = Reply::streamed(["the start ".to_owned()], 600_000);
    let server = scripted(vec![Step::Reply(hang), Step::Reply(text_reply("after", 8, 0))]).await;
    let config = config_for(&server.base_url()).replace(
        "retry = { max_attempts = 2 }",
        "retry = { max_attempts = 2 }\nidle_timeout_secs = 2",
    );
    let efrd = daemon_with_config(home.path(), &config);
    let mut client = efrd.client().await.unwrap();
    let started = Instant::now();
    let sent = prompt(&mut client, project.path(), None, "talk").await;
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
    let events = bounded(
        "a hung provider's turn",
        crate::common::events_through(&mut client, id, "turn_failed"),
    )
    .await;
    let failed = events.last().unwrap();
    let message = failed["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("no answer from the provider for 2 s"),
        "the user is told: {failed}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "a timeout, not a stuck turn"
    );
    assert_eq!(text_of(&events), "the start ", "what came before the hang is kept");
    // The daemon serves the next prompt.
    prompt(&mut client, project.path(), Some(&conversation), "again").await;
    let next = bounded("the next turn", events_until(&mut client, id, "turn_completed")).await;
    assert_eq!(text_of(&next), "after");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_500_then_a_200() {
    let home = tempfile::tempdir().unwrap();
    let project = crate::common::project();
    let server = scripted(vec![
        // One 500 is retried within the turn (max_attempts = 2).
        server_error(500),
        Step::Reply(text_reply("after one 500", 8, 0)),
        // Two are more than the turn retries: it fails with the status, and the next prompt works.
        server_error(500),
        server_error(500),
        Step::Reply(text_reply("after two", 8, 0)),
    ])
    .await;
    let efrd = daemon_with_config(home.path(), &config_for(&server.base_url()));
    let mut client = efrd.client().await.unwrap();
    let sent = prompt(&mut client, project.path(), None, "one").await;
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
    let events = bounded("a retried turn", events_until(&mut client, id, "turn_completed")).await;
    assert_eq!(text_of(&events), "after one 500");

    prompt(&mut client, project.path(), Some(&conversation), "two").await;
    let events = bounded(
        "a failed turn",
        crate::common::events_through(&mut client, id, "turn_failed"),
    )
    .await;
    let failed = events.last().unwrap();
    assert!(failed["error"]["message"].as_str().unwrap().contains("500"), "{failed}");
    prompt(&mut client, project.path(), Some(&conversation), "three").await;
    let events = bounded("the turn after", events_until(&mut client, id, "turn_completed")).await;
    assert_eq!(text_of(&events), "after two");
    assert_eq!(
        server
            .requests()
            .iter()
            .filter(|r| r.path.contains("responses"))
            .count(),
        5
    );
}
