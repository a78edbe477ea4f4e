//! The tailnet listener of a real efrd, inside the test's network namespaces (`remote_setup`): admission (the range,
//! self, tagged, shared-in, another user, unknown), the handshake's plain HTTP errors, the message rules (binary, a
//! message over 1 MiB and one of exactly 1 MiB, unmasked, fragmented), the pings (1001 after two unanswered ones),
//! the hello of a remote connection, the methods before the proof, and a change of the tailnet or tailscaled going
//! away (1001, and listening again).

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use super::remote_setup::{
    DESK, OTHER_USER, OUTSIDE, PHONE, PORT, SHARED, TAGGED, UNKNOWN, call, close_code, desk_status, dial, hello_params,
    inside, open, open_again, tailnet, tailnet_configured,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admission_closes_every_peer_but_the_users_own_node_before_a_byte() {
    let net = tailnet().await;
    // The phone: the hello of a remote connection, then nothing but the device methods before the proof.
    let (hello, before_proof, again) = inside(&net.phone, || async {
        let mut ws = open(PHONE).await.unwrap();
        let hello = call(&mut ws, 1, "hello", hello_params()).await;
        // Every method but the device ones is unauthorized before the proof, even those the tailnet never serves.
        let mut before = Vec::new();
        for (id, (method, params)) in [
            ("conversations.recent", json!({})),
            ("admin.status", json!({})),
            ("device.list", json!({})),
            ("turn.undo", json!({"command_id": crate::common::command_id()})),
            ("sandbox.explain_host", json!({"host": "github.com"})),
        ]
        .into_iter()
        .enumerate()
        {
            before.push(call(&mut ws, 10 + id as u64, method, params).await);
        }
        let again = call(&mut ws, 3, "hello", hello_params()).await;
        (hello, before, again)
    })
    .await;
    let result = &hello["item"];
    assert_eq!(result["protocol"], 1, "{hello}");
    assert_eq!(result["paths"], json!({}), "no paths on the tailnet: {hello}");
    assert_eq!(result["capabilities"]["device_prove"], true, "{hello}");
    assert_eq!(result["capabilities"]["approval_local_only"], true, "{hello}");
    assert_eq!(result["challenge"].as_str().unwrap().len(), 24, "{hello}");
    assert_eq!(
        result["prove"],
        json!({"peer_node": "nKq3wPhone11CNTRL", "daemon_node": "n7fLaptop22CNTRL", "daemon_tailnet": "ada.github"})
    );
    for refused in &before_proof {
        assert_eq!(refused["error"]["code"], "unauthorized", "{refused}");
    }
    assert_eq!(
        again["error"]["code"], "conflict",
        "a second hello is the probe: {again}"
    );

    // Each refused peer: the connection closes before any HTTP answer.
    let asked = net.api.whois_asked();
    for from in [OUTSIDE, OTHER_USER, TAGGED, SHARED, UNKNOWN] {
        let refused = inside(&net.phone, move || async move { open(from).await.map(|_| ()) }).await;
        assert!(refused.is_err(), "{from} was admitted");
    }
    assert_eq!(
        net.api.whois_asked(),
        asked + 4,
        "no whois for an address outside the ranges"
    );
    // This machine itself.
    let refused = inside(&net.desk, || async { open(DESK).await.map(|_| ()) }).await;
    assert!(refused.is_err(), "the desk itself was admitted");
    assert_eq!(
        net.api.wrong_host(),
        0,
        "every LocalAPI request names local-tailscaled.sock"
    );
}

/// Sends a raw upgrade request with `extra` header lines and returns the status line and the rest of the answer.
async fn raw_upgrade(stream: &mut TcpStream, path: &str, extra: &str) -> String {
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {DESK}:{PORT}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n{extra}\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut byte = [0_u8; 1];
    while !answer.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await.unwrap() == 0 {
            break;
        }
        answer.push(byte[0]);
    }
    String::from_utf8(answer).unwrap()
}

/// A masked (or not) client frame.
fn client_frame(fin: bool, opcode: u8, payload: &[u8], masked: bool) -> Vec<u8> {
    let mut out = vec![u8::from(fin) << 7 | opcode];
    let mask_bit = if masked { 0x80 } else { 0 };
    if payload.len() < 126 {
        out.push(mask_bit | u8::try_from(payload.len()).unwrap());
    } else if payload.len() < 65_536 {
        out.push(mask_bit | 126);
        out.extend_from_slice(&u16::try_from(payload.len()).unwrap().to_be_bytes());
    } else {
        out.push(mask_bit | 127);
        out.extend_from_slice(&(payload.len() as u64).to_be_bytes());
    }
    if masked {
        out.extend_from_slice(&[9, 8, 7, 6]);
        out.extend(payload.iter().enumerate().map(|(i, b)| b ^ [9, 8, 7, 6][i % 4]));
    } else {
        out.extend_from_slice(payload);
    }
    out
}

