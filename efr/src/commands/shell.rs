//! `efr shell [status]` and `efr shell stop [--close]`: the conversation's hidden shell (shell.status,
//! shell.interrupt).
//!
//! A command that the model left running past its timeout holds the hidden shell, and every later shell call of
//! the conversation is refused as busy until it ends (R-report 6). `efr shell` shows that command: what it is, for
//! how long it has run, whether it waits for input and the program's prompt. `efr shell stop` sends SIGINT to it
//! (shell.interrupt), then looks again for up to [`STOP_WAIT`] to tell whether it ended; `--close` closes the hidden
//! shell instead (a command that ignores SIGINT ends with it; the next call starts a new shell).
//!
//! ```text
//! $ sleep 300
//!   running for 12s (since 2026-11-30T18:06:08.416Z), outside the sandbox (full mode)
//!   not waiting for input
//! ```
//!
//! The conversation is `--conversation ID`, else the terminal's (the newest conversation of the tty of stdin, as
//! `efr` and `efr diff` take it). Without a terminal on stdin, `--conversation` is needed. Exit codes: 0 done (the
//! shell is free, or the command stopped); 1 for bad input, an unknown conversation, nothing to stop, or a command
//! that still runs after SIGINT; 2 when efrd is not running.
//!
//! The command line and the program's prompt are the model's and the program's: they are printed
//! [`printable`] (no terminal control sequences), by [`render`] and by [`out::print`] and [`report::error`].

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use efr_protocol::ErrorCode;
use efr_protocol::ids::{CommandId, ConversationId, Timestamp};
use efr_protocol::wire::{
    ApprovedBy, InputWait, ShellBusy, ShellInterruptParams, ShellInterruptResult, ShellStatusParams, ShellStatusResult,
};
use serde_json::json;

use super::human_secs;
use crate::clean::printable;
use crate::cli::{ShellArgs, ShellStopArgs};
use crate::client::{Client, ClientError};
use crate::turn::conversation::newest_of_tty;
use crate::turn::describe::prompt_row;
use crate::{context, out, report};

/// How long `efr shell stop` waits for the command to end after SIGINT (or the shell to close).
pub const STOP_WAIT: Duration = Duration::from_secs(5);

/// How often `efr shell stop` looks while it waits.
const STOP_POLL: Duration = Duration::from_millis(100);

/// Why `efr shell` cannot name a conversation before efrd is asked.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShellArgsError {
    /// No `--conversation`, and stdin is not a terminal (whose conversation efr would take).
    #[error(
        "efr shell needs --conversation ID when stdin is not a terminal (efr's last line names the conversation \
         then; `efr --json` too)"
    )]
    NoTerminal,
    /// `--conversation` is not a UUID.
    #[error("--conversation: `{0}` is not a conversation id (a UUID)")]
    Conversation(String),
}

/// The conversation named by `--conversation`, checked as a UUID; `None` when it is absent and `tty` (the terminal
/// of stdin) is to be asked.
///
/// # Errors
/// [`ShellArgsError`] for an id that is not a UUID, or no id without a terminal.
pub fn named(conversation: Option<&str>, tty: Option<&str>) -> Result<Option<ConversationId>, ShellArgsError> {
    match conversation {
        Some(id) => id
            .parse()
            .map(Some)
            .map_err(|_| ShellArgsError::Conversation(id.to_owned())),
        None if tty.is_none() => Err(ShellArgsError::NoTerminal),
        None => Ok(None),
    }
}

fn failed(message: &str) -> ExitCode {
    report::error(message);
    ExitCode::from(report::FAILED)
}

/// Connects and finds the conversation: the named one (which must exist), else the newest of the terminal.
async fn open(conversation: Option<&str>) -> Result<(Client, ConversationId), ExitCode> {
    let tty = context::stdin_tty();
    let named = named(conversation, tty.as_deref()).map_err(|e| failed(&e.to_string()))?;
    let client = report::connect(tty.clone()).await?;
    let id = match (named, tty) {
        (Some(id), _) => id,
        (None, Some(tty)) => newest_of_tty(&client, &tty)
            .await
            .map_err(|e| report::failure(&e))?
            .ok_or_else(|| failed(&format!("the terminal {tty} has no conversation yet")))?,
        (None, None) => return Err(failed(&ShellArgsError::NoTerminal.to_string())),
    };
    Ok((client, id))
}

