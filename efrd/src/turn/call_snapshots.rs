//! The snapshots around one shell call: the `changes` of its tool_call_completed.
//!
//! A shell call's own changes (docs/protocol.md, "The contract": "what the agent changed in files", tool_call_completed
//! `changes`: "what changed while a shell call ran in the turn's project, $SCRATCH ..., also a file that another
//! conversation or the user changed then"): [`CallSnapshots`] takes a snapshot of each root just before the call and
//! one when it answers, and compares them. They are kept in memory only. The cost is bounded: each walk reuses the
//! hashes of the last one (unchanged files are not read again) and stops after [`CALL_LIMITS`]' time, so a call on a
//! large tree costs at most two short walks, and a cut walk compares only what both walks reached.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use efr_protocol::wire::FileChanges;

use super::overlap::{Presence, Window};
use super::snapshots::take_within;
use efr_patch::changes::{Change, DisplayRoots, file_changes_marked};
use efr_snapshot::{Limits, Snapshot, compare};

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
/// One per turn ([`crate::turn::env::ToolEnv`]); what it keeps in memory counts against the daemon's
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
        let bytes = snapshot.memory_bytes();
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
