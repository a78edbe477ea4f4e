//! prompt.send in the actor: conversation_created for a new conversation, prompt_queued with the outcome under the
//! command id, and the prompt queued with the model's copy of its text.

// A part of the actor: its imports and private types.
use super::*;

/// A prompt ready to queue ([`Actor::prepare_prompt`]).
pub(super) struct PreparedPrompt {
    /// conversation_created (for a new conversation) and prompt_queued.
    pub(super) bodies: Vec<(Option<TurnId>, EventBody)>,
    /// The prompt as the queue keeps it.
    pub(super) queued: Queued,
    /// What prompt.send answers.
    pub(super) result: PromptSendResult,
    /// Whether `bodies` also start its turn (turn_started and what comes with it).
    pub(super) starts: bool,
}

impl PreparedPrompt {
    /// Records what routing decided: the scope in conversation_created, terminal_attached before the prompt (it
    /// belongs to no turn), and prompt.send's `route`.
    fn route(&mut self, routed: crate::conversation::Routed) {
        for (_, body) in &mut self.bodies {
            if let EventBody::ConversationCreated(created) = body {
                created.route.clone_from(&routed.scope);
            }
        }
        let created = usize::from(matches!(
            self.bodies.first(),
            Some((_, EventBody::ConversationCreated(_)))
        ));
        if let Some(attach) = routed.attach {
            self.bodies.insert(created, (None, EventBody::TerminalAttached(attach)));
            self.result.seq += 1;
        }
        self.result.route = Some(routed.route);
    }
}

/// The summary row follows the events that change it: the scope key of conversation_created, and the terminal of
/// terminal_attached (the row's `tty` is the terminal that holds the conversation).
pub(super) fn row_follows(summary: &mut ConversationSummary, bodies: &[(Option<TurnId>, EventBody)]) {
    for (_, body) in bodies {
        match body {
            EventBody::ConversationCreated(created) => {
                if let Some(route) = created.route.as_ref().and_then(|r| serde_json::to_value(r).ok()) {
                    summary.extra.insert("route".to_owned(), route);
                }
            }
            EventBody::TerminalAttached(attached) => {
                summary.extra.insert("tty".to_owned(), attached.tty.clone().into());
            }
            _ => {}
        }
    }
}

impl Actor {
    /// prompt.send, unless the conversation's log is corrupt (the model would get a history with a hole: the user
    /// starts a new conversation instead) or an unclosed turn cannot be closed.
    pub(super) async fn prompt_unless_corrupt(
        &mut self,
        params: PromptSendParams,
        origin: Origin,
        routed: Option<crate::conversation::Routed>,
        me: &mpsc::WeakSender<Command>,
    ) -> Result<PromptSendResult, ErrorBody> {
        let answer = match &self.corrupt {
            _ if self.deleting => Err(ErrorBody::new(ErrorCode::Conflict, "the conversation is being deleted")),
            Some(corrupt) => Err(ErrorBody::internal(corrupt.clone())),
            None => match self.close_unclosed().await {
                Ok(()) => self.prompt(params, origin, routed, me).await,
                Err(error) => Err(error),
            },
        };
        if answer.is_ok() {
            self.note_input(me).await;
        }
        answer
    }

    /// prompt.send: records conversation_created (for a new conversation) and prompt_queued, with the outcome
    /// under the command id, and queues the prompt, or starts its turn when the conversation is idle.
    pub(super) async fn prompt(
        &mut self,
        params: PromptSendParams,
        origin: Origin,
        routed: Option<crate::conversation::Routed>,
        me: &mpsc::WeakSender<Command>,
    ) -> Result<PromptSendResult, ErrorBody> {
        // A command id used before is found by the commit, which refuses it with its stored outcome: no read of the
        // store before it (one hop to a reader thread fewer before the turn's first words). Only a prompt that cannot
        // be prepared now (its settings refused) looks for one first, so a retry still gets its first answer.
        let mut prepared = match self.prepare_prompt(&params, origin, Vec::new()) {
            Ok(prepared) => prepared,
            Err(error) => return self.stored_outcome(params.command_id).await?.ok_or(error),
        };
        if let Some(routed) = routed {
            prepared.route(routed);
        }
        // A prompt that starts at once records its turn's start in the same commit: one sync fewer before the
        // turn's first words reach its subscribers. The events and their order are those of two commits.
        if self.starts_at_once() {
            let mut starting = self.start_bodies(&mut prepared.queued).await;
            prepared.bodies.append(&mut starting);
            prepared.starts = true;
        }
        let result = prepared.result.clone();
        // Such a turn is planned, and its model asked, while that commit is written (`start.rs`).
        let overlapped = prepared.starts && self.overlaps_start(&prepared.queued, params.command_id);
        let stored = match me.upgrade().filter(|_| overlapped) {
            Some(tx) => self.commit_and_start(prepared, &params, &result, tx).await?,
            None => self.commit_prompt(prepared, &params, "prompt.send", &result).await?,
        };
        Ok(stored.unwrap_or(result))
    }

