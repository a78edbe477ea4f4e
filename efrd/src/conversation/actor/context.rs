//! The actor's answer to conversation.context (docs/protocol.md, "What fills the context"): the next request's parts
//! as the next turn would build them now, the model's limits, and what the log says of counts, compactions and cache
//! use (kept as events are committed: `history::ContextLog`).

// A part of the actor: its imports and private types.
use super::*;
use crate::compact::Limits;
use efr_protocol::wire::{ContextModel, ConversationContextResult, PromptSettings};

impl Actor {
    /// conversation.context: what fills the context of the next request with `model` (absent: the default model).
    /// Nothing is recorded and the model is not called.
    ///
    /// # Errors
    /// `invalid` for a model that models.list does not have, `unavailable` when no model is known.
    pub(super) async fn context(&self, model: Option<String>) -> Result<ConversationContextResult, ErrorBody> {
        let config = self.deps.config();
        let asked = PromptSettings {
            model,
            ..PromptSettings::default()
        };
        let (settings, _) = settings::resolve(&self.deps.models.catalog(), &config, Some(&asked), Origin::Terminal)?;
        let prompt = self.next_prompt(&settings).await;
        let fill = crate::prompt::context::fill(&prompt, self.history.items(), self.history.is_summarised());
        let limits = Limits::of(&config.context, self.deps.models.context_window(&settings.model));
        let logged = self.context_log.clone();
        Ok(ConversationContextResult {
            model: ContextModel {
                id: settings.model,
                window: limits.window,
                window_known: limits.window_known,
                trigger: limits.trigger,
                hard_cap: limits.hard_cap,
                auto: limits.auto,
            },
            counted: logged.counted,
            estimate: fill.estimate,
            parts: fill.parts,
            largest: fill.largest,
            compactions: logged.compactions,
            cache: logged.cache,
        })
    }
}
