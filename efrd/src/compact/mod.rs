//! Compaction: a conversation that outlives its model's context window (docs/context.md, "Compaction").
//!
//! When the model's copy of a conversation nears the window, efrd asks the conversation's own model for a summary of
//! the older turns and sends that summary instead of them from then on. Three things start one (the wire's
//! `trigger`): the count reaching `[context] trigger_percent` of the window before a model call (`auto`, in a turn),
//! conversation.compact (`manual`, between turns, with an optional focus), and a provider that refuses a request as
//! too long (`overflow`: compact, then retry the call once).
//!
//! A compaction is one event, conversation_compacted, with the summary and the numbers; it is committed whole or not
//! at all, so a daemon killed during one comes back with the conversation either compacted or not. The log keeps
//! every event: only the model's copy ([`ModelHistory`]) shrinks.
//!
//! Parts: [`history`] (the copy and what a compaction makes of it), [`mod@cut`] (what is summarised, kept, shortened),
//! [`meter`] (how full the context is), and here the summary's request and model call.

pub mod cut;
pub mod history;
pub mod meter;

use efr_model::{HistoryItem, ModelError, ModelEvent, ModelRequest, Provider, Usage};
use efr_protocol::ids::{CompactionId, TurnId};
use efr_protocol::wire::{CompactTrigger, Compaction};
use futures::StreamExt;

pub use self::cut::{Cut, CutRules, cut};
pub use self::history::ModelHistory;
pub use self::meter::{Limits, Meter};
use crate::prompt::context::items_tokens;

/// The request that asks for the summary, in `efrd/src/prompt/text/compact.md`.
pub const REQUEST: &str = include_str!("../prompt/text/compact.md");

/// The most output tokens a summary may take: a tenth of the window, from 512 to 8192 (a small local model's window
/// must still hold what the summary covers).
#[must_use]
pub fn summary_max_output(window: u64) -> u32 {
    u32::try_from((window / 10).clamp(512, 8_192)).unwrap_or(8_192)
}

/// What a compaction needs.
#[derive(Debug, Clone)]
pub struct Input<'a> {
    /// The model's copy now, the running turn's work included.
    pub history: &'a ModelHistory,
    /// The running turn, when the compaction runs in one.
    pub running: Option<TurnId>,
    /// The running turn's last message index so far, when it has one (`through_message`).
    pub running_message: Option<u32>,
    /// What started it.
    pub trigger: CompactTrigger,
    /// The user's focus (manual only).
    pub focus: Option<&'a str>,
    /// The limits of the conversation's model.
    pub limits: Limits,
    /// The count before, in tokens.
    pub tokens_before: u64,
    /// The tokens of the pinned prefix (tools and instructions).
    pub prefix_tokens: u64,
    /// The turn's request, whose model, instructions, tools and effort the summary's request shares (so that the
    /// provider's prompt cache of the prefix hits).
    pub request: &'a ModelRequest,
    /// The fresh context block (the environment block as read now).
    pub fresh: String,
}

/// A compaction that worked: its event's members and the copy after it.
#[derive(Debug, Clone)]
pub struct Compacted {
    /// The members of conversation_compacted.
    pub compaction: Compaction,
    /// The model's copy after it.
    pub history: ModelHistory,
}

/// Why a compaction did not happen; the conversation is as it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Failed {
    /// Nothing to summarise yet.
    #[error("there is nothing to compact yet: the conversation has no finished turn")]
    Nothing,
    /// The summary's model call failed.
    #[error("the summary's model call failed: {0}")]
    Model(ModelError),
    /// The model answered without text.
    #[error("the model answered the summary's request without text")]
    Empty,
}

