//! What the conversation knows of its hidden shell's current call, from the events it commits, and the rules of
//! input.respond, shell.status and shell.interrupt.
//!
//! The actor feeds every committed event to [`OpenShellCalls::observe`]: `tool_call_started` of a shell call opens the
//! call, `tool_call_input_changed` and `shell_command_input_changed` set its wait, `tool_call_completed` closes it
//! unless the command was left running, and `shell_command_ended` closes a command left running. So the state is the
//! log's, and an answer after the call's end is `not_found`, as the spec says. Who let the call run outside the
//! sandbox (`approved_by`) follows from the turn's mode and its approval; the program's prompt from the events that
//! carry one (the live screen's row is the actor's to add, see [`OpenShellCalls::busy`]).

use efr_protocol::events::{Event, EventBody};
use efr_protocol::ids::{CallId, Timestamp};
use efr_protocol::wire::{
    AnswerInput, ApprovalDecision, ApprovedBy, How, InputRespondParams, InputWait, Launch, Mode, ShellBusy,
};
use efr_protocol::{ErrorBody, ErrorCode};

use crate::tools::spec::SHELL;
use efr_policy::approved_by;

/// The shell call that holds the hidden shell, if any.
#[derive(Debug, Default)]
pub struct OpenShellCalls {
    /// The shell calls that have not ended, in start order: a command left running, and a call of the running turn
    /// (which the shell refuses as busy while the first holds it, so it never replaces it).
    open: Vec<OpenCall>,
    /// The mode of the newest turn (turn_started), for `approved_by`.
    mode: Option<Mode>,
    /// How commands left running ended since the last turn started: the model hears of them with its next prompt
    /// ([`OpenShellCalls::take_notices`]), since nothing else tells it that `efr shell stop` or the command's own exit
    /// freed the shell.
    notices: Vec<String>,
}

/// What the model reads of the end of a command left running.
pub(crate) fn notice(command: &str, how: How, exit_code: Option<i32>, notes: &[String]) -> String {
    let how = match how {
        How::Ended => "it exited",
        How::Stopped => "the user stopped it (SIGINT)",
        How::Limit => "it ran past efr's limit and was stopped",
        How::Closed => "the hidden shell was closed",
        How::ShellExited => "the hidden shell exited",
        How::Moved => "it was moved to a background job",
        How::Unknown => "it ended",
    };
    let exit = exit_code.map_or_else(String::new, |code| format!(", exit status {code}"));
    let mut text =
        format!("the command `{command}` that was left running has ended: {how}{exit}; the shell takes commands again");
    for note in notes {
        text.push('\n');
        text.push_str(note);
    }
    text
}

/// A running shell call that call.background may move.
#[derive(Debug, Clone)]
pub struct Movable {
    /// Its turn.
    pub turn_id: efr_protocol::ids::TurnId,
    /// How it runs.
    pub launch: Launch,
    /// The command line.
    pub command: String,
    /// When it started.
    pub since: Timestamp,
}

#[derive(Debug, Clone)]
struct OpenCall {
    call_id: CallId,
    /// The call's turn (absent only in a log without one).
    turn_id: Option<efr_protocol::ids::TurnId>,
    /// How it runs, as tool_call_started showed it.
    launch: Launch,
    /// The whole command line.
    line: String,
    command: String,
    since: Timestamp,
    manual_input: bool,
    contained: bool,
    input: InputWait,
    looks_secret: bool,
    left_running: bool,
    prompt: Option<String>,
    approved_by: Option<ApprovedBy>,
}

impl OpenShellCalls {
    /// Follows one committed event.
    pub fn observe(&mut self, event: &Event) {
        match &event.body {
            EventBody::TurnStarted(started) => {
                self.mode = started.settings.as_ref().map(|s| s.mode);
            }
            EventBody::ToolCallStarted(started) if started.tool == SHELL => {
                let contained = matches!(started.launch, Some(Launch::Contained { .. }));
                let command = started
                    .input
                    .get("command")
                    .and_then(|c| c.as_str())
                    .unwrap_or_default();
                self.open.push(OpenCall {
                    call_id: started.call_id.clone(),
                    turn_id: event.turn_id,
                    launch: started.launch.clone().unwrap_or(Launch::Direct),
                    line: command.to_owned(),
                    command: command.chars().take(200).collect(),
                    since: event.at,
                    manual_input: started.manual_input,
                    contained,
                    input: InputWait::None,
                    looks_secret: false,
                    left_running: false,
                    prompt: None,
                    approved_by: self.mode.and_then(|mode| approved_by(mode, contained, false)),
                });
            }
            EventBody::ApprovalResolved(resolved)
                if matches!(
                    resolved.decision,
                    ApprovalDecision::Allow | ApprovalDecision::AllowAlways
                ) =>
            {
                let mode = self.mode.unwrap_or(Mode::Manual);
                if let Some(open) = self.call_mut(&resolved.call_id) {
                    open.approved_by = approved_by(mode, open.contained, true);
                }
            }
            EventBody::ShellCommandDetached(detached) => {
                if let Some(open) = self.call_mut(&detached.call_id) {
                    open.prompt.clone_from(&detached.prompt);
                    open.approved_by = detached.approved_by.or(open.approved_by);
                }
            }
            EventBody::ToolCallInputChanged(changed) => {
                if let Some(open) = self.call_mut(&changed.call_id) {
                    open.input = changed.input;
                    open.looks_secret = changed.looks_secret;
                }
            }
            EventBody::ShellCommandInputChanged(changed) => {
                if let Some(open) = self.call_mut(&changed.call_id) {
                    open.input = changed.input;
                    open.looks_secret = changed.looks_secret;
                    open.prompt.clone_from(&changed.prompt);
                }
            }
            EventBody::ToolCallCompleted(completed) if completed.left_running => {
                if let Some(open) = self.call_mut(&completed.call_id) {
                    open.left_running = true;
                }
            }
            EventBody::ToolCallCompleted(completed) => self.open.retain(|o| o.call_id != completed.call_id),
            EventBody::ShellCommandEnded(ended) => {
                if let Some(open) = self.open.iter().find(|o| o.call_id == ended.call_id) {
                    self.notices
                        .push(notice(&open.command, ended.how, ended.exit_code, &ended.notes));
                }
                self.open.retain(|o| o.call_id != ended.call_id);
            }
            _ => {}
        }
    }

