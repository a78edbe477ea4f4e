//! conversations.recent and conversations.watch (with the daemon's own events).
//!
//! conversations.recent reads the store's rows and orders them ([`crate::conversation::rows`]). conversations.watch
//! takes its receivers first — row changes ([`crate::conversation::watch`]) and daemon events
//! (`Daemon::daemon_events`) — then acks, then sends the snapshot read from the store, then every change and daemon
//! event as it comes. A change committed between the receivers and the snapshot comes twice (in the snapshot and as
//! `changed`), never zero times: a row is the row now, so a client applies it again harmlessly.
//!
//! A watch whose client does not read falls behind; when either receiver lags, the stream ends with `busy`
//! `{"overflow": true}` and the client watches again (docs/protocol.md, "Daemon events";
//! docs/adr/0005-daemon-events-on-the-watch.md).

use efr_protocol::streams::WatchItem;
use efr_protocol::wire::{ConversationsRecentParams, ConversationsWatchParams};
use efr_protocol::{ErrorBody, ErrorCode};
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use super::{params, result};
use crate::conversation::rows::{self, Asker};
use crate::conversation::watch::RowChange;
use crate::server::{RequestCtx, StreamSink};
use efr_store::PageRequest;

/// The default and the largest `limit` of both methods (spec: conversations.watch takes 20 by default, 50 at most;
/// conversations.recent does the same here).
pub const LIMIT_DEFAULT: u32 = 20;
/// See [`LIMIT_DEFAULT`].
pub const LIMIT_MAX: u32 = 50;

/// How many of the newest rows conversations.recent reads to find the rows of `pwd` and the terminal's current
/// conversation.
const RECENT_SCAN: u32 = 500;

fn limit(asked: Option<u32>) -> Result<u32, ErrorBody> {
    let limit = asked.unwrap_or(LIMIT_DEFAULT);
    if (1..=LIMIT_MAX).contains(&limit) {
        Ok(limit)
    } else {
        Err(ErrorBody::invalid(format!(
            "bad params: `limit` must be 1 to {LIMIT_MAX}, not {limit}"
        )))
    }
}

fn overflow() -> ErrorBody {
    ErrorBody::new(
        ErrorCode::Busy,
        "the watch fell too far behind; watch again for a new snapshot",
    )
    .with_data(json!({"overflow": true}))
}

/// conversations.recent: the rows of the scope of `pwd` first, each part newest first, at most `limit`.
///
/// # Errors
/// `invalid` for a `limit` outside 1 to 50 or a bad member; `unavailable` when the store fails.
pub async fn conversations_recent(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: ConversationsRecentParams = params(raw)?;
    let limit = limit(params.limit)?;
    if params.pwd.as_ref().is_some_and(|pwd| !pwd.is_absolute()) {
        return Err(ErrorBody::invalid("bad params: `pwd` must be an absolute path"));
    }
    let page = ctx
        .daemon
        .store
        .list_conversations(PageRequest {
            limit: RECENT_SCAN,
            after: None,
        })
        .await
        .map_err(ErrorBody::from)?;
    let registry = ctx.daemon.projects.current();
    let places = crate::routing::RoutingPlaces {
        registry: &registry,
        terminals: &ctx.daemon.terminals,
    };
    let asker = Asker {
        tty: params.tty.as_deref(),
        pwd: params.pwd.as_deref(),
        places: Some(&places),
    };
    result(&rows::recent(&page.conversations, asker, limit as usize))
}

/// conversations.watch: `snapshot`, then `changed`, `removed` and `daemon_event` items until the client cancels,
/// the connection closes or efrd stops.
///
/// # Errors
/// `invalid` for a bad `limit`; `unavailable` when the store fails; `busy` with `{"overflow": true}` for a watch that
/// fell behind.
pub async fn conversations_watch(ctx: &RequestCtx, raw: Option<Value>, sink: &mut StreamSink) -> Result<(), ErrorBody> {
    let params: ConversationsWatchParams = params(raw)?;
    let limit = limit(params.limit)?;
    // The receivers come first, so nothing committed after the snapshot's read is missed.
    let mut changes = ctx.daemon.rows.subscribe();
    let mut daemon_events = ctx.daemon.daemon_events.subscribe();
    if sink.ack().await.is_err() {
        return Ok(());
    }
    let page = ctx
        .daemon
        .store
        .list_conversations(PageRequest { limit, after: None })
        .await
        .map_err(ErrorBody::from)?;
    let snapshot = WatchItem::Snapshot {
        conversations: page
            .conversations
            .iter()
            .map(|s| rows::recent_row(s, Asker::default()))
            .collect(),
    };
    if sink.item(result(&snapshot)?).await.is_err() {
        return Ok(());
    }
    loop {
        let item = tokio::select! {
            change = changes.recv() => match change {
                Ok(change) => match &*change {
                    RowChange::Changed(summary) => WatchItem::Changed {
                        conversation: rows::recent_row(summary, Asker::default()),
                    },
                    RowChange::Removed(conversation_id) => WatchItem::Removed {
                        conversation_id: *conversation_id,
                    },
                },
                Err(RecvError::Lagged(_)) => return Err(overflow()),
                // The daemon is stopping: the stream ends normally.
                Err(RecvError::Closed) => return Ok(()),
            },
            event = daemon_events.recv() => match event {
                Ok(event) => WatchItem::DaemonEvent { event: (*event).clone() },
                Err(RecvError::Lagged(_)) => return Err(overflow()),
                Err(RecvError::Closed) => return Ok(()),
            },
        };
        if sink.item(result(&item)?).await.is_err() {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_is_20_by_default_and_1_to_50() {
        assert_eq!(limit(None).unwrap(), 20);
        assert_eq!(limit(Some(1)).unwrap(), 1);
        assert_eq!(limit(Some(50)).unwrap(), 50);
        for bad in [0, 51, u32::MAX] {
            let error = limit(Some(bad)).unwrap_err();
            assert_eq!(error.code, ErrorCode::Invalid);
            assert!(error.message.contains("`limit`"), "{}", error.message);
        }
    }
}
