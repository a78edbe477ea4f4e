//! Conversations: one actor per live conversation, the registry that finds or loads them, and the handles that
//! talk to them.
//!
//! # Why an actor
//!
//! Everything that changes a conversation — a prompt, an interrupt, an event of its running turn — goes through its
//! actor, one message at a time. The actor numbers the events (`seq`), commits them to the store, and only then
//! broadcasts them, so ordering is simple and no lock guards conversation state (docs/architecture.md, "Conversations
//! and turns").
//!
//! # Subscribers
//!
//! A subscription is taken inside the actor: the actor answers with the snapshot (or the last seq) and a broadcast
//! receiver at the same point of the log, so the subscriber sees every later event exactly once. A subscriber that
//! falls more than `[daemon] subscriber_queue` events (1024 by default) behind loses its place (`Lagged`); its stream ends with `busy` and
//! `{"overflow": true}` and it resumes with `after_seq` — events are never dropped silently.

mod actor;
pub mod delete;
pub mod drafts;
pub mod history;
pub mod jobs_log;
pub mod preamble;
mod presence;
mod recorder;
pub mod recovery;
pub mod rows;
mod settings;
pub(crate) mod shell;
pub mod watch;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use efr_protocol::events::{Event, EventBody};
use efr_protocol::ids::{CallId, ConversationId, TurnId};
use efr_protocol::wire::{
    ApprovalRespondParams, ApprovalRespondResult, ConversationContextResult, InputRespondParams, InputRespondResult,
    Origin, PresenceSetResult, PromptSendParams, PromptSendResult, ShellInterruptParams, ShellInterruptResult,
    ShellStatusResult, Snapshot, TurnInterruptParams, TurnInterruptResult,
};
use efr_protocol::{ErrorBody, ErrorCode};
use tokio::sync::{broadcast, mpsc, oneshot};

use crate::turn::sink::Answer;
use efr_policy::Question;

pub use self::actor::{Deps, summary_to_wire};
pub use self::recorder::Recorder;
pub use self::settings::resolve as resolve_settings;

/// How many commands may wait for an actor.
const MAILBOX: usize = 256;

/// A live subscription: where it starts and the receiver of every later event.
#[derive(Debug)]
pub struct Subscription {
    /// The conversation's state at the point of the subscription.
    pub snapshot: Snapshot,
    /// The last committed seq at that point: the receiver yields exactly the events after it.
    pub last_seq: u64,
    /// Every event committed after `last_seq`, in order, and the store's failures.
    pub events: broadcast::Receiver<Live>,
    /// The conversation's drafts, for a subscriber that asked for them.
    pub drafts: Arc<drafts::DraftHub>,
}

/// What a subscription hears live.
#[derive(Debug, Clone)]
pub enum Live {
    /// An event was committed.
    Event(Committed),
    /// A commit failed (a full disk, a read-only database): the events a turn made then are not in the log, and a
    /// subscriber must be told rather than wait for them. The error is the store's, as `unavailable`.
    StoreFailed(ErrorBody),
}

/// One committed event as the broadcast carries it.
#[derive(Debug, Clone)]
pub struct Committed {
    /// The event.
    pub event: Arc<Event>,
    /// The bytes of its JSON in the log: what a subscriber that has not sent it yet holds back.
    pub bytes: u64,
}

/// What routing by scope decided for a terminal's prompt (`crate::routing` decides; the actor records it).
#[derive(Debug, Clone)]
pub struct Routed {
    /// The scope key that conversation_created records for a new conversation; `None` for a prompt without a
    /// working directory.
    pub scope: Option<efr_protocol::wire::RouteScope>,
    /// terminal_attached, recorded before the prompt when the conversation was picked up.
    pub attach: Option<efr_protocol::events::TerminalAttached>,
    /// prompt.send's `route`.
    pub route: efr_protocol::wire::PromptRoute,
}

