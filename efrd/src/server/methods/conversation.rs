//! prompt.send, turn.interrupt, conversation.subscribe and conversations.list.

use efr_protocol::events::Event;
use efr_protocol::streams::SubscribeItem;
use efr_protocol::wire::{
    ApprovalRespondParams, ConversationContextParams, ConversationDiffParams, ConversationDiffResult,
    ConversationSubscribeParams, ConversationsListParams, ConversationsListResult, Origin, PromptSendParams,
    TurnInterruptParams,
};
use efr_protocol::{ErrorBody, ErrorCode};
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use super::{params, result};
use crate::conversation::history::corrupt_event;
use crate::conversation::{Live, summary_to_wire};
use crate::server::{RequestCtx, StreamSink};
use efr_patch::changes::CONVERSATION_DIFF_LINES;
use efr_store::{ConversationCursor, PageRequest};

/// How many events one read of the log takes while a subscriber catches up.
const REPLAY_PAGE: u32 = 500;

/// conversations.list: the default and the largest page.
const LIST_DEFAULT: u32 = 50;
const LIST_MAX: u32 = 200;

/// Where a request came from: a terminal on the Unix socket, a phone on the tailnet listener.
pub(super) fn origin_of(ctx: &RequestCtx) -> Origin {
    origin(ctx)
}

fn origin(ctx: &RequestCtx) -> Origin {
    match ctx.session.transport {
        efr_protocol::methods::Transport::Local => Origin::Terminal,
        efr_protocol::methods::Transport::Remote => Origin::Phone,
    }
}

/// prompt.send: to the named conversation; a terminal's prompt without one to the conversation of its scope key
/// (`crate::routing`; `new` starts a new one there); any other to a new one.
///
/// # Errors
/// `not_found` for an unknown conversation, `invalid` for settings outside the catalog or `new` with a conversation
/// id, `unavailable` when the store fails.
pub async fn prompt_send(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: PromptSendParams = params(raw)?;
    if params.text.trim().is_empty() {
        return Err(ErrorBody::invalid("bad params: `text` is empty"));
    }
    // A phone sits at no terminal of this computer (docs/protocol.md, "Remote devices").
    if origin(ctx) == Origin::Phone && params.context.as_ref().is_some_and(|c| c.tty.is_some()) {
        return Err(ErrorBody::invalid(
            "bad params: `context.tty`: a phone's prompt names no tty",
        ));
    }
    if params.new && params.conversation_id.is_some() {
        return Err(ErrorBody::invalid(
            "bad params: `new` asks for a new conversation, and `conversation_id` names one",
        ));
    }
    let deps = ctx.daemon.deps();
    // A repeat of a write goes to the conversation of its first answer, which the actor returns as stored.
    let repeat = match params.conversation_id {
        Some(_) => None,
        None => ctx.daemon.store.command_outcome(params.command_id).await.ok().flatten(),
    };
    if let Some(id) = repeat.and_then(|record| record.conversation_id) {
        let handle = ctx.daemon.conversations.get(&deps, id).await?;
        return result(&handle.prompt(params, origin(ctx)).await?);
    }
    let terminal = params
        .context
        .as_ref()
        .and_then(|c| c.tty.clone().map(|tty| (tty, c.clone())));
    let sent = match (params.conversation_id, terminal) {
        (Some(id), _) => {
            ctx.daemon
                .conversations
                .get(&deps, id)
                .await?
                .prompt(params, origin(ctx))
                .await?
        }
        (None, None) => {
            ctx.daemon
                .conversations
                .create(&deps)
                .prompt(params, origin(ctx))
                .await?
        }
        (None, Some((tty, context))) => routed(ctx, &deps, params, &tty, &context).await?,
    };
    // A prompt is input: a presence.set without a conversation reaches this one from now on.
    ctx.daemon.conversations.note_input(sent.conversation_id);
    result(&sent)
}

/// A terminal's prompt without a conversation id: routed by scope (the rules are `crate::routing`'s), one decision
/// at a time; the conversation becomes the terminal's once the prompt is taken.
async fn routed(
    ctx: &RequestCtx,
    deps: &crate::conversation::Deps,
    params: PromptSendParams,
    tty: &str,
    context: &efr_protocol::wire::PromptContext,
) -> Result<efr_protocol::wire::PromptSendResult, ErrorBody> {
    let terminals = &ctx.daemon.terminals;
    let _one = terminals.deciding.lock().await;
    let registry = ctx.daemon.projects.current();
    let router = router(ctx, deps, &registry);
    let new = params.new;
    let routing = crate::routing::route_prompt(router, tty, context, new).await?;
    let sent = routing
        .handle
        .prompt_routed(params, origin(ctx), Some(routing.routed.clone()))
        .await?;
    routing.attach(terminals);
    Ok(sent)
}

