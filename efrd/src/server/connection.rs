//! One client connection: read frames, dispatch requests concurrently, write answers through a bounded queue.
//!
//! # Shape
//!
//! Each connection has a reader loop (this task) and a writer task. The reader decodes frames and starts one task per
//! request, so many requests are in flight and their answers interleave. Every answer goes through one bounded
//! outbound queue ([`OUTBOUND_FRAMES`] frames) to the writer: a client that stops reading fills the queue, after which
//! unary handlers wait and a subscription's own bounded buffer overflows (its stream ends with `busy` and
//! `{"overflow": true}`), so a client that does not read cannot grow efrd's memory. The queue also counts the bytes of
//! the live events waiting in it ([`Outbound::pending_bytes`]): a subscription whose connection holds more than
//! [`MAX_PENDING_BYTES`] of them, and whose client reads nothing for [`PENDING_STALL`], ends with overflow too, so
//! 256 large events (64 KiB of text each) cannot pile up for a client that does not read.
//!
//! # Rules (docs/architecture.md, "The request lifecycle")
//!
//! - `hello` is handled in the reader loop itself, before any later frame is read, so no request can overtake it.
//!   A request before hello is `invalid`; after a version mismatch every request is `protocol_mismatch`.
//! - A frame whose id cannot be read (not JSON, not an object, over the limit) gets an error without id and the
//!   connection closes. A frame with a readable id but bad members gets an error for that id.
//! - `{"cancel": N}` ends request N: a stream answers `end`, a unary request `error` with `cancelled`.
//! - At shutdown every stream ends with `end`; unary requests may finish until the connection closes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use efr_protocol::codec::{FrameCodec, FrameError};
use efr_protocol::frame::{ClientFrame, Request, RequestId, ServerFrame};
use efr_protocol::methods::{Method, Shape};
use efr_protocol::{ErrorBody, ErrorCode};
use futures::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::net::UnixStream;
use tokio::sync::{Notify, mpsc};
use tokio_util::codec::{FramedRead, FramedWrite};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::session::{HelloState, Session};
use super::{RequestCtx, StreamSink, methods};
use crate::daemon::Daemon;

/// How many frames may wait in one connection's outbound queue.
pub const OUTBOUND_FRAMES: usize = 256;

/// The most bytes of counted frames (a subscription's live events) that may wait in one connection's queue: 4 MiB, a
/// few seconds of the fastest stream. Past it, a subscription waits for the client to read; when the client takes
/// nothing for [`PENDING_STALL`], the subscription ends with overflow.
pub const MAX_PENDING_BYTES: u64 = 4 << 20;

/// How long a subscription past [`MAX_PENDING_BYTES`] waits for its client to read anything.
pub const PENDING_STALL: Duration = Duration::from_secs(5);

/// The sending side of a connection's outbound queue.
#[derive(Debug, Clone)]
pub struct Outbound {
    tx: mpsc::Sender<Queued>,
    /// Bytes of counted frames queued and not yet handed to the socket's writer.
    pending: Arc<AtomicU64>,
    /// Woken each time the writer takes a counted frame.
    taken: Arc<Notify>,
}

/// A frame in the queue, with the bytes it was counted for (0 for frames that are not counted).
#[derive(Debug)]
struct Queued {
    frame: ServerFrame,
    bytes: u64,
}

/// The connection is gone; nothing more can be sent on it.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the connection is closed")]
pub struct Closed;

impl Outbound {
    /// Queues a frame, waiting while the queue is full.
    ///
    /// # Errors
    /// [`Closed`] when the writer has stopped.
    pub async fn send(&self, frame: ServerFrame) -> Result<(), Closed> {
        self.send_counted(frame, 0).await
    }

    /// Queues a frame counted as `bytes` in [`Self::pending_bytes`] until the writer takes it, waiting while the
    /// queue is full.
    ///
    /// # Errors
    /// [`Closed`] when the writer has stopped.
    pub async fn send_counted(&self, frame: ServerFrame, bytes: u64) -> Result<(), Closed> {
        self.pending.fetch_add(bytes, Ordering::Relaxed);
        let sent = self.tx.send(Queued { frame, bytes }).await;
        if sent.is_err() {
            self.pending.fetch_sub(bytes, Ordering::Relaxed);
        }
        sent.map_err(|_| Closed)
    }

