//! Following a conversation as a client does: `conversation.subscribe`, then its events up to the one a test or a
//! bench waits for.
//!
//! The helpers take any [`Frames`]: efrd's Unix socket ([`Client`]) or another transport a bench speaks the protocol
//! over (a phone's WebSocket).

use std::future::Future;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use efr_protocol::frame::RequestId;
use serde_json::{Value, json};

use crate::client::{Client, StreamFrame};

/// The longest [`read_until`] reads in all, besides the transport's own wait for each frame
/// ([`FRAME_TIMEOUT`](crate::client::FRAME_TIMEOUT) on a [`Client`]): a stream that never stops but never brings
/// the awaited event fails too.
pub const UNTIL_TIMEOUT: Duration = Duration::from_secs(120);

/// The kinds of event that end a turn.
const TURN_ENDS: [&str; 4] = ["turn_completed", "turn_failed", "turn_interrupted", "turn_cancelled"];

/// A connection that sends requests and reads the frames of one of them.
pub trait Frames {
    /// Sends a request (`ack`: asks for `{"ack": id}` first); its id.
    fn send(&mut self, method: &str, params: Value, ack: bool) -> impl Future<Output = Result<RequestId>>;

    /// The next frame of request `id`.
    fn next_of(&mut self, id: RequestId) -> impl Future<Output = Result<StreamFrame>>;
}

impl Frames for Client {
    fn send(&mut self, method: &str, params: Value, ack: bool) -> impl Future<Output = Result<RequestId>> {
        Client::send(self, method, params, ack)
    }

    fn next_of(&mut self, id: RequestId) -> impl Future<Output = Result<StreamFrame>> {
        Client::next_of(self, id)
    }
}

/// Subscribes to `conversation` with ack, from after event `after_seq`; with no `after_seq` efrd sends a snapshot
/// instead of the log, which this reads too. Returns the subscription's id and the snapshot (`None` with
/// `after_seq`).
///
/// # Errors
/// When the transport fails, or the first frame is not the ack, or (without `after_seq`) the next is not the
/// snapshot.
pub async fn subscribe(
    conn: &mut impl Frames,
    conversation: &str,
    after_seq: Option<u64>,
) -> Result<(RequestId, Option<Value>)> {
    let mut params = json!({"conversation_id": conversation});
    if let Some(seq) = after_seq {
        params["after_seq"] = json!(seq);
    }
    let id = conn.send("conversation.subscribe", params, true).await?;
    match conn.next_of(id).await? {
        StreamFrame::Ack => {}
        other => bail!("conversation.subscribe: expected the ack first, got {other:?}"),
    }
    if after_seq.is_some() {
        return Ok((id, None));
    }
    match conn.next_of(id).await? {
        StreamFrame::Item(mut item) if item.get("snapshot").is_some() => Ok((id, Some(item["snapshot"].take()))),
        other => bail!("conversation.subscribe: expected the snapshot, got {other:?}"),
    }
}

/// The next event of subscription `id` (its item's `event`).
///
/// # Errors
/// When the transport fails or waits too long, or the next frame is not an event (the stream ended, an error, an
/// item without `event`).
pub async fn next_event(conn: &mut impl Frames, id: RequestId) -> Result<Value> {
    match conn.next_of(id).await? {
        StreamFrame::Item(mut item) => match item.get_mut("event").map(Value::take) {
            Some(event) if !event.is_null() => Ok(event),
            _ => bail!("an item that is not an event: {item}"),
        },
        other => bail!("expected an event, got {other:?}"),
    }
}

/// Reads events of subscription `id` until one of kind `kind` (included); a turn that ends before is an error.
///
/// # Errors
/// As [`read_until`].
pub async fn events_until(conn: &mut impl Frames, id: RequestId, kind: &str) -> Result<Vec<Value>> {
    read_until(conn, id, kind, false, |event| event["kind"] == kind).await
}

/// Reads events of subscription `id` until one of kind `kind` (included), through the ends of turns.
///
/// # Errors
/// As [`read_until`].
pub async fn events_through(conn: &mut impl Frames, id: RequestId, kind: &str) -> Result<Vec<Value>> {
    read_until(conn, id, kind, true, |event| event["kind"] == kind).await
}

/// Reads events of subscription `id` (the `event` of each item) until `done` holds for one; returns them all, that
/// one last. `what` names the awaited event in errors. A turn's end (`turn_completed`, `turn_failed`,
/// `turn_interrupted`, `turn_cancelled`) that `done` does not accept is an error unless `through_turn_ends`.
///
/// # Errors
/// When the transport fails or waits too long for one frame, when a frame is not an event (the stream ended, an
/// error, an item without `event`), when a turn ends first (see above), or when it all takes over
/// [`UNTIL_TIMEOUT`]. The error names `what` and the kinds read before.
pub async fn read_until(
    conn: &mut impl Frames,
    id: RequestId,
    what: &str,
    through_turn_ends: bool,
    mut done: impl FnMut(&Value) -> bool,
) -> Result<Vec<Value>> {
    let mut events = Vec::new();
    let read = async {
        loop {
            let event = next_event(conn, id).await?;
            let finished = done(&event);
            let turn_ended = TURN_ENDS.iter().any(|end| event["kind"] == *end);
            events.push(event);
            if finished {
                return Ok(());
            }
            if turn_ended && !through_turn_ends {
                bail!("the turn ended: {}", events.last().unwrap_or(&Value::Null));
            }
        }
    };
    let outcome = tokio::time::timeout(UNTIL_TIMEOUT, read)
        .await
        .unwrap_or_else(|_| Err(anyhow!("no {what} within {UNTIL_TIMEOUT:?}")));
    match outcome {
        Ok(()) => Ok(events),
        Err(error) => {
            let kinds: Vec<&str> = events
                .iter()
                .map(|event| event["kind"].as_str().unwrap_or("?"))
                .collect();
            Err(error.context(format!("waiting for {what} on subscription {id}, after {kinds:?}")))
        }
    }
}
