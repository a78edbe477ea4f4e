//! `efr diff [--stat] [--conversation ID] [--turn ID]`: conversation.diff.
//!
//! Without `--conversation`, efrd takes the active conversation of the hello's terminal (the tty of stdin); with
//! stdin not a terminal there is none, so efr asks for `--conversation` before it connects. The ids are checked
//! here (UUIDs), and a conversation that efrd does not know is told as "no such conversation" (efrd's own answer
//! for it is "no finished turn"). The stat lines come first (`+12 -3 src/lib.rs`, then the totals), then, without
//! `--stat`, the unified diff.
//!
//! # Control sequences
//!
//! The paths and the lines of the diff are the project's: a file named `a\e]0;TITLE\a.txt`, or a line
//! `\e[41mRED`, would retitle or colour the terminal that shows them. So the readable form depends on stdout
//! ([`render`]):
//!
//! - On a terminal, each line (the stat lines and the diff's) is printed
//!   [`printable`]: terminal control sequences, other control characters and bidi overrides are removed, and a
//!   line that lost something ends with [`REMOVED`] (`  [efr: control characters removed]`), so that a reader
//!   knows the file holds more than shows. A `\r` before a line's end is dropped without the mark (CRLF files; it
//!   shows as nothing). The result is for reading, not for `git apply`.
//! - Not on a terminal (a pipe: `efr diff | git apply`; a file), the diff is written byte for byte as efrd sent it,
//!   so it stays a valid patch. What reads it must take care of escapes itself (`less -R` would pass them on).
//!
//! `--json` prints efrd's result as it came (JSON escapes the C0 controls; C1 controls and bidi overrides stay
//! as they are in the strings).

use std::borrow::Cow;
use std::fmt::Write as _;
use std::process::ExitCode;

use efr_protocol::ErrorCode;
use efr_protocol::ids::{ConversationId, TurnId};
use efr_protocol::wire::{ConversationDiffParams, ConversationDiffResult, FileChanges};

use super::{read, unary_on};
use crate::clean::printable;
use crate::cli::DiffArgs;
use crate::{context, out, report, tty};

/// The mark at the end of a line that lost control characters on a terminal (see the module doc).
pub const REMOVED: &str = "  [efr: control characters removed]";

/// Why `efr diff`'s arguments are refused before efrd is asked.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum DiffArgsError {
    /// No `--conversation`, and stdin is not a terminal (whose conversation efrd would take).
    #[error(
        "efr diff needs --conversation ID when stdin is not a terminal (efr's last line names the conversation \
         then; `efr --json` too)"
    )]
    NoTerminal,
    /// `--conversation` is not a UUID.
    #[error("--conversation: `{0}` is not a conversation id (a UUID)")]
    Conversation(String),
    /// `--turn` is not a UUID.
    #[error("--turn: `{0}` is not a turn id (a UUID)")]
    Turn(String),
}

/// The params of conversation.diff from the arguments; `tty` is the terminal of stdin.
///
/// # Errors
/// [`DiffArgsError`] for an id that is not a UUID, or no conversation named without a terminal.
pub fn params(args: &DiffArgs, tty: Option<&str>) -> Result<ConversationDiffParams, DiffArgsError> {
    let conversation_id = args
        .conversation
        .as_deref()
        .map(|id| {
            id.parse::<ConversationId>()
                .map_err(|_| DiffArgsError::Conversation(id.to_owned()))
        })
        .transpose()?;
    let turn_id = args
        .turn
        .as_deref()
        .map(|id| id.parse::<TurnId>().map_err(|_| DiffArgsError::Turn(id.to_owned())))
        .transpose()?;
    if conversation_id.is_none() && tty.is_none() {
        return Err(DiffArgsError::NoTerminal);
    }
    Ok(ConversationDiffParams {
        conversation_id,
        turn_id,
        stat: args.stat,
    })
}

