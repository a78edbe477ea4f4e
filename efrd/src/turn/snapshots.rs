//! A turn's first and last snapshot of its project: the `changes` of its end event, and what conversation.diff shows
//! (the snapshots around one shell call are [`super::call_snapshots`]'s).
//!
//! The turn takes a snapshot of each root it could write (the project, `$SCRATCH`) before its first call, the first
//! that can write (`<turn_id>-pre`, `<turn_id>-pre-1`, ...), and one when it ends (`<turn_id>-post`, ...), all saved in
//! the snapshot store so that conversation.diff and turn.undo can use them later, also after a restart. With undo on
//! (config `[undo]`) they are covered snapshots (`docs/undo.md`). Each one is recorded as snapshot_taken. A snapshot
//! that fails (a vanished folder, a full disk) costs the turn its `changes` and its undo, never the turn.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use efr_protocol::events::{EventBody, SnapshotPhase, SnapshotTaken};
use efr_protocol::ids::TurnId;
use efr_protocol::wire::{FileChanges, TurnUndoSummary};
use efr_protocol::{ErrorBody, ErrorCode};
use tracing::warn;

use super::overlap::Presence;
use efr_patch::changes::{Change, DisplayRoots, file_changes_marked, unified_diff};
use efr_snapshot::others;
use efr_snapshot::{Limits, Snapshot, SnapshotError, SnapshotStore, compare};

/// The id of a turn's first snapshot of its project.
#[must_use]
pub fn pre_id(turn_id: TurnId) -> String {
    format!("{turn_id}-pre")
}

/// The id of a turn's last snapshot of its project.
#[must_use]
pub fn post_id(turn_id: TurnId) -> String {
    format!("{turn_id}-post")
}

pub use crate::undo::root_id;

/// The bounds of a turn's snapshot: those of `store`'s undo config (covered), else the defaults (changes only).
fn turn_limits(store: &SnapshotStore) -> Limits {
    store.undo_limits().unwrap_or_default()
}

/// A turn's snapshot of `root`, with `previous` (else the store's last one of the root) as its stat cache; kept by
/// the store ([`SnapshotStore::remember`]) and shared, not copied.
async fn take(store: &Arc<SnapshotStore>, root: PathBuf, previous: Option<Arc<Snapshot>>) -> Option<Arc<Snapshot>> {
    let limits = turn_limits(store);
    let previous = previous.or_else(|| store.last_of(&root));
    let snapshot = take_within(root, previous, limits).await?;
    Some(store.remember(snapshot))
}