    /// A prompt made ready to queue: its settings resolved, its events, its place in the queue. Nothing changes
    /// until [`Actor::commit_prompt`] (or a commit of the caller's) records its events.
    ///
    /// # Errors
    /// `invalid` for settings outside the catalog.
    pub(super) fn prepare_prompt(
        &self,
        params: &PromptSendParams,
        origin: Origin,
        steers: Vec<u64>,
    ) -> Result<PreparedPrompt, ErrorBody> {
        let config = self.deps.config();
        let (settings, overridden) =
            settings::resolve(&self.deps.models.catalog(), &config, params.settings.as_ref(), origin)?;
        if settings.mode == efr_protocol::wire::Mode::Full {
            settings::full_gate(&config, &self.deps.roots.state.path.join("snapshots"))?;
        }
        let turn_id = TurnId::new();
        let bodies = self.prompt_bodies(params, turn_id, origin, steers);
        let result = PromptSendResult {
            conversation_id: self.id,
            turn_id,
            seq: self.last_seq + bodies.len() as u64,
            settings: Some(settings.clone()),
            overridden: Some(overridden),
            route: None,
        };
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
        let queued = Queued {
            turn_id,
            text,
            settings,
            overridden,
            origin,
            desktop,
            user_prompt: params.text.clone(),
            context: params.context.clone(),
            asked: params.settings.clone(),
            woken: false,
        };
        Ok(PreparedPrompt {
            bodies,
            queued,
            result,
            starts: false,
        })
    }

    /// Commits a prepared prompt's events with `outcome` under the command id of `params`, and queues it last.
    /// `Some`: the outcome that the store already held under that command id (nothing was recorded).
    pub(super) async fn commit_prompt<T: Serialize + DeserializeOwned>(
        &mut self,
        prepared: PreparedPrompt,
        params: &PromptSendParams,
        method: &str,
        outcome: &T,
    ) -> Result<Option<T>, ErrorBody> {
        let (new_conversation, command) = self.prompt_row(&prepared.bodies, params, method, outcome)?;
        if prepared.starts {
            self.count_start();
        }
        if let Err(refused) = self.commit(prepared.bodies, Some(command)).await {
            if prepared.starts {
                self.uncount_start();
            }
            self.forget_prompt(new_conversation);
            return match refused {
                CommitRefused::Duplicate(stored) => decode_outcome(&stored).map(Some),
                CommitRefused::Failed(error) => Err(error),
            };
        }
        if prepared.starts {
            self.started.insert(prepared.queued.turn_id);
        }
        self.note_prompt(params.command_id);
        self.queue.push_back(prepared.queued);
        Ok(None)
    }

    /// Before a prompt's commit: the summary row made (for a new conversation) and following `bodies`, and the write's
    /// outcome under the prompt's command id. Returns whether the conversation is new, and that record.
    ///
    /// # Errors
    /// An outcome that does not serialize; nothing changed then.
    pub(super) fn prompt_row<T: Serialize>(
        &mut self,
        bodies: &[(Option<TurnId>, EventBody)],
        params: &PromptSendParams,
        method: &str,
        outcome: &T,
    ) -> Result<(bool, CommandRecord), ErrorBody> {
        let new_conversation = self.summary.is_none();
        if new_conversation {
            self.summary = Some(self.new_summary(params));
        }
        if let Some(summary) = self.summary.as_mut() {
            row_follows(summary, bodies);
        }
        match self.command_record(params.command_id, method, outcome) {
            Ok(command) => Ok((new_conversation, command)),
            Err(error) => {
                self.forget_prompt(new_conversation);
                Err(error)
            }
        }
    }

    /// After a prompt's commit failed: a conversation that was never committed does not exist yet.
    pub(super) fn forget_prompt(&mut self, new_conversation: bool) {
        if new_conversation && self.last_seq == 0 {
            self.summary = None;
        }
    }

    /// The events of a prompt: conversation_created for a new conversation, then prompt_queued.
    fn prompt_bodies(
        &self,
        params: &PromptSendParams,
        turn_id: TurnId,
        origin: Origin,
        steers: Vec<u64>,
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
                steers,
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
