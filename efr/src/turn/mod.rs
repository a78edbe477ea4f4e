//! `efr "prompt"` / `efr prompt [flags] <text...>`: send a prompt with the terminal's context and show its turn
//! until it ends.
//!
//! # Steps
//!
//! 1. The conversation: `--conversation ID`; else efrd routes the prompt of this terminal to the conversation of
//!    its scope key (the project of the working directory, or outside), `--new` asking for a new one there; without
//!    a terminal, a new one. A change of conversation is said in one notice ([`conversation::switch_notice`]).
//! 2. prompt.send with the context ([`crate::context`]) and the settings of `--mode`, `--model`, `--effort`.
//! 3. conversation.subscribe with `after_seq` = the prompt's seq − 1 (so its prompt_queued and everything after
//!    it come, replayed from the log if they were already committed: no event is missed), `ack` and
//!    `answers_input`. A subscription that falls behind (`busy`, overflow) is resumed after the last seq seen.
//! 4. Each event of this turn is shown ([`view`]); questions are asked ([`questions`]); the loop ends at this
//!    turn's turn_completed (exit 0), turn_failed (1), turn_interrupted (130) or turn_cancelled (1).
//!
//! # Rendering
//!
//! On a terminal, assistant text is rendered per finished Markdown block ([`markdown`]): a paragraph shows when its
//! blank line arrives, a code block when its fence closes, the rest when the message completes. Before that, the
//! turn's drafts show on a live line at the bottom ([`live`]): the reasoning dim while the model thinks, then the
//! unfinished line of the text, plainly, as it streams. Tool calls show
//! their command or patch files, a spinner with the elapsed time while they run, then the exit, the output tail and
//! the changes ([`term`]). Piped or redirected, efr writes the plain transcript ([`plain`]); with `--json`, each
//! event's JSON on one line.
//!
//! # Keys
//!
//! When stdin is a terminal, efr reads keys itself ([`keys`]): `y`/`n` (and `a` when offered) answer an approval
//! with one key, and `y`/`n` a surface question (keep a file a sandboxed call wrote that code outside the sandbox
//! runs from; [`surface`]): the turn does not wait for those, so efr asks the ones left after the turn's end and
//! leaves once they are answered (Ctrl+C leaves them held); an input wait takes a line, with echo off for a hidden wait or one that looks secret; Ctrl+C sends
//! turn.interrupt once, and a second Ctrl+C leaves at once (130); Ctrl+B moves the running shell command to a
//! background job ([`background`]: at once in the sandbox, after a `y` to its preview outside it). While no question
//! waits, the keys are the turn's input row ([`steer`]): a line and Enter steers the turn, a line and Tab queues it,
//! Ctrl+X withdraws the newest prompt queued from here, and Ctrl+C with unread steers asks whether to resend them.
//!
//! Without a terminal on stdin efr cannot ask, and a turn must not hang in a pipeline or a script: an approval of
//! this turn is answered deny (approval.respond) with the notice `denied: <call> (efr cannot ask without a
//! terminal on stdin; ...)`, and the turn goes on without the call; an input wait of this turn (a command that
//! reads the terminal) gets the notice `<call> waits for input, and efr cannot ask without a terminal on stdin:
//! interrupting the turn` and turn.interrupt, so the turn ends interrupted and efr exits 130. Notices go to stderr
//! in the plain and JSON forms. SIGINT does what Ctrl+C does.
//!
//! # Without a terminal on stdin
//!
//! The conversation is found from the terminal of stdin; without one, each prompt starts a new conversation unless
//! `--conversation ID` names one. So efr names it at the end (the transcript's last line, or a line of efr's own on
//! a terminal; `--json` has it in every event): `conversation <id> (go on with: efr --conversation <id> ...)`.
//!
//! # Queued prompts
//!
//! When the prompt went to a conversation whose other turn runs (its snapshot names that turn), efr says
//! `queued behind the running turn` before the turn starts: a notice on stderr with a terminal or `--json`, a
//! transcript line on stdout in the plain form.

