//! One tailnet WebSocket connection, bridged to the server's frames (docs/protocol.md, "Remote devices": the tailnet
//! WebSocket).
//!
//! - Each text message holds one JSON frame, as on the Unix socket without the length prefix. A client message is at
//!   most [`MAX_CLIENT_MESSAGE`], a server message at most [`MAX_SERVER_MESSAGE`] (a larger answer is `too_large`
//!   for its request, as on the Unix socket).
//! - A binary message (1003), a message over the limit (1009), an unmasked client frame and a fragmented message
//!   (1002) close the connection.
//! - A ping goes out every `[remote] ping_interval_secs` (25 s by default); when two pings wait for their pong, the
//!   connection closes with 1001.
//! - A kick (a revoke, a change of the tailnet, the shutdown of efrd) closes it with 1001; frames that wait are
//!   dropped.

use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use efr_protocol::codec::{FrameError, parse_body};
use efr_protocol::frame::ServerFrame;
use futures::{SinkExt, Stream, StreamExt};
use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_util::sync::CancellationToken;
use tracing::debug;

use super::connection::{FrameSink, serve_frames};
use super::session::Session;
use crate::daemon::Daemon;

/// The most bytes of one client message.
pub const MAX_CLIENT_MESSAGE: usize = 1 << 20;

/// The most bytes of one server message.
pub const MAX_SERVER_MESSAGE: usize = 16 << 20;

/// How many messages may wait for the socket.
const QUEUE: usize = 64;

/// The read buffer's size: a phone's frames are small requests, so a few pages suffice; tungstenite's default
/// (128 KiB, for high read load) would be most of a phone's cost in efrd's memory.
const READ_BUFFER: usize = 4 << 10;

/// How many bytes of messages the pump gathers before they go to the socket (it flushes when its queue is empty):
/// enough to merge a burst of drafts into a few writes, without holding tungstenite's default of 128 KiB.
const WRITE_BUFFER: usize = 16 << 10;

/// tungstenite's settings for the server side: client messages and frames at most 1 MiB, masked; small buffers.
#[must_use]
pub fn config() -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(READ_BUFFER)
        .write_buffer_size(WRITE_BUFFER)
        .max_message_size(Some(MAX_CLIENT_MESSAGE))
        .max_frame_size(Some(MAX_CLIENT_MESSAGE))
        .accept_unmasked_frames(false)
}

/// Serves one connection after its handshake, until the client closes it, a rule closes it, or `kick`.
pub async fn serve<S>(ws: WebSocketStream<S>, session: Session, daemon: Arc<Daemon>, kick: CancellationToken)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (ws_tx, ws_rx) = ws.split();
    let shared = Arc::new(Shared::default());
    let (tx, rx) = mpsc::channel(QUEUE);
    let ended = kick.child_token();
    // `[remote]` keeps the value efrd started with until a restart.
    let ping_interval = Duration::from_secs(daemon.config().remote.ping_interval_secs);
    let pump = tokio::spawn(pump(
        ws_tx,
        rx,
        Arc::clone(&shared),
        ping_interval,
        kick.clone(),
        ended.clone(),
    ));
    let reader = Box::pin(read_frames(ws_rx, Arc::clone(&shared)));
    let sink = WsSink {
        tx,
        pending: Vec::new(),
    };
    serve_frames(reader, sink, session, Arc::clone(&daemon), ended).await;
    if let Err(error) = pump.await {
        debug!(%error, "the WebSocket pump failed");
    }
}

/// What the reader tells the pump.
#[derive(Debug, Default)]
struct Shared {
    /// Pings that wait for their pong.
    unanswered: AtomicU32,
    /// The close code of a rule the client broke.
    broken: Mutex<Option<CloseCode>>,
}

impl Shared {
    fn break_with(&self, code: CloseCode) {
        self.broken
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert(code);
    }

