//! The actor's questions and the hidden shell's requests: approval questions (asked by a turn's call, answered by
//! approval.respond, denied by an interrupt, expired by their limit), input.respond, shell.status and shell.interrupt.

// A part of the actor: its imports and private types.
use super::*;

impl Actor {
    /// Records approval_requested and keeps the question until an answer or an interrupt resolves it.
    pub(super) async fn ask(
        &mut self,
        turn_id: TurnId,
        call_id: CallId,
        question: Question,
        reply: oneshot::Sender<Answer>,
        me: &mpsc::WeakSender<Command>,
    ) {
        let always = question.exit.as_ref().is_some_and(|exit| exit.always.is_some());
        let body = EventBody::ApprovalRequested(ApprovalRequested {
            call_id: call_id.clone(),
            summary: question.summary,
            interactive: question.interactive,
            local_only: question.local_only,
            reason: Some(question.reason).filter(|r| !r.is_empty()),
            expires_in_secs: question.expires_in_secs.map(u64::from),
            exit: question.exit,
        });
        if self.commit(vec![(Some(turn_id), body)], None).await.is_err() {
            // Nothing was recorded: the call does not run.
            let _ = reply.send(Answer::Decided(ApprovalDecision::Deny));
            return;
        }
        if let Some(secs) = question.expires_in_secs {
            // The timer holds only a weak sender: it never keeps a stopped actor alive.
            let me = me.clone();
            let call_id = call_id.clone();
            tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_secs(u64::from(secs))).await;
                if let Some(tx) = me.upgrade() {
                    let _ = tx.send(Command::Expire { call_id }).await;
                }
            });
        }
        self.approvals.insert(
            call_id.clone(),
            PendingApproval {
                turn_id,
                local_only: question.local_only,
                always,
                reply,
            },
        );
        // A question to an away user expires after `[permissions] away_question_secs`; one left unanswered too long
        // means the user is away (`presence.rs`).
        self.start_away_timer(call_id.clone(), me);
        self.start_unanswered_timer(call_id, me);
    }

    /// input.respond: the answer goes to the shell's terminal, with a newline.
    pub(super) async fn input_respond(&mut self, params: InputRespondParams) -> Result<InputRespondResult, ErrorBody> {
        self.open_calls.check_answer(&params)?;
        let slot = self.shell.lock().await;
        let Some(shell) = slot.current() else {
            return Err(ErrorBody::new(ErrorCode::NotFound, "the hidden shell is gone"));
        };
        shell
            .write_input(params.text.expose(), true)
            .await
            .map_err(|e| ErrorBody::new(ErrorCode::Conflict, format!("the answer could not be written: {e}")))?;
        Ok(InputRespondResult {})
    }

    /// shell.status: the call that holds the hidden shell, from the log ([`super::super::shell::OpenShellCalls::busy`]),
    /// with the program's prompt read from the live screen while the command waits for input (an input wait of a
    /// call inside its turn has no event that carries the prompt).
    pub(super) async fn shell_status(&self) -> ShellStatusResult {
        let mut busy = self.open_calls.busy();
        if let Some(busy) = busy.as_mut().filter(|b| b.input != efr_protocol::wire::InputWait::None) {
            let shell = self.shell.lock().await.current().cloned();
            if let Some(shell) = shell
                && let Ok(status) = shell.status().await
                && let Some(live) = status.busy
            {
                busy.prompt = live.prompt.or(busy.prompt.take());
            }
        }
        ShellStatusResult { busy }
    }

    /// shell.interrupt: SIGINT to the command's process group, or with `close` a close of the hidden shell (the next
    /// call starts a new one). The same command id again returns the same (empty) result.
    pub(super) async fn shell_interrupt(
        &mut self,
        params: ShellInterruptParams,
    ) -> Result<ShellInterruptResult, ErrorBody> {
        if let Some(stored) = self.stored_outcome(params.command_id).await? {
            return Ok(stored);
        }
        if !self.open_calls.holds(&params.call_id) {
            return Err(ErrorBody::new(
                ErrorCode::NotFound,
                format!("call {} runs no command now", params.call_id),
            ));
        }
        {
            let mut slot = self.shell.lock().await;
            if params.close {
                slot.close().await;
            } else if let Some(shell) = slot.current() {
                shell
                    .interrupt()
                    .await
                    .map_err(|e| ErrorBody::new(ErrorCode::Conflict, format!("the interrupt failed: {e}")))?;
            }
        }
        let result = ShellInterruptResult {};
        let command = self.command_record(params.command_id, "shell.interrupt", &result)?;
        match self.commit(Vec::new(), Some(command)).await {
            Ok(_) | Err(CommitRefused::Duplicate(_)) => Ok(result),
            Err(CommitRefused::Failed(error)) => Err(error),
        }
    }

    /// A question that nobody answered in time, by its own limit or (`away`) while the user was away:
    /// approval_expired, and the call does not run.
    pub(super) async fn expire(&mut self, call_id: CallId, away: bool) {
        let Some(pending) = self.approvals.get(&call_id) else {
            return;
        };
        let turn_id = pending.turn_id;
        let body = EventBody::ApprovalExpired(ApprovalExpired {
            call_id: call_id.clone(),
            away,
        });
        if self.commit(vec![(Some(turn_id), body)], None).await.is_err() {
            return;
        }
        if let Some(pending) = self.approvals.remove(&call_id) {
            let _ = pending.reply.send(Answer::Expired { away });
        }
        self.answered.insert(call_id);
    }

    /// approval.respond: the first answer wins; the same command id again returns the same result.
    pub(super) async fn respond(
        &mut self,
        params: ApprovalRespondParams,
        origin: Origin,
        me: &mpsc::WeakSender<Command>,
    ) -> Result<ApprovalRespondResult, ErrorBody> {
        if let Some(stored) = self.stored_outcome(params.command_id).await? {
            return Ok(stored);
        }
        let Some(pending) = self.approvals.get(&params.call_id) else {
            return Err(if self.answered.contains(&params.call_id) {
                ErrorBody::new(
                    ErrorCode::Conflict,
                    format!("the question of call {} was already answered", params.call_id),
                )
            } else {
                ErrorBody::new(
                    ErrorCode::NotFound,
                    format!("no question waits for call {}", params.call_id),
                )
            });
        };
        // A phone never makes an always rule, and never answers a local_only question; the question stays open for
        // the user's terminal (docs/protocol.md, "Remote devices": what a phone may do).
        if origin == Origin::Phone && params.decision == ApprovalDecision::AllowAlways {
            return Err(ErrorBody::new(
                ErrorCode::Forbidden,
                "a phone may not answer allow_always: answer allow, or use the terminal",
            ));
        }
        match params.decision {
            ApprovalDecision::Allow | ApprovalDecision::Deny => {}
            ApprovalDecision::AllowAlways if pending.always => {}
            ApprovalDecision::AllowAlways => {
                return Err(ErrorBody::invalid(
                    "this question offers no always rule (its exit has no `always`): answer allow or deny",
                ));
            }
            ApprovalDecision::Unknown => return Err(ErrorBody::invalid("bad params: `decision` is not allow or deny")),
        }
        if origin == Origin::Phone && pending.local_only {
            return Err(ErrorBody::new(
                ErrorCode::Forbidden,
                "only the user's own machine may answer this question",
            ));
        }
        let turn_id = pending.turn_id;
        let result = ApprovalRespondResult { seq: self.last_seq + 1 };
        let command = self.command_record(params.command_id, "approval.respond", &result)?;
        if !self
            .resolve(turn_id, params.call_id, params.decision, Some(command))
            .await
        {
            return Err(ErrorBody::new(
                ErrorCode::Unavailable,
                "the answer could not be recorded",
            ));
        }
        // An answer is the user's input: the questions still open wait again from it (the user is here).
        self.count_input(me);
        Ok(result)
    }

    /// Records approval_resolved and hands the decision to the waiting call. Returns false when nothing changed.
    pub(super) async fn resolve(
        &mut self,
        turn_id: TurnId,
        call_id: CallId,
        decision: ApprovalDecision,
        command: Option<CommandRecord>,
    ) -> bool {
        let body = EventBody::ApprovalResolved(ApprovalResolved {
            call_id: call_id.clone(),
            decision,
        });
        if self.commit(vec![(Some(turn_id), body)], command).await.is_err() {
            return false;
        }
        if let Some(pending) = self.approvals.remove(&call_id) {
            let _ = pending.reply.send(Answer::Decided(decision));
        }
        self.answered.insert(call_id);
        true
    }
}