mod answers;
mod background;
pub(crate) mod conversation;
pub(crate) mod describe;
mod exits;
mod keys;
mod live;
mod markdown;
mod plain;
mod presence;
mod prompt;
mod questions;
mod steer;
mod surface;
mod term;
mod view;

use std::collections::{HashMap, HashSet};
use std::process::ExitCode;
use std::time::Duration;

use efr_protocol::ErrorCode;
use efr_protocol::events::{Event, EventBody};
use efr_protocol::frame::ServerFrame;
use efr_protocol::ids::{CallId, CommandId, ConversationId, TurnId};
use efr_protocol::wire::{
    ApprovalDecision, ApprovalRespondParams, ConversationSubscribeParams, InputWait, Mode, PromptSendParams,
    PromptSendResult, PromptSettings, ShellStatusParams, ShellStatusResult,
};
use serde_json::Value;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use crate::cli::{ModeArg, PromptArgs, ShellArg};
use crate::client::{Client, ClientError, Stream};
use crate::context;
use crate::report;
use crate::tty::{self, TermGuard, TermMode};
use keys::Key;
use questions::{Ask, AskKind, Change, Questions};
use view::View;

/// How often the spinner moves.
const TICK: Duration = Duration::from_millis(100);

fn mode(arg: ModeArg) -> Mode {
    match arg {
        ModeArg::Manual => Mode::Manual,
        ModeArg::Cautious => Mode::Cautious,
        ModeArg::Auto => Mode::Auto,
        ModeArg::Full => Mode::Full,
    }
}

fn bad_input(message: &str) -> ExitCode {
    report::error(message);
    ExitCode::from(report::FAILED)
}

/// Runs `efr prompt`; the exit code is the turn's (0 completed, 1 failed, 130 interrupted) or the failure's.
pub async fn run(args: &PromptArgs) -> ExitCode {
    let text = match prompt::text(&args.text) {
        Ok(text) => text,
        Err(message) => return bad_input(&message),
    };
    if let Err(error) = std::env::current_dir() {
        eprintln!("efr: the working directory is gone ({error}); the prompt goes without one");
    }
    if text.trim().is_empty() {
        return bad_input("the prompt is empty; say what to do: efr \"why does the test fail?\"");
    }
    let recent = match args
        .recent
        .iter()
        .map(|r| context::parse_recent(r))
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(recent) => recent,
        Err(error) => return bad_input(&error.to_string()),
    };
    let Ok(named) = args
        .conversation
        .as_deref()
        .map(str::parse::<ConversationId>)
        .transpose()
    else {
        return bad_input("--conversation must be a conversation id (a UUID)");
    };
    let tty = context::stdin_tty();
    // Without a terminal the conversation cannot be found again from it: efr names it at the end.
    let name_it = tty.is_none();
    let client = match report::connect(tty.clone()).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    // Without `--conversation`, efrd routes a terminal's prompt to the conversation of its scope key (README.md,
    // "Projects and routing"); `--new` (`,new`) asks it for a new one there.
    let conversation_id = named;
    let shell = args.shell.map(|s| match s {
        ShellArg::Bash => "bash",
        ShellArg::Zsh => "zsh",
    });
    let settings = PromptSettings {
        mode: args.mode.map(mode),
        model: args.model.clone(),
        effort: args.effort.clone(),
    };
    let params = PromptSendParams {
        command_id: CommandId::new(),
        text,
        conversation_id,
        new: args.new && conversation_id.is_none(),
        context: Some(context::prompt_context(tty, shell)),
        last_command: context::last_command(args.last_command.as_deref(), args.last_status),
        recent_commands: recent,
        settings: (settings != PromptSettings::default()).then_some(settings),
    };
    let sent: PromptSendResult = match client.call("prompt.send", &params).await {
        Ok(sent) => sent,
        Err(error) => return report::failure(&error),
    };
    let mut view = if args.json {
        View::json()
    } else if tty::stdout_is_tty() {
        View::term()
    } else {
        View::plain()
    };
    if let Some(switch) = sent.route.as_ref().and_then(conversation::switch_notice) {
        view.notice(&switch);
    }
    // A new conversation's prompt_queued is its second event; only an existing one can have a turn running.
    if sent.seq > 2 && conversation::queued_behind(&client, sent.conversation_id, sent.turn_id).await {
        view.queued();
    }
    let away_after = args.away_after.unwrap_or(presence::DEFAULT_AWAY_AFTER_SECS);
    let row = steer::SteerRow::new(params.context.clone(), params.settings.clone());
    let mut session = Session::new(client, (sent.conversation_id, sent.turn_id), view, away_after, row);
    let code = session.drive(sent.seq.saturating_sub(1)).await;
    session.view.finish();
    drop(session.term.take());
    if name_it {
        session.view.conversation(sent.conversation_id);
    }
    code
}