/// The cut rules of `input`: keep at most half the trigger whole; carry what fits the window beside the prefix, the
/// request and the summary's output.
#[must_use]
pub fn rules(limits: &Limits, prefix_tokens: u64) -> CutRules {
    let reserve = prefix_tokens
        + crate::prompt::context::tokens(REQUEST.len() as u64)
        + u64::from(summary_max_output(limits.window));
    CutRules {
        keep_turns: limits.keep_turns,
        keep_budget: limits.trigger / 2,
        material_budget: limits.hard_cap.saturating_sub(reserve).max(1),
    }
}

/// The summary's request: the turn's model, instructions and tools, what the cut carries, and the compaction request
/// last (after the focus, when there is one).
#[must_use]
pub fn summary_request(
    base: &ModelRequest,
    material: Vec<HistoryItem>,
    focus: Option<&str>,
    max_output: u32,
) -> ModelRequest {
    let mut request = base.clone();
    request.history = material;
    let mut ask = REQUEST.to_owned();
    if let Some(focus) = focus.map(str::trim).filter(|f| !f.is_empty()) {
        ask.push_str("\nThe user asks the summary to focus on this above all:\n<focus>\n");
        ask.push_str(focus);
        ask.push_str("\n</focus>\n");
    }
    request.history.push(HistoryItem::UserText { text: ask });
    request.max_output = Some(max_output);
    request
}

/// Runs a compaction: the cut, the summary's model call, the copy after it. Records nothing: the caller commits
/// conversation_compacted and takes the copy in one step.
///
/// # Errors
/// [`Failed`] when there is nothing to summarise or the model call fails or answers nothing.
pub async fn run(input: Input<'_>, provider: &Provider) -> Result<Compacted, Failed> {
    let rules = rules(&input.limits, input.prefix_tokens);
    let cut = cut(input.history, input.running, &rules).ok_or(Failed::Nothing)?;
    let max_output = summary_max_output(input.limits.window);
    let request = summary_request(input.request, cut.material.clone(), input.focus, max_output);
    let (summary, usage) = summarise(provider, &request).await?;
    Ok(finish(&input, &cut, summary, usage))
}

/// The compaction of `cut` with `summary`: its members and the copy after it. Pure, so that its CPU time can be
/// measured apart from the model.
#[must_use]
pub fn finish(input: &Input<'_>, cut: &Cut, summary: String, usage: Usage) -> Compacted {
    let mut compaction = Compaction {
        compaction_id: CompactionId::new(),
        trigger: input.trigger,
        focus: input.focus.map(str::to_owned),
        model: input.request.model.clone(),
        window: input.limits.window,
        limit: input.limits.trigger,
        tokens_before: input.tokens_before,
        tokens_after: 0,
        through_turn: cut.through_turn,
        through_message: cut.covers_running.then_some(input.running_message).flatten(),
        kept_turns: cut.kept_turns,
        pruned_outputs: cut.pruned_outputs,
        pruned_tokens: cut.pruned_tokens,
        omitted_turns: cut.omitted_turns,
        omitted_messages: cut.omitted_messages,
        summary,
        usage: meter::wire_usage(&usage, &usage),
        fresh: Some(input.fresh.clone()),
    };
    let history = input.history.compacted(&compaction, input.running);
    compaction.tokens_after = input.prefix_tokens + items_tokens(history.items());
    Compacted { compaction, history }
}

/// The summary's model call: its text and usage.
async fn summarise(provider: &Provider, request: &ModelRequest) -> Result<(String, Usage), Failed> {
    let mut stream = std::pin::pin!(provider.stream(request));
    let mut text = String::new();
    let mut usage = Usage::default();
    while let Some(event) = stream.next().await {
        match event.map_err(Failed::Model)? {
            ModelEvent::TextDelta { delta, .. } => text.push_str(&delta),
            ModelEvent::Usage(u) => meter::add_usage(&mut usage, &u),
            ModelEvent::Stop { .. } => break,
            // Reasoning and tool calls are not part of a summary.
            _ => {}
        }
    }
    if text.trim().is_empty() {
        return Err(Failed::Empty);
    }
    Ok((text, usage))
}

#[cfg(test)]
mod tests;
