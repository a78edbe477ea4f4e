//! `efr trash list` and `efr trash restore ID [--to PATH]`: trash.list and trash.restore (`docs/undo.md`, "The
//! trash").
//!
//! ```text
//! ID                                         SIZE  TRASHED           EXPIRES           PATH
//! undo-0193a1f2/config.txt                     12  2026-12-02 07:40  2027-01-01 07:40  /home/ada/project/config.txt
//! ```

use std::process::ExitCode;

use efr_protocol::ids::CommandId;
use efr_protocol::wire::{TrashListResult, TrashRestoreParams, TrashRestoreResult};
use serde_json::json;

use super::{read, run_unary};
use crate::clean::printable;
use crate::cli::TrashCommand;
use crate::report;

/// Runs one `efr trash` command.
pub async fn run(command: TrashCommand) -> ExitCode {
    match command {
        TrashCommand::List(args) => {
            run_unary("trash.list", json!({}), args.json, None, |value| {
                let result: TrashListResult = read("trash.list", value)?;
                crate::out::print_exact(&render_list(&result));
                Ok(())
            })
            .await
        }
        TrashCommand::Restore { id, to, json } => {
            let to = match to.map(std::path::absolute).transpose() {
                Ok(to) => to,
                Err(error) => {
                    report::error(&format!("--to: {error}"));
                    return ExitCode::from(report::FAILED);
                }
            };
            let params = TrashRestoreParams {
                command_id: CommandId::new(),
                id,
                to: to.map(|path| path.display().to_string()),
            };
            let Ok(params) = serde_json::to_value(&params) else {
                report::error("cannot encode the params of trash.restore");
                return ExitCode::from(report::FAILED);
            };
            run_unary("trash.restore", params, json, None, |value| {
                let result: TrashRestoreResult = read("trash.restore", value)?;
                crate::out::println(&format!("restored {}", printable(&result.path)));
                Ok(())
            })
            .await
        }
    }
}

/// The readable list: one line per file (id, size, when trashed, when it expires, where it was), then the trash's
/// size against its bound. Paths are the user's: printed without control characters.
#[must_use]
pub fn render_list(result: &TrashListResult) -> String {
    let minute = |at: &efr_protocol::ids::Timestamp| at.0.format("%Y-%m-%d %H:%M").to_string();
    let mut text = String::new();
    if result.entries.is_empty() {
        text.push_str("the trash is empty\n");
    } else {
        let width = result.entries.iter().map(|e| e.id.len()).max().unwrap_or(2).max(2);
        text.push_str(&format!(
            "{:width$}  {:>10}  {:16}  {:16}  PATH\n",
            "ID", "SIZE", "TRASHED", "EXPIRES"
        ));
        for entry in &result.entries {
            text.push_str(&format!(
                "{:width$}  {:>10}  {:16}  {:16}  {}\n",
                printable(&entry.id),
                entry.size,
                minute(&entry.trashed_at),
                minute(&entry.expires_at),
                printable(&entry.path)
            ));
        }
    }
    if result.entries_more > 0 {
        text.push_str(&format!("... {} more\n", result.entries_more));
    }
    text.push_str(&format!(
        "{} of at most {} bytes; a file stays {} days\n",
        result.bytes, result.max_bytes, result.days
    ));
    text
}
