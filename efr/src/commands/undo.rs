//! `efr undo [--turn ID] [--dry-run] [--force] [--list]` and `efr redo`: turn.undo (`docs/undo.md`).
//!
//! On a terminal (stdin and stdout), an undo that writes is shown first as a dry run and asks for a confirmation;
//! `--yes` skips the question. A refusal is told in efrd's words (its `refused` kind is in `--json`'s error).

use std::io::{BufRead as _, Write as _};
use std::process::ExitCode;

use efr_protocol::ids::{CommandId, ConversationId, TurnId};
use efr_protocol::wire::{TurnUndoParams, TurnUndoResult, UndoAction};

use super::{read, unary_on};
use crate::clean::printable;
use crate::cli::UndoArgs;
use crate::{context, out, report, tty};

/// The params of turn.undo from the arguments.
///
/// # Errors
/// A message for an id that is not a UUID, or no conversation named without a terminal.
pub fn params(args: &UndoArgs, redo: bool, tty: Option<&str>) -> Result<TurnUndoParams, String> {
    let conversation_id = args
        .conversation
        .as_deref()
        .map(|id| {
            id.parse::<ConversationId>()
                .map_err(|_| format!("--conversation: `{id}` is not a UUID"))
        })
        .transpose()?;
    let turn_id = args
        .turn
        .as_deref()
        .map(|id| {
            id.parse::<TurnId>()
                .map_err(|_| format!("--turn: `{id}` is not a UUID"))
        })
        .transpose()?;
    if conversation_id.is_none() && tty.is_none() {
        return Err("efr undo needs --conversation ID when stdin is not a terminal".to_owned());
    }
    Ok(TurnUndoParams {
        command_id: CommandId::new(),
        conversation_id,
        turn_id,
        dry_run: args.dry_run,
        force: args.force,
        redo,
        list: args.list,
    })
}

/// Runs `efr undo` (or `efr redo` with `redo`).
pub async fn run(args: &UndoArgs, redo: bool) -> ExitCode {
    let tty = context::stdin_tty();
    let mut params = match params(args, redo, tty.as_deref()) {
        Ok(params) => params,
        Err(error) => {
            report::error(&error);
            return ExitCode::from(report::FAILED);
        }
    };
    let client = match report::connect(tty).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    let confirm =
        !args.yes && !args.json && !params.dry_run && !params.list && tty::stdin_is_tty() && tty::stdout_is_tty();
    if confirm {
        params.dry_run = true;
        let Ok(value) = serde_json::to_value(&params) else {
            return ExitCode::from(report::FAILED);
        };
        let plan = match client.call_value("turn.undo", value).await {
            Ok(plan) => plan,
            Err(error) => return report::failure(&error),
        };
        let Ok(plan) = read::<TurnUndoResult>("turn.undo", &plan) else {
            return ExitCode::from(report::FAILED);
        };
        out::print_exact(&render(&plan));
        print!("{} these changes? [y/N] ", if redo { "Redo" } else { "Undo" });
        let _ = std::io::stdout().flush();
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            out::print_exact("nothing changed\n");
            return ExitCode::SUCCESS;
        }
        params.dry_run = false;
        params.command_id = CommandId::new();
    }
    let Ok(value) = serde_json::to_value(&params) else {
        report::error("cannot encode the params of turn.undo");
        return ExitCode::from(report::FAILED);
    };
    unary_on(&client, "turn.undo", value, args.json, |value| {
        let result: TurnUndoResult = read("turn.undo", value)?;
        out::print_exact(&render(&result));
        Ok(())
    })
    .await
}

/// The readable form of a result: the turns of a list, or one line per entry, the refs and the notes. Paths are the
/// project's: printed without control characters.
#[must_use]
pub fn render(result: &TurnUndoResult) -> String {
    let mut text = String::new();
    for turn in &result.turns {
        let state = if turn.undone {
            "undone"
        } else if !turn.ended {
            "running"
        } else if turn.undoable {
            "undoable"
        } else {
            "-"
        };
        let stopped = if turn.stopped { " (stopped midway)" } else { "" };
        let title = turn.title.as_deref().unwrap_or("");
        text.push_str(&format!("{} {state}{stopped} {}\n", turn.turn_id, printable(title)));
    }
    for entry in &result.entries {
        let action = match entry.action {
            UndoAction::Restore => "restore",
            UndoAction::Trash => "trash",
            UndoAction::Delete => "delete",
            UndoAction::Skip => "skip",
            UndoAction::NotCovered => "not covered",
            UndoAction::Command => "cannot undo the command",
            UndoAction::Unknown => "?",
        };
        let reason = entry.reason.map(|reason| format!(" ({reason})")).unwrap_or_default();
        text.push_str(&format!("{action} {}{reason}\n", printable(&entry.path)));
    }
    if result.entries_more > 0 {
        text.push_str(&format!("... {} more\n", result.entries_more));
    }
    for one in &result.refs {
        let to = one.to.as_deref().unwrap_or("(removed)");
        let state = if one.applied { "" } else { " (not moved)" };
        text.push_str(&format!("ref {} -> {}{state}\n", one.name, printable(to)));
    }
    for note in &result.notes {
        text.push_str(&format!("note: {}\n", printable(note)));
    }
    if result.stopped {
        text.push_str("the undo stopped midway: run it again to finish\n");
    }
    text
}
