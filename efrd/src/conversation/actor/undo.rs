//! The actor's gate for turn.undo: while an undo writes the conversation's files, no turn starts (a prompt sent then
//! is recorded and queued, and starts when the undo ends), and an undo does not begin while a turn runs or another
//! undo writes (`docs/undo.md`, "How an undo runs").

// A part of the actor: its imports and private types.
use super::*;

impl Actor {
    /// turn.undo begins: refused (`false`) while a turn runs or another undo writes. A turn whose end is committed
    /// runs no more ([`Actor::live_turn`]): its files are as its end left them, and a turn that would start waits for
    /// the undo (`start_next`).
    pub(super) fn begin_undo(&mut self) -> bool {
        if self.live_turn().is_some() || self.undoing {
            return false;
        }
        self.undoing = true;
        true
    }

    /// turn.undo ends: records `bodies` (undo_applied, outside any turn) with the undo's outcome under its command id;
    /// the next queued prompt may start after it.
    pub(super) async fn end_undo(
        &mut self,
        bodies: Vec<EventBody>,
        command: Option<CommandRecord>,
    ) -> Result<(), ErrorBody> {
        let answer = if bodies.is_empty() && command.is_none() {
            Ok(())
        } else {
            let bodies = bodies.into_iter().map(|body| (None, body)).collect();
            self.commit(bodies, command).await.map(drop).map_err(ErrorBody::from)
        };
        self.undoing = false;
        answer
    }
}