    /// The bytes of counted frames waiting in the queue.
    #[must_use]
    pub fn pending_bytes(&self) -> u64 {
        self.pending.load(Ordering::Relaxed)
    }

    /// Waits until at most `bound` bytes of counted frames wait, as long as the writer keeps taking them: `false`
    /// when it took none for `stall` (the client does not read).
    pub async fn room_for(&self, bound: u64, stall: Duration) -> bool {
        loop {
            let taken = self.taken.notified();
            if self.pending_bytes() <= bound {
                return true;
            }
            if tokio::time::timeout(stall, taken).await.is_err() {
                return false;
            }
        }
    }

    /// Queues a frame only if there is room now.
    ///
    /// # Errors
    /// `Err(frame)` when the queue is full or closed.
    pub fn try_send(&self, frame: ServerFrame) -> Result<(), ServerFrame> {
        self.tx.try_send(Queued { frame, bytes: 0 }).map_err(|e| match e {
            mpsc::error::TrySendError::Full(q) | mpsc::error::TrySendError::Closed(q) => q.frame,
        })
    }
}

type InFlight = Arc<Mutex<HashMap<RequestId, CancellationToken>>>;

/// Where a connection's writer puts frames: the length-prefixed Unix socket, or the tailnet WebSocket
/// (`crate::remote`).
pub trait FrameSink: Send + 'static {
    /// Encodes one frame into the sink's buffer.
    ///
    /// # Errors
    /// [`FrameError::TooLarge`] for a frame over the transport's limit (nothing of it is sent); others when the
    /// connection is gone.
    fn feed(&mut self, frame: &ServerFrame) -> impl Future<Output = Result<(), FrameError>> + Send;

    /// Sends what is buffered.
    ///
    /// # Errors
    /// When the connection is gone.
    fn flush(&mut self) -> impl Future<Output = Result<(), FrameError>> + Send;

    /// Flushes and closes the sending side.
    fn close(&mut self) -> impl Future<Output = ()> + Send;
}

impl<W: tokio::io::AsyncWrite + Unpin + Send + 'static> FrameSink for FramedWrite<W, FrameCodec> {
    async fn feed(&mut self, frame: &ServerFrame) -> Result<(), FrameError> {
        SinkExt::<&ServerFrame>::feed(self, frame).await
    }

    async fn flush(&mut self) -> Result<(), FrameError> {
        SinkExt::<&ServerFrame>::flush(self).await
    }

    async fn close(&mut self) {
        let _ = SinkExt::<&ServerFrame>::close(self).await;
    }
}

/// Serves one Unix-socket connection until the peer closes it, a fatal frame error, or shutdown.
pub async fn serve(stream: UnixStream, session: Session, daemon: Arc<Daemon>, shutdown: CancellationToken) {
    let (read_half, write_half) = stream.into_split();
    let codec = FrameCodec::default();
    let reader = FramedRead::new(read_half, codec.clone());
    serve_frames(reader, FramedWrite::new(write_half, codec), session, daemon, shutdown).await;
}

