//! Which turns run at once in one project, so that a turn claims only the changes it can tell are its own.
//!
//! Two turns (of two conversations, or a turn and a job) can run in one project at once. A snapshot sees every change
//! in the project, whoever made it, so each turn's `changes` would list the other's. What efrd can tell:
//! - a patch call writes exactly the files it names: those are the turn's own;
//! - a shell call that ran while no other turn ran in the project made what changed meanwhile (or the user did, as
//!   the spec's caveat says);
//! - a shell call that overlapped another turn cannot be told apart from it (the sandbox gives a call a writable
//!   project, not a log of its writes).
//!
//! So a change is marked `maybe_other` (docs/protocol.md, file_change) when it happened while another turn ran in the
//! same project and no call of the turn is known to have made it: in a shell call's `changes`, every change of a call
//! that overlapped another turn; in a turn's `changes` (and conversation.diff), every change that none of its patch
//! calls or its non-overlapped shell calls made, when the turn overlapped another. undo treats such a change as a
//! conflict (docs/undo.md); the marks of a turn's `changes` are saved beside its snapshots
//! ([`efr_snapshot::others`]).
//!
//! [`ProjectTurns`] is the daemon's one registry, keyed by project root (the nearest git root, so two folders of one
//! repository are one project). A turn enters it for its whole life ([`Presence`], left on drop).

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use efr_protocol::ids::TurnId;

/// The turns that run now, by project root. One per daemon.
#[derive(Debug, Default)]
pub struct ProjectTurns {
    roots: Mutex<HashMap<PathBuf, RootTurns>>,
}

/// The turns of one project root.
#[derive(Debug, Default)]
struct RootTurns {
    /// Each running turn's mark: set once another turn ran beside it.
    present: HashMap<TurnId, Arc<AtomicBool>>,
    /// How many turns ever entered: a window whose count changed saw a turn come (and maybe go).
    entered: u64,
}

/// A moment of a project, to compare with a later one ([`Presence::overlapped_since`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    entered: u64,
    others: bool,
}

impl ProjectTurns {
    /// Enters `turn_id` as running in `root` until the returned presence is dropped. Every turn already running there,
    /// and this one, are marked as overlapped.
    #[must_use]
    pub fn enter(self: &Arc<Self>, root: PathBuf, turn_id: TurnId) -> Presence {
        let mark = Arc::new(AtomicBool::new(false));
        let mut roots = self.lock();
        let turns = roots.entry(root.clone()).or_default();
        if !turns.present.is_empty() {
            mark.store(true, Ordering::Relaxed);
            for other in turns.present.values() {
                other.store(true, Ordering::Relaxed);
            }
        }
        turns.present.insert(turn_id, Arc::clone(&mark));
        turns.entered += 1;
        drop(roots);
        Presence {
            turns: Arc::clone(self),
            root,
            turn_id,
            mark,
            own: Mutex::new(BTreeSet::new()),
        }
    }

    /// How many projects have a running turn (for tests and the soak: entries are removed when their last turn ends).
    #[must_use]
    pub fn projects(&self) -> usize {
        self.lock().len()
    }

    fn window(&self, root: &Path, turn_id: TurnId) -> Window {
        let roots = self.lock();
        roots.get(root).map_or(
            Window {
                entered: 0,
                others: false,
            },
            |turns| Window {
                entered: turns.entered,
                others: turns.present.keys().any(|id| *id != turn_id),
            },
        )
    }

    fn leave(&self, root: &Path, turn_id: TurnId) {
        let mut roots = self.lock();
        if let Some(turns) = roots.get_mut(root) {
            turns.present.remove(&turn_id);
            if turns.present.is_empty() {
                roots.remove(root);
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, RootTurns>> {
        // A panic while holding this lock leaves the map whole (every change is one insert or remove).
        self.roots.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// One turn's place in [`ProjectTurns`], and the files its calls are known to have changed (absolute paths).
#[derive(Debug)]
pub struct Presence {
    turns: Arc<ProjectTurns>,
    root: PathBuf,
    turn_id: TurnId,
    mark: Arc<AtomicBool>,
    own: Mutex<BTreeSet<PathBuf>>,
}

impl Presence {
    /// The project root the turn runs in.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Now, for a call that starts: compare it with [`Presence::overlapped_since`] when the call ends.
    #[must_use]
    pub fn window(&self) -> Window {
        self.turns.window(&self.root, self.turn_id)
    }

    /// Whether another turn ran in the project at some time since `start`: one ran then, runs now, or entered since.
    #[must_use]
    pub fn overlapped_since(&self, start: Window) -> bool {
        let now = self.window();
        start.others || now.others || now.entered != start.entered
    }

    /// Whether another turn ran in the project at some time of this turn's life so far.
    #[must_use]
    pub fn overlapped(&self) -> bool {
        self.mark.load(Ordering::Relaxed)
    }

    /// Records files a call of the turn is known to have changed (a patch's files, a lone shell call's changes).
    pub fn claim(&self, paths: impl IntoIterator<Item = PathBuf>) {
        let mut own = self.own.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        own.extend(paths);
    }

    /// Whether a change of `path` (absolute) may be another turn's: the turn overlapped another and none of its calls
    /// is known to have changed it.
    #[must_use]
    pub fn maybe_other(&self, path: &Path) -> bool {
        self.overlapped()
            && !self
                .own
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .contains(path)
    }
}

impl Drop for Presence {
    fn drop(&mut self) {
        self.turns.leave(&self.root, self.turn_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn() -> TurnId {
        TurnId::new()
    }

    #[test]
    fn a_lone_turn_claims_everything_and_overlaps_nothing() {
        let turns = Arc::new(ProjectTurns::default());
        let alone = turns.enter(PathBuf::from("/p"), turn());
        let start = alone.window();
        assert!(!alone.overlapped_since(start));
        assert!(!alone.overlapped());
        assert!(!alone.maybe_other(Path::new("/p/a")));
        drop(alone);
        assert_eq!(turns.projects(), 0, "the root's entry goes with its last turn");
    }

    #[test]
    fn two_turns_in_one_project_mark_each_other_and_calls_in_between() {
        let turns = Arc::new(ProjectTurns::default());
        let first = turns.enter(PathBuf::from("/p"), turn());
        let before = first.window();
        let second = turns.enter(PathBuf::from("/p"), turn());
        assert!(first.overlapped() && second.overlapped());
        assert!(
            first.overlapped_since(before),
            "a turn that entered during a call overlaps it"
        );
        first.claim([PathBuf::from("/p/mine")]);
        assert!(!first.maybe_other(Path::new("/p/mine")));
        assert!(first.maybe_other(Path::new("/p/theirs")));
        drop(second);
        // A call that starts after the other turn left does not overlap it, though the turn did.
        let after = first.window();
        assert!(!first.overlapped_since(after));
        assert!(first.overlapped());
    }

    #[test]
    fn a_turn_that_came_and_went_within_a_call_is_seen() {
        let turns = Arc::new(ProjectTurns::default());
        let first = turns.enter(PathBuf::from("/p"), turn());
        let start = first.window();
        drop(turns.enter(PathBuf::from("/p"), turn()));
        assert!(first.overlapped_since(start));
    }

    #[test]
    fn turns_in_other_projects_do_not_overlap() {
        let turns = Arc::new(ProjectTurns::default());
        let first = turns.enter(PathBuf::from("/p"), turn());
        let start = first.window();
        let _other = turns.enter(PathBuf::from("/q"), turn());
        assert!(!first.overlapped_since(start));
        assert!(!first.overlapped());
    }
}
