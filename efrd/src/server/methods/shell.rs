//! input.respond, shell.status and shell.interrupt: the hidden shell of a conversation.

use efr_protocol::ErrorBody;
use efr_protocol::wire::{InputRespondParams, ShellInterruptParams, ShellStatusParams};
use serde_json::Value;

use super::{params, result};
use crate::server::RequestCtx;

/// input.respond (scope terminal, the Unix socket only): an answer to the command that waits.
///
/// # Errors
/// `not_found` when the call runs no command, `conflict` when the answer does not fit the wait or the command types
/// into a shell.
pub async fn input_respond(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: InputRespondParams = params(raw)?;
    let handle = ctx
        .daemon
        .conversations
        .get(&ctx.daemon.deps(), params.conversation_id)
        .await?;
    result(&handle.input_respond(params).await?)
}

/// shell.status (scope read).
///
/// # Errors
/// `not_found` for an unknown conversation.
pub async fn status(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: ShellStatusParams = params(raw)?;
    let handle = ctx
        .daemon
        .conversations
        .get(&ctx.daemon.deps(), params.conversation_id)
        .await?;
    result(&handle.shell_status().await?)
}

/// shell.interrupt (scope terminal, a write).
///
/// # Errors
/// `not_found` when the call holds no command of the shell.
pub async fn interrupt(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: ShellInterruptParams = params(raw)?;
    let handle = ctx
        .daemon
        .conversations
        .get(&ctx.daemon.deps(), params.conversation_id)
        .await?;
    result(&handle.shell_interrupt(params).await?)
}