/// conversation.resume: the owner is `routing::resume`, one decision at a time with routed prompts.
///
/// # Errors
/// `invalid` (no tty, a phone), `not_found`, `unavailable`.
pub async fn resume(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: efr_protocol::wire::ConversationResumeParams = params(raw)?;
    if origin(ctx) == Origin::Phone {
        return Err(ErrorBody::new(
            ErrorCode::Invalid,
            "bad params: a phone sits at no terminal of this computer: conversation.resume is a terminal's",
        ));
    }
    let deps = ctx.daemon.deps();
    let terminals = &ctx.daemon.terminals;
    let _one = terminals.deciding.lock().await;
    let registry = ctx.daemon.projects.current();
    result(&crate::routing::resume(router(ctx, &deps, &registry), params).await?)
}

/// What routing needs of the daemon, with `registry` (the project registry in force for this decision).
fn router<'a>(
    ctx: &'a RequestCtx,
    deps: &'a crate::conversation::Deps,
    registry: &'a crate::projects::Registry,
) -> crate::routing::Router<'a> {
    crate::routing::Router {
        store: &ctx.daemon.store,
        conversations: &ctx.daemon.conversations,
        deps,
        terminals: &ctx.daemon.terminals,
        registry,
        idle_after: ctx.daemon.config().routing.idle_after(),
    }
}

/// conversation.delete: the owner is `conversation::delete`; the asking terminal is the hello's.
///
/// # Errors
/// `not_found`, `busy` (data `{"busy": "turn"}` or `{"busy": "undo"}`), `conflict`, `unavailable`.
pub async fn delete(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: efr_protocol::wire::ConversationDeleteParams = params(raw)?;
    let tty = ctx.session.hello_info().tty;
    let deleted =
        crate::conversation::delete::delete(&ctx.daemon.conversations, &ctx.daemon.deps(), params, tty, origin(ctx))
            .await?;
    result(&deleted)
}

/// turn.interrupt.
///
/// # Errors
/// `not_found` for an unknown conversation, `conflict` when no turn runs.
pub async fn turn_interrupt(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: TurnInterruptParams = params(raw)?;
    let handle = ctx
        .daemon
        .conversations
        .get(&ctx.daemon.deps(), params.conversation_id)
        .await?;
    result(&handle.interrupt(params, origin(ctx)).await?)
}

/// approval.respond: the answer of a question, from any connection with the approve scope; the first answer wins.
///
/// # Errors
/// `not_found` when no question waits for the call, `conflict` when it was answered before, `invalid` for
/// allow_always, `forbidden` for a phone and a local_only question.
pub async fn approval_respond(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: ApprovalRespondParams = params(raw)?;
    let handle = ctx
        .daemon
        .conversations
        .get(&ctx.daemon.deps(), params.conversation_id)
        .await?;
    result(&handle.respond(params, origin(ctx)).await?)
}

/// conversations.list: newest first, in pages (`cursor` continues from `next_cursor`).
///
/// # Errors
/// `invalid` for a bad cursor or limit.
pub async fn conversations_list(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: ConversationsListParams = params(raw)?;
    let limit = params.limit.unwrap_or(LIST_DEFAULT);
    if !(1..=LIST_MAX).contains(&limit) {
        return Err(ErrorBody::invalid(format!(
            "bad params: `limit` must be 1 to {LIST_MAX}"
        )));
    }
    let after = params
        .cursor
        .as_deref()
        .map(str::parse::<ConversationCursor>)
        .transpose()
        .map_err(|e| ErrorBody::invalid(format!("bad params: `cursor`: {e}")))?;
    let Some(tty) = params.tty else {
        let page = ctx
            .daemon
            .store
            .list_conversations(PageRequest { limit, after })
            .await
            .map_err(ErrorBody::from)?;
        return result(&ConversationsListResult {
            conversations: page.conversations.iter().map(summary_to_wire).collect(),
            next_cursor: page.next.map(|c| c.to_string()),
        });
    };
    // With a tty (spec): only that terminal's conversations, its current (newest) one first, in one page.
    // Read past `limit`, so that a current conversation older than the page still comes first.
    let mut conversations = of_tty(&ctx.daemon.store, &tty, LIST_MAX as usize, after)
        .await
        .map_err(ErrorBody::from)?;
    // The terminal's current conversation (routing by scope) comes first; the rest stay newest first.
    if let Some(current) = ctx.daemon.terminals.current(&tty)
        && let Some(at) = conversations.iter().position(|c| c.conversation_id == current)
    {
        let row = conversations.remove(at);
        conversations.insert(0, row);
    }
    conversations.truncate(limit as usize);
    result(&ConversationsListResult {
        conversations,
        next_cursor: None,
    })
}

