//! The actor's turns: turn.interrupt, starting the next queued prompt (its settings, its tools, the model's copy of
//! the prompt with its environment block and notices), and what a turn's end changes.

// A part of the actor: its imports and private types.
use super::*;

impl Actor {
    /// turn.interrupt: records turn_interrupt_requested and cancels the turn's model call; the turn then records
    /// turn_interrupted with what it has.
    pub(super) async fn interrupt(
        &mut self,
        params: TurnInterruptParams,
        origin: Origin,
    ) -> Result<TurnInterruptResult, ErrorBody> {
        if let Some(stored) = self.stored_outcome(params.command_id).await? {
            return Ok(stored);
        }
        // A turn whose end is committed runs no more, though its task may be on its way out.
        let Some(running) = self.live_turn() else {
            return Err(ErrorBody::new(ErrorCode::Conflict, "no turn runs in this conversation"));
        };
        if params.turn_id.is_some_and(|id| id != running.turn_id) {
            return Err(ErrorBody::new(ErrorCode::Conflict, "the named turn does not run"));
        }
        let turn_id = running.turn_id;
        if running.interrupt_requested {
            // Asked before under another command id: nothing new to record.
            return Err(ErrorBody::new(
                ErrorCode::Conflict,
                "an interrupt of this turn was already requested",
            ));
        }
        // What it resends and withdraws is recorded in the same commit (spec).
        let mut extras = self.interrupt_extras(&params, origin)?;
        let result = TurnInterruptResult {
            turn_id,
            seq: self.last_seq + 1,
            resent: extras.resent.as_ref().map(|(resent, _)| resent.clone()),
            withdrawn: extras.withdrawn.clone(),
            withdrawn_steers: extras.withdrawn_steers.clone(),
        };
        let command = self.command_record(params.command_id, "turn.interrupt", &result)?;
        let body = EventBody::TurnInterruptRequested(TurnInterruptRequested { origin });
        let mut bodies = vec![(Some(turn_id), body)];
        bodies.append(&mut extras.bodies);
        match self.commit(bodies, Some(command)).await {
            Ok(_) => {}
            Err(CommitRefused::Duplicate(stored)) => return decode_outcome(&stored),
            Err(CommitRefused::Failed(error)) => return Err(error),
        }
        self.apply_interrupt_extras(extras);
        if let Some(running) = self.running.as_mut() {
            running.interrupt_requested = true;
            running.cancel.cancel();
        }
        // The jobs the model started in the turn stop with it (no process outlives an interrupt); in a task, as
        // their ends are recorded through this actor.
        let jobs = Arc::clone(&self.deps.jobs);
        let conversation = self.id;
        tokio::spawn(async move {
            jobs.stop_turn(conversation, turn_id, efr_protocol::wire::JobStopBy::User)
                .await;
        });
        // An interrupt answers the turn's open questions: deny.
        let open: Vec<CallId> = self
            .approvals
            .iter()
            .filter(|(_, p)| p.turn_id == turn_id)
            .map(|(id, _)| id.clone())
            .collect();
        for call_id in open {
            self.resolve(turn_id, call_id, ApprovalDecision::Deny, None).await;
        }
        Ok(result)
    }

    /// Starts the next queued prompt when no turn runs.
    pub(super) async fn start_next(&mut self, me: &mpsc::WeakSender<Command>) {
        while self.running.is_none() && !self.undoing && !self.compacting && !self.deleting {
            let Some(mut queued) = self.queue.pop_front() else {
                return;
            };
            let Some(tx) = me.upgrade() else { return };
            let turn_id = queued.turn_id;
            // A prompt.send that found the conversation idle recorded its turn's start with its prompt.
            if !self.started.contains(&turn_id) && !self.record_start(&mut queued).await {
                // The prompt stays queued; the next prompt or a restart retries it.
                self.queue.push_front(queued);
                return;
            }
            self.last_settings = Some((queued.settings.clone(), queued.overridden));
            let job_block = self.record_job_notices(&queued).await;
            match self.plan_turn(&queued, &job_block).await {
                Ok(plan) => self.launch(&queued, plan, tx, StartGate::open()),
                Err(error) => self.fail_plan(turn_id, error).await,
            }
        }
    }

