//! turn.undo (scope operate, unary, with a command id, local only): undo, redo, dry run and list of a
//! conversation's turns (`docs/undo.md`). The work is [`crate::undo::turns`] (the turns from the event log, the one
//! chosen, the answer) and [`crate::undo::turn::undo_turn`]; this handler resolves the conversation, holds its gate
//! and records undo_applied with the outcome.
//!
//! An undo that may write holds the conversation's gate ([`crate::conversation::ConversationHandle::begin_undo`])
//! from its plan to its record: no turn starts meanwhile (a prompt waits in the queue). Its outcome is stored under
//! the command id with undo_applied, so a repeat of the command id returns the first result and changes nothing.

use std::sync::Arc;

use efr_protocol::ids::{CommandId, ConversationId, Timestamp};
use efr_protocol::wire::{Origin, TurnUndoParams, TurnUndoResult, UndoRefusal, UndoRefusalKind};
use efr_protocol::{ErrorBody, ErrorCode};
use serde_json::{Value, json};

use super::conversation::of_tty;
use super::{params, result};
use crate::conversation::ConversationHandle;
use crate::server::RequestCtx;
use crate::undo::turn::{Done, refused};
use crate::undo::turns::{Chosen, NotChosen, Turns};
use efr_snapshot::SnapshotStore;
use efr_store::CommandRecord;

/// turn.undo.
///
/// # Errors
/// `not_found` for an unknown conversation or turn; `conflict` with data `{"refused": undo_refusal}` for a refusal;
/// `unavailable` when the store fails.
pub async fn turn_undo(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: TurnUndoParams = params(raw)?;
    if !params.list
        && !params.dry_run
        && let Some(stored) = ctx.daemon.store.command_outcome(params.command_id).await?
    {
        return serde_json::from_str(&stored.result)
            .map_err(|e| ErrorBody::internal(format!("a stored outcome does not parse: {e}")));
    }
    let conversation = conversation_of(ctx, params.conversation_id).await?;
    let turns = Turns::read(&ctx.daemon.store, conversation).await?;
    let store = Arc::clone(&ctx.daemon.snapshots);
    if params.list {
        return result(&turns.list(&store, conversation));
    }
    let chosen = turns
        .choose(&store, params.turn_id, params.dry_run, params.force, params.redo)
        .map_err(|not| match not {
            NotChosen::Unknown(turn_id) => ErrorBody::new(
                ErrorCode::NotFound,
                format!("conversation {conversation} has no turn {turn_id}"),
            ),
            NotChosen::Refused(refused) => refusal(&refused),
        })?;
    if params.dry_run {
        let done = run(&store, &chosen).await?;
        return result(&chosen.answer(conversation, done));
    }
    let handle = ctx.daemon.conversations.get(&ctx.daemon.deps(), conversation).await?;
    if !handle.begin_undo().await? {
        return Err(refusal(&refused(UndoRefusalKind::Running)));
    }
    let origin = super::conversation::origin_of(ctx);
    let command_id = params.command_id;
    // The undo runs to its record even when the request goes away (a closed connection): the gate opens only then.
    let undo = tokio::spawn(async move {
        let done = match run(&store, &chosen).await {
            Ok(done) => done,
            Err(error) => {
                handle.end_undo(Vec::new(), None).await?;
                return Err(error);
            }
        };
        record(&handle, command_id, conversation, chosen, done, origin).await
    });
    let answer = undo
        .await
        .map_err(|e| ErrorBody::internal(format!("the undo did not finish: {e}")))??;
    result(&answer)
}

/// Records an applied undo with its outcome under the command id, and opens the conversation's gate.
async fn record(
    handle: &ConversationHandle,
    command_id: CommandId,
    conversation: ConversationId,
    chosen: Chosen,
    done: Done,
    origin: Origin,
) -> Result<TurnUndoResult, ErrorBody> {
    let applied = chosen.applied(&done, origin);
    let answer = chosen.answer(conversation, done);
    let command = CommandRecord {
        command_id,
        method: "turn.undo".to_owned(),
        conversation_id: Some(conversation),
        result: serde_json::to_string(&answer)
            .map_err(|e| ErrorBody::internal(format!("cannot serialize an outcome: {e}")))?,
        at: Timestamp::now(),
    };
    handle.end_undo(applied.into_iter().collect(), Some(command)).await?;
    Ok(answer)
}

/// Runs the undo on a blocking thread; a refusal is a `conflict`.
async fn run(store: &Arc<SnapshotStore>, chosen: &Chosen) -> Result<Done, ErrorBody> {
    chosen
        .run(store)
        .await
        .map_err(|e| ErrorBody::internal(format!("the undo did not finish: {e}")))?
        .map_err(|refused| refusal(&refused))
}

fn refusal(refused: &UndoRefusal) -> ErrorBody {
    let message = match refused.kind {
        UndoRefusalKind::Off => "undo is off: the turn has no covered snapshots (config [undo] enabled)".to_owned(),
        UndoRefusalKind::Running => "a turn runs in the conversation: undo when it has ended".to_owned(),
        UndoRefusalKind::Undone => "the turn is undone already (redo re-applies it)".to_owned(),
        UndoRefusalKind::NotUndone => "no undone turn to redo".to_owned(),
        UndoRefusalKind::Nothing => "the turn changed nothing that undo covers".to_owned(),
        UndoRefusalKind::Conflicts => format!(
            "{} changed since the turn: force moves the current version to efr's trash and undoes it",
            refused.paths.join(", ")
        ),
        UndoRefusalKind::Unknown => "undo refused".to_owned(),
    };
    ErrorBody::new(ErrorCode::Conflict, message).with_data(json!({ "refused": refused }))
}

/// The named conversation, else the newest of the hello's terminal.
async fn conversation_of(ctx: &RequestCtx, named: Option<ConversationId>) -> Result<ConversationId, ErrorBody> {
    let store = &ctx.daemon.store;
    if let Some(id) = named {
        return match store.conversation(id).await.map_err(ErrorBody::from)? {
            Some(_) => Ok(id),
            None => Err(ErrorBody::new(ErrorCode::NotFound, format!("no conversation {id}"))),
        };
    }
    let tty = ctx.session.hello_info().tty.ok_or_else(|| {
        ErrorBody::invalid("bad params: name a conversation_id (this connection's hello named no tty)")
    })?;
    of_tty(store, &tty, 1, None)
        .await
        .map_err(ErrorBody::from)?
        .first()
        .map(|row| row.conversation_id)
        .ok_or_else(|| ErrorBody::new(ErrorCode::NotFound, format!("the terminal {tty} has no conversation")))
}
