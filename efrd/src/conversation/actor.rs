//! The actor of one conversation: its queue of prompts, its running turn, its log's next seq, its subscribers.
//!
//! Rules it keeps:
//! - An event is numbered, committed, and only then broadcast; a commit that fails changes nothing (not the seq, not
//!   the state) and the request that caused it gets `unavailable`.
//! - A write's outcome is committed with its events under its command id; the same command id again returns the
//!   stored outcome and records nothing (also when two arrive at once: the store keeps the first).
//! - One turn runs at a time; queued prompts run in order as turns end.
//!
//! Parts: `commit` (numbering, committing and broadcasting events; stored outcomes), `context`
//! (conversation.context), `prompt` (prompt.send), `instructions` (the inputs of a turn's prompt), `questions`
//! (approval questions, input.respond, shell.status, shell.interrupt) and `turns` (starting the next queued prompt,
//! turn.interrupt, a turn's end).

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::PoisonError;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use efr_protocol::events::{
    ApprovalExpired, ApprovalRequested, ApprovalResolved, ConversationCreated, Event, EventBody, PromptQueued,
    TurnFailed, TurnInterruptRequested, TurnStarted,
};
use efr_protocol::ids::{CallId, CommandId, ConversationId, Timestamp, TurnId};
use efr_protocol::wire::{
    ApprovalDecision, ApprovalRespondParams, ApprovalRespondResult, ConversationStatus,
    ConversationSummary as WireSummary, InputRespondParams, InputRespondResult, Origin, Overridden, PromptSendParams,
    PromptSendResult, RunningTurn, ShellInterruptParams, ShellInterruptResult, ShellStatusResult, Snapshot,
    TurnInterruptParams, TurnInterruptResult, TurnSettings,
};
use efr_protocol::{ErrorBody, ErrorCode};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use super::recorder::StartGate;
use super::{Command, Committed, ConversationHandle, Live, MAILBOX, Registry, Subscription, history, settings};
use crate::models::Models;
use crate::sandbox::plan::Layout;
use crate::tools::shell::{ShellKind, ShellOptions, ShellSlot};
use crate::turn::env::ToolEnv;
use crate::turn::sink::{Answer, Sink};
use crate::turn::{self, TurnOutcome, TurnPlan};
use efr_model::HistoryItem;
use efr_policy::Question;
use efr_snapshot::SnapshotStore;
use efr_store::{CommandRecord, Commit, ConversationSummary, EventRow, Store, StoreError};

/// The options of a conversation's hidden shell: efrd's environment without the keys efrd holds (a shell call, direct
/// or contained, never sees them).
fn shell_options(kind: ShellKind, cwd: PathBuf, work_root: PathBuf) -> ShellOptions {
    let mut options = ShellOptions::new(kind, cwd, work_root);
    options.env = crate::turn::contained::without_held_secrets(options.env);
    options
}

/// The user's home folder ([`crate::config::Roots::home`]; `/` without one), where a conversation without a working
/// directory starts its shell.
fn home_dir(roots: &crate::config::Roots) -> PathBuf {
    roots.home.clone().unwrap_or_else(|| PathBuf::from("/"))
}

mod background;
mod commit;
mod compact;
pub(super) use background::BackgroundBegin;
use commit::CommitRefused;
pub(in crate::conversation) use commit::decode_outcome;
pub(super) use compact::CompactBegin;
mod context;
mod delete;
pub(in crate::conversation) use delete::{DeleteAsk, DeleteBegun};
mod presence;
pub(crate) use presence::PresenceSet;
mod instructions;
mod jobs;
mod prompt;
mod questions;
mod resume;
mod retire;
mod start;
mod steer;
mod surface;
mod turns;
mod undo;
mod view;
pub use view::summary_to_wire;

