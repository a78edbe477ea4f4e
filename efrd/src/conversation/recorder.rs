//! The way a running turn (and a conversation's jobs) record events: [`Recorder`] sends each record through the
//! conversation's actor, which numbers, commits and broadcasts it; drafts go straight to the conversation's hub.
//!
//! A turn may be started while the commit of its start is still being written, so that its model request goes out
//! meanwhile (the actor's `start.rs`). Its recorder then waits at a [`StartGate`]: every record, question and draft
//! waits until the start landed, and is refused when it did not, so nothing of a turn the log does not have reaches
//! the log or a subscriber.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use efr_policy::Question;
use efr_protocol::events::EventBody;
use efr_protocol::ids::{CallId, TurnId};
use efr_protocol::wire::DraftPart;
use efr_protocol::{ErrorBody, ErrorCode};
use tokio::sync::{mpsc, watch};

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
            if self.start.landed().await.is_err() {
                return;
            }
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
    /// Whether the turn's start is committed (open for a turn started after its start's commit, and for jobs).
    pub(super) start: Arc<StartGate>,
}

/// Where a turn's start stands: its commit being written, committed, or refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    Pending,
    Landed,
    Refused,
}

/// Whether a turn's start is committed ([module docs](self)): its recorder waits here until it is.
#[derive(Debug)]
pub struct StartGate {
    state: watch::Sender<Start>,
    /// The drafts made before the start landed, in order; published when it lands, dropped when it is refused.
    held: std::sync::Mutex<Vec<(TurnId, DraftPart)>>,
}

impl StartGate {
    /// A gate for a turn whose start is already committed.
    #[must_use]
    pub fn open() -> Arc<Self> {
        Self::new(Start::Landed)
    }

    /// A gate for a turn whose start is being committed: [`StartGate::land`] or [`StartGate::refuse`] follows.
    #[must_use]
    pub fn pending() -> Arc<Self> {
        Self::new(Start::Pending)
    }