    /// Runs `plan` as the running turn, its recorder behind `gate`.
    pub(super) fn launch(&mut self, queued: &Queued, plan: TurnPlan, tx: mpsc::Sender<Command>, gate: Arc<StartGate>) {
        let settings = queued.settings.clone();
        let full = settings.mode == efr_protocol::wire::Mode::Full;
        let cancel = CancellationToken::new();
        let steering = Arc::new(std::sync::atomic::AtomicBool::new(false));
        self.running = Some(Running {
            turn_id: queued.turn_id,
            started_at: Timestamp::now(),
            settings,
            cancel: cancel.clone(),
            interrupt_requested: false,
            context: None,
            compacting: None,
            steers: Vec::new(),
            steering: Arc::clone(&steering),
            answered: false,
            prompt_context: queued.context.clone(),
            asked: queued.asked.clone(),
            ended: false,
            discarded: false,
        });
        self.deps.running_turns.fetch_add(1, Ordering::Relaxed);
        if full {
            // A reload that loosens permissions waits for it (docs/adr/0029-full-mode.md).
            self.deps.config.full_turn_started();
        }
        let recorder: Sink = Arc::new(crate::conversation::Recorder {
            tx: tx.clone(),
            drafts: Arc::clone(&self.drafts),
            steering,
            start: gate,
        });
        tokio::spawn(run_turn(plan, recorder, cancel, tx));
    }

    /// Whether a prompt queued now would start at once: no turn runs, none waits, nothing holds the queue.
    pub(super) fn starts_at_once(&self) -> bool {
        self.running.is_none() && self.queue.is_empty() && !self.undoing && !self.compacting && !self.deleting
    }

    /// Records a turn's events (its history goes in with its end); the end makes the row idle in the same commit.
    pub(super) async fn record(
        &mut self,
        turn_id: Option<TurnId>,
        bodies: Vec<EventBody>,
        history: Vec<HistoryItem>,
    ) -> Result<u64, ErrorBody> {
        // The turn's history goes in with its end, committed or not (as `turn_ended` would add it):
        // a client that sees the end and asks for the context finds the turn there.
        self.history.extend(history);
        let ends = bodies.iter().any(ends_turn);
        if ends {
            // The row says idle in the same commit as the turn's end.
            self.finish_turn_status();
        }
        let mut bodies: Vec<(Option<TurnId>, EventBody)> = bodies.into_iter().map(|body| (turn_id, body)).collect();
        if ends && let Some(withdrawn) = turn_id.and_then(|id| self.unread_at_end(id)) {
            // Before the end: a steer that no model call read (the turn failed or stopped first) is taken back,
            // never left as if it waited.
            let at = bodies.len() - 1;
            bodies.insert(at, (turn_id, withdrawn));
        }
        let answer = self
            .commit(bodies, None)
            .await
            .map(|_| self.last_seq)
            .map_err(ErrorBody::from);
        if ends
            && answer.is_ok()
            && let Some(running) = self.running.as_mut().filter(|r| Some(r.turn_id) == turn_id)
        {
            // A client that read the end expects the turn over: the gates read this mark, not the task's exit.
            running.ended = true;
        }
        answer
    }

    /// Records a queued prompt's turn_started (with sandbox_unavailable when its mode's sandbox cannot run, its
    /// settings then fallen back) and counts the turn; `false` when the commit failed, which changes nothing.
    async fn record_start(&mut self, queued: &mut Queued) -> bool {
        let turn_id = queued.turn_id;
        let bodies = self.start_bodies(queued).await;
        self.count_start();
        if let Err(error) = self.commit(bodies, None).await {
            warn!(conversation = %self.id, %turn_id, error = %error.body(), "cannot start a turn");
            self.uncount_start();
            return false;
        }
        self.started.insert(turn_id);
        true
    }

