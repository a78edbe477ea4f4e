//! The turn loop: stream the model's answer, map it to events, and end the turn with exactly one terminal event.
//!
//! A turn runs as its own task, beside its conversation's actor, so that the actor stays free to take interrupts and
//! subscriptions. Every event the turn makes goes through the actor ([`TurnSink`](sink::TurnSink)), which numbers, commits and
//! broadcasts it; the turn never touches the store.
//!
//! What a text turn records, in order: `assistant_message_updated` (coalesced, see [`coalesce`]) and
//! `assistant_message_completed` for each message that has text, then one of `turn_completed` (usage, context, stop),
//! `turn_failed` (the error body) or `turn_interrupted` (usage so far).
//!
//! A turn loops: model call → its tool calls, each run through [`tools::run_call`] (policy, question, run, events) →
//! the outputs back to the model → the next call, until the model answers without a tool call, at most
//! [`MAX_MODEL_CALLS`] calls. The message index counts the turn's messages with text across its model calls.
//!
//! Modules: [`tools`] (one call: policy, question, events), [`shell_call`] (a shell call in the hidden shell, direct
//! or contained), [`contained`] (a contained call's launch plan and the launcher's report), [`shell_prepare`] (a
//! contained call made ready: its plan file and helper plans), [`call_network`] (a contained call's `efr-proxy`
//! plan, opened before it and closed after it), [`call_bus`] (its `efr-bus-proxy` plan, the same), [`git_check`] (what the
//! repositories of a cautious line's git commands can run), [`snapshots`] (a turn's
//! and a shell call's changes), [`surface`] (an auto call's surface changes and their questions), [`overlap`] (which
//! turns run at once in a project), [`coalesce`] (text deltas).

pub mod cache_deletes;
pub mod call_bus;
pub mod call_network;
pub mod call_snapshots;
pub mod coalesce;
pub mod compaction;
pub mod contained;
pub mod decide;
pub mod env;
pub mod exit_call;
pub mod exit_git;
pub mod exit_rules;
pub mod exits;
pub mod full_exits;
pub mod git_check;
pub mod home_files;
pub mod job_call;
pub mod kill_check;
mod left_running;
pub mod overlap;
pub mod patch_call;
pub mod patch_paths;
pub mod plan;
pub mod shell_call;
pub mod shell_prepare;
pub mod sink;
pub mod snapshots;
pub mod surface;
pub mod survivors;
#[cfg(test)]
mod testing;
pub mod tools;
#[cfg(test)]
mod tools_tests;

use std::time::Instant;

use efr_protocol::events::{AssistantMessageCompleted, EventBody, TurnCompleted, TurnFailed, TurnInterrupted};
use efr_protocol::ids::TurnId;
use efr_protocol::wire::{ContextFill, DraftPart, Stop, StopReason as WireStop};
use efr_protocol::{ErrorBody, ErrorCode};
use futures::StreamExt;
use tokio_util::sync::CancellationToken;
use tracing::debug;

use self::coalesce::TextCoalescer;
use self::sink::Sink;
use efr_model::{HistoryItem, ModelError, ModelEvent, ModelRequest, Provider, StopReason, Usage};

/// Everything a turn needs to run, prepared by its conversation's actor.
#[derive(Debug)]
pub struct TurnPlan {
    /// The turn.
    pub turn_id: TurnId,
    /// The model request: instructions, the conversation's history with this turn's prompt last, the settings.
    pub request: ModelRequest,
    /// The provider to call.
    pub provider: Provider,
    /// The conversation's copy with this turn's prompt last (what `request.history` holds).
    pub history: crate::compact::ModelHistory,
    /// The model's limits and what a compaction in the turn needs.
    pub context: compaction::TurnContext,
    /// What the turn's tool calls share; `None` for a turn without tools.
    pub tools: Option<env::ToolEnv>,
}

/// The most model calls one turn makes before it fails (a model that calls tools forever).
pub const MAX_MODEL_CALLS: usize = 200;

/// What a finished turn adds to its conversation's history for later turns.
#[derive(Debug, Default)]
pub struct TurnOutcome {
    /// The model's reasoning (with its carry-over) and text, in the order it came.
    pub history: Vec<HistoryItem>,
}

/// How the model stream ended.
enum Ending {
    Stopped {
        reason: StopReason,
        empty: bool,
    },
    Failed(ErrorBody),
    /// The provider refused the request as longer than the model's context, before any of its answer came.
    Overflow(ModelError),
    Interrupted,
    /// The recorder is gone (the actor stopped at shutdown): nothing more can be recorded.
    Lost,
}

