//! trash.list (scope read) and trash.restore (scope operate, with a command id, local only): efr's trash, where a
//! forced undo put the files it replaced (`docs/undo.md`, "The trash"). The work is [`crate::undo::trash`].

use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use chrono::{DateTime, Utc};
use efr_protocol::ids::Timestamp;
use efr_protocol::wire::{TrashEntry, TrashListParams, TrashListResult, TrashRestoreParams, TrashRestoreResult};
use efr_protocol::{ErrorBody, ErrorCode};
use serde_json::Value;

use super::{params, result};
use crate::server::RequestCtx;
use crate::undo::trash;
use efr_store::{CommandRecord, Commit, StoreError};

/// One trash.restore at a time: a repeat of a command id waits for the first and gets its stored outcome.
static RESTORE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn at(time: SystemTime) -> Timestamp {
    Timestamp(DateTime::<Utc>::from(time))
}

/// trash.list.
///
/// # Errors
/// `invalid` for params that do not parse.
pub async fn trash_list(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let _: TrashListParams = params(raw)?;
    let snapshots = Arc::clone(&ctx.daemon.snapshots);
    let bounds = snapshots.trash_bounds();
    let dir = snapshots.trash_dir();
    let (found, bytes) = tokio::task::spawn_blocking(move || (trash::list(&dir), trash::bytes(&dir)))
        .await
        .map_err(|e| ErrorBody::internal(format!("the trash could not be read: {e}")))?;
    let entries_more = found.len().saturating_sub(TrashListResult::MAX_ENTRIES) as u64;
    let entries = found
        .into_iter()
        .take(TrashListResult::MAX_ENTRIES)
        .map(|item| TrashEntry {
            path: item.original().display().to_string(),
            trashed_at: at(item.trashed_at),
            expires_at: at(item.trashed_at + bounds.max_age),
            id: item.id,
            undo_id: item.undo_id,
            size: item.size,
        })
        .collect();
    result(&TrashListResult {
        entries,
        entries_more,
        bytes,
        max_bytes: bounds.max_bytes,
        days: bounds.max_age.as_secs() / 86_400,
    })
}

/// trash.restore: puts the entry back where it was (or at `to`), never over a file; the outcome is stored under the
/// command id, so a repeat returns it and changes nothing.
///
/// # Errors
/// `invalid` for a relative `to`; `not_found` for an id the trash does not hold; `conflict` when the path exists;
/// `internal` when the file cannot be moved (it stays in the trash); `unavailable` when the event store fails.
pub async fn trash_restore(ctx: &RequestCtx, raw: Option<Value>) -> Result<Value, ErrorBody> {
    let params: TrashRestoreParams = params(raw)?;
    let to = params.to.as_ref().map(PathBuf::from);
    if to.as_ref().is_some_and(|to| !to.is_absolute()) {
        return Err(ErrorBody::invalid("bad params: `to`: not an absolute path"));
    }
    let _one = RESTORE.lock().await;
    let store = &ctx.daemon.store;
    if let Some(stored) = store
        .command_outcome(params.command_id)
        .await
        .map_err(ErrorBody::from)?
    {
        return stored_result(&stored);
    }
    let dir = ctx.daemon.snapshots.trash_dir();
    let id = params.id.clone();
    let restored = tokio::task::spawn_blocking(move || {
        let Some(item) = trash::find(&dir, &id) else {
            return Err(ErrorBody::new(
                ErrorCode::NotFound,
                format!("the trash holds no `{id}`"),
            ));
        };
        trash::restore(&dir, &item, to.as_deref()).map_err(|error| match error.kind() {
            std::io::ErrorKind::AlreadyExists => ErrorBody::new(ErrorCode::Conflict, error.to_string()),
            _ => ErrorBody::internal(format!(
                "{} could not be restored (it stays in the trash): {error}",
                item.original().display()
            )),
        })
    })
    .await
    .map_err(|e| ErrorBody::internal(format!("the restore did not finish: {e}")))??;
    let answer = TrashRestoreResult {
        id: params.id,
        path: restored.display().to_string(),
    };
    let command = CommandRecord {
        command_id: params.command_id,
        method: "trash.restore".to_owned(),
        conversation_id: None,
        result: serde_json::to_string(&answer)
            .map_err(|e| ErrorBody::internal(format!("cannot serialize an outcome: {e}")))?,
        at: Timestamp::now(),
    };
    match store.commit(Commit::default().with_command(command)).await {
        Ok(()) => result(&answer),
        Err(StoreError::DuplicateCommand { stored, .. }) => stored_result(&stored),
        Err(error) => Err(ErrorBody::from(error)),
    }
}

fn stored_result(stored: &CommandRecord) -> Result<Value, ErrorBody> {
    serde_json::from_str(&stored.result)
        .map_err(|e| ErrorBody::internal(format!("a stored outcome does not parse: {e}")))
}
