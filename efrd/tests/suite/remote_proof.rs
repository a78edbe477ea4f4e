//! Pairing and proof through a real efrd, inside the test's network namespaces (`remote_setup`): the terminal's
//! device.pair_start and device.pair_confirm on the Unix socket, the phone's device.enroll and device.prove on the
//! tailnet WebSocket, device.list and device.revoke, and each refusal of the proof (a bad signature, an unknown
//! device, three refusals, a second proof, re_pair, another tailnet, a revoked device).

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::net::IpAddr;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use efr_protocol::device::key_fingerprint;
use efr_test_support::client::{Client, StreamFrame};
use efr_test_support::tailscaled::whois_json;
use p256::ecdsa::Signature;
use p256::ecdsa::signature::Signer as _;
use serde_json::json;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use super::remote_setup::{
    PHONE, USER, call, close_code, desk_status, hello_params, inside, item, new_key, open, prove, public_key, tailnet,
    token_of,
};

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