/// What an actor can be asked.
#[derive(Debug)]
enum Command {
    Prompt {
        params: Box<PromptSendParams>,
        origin: Origin,
        routed: Option<Box<Routed>>,
        reply: oneshot::Sender<Result<PromptSendResult, ErrorBody>>,
    },
    Subscribe {
        reply: oneshot::Sender<Subscription>,
    },
    Summary {
        reply: oneshot::Sender<Option<efr_protocol::wire::ConversationSummary>>,
    },
    Interrupt {
        params: Box<TurnInterruptParams>,
        origin: Origin,
        reply: oneshot::Sender<Result<TurnInterruptResult, ErrorBody>>,
    },
    Steer {
        params: Box<efr_protocol::wire::TurnSteerParams>,
        origin: Origin,
        reply: oneshot::Sender<Result<efr_protocol::wire::TurnSteerResult, ErrorBody>>,
    },
    Withdraw {
        params: Box<efr_protocol::wire::PromptWithdrawParams>,
        origin: Origin,
        reply: oneshot::Sender<Result<efr_protocol::wire::PromptWithdrawResult, ErrorBody>>,
    },
    /// A model call of the running turn reads the steers that wait (the turn's [`TurnSink::steers`]).
    Steers {
        turn_id: TurnId,
        last: bool,
        reply: oneshot::Sender<Result<Vec<String>, ErrorBody>>,
    },
    Record {
        turn_id: Option<TurnId>,
        bodies: Vec<EventBody>,
        /// The turn's history, with its terminal event ([`TurnSink::record_end`]); empty otherwise.
        history: Vec<efr_model::HistoryItem>,
        reply: oneshot::Sender<Result<u64, ErrorBody>>,
    },
    Ask {
        turn_id: TurnId,
        call_id: CallId,
        question: Box<Question>,
        reply: oneshot::Sender<Answer>,
    },
    Expire {
        call_id: CallId,
    },
    /// The away limit of a question ran out; `epoch` is the presence epoch its timer started in.
    ExpireAway {
        call_id: CallId,
        epoch: u64,
    },
    Unanswered {
        call_id: CallId,
        epoch: u64,
        inputs: u64,
    },
    Resume {
        command_id: efr_protocol::ids::CommandId,
        attached: Box<efr_protocol::events::TerminalAttached>,
        result: Box<efr_protocol::wire::ConversationResumeResult>,
        reply: oneshot::Sender<Result<efr_protocol::wire::ConversationResumeResult, ErrorBody>>,
    },
    Presence {
        set: Box<actor::PresenceSet>,
        reply: oneshot::Sender<Result<PresenceSetResult, ErrorBody>>,
    },
    InputRespond {
        params: Box<InputRespondParams>,
        reply: oneshot::Sender<Result<InputRespondResult, ErrorBody>>,
    },
    ShellStatus {
        reply: oneshot::Sender<ShellStatusResult>,
    },
    Context {
        model: Option<String>,
        reply: oneshot::Sender<Result<ConversationContextResult, ErrorBody>>,
    },
    ShellInterrupt {
        params: Box<ShellInterruptParams>,
        reply: oneshot::Sender<Result<ShellInterruptResult, ErrorBody>>,
    },
    Respond {
        params: Box<ApprovalRespondParams>,
        origin: Origin,
        reply: oneshot::Sender<Result<ApprovalRespondResult, ErrorBody>>,
    },
    TurnEnded {
        turn_id: TurnId,
        outcome: crate::turn::TurnOutcome,
    },
    UndoBegin {
        reply: oneshot::Sender<bool>,
    },
    SurfaceChanged {
        turn_id: TurnId,
        call_id: CallId,
        changes: Vec<efr_protocol::wire::SurfaceChange>,
        held: Vec<crate::turn::sink::Held>,
        reply: oneshot::Sender<Result<Vec<efr_protocol::ids::QuestionId>, ErrorBody>>,
    },
    SurfaceReport {
        turn_id: TurnId,
        reply: oneshot::Sender<Result<(), ErrorBody>>,
    },
    SurfaceRespond {
        params: Box<efr_protocol::wire::SandboxSurfaceRespondParams>,
        origin: Origin,
        reply: oneshot::Sender<Result<efr_protocol::wire::SandboxSurfaceRespondResult, ErrorBody>>,
    },
    UndoEnd {
        bodies: Vec<EventBody>,
        command: Option<efr_store::CommandRecord>,
        reply: oneshot::Sender<Result<(), ErrorBody>>,
    },
    /// A compaction in a running turn (the turn's [`TurnSink::compacted`]).
    Compacted {
        turn_id: TurnId,
        compaction: Box<efr_protocol::wire::Compaction>,
        history: Box<crate::compact::ModelHistory>,
        reply: oneshot::Sender<Result<u64, ErrorBody>>,
    },
    /// A draft of the running turn (the turn's [`TurnSink::draft`]).
    Draft {
        turn_id: TurnId,
        part: efr_protocol::wire::DraftPart,
    },
    /// A background job's notice for the model ([`crate::jobs::JobSink::notice`]).
    JobNotice {
        notice: crate::jobs::Notice,
    },
    BackgroundBegin {
        params: Box<efr_protocol::wire::CallBackgroundParams>,
        reply: oneshot::Sender<Result<actor::BackgroundBegin, ErrorBody>>,
    },
    BackgroundEnd {
        command_id: efr_protocol::ids::CommandId,
        outcome: Box<Result<efr_protocol::wire::CallBackgroundResult, ErrorBody>>,
        reply: oneshot::Sender<Result<efr_protocol::wire::CallBackgroundResult, ErrorBody>>,
    },
    CompactBegin {
        params: Box<efr_protocol::wire::ConversationCompactParams>,
        reply: oneshot::Sender<Result<actor::CompactBegin, ErrorBody>>,
    },
    /// conversation.delete's first step (`actor/delete.rs`).
    DeleteBegin {
        ask: actor::DeleteAsk,
        reply: oneshot::Sender<Result<actor::DeleteBegun, ErrorBody>>,
    },
    /// conversation.delete's commit; the actor stops after it.
    DeleteEnd {
        origin: Origin,
        command: Box<efr_store::CommandRecord>,
        reply: oneshot::Sender<Result<(), ErrorBody>>,
    },
    /// A delete that began will not end: the conversation takes work again.
    DeleteAbort,
    CompactEnd {
        command_id: efr_protocol::ids::CommandId,
        outcome: Box<Result<crate::compact::Compacted, crate::compact::Failed>>,
        reply: oneshot::Sender<Result<efr_protocol::wire::ConversationCompactResult, ErrorBody>>,
    },
}