/// What an actor needs from the daemon.
#[derive(Debug, Clone)]
pub struct Deps {
    /// The event store.
    pub store: Store,
    /// The config: each use reads the one in force.
    pub config: Arc<crate::config::ConfigState>,
    /// Providers, keys and the catalog.
    pub models: Arc<Models>,
    /// Where hidden shells keep their private files (a folder in the runtime root).
    pub shell_root: PathBuf,
    /// The turns' snapshots of their projects (a folder in the state root).
    pub snapshots: Arc<SnapshotStore>,
    /// The sandbox of contained calls (the cached probe).
    pub sandbox: Arc<crate::sandbox::SandboxState>,
    /// efr's four roots: masked in contained calls; `$SCRATCH` lives in the state root.
    pub roots: crate::config::Roots,
    /// The broadcast of row changes that conversations.watch sends (called after each commit).
    pub rows: Arc<super::watch::RowChanges>,
    /// The daemon's count of turns that run now, in every conversation: a running turn keeps an idle efrd from
    /// exiting. The actor counts its turn's start and end.
    pub running_turns: Arc<AtomicUsize>,
    /// The turns that run now in each project, daemon-wide: a change made while two ran may be either's.
    pub project_turns: Arc<crate::turn::overlap::ProjectTurns>,
    /// The memory that the call walks of every turn may keep for their changes' line counts.
    pub call_texts: Arc<crate::turn::call_snapshots::CallTextPool>,
    /// efrd's background jobs.
    pub jobs: Arc<crate::jobs::Jobs>,
}

impl Deps {
    /// The config in force.
    #[must_use]
    pub fn config(&self) -> Arc<crate::config::Config> {
        self.config.current()
    }
}

/// An approval question that waits for its answer.
#[derive(Debug)]
struct PendingApproval {
    turn_id: TurnId,
    local_only: bool,
    /// The question offers an always rule (its exit's `always`), so allow_always may answer it.
    always: bool,
    reply: oneshot::Sender<Answer>,
}

/// A prompt that waits for its turn.
#[derive(Debug)]
struct Queued {
    turn_id: TurnId,
    text: String,
    settings: TurnSettings,
    overridden: Overridden,
    origin: Origin,
    /// The desktop of the prompt's terminal, whose control socket a `desktop` grant of the turn binds.
    desktop: Option<efr_protocol::wire::Desktop>,
    /// The prompt as the user typed it, without efr's preamble: auto's exit judges read it.
    user_prompt: String,
    /// A turn that a job's notice woke (no prompt: the notices are its input).
    woken: bool,
    /// Where it was typed (its tty finds the newest prompt of a terminal; resent steers take it by default).
    context: Option<efr_protocol::wire::PromptContext>,
    /// The settings it asked for (resent steers ask for the same).
    asked: Option<efr_protocol::wire::PromptSettings>,
}

impl Queued {
    /// The terminal it was typed at.
    fn tty(&self) -> Option<&str> {
        self.context.as_ref().and_then(|c| c.tty.as_deref())
    }
}

/// The turn that runs.
#[derive(Debug)]
struct Running {
    turn_id: TurnId,
    started_at: Timestamp,
    settings: TurnSettings,
    cancel: CancellationToken,
    interrupt_requested: bool,
    /// The turn's last context draft: how full the context was before or after its last model call.
    context: Option<efr_protocol::wire::ContextFill>,
    /// A compaction runs in the turn, started by this.
    compacting: Option<efr_protocol::wire::CompactTrigger>,
    /// The steers that no model call read yet, in order (`steer.rs`).
    steers: Vec<steer::Steer>,
    /// Set when a steer is added to `steers`, cleared when a model call takes them: the turn's
    /// [`Recorder`](crate::conversation::Recorder) asks the actor for steers only when it is set, so a model call
    /// with none waiting (nearly all) goes out without a round trip through the mailbox.
    steering: Arc<std::sync::atomic::AtomicBool>,
    /// The model answered without a tool call and no steer waited: the turn makes no more model calls.
    answered: bool,
    /// The context of the turn's prompt.
    prompt_context: Option<efr_protocol::wire::PromptContext>,
    /// The settings that the turn's prompt asked for.
    asked: Option<efr_protocol::wire::PromptSettings>,
    /// Its end event (turn_completed, failed, interrupted or cancelled) is committed: the turn runs no more, though
    /// its task may still be on its way out (`Command::TurnEnded` takes it from `running`). Read through
    /// [`Actor::live_turn`].
    ended: bool,
    /// The commit of its start failed (`start.rs`): the turn is stopped and leaves nothing behind when it ends.
    discarded: bool,
}

