//! A turn's side of compaction (crate::compact): the count before and after each model call, an automatic
//! compaction when the count reaches the trigger, and the overflow path (the provider refused the request as too
//! long: compact, then retry the call once).
//!
//! A compaction runs between model calls, never during a tool call: a command that runs, a question that waits and
//! a command left running in the hidden shell are not touched. What it records is one event through the sink, which
//! also swaps the conversation's copy; the turn then continues from the smaller copy.

use efr_model::{HistoryItem, ModelError, ModelRequest, Provider};
use efr_protocol::ids::TurnId;
use efr_protocol::wire::{CompactTrigger, ContextFill, DraftPart};
use tracing::warn;

use super::CallState;
use crate::compact::{Failed, Limits, Meter, ModelHistory};
use crate::prompt::context::item_bytes;

/// What a turn knows of its model's context, prepared with its plan.
#[derive(Debug, Clone)]
pub struct TurnContext {
    /// The model's limits under `[context]`.
    pub limits: Limits,
    /// The tokens of the pinned prefix (tools and instructions).
    pub prefix_tokens: u64,
    /// The fresh context block (this turn's environment block), sent before a summary.
    pub fresh: String,
}

/// The turn's view of its context: the conversation's copy at the turn's start (or after its last compaction), the
/// meter, and what the turn already tried.
pub(super) struct Window {
    base: ModelHistory,
    context: TurnContext,
    meter: Meter,
    /// An automatic compaction failed in this turn: the turn does not try again (each try is a model call).
    auto_failed: Option<String>,
    /// The overflow retry was spent.
    overflow_retried: bool,
}

/// What to do after a model call that the provider refused as too long.
pub(super) enum Overflow {
    /// Compacted: call the model again.
    Retry,
    /// The turn fails with this message.
    Fail(String),
    /// The sink is gone.
    Lost,
}

impl Window {
    pub(super) fn new(base: ModelHistory, context: TurnContext) -> Self {
        let meter = Meter::new(context.prefix_tokens);
        Self {
            base,
            context,
            meter,
            auto_failed: None,
            overflow_retried: false,
        }
    }

    /// The request's history: the copy, then the turn's items since.
    pub(super) fn items(&self, state: &CallState) -> Vec<HistoryItem> {
        self.base.items().iter().chain(state.history.iter()).cloned().collect()
    }

    /// How full the context is now.
    pub(super) fn fill(&self, request: &ModelRequest) -> ContextFill {
        self.context.limits.fill(self.meter.tokens(&request.history))
    }

    /// Before a model call: the context draft, and an automatic compaction at the trigger. `Err`: the sink is gone.
    pub(super) async fn before_call(
        &mut self,
        state: &mut CallState,
        provider: &Provider,
        request: &mut ModelRequest,
    ) -> Result<(), ()> {
        let tokens = self.meter.tokens(&request.history);
        let limits = self.context.limits;
        if limits.auto && self.auto_failed.is_none() && tokens >= limits.trigger {
            match self
                .compact(state, provider, request, CompactTrigger::Auto, tokens)
                .await
            {
                Ok(()) => {}
                Err(Some(failed)) => {
                    warn!(turn = %state.turn_id, %failed, "an automatic compaction failed; the turn goes on without it");
                    self.auto_failed = Some(failed);
                }
                Err(None) => return Err(()),
            }
        }
        state
            .recorder
            .draft(state.turn_id, DraftPart::Context(self.fill(request)));
        Ok(())
    }

    /// After a model call that ended: the provider's count of it covers the request and the model's answer.
    pub(super) fn after_call(&mut self, state: &CallState, request: &ModelRequest) {
        let request_bytes: u64 = request.history.iter().map(item_bytes).sum();
        self.meter
            .counted(&state.call_usage, request_bytes + state.answer_bytes());
        let tokens = self
            .meter
            .last_count()
            .unwrap_or_else(|| self.meter.tokens(&request.history));
        state
            .recorder
            .draft(state.turn_id, DraftPart::Context(self.context.limits.fill(tokens)));
    }

    /// The provider refused the request as too long (`error`): compact and retry once, else fail with words that
    /// say what happened and what the user can do.
    pub(super) async fn overflowed(
        &mut self,
        state: &mut CallState,
        provider: &Provider,
        request: &mut ModelRequest,
        error: &ModelError,
    ) -> Overflow {
        let window = self.context.limits.window;
        let advice = "start a new conversation, or compact this one with a focus on what matters (`efr compact \
                      --focus TEXT`) and try again";
        if self.overflow_retried {
            return Overflow::Fail(format!(
                "the request does not fit the model's context window ({window} tokens) even after a compaction \
                 ({error}); {advice}"
            ));
        }
        self.overflow_retried = true;
        let tokens = self.meter.tokens(&request.history).max(window);
        match self
            .compact(state, provider, request, CompactTrigger::Overflow, tokens)
            .await
        {
            Ok(()) => Overflow::Retry,
            Err(None) => Overflow::Lost,
            Err(Some(failed)) => Overflow::Fail(format!(
                "the request does not fit the model's context window ({window} tokens) ({error}), and the \
                 compaction that should have made room failed ({failed}); the conversation is as it was: {advice}"
            )),
        }
    }

    /// Compacts the copy with the turn's items so far. `Err(Some)`: it failed, nothing changed; `Err(None)`: the
    /// sink is gone.
    async fn compact(
        &mut self,
        state: &mut CallState,
        provider: &Provider,
        request: &mut ModelRequest,
        trigger: CompactTrigger,
        tokens_before: u64,
    ) -> Result<(), Option<String>> {
        state.recorder.draft(state.turn_id, DraftPart::Compacting { trigger });
        let mut now = self.base.clone();
        now.extend(state.history.iter().cloned());
        let input = crate::compact::Input {
            history: &now,
            running: Some(state.turn_id),
            running_message: state.last_message_index(),
            trigger,
            focus: None,
            limits: self.context.limits,
            tokens_before,
            prefix_tokens: self.context.prefix_tokens,
            request,
            fresh: self.context.fresh.clone(),
        };
        let compacted = match crate::compact::run(input, provider).await {
            Ok(compacted) => compacted,
            Err(failed @ (Failed::Nothing | Failed::Model(_) | Failed::Empty)) => return Err(Some(failed.to_string())),
        };
        let turn_id: TurnId = state.turn_id;
        if let Err(error) = state
            .recorder
            .compacted(turn_id, compacted.compaction, compacted.history.clone())
            .await
        {
            warn!(turn = %turn_id, %error, "a compaction could not be recorded; the turn goes on without it");
            return Err(None);
        }
        self.base = compacted.history;
        state.history.clear();
        self.meter.reset();
        request.history = self.base.items().to_vec();
        Ok(())
    }
}
