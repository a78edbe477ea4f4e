//! The tailnet listener of a real efrd, inside network namespaces that the test makes: the desk (efrd, at a tailnet
//! address) and the phone's side, linked by a veth pair, never the host's network. tailscaled is the LocalAPI double
//! (its JSON shape, its Unix socket, its Host header).
//!
//! Admission (the range, self, tagged, shared-in, another user, unknown), the handshake's plain HTTP errors, the
//! message rules (binary, over 1 MiB, unmasked, fragmented), the hello of a remote connection, the methods before the
//! proof, and a change of the tailnet or tailscaled going away (1001, and listening again).

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use efr_test_support::daemon::TestDaemon;
use efr_test_support::netns::NetNs;
use efr_test_support::scripted::Reply;
use efr_test_support::tailscaled::{LocalApiDouble, status_json, whois_json};
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::{WebSocketStream, client_async};

pub(super) const DESK: Ipv4Addr = Ipv4Addr::new(100, 101, 102, 103);
pub(super) const PHONE: Ipv4Addr = Ipv4Addr::new(100, 90, 1, 2);
pub(super) const OTHER_USER: Ipv4Addr = Ipv4Addr::new(100, 90, 1, 3);
const TAGGED: Ipv4Addr = Ipv4Addr::new(100, 90, 1, 4);
const SHARED: Ipv4Addr = Ipv4Addr::new(100, 90, 1, 5);
const UNKNOWN: Ipv4Addr = Ipv4Addr::new(100, 90, 1, 6);
/// A host behind a subnet route: outside Tailscale's ranges.
const OUTSIDE: Ipv4Addr = Ipv4Addr::new(192, 168, 77, 2);
pub(super) const PORT: u16 = 8765;
pub(super) const USER: i64 = 12345;

/// The desk, the phone's side, tailscaled's double and efrd.
pub(super) struct Tailnet {
    pub(super) desk: Arc<NetNs>,
    pub(super) phone: Arc<NetNs>,
    pub(super) api: LocalApiDouble,
    pub(super) daemon: TestDaemon,
    _model: Option<tokio::sync::oneshot::Sender<()>>,
    _home: tempfile::TempDir,
}

pub(super) fn desk_status(tailnet: &str) -> Value {
    status_json(DESK, "n7fLaptop22CNTRL", USER, tailnet, "laptop.tail3f2a.ts.net.")
}

pub(super) async fn tailnet() -> Tailnet {
    tailnet_with(None).await
}

/// A scripted model server inside `ns` (where efrd reaches it), alive until the sender drops.
fn model_inside(ns: &Arc<NetNs>, replies: Vec<Reply>) -> (String, tokio::sync::oneshot::Sender<()>) {
    let ns = Arc::clone(ns);
    let (url_tx, url_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        ns.enter().unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let server = common::model(replies).await;
            url_tx.send(server.base_url()).unwrap();
            let _ = stop_rx.await;
            drop(server);
        });
    });
    (url_rx.recv().unwrap(), stop_tx)
}

/// The tailnet, with a scripted model server in the desk's namespace when `replies` are given.
pub(super) async fn tailnet_with(replies: Option<Vec<Reply>>) -> Tailnet {
    let v4 = |ip: Ipv4Addr| IpAddr::V4(ip);
    let desk = Arc::new(NetNs::new(&[], &[]).unwrap());
    let phone = Arc::new(NetNs::new(&[], &[]).unwrap());
    desk.link(
        &phone,
        &[v4(DESK)],
        &[PHONE, OTHER_USER, TAGGED, SHARED, UNKNOWN, OUTSIDE].map(v4),
    )
    .unwrap();
    let (model_config, model) = match replies {
        Some(replies) => {
            let (url, stop) = model_inside(&desk, replies);
            (Some(efr_test_support::daemon::config_for(&url)), Some(stop))
        }
        None => (None, None),
    };
    let home = tempfile::tempdir().unwrap();
    let api = LocalApiDouble::start(&home.path().join("tailscaled.sock"), desk_status("ada.github")).unwrap();
    let phone_node = |id: &str, user: i64, tags: &[&str], sharer: i64| {
        whois_json(
            id,
            "ada-pixel.tail3f2a.ts.net.",
            user,
            "ada@github",
            tags,
            sharer,
            "android",
        )
    };
    api.set_whois(v4(PHONE), phone_node("nKq3wPhone11CNTRL", USER, &[], 0));
    api.set_whois(v4(OTHER_USER), phone_node("nOther", 777, &[], 0));
    api.set_whois(v4(TAGGED), phone_node("nTagged", USER, &["tag:ci"], 0));
    api.set_whois(v4(SHARED), phone_node("nShared", USER, &[], 999));
    api.set_whois(v4(DESK), phone_node("n7fLaptop22CNTRL", USER, &[], 0));
    let config = format!(
        "{}\n[remote]\nenabled = true\nport = {PORT}\ntailscaled_socket = \"{}\"\n",
        model_config.unwrap_or_default(),
        api.path().display()
    );
    let home_path = home.path().to_owned();
    let in_desk = Arc::clone(&desk);
    // efrd is started from a thread inside the desk's namespace, so it lives there.
    let daemon = tokio::task::spawn_blocking(move || {
        in_desk
            .run(|| {
                TestDaemon::start(
                    common::efrd_binary(),
                    &home_path,
                    Some(&config),
                    &[("OPENAI_API_KEY", "sk-proj-testkey0000000000000000a1b2")],
                )
            })
            .unwrap()
    })
    .await
    .unwrap()
    .unwrap();
    // Ready once the listener takes a connection.
    inside(&phone, || async { drop(dial(PHONE).await) }).await;
    Tailnet {
        desk,
        phone,
        api,
        daemon,
        _model: model,
        _home: home,
    }
}