    fn broken(&self) -> Option<CloseCode> {
        *self.broken.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The client's frames: each text message's JSON object; a broken rule ends the stream with an I/O error.
fn read_frames<R>(ws_rx: R, shared: Arc<Shared>) -> impl Stream<Item = Result<Map<String, Value>, FrameError>>
where
    R: Stream<Item = Result<Message, WsError>> + Unpin,
{
    futures::stream::unfold((ws_rx, shared, false), |(mut ws_rx, shared, done)| async move {
        if done {
            return None;
        }
        loop {
            match ws_rx.next().await {
                None | Some(Ok(Message::Close(_))) => return None,
                Some(Ok(Message::Text(text))) => {
                    return Some((parse_body(text.as_bytes()), (ws_rx, shared, false)));
                }
                Some(Ok(Message::Binary(_))) => {
                    shared.break_with(CloseCode::Unsupported);
                    return Some((Err(rule("a binary message")), (ws_rx, shared, true)));
                }
                Some(Ok(Message::Pong(_))) => shared.unanswered.store(0, Ordering::Relaxed),
                Some(Ok(Message::Ping(_) | Message::Frame(_))) => {}
                Some(Err(WsError::Capacity(error))) => {
                    debug!(%error, "a client message over the limit");
                    shared.break_with(CloseCode::Size);
                    return Some((Err(rule("a message over 1 MiB")), (ws_rx, shared, true)));
                }
                Some(Err(error)) => {
                    debug!(%error, "the WebSocket broke");
                    shared.break_with(CloseCode::Protocol);
                    return Some((Err(rule("a broken WebSocket frame")), (ws_rx, shared, true)));
                }
            }
        }
    })
}

/// The error that ends the reader for a broken rule (the connection closes without an error frame).
fn rule(what: &str) -> FrameError {
    FrameError::Io(io::Error::new(io::ErrorKind::InvalidData, what.to_owned()))
}

/// The only writer of the socket: the server's messages, a ping every `interval`, and the close.
async fn pump<W>(
    mut ws_tx: W,
    mut rx: mpsc::Receiver<Message>,
    shared: Arc<Shared>,
    interval: Duration,
    kick: CancellationToken,
    ended: CancellationToken,
) where
    W: futures::Sink<Message, Error = WsError> + Unpin,
{
    let mut pings = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    let code = loop {
        tokio::select! {
            message = rx.recv() => match message {
                Some(message) => {
                    if ws_tx.feed(message).await.is_err() {
                        break None;
                    }
                    if rx.is_empty() && ws_tx.flush().await.is_err() {
                        break None;
                    }
                }
                // The connection ended: a rule the client broke, the client's close, or a kick.
                None => break Some(shared.broken().unwrap_or(CloseCode::Away)),
            },
            _ = pings.tick() => {
                if shared.unanswered.fetch_add(1, Ordering::Relaxed) >= 2 {
                    debug!("two pings wait for their pong: closing with 1001");
                    break Some(CloseCode::Away);
                }
                if ws_tx.send(Message::Ping(Vec::new().into())).await.is_err() {
                    break None;
                }
            }
            () = kick.cancelled() => break Some(CloseCode::Away),
        }
    };
    // The server loop stops reading, and the frames that wait are dropped.
    ended.cancel();
    rx.close();
    if let Some(code) = code {
        let _ = ws_tx
            .send(Message::Close(Some(CloseFrame {
                code,
                reason: "".into(),
            })))
            .await;
    }
    let _ = ws_tx.close().await;
}

/// The server's side of the bridge: each frame as one text message.
#[derive(Debug)]
struct WsSink {
    tx: mpsc::Sender<Message>,
    pending: Vec<Message>,
}

impl FrameSink for WsSink {
    async fn feed(&mut self, frame: &ServerFrame) -> Result<(), FrameError> {
        let text = serde_json::to_string(frame).map_err(FrameError::Serialize)?;
        if text.len() > MAX_SERVER_MESSAGE {
            return Err(FrameError::TooLarge {
                len: text.len() as u64,
                max: MAX_SERVER_MESSAGE,
            });
        }
        self.pending.push(Message::Text(text.into()));
        Ok(())
    }

    async fn flush(&mut self) -> Result<(), FrameError> {
        for message in self.pending.drain(..) {
            self.tx
                .send(message)
                .await
                .map_err(|_| FrameError::Io(io::ErrorKind::BrokenPipe.into()))?;
        }
        Ok(())
    }

    async fn close(&mut self) {
        let _ = FrameSink::flush(self).await;
    }
}
