//! turn.undo (scope operate, unary, with a command id, local only): undo, redo, dry run and list of a
//! conversation's turns (`docs/undo.md`). The work is [`crate::undo::turn::undo_turn`]; this handler resolves the
//! conversation and the turn from the event log, adds the commands undo cannot reverse, and records undo_applied.
//!
//! An undo that may write holds the conversation's gate ([`crate::conversation::ConversationHandle::begin_undo`])
//! from its plan to its record: no turn starts meanwhile (a prompt waits in the queue). Its outcome is stored under
//! the command id with undo_applied, so a repeat of the command id returns the first result and changes nothing.

use std::collections::HashMap;
use std::sync::Arc;

use efr_protocol::events::{EventBody, UndoApplied};
use efr_protocol::ids::{ConversationId, TurnId};
use efr_protocol::wire::{
    Mode, TurnUndoParams, TurnUndoResult, UndoAction, UndoEntry, UndoRefusal, UndoRefusalKind, UndoTurn,
};
use efr_protocol::{ErrorBody, ErrorCode};
use serde_json::{Value, json};

use super::conversation::of_tty;
use super::{params, result};
use crate::server::RequestCtx;
use crate::undo::turn::{Ask, Done, state_of, undo_turn};
use efr_snapshot::SnapshotStore;
use efr_store::CommandRecord;

/// How many events one read of the log takes.
const PAGE: u32 = 500;

/// The longest title of a turn, in characters.
const TITLE_CHARS: usize = 72;

/// What the log says of one turn.
#[derive(Debug, Default)]
struct TurnInfo {
    title: Option<String>,
    mode: Option<Mode>,
    started: bool,
    ended: bool,
    commands: Vec<String>,
}

/// The words of a shell command that reach outside efr's snapshots: undo cannot reverse them.
const OUTSIDE_REACH: &[&str] = &[
    "git push",
    "npm publish",
    "cargo publish",
    "apt install",
    "apt-get install",
    "dnf install",
    "pip install",
    "pipx install",
    "npm install -g",
    "cargo install",
    "brew install",
    "docker push",
    "curl -X POST",
    "curl -X PUT",
    "curl -X DELETE",
    "gh pr create",
    "gh release",
];

fn refused(kind: UndoRefusalKind) -> UndoRefusal {
    UndoRefusal {
        kind,
        paths: Vec::new(),
        more: 0,
    }
}