/// Reads the server's next frame header and payload; `None` at the end of the stream.
async fn server_frame(stream: &mut (impl AsyncRead + Unpin)) -> Option<(u8, Vec<u8>)> {
    let mut head = [0_u8; 2];
    tokio::time::timeout(Duration::from_secs(10), stream.read_exact(&mut head))
        .await
        .unwrap()
        .ok()?;
    let len = usize::from(head[1] & 0x7f);
    let mut payload = vec![0; len];
    stream.read_exact(&mut payload).await.ok()?;
    Some((head[0] & 0x0f, payload))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_handshake_and_the_message_rules_refuse_what_the_spec_refuses() {
    let net = tailnet().await;
    let statuses = inside(&net.phone, || async {
        let mut statuses = Vec::new();
        for (path, extra) in [
            ("/?token=x", ""),
            ("/", "Sec-WebSocket-Protocol: efr\r\n"),
            ("/", "Sec-WebSocket-Extensions: permessage-deflate\r\n"),
            ("/", "Origin: http://laptop.tail3f2a.ts.net:8765\r\n"),
            ("/", "Origin: http://100.101.102.103:8765\r\n"),
        ] {
            let mut stream = dial(PHONE).await;
            let answer = raw_upgrade(&mut stream, path, extra).await;
            statuses.push(answer.lines().next().unwrap_or_default().to_owned());
        }
        statuses
    })
    .await;
    assert!(statuses[0].starts_with("HTTP/1.1 400"), "a query: {statuses:?}");
    assert!(statuses[1].starts_with("HTTP/1.1 400"), "a subprotocol: {statuses:?}");
    assert!(statuses[2].starts_with("HTTP/1.1 400"), "an extension: {statuses:?}");
    assert!(statuses[3].starts_with("HTTP/1.1 403"), "another Origin: {statuses:?}");
    assert!(
        statuses[4].starts_with("HTTP/1.1 101"),
        "the listener's own Origin: {statuses:?}"
    );

    // Each broken rule closes the connection, with the close code of the rule.
    let codes = inside(&net.phone, || async {
        let mut codes = Vec::new();
        for case in ["binary", "over", "unmasked", "fragmented"] {
            let mut stream = dial(PHONE).await;
            assert!(raw_upgrade(&mut stream, "/", "").await.starts_with("HTTP/1.1 101"));
            let bytes = match case {
                "binary" => client_frame(true, 2, b"{}", true),
                "unmasked" => client_frame(true, 1, b"{}", false),
                "fragmented" => client_frame(false, 1, b"{\"id\":", true),
                // A text message of 1 MiB + 1: its header and the start of its payload (the server reads no more
                // before it closes, and the rest would only meet a reset).
                _ => {
                    let mut frame = client_frame(true, 1, &vec![b'a'; (1 << 20) + 1], true);
                    frame.truncate(64);
                    frame
                }
            };
            stream.write_all(&bytes).await.unwrap();
            let code = server_frame(&mut stream)
                .await
                .filter(|(opcode, _)| *opcode == 8)
                .map(|(_, payload)| u16::from_be_bytes([payload[0], payload[1]]));
            codes.push((case, code));
        }
        codes
    })
    .await;
    assert_eq!(
        codes,
        [
            ("binary", Some(1003)),
            ("over", Some(1009)),
            ("unmasked", Some(1002)),
            ("fragmented", Some(1002)),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_of_the_tailnet_or_tailscaled_going_away_closes_with_1001_and_it_listens_again() {
    let mut net = tailnet().await;
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let closed = inside(&net.phone, || async move {
        let mut ws = open(PHONE).await.unwrap();
        call(&mut ws, 1, "hello", hello_params()).await;
        let _ = tx.send(());
        close_code(&mut ws, Duration::from_secs(15)).await
    });
    let changer = async {
        rx.await.unwrap();
        net.api.set_status(desk_status("ada.other"));
    };
    let (closed, ()) = tokio::join!(closed, changer);
    assert_eq!(closed, Some(CloseCode::Away));
    // Back on the new tailnet: the hello names it.
    let hello = inside(&net.phone, || async {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let mut ws = open_again(PHONE).await;
            let hello = call(&mut ws, 1, "hello", hello_params()).await;
            if hello["item"]["prove"]["daemon_tailnet"] == "ada.other" || Instant::now() > deadline {
                return hello;
            }
        }
    })
    .await;
    assert_eq!(hello["item"]["prove"]["daemon_tailnet"], "ada.other", "{hello}");

    // tailscaled goes away: the connection closes with 1001 and nothing listens until it is back.
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let closed = inside(&net.phone, || async move {
        let mut ws = open_again(PHONE).await;
        call(&mut ws, 1, "hello", hello_params()).await;
        let _ = tx.send(());
        close_code(&mut ws, Duration::from_secs(15)).await
    });
    let stopper = async {
        rx.await.unwrap();
        net.api.stop();
    };
    let (closed, ()) = tokio::join!(closed, stopper);
    assert_eq!(closed, Some(CloseCode::Away));
    let refused = inside(&net.phone, || async {
        let socket = TcpSocket::new_v4().unwrap();
        socket.bind(SocketAddr::from((PHONE, 0))).unwrap();
        socket.connect(SocketAddr::from((DESK, PORT))).await.map(|_| ())
    })
    .await;
    assert!(refused.is_err(), "the listener still listens without tailscaled");
    net.api.resume().unwrap();
    let back = inside(&net.phone, || async {
        let mut ws = open_again(PHONE).await;
        call(&mut ws, 1, "hello", hello_params()).await
    })
    .await;
    assert_eq!(
        back["item"]["prove"]["daemon_tailnet"], "ada.other",
        "the listener listens again: {back}"
    );
}

/// A hello frame of exactly `len` bytes: its client name fills what the rest leaves.
fn hello_of_len(id: u64, len: usize) -> String {
    let frame = |name: &str| {
        json!({"id": id, "method": "hello", "params": {"protocol": 1, "client": {"name": name, "version": "1"}}})
            .to_string()
    };
    let pad = len - frame("").len();
    let text = frame(&"a".repeat(pad));
    assert_eq!(text.len(), len);
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_of_exactly_1_mib_is_read_and_one_byte_more_closes_with_1009() {
    let net = tailnet().await;
    let (exact, after) = inside(&net.phone, || async {
        let mut ws = open(PHONE).await.unwrap();
        ws.send(Message::Text(hello_of_len(1, 1 << 20).into())).await.unwrap();
        let exact = loop {
            match tokio::time::timeout(Duration::from_secs(10), ws.next()).await.unwrap() {
                Some(Ok(Message::Text(text))) => break serde_json::from_str::<serde_json::Value>(&text).unwrap(),
                Some(Ok(_)) => {}
                other => break json!({"ended": format!("{other:?}")}),
            }
        };
        let after = call(&mut ws, 2, "hello", hello_params()).await;
        (exact, after)
    })
    .await;
    assert_eq!(exact["id"], 1, "the 1 MiB message was read and answered: {exact}");
    assert!(after.get("ended").is_none(), "the connection stays open: {after}");

    // One byte more, the whole message written (not only its header) while the close is read.
    let (code, written) = inside(&net.phone, || async {
        let mut stream = dial(PHONE).await;
        assert!(raw_upgrade(&mut stream, "/", "").await.starts_with("HTTP/1.1 101"));
        let (mut read, mut write) = stream.into_split();
        let bytes = client_frame(true, 1, hello_of_len(1, (1 << 20) + 1).as_bytes(), true);
        // efrd closes after the frame's header: the rest of the write may meet a reset.
        let writer = tokio::spawn(async move { write.write_all(&bytes).await.map(|()| bytes.len()) });
        let code = server_frame(&mut read)
            .await
            .filter(|(opcode, _)| *opcode == 8)
            .map(|(_, payload)| u16::from_be_bytes([payload[0], payload[1]]));
        (code, writer.await.unwrap())
    })
    .await;
    assert_eq!(code, Some(1009), "written: {written:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_answers_no_ping_is_closed_with_1001_after_two_intervals() {
    let net = tailnet_configured(None, "ping_interval_secs = 1").await;
    let (silent, answering) = inside(&net.phone, || async {
        // A client that reads: tungstenite answers each ping with its pong as it reads.
        let answering = async {
            let mut ws = open(PHONE).await.unwrap();
            call(&mut ws, 1, "hello", hello_params()).await;
            let until = tokio::time::Instant::now() + Duration::from_secs(4);
            let mut pings = 0;
            while let Ok(next) = tokio::time::timeout_at(until, ws.next()).await {
                match next {
                    Some(Ok(Message::Ping(_))) => pings += 1,
                    Some(Ok(_)) => {}
                    other => panic!("the connection of the client that answers ended: {other:?}"),
                }
            }
            (pings, call(&mut ws, 2, "hello", hello_params()).await)
        };
        // A client that never answers: after its upgrade it only reads what efrd sends.
        let silent = async {
            let mut stream = dial(PHONE).await;
            assert!(raw_upgrade(&mut stream, "/", "").await.starts_with("HTTP/1.1 101"));
            let started = Instant::now();
            let mut pings = 0;
            loop {
                match server_frame(&mut stream).await {
                    Some((9, _)) => pings += 1,
                    Some((8, payload)) => {
                        return (
                            pings,
                            Some(u16::from_be_bytes([payload[0], payload[1]])),
                            started.elapsed(),
                        );
                    }
                    Some(_) => {}
                    None => return (pings, None, started.elapsed()),
                }
            }
        };
        tokio::join!(silent, answering)
    })
    .await;
    let (pings, code, after) = silent;
    assert_eq!((pings, code), (2, Some(1001)), "two unanswered pings, then 1001");
    assert!(
        after >= Duration::from_secs(2) && after < Duration::from_secs(8),
        "closed after {after:?}, not after two intervals of 1 s"
    );
    let (pings, probe) = answering;
    assert!(pings >= 3, "the client that answers saw {pings} pings in 4 s");
    assert_eq!(
        probe["error"]["code"], "conflict",
        "still open, the probe is answered: {probe}"
    );
}
