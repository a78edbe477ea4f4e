//! efrd's end of `efr-proxy`'s control socket: requests out, their answers back by id
//! (`efr_protocol::internal::proxy`: the public protocol's framing and request frames, no `hello`).
//!
//! One task owns the socket. A request gets an id, goes out as `{"id", "method", "params"}`, and waits for its
//! `item` and `end` (or `error`). When the socket closes (the proxy ended), every waiting request fails and
//! [`Control::closed`] fires.

use std::collections::HashMap;

use efr_protocol::codec::FrameCodec;
use efr_protocol::frame::{ClientFrame, Request, ServerFrame};
use futures::{SinkExt, StreamExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::net::UnixStream;
use tokio::sync::{mpsc, oneshot};
use tokio_util::codec::Framed;
use tokio_util::sync::CancellationToken;

/// The largest control frame: the messages are small (a plan's lists, its refusals).
const MAX_FRAME: usize = 1024 * 1024;

/// Requests waiting to be sent.
const QUEUE: usize = 64;

type Answer = Result<Value, String>;

/// A handle to one proxy's control socket. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Control {
    requests: mpsc::Sender<(String, Value, oneshot::Sender<Answer>)>,
    closed: CancellationToken,
}

impl Control {
    /// Starts the task that owns `stream`.
    #[must_use]
    pub fn start(stream: UnixStream) -> Self {
        let (requests, queue) = mpsc::channel(QUEUE);
        let closed = CancellationToken::new();
        tokio::spawn(serve(stream, queue, closed.clone()));
        Self { requests, closed }
    }

    /// Sends `method` with `params` and waits for its one item.
    ///
    /// # Errors
    /// The proxy answered with an error (its message), or the socket closed before the answer.
    pub async fn call<P: Serialize, T: DeserializeOwned>(&self, method: &str, params: &P) -> Result<T, String> {
        let params = serde_json::to_value(params).map_err(|e| format!("cannot encode {method}: {e}"))?;
        let (tx, rx) = oneshot::channel();
        self.requests
            .send((method.to_owned(), params, tx))
            .await
            .map_err(|_| "efr-proxy's control socket is closed".to_owned())?;
        let item = rx
            .await
            .map_err(|_| "efr-proxy's control socket closed before it answered".to_owned())??;
        serde_json::from_value(item).map_err(|e| format!("efr-proxy's answer to {method} does not parse: {e}"))
    }

    /// Fires when the socket has closed (the proxy ended or broke the protocol).
    #[must_use]
    pub fn closed(&self) -> CancellationToken {
        self.closed.clone()
    }
}

/// The task: writes requests, reads answers, until the socket closes or every handle is gone.
async fn serve(
    stream: UnixStream,
    mut queue: mpsc::Receiver<(String, Value, oneshot::Sender<Answer>)>,
    closed: CancellationToken,
) {
    let mut framed = Framed::new(stream, FrameCodec::new(MAX_FRAME));
    let mut waiting: HashMap<u64, (Option<Value>, oneshot::Sender<Answer>)> = HashMap::new();
    let mut next_id: u64 = 1;
    let why = loop {
        tokio::select! {
            request = queue.recv() => {
                let Some((method, params, answer)) = request else {
                    break "efrd dropped the control socket".to_owned();
                };
                let id = next_id;
                next_id += 1;
                let frame = ClientFrame::Request(Request { id, method, params: Some(params), ack: false });
                if let Err(error) = framed.send(frame).await {
                    let _ = answer.send(Err(format!("cannot write to efr-proxy: {error}")));
                    break format!("cannot write to efr-proxy: {error}");
                }
                waiting.insert(id, (None, answer));
            }
            frame = framed.next() => {
                let object = match frame {
                    Some(Ok(object)) => object,
                    Some(Err(error)) => break format!("efr-proxy's control frames broke: {error}"),
                    None => break "efr-proxy closed its control socket".to_owned(),
                };
                match ServerFrame::from_object(object) {
                    Ok(ServerFrame::Item { id, item }) => {
                        if let Some((slot, _)) = waiting.get_mut(&id) {
                            *slot = Some(item);
                        }
                    }
                    Ok(ServerFrame::End { id }) => {
                        if let Some((item, answer)) = waiting.remove(&id) {
                            let _ = answer.send(item.ok_or_else(|| "efr-proxy ended the request without an answer".to_owned()));
                        }
                    }
                    Ok(ServerFrame::Error { id: Some(id), error }) => {
                        if let Some((_, answer)) = waiting.remove(&id) {
                            let _ = answer.send(Err(error.message));
                        }
                    }
                    Ok(ServerFrame::Error { id: None, error }) => {
                        break format!("efr-proxy refused a control frame: {}", error.message);
                    }
                    Ok(ServerFrame::Ack(_)) => {}
                    Err(error) => break format!("efr-proxy sent a frame that does not parse: {error}"),
                }
            }
        }
    };
    tracing::debug!(reason = %why, "efr-proxy's control socket ended");
    for (_, (_, answer)) in waiting.drain() {
        let _ = answer.send(Err(why.clone()));
    }
    closed.cancel();
}
