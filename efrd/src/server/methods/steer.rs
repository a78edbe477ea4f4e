//! turn.steer and prompt.withdraw: thin handlers; the rules are the conversation actor's (`actor/steer.rs`).

use efr_protocol::ErrorBody;
use efr_protocol::wire::{PromptWithdrawParams, TurnSteerParams};
use serde_json::Value;

use super::conversation::origin_of;
use super::{params, result};
use crate::server::RequestCtx;

/// turn.steer: a message for the running turn's next model call, or a late steer queued with `if_late`.
///
/// # Errors
/// `not_found` for an unknown conversation, `conflict` for a late steer without `if_late`, `invalid` for bad params.
pub async fn turn_steer(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: TurnSteerParams = params(raw)?;
    let handle = ctx
        .daemon
        .conversations
        .get(&ctx.daemon.deps(), params.conversation_id)
        .await?;
    result(&handle.steer(params, origin_of(ctx)).await?)
}

/// prompt.withdraw: takes back a prompt that waits.
///
/// # Errors
/// `not_found` for an unknown conversation or a target without a waiting prompt, `conflict` for a prompt that
/// started.
pub async fn prompt_withdraw(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: PromptWithdrawParams = params(raw)?;
    let handle = ctx
        .daemon
        .conversations
        .get(&ctx.daemon.deps(), params.conversation_id)
        .await?;
    result(&handle.withdraw(params, origin_of(ctx)).await?)
}
