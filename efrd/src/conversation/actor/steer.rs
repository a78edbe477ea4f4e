//! Steering in the actor (spec, "steer, queue and withdraw from the input row of a turn"): turn.steer records
//! turn_steered for the running turn or queues a late steer as a prompt; a model call reads the steers that wait
//! (steering_delivered); prompt.withdraw takes a waiting prompt back (prompt_withdrawn); turn.interrupt resends or
//! withdraws unread steers and withdraws waiting prompts in the step that records turn_interrupt_requested.
//!
//! A steer is late when the turn makes no more model calls: its model answered without a tool call (the turn asked
//! for steers with `last` and none waited), an interrupt was requested, the named turn does not run, or none runs.
//! The actor decides each steer in one step, so a steer is either read by a model call, taken back, or late (and
//! then never recorded as turn_steered).

// A part of the actor: its imports and private types.
use super::*;

use efr_protocol::events::{PromptWithdrawn, SteeringDelivered, SteeringWithdrawn, TurnSteered};
use efr_protocol::wire::{
    PromptWithdrawParams, PromptWithdrawResult, QueueAs, Resent, TurnSteerParams, TurnSteerResult, WithdrawTarget,
    WithdrawnPrompt, WithdrawnSteer,
};

/// A steer that no model call read yet.
#[derive(Debug, Clone)]
pub(super) struct Steer {
    /// The seq of its turn_steered event.
    pub(super) seq: u64,
    /// Its text.
    pub(super) text: String,
}

/// What turn.interrupt resends and withdraws, checked, with the events it records after turn_interrupt_requested.
#[derive(Default)]
pub(super) struct InterruptExtras {
    pub(super) bodies: Vec<(Option<TurnId>, EventBody)>,
    pub(super) resent: Option<(Resent, Queued)>,
    pub(super) withdrawn: Vec<WithdrawnPrompt>,
    pub(super) withdrawn_steers: Vec<WithdrawnSteer>,
}

fn conflict(message: impl Into<String>) -> ErrorBody {
    ErrorBody::new(ErrorCode::Conflict, message)
}

impl Actor {
    /// turn.steer: turn_steered for the running turn, or (late, with `if_late`) prompt_queued; a late steer without
    /// `if_late` is `conflict`.
    pub(super) async fn steer(
        &mut self,
        params: TurnSteerParams,
        origin: Origin,
    ) -> Result<TurnSteerResult, ErrorBody> {
        if let Some(stored) = self.stored_outcome(params.command_id).await? {
            return Ok(stored);
        }
        if params.text.trim().is_empty() {
            return Err(ErrorBody::invalid("a steer needs text"));
        }
        let late = match self.steerable(params.turn_id) {
            Ok(turn_id) => return self.record_steer(turn_id, params, origin).await,
            Err(late) => late,
        };
        let Some(QueueAs::Queue {
            context,
            last_command,
            recent_commands,
            settings,
        }) = params.if_late
        else {
            return Err(conflict(format!("the steer is late: {late}")));
        };
        let send = PromptSendParams {
            command_id: params.command_id,
            new: false,
            text: params.text,
            conversation_id: Some(self.id),
            context,
            last_command,
            recent_commands,
            settings,
        };
        let prepared = self.prepare_prompt(&send, origin, Vec::new())?;
        let result = TurnSteerResult {
            turn_id: prepared.result.turn_id,
            seq: prepared.result.seq,
            queued: true,
        };
        if let Some(stored) = self.commit_prompt(prepared, &send, "turn.steer", &result).await? {
            return Ok(stored);
        }
        Ok(result)
    }

