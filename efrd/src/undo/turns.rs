//! The turns of a conversation as turn.undo sees them, replayed from its event log: their titles, modes, whether
//! each started and ended, and the commands undo cannot reverse. From them: the list of turns, the turn an undo
//! without a turn named takes, and the answer of an undo ([`Chosen::answer`]) with its undo_applied event.

use std::collections::HashMap;
use std::sync::Arc;

use efr_protocol::events::{Event, EventBody, UndoApplied};
use efr_protocol::ids::{ConversationId, TurnId};
use efr_protocol::wire::{Mode, Origin, TurnUndoResult, UndoAction, UndoEntry, UndoRefusal, UndoRefusalKind, UndoTurn};
use efr_snapshot::SnapshotStore;
use efr_store::{Store, StoreError};
use serde_json::Value;

use super::turn::{Ask, Done, refused, state_of, undo_turn};

/// How many events one read of the log takes.
const PAGE: u32 = 500;

/// The longest title of a turn, in characters.
const TITLE_CHARS: usize = 72;

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

/// What the log says of one turn.
#[derive(Debug, Default)]
struct TurnInfo {
    title: Option<String>,
    mode: Option<Mode>,
    started: bool,
    ended: bool,
    commands: Vec<String>,
}

/// The turns of a conversation, oldest first.
#[derive(Debug, Default)]
pub struct Turns {
    order: Vec<TurnId>,
    info: HashMap<TurnId, TurnInfo>,
}

/// Why no turn was chosen.
#[derive(Debug)]
pub enum NotChosen {
    /// The conversation has no turn of that id.
    Unknown(TurnId),
    /// No turn was named and none fits: the refusal says why.
    Refused(UndoRefusal),
}

/// The turn an undo (or redo, or dry run) takes, with what its answer needs from the log.
#[derive(Debug, Clone)]
pub struct Chosen {
    /// What is asked of the turn.
    pub ask: Ask,
    /// A turn runs in the conversation (this one or another).
    pub running: bool,
    title: Option<String>,
    commands: Vec<String>,
}

impl Turns {
    /// Replays the event log of `conversation`.
    ///
    /// # Errors
    /// The store's.
    pub async fn read(store: &Store, conversation: ConversationId) -> Result<Self, StoreError> {
        let mut turns = Self::default();
        let mut seq = 0;
        loop {
            let rows = store.events_after(conversation, seq, PAGE).await?;
            let Some(last) = rows.last() else { break };
            seq = last.seq;
            for row in &rows {
                let Some(turn_id) = row.turn_id else { continue };
                if !turns.info.contains_key(&turn_id) {
                    turns.order.push(turn_id);
                }
                let info = turns.info.entry(turn_id).or_default();
                if let Ok(event) = serde_json::from_str::<Event>(&row.body) {
                    info.take(event.body);
                }
            }
        }
        Ok(turns)
    }

