//! Connections, hello, scopes, request dispatch, streams, cancel and backpressure.
//!
//! `server/` knows the protocol's frames and the method table; it knows no business rule. A method handler
//! (`methods/`, one file per method family) checks its params, calls the module that owns the rule, and maps the
//! outcome to a result or an error (docs/architecture.md, "The modules of efrd").

pub mod connection;
pub mod methods;
pub mod peer;
pub mod session;
pub mod tailnet;
pub mod websocket;

use std::sync::Arc;
use std::time::Duration;

use efr_protocol::frame::{RequestId, ServerFrame};
use serde_json::Value;
use tokio::net::UnixListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{info, warn};

use self::connection::{Closed, Outbound};
use self::session::Session;
use crate::daemon::Daemon;

/// How long a graceful stop waits for connections to finish their last frames.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(3);

/// The most connections efrd serves at once (docs/operations.md): a terminal holds one or two, a watcher one. One
/// more is accepted, answered with one `busy` error frame without id, and closed, so a flood of clients costs a
/// bounded number of tasks and file descriptors and never stops efrd.
pub const MAX_CONNECTIONS: usize = 512;

/// How long a refused connection may take to read its `busy` frame.
const REFUSE_TIMEOUT: Duration = Duration::from_secs(1);

/// What a request's handler can see: the daemon, its connection and its own cancellation.
#[derive(Debug)]
pub struct RequestCtx {
    /// The daemon's shared state.
    pub daemon: Arc<Daemon>,
    /// The connection's identity and scopes.
    pub session: Arc<Session>,
    /// The request id.
    pub id: RequestId,
    /// Cancelled by `{"cancel": id}`, by the connection's close, or at shutdown.
    pub cancel: CancellationToken,
    /// Cancelled when efrd stops.
    pub shutdown: CancellationToken,
}

/// The sending side of one stream request: items, and the ack the client may have asked for.
#[derive(Debug)]
pub struct StreamSink {
    id: RequestId,
    ack_pending: bool,
    out: Outbound,
}

impl StreamSink {
    pub(crate) fn new(id: RequestId, ack: bool, out: Outbound) -> Self {
        Self {
            id,
            ack_pending: ack,
            out,
        }
    }

    /// Sends `{"ack": id}` if the client asked for it and it was not sent yet. Call it as soon as the stream is
    /// registered (a subscription is live); [`Self::item`] sends it first otherwise.
    ///
    /// # Errors
    /// [`Closed`] when the connection is gone.
    pub async fn ack(&mut self) -> Result<(), Closed> {
        if std::mem::take(&mut self.ack_pending) {
            self.out.send(ServerFrame::Ack(self.id)).await?;
        }
        Ok(())
    }

    /// Sends one item, waiting while the connection's queue is full.
    ///
    /// # Errors
    /// [`Closed`] when the connection is gone.
    pub async fn item(&mut self, item: Value) -> Result<(), Closed> {
        self.ack().await?;
        self.out.send(ServerFrame::Item { id: self.id, item }).await
    }

    /// Sends one item counted as `bytes` in the connection's [`Outbound::pending_bytes`] (a live event, so that a
    /// subscription can tell how far its client has fallen behind), waiting while the queue is full.
    ///
    /// # Errors
    /// [`Closed`] when the connection is gone.
    pub async fn counted_item(&mut self, item: Value, bytes: u64) -> Result<(), Closed> {
        self.ack().await?;
        self.out
            .send_counted(ServerFrame::Item { id: self.id, item }, bytes)
            .await
    }

    /// Waits while more than [`connection::MAX_PENDING_BYTES`] of live events wait in this connection's queue and
    /// the client reads: `false` when it read nothing for [`connection::PENDING_STALL`].
    pub async fn room(&self) -> bool {
        self.out
            .room_for(connection::MAX_PENDING_BYTES, connection::PENDING_STALL)
            .await
    }
}

/// Writes one `busy` error frame without id to a connection over [`MAX_CONNECTIONS`], then closes it.
async fn refuse_busy(stream: tokio::net::UnixStream) {
    let error = efr_protocol::ErrorBody::new(
        efr_protocol::ErrorCode::Busy,
        format!("efrd serves at most {MAX_CONNECTIONS} connections at once; try again when one closes"),
    )
    .with_data(serde_json::json!({"connections": MAX_CONNECTIONS}));
    let mut framed = tokio_util::codec::FramedWrite::new(stream, efr_protocol::codec::FrameCodec::default());
    let frame = ServerFrame::Error { id: None, error };
    let _ = tokio::time::timeout(REFUSE_TIMEOUT, futures::SinkExt::send(&mut framed, &frame)).await;
}

/// Accepts connections until `shutdown`, then waits (at most [`DRAIN_TIMEOUT`]) for them to end their streams.
pub async fn serve(listener: &UnixListener, daemon: Arc<Daemon>, shutdown: CancellationToken) {
    let tracker = TaskTracker::new();
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = shutdown.cancelled() => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(error) => {
                // EMFILE and friends: back off briefly rather than spin.
                warn!(%error, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let peer = match peer::check_same_user(&stream) {
            Ok(peer) => peer,
            Err(error) => {
                info!(%error, "closing a connection before reading a byte");
                continue;
            }
        };
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            warn!("refusing a connection: {MAX_CONNECTIONS} are open");
            // Refusals take a slot of their own too: at most as many wait as are served.
            if tracker.len() < 2 * MAX_CONNECTIONS {
                tracker.spawn(refuse_busy(stream));
            }
            continue;
        };
        let daemon = Arc::clone(&daemon);
        let shutdown = shutdown.clone();
        tracker.spawn(async move {
            connection::serve(stream, Session::local(peer), daemon, shutdown).await;
            drop(slot);
        });
    }
    tracker.close();
    if tokio::time::timeout(DRAIN_TIMEOUT, tracker.wait()).await.is_err() {
        warn!("connections did not finish within {DRAIN_TIMEOUT:?}");
    }
}