pub(super) struct Actor {
    deps: Deps,
    id: ConversationId,
    /// `None` until the conversation's first commit.
    summary: Option<ConversationSummary>,
    /// The watched facts of the summary row as last committed (the stored row's for a loaded conversation), against
    /// which conversations.watch hears of a change (`watch.rs`).
    row_facts: Option<super::watch::RowFacts>,
    last_seq: u64,
    /// The model's copy of the conversation (crate::compact::history).
    history: crate::compact::ModelHistory,
    /// What the log says of the context, kept as events are committed (conversation.context).
    context_log: history::ContextLog,
    queue: VecDeque<Queued>,
    running: Option<Running>,
    events: broadcast::Sender<Live>,
    approvals: HashMap<CallId, PendingApproval>,
    answered: HashSet<CallId>,
    shell: Arc<tokio::sync::Mutex<ShellSlot>>,
    open_calls: super::shell::OpenShellCalls,
    /// What the model was told: the pinned instructions, the mode and instruction files it knows (crate::prompt).
    prompt: crate::prompt::PromptState,
    /// The sizes and files of the last turn's prompt, for conversation.context; `None` before the first turn.
    last_prompt: Option<crate::prompt::TurnPrompt>,
    /// Set when an event of the stored log does not parse: the words prompts are refused with.
    corrupt: Option<String>,
    /// A turn that ended without a terminal event in the log (a commit failed): closed with turn_failed as soon as
    /// the store takes it, before anything else.
    unclosed: Option<TurnId>,
    /// The store's last commit failure.
    store_failure: Option<ErrorBody>,
    /// A turn.undo writes the conversation's files: no turn starts (`undo.rs`).
    undoing: bool,
    /// A conversation.compact runs: no turn starts (`compact.rs`).
    compacting: bool,
    /// The surface changes of its turns and their questions (`surface.rs`).
    surface: crate::turn::surface::Book,
    /// The user's presence (`presence.rs`): present until presence.set says away; a loaded conversation takes its
    /// log's last presence_changed.
    presence: efr_protocol::wire::Presence,
    /// Counts the changes of `presence`: an away timer acts only in the epoch it started in.
    presence_epoch: u64,
    /// The user's inputs so far (prompts and answers): an unanswered question's timer holds the count it started
    /// with, and takes the user as away only if none came since (`presence.rs`).
    inputs: u64,
    /// The away timers of the questions of this presence epoch; they end with it.
    away_timers: presence::TimerRound,
    /// The unanswered timers since the last input or change of presence; they end with them.
    unanswered_timers: presence::TimerRound,
    /// Notices of background jobs the model has not heard yet: they go with the next turn (`jobs.rs`).
    job_notices: Vec<crate::jobs::Notice>,
    /// The settings of the last turn that started: a turn that a notice wakes runs with them, at most auto.
    last_settings: Option<(efr_protocol::wire::TurnSettings, efr_protocol::wire::Overridden)>,
    /// The turns that started while this actor ran: prompt.withdraw of one of them is `conflict`.
    started: HashSet<TurnId>,
    /// The command ids of the conversation's last prompts ([`history::RECENT_PROMPTS`], the log's when it was
    /// loaded): a retry of one (its reply was lost) is not started before the store refused it (`start.rs`).
    recent_prompts: VecDeque<CommandId>,
    /// The drafts of the running turn and the subscribers that take them (`super::drafts`).
    drafts: Arc<super::drafts::DraftHub>,
    /// The call.background previews whose token may still be confirmed, by token (`background.rs`).
    previews: HashMap<String, background::Preview>,
    /// A conversation.delete began: no prompt is taken and no turn starts (`delete.rs`).
    deleting: bool,
    /// A delete with `stop` waits for the running turn and the compaction to end.
    pending_delete: Option<delete::DeleteReply>,
    /// The conversation was deleted: the actor stops after the command that did it.
    gone: bool,
}

impl Actor {
    /// A conversation that does not exist yet.
    pub(super) fn new(deps: Deps, id: ConversationId) -> Self {
        // `[daemon] subscriber_queue`: how far a subscriber may fall behind before its stream ends with overflow.
        let capacity = deps.config().daemon.subscriber_queue.max(1);
        let shell_root = deps.shell_root.clone();
        let kind = shell_kind(deps.config().shell.program);
        let home = home_dir(&deps.roots);
        Self {
            deps,
            id,
            summary: None,
            row_facts: None,
            last_seq: 0,
            history: crate::compact::ModelHistory::default(),
            context_log: history::ContextLog::default(),
            queue: VecDeque::new(),
            running: None,
            events: broadcast::channel(capacity).0,
            approvals: HashMap::new(),
            answered: HashSet::new(),
            open_calls: super::shell::OpenShellCalls::default(),
            prompt: crate::prompt::PromptState::default(),
            last_prompt: None,
            corrupt: None,
            unclosed: None,
            store_failure: None,
            undoing: false,
            compacting: false,
            surface: crate::turn::surface::Book::default(),
            presence: efr_protocol::wire::Presence::Present,
            presence_epoch: 0,
            inputs: 0,
            away_timers: presence::TimerRound::default(),
            unanswered_timers: presence::TimerRound::default(),
            job_notices: Vec::new(),
            last_settings: None,
            started: HashSet::new(),
            recent_prompts: VecDeque::new(),
            drafts: Arc::default(),
            previews: HashMap::new(),
            deleting: false,
            pending_delete: None,
            gone: false,
            shell: Arc::new(tokio::sync::Mutex::new(ShellSlot::new(shell_options(
                kind, home, shell_root,
            )))),
        }
    }

