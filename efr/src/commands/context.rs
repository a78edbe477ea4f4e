//! `efr context [--conversation ID] [--model MODEL] [--json]`: conversation.context, what fills the model's context
//! of a conversation (docs/context.md, "Where to see it").
//!
//! ```text
//! gpt-5: 25875 of 272000 tokens (9%); compaction at 217600 (80%, the `|`)
//! [tttiiiipppuuuaaooooooooe·······································|·········]
//!  t tools 2355  i instructions 1200  ...  o tool_outputs 7751
//!       7751 tokens  shell (tool_outputs)
//!
//! model gpt-5: window 272000 tokens; compaction at 217600 tokens (automatic)
//! last count: 24871 tokens, at the end of turn 7c9e6679-... (2026-11-30T14:33:11.042Z)
//! next request, without its prompt: about 25875 tokens (103489 bytes), 10% of the window
//!
//! part                    tokens      bytes  items
//! tools                     2355       9418
//! ...
//!
//! instruction files:
//!   read   412 of 412 bytes     /home/ada/.config/efr/AGENTS.md (global)
//!   cut    32356 of 40960 bytes /home/ada/src/efr/AGENTS.md
//! ```
//!
//! On a terminal the bar's parts are coloured; in a pipe each part is its letter.
//!
//! The conversation is `--conversation ID`, else the terminal's (the newest conversation of the tty of stdin, as
//! `efr diff` and `efr shell` take it). Exit codes: 0 done; 1 for bad input or an unknown conversation; 2 when efrd
//! is not running. File names and labels are the project's: they are printed [`printable`] (no terminal control
//! sequences). `--json` prints efrd's result as it came.

use std::fmt::Write as _;
use std::process::ExitCode;

use efr_protocol::ErrorCode;
use efr_protocol::ids::ConversationId;
use efr_protocol::wire::{
    ContextPartKind, ConversationContextParams, ConversationContextResult, InstructionFile, InstructionFileState,
    InstructionScope,
};

use crate::clean::printable;
use crate::cli::ContextArgs;
use crate::turn::conversation::newest_of_tty;
use crate::{context, out, report};

fn failed(message: &str) -> ExitCode {
    report::error(message);
    ExitCode::from(report::FAILED)
}

/// Runs `efr context`.
pub async fn run(args: &ContextArgs) -> ExitCode {
    let (client, conversation_id) = match target(args.conversation.as_deref(), "efr context").await {
        Ok(target) => target,
        Err(code) => return code,
    };
    let params = ConversationContextParams {
        conversation_id,
        model: args.model.clone(),
    };
    let not_found = |error: &crate::client::ClientError| match error.daemon() {
        Some(body) if body.code == ErrorCode::NotFound => failed(&format!("no such conversation: {conversation_id}")),
        _ => report::failure(error),
    };
    super::call_and_show(
        &client,
        "conversation.context",
        serde_json::json!(params),
        args.json,
        not_found,
        |result: ConversationContextResult| {
            let colour = std::io::IsTerminal::is_terminal(&std::io::stdout());
            out::print(&format!("{}\n{}", picture(&result, BAR_CELLS, colour), render(&result)));
            ExitCode::SUCCESS
        },
    )
    .await
}

