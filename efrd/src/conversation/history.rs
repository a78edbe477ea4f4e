//! The model's view of a conversation, rebuilt from its log, and the conversation's title.
//!
//! Only what the log holds can come back after a restart: each started turn's prompt, the assistant's completed
//! messages, and each tool call with its output (the output as clients saw it: bounded the same way, without the
//! notes efrd adds for the model only). A call whose completion never reached the log (efrd stopped during it) gets
//! an output that says so, because providers refuse a tool call without one. Reasoning carry-overs live in memory
//! only, so the first turn after a restart sends none.
//!
//! The same read finds the commands that a previous efrd left running (a `shell_command_detached` without its
//! `shell_command_ended`): they ended with that efrd's hidden shells, and the actor records so when it loads.

use std::collections::{HashMap, VecDeque};

use efr_protocol::ErrorBody;
use efr_protocol::events::{CallStatus, Event, EventBody};
use efr_protocol::ids::{CallId, CommandId, ConversationId, TurnId};
use efr_protocol::wire::How;

use crate::compact::ModelHistory;
use efr_model::HistoryItem;
use efr_store::Store;

/// How many events one read of the log takes.
const PAGE: u32 = 1000;

/// The longest title in characters.
const TITLE_CHARS: usize = 80;

/// What a conversation's log implies when it is opened.
#[derive(Debug, Default)]
pub struct Rebuilt {
    /// The model's copy of the conversation (after its newest compaction).
    pub history: ModelHistory,
    /// The last seq of the log (0 for none).
    pub last_seq: u64,
    /// Calls whose command was left running and has no end in the log, with the command, in the order they were
    /// detached.
    pub left_running: Vec<(CallId, String)>,
    /// Notices of commands left running that ended after the last turn started, and of those in `left_running`
    /// (they ended with the efrd that ran them): the model has not heard of them
    /// (see `OpenShellCalls::take_notices` in `conversation/shell.rs`).
    pub notices: Vec<String>,
    /// The first event that does not parse, in words ([`corrupt_event`]): the history stops before it.
    pub corrupt: Option<String>,
    /// The surface questions of the log: their numbering, which were answered ([`crate::turn::surface::Book`]).
    pub surface: crate::turn::surface::Book,
    /// The presence of the log's last presence_changed; `None` when it has none (present).
    pub presence: Option<efr_protocol::wire::Presence>,
    /// What the log says of the context: the last count, the cache use, the compactions.
    pub context: ContextLog,
    /// What the log says of the background jobs.
    pub jobs: super::jobs_log::JobsLog,
    /// The command ids of the log's last prompts, oldest first, at most [`RECENT_PROMPTS`].
    pub recent_prompts: VecDeque<CommandId>,
}

/// How many of a conversation's last prompts' command ids its actor keeps: a retry of one of them (the client lost
/// its reply) is refused by the store before its turn is planned (`actor/start.rs`). Far more than a client retries.
pub const RECENT_PROMPTS: usize = 64;

/// Adds `command_id` to `recent`, keeping the last [`RECENT_PROMPTS`].
pub fn note_prompt(recent: &mut VecDeque<CommandId>, command_id: CommandId) {
    if recent.len() == RECENT_PROMPTS {
        recent.pop_front();
    }
    recent.push_back(command_id);
}

/// What a conversation's log says of its context (conversation.context): the last real count since the newest
/// compaction, the sums of the turns' and summaries' usage, the compactions. Kept up to date as events are read and
/// committed, so that conversation.context never reads the log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContextLog {
    /// The provider's count at the end of the newest turn that has one since the newest compaction.
    pub counted: Option<efr_protocol::wire::ContextCounted>,
    /// The sums of the usage of the turns and the summaries' calls.
    pub cache: efr_protocol::wire::ContextCache,
    /// The compactions, oldest first.
    pub compactions: Vec<efr_protocol::wire::ContextCompaction>,
}

impl ContextLog {
    /// Takes one event of the log into account.
    pub fn observe(&mut self, event: &Event) {
        let (usage, context) = match &event.body {
            EventBody::ConversationCompacted(compaction) => {
                // A count from before a compaction no longer describes the copy.
                self.counted = None;
                self.add(&compaction.usage);
                self.compactions.push(efr_protocol::wire::ContextCompaction {
                    seq: event.seq,
                    at: event.at,
                    trigger: compaction.trigger,
                    tokens_before: compaction.tokens_before,
                    tokens_after: compaction.tokens_after,
                });
                return;
            }
            EventBody::TurnCompleted(end) => (end.usage, end.context),
            EventBody::TurnFailed(end) => (end.usage, end.context),
            EventBody::TurnInterrupted(end) => (end.usage, end.context),
            _ => return,
        };
        if let Some(usage) = &usage {
            self.cache.turns += 1;
            self.add(usage);
        }
        let tokens = usage
            .map(|u| u.context_tokens)
            .filter(|&t| t > 0)
            .or_else(|| context.map(|c| c.tokens));
        if let (Some(tokens), Some(turn_id)) = (tokens, event.turn_id) {
            self.counted = Some(efr_protocol::wire::ContextCounted {
                turn_id,
                at: event.at,
                tokens,
            });
        }
    }

