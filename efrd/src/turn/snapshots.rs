//! A turn's first and last snapshot of its project: the `changes` of its end event, and what conversation.diff shows.
//!
//! The turn takes a snapshot of the project before its first model call (`<turn_id>-pre`) and one when it ends
//! (`<turn_id>-post`), both saved in the snapshot store so that conversation.diff can compare them later, also after a
//! restart. A snapshot that fails (a vanished folder, a full disk) costs the turn its `changes`, never the turn.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use efr_protocol::ids::TurnId;
use efr_protocol::wire::FileChanges;
use efr_protocol::{ErrorBody, ErrorCode};
use tracing::warn;

use crate::snapshot::{Limits, Snapshot, SnapshotStore, compare};
use crate::tools::changes::{Change, DisplayRoots, file_changes, unified_diff};

/// The id of a turn's first snapshot.
#[must_use]
pub fn pre_id(turn_id: TurnId) -> String {
    format!("{turn_id}-pre")
}

/// The id of a turn's last snapshot.
#[must_use]
pub fn post_id(turn_id: TurnId) -> String {
    format!("{turn_id}-post")
}

async fn take(root: PathBuf, previous: Option<Snapshot>) -> Option<Snapshot> {
    let taken = tokio::task::spawn_blocking(move || Snapshot::take(&root, &Limits::default(), previous.as_ref())).await;
    match taken {
        Ok(Ok(snapshot)) => Some(snapshot),
        Ok(Err(error)) => {
            warn!(%error, "a snapshot of the project failed");
            None
        }
        Err(error) => {
            warn!(%error, "a snapshot of the project did not finish");
            None
        }
    }
}

async fn save(store: &Arc<SnapshotStore>, id: String, snapshot: &Snapshot) {
    let store = Arc::clone(store);
    let snapshot = snapshot.clone();
    let saved = tokio::task::spawn_blocking(move || store.save(&id, &snapshot)).await;
    if !matches!(saved, Ok(Ok(()))) {
        warn!("a snapshot of the project could not be saved");
    }
}

/// The snapshots of one turn.
#[derive(Debug)]
pub struct TurnSnapshots {
    store: Arc<SnapshotStore>,
    root: PathBuf,
    turn_id: TurnId,
    pre: Option<Snapshot>,
}

impl TurnSnapshots {
    /// Takes and saves the turn's first snapshot of `root`.
    pub async fn begin(store: Arc<SnapshotStore>, root: PathBuf, turn_id: TurnId) -> Self {
        let pre = take(root.clone(), None).await;
        if let Some(pre) = &pre {
            save(&store, pre_id(turn_id), pre).await;
        }
        Self {
            store,
            root,
            turn_id,
            pre,
        }
    }

    /// Takes and saves the last snapshot; returns what changed since the first, `None` when nothing did (or a
    /// snapshot failed).
    pub async fn end(self) -> Option<FileChanges> {
        let pre = self.pre?;
        let post = take(self.root.clone(), Some(pre.clone())).await?;
        save(&self.store, post_id(self.turn_id), &post).await;
        let compared = compare(&pre, &post).ok()?;
        (!compared.changes.is_empty()).then(|| file_changes(&compared.changes, &roots(&self.root)))
    }
}

fn roots(project: &Path) -> DisplayRoots<'_> {
    DisplayRoots {
        project: Some(project),
        scratch: None,
        home: None,
    }
}

/// What conversation.diff shows of a turn: its changes and, unless `stat`, the unified diff (at most `max_lines`).
///
/// # Errors
/// `not_found` when the turn has no snapshots (it had no project, or it ran before snapshots existed).
pub async fn turn_diff(
    store: &Arc<SnapshotStore>,
    turn_id: TurnId,
    stat: bool,
    max_lines: usize,
) -> Result<(FileChanges, Option<String>), ErrorBody> {
    let store = Arc::clone(store);
    let loaded = tokio::task::spawn_blocking(move || -> Result<(Vec<Change>, PathBuf), String> {
        let pre = store.load(&pre_id(turn_id)).map_err(|e| e.to_string())?;
        let post = store.load(&post_id(turn_id)).map_err(|e| e.to_string())?;
        let compared = compare(&pre, &post).map_err(|e| e.to_string())?;
        Ok((compared.changes, pre.root))
    })
    .await
    .map_err(|e| ErrorBody::internal(format!("the diff did not finish: {e}")))?;
    let (changes, root) =
        loaded.map_err(|e| ErrorBody::new(ErrorCode::NotFound, format!("turn {turn_id} has no snapshots: {e}")))?;
    let display = roots(&root);
    let diff = (!stat).then(|| unified_diff(&changes, &display, max_lines));
    Ok((file_changes(&changes, &display), diff))
}