/// The connection and the conversation a command acts on: `--conversation ID`, else the terminal's (the newest
/// conversation of the tty of stdin). `command` names the command in the messages.
///
/// # Errors
/// The exit code, after the message: 1 for a bad id or a terminal without a conversation, 2 without efrd.
pub async fn target(
    conversation: Option<&str>,
    command: &str,
) -> Result<(crate::client::Client, ConversationId), ExitCode> {
    let tty = context::stdin_tty();
    let named = match conversation {
        Some(id) => match id.parse::<ConversationId>() {
            Ok(id) => Some(id),
            Err(_) => {
                return Err(failed(&format!(
                    "--conversation: `{id}` is not a conversation id (a UUID)"
                )));
            }
        },
        None if tty.is_none() => {
            return Err(failed(&format!(
                "{command} needs --conversation ID when stdin is not a terminal (efr's last line names the \
                 conversation then; `efr --json` too)"
            )));
        }
        None => None,
    };
    let client = report::connect(tty.clone()).await?;
    let conversation_id = match (named, tty) {
        (Some(id), _) => id,
        (None, Some(tty)) => match newest_of_tty(&client, &tty).await {
            Ok(Some(id)) => id,
            Ok(None) => return Err(failed(&format!("the terminal {tty} has no conversation yet"))),
            Err(error) => return Err(report::failure(&error)),
        },
        (None, None) => return Err(failed(&format!("{command} needs --conversation ID"))),
    };
    Ok((client, conversation_id))
}

/// The cells of the window's bar.
const BAR_CELLS: usize = 64;

/// Each part's letter in the bar (a pipe gets letters; a terminal gets the letter on its part's colour) and its
/// colour (an ANSI SGR code): the prefix in blues, the summary in magenta, the history in greens, yellows and reds.
fn look(kind: ContextPartKind) -> (char, &'static str) {
    match kind {
        ContextPartKind::Tools => ('t', "44"),
        ContextPartKind::Instructions => ('i', "46"),
        ContextPartKind::Mode => ('m', "46"),
        ContextPartKind::ProjectInstructions => ('p', "46"),
        ContextPartKind::Summary => ('s', "45"),
        ContextPartKind::UserMessages => ('u', "42"),
        ContextPartKind::AssistantMessages => ('a', "43"),
        ContextPartKind::Reasoning => ('r', "100"),
        ContextPartKind::ToolCalls => ('c', "41"),
        ContextPartKind::ToolOutputs => ('o', "41"),
        ContextPartKind::Environment => ('e', "47"),
        ContextPartKind::Notes => ('n', "47"),
        ContextPartKind::Unknown => ('?', "47"),
    }
}

/// The window as one bar of `cells` cells: each part's share in the order of the request, the free rest as `·`,
/// and the trigger (where compaction starts) marked `|`; then a legend of the parts that fill it and the largest
/// items. With `colour`, each part's cells are its colour (a terminal); without, its letter (a pipe).
#[must_use]
pub fn picture(context: &ConversationContextResult, cells: usize, colour: bool) -> String {
    let model = &context.model;
    let per_cell = model.window.div_ceil(cells as u64).max(1);
    let mut bar = String::new();
    let mut used = 0;
    let trigger = usize::try_from(model.trigger / per_cell)
        .unwrap_or(cells)
        .min(cells - 1);
    let cell = |bar: &mut String, index: usize, letter: char, sgr: Option<&str>| {
        let letter = if index == trigger { '|' } else { letter };
        match sgr {
            Some(sgr) if colour => bar.push_str(&format!("\x1b[{sgr};30m{letter}\x1b[0m")),
            _ => bar.push(letter),
        }
    };
    for part in context.parts.iter().filter(|p| p.tokens > 0) {
        let (letter, sgr) = look(part.kind);
        let width = usize::try_from(part.tokens.div_ceil(per_cell)).unwrap_or(cells);
        for _ in 0..width.min(cells - used) {
            cell(&mut bar, used, letter, Some(sgr));
            used += 1;
        }
    }
    for index in used..cells {
        cell(&mut bar, index, '·', None);
    }
    let share = context.estimate.tokens.saturating_mul(100) / model.window.max(1);
    let trigger_share = model.trigger.saturating_mul(100) / model.window.max(1);
    let mut out = format!(
        "{}: {} of {} tokens ({share}%); compaction at {} ({trigger_share}%, the `|`)\n[{bar}]\n",
        printable(&model.id),
        context.estimate.tokens,
        model.window,
        model.trigger
    );
    let legend: Vec<String> = context
        .parts
        .iter()
        .filter(|p| p.tokens > 0)
        .map(|p| {
            let (letter, sgr) = look(p.kind);
            let key = if colour {
                format!("\x1b[{sgr};30m{letter}\x1b[0m")
            } else {
                letter.to_string()
            };
            format!("{key} {} {}", p.kind.as_str(), p.tokens)
        })
        .collect();
    let _ = writeln!(out, " {}", legend.join("  "));
    for item in &context.largest {
        let _ = writeln!(
            out,
            "   {:>8} tokens  {} ({})",
            item.tokens,
            printable(&item.label),
            item.kind.as_str()
        );
    }
    out
}