    /// A conversation from the store: its summary, its last seq and the history its turns left. A command that a
    /// previous efrd left running ended with that efrd's hidden shell: its `shell_command_ended` (how `closed`) is
    /// recorded now, so that no client shows it running forever.
    pub(super) async fn load(deps: Deps, id: ConversationId) -> Result<Self, ErrorBody> {
        let summary = deps
            .store
            .conversation(id)
            .await
            .map_err(ErrorBody::from)?
            .ok_or_else(|| ErrorBody::new(ErrorCode::NotFound, format!("no conversation {id}")))?;
        let rebuilt = history::rebuild(&deps.store, id).await?;
        let mut actor = Self::new(deps, id);
        actor.row_facts = Some(super::watch::RowFacts::of(&summary));
        actor.summary = Some(summary);
        actor.history = rebuilt.history;
        actor.context_log = rebuilt.context;
        actor.last_seq = rebuilt.last_seq;
        actor.drafts.set_seq(rebuilt.last_seq);
        actor.open_calls.push_notices(rebuilt.notices);
        actor.corrupt = rebuilt.corrupt;
        actor.surface = rebuilt.surface;
        actor.presence = rebuilt.presence.unwrap_or(efr_protocol::wire::Presence::Present);
        actor.recent_prompts = rebuilt.recent_prompts;
        if !rebuilt.left_running.is_empty() {
            let ends = rebuilt
                .left_running
                .into_iter()
                .map(|(call_id, _)| {
                    let ended = efr_protocol::events::ShellCommandEnded {
                        call_id,
                        how: efr_protocol::wire::How::Closed,
                        exit_code: None,
                        notes: Vec::new(),
                    };
                    (None, EventBody::ShellCommandEnded(ended))
                })
                .collect();
            actor.commit(ends, None).await.map_err(ErrorBody::from)?;
        }
        actor.recover_jobs(rebuilt.jobs).await?;
        Ok(actor)
    }

    /// Starts the actor's task and returns its handle; `registry` is where the handle is kept, which the actor
    /// leaves when it retires.
    pub(super) fn spawn(self, registry: Registry) -> ConversationHandle {
        let (tx, rx) = mpsc::channel(MAILBOX);
        let handle = ConversationHandle { id: self.id, tx };
        let weak = handle.tx.downgrade();
        tokio::spawn(self.run(rx, weak, registry));
        handle
    }

    async fn run(mut self, mut rx: mpsc::Receiver<Command>, me: mpsc::WeakSender<Command>, registry: Registry) {
        let idle = Duration::from_secs(self.deps.config().daemon.conversation_idle_secs.max(1));
        loop {
            let command = tokio::select! {
                command = rx.recv() => command,
                // Woken after each idle period, also when a subscriber left since (that sends no command).
                () = tokio::time::sleep(idle) => {
                    if self.may_retire() && self.retire(&mut rx, &me, &registry) {
                        // Its hidden shell goes with it; the log keeps everything else.
                        self.shell.lock().await.close().await;
                        return;
                    }
                    continue;
                }
            };
            let Some(command) = command else { break };
            self.handle(command, &me).await;
            if self.gone {
                self.leave(&mut rx, &me, &registry).await;
                return;
            }
        }
        debug!(conversation = %self.id, "conversation actor stopped");
    }

