//! The real efrd binary over its real socket: hello, bad frames, scopes of the connection, unknown methods.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use efr_protocol::ErrorCode;
use efr_protocol::frame::ServerFrame;
use efr_test_support::client::{Client, StreamFrame};
use serde_json::json;

use common::{daemon, model};
use efr_test_support::daemon::{TestDaemon, config_for};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hello_reports_the_daemon_and_a_wrong_version_stops_the_connection() {
    let home = tempfile::tempdir().unwrap();
    let server = model(vec![]).await;
    let efrd = daemon(home.path(), &server);

    let mut client = Client::connect_raw(&efrd.socket()).await.unwrap();
    // Before hello, nothing runs.
    let error = client.call("models.list", json!(null)).await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::Invalid);
    assert!(error.message.contains("hello"), "{}", error.message);

    let error = client
        .call("hello", json!({"protocol": 2, "client": {"name": "t", "version": "0"}}))
        .await
        .unwrap();
    let error = error.unwrap_err();
    assert_eq!(error.code, ErrorCode::ProtocolMismatch);
    assert_eq!(error.data, Some(json!({"protocol": 1})));
    // Nothing else runs on that connection, not even a second hello.
    let error = client.call("models.list", json!(null)).await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::ProtocolMismatch);
    let error = client
        .call("hello", json!({"protocol": 1, "client": {"name": "t", "version": "0"}}))
        .await
        .unwrap();
    assert_eq!(error.unwrap_err().code, ErrorCode::ProtocolMismatch);

    let mut good = Client::connect_raw(&efrd.socket()).await.unwrap();
    let hello = good
        .ok(
            "hello",
            json!({"protocol": 1, "client": {"name": "t", "version": "0"}, "tty": "/dev/pts/1"}),
        )
        .await
        .unwrap();
    assert_eq!(hello["protocol"], 1);
    assert_eq!(hello["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(hello["paths"]["socket"], json!(efrd.socket()));
    let daemon_id = hello["daemon_id"].as_str().unwrap().to_owned();
    uuid::Uuid::parse_str(&daemon_id).unwrap();
    // A second hello is the phone's probe: conflict, and the connection goes on.
    let again = good
        .call("hello", json!({"protocol": 1, "client": {"name": "t", "version": "0"}}))
        .await
        .unwrap();
    assert_eq!(again.unwrap_err().code, ErrorCode::Conflict);
    assert!(good.ok("models.list", json!(null)).await.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_methods_and_bad_params_name_what_is_wrong() {
    let home = tempfile::tempdir().unwrap();
    let server = model(vec![]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();

    let error = client.call("prompt.sned", json!({})).await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::Invalid);
    assert!(error.message.contains("prompt.sned"), "{}", error.message);

    let error = client
        .call("prompt.send", json!({"command_id": common::command_id()}))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Invalid);
    assert!(error.message.contains("text"), "{}", error.message);

    let error = client
        .call(
            "prompt.send",
            json!({"command_id": common::command_id(), "text": "hi", "settings": {"mode": 5}}),
        )
        .await
        .unwrap()
        .unwrap_err();
    assert!(error.message.contains("settings.mode"), "{}", error.message);

    let error = client.call("models.list", json!({"x": 1})).await.unwrap().unwrap_err();
    assert!(error.message.contains('x'), "{}", error.message);

    // call.background of a conversation that does not exist.
    let error = client
        .call(
            "call.background",
            json!({"command_id": common::command_id(), "conversation_id": uuid::Uuid::new_v4().to_string(), "call_id": "c1"}),
        )
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::NotFound, "{}", error.message);

    // A method served only on the tailnet listener is forbidden here.
    let error = client.call("device.prove", json!({})).await.unwrap().unwrap_err();
    assert_eq!(error.code, ErrorCode::Forbidden);

    // A request with an id but a bad member gets an error for that id, and the connection goes on.
    client
        .send_value(&json!({"id": 77, "method": "models.list", "params": [1]}))
        .await
        .unwrap();
    let frame = client.next_frame_for(Some(77)).await.unwrap();
    let ServerFrame::Error { error, .. } = frame else {
        panic!("expected an error, got {frame:?}")
    };
    assert!(error.message.contains("params"));
    assert!(client.ok("models.list", json!(null)).await.is_ok());

    // A cancel of an unknown id is ignored.
    client.cancel(999).await.unwrap();
    assert!(client.ok("models.list", json!(null)).await.is_ok());
}

/// efrd whose provider never answers: a TCP listener that takes connections and reads nothing, so a request that
/// calls the provider (admin.login_api_key with its check) stays in flight until it is cancelled. The listener is
/// returned to be kept alive.
fn daemon_with_a_silent_provider(home: &std::path::Path) -> (TestDaemon, std::net::TcpListener) {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    let efrd = TestDaemon::start(common::efrd_binary(), home, Some(&config_for(&url)), &[]).unwrap();
    (efrd, silent)
}

/// A login whose key check waits on the silent provider, under request id `id`.
fn hanging_login(id: u64) -> serde_json::Value {
    json!({"id": id, "method": "admin.login_api_key",
        "params": {"provider": "openai-api", "key": "sk-proj-testkey0000000000000000a1b2", "check": true}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_id_already_in_flight_is_refused_and_the_first_request_goes_on() {
    let home = tempfile::tempdir().unwrap();
    let (efrd, _silent) = daemon_with_a_silent_provider(home.path());
    let mut client = efrd.client().await.unwrap();
    client.send_value(&hanging_login(500)).await.unwrap();
    // Same id while the login waits: an error for that id (docs/protocol.md: ids are unique among a connection's
    // requests in flight; a bad request gets an error for its id and the connection stays open).
    client
        .send_value(&json!({"id": 500, "method": "models.list"}))
        .await
        .unwrap();
    let frame = client.next_frame_for(Some(500)).await.unwrap();
    let ServerFrame::Error { error, .. } = frame else {
        panic!("expected the refusal, got {frame:?}")
    };
    assert_eq!(error.code, ErrorCode::Invalid, "{error:?}");
    assert_eq!(error.message, "request id 500 is already in flight on this connection");
    // The first request was not touched: it is still in flight, and its cancel ends it.
    client.cancel(500).await.unwrap();
    let frame = client.next_frame_for(Some(500)).await.unwrap();
    assert!(
        matches!(&frame, ServerFrame::Error { error, .. } if error.code == ErrorCode::Cancelled),
        "{frame:?}"
    );
    // The id is free again, and the connection serves.
    client
        .send_value(&json!({"id": 500, "method": "models.list"}))
        .await
        .unwrap();
    assert!(matches!(
        client.next_frame_for(Some(500)).await.unwrap(),
        ServerFrame::Item { .. }
    ));
    assert!(matches!(
        client.next_frame_for(Some(500)).await.unwrap(),
        ServerFrame::End { .. }
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_unary_request_answers_cancelled_and_stores_nothing() {
    let home = tempfile::tempdir().unwrap();
    let (efrd, _silent) = daemon_with_a_silent_provider(home.path());
    let mut client = efrd.client().await.unwrap();
    client.send_value(&hanging_login(7)).await.unwrap();
    client.cancel(7).await.unwrap();
    let frame = client.next_frame_for(Some(7)).await.unwrap();
    let ServerFrame::Error { error, .. } = frame else {
        panic!("expected cancelled, got {frame:?}")
    };
    assert_eq!(error.code, ErrorCode::Cancelled, "{error:?}");
    // Cancelled before the check answered: no key was stored, and the connection serves.
    let status = client.ok("admin.status", json!(null)).await.unwrap();
    let openai = status["providers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["provider"] == "openai-api")
        .unwrap();
    assert!(
        openai.get("login").is_none() && openai.get("key_hint").is_none(),
        "{openai}"
    );
}

/// Sends `bytes` raw on a fresh connection after hello and returns the frames until the daemon closes it.
async fn answers_to(efrd: &efr_test_support::daemon::TestDaemon, bytes: &[u8]) -> Vec<ServerFrame> {
    let mut client = efrd.client().await.unwrap();
    client.send_raw(bytes).await.unwrap();
    let mut frames = Vec::new();
    while let Some(frame) = client.read_frame().await.unwrap() {
        frames.push(frame);
    }
    frames
}

fn framed(body: &[u8]) -> Vec<u8> {
    let mut out = u32::try_from(body.len()).unwrap().to_be_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_frames_get_their_answer_and_the_daemon_keeps_serving() {
    let home = tempfile::tempdir().unwrap();
    let server = model(vec![]).await;
    let efrd = daemon(home.path(), &server);
    let mut bystander = efrd.client().await.unwrap();

    // A 17 MiB frame: refused from its header, before a byte of the body is sent.
    let header = (17_u32 * 1024 * 1024).to_be_bytes();
    let frames = answers_to(&efrd, &header).await;
    assert!(
        matches!(&frames[..], [ServerFrame::Error { id: None, error }] if error.code == ErrorCode::TooLarge),
        "{frames:?}"
    );

    let frames = answers_to(&efrd, &framed(b"{\"id\": 1, \"method\": ")).await;
    assert!(
        matches!(&frames[..], [ServerFrame::Error { id: None, error }] if error.code == ErrorCode::Invalid && error.message.contains("JSON")),
        "{frames:?}"
    );

    let frames = answers_to(&efrd, &framed(b"[1, 2, 3]")).await;
    assert!(
        matches!(&frames[..], [ServerFrame::Error { id: None, error }] if error.message.contains("not an object")),
        "{frames:?}"
    );

    // A truncated frame: the daemon closes quietly when the peer goes.
    let mut client = efrd.client().await.unwrap();
    client.send_raw(&framed(b"{\"id\": 5}")[..6]).await.unwrap();
    drop(client);

    // The other connection never noticed.
    let models = bystander.ok("models.list", json!(null)).await.unwrap();
    assert!(models["models"].is_array());
    let status = bystander.ok("admin.status", json!(null)).await.unwrap();
    assert_eq!(status["pid"], efrd.pid().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_requests_in_flight_are_answered_interleaved() {
    let home = tempfile::tempdir().unwrap();
    let server = model(vec![]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let mut ids = Vec::new();
    for _ in 0..50 {
        ids.push(client.send("admin.status", json!(null), false).await.unwrap());
    }
    for id in ids {
        assert!(matches!(client.next_of(id).await.unwrap(), StreamFrame::Item(_)));
        assert_eq!(client.next_of(id).await.unwrap(), StreamFrame::End);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_over_the_frame_limit_is_too_large_for_its_request_and_the_connection_goes_on() {
    let home = tempfile::tempdir().unwrap();
    let project = common::project();
    // A message of 17 MiB: assistant_message_completed holds it whole, one item over the 16 MiB frame limit.
    let big = "abcdefghijklmno\n".repeat(17 * 1024 * 1024 / 16);
    let server = model(vec![common::text_reply(&big, 256 * 1024, 0)]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let sent = common::prompt(&mut client, project.path(), None, "say a lot").await;
    let conversation = sent["conversation_id"].as_str().unwrap();
    let (id, _) = common::subscribe(&mut client, conversation, Some(0)).await;
    let mut text = 0;
    // The last update comes quickly; the whole message takes efrd tens of seconds more in a debug build (the
    // provider's final event repeats the 17 MiB), so the wait for it is longer than one frame's timeout.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    let error = loop {
        let next = match client.next_of(id).await {
            Err(e) if e.to_string().starts_with("no frame") && std::time::Instant::now() < deadline => continue,
            next => next.unwrap(),
        };
        match next {
            StreamFrame::Item(item) => {
                let event = &item["event"];
                assert_ne!(
                    event["kind"], "assistant_message_completed",
                    "an item over the limit was sent"
                );
                if event["kind"] == "assistant_message_updated" {
                    text += event["delta"].as_str().unwrap().len();
                }
            }
            StreamFrame::Error(error) => break error,
            other => panic!("expected items, then too_large: {other:?}"),
        }
    };
    assert_eq!(error.code, ErrorCode::TooLarge, "{error:?}");
    assert!(
        error.message.contains("over the limit of 16777216"),
        "{}",
        error.message
    );
    assert_eq!(text, big.len(), "every event before the big one arrived");
    // The same connection goes on: a unary call, and a new subscription after the big event.
    let models = client.ok("models.list", json!(null)).await.unwrap();
    assert!(models["models"].is_array());
    let list = client.ok("conversations.list", json!({})).await.unwrap();
    let last = list["conversations"][0]["last_seq"].as_u64().unwrap();
    let (id, _) = common::subscribe(&mut client, conversation, Some(last - 1)).await;
    let StreamFrame::Item(item) = client.next_of(id).await.unwrap() else {
        panic!("the last event")
    };
    assert_eq!(item["event"]["kind"], "turn_completed", "{item}");
}