    /// The events that start `queued`'s turn: turn_started, and sandbox_unavailable when its mode's sandbox cannot
    /// run (its settings then fall back here).
    pub(super) async fn start_bodies(&self, queued: &mut Queued) -> Vec<(Option<TurnId>, EventBody)> {
        let turn_id = queued.turn_id;
        // Auto's sandbox is checked here, at the turn's start (the probe is cached; the first one takes tens of
        // milliseconds): prompt.send stays fast, and a queued prompt is judged by the sandbox of its own start.
        // Cautious's reads run in the read-only sandbox, so a cautious turn is told when it cannot run either.
        let unavailable = match queued.settings.mode {
            efr_protocol::wire::Mode::Auto => {
                let probe = self.deps.sandbox.current().await;
                settings::sandbox_fallback(&mut queued.settings, &probe.status)
            }
            efr_protocol::wire::Mode::Cautious => {
                let probe = self.deps.sandbox.current().await;
                settings::cautious_uncontained(&queued.settings, &probe.status, probe.landlock_only)
            }
            _ => None,
        };
        let started = EventBody::TurnStarted(TurnStarted {
            settings: Some(queued.settings.clone()),
            overridden: Some(queued.overridden),
        });
        let mut bodies = vec![(Some(turn_id), started)];
        if let Some(unavailable) = unavailable {
            bodies.push((Some(turn_id), EventBody::SandboxUnavailable(unavailable)));
        }
        bodies
    }

    /// Counts a turn that starts in the summary row, before the commit that records its start.
    pub(super) fn count_start(&mut self) {
        if let Some(summary) = self.summary.as_mut() {
            summary.turn_count += 1;
            summary.status = status_name(ConversationStatus::Running).to_owned();
        }
    }

    /// Takes back [`Actor::count_start`] when that commit failed.
    pub(super) fn uncount_start(&mut self) {
        if let Some(summary) = self.summary.as_mut() {
            summary.turn_count -= 1;
            summary.status = status_name(ConversationStatus::Idle).to_owned();
        }
    }

    /// Records the notices of background jobs that go with `queued`'s turn; returns the block that tells its model.
    async fn record_job_notices(&mut self, queued: &Queued) -> String {
        let (job_bodies, job_block) = self.take_job_notices(queued.woken);
        if !job_bodies.is_empty() {
            let turn_id = queued.turn_id;
            let bodies = job_bodies.into_iter().map(|b| (Some(turn_id), b)).collect();
            if let Err(error) = self.commit(bodies, None).await {
                warn!(conversation = %self.id, %turn_id, error = %error.body(), "cannot record a turn's job notices");
            }
        }
        job_block
    }

    /// The plan of a started turn: its tools, its prompt (with `job_block` and the notices of commands left running
    /// that ended since), the model's copy of the prompt in the history. Commits nothing.
    ///
    /// # Errors
    /// Why the turn cannot be planned ([`Actor::fail_plan`] records it).
    pub(super) async fn plan_turn(&mut self, queued: &Queued, job_block: &str) -> Result<TurnPlan, ErrorBody> {
        let turn_id = queued.turn_id;
        // Commands left running that ended since the last turn: the model's copy of the prompt says so (never
        // an event: the log has their shell_command_ended).
        let notices = self.open_calls.take_notices();
        let text = if notices.is_empty() {
            format!("{job_block}{}", queued.text)
        } else {
            let lines: String = notices.iter().map(|n| format!("- {n}\n")).collect();
            format!("{job_block}<shell_notices>\n{lines}</shell_notices>\n\n{}", queued.text)
        };
        let mut tools = self
            .tool_env(
                turn_id,
                &queued.settings,
                queued.origin,
                queued.desktop.clone(),
                &queued.user_prompt,
            )
            .await;
        tools.jobs = Some(crate::turn::env::TurnJobs {
            registry: std::sync::Arc::clone(&self.deps.jobs),
            conversation_id: self.id,
            in_woken_turn: queued.woken,
        });
        let prompt = self.turn_prompt(&queued.settings, &tools).await;
        self.history.push_prompt(turn_id, format!("{}{text}", prompt.preamble));
        let planned = turn::plan::plan(
            &self.deps.config(),
            &self.deps.models,
            turn_id,
            &queued.settings,
            &self.history,
            &prompt,
            Some(tools),
        );
        self.last_prompt = Some(prompt);
        planned
    }

