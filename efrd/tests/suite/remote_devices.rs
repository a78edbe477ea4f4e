//! Pairing and proof through a real efrd: the terminal's device.pair_start and device.pair_confirm on the Unix
//! socket, the phone's device.enroll and device.prove on the tailnet WebSocket (inside the test's namespaces, with
//! tailscaled's double), device.list and device.revoke; each refusal of the spec; a phone that drops mid-turn and
//! resumes after the last seq it saw; and the reference phone client (`tests/phone/phone.py`) end to end.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::net::IpAddr;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use efr_protocol::device::{ProveInputs, key_fingerprint, prove_message};
use efr_test_support::client::{Client, StreamFrame};
use efr_test_support::tailscaled::whois_json;
use p256::ecdsa::signature::Signer as _;
use p256::ecdsa::{Signature, SigningKey};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use super::remote_listener::{
    PHONE, USER, Ws, call, close_code, desk_status, hello_params, inside, open, tailnet, tailnet_with,
};

fn new_key() -> SigningKey {
    loop {
        if let Ok(key) = SigningKey::from_slice(&rand::random::<[u8; 32]>()) {
            return key;
        }
    }
}

fn public_key(key: &SigningKey) -> [u8; 65] {
    key.verifying_key()
        .to_encoded_point(false)
        .as_bytes()
        .try_into()
        .unwrap()
}

/// The next item of a stream.
async fn item(client: &mut Client, id: efr_protocol::frame::RequestId) -> Value {
    match tokio::time::timeout(Duration::from_secs(15), client.next_of(id))
        .await
        .unwrap()
        .unwrap()
    {
        StreamFrame::Item(item) => item,
        other => panic!("expected an item, got {other:?}"),
    }
}

/// The token of an `efr://pair` URL.
fn token_of(url: &str) -> String {
    url.split('&')
        .find_map(|member| member.strip_prefix("t="))
        .unwrap()
        .to_owned()
}