/// A handle to one conversation's actor. Cheap to clone.
#[derive(Debug, Clone)]
pub struct ConversationHandle {
    id: ConversationId,
    tx: mpsc::Sender<Command>,
}

fn gone() -> ErrorBody {
    ErrorBody::new(
        ErrorCode::Unavailable,
        "the conversation stopped (efrd is shutting down)",
    )
}

/// Sends the command `make` builds around a reply channel to the actor behind `tx`, and waits for the reply.
///
/// # Errors
/// `unavailable` ([`gone`]) when the actor has stopped.
async fn request<T>(
    tx: &mpsc::Sender<Command>,
    make: impl FnOnce(oneshot::Sender<T>) -> Command,
) -> Result<T, ErrorBody> {
    let (reply, answer) = oneshot::channel();
    tx.send(make(reply)).await.map_err(|_| gone())?;
    answer.await.map_err(|_| gone())
}

impl ConversationHandle {
    /// The conversation.
    #[must_use]
    pub fn id(&self) -> ConversationId {
        self.id
    }

    async fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Command) -> Result<T, ErrorBody> {
        request(&self.tx, make).await
    }

    /// conversation.resume's record: terminal_attached with `result` kept under the write's `command_id` (a repeat
    /// of the write answers the first result).
    ///
    /// # Errors
    /// `not_found` for a conversation not committed or being deleted; `unavailable` for a store failure.
    pub async fn record_resume(
        &self,
        command_id: efr_protocol::ids::CommandId,
        attached: efr_protocol::events::TerminalAttached,
        result: efr_protocol::wire::ConversationResumeResult,
    ) -> Result<efr_protocol::wire::ConversationResumeResult, ErrorBody> {
        self.ask(|reply| Command::Resume {
            command_id,
            attached: Box::new(attached),
            result: Box::new(result),
            reply,
        })
        .await?
    }

    /// Queues a prompt (prompt.send). See the actor for the rules.
    ///
    /// # Errors
    /// `invalid` for settings outside the catalog, `unavailable` for a store failure or a stopped actor.
    pub async fn prompt(&self, params: PromptSendParams, origin: Origin) -> Result<PromptSendResult, ErrorBody> {
        self.prompt_routed(params, origin, None).await
    }

    /// Queues a terminal's prompt that routing by scope sent here ([`Routed`]).
    ///
    /// # Errors
    /// As [`ConversationHandle::prompt`].
    pub async fn prompt_routed(
        &self,
        params: PromptSendParams,
        origin: Origin,
        routed: Option<Routed>,
    ) -> Result<PromptSendResult, ErrorBody> {
        self.ask(|reply| Command::Prompt {
            params: Box::new(params),
            origin,
            routed: routed.map(Box::new),
            reply,
        })
        .await?
    }

    /// Subscribes to the conversation's events.
    ///
    /// # Errors
    /// `unavailable` when the actor stopped.
    pub async fn subscribe(&self) -> Result<Subscription, ErrorBody> {
        self.ask(|reply| Command::Subscribe { reply }).await
    }

    /// The summary row as the actor holds it (the title's secrets replaced); `None` before its first commit.
    ///
    /// # Errors
    /// `unavailable` when the actor stopped.
    pub async fn summary(&self) -> Result<Option<efr_protocol::wire::ConversationSummary>, ErrorBody> {
        self.ask(|reply| Command::Summary { reply }).await
    }

    /// Answers an approval question (approval.respond): the first answer wins.
    ///
    /// # Errors
    /// `not_found` when no question waits for the call, `conflict` when it was answered, `forbidden` for a phone and
    /// a local_only question, `invalid` for allow_always.
    pub async fn respond(
        &self,
        params: ApprovalRespondParams,
        origin: Origin,
    ) -> Result<ApprovalRespondResult, ErrorBody> {
        self.ask(|reply| Command::Respond {
            params: Box::new(params),
            origin,
            reply,
        })
        .await?
    }

    /// Answers a surface question (sandbox.surface_respond): keeps the change or puts back what was there.
    ///
    /// # Errors
    /// `not_found` for a question the conversation never asked, `conflict` for one already answered, `unavailable`
    /// for one asked before efrd restarted (its hold is not known any more) or a store failure.
    pub async fn surface_respond(
        &self,
        params: efr_protocol::wire::SandboxSurfaceRespondParams,
        origin: Origin,
    ) -> Result<efr_protocol::wire::SandboxSurfaceRespondResult, ErrorBody> {
        self.ask(|reply| Command::SurfaceRespond {
            params: Box::new(params),
            origin,
            reply,
        })
        .await?
    }

    /// Writes an answer to the command of the shell call that waits (input.respond).
    ///
    /// # Errors
    /// `not_found` when the call runs no command, `conflict` when the answer does not fit the wait.
    pub async fn input_respond(&self, params: InputRespondParams) -> Result<InputRespondResult, ErrorBody> {
        self.ask(|reply| Command::InputRespond {
            params: Box::new(params),
            reply,
        })
        .await?
    }

    /// The hidden shell's state (shell.status).
    ///
    /// # Errors
    /// `unavailable` when the actor stopped.
    pub async fn shell_status(&self) -> Result<ShellStatusResult, ErrorBody> {
        self.ask(|reply| Command::ShellStatus { reply }).await
    }

    /// What fills the context of the next request with `model` (conversation.context).
    ///
    /// # Errors
    /// `invalid` for a model that models.list does not have; `unavailable` when no model is known, the store fails
    /// or the actor stopped.
    pub async fn context(&self, model: Option<String>) -> Result<ConversationContextResult, ErrorBody> {
        self.ask(|reply| Command::Context { model, reply }).await?
    }

    /// Moves a running shell call into a background job (call.background): a contained call at once, one outside
    /// the sandbox after its preview's token comes back.
    ///
    /// # Errors
    /// `invalid` with a short reason (see the actor's `background.rs`); `unavailable` when the actor stopped.
    pub async fn call_background(
        &self,
        params: efr_protocol::wire::CallBackgroundParams,
    ) -> Result<efr_protocol::wire::CallBackgroundResult, ErrorBody> {
        let command_id = params.command_id;
        // A call that has just started may not have its command in the hidden shell yet: asked again for a while.
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
        let job = loop {
            let boxed = Box::new(params.clone());
            match self
                .ask(|reply| Command::BackgroundBegin { params: boxed, reply })
                .await??
            {
                actor::BackgroundBegin::Done(result) => return Ok(result),
                actor::BackgroundBegin::Move(job) => break job,
                actor::BackgroundBegin::NotYet if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
                actor::BackgroundBegin::NotYet => {
                    return Err(ErrorBody::invalid(format!(
                        "call {} runs no command now",
                        params.call_id
                    )));
                }
            }
        };
        let outcome = Box::new(job.run().await);
        self.ask(|reply| Command::BackgroundEnd {
            command_id,
            outcome,
            reply,
        })
        .await?
    }

    /// SIGINT to the command of a shell call, or a close of the hidden shell (shell.interrupt).
    ///
    /// # Errors
    /// `not_found` when the call holds no command of the shell.
    pub async fn shell_interrupt(&self, params: ShellInterruptParams) -> Result<ShellInterruptResult, ErrorBody> {
        self.ask(|reply| Command::ShellInterrupt {
            params: Box::new(params),
            reply,
        })
        .await?
    }

    /// turn.undo begins to write: `false` while a turn runs or another undo writes. Until
    /// [`ConversationHandle::end_undo`], no turn starts (a prompt is recorded and waits in the queue).
    ///
    /// # Errors
    /// `unavailable` when the actor stopped.
    pub async fn begin_undo(&self) -> Result<bool, ErrorBody> {
        self.ask(|reply| Command::UndoBegin { reply }).await
    }

    /// conversation.compact: the summary's model call runs in a task of its own (a client that goes away does not
    /// leave the conversation gated), then the actor commits conversation_compacted and takes the smaller copy.
    ///
    /// # Errors
    /// As the actor's `begin_compact` and `end_compact`: `busy`, `conflict`, `unauthorized`, `unavailable`.
    pub async fn compact(
        &self,
        params: efr_protocol::wire::ConversationCompactParams,
    ) -> Result<efr_protocol::wire::ConversationCompactResult, ErrorBody> {
        let params = Box::new(params);
        let job = match self.ask(|reply| Command::CompactBegin { params, reply }).await?? {
            actor::CompactBegin::Done(result) => return Ok(*result),
            actor::CompactBegin::Run(job) => job,
        };
        let tx = self.tx.clone();
        let (reply, answer) = oneshot::channel();
        tokio::spawn(async move {
            let outcome = Box::new(job.run().await);
            let end = Command::CompactEnd {
                command_id: job.command_id,
                outcome,
                reply,
            };
            if tx.send(end).await.is_err() {
                tracing::debug!("the conversation stopped during a compaction");
            }
        });
        answer
            .await
            .map_err(|_| ErrorBody::new(ErrorCode::Unavailable, "the conversation stopped"))?
    }

    /// turn.undo ends: records `bodies` (undo_applied, outside any turn) with the undo's outcome under its command
    /// id, and lets the queued prompts start.
    ///
    /// # Errors
    /// `conflict` when the command id was stored before, `unavailable` for a store failure or a stopped actor.
    pub async fn end_undo(
        &self,
        bodies: Vec<EventBody>,
        command: Option<efr_store::CommandRecord>,
    ) -> Result<(), ErrorBody> {
        self.ask(|reply| Command::UndoEnd { bodies, command, reply }).await?
    }

    /// Records `bodies` as events of the conversation that belong to no turn (such as undo_applied); returns the
    /// last seq.
    ///
    /// # Errors
    /// `unavailable` for a store failure or a stopped actor.
    pub async fn record_outside_turn(&self, bodies: Vec<EventBody>) -> Result<u64, ErrorBody> {
        self.ask(|reply| Command::Record {
            turn_id: None,
            bodies,
            history: Vec::new(),
            reply,
        })
        .await?
    }

    /// Steers the running turn, or queues a late steer with `if_late` (turn.steer). See the actor's `steer.rs`.
    ///
    /// # Errors
    /// `conflict` for a late steer without `if_late`, `invalid` for an empty text or settings outside the catalog,
    /// `unavailable` for a store failure.
    pub async fn steer(
        &self,
        params: efr_protocol::wire::TurnSteerParams,
        origin: Origin,
    ) -> Result<efr_protocol::wire::TurnSteerResult, ErrorBody> {
        self.ask(|reply| Command::Steer {
            params: Box::new(params),
            origin,
            reply,
        })
        .await?
    }

    /// Takes back a prompt that waits (prompt.withdraw).
    ///
    /// # Errors
    /// `conflict` for a prompt that started, `not_found` for a target without a waiting prompt, `unavailable` for a
    /// store failure.
    pub async fn withdraw(
        &self,
        params: efr_protocol::wire::PromptWithdrawParams,
        origin: Origin,
    ) -> Result<efr_protocol::wire::PromptWithdrawResult, ErrorBody> {
        self.ask(|reply| Command::Withdraw {
            params: Box::new(params),
            origin,
            reply,
        })
        .await?
    }

    /// Interrupts the running turn (turn.interrupt).
    ///
    /// # Errors
    /// `conflict` when no turn runs (or another one than named), `unavailable` for a store failure.
    pub async fn interrupt(
        &self,
        params: TurnInterruptParams,
        origin: Origin,
    ) -> Result<TurnInterruptResult, ErrorBody> {
        self.ask(|reply| Command::Interrupt {
            params: Box::new(params),
            origin,
            reply,
        })
        .await?
    }
}