pub(super) async fn take_within(root: PathBuf, previous: Option<Arc<Snapshot>>, limits: Limits) -> Option<Snapshot> {
    let taken = tokio::task::spawn_blocking(move || Snapshot::take(&root, &limits, previous.as_deref())).await;
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

async fn save(store: &Arc<SnapshotStore>, id: String, snapshot: &Arc<Snapshot>) -> bool {
    let store = Arc::clone(store);
    let snapshot = Arc::clone(snapshot);
    let saved = tokio::task::spawn_blocking(move || store.save(&id, &snapshot)).await;
    let ok = matches!(saved, Ok(Ok(())));
    if !ok {
        warn!("a snapshot of the project could not be saved");
    }
    ok
}

/// A root a turn could write, and how a client shows it.
#[derive(Debug, Clone)]
pub struct TurnRoot {
    /// The absolute folder.
    pub path: PathBuf,
    /// `.` for the project, `$SCRATCH`, or the absolute path.
    pub shown: String,
}

/// What a turn's end records of its snapshots.
#[derive(Debug, Default)]
pub struct Ended {
    /// The project's first snapshot against its last; `None` when nothing changed.
    pub changes: Option<FileChanges>,
    /// What undo of the turn covers; `None` without covered snapshots.
    pub undo: Option<TurnUndoSummary>,
    /// The snapshot_taken events of the last snapshots.
    pub events: Vec<EventBody>,
}

/// The snapshots of one turn: each root's first one before the turn's first call (the first that can write),
/// its last one at the end.
#[derive(Debug)]
pub struct TurnSnapshots {
    store: Arc<SnapshotStore>,
    roots: Vec<TurnRoot>,
    turn_id: TurnId,
    pre: Option<Vec<Option<Arc<Snapshot>>>>,
    presence: Option<Arc<Presence>>,
}

impl TurnSnapshots {
    /// The snapshots of a turn that can write `roots` (the project first); nothing is walked yet.
    #[must_use]
    pub fn new(store: Arc<SnapshotStore>, roots: Vec<TurnRoot>, turn_id: TurnId) -> Self {
        Self {
            store,
            roots,
            turn_id,
            pre: None,
            presence: None,
        }
    }

    /// Marks the project's changes that may be another turn's ([`crate::turn::overlap`]) by what `presence` knows.
    #[must_use]
    pub fn with_presence(mut self, presence: Option<Arc<Presence>>) -> Self {
        self.presence = presence;
        self
    }

    /// Before a call: takes and saves the first snapshot of each root, once per turn; returns their snapshot_taken
    /// events (none after the first call).
    pub async fn before_call(&mut self) -> Vec<EventBody> {
        if self.pre.is_some() {
            return Vec::new();
        }
        let mut pre = Vec::new();
        let mut events = Vec::new();
        for (index, root) in self.roots.iter().enumerate() {
            // A collection never runs between the walk, which writes contents, and the save that names them.
            let _hold = self.store.hold().await;
            let snapshot = take(&self.store, root.path.clone(), None).await;
            if let Some(snapshot) = &snapshot {
                let id = root_id(self.turn_id, SnapshotPhase::Pre, index);
                if save(&self.store, id.clone(), snapshot).await {
                    events.push(taken(root, SnapshotPhase::Pre, id, snapshot));
                }
            }
            pre.push(snapshot);
        }
        self.pre = Some(pre);
        events
    }

    /// Takes and saves the last snapshots; returns what changed in the project since the first, what undo covers,
    /// and the snapshot_taken events. Nothing when the turn ran no call.
    pub async fn end(mut self) -> Ended {
        let Some(pre) = self.pre.take() else {
            return Ended::default();
        };
        let mut ended = Ended::default();
        let mut summary = TurnUndoSummary::default();
        let mut covered = false;
        for (index, (root, pre)) in self.roots.iter().zip(pre).enumerate() {
            let Some(pre) = pre else { continue };
            let _hold = self.store.hold().await;
            let Some(post) = take(&self.store, root.path.clone(), Some(Arc::clone(&pre))).await else {
                continue;
            };
            let id = root_id(self.turn_id, SnapshotPhase::Post, index);
            if save(&self.store, id.clone(), &post).await {
                ended.events.push(taken(root, SnapshotPhase::Post, id, &post));
            }
            if index == 0
                && let Ok(compared) = compare(&pre, &post)
                && !compared.changes.is_empty()
            {
                let others = self.maybe_other(&compared.changes).await;
                let marked = file_changes_marked(&compared.changes, &roots(&root.path), |c| others.contains(&c.path));
                ended.changes = Some(marked);
            }
            if pre.covered && post.covered {
                covered = true;
                crate::undo::summary::add_root(&mut summary, &root.shown, &pre, &post);
            }
        }
        if covered {
            // The floor files that approved exits wrote, copied beside the snapshots (crate::undo::home).
            summary.home_files = crate::undo::home::entries(self.store.dir(), self.turn_id).len() as u64;
            summary.undoable =
                summary.home_files > 0 || summary.roots.iter().any(|root| root.files > 0 || root.refs > 0);
            ended.undo = Some(summary);
        }
        ended
    }
}

impl TurnSnapshots {
    /// The changes of the project that may be another turn's, saved for conversation.diff and undo when there are any.
    async fn maybe_other(&self, changes: &[Change]) -> BTreeSet<PathBuf> {
        let Some(presence) = &self.presence else {
            return BTreeSet::new();
        };
        let others: BTreeSet<PathBuf> = changes
            .iter()
            .filter(|c| presence.maybe_other(&c.path))
            .map(|c| c.path.clone())
            .collect();
        if !others.is_empty() {
            let (dir, turn_id, paths) = (self.store.dir().to_path_buf(), self.turn_id, others.clone());
            let saved = tokio::task::spawn_blocking(move || others::save(&dir, turn_id, &paths)).await;
            if !matches!(saved, Ok(Ok(()))) {
                warn!("which changes may be another turn's could not be saved: conversation.diff will not mark them");
            }
        }
        others
    }
}

fn taken(root: &TurnRoot, phase: SnapshotPhase, commit: String, snapshot: &Snapshot) -> EventBody {
    EventBody::SnapshotTaken(SnapshotTaken {
        root: root.shown.clone(),
        phase,
        commit,
        files: snapshot.files.len() as u64,
        skipped: snapshot.skipped + snapshot.not_covered.len() as u64,
        ms: snapshot.elapsed_ms,
    })
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
/// `not_found` when the turn has no first snapshot (no such turn, a turn without a project, or one from before
/// snapshots existed) or no last one yet (it has not ended); `internal` for a snapshot that cannot be read.
pub async fn turn_diff(
    store: &Arc<SnapshotStore>,
    turn_id: TurnId,
    stat: bool,
    max_lines: usize,
) -> Result<(FileChanges, Option<String>), ErrorBody> {
    let store = Arc::clone(store);
    let loaded = tokio::task::spawn_blocking(
        move || -> Result<(Vec<Change>, PathBuf, BTreeSet<PathBuf>), ErrorBody> {
            let pre = store.load(&pre_id(turn_id)).map_err(|e| match e {
                SnapshotError::NotFound { .. } => ErrorBody::new(
                    ErrorCode::NotFound,
                    format!("no changes are known of turn {turn_id}: no such turn, or it ran without a project"),
                ),
                other => ErrorBody::internal(format!("the first snapshot of turn {turn_id} cannot be read: {other}")),
            })?;
            let post = store.load(&post_id(turn_id)).map_err(|e| match e {
                SnapshotError::NotFound { .. } => ErrorBody::new(
                    ErrorCode::NotFound,
                    format!("turn {turn_id} has not ended: its changes are known when it ends"),
                ),
                other => ErrorBody::internal(format!("the last snapshot of turn {turn_id} cannot be read: {other}")),
            })?;
            let compared = compare(&pre, &post)
                .map_err(|e| ErrorBody::internal(format!("the snapshots of turn {turn_id} do not compare: {e}")))?;
            let others = others::load(store.dir(), turn_id);
            Ok((compared.changes, pre.root, others))
        },
    )
    .await
    .map_err(|e| ErrorBody::internal(format!("the diff did not finish: {e}")))?;
    let (changes, root, others) = loaded?;
    let display = roots(&root);
    let diff = (!stat).then(|| unified_diff(&changes, &display, max_lines));
    Ok((
        file_changes_marked(&changes, &display, |c| others.contains(&c.path)),
        diff,
    ))
}

/// The last snapshot of a turn that a previous efrd left open (restart recovery records its end): taken now, so that
/// conversation.diff shows what the turn changed up to the restart. Nothing when the turn has no first snapshot or
/// already has a last one. A failure costs only the diff, as for a turn that ends normally.
pub async fn close_after_restart(store: &Arc<SnapshotStore>, turn_id: TurnId) {
    let (pre_store, id) = (Arc::clone(store), pre_id(turn_id));
    let Ok(Ok(pre)) = tokio::task::spawn_blocking(move || pre_store.load(&id)).await else {
        return;
    };
    let (post_store, id) = (Arc::clone(store), post_id(turn_id));
    let post = tokio::task::spawn_blocking(move || post_store.load(&id)).await;
    if !matches!(post, Ok(Err(SnapshotError::NotFound { .. }))) {
        return;
    }
    let mut index = 0;
    let mut pre = Some(pre);
    while let Some(first) = pre {
        if let Some(post) = take(store, first.root.clone(), Some(Arc::new(first))).await {
            save(store, root_id(turn_id, SnapshotPhase::Post, index), &post).await;
        }
        index += 1;
        let (next_store, id) = (Arc::clone(store), root_id(turn_id, SnapshotPhase::Pre, index));
        pre = tokio::task::spawn_blocking(move || next_store.load(&id).ok())
            .await
            .ok()
            .flatten();
    }
}