    /// Adds notices of commands left running that ended where this state did not see them start (a restart).
    pub fn push_notices(&mut self, notices: impl IntoIterator<Item = String>) {
        self.notices.extend(notices);
    }

    /// Whether notices wait for the next turn ([`OpenShellCalls::take_notices`]).
    #[must_use]
    pub fn has_notices(&self) -> bool {
        !self.notices.is_empty()
    }

    /// The notices of commands left running that ended since the last call (see the field's doc), oldest first.
    pub fn take_notices(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notices)
    }

    fn call_mut(&mut self, call_id: &CallId) -> Option<&mut OpenCall> {
        self.open.iter_mut().find(|o| o.call_id == *call_id)
    }

    /// The call that holds the shell: a command left running, else the newest call.
    fn holder(&self) -> Option<&OpenCall> {
        self.open.iter().find(|o| o.left_running).or_else(|| self.open.last())
    }

    /// Whether no shell call is open (none left running, none of a running turn).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    /// shell.status's `busy`: the call that holds the shell, absent when the shell is free. Its `prompt` is the one
    /// the last event gave, only while the command waits for input (a row of output is no prompt); the actor
    /// replaces it with the live screen's row.
    #[must_use]
    pub fn busy(&self) -> Option<ShellBusy> {
        self.holder().map(|o| ShellBusy {
            call_id: o.call_id.clone(),
            command: o.command.clone(),
            since: o.since,
            contained: o.contained,
            input: o.input,
            looks_secret: o.looks_secret,
            prompt: o.prompt.clone().filter(|_| o.input != InputWait::None),
            approved_by: o.approved_by,
        })
    }

    /// Checks an input.respond against the call that holds the shell.
    ///
    /// # Errors
    /// `not_found` when the call does not hold the shell (it ended, or never ran); `conflict` for a manual answer
    /// to a call without `manual_input` (a command that types into a shell or a REPL), and for an answer that is not
    /// manual while the command reports no wait.
    pub fn check_answer(&self, params: &InputRespondParams) -> Result<(), ErrorBody> {
        let Some(open) = self.open.iter().find(|o| o.call_id == params.call_id) else {
            return Err(ErrorBody::new(
                ErrorCode::NotFound,
                format!("call {} runs no command now", params.call_id),
            ));
        };
        if params.manual {
            if !open.manual_input {
                return Err(ErrorBody::new(
                    ErrorCode::Conflict,
                    "this command types into a shell or a REPL (nested_shell): efr does not pass a manual answer",
                ));
            }
            return Ok(());
        }
        match (open.input, params.input) {
            (InputWait::None, _) => Err(ErrorBody::new(
                ErrorCode::Conflict,
                "the command does not wait for input now",
            )),
            (InputWait::Visible, AnswerInput::Visible) | (InputWait::Hidden, AnswerInput::Hidden) => Ok(()),
            // A visible wait that looks secret is answered visibly, with what the user typed hidden.
            (InputWait::Visible, AnswerInput::Hidden) if open.looks_secret => Ok(()),
            _ => Err(ErrorBody::new(
                ErrorCode::Conflict,
                "the answer's kind is not the wait's",
            )),
        }
    }

    /// The call that call.background would move: `call_id` when it holds the shell.
    #[must_use]
    pub fn movable(&self, call_id: &CallId) -> Option<Movable> {
        let open = self.holder().filter(|o| &o.call_id == call_id)?;
        Some(Movable {
            turn_id: open.turn_id?,
            launch: open.launch.clone(),
            command: open.line.clone(),
            since: open.since,
        })
    }

    /// Whether `call_id` holds the shell (shell.interrupt's check).
    #[must_use]
    pub fn holds(&self, call_id: &CallId) -> bool {
        self.holder().is_some_and(|o| &o.call_id == call_id)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn feed(call: &mut OpenShellCalls, body: serde_json::Value) {
        let mut value = json!({"seq": 1, "at": "2026-11-30T18:00:00.000Z",
            "conversation_id": "6f1c1e9e-4c1d-4bb5-9f6e-0c8f9c7d2a11"});
        if let serde_json::Value::Object(members) = body {
            for (k, v) in members {
                value[k] = v;
            }
        }
        call.observe(&serde_json::from_value(value).unwrap());
    }

    fn start(call: &mut OpenShellCalls, mode: &str, launch: &serde_json::Value) {
        feed(
            call,
            json!({"kind": "turn_started", "settings": {"mode": mode, "model": "gpt-5"}}),
        );
        feed(
            call,
            json!({"kind": "tool_call_started", "call_id": "c1", "tool": "shell",
                "input": {"command": "sleep 300"}, "launch": launch}),
        );
    }

    #[test]
    fn approved_by_names_who_let_a_call_out_of_the_sandbox() {
        assert_eq!(approved_by(Mode::Full, false, false), Some(ApprovedBy::FullMode));
        assert_eq!(approved_by(Mode::Cautious, false, true), Some(ApprovedBy::You));
        assert_eq!(approved_by(Mode::Auto, false, true), Some(ApprovedBy::You));
        assert_eq!(approved_by(Mode::Cautious, false, false), None);
        assert_eq!(approved_by(Mode::Auto, true, false), None);
        assert_eq!(approved_by(Mode::Full, true, true), None);
    }

    #[test]
    fn busy_follows_the_mode_the_approval_and_the_prompt_of_a_wait() {
        let mut call = OpenShellCalls::default();
        start(&mut call, "full", &json!({"kind": "direct"}));
        assert_eq!(call.busy().unwrap().approved_by, Some(ApprovedBy::FullMode));

        let mut call = OpenShellCalls::default();
        start(&mut call, "cautious", &json!({"kind": "direct"}));
        assert_eq!(call.busy().unwrap().approved_by, None);
        feed(
            &mut call,
            json!({"kind": "approval_resolved", "call_id": "c1", "decision": "allow"}),
        );
        assert_eq!(call.busy().unwrap().approved_by, Some(ApprovedBy::You));

        // Left running: the detach's prompt shows only while the command waits for input.
        feed(
            &mut call,
            json!({"kind": "tool_call_completed", "call_id": "c1", "status": "ok", "output": "",
            "left_running": true}),
        );
        feed(
            &mut call,
            json!({"kind": "shell_command_detached", "call_id": "c1", "command": "sleep 300",
            "since": "2026-11-30T18:00:00.000Z", "contained": false, "input": "none", "prompt": "working..."}),
        );
        let busy = call.busy().unwrap();
        assert_eq!((busy.prompt, busy.approved_by), (None, Some(ApprovedBy::You)));
        feed(
            &mut call,
            json!({"kind": "shell_command_input_changed", "call_id": "c1", "input": "visible",
            "contained": false, "prompt": "Continue? [y/N] "}),
        );
        assert_eq!(call.busy().unwrap().prompt.as_deref(), Some("Continue? [y/N] "));
        feed(
            &mut call,
            json!({"kind": "shell_command_ended", "call_id": "c1", "how": "ended"}),
        );
        assert_eq!(call.busy(), None);
    }

    #[test]
    fn a_call_refused_as_busy_leaves_the_command_that_holds_the_shell() {
        let mut call = OpenShellCalls::default();
        start(&mut call, "full", &json!({"kind": "direct"}));
        feed(
            &mut call,
            json!({"kind": "tool_call_completed", "call_id": "c1", "status": "ok", "output": "",
            "left_running": true}),
        );
        feed(
            &mut call,
            json!({"kind": "tool_call_started", "call_id": "c2", "tool": "shell",
            "input": {"command": "echo blocked?"}, "launch": {"kind": "direct"}}),
        );
        assert_eq!(call.busy().unwrap().call_id.as_str(), "c1");
        feed(
            &mut call,
            json!({"kind": "tool_call_completed", "call_id": "c2", "status": "failed",
            "output": "the hidden shell is busy"}),
        );
        assert_eq!(call.busy().unwrap().call_id.as_str(), "c1");
        assert!(call.holds(&CallId("c1".into())));
        feed(
            &mut call,
            json!({"kind": "shell_command_ended", "call_id": "c1", "how": "stopped"}),
        );
        assert_eq!(call.busy(), None);
        assert_eq!(
            call.take_notices(),
            [
                "the command `sleep 300` that was left running has ended: the user stopped it (SIGINT); the shell takes \
              commands again"
            ]
        );
        assert!(call.take_notices().is_empty());
    }
}
