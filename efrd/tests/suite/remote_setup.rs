//! The shared setup of the remote tests (`remote_listener`, `remote_pairing`, `remote_proof`, `remote_limits`): a
//! real efrd inside network namespaces that the test makes: the desk (efrd, at a tailnet address) and the phone's
//! side, linked by a veth pair, never the host's network. tailscaled is the LocalAPI double (its JSON shape, its Unix
//! socket, its Host header). Also the phone's steps: a WebSocket, its calls, pairing a key and proving it.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use efr_protocol::device::{ProveInputs, prove_message};
use efr_test_support::client::{Client, StreamFrame};
use efr_test_support::daemon::TestDaemon;
use efr_test_support::netns::NetNs;
use efr_test_support::scripted::Reply;
use efr_test_support::tailscaled::{LocalApiDouble, status_json, whois_json};
use futures::{SinkExt, StreamExt};
use p256::ecdsa::signature::Signer as _;
use p256::ecdsa::{Signature, SigningKey};
use serde_json::{Value, json};
use tokio::net::{TcpSocket, TcpStream};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::{WebSocketStream, client_async};

pub(super) const DESK: Ipv4Addr = Ipv4Addr::new(100, 101, 102, 103);
pub(super) const PHONE: Ipv4Addr = Ipv4Addr::new(100, 90, 1, 2);
pub(super) const OTHER_USER: Ipv4Addr = Ipv4Addr::new(100, 90, 1, 3);
pub(super) const TAGGED: Ipv4Addr = Ipv4Addr::new(100, 90, 1, 4);
pub(super) const SHARED: Ipv4Addr = Ipv4Addr::new(100, 90, 1, 5);
pub(super) const UNKNOWN: Ipv4Addr = Ipv4Addr::new(100, 90, 1, 6);
/// A host behind a subnet route: outside Tailscale's ranges.
pub(super) const OUTSIDE: Ipv4Addr = Ipv4Addr::new(192, 168, 77, 2);
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
    tailnet_configured(replies, "").await
}

/// [`tailnet_with`], with `remote` (more lines of `[remote]`, such as `ping_interval_secs = 1`) in efrd's config.
pub(super) async fn tailnet_configured(replies: Option<Vec<Reply>>, remote: &str) -> Tailnet {
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
        "{}\n[remote]\nenabled = true\nport = {PORT}\ntailscaled_socket = \"{}\"\n{remote}\n",
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

pub(super) fn new_key() -> SigningKey {
    loop {
        if let Ok(key) = SigningKey::from_slice(&rand::random::<[u8; 32]>()) {
            return key;
        }
    }
}

pub(super) fn public_key(key: &SigningKey) -> [u8; 65] {
    key.verifying_key()
        .to_encoded_point(false)
        .as_bytes()
        .try_into()
        .unwrap()
}

/// The next item of a stream.
pub(super) async fn item(client: &mut Client, id: efr_protocol::frame::RequestId) -> Value {
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
pub(super) fn token_of(url: &str) -> String {
    url.split('&')
        .find_map(|member| member.strip_prefix("t="))
        .unwrap()
        .to_owned()
}

/// The hello, then device.prove of `device_id` signed with `key`; returns the answer.
pub(super) async fn prove(ws: &mut Ws, key: &SigningKey, device_id: &str, daemon_id: &str) -> Value {
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

/// Pairs a new key from the phone's address and returns it with its device id and the daemon id.
pub(super) async fn pair_phone(
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

/// The events of subscription `id` on `ws` until one of kind `until` (included); `{"ended": ...}` frames fail.
pub(super) async fn ws_events(ws: &mut Ws, id: u64, until: &str) -> Vec<Value> {
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
