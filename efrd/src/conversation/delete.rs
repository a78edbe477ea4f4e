//! conversation.delete (spec: "the delete of a conversation"): the flow from the request to the files.
//!
//! 1. A repeat of the write (its command id stored) gets the stored outcome.
//! 2. The actor's first step (`actor/delete.rs`): held, busy, or ready, the conversation closed to new work (with
//!    `stop`, after its running turn, queued prompts and compaction were stopped).
//! 3. From step 2 on the delete runs to its end even when the request goes away: the conversation's background jobs are
//!    stopped (their ends are recorded while the log still takes events), the actor commits conversation_deleted
//!    as the store's delete (the log keeps only that event; the index and the outcomes of its earlier writes go; the
//!    file gives the space back) and stops, ending every subscription after that event; conversations.watch hears
//!    `removed`.
//! 4. On disk: the snapshots of its turns (with the contents that no kept snapshot holds), their undo journals and
//!    the files beside them, and its `$SCRATCH` (`undo::collect::remove_conversation`), while no walk, save or undo
//!    runs. What could not be removed is named in `not_removed`; the collection while efrd runs tries again for the
//!    scratch folder.
//!
//! The stored outcome holds no title: the deleted conversation's words do not stay in the database for the outcome's
//! retention, so a repeat of the write answers `deleted` without it.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use efr_protocol::ErrorBody;
use efr_protocol::ids::{ConversationId, TurnId};
use efr_protocol::wire::{ConversationDeleteParams, ConversationDeleteResult, JobState, JobStopBy, Origin};

use super::actor::{DeleteAsk, DeleteBegun};
use super::{Command, Conversations, Deps, request};

/// How long the delete waits for the snapshot store's walks, saves and undos of the moment before it removes the
/// conversation's snapshots; past it, they stay for the collection while efrd runs.
const FILES_WAIT: Duration = Duration::from_secs(5);

/// The method name under which the outcome is stored.
const METHOD: &str = "conversation.delete";

/// conversation.delete asked by the terminal `tty` (the hello's; `None` for none) from `origin`.
///
/// # Errors
/// `not_found` for a conversation that does not exist or was deleted; `busy` with `{"busy": "turn"}` or
/// `{"busy": "undo"}`; `conflict` while another delete of it runs; `unavailable` when the store fails.
pub async fn delete(
    conversations: &Conversations,
    deps: &Deps,
    params: ConversationDeleteParams,
    tty: Option<String>,
    origin: Origin,
) -> Result<ConversationDeleteResult, ErrorBody> {
    if let Some(record) = deps
        .store
        .command_outcome(params.command_id)
        .await
        .map_err(ErrorBody::from)?
    {
        return super::actor::decode_outcome(&record);
    }
    let id = params.conversation_id;
    let handle = conversations.get(deps, id).await?;
    let ask = DeleteAsk {
        tty,
        force: params.force,
        stop: params.stop,
    };
    let deps = deps.clone();
    let command_id = params.command_id;
    // From the first step on the delete runs to its end, also when the request goes away: a delete that waits for
    // a stopped turn must not leave the conversation closed to new work.
    let run = tokio::spawn(async move {
        let title = match request(&handle.tx, |reply| Command::DeleteBegin { ask, reply }).await?? {
            DeleteBegun::Held { tty, title } => return Ok(ConversationDeleteResult::Held { tty, title }),
            DeleteBegun::Ready { title } => title,
        };
        let turns = match turns_of(&deps, id).await {
            Ok(turns) => turns,
            Err(error) => {
                let _ = handle.tx.send(Command::DeleteAbort).await;
                return Err(error);
            }
        };
        let jobs_stopped = stop_jobs(&deps, id).await;
        let stored = ConversationDeleteResult::Deleted {
            conversation_id: id,
            title: None,
            jobs_stopped,
            not_removed: Vec::new(),
        };
        let command = efr_store::CommandRecord {
            command_id,
            method: METHOD.to_owned(),
            conversation_id: Some(id),
            result: serde_json::to_string(&stored)
                .map_err(|e| ErrorBody::internal(format!("cannot serialize an outcome: {e}")))?,
            at: efr_protocol::ids::Timestamp::now(),
        };
        let ended = request(&handle.tx, |reply| Command::DeleteEnd {
            origin,
            command: Box::new(command),
            reply,
        })
        .await;
        if let Err(error) = ended.and_then(|ended| ended) {
            let _ = handle.tx.send(Command::DeleteAbort).await;
            return Err(error);
        }
        deps.rows.removed(id);
        let not_removed = remove_files(&deps, id, turns).await;
        Ok(ConversationDeleteResult::Deleted {
            conversation_id: id,
            title,
            jobs_stopped,
            not_removed,
        })
    });
    let answer = run
        .await
        .map_err(|e| ErrorBody::internal(format!("the delete did not finish: {e}")))??;
    if matches!(answer, ConversationDeleteResult::Deleted { .. }) {
        conversations.forget_input(id);
    }
    Ok(answer)
}

/// The turns of `id` (read before the delete removes their events).
async fn turns_of(deps: &Deps, id: ConversationId) -> Result<HashSet<TurnId>, ErrorBody> {
    let turns = deps
        .store
        .turns_of_kind("turn_started")
        .await
        .map_err(ErrorBody::from)?;
    Ok(turns.into_iter().filter(|(c, _)| *c == id).map(|(_, t)| t).collect())
}

/// Stops the running background jobs of `id` and waits for their ends; returns how many, `None` for none.
async fn stop_jobs(deps: &Deps, id: ConversationId) -> Option<u32> {
    let running: Vec<_> = deps
        .jobs
        .list(Some(id))
        .into_iter()
        .filter(|job| job.state == JobState::Running)
        .map(|job| job.id)
        .collect();
    for job in &running {
        let _ = deps.jobs.stop(Some(id), job, JobStopBy::User).await;
    }
    u32::try_from(running.len()).ok().filter(|n| *n > 0)
}

/// Removes the conversation's files (step 4 of the module docs); returns what could not be removed.
async fn remove_files(deps: &Deps, id: ConversationId, turns: HashSet<TurnId>) -> Vec<std::path::PathBuf> {
    let scratch = deps
        .roots
        .state
        .path
        .join(efr_policy::floors::SCRATCH_FOLDER)
        .join(id.to_string());
    let Some(alone) = deps.snapshots.exclusive(FILES_WAIT).await else {
        // Its scratch is no walk's of another conversation; its snapshots are the collection's next pass's (turns
        // that no conversation holds).
        tracing::warn!(conversation = %id, "the snapshot store stayed busy: the collection removes the snapshots");
        let scratch_left = tokio::task::spawn_blocking(move || {
            let error = std::fs::remove_dir_all(&scratch).err();
            error
                .filter(|e| e.kind() != std::io::ErrorKind::NotFound)
                .map(|_| scratch)
        })
        .await
        .ok()
        .flatten();
        return std::iter::once(deps.snapshots.dir().to_path_buf())
            .chain(scratch_left)
            .collect();
    };
    let store = Arc::clone(&deps.snapshots);
    let removed = tokio::task::spawn_blocking(move || {
        let left = crate::undo::collect::remove_conversation(&store, &turns, &scratch);
        drop(alone);
        left
    })
    .await;
    removed.unwrap_or_else(|error| {
        tracing::warn!(%error, conversation = %id, "the files of a deleted conversation were not all removed");
        Vec::new()
    })
}