/// One turn being shown.
struct Session {
    client: Client,
    conversation_id: ConversationId,
    turn_id: TurnId,
    view: View,
    keys: Option<mpsc::UnboundedReceiver<Key>>,
    term: Option<TermGuard>,
    questions: Questions,
    /// The line typed so far for an input wait.
    line: String,
    /// The calls of this turn, and their titles (for an input wait's question).
    calls: HashMap<String, String>,
    /// Questions answered from here, so their approval_resolved is not news.
    answered: HashSet<String>,

    interrupt_sent: bool,
    last_seq: u64,
    /// The turn ended while surface questions wait: efr leaves with this code once they are answered.
    leave_with: Option<ExitCode>,
    /// The user's keys against `--away-after` ([`presence`]).
    idle: presence::Idle,
    /// The input row: steers, queued prompts ([`steer`]).
    row: steer::SteerRow,
    /// The preview of a call.background that waits for the user's `y` or `n` ([`background`]).
    background: Option<background::Asked>,
}

/// What the loop does after a step.
enum Step {
    Go,
    Exit(ExitCode),
}

impl Session {
    fn new(
        client: Client,
        (conversation_id, turn_id): (ConversationId, TurnId),
        view: View,
        away_after: u64,
        row: steer::SteerRow,
    ) -> Self {
        // Keys only from a terminal: without one, efr asks nothing.
        let term = if tty::stdin_is_tty() {
            TermGuard::set(TermMode::Keys).ok()
        } else {
            None
        };
        let keys = term.as_ref().map(|_| keys::spawn_reader());
        let idle = presence::Idle::new(away_after, term.is_some(), std::time::Instant::now());
        Self {
            client,
            conversation_id,
            turn_id,
            view,
            keys,
            term,
            questions: Questions::default(),
            line: String::new(),
            calls: HashMap::new(),
            answered: HashSet::new(),

            interrupt_sent: false,
            last_seq: 0,
            leave_with: None,
            idle,
            row,
            background: None,
        }
    }

    async fn subscribe(&self, after_seq: u64) -> Result<Stream, ClientError> {
        let params = ConversationSubscribeParams {
            conversation_id: self.conversation_id,
            after_seq: Some(after_seq),
            drafts: self.view.wants_drafts(),
            answers_input: true,
        };
        self.client.stream("conversation.subscribe", &params, true).await
    }