/// The registry of live conversations. An actor with nothing to do for `[daemon] conversation_idle_secs` removes
/// itself (see `actor::Actor::retire`): a daemon that runs for months keeps only the conversations in use.
#[derive(Debug, Default)]
pub struct Conversations {
    live: Registry,
    /// The conversations that had input since the daemon started, in order (`presence.rs`).
    inputs: Mutex<Vec<ConversationId>>,
}

/// The live conversations' handles, shared with the actors so that an idle one can take itself out.
pub(crate) type Registry = Arc<Mutex<HashMap<ConversationId, ConversationHandle>>>;

impl Conversations {
    /// The actor of `id`, loading the conversation from the store when it is not live.
    ///
    /// # Errors
    /// `not_found` for a conversation the store does not have; `unavailable` when the store fails.
    pub async fn get(&self, deps: &Deps, id: ConversationId) -> Result<ConversationHandle, ErrorBody> {
        if let Some(handle) = self.live.lock().unwrap_or_else(PoisonError::into_inner).get(&id) {
            return Ok(handle.clone());
        }
        let loaded = actor::Actor::load(deps.clone(), id).await?;
        let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        // Another request may have loaded it meanwhile: keep the first actor, drop ours unstarted.
        if let Some(handle) = live.get(&id) {
            return Ok(handle.clone());
        }
        let handle = loaded.spawn(Arc::clone(&self.live));
        live.insert(id, handle.clone());
        Ok(handle)
    }

    /// A new conversation's actor (not in the store until its first commit).
    pub fn create(&self, deps: &Deps) -> ConversationHandle {
        let handle = actor::Actor::new(deps.clone(), ConversationId::new()).spawn(Arc::clone(&self.live));
        self.live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(handle.id, handle.clone());
        handle
    }

    /// How many conversations are live.
    #[must_use]
    pub fn live_count(&self) -> usize {
        self.live.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// Drops every handle, so actors stop once their turns end (at shutdown).
    pub fn clear(&self) {
        self.live.lock().unwrap_or_else(PoisonError::into_inner).clear();
    }
}