/// The hello, then device.prove of `device_id` signed with `key`; returns the answer.
async fn prove(ws: &mut Ws, key: &SigningKey, device_id: &str, daemon_id: &str) -> Value {
    let hello = call(ws, 1, "hello", hello_params()).await;
    if hello.get("ended").is_some() {
        return hello;
    }
    let result = &hello["item"];
    let message = prove_message(&ProveInputs {
        challenge: result["challenge"].as_str().unwrap().to_owned(),
        daemon_id: daemon_id.parse().unwrap(),
        protocol: 1,
        device_id: device_id.parse().unwrap(),
        peer_node: result["prove"]["peer_node"].as_str().unwrap().to_owned(),
        daemon_tailnet: result["prove"]["daemon_tailnet"].as_str().unwrap().to_owned(),
    })
    .unwrap();
    let signature: Signature = key.sign(&message);
    let params = json!({"device_id": device_id, "signature": STANDARD.encode(signature.to_der().as_bytes())});
    call(ws, 2, "device.prove", params).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_phone_pairs_proves_and_is_revoked_and_each_refusal_holds() {
    let net = tailnet().await;
    let mut terminal = Client::connect_raw(&net.daemon.socket()).await.unwrap();
    let hello = terminal
        .ok("hello", json!({"protocol": 1, "client": {"name": "t", "version": "1"}}))
        .await
        .unwrap();
    let daemon_id = hello["daemon_id"].as_str().unwrap().to_owned();

    // The Unix socket refuses the phone's methods.
    let refused = terminal
        .call("device.enroll", json!({"token": "x", "name": "n", "public_key": "x"}))
        .await
        .unwrap();
    assert_eq!(refused.unwrap_err().code, efr_protocol::ErrorCode::Forbidden);

    let pair = terminal
        .send("device.pair_start", json!({"name": "Ada's phone"}), false)
        .await
        .unwrap();
    let started = item(&mut terminal, pair).await;
    assert_eq!(started["kind"], "started", "{started}");
    let qr = started["qr"].as_str().unwrap().to_owned();
    assert!(qr.starts_with("efr://pair?v=1&d="), "{qr}");
    assert!(
        qr.contains("&h=100.101.102.103&p=8765&f=laptop.tail3f2a.ts.net&t="),
        "{qr}"
    );
    let token = token_of(&qr);
    assert_eq!(token.len(), 24, "144 bits");

    let key = new_key();
    let point = public_key(&key);
    let enroll_token = token.clone();
    let phone = inside(&net.phone, move || async move {
        let mut ws = open(PHONE).await.unwrap();
        call(&mut ws, 1, "hello", hello_params()).await;
        let wrong = call(
            &mut ws,
            2,
            "device.enroll",
            json!({"token": "wrong", "name": "p", "public_key": "x"}),
        )
        .await;
        // The fingerprint vector's key is not a point of the curve: invalid, and the token stays good.
        let mut off_curve = vec![4_u8];
        off_curve.extend(1..=64_u8);
        let off = json!({"token": enroll_token, "name": "p", "public_key": STANDARD.encode(&off_curve)});
        let off_curve = call(&mut ws, 3, "device.enroll", off).await;
        let params = json!({"token": enroll_token, "name": "Pixel", "public_key": STANDARD.encode(point)});
        let enrolled = call(&mut ws, 4, "device.enroll", params).await;
        (wrong, off_curve, enrolled)
    });
    let confirm = async {
        let pending = item(&mut terminal, pair).await;
        assert_eq!(pending["kind"], "pending", "{pending}");
        assert_eq!(pending["device_name"], "Ada's phone");
        assert_eq!(pending["node_name"], "ada-pixel.tail3f2a.ts.net");
        assert_eq!(pending["user_login"], "ada@github");
        assert_eq!(pending["os"], "android");
        assert_eq!(pending["key_fingerprint"], key_fingerprint(&point));
        let pairing_id = pending["pairing_id"].clone();
        let confirmed = terminal
            .ok("device.pair_confirm", json!({"pairing_id": pairing_id, "accept": true}))
            .await
            .unwrap();
        let paired = item(&mut terminal, pair).await;
        assert_eq!(paired["kind"], "paired", "{paired}");
        assert_eq!(paired["device_id"], confirmed["device_id"]);
        assert_eq!(terminal.next_of(pair).await.unwrap(), StreamFrame::End);
        confirmed["device_id"].as_str().unwrap().to_owned()
    };
    let ((wrong, off_curve, enrolled), device_id) = tokio::join!(phone, confirm);
    assert_eq!(wrong["error"]["code"], "unauthorized", "{wrong}");
    assert_eq!(off_curve["error"]["code"], "invalid", "{off_curve}");
    assert_eq!(enrolled["item"]["device_id"], device_id.as_str(), "{enrolled}");
    assert_eq!(enrolled["item"]["scopes"], json!(["read", "operate", "approve"]));

    // The proof, then the phone's methods; a second proof is conflict.
    let (proved, recent, second) = {
        let (key, device_id, daemon_id) = (key.clone(), device_id.clone(), daemon_id.clone());
        inside(&net.phone, move || async move {
            let mut ws = open(PHONE).await.unwrap();
            let proved = prove(&mut ws, &key, &device_id, &daemon_id).await;
            let recent = call(&mut ws, 3, "conversations.recent", json!({})).await;
            let signature: Signature = key.sign(b"x");
            let again = json!({"device_id": device_id, "signature": STANDARD.encode(signature.to_der().as_bytes())});
            let second = call(&mut ws, 4, "device.prove", again).await;
            (proved, recent, second)
        })
        .await
    };
    assert_eq!(
        proved["item"]["scopes"],
        json!(["read", "operate", "approve"]),
        "{proved}"
    );
    assert!(recent.get("item").is_some(), "{recent}");
    assert_eq!(second["error"]["code"], "conflict", "{second}");

    // A bad signature, an unknown device, and the third refusal closes the connection; the message never changes.
    let refusals = {
        let (device_id, daemon_id) = (device_id.clone(), daemon_id.clone());
        inside(&net.phone, move || async move {
            let mut ws = open(PHONE).await.unwrap();
            let other_key = new_key();
            let bad = prove(&mut ws, &other_key, &device_id, &daemon_id).await;
            let unknown_id = "00000000-0000-4000-8000-000000000001";
            let signature: Signature = other_key.sign(b"x");
            let params = json!({"device_id": unknown_id, "signature": STANDARD.encode(signature.to_der().as_bytes())});
            let unknown = call(&mut ws, 3, "device.prove", params.clone()).await;
            let third = call(&mut ws, 4, "device.prove", params).await;
            let closed = close_code(&mut ws, Duration::from_secs(5)).await;
            (bad, unknown, third, closed)
        })
        .await
    };
    let (bad, unknown, third, closed) = refusals;
    for refusal in [&bad, &unknown, &third] {
        assert_eq!(refusal["error"]["code"], "unauthorized", "{refusal}");
        assert_eq!(
            refusal["error"]["message"], bad["error"]["message"],
            "one message for every refusal"
        );
        assert!(refusal["error"].get("data").is_none(), "{refusal}");
    }
    assert_eq!(closed, Some(CloseCode::Away));

    // Tailscale installed again on the phone: a new node id. re_pair, after a valid signature only.
    net.api.set_whois(
        IpAddr::V4(PHONE),
        whois_json(
            "nNewInstall",
            "ada-pixel.tail3f2a.ts.net.",
            USER,
            "ada@github",
            &[],
            0,
            "android",
        ),
    );
    let re_pair = {
        let (key, device_id, daemon_id) = (key.clone(), device_id.clone(), daemon_id.clone());
        inside(&net.phone, move || async move {
            let mut ws = open(PHONE).await.unwrap();
            let valid = prove(&mut ws, &key, &device_id, &daemon_id).await;
            let mut ws = open(PHONE).await.unwrap();
            let invalid = prove(&mut ws, &new_key(), &device_id, &daemon_id).await;
            (valid, invalid)
        })
        .await
    };
    assert_eq!(
        re_pair.0["error"]["data"],
        json!({"re_pair": true, "device_id": device_id}),
        "{re_pair:?}"
    );
    assert!(
        re_pair.1["error"].get("data").is_none(),
        "no re_pair without a valid signature: {re_pair:?}"
    );
    net.api.set_whois(
        IpAddr::V4(PHONE),
        whois_json(
            "nKq3wPhone11CNTRL",
            "ada-pixel.tail3f2a.ts.net.",
            USER,
            "ada@github",
            &[],
            0,
            "android",
        ),
    );

    // Another tailnet: the device paired on the old one is not proven there, and gets no re_pair.
    net.api.set_status(desk_status("ada.elsewhere"));
    let elsewhere = {
        let (key, device_id, daemon_id) = (key.clone(), device_id.clone(), daemon_id.clone());
        inside(&net.phone, move || async move {
            // Until the listener has seen the change, a connection may still belong to the old tailnet.
            let deadline = std::time::Instant::now() + Duration::from_secs(15);
            loop {
                if let Ok(mut ws) = open(PHONE).await {
                    let answer = prove(&mut ws, &key, &device_id, &daemon_id).await;
                    // A connection of the tailnet before the change may still prove, or end under the change.
                    if answer.get("error").is_some() || std::time::Instant::now() > deadline {
                        return answer;
                    }
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
        .await
    };
    assert_eq!(elsewhere["error"]["code"], "unauthorized", "{elsewhere}");
    assert!(elsewhere["error"].get("data").is_none(), "{elsewhere}");
    net.api.set_status(desk_status("ada.github"));

    // device.list, then a revoke closes the proven connection with 1001 and the device proves no more.
    let list = terminal.ok("device.list", json!({})).await.unwrap();
    assert_eq!(list["devices"][0]["device_id"], device_id.as_str());
    assert_eq!(list["devices"][0]["node"], "nKq3wPhone11CNTRL");
    assert!(list["devices"][0].get("last_seen_at").is_some(), "{list}");
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let revoked_conn = {
        let (key, device_id, daemon_id) = (key.clone(), device_id.clone(), daemon_id.clone());
        inside(&net.phone, move || async move {
            // The listener is back on the user's tailnet within a few polls of tailscaled.
            let deadline = std::time::Instant::now() + Duration::from_secs(15);
            let (mut ws, proved) = loop {
                if let Ok(mut ws) = open(PHONE).await {
                    let proved = prove(&mut ws, &key, &device_id, &daemon_id).await;
                    if proved.get("item").is_some() || std::time::Instant::now() > deadline {
                        break (ws, proved);
                    }
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            };
            let _ = tx.send(());
            let closed = close_code(&mut ws, Duration::from_secs(10)).await;
            let mut ws = open(PHONE).await.unwrap();
            let after = prove(&mut ws, &key, &device_id, &daemon_id).await;
            (proved, closed, after)
        })
    };
    let revoke = async {
        rx.await.unwrap();
        terminal
            .ok("device.revoke", json!({"device_id": device_id}))
            .await
            .unwrap()
    };
    let ((proved, closed, after), revoked) = tokio::join!(revoked_conn, revoke);
    assert!(proved.get("item").is_some(), "{proved}");
    assert!(revoked.get("revoked_at").is_some(), "{revoked}");
    assert_eq!(closed, Some(CloseCode::Away));
    assert_eq!(after["error"]["code"], "unauthorized", "{after}");
}

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

/// Pairs a new key from the phone's address and returns it with its device id and the daemon id.
async fn pair_phone(
    terminal: &mut Client,
    phone: &std::sync::Arc<efr_test_support::netns::NetNs>,
) -> (SigningKey, String) {
    let pair = terminal.send("device.pair_start", json!({}), false).await.unwrap();
    let started = item(terminal, pair).await;
    let token = token_of(started["qr"].as_str().unwrap());
    let key = new_key();
    let point = public_key(&key);
    let enroll = inside(phone, move || async move {
        let mut ws = open(PHONE).await.unwrap();
        call(&mut ws, 1, "hello", hello_params()).await;
        let params = json!({"token": token, "name": "Pixel", "public_key": STANDARD.encode(point)});
        call(&mut ws, 2, "device.enroll", params).await
    });
    let confirm = async {
        let pending = item(terminal, pair).await;
        let params = json!({"pairing_id": pending["pairing_id"], "accept": true});
        terminal.ok("device.pair_confirm", params).await.unwrap()
    };
    let (enrolled, confirmed) = tokio::join!(enroll, confirm);
    assert_eq!(enrolled["item"]["device_id"], confirmed["device_id"], "{enrolled}");
    (key, confirmed["device_id"].as_str().unwrap().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proven_phone_keeps_to_its_limits() {
    let net = tailnet_with(Some(vec![
        crate::common::tools::shell_call("call_q", "eval \"$x\""),
        crate::common::tools::text("done"),
    ]))
    .await;
    let mut terminal = Client::connect_raw(&net.daemon.socket()).await.unwrap();
    let hello = terminal
        .ok("hello", json!({"protocol": 1, "client": {"name": "t", "version": "1"}}))
        .await
        .unwrap();
    let daemon_id = hello["daemon_id"].as_str().unwrap().to_owned();
    let (key, device_id) = pair_phone(&mut terminal, &net.phone).await;
    let answers = inside(&net.phone, move || async move {
        let mut ws = open(PHONE).await.unwrap();
        let proved = prove(&mut ws, &key, &device_id, &daemon_id).await;
        assert!(proved.get("item").is_some(), "{proved}");
        let cid = || crate::common::command_id();
        let tty = json!({"command_id": cid(), "text": "hi", "context": {"cwd": "/tmp", "tty": "/dev/pts/3"}});
        let tty = call(&mut ws, 3, "prompt.send", tty).await;
        let sent = json!({"command_id": cid(), "text": "run it", "settings": {"mode": "auto"}});
        let sent = call(&mut ws, 4, "prompt.send", sent).await;
        let conversation = sent["item"]["conversation_id"].clone();
        let input = json!({"conversation_id": conversation, "call_id": "call_q", "text": "y"});
        let input = call(&mut ws, 5, "input.respond", input).await;
        let undo = call(
            &mut ws,
            6,
            "turn.undo",
            json!({"command_id": cid(), "conversation_id": conversation}),
        )
        .await;
        let admin = call(&mut ws, 7, "admin.status", json!({})).await;
        // The question of call_q: allow_always is refused, and the question stays open for an allow.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let always = loop {
            let params = json!({"command_id": cid(), "conversation_id": conversation, "call_id": "call_q",
                                "decision": "allow_always"});
            let answer = call(&mut ws, 8, "approval.respond", params).await;
            if answer["error"]["code"] != "not_found" || std::time::Instant::now() > deadline {
                break answer;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let params = json!({"command_id": cid(), "conversation_id": conversation, "call_id": "call_q",
                            "decision": "allow"});
        let allow = call(&mut ws, 9, "approval.respond", params).await;
        (tty, sent, input, undo, admin, always, allow)
    })
    .await;
    let (tty, sent, input, undo, admin, always, allow) = answers;
    assert_eq!(tty["error"]["code"], "invalid", "{tty}");
    assert_eq!(
        sent["item"]["settings"]["mode"], "cautious",
        "a phone's turn runs at most cautious: {sent}"
    );
    for refused in [&input, &undo, &admin, &always] {
        assert_eq!(refused["error"]["code"], "forbidden", "{refused}");
    }
    assert!(allow.get("item").is_some(), "the question stayed open: {allow}");
}

/// The events of subscription `id` on `ws` until one of kind `until` (included); `{"ended": ...}` frames fail.
async fn ws_events(ws: &mut Ws, id: u64, until: &str) -> Vec<Value> {
    use futures::StreamExt as _;
    use tokio_tungstenite::tungstenite::Message;
    let mut events = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let next = tokio::time::timeout_at(deadline, ws.next())
            .await
            .unwrap_or_else(|_| panic!("no {until} within 30 s after {events:?}"));
        let Some(Ok(Message::Text(text))) = next else {
            if matches!(next, Some(Ok(_))) {
                continue;
            }
            panic!("the connection ended before {until}: {next:?}");
        };
        let frame: Value = serde_json::from_str(&text).unwrap();
        if frame["id"] != id {
            continue;
        }
        let event = frame["item"]["event"].clone();
        assert!(!event.is_null(), "expected an event, got {frame}");
        events.push(event.clone());
        if event["kind"] == until {
            return events;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_phone_that_drops_mid_turn_resumes_with_after_seq_and_sees_every_event_once() {
    let net = tailnet_with(Some(vec![
        crate::common::tools::shell_call("call_q", "eval \"$x\""),
        crate::common::tools::text("done"),
    ]))
    .await;
    let mut terminal = Client::connect_raw(&net.daemon.socket()).await.unwrap();
    let hello = terminal
        .ok("hello", json!({"protocol": 1, "client": {"name": "t", "version": "1"}}))
        .await
        .unwrap();
    let daemon_id = hello["daemon_id"].as_str().unwrap().to_owned();
    let (key, device_id) = pair_phone(&mut terminal, &net.phone).await;

    // The phone starts a turn and watches it until the question; then its connection drops without a close.
    let (conversation, before) = {
        let (key, device_id, daemon_id) = (key.clone(), device_id.clone(), daemon_id.clone());
        inside(&net.phone, move || async move {
            let mut ws = open(PHONE).await.unwrap();
            let proved = prove(&mut ws, &key, &device_id, &daemon_id).await;
            assert!(proved.get("item").is_some(), "{proved}");
            let sent = json!({"command_id": crate::common::command_id(), "text": "run it"});
            let sent = call(&mut ws, 3, "prompt.send", sent).await;
            let conversation = sent["item"]["conversation_id"].as_str().unwrap().to_owned();
            let params = json!({"conversation_id": conversation, "after_seq": 0});
            let first = call(&mut ws, 4, "conversation.subscribe", params).await;
            let mut before = vec![first["item"]["event"].clone()];
            assert!(!before[0].is_null(), "{first}");
            if before[0]["kind"] != "approval_requested" {
                before.extend(ws_events(&mut ws, 4, "approval_requested").await);
            }
            drop(ws);
            (conversation, before)
        })
        .await
    };
    let asked = before.last().unwrap();
    assert_eq!(asked["call_id"], "call_q", "{asked}");

    // The question waited: the desk answers it while the phone is away, and the turn goes on to its end.
    let allow = json!({"command_id": crate::common::command_id(), "conversation_id": conversation,
                       "call_id": "call_q", "decision": "allow"});
    terminal.ok("approval.respond", allow).await.unwrap();

    // The phone reconnects, proves again and resumes after the last seq it saw.
    let last = before.last().unwrap()["seq"].as_u64().unwrap();
    let after = {
        let conversation = conversation.clone();
        inside(&net.phone, move || async move {
            let mut ws = open(PHONE).await.unwrap();
            let proved = prove(&mut ws, &key, &device_id, &daemon_id).await;
            assert!(proved.get("item").is_some(), "{proved}");
            let params = json!({"conversation_id": conversation, "after_seq": last});
            let first = call(&mut ws, 3, "conversation.subscribe", params).await;
            let mut after = vec![first["item"]["event"].clone()];
            assert!(!after[0].is_null(), "{first}");
            if after[0]["kind"] != "turn_completed" {
                after.extend(ws_events(&mut ws, 3, "turn_completed").await);
            }
            after
        })
        .await
    };
    let all: Vec<Value> = before.iter().chain(&after).cloned().collect();
    let seqs: Vec<u64> = all.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    let expected: Vec<u64> = (1..=seqs.len() as u64).collect();
    assert_eq!(seqs, expected, "no gap and no repeat across the reconnect: {all:?}");
    let kinds: Vec<&str> = all.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "approval_requested").count(),
        1,
        "{kinds:?}"
    );
    assert!(
        after
            .iter()
            .any(|e| e["call_id"] == "call_q" && e["kind"] != "approval_requested"),
        "the desk's answer let the call go on, and the phone saw it: {kinds:?}"
    );
    assert_eq!(kinds.last(), Some(&"turn_completed"), "{kinds:?}");
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
