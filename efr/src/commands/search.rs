//! `efr search QUERY...`: conversations.search (or, with `--conversation ID`, conversation.search), the matches
//! highlighted on a terminal (bold and underlined) and plain in a pipe.
//!
//! ```text
//! 0f8fad5b  Fix the größe of the button                          2h ago
//!           command: grep -rn 'größe' src/
//! ```

use std::fmt::Write as _;
use std::process::ExitCode;

use efr_protocol::ids::Timestamp;
use efr_protocol::wire::{
    ConversationSearchParams, ConversationSearchResult, ConversationsSearchParams, ConversationsSearchResult,
    RangedText, SearchHit, SearchPartial, TextRange,
};

use super::{read, run_unary};
use crate::clean::printable;
use crate::cli::SearchArgs;
use crate::report;

/// The start and end of a highlighted match on a terminal: bold and underlined.
const MARK_ON: &str = "\u{1b}[1;4m";
/// See [`MARK_ON`].
const MARK_OFF: &str = "\u{1b}[0m";

/// Runs `efr search`.
pub async fn run(args: &SearchArgs) -> ExitCode {
    let query = args.query.join(" ");
    let colour = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let tty = crate::context::stdin_tty();
    let cwd = std::env::current_dir().ok();
    if let Some(conversation) = &args.conversation {
        let Ok(conversation_id) = conversation.parse() else {
            report::error(&format!(
                "--conversation: `{conversation}` is not a conversation id (a UUID)"
            ));
            return ExitCode::from(report::FAILED);
        };
        let params = ConversationSearchParams {
            conversation_id,
            query,
            limit: args.limit,
        };
        let Ok(params) = serde_json::to_value(&params) else {
            return ExitCode::from(report::FAILED);
        };
        return run_unary("conversation.search", params, args.json, tty, |value| {
            let result: ConversationSearchResult = read("conversation.search", value)?;
            crate::out::print_exact(&render_hits(&result, colour));
            Ok(())
        })
        .await;
    }
    let params = ConversationsSearchParams {
        query,
        tty: tty.clone(),
        pwd: cwd,
        limit: args.limit,
        stats: false,
    };
    let Ok(params) = serde_json::to_value(&params) else {
        return ExitCode::from(report::FAILED);
    };
    run_unary("conversations.search", params, args.json, tty, |value| {
        let result: ConversationsSearchResult = read("conversations.search", value)?;
        crate::out::print_exact(&render(&result, colour, Timestamp::now()));
        Ok(())
    })
    .await
}

/// `text` with the code-point `ranges` marked when `colour`; control characters shown as visible marks.
#[must_use]
pub fn highlighted(text: &str, ranges: &[TextRange], colour: bool) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + ranges.len() * 12);
    let mut at = 0;
    for range in ranges {
        let (start, end) = (range.start as usize, (range.end as usize).min(chars.len()));
        if start < at || start >= end {
            continue;
        }
        out.push_str(&printable(&chars[at..start].iter().collect::<String>()));
        if colour {
            out.push_str(MARK_ON);
        }
        out.push_str(&printable(&chars[start..end].iter().collect::<String>()));
        if colour {
            out.push_str(MARK_OFF);
        }
        at = end;
    }
    out.push_str(&printable(&chars[at.min(chars.len())..].iter().collect::<String>()));
    out
}

fn hit_lines(out: &mut String, hit: &SearchHit, colour: bool) {
    for (i, line) in hit.lines.iter().enumerate() {
        let RangedText { text, ranges } = line;
        let label = if i == 0 {
            format!("{}:", hit.kind)
        } else {
            String::new()
        };
        let _ = writeln!(out, "          {label:8} {}", highlighted(text, ranges, colour));
    }
}

fn partial_note(partial: Option<SearchPartial>) -> Option<&'static str> {
    partial.map(|p| match p {
        SearchPartial::RowCap => "(more matches than one search reads: the newest are shown; add a word)",
        SearchPartial::TimeCap | SearchPartial::Unknown => "(the search ran out of time: some matches may be missing)",
    })
}

/// The readable result of conversations.search: per row its short id, title and age, then its hit's lines.
#[must_use]
pub fn render(result: &ConversationsSearchResult, colour: bool, now: Timestamp) -> String {
    let mut out = String::new();
    if result.rows.is_empty() {
        out.push_str("no conversation matches\n");
    }
    for row in &result.rows {
        let summary = &row.conversation.summary;
        let title = summary.title.as_deref().unwrap_or("(no title)");
        let ranges = row.title_ranges.as_deref().unwrap_or(&[]);
        let _ = writeln!(
            out,
            "{}  {}  {}",
            row.short_id,
            highlighted(title, ranges, colour),
            super::ago(summary.updated_at, now)
        );
        if let Some(hit) = &row.hit {
            hit_lines(&mut out, hit, colour);
        }
    }
    if let Some(percent) = result.index {
        let _ = writeln!(out, "(the index is being rebuilt: {percent}% done)");
    }
    if let Some(note) = partial_note(result.partial) {
        let _ = writeln!(out, "{note}");
    }
    out
}

/// The readable result of conversation.search: the title, then each hit's lines.
#[must_use]
pub fn render_hits(result: &ConversationSearchResult, colour: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", printable(result.title.as_deref().unwrap_or("(no title)")));
    if result.hits.is_empty() {
        out.push_str("no match\n");
    }
    for hit in &result.hits {
        hit_lines(&mut out, hit, colour);
    }
    if let Some(note) = partial_note(result.partial) {
        let _ = writeln!(out, "{note}");
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn ranges_in_code_points_are_highlighted_on_a_terminal_and_plain_in_a_pipe() {
        let ranges = [TextRange { start: 2, end: 7 }, TextRange { start: 11, end: 12 }];
        let text = "🙂 größe ok 中";
        assert_eq!(
            highlighted(text, &ranges, true),
            "🙂 \u{1b}[1;4mgröße\u{1b}[0m ok \u{1b}[1;4m中\u{1b}[0m"
        );
        assert_eq!(highlighted(text, &ranges, false), text);
        // Ranges past the end or out of order are ignored, never a panic; control characters are made visible.
        let odd = [TextRange { start: 5, end: 99 }, TextRange { start: 1, end: 2 }];
        assert_eq!(highlighted("ab\u{1b}[2Jcd", &odd, false), "ab␛[2Jcd");
    }
}