    /// One command from the mailbox: each has its method.
    async fn handle(&mut self, command: Command, me: &mpsc::WeakSender<Command>) {
        match command {
            Command::Prompt {
                params,
                origin,
                routed,
                reply,
            } => {
                let answer = self
                    .prompt_unless_corrupt(*params, origin, routed.map(|r| *r), me)
                    .await;
                let _ = reply.send(answer);
                self.start_next(me).await;
            }
            Command::Subscribe { reply } => {
                let _ = reply.send(self.subscription());
            }
            Command::Summary { reply } => {
                let _ = reply.send(self.summary.is_some().then(|| self.wire_summary()));
            }
            Command::Interrupt { params, origin, reply } => {
                let _ = reply.send(self.interrupt(*params, origin).await);
            }
            Command::Steer { params, origin, reply } => {
                let _ = reply.send(self.steer(*params, origin).await);
                // A late steer may have queued a prompt.
                self.start_next(me).await;
            }
            Command::Withdraw { params, origin, reply } => {
                let _ = reply.send(self.withdraw(*params, origin).await);
            }
            Command::Steers { turn_id, last, reply } => {
                let _ = reply.send(self.take_steers(turn_id, last).await);
            }
            Command::Record {
                turn_id,
                bodies,
                history,
                reply,
            } => {
                let _ = reply.send(self.record(turn_id, bodies, history).await);
            }
            Command::Ask {
                turn_id,
                call_id,
                question,
                reply,
            } => {
                self.ask(turn_id, call_id, *question, reply, me).await;
            }
            Command::Expire { call_id } => self.expire(call_id, false).await,
            Command::ExpireAway { call_id, epoch } => self.expire_away(call_id, epoch).await,
            Command::Unanswered { call_id, epoch, inputs } => self.unanswered(call_id, epoch, inputs, me).await,
            Command::Resume {
                command_id,
                attached,
                result,
                reply,
            } => {
                let _ = reply.send(self.record_resume(command_id, *attached, *result).await);
            }
            Command::Presence { set, reply } => {
                let _ = reply.send(self.set_presence(*set, me).await);
            }
            Command::InputRespond { params, reply } => {
                let _ = reply.send(self.input_respond(*params).await);
            }
            Command::ShellStatus { reply } => {
                let _ = reply.send(self.shell_status().await);
            }
            Command::Context { model, reply } => {
                let _ = reply.send(self.context(model).await);
            }
            Command::ShellInterrupt { params, reply } => {
                let _ = reply.send(self.shell_interrupt(*params).await);
            }
            Command::Respond { params, origin, reply } => {
                let _ = reply.send(self.respond(*params, origin, me).await);
            }
            Command::TurnEnded { turn_id, outcome } => {
                self.turn_ended(turn_id, outcome).await;
                self.start_next(me).await;
                self.resume_delete();
            }
            Command::DeleteBegin { ask, reply } => self.begin_delete(&ask, reply),
            Command::DeleteEnd { origin, command, reply } => {
                let _ = reply.send(self.end_delete(origin, *command).await);
            }
            Command::DeleteAbort => {
                self.abort_delete();
                self.start_next(me).await;
            }
            Command::SurfaceChanged {
                turn_id,
                call_id,
                changes,
                held,
                reply,
            } => {
                let _ = reply.send(self.surface_changed(turn_id, call_id, changes, held).await);
            }
            Command::SurfaceReport { turn_id, reply } => {
                let _ = reply.send(self.surface_report(turn_id).await);
            }
            Command::SurfaceRespond { params, origin, reply } => {
                let _ = reply.send(self.surface_respond(*params, origin).await);
            }
            Command::UndoBegin { reply } => {
                let _ = reply.send(self.begin_undo());
            }
            Command::UndoEnd { bodies, command, reply } => {
                let _ = reply.send(self.end_undo(bodies, command).await);
                self.start_next(me).await;
            }
            Command::Compacted {
                turn_id,
                compaction,
                history,
                reply,
            } => {
                let _ = reply.send(self.compacted_in_turn(turn_id, *compaction, *history).await);
            }
            Command::Draft { turn_id, part } => self.draft(turn_id, &part),
            Command::JobNotice { notice } => {
                self.job_notice(notice);
                self.start_next(me).await;
            }
            Command::BackgroundBegin { params, reply } => {
                let _ = reply.send(self.begin_background(*params, me).await);
            }
            Command::BackgroundEnd {
                command_id,
                outcome,
                reply,
            } => {
                let _ = reply.send(self.end_background(command_id, *outcome).await);
            }
            Command::CompactBegin { params, reply } => {
                let _ = reply.send(self.begin_compact(*params).await);
            }
            Command::CompactEnd {
                command_id,
                outcome,
                reply,
            } => {
                let _ = reply.send(self.end_compact(command_id, *outcome).await);
                self.start_next(me).await;
                self.resume_delete();
            }
        }
    }
}

fn status_name(status: ConversationStatus) -> &'static str {
    status.as_str()
}

/// The hidden shell's kind for `[shell] program`.
fn shell_kind(program: crate::config::ShellProgram) -> ShellKind {
    match program {
        crate::config::ShellProgram::Bash => ShellKind::Bash,
        crate::config::ShellProgram::Zsh => ShellKind::Zsh,
    }
}
