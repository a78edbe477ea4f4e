//! The phone's side of the bench: a WebSocket client of efrd's tailnet listener that speaks the protocol's frames
//! (one JSON frame per text message), with the request ids and the queue of frames of other requests that the Unix
//! socket's test client has, so both transports run the same measure; and the pairing and proof of a device.

use std::collections::{HashMap, VecDeque};
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use efr_protocol::device::{ProveInputs, prove_message};
use efr_protocol::frame::{RequestId, ServerFrame};
use efr_test_support::client::{Client, StreamFrame};
use futures::{SinkExt, StreamExt};
use p256::ecdsa::signature::Signer as _;
use p256::ecdsa::{Signature, SigningKey};
use serde_json::{Value, json};
use tokio::net::{TcpSocket, TcpStream};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{WebSocketStream, client_async};

/// How long one frame may take to come.
const FRAME_TIMEOUT: Duration = Duration::from_secs(20);

/// One WebSocket connection to the listener.
pub struct Phone {
    ws: WebSocketStream<TcpStream>,
    next_id: RequestId,
    queued: HashMap<Option<RequestId>, VecDeque<ServerFrame>>,
}

/// A paired device: its key and id.
#[derive(Clone)]
pub struct Device {
    pub key: SigningKey,
    pub id: String,
}

impl Phone {
    /// Opens a WebSocket from `from` to `listener`, and says hello (the hello result holds the proof's inputs).
    pub async fn open(from: Ipv4Addr, listener: SocketAddr) -> Result<(Self, Value)> {
        let socket = TcpSocket::new_v4()?;
        socket.bind(SocketAddr::from((from, 0)))?;
        let stream = socket
            .connect(listener)
            .await
            .context("the listener does not take the phone")?;
        stream.set_nodelay(true)?;
        let (ws, _) = client_async(format!("ws://{listener}/"), stream)
            .await
            .context("the WebSocket handshake")?;
        let mut phone = Self {
            ws,
            next_id: 1,
            queued: HashMap::new(),
        };
        let hello = json!({"protocol": efr_protocol::PROTOCOL_VERSION,
                           "client": {"name": "efr-bench-phone", "version": env!("CARGO_PKG_VERSION")}});
        let result = phone.ok("hello", hello).await?;
        Ok((phone, result))
    }

    /// Opens a WebSocket and proves `device` on it.
    pub async fn proven(from: Ipv4Addr, listener: SocketAddr, device: &Device, daemon_id: &str) -> Result<Self> {
        let (mut phone, hello) = Self::open(from, listener).await?;
        let text = |value: &Value| {
            value
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| anyhow!("hello: {hello}"))
        };
        let message = prove_message(&ProveInputs {
            challenge: text(&hello["challenge"])?,
            daemon_id: daemon_id.parse()?,
            protocol: efr_protocol::PROTOCOL_VERSION,
            device_id: device.id.parse()?,
            peer_node: text(&hello["prove"]["peer_node"])?,
            daemon_tailnet: text(&hello["prove"]["daemon_tailnet"])?,
        })?;
        let signature: Signature = device.key.sign(&message);
        let params = json!({"device_id": device.id, "signature": STANDARD.encode(signature.to_der().as_bytes())});
        let proved = phone.ok("device.prove", params).await?;
        if proved["scopes"] != json!(["read", "operate", "approve"]) {
            bail!("device.prove: not the phone's scopes: {proved}");
        }
        Ok(phone)
    }

    /// Sends a request and returns its id.
    pub async fn send(&mut self, method: &str, params: Value, ack: bool) -> Result<RequestId> {
        let id = self.next_id;
        self.next_id += 1;
        let mut frame = json!({"id": id, "method": method, "params": params});
        if ack {
            frame["ack"] = json!(true);
        }
        self.ws
            .send(Message::Text(frame.to_string().into()))
            .await
            .context("cannot send on the WebSocket")?;
        Ok(id)
    }

    /// A unary call's result; an error answer is an error.
    pub async fn ok(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.send(method, params, false).await?;
        match self.next_of(id).await? {
            StreamFrame::Item(result) => {
                if self.next_of(id).await? != StreamFrame::End {
                    bail!("{method}: no end after its result");
                }
                Ok(result)
            }
            other => bail!("{method}: {other:?}"),
        }
    }

    /// The next frame of request `id`, queueing the frames of other requests.
    pub async fn next_of(&mut self, id: RequestId) -> Result<StreamFrame> {
        let frame = match self.queued.get_mut(&Some(id)).and_then(VecDeque::pop_front) {
            Some(frame) => frame,
            None => loop {
                let frame = self.read_frame().await?;
                if frame.request_id() == Some(id) {
                    break frame;
                }
                self.queued.entry(frame.request_id()).or_default().push_back(frame);
            },
        };
        Ok(match frame {
            ServerFrame::Ack(_) => StreamFrame::Ack,
            ServerFrame::Item { item, .. } => StreamFrame::Item(item),
            ServerFrame::End { .. } => StreamFrame::End,
            ServerFrame::Error { error, .. } => StreamFrame::Error(error),
        })
    }

    /// The next protocol frame off the WebSocket (pings are answered by tungstenite as it reads).
    async fn read_frame(&mut self) -> Result<ServerFrame> {
        loop {
            let next = tokio::time::timeout(FRAME_TIMEOUT, self.ws.next())
                .await
                .map_err(|_| anyhow!("no frame from the listener within {FRAME_TIMEOUT:?}"))?;
            match next {
                Some(Ok(Message::Text(text))) => {
                    let Value::Object(object) = serde_json::from_str(&text)? else {
                        bail!("a frame that is not an object: {text}");
                    };
                    return Ok(ServerFrame::from_object(object)?);
                }
                Some(Ok(Message::Close(close))) => bail!("the listener closed the connection: {close:?}"),
                Some(Ok(_)) => {}
                Some(Err(error)) => bail!("the WebSocket failed: {error}"),
                None => bail!("the listener ended the connection"),
            }
        }
    }
}

