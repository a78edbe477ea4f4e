//! jobs.list, jobs.stop and call.background: efrd's background jobs ([`crate::jobs`]).

use efr_protocol::ErrorBody;
use efr_protocol::wire::{
    CallBackgroundParams, JobStopBy, JobsListParams, JobsListResult, JobsStopParams, JobsStopResult,
};
use serde_json::Value;

use super::{params, result};
use crate::server::RequestCtx;

/// jobs.list (scope read): newest first, at most 200; one conversation's when named.
///
/// # Errors
/// `invalid` for bad params.
pub fn list(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: JobsListParams = params(raw)?;
    result(&JobsListResult {
        jobs: ctx.daemon.jobs.list(params.conversation_id),
    })
}

/// jobs.stop (scope operate): stops every process of the job and answers once job_ended is recorded. A job that
/// ended already is answered as it is, so a repeat stops nothing.
///
/// # Errors
/// `not_found` for a job that does not exist (or not in the named conversation), `invalid` for a job id that is not
/// `jN` or one that names jobs of several conversations without `conversation_id`.
pub async fn stop(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: JobsStopParams = params(raw)?;
    let job = ctx
        .daemon
        .jobs
        .stop(params.conversation_id, &params.job_id, JobStopBy::User)
        .await?;
    result(&JobsStopResult { job })
}

/// call.background (scope terminal, a write): moves a running shell call into a job; a call outside the sandbox
/// answers a preview first, and moves when its token comes back.
///
/// # Errors
/// `invalid` with a short reason: the call runs no command, the token is used, expired or another call's;
/// `not_found` for an unknown conversation.
pub async fn call_background(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: CallBackgroundParams = params(raw)?;
    let handle = ctx
        .daemon
        .conversations
        .get(&ctx.daemon.deps(), params.conversation_id)
        .await?;
    result(&handle.call_background(params).await?)
}