/// Runs one turn to its end. Records its events through `recorder`; returns what it adds to the history.
pub async fn run(plan: TurnPlan, recorder: Sink, cancel: CancellationToken) -> TurnOutcome {
    let TurnPlan {
        turn_id,
        mut request,
        provider,
        history,
        context,
        tools,
    } = plan;
    let mut window = compaction::Window::new(history, context);
    let mut snapshots = tools.as_ref().and_then(|env| turn_snapshots(env, turn_id));
    let mut state = CallState::new(turn_id, recorder);
    let mut calls_made = 0;
    let ending = loop {
        calls_made += 1;
        // What the user added to the turn since its last model call goes into this one (turn.steer).
        match state.take_steers(false).await {
            Err(Lost) => break Ending::Lost,
            Ok(true) => request.history = window.items(&state),
            Ok(false) => {}
        }
        if window
            .before_call(&mut state, &provider, &mut request, &cancel)
            .await
            .is_err()
        {
            break Ending::Lost;
        }
        let ending = match model_call(&mut state, &provider, &request, &cancel).await {
            Ending::Overflow(error) => match window
                .overflowed(&mut state, &provider, &mut request, &error, &cancel)
                .await
            {
                compaction::Overflow::Retry => continue,
                compaction::Overflow::Fail(_) if cancel.is_cancelled() => Ending::Interrupted,
                compaction::Overflow::Fail(message) => Ending::Failed(ErrorBody::new(ErrorCode::TooLarge, message)),
                compaction::Overflow::Lost => Ending::Lost,
            },
            ending => ending,
        };
        if matches!(ending, Ending::Stopped { .. }) {
            window.after_call(&state, &request);
        }
        let Ending::Stopped { .. } = ending else { break ending };
        if state.calls.is_empty() {
            // The model answered: a steer that came meanwhile gets one more model call, else the turn ends and a
            // later steer is late.
            if calls_made >= MAX_MODEL_CALLS || cancel.is_cancelled() {
                break ending;
            }
            match state.take_steers(true).await {
                Err(Lost) => break Ending::Lost,
                Ok(false) => break ending,
                Ok(true) => {
                    state.next_model_call();
                    request.history = window.items(&state);
                    continue;
                }
            }
        }
        let Some(env) = tools.as_ref() else {
            break Ending::Failed(ErrorBody::new(
                ErrorCode::Unavailable,
                "the model called a tool in a turn without tools",
            ));
        };
        if calls_made >= MAX_MODEL_CALLS {
            break Ending::Failed(ErrorBody::new(
                ErrorCode::Unavailable,
                format!("the model called tools {MAX_MODEL_CALLS} times in one turn; the turn stops here"),
            ));
        }
        if state.finish_message().await.is_err() {
            break Ending::Lost;
        }
        // The first snapshots, before the turn's first call (docs/undo.md).
        if let Some(snapshots) = snapshots.as_mut() {
            let taken = snapshots.before_call().await;
            if !taken.is_empty() && state.recorder.record(turn_id, taken).await.is_err() {
                break Ending::Lost;
            }
        }
        if run_calls(&mut state, env, &cancel).await.is_none() {
            break Ending::Lost;
        }
        if cancel.is_cancelled() {
            break Ending::Interrupted;
        }
        state.next_model_call();
        request.history = window.items(&state);
    };
    // The turn's changes: its first snapshot against its last (after the model's last word, before the end event).
    let ended = match snapshots {
        Some(snapshots) if !matches!(ending, Ending::Lost) => snapshots.end().await,
        _ => snapshots::Ended::default(),
    };
    if !ended.events.is_empty() && state.recorder.record(turn_id, ended.events).await.is_err() {
        return state.outcome();
    }
    // What became of the turn's surface changes (`surface`), before its end.
    if !matches!(ending, Ending::Lost) && state.recorder.surface_report(turn_id).await.is_err() {
        return state.outcome();
    }
    let context = window.fill(&request);
    finish(state, ending, turn_id, context, (ended.changes, ended.undo)).await
}