/// Serves one connection of any transport: `reader` gives each client frame's JSON object, `writer` takes server
/// frames. Ends when the reader ends or fails, or at `shutdown`.
pub async fn serve_frames<R, W>(
    mut reader: R,
    writer: W,
    session: Session,
    daemon: Arc<Daemon>,
    shutdown: CancellationToken,
) where
    R: futures::Stream<Item = Result<serde_json::Map<String, Value>, FrameError>> + Unpin,
    W: FrameSink,
{
    let (tx, rx) = mpsc::channel(OUTBOUND_FRAMES);
    let pending = Arc::new(AtomicU64::new(0));
    let taken = Arc::new(Notify::new());
    let outbound = Outbound {
        tx,
        pending: Arc::clone(&pending),
        taken: Arc::clone(&taken),
    };
    let in_flight: InFlight = Arc::default();
    let writer = tokio::spawn(write_frames(writer, rx, (pending, taken), Arc::clone(&in_flight)));
    let session = Arc::new(session);
    daemon.connection_opened();

    loop {
        let next = tokio::select! {
            next = reader.next() => next,
            () = shutdown.cancelled() => break,
        };
        let object = match next {
            None => break,
            Some(Ok(object)) => object,
            Some(Err(error)) => {
                refuse_frame(&outbound, &error).await;
                break;
            }
        };
        let frame = match ClientFrame::from_object(object) {
            Ok(frame) => frame,
            Err(error) => {
                let body = error.to_error_body();
                if outbound
                    .send(ServerFrame::Error {
                        id: error.id,
                        error: body,
                    })
                    .await
                    .is_err()
                    || error.id.is_none()
                {
                    break;
                }
                continue;
            }
        };
        match frame {
            ClientFrame::Cancel(id) => cancel(&in_flight, id),
            ClientFrame::Request(request) => {
                if !start_request(request, &session, &daemon, &outbound, &in_flight, &shutdown).await {
                    break;
                }
            }
        }
    }

    // The peer is gone or efrd stops: end every request still in flight, then let the writer drain.
    for token in in_flight.lock().unwrap_or_else(PoisonError::into_inner).values() {
        token.cancel();
    }
    drop(outbound);
    if let Err(error) = writer.await {
        warn!(%error, "connection writer failed");
    }
    daemon.connection_closed();
    debug!(
        client = session.hello_info().client.as_deref().unwrap_or("-"),
        "connection closed"
    );
}

/// Answers a frame error: an error frame without id where the frame was read whole, then the caller closes.
async fn refuse_frame(outbound: &Outbound, error: &FrameError) {
    let code = match error {
        FrameError::TooLarge { .. } => ErrorCode::TooLarge,
        FrameError::NotJson(_) | FrameError::NotObject(_) => ErrorCode::Invalid,
        FrameError::Truncated { .. } | FrameError::Io(_) | FrameError::Serialize(_) => {
            debug!(%error, "connection closed inside a frame");
            return;
        }
    };
    info!(%error, "closing a connection after a frame without a readable id");
    let _ = outbound
        .send(ServerFrame::Error {
            id: None,
            error: ErrorBody::new(code, error.to_string()),
        })
        .await;
}

/// Checks a request and starts its task. Returns false when the connection must close.
async fn start_request(
    request: Request,
    session: &Arc<Session>,
    daemon: &Arc<Daemon>,
    outbound: &Outbound,
    in_flight: &InFlight,
    shutdown: &CancellationToken,
) -> bool {
    let Request {
        id,
        method: name,
        params,
        ack,
    } = request;
    let refuse = |error: ErrorBody| ServerFrame::Error { id: Some(id), error };

    let Some(method) = Method::from_name(&name) else {
        let error = ErrorBody::invalid(format!("unknown method `{name}`"));
        return outbound.send(refuse(error)).await.is_ok();
    };
    if method == Method::Hello {
        // Inline: nothing after the hello is read before it is answered.
        let answer = match methods::hello::hello(daemon, session, params) {
            Ok(result) => vec![ServerFrame::Item { id, item: result }, ServerFrame::End { id }],
            Err(error) => vec![refuse(error)],
        };
        for frame in answer {
            if outbound.send(frame).await.is_err() {
                return false;
            }
        }
        return true;
    }
    match session.hello_state() {
        HelloState::Done => {}
        HelloState::Waiting => {
            let error = ErrorBody::invalid(format!("`hello` must be the first request, before `{name}`"));
            return outbound.send(refuse(error)).await.is_ok();
        }
        HelloState::Mismatched => {
            let error = ErrorBody::new(
                ErrorCode::ProtocolMismatch,
                "this connection's hello named another protocol",
            );
            return outbound.send(refuse(error)).await.is_ok();
        }
    }
    if let Err(error) = session.check_allowed(method) {
        return outbound.send(refuse(error)).await.is_ok();
    }

    let cancel = shutdown.child_token();
    let duplicate = {
        let mut map = in_flight.lock().unwrap_or_else(PoisonError::into_inner);
        let duplicate = map.contains_key(&id);
        if !duplicate {
            map.insert(id, cancel.clone());
        }
        duplicate
    };
    if duplicate {
        let error = ErrorBody::invalid(format!("request id {id} is already in flight on this connection"));
        return outbound.send(refuse(error)).await.is_ok();
    }
    let ctx = RequestCtx {
        daemon: Arc::clone(daemon),
        session: Arc::clone(session),
        id,
        cancel,
        shutdown: shutdown.clone(),
    };
    let outbound = outbound.clone();
    let in_flight = Arc::clone(in_flight);
    tokio::spawn(async move {
        let frames = run_request(&ctx, method, params, ack, &outbound).await;
        in_flight.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
        for frame in frames {
            if outbound.send(frame).await.is_err() {
                break;
            }
        }
    });
    true
}