/// The conversations of `tty`, newest first, at most `limit`: the store's pages are read until `limit` rows match,
/// at most [`TTY_SCAN`] rows in all.
pub(super) async fn of_tty(
    store: &efr_store::Store,
    tty: &str,
    limit: usize,
    after: Option<ConversationCursor>,
) -> Result<Vec<efr_protocol::wire::ConversationSummary>, efr_store::StoreError> {
    let mut conversations = Vec::new();
    let mut cursor = after;
    let mut scanned = 0;
    loop {
        let page = store
            .list_conversations(PageRequest {
                limit: TTY_PAGE,
                after: cursor,
            })
            .await?;
        scanned += page.conversations.len();
        conversations.extend(
            page.conversations
                .iter()
                .map(summary_to_wire)
                .filter(|row| row.tty.as_deref() == Some(tty)),
        );
        cursor = page.next;
        if conversations.len() >= limit || cursor.is_none() || scanned >= TTY_SCAN {
            break;
        }
    }
    conversations.truncate(limit);
    Ok(conversations)
}

/// The store page read at a time for a `tty` filter.
const TTY_PAGE: u32 = 500;
/// The most conversations a `tty` filter looks through.
const TTY_SCAN: usize = 10_000;

fn overflow() -> ErrorBody {
    ErrorBody::new(
        ErrorCode::Busy,
        "the subscriber fell too far behind; subscribe again with after_seq",
    )
    .with_data(json!({"overflow": true}))
}

fn event_item(event: &Event) -> Result<Value, ErrorBody> {
    result(&SubscribeItem::Event(Box::new(event.clone())))
}

/// conversation.subscribe: a snapshot (or, with `after_seq`, the events after it from the log), then every event
/// live, in order, with no gap and no repeat.
///
/// # Errors
/// `not_found` for an unknown conversation; `busy` with `{"overflow": true}` for a subscriber that fell behind.
pub async fn subscribe(ctx: &RequestCtx, raw: Option<Value>, sink: &mut StreamSink) -> Result<(), ErrorBody> {
    let params: ConversationSubscribeParams = params(raw)?;
    let handle = ctx
        .daemon
        .conversations
        .get(&ctx.daemon.deps(), params.conversation_id)
        .await?;
    let mut subscription = handle.subscribe().await?;
    // Drafts from now on, after the running turn's message and reasoning so far (from offset 0).
    let drafts = params.drafts.then(|| subscription.drafts.subscribe());
    // The subscription is live: events after `last_seq` reach its receiver from now on.
    if sink.ack().await.is_err() {
        return Ok(());
    }
    match params.after_seq {
        None => {
            let item = result(&SubscribeItem::Snapshot(Box::new(subscription.snapshot.clone())))?;
            if sink.item(item).await.is_err() {
                return Ok(());
            }
        }
        Some(after) => {
            // Catch up from the log up to the point of the subscription; the receiver holds the rest.
            let mut seq = after;
            while seq < subscription.last_seq {
                let rows = ctx
                    .daemon
                    .store
                    .events_after(params.conversation_id, seq, REPLAY_PAGE)
                    .await
                    .map_err(|e| ErrorBody::new(ErrorCode::Unavailable, format!("the event store failed: {e}")))?;
                if rows.is_empty() {
                    break;
                }
                for row in rows.into_iter().take_while(|row| row.seq <= subscription.last_seq) {
                    seq = row.seq;
                    let event: Value =
                        serde_json::from_str(&row.body).map_err(|e| ErrorBody::internal(corrupt_event(row.seq, &e)))?;
                    if sink.item(json!({"event": event})).await.is_err() {
                        return Ok(());
                    }
                }
            }
        }
    }
    let floor = params.after_seq.unwrap_or(0).max(subscription.last_seq);
    loop {
        // Events first: a subscriber that reads slowly is busy with them while its drafts merge.
        let live = tokio::select! {
            biased;
            live = subscription.events.recv() => live,
            draft = next_draft(drafts.as_deref()) => {
                // A draft is never counted against the subscriber's bound, and never ends its stream.
                if sink.item(result(&SubscribeItem::Draft(draft))?).await.is_err() {
                    return Ok(());
                }
                continue;
            }
        };
        match live {
            Ok(Live::StoreFailed(error)) => return Err(error),
            Ok(Live::Event(committed)) => {
                if committed.event.seq <= floor {
                    continue;
                }
                // A client that does not read holds its events in efrd's memory: past the bound it resubscribes.
                if !sink.room().await {
                    return Err(overflow());
                }
                if sink
                    .counted_item(event_item(&committed.event)?, committed.bytes)
                    .await
                    .is_err()
                {
                    return Ok(());
                }
            }
            Err(RecvError::Lagged(_)) => return Err(overflow()),
            // The actor stopped (efrd is stopping): the stream ends normally.
            Err(RecvError::Closed) => return Ok(()),
        }
    }
}

