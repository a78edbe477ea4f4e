//! The presence of the conversation's user (docs/auto.md, "Presence"): present by default; presence.set and the
//! user's prompts change it, each change recorded as presence_changed (none when nothing changes). While the user is
//! away, each open approval question expires after `[permissions] away_question_secs` with approval_expired
//! `away: true`; becoming present before then keeps it waiting.
//!
//! An away timer holds the presence epoch it started in: every change of presence starts a new epoch, so a timer of
//! an earlier away spell does nothing (present → away again restarts the wait from the new change).
//!
//! A question that waits `[permissions] unanswered_away_secs` with no input in the conversation (a prompt, an
//! answer) and no change of presence means the user is away: efrd records presence_changed with source `timeout`,
//! and the away wait of the open questions starts. An input shows the user here at that moment: the questions still
//! open wait `unanswered_away_secs` again from it.

// A part of the actor: its imports and private types.
use super::*;

/// The timers of one round: they end together when the round is replaced (a change of presence, the user's input)
/// or when the actor goes, rather than sleep out a wait whose end can no longer matter (each is a task that would
/// hold its memory for the whole wait: half an hour for an unanswered question).
#[derive(Debug, Default)]
pub(super) struct TimerRound(CancellationToken);

impl TimerRound {
    /// Runs `then` after `wait`, unless the round ends first.
    fn spawn(&self, wait: Duration, then: impl std::future::Future<Output = ()> + Send + 'static) {
        let ended = self.0.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = tokio::time::sleep(wait) => then.await,
                () = ended.cancelled() => {}
            }
        });
    }
}

impl Drop for TimerRound {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

use efr_protocol::events::PresenceChanged;
use efr_protocol::wire::{Presence, PresenceSetResult, PresenceSource};

/// One conversation's part of a presence change (the actor's `Presence` command).
#[derive(Debug)]
pub(crate) struct PresenceSet {
    /// The presence to set (`present` or `away`).
    pub presence: Presence,
    /// What changes it.
    pub source: PresenceSource,
    /// The presence.set write to store with this change: its command id and the result of the conversations changed
    /// before this one, which this one completes. `None` for a change that is no write (a prompt's input).
    pub command: Option<(CommandId, PresenceSetResult)>,
}

impl Actor {
    /// Sets the presence: records presence_changed when it changes, with the write's outcome under its command id
    /// (also when nothing changed), and starts the away timers of the open questions on a change to away.
    ///
    /// # Errors
    /// `unavailable` when the store fails (nothing changed); `conflict` when the command id was used by another
    /// method.
    pub(super) async fn set_presence(
        &mut self,
        set: PresenceSet,
        me: &mpsc::WeakSender<Command>,
    ) -> Result<PresenceSetResult, ErrorBody> {
        if let Some((command_id, _)) = &set.command
            && let Some(stored) = self.stored_outcome(*command_id).await?
        {
            return Ok(stored);
        }
        let changes = self.presence != set.presence;
        let mut result = set.command.as_ref().map_or_else(
            || PresenceSetResult {
                presence: set.presence,
                changed: Vec::new(),
                seq: None,
            },
            |(_, before)| before.clone(),
        );
        let mut bodies = Vec::new();
        if changes {
            bodies.push((
                None,
                EventBody::PresenceChanged(PresenceChanged {
                    presence: set.presence,
                    source: set.source,
                }),
            ));
            result.changed.push(self.id);
            result.seq = Some(self.last_seq + 1);
        }
        let command = match set.command {
            Some((command_id, _)) => Some(self.command_record(command_id, "presence.set", &result)?),
            None => None,
        };
        if bodies.is_empty() && command.is_none() {
            return Ok(result);
        }
        match self.commit(bodies, command).await {
            Ok(_) => {}
            Err(CommitRefused::Duplicate(stored)) => return decode_outcome(&stored),
            Err(CommitRefused::Failed(error)) => return Err(error),
        }
        if changes {
            self.presence = set.presence;
            self.presence_epoch += 1;
            // The timers of the earlier epoch would do nothing when they ran out.
            self.away_timers = TimerRound::default();
            self.unanswered_timers = TimerRound::default();
            if self.presence == Presence::Away {
                let open: Vec<CallId> = self.approvals.keys().cloned().collect();
                for call_id in open {
                    self.start_away_timer(call_id, me);
                }
            }
        }
        Ok(result)
    }

    /// A prompt is the user's input: present, source `input`. A failure to record it is logged, not the prompt's.
    pub(super) async fn note_input(&mut self, me: &mpsc::WeakSender<Command>) {
        if self.presence != Presence::Present {
            let set = PresenceSet {
                presence: Presence::Present,
                source: PresenceSource::Input,
                command: None,
            };
            if let Err(error) = self.set_presence(set, me).await {
                warn!(conversation = %self.id, error = %error.message, "the presence of a prompt's input was not recorded");
            }
        }
        // After the change of presence: a timer holds the epoch it starts in.
        self.count_input(me);
    }

