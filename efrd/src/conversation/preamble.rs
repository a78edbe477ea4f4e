//! The terminal's context of a prompt, as the model reads it: where the prompt was typed, the terminal's last
//! command and its status, and its recent commands.
//!
//! The spec's rule (changelog, "the recent commands of a terminal"): `last_command` and `recent_commands` reach only
//! the turn's preamble — never a `shell_context`, an event or the store. So the preamble lives in the actor's
//! in-memory history only, in front of the prompt's text in the same user message (one message: providers that want
//! user and assistant turns to alternate get no extra user turn). A conversation reloaded after a restart has its
//! prompts without their preambles.
//!
//! Bounds: at most [`MAX_RECENT`] recent commands (the newest), each line cut at [`MAX_LINE`] characters.

use std::fmt::Write as _;
use std::path::Path;

use efr_protocol::wire::TerminalCommand;

/// The most recent commands in a preamble (the newest are kept).
pub const MAX_RECENT: usize = 20;
/// The most characters of one command line in a preamble.
pub const MAX_LINE: usize = 500;

/// The user message of a prompt: the preamble (when there is any context), then the prompt's text.
#[must_use]
pub fn user_message(
    text: &str,
    cwd: Option<&Path>,
    last: Option<&TerminalCommand>,
    recent: &[TerminalCommand],
) -> String {
    if cwd.is_none() && last.is_none() && recent.is_empty() {
        return text.to_owned();
    }
    let mut out = String::from("<terminal_context>\n");
    if let Some(cwd) = cwd {
        let _ = writeln!(out, "working directory: {}", cwd.display());
    }
    if let Some(last) = last {
        let _ = writeln!(out, "last command{}: {}", status(last.status), line(&last.command));
    }
    if !recent.is_empty() {
        out.push_str("recent commands, oldest first:\n");
        let skip = recent.len().saturating_sub(MAX_RECENT);
        for command in &recent[skip..] {
            let _ = writeln!(out, "- {}{}", line(&command.command), status(command.status));
        }
    }
    out.push_str("</terminal_context>\n\n");
    out.push_str(text);
    out
}

fn status(status: Option<i32>) -> String {
    status.map_or_else(String::new, |code| format!(" (exit status {code})"))
}

/// One line: newlines shown as `⏎`, cut at [`MAX_LINE`] characters.
fn line(command: &str) -> String {
    let mut out: String = command
        .chars()
        .take(MAX_LINE)
        .map(|c| if c == '\n' { '⏎' } else { c })
        .collect();
    if command.chars().count() > MAX_LINE {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(line: &str, status: Option<i32>) -> TerminalCommand {
        TerminalCommand {
            command: line.into(),
            status,
            cwd: None,
            ended_at: None,
            duration_ms: None,
        }
    }

    #[test]
    fn a_prompt_without_context_is_its_text() {
        assert_eq!(user_message("hello", None, None, &[]), "hello");
    }

    #[test]
    fn the_context_comes_first_with_statuses() {
        let recent = [command("make", Some(0)), command("ls /nonexistent", Some(2))];
        let message = user_message(
            "why did that fail?",
            Some(Path::new("/home/ada/p")),
            Some(&command("ls /nonexistent", Some(2))),
            &recent,
        );
        assert_eq!(
            message,
            "<terminal_context>\nworking directory: /home/ada/p\nlast command (exit status 2): ls /nonexistent\n\
             recent commands, oldest first:\n- make (exit status 0)\n- ls /nonexistent (exit status 2)\n\
             </terminal_context>\n\nwhy did that fail?"
        );
    }

    #[test]
    fn long_lines_and_many_commands_are_bounded() {
        let recent: Vec<_> = (0..30).map(|i| command(&format!("cmd{i}"), None)).collect();
        let long = "x".repeat(MAX_LINE + 10);
        let message = user_message("q", None, Some(&command(&format!("a\nb{long}"), None)), &recent);
        assert!(!message.contains("cmd9\n") && message.contains("- cmd10\n") && message.contains("- cmd29\n"));
        let last = message.lines().nth(1).unwrap();
        assert!(last.starts_with("last command: a⏎b") && last.ends_with('…'), "{last}");
        assert_eq!(last.chars().count(), "last command: ".len() + MAX_LINE + 1);
    }
}
