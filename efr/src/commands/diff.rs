//! `efr diff [--stat] [--conversation ID] [--turn ID]`: conversation.diff.
//!
//! Without `--conversation`, efrd takes the active conversation of the hello's terminal (the tty of stdin). The
//! stat lines come first (`+12 -3 src/lib.rs`, then the totals), then, without `--stat`, the unified diff.

use std::fmt::Write as _;
use std::process::ExitCode;

use efr_protocol::wire::{ConversationDiffResult, FileChangeKind, FileChanges};
use serde_json::{Map, Value};

use super::{read, run_unary};
use crate::cli::DiffArgs;
use crate::context;

/// Runs `efr diff`.
pub async fn run(args: &DiffArgs) -> ExitCode {
    let mut params = Map::new();
    if let Some(id) = &args.conversation {
        params.insert("conversation_id".into(), Value::String(id.clone()));
    }
    if let Some(id) = &args.turn {
        params.insert("turn_id".into(), Value::String(id.clone()));
    }
    if args.stat {
        params.insert("stat".into(), Value::Bool(true));
    }
    run_unary(
        "conversation.diff",
        Value::Object(params),
        args.json,
        context::stdin_tty(),
        |value| {
            let diff: ConversationDiffResult = read("conversation.diff", value)?;
            print!("{}", stat_lines(&diff.changes));
            if let Some(text) = &diff.diff {
                print!("{text}");
            }
            Ok(())
        },
    )
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

    #[test]
    fn no_changes_says_so() {
        assert_eq!(stat_lines(&FileChanges::default()), "no changes\n");
    }
}