/// turn.undo.
///
/// # Errors
/// `not_found` for an unknown conversation or turn; `conflict` with data `{"refused": undo_refusal}` for a refusal;
/// `unavailable` when the store fails.
pub async fn turn_undo(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: TurnUndoParams = params(raw)?;
    if !params.list && !params.dry_run {
        let stored = ctx
            .daemon
            .store
            .command_outcome(params.command_id)
            .await
            .map_err(ErrorBody::from)?;
        if let Some(stored) = stored {
            return serde_json::from_str(&stored.result)
                .map_err(|e| ErrorBody::internal(format!("a stored outcome does not parse: {e}")));
        }
    }
    let conversation = conversation_of(ctx, params.conversation_id).await?;
    let turns = read_turns(ctx, conversation).await?;
    let store = Arc::clone(&ctx.daemon.snapshots);
    if params.list {
        let listed = turns
            .order
            .iter()
            .rev()
            .map(|turn_id| {
                let info = &turns.info[turn_id];
                let (undone, stopped) = state_of(&store, *turn_id);
                let covered = store.load(&format!("{turn_id}-pre")).is_ok_and(|pre| pre.covered);
                UndoTurn {
                    turn_id: *turn_id,
                    title: info.title.clone(),
                    auto: matches!(info.mode, Some(Mode::Auto | Mode::Full)),
                    full: info.mode == Some(Mode::Full),
                    undoable: info.ended && covered && !undone,
                    undone,
                    stopped,
                    ended: info.ended,
                }
            })
            .collect();
        return result(&TurnUndoResult {
            turns: listed,
            ..empty(conversation)
        });
    }
    let turn_id = match params.turn_id {
        Some(turn_id) if turns.info.contains_key(&turn_id) => turn_id,
        Some(turn_id) => {
            return Err(ErrorBody::new(
                ErrorCode::NotFound,
                format!("conversation {conversation} has no turn {turn_id}"),
            ));
        }
        None => default_turn(&store, &turns, params.redo).ok_or_else(|| {
            refusal(&refused(if params.redo {
                UndoRefusalKind::NotUndone
            } else if newest_is_undone(&store, &turns) {
                UndoRefusalKind::Undone
            } else {
                UndoRefusalKind::Nothing
            }))
        })?,
    };
    let info = &turns.info[&turn_id];
    // A turn that runs in the conversation, this one or another, still writes: undo waits for it.
    let running = turns.info.values().any(|one| one.started && !one.ended);
    let ask = Ask {
        turn_id,
        dry_run: params.dry_run,
        force: params.force,
        redo: params.redo,
    };
    let title = info.title.clone();
    let commands = if params.redo { Vec::new() } else { info.commands.clone() };
    if params.dry_run {
        let done = run(&store, ask, running).await?.map_err(|refused| refusal(&refused))?;
        return result(&answer(conversation, turn_id, title, done, commands));
    }
    let handle = ctx.daemon.conversations.get(&ctx.daemon.deps(), conversation).await?;
    if !handle.begin_undo().await? {
        return Err(refusal(&refused(UndoRefusalKind::Running)));
    }
    let origin = super::conversation::origin_of(ctx);
    let (command_id, redo) = (params.command_id, params.redo);
    // The undo runs to its record even when the request goes away (a closed connection): the gate opens only then.
    let undo = tokio::spawn(async move {
        let done = match run(&store, ask, running).await {
            Ok(Ok(done)) => done,
            Ok(Err(refused)) => {
                handle.end_undo(Vec::new(), None).await?;
                return Err(refusal(&refused));
            }
            Err(error) => {
                handle.end_undo(Vec::new(), None).await?;
                return Err(error);
            }
        };
        let applied = done
            .undo_id
            .clone()
            .filter(|_| done.applied || done.stopped)
            .map(|undo_id| {
                EventBody::UndoApplied(UndoApplied {
                    undone_turn_id: turn_id,
                    undo_id,
                    redo,
                    origin,
                    restored: done.restored,
                    trashed: done.trashed,
                    deleted: done.deleted,
                    conflicts: done.conflicts,
                    not_covered: done.not_covered,
                    refs: Some(done.refs.iter().filter(|one| one.applied).count() as u64).filter(|n| *n > 0),
                    trash: done.trash.as_ref().map(|path| path.display().to_string()),
                    stopped: done.stopped,
                })
            });
        let answer = answer(conversation, turn_id, title, done, commands);
        let command = CommandRecord {
            command_id,
            method: "turn.undo".to_owned(),
            conversation_id: Some(conversation),
            result: serde_json::to_string(&answer)
                .map_err(|e| ErrorBody::internal(format!("cannot serialize an outcome: {e}")))?,
            at: efr_protocol::ids::Timestamp::now(),
        };
        handle.end_undo(applied.into_iter().collect(), Some(command)).await?;
        Ok(answer)
    });
    let answer = undo
        .await
        .map_err(|e| ErrorBody::internal(format!("the undo did not finish: {e}")))??;
    result(&answer)
}

/// Runs [`undo_turn`] on a blocking thread.
async fn run(store: &Arc<SnapshotStore>, ask: Ask, running: bool) -> Result<Result<Done, UndoRefusal>, ErrorBody> {
    let worker = Arc::clone(store);
    tokio::task::spawn_blocking(move || undo_turn(&worker, ask, running))
        .await
        .map_err(|e| ErrorBody::internal(format!("the undo did not finish: {e}")))
}