    fn add(&mut self, usage: &efr_protocol::wire::Usage) {
        self.cache.input_tokens += usage.input_tokens;
        self.cache.cached_input_tokens += usage.cached_input_tokens;
        self.cache.cache_write_tokens += usage.cache_write_tokens;
    }
}

/// The words for event `seq` of a log that does not parse: a corrupt log is readable up to it.
#[must_use]
pub fn corrupt_event(seq: u64, error: &serde_json::Error) -> String {
    format!(
        "event {seq} of this conversation's log is corrupt ({error}); the conversation is readable up to it, and \
         a prompt needs a new conversation"
    )
}

/// Reads the whole log of `id` and returns what it implies (see [`Rebuilt`]). An event that does not parse ends
/// the history there and is reported in [`Rebuilt::corrupt`]; the seqs after it still count.
///
/// # Errors
/// `unavailable` when the store fails.
pub async fn rebuild(store: &Store, id: ConversationId) -> Result<Rebuilt, ErrorBody> {
    let mut history = Rebuild::default();
    let mut last_seq = 0;
    let mut corrupt = None;
    let mut surface = crate::turn::surface::Book::default();
    let mut presence = None;
    let mut context = ContextLog::default();
    let mut jobs = super::jobs_log::JobsLog::default();
    let mut recent_prompts = VecDeque::new();
    loop {
        let rows = store.events_after(id, last_seq, PAGE).await.map_err(ErrorBody::from)?;
        let full = rows.len() == PAGE as usize;
        for row in rows {
            last_seq = row.seq;
            if corrupt.is_some() {
                continue;
            }
            match serde_json::from_str::<Event>(&row.body) {
                Ok(event) => {
                    surface.replay(&event.body);
                    context.observe(&event);
                    jobs.observe(&event);
                    match &event.body {
                        EventBody::PresenceChanged(changed) => presence = Some(changed.presence),
                        EventBody::PromptQueued(queued) => {
                            if let Some(command_id) = queued.command_id {
                                note_prompt(&mut recent_prompts, command_id);
                            }
                        }
                        _ => {}
                    }
                    history.apply(&event);
                }
                Err(error) => {
                    tracing::error!(conversation = %id, seq = row.seq, %error, "an event of the log does not parse");
                    corrupt = Some(corrupt_event(row.seq, &error));
                }
            }
        }
        if !full {
            let left_running = std::mem::take(&mut history.left_running);
            let mut notices = std::mem::take(&mut history.notices);
            // Those ended with the efrd that ran them; the actor records their end (closed) as it loads.
            notices.extend(
                left_running
                    .iter()
                    .map(|(_, command)| super::shell::notice(command, How::Closed, None, &[])),
            );
            return Ok(Rebuilt {
                history: history.finish(),
                last_seq,
                left_running,
                notices,
                corrupt,
                surface,
                presence,
                context,
                jobs,
                recent_prompts,
            });
        }
    }
}

/// The output of a call whose completion is not in the log (it ran when efrd stopped, or waited for an answer).
pub const LOST_OUTPUT: &str =
    "the result of this call is unknown: efrd stopped before the call finished (it may not have run at all)";

/// What a call's output says when its command was left running.
pub const LEFT_RUNNING_NOTE: &str =
    "\n[the command still ran when this call answered; the shell took no other command until it ended]";

/// The history so far while the log is read.
#[derive(Default)]
struct Rebuild {
    history: ModelHistory,
    /// Prompts of queued turns that have not started, by turn.
    prompts: HashMap<TurnId, String>,
    /// Steers that no model call read yet, by the seq of their turn_steered.
    steers: HashMap<u64, String>,
    /// The call started and not completed yet (calls of a turn run one at a time).
    open_call: Option<String>,
    /// Commands left running without an end so far.
    left_running: Vec<(CallId, String)>,
    notices: Vec<String>,
}

