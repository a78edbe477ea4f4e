//! Pairing through a real efrd, inside the test's network namespaces (`remote_setup`): device.pair_start without the
//! listener, an expired token, five pairings at once, a key already held, and the reference phone client
//! (`tests/phone/phone.py`) end to end.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use efr_protocol::ErrorCode;
use efr_protocol::device::key_fingerprint;
use efr_test_support::client::{Client, StreamFrame};
use serde_json::{Value, json};

use super::remote_setup::{
    PHONE, call, hello_params, inside, item, new_key, open, pair_phone, public_key, tailnet, tailnet_configured,
    tailnet_with, token_of,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pair_start_says_off_without_the_listener() {
    let home = tempfile::tempdir().unwrap();
    let daemon =
        efr_test_support::daemon::TestDaemon::start(crate::common::efrd_binary(), home.path(), None, &[]).unwrap();
    let mut terminal = Client::connect(&daemon.socket()).await.unwrap();
    let error = terminal
        .call("device.pair_start", json!({}))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code, efr_protocol::ErrorCode::Conflict);
    assert_eq!(error.data, Some(json!({"remote": "off"})));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_phone_client_pairs_proves_and_follows_its_turn() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let python = efr_test_support::python::venv(
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")),
        &root.join("tests/phone/requirements.txt"),
    )
    .unwrap();
    let net = tailnet_with(Some(vec![crate::common::tools::text("hello from the desk")])).await;
    let mut terminal = Client::connect_raw(&net.daemon.socket()).await.unwrap();
    terminal
        .ok("hello", json!({"protocol": 1, "client": {"name": "t", "version": "1"}}))
        .await
        .unwrap();
    let pair = terminal.send("device.pair_start", json!({}), false).await.unwrap();
    let started = item(&mut terminal, pair).await;
    let url = started["qr"].as_str().unwrap().to_owned();
    let script = root.join("tests/phone/phone.py");
    let mut phone = Box::pin(inside(&net.phone, move || async move {
        tokio::process::Command::new(python)
            .arg(script)
            .arg(url)
            .arg("say hello")
            .arg(PHONE.to_string())
            .kill_on_drop(true)
            .output()
            .await
            .unwrap()
    }));
    let confirm = async {
        let pending = item(&mut terminal, pair).await;
        assert_eq!(pending["kind"], "pending", "{pending}");
        assert_eq!(pending["device_name"], "Reference phone");
        let params = json!({"pairing_id": pending["pairing_id"], "accept": true});
        terminal.ok("device.pair_confirm", params).await.unwrap()
    };
    let confirmed = tokio::select! {
        confirmed = confirm => confirmed,
        output = &mut phone => {
            panic!("phone.py ended before the pairing: {}", String::from_utf8_lossy(&output.stderr));
        }
    };
    let output = tokio::time::timeout(Duration::from_secs(60), phone).await.unwrap();
    assert!(
        output.status.success(),
        "phone.py: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let seen: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(seen["device_id"], confirmed["device_id"], "{seen}");
    assert_eq!(seen["scopes"], json!(["read", "operate", "approve"]), "{seen}");
    assert_eq!(seen["text"], "hello from the desk", "{seen}");
    assert_eq!(
        seen["kinds"].as_array().unwrap().last().unwrap(),
        "turn_completed",
        "{seen}"
    );
    let seqs: Vec<u64> = seen["seqs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>(), "{seen}");
    let list = terminal.ok("device.list", json!({})).await.unwrap();
    assert_eq!(list["devices"][0]["device_id"], confirmed["device_id"], "{list}");
}

/// The terminal's hello on the Unix socket.
fn terminal_hello() -> Value {
    json!({"protocol": 1, "client": {"name": "t", "version": "1"}})
}

/// Enrolls `point` with `token` from the phone's address: the answer of device.enroll.
async fn enroll(net_phone: &std::sync::Arc<efr_test_support::netns::NetNs>, token: String, point: [u8; 65]) -> Value {
    inside(net_phone, move || async move {
        let mut ws = open(PHONE).await.unwrap();
        call(&mut ws, 1, "hello", hello_params()).await;
        let params = json!({"token": token, "name": "Pixel", "public_key": STANDARD.encode(point)});
        call(&mut ws, 2, "device.enroll", params).await
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_token_is_refused_and_its_pairing_ends_with_expired() {
    let net = tailnet_configured(None, "token_lifetime_secs = 1").await;
    let mut terminal = Client::connect_raw(&net.daemon.socket()).await.unwrap();
    terminal.ok("hello", terminal_hello()).await.unwrap();
    let pair = terminal.send("device.pair_start", json!({}), false).await.unwrap();
    let started = item(&mut terminal, pair).await;
    assert_eq!(started["kind"], "started", "{started}");
    let token = token_of(started["qr"].as_str().unwrap());
    let ended = item(&mut terminal, pair).await;
    assert_eq!(
        (&ended["kind"], &ended["reason"]),
        (&json!("ended"), &json!("expired")),
        "{ended}"
    );
    assert_eq!(terminal.next_of(pair).await.unwrap(), StreamFrame::End);

    let enrolled = enroll(&net.phone, token, public_key(&new_key())).await;
    assert_eq!(enrolled["error"]["code"], "unauthorized", "{enrolled}");
    let list = terminal.ok("device.list", json!({})).await.unwrap();
    assert_eq!(list["devices"], json!([]), "{list}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifth_pairing_at_once_and_a_key_already_held_are_refused_and_the_token_stays_good() {
    let net = tailnet().await;
    let mut terminal = Client::connect_raw(&net.daemon.socket()).await.unwrap();
    terminal.ok("hello", terminal_hello()).await.unwrap();
    let (held_key, held_id) = pair_phone(&mut terminal, &net.phone).await;

    // Four pairings open at once; the fifth is busy until one of them ends.
    let mut pairs = Vec::new();
    for _ in 0..4 {
        let pair = terminal.send("device.pair_start", json!({}), false).await.unwrap();
        let started = item(&mut terminal, pair).await;
        assert_eq!(started["kind"], "started", "{started}");
        pairs.push((pair, token_of(started["qr"].as_str().unwrap())));
    }
    let fifth = terminal
        .call("device.pair_start", json!({}))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(fifth.code, ErrorCode::Busy, "{fifth:?}");
    let (cancelled, _) = pairs.pop().unwrap();
    terminal.cancel(cancelled).await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let reopened = loop {
        let pair = terminal.send("device.pair_start", json!({}), false).await.unwrap();
        match terminal.next_of(pair).await.unwrap() {
            StreamFrame::Item(started) => break started,
            StreamFrame::Error(error) if error.code == ErrorCode::Busy && std::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => panic!("a pairing after a cancel: {other:?}"),
        }
    };
    assert_eq!(reopened["kind"], "started", "{reopened}");

    // The key of a device that is not revoked: conflict, and the same token then pairs a new key.
    let (pair, token) = pairs[0].clone();
    let held = public_key(&held_key);
    let fresh = public_key(&new_key());
    let phone = inside(&net.phone, move || async move {
        let mut ws = open(PHONE).await.unwrap();
        call(&mut ws, 1, "hello", hello_params()).await;
        let params = json!({"token": token, "name": "Pixel", "public_key": STANDARD.encode(held)});
        let held = call(&mut ws, 2, "device.enroll", params.clone()).await;
        let mut params = params;
        params["public_key"] = json!(STANDARD.encode(fresh));
        let fresh = call(&mut ws, 3, "device.enroll", params).await;
        (held, fresh)
    });
    let confirm = async {
        let pending = item(&mut terminal, pair).await;
        assert_eq!(pending["kind"], "pending", "{pending}");
        assert_eq!(pending["key_fingerprint"], key_fingerprint(&fresh), "{pending}");
        let params = json!({"pairing_id": pending["pairing_id"], "accept": true});
        terminal.ok("device.pair_confirm", params).await.unwrap()
    };
    let ((held, fresh), confirmed) = tokio::join!(phone, confirm);
    assert_eq!(held["error"]["code"], "conflict", "{held}");
    assert_eq!(fresh["item"]["device_id"], confirmed["device_id"], "{fresh}");
    assert_ne!(confirmed["device_id"], held_id.as_str());
    let list = terminal.ok("device.list", json!({})).await.unwrap();
    assert_eq!(list["devices"].as_array().unwrap().len(), 2, "{list}");
}