    /// A started turn that cannot be planned ends here: turn_failed with `error`.
    pub(super) async fn fail_plan(&mut self, turn_id: TurnId, error: ErrorBody) {
        let failed = EventBody::TurnFailed(TurnFailed {
            error,
            usage: None,
            context: None,
            changes: None,
            undo: None,
        });
        self.finish_turn_status();
        if let Err(error) = self.commit(vec![(Some(turn_id), failed)], None).await {
            warn!(conversation = %self.id, %turn_id, error = %error.body(), "cannot record turn_failed");
        }
    }

    /// What the turn's tool calls share. The project of a conversation is its working directory (the first
    /// prompt's cwd) until projects come; the hidden shell starts there.
    pub(super) async fn tool_env(
        &mut self,
        turn_id: TurnId,
        settings: &TurnSettings,
        origin: Origin,
        desktop: Option<efr_protocol::wire::Desktop>,
        user_prompt: &str,
    ) -> ToolEnv {
        let (cwd, project) = self.place();
        // Read once per turn: auto's exits mark a host of these remotes `project_remote`.
        let remotes = project.as_deref().map(project_remotes).unwrap_or_default();
        let presence = project
            .as_ref()
            .map(|root| Arc::new(self.deps.project_turns.enter(root.clone(), turn_id)));
        let snapshots = project.as_ref().map(|_| Arc::clone(&self.deps.snapshots));
        // The config's undo bounds as they are at the turn's start (a reload applies to the next turn).
        let undo = &self.deps.config().undo;
        self.deps.snapshots.set_bounds(undo.undo_bounds(), undo.trash_bounds());
        // The config's masks as they are at the turn's start (a reload applies to the next turn).
        let layout = Layout::new(
            self.deps.sandbox.options(),
            &self.deps.roots,
            &self.deps.config().sandbox.extra_masks,
        );
        {
            let mut slot = self.shell.lock().await;
            if slot.current().is_none() {
                *slot = ShellSlot::new(shell_options(
                    shell_kind(self.deps.config().shell.program),
                    cwd.clone(),
                    self.deps.shell_root.clone(),
                ));
            }
        }
        ToolEnv {
            efr_dirs: self.deps.roots.efr_dirs(),
            home: self.deps.roots.home.clone(),
            shell: Arc::clone(&self.shell),
            cwd: cwd.clone(),
            roots: project.into_iter().collect(),
            mode: settings.mode,
            origin,
            question_limit_secs: self.deps.config().permissions.question_limit_secs,
            snapshots,
            call_snapshots: Arc::new(crate::turn::call_snapshots::CallSnapshots::new(
                Arc::clone(&self.deps.call_texts),
                presence.clone(),
            )),
            presence,
            sandbox: Arc::clone(&self.deps.sandbox),
            network: crate::network::CallNetwork {
                allow: self.deps.config().network.allow.clone(),
                deny: self.deps.config().network.deny.clone(),
                home: self.deps.roots.home.clone(),
                proxy: Arc::clone(self.deps.sandbox.proxy()),
            },
            bus: crate::bus::CallBus {
                config: self.deps.config().bus.clone(),
                session: crate::bus::session_bus(),
                proxy: Arc::clone(self.deps.sandbox.bus()),
                runtime_dir: self.deps.sandbox.options().runtime_dir.clone(),
            },
            scratch: layout.scratch_of(self.id),
            layout,
            desktop,
            exits: crate::turn::env::TurnExits {
                // The judges come with the turn's provider (turn::plan).
                user_prompt: user_prompt.to_owned(),
                project_remotes: remotes,
                config: Some(Arc::clone(&self.deps.config)),
                ..Default::default()
            },
            jobs: None,
        }
    }

