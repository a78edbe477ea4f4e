//! efrd's end of a helper's control socket (`efr-proxy`, `efr-bus-proxy`): requests out, their answers back by id
//! (`efr_protocol::internal::proxy` and `bus_proxy`: the public protocol's framing and request frames, no `hello`).
//!
//! One task owns the socket. A request gets an id, goes out as `{"id", "method", "params"}`, and waits for its
//! `item` and `end` (or `error`). When the socket closes (the helper ended), every waiting request fails and
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

/// A handle to one helper's control socket. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Control {
    /// The helper's program name, for messages.
    name: &'static str,
    requests: mpsc::Sender<(String, Value, oneshot::Sender<Answer>)>,
    closed: CancellationToken,
}

impl Control {
    /// Starts the task that owns `stream`, the control socket of the helper `name` (such as `efr-proxy`).
    #[must_use]
    pub fn start(name: &'static str, stream: UnixStream) -> Self {
        let (requests, queue) = mpsc::channel(QUEUE);
        let closed = CancellationToken::new();
        tokio::spawn(serve(name, stream, queue, closed.clone()));
        Self { name, requests, closed }
    }

    /// Sends `method` with `params` and waits for its one item.
    ///
    /// # Errors
    /// The helper answered with an error (its message), or the socket closed before the answer.
    pub async fn call<P: Serialize, T: DeserializeOwned>(&self, method: &str, params: &P) -> Result<T, String> {
        let params = serde_json::to_value(params).map_err(|e| format!("cannot encode {method}: {e}"))?;
        let (tx, rx) = oneshot::channel();
        self.requests
            .send((method.to_owned(), params, tx))
            .await
            .map_err(|_| format!("{}'s control socket is closed", self.name))?;
        let item = rx
            .await
            .map_err(|_| format!("{}'s control socket closed before it answered", self.name))??;
        serde_json::from_value(item).map_err(|e| format!("{}'s answer to {method} does not parse: {e}", self.name))
    }

    /// Fires when the socket has closed (the helper ended or broke the protocol).
    #[must_use]
    pub fn closed(&self) -> CancellationToken {
        self.closed.clone()
    }
}

/// The task: writes requests, reads answers, until the socket closes or every handle is gone.
async fn serve(
    name: &'static str,
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
                    let _ = answer.send(Err(format!("cannot write to {name}: {error}")));
                    break format!("cannot write to {name}: {error}");
                }
                waiting.insert(id, (None, answer));
            }
            frame = framed.next() => {
                let object = match frame {
                    Some(Ok(object)) => object,
                    Some(Err(error)) => break format!("{name}'s control frames broke: {error}"),
                    None => break format!("{name} closed its control socket"),
                };
                match ServerFrame::from_object(object) {
                    Ok(ServerFrame::Item { id, item }) => {
                        if let Some((slot, _)) = waiting.get_mut(&id) {
                            *slot = Some(item);
                        }
                    }
                    Ok(ServerFrame::End { id }) => {
                        if let Some((item, answer)) = waiting.remove(&id) {
                            let _ = answer.send(item.ok_or_else(|| format!("{name} ended the request without an answer")));
                        }
                    }
                    Ok(ServerFrame::Error { id: Some(id), error }) => {
                        if let Some((_, answer)) = waiting.remove(&id) {
                            let _ = answer.send(Err(error.message));
                        }
                    }
                    Ok(ServerFrame::Error { id: None, error }) => {
                        break format!("{name} refused a control frame: {}", error.message);
                    }
                    Ok(ServerFrame::Ack(_)) => {}
                    Err(error) => break format!("{name} sent a frame that does not parse: {error}"),
                }
            }
        }
    };
    tracing::debug!(helper = name, reason = %why, "a helper's control socket ended");
    for (_, (_, answer)) in waiting.drain() {
        let _ = answer.send(Err(why.clone()));
    }
    closed.cancel();
}
