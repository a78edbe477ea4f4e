//! A protocol client for tests: speaks the real framing over the real Unix socket.
//!
//! Frames of different requests interleave on a connection; the client keeps what it read for other requests in
//! per-request queues, so a test can hold a subscription open while it makes unary calls.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use efr_protocol::ErrorBody;
use efr_protocol::codec::FrameCodec;
use efr_protocol::frame::{ClientFrame, Request, RequestId, ServerFrame};
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::UnixStream;
use tokio_util::codec::Framed;

/// How long a test waits for one frame before it fails.
pub const FRAME_TIMEOUT: Duration = Duration::from_secs(20);

/// A connection to efrd.
#[derive(Debug)]
pub struct Client {
    framed: Framed<UnixStream, FrameCodec>,
    next_id: RequestId,
    queued: HashMap<Option<RequestId>, VecDeque<ServerFrame>>,
}

/// What one stream item or terminal frame was.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamFrame {
    /// `{"ack": id}`.
    Ack,
    /// An item.
    Item(Value),
    /// `end`.
    End,
    /// `error`.
    Error(ErrorBody),
}

impl Client {
    /// Connects without sending hello.
    ///
    /// # Errors
    /// When the socket does not accept.
    pub async fn connect_raw(path: &Path) -> Result<Self> {
        let stream = UnixStream::connect(path)
            .await
            .with_context(|| format!("cannot connect to {}", path.display()))?;
        Ok(Self {
            framed: Framed::new(stream, FrameCodec::default()),
            next_id: 1,
            queued: HashMap::new(),
        })
    }

    /// Says hello on a stream that is connected already (one connected as another user, say).
    ///
    /// # Errors
    /// When hello fails.
    pub async fn hello_on(stream: UnixStream) -> Result<Self> {
        let mut client = Self {
            framed: Framed::new(stream, FrameCodec::default()),
            next_id: 1,
            queued: HashMap::new(),
        };
        client
            .call("hello", json!({"protocol": efr_protocol::PROTOCOL_VERSION, "client": {"name": "efr-tests", "version": env!("CARGO_PKG_VERSION")}}))
            .await?
            .map_err(|e| anyhow!("hello failed: {e}"))?;
        Ok(client)
    }

    /// Connects and says hello with this build's protocol version.
    ///
    /// # Errors
    /// When the socket does not accept or hello fails.
    pub async fn connect(path: &Path) -> Result<Self> {
        let mut client = Self::connect_raw(path).await?;
        client
            .call("hello", json!({"protocol": efr_protocol::PROTOCOL_VERSION, "client": {"name": "efr-tests", "version": env!("CARGO_PKG_VERSION")}}))
            .await?
            .map_err(|e| anyhow!("hello failed: {e}"))?;
        Ok(client)
    }

    /// Sends a request and returns its id.
    ///
    /// # Errors
    /// When the socket is closed.
    pub async fn send(&mut self, method: &str, params: Value, ack: bool) -> Result<RequestId> {
        let id = self.next_id;
        self.next_id += 1;
        let params = if params.is_null() { None } else { Some(params) };
        let frame = ClientFrame::Request(Request {
            id,
            method: method.to_owned(),
            params,
            ack,
        });
        self.framed.send(&frame).await.context("cannot send a request")?;
        Ok(id)
    }

    /// Sends `{"cancel": id}`.
    ///
    /// # Errors
    /// When the socket is closed.
    pub async fn cancel(&mut self, id: RequestId) -> Result<()> {
        self.framed
            .send(&ClientFrame::Cancel(id))
            .await
            .context("cannot send a cancel")
    }

    /// Sends any JSON value as one frame (for tests of bad frames).
    ///
    /// # Errors
    /// When the socket is closed.
    pub async fn send_value(&mut self, value: &Value) -> Result<()> {
        self.framed.send(value).await.context("cannot send a frame")
    }

    /// Writes raw bytes to the socket (for tests of broken framing).
    ///
    /// # Errors
    /// When the socket is closed.
    pub async fn send_raw(&mut self, bytes: &[u8]) -> Result<()> {
        use tokio::io::AsyncWriteExt;
        self.framed
            .get_mut()
            .write_all(bytes)
            .await
            .context("cannot write raw bytes")
    }

    /// A unary call: `Ok(Ok(result))`, or `Ok(Err(error body))` when the daemon answered with an error.
    ///
    /// # Errors
    /// When the connection breaks or the answer does not follow the lifecycle (item then end).
    pub async fn call(&mut self, method: &str, params: Value) -> Result<Result<Value, ErrorBody>> {
        let id = self.send(method, params, false).await?;
        match self.next_of(id).await? {
            StreamFrame::Item(item) => match self.next_of(id).await? {
                StreamFrame::End => Ok(Ok(item)),
                other => bail!("{method}: expected end after the item, got {other:?}"),
            },
            StreamFrame::Error(error) => Ok(Err(error)),
            other => bail!("{method}: expected an item or an error, got {other:?}"),
        }
    }

    /// A unary call that must succeed.
    ///
    /// # Errors
    /// When the daemon answers with an error.
    pub async fn ok(&mut self, method: &str, params: Value) -> Result<Value> {
        self.call(method, params)
            .await?
            .map_err(|e| anyhow!("{method} failed: {e}"))
    }

    /// The next frame of request `id`.
    ///
    /// # Errors
    /// On timeout ([`FRAME_TIMEOUT`]) or a closed connection.
    pub async fn next_of(&mut self, id: RequestId) -> Result<StreamFrame> {
        let frame = self.next_frame_for(Some(id)).await?;
        Ok(match frame {
            ServerFrame::Ack(_) => StreamFrame::Ack,
            ServerFrame::Item { item, .. } => StreamFrame::Item(item),
            ServerFrame::End { .. } => StreamFrame::End,
            ServerFrame::Error { error, .. } => StreamFrame::Error(error),
        })
    }

    /// The next frame for `id` (`None`: a frame without id), reading and queueing frames of other requests.
    ///
    /// # Errors
    /// On timeout or a closed connection.
    pub async fn next_frame_for(&mut self, id: Option<RequestId>) -> Result<ServerFrame> {
        if let Some(frame) = self.queued.get_mut(&id).and_then(VecDeque::pop_front) {
            return Ok(frame);
        }
        loop {
            let frame = self
                .read_frame()
                .await?
                .ok_or_else(|| anyhow!("the daemon closed the connection"))?;
            let frame_id = frame.request_id();
            if frame_id == id {
                return Ok(frame);
            }
            self.queued.entry(frame_id).or_default().push_back(frame);
        }
    }

    /// Reads the next frame off the socket, whatever its id; `None` when the daemon closed the connection.
    ///
    /// # Errors
    /// On timeout or a frame error.
    pub async fn read_frame(&mut self) -> Result<Option<ServerFrame>> {
        let next = tokio::time::timeout(FRAME_TIMEOUT, self.framed.next())
            .await
            .map_err(|_| anyhow!("no frame from the daemon within {FRAME_TIMEOUT:?}"))?;
        match next {
            None => Ok(None),
            Some(Ok(object)) => Ok(Some(ServerFrame::from_object(object)?)),
            Some(Err(error)) => Err(anyhow!("bad frame from the daemon: {error}")),
        }
    }
}
