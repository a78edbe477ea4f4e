//! A turn's first and last snapshot of its project: the `changes` of its end event, and what conversation.diff shows;
//! and the snapshots around one shell call: the `changes` of its tool_call_completed.
//!
//! The turn takes a snapshot of each root it could write (the project, `$SCRATCH`) before its first call, the first
//! that can write (`<turn_id>-pre`, `<turn_id>-pre-1`, ...), and one when it ends (`<turn_id>-post`, ...), all saved in
//! the snapshot store so that conversation.diff and turn.undo can use them later, also after a restart. With undo on
//! (config `[undo]`) they are covered snapshots (`docs/undo.md`). Each one is recorded as snapshot_taken. A snapshot
//! that fails (a vanished folder, a full disk) costs the turn its `changes` and its undo, never the turn.
//!
//! A shell call's own changes (docs/protocol.md, "The contract": "what the agent changed in files", tool_call_completed
//! `changes`: "what changed while a shell call ran in the turn's project, $SCRATCH ..., also a file that another
//! conversation or the user changed then"): [`CallSnapshots`] takes a snapshot of each root just before the call and
//! one when it answers, and compares them. They are kept in memory only. The cost is bounded: each walk reuses the
//! hashes of the last one (unchanged files are not read again) and stops after [`CALL_LIMITS`]' time, so a call on a
//! large tree costs at most two short walks, and a cut walk compares only what both walks reached.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use efr_protocol::events::{EventBody, SnapshotPhase, SnapshotTaken};
use efr_protocol::ids::TurnId;
use efr_protocol::wire::{FileChanges, TurnUndoSummary};
use efr_protocol::{ErrorBody, ErrorCode};
use tracing::warn;

use super::overlap::{Presence, Window};
use crate::snapshot::others;
use crate::snapshot::{Limits, Snapshot, SnapshotError, SnapshotStore, compare};
use crate::tools::changes::{Change, DisplayRoots, file_changes_marked, unified_diff};

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