    /// The working directory of a turn (the first prompt's, else the home folder) and its project: the nearest git
    /// root of the working directory, else the directory; never the home folder or above it
    /// (sandbox::plan::project_root). Without one, a turn has no writable project and no snapshots.
    pub(super) fn place(&self) -> (PathBuf, Option<PathBuf>) {
        let start = self
            .summary
            .as_ref()
            .and_then(|s| s.cwd.as_ref())
            .map(PathBuf::from)
            .filter(|p| p.is_absolute() && p.is_dir());
        let home = self.deps.sandbox.options().home.clone();
        let project = start
            .as_ref()
            .map(|cwd| efr_policy::paths::resolve(cwd).unwrap_or_else(|_| cwd.clone()))
            .and_then(|cwd| crate::sandbox::project_root(&cwd, Some(&home)));
        (start.unwrap_or_else(|| home_dir(&self.deps.roots)), project)
    }

    /// The running turn while its end is not committed ([`Running::ended`]): what the gates of turn.undo,
    /// conversation.delete, conversation.compact, turn.steer and turn.interrupt and a subscription's snapshot read, so
    /// that a client that read a turn's end finds the conversation idle, not busy for the moment the turn's task needs
    /// to finish.
    pub(super) fn live_turn(&self) -> Option<&Running> {
        self.running.as_ref().filter(|r| !r.ended)
    }

    pub(super) fn finish_turn_status(&mut self) {
        if let Some(summary) = self.summary.as_mut() {
            summary.status = status_name(ConversationStatus::Idle).to_owned();
        }
    }

    pub(super) async fn turn_ended(&mut self, turn_id: TurnId, outcome: TurnOutcome) {
        self.drafts.end_turn(turn_id);
        let running = self.running.take_if(|r| r.turn_id == turn_id);
        if let Some(running) = running.as_ref() {
            self.deps.running_turns.fetch_sub(1, Ordering::Relaxed);
            if running.settings.mode == efr_protocol::wire::Mode::Full {
                self.deps.config.full_turn_ended();
            }
        }
        if running.as_ref().is_some_and(|r| r.discarded) {
            // Its start was never committed (`start.rs`): the log and the history have nothing of it.
            return;
        }
        self.history.extend(outcome.history);
        self.finish_turn_status();
        if !running.is_some_and(|r| r.ended) {
            self.unclosed = Some(turn_id);
            // Still failing is no error here: the next prompt tries again, and says why when it cannot.
            let _ = self.close_unclosed().await;
        }
    }

    /// Records turn_failed for a turn that ended without a terminal event in the log (see `unclosed`), so the log
    /// closes every turn it opened. The error names the store's failure.
    ///
    /// # Errors
    /// The store's error when it still cannot commit.
    pub(super) async fn close_unclosed(&mut self) -> Result<(), ErrorBody> {
        let Some(turn_id) = self.unclosed else {
            return Ok(());
        };
        let cause = self
            .store_failure
            .as_ref()
            .map_or_else(|| "the event store failed".to_owned(), |e| e.message.clone());
        let failed = EventBody::TurnFailed(TurnFailed {
            error: ErrorBody::new(
                ErrorCode::Unavailable,
                format!("efrd could not record this turn's events ({cause}); the turn stopped there"),
            ),
            usage: None,
            context: None,
            changes: None,
            undo: None,
        });
        self.commit(vec![(Some(turn_id), failed)], None)
            .await
            .map_err(ErrorBody::from)?;
        self.unclosed = None;
        self.store_failure = None;
        Ok(())
    }
}

/// Runs a turn and tells the actor when it ended.
async fn run_turn(plan: TurnPlan, recorder: Sink, cancel: CancellationToken, tx: mpsc::Sender<Command>) {
    let turn_id = plan.turn_id;
    let outcome = turn::run(plan, recorder, cancel).await;
    let _ = tx.send(Command::TurnEnded { turn_id, outcome }).await;
}

/// The hosts of the remotes of `root`'s `.git/config` ([`crate::exits::find::remote_hosts`]); none when unreadable.
fn project_remotes(root: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(root.join(".git/config"))
        .map(|text| crate::exits::find::remote_hosts(&text))
        .unwrap_or_default()
}

/// Whether an event ends its turn.
fn ends_turn(body: &EventBody) -> bool {
    matches!(
        body,
        EventBody::TurnCompleted(_)
            | EventBody::TurnFailed(_)
            | EventBody::TurnInterrupted(_)
            | EventBody::TurnCancelled(_)
    )
}