    async fn drive(&mut self, after_seq: u64) -> ExitCode {
        self.last_seq = after_seq;
        let mut stream = match self.subscribe(after_seq).await {
            Ok(stream) => stream,
            Err(error) => return report::failure(&error),
        };
        let mut sigint = match signal(SignalKind::interrupt()) {
            Ok(sigint) => sigint,
            Err(error) => return bad_input(&format!("cannot watch for Ctrl+C: {error}")),
        };
        let mut tick = tokio::time::interval(TICK);
        loop {
            let step = tokio::select! {
                frame = stream.next() => match frame {
                    Some(frame) => match self.on_frame(frame).await {
                        Ok(step) => step,
                        Err(Resubscribe) => match self.subscribe(self.last_seq).await {
                            Ok(next) => {
                                stream = next;
                                Step::Go
                            }
                            Err(error) => Step::Exit(report::failure(&error)),
                        },
                    },
                    None => {
                        self.view.notice("efrd closed the connection before the turn ended");
                        Step::Exit(ExitCode::from(report::FAILED))
                    }
                },
                Some(key) = recv(&mut self.keys) => self.on_key(key).await,
                _ = sigint.recv() => self.on_interrupt().await,
                _ = tick.tick() => {
                    self.view.tick();
                    if let Some(presence) = self.idle.tick(std::time::Instant::now()) {
                        self.say_presence(presence).await;
                    }
                    Step::Go
                }
            };
            if let Step::Exit(code) = step {
                return code;
            }
            if let Some(code) = self.leave_with.filter(|_| !self.questions.has_surface()) {
                return code;
            }
        }
    }

    async fn on_frame(&mut self, frame: ServerFrame) -> Result<Step, Resubscribe> {
        match frame {
            ServerFrame::Ack(_) => Ok(Step::Go),
            ServerFrame::Item { item, .. } => {
                if let Some(draft) = item.get("draft") {
                    if let Ok(draft) = serde_json::from_value::<efr_protocol::wire::Draft>(draft.clone())
                        && draft.turn_id == self.turn_id
                    {
                        self.view.draft(&draft.draft);
                    }
                    return Ok(Step::Go);
                }
                let Some(raw) = item.get("event") else {
                    return Ok(Step::Go); // a snapshot: not asked for
                };
                match serde_json::from_value::<Event>(raw.clone()) {
                    Ok(event) => Ok(self.on_event(&event, raw).await),
                    Err(error) => {
                        self.view.notice(&format!("cannot read an event: {error}"));
                        Ok(Step::Go)
                    }
                }
            }
            ServerFrame::End { .. } => {
                self.view.notice("the conversation's stream ended before the turn did");
                Ok(Step::Exit(ExitCode::from(report::FAILED)))
            }
            ServerFrame::Error { error, .. } => {
                let overflow = error.code == ErrorCode::Busy
                    && error.data.as_ref().and_then(|d| d.get("overflow")) == Some(&Value::Bool(true));
                if overflow {
                    return Err(Resubscribe);
                }
                Ok(Step::Exit(report::failure(&ClientError::Daemon(error))))
            }
        }
    }

    /// Whether an event belongs to this turn: its turn id, or (for the conversation's shell events) one of its calls.
    fn ours(&self, event: &Event) -> bool {
        match &event.turn_id {
            Some(turn) => *turn == self.turn_id,
            None => event
                .body
                .call_id()
                .is_some_and(|call| self.calls.contains_key(call.as_str())),
        }
    }

