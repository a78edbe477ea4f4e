//! Where a turn writes its events and asks its questions: the [`TurnSink`].
//!
//! The turn owns this trait and its conversation implements it (as ripgrep's searcher owns its `Sink`), so the
//! dependency runs one way: `conversation` → `turn`. The conversation's implementation numbers, commits and
//! broadcasts each event in its actor; a test gives the turn a sink that keeps the events in memory.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use efr_protocol::ErrorBody;
use efr_protocol::events::EventBody;
use efr_protocol::ids::{CallId, QuestionId, TurnId};
use efr_protocol::wire::{ApprovalDecision, Compaction, DraftPart, SurfaceChange};

use crate::compact::ModelHistory;
use efr_model::HistoryItem;
use efr_policy::Question;

/// A surface change that can run code, held until the user answers: what `surface::keep` and `surface::remove` need.
#[derive(Debug, Clone)]
pub struct Held {
    /// The change as its question shows it.
    pub change: SurfaceChange,
    /// The project root.
    pub(super) root: PathBuf,
    /// For a rename, the path it had (relative to `root`).
    pub(super) from: Option<PathBuf>,
    /// The content before the call: `Some(None)` for a file the call added, `Some(Some(bytes))` for one it changed,
    /// `None` when not kept (binary, or over the call snapshots' bound).
    pub(super) old: Option<Option<Vec<u8>>>,
    /// The mode the call left, when efrd removed its executable bits.
    pub(super) held_mode: Option<u32>,
    /// SHA-256 of the content as the call left it.
    pub(super) digest: Option<[u8; 32]>,
}

impl Held {
    /// efrd removed the file's executable bits until it is kept.
    #[must_use]
    pub fn held(&self) -> bool {
        self.held_mode.is_some()
    }

    /// `surface::remove` cannot put back the old content (it was not kept).
    #[must_use]
    pub fn cannot_remove(&self) -> bool {
        self.old.is_none()
    }

    pub(super) fn path(&self) -> PathBuf {
        self.root.join(&self.change.path)
    }
}

/// A future the sink returns: boxed, so that the trait can be used as `dyn TurnSink`.
pub type SinkFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, ErrorBody>> + Send + 'a>>;

/// The answer to a turn's question ([`TurnSink::ask`]).
///
/// A turn must tell an expiry from a user's deny: an exit whose question expired while the user was away is judged
/// `presence_expired`, not `user` (docs/protocol.md, "The contract": "phase A").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Someone decided: the user through approval.respond, or an interrupt of the turn (deny).
    Decided(ApprovalDecision),
    /// Nobody answered in time: approval_expired was recorded and the call does not run. `away`: the user was away
    /// (`[permissions] away_question_secs` ran out); otherwise the question's own limit did.
    Expired {
        /// The user was away when it expired.
        away: bool,
    },
}

impl Answer {
    /// The decision the call follows: an expiry is a deny.
    #[must_use]
    pub fn decision(self) -> ApprovalDecision {
        match self {
            Self::Decided(decision) => decision,
            Self::Expired { .. } => ApprovalDecision::Deny,
        }
    }
}

/// The receiver of a turn's events and questions.
pub trait TurnSink: Send + Sync + std::fmt::Debug {
    /// Records `bodies` as events of `turn_id` (or of the conversation outside any turn, for `None`, such as
    /// shell_command_ended), committed in one step; yields the seq of the last one.
    ///
    /// # Errors
    /// `unavailable` when the events cannot be committed or the conversation stopped: the turn can record nothing
    /// more.
    fn record_as(&self, turn_id: Option<TurnId>, bodies: Vec<EventBody>) -> SinkFuture<'_, u64>;

