//! The actor's answer to conversation.context (docs/protocol.md, "What fills the context"): the next request's parts
//! as the next turn would build them now, the model's limits, and what the log says of counts and cache use.

// A part of the actor: its imports and private types.
use super::*;
use crate::compact::Limits;
use efr_protocol::wire::{
    ContextCache, ContextCompaction, ContextCounted, ContextModel, ConversationContextResult, PromptSettings,
};

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
        let fill = crate::prompt::context::fill(&prompt, self.history.items(), self.history.is_summarised());
        let limits = Limits::of(&config.context, self.deps.models.context_window(&settings.model));
        let logged = self.counts().await?;
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

    /// The last real count since the newest compaction (the newest turn end whose usage has one), the sums of the
    /// turns' usage and the compactions, from the log.
    async fn counts(&self) -> Result<Logged, ErrorBody> {
        let mut counted = None;
        let mut cache = ContextCache::default();
        let mut compactions = Vec::new();
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
                if !matches!(
                    row.kind.as_str(),
                    "turn_completed" | "turn_failed" | "turn_interrupted" | "conversation_compacted"
                ) {
                    continue;
                }
                let Ok(event) = serde_json::from_str::<Event>(&row.body) else {
                    warn!(conversation = %self.id, seq = row.seq, "a stored turn end does not parse");
                    continue;
                };
                let (usage, context) = match &event.body {
                    EventBody::ConversationCompacted(compaction) => {
                        // A count from before a compaction no longer describes the copy.
                        counted = None;
                        cache.input_tokens += compaction.usage.input_tokens;
                        cache.cached_input_tokens += compaction.usage.cached_input_tokens;
                        cache.cache_write_tokens += compaction.usage.cache_write_tokens;
                        compactions.push(ContextCompaction {
                            seq: row.seq,
                            at: row.at,
                            trigger: compaction.trigger,
                            tokens_before: compaction.tokens_before,
                            tokens_after: compaction.tokens_after,
                        });
                        continue;
                    }
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
        Ok(Logged {
            counted,
            cache,
            compactions,
        })
    }
}

/// What the log says of a conversation's context.
struct Logged {
    counted: Option<ContextCounted>,
    cache: ContextCache,
    compactions: Vec<ContextCompaction>,
}
