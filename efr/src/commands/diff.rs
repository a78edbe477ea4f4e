//! `efr diff [--stat] [--conversation ID] [--turn ID]`: conversation.diff.
//!
//! Without `--conversation`, efrd takes the active conversation of the hello's terminal (the tty of stdin); with
//! stdin not a terminal there is none, so efr asks for `--conversation` before it connects. The ids are checked
//! here (UUIDs), and a conversation that efrd does not know is told as "no such conversation" (efrd's own answer
//! for it is "no finished turn"). The stat lines come first (`+12 -3 src/lib.rs`, then the totals), then, without
//! `--stat`, the unified diff.

use std::fmt::Write as _;
use std::process::ExitCode;

use efr_protocol::ErrorCode;
use efr_protocol::ids::{ConversationId, TurnId};
use efr_protocol::wire::{ConversationDiffParams, ConversationDiffResult, FileChangeKind, FileChanges};

use super::{read, unary_on};
use crate::cli::DiffArgs;
use crate::{context, out, report};

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
            eprintln!("efr: {error}");
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
                eprintln!("efr: no such conversation: {id}");
                return ExitCode::from(report::FAILED);
            }
            Err(error) => return report::failure(&error),
        }
    }
    let params = match serde_json::to_value(&params) {
        Ok(params) => params,
        Err(error) => {
            eprintln!("efr: cannot encode the params of conversation.diff: {error}");
            return ExitCode::from(report::FAILED);
        }
    };
    unary_on(&client, "conversation.diff", params, args.json, |value| {
        let diff: ConversationDiffResult = read("conversation.diff", value)?;
        out::print(&stat_lines(&diff.changes));
        if let Some(text) = &diff.diff {
            out::print(text);
        }
        Ok(())
    })
    .await
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
        let kind = match (file.kind, &file.from) {
            (FileChangeKind::Added, _) => " (added)".to_owned(),
            (FileChangeKind::Deleted, _) => " (deleted)".to_owned(),
            (FileChangeKind::Renamed, Some(from)) => format!(" (from {})", from.display()),
            _ => String::new(),
        };
        let counts = if file.binary {
            "binary".to_owned()
        } else {
            format!("+{} -{}", file.added, file.removed)
        };
        let _ = writeln!(out, "{counts} {}{kind}", file.path.display());
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

    #[test]
    fn no_changes_says_so() {
        assert_eq!(stat_lines(&FileChanges::default()), "no changes\n");
    }
}
