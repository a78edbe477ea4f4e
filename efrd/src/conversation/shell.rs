//! What the conversation knows of its hidden shell's current call, from the events it commits, and the rules of
//! input.respond, shell.status and shell.interrupt.
//!
//! The actor feeds every committed event to [`ShellCall::observe`]: `tool_call_started` of a shell call opens the
//! call, `tool_call_input_changed` and `shell_command_input_changed` set its wait, `tool_call_completed` closes it
//! unless the command was left running, and `shell_command_ended` closes a command left running. So the state is the
//! log's, and an answer after the call's end is `not_found`, as the spec says.

use efr_protocol::events::{Event, EventBody};
use efr_protocol::ids::{CallId, Timestamp};
use efr_protocol::wire::{AnswerInput, InputRespondParams, InputWait, Launch, ShellBusy};
use efr_protocol::{ErrorBody, ErrorCode};

use crate::tools::spec::SHELL;

/// The shell call that holds the hidden shell, if any.
#[derive(Debug, Default)]
pub struct ShellCall {
    open: Option<OpenCall>,
}

#[derive(Debug, Clone)]
struct OpenCall {
    call_id: CallId,
    command: String,
    since: Timestamp,
    manual_input: bool,
    contained: bool,
    input: InputWait,
    looks_secret: bool,
    left_running: bool,
}

impl ShellCall {
    /// Follows one committed event.
    pub fn observe(&mut self, event: &Event) {
        match &event.body {
            EventBody::ToolCallStarted(started) if started.tool == SHELL => {
                let command = started
                    .input
                    .get("command")
                    .and_then(|c| c.as_str())
                    .unwrap_or_default();
                self.open = Some(OpenCall {
                    call_id: started.call_id.clone(),
                    command: command.chars().take(200).collect(),
                    since: event.at,
                    manual_input: started.manual_input,
                    contained: matches!(started.launch, Some(Launch::Contained { .. })),
                    input: InputWait::None,
                    looks_secret: false,
                    left_running: false,
                });
            }
            EventBody::ToolCallInputChanged(changed) => {
                if let Some(open) = self.open.as_mut().filter(|o| o.call_id == changed.call_id) {
                    open.input = changed.input;
                    open.looks_secret = changed.looks_secret;
                }
            }
            EventBody::ShellCommandInputChanged(changed) => {
                if let Some(open) = self.open.as_mut().filter(|o| o.call_id == changed.call_id) {
                    open.input = changed.input;
                    open.looks_secret = changed.looks_secret;
                }
            }
            EventBody::ToolCallCompleted(completed) => {
                if let Some(open) = self.open.as_mut().filter(|o| o.call_id == completed.call_id) {
                    if completed.left_running {
                        open.left_running = true;
                    } else {
                        self.open = None;
                    }
                }
            }
            EventBody::ShellCommandEnded(ended) if self.open.as_ref().is_some_and(|o| o.call_id == ended.call_id) => {
                self.open = None;
            }
            _ => {}
        }
    }

    /// shell.status's `busy`: the call that holds the shell, absent when the shell is free.
    #[must_use]
    pub fn busy(&self) -> Option<ShellBusy> {
        self.open.as_ref().map(|o| ShellBusy {
            call_id: o.call_id.clone(),
            command: o.command.clone(),
            since: o.since,
            contained: o.contained,
            input: o.input,
            looks_secret: o.looks_secret,
            prompt: None,
            approved_by: None,
        })
    }

    /// Checks an input.respond against the call that holds the shell.
    ///
    /// # Errors
    /// `not_found` when the call does not hold the shell (it ended, or never ran); `conflict` for a manual answer
    /// to a call without `manual_input` (a command that types into a shell or a REPL), and for an answer that is not
    /// manual while the command reports no wait.
    pub fn check_answer(&self, params: &InputRespondParams) -> Result<(), ErrorBody> {
        let Some(open) = self.open.as_ref().filter(|o| o.call_id == params.call_id) else {
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

    /// Whether `call_id` holds the shell (shell.interrupt's check).
    #[must_use]
    pub fn holds(&self, call_id: &CallId) -> bool {
        self.open.as_ref().is_some_and(|o| &o.call_id == call_id)
    }
}
