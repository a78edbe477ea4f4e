//! `efr compact [--focus TEXT] [--conversation ID] [--json]`: conversation.compact, a summary of the conversation's
//! older turns in place of them in the model's copy (docs/context.md, "Compaction"). The transcript keeps
//! everything.
//!
//! ```text
//! context compacted (by hand): 181220 → 12904 tokens, 1 turns kept whole
//! ```
//!
//! Exit codes: 0 done; 1 for bad input, an unknown conversation, a turn that runs (compact when it ends) or a
//! summary call that failed (the conversation is as it was); 2 when efrd is not running.

use std::process::ExitCode;

use efr_protocol::ids::CommandId;
use efr_protocol::wire::{ConversationCompactParams, ConversationCompactResult};

use super::call_and_show;
use crate::cli::CompactArgs;
use crate::turn::describe::compaction_line;
use crate::{out, report};

/// Runs `efr compact`.
pub async fn run(args: &CompactArgs) -> ExitCode {
    let (client, conversation_id) = match super::context::target(args.conversation.as_deref(), "efr compact").await {
        Ok(target) => target,
        Err(code) => return code,
    };
    let params = ConversationCompactParams {
        command_id: CommandId::new(),
        conversation_id,
        focus: args.focus.clone(),
    };
    call_and_show(
        &client,
        "conversation.compact",
        serde_json::json!(params),
        args.json,
        report::failure,
        |result: ConversationCompactResult| {
            out::print(&format!("{}\n", compaction_line(&result.compaction)));
            ExitCode::SUCCESS
        },
    )
    .await
}
