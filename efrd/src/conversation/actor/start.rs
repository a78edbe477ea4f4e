//! A prompt that finds its conversation idle starts its turn at once, and its start's commit overlaps the turn's
//! plan and model request (docs/adr/0033-a-lean-daemon.md, "First delta").
//!
//! prompt_queued and turn_started go to the store's writer in one commit. While the writer writes and syncs it, the
//! actor plans the turn and starts its task, whose model request goes out meanwhile. The turn's recorder waits at
//! a [`StartGate`]: none of its records, questions or drafts goes anywhere before the start landed, and the actor
//! takes no other command before it landed either, so the log and every subscriber see the start first, as before.
//!
//! When the commit fails, the gate refuses the turn's records and the turn is stopped; what planning it changed is
//! taken back (the model's copy of the prompt, what the model was told, the last settings), and the turn's task
//! leaves nothing behind when it ends ([`Running::discarded`]). The model request it sent is cancelled; that request
//! is the only trace, and a provider may count it. So a prompt whose command id this actor committed before (a
//! client's retry after a lost reply, which the store refuses with its first outcome) is not started this way: it
//! goes to the store first, as a queued prompt does. A refused commit is otherwise a store that fails (a full disk,
//! a read-only file), where the prompt fails anyway.

// A part of the actor: its imports and private types.
use super::*;

use super::prompt::PreparedPrompt;

/// What planning a turn changes in the actor, kept to be put back when its start is not committed.
struct Before {
    prompt: crate::prompt::PromptState,
    last_prompt: Option<crate::prompt::TurnPrompt>,
    last_settings: Option<(TurnSettings, efr_protocol::wire::Overridden)>,
}

impl Actor {
    /// Whether the prompt `queued` under `command_id` can be planned while its start is committed: it is no retry of
    /// a prompt this actor committed, and planning it commits nothing and takes nothing that could not be put back
    /// (no job notices, no notices of commands left running).
    pub(super) fn overlaps_start(&self, queued: &Queued, command_id: CommandId) -> bool {
        !queued.woken
            && self.job_notices.is_empty()
            && !self.open_calls.has_notices()
            && !self.recent_prompts.contains(&command_id)
    }

    /// Keeps the command id of a prompt just committed ([`history::RECENT_PROMPTS`] of them).
    pub(super) fn note_prompt(&mut self, command_id: CommandId) {
        history::note_prompt(&mut self.recent_prompts, command_id);
    }

    /// Commits a prepared prompt that starts its turn ([`PreparedPrompt::starts`]) with `outcome` under its command
    /// id, and starts the turn meanwhile ([module docs](self)). `Some`: the outcome that the store already held under
    /// that command id (nothing was recorded; the turn was stopped).
    ///
    /// # Errors
    /// The store's, when it refused the commit: nothing was recorded and no turn runs.
    pub(super) async fn commit_and_start(
        &mut self,
        prepared: PreparedPrompt,
        params: &PromptSendParams,
        outcome: &PromptSendResult,
        tx: mpsc::Sender<Command>,
    ) -> Result<Option<PromptSendResult>, ErrorBody> {
        let (new_conversation, command) = self.prompt_row(&prepared.bodies, params, "prompt.send", outcome)?;
        self.count_start();
        let sent = self.send(prepared.bodies, Some(command)).await;
        let (staged, committing) = match sent {
            Ok(sent) => sent,
            Err(refused) => return self.not_started(refused, new_conversation),
        };
        let queued = prepared.queued;
        let turn_id = queued.turn_id;
        let before = Before {
            prompt: self.prompt.clone(),
            // The plan sets its own: the last one is taken, not copied.
            last_prompt: self.last_prompt.take(),
            last_settings: self.last_settings.replace((queued.settings.clone(), queued.overridden)),
        };
        let gate = StartGate::pending();
        let planned = match self.plan_turn(&queued, "").await {
            Ok(plan) => {
                self.launch(&queued, plan, tx, Arc::clone(&gate));
                Ok(())
            }
            Err(error) => Err(error),
        };
        let outcome = committing.await;
        match self.landed(staged, outcome) {
            Ok(_) => {
                self.note_prompt(params.command_id);
                self.started.insert(turn_id);
                gate.land(&self.drafts);
                if let Err(error) = planned {
                    self.fail_plan(turn_id, error).await;
                }
                Ok(None)
            }
            Err(refused) => {
                gate.refuse();
                self.take_back(turn_id, before);
                self.not_started(refused, new_conversation)
            }
        }
    }

    /// After the start's commit failed: the turn planned for it is stopped and discarded, and what planning it
    /// changed is put back.
    fn take_back(&mut self, turn_id: TurnId, before: Before) {
        if let Some(running) = self.running.as_mut().filter(|r| r.turn_id == turn_id) {
            running.cancel.cancel();
            // No gate lets a client find it: it never started.
            running.ended = true;
            running.discarded = true;
        }
        self.history.pop_prompt(turn_id);
        self.prompt = before.prompt;
        self.last_prompt = before.last_prompt;
        self.last_settings = before.last_settings;
    }

    /// A prompt whose commit was refused: the summary row as it was; the stored outcome of a repeated command id,
    /// else the store's error.
    fn not_started(
        &mut self,
        refused: CommitRefused,
        new_conversation: bool,
    ) -> Result<Option<PromptSendResult>, ErrorBody> {
        self.uncount_start();
        self.forget_prompt(new_conversation);
        match refused {
            CommitRefused::Duplicate(stored) => decode_outcome(&stored).map(Some),
            CommitRefused::Failed(error) => Err(error),
        }
    }
}
