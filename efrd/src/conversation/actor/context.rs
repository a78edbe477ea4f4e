//! The actor's answer to conversation.context (docs/protocol.md, "What fills the context"): the next request's parts
//! as the next turn would build them now, the model's limits, and what the log says of counts and cache use.

// A part of the actor: its imports and private types.
use super::*;
use efr_protocol::wire::{ContextCache, ContextCounted, ContextModel, ConversationContextResult, PromptSettings};

/// The window assumed for a model whose window the catalog does not know, in tokens (`window_known` false).
pub(crate) const ASSUMED_WINDOW: u64 = 128_000;

/// How many events one read of the log takes.
const PAGE: u32 = 500;

impl Actor {
    /// conversation.context: what fills the context of the next request with `model` (absent: the default model).
    /// Nothing is recorded and the model is not called.
    ///
    /// # Errors
    /// `invalid` for a model that models.list does not have, `unavailable` when no model is known or the store fails.
    pub(super) async fn context(&self, model: Option<String>) -> Result<ConversationContextResult, ErrorBody> {
        let config = self.deps.config();
        let asked = PromptSettings {
            model,
            ..PromptSettings::default()
        };
        let (settings, _) = settings::resolve(&self.deps.models.catalog(), &config, Some(&asked), Origin::Terminal)?;
        let prompt = self.next_prompt(&settings).await;
        let fill = crate::prompt::context::fill(&prompt, &self.history);
        let known = self.deps.models.context_window(&settings.model);
        let window = known.unwrap_or(ASSUMED_WINDOW);
        let (counted, cache) = self.counts().await?;
        Ok(ConversationContextResult {
            model: ContextModel {
                id: settings.model,
                window,
                window_known: known.is_some(),
                // efrd does not compact yet: the point shown as 100% and the hard cap are the window, and nothing
                // compacts automatically (docs/context.md, "Where to see it").
                trigger: window,
                hard_cap: window,
                auto: false,
            },
            counted,
            estimate: fill.estimate,
            parts: fill.parts,
            largest: fill.largest,
            compactions: Vec::new(),
            cache,
        })
    }

    /// The last real count (the newest turn end whose usage has one) and the sums of the turns' usage, from the log.
    async fn counts(&self) -> Result<(Option<ContextCounted>, ContextCache), ErrorBody> {
        let mut counted = None;
        let mut cache = ContextCache::default();
        let mut seq = 0;
        loop {
            let rows = self
                .deps
                .store
                .events_after(self.id, seq, PAGE)
                .await
                .map_err(ErrorBody::from)?;
            let Some(last) = rows.last() else { break };
            seq = last.seq;
            for row in &rows {
                if !matches!(row.kind.as_str(), "turn_completed" | "turn_failed" | "turn_interrupted") {
                    continue;
                }
                let Ok(event) = serde_json::from_str::<Event>(&row.body) else {
                    warn!(conversation = %self.id, seq = row.seq, "a stored turn end does not parse");
                    continue;
                };
                let (usage, context) = match &event.body {
                    EventBody::TurnCompleted(end) => (end.usage, end.context),
                    EventBody::TurnFailed(end) => (end.usage, end.context),
                    EventBody::TurnInterrupted(end) => (end.usage, end.context),
                    _ => continue,
                };
                if let Some(usage) = usage {
                    cache.turns += 1;
                    cache.input_tokens += usage.input_tokens;
                    cache.cached_input_tokens += usage.cached_input_tokens;
                    cache.cache_write_tokens += usage.cache_write_tokens;
                }
                let tokens = usage
                    .map(|u| u.context_tokens)
                    .filter(|&t| t > 0)
                    .or_else(|| context.map(|c| c.tokens));
                if let (Some(tokens), Some(turn_id)) = (tokens, row.turn_id) {
                    counted = Some(ContextCounted {
                        turn_id,
                        at: row.at,
                        tokens,
                    });
                }
            }
        }
        Ok((counted, cache))
    }
}