    /// The turn that a steer naming `named` reaches, or why the steer is late.
    fn steerable(&self, named: Option<TurnId>) -> Result<TurnId, &'static str> {
        // A turn whose end is recorded runs no more, though its task may still be on its way out.
        let Some(running) = self.live_turn() else {
            return Err("no turn runs");
        };
        if named.is_some_and(|id| id != running.turn_id) {
            return Err("the named turn does not run");
        }
        if running.interrupt_requested {
            return Err("an interrupt of the turn was requested");
        }
        if running.answered {
            return Err("the model answered without a tool call, so the turn makes no more model calls");
        }
        Ok(running.turn_id)
    }

    async fn record_steer(
        &mut self,
        turn_id: TurnId,
        params: TurnSteerParams,
        origin: Origin,
    ) -> Result<TurnSteerResult, ErrorBody> {
        let seq = self.last_seq + 1;
        let result = TurnSteerResult {
            turn_id,
            seq,
            queued: false,
        };
        let command = self.command_record(params.command_id, "turn.steer", &result)?;
        let body = EventBody::TurnSteered(TurnSteered {
            text: params.text.clone(),
            command_id: Some(params.command_id),
            origin,
        });
        match self.commit(vec![(Some(turn_id), body)], Some(command)).await {
            Ok(_) => {}
            Err(CommitRefused::Duplicate(stored)) => return decode_outcome(&stored),
            Err(CommitRefused::Failed(error)) => return Err(error),
        }
        if let Some(running) = self.running.as_mut() {
            running.steers.push(Steer { seq, text: params.text });
            running.steering.store(true, std::sync::atomic::Ordering::Release);
        }
        Ok(result)
    }

    /// A model call of `turn_id` reads the steers that wait (the turn's `TurnSink::steers`): steering_delivered,
    /// then their texts. With `last` and none waiting, the turn takes no more steers.
    pub(super) async fn take_steers(&mut self, turn_id: TurnId, last: bool) -> Result<Vec<String>, ErrorBody> {
        let Some(running) = self.running.as_mut().filter(|r| r.turn_id == turn_id) else {
            return Ok(Vec::new());
        };
        // An interrupted turn reads nothing more: turn.interrupt resends or withdraws what waits.
        if running.interrupt_requested {
            return Ok(Vec::new());
        }
        if running.steers.is_empty() {
            running.answered |= last;
            return Ok(Vec::new());
        }
        let steers = running.steers.iter().map(|s| s.seq).collect();
        let body = EventBody::SteeringDelivered(SteeringDelivered { steers });
        self.commit(vec![(Some(turn_id), body)], None)
            .await
            .map_err(ErrorBody::from)?;
        let steers = self
            .running
            .as_mut()
            .map(|r| {
                r.steering.store(false, std::sync::atomic::Ordering::Release);
                std::mem::take(&mut r.steers)
            })
            .unwrap_or_default();
        Ok(steers.into_iter().map(|s| s.text).collect())
    }

    /// At the end of `turn_id`: steering_withdrawn (by the daemon) for the steers that no model call read, so that the
    /// log never leaves a steer neither read nor taken back; `None` when none waits.
    pub(super) fn unread_at_end(&mut self, turn_id: TurnId) -> Option<EventBody> {
        let running = self.running.as_mut().filter(|r| r.turn_id == turn_id)?;
        if running.steers.is_empty() {
            return None;
        }
        let steers = std::mem::take(&mut running.steers).iter().map(|s| s.seq).collect();
        Some(EventBody::SteeringWithdrawn(SteeringWithdrawn {
            steers,
            origin: Origin::Daemon,
        }))
    }

    /// prompt.withdraw: prompt_withdrawn for a prompt that waits; `conflict` for one that started, `not_found` for a
    /// target without a waiting prompt.
    pub(super) async fn withdraw(
        &mut self,
        params: PromptWithdrawParams,
        origin: Origin,
    ) -> Result<PromptWithdrawResult, ErrorBody> {
        if let Some(stored) = self.stored_outcome(params.command_id).await? {
            return Ok(stored);
        }
        let position = match &params.target {
            WithdrawTarget::Turn { turn_id } => self.queue.iter().position(|q| q.turn_id == *turn_id),
            WithdrawTarget::NewestFromTty { tty } => self.queue.iter().rposition(|q| q.tty() == Some(tty.as_str())),
        };
        let Some(position) = position else {
            return Err(match params.target {
                WithdrawTarget::Turn { turn_id } if self.started.contains(&turn_id) => {
                    conflict(format!("the prompt of turn {turn_id} started"))
                }
                WithdrawTarget::Turn { turn_id } => {
                    ErrorBody::new(ErrorCode::NotFound, format!("no prompt of turn {turn_id} waits"))
                }
                WithdrawTarget::NewestFromTty { tty } => {
                    ErrorBody::new(ErrorCode::NotFound, format!("no prompt from {tty} waits"))
                }
            });
        };
        let queued = &self.queue[position];
        let turn_id = queued.turn_id;
        let result = PromptWithdrawResult {
            withdrawn: WithdrawnPrompt {
                turn_id,
                seq: self.last_seq + 1,
                text: queued.user_prompt.clone(),
            },
        };
        let command = self.command_record(params.command_id, "prompt.withdraw", &result)?;
        let body = EventBody::PromptWithdrawn(PromptWithdrawn { origin });
        match self.commit(vec![(Some(turn_id), body)], Some(command)).await {
            Ok(_) => {}
            Err(CommitRefused::Duplicate(stored)) => return decode_outcome(&stored),
            Err(CommitRefused::Failed(error)) => return Err(error),
        }
        self.queue.retain(|q| q.turn_id != turn_id);
        Ok(result)
    }

    /// Checks what turn.interrupt resends and withdraws, and makes the events it records after
    /// turn_interrupt_requested (whose seq is `self.last_seq + 1`). Nothing changes until the caller commits them
    /// and calls [`Actor::apply_interrupt_extras`].
    ///
    /// # Errors
    /// `invalid` for a steer both resent and withdrawn; `conflict` for a seq that names no unread steer of the turn
    /// (a model call may have read it meanwhile) and for a turn whose prompt does not wait.
    pub(super) fn interrupt_extras(
        &self,
        params: &TurnInterruptParams,
        origin: Origin,
    ) -> Result<InterruptExtras, ErrorBody> {
        let mut extras = InterruptExtras::default();
        let Some(running) = self.running.as_ref() else {
            return Ok(extras);
        };
        let turn_id = running.turn_id;
        if let Some(seq) = params.resend_steers.iter().find(|s| params.withdraw_steers.contains(s)) {
            return Err(ErrorBody::invalid(format!("steer {seq} is both resent and withdrawn")));
        }
        let unread = |seqs: &[u64]| -> Result<Vec<Steer>, ErrorBody> {
            seqs.iter()
                .map(|seq| {
                    running.steers.iter().find(|s| s.seq == *seq).cloned().ok_or_else(|| {
                        conflict(format!(
                            "{seq} is not the seq of a steer of the turn that no model call read"
                        ))
                    })
                })
                .collect()
        };
        let resend = unread(&params.resend_steers)?;
        let withdraw_steers = unread(&params.withdraw_steers)?;
        let mut seq = self.last_seq + 1;
        if !withdraw_steers.is_empty() {
            seq += 1;
            extras.bodies.push((
                Some(turn_id),
                EventBody::SteeringWithdrawn(SteeringWithdrawn {
                    steers: params.withdraw_steers.clone(),
                    origin,
                }),
            ));
            extras.withdrawn_steers = withdraw_steers
                .into_iter()
                .map(|s| WithdrawnSteer {
                    seq: s.seq,
                    text: s.text,
                })
                .collect();
        }
        for turn in &params.withdraw {
            let queued = self
                .queue
                .iter()
                .find(|q| q.turn_id == *turn)
                .ok_or_else(|| conflict(format!("no prompt of turn {turn} waits")))?;
            seq += 1;
            extras
                .bodies
                .push((Some(*turn), EventBody::PromptWithdrawn(PromptWithdrawn { origin })));
            extras.withdrawn.push(WithdrawnPrompt {
                turn_id: *turn,
                seq,
                text: queued.user_prompt.clone(),
            });
        }
        if !resend.is_empty() {
            let send = self.resend_params(params, running, &resend);
            let mut prepared = self.prepare_prompt(&send, origin, params.resend_steers.clone())?;
            seq += 1;
            let resent = Resent {
                turn_id: prepared.queued.turn_id,
                seq,
                steers: params.resend_steers.clone(),
            };
            extras.bodies.append(&mut prepared.bodies);
            extras.resent = Some((resent, prepared.queued));
        }
        Ok(extras)
    }

    /// The prompt that resent steers become: their texts, one paragraph each, with the context and settings of
    /// `resend_as`, else of the interrupted turn's prompt.
    fn resend_params(&self, params: &TurnInterruptParams, running: &Running, steers: &[Steer]) -> PromptSendParams {
        let text = steers.iter().map(|s| s.text.as_str()).collect::<Vec<_>>().join("\n\n");
        let (context, last_command, recent_commands, settings) = match params.resend_as.clone() {
            Some(QueueAs::Queue {
                context,
                last_command,
                recent_commands,
                settings,
            }) => (context, last_command, recent_commands, settings),
            None => (running.prompt_context.clone(), None, Vec::new(), running.asked.clone()),
        };
        PromptSendParams {
            command_id: params.command_id,
            new: false,
            text,
            conversation_id: Some(self.id),
            context,
            last_command,
            recent_commands,
            settings,
        }
    }

    /// After the interrupt's commit: the withdrawn steers and prompts leave, the resent prompt runs next.
    pub(super) fn apply_interrupt_extras(&mut self, extras: InterruptExtras) {
        let withdrawn: Vec<TurnId> = extras.withdrawn.iter().map(|w| w.turn_id).collect();
        self.queue.retain(|q| !withdrawn.contains(&q.turn_id));
        let mut gone: Vec<u64> = extras.withdrawn_steers.iter().map(|s| s.seq).collect();
        if let Some((resent, queued)) = extras.resent {
            gone.extend(resent.steers);
            self.queue.push_front(queued);
        }
        if let Some(running) = self.running.as_mut() {
            running.steers.retain(|s| !gone.contains(&s.seq));
        }
    }
}