impl Rebuild {
    fn apply(&mut self, event: &Event) {
        match (&event.body, event.turn_id) {
            (EventBody::PromptQueued(queued), Some(turn_id)) => {
                self.prompts.insert(turn_id, queued.text.clone());
            }
            (EventBody::PromptWithdrawn(_), Some(turn_id)) => {
                self.prompts.remove(&turn_id);
            }
            (EventBody::TurnSteered(steered), _) => {
                self.steers.insert(event.seq, steered.text.clone());
            }
            (EventBody::SteeringDelivered(delivered), _) => {
                // A model call read them: the user's words, where the running turn put them.
                for seq in &delivered.steers {
                    if let Some(text) = self.steers.remove(seq) {
                        self.push(HistoryItem::UserText { text });
                    }
                }
            }
            (EventBody::TurnStarted(_), Some(turn_id)) => {
                // That turn's prompt told the model of the ends before it.
                self.notices.clear();
                if let Some(text) = self.prompts.remove(&turn_id) {
                    self.close_open_call();
                    self.history.push_prompt(turn_id, text);
                }
            }
            (EventBody::ConversationCompacted(compaction), running) => {
                // The same rule as the running daemon's (compact::history): the copy shrinks, the log does not.
                self.close_open_call();
                self.history = self.history.compacted(compaction, running);
            }
            (EventBody::AssistantMessageCompleted(message), _) => {
                self.push(HistoryItem::AssistantText {
                    text: message.text.clone(),
                });
            }
            (EventBody::ToolCallStarted(started), _) => {
                // The input as the model wrote it: a freeform call's text, else the JSON (a string when the model's
                // arguments were not JSON).
                let input = match &started.input {
                    serde_json::Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                self.push(HistoryItem::tool_call(
                    started.call_id.0.clone(),
                    started.tool.clone(),
                    started.freeform,
                    input,
                ));
                self.open_call = Some(started.call_id.0.clone());
            }
            (EventBody::ShellCommandDetached(detached), _) => {
                self.left_running
                    .push((detached.call_id.clone(), detached.command.clone()));
            }
            (EventBody::ShellCommandEnded(ended), _) => {
                if let Some((_, command)) = self.left_running.iter().find(|(id, _)| *id == ended.call_id) {
                    self.notices
                        .push(super::shell::notice(command, ended.how, ended.exit_code, &ended.notes));
                }
                self.left_running.retain(|(call_id, _)| *call_id != ended.call_id);
            }
            (EventBody::ToolCallCompleted(completed), _)
                if self.open_call.as_deref() == Some(completed.call_id.as_str()) =>
            {
                self.open_call = None;
                let mut output = completed.output.clone();
                if completed.left_running {
                    // The note the model got with it (turn/shell_call.rs), in words that need no timeout.
                    output.push_str(LEFT_RUNNING_NOTE);
                }
                self.history.push(HistoryItem::ToolOutput {
                    call_id: completed.call_id.0.clone(),
                    output,
                    is_error: completed.status != CallStatus::Ok,
                });
            }
            _ => {}
        }
    }

    /// Pushes `item` after the output of a call left open (see [`LOST_OUTPUT`]).
    fn push(&mut self, item: HistoryItem) {
        self.close_open_call();
        self.history.push(item);
    }

    fn close_open_call(&mut self) {
        if let Some(call_id) = self.open_call.take() {
            self.history.push(HistoryItem::ToolOutput {
                call_id,
                output: LOST_OUTPUT.to_owned(),
                is_error: true,
            });
        }
    }

    fn finish(mut self) -> ModelHistory {
        self.close_open_call();
        self.history
    }
}

/// A conversation's title from its first prompt: the first line, at most 80 characters (cut at a character
/// boundary, with `…` when cut).
#[must_use]
pub fn title_of(prompt: &str) -> String {
    let line = prompt.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let mut title: String = line.chars().take(TITLE_CHARS).collect();
    if line.chars().count() > TITLE_CHARS {
        title.push('…');
    }
    title
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn event(turn: Option<&str>, body: serde_json::Value) -> Event {
        let mut value = json!({"seq": 1, "at": "2026-11-30T18:00:00.000Z",
            "conversation_id": "6f1c1e9e-4c1d-4bb5-9f6e-0c8f9c7d2a11", "turn_id": turn});
        if let serde_json::Value::Object(members) = body {
            for (k, v) in members {
                value[k] = v;
            }
        }
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn tool_calls_and_their_outputs_come_back_in_order_and_a_lost_one_says_so() {
        let turn = Some("0b0e6f52-3f59-4d9c-8a83-93b1c3a0a001");
        let mut rebuild = Rebuild::default();
        for body in [
            json!({"kind": "prompt_queued", "text": "run it", "origin": "terminal",
                "command_id": "6f1c1e9e-4c1d-4bb5-9f6e-0c8f9c7d2a12", "context": {"cwd": "/tmp"},
                "settings": {"mode": "full", "model": "gpt-5"}}),
            json!({"kind": "turn_started"}),
            json!({"kind": "assistant_message_completed", "index": 0, "text": "Running."}),
            json!({"kind": "tool_call_started", "call_id": "c1", "tool": "shell", "input": {"command": "false"}}),
            json!({"kind": "tool_call_completed", "call_id": "c1", "status": "failed", "output": "exit 1"}),
            json!({"kind": "tool_call_started", "call_id": "c3", "tool": "shell", "input": {"command": "sleep 9"}}),
            json!({"kind": "tool_call_completed", "call_id": "c3", "status": "ok", "output": "", "left_running": true}),
            json!({"kind": "tool_call_started", "call_id": "c2", "tool": "apply_patch", "freeform": true,
                "input": "*** Begin Patch\n*** End Patch"}),
        ] {
            rebuild.apply(&event(turn, body));
        }
        let history = rebuild.finish();
        let history = history.items();
        let expected = vec![
            HistoryItem::UserText { text: "run it".into() },
            HistoryItem::AssistantText {
                text: "Running.".into(),
            },
            HistoryItem::ToolCall {
                call_id: "c1".into(),
                tool: "shell".into(),
                freeform: false,
                input: r#"{"command":"false"}"#.into(),
            },
            HistoryItem::ToolOutput {
                call_id: "c1".into(),
                output: "exit 1".into(),
                is_error: true,
            },
            HistoryItem::ToolCall {
                call_id: "c3".into(),
                tool: "shell".into(),
                freeform: false,
                input: r#"{"command":"sleep 9"}"#.into(),
            },
            HistoryItem::ToolOutput {
                call_id: "c3".into(),
                output: LEFT_RUNNING_NOTE.into(),
                is_error: false,
            },
            HistoryItem::ToolCall {
                call_id: "c2".into(),
                tool: "apply_patch".into(),
                freeform: true,
                input: "*** Begin Patch\n*** End Patch".into(),
            },
            HistoryItem::ToolOutput {
                call_id: "c2".into(),
                output: LOST_OUTPUT.into(),
                is_error: true,
            },
        ];
        assert_eq!(history, expected);
    }

    #[test]
    fn a_delivered_steer_comes_back_where_it_was_read_and_an_unread_or_withdrawn_one_does_not() {
        let turn = Some("0b0e6f52-3f59-4d9c-8a83-93b1c3a0a001");
        let waiting = Some("0b0e6f52-3f59-4d9c-8a83-93b1c3a0a002");
        let mut rebuild = Rebuild::default();
        for (turn, body) in [
            (
                turn,
                json!({"kind": "prompt_queued", "text": "run it", "origin": "terminal"}),
            ),
            (
                waiting,
                json!({"kind": "prompt_queued", "text": "later", "origin": "terminal"}),
            ),
            (waiting, json!({"kind": "prompt_withdrawn", "origin": "terminal"})),
            (turn, json!({"kind": "turn_started"})),
            (
                turn,
                json!({"kind": "tool_call_started", "call_id": "c1", "tool": "shell", "input": {"command": "true"}}),
            ),
            (
                turn,
                json!({"seq": 5, "kind": "turn_steered", "text": "use the other crate", "origin": "terminal"}),
            ),
            (
                turn,
                json!({"seq": 6, "kind": "turn_steered", "text": "never read", "origin": "phone"}),
            ),
            (
                turn,
                json!({"kind": "tool_call_completed", "call_id": "c1", "status": "ok", "output": ""}),
            ),
            (turn, json!({"kind": "steering_delivered", "steers": [5]})),
            (
                turn,
                json!({"kind": "assistant_message_completed", "index": 0, "text": "Done."}),
            ),
            (waiting, json!({"kind": "turn_started"})),
        ] {
            rebuild.apply(&event(turn, body));
        }
        let history = rebuild.finish();
        let texts: Vec<&HistoryItem> = history
            .items()
            .iter()
            .filter(|item| matches!(item, HistoryItem::UserText { .. } | HistoryItem::AssistantText { .. }))
            .collect();
        assert_eq!(
            texts,
            [
                &HistoryItem::UserText { text: "run it".into() },
                &HistoryItem::UserText {
                    text: "use the other crate".into()
                },
                &HistoryItem::AssistantText { text: "Done.".into() },
            ]
        );
        assert!(
            matches!(history.items()[2], HistoryItem::ToolOutput { .. }),
            "read after the call's output"
        );
    }

    #[test]
    fn titles_take_the_first_non_empty_line_and_cut_on_characters() {
        assert_eq!(title_of("\n  fix the build \nmore"), "fix the build");
        let long = "ü".repeat(100);
        let title = title_of(&long);
        assert_eq!(title.chars().count(), 81);
        assert!(title.ends_with('…'));
        assert_eq!(title_of(""), "");
    }
}
