//! `efr resume [ID] [--take] [--print-dir] [--json]`: take a conversation up in this terminal (conversation.resume).
//!
//! Without an id, the recent conversations (conversations.recent, those of this folder's project first): on a
//! terminal a picker (type to filter, arrows, Enter; [`super::picker`]), drawn on stderr; when stdout is a pipe
//! (without `--print-dir`) or there is no terminal, a list, one line each:
//!
//! ```text
//! 0f8fad5b  Fix the flaky größe test  efr  3 turns  2h ago  here
//! 7c9e6679  Rename the deploy key  outside  1 turn  1d ago  open in /dev/pts/3
//! ```
//!
//! An id is a whole id or the start of one (at least 4 hex digits) among the recent ones. The chosen conversation
//! becomes this terminal's conversation of its project (or outside): the next `,` from its folder goes on with it.
//! One that another open terminal holds is refused unless `--take`. `--print-dir` prints only the folder to change
//! to when this terminal's folder is not in the conversation's project (nothing else on stdout; `,resume` changes
//! to it). Exit codes: 0 resumed (or listed); 1 nothing chosen, no terminal to resume in, a bad or unknown id, or a
//! conversation held by another terminal; 2 when efrd is not running.

use std::process::ExitCode;

use efr_protocol::ids::{CommandId, ConversationId};
use efr_protocol::wire::{
    ConversationResumeParams, ConversationResumeResult, ConversationsRecentParams, ConversationsRecentResult,
    RecentConversation,
};

use super::picker::{Choice, Picker, pick};
use super::read;
use crate::cli::ResumeArgs;
use crate::client::Client;
use crate::{context, out, report, tty};

/// The most conversations listed.
const LIMIT: u32 = 50;

/// Runs `efr resume`.
pub async fn run(args: &ResumeArgs) -> ExitCode {
    let terminal = context::stdin_tty();
    // A list where the output is read by a program (and with nothing to pick on: no terminal to ask at).
    let list = args.id.is_none()
        && ((!tty::stdout_is_tty() && !args.print_dir) || terminal.is_none() || !tty::stderr_is_tty());
    let client = match report::connect(terminal.clone()).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    let prompt_context = context::prompt_context(terminal.clone(), None);
    let recent = match recent(&client, terminal.as_deref(), prompt_context.cwd.clone()).await {
        Ok(recent) => recent,
        Err(code) => return code,
    };
    if list {
        if recent.conversations.is_empty() {
            eprintln!("efr: no conversation yet");
        }
        for row in &recent.conversations {
            out::println(&line(row, recent.current == Some(row.summary.conversation_id)));
        }
        return ExitCode::SUCCESS;
    }
    if terminal.is_none() {
        report::error("efr resume takes a conversation up in a terminal: stdin is not one");
        return ExitCode::from(report::FAILED);
    }
    let chosen = match choose(args.id.as_deref(), &recent) {
        Ok(id) => id,
        Err(code) => return code,
    };
    let params = ConversationResumeParams {
        command_id: CommandId::new(),
        conversation_id: chosen,
        context: prompt_context,
        take: args.take,
    };
    super::call_and_show(
        &client,
        "conversation.resume",
        serde_json::json!(params),
        args.json,
        report::failure,
        |result: ConversationResumeResult| print(&result, args.print_dir),
    )
    .await
}

/// The conversation to resume: the row of `id` (or the start of one), else the one picked on the terminal; the exit
/// code when none is (an unknown id, an empty list, the picker left).
fn choose(id: Option<&str>, recent: &ConversationsRecentResult) -> Result<ConversationId, ExitCode> {
    match id {
        Some(id) => match find(&recent.conversations, id) {
            Ok(row) => Ok(row.summary.conversation_id),
            Err(message) => {
                report::error(&message);
                Err(ExitCode::from(report::FAILED))
            }
        },
        None if recent.conversations.is_empty() => {
            report::error("no conversation to resume");
            Err(ExitCode::from(report::FAILED))
        }
        None => {
            let choices = recent
                .conversations
                .iter()
                .map(|row| {
                    let line = line(row, recent.current == Some(row.summary.conversation_id));
                    Choice {
                        haystack: line.to_lowercase(),
                        line,
                    }
                })
                .collect();
            match pick(Picker::new(choices)) {
                Ok(Some(i)) => Ok(recent.conversations[i].summary.conversation_id),
                Ok(None) => Err(ExitCode::from(report::FAILED)),
                Err(error) => {
                    report::error(&format!("the picker: {error}"));
                    Err(ExitCode::from(report::FAILED))
                }
            }
        }
    }
}

/// conversations.recent for this terminal and folder.
async fn recent(
    client: &Client,
    terminal: Option<&str>,
    pwd: Option<std::path::PathBuf>,
) -> Result<ConversationsRecentResult, ExitCode> {
    let params = ConversationsRecentParams {
        tty: terminal.map(str::to_owned),
        pwd,
        limit: Some(LIMIT),
    };
    let value = client
        .call_value("conversations.recent", serde_json::json!(params))
        .await
        .map_err(|error| report::failure(&error))?;
    read::<ConversationsRecentResult>("conversations.recent", &value).map_err(|message| {
        report::error(&message);
        ExitCode::from(report::FAILED)
    })
}

