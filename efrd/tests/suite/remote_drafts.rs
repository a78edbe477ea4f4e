//! Drafts for a phone on a slow link, through a real efrd inside the test's network namespaces (`remote_setup`): the
//! desk's side of the link is throttled to 64 KiB/s with tc, and the phone's drafts arrive merged, their text equal
//! to the committed text byte for byte.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::time::Duration;

use efr_test_support::client::Client;
use efr_test_support::scripted::Reply;
use futures::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use super::remote_setup::{PHONE, call, inside, open, pair_phone, prove, tailnet_with};

/// About `bytes` of multi-byte text in pieces of about 1 KiB.
fn pieces(bytes: usize) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut total = 0;
    let mut n = 0;
    while total < bytes {
        let mut piece = String::new();
        while piece.len() < 1024 {
            piece.push_str(&format!("größe 🙂 line {n} of a phone's answer\n"));
            n += 1;
        }
        total += piece.len();
        pieces.push(piece);
    }
    pieces
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_phone_on_a_link_throttled_to_64_kib_s_gets_merged_drafts_equal_to_the_committed_text() {
    let answer = pieces(256 * 1024);
    let deltas = answer.len();
    let net = tailnet_with(Some(vec![Reply::streamed(answer, 0)])).await;
    // 64 KiB/s (512 kbit/s) from the desk to the phone.
    let tc = net
        .desk
        .command("tc")
        .args([
            "qdisc", "add", "dev", "tn0", "root", "tbf", "rate", "512kbit", "burst", "16kb", "latency", "5s",
        ])
        .output()
        .expect("tc runs (install the Debian package iproute2)");
    assert!(tc.status.success(), "tc: {}", String::from_utf8_lossy(&tc.stderr));

    let mut terminal = Client::connect_raw(&net.daemon.socket()).await.unwrap();
    let hello = terminal
        .ok("hello", json!({"protocol": 1, "client": {"name": "t", "version": "1"}}))
        .await
        .unwrap();
    let daemon_id = hello["daemon_id"].as_str().unwrap().to_owned();
    let (key, device_id) = pair_phone(&mut terminal, &net.phone).await;

    let (text, committed, drafts) = inside(&net.phone, move || async move {
        let mut ws = open(PHONE).await.unwrap();
        let proved = prove(&mut ws, &key, &device_id, &daemon_id).await;
        assert!(proved.get("item").is_some(), "{proved}");
        let sent = call(
            &mut ws,
            3,
            "prompt.send",
            json!({"command_id": crate::common::command_id(), "text": "go"}),
        )
        .await;
        let conversation = sent["item"]["conversation_id"].as_str().unwrap().to_owned();
        let params = json!({"conversation_id": conversation, "after_seq": 0, "drafts": true});
        let frame = json!({"id": 4, "method": "conversation.subscribe", "params": params});
        ws.send(Message::Text(frame.to_string().into())).await.unwrap();
        let (mut text, mut committed, mut drafts) = (String::new(), None::<String>, 0);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        while committed.as_ref().is_none_or(|c| text.len() < c.len()) {
            let next = tokio::time::timeout_at(deadline, ws.next())
                .await
                .unwrap_or_else(|_| panic!("the drafts stopped at {} bytes", text.len()));
            let Some(Ok(Message::Text(raw))) = next else {
                assert!(matches!(next, Some(Ok(_))), "the connection ended: {next:?}");
                continue;
            };
            let frame: Value = serde_json::from_str(&raw).unwrap();
            assert!(
                frame.get("error").is_none(),
                "a draft never ends a subscription: {frame}"
            );
            let item = &frame["item"];
            if item["draft"]["draft"]["kind"] == "text" {
                let part = &item["draft"]["draft"];
                let offset = usize::try_from(part["offset"].as_u64().unwrap()).unwrap();
                let delta = part["delta"].as_str().unwrap();
                assert!(offset <= text.len(), "no gap");
                let overlap = (text.len() - offset).min(delta.len());
                assert_eq!(&text[offset..offset + overlap], &delta[..overlap]);
                text.push_str(&delta[overlap..]);
                drafts += 1;
            } else if item["event"]["kind"] == "assistant_message_completed" {
                committed = Some(item["event"]["text"].as_str().unwrap().to_owned());
            }
        }
        (text, committed.unwrap(), drafts)
    })
    .await;
    assert!(
        text == committed,
        "the drafts' text is the committed text, byte for byte"
    );
    // The socket buffers take the first drafts as they come; then the link holds the rest, which merge.
    assert!(
        drafts < deltas,
        "a slow link gets merged drafts: {drafts} drafts for {deltas} deltas"
    );
}