/// The readable form: the model and its limits, the last count, the estimate, the table of parts, the instruction
/// files, the largest items and the cache use.
#[must_use]
pub fn render(context: &ConversationContextResult) -> String {
    let mut out = String::new();
    let model = &context.model;
    let assumed = if model.window_known {
        ""
    } else {
        " (assumed: the catalog does not know it)"
    };
    let automatic = if model.auto { "automatic" } else { "not automatic" };
    let _ = writeln!(
        out,
        "model {}: window {} tokens{assumed}; compaction at {} tokens ({automatic})",
        printable(&model.id),
        model.window,
        model.trigger
    );
    match &context.counted {
        Some(counted) => {
            let _ = writeln!(
                out,
                "last count: {} tokens, at the end of turn {} ({})",
                counted.tokens, counted.turn_id, counted.at
            );
        }
        None => out.push_str("last count: none yet (no turn has ended with one)\n"),
    }
    let share = context.estimate.tokens.saturating_mul(100) / model.window.max(1);
    let _ = writeln!(
        out,
        "next request, without its prompt: about {} tokens ({} bytes), {share}% of the window\n",
        context.estimate.tokens, context.estimate.bytes
    );
    let _ = writeln!(out, "{:<20} {:>9} {:>10} {:>6}", "part", "tokens", "bytes", "items");
    for part in &context.parts {
        let items = if part.items > 0 {
            part.items.to_string()
        } else {
            String::new()
        };
        let row = format!(
            "{:<20} {:>9} {:>10} {:>6}",
            part.kind.as_str(),
            part.tokens,
            part.bytes,
            items
        );
        let _ = writeln!(out, "{}", row.trim_end());
    }
    let files: Vec<&InstructionFile> = context
        .parts
        .iter()
        .filter(|p| p.kind == ContextPartKind::ProjectInstructions)
        .flat_map(|p| &p.files)
        .collect();
    if files.is_empty() {
        out.push_str("\ninstruction files: none found\n");
    } else {
        out.push_str("\ninstruction files, most general first:\n");
        for file in files {
            let _ = writeln!(out, "  {:<10} {:<33} {}", state(file), size(file), file_name(file));
        }
    }
    if !context.largest.is_empty() {
        out.push_str("\nlargest items of the history:\n");
        for item in &context.largest {
            let _ = writeln!(
                out,
                "  {:>9} tokens  {} ({})",
                item.tokens,
                printable(&item.label),
                item.kind.as_str()
            );
        }
    }
    if let Some(newest) = context.compactions.last() {
        let _ = writeln!(
            out,
            "\ncompactions: {}; the newest at seq {} ({}): {} → {} tokens",
            context.compactions.len(),
            newest.seq,
            newest.trigger.as_str(),
            newest.tokens_before,
            newest.tokens_after
        );
    }
    let cache = &context.cache;
    if cache.turns > 0 {
        let share = cache.cached_input_tokens.saturating_mul(100) / cache.input_tokens.max(1);
        let _ = writeln!(
            out,
            "\ncache: {} input tokens in {} turns, {} read from the cache ({share}%), {} written to it",
            cache.input_tokens, cache.turns, cache.cached_input_tokens, cache.cache_write_tokens
        );
    }
    out
}