/// A new P-256 key.
fn new_key() -> SigningKey {
    loop {
        if let Ok(key) = SigningKey::from_slice(&rand::random::<[u8; 32]>()) {
            return key;
        }
    }
}

/// The next item of the terminal's stream `id`.
async fn item(terminal: &mut Client, id: RequestId) -> Result<Value> {
    match terminal.next_of(id).await? {
        StreamFrame::Item(item) => Ok(item),
        other => bail!("device.pair_start: expected an item, got {other:?}"),
    }
}

/// Pairs a new device: the terminal's device.pair_start and device.pair_confirm on the Unix socket, the phone's
/// device.enroll from `from` on the listener.
pub async fn pair(terminal: &mut Client, from: Ipv4Addr, listener: SocketAddr) -> Result<Device> {
    let pair = terminal.send("device.pair_start", json!({}), false).await?;
    let started = item(terminal, pair).await?;
    let token = started["qr"]
        .as_str()
        .and_then(|qr| qr.split('&').find_map(|member| member.strip_prefix("t=")))
        .ok_or_else(|| anyhow!("device.pair_start: no token in {started}"))?
        .to_owned();
    let key = new_key();
    let point = key.verifying_key().to_encoded_point(false);
    let enroll = async {
        let (mut phone, _) = Phone::open(from, listener).await?;
        let params = json!({"token": token, "name": "bench phone", "public_key": STANDARD.encode(point.as_bytes())});
        phone.ok("device.enroll", params).await
    };
    let confirm = async {
        let pending = item(terminal, pair).await?;
        let params = json!({"pairing_id": pending["pairing_id"], "accept": true});
        let confirmed = terminal.ok("device.pair_confirm", params).await?;
        let paired = item(terminal, pair).await?;
        if terminal.next_of(pair).await? != StreamFrame::End {
            bail!("device.pair_start: no end after {paired}");
        }
        Ok(confirmed)
    };
    let (enrolled, confirmed) = tokio::try_join!(enroll, confirm)?;
    if enrolled["device_id"] != confirmed["device_id"] {
        bail!("device.enroll {enrolled} and device.pair_confirm {confirmed} name different devices");
    }
    let id = confirmed["device_id"]
        .as_str()
        .ok_or_else(|| anyhow!("device.pair_confirm: {confirmed}"))?
        .to_owned();
    Ok(Device { key, id })
}
