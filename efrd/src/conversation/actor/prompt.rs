//! prompt.send in the actor: conversation_created for a new conversation, prompt_queued with the outcome under the
//! command id, and the prompt queued with the model's copy of its text.

// A part of the actor: its imports and private types.
use super::*;

impl Actor {
    /// prompt.send, unless the conversation's log is corrupt (the model would get a history with a hole: the user
    /// starts a new conversation instead) or an unclosed turn cannot be closed.
    pub(super) async fn prompt_unless_corrupt(
        &mut self,
        params: PromptSendParams,
        origin: Origin,
        me: &mpsc::WeakSender<Command>,
    ) -> Result<PromptSendResult, ErrorBody> {
        let answer = match &self.corrupt {
            Some(corrupt) => Err(ErrorBody::internal(corrupt.clone())),
            None => match self.close_unclosed().await {
                Ok(()) => self.prompt(params, origin).await,
                Err(error) => Err(error),
            },
        };
        if answer.is_ok() {
            self.note_input(me).await;
        }
        answer
    }

    /// prompt.send: records conversation_created (for a new conversation) and prompt_queued, with the outcome
    /// under the command id, and queues the prompt.
    pub(super) async fn prompt(
        &mut self,
        params: PromptSendParams,
        origin: Origin,
    ) -> Result<PromptSendResult, ErrorBody> {
        if let Some(stored) = self.stored_outcome(params.command_id).await? {
            return Ok(stored);
        }
        let config = self.deps.config();
        let (settings, overridden) =
            settings::resolve(&self.deps.models.catalog(), &config, params.settings.as_ref(), origin)?;
        let turn_id = TurnId::new();
        let bodies = self.prompt_bodies(&params, turn_id, origin);
        let result = PromptSendResult {
            conversation_id: self.id,
            turn_id,
            seq: self.last_seq + bodies.len() as u64,
            settings: Some(settings.clone()),
            overridden: Some(overridden),
            route: None,
        };
        if self.summary.is_none() {
            self.summary = Some(self.new_summary(&params));
        }
        let command = self.command_record(params.command_id, "prompt.send", &result)?;
        match self.commit(bodies, Some(command)).await {
            Ok(_) => {}
            Err(CommitRefused::Duplicate(stored)) => return decode_outcome(&stored),
            Err(CommitRefused::Failed(error)) => {
                if self.last_seq == 0 {
                    // The conversation was never committed: it does not exist yet.
                    self.summary = None;
                }
                return Err(error);
            }
        }
        // The terminal's context reaches only the model's copy of the prompt (spec), never an event or the store.
        let text = crate::conversation::preamble::user_message(
            &params.text,
            params.context.as_ref().and_then(|c| c.cwd.as_deref()),
            params.last_command.as_ref(),
            &params.recent_commands,
        );
        let desktop = params
            .context
            .as_ref()
            .and_then(|c| c.shell_context.as_ref())
            .and_then(|s| s.desktop.clone());
        self.queue.push_back(Queued {
            turn_id,
            text,
            settings,
            overridden,
            origin,
            desktop,
            user_prompt: params.text.clone(),
        });
        Ok(result)
    }

    /// The events of a prompt: conversation_created for a new conversation, then prompt_queued.
    fn prompt_bodies(
        &self,
        params: &PromptSendParams,
        turn_id: TurnId,
        origin: Origin,
    ) -> Vec<(Option<TurnId>, EventBody)> {
        let context = params.context.clone();
        let mut bodies = Vec::new();
        if self.summary.is_none() {
            bodies.push((
                None,
                EventBody::ConversationCreated(ConversationCreated {
                    cwd: context.as_ref().and_then(|c| c.cwd.clone()),
                    tty: context.as_ref().and_then(|c| c.tty.clone()),
                    route: None,
                }),
            ));
        }
        bodies.push((
            Some(turn_id),
            EventBody::PromptQueued(PromptQueued {
                text: params.text.clone(),
                command_id: Some(params.command_id),
                origin,
                context,
                settings: params.settings.clone(),
                steers: Vec::new(),
            }),
        ));
        bodies
    }

    /// The summary row of a new conversation, from its first prompt.
    fn new_summary(&self, params: &PromptSendParams) -> ConversationSummary {
        let now = Timestamp::now();
        ConversationSummary {
            id: self.id,
            // Masked before the cut: a secret cut in half would no longer look like one.
            title: Some(history::title_of(&efr_protocol::mask::mask_secrets(&params.text))),
            status: status_name(ConversationStatus::Idle).to_owned(),
            cwd: params
                .context
                .as_ref()
                .and_then(|c| c.cwd.as_ref())
                .map(|p| p.display().to_string()),
            created_at: now,
            updated_at: now,
            turn_count: 0,
            extra: params
                .context
                .as_ref()
                .and_then(|c| c.tty.clone())
                .map(|tty| serde_json::Map::from_iter([("tty".to_owned(), tty.into())]))
                .unwrap_or_default(),
        }
    }
}