/// The row whose id is `id` or starts with it (at least 4 hex digits, one row only).
fn find<'a>(rows: &'a [RecentConversation], id: &str) -> Result<&'a RecentConversation, String> {
    let id = id.to_lowercase();
    if id.len() < 4 || !id.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
        return Err(format!(
            "`{id}` is not a conversation id (a UUID or its first 4 or more hex digits; `efr resume` lists them)"
        ));
    }
    let found: Vec<&RecentConversation> = rows
        .iter()
        .filter(|row| row.summary.conversation_id.to_string().starts_with(&id))
        .collect();
    match found.as_slice() {
        [row] => Ok(row),
        [] => Err(format!(
            "no recent conversation has the id {id} (`efr resume` lists them)"
        )),
        _ => Err(format!(
            "{} recent conversations start with {id}: give more of it",
            found.len()
        )),
    }
}

/// One row: the id's first 8 digits, the title, the project (or outside), the turns, how long ago, and where.
fn line(row: &RecentConversation, current: bool) -> String {
    let summary = &row.summary;
    let id = summary.conversation_id.to_string();
    let title = summary.title.as_deref().unwrap_or("(no title)");
    let place = row.project.as_deref().unwrap_or("outside");
    let turns = if row.turns == 1 {
        "1 turn".to_owned()
    } else {
        format!("{} turns", row.turns)
    };
    let ago = super::ago(summary.updated_at, efr_protocol::ids::Timestamp::now());
    let mut text = format!("{}  {title}  {place}  {turns}  {ago}", &id[..8]);
    if current {
        text.push_str("  current");
    } else if row.here {
        text.push_str("  here");
    }
    if let Some(tty) = &row.open_in {
        text.push_str(&format!("  open in {tty}"));
    }
    text
}

fn print(result: &ConversationResumeResult, print_dir: bool) -> ExitCode {
    match result {
        ConversationResumeResult::Resumed {
            conversation_id,
            title,
            shell_dir,
            here,
            ..
        } => {
            let title = title.as_deref().unwrap_or("(no title)");
            let away = shell_dir.as_ref().filter(|_| !here);
            if print_dir {
                eprintln!("resumed: {title} ({conversation_id})");
                if let Some(dir) = away {
                    out::println(&dir.display().to_string());
                }
            } else {
                out::println(&format!("resumed: {title} ({conversation_id})"));
                if let Some(dir) = away {
                    out::println(&format!(
                        "its folder is {}: a `,` from there goes on with it",
                        dir.display()
                    ));
                }
            }
            ExitCode::SUCCESS
        }
        ConversationResumeResult::Held { tty, title } => {
            let title = title.as_deref().unwrap_or("(no title)");
            report::error(&format!(
                "{tty} holds this conversation ({title}): `efr resume --take ID` takes it here"
            ));
            ExitCode::from(report::FAILED)
        }
        ConversationResumeResult::Unknown => {
            report::error("efrd answered conversation.resume with a kind this efr does not know");
            ExitCode::from(report::FAILED)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // Test code: a failed unwrap is a failed test.

    use efr_protocol::ids::{ConversationId, Timestamp};
    use efr_protocol::wire::{ConversationStatus, ConversationSummary};

    use super::*;

    fn row(id: &str, title: &str) -> RecentConversation {
        RecentConversation {
            summary: ConversationSummary {
                conversation_id: id.parse::<ConversationId>().unwrap(),
                title: Some(title.into()),
                status: ConversationStatus::Idle,
                created_at: Timestamp::now(),
                updated_at: Timestamp::now(),
                cwd: None,
                route: None,
                tty: None,
                turns: 2,
                last_seq: 9,
            },
            route: None,
            project: Some("efr".into()),
            turns: 2,
            open_in: Some("/dev/pts/3".into()),
            here: true,
        }
    }

    #[test]
    fn an_id_is_found_by_its_start_and_an_ambiguous_or_short_one_is_refused() {
        let rows = [
            row("0f8fad5b-d9cb-469f-a165-70867728950e", "one"),
            row("0f8fad5c-d9cb-469f-a165-70867728950e", "two"),
        ];
        assert_eq!(find(&rows, "0F8FAD5C").unwrap().summary.title.as_deref(), Some("two"));
        assert!(find(&rows, "0f8fad5").unwrap_err().contains("2 recent conversations"));
        assert!(find(&rows, "0f8").unwrap_err().contains("not a conversation id"));
        assert!(find(&rows, "zzzz").unwrap_err().contains("not a conversation id"));
        assert!(find(&rows, "abcd").unwrap_err().contains("no recent conversation"));
    }

    #[test]
    fn a_line_names_the_place_the_turns_and_the_terminal_that_holds_it() {
        let line = line(&row("0f8fad5b-d9cb-469f-a165-70867728950e", "Fix größe"), false);
        assert!(line.starts_with("0f8fad5b  Fix größe  efr  2 turns  "), "{line}");
        assert!(line.ends_with("  here  open in /dev/pts/3"), "{line}");
    }
}