    async fn on_event(&mut self, event: &Event, raw: &Value) -> Step {
        self.last_seq = self.last_seq.max(event.seq);
        self.row.observe(event);
        if let EventBody::ToolCallStarted(call) = &event.body
            && event.turn_id.as_ref() == Some(&self.turn_id)
        {
            self.calls.insert(call.call_id.0.clone(), describe::call_title(call));
        }
        let ours = self.ours(event);
        // An input wait is asked with the program's own prompt (R-report 5): efrd's events do not carry it, the
        // hidden shell's status does.
        let prompt = match &event.body {
            EventBody::ToolCallInputChanged(wait) if ours && wait.input != InputWait::None => {
                let prompt = self.input_prompt(&wait.call_id).await;
                self.view.prompt(wait.call_id.as_str(), prompt.clone());
                prompt
            }
            _ => None,
        };
        if ours {
            self.view.event(event, raw);
        }
        // The questions that this event ends.
        let answered_here = event.body.call_id().is_some_and(|c| self.answered.contains(c.as_str()));
        if self.questions.on_event(&event.body) == Change::Withdrawn {
            if !answered_here {
                self.view.resume("(answered elsewhere, or no longer asked)");
            }
            self.line.clear();
            self.show_next();
        }
        // The questions that this event asks (only with keys to answer them).
        if self.keys.is_some() {
            let ask = match &event.body {
                EventBody::ApprovalRequested(question) => Some(Ask::approval(question)),
                EventBody::SurfaceQuestionRequested(question) if ours => Some(Ask::surface(question)),
                EventBody::ToolCallInputChanged(wait) if ours => {
                    let title = self.calls.get(wait.call_id.as_str()).cloned().unwrap_or_default();
                    Ask::input(wait, &title, prompt.as_deref())
                }
                _ => None,
            };
            if let Some(ask) = ask
                && let Some(shown) = self.questions.push(ask)
            {
                let text = shown.text.clone();
                self.line.clear();
                self.view.ask(&text);
            }
        } else if ours {
            self.cannot_ask(&event.body).await;
        }
        if event.turn_id.as_ref() != Some(&self.turn_id) {
            return Step::Go;
        }
        let code = match &event.body {
            EventBody::TurnCompleted(_) => report::OK,
            EventBody::TurnFailed(failed) => {
                if report::wants_login(&failed.error.message) {
                    self.view.notice(report::LOGIN_HINT);
                }
                report::FAILED
            }
            EventBody::TurnInterrupted(_) => report::INTERRUPTED,
            EventBody::TurnCancelled(_) => report::FAILED,
            EventBody::Unknown(unknown) if unknown.kind == "prompt_withdrawn" => report::FAILED,
            _ => return Step::Go,
        };
        if self.keys.is_some() && self.questions.has_surface() {
            // The turn did not wait for these answers; efr asks them before it leaves (docs/auto.md).
            if self.questions.end_turn() == Change::Withdrawn {
                self.view.resume("");
                self.show_next_current();
            }
            self.view
                .notice("the turn ended; answer its surface questions (Ctrl+C leaves them held for later)");
            self.leave_with = Some(ExitCode::from(code));
            return Step::Go;
        }
        if self.questions.clear() == Change::Withdrawn {
            self.view.resume("");
        }
        Step::Exit(ExitCode::from(code))
    }

    /// The program's prompt of `call_id`'s input wait: the pty row with the cursor, from shell.status, while that
    /// call holds the hidden shell and waits. `None` when it does not, or when shell.status fails: the prompt is a
    /// help to the question, which is asked either way.
    async fn input_prompt(&self, call_id: &CallId) -> Option<String> {
        let params = ShellStatusParams {
            conversation_id: self.conversation_id,
        };
        let status: ShellStatusResult = self.client.call("shell.status", &params).await.ok()?;
        let busy = status
            .busy
            .filter(|busy| busy.call_id == *call_id && busy.input != InputWait::None)?;
        describe::prompt_row(busy.prompt.as_deref())
    }

    /// Without a terminal on stdin efr cannot ask: an approval of this turn is denied (the turn goes on without
    /// the call), and an input wait of this turn interrupts the turn (nothing could ever answer it here, and a
    /// pipeline must not hang); each with a notice that names the call.
    async fn cannot_ask(&mut self, body: &EventBody) {
        match body {
            EventBody::ApprovalRequested(question) => {
                self.view.notice(&format!(
                    "denied: {} (efr cannot ask without a terminal on stdin; run it in a terminal, or choose a \
                     --mode that does not ask)",
                    question.summary
                ));
                let params = ApprovalRespondParams {
                    command_id: CommandId::new(),
                    conversation_id: self.conversation_id,
                    call_id: question.call_id.clone(),
                    decision: ApprovalDecision::Deny,
                };
                self.answered.insert(question.call_id.0.clone());
                if let Err(error) = self.client.call::<_, Value>("approval.respond", &params).await {
                    self.view.notice(&format!("the denial was not taken: {error}"));
                }
            }
            EventBody::SurfaceQuestionRequested(question) => {
                self.view.notice(&format!(
                    "held for your answer: {} (efr cannot ask without a terminal on stdin; sandbox.surface_respond \
                     answers it)",
                    surface::question_text(question, false)
                ));
            }
            EventBody::ToolCallInputChanged(wait) if wait.input != InputWait::None && !self.interrupt_sent => {
                let title = self.calls.get(wait.call_id.as_str()).cloned().unwrap_or_default();
                self.view.notice(&format!(
                    "{title} waits for input, and efr cannot ask without a terminal on stdin: interrupting the turn"
                ));
                self.interrupt(Vec::new(), Vec::new()).await;
            }
            _ => {}
        }
    }