/// The turn's snapshots of its project and `$SCRATCH` (docs/undo.md); `None` without a project or a snapshot store.
fn turn_snapshots(env: &env::ToolEnv, turn_id: TurnId) -> Option<snapshots::TurnSnapshots> {
    let store = env.snapshots.clone()?;
    let project = env.roots.first()?.clone();
    let mut roots = vec![snapshots::TurnRoot {
        path: project,
        shown: ".".into(),
    }];
    // With undo on, $SCRATCH exists before the first snapshot (a contained call would make it later), so what a
    // turn writes there is covered from its first turn on. Without it, the turn runs; its scratch is not covered.
    if store.undo_limits().is_some()
        && let Err(error) = crate::config::ensure_private_dir(&env.scratch)
    {
        tracing::warn!(%error, "cannot make $SCRATCH: undo does not cover it this turn");
    }
    if env.scratch.is_dir() {
        roots.push(snapshots::TurnRoot {
            path: env.scratch.clone(),
            shown: "$SCRATCH".into(),
        });
    }
    Some(snapshots::TurnSnapshots::new(store, roots, turn_id).with_presence(env.presence.clone()))
}

/// Runs the tool calls of the last model call in order, each with its output into the history; an interrupt runs no
/// further call. `None`: the sink is gone.
async fn run_calls(state: &mut CallState, env: &env::ToolEnv, cancel: &CancellationToken) -> Option<()> {
    let calls = std::mem::take(&mut state.calls);
    for call in calls {
        state.history.push(HistoryItem::tool_call(
            call.call_id.clone(),
            call.tool.clone(),
            call.freeform,
            call.input.clone(),
        ));
        // An interrupt stops the running call (SIGINT to a shell call's command, deny for a question) and runs no
        // further call.
        let output = if cancel.is_cancelled() {
            Some(env::CallOutput {
                output: "the turn was interrupted before this call ran".to_owned(),
                is_error: true,
            })
        } else {
            tools::run_call(
                env,
                &state.recorder,
                state.turn_id,
                tools::ModelCall {
                    call_id: &call.call_id,
                    tool: &call.tool,
                    freeform: call.freeform,
                    input: &call.input,
                },
                cancel,
            )
            .await
        };
        let output = output?;
        state.history.push(HistoryItem::ToolOutput {
            call_id: call.call_id,
            output: output.output,
            is_error: output.is_error,
        });
    }
    Some(())
}

/// Streams one model call into events until it stops, fails or is interrupted.
async fn model_call(
    state: &mut CallState,
    provider: &Provider,
    request: &ModelRequest,
    cancel: &CancellationToken,
) -> Ending {
    state.start_call();
    let mut stream = std::pin::pin!(provider.stream(request));
    loop {
        let deadline = state.coalescer.deadline();
        let next = tokio::select! {
            biased;
            () = cancel.cancelled() => return Ending::Interrupted,
            () = sleep_until(deadline) => {
                if state.flush_text().await.is_err() {
                    return Ending::Lost;
                }
                continue;
            }
            next = stream.next() => next,
        };
        let step = match next {
            None => Err(Ending::Failed(model_error(&ModelError::StreamEnded))),
            Some(Err(error @ ModelError::ContextOverflow { .. })) if state.nothing_answered() => {
                Err(Ending::Overflow(error))
            }
            Some(Err(error)) => Err(Ending::Failed(model_error(&error))),
            Some(Ok(event)) => state.apply(event).await,
        };
        if let Err(ending) = step {
            return ending;
        }
    }
}

/// Records the end of the turn: flushes the open message, then exactly one terminal event.
async fn finish(
    mut state: CallState,
    ending: Ending,
    turn_id: TurnId,
    context: ContextFill,
    (changes, undo): (
        Option<efr_protocol::wire::FileChanges>,
        Option<efr_protocol::wire::TurnUndoSummary>,
    ),
) -> TurnOutcome {
    // Whatever happened, no text that reached efrd is lost: flush it and close the open message.
    if !matches!(ending, Ending::Lost) && state.finish_message().await.is_err() {
        return state.outcome();
    }
    let usage = crate::compact::meter::wire_usage(&state.usage, &state.call_usage);
    let context = Some(context);
    let usage_member = (state.usage != Usage::default()).then_some(usage);
    let body = match ending {
        Ending::Stopped { reason, empty } => EventBody::TurnCompleted(TurnCompleted {
            usage: usage_member,
            context,
            stop: stop_member(reason, empty),
            changes,
            undo,
        }),
        Ending::Failed(error) => EventBody::TurnFailed(TurnFailed {
            error,
            usage: usage_member,
            context,
            changes,
            undo,
        }),
        Ending::Interrupted => EventBody::TurnInterrupted(TurnInterrupted {
            usage: usage_member,
            context,
            changes,
            undo,
        }),
        Ending::Lost => return state.outcome(),
        // The turn's loop turns an overflow into a retry or a failure.
        Ending::Overflow(error) => EventBody::TurnFailed(TurnFailed {
            error: model_error(&error),
            usage: usage_member,
            context,
            changes,
            undo,
        }),
    };
    // The history goes to the conversation with the end event, not after the turn returns: a client that sees the
    // end may ask for the context at once.
    let history = std::mem::take(&mut state.history);
    if let Err(error) = state.recorder.record_end(turn_id, body, history).await {
        debug!(%turn_id, %error, "the turn's end could not be recorded");
    }
    state.outcome()
}