/// Runs `efr diff`.
pub async fn run(args: &DiffArgs) -> ExitCode {
    let tty = context::stdin_tty();
    let params = match params(args, tty.as_deref()) {
        Ok(params) => params,
        Err(error) => {
            report::error(&error.to_string());
            return ExitCode::from(report::FAILED);
        }
    };
    let client = match report::connect(tty).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    if let Some(id) = params.conversation_id {
        match client.snapshot(id).await {
            Ok(_) => {}
            Err(error) if error.daemon().is_some_and(|e| e.code == ErrorCode::NotFound) => {
                report::error(&format!("no such conversation: {id}"));
                return ExitCode::from(report::FAILED);
            }
            Err(error) => return report::failure(&error),
        }
    }
    let params = match serde_json::to_value(&params) {
        Ok(params) => params,
        Err(error) => {
            report::error(&format!("cannot encode the params of conversation.diff: {error}"));
            return ExitCode::from(report::FAILED);
        }
    };
    unary_on(&client, "conversation.diff", params, args.json, |value| {
        let diff: ConversationDiffResult = read("conversation.diff", value)?;
        out::print_exact(&render(&diff, tty::stdout_is_tty()));
        Ok(())
    })
    .await
}

/// The readable form: the stat lines, then the diff (when efrd sent one). With `terminal`, each line cleaned and
/// marked as the module doc says; else byte for byte.
#[must_use]
pub fn render(diff: &ConversationDiffResult, terminal: bool) -> String {
    let mut text = stat_lines(&diff.changes);
    if let Some(unified) = &diff.diff {
        text.push_str(unified);
    }
    if terminal { for_terminal(&text) } else { text }
}

/// `text` with each line [`printable`], and [`REMOVED`] at the end of a line that lost something other than a `\r`
/// before its end.
#[must_use]
pub fn for_terminal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, end) = line.strip_suffix('\n').map_or((line, ""), |body| (body, "\n"));
        let body = body.strip_suffix('\r').unwrap_or(body);
        let clean = printable(body);
        let lost = matches!(clean, Cow::Owned(_));
        out.push_str(&clean);
        if lost {
            out.push_str(REMOVED);
        }
        out.push_str(end);
    }
    out
}

