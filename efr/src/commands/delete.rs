//! `efr delete ID [--force] [--stop] [--json]`: conversation.delete. The conversation's log then keeps only
//! conversation_deleted; its snapshots, journals and `$SCRATCH` go, and efrd's database gives the space back.
//!
//! ```text
//! deleted: Fix the flaky größe test (0f8fad5b-d9cb-469f-a165-70867728950e)
//! efr: /dev/pts/3 holds this conversation (Fix the flaky größe test): `efr delete --force ID` deletes it anyway
//! ```
//!
//! The asking terminal is stdin's: its own conversation is never held. Exit codes: 0 deleted; 1 for a bad id, a
//! conversation that does not exist or was deleted, one that another open terminal holds, or one that is busy
//! (`--stop` ends its turn first; an undo that runs must end); 2 when efrd is not running.

use std::process::ExitCode;

use efr_protocol::ids::{CommandId, ConversationId};
use efr_protocol::wire::{ConversationDeleteParams, ConversationDeleteResult};

use super::call_and_show;
use crate::cli::DeleteArgs;
use crate::client::ClientError;
use crate::{context, out, report};

/// Runs `efr delete`.
pub async fn run(args: &DeleteArgs) -> ExitCode {
    let Ok(conversation_id) = args.id.parse::<ConversationId>() else {
        report::error(&format!(
            "`{}` is not a conversation id (a UUID; `efr search` and `efr resume` show them)",
            args.id
        ));
        return ExitCode::from(report::FAILED);
    };
    let client = match report::connect(context::stdin_tty()).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    let params = ConversationDeleteParams {
        command_id: CommandId::new(),
        conversation_id,
        force: args.force,
        stop: args.stop,
    };
    let failed = |error: &ClientError| {
        let code = report::failure(error);
        if let ClientError::Daemon(body) = error
            && body.data.as_ref().is_some_and(|data| data["busy"] == "turn")
        {
            eprintln!("`efr delete --stop {}` stops its turn first", args.id);
        }
        code
    };
    call_and_show(
        &client,
        "conversation.delete",
        serde_json::json!(params),
        args.json,
        failed,
        |result: ConversationDeleteResult| print(&result, &args.id),
    )
    .await
}

fn print(result: &ConversationDeleteResult, id: &str) -> ExitCode {
    match result {
        ConversationDeleteResult::Deleted {
            conversation_id,
            title,
            jobs_stopped,
            not_removed,
        } => {
            let title = title.as_deref().unwrap_or("(no title)");
            let mut text = format!("deleted: {title} ({conversation_id})\n");
            if let Some(jobs) = jobs_stopped {
                text.push_str(&format!("{jobs} background job(s) stopped\n"));
            }
            for path in not_removed {
                text.push_str(&format!("not removed: {}\n", path.display()));
            }
            out::print(&text);
            ExitCode::SUCCESS
        }
        ConversationDeleteResult::Held { tty, title } => {
            let title = title.as_deref().map(|t| format!(" ({t})")).unwrap_or_default();
            report::error(&format!(
                "{tty} holds this conversation{title}: `efr delete --force {id}` deletes it anyway"
            ));
            ExitCode::from(report::FAILED)
        }
        ConversationDeleteResult::Unknown => {
            report::error("efrd answered with a kind of result this efr does not know");
            ExitCode::from(report::FAILED)
        }
    }
}
