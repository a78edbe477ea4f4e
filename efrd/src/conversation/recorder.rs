//! The way a running turn (and a conversation's jobs) record events: [`Recorder`] sends each record through the
//! conversation's actor, which numbers, commits and broadcasts it; drafts go straight to the conversation's hub.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use efr_policy::Question;
use efr_protocol::ErrorBody;
use efr_protocol::events::EventBody;
use efr_protocol::ids::{CallId, TurnId};
use tokio::sync::mpsc;

use super::{Command, drafts, request};
use crate::turn::sink::{Answer, SinkFuture, TurnSink};

impl crate::jobs::JobSink for Recorder {
    fn record_as(
        &self,
        turn_id: Option<TurnId>,
        bodies: Vec<EventBody>,
    ) -> crate::jobs::SinkFuture<'_, Result<u64, ErrorBody>> {
        TurnSink::record_as(self, turn_id, bodies)
    }

    fn notice(&self, notice: crate::jobs::Notice) -> crate::jobs::SinkFuture<'_, ()> {
        Box::pin(async move {
            let _ = self.tx.send(Command::JobNotice { notice }).await;
        })
    }
}

/// The way a running turn records its events: through its conversation's actor, which numbers, commits and
/// broadcasts them (the turn's [`TurnSink`]).
#[derive(Debug, Clone)]
pub struct Recorder {
    pub(super) tx: mpsc::Sender<Command>,
    /// The conversation's drafts: a draft goes there at once, not through the mailbox.
    pub(super) drafts: Arc<drafts::DraftHub>,
    /// Whether a steer may wait for the turn (the actor's `Running::steering`): unset, a model call that is not the
    /// turn's last takes none without asking the actor.
    pub(super) steering: Arc<AtomicBool>,
}

impl TurnSink for Recorder {
    fn record_as(&self, turn_id: Option<TurnId>, bodies: Vec<EventBody>) -> SinkFuture<'_, u64> {
        Box::pin(async move {
            request(&self.tx, |reply| Command::Record {
                turn_id,
                bodies,
                history: Vec::new(),
                reply,
            })
            .await?
        })
    }

    fn record_end(
        &self,
        turn_id: TurnId,
        body: EventBody,
        history: Vec<efr_model::HistoryItem>,
    ) -> SinkFuture<'_, u64> {
        Box::pin(async move {
            request(&self.tx, |reply| Command::Record {
                turn_id: Some(turn_id),
                bodies: vec![body],
                history,
                reply,
            })
            .await?
        })
    }

    fn compacted(
        &self,
        turn_id: TurnId,
        compaction: efr_protocol::wire::Compaction,
        history: crate::compact::ModelHistory,
    ) -> SinkFuture<'_, u64> {
        Box::pin(async move {
            request(&self.tx, |reply| Command::Compacted {
                turn_id,
                compaction: Box::new(compaction),
                history: Box::new(history),
                reply,
            })
            .await?
        })
    }

    fn job_sink(&self) -> Option<Arc<dyn crate::jobs::JobSink>> {
        Some(Arc::new(self.clone()))
    }

    fn draft(&self, turn_id: TurnId, part: efr_protocol::wire::DraftPart) {
        // The actor keeps the context and compaction of its running turn; a draft never waits for it (with a full
        // mailbox the actor misses one, and the next one says the same, newer).
        if matches!(
            part,
            efr_protocol::wire::DraftPart::Context(_) | efr_protocol::wire::DraftPart::Compacting { .. }
        ) {
            let _ = self.tx.try_send(Command::Draft {
                turn_id,
                part: part.clone(),
            });
        }
        self.drafts.publish(turn_id, part);
    }

    fn steers(&self, turn_id: TurnId, last: bool) -> SinkFuture<'_, Vec<String>> {
        Box::pin(async move {
            // A steer added after this read is taken by the next model call or at the turn's end, as one that came a
            // moment later. The last call always asks: the actor marks the turn answered.
            if !last && !self.steering.load(Ordering::Acquire) {
                return Ok(Vec::new());
            }
            request(&self.tx, |reply| Command::Steers { turn_id, last, reply }).await?
        })
    }

    fn ask(&self, turn_id: TurnId, call_id: CallId, question: Question) -> SinkFuture<'_, Answer> {
        let question = Box::new(question);
        Box::pin(request(&self.tx, move |reply| Command::Ask {
            turn_id,
            call_id,
            question,
            reply,
        }))
    }

    fn surface_changed(
        &self,
        turn_id: TurnId,
        call_id: CallId,
        changes: Vec<efr_protocol::wire::SurfaceChange>,
        held: Vec<crate::turn::sink::Held>,
    ) -> SinkFuture<'_, Vec<efr_protocol::ids::QuestionId>> {
        Box::pin(async move {
            request(&self.tx, |reply| Command::SurfaceChanged {
                turn_id,
                call_id,
                changes,
                held,
                reply,
            })
            .await?
        })
    }

    fn surface_report(&self, turn_id: TurnId) -> SinkFuture<'_, ()> {
        Box::pin(async move { request(&self.tx, |reply| Command::SurfaceReport { turn_id, reply }).await? })
    }
}