/// `stop` of turn_completed: absent for a normal answer (docs/protocol.md, "The contract": "why a turn stopped").
fn stop_member(reason: StopReason, empty: bool) -> Option<Stop> {
    let reason = match reason {
        StopReason::EndTurn if !empty => return None,
        StopReason::EndTurn => WireStop::EndTurn,
        StopReason::MaxTokens => WireStop::MaxTokens,
        StopReason::Refusal => WireStop::Refusal,
        StopReason::ContentFilter => WireStop::ContentFilter,
        StopReason::PauseTurn => WireStop::PauseTurn,
    };
    Some(Stop { reason, empty })
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
        None => std::future::pending().await,
    }
}

/// The error body a turn fails with for a model error. The message never holds a key.
#[must_use]
pub fn model_error(error: &ModelError) -> ErrorBody {
    let code = match error {
        ModelError::MissingKey { .. } | ModelError::KeyRefused { .. } => ErrorCode::Unauthorized,
        ModelError::RateLimited { .. } | ModelError::Overloaded { .. } => ErrorCode::Busy,
        ModelError::ContextOverflow { .. } => ErrorCode::TooLarge,
        ModelError::Rejected { .. } => ErrorCode::Invalid,
        _ => ErrorCode::Unavailable,
    };
    ErrorBody::new(code, error.to_string())
}

/// The state of the turn's model call: open message, coalescer, summed usage, history items.
struct CallState {
    turn_id: TurnId,
    recorder: Sink,
    coalescer: TextCoalescer,
    /// The open message's index and text so far.
    message: Option<(u32, String)>,
    usage: Usage,
    /// The usage of the current (or last) model call.
    call_usage: Usage,
    history: Vec<HistoryItem>,
    /// The length of `history` when the current model call started.
    call_start: usize,
    /// The tool calls of the current model call, complete, in order.
    calls: Vec<PendingCall>,
    /// Messages with text in the turn's earlier model calls: the index of this call's first message.
    index_base: u32,
    /// Messages with text in the current model call.
    messages_this_call: u32,
    /// The bytes of the turn's reasoning so far: the offset of its next reasoning draft.
    reasoning_bytes: u64,
    /// The tool calls the current model call started (id, tool), in order: a tool_input draft's `call`.
    drafting: Vec<(String, String)>,
}

/// A tool call the model made, complete.
struct PendingCall {
    call_id: String,
    tool: String,
    freeform: bool,
    input: String,
}

/// The actor is gone; the turn cannot record anything more.
struct Lost;

impl CallState {
    fn new(turn_id: TurnId, recorder: Sink) -> Self {
        Self {
            turn_id,
            recorder,
            coalescer: TextCoalescer::default(),
            message: None,
            usage: Usage::default(),
            call_usage: Usage::default(),
            history: Vec::new(),
            call_start: 0,
            calls: Vec::new(),
            index_base: 0,
            messages_this_call: 0,
            reasoning_bytes: 0,
            drafting: Vec::new(),
        }
    }

    /// Moves on to the turn's next model call: its messages continue the turn's index.
    fn next_model_call(&mut self) {
        self.index_base += self.messages_this_call;
        self.messages_this_call = 0;
    }

    /// A model call starts: its usage and answer are counted from here.
    fn start_call(&mut self) {
        self.call_usage = Usage::default();
        self.drafting.clear();
        self.call_start = self.history.len();
    }

    /// The current model call has answered nothing yet (no text, no tool call): it can be made again.
    fn nothing_answered(&self) -> bool {
        self.message.is_none() && self.calls.is_empty() && self.history.len() == self.call_start
    }

    /// The bytes of the current model call's answer: its items so far, its open message and its tool calls.
    fn answer_bytes(&self) -> u64 {
        let items: u64 = self.history[self.call_start.min(self.history.len())..]
            .iter()
            .map(crate::prompt::context::item_bytes)
            .sum();
        let open = self.message.as_ref().map_or(0, |(_, text)| text.len() as u64);
        let calls: u64 = self.calls.iter().map(|c| (c.tool.len() + c.input.len()) as u64).sum();
        items + open + calls
    }

