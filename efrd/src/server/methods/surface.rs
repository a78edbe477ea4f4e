//! sandbox.surface_respond: the user's answer to a surface question (`docs/auto.md`, "Surface changes"). The
//! conversation's actor keeps the questions and does the work ([`crate::turn::surface`]).

use efr_protocol::ErrorBody;
use efr_protocol::wire::SandboxSurfaceRespondParams;
use serde_json::Value;

use super::conversation::origin_of;
use super::{params, result};
use crate::server::RequestCtx;

/// sandbox.surface_respond: keep the change, or put back what was there.
///
/// # Errors
/// `invalid` for bad params (a question id that is not `s<n>`), `not_found` for an unknown conversation or a question
/// it never asked, `conflict` for a question already answered, `unavailable` for one asked before efrd restarted.
pub async fn surface_respond(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: SandboxSurfaceRespondParams = params(raw)?;
    let handle = ctx
        .daemon
        .conversations
        .get(&ctx.daemon.deps(), params.conversation_id)
        .await?;
    result(&handle.surface_respond(params, origin_of(ctx)).await?)
}
