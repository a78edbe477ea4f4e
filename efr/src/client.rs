//! The connection to efrd: the framing of `efr-protocol` over the Unix socket, with requests in flight at once.
//!
//! A reader task owns the read half and routes every server frame by its request id to that request's channel,
//! so a turn can hold its subscription open while it sends approval.respond, input.respond or turn.interrupt on
//! the same connection ([`Client`] is cheap to clone). Request ids count up from 1 and are never reused on a
//! connection, which keeps them unique among the requests in flight (docs/protocol.md, "Frames and the request
//! lifecycle").

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use efr_protocol::codec::FrameCodec;
use efr_protocol::frame::{ClientFrame, Request, RequestId, ServerFrame};
use efr_protocol::hello::{ClientInfo, HelloParams, HelloResult};
use efr_protocol::ids::ConversationId;
use efr_protocol::streams::SubscribeItem;
use efr_protocol::wire::{ConversationSubscribeParams, Snapshot};
use efr_protocol::{ErrorBody, PROTOCOL_VERSION};
use futures::stream::SplitSink;
use futures::{SinkExt, StreamExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::net::UnixStream;
use tokio::sync::mpsc;
use tokio_util::codec::Framed;

/// What went wrong talking to efrd.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Nothing listens on the socket (missing, or refused): efrd is not running. The caller says how to start it.
    #[error("efrd is not running (cannot connect to {}: {source})", socket.display())]
    NotRunning {
        /// The socket path tried.
        socket: PathBuf,
        /// The connect error.
        source: std::io::Error,
    },
    /// efrd answered the request with an error.
    #[error("{}", .0.message)]
    Daemon(ErrorBody),
    /// The connection closed or broke, or a frame did not follow the protocol.
    #[error("{0}")]
    Connection(String),
}

impl ClientError {
    /// The daemon's error body, when efrd answered with one.
    #[must_use]
    pub fn daemon(&self) -> Option<&ErrorBody> {
        match self {
            Self::Daemon(body) => Some(body),
            _ => None,
        }
    }
}

type Routes = Arc<Mutex<HashMap<RequestId, mpsc::UnboundedSender<ServerFrame>>>>;
type Writer = Arc<tokio::sync::Mutex<SplitSink<Framed<UnixStream, FrameCodec>, ClientFrame>>>;

/// A connection to efrd that said hello. Clones share the connection.
#[derive(Debug, Clone)]
pub struct Client {
    writer: Writer,
    routes: Routes,
    next_id: Arc<AtomicU64>,
}

/// The frames of one stream request (conversation.subscribe), in order; ends with `End` or `Error`.
#[derive(Debug)]
pub struct Stream {
    id: RequestId,
    frames: mpsc::UnboundedReceiver<ServerFrame>,
}

impl Stream {
    /// The request's id (for [`Client::cancel`]).
    #[must_use]
    pub const fn id(&self) -> RequestId {
        self.id
    }

    /// The next frame; `None` when the connection closed.
    pub async fn next(&mut self) -> Option<ServerFrame> {
        self.frames.recv().await
    }
}