    /// The index of the turn's last message with text so far, when it has one.
    fn last_message_index(&self) -> Option<u32> {
        (self.index_base + self.messages_this_call).checked_sub(1)
    }

    fn outcome(self) -> TurnOutcome {
        TurnOutcome { history: self.history }
    }

    async fn record(&self, bodies: Vec<EventBody>) -> Result<(), Lost> {
        if bodies.is_empty() {
            return Ok(());
        }
        self.recorder
            .record(self.turn_id, bodies)
            .await
            .map(drop)
            .map_err(|_| Lost)
    }

    /// Takes the steers that wait (see [`sink::TurnSink::steers`]) into the history as the user's words; `true`
    /// when there were some.
    async fn take_steers(&mut self, last: bool) -> Result<bool, Lost> {
        let texts = self.recorder.steers(self.turn_id, last).await.map_err(|_| Lost)?;
        if texts.is_empty() {
            return Ok(false);
        }
        // The model's open message comes before the user's words.
        self.finish_message().await?;
        self.history
            .extend(texts.into_iter().map(|text| HistoryItem::UserText { text }));
        Ok(true)
    }

    async fn flush_text(&mut self) -> Result<(), Lost> {
        let pending = self.coalescer.flush().map(EventBody::AssistantMessageUpdated);
        self.record(pending.into_iter().collect()).await
    }

    /// Flushes the open message's text and records it whole.
    async fn finish_message(&mut self) -> Result<(), Lost> {
        let mut bodies: Vec<EventBody> = self
            .coalescer
            .flush()
            .map(EventBody::AssistantMessageUpdated)
            .into_iter()
            .collect();
        if let Some((index, text)) = self.message.take() {
            self.history.push(HistoryItem::AssistantText { text: text.clone() });
            bodies.push(EventBody::AssistantMessageCompleted(AssistantMessageCompleted {
                index,
                text,
            }));
        }
        self.record(bodies).await
    }

    /// Applies one model event; `Err` ends the call.
    async fn apply(&mut self, event: ModelEvent) -> Result<(), Ending> {
        match event {
            ModelEvent::TextDelta { index, offset, delta } => {
                // The provider counts this call's messages; the turn counts all of its own.
                self.messages_this_call = self.messages_this_call.max(index + 1);
                let index = self.index_base + index;
                if self.message.as_ref().is_some_and(|(open, _)| *open != index) {
                    self.finish_message().await.map_err(|Lost| Ending::Lost)?;
                }
                let (_, text) = self.message.get_or_insert_with(|| (index, String::new()));
                text.push_str(&delta);
                // The draft goes before the coalesced event: a subscriber sees the text as it came.
                self.recorder.draft(
                    self.turn_id,
                    DraftPart::Text {
                        index,
                        offset,
                        delta: delta.clone(),
                    },
                );
                let ready = self.coalescer.push(index, offset, &delta, Instant::now());
                self.record(ready.into_iter().map(EventBody::AssistantMessageUpdated).collect())
                    .await
                    .map_err(|Lost| Ending::Lost)
            }
            ModelEvent::ReasoningDone { text, carry } => {
                self.history.push(HistoryItem::Reasoning { text, carry });
                Ok(())
            }
            ModelEvent::ReasoningDelta { delta, title } => {
                let offset = self.reasoning_bytes;
                self.reasoning_bytes += delta.len() as u64;
                self.recorder
                    .draft(self.turn_id, DraftPart::Reasoning { offset, delta, title });
                Ok(())
            }
            ModelEvent::ToolCallStarted { call_id, tool, .. } => {
                self.drafting.push((call_id, tool));
                Ok(())
            }
            ModelEvent::ToolInputDelta { call_id, bytes, .. } => {
                if let Some((call, (_, tool))) = self.drafting.iter().enumerate().find(|(_, (id, _))| *id == call_id) {
                    let call = u32::try_from(call).unwrap_or(u32::MAX);
                    let tool = tool.clone();
                    self.recorder
                        .draft(self.turn_id, DraftPart::ToolInput { call, tool, bytes });
                }
                Ok(())
            }
            ModelEvent::ToolCallDone {
                call_id,
                tool,
                freeform,
                input,
            } => {
                self.calls.push(PendingCall {
                    call_id,
                    tool,
                    freeform,
                    input,
                });
                Ok(())
            }
            ModelEvent::Usage(usage) => {
                crate::compact::meter::add_usage(&mut self.usage, &usage);
                crate::compact::meter::add_usage(&mut self.call_usage, &usage);
                Ok(())
            }
            ModelEvent::Stop { reason, empty } => Err(Ending::Stopped { reason, empty }),
        }
    }
}