    /// Records a turn's terminal event `body` (turn_completed, turn_failed or turn_interrupted) and hands over the
    /// turn's `history` in the same step, so that whoever sees the end finds the turn in the conversation's history
    /// (conversation.context, the next turn's request); yields the end's seq. The history is kept even when the end
    /// cannot be committed. This default, for a sink that keeps no history, records the end alone.
    ///
    /// # Errors
    /// As [`TurnSink::record_as`].
    fn record_end(&self, turn_id: TurnId, body: EventBody, history: Vec<HistoryItem>) -> SinkFuture<'_, u64> {
        let _ = history;
        self.record_as(Some(turn_id), vec![body])
    }

    /// Records approval_requested for `call_id` and waits for the answer (approval.respond from any connection with
    /// the approve scope; an interrupt of the turn answers deny; an expiry, by the question's limit or while the
    /// user is away, answers [`Answer::Expired`]).
    ///
    /// # Errors
    /// `unavailable` when the conversation stopped.
    fn ask(&self, turn_id: TurnId, call_id: CallId, question: Question) -> SinkFuture<'_, Answer>;

    /// Records sandbox_surface_changed for `call_id` and a surface_question_requested for each of `held`, committed
    /// in one step, and keeps the questions for sandbox.surface_respond; yields their ids, in `held`'s order. Does
    /// not wait for answers ([`super::surface`]).
    ///
    /// # Errors
    /// `unavailable` when the events cannot be committed or the conversation stopped. This default, for a sink
    /// that keeps no questions, records nothing and says so.
    fn surface_changed(
        &self,
        turn_id: TurnId,
        call_id: CallId,
        changes: Vec<SurfaceChange>,
        held: Vec<Held>,
    ) -> SinkFuture<'_, Vec<QuestionId>> {
        let _ = (turn_id, call_id, changes, held);
        Box::pin(async {
            Err(ErrorBody::new(
                efr_protocol::ErrorCode::Unavailable,
                "this sink keeps no surface questions",
            ))
        })
    }

    /// Records conversation_compacted of `turn_id` (a compaction in the running turn) and makes `history` the
    /// conversation's copy in the same step, so that the copy and the log never disagree; yields the event's seq.
    /// This default, for a sink that keeps no history, records the event alone.
    ///
    /// # Errors
    /// As [`TurnSink::record_as`]: the conversation keeps its copy as it was.
    fn compacted(&self, turn_id: TurnId, compaction: Compaction, history: ModelHistory) -> SinkFuture<'_, u64> {
        let _ = history;
        self.record_as(Some(turn_id), vec![EventBody::ConversationCompacted(compaction)])
    }

    /// A draft of the running turn: how full the context is before and after each model call, or that a compaction
    /// runs. Never stored and never waited for; this default drops it.
    fn draft(&self, turn_id: TurnId, part: DraftPart) {
        let _ = (turn_id, part);
    }

    /// Where the turn's background jobs record their events and send their notices; `None` for a sink that keeps
    /// no jobs (a turn's unit tests).
    fn job_sink(&self) -> Option<Arc<dyn crate::jobs::JobSink>> {
        None
    }

    /// Before a model call of `turn_id`: the texts of the steers that no model call read yet, in order; the
    /// conversation records steering_delivered for them in the same step. With `last` (the model answered without a
    /// tool call), no steer waiting closes the turn to steers: a steer after that is late. This default, for a sink
    /// that keeps no steers, has none.
    ///
    /// # Errors
    /// `unavailable` when the event cannot be committed or the conversation stopped.
    fn steers(&self, turn_id: TurnId, last: bool) -> SinkFuture<'_, Vec<String>> {
        let _ = (turn_id, last);
        Box::pin(async { Ok(Vec::new()) })
    }

    /// At a turn's end, before its terminal event: records turn_surface_report when the turn made a surface change.
    ///
    /// # Errors
    /// `unavailable` when the conversation stopped.
    fn surface_report(&self, turn_id: TurnId) -> SinkFuture<'_, ()> {
        let _ = turn_id;
        Box::pin(async { Ok(()) })
    }
}

/// The sink a turn holds: shared with the tasks that follow a command left running.
pub type Sink = Arc<dyn TurnSink>;

impl dyn TurnSink {
    /// Records `bodies` as events of `turn_id`; see [`TurnSink::record_as`].
    ///
    /// # Errors
    /// As [`TurnSink::record_as`].
    pub async fn record(&self, turn_id: TurnId, bodies: Vec<EventBody>) -> Result<u64, ErrorBody> {
        self.record_as(Some(turn_id), bodies).await
    }

    /// Records `bodies` as events of the conversation that belong to no turn; see [`TurnSink::record_as`].
    ///
    /// # Errors
    /// As [`TurnSink::record_as`].
    pub async fn record_outside_turn(&self, bodies: Vec<EventBody>) -> Result<u64, ErrorBody> {
        self.record_as(None, bodies).await
    }
}

#[cfg(test)]
pub(crate) mod memory {
    //! A sink that keeps a turn's events in memory and answers its questions from a script: the turn's unit tests
    //! use it in place of a conversation.

    use std::collections::VecDeque;
    use std::sync::Mutex;

    use super::*;

    /// The events in order, the questions asked, and the answers still to give.
    #[derive(Debug, Default)]
    pub struct MemorySink {
        /// Every event recorded, in order.
        pub events: Mutex<Vec<(Option<TurnId>, EventBody)>>,
        /// Every question asked, in order.
        pub questions: Mutex<Vec<(CallId, Question)>>,
        /// The answers to the next questions; a question with none left expires (not away).
        pub answers: Mutex<VecDeque<ApprovalDecision>>,
        /// Every draft, in order.
        pub drafts: Mutex<Vec<DraftPart>>,
    }

    impl MemorySink {
        /// A sink whose questions get `answers`, in order.
        pub fn answering(answers: impl IntoIterator<Item = ApprovalDecision>) -> Arc<Self> {
            Arc::new(Self {
                answers: Mutex::new(answers.into_iter().collect()),
                ..Self::default()
            })
        }

        /// The bodies recorded so far.
        pub fn bodies(&self) -> Vec<EventBody> {
            self.events
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .iter()
                .map(|(_, body)| body.clone())
                .collect()
        }
    }

    impl TurnSink for MemorySink {
        fn record_as(&self, turn_id: Option<TurnId>, bodies: Vec<EventBody>) -> SinkFuture<'_, u64> {
            Box::pin(async move {
                let mut events = self.events.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                events.extend(bodies.into_iter().map(|body| (turn_id, body)));
                Ok(events.len() as u64)
            })
        }

        fn draft(&self, _turn_id: TurnId, part: DraftPart) {
            self.drafts
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(part);
        }

        fn ask(&self, _turn_id: TurnId, call_id: CallId, question: Question) -> SinkFuture<'_, Answer> {
            Box::pin(async move {
                self.questions
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push((call_id, question));
                let answer = self
                    .answers
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .pop_front();
                Ok(answer.map_or(Answer::Expired { away: false }, Answer::Decided))
            })
        }
    }
}
