//! The actor's part of conversation.delete (spec: "the delete of a conversation"; the whole flow is
//! `conversation::delete`).
//!
//! [`Actor::begin_delete`] answers held (another open terminal holds the conversation and `force` is not set) or
//! busy (an undo runs, always; a turn, a queued prompt or a compaction, unless `stop`), else closes the conversation
//! to new work: no prompt is taken, no turn starts. With `stop` it drops the queued prompts, cancels the running
//! turn (its open questions answered deny) and answers once the turn and any compaction ended. Then
//! [`Actor::end_delete`] commits conversation_deleted as the store's delete ([`efr_store::Commit::deletes`]),
//! broadcasts it, and the actor stops: its subscriptions end after that event, and the next request finds no
//! conversation.

// A part of the actor: its imports and private types.
use super::*;

/// What a delete asks of the actor.
#[derive(Debug)]
pub(in crate::conversation) struct DeleteAsk {
    /// The asking terminal (the hello's tty), which does not count as another terminal.
    pub tty: Option<String>,
    /// Delete it although another open terminal holds it.
    pub force: bool,
    /// Stop its running turn, queued prompts and compaction first.
    pub stop: bool,
}

/// The actor's answer to a delete's first step.
#[derive(Debug)]
pub(in crate::conversation) enum DeleteBegun {
    /// Another open terminal holds it: nothing changed.
    Held { tty: String, title: Option<String> },
    /// Nothing runs and nothing new starts: the delete may go on.
    Ready { title: Option<String> },
}

/// The reply a delete with `stop` waits for.
pub(super) type DeleteReply = oneshot::Sender<Result<DeleteBegun, ErrorBody>>;

/// The error of a busy conversation (spec: data `{"busy": "turn"}` or `{"busy": "undo"}`).
fn busy(what: efr_protocol::wire::DeleteBusy, message: &str) -> ErrorBody {
    ErrorBody::new(ErrorCode::Busy, message).with_data(serde_json::json!({ "busy": what }))
}

/// Whether `tty` names a terminal that is open now: a character device at that path (a closed pseudo-terminal's
/// `/dev/pts/N` is gone).
fn is_open_terminal(tty: &str) -> bool {
    use std::os::unix::fs::FileTypeExt as _;
    tty.starts_with("/dev/") && std::fs::metadata(tty).is_ok_and(|meta| meta.file_type().is_char_device())
}

impl Actor {
    /// The title as a client sees it, its secrets replaced.
    fn shown_title(&self) -> Option<String> {
        self.wire_summary().title
    }

    /// A delete's first step (see the module docs).
    pub(super) fn begin_delete(&mut self, ask: &DeleteAsk, reply: DeleteReply) {
        let answer = self.check_delete(ask);
        match answer {
            Ok(DeleteBegun::Ready { .. }) if !self.idle_for_delete() => {
                // A turn whose end is committed finishes on its own; anything else is stopped (`stop`).
                if self.busy_for_delete() {
                    self.stop_for_delete();
                }
                self.pending_delete = Some(reply);
            }
            answer => {
                let _ = reply.send(answer);
            }
        }
    }

    fn check_delete(&mut self, ask: &DeleteAsk) -> Result<DeleteBegun, ErrorBody> {
        if self.undoing {
            return Err(busy(
                efr_protocol::wire::DeleteBusy::Undo,
                "an undo of this conversation runs",
            ));
        }
        if self.deleting {
            return Err(ErrorBody::new(
                ErrorCode::Conflict,
                "a delete of this conversation runs",
            ));
        }
        let holder = self
            .wire_summary()
            .tty
            .filter(|tty| Some(tty) != ask.tty.as_ref() && is_open_terminal(tty));
        if let Some(tty) = holder
            && !ask.force
        {
            return Ok(DeleteBegun::Held {
                tty,
                title: self.shown_title(),
            });
        }
        if self.busy_for_delete() && !ask.stop {
            return Err(busy(
                efr_protocol::wire::DeleteBusy::Turn,
                "a turn runs, a prompt waits or a compaction runs in this conversation: delete with stop",
            ));
        }
        self.deleting = true;
        Ok(DeleteBegun::Ready {
            title: self.shown_title(),
        })
    }

    /// Nothing runs or waits, a turn's task on its way out included: the actor may stop.
    fn idle_for_delete(&self) -> bool {
        self.running.is_none() && self.queue.is_empty() && !self.compacting && !self.undoing
    }

    /// Something runs or waits that a delete must stop first (`busy` without `stop`). A turn whose end is committed
    /// does not count ([`Actor::live_turn`]): a client that read the end expects the conversation idle, so the delete
    /// waits the moment the turn's task needs to finish.
    fn busy_for_delete(&self) -> bool {
        self.live_turn().is_some() || !self.queue.is_empty() || self.compacting || self.undoing
    }

    /// `stop`: the queued prompts go (the delete removes their events), the running turn is cancelled.
    fn stop_for_delete(&mut self) {
        self.queue.clear();
        if let Some(running) = self.running.as_mut() {
            running.interrupt_requested = true;
            running.cancel.cancel();
        }
        // Its open questions are answered deny by the turn's cancel; none may wait for a user who deleted it.
        let open: Vec<oneshot::Sender<Answer>> = self.approvals.drain().map(|(_, p)| p.reply).collect();
        for reply in open {
            let _ = reply.send(Answer::Decided(ApprovalDecision::Deny));
        }
    }

    /// After a turn or a compaction ended: a delete that waited for it goes on.
    pub(super) fn resume_delete(&mut self) {
        if self.idle_for_delete()
            && let Some(reply) = self.pending_delete.take()
        {
            let _ = reply.send(Ok(DeleteBegun::Ready {
                title: self.shown_title(),
            }));
        }
    }

    /// A delete that began will not end (its request failed before the commit): the conversation takes work again.
    pub(super) fn abort_delete(&mut self) {
        self.deleting = false;
        self.pending_delete = None;
    }

    /// Commits conversation_deleted as the store's delete of the conversation, with the delete's outcome. On success
    /// the actor stops after this command (`gone`).
    pub(super) async fn end_delete(&mut self, origin: Origin, command: CommandRecord) -> Result<(), ErrorBody> {
        let body = EventBody::ConversationDeleted(efr_protocol::events::ConversationDeleted { origin });
        match self.commit_as(vec![(None, body)], Some(command), true).await {
            Ok(_) => {
                self.gone = true;
                Ok(())
            }
            Err(refused) => {
                self.abort_delete();
                Err(refused.body())
            }
        }
    }
}