/// The result of an undo (or a dry run): its entries, then the commands undo cannot reverse, at most
/// [`TurnUndoResult::MAX_ENTRIES`].
fn answer(
    conversation: ConversationId,
    turn_id: TurnId,
    title: Option<String>,
    done: Done,
    commands: Vec<String>,
) -> TurnUndoResult {
    let mut entries = done.entries;
    entries.extend(commands.into_iter().map(|command| UndoEntry {
        action: UndoAction::Command,
        path: command,
        reason: None,
    }));
    let entries_more = entries.len().saturating_sub(TurnUndoResult::MAX_ENTRIES) as u64;
    entries.truncate(TurnUndoResult::MAX_ENTRIES);
    TurnUndoResult {
        turn_id: Some(turn_id),
        title,
        undo_id: done.undo_id,
        trash: done.trash.map(|path| path.display().to_string()),
        applied: done.applied,
        stopped: done.stopped,
        resumed: done.resumed,
        entries,
        entries_more,
        refs: done.refs,
        notes: done.notes,
        ..empty(conversation)
    }
}

fn empty(conversation_id: ConversationId) -> TurnUndoResult {
    TurnUndoResult {
        conversation_id,
        turn_id: None,
        title: None,
        undo_id: None,
        trash: None,
        applied: false,
        stopped: false,
        resumed: false,
        entries: Vec::new(),
        entries_more: 0,
        refs: Vec::new(),
        notes: Vec::new(),
        turns: Vec::new(),
    }
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

/// Whether the newest ended turn with snapshots is undone (and its undo finished): an undo without a turn named
/// is then refused as `undone`, not `nothing`.
fn newest_is_undone(store: &SnapshotStore, turns: &Turns) -> bool {
    turns
        .order
        .iter()
        .rev()
        .find(|turn_id| turns.info[*turn_id].ended && store.load(&format!("{turn_id}-pre")).is_ok())
        .is_some_and(|turn_id| state_of(store, *turn_id) == (true, false))
}

/// The newest ended turn with covered snapshots that is not undone; with `redo`, the newest undone one.
fn default_turn(store: &SnapshotStore, turns: &Turns, redo: bool) -> Option<TurnId> {
    turns.order.iter().rev().copied().find(|turn_id| {
        let info = &turns.info[turn_id];
        let (undone, stopped) = state_of(store, *turn_id);
        let covered = store.load(&format!("{turn_id}-pre")).is_ok();
        info.ended && covered && (if redo { undone || stopped } else { !undone || stopped })
    })
}

/// The turns of a conversation, oldest first.
#[derive(Debug, Default)]
struct Turns {
    order: Vec<TurnId>,
    info: HashMap<TurnId, TurnInfo>,
}

async fn read_turns(ctx: &RequestCtx, conversation: ConversationId) -> Result<Turns, ErrorBody> {
    let store = &ctx.daemon.store;
    let mut turns = Turns::default();
    let mut seq = 0;
    loop {
        let rows = store
            .events_after(conversation, seq, PAGE)
            .await
            .map_err(ErrorBody::from)?;
        let Some(last) = rows.last() else { break };
        seq = last.seq;
        for row in &rows {
            let Some(turn_id) = row.turn_id else { continue };
            if !turns.info.contains_key(&turn_id) {
                turns.order.push(turn_id);
            }
            let info = turns.info.entry(turn_id).or_default();
            let Ok(event) = serde_json::from_str::<efr_protocol::events::Event>(&row.body) else {
                continue;
            };
            match event.body {
                EventBody::PromptQueued(queued) => {
                    let line = queued.text.lines().next().unwrap_or_default().trim().to_owned();
                    info.title = Some(line.chars().take(TITLE_CHARS).collect());
                }
                EventBody::TurnStarted(started) => {
                    info.started = true;
                    info.mode = started.settings.map(|settings| settings.mode);
                }
                EventBody::TurnCompleted(_)
                | EventBody::TurnFailed(_)
                | EventBody::TurnInterrupted(_)
                | EventBody::TurnCancelled(_) => info.ended = true,
                EventBody::ToolCallStarted(call) => {
                    if let Some(command) = call.input.get("command").and_then(Value::as_str)
                        && OUTSIDE_REACH.iter().any(|words| command.contains(words))
                    {
                        info.commands.push(command.to_owned());
                    }
                }
                _ => {}
            }
        }
    }
    Ok(turns)
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