/// shell.status, with efrd's `not_found` told as "no such conversation".
async fn status(client: &Client, conversation_id: ConversationId) -> Result<ShellStatusResult, ExitCode> {
    client
        .call("shell.status", &ShellStatusParams { conversation_id })
        .await
        .map_err(|error| match error.daemon() {
            Some(body) if body.code == ErrorCode::NotFound => {
                failed(&format!("no such conversation: {conversation_id}"))
            }
            _ => report::failure(&error),
        })
}

/// Runs `efr shell [status]`: the command that holds the hidden shell, or that it is free.
pub async fn run_status(args: &ShellArgs) -> ExitCode {
    let (client, id) = match open(args.conversation.as_deref()).await {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    let status = match status(&client, id).await {
        Ok(status) => status,
        Err(code) => return code,
    };
    if args.json {
        match serde_json::to_string(&status) {
            Ok(line) => out::println_json(&line),
            Err(error) => return failed(&format!("cannot encode the result of shell.status: {error}")),
        }
    } else {
        out::print(&render(status.busy.as_ref(), &Timestamp::now()));
    }
    ExitCode::SUCCESS
}

/// Runs `efr shell stop [--close]`: SIGINT to the command that holds the hidden shell (or a close of the shell),
/// then up to [`STOP_WAIT`] for it to end.
pub async fn run_stop(args: &ShellStopArgs) -> ExitCode {
    let (client, id) = match open(args.conversation.as_deref()).await {
        Ok(opened) => opened,
        Err(code) => return code,
    };
    let busy = match status(&client, id).await {
        Ok(ShellStatusResult { busy: Some(busy) }) => busy,
        Ok(ShellStatusResult { busy: None }) => return failed("the hidden shell is free: nothing to stop"),
        Err(code) => return code,
    };
    let params = ShellInterruptParams {
        command_id: CommandId::new(),
        conversation_id: id,
        call_id: busy.call_id.clone(),
        close: args.close,
    };
    match client.call::<_, ShellInterruptResult>("shell.interrupt", &params).await {
        Ok(_) => {}
        // Between the look and the stop, the command may have ended by itself.
        Err(ClientError::Daemon(body)) if body.code == ErrorCode::NotFound => {
            return failed(&format!("$ {} already ended: nothing to stop", busy.command));
        }
        Err(error) => return report::failure(&error),
    }
    let ended = match wait_until_free(&client, id, &busy).await {
        Ok(ended) => ended,
        Err(code) => return code,
    };
    if args.json {
        let line = json!({
            "call_id": busy.call_id,
            "command": busy.command,
            "close": args.close,
            "ended": ended,
        });
        out::println_json(&line.to_string());
    } else if ended {
        let how = if args.close {
            "closed the hidden shell"
        } else {
            "stopped (SIGINT)"
        };
        out::println(&format!("$ {}: {how}", busy.command));
    }
    if ended {
        return ExitCode::SUCCESS;
    }
    let hint = if args.close {
        String::new()
    } else {
        "; `efr shell stop --close` closes the hidden shell".to_owned()
    };
    failed(&format!(
        "$ {} still runs {}s after the stop{hint}",
        busy.command,
        STOP_WAIT.as_secs()
    ))
}

/// Whether `busy`'s call left the hidden shell within [`STOP_WAIT`].
async fn wait_until_free(client: &Client, id: ConversationId, busy: &ShellBusy) -> Result<bool, ExitCode> {
    let deadline = Instant::now() + STOP_WAIT;
    loop {
        let now = status(client, id).await?;
        if now.busy.is_none_or(|b| b.call_id != busy.call_id) {
            return Ok(true);
        }
        if Instant::now() >= deadline {
            return Ok(false);
        }
        tokio::time::sleep(STOP_POLL).await;
    }
}

/// The readable form of shell.status at `now`: `the hidden shell is free`, or the command, how long it has run,
/// where it runs, and its input wait with the program's prompt.
#[must_use]
pub fn render(busy: Option<&ShellBusy>, now: &Timestamp) -> String {
    let Some(busy) = busy else {
        return "the hidden shell is free\n".to_owned();
    };
    let mut out = String::new();
    let _ = writeln!(out, "$ {}", printable(&busy.command));
    let secs = u64::try_from((now.0 - busy.since.0).num_seconds()).unwrap_or(0);
    // The wire's form of the time (RFC 3339 UTC with milliseconds).
    let since = serde_json::to_value(busy.since)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let place = match (busy.contained, busy.approved_by) {
        (true, _) => "in the sandbox".to_owned(),
        (false, Some(by)) => format!("outside the sandbox ({})", approved_words(by)),
        (false, None) => "outside the sandbox".to_owned(),
    };
    let _ = writeln!(out, "  running for {} (since {since}), {place}", human_secs(secs));
    let wait = match busy.input {
        InputWait::None => "not waiting for input".to_owned(),
        InputWait::Hidden => "waits for hidden input".to_owned(),
        InputWait::Visible if busy.looks_secret => "waits for input that looks secret".to_owned(),
        InputWait::Visible => "waits for input".to_owned(),
    };
    match prompt_row(busy.prompt.as_deref()) {
        Some(prompt) => {
            let _ = writeln!(out, "  {wait}: {prompt}");
        }
        None => {
            let _ = writeln!(out, "  {wait}");
        }
    }
    out
}

/// Who let the command run outside the sandbox, in words.
fn approved_words(by: ApprovedBy) -> &'static str {
    match by {
        ApprovedBy::You => "you allowed it",
        ApprovedBy::YourRule => "one of your rules allowed it",
        ApprovedBy::Reviewer => "the reviewer allowed it",
        ApprovedBy::FullMode => "full mode",
        ApprovedBy::Unknown => "allowed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "6f1c1e9e-4c1d-4bb5-9f6e-0c8f9c7d2a11";

    fn busy(members: &serde_json::Value) -> ShellBusy {
        let mut value = json!({"call_id": "call_1", "command": "sleep 300",
            "since": "2026-11-30T18:06:08.416Z", "contained": false, "input": "none"});
        for (k, v) in members.as_object().unwrap() {
            value[k] = v.clone();
        }
        serde_json::from_value(value).unwrap()
    }

    fn at(text: &str) -> Timestamp {
        serde_json::from_value(json!(text)).unwrap()
    }

    #[test]
    fn a_busy_shell_says_what_runs_for_how_long_and_its_prompt() {
        let now = at("2026-11-30T18:06:20.500Z");
        let out = render(Some(&busy(&json!({"approved_by": "full_mode"}))), &now);
        assert_eq!(
            out,
            "$ sleep 300\n  running for 12s (since 2026-11-30T18:06:08.416Z), outside the sandbox (full mode)\n  \
             not waiting for input\n"
        );
        let waits = busy(&json!({"contained": true, "input": "visible", "prompt": "Continue? [y/N] "}));
        let out = render(Some(&waits), &now);
        assert!(out.contains(", in the sandbox\n"), "{out}");
        assert!(out.ends_with("  waits for input: Continue? [y/N]\n"), "{out}");
        assert_eq!(render(None, &now), "the hidden shell is free\n");
    }

    #[test]
    fn the_command_and_its_prompt_are_printed_without_control_sequences() {
        let now = at("2026-11-30T18:06:20.500Z");
        let waits = busy(&json!({"command": "sleep\u{1b}]2;PWNED\u{7} 300\r", "input": "visible",
            "prompt": "\u{1b}[41mName?\u{1b}[0m "}));
        let out = render(Some(&waits), &now);
        assert!(out.starts_with("$ sleep␛]2;PWNED␇ 300␍\n"), "{out:?}");
        assert!(out.ends_with("  waits for input: ␛[41mName?␛[0m\n"), "{out:?}");
        assert!(!out.contains(['\u{1b}', '\u{7}', '\r']), "{out:?}");
    }

    #[test]
    fn the_conversation_must_be_a_uuid_or_the_terminals() {
        assert_eq!(named(None, None), Err(ShellArgsError::NoTerminal));
        assert_eq!(named(None, Some("/dev/pts/3")), Ok(None));
        let error = named(Some("nope"), Some("/dev/pts/3")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "--conversation: `nope` is not a conversation id (a UUID)"
        );
        assert_eq!(named(Some(ID), None).unwrap().unwrap().to_string(), ID);
    }
}
