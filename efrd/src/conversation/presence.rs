//! presence.set across conversations, and the conversations that had input since the daemon started.
//!
//! Each conversation keeps its own presence in its actor (`actor/presence.rs`); this module only finds the
//! conversations a presence.set names: the one of `conversation_id`, or, when it is absent, each conversation that
//! had input (a prompt) since the daemon started (docs/protocol.md, "The contract": "presence").

use std::sync::PoisonError;

use efr_protocol::wire::{Presence, PresenceSetParams, PresenceSetResult, PresenceSource};
use efr_protocol::{ErrorBody, ErrorCode};

use super::actor::{PresenceSet, decode_outcome};
use super::{Command, ConversationHandle, Conversations, Deps};

impl ConversationHandle {
    /// Sets this conversation's presence (see `actor/presence.rs`).
    ///
    /// # Errors
    /// `unavailable` for a store failure or a stopped actor; `conflict` for a command id another method used.
    pub(crate) async fn set_presence(&self, set: PresenceSet) -> Result<PresenceSetResult, ErrorBody> {
        self.ask(|reply| Command::Presence {
            set: Box::new(set),
            reply,
        })
        .await?
    }
}

impl Conversations {
    /// Notes that `id` had input (a prompt): a presence.set without a conversation reaches it from now on.
    pub fn note_input(&self, id: efr_protocol::ids::ConversationId) {
        let mut inputs = self.inputs.lock().unwrap_or_else(PoisonError::into_inner);
        if !inputs.contains(&id) {
            inputs.push(id);
        }
    }

    /// Forgets the input of a deleted conversation: a presence.set without a conversation no longer looks for it.
    pub(super) fn forget_input(&self, id: efr_protocol::ids::ConversationId) {
        self.inputs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|input| *input != id);
    }

    /// presence.set: sets the presence of the named conversation, or of each that had input since the daemon
    /// started, source `user`. The result lists the conversations that changed, in order, and the seq of the last
    /// presence_changed; the write's outcome is stored with the last conversation's change (or alone), so the same
    /// command id again returns the same result.
    ///
    /// # Errors
    /// `invalid` for the presence `unknown`; `not_found` for a named conversation that does not exist;
    /// `unavailable` for a store failure.
    pub async fn set_presence(&self, deps: &Deps, params: PresenceSetParams) -> Result<PresenceSetResult, ErrorBody> {
        if params.presence == Presence::Unknown {
            return Err(ErrorBody::invalid("bad params: `presence` is not present or away"));
        }
        let mut result = PresenceSetResult {
            presence: params.presence,
            changed: Vec::new(),
            seq: None,
        };
        let set = |command| PresenceSet {
            presence: params.presence,
            source: PresenceSource::User,
            command,
        };
        if let Some(id) = params.conversation_id {
            let handle = self.get(deps, id).await?;
            return handle.set_presence(set(Some((params.command_id, result)))).await;
        }
        if let Some(stored) = deps
            .store
            .command_outcome(params.command_id)
            .await
            .map_err(ErrorBody::from)?
        {
            return decode_outcome(&stored);
        }
        // A conversation deleted since its input is no longer reached.
        let ids = self.inputs.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let mut handles = Vec::new();
        for id in ids {
            match self.get(deps, id).await {
                Ok(handle) => handles.push(handle),
                Err(error) if error.code == ErrorCode::NotFound => {}
                Err(error) => return Err(error),
            }
        }
        let Some((last, before)) = handles.split_last() else {
            return Ok(result);
        };
        for handle in before {
            let changed = handle.set_presence(set(None)).await?;
            if !changed.changed.is_empty() {
                result.changed.extend(changed.changed);
                result.seq = changed.seq;
            }
        }
        last.set_presence(set(Some((params.command_id, result)))).await
    }
}
