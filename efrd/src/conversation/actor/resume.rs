//! conversation.resume in the actor: terminal_attached (how `resumed`) recorded with the result kept under the
//! write's command id, so a repeat of the write gets its first answer. Which terminal takes which slot is
//! `crate::routing`'s; the actor records it and its row follows (the row's `tty` is the terminal that holds it).

// A part of the actor: its imports and private types.
use super::*;

impl Actor {
    /// Records `attached` and keeps `result` under `command_id` (see the module docs).
    pub(super) async fn record_resume(
        &mut self,
        command_id: CommandId,
        attached: efr_protocol::events::TerminalAttached,
        result: efr_protocol::wire::ConversationResumeResult,
    ) -> Result<efr_protocol::wire::ConversationResumeResult, ErrorBody> {
        if self.summary.is_none() || self.deleting {
            return Err(ErrorBody::new(ErrorCode::NotFound, "no such conversation"));
        }
        let bodies = vec![(None, EventBody::TerminalAttached(attached))];
        if let Some(summary) = self.summary.as_mut() {
            prompt::row_follows(summary, &bodies);
        }
        let command = self.command_record(command_id, "conversation.resume", &result)?;
        match self.commit(bodies, Some(command)).await {
            Ok(_) => Ok(result),
            Err(CommitRefused::Duplicate(stored)) => decode_outcome(&stored),
            Err(CommitRefused::Failed(error)) => Err(error),
        }
    }
}
