//! conversation.compact in the actor: the gate (no turn runs, no undo writes, no other compaction), the job that runs
//! outside the actor (the summary's model call takes seconds; the actor stays free for subscriptions and prompts,
//! which queue until it ends), and its end: conversation_compacted committed with the outcome under the command id,
//! and the model's copy replaced in the same step.

// A part of the actor: its imports and private types.
use super::*;
use crate::compact::{Compacted, Failed, Limits};
use efr_protocol::wire::{CompactTrigger, ConversationCompactParams, ConversationCompactResult, PromptSettings};

/// A manual compaction to run outside the actor: everything it reads, owned.
#[derive(Debug)]
pub struct CompactJob {
    /// The write's id.
    pub command_id: CommandId,
    /// The user's focus.
    pub focus: Option<String>,
    history: crate::compact::ModelHistory,
    limits: Limits,
    prefix_tokens: u64,
    request: efr_model::ModelRequest,
    fresh: String,
    provider: efr_model::Provider,
}

impl CompactJob {
    /// Runs the compaction (the summary's model call included); records nothing.
    ///
    /// # Errors
    /// As [`crate::compact::run`].
    pub async fn run(&self) -> Result<Compacted, Failed> {
        let input = crate::compact::Input {
            history: &self.history,
            running: None,
            running_message: None,
            trigger: CompactTrigger::Manual,
            focus: self.focus.as_deref(),
            limits: self.limits,
            tokens_before: self.prefix_tokens + crate::prompt::context::items_tokens(self.history.items()),
            prefix_tokens: self.prefix_tokens,
            request: &self.request,
            fresh: self.fresh.clone(),
        };
        crate::compact::run(input, &self.provider).await
    }
}

/// How a conversation.compact begins.
#[derive(Debug)]
pub enum CompactBegin {
    /// The command id was answered before: its stored result.
    Done(Box<ConversationCompactResult>),
    /// Run this job, then end it.
    Run(Box<CompactJob>),
}

impl Actor {
    /// conversation.compact begins: the stored outcome of a repeated command id, or the job, with no turn starting
    /// until it ends.
    ///
    /// # Errors
    /// `busy` while a turn runs, an undo writes or another compaction runs; `conflict` with nothing to compact;
    /// `unauthorized` without the provider's key; `not_found` for a conversation without events.
    pub(super) async fn begin_compact(&mut self, params: ConversationCompactParams) -> Result<CompactBegin, ErrorBody> {
        if let Some(stored) = self.stored_outcome(params.command_id).await? {
            return Ok(CompactBegin::Done(Box::new(stored)));
        }
        if self.summary.is_none() {
            return Err(ErrorBody::new(
                ErrorCode::NotFound,
                format!("no conversation {}", self.id),
            ));
        }
        // A turn whose end is recorded has handed over its history: a client that saw the end may compact at once.
        if self.live_turn().is_some() || self.undoing || self.compacting || !self.queue.is_empty() {
            return Err(ErrorBody::new(
                ErrorCode::Busy,
                "a turn, an undo or a compaction runs in this conversation; compact when it ends",
            ));
        }
        if self.history.turns().is_empty() {
            return Err(ErrorBody::new(ErrorCode::Conflict, Failed::Nothing.to_string()));
        }
        let config = self.deps.config();
        let (settings, _) = settings::resolve(
            &self.deps.models.catalog(),
            &config,
            Some(&PromptSettings::default()),
            Origin::Terminal,
        )?;
        let provider = self.deps.models.provider_for_turn()?;
        let prompt = self.next_prompt(&settings).await;
        let mut request = efr_model::ModelRequest::new(settings.model.clone());
        request.instructions.clone_from(&prompt.instructions);
        request.tools.clone_from(&prompt.tools);
        request.effort.clone_from(&settings.effort);
        let sizes = &prompt.sizes;
        let job = CompactJob {
            command_id: params.command_id,
            focus: params.focus,
            history: self.history.clone(),
            limits: Limits::of(&config.context, self.deps.models.context_window(&settings.model)),
            prefix_tokens: crate::prompt::context::tokens(sizes.tools + sizes.base + sizes.mode + sizes.project),
            request,
            fresh: prompt.environment.clone(),
            provider,
        };
        self.compacting = true;
        Ok(CompactBegin::Run(Box::new(job)))
    }

    /// conversation.compact ends: conversation_compacted with the outcome under the command id and the model's copy
    /// replaced, or the conversation as it was with the reason.
    ///
    /// # Errors
    /// `unavailable` when the summary's model call failed or the store failed; `conflict` when the model has nothing
    /// to summarise.
    pub(super) async fn end_compact(
        &mut self,
        command_id: CommandId,
        outcome: Result<Compacted, Failed>,
    ) -> Result<ConversationCompactResult, ErrorBody> {
        self.compacting = false;
        let compacted = outcome.map_err(|failed| {
            let code = match failed {
                Failed::Nothing => ErrorCode::Conflict,
                Failed::Model(_) | Failed::Empty => ErrorCode::Unavailable,
            };
            ErrorBody::new(code, format!("{failed}; the conversation is as it was"))
        })?;
        let result = ConversationCompactResult {
            seq: self.last_seq + 1,
            compaction: compacted.compaction.clone(),
        };
        let command = self.command_record(command_id, "conversation.compact", &result)?;
        let body = EventBody::ConversationCompacted(compacted.compaction);
        match self.commit(vec![(None, body)], Some(command)).await {
            Ok(_) => {}
            Err(CommitRefused::Duplicate(stored)) => return decode_outcome(&stored),
            Err(CommitRefused::Failed(error)) => return Err(error),
        }
        self.history = compacted.history;
        Ok(result)
    }
}

impl Actor {
    /// A compaction in the running turn `turn_id`: conversation_compacted committed, then the turn's smaller copy
    /// taken; a failed commit keeps the copy as it was (the turn goes on without the compaction).
    ///
    /// # Errors
    /// The store's error.
    pub(super) async fn compacted_in_turn(
        &mut self,
        turn_id: TurnId,
        compaction: efr_protocol::wire::Compaction,
        history: crate::compact::ModelHistory,
    ) -> Result<u64, ErrorBody> {
        let body = EventBody::ConversationCompacted(compaction);
        self.commit(vec![(Some(turn_id), body)], None)
            .await
            .map_err(ErrorBody::from)?;
        self.history = history;
        if let Some(running) = self.running.as_mut().filter(|r| r.turn_id == turn_id) {
            running.compacting = None;
        }
        Ok(self.last_seq)
    }

    /// A draft of the running turn: kept as the turn's live state (the drafts of conversation.subscribe carry it to
    /// subscribers that ask for drafts).
    pub(super) fn draft(&mut self, turn_id: TurnId, part: &efr_protocol::wire::DraftPart) {
        let Some(running) = self.running.as_mut().filter(|r| r.turn_id == turn_id) else {
            return;
        };
        match part {
            efr_protocol::wire::DraftPart::Context(fill) => {
                running.context = Some(*fill);
                running.compacting = None;
            }
            efr_protocol::wire::DraftPart::Compacting { trigger } => running.compacting = Some(*trigger),
            _ => {}
        }
    }
}