/// The next draft of a subscriber that asked for drafts; never for one that did not.
async fn next_draft(queue: Option<&crate::conversation::drafts::DraftQueue>) -> efr_protocol::wire::Draft {
    match queue {
        Some(queue) => queue.next().await,
        None => std::future::pending().await,
    }
}

/// conversation.diff: what a turn changed in its project, its first snapshot against its last.
///
/// The conversation is the named one, else the newest conversation of the hello's terminal; the turn is the named
/// one, else the newest turn of the conversation that started and ended (not a cancelled one).
///
/// # Errors
/// `not_found` when there is no such conversation or turn, or the turn has no snapshots (it had no project).
pub async fn diff(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: ConversationDiffParams = params(raw)?;
    let store = &ctx.daemon.store;
    if let Some(id) = params.conversation_id
        && store.conversation(id).await.map_err(ErrorBody::from)?.is_none()
    {
        return Err(ErrorBody::new(ErrorCode::NotFound, format!("no conversation {id}")));
    }
    // A named turn is enough (spec: absent conversation_id means the conversation of the named turn).
    let turn_id = match params.turn_id {
        Some(turn_id) => turn_id,
        None => {
            let conversation = match params.conversation_id {
                Some(id) => id,
                None => {
                    let tty = ctx.session.hello_info().tty.ok_or_else(|| {
                        ErrorBody::invalid(
                            "bad params: name a conversation_id or a turn_id (this connection's hello named no tty)",
                        )
                    })?;
                    of_tty(store, &tty, 1, None)
                        .await
                        .map_err(ErrorBody::from)?
                        .first()
                        .map(|row| row.conversation_id)
                        .ok_or_else(|| {
                            ErrorBody::new(ErrorCode::NotFound, format!("the terminal {tty} has no conversation"))
                        })?
                }
            };
            let mut seq = 0;
            let mut newest = None;
            loop {
                let rows = store
                    .events_after(conversation, seq, REPLAY_PAGE)
                    .await
                    .map_err(ErrorBody::from)?;
                let Some(last) = rows.last() else { break };
                seq = last.seq;
                for row in &rows {
                    if matches!(row.kind.as_str(), "turn_completed" | "turn_failed" | "turn_interrupted") {
                        newest = row.turn_id.or(newest);
                    }
                }
            }
            newest.ok_or_else(|| ErrorBody::new(ErrorCode::NotFound, "the conversation has no finished turn"))?
        }
    };
    let (changes, diff) =
        crate::turn::snapshots::turn_diff(&ctx.daemon.snapshots, turn_id, params.stat, CONVERSATION_DIFF_LINES).await?;
    result(&ConversationDiffResult { turn_id, changes, diff })
}

/// conversation.context (scope read, no command id): what fills the model's context of a conversation.
///
/// # Errors
/// `not_found` for an unknown conversation, `invalid` for bad params or a model outside models.list.
pub async fn context(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: ConversationContextParams = params(raw)?;
    let handle = ctx
        .daemon
        .conversations
        .get(&ctx.daemon.deps(), params.conversation_id)
        .await?;
    result(&handle.context(params.model).await?)
}

/// conversation.compact (scope operate, a command id): compacts the conversation's context now, with the user's
/// optional focus (docs/context.md, "Compaction").
///
/// # Errors
/// `not_found` for an unknown conversation, `busy` while a turn, an undo or a compaction runs, `conflict` with
/// nothing to compact, `unavailable` when the summary's model call fails (the conversation is as it was).
pub async fn compact(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: efr_protocol::wire::ConversationCompactParams = params(raw)?;
    let handle = ctx
        .daemon
        .conversations
        .get(&ctx.daemon.deps(), params.conversation_id)
        .await?;
    result(&handle.compact(params).await?)
}
