//! Clients that misbehave: one that never reads while a large answer streams, and a flood of connections.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::time::Duration;

use efr_protocol::ErrorCode;
use efr_protocol::frame::ServerFrame;
use efr_test_support::client::{Client, StreamFrame};
use efrd::server::connection::PENDING_STALL;
use serde_json::json;

use crate::common::auto::bounded;
use crate::common::{daemon, events_until, model, prompt, subscribe, text_of, text_reply};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads() {
    let home = tempfile::tempdir().unwrap();
    let project = crate::common::project();
    // 5 MiB of text, streamed as fast as the provider sends it: merged, it is about 80 events of 64 KiB.
    let answer: String = (0..5 * 1024)
        .map(|i| format!("{i:07} {}\n", "x".repeat(1015)))
        .collect();
    // The answer alone is past the window: the next turn compacts first (the second reply is its summary).
    let server = model(vec![
        text_reply(&answer, 16 * 1024, 0),
        text_reply("## Goals and constraints\n- write a lot", 64, 0),
        text_reply("after", 8, 0),
    ])
    .await;
    let efrd = daemon(home.path(), &server);
    let mut reader = efrd.client().await.unwrap();
    let mut lazy = efrd.client().await.unwrap();
    let first = prompt(&mut reader, project.path(), None, "write a lot").await;
    let conversation = first["conversation_id"].as_str().unwrap().to_owned();
    let (lazy_id, _) = subscribe(&mut lazy, &conversation, Some(0)).await;
    let (id, _) = subscribe(&mut reader, &conversation, Some(0)).await;
    // The client that reads is not held back by the one that does not.
    let events = bounded("the reader's turn", events_until(&mut reader, id, "turn_completed")).await;
    assert_eq!(text_of(&events), answer, "the reader gets the whole answer");
    // The lazy client reads nothing for longer than efrd waits for it: its subscription, stalled past the bound
    // while the answer streamed, ends.
    tokio::time::sleep(PENDING_STALL + Duration::from_secs(1)).await;

    // The lazy client now reads: what was queued for it, then overflow with no gap before it.
    let mut got = Vec::new();
    let error = bounded("the lazy client's end", async {
        loop {
            match lazy.next_of(lazy_id).await.unwrap() {
                StreamFrame::Item(item) => got.push(item["event"].clone()),
                StreamFrame::Error(error) => break error,
                other => panic!("{other:?}"),
            }
        }
    })
    .await;
    assert_eq!(error.code, ErrorCode::Busy, "{error:?}");
    assert_eq!(error.data, Some(json!({"overflow": true})));
    let held: usize = got.iter().map(|e| e.to_string().len()).sum();
    assert!(
        held < 6 << 20,
        "efrd held at most its bound for the client: {held} bytes"
    );
    assert!(
        got.len() < events.len(),
        "the lazy client was ended before the answer's end"
    );
    let seqs: Vec<u64> = got.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=got.len() as u64).collect::<Vec<_>>(), "no gap");
    // It resumes where it stopped and sees the rest once.
    let (again, _) = subscribe(&mut lazy, &conversation, Some(got.len() as u64)).await;
    let rest = bounded(
        "the lazy client's resume",
        events_until(&mut lazy, again, "turn_completed"),
    )
    .await;
    assert_eq!(got.len() + rest.len(), events.len());
    // And the daemon serves both.
    prompt(&mut reader, project.path(), Some(&conversation), "more").await;
    let next = bounded("the next turn", events_until(&mut reader, id, "turn_completed")).await;
    assert_eq!(text_of(&next), "after");
    assert!(next.iter().any(|e| e["kind"] == "conversation_compacted"), "{next:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_clients_at_once() {
    const CLIENTS: usize = 1000;
    // This process holds a descriptor per client too: its soft limit may be systemd's 1024.
    let (_, hard) = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).unwrap();
    nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE, hard, hard).unwrap();
    let home = tempfile::tempdir().unwrap();
    let project = crate::common::project();
    let server = model(vec![text_reply("after", 8, 0)]).await;
    let efrd = daemon(home.path(), &server);
    let socket = efrd.socket();
    let connects = (0..CLIENTS).map(|_| {
        let socket = socket.clone();
        tokio::spawn(async move {
            let mut client = Client::connect_raw(&socket).await.unwrap();
            // A refused connection may be closed before hello is written: its busy frame is still there to read.
            let _ = client.send_value(&hello()).await;
            let frame = client.read_frame().await.unwrap().expect("a frame before the close");
            if matches!(frame, ServerFrame::Item { .. }) {
                // hello's end, so that the client's own ids start clean.
                let end = client.read_frame().await.unwrap();
                assert!(matches!(end, Some(ServerFrame::End { .. })), "{end:?}");
            }
            (client, frame)
        })
    });
    let mut served = Vec::new();
    let mut refused = 0;
    for connect in connects {
        match bounded("a connect", connect).await.unwrap() {
            (client, ServerFrame::Item { .. }) => served.push(client),
            (_, ServerFrame::Error { id: None, error }) => {
                assert_eq!(error.code, ErrorCode::Busy, "{error:?}");
                assert!(error.message.contains("at most"), "a refusal says why: {error:?}");
                refused += 1;
            }
            (_, other) => panic!("{other:?}"),
        }
    }
    assert_eq!(served.len() + refused, CLIENTS);
    assert!(refused > 0, "1,000 clients are more than efrd serves at once");
    assert_eq!(
        served.len(),
        efrd::server::MAX_CONNECTIONS,
        "efrd serves its documented number"
    );
    // Every served client is answered, and efrd is alive and serves a turn.
    for client in served.iter_mut().step_by(50) {
        client.ok("admin.status", json!({})).await.unwrap();
    }
    let mut client = served.pop().unwrap();
    let sent = prompt(&mut client, project.path(), None, "hello").await;
    let (id, _) = subscribe(&mut client, sent["conversation_id"].as_str().unwrap(), Some(0)).await;
    let events = bounded("a turn under load", events_until(&mut client, id, "turn_completed")).await;
    assert_eq!(text_of(&events), "after");
    // When they leave, new clients are served again.
    drop(served);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut raw = Client::connect_raw(&socket).await.unwrap();
    raw.send_value(&hello()).await.unwrap();
    let frame = raw.read_frame().await.unwrap().unwrap();
    assert!(matches!(frame, ServerFrame::Item { .. }), "{frame:?}");
    assert!(efrd.pid().is_some());
}

fn hello() -> serde_json::Value {
    json!({"id": 1, "method": "hello", "params": {"protocol": efr_protocol::PROTOCOL_VERSION,
        "client": {"name": "efr-tests", "version": "0"}}})
}