async fn take_within(root: PathBuf, previous: Option<Arc<Snapshot>>, limits: Limits) -> Option<Snapshot> {
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
            summary.undoable = summary.roots.iter().any(|root| root.files > 0 || root.refs > 0);
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

/// The bounds of the walks around one shell call: those of a turn's snapshot, with at most 2 s per walk.
pub const CALL_LIMITS: Duration = Duration::from_secs(2);

/// The most bytes of text one root's call walks keep in memory (the old contents that a call's line counts and
/// diff need). A changed file whose old content was not kept is listed with no line counts ("content not kept").
pub const CALL_KEPT_PER_ROOT: u64 = 16 << 20;

/// The most bytes of text the call walks of every running turn keep in memory at once, daemon-wide.
pub const CALL_KEPT_TOTAL: u64 = 64 << 20;

/// The memory the call walks of all turns may keep: a walk gets at most [`CALL_KEPT_PER_ROOT`], and no more than
/// what the others leave of the pool's limit. A walk's budget is fixed when it starts, so two walks that start at
/// once may pass the limit by one root's share; a call holds its root's old and new snapshots until it answers, so
/// the peak is about twice what is counted.
#[derive(Debug)]
pub struct CallTextPool {
    limit: u64,
    held: AtomicU64,
}

impl Default for CallTextPool {
    /// A pool of [`CALL_KEPT_TOTAL`] bytes.
    fn default() -> Self {
        Self::new(CALL_KEPT_TOTAL)
    }
}

impl CallTextPool {
    /// A pool of `limit` bytes.
    #[must_use]
    pub fn new(limit: u64) -> Self {
        Self {
            limit,
            held: AtomicU64::new(0),
        }
    }

    /// The bytes kept now by every turn's call walks.
    #[must_use]
    pub fn held(&self) -> u64 {
        self.held.load(Ordering::Relaxed)
    }

    /// The budget of a walk whose root already holds `own` bytes of the pool.
    fn budget(&self, own: u64) -> u64 {
        let others = self.held().saturating_sub(own);
        CALL_KEPT_PER_ROOT.min(self.limit.saturating_sub(others))
    }

    fn swap(&self, old: u64, new: u64) {
        self.held.fetch_add(new, Ordering::Relaxed);
        self.held.fetch_sub(old, Ordering::Relaxed);
    }
}

/// The roots a shell call's changes are shown against (docs/protocol.md, "The contract": "what the agent changed in
/// files", file_change `path`).
#[derive(Debug, Clone, Default)]
pub struct CallRoots {
    /// The turn's project root; `None` for a conversation without one (its calls get no `changes` there).
    pub project: Option<PathBuf>,
    /// The conversation's `$SCRATCH`, when it exists.
    pub scratch: Option<PathBuf>,
    /// The user's home.
    pub home: Option<PathBuf>,
}

impl CallRoots {
    fn walked(&self) -> Vec<PathBuf> {
        self.project.iter().chain(self.scratch.iter()).cloned().collect()
    }
}

/// The snapshots of a turn's shell calls: the last one of each root, kept so the next walk reads only what changed.
/// One per turn ([`crate::turn::tools::ToolEnv`]); what it keeps in memory counts against the daemon's
/// [`CallTextPool`] until it is dropped.
#[derive(Debug, Default)]
pub struct CallSnapshots {
    pool: Arc<CallTextPool>,
    presence: Option<Arc<Presence>>,
    last: std::sync::Mutex<HashMap<PathBuf, Kept>>,
}

/// A root's last snapshot and the pool bytes its contents hold.
#[derive(Debug)]
struct Kept {
    /// Shared with the call's [`BeforeCall`]: a walk's stat cache costs no copy.
    snapshot: Arc<Snapshot>,
    bytes: u64,
}

/// The snapshots taken before one call ([`CallSnapshots::before`]).
#[derive(Debug)]
pub struct BeforeCall {
    roots: CallRoots,
    snapshots: Vec<Arc<Snapshot>>,
    window: Option<Window>,
}

impl CallSnapshots {
    /// The call snapshots of a turn: memory from `pool`; `presence` marks changes of calls that overlapped another
    /// turn in the project as `maybe_other` ([`crate::turn::overlap`]).
    #[must_use]
    pub fn new(pool: Arc<CallTextPool>, presence: Option<Arc<Presence>>) -> Self {
        Self {
            pool,
            presence,
            last: std::sync::Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Kept>> {
        self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The last snapshot of `root` and the limits of its next walk.
    fn next_walk(&self, root: &Path) -> (Option<Arc<Snapshot>>, Limits) {
        let last = self.lock();
        let kept = last.get(root);
        let limits = Limits {
            max_time: CALL_LIMITS,
            max_kept_bytes: self.pool.budget(kept.map_or(0, |k| k.bytes)),
            ..Limits::default()
        };
        (kept.map(|k| Arc::clone(&k.snapshot)), limits)
    }

    fn keep(&self, snapshot: &Arc<Snapshot>) {
        let bytes: u64 = snapshot.blobs.memory.values().map(|b| b.len() as u64).sum();
        let mut last = self.lock();
        let old = last
            .insert(
                snapshot.root.clone(),
                Kept {
                    snapshot: Arc::clone(snapshot),
                    bytes,
                },
            )
            .map_or(0, |k| k.bytes);
        self.pool.swap(old, bytes);
    }

    async fn walk(&self, root: PathBuf) -> Option<Arc<Snapshot>> {
        let (previous, limits) = self.next_walk(&root);
        let snapshot = Arc::new(take_within(root, previous, limits).await?);
        self.keep(&snapshot);
        Some(snapshot)
    }

    /// Takes a snapshot of the project and of `$SCRATCH` (each that exists) before a call.
    pub async fn before(&self, roots: CallRoots) -> BeforeCall {
        let window = self.presence.as_ref().map(|p| p.window());
        let mut snapshots = Vec::new();
        for root in roots.walked() {
            if let Some(snapshot) = self.walk(root).await {
                snapshots.push(snapshot);
            }
        }
        BeforeCall {
            roots,
            snapshots,
            window,
        }
    }

    /// Takes the snapshots again and returns what changed since [`CallSnapshots::before`]: `None` when nothing did
    /// (or a walk failed). When another turn ran in the project meanwhile, every change is marked `maybe_other`;
    /// otherwise the changes are claimed as the turn's own.
    pub async fn changes(&self, before: BeforeCall) -> Option<FileChanges> {
        self.changes_and_raw(before).await.0
    }

    /// [`CallSnapshots::changes`], and the changes themselves (absolute paths, the old content where the walks
    /// kept it) for the call's surface changes ([`super::surface`]).
    pub async fn changes_and_raw(&self, before: BeforeCall) -> (Option<FileChanges>, Vec<Change>) {
        let mut changes: Vec<Change> = Vec::new();
        for old in &before.snapshots {
            let Some(new) = self.walk(old.root.clone()).await else {
                continue;
            };
            if let Ok(compared) = compare(old, &new) {
                changes.extend(compared.changes);
            }
        }
        if changes.is_empty() {
            return (None, changes);
        }
        let overlapped = match (&self.presence, before.window) {
            (Some(presence), Some(window)) => presence.overlapped_since(window),
            _ => false,
        };
        if let Some(presence) = self.presence.as_ref().filter(|_| !overlapped) {
            presence.claim(
                changes
                    .iter()
                    .flat_map(|c| std::iter::once(c.path.clone()).chain(c.from.clone())),
            );
        }
        let roots = &before.roots;
        let display = DisplayRoots {
            project: roots.project.as_deref(),
            scratch: roots.scratch.as_deref(),
            home: roots.home.as_deref(),
        };
        let shown = file_changes_marked(&changes, &display, |_| overlapped);
        (Some(shown), changes)
    }
}

impl Drop for CallSnapshots {
    fn drop(&mut self) {
        let held: u64 = self.lock().values().map(|k| k.bytes).sum();
        self.pool.swap(held, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_calls_changes_cover_the_project_and_scratch_shown_as_the_spec_says() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project");
        let scratch = dir.path().join("scratch");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir_all(&scratch).unwrap();
        std::fs::write(project.join("kept.txt"), "same\n").unwrap();
        std::fs::write(project.join("edit.txt"), "one\n").unwrap();
        let snapshots = CallSnapshots::default();
        let roots = CallRoots {
            project: Some(project.clone()),
            scratch: Some(scratch.clone()),
            home: Some(dir.path().to_path_buf()),
        };
        let before = snapshots.before(roots.clone()).await;
        std::fs::write(project.join("edit.txt"), "one\ntwo\n").unwrap();
        std::fs::write(project.join("new.txt"), "a\nb\nc\n").unwrap();
        std::fs::write(scratch.join("notes"), "n\n").unwrap();
        let changes = snapshots.changes(before).await.unwrap();
        let files: Vec<(String, u64, u64)> = changes
            .files
            .iter()
            .map(|f| (f.path.display().to_string(), f.added, f.removed))
            .collect();
        assert_eq!(
            files,
            vec![
                ("$SCRATCH/notes".to_owned(), 1, 0),
                ("edit.txt".to_owned(), 1, 0),
                ("new.txt".to_owned(), 3, 0),
            ]
        );
        // The next call starts from here: nothing changed, no changes.
        let before = snapshots.before(roots).await;
        assert_eq!(snapshots.changes(before).await, None);
    }

    #[tokio::test]
    async fn a_call_without_a_project_or_scratch_has_no_changes() {
        let snapshots = CallSnapshots::default();
        let before = snapshots.before(CallRoots::default()).await;
        assert_eq!(snapshots.changes(before).await, None);
        // A root that vanished is skipped, not an error.
        let before = snapshots
            .before(CallRoots {
                project: Some("/nonexistent/efr-project".into()),
                ..CallRoots::default()
            })
            .await;
        assert_eq!(snapshots.changes(before).await, None);
    }

    #[tokio::test]
    async fn the_call_walks_of_all_turns_keep_at_most_the_pools_bytes_and_give_them_back() {
        let dir = tempfile::tempdir().unwrap();
        let (one, two) = (dir.path().join("one"), dir.path().join("two"));
        for project in [&one, &two] {
            std::fs::create_dir_all(project).unwrap();
            for n in 0..8 {
                let text = format!("{n}\n{}", "line\n".repeat(1_999));
                std::fs::write(project.join(format!("f{n}.txt")), text).unwrap();
            }
        }
        // About 10,000 bytes a file: a pool of 50,000 holds five of the sixteen.
        let pool = Arc::new(CallTextPool::new(50_000));
        let roots = |project: &Path| CallRoots {
            project: Some(project.to_path_buf()),
            ..CallRoots::default()
        };
        let first = CallSnapshots::new(Arc::clone(&pool), None);
        let second = CallSnapshots::new(Arc::clone(&pool), None);
        let before_one = first.before(roots(&one)).await;
        let before_two = second.before(roots(&two)).await;
        assert!(pool.held() <= 50_000, "{} bytes held", pool.held());
        assert!(
            pool.held() > 40_000,
            "the first turn takes what it can: {}",
            pool.held()
        );
        // A change to a file whose old content was not kept is still listed, without line counts.
        for project in [&one, &two] {
            for n in 0..8 {
                let text = format!("{n}\n{}", "line\n".repeat(2_000));
                std::fs::write(project.join(format!("f{n}.txt")), text).unwrap();
            }
        }
        let changed = second.changes(before_two).await.unwrap();
        assert_eq!(changed.files.len(), 8);
        assert_eq!(changed.added, 0, "the second turn kept nothing: {changed:?}");
        let changed = first.changes(before_one).await.unwrap();
        assert_eq!(changed.files.len(), 8);
        // Line counts need both contents: the old five were kept, the new walk keeps what the budget holds.
        assert!((1..=5).contains(&changed.added), "{changed:?}");
        assert!(pool.held() <= 50_000);
        drop(first);
        drop(second);
        assert_eq!(pool.held(), 0, "a turn's end gives its bytes back");
    }
}