    /// Shows the open question again (after the turn's end made another one open).
    fn show_next_current(&mut self) {
        if let Some(current) = self.questions.current() {
            let text = current.text.clone();
            self.view.ask(&text);
        }
    }

    fn show_next(&mut self) {
        if let Some(next) = self.questions.next() {
            let text = next.text.clone();
            self.view.ask(&text);
        }
    }

    /// Tells efrd the user's presence in this conversation; a failure is a notice, the turn goes on.
    async fn say_presence(&mut self, presence: efr_protocol::wire::Presence) {
        if let Err(error) = presence::set(&self.client, Some(self.conversation_id), presence).await {
            self.view
                .notice(&format!("cannot tell efrd you are {}: {error}", presence.as_str()));
        }
    }

    async fn on_key(&mut self, key: Key) -> Step {
        if let Some(presence) = self.idle.input(std::time::Instant::now()) {
            self.say_presence(presence).await;
        }
        if key == Key::CtrlC {
            return self.on_interrupt().await;
        }
        if let Some(step) = self.on_background_key(&key).await {
            return step;
        }
        if key == Key::CtrlB {
            return self.on_ctrl_b().await;
        }
        let Some(ask) = self.questions.current().cloned() else {
            // No question: the keys are the turn's input row.
            return self.on_row_key(key).await;
        };
        match ask.kind {
            AskKind::Approval { always } => {
                let decision = match key {
                    Key::Char('y' | 'Y') => ApprovalDecision::Allow,
                    Key::Char('n' | 'N') => ApprovalDecision::Deny,
                    Key::Char('a' | 'A') if always => ApprovalDecision::AllowAlways,
                    _ => return Step::Go,
                };
                self.answer_approval(&ask, decision).await;
            }
            AskKind::Surface { question_id } => {
                let keep = match key {
                    Key::Char('y' | 'Y') => true,
                    Key::Char('n' | 'N') => false,
                    _ => return Step::Go,
                };
                self.answer_surface(&question_id, keep).await;
            }
            AskKind::Input { input, hidden } => match key {
                Key::Char(c) => {
                    self.line.push(c);
                    if !hidden {
                        self.view.echo(c.encode_utf8(&mut [0; 4]));
                    }
                }
                Key::Backspace => {
                    if self.line.pop().is_some() && !hidden {
                        self.view.echo("\x08 \x08");
                    }
                }
                Key::ClearLine => {
                    if !hidden {
                        let n = self.line.chars().count();
                        self.view.echo(&"\x08 \x08".repeat(n));
                    }
                    self.line.clear();
                }
                Key::Enter => self.answer_input(&ask, input, hidden).await,
                Key::CtrlD | Key::CtrlC | Key::CtrlB | Key::Tab | Key::CtrlX => {}
            },
        }
        Step::Go
    }
}

/// A subscription fell behind and must resume after the last seq seen.
struct Resubscribe;

/// The next key, or never when there is no key reader.
async fn recv(keys: &mut Option<mpsc::UnboundedReceiver<Key>>) -> Option<Key> {
    match keys {
        Some(keys) => keys.recv().await,
        None => std::future::pending().await,
    }
}
