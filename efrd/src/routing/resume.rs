//! conversation.resume (the contract's "resuming a conversation"): a terminal takes up a conversation. It becomes
//! the conversation of the terminal's slot for the conversation's own scope key (and the terminal's current one),
//! and leaves any other terminal's slot; its actor records terminal_attached with how `resumed`. Another open
//! terminal that holds it answers `held` unless `take` is set; then nothing moves.

use efr_protocol::events::TerminalAttached;
use efr_protocol::wire::{AttachHow, ConversationResumeParams, ConversationResumeResult};
use efr_protocol::{ErrorBody, ErrorCode};

use super::prompt::scope_of;
use super::{Router, ScopeKey, is_open};

/// conversation.resume for `params` (see the module docs). The caller holds `Terminals::deciding`, as a routed
/// prompt does, so that a resume and a prompt never decide on the same slots at once.
///
/// # Errors
/// `invalid` without a tty; `not_found` for a conversation that does not exist or was deleted; `unavailable` when
/// the store fails.
pub async fn resume(
    router: Router<'_>,
    params: ConversationResumeParams,
) -> Result<ConversationResumeResult, ErrorBody> {
    let Some(tty) = params.context.tty.as_deref() else {
        return Err(ErrorBody::new(
            ErrorCode::Invalid,
            "bad params: `context.tty`: conversation.resume takes a conversation up in a terminal",
        ));
    };
    let id = params.conversation_id;
    let handle = router.conversations.get(router.deps, id).await?;
    // The actor holds the row as committed: no second read of the store.
    let wire = handle
        .summary()
        .await?
        .ok_or_else(|| ErrorBody::new(ErrorCode::NotFound, format!("no conversation {id}")))?;
    let shell_pid = params.context.shell_context.as_ref().and_then(|s| s.pid);
    // Its own key: the scope it was created in, else (a conversation from before routing) its working directory's.
    let key = wire
        .route
        .as_ref()
        .and_then(ScopeKey::from_wire)
        .unwrap_or_else(|| scope_of(router.registry, wire.cwd.as_deref()).0);
    router.terminals.release_closed(tty, shell_pid, &is_open);
    if let Some(holder) = router.terminals.open_holder(id, Some(tty), &is_open)
        && !params.take
    {
        return Ok(ConversationResumeResult::Held {
            tty: holder,
            title: wire.title,
        });
    }
    let cwd = params.context.cwd.as_deref();
    let here = cwd.is_some() && scope_of(router.registry, cwd).0 == key;
    let result = ConversationResumeResult::Resumed {
        conversation_id: id,
        scope: key.to_wire(),
        title: wire.title.clone(),
        updated_at: wire.updated_at,
        shell_dir: wire.cwd.clone(),
        here,
        // The slot of the working directory's key is this conversation's from now on.
        continues_here: here,
    };
    let attached = TerminalAttached {
        tty: tty.to_owned(),
        route: key.to_wire(),
        shell_pid,
        how: AttachHow::Resumed,
    };
    let answer = handle.record_resume(params.command_id, attached, result).await?;
    router.terminals.attach(tty, shell_pid, key, id);
    Ok(answer)
}