/// One line per changed file (`+12 -3 src/lib.rs`, with the kind for an added, deleted or renamed file), then the
/// totals when more than one file changed; `no changes` when none did.
#[must_use]
pub fn stat_lines(changes: &FileChanges) -> String {
    if changes.files.is_empty() && changes.more == 0 {
        return "no changes\n".to_owned();
    }
    let mut out = String::new();
    for file in &changes.files {
        let _ = writeln!(out, "{}", crate::turn::describe::change_line(file));
    }
    if changes.more > 0 {
        let _ = writeln!(out, "... {} more files", changes.more);
    }
    if changes.files.len() + usize::try_from(changes.more).unwrap_or(usize::MAX) > 1 {
        let _ = writeln!(out, "+{} -{} in all", changes.added, changes.removed);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixture_renders_each_file_and_the_totals() {
        let path = format!(
            "{}/../protocol/fixtures/v1/conversation_diff_result.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let diff: ConversationDiffResult = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let out = stat_lines(&diff.changes);
        for file in &diff.changes.files {
            assert!(out.contains(&file.path.display().to_string()), "{out}");
        }
        // The fixture marks protocol/src/lib.rs as possibly another turn's.
        assert!(
            out.contains("+4 -1 protocol/src/lib.rs, maybe another turn's\n"),
            "{out}"
        );
        assert_eq!(
            out.lines().count(),
            diff.changes.files.len() + usize::from(diff.changes.more > 0) + 1,
            "{out}"
        );
    }

    fn args(conversation: Option<&str>, turn: Option<&str>) -> DiffArgs {
        DiffArgs {
            stat: true,
            conversation: conversation.map(str::to_owned),
            turn: turn.map(str::to_owned),
            json: false,
        }
    }

    #[test]
    fn ids_are_checked_and_a_conversation_is_needed_without_a_terminal() {
        const ID: &str = "6f1c1e9e-4c1d-4bb5-9f6e-0c8f9c7d2a11";
        assert_eq!(params(&args(None, None), None), Err(DiffArgsError::NoTerminal));
        let error = params(&args(None, Some("nonsense")), Some("/dev/pts/3")).unwrap_err();
        assert_eq!(error.to_string(), "--turn: `nonsense` is not a turn id (a UUID)");
        let error = params(&args(Some("x"), None), None).unwrap_err();
        assert_eq!(error, DiffArgsError::Conversation("x".into()));
        let ok = params(&args(Some(ID), Some(ID)), None).unwrap();
        assert_eq!(ok.conversation_id.unwrap().to_string(), ID);
        assert!(ok.stat && ok.turn_id.is_some());
        assert!(
            params(&args(None, None), Some("/dev/pts/3"))
                .unwrap()
                .conversation_id
                .is_none()
        );
    }

    fn escaped() -> ConversationDiffResult {
        serde_json::from_value(serde_json::json!({ "turn_id": "7c9e6679-7425-40de-944b-e07fc1f90ae7",
            "changes": {"files": [{"path": "escd\u{1b}]0;FILETITLE\u{7}.txt", "kind": "added", "added": 2,
                "removed": 0}], "added": 2, "removed": 0, "more": 0},
            "diff": "diff --git a/escd\u{1b}]0;FILETITLE\u{7}.txt b/escd\u{1b}]0;FILETITLE\u{7}.txt\n\
                     +\u{1b}]0;DIFFTITLE\u{7}\u{1b}[41mRED\n+plain\u{202e}txt.exe\r\n+crlf\r\n"
        }))
        .unwrap()
    }

    #[test]
    fn on_a_terminal_paths_and_lines_are_cleaned_and_marked() {
        let out = render(&escaped(), true);
        assert_eq!(
            out,
            format!(
                "+2 -0 escd␛]0;FILETITLE␇.txt (added){REMOVED}\ndiff --git a/escd␛]0;FILETITLE␇.txt \
                 b/escd␛]0;FILETITLE␇.txt{REMOVED}\n+␛]0;DIFFTITLE␇␛[41mRED{REMOVED}\n+plain<U+202E>txt.exe{REMOVED}\n\
                 +crlf\n"
            )
        );
    }

    #[test]
    fn off_a_terminal_the_diff_is_byte_exact() {
        let diff = escaped();
        let out = render(&diff, false);
        assert_eq!(out, format!("{}{}", stat_lines(&diff.changes), diff.diff.unwrap()));
        assert!(
            out.contains("+\u{1b}]0;DIFFTITLE\u{7}\u{1b}[41mRED\n+plain\u{202e}txt.exe\r\n"),
            "{out:?}"
        );
        assert!(
            out.starts_with("+2 -0 escd\u{1b}]0;FILETITLE\u{7}.txt (added)\n"),
            "{out:?}"
        );
    }

    #[test]
    fn a_clean_diff_reads_the_same_on_a_terminal() {
        let diff: ConversationDiffResult =
            serde_json::from_value(serde_json::json!({ "turn_id": "7c9e6679-7425-40de-944b-e07fc1f90ae7",
                "changes": {"files": [{"path": "a.rs", "kind": "modified", "added": 1, "removed": 1}],
                    "added": 1, "removed": 1, "more": 0},
                "diff": "--- a/a.rs\n+++ b/a.rs\n@@ -1 +1 @@\n-\told\n+\tnew"
            }))
            .unwrap();
        assert_eq!(render(&diff, true), render(&diff, false));
    }

    #[test]
    fn no_changes_says_so() {
        assert_eq!(stat_lines(&FileChanges::default()), "no changes\n");
    }
}
