//! An idle actor lets itself go: a daemon that runs for months keeps live only the conversations in use.
//!
//! An actor may retire when nothing depends on it being live: no turn runs or waits, no question is open, no shell
//! call is open (a command left running), and nobody subscribes to its events (a subscriber's stream would end).
//! After `[daemon] conversation_idle_secs` of that with no command, it takes itself out of the registry, closes its
//! mailbox and its hidden shell, and stops. The next request for the conversation loads it from the log again.

// A part of the actor: its imports and private types.
use super::*;

impl Actor {
    /// Whether the actor has nothing that needs it live (see the module docs).
    pub(super) fn may_retire(&self) -> bool {
        self.running.is_none()
            && !self.undoing
            && !self.deleting
            && !self.compacting
            && self.queue.is_empty()
            && self.approvals.is_empty()
            && !self.surface.has_waiting()
            && self.open_calls.is_empty()
            && self.unclosed.is_none()
            && self.events.receiver_count() == 0
    }

    /// Takes the actor out of `registry` and closes its mailbox, when the registry still holds this actor and no
    /// command waits in the mailbox: both checked under the registry's lock, which every new handle is cloned
    /// under, so no command can reach a retired actor. `false` leaves everything as it was.
    pub(super) fn retire(
        &self,
        rx: &mut mpsc::Receiver<Command>,
        me: &mpsc::WeakSender<Command>,
        registry: &Registry,
    ) -> bool {
        let Some(me) = me.upgrade() else {
            return false;
        };
        let mut live = registry.lock().unwrap_or_else(PoisonError::into_inner);
        let ours = live.get(&self.id).is_some_and(|handle| handle.tx.same_channel(&me));
        if !ours || !rx.is_empty() {
            return false;
        }
        live.remove(&self.id);
        rx.close();
        debug!(conversation = %self.id, "an idle conversation retires");
        true
    }
}

impl Actor {
    /// After a delete: out of the registry, the mailbox closed (a command that waited there gets `unavailable`), the
    /// hidden shell closed. The broadcast of events goes with the actor, so each subscription ends after
    /// conversation_deleted.
    pub(super) async fn leave(
        &mut self,
        rx: &mut mpsc::Receiver<Command>,
        me: &mpsc::WeakSender<Command>,
        registry: &Registry,
    ) {
        {
            let mut live = registry.lock().unwrap_or_else(PoisonError::into_inner);
            let ours = me
                .upgrade()
                .is_some_and(|me| live.get(&self.id).is_some_and(|handle| handle.tx.same_channel(&me)));
            if ours {
                live.remove(&self.id);
            }
        }
        rx.close();
        self.shell.lock().await.close().await;
        debug!(conversation = %self.id, "a deleted conversation's actor stopped");
    }
}