    /// The user's input (a prompt, an answer): the unanswered timers that run lapse (they hold the count of inputs
    /// they started with), and each question still open starts its own again from now.
    pub(super) fn count_input(&mut self, me: &mpsc::WeakSender<Command>) {
        self.inputs += 1;
        self.unanswered_timers = TimerRound::default();
        for call_id in self.approvals.keys() {
            self.start_unanswered_timer(call_id.clone(), me);
        }
    }

    /// Starts the away timer of `call_id` when the user is away: after `[permissions] away_question_secs` it asks
    /// the actor to expire the question, which it does only if the user is still away in the same epoch.
    pub(super) fn start_away_timer(&self, call_id: CallId, me: &mpsc::WeakSender<Command>) {
        if self.presence != Presence::Away {
            return;
        }
        let secs = self.deps.config().permissions.away_question_secs();
        let epoch = self.presence_epoch;
        // The timer holds only a weak sender: it never keeps a stopped actor alive.
        let me = me.clone();
        self.away_timers
            .spawn(Duration::from_secs(u64::from(secs)), async move {
                if let Some(tx) = me.upgrade() {
                    let _ = tx.send(Command::ExpireAway { call_id, epoch }).await;
                }
            });
    }

    /// Starts the unanswered timer of the question of `call_id` (see the module docs); none when
    /// `unanswered_away_secs` is 0.
    pub(super) fn start_unanswered_timer(&self, call_id: CallId, me: &mpsc::WeakSender<Command>) {
        let Some(secs) = self.deps.config().permissions.unanswered_away_secs() else {
            return;
        };
        let (epoch, inputs) = (self.presence_epoch, self.inputs);
        let me = me.clone();
        self.unanswered_timers
            .spawn(Duration::from_secs(u64::from(secs)), async move {
                if let Some(tx) = me.upgrade() {
                    let _ = tx.send(Command::Unanswered { call_id, epoch, inputs }).await;
                }
            });
    }

    /// An unanswered timer ran out: away with source `timeout`, if the question still waits, the user is present in
    /// the same epoch and no input came since.
    pub(super) async fn unanswered(
        &mut self,
        call_id: CallId,
        epoch: u64,
        inputs: u64,
        me: &mpsc::WeakSender<Command>,
    ) {
        let still = self.approvals.contains_key(&call_id)
            && self.presence == Presence::Present
            && self.presence_epoch == epoch
            && self.inputs == inputs;
        if !still {
            return;
        }
        let set = PresenceSet {
            presence: Presence::Away,
            source: PresenceSource::Timeout,
            command: None,
        };
        if let Err(error) = self.set_presence(set, me).await {
            warn!(conversation = %self.id, error = %error.message, "an unanswered question's away was not recorded");
        }
    }

    /// An away timer ran out: the question expires with `away` if the user is still away since the timer started.
    pub(super) async fn expire_away(&mut self, call_id: CallId, epoch: u64) {
        if self.presence == Presence::Away && self.presence_epoch == epoch {
            self.expire(call_id, true).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Yields until `alive` tasks are left, at most 100 times.
    async fn settle(alive: usize) -> usize {
        let metrics = tokio::runtime::Handle::current().metrics();
        for _ in 0..100 {
            if metrics.num_alive_tasks() == alive {
                break;
            }
            tokio::task::yield_now().await;
        }
        metrics.num_alive_tasks()
    }

    #[tokio::test]
    async fn a_round_ends_its_timers_when_it_is_replaced_or_dropped() {
        let ran = Arc::new(AtomicUsize::new(0));
        let counter = |by: usize| {
            let ran = Arc::clone(&ran);
            async move {
                ran.fetch_add(by, Ordering::SeqCst);
            }
        };
        let mut round = TimerRound::default();
        round.spawn(Duration::from_secs(1800), counter(1));
        round.spawn(Duration::from_secs(1800), counter(1));
        assert_eq!(settle(2).await, 2, "two timers asleep");
        // Replaced: the old round's timers end now, not in half an hour.
        round = TimerRound::default();
        round.spawn(Duration::from_millis(10), counter(100));
        assert_eq!(settle(1).await, 1, "only the new round's timer is left");
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(ran.load(Ordering::SeqCst), 100, "only the new round's timer ran");
        assert_eq!(settle(0).await, 0);
        // Dropped (the actor goes): its timers end too.
        round.spawn(Duration::from_secs(1800), counter(1));
        assert_eq!(settle(1).await, 1);
        drop(round);
        assert_eq!(settle(0).await, 0, "the dropped round's timer ended");
        assert_eq!(ran.load(Ordering::SeqCst), 100);
    }
}