    /// The turns, newest first, each with its undo state: turn.undo's `list`.
    #[must_use]
    pub fn list(&self, store: &SnapshotStore, conversation: ConversationId) -> TurnUndoResult {
        let turns = self
            .order
            .iter()
            .rev()
            .map(|turn_id| {
                let info = &self.info[turn_id];
                let (undone, stopped) = state_of(store, *turn_id);
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
        TurnUndoResult {
            turns,
            ..TurnUndoResult::empty(conversation)
        }
    }

    /// The turn `named`, else the default one (`default_turn`), with what is asked of it.
    ///
    /// # Errors
    /// [`NotChosen::Unknown`] for a turn the conversation lacks; [`NotChosen::Refused`] when none is named and none
    /// fits (`not_undone` for a redo, `undone` when the newest is undone already, else `nothing`).
    pub fn choose(
        &self,
        store: &SnapshotStore,
        named: Option<TurnId>,
        dry_run: bool,
        force: bool,
        redo: bool,
    ) -> Result<Chosen, NotChosen> {
        let turn_id = match named {
            Some(turn_id) if self.info.contains_key(&turn_id) => turn_id,
            Some(turn_id) => return Err(NotChosen::Unknown(turn_id)),
            None => self.default_turn(store, redo).ok_or_else(|| {
                NotChosen::Refused(refused(if redo {
                    UndoRefusalKind::NotUndone
                } else if self.newest_is_undone(store) {
                    UndoRefusalKind::Undone
                } else {
                    UndoRefusalKind::Nothing
                }))
            })?,
        };
        let info = &self.info[&turn_id];
        Ok(Chosen {
            ask: Ask {
                turn_id,
                dry_run,
                force,
                redo,
            },
            // A turn that runs in the conversation, this one or another, still writes: undo waits for it.
            running: self.info.values().any(|one| one.started && !one.ended),
            title: info.title.clone(),
            commands: if redo { Vec::new() } else { info.commands.clone() },
        })
    }

    /// Whether the newest ended turn with snapshots is undone (and its undo finished): an undo without a turn named
    /// is then refused as `undone`, not `nothing`.
    fn newest_is_undone(&self, store: &SnapshotStore) -> bool {
        self.order
            .iter()
            .rev()
            .find(|turn_id| self.info[*turn_id].ended && store.load(&format!("{turn_id}-pre")).is_ok())
            .is_some_and(|turn_id| state_of(store, *turn_id) == (true, false))
    }

    /// The newest ended turn with covered snapshots that is not undone; with `redo`, the newest undone one.
    fn default_turn(&self, store: &SnapshotStore, redo: bool) -> Option<TurnId> {
        self.order.iter().rev().copied().find(|turn_id| {
            let info = &self.info[turn_id];
            let (undone, stopped) = state_of(store, *turn_id);
            let covered = store.load(&format!("{turn_id}-pre")).is_ok();
            info.ended && covered && (if redo { undone || stopped } else { !undone || stopped })
        })
    }
}

impl TurnInfo {
    /// Takes what one event of the turn says.
    fn take(&mut self, body: EventBody) {
        match body {
            EventBody::PromptQueued(queued) => {
                let line = queued.text.lines().next().unwrap_or_default().trim().to_owned();
                self.title = Some(line.chars().take(TITLE_CHARS).collect());
            }
            EventBody::TurnStarted(started) => {
                self.started = true;
                self.mode = started.settings.map(|settings| settings.mode);
            }
            EventBody::TurnCompleted(_)
            | EventBody::TurnFailed(_)
            | EventBody::TurnInterrupted(_)
            | EventBody::TurnCancelled(_) => self.ended = true,
            EventBody::ToolCallStarted(call) => {
                if let Some(command) = call.input.get("command").and_then(Value::as_str)
                    && OUTSIDE_REACH.iter().any(|words| command.contains(words))
                {
                    self.commands.push(command.to_owned());
                }
            }
            _ => {}
        }
    }
}

impl Chosen {
    /// Runs [`undo_turn`] on a blocking thread.
    ///
    /// # Errors
    /// The blocking task's, when it panicked or was cancelled; inside, the undo's refusal.
    pub async fn run(&self, store: &Arc<SnapshotStore>) -> Result<Result<Done, UndoRefusal>, tokio::task::JoinError> {
        let (worker, ask, running) = (Arc::clone(store), self.ask, self.running);
        // No collection runs during an undo: it reads the turn's snapshots and writes the trash.
        let hold = store.hold().await;
        tokio::task::spawn_blocking(move || {
            let done = undo_turn(&worker, ask, running);
            drop(hold);
            done
        })
        .await
    }

    /// The undo_applied event of `done`, when it wrote (or stopped midway).
    #[must_use]
    pub fn applied(&self, done: &Done, origin: Origin) -> Option<EventBody> {
        let undo_id = done.undo_id.clone().filter(|_| done.applied || done.stopped)?;
        Some(EventBody::UndoApplied(UndoApplied {
            undone_turn_id: self.ask.turn_id,
            undo_id,
            redo: self.ask.redo,
            origin,
            restored: done.restored,
            trashed: done.trashed,
            deleted: done.deleted,
            conflicts: done.conflicts,
            not_covered: done.not_covered,
            refs: Some(done.refs.iter().filter(|one| one.applied).count() as u64).filter(|n| *n > 0),
            trash: done.trash.as_ref().map(|path| path.display().to_string()),
            stopped: done.stopped,
        }))
    }

    /// The result of an undo (or a dry run): its entries, then the commands undo cannot reverse, at most
    /// [`TurnUndoResult::MAX_ENTRIES`].
    #[must_use]
    pub fn answer(self, conversation: ConversationId, done: Done) -> TurnUndoResult {
        let mut entries = done.entries;
        entries.extend(self.commands.into_iter().map(|command| UndoEntry {
            action: UndoAction::Command,
            path: command,
            reason: None,
        }));
        let entries_more = entries.len().saturating_sub(TurnUndoResult::MAX_ENTRIES) as u64;
        entries.truncate(TurnUndoResult::MAX_ENTRIES);
        TurnUndoResult {
            turn_id: Some(self.ask.turn_id),
            title: self.title,
            undo_id: done.undo_id,
            trash: done.trash.map(|path| path.display().to_string()),
            applied: done.applied,
            stopped: done.stopped,
            resumed: done.resumed,
            entries,
            entries_more,
            refs: done.refs,
            notes: done.notes,
            ..TurnUndoResult::empty(conversation)
        }
    }
}