    fn new(start: Start) -> Arc<Self> {
        Arc::new(Self {
            state: watch::Sender::new(start),
            held: std::sync::Mutex::default(),
        })
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Vec<(TurnId, DraftPart)>> {
        self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The start is committed: the drafts held go to `hub` in their order, and the recorder's waits end.
    pub fn land(&self, hub: &drafts::DraftHub) {
        let mut held = self.held();
        for (turn_id, part) in held.drain(..) {
            hub.publish(turn_id, part);
        }
        // Under the lock: a draft made meanwhile goes after the held ones.
        self.state.send_replace(Start::Landed);
    }

    /// The start's commit failed: the drafts held are dropped, and every wait of the recorder ends refused.
    pub fn refuse(&self) {
        let mut held = self.held();
        held.clear();
        self.state.send_replace(Start::Refused);
    }

    /// Waits until the start is committed.
    ///
    /// # Errors
    /// `unavailable` when its commit failed: the turn records nothing and ends.
    async fn landed(&self) -> Result<(), ErrorBody> {
        let mut state = self.state.subscribe();
        // The sender lives in `self`: the wait ends with a change of state.
        let start = state.wait_for(|start| *start != Start::Pending).await.map(|s| *s);
        match start {
            Ok(Start::Landed) => Ok(()),
            _ => Err(ErrorBody::new(
                ErrorCode::Unavailable,
                "efrd could not record this turn's start; the turn did not run",
            )),
        }
    }

    /// `part` to `hub` now when the start landed, held until it lands while it is pending, dropped when refused.
    fn draft(&self, hub: &drafts::DraftHub, turn_id: TurnId, part: DraftPart) {
        let mut held = self.held();
        match *self.state.borrow() {
            Start::Landed => hub.publish(turn_id, part),
            Start::Pending => held.push((turn_id, part)),
            Start::Refused => {}
        }
    }
}

impl TurnSink for Recorder {
    fn record_as(&self, turn_id: Option<TurnId>, bodies: Vec<EventBody>) -> SinkFuture<'_, u64> {
        Box::pin(async move {
            self.start.landed().await?;
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
            self.start.landed().await?;
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
            self.start.landed().await?;
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
        self.start.draft(&self.drafts, turn_id, part);
    }

    fn steers(&self, turn_id: TurnId, last: bool) -> SinkFuture<'_, Vec<String>> {
        Box::pin(async move {
            // A steer added after this read is taken by the next model call or at the turn's end, as one that came a
            // moment later. The last call always asks: the actor marks the turn answered.
            if !last && !self.steering.load(Ordering::Acquire) {
                return Ok(Vec::new());
            }
            self.start.landed().await?;
            request(&self.tx, |reply| Command::Steers { turn_id, last, reply }).await?
        })
    }

    fn ask(&self, turn_id: TurnId, call_id: CallId, question: Question) -> SinkFuture<'_, Answer> {
        let question = Box::new(question);
        Box::pin(async move {
            self.start.landed().await?;
            request(&self.tx, move |reply| Command::Ask {
                turn_id,
                call_id,
                question,
                reply,
            })
            .await
        })
    }

    fn surface_changed(
        &self,
        turn_id: TurnId,
        call_id: CallId,
        changes: Vec<efr_protocol::wire::SurfaceChange>,
        held: Vec<crate::turn::sink::Held>,
    ) -> SinkFuture<'_, Vec<efr_protocol::ids::QuestionId>> {
        Box::pin(async move {
            self.start.landed().await?;
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
        Box::pin(async move {
            self.start.landed().await?;
            request(&self.tx, |reply| Command::SurfaceReport { turn_id, reply }).await?
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

    use std::time::Duration;

    use efr_protocol::events::{AssistantMessageUpdated, EventBody};

    use super::*;

    fn text(offset: u64, delta: &str) -> DraftPart {
        DraftPart::Text {
            index: 0,
            offset,
            delta: delta.to_owned(),
        }
    }

    fn updated(delta: &str) -> EventBody {
        EventBody::AssistantMessageUpdated(AssistantMessageUpdated {
            index: 0,
            offset: 0,
            delta: delta.to_owned(),
        })
    }

    /// A turn's recorder behind `gate`, and the actor's end of its mailbox.
    fn recorder(gate: &Arc<StartGate>) -> (Arc<Recorder>, Arc<drafts::DraftHub>, mpsc::Receiver<Command>) {
        let (tx, rx) = mpsc::channel(8);
        let hub = Arc::new(drafts::DraftHub::default());
        let recorder = Arc::new(Recorder {
            tx,
            drafts: Arc::clone(&hub),
            steering: Arc::new(AtomicBool::new(false)),
            start: Arc::clone(gate),
        });
        (recorder, hub, rx)
    }

    /// `recorder` records one update of `delta` in its own task (the record may wait at the gate).
    fn record(
        recorder: &Arc<Recorder>,
        turn_id: TurnId,
        delta: &str,
    ) -> tokio::task::JoinHandle<Result<u64, ErrorBody>> {
        let (recorder, body) = (Arc::clone(recorder), updated(delta));
        tokio::spawn(async move { recorder.record_as(Some(turn_id), vec![body]).await })
    }

    #[tokio::test]
    async fn a_pending_start_holds_records_and_drafts_until_it_lands() {
        let gate = StartGate::pending();
        let (recorder, hub, mut rx) = recorder(&gate);
        let turn_id = TurnId::new();
        recorder.draft(turn_id, text(0, "first "));
        let recorded = record(&recorder, turn_id, "first ");
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            rx.try_recv().is_err(),
            "a record went to the actor before the start landed"
        );
        assert!(hub.live().is_none(), "a draft reached the hub before the start landed");

        gate.land(&hub);
        assert_eq!(
            hub.live().unwrap().text,
            "first ",
            "the held draft goes out when the start lands"
        );
        recorder.draft(turn_id, text(6, "words"));
        assert_eq!(hub.live().unwrap().text, "first words", "after the held one, in order");
        let Some(Command::Record { reply, .. }) = rx.recv().await else {
            panic!("the record did not reach the actor after the start landed");
        };
        reply.send(Ok(7)).unwrap();
        assert_eq!(recorded.await.unwrap().unwrap(), 7);
    }

    #[tokio::test]
    async fn a_refused_start_refuses_records_and_drops_drafts() {
        let gate = StartGate::pending();
        let (recorder, hub, mut rx) = recorder(&gate);
        let turn_id = TurnId::new();
        recorder.draft(turn_id, text(0, "never seen"));
        let recorded = record(&recorder, turn_id, "never seen");
        tokio::time::sleep(Duration::from_millis(20)).await;
        gate.refuse();
        let error = recorded.await.unwrap().unwrap_err();
        assert_eq!(error.code, ErrorCode::Unavailable, "{error:?}");
        recorder.draft(turn_id, text(10, " either"));
        let asked = recorder.steers(turn_id, true).await;
        assert!(asked.is_err(), "a refused turn asks the actor nothing");
        assert!(rx.try_recv().is_err(), "nothing of the refused turn reached the actor");
        assert!(hub.live().is_none(), "no draft of the refused turn reached the hub");
    }

    #[tokio::test]
    async fn an_open_gate_passes_at_once() {
        let gate = StartGate::open();
        let (recorder, hub, mut rx) = recorder(&gate);
        let turn_id = TurnId::new();
        recorder.draft(turn_id, text(0, "now"));
        assert_eq!(hub.live().unwrap().text, "now");
        let recorded = record(&recorder, turn_id, "now");
        let Some(Command::Record { reply, .. }) = rx.recv().await else {
            panic!("no record");
        };
        reply.send(Ok(1)).unwrap();
        assert_eq!(recorded.await.unwrap().unwrap(), 1);
    }
}