fn state(file: &InstructionFile) -> &'static str {
    match file.state {
        InstructionFileState::Read => "read",
        InstructionFileState::Cut => "cut",
        InstructionFileState::Masked => "not read",
        InstructionFileState::LinkOutside => "not read",
        InstructionFileState::OverBudget => "not read",
        InstructionFileState::Unreadable => "unreadable",
        InstructionFileState::Unknown => "unknown",
    }
}

fn size(file: &InstructionFile) -> String {
    match (file.state, file.total) {
        (InstructionFileState::Read | InstructionFileState::Cut, Some(total)) => {
            format!("{} of {total} bytes", file.bytes)
        }
        (InstructionFileState::OverBudget, Some(total)) => format!("{total} bytes, over the size bound"),
        (InstructionFileState::Masked, _) => "masked by the sandbox".to_owned(),
        (InstructionFileState::LinkOutside, _) => "a link out of the project".to_owned(),
        (_, Some(total)) => format!("{total} bytes"),
        (_, None) => String::new(),
    }
}

/// The file's path, cleaned of control sequences, with its scope and the reason it could not be read.
fn file_name(file: &InstructionFile) -> String {
    let mut name = printable(&file.path.to_string_lossy()).into_owned();
    if file.scope == InstructionScope::Global {
        name.push_str(" (global)");
    }
    if let Some(reason) = &file.reason {
        let _ = write!(name, ": {}", printable(reason));
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> ConversationContextResult {
        let path = format!(
            "{}/../protocol/fixtures/v1/conversation_context_result.json",
            env!("CARGO_MANIFEST_DIR")
        );
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn the_fixture_renders_every_part_and_every_file() {
        let context = fixture();
        let out = render(&context);
        for part in &context.parts {
            assert!(
                out.lines()
                    .any(|l| l.starts_with(part.kind.as_str()) && l.contains(&part.bytes.to_string())),
                "{} missing: {out}",
                part.kind
            );
        }
        let read = "  read       412 of 412 bytes                  /home/ada/.config/efr/AGENTS.md (global)\n";
        let cut = "  cut        32356 of 40960 bytes              /home/ada/src/efr/AGENTS.md\n";
        assert!(out.contains(read) && out.contains(cut), "{out}");
        assert!(out.contains("\ntools                     2355       9418\n"), "{out}");
        assert!(!out.lines().any(|l| l.ends_with(' ')), "{out}");
        assert!(out.contains("1024 bytes, over the size bound"), "{out}");
        assert!(out.contains("CLAUDE.md: it is not UTF-8"), "{out}");
        assert!(out.contains("last count: 24871 tokens"), "{out}");
        assert!(out.contains("40960 read from the cache (66%)"), "{out}");
    }

    #[test]
    fn the_picture_is_one_bar_of_the_parts_with_the_trigger_marked() {
        let context = fixture();
        let plain = picture(&context, 64, false);
        let bar = plain.lines().nth(1).unwrap();
        assert_eq!(bar.chars().count(), 66, "{plain}");
        assert!(bar.starts_with("[t") && bar.ends_with("·]"), "{plain}");
        let trigger = usize::try_from(context.model.trigger / context.model.window.div_ceil(64)).unwrap();
        assert_eq!(bar.chars().nth(trigger + 1), Some('|'), "{plain}");
        assert!(!plain.contains('\u{1b}'), "{plain}");
        assert!(plain.contains("o tool_outputs"), "{plain}");
        assert!(plain.contains("shell (tool_outputs)"), "{plain}");
        let coloured = picture(&context, 64, true);
        assert!(coloured.contains("\x1b[44;30mt\x1b[0m"), "{coloured}");
    }

    #[test]
    fn a_file_name_with_escapes_is_printed_cleaned() {
        let mut context = fixture();
        context.parts[3].files[1].path = "/p/\u{1b}]0;TITLE\u{7}AGENTS.md".into();
        let out = render(&context);
        assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out:?}");
        assert!(out.contains("/p/␛]0;TITLE␇AGENTS.md"), "{out}");
    }
}
