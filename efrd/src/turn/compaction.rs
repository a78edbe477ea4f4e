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
use tokio_util::sync::CancellationToken;
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
        cancel: &CancellationToken,
    ) -> Result<(), ()> {
        let tokens = self.meter.tokens(&request.history);
        let limits = self.context.limits;
        if limits.auto && self.auto_failed.is_none() && tokens >= limits.trigger {
            match self
                .compact(state, provider, request, CompactTrigger::Auto, tokens, cancel)
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
        cancel: &CancellationToken,
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
            .compact(state, provider, request, CompactTrigger::Overflow, tokens, cancel)
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

    /// Compacts the copy with the turn's items so far. `Err(Some)`: it failed or the turn was interrupted during
    /// it, nothing changed; `Err(None)`: the sink is gone.
    async fn compact(
        &mut self,
        state: &mut CallState,
        provider: &Provider,
        request: &mut ModelRequest,
        trigger: CompactTrigger,
        tokens_before: u64,
        cancel: &CancellationToken,
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
        // An interrupt does not wait for the summary: the compaction is dropped whole, nothing recorded.
        let outcome = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(Some("the turn was interrupted during it".to_owned())),
            outcome = crate::compact::run(input, provider) => outcome,
        };
        let compacted = match outcome {
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use efr_model::{Auth, ProviderConfig, ProviderKind};
    use efr_protocol::events::EventBody;
    use efr_test_support::scripted::{Reply, Script, ScriptedModel, Step, When};

    use super::*;
    use crate::config::context::ContextSection;
    use crate::turn::sink::memory::MemorySink;
    use crate::turn::{TurnPlan, run};

    /// A turn without tools whose copy already fills the window: it compacts before its first model call, and the
    /// sink gets a context draft before and after that call, the first one after the compaction.
    #[tokio::test]
    async fn a_full_copy_compacts_before_the_first_call_and_the_context_is_drafted_around_each_call() {
        let server = ScriptedModel::start(Script {
            steps: vec![Step::Reply(Reply::text("answer").with_usage(300, 20))],
            when: vec![When {
                contains: "<compaction_request>".into(),
                step: Step::Reply(Reply::text("SUMMARY")),
            }],
            ..Script::default()
        })
        .await
        .unwrap();
        let provider = efr_model::Provider::new(
            ProviderConfig::new(ProviderKind::OpenAiCompat, server.base_url()),
            Auth::None,
        )
        .unwrap();
        let mut history = ModelHistory::default();
        history.push_prompt(TurnId::new(), "OLD".repeat(3_000));
        history.push(HistoryItem::AssistantText {
            text: "old answer".into(),
        });
        let turn_id = TurnId::new();
        history.push_prompt(turn_id, "NEW PROMPT".into());
        let mut request = ModelRequest::new("m");
        request.history = history.items().to_vec();
        let limits = Limits::of(&ContextSection::default(), Some(2_000));
        let plan = TurnPlan {
            turn_id,
            request,
            provider,
            history,
            context: TurnContext {
                limits,
                prefix_tokens: 10,
                fresh: "<environment>\n</environment>\n".into(),
            },
            tools: None,
        };
        let sink = Arc::new(MemorySink::default());
        run(plan, sink.clone(), CancellationToken::new()).await;
        let bodies = sink.bodies();
        let compacted = bodies
            .iter()
            .find_map(|b| match b {
                EventBody::ConversationCompacted(c) => Some(c),
                _ => None,
            })
            .expect("a compaction");
        assert_eq!(compacted.trigger, CompactTrigger::Auto);
        assert!(compacted.tokens_before >= limits.trigger && compacted.tokens_after < limits.trigger);
        let drafts = sink.drafts.lock().unwrap().clone();
        assert!(
            matches!(
                drafts[0],
                DraftPart::Compacting {
                    trigger: CompactTrigger::Auto
                }
            ),
            "{drafts:?}"
        );
        let fills: Vec<ContextFill> = drafts
            .iter()
            .filter_map(|d| match d {
                DraftPart::Context(fill) => Some(*fill),
                _ => None,
            })
            .collect();
        assert_eq!(fills.len(), 2, "before and after the call: {drafts:?}");
        assert!(fills[0].tokens < limits.trigger, "after the compaction: {fills:?}");
        assert_eq!(fills[1].tokens, 320, "the provider's count of the call");
        let Some(EventBody::TurnCompleted(done)) = bodies.last() else {
            panic!("{bodies:?}");
        };
        assert_eq!(done.context.map(|c| c.tokens), Some(320));
        let calls = server.requests();
        assert!(
            !calls.last().unwrap().body.to_string().contains("OLDOLD"),
            "the old turn is summarised"
        );
    }
}
