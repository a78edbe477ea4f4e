//! Text turns through the real efrd and the scripted model: streaming to several subscribers, resume, idempotent
//! writes, interrupts, provider errors, restart recovery and the graceful stop.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use std::time::Duration;

use efr_protocol::ErrorCode;
use efr_test_support::client::StreamFrame;
use efr_test_support::scripted::{HttpError, Reply, ReplyEvent, Step};
use serde_json::json;

use common::{command_id, daemon, events_until, model, prompt, seqs, subscribe, text_reply};

const ANSWER: &str = "größe 🙂 — the answer is a stream of multi-byte text. ";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_streams_to_two_subscribers_identically() {
    let home = tempfile::tempdir().unwrap();
    let project = common::project();
    let long = ANSWER.repeat(20);
    let server = model(vec![text_reply(&long, 5, 1)]).await;
    let efrd = daemon(home.path(), &server);

    let mut writer = efrd.client().await.unwrap();
    // The first prompt creates the conversation.
    let sent = prompt(&mut writer, project.path(), None, "say something").await;
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
    assert_eq!(sent["seq"], 2, "conversation_created then prompt_queued");
    assert_eq!(sent["settings"]["model"], "gpt-5");
    assert_eq!(sent["settings"]["mode"], "cautious");

    let mut a = efrd.client().await.unwrap();
    let mut b = efrd.client().await.unwrap();
    let (ida, snap) = subscribe(&mut a, &conversation, Some(0)).await;
    assert!(snap.is_none());
    let (idb, _) = subscribe(&mut b, &conversation, Some(0)).await;

    let events_a = events_until(&mut a, ida, "turn_completed").await;
    let events_b = events_until(&mut b, idb, "turn_completed").await;
    assert_eq!(events_a, events_b, "both subscribers see the same events");
    assert_eq!(
        seqs(&events_a),
        (1..=events_a.len() as u64).collect::<Vec<_>>(),
        "no gap, no repeat"
    );
    let kinds: Vec<&str> = events_a.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(&kinds[..3], ["conversation_created", "prompt_queued", "turn_started"]);
    assert_eq!(
        kinds[kinds.len() - 2..],
        ["assistant_message_completed", "turn_completed"]
    );
    assert_eq!(common::text_of(&events_a), long, "no byte lost");
    let updates = kinds.iter().filter(|k| **k == "assistant_message_updated").count();
    assert!(
        updates < long.len() / 5 / 2,
        "{updates} updates for {} chunks: deltas are coalesced",
        long.len() / 5
    );
    let completed = &events_a[events_a.len() - 2];
    assert_eq!(completed["text"], long.as_str());
    assert_eq!(completed["index"], 0);
    let done = events_a.last().unwrap();
    assert_eq!(done["usage"]["input_tokens"], 120);
    assert_eq!(done["usage"]["output_tokens"], 30);
    assert!(done.get("stop").is_none(), "a normal answer has no stop member");
    assert_eq!(done["turn_id"], sent["turn_id"]);

    // The model got the prompt.
    let request = &server.requests()[server.requests().len() - 1];
    assert_eq!(request.path, "/v1/responses");
    assert!(request.body.to_string().contains("say something"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_with_after_seq_has_no_gap_and_no_repeat() {
    let home = tempfile::tempdir().unwrap();
    let project = common::project();
    let server = model(vec![
        text_reply(&ANSWER.repeat(10), 3, 5),
        text_reply("second answer", 4, 0),
    ])
    .await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let sent = prompt(&mut client, project.path(), None, "one").await;
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();

    let (id, snapshot) = subscribe(&mut client, &conversation, None).await;
    let snapshot = snapshot.unwrap();
    assert_eq!(snapshot["summary"]["conversation_id"], conversation.as_str());
    assert_eq!(snapshot["summary"]["title"], "one");
    let from = snapshot["seq"].as_u64().unwrap();
    // Read the first text, drop the subscription mid-turn, resume after the last event seen.
    let seen = events_until(&mut client, id, "assistant_message_updated").await;
    client.cancel(id).await.unwrap();
    assert_eq!(seqs(&seen), (from + 1..=from + seen.len() as u64).collect::<Vec<_>>());

    let mut other = efrd.client().await.unwrap();
    let last = *seqs(&seen).last().unwrap();
    let (id2, _) = subscribe(&mut other, &conversation, Some(last)).await;
    let rest = events_until(&mut other, id2, "turn_completed").await;
    assert_eq!(
        rest[0]["seq"].as_u64().unwrap(),
        last + 1,
        "the resume starts right after the last seen"
    );
    assert_eq!(
        seqs(&rest),
        (last + 1..last + 1 + rest.len() as u64).collect::<Vec<_>>()
    );

    // A second prompt to the same conversation runs as the next turn, and the model sees the first exchange.
    let second = prompt(&mut client, project.path(), Some(&conversation), "two").await;
    assert_eq!(second["conversation_id"], conversation.as_str());
    let more = events_until(&mut other, id2, "turn_completed").await;
    assert_eq!(common::text_of(&more), "second answer");
    let body = server.requests().last().unwrap().body.to_string();
    assert!(
        body.contains("one") && body.contains("two") && body.contains("the answer is"),
        "{body}"
    );

    let list = client.ok("conversations.list", json!({})).await.unwrap();
    let row = &list["conversations"][0];
    assert_eq!(row["conversation_id"], conversation.as_str());
    assert_eq!(row["turns"], 2);
    assert_eq!(row["last_seq"], more.last().unwrap()["seq"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_command_id_changes_nothing() {
    let home = tempfile::tempdir().unwrap();
    let server = model(vec![text_reply("only once", 4, 0)]).await;
    let mut efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let params = json!({"command_id": command_id(), "text": "once"});
    let first = client.ok("prompt.send", params.clone()).await.unwrap();
    let conversation = first["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
    events_until(&mut client, id, "turn_completed").await;

    let again = client.ok("prompt.send", params.clone()).await.unwrap();
    assert_eq!(again, first, "the stored outcome comes back");
    let list = client.ok("conversations.list", json!({})).await.unwrap();
    assert_eq!(
        list["conversations"].as_array().unwrap().len(),
        1,
        "no second conversation"
    );
    assert_eq!(list["conversations"][0]["turns"], 1, "no second turn");
    // Nor a model request: a prompt to an idle conversation asks its model while its commit is written, but not a
    // repeat, which the store refuses first; also after a restart, when the conversation is read from the log.
    let responses = || server.requests().iter().filter(|r| r.path == "/v1/responses").count();
    assert_eq!(responses(), 1);
    let to_conversation = json!({"command_id": params["command_id"], "text": "once", "conversation_id": conversation});
    assert_eq!(client.ok("prompt.send", to_conversation.clone()).await.unwrap(), first);
    drop(client);
    efrd.stop(std::time::Duration::from_secs(10)).unwrap();
    efrd.restart().unwrap();
    let mut client = efrd.client().await.unwrap();
    assert_eq!(client.ok("prompt.send", to_conversation).await.unwrap(), first);
    assert_eq!(client.ok("prompt.send", params).await.unwrap(), first);
    // Any request on its way would have come by the time a subscription answers.
    let (id, _) = subscribe(&mut client, &conversation, None).await;
    client.cancel(id).await.unwrap();
    assert_eq!(responses(), 1, "a repeat never reaches the model");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_stops_the_model_call_and_keeps_what_came() {
    let home = tempfile::tempdir().unwrap();
    let project = common::project();
    let slow = Reply::of(vec![
        ReplyEvent::Text("first part ".into()),
        ReplyEvent::DelayMs(20_000),
        ReplyEvent::Text("never".into()),
    ]);
    let server = model(vec![slow]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let sent = prompt(&mut client, project.path(), None, "long one").await;
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
    let before = events_until(&mut client, id, "assistant_message_updated").await;
    assert_eq!(common::text_of(&before), "first part ");

    let params = json!({"command_id": command_id(), "conversation_id": conversation});
    let result = client.ok("turn.interrupt", params.clone()).await.unwrap();
    assert_eq!(result["turn_id"], sent["turn_id"]);
    let after = events_until(&mut client, id, "turn_interrupted").await;
    let kinds: Vec<&str> = after.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "turn_interrupt_requested",
            "assistant_message_completed",
            "turn_interrupted"
        ]
    );
    assert_eq!(after[0]["seq"], result["seq"]);
    assert_eq!(after[1]["text"], "first part ");
    // The same command id again returns the same result; a new interrupt finds no turn.
    assert_eq!(client.ok("turn.interrupt", params).await.unwrap(), result);
    let error = client
        .call(
            "turn.interrupt",
            json!({"command_id": command_id(), "conversation_id": conversation}),
        )
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Conflict);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_error_fails_the_turn_with_its_body() {
    let home = tempfile::tempdir().unwrap();
    let project = common::project();
    let server = model(vec![]).await;
    server.push(Step::HttpError(HttpError {
        status: 401,
        message: Some("bad key".into()),
        ..HttpError::default()
    }));
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let sent = prompt(&mut client, project.path(), None, "hello").await;
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
    let events = events_until(&mut client, id, "turn_failed").await;
    let failed = events.last().unwrap();
    assert_eq!(failed["error"]["code"], "unauthorized");
    assert!(
        failed["error"]["message"].as_str().unwrap().contains("log in"),
        "{failed}"
    );
    assert!(!efrd.log().contains("testkey"), "the key never reaches the log");
    let status = client.ok("admin.status", json!(null)).await.unwrap();
    let openai = &status["providers"][0];
    assert_eq!(openai["provider"], "openai-api");
    assert!(openai["key_refused_at"].is_string(), "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_outside_the_catalog_are_invalid_with_their_choices() {
    let home = tempfile::tempdir().unwrap();
    let server = model(vec![]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let error = client
        .call(
            "prompt.send",
            json!({"command_id": command_id(), "text": "x", "settings": {"model": "gpt-0"}}),
        )
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Invalid);
    let data = error.data.unwrap();
    assert_eq!(data["setting"], "model");
    assert_eq!(data["value"], "gpt-0");
    assert!(data["choices"].as_array().unwrap().contains(&json!("gpt-5")), "{data}");
    let list = client.ok("conversations.list", json!({})).await.unwrap();
    assert!(
        list["conversations"].as_array().unwrap().is_empty(),
        "a refused prompt leaves nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_cancels_waiting_prompts_and_interrupts_the_running_turn() {
    let home = tempfile::tempdir().unwrap();
    let project = common::project();
    let slow = Reply::streamed(["working".to_owned()], 30_000);
    let server = model(vec![slow]).await;
    let mut efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let first = prompt(&mut client, project.path(), None, "running one").await;
    let conversation = first["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
    events_until(&mut client, id, "assistant_message_updated").await;
    let waiting = prompt(&mut client, project.path(), Some(&conversation), "waiting one").await;
    drop(client);

    efrd.kill().unwrap();
    efrd.restart().unwrap();
    let mut client = efrd.client().await.unwrap();
    let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
    let events = common::events_through(&mut client, id, "turn_cancelled").await;
    assert_eq!(
        seqs(&events),
        (1..=events.len() as u64).collect::<Vec<_>>(),
        "the log has no gap"
    );
    let interrupted = events
        .iter()
        .find(|e| e["kind"] == "turn_interrupted")
        .expect("the running turn ends");
    assert_eq!(interrupted["turn_id"], first["turn_id"]);
    let cancelled = events.last().unwrap();
    assert_eq!(cancelled["turn_id"], waiting["turn_id"]);
    assert!(
        cancelled["reason"].as_str().unwrap().contains("waiting one"),
        "the notice names the prompt"
    );
    assert!(
        !events
            .iter()
            .any(|e| e["kind"] == "turn_started" && e["turn_id"] == waiting["turn_id"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_every_stream_and_exits_0_within_5_seconds() {
    let home = tempfile::tempdir().unwrap();
    let project = common::project();
    let server = model(vec![text_reply("done", 4, 0)]).await;
    let mut efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let sent = prompt(&mut client, project.path(), None, "x").await;
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
    events_until(&mut client, id, "turn_completed").await;

    let stop = tokio::task::spawn_blocking(move || {
        let status = efrd.stop(Duration::from_secs(5));
        (status, efrd)
    });
    assert_eq!(
        client.next_of(id).await.unwrap(),
        StreamFrame::End,
        "the stream ends with end"
    );
    let (status, efrd) = stop.await.unwrap();
    assert!(status.unwrap().success(), "exit 0; log:\n{}", efrd.log());
    assert!(!efrd.socket().exists(), "a self-bound socket is removed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_does_not_read_is_ended_with_overflow_and_resumes() {
    let home = tempfile::tempdir().unwrap();
    let project = common::project();
    // 100 short turns make 500 events: more than the connection's outbound queue (256 frames) and the 16 events
    // that `subscriber_queue` lets a subscriber fall behind.
    const TURNS: usize = 100;
    let server = model((0..TURNS).map(|i| text_reply(&format!("answer {i}"), 64, 0)).collect()).await;
    let config = efr_test_support::daemon::config_for(&server.base_url()) + "\n[daemon]\nsubscriber_queue = 16\n";
    let efrd = efr_test_support::daemon::TestDaemon::start(
        common::efrd_binary(),
        home.path(),
        Some(&config),
        &[("OPENAI_API_KEY", "sk-proj-testkey0000000000000000a1b2")],
    )
    .unwrap();
    let mut writer = efrd.client().await.unwrap();
    let mut lazy = efrd.client().await.unwrap();
    let first = prompt(&mut writer, project.path(), None, "p0").await;
    let conversation = first["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(&mut lazy, &conversation, Some(0)).await;
    let (wid, _) = subscribe(&mut writer, &conversation, Some(0)).await;
    let mut all = Vec::new();
    for i in 1..TURNS {
        prompt(&mut writer, project.path(), Some(&conversation), &format!("p{i}")).await;
    }
    // The writer reads everything while the lazy subscriber reads nothing.
    for _ in 0..TURNS {
        all.extend(events_until(&mut writer, wid, "turn_completed").await);
    }
    assert_eq!(seqs(&all), (1..=all.len() as u64).collect::<Vec<_>>());

    // Now the lazy one reads: the events that were queued for it, then the overflow error; never a gap.
    let mut got = Vec::new();
    let error = loop {
        match lazy.next_of(id).await.unwrap() {
            StreamFrame::Item(item) => got.push(item["event"].clone()),
            StreamFrame::Error(error) => break error,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(error.code, ErrorCode::Busy);
    assert_eq!(error.data, Some(json!({"overflow": true})));
    assert_eq!(
        seqs(&got),
        (1..=got.len() as u64).collect::<Vec<_>>(),
        "what came has no gap"
    );
    assert!(got.len() < all.len());
    // It resumes after the last event it got and sees the rest, exactly once.
    let (id2, _) = subscribe(&mut lazy, &conversation, Some(got.len() as u64)).await;
    let mut rest = Vec::new();
    while rest.len() + got.len() < all.len() {
        match lazy.next_of(id2).await.unwrap() {
            StreamFrame::Item(item) => rest.push(item["event"].clone()),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        seqs(&rest),
        (got.len() as u64 + 1..=all.len() as u64).collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_answer_streams_whole_in_bounded_events() {
    let home = tempfile::tempdir().unwrap();
    let project = common::project();
    let big = "größe 🙂 ".repeat(256 * 1024);
    let server = model(vec![text_reply(&big, 64 * 1024, 0)]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let started = std::time::Instant::now();
    let sent = prompt(&mut client, project.path(), None, "big").await;
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
    let events = events_until(&mut client, id, "turn_completed").await;
    assert_eq!(common::text_of(&events), big);
    let updates: Vec<_> = events
        .iter()
        .filter(|e| e["kind"] == "assistant_message_updated")
        .collect();
    assert!(
        updates.len() >= big.len() / (64 * 1024),
        "a huge delta is cut into bounded updates"
    );
    assert!(updates.iter().all(|u| u["delta"].as_str().unwrap().len() <= 64 * 1024));
    eprintln!(
        "{} bytes in {:?}, {} events",
        big.len(),
        started.elapsed(),
        events.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conversations_list_with_a_tty_finds_that_terminals_conversations_past_the_first_page() {
    let home = tempfile::tempdir().unwrap();
    let replies = (0..4).map(|i| text_reply(&format!("answer {i}"), 4, 0)).collect();
    let server = model(replies).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let mut send = async |tty: &str| {
        let params = json!({"command_id": command_id(), "text": "hi", "context": {"tty": tty}, "new": true});
        let sent = client.ok("prompt.send", params).await.unwrap();
        let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
        let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
        events_until(&mut client, id, "turn_completed").await;
        conversation
    };
    let older = send("/dev/pts/1").await;
    let newer = send("/dev/pts/1").await;
    send("/dev/pts/2").await;
    send("/dev/pts/2").await;

    // The terminal's newest conversation comes first although two newer rows of another terminal precede it.
    let list = client
        .ok("conversations.list", json!({"tty": "/dev/pts/1", "limit": 1}))
        .await
        .unwrap();
    let rows = list["conversations"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{list}");
    assert_eq!(rows[0]["conversation_id"], newer.as_str());
    assert!(list.get("next_cursor").is_none(), "one page: {list}");
    let all = client
        .ok("conversations.list", json!({"tty": "/dev/pts/1"}))
        .await
        .unwrap();
    let ids: Vec<&str> = all["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["conversation_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [newer.as_str(), older.as_str()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_terminals_last_and_recent_commands_reach_the_model_and_nothing_else() {
    let home = tempfile::tempdir().unwrap();
    let server = model(vec![text_reply("it failed because", 4, 0)]).await;
    let mut efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let params = json!({
        "command_id": command_id(),
        "text": "why did that fail?",
        "context": {"tty": "/dev/pts/4"},
        "last_command": {"command": "ls /nonexistent-xyzzy", "status": 2},
        "recent_commands": [{"command": "make plugh", "status": 0}, {"command": "ls /nonexistent-xyzzy", "status": 2}],
    });
    let sent = client.ok("prompt.send", params).await.unwrap();
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(&mut client, &conversation, Some(0)).await;
    let events = events_until(&mut client, id, "turn_completed").await;

    let body = server
        .requests()
        .iter()
        .find(|r| r.method == "POST")
        .unwrap()
        .body
        .to_string();
    assert!(
        body.contains("last command (exit status 2): ls /nonexistent-xyzzy"),
        "{body}"
    );
    assert!(body.contains("- make plugh (exit status 0)"), "{body}");
    assert!(body.contains("why did that fail?"), "{body}");
    // Never an event or the store (spec).
    let log = serde_json::to_string(&events).unwrap();
    assert!(!log.contains("xyzzy") && !log.contains("plugh"), "{log}");
    drop(client);
    efrd.stop(std::time::Duration::from_secs(10)).unwrap();
    let db = std::fs::read(home.path().join("data/efr.db")).unwrap();
    let wal = std::fs::read(home.path().join("data/efr.db-wal")).unwrap_or_default();
    for bytes in [db, wal] {
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains("xyzzy") && !text.contains("plugh"),
            "the store holds a terminal command"
        );
    }
}