/// Runs one request to its end and returns the frames that finish it.
async fn run_request(
    ctx: &RequestCtx,
    method: Method,
    params: Option<Value>,
    ack: bool,
    outbound: &Outbound,
) -> Vec<ServerFrame> {
    let id = ctx.id;
    match method.spec().shape {
        Shape::Unary => {
            let outcome = tokio::select! {
                outcome = methods::unary(ctx, method, params) => outcome,
                () = ctx.cancel.cancelled() => Err(ErrorBody::new(ErrorCode::Cancelled, "the request was cancelled")),
            };
            match outcome {
                Ok(item) => vec![ServerFrame::Item { id, item }, ServerFrame::End { id }],
                Err(error) => vec![ServerFrame::Error { id: Some(id), error }],
            }
        }
        Shape::Stream => {
            let mut sink = StreamSink::new(id, ack, outbound.clone());
            // A cancel or a shutdown ends a stream normally: the client asked for it, or efrd is stopping.
            let outcome = tokio::select! {
                outcome = methods::stream(ctx, method, params, &mut sink) => outcome,
                () = ctx.cancel.cancelled() => Ok(()),
            };
            match outcome {
                Ok(()) => vec![ServerFrame::End { id }],
                Err(error) => vec![ServerFrame::Error { id: Some(id), error }],
            }
        }
    }
}

/// Cancels request `id` of the connection, when it is still in flight.
fn cancel(in_flight: &InFlight, id: RequestId) {
    let token = in_flight
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&id)
        .cloned();
    if let Some(token) = token {
        token.cancel();
    }
}

/// The writer task: encodes frames until every sender is gone. An item too large to send becomes a `too_large`
/// error for its request, so the client learns what happened and the connection stays usable; the request is
/// cancelled (a stream would go on sending what the client can no longer take as part of it), and its later frames,
/// up to its own terminal frame, are dropped.
async fn write_frames<W: FrameSink>(
    mut sink: W,
    mut rx: mpsc::Receiver<Queued>,
    (pending, taken): (Arc<AtomicU64>, Arc<Notify>),
    in_flight: InFlight,
) {
    // Requests already ended by a `too_large` error: their later frames are dropped, so each request still gets
    // exactly one terminal frame.
    let mut failed: std::collections::HashSet<RequestId> = std::collections::HashSet::new();
    while let Some(Queued { frame, bytes }) = rx.recv().await {
        if bytes > 0 {
            pending.fetch_sub(bytes, Ordering::Relaxed);
            taken.notify_waiters();
        }
        let id = frame.request_id();
        if let Some(id) = id.filter(|id| failed.contains(id)) {
            if matches!(frame, ServerFrame::End { .. } | ServerFrame::Error { .. }) {
                failed.remove(&id);
            }
        } else {
            match sink.feed(&frame).await {
                Ok(()) => {}
                Err(FrameError::TooLarge { len, max }) => {
                    let error = ErrorBody::new(
                        ErrorCode::TooLarge,
                        format!("the answer of {len} bytes is over the limit of {max}"),
                    );
                    if sink.feed(&ServerFrame::Error { id, error }).await.is_err() {
                        return;
                    }
                    if let (Some(id), ServerFrame::Item { .. }) = (id, &frame) {
                        failed.insert(id);
                        cancel(&in_flight, id);
                    }
                }
                Err(error) => {
                    debug!(%error, "connection writer stopped");
                    return;
                }
            }
        }
        // Flush when nothing else waits, so bursts go out in one write; also after a dropped frame, so that a
        // too_large error is not left in the buffer behind frames that were never sent.
        if rx.is_empty() && sink.flush().await.is_err() {
            return;
        }
    }
    sink.close().await;
}