/// Runs `f` on a thread of its own inside `ns`, with its own runtime.
pub(super) async fn inside<F, Fut, T>(ns: &Arc<NetNs>, f: F) -> T
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = T>,
    T: Send + 'static,
{
    let ns = Arc::clone(ns);
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        ns.enter().unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _ = tx.send(runtime.block_on(f()));
    });
    rx.await.expect("the thread inside the namespace panicked")
}

/// Connects from `from` to the listener, waiting (at most 15 s) for it to listen.
pub(super) async fn dial(from: Ipv4Addr) -> TcpStream {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let socket = TcpSocket::new_v4().unwrap();
        socket.bind(SocketAddr::from((from, 0))).unwrap();
        match socket.connect(SocketAddr::from((DESK, PORT))).await {
            Ok(stream) => return stream,
            Err(error) if Instant::now() < deadline => {
                let _ = error;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(error) => panic!("the listener does not listen: {error}"),
        }
    }
}

pub(super) type Ws = WebSocketStream<TcpStream>;

/// Opens a WebSocket from `from`.
pub(super) async fn open(from: Ipv4Addr) -> Result<Ws, tokio_tungstenite::tungstenite::Error> {
    let stream = dial(from).await;
    client_async(format!("ws://{DESK}:{PORT}/"), stream)
        .await
        .map(|(ws, _)| ws)
}

/// Opens a WebSocket from `from` once the listener takes it: a connection that the listener of the tailnet before a
/// change accepted is reset when that listener closes, and a client dials again.
pub(super) async fn open_again(from: Ipv4Addr) -> Ws {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        match open(from).await {
            Ok(ws) => return ws,
            Err(error) if Instant::now() < deadline => {
                let _ = error;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(error) => panic!("the listener does not take the phone: {error}"),
        }
    }
}

/// Sends one request and returns the first answer frame for it, or `{"ended": ...}` when the connection ends first.
pub(super) async fn call(ws: &mut Ws, id: u64, method: &str, params: Value) -> Value {
    let frame = json!({"id": id, "method": method, "params": params});
    if let Err(error) = ws.send(Message::Text(frame.to_string().into())).await {
        return json!({"ended": error.to_string()});
    }
    loop {
        match tokio::time::timeout(Duration::from_secs(10), ws.next()).await.unwrap() {
            Some(Ok(Message::Text(text))) => {
                let frame: Value = serde_json::from_str(&text).unwrap();
                if frame["id"] == id {
                    return frame;
                }
            }
            Some(Ok(_)) => {}
            other => return json!({"ended": format!("{other:?}")}),
        }
    }
}

pub(super) fn hello_params() -> Value {
    json!({"protocol": 1, "client": {"name": "phone-test", "version": "1"}, "tty": "/dev/pts/9"})
}

/// Reads until the close frame and returns its code (None: the connection ended without one).
pub(super) async fn close_code(ws: &mut Ws, within: Duration) -> Option<CloseCode> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, ws.next()).await {
            Err(_) => panic!("no close within {within:?}"),
            Ok(Some(Ok(Message::Close(frame)))) => return frame.map(|f| f.code),
            Ok(Some(Ok(_))) => {}
            Ok(None | Some(Err(_))) => return None,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admission_closes_every_peer_but_the_users_own_node_before_a_byte() {
    let net = tailnet().await;
    // The phone: the hello of a remote connection, then nothing but the device methods before the proof.
    let (hello, before_proof, again) = inside(&net.phone, || async {
        let mut ws = open(PHONE).await.unwrap();
        let hello = call(&mut ws, 1, "hello", hello_params()).await;
        let before = call(&mut ws, 2, "conversations.recent", json!({})).await;
        let again = call(&mut ws, 3, "hello", hello_params()).await;
        (hello, before, again)
    })
    .await;
    let result = &hello["item"];
    assert_eq!(result["protocol"], 1, "{hello}");
    assert_eq!(result["paths"], json!({}), "no paths on the tailnet: {hello}");
    assert_eq!(result["capabilities"]["device_prove"], true, "{hello}");
    assert_eq!(result["challenge"].as_str().unwrap().len(), 24, "{hello}");
    assert_eq!(
        result["prove"],
        json!({"peer_node": "nKq3wPhone11CNTRL", "daemon_node": "n7fLaptop22CNTRL", "daemon_tailnet": "ada.github"})
    );
    assert_eq!(before_proof["error"]["code"], "unauthorized", "{before_proof}");
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
async fn server_frame(stream: &mut TcpStream) -> Option<(u8, Vec<u8>)> {
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