fn lock(routes: &Routes) -> std::sync::MutexGuard<'_, HashMap<RequestId, mpsc::UnboundedSender<ServerFrame>>> {
    routes.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Client {
    /// Connects to `socket` and says hello with this build's protocol and `tty` (the terminal of stdin, which
    /// methods that default to "the hello's terminal" use). A local peer of the same uid holds every scope, so hello
    /// names none.
    ///
    /// # Errors
    /// [`ClientError::NotRunning`] when the socket is missing or refuses; [`ClientError::Daemon`] when hello fails
    /// (`protocol_mismatch`); [`ClientError::Connection`] when the connection breaks, or when the connect itself is
    /// reset (a listener that closed, such as a socket-activated efrd that failed to start).
    pub async fn connect(socket: &Path, tty: Option<String>) -> Result<Self, ClientError> {
        let stream = UnixStream::connect(socket).await.map_err(|source| {
            // Something listened and dropped the connection (systemd's socket with an efrd that failed to start
            // and closed it): not "not running".
            if source.kind() == std::io::ErrorKind::ConnectionReset {
                ClientError::Connection(format!("the connection to {} was reset before hello", socket.display()))
            } else {
                ClientError::NotRunning {
                    socket: socket.to_owned(),
                    source,
                }
            }
        })?;
        let (sink, mut reader) = Framed::new(stream, FrameCodec::default()).split();
        let routes: Routes = Arc::default();
        let task_routes = Arc::clone(&routes);
        tokio::spawn(async move {
            while let Some(Ok(object)) = reader.next().await {
                let Ok(frame) = ServerFrame::from_object(object) else {
                    break;
                };
                let Some(id) = frame.request_id() else {
                    // An error without id: efrd closes the connection after it.
                    break;
                };
                let last = matches!(frame, ServerFrame::End { .. } | ServerFrame::Error { .. });
                let mut routes = lock(&task_routes);
                if let Some(route) = routes.get(&id) {
                    let _ = route.send(frame);
                }
                if last {
                    routes.remove(&id);
                }
            }
            // Dropping every sender tells each waiting request that the connection closed.
            lock(&task_routes).clear();
        });
        let client = Self {
            writer: Arc::new(tokio::sync::Mutex::new(sink)),
            routes,
            next_id: Arc::new(AtomicU64::new(1)),
        };
        let params = HelloParams {
            protocol: PROTOCOL_VERSION,
            client: ClientInfo {
                name: "efr".into(),
                version: env!("CARGO_PKG_VERSION").into(),
            },
            tty,
        };
        let _: HelloResult = client.call("hello", &params).await?;
        Ok(client)
    }

    async fn send(&self, method: &str, params: Value, ack: bool) -> Result<Stream, ClientError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::unbounded_channel();
        lock(&self.routes).insert(id, tx);
        let frame = ClientFrame::Request(Request {
            id,
            method: method.to_owned(),
            params: Some(params),
            ack,
        });
        self.writer
            .lock()
            .await
            .send(frame)
            .await
            .map_err(|e| ClientError::Connection(format!("cannot send {method}: {e}")))?;
        Ok(Stream { id, frames: rx })
    }

    /// Ends stream request `id` (`{"cancel": id}`); its frames are no longer routed anywhere.
    ///
    /// # Errors
    /// [`ClientError::Connection`] when the frame cannot be sent.
    pub async fn cancel(&self, id: RequestId) -> Result<(), ClientError> {
        lock(&self.routes).remove(&id);
        self.writer
            .lock()
            .await
            .send(ClientFrame::Cancel(id))
            .await
            .map_err(|e| ClientError::Connection(format!("cannot cancel request {id}: {e}")))
    }

    /// The state of a conversation now: conversation.subscribe without `after_seq`, whose first item is the
    /// snapshot, then cancelled. Tells whether the conversation exists and which turn runs in it.
    ///
    /// # Errors
    /// [`ClientError::Daemon`] with efrd's error (`not_found` for an unknown conversation);
    /// [`ClientError::Connection`] when the connection breaks or the first item is not a snapshot.
    pub async fn snapshot(&self, conversation_id: ConversationId) -> Result<Snapshot, ClientError> {
        let params = ConversationSubscribeParams {
            conversation_id,
            after_seq: None,
            drafts: false,
            answers_input: false,
        };
        let mut stream = self.stream("conversation.subscribe", &params, false).await?;
        let first = stream.next().await;
        let result = match first {
            Some(ServerFrame::Item { item, .. }) => match serde_json::from_value::<SubscribeItem>(item) {
                Ok(SubscribeItem::Snapshot(snapshot)) => Ok(*snapshot),
                Ok(_) => Err(ClientError::Connection(
                    "conversation.subscribe: the first item is not a snapshot".into(),
                )),
                Err(e) => Err(ClientError::Connection(format!(
                    "conversation.subscribe: cannot read the snapshot: {e}"
                ))),
            },
            Some(ServerFrame::Error { error, .. }) => return Err(ClientError::Daemon(error)),
            Some(other) => Err(ClientError::Connection(format!(
                "conversation.subscribe: expected a snapshot, got {other:?}"
            ))),
            None => Err(ClientError::Connection(
                "efrd closed the connection during conversation.subscribe".into(),
            )),
        };
        self.cancel(stream.id()).await?;
        result
    }

    /// A unary call with typed params and result.
    ///
    /// # Errors
    /// [`ClientError::Daemon`] with efrd's error body; [`ClientError::Connection`] when the connection breaks or the
    /// result does not read as `R`.
    pub async fn call<P: Serialize, R: DeserializeOwned>(&self, method: &str, params: &P) -> Result<R, ClientError> {
        let params = serde_json::to_value(params)
            .map_err(|e| ClientError::Connection(format!("cannot encode the params of {method}: {e}")))?;
        let value = self.call_value(method, params).await?;
        serde_json::from_value(value)
            .map_err(|e| ClientError::Connection(format!("cannot read the result of {method}: {e}")))
    }

    /// A unary call with JSON params, returning the result as JSON (for `--json` output, which prints it as is).
    ///
    /// # Errors
    /// As [`Self::call`].
    pub async fn call_value(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        let mut stream = self.send(method, params, false).await?;
        let closed = || ClientError::Connection(format!("efrd closed the connection during {method}"));
        match stream.next().await.ok_or_else(closed)? {
            ServerFrame::Item { item, .. } => match stream.next().await.ok_or_else(closed)? {
                ServerFrame::End { .. } => Ok(item),
                other => Err(ClientError::Connection(format!(
                    "{method}: expected the end after the result, got {other:?}"
                ))),
            },
            ServerFrame::Error { error, .. } => Err(ClientError::Daemon(error)),
            other => Err(ClientError::Connection(format!(
                "{method}: expected a result, got {other:?}"
            ))),
        }
    }

    /// Starts a stream request; with `ack`, the first frame is `{"ack": id}` once the stream is registered.
    ///
    /// # Errors
    /// [`ClientError::Connection`] when the request cannot be sent.
    pub async fn stream<P: Serialize>(&self, method: &str, params: &P, ack: bool) -> Result<Stream, ClientError> {
        let params = serde_json::to_value(params)
            .map_err(|e| ClientError::Connection(format!("cannot encode the params of {method}: {e}")))?;
        self.send(method, params, ack).await
    }
}
