//! presence.set: the user is present or away (docs/auto.md, "Presence").

use efr_protocol::ErrorBody;
use efr_protocol::wire::PresenceSetParams;
use serde_json::Value;

use super::{params, result};
use crate::server::RequestCtx;

/// presence.set (scope operate, unary, with a command id).
///
/// # Errors
/// `invalid` for bad params or the presence `unknown`, `not_found` for a conversation that does not exist,
/// `unavailable` when the store fails.
pub async fn presence_set(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: PresenceSetParams = params(raw)?;
    let deps = ctx.daemon.deps();
    result(&ctx.daemon.conversations.set_presence(&deps, params).await?)
}
