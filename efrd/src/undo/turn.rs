//! [`undo_turn`]: turn.undo of one turn, from its saved snapshots: the refusals, the plan of each root, a dry run,
//! the writes with their journal, the refs. [`super::turns`] chooses the turn from the event log; the method handler
//! resolves the conversation and records undo_applied.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use efr_protocol::ids::TurnId;
use efr_protocol::wire::{UndoAction, UndoEntry, UndoReason, UndoRef, UndoRefusal, UndoRefusalKind};

use super::journal::{self, Journal, State};
use super::plan::{Action, Plan, Reason, plan};
use super::refs::move_refs;
use super::root_id;
use super::summary::show;
use super::trash::{self, Trash};
use efr_snapshot::{GitRefs, Limits, Snapshot, SnapshotPhase, SnapshotStore};

/// The plan of the home files the turn's approved exits wrote ([`super::home`]).
type HomePlan = Vec<(super::home::Entry, super::home::Step)>;

/// The plan of one root: its index, the paths, and its refs as the turn left them, as undo leaves them and now.
type RootPlan = (usize, Plan, Option<(GitRefs, GitRefs, GitRefs)>);

/// What an undo may start from: the bounds of a snapshot of the tree now, the turn's (pre, post) snapshots of each
/// root, and its journal.
type Admitted = (Limits, Vec<(Snapshot, Option<Snapshot>)>, Option<journal::Record>);

/// What turn.undo asks of one turn.
#[derive(Debug, Clone, Copy)]
pub struct Ask {
    /// The turn.
    pub turn_id: TurnId,
    /// Change nothing.
    pub dry_run: bool,
    /// Undo conflicts too, their current files moved to the trash.
    pub force: bool,
    /// Re-apply an undone turn.
    pub redo: bool,
}

/// What an undo did (or, for a dry run, would do).
#[derive(Debug, Clone, Default)]
pub struct Done {
    /// The undo's id (absent for a dry run).
    pub undo_id: Option<String>,
    /// The trash folder, when files went there.
    pub trash: Option<PathBuf>,
    /// Files were written.
    pub applied: bool,
    /// A write failed midway.
    pub stopped: bool,
    /// It finished an undo that stopped (or was killed) before.
    pub resumed: bool,
    /// Every entry, path order per root.
    pub entries: Vec<UndoEntry>,
    /// The refs.
    pub refs: Vec<UndoRef>,
    /// Sentences for a person.
    pub notes: Vec<String>,
    /// Counts for undo_applied.
    pub restored: u64,
    /// Paths moved to the trash.
    pub trashed: u64,
    /// Paths deleted.
    pub deleted: u64,
    /// Paths that changed since the turn.
    pub conflicts: u64,
    /// Paths not covered.
    pub not_covered: u64,
}

/// The state of a turn for undo: `(undone, stopped)` from its journal.
#[must_use]
pub fn state_of(store: &SnapshotStore, turn_id: TurnId) -> (bool, bool) {
    match journal::read(&store.dir().join("undo"), &turn_id.to_string()) {
        Some(record) => (record.undone(), record.state != State::Done),
        None => (false, false),
    }
}

/// The saved (pre, post) snapshots of each root of a turn; post is `None` for a turn that has not ended.
fn snapshots_of(store: &SnapshotStore, turn_id: TurnId) -> Vec<(Snapshot, Option<Snapshot>)> {
    let mut found = Vec::new();
    for index in 0.. {
        let Ok(pre) = store.load(&root_id(turn_id, SnapshotPhase::Pre, index)) else {
            break;
        };
        found.push((pre, store.load(&root_id(turn_id, SnapshotPhase::Post, index)).ok()));
    }
    found
}

/// A refusal of `kind`, with no paths.
#[must_use]
pub fn refused(kind: UndoRefusalKind) -> UndoRefusal {
    UndoRefusal {
        kind,
        paths: Vec::new(),
        more: 0,
    }
}

/// The shown name of root `index` (0 the project, then `$SCRATCH`).
fn shown(index: usize, root: &std::path::Path) -> String {
    match index {
        0 => ".".to_owned(),
        1 => "$SCRATCH".to_owned(),
        _ => root.display().to_string(),
    }
}

/// Undoes (or redoes, or plans with `dry_run`) the turn. Blocks: call it from `spawn_blocking`. `running` says
/// whether the turn still runs.
///
/// # Errors
/// The refusal: `off` (undo off, or the turn's snapshots were not covered), `running`, `undone`, `not_undone`,
/// `nothing` (no snapshots, or nothing changed), `conflicts` (without force).
pub fn undo_turn(store: &Arc<SnapshotStore>, ask: Ask, running: bool) -> Result<Done, UndoRefusal> {
    let (limits, pairs, record) = admit(store, ask, running)?;
    let resumed = record.as_ref().is_some_and(|record| record.state != State::Done);
    let mut done = Done {
        resumed: resumed && !ask.dry_run,
        ..Done::default()
    };
    if let Some(record) = record.as_ref().filter(|_| resumed) {
        done.notes.push(format!(
            "the {} of {} started at {} did not finish (efrd stopped, or a write failed); it had done {} paths",
            if record.redo { "redo" } else { "undo" },
            ask.turn_id,
            record.at.to_rfc3339(),
            record.done.len()
        ));
    }
    let plans = plan_roots(store, &limits, pairs, ask, &mut done);
    let home = super::home::plan(store.dir(), ask.turn_id, ask.redo);
    let mut conflicts = conflicts_of(store, &plans, ask.force);
    conflicts.extend(
        home.iter()
            .filter(|(_, step)| *step == super::home::Step::Conflict)
            .map(|(entry, _)| entry.path.display().to_string()),
    );
    done.conflicts = conflicts.len() as u64;
    if !conflicts.is_empty() && !ask.force && !ask.dry_run {
        let more = conflicts.len().saturating_sub(50) as u64;
        conflicts.truncate(50);
        return Err(UndoRefusal {
            kind: UndoRefusalKind::Conflicts,
            paths: conflicts,
            more,
        });
    }
    if !writes(store, &plans, ask.force)
        && home.iter().all(|(_, step)| *step == super::home::Step::Skip)
        && !resumed
        && plans.iter().all(|(_, root_plan, _)| root_plan.entries.is_empty())
    {
        return Err(refused(UndoRefusalKind::Nothing));
    }
    if ask.dry_run {
        dry_run(store, &plans, ask.force, &mut done);
        done.entries
            .extend(home.iter().map(|(entry, step)| home_entry(entry, *step, false)));
    } else {
        write(store, &plans, ask, &mut done);
        write_home(store, &home, ask, &mut done);
    }
    count(&mut done);
    Ok(done)
}

/// The refusals before any plan: running, off, nothing, or undone already (not undone, for a redo). Else the
/// undo's limits, the turn's snapshots and its journal.
fn admit(store: &SnapshotStore, ask: Ask, running: bool) -> Result<Admitted, UndoRefusal> {
    if running {
        return Err(refused(UndoRefusalKind::Running));
    }
    let Some(limits) = store.undo_limits() else {
        return Err(refused(UndoRefusalKind::Off));
    };
    let pairs = snapshots_of(store, ask.turn_id);
    if pairs.is_empty() {
        return Err(refused(UndoRefusalKind::Nothing));
    }
    if pairs
        .iter()
        .any(|(pre, post)| !pre.covered || post.as_ref().is_some_and(|post| !post.covered))
    {
        return Err(refused(UndoRefusalKind::Off));
    }
    if pairs.iter().any(|(_, post)| post.is_none()) {
        return Err(refused(UndoRefusalKind::Running));
    }
    let record = journal::read(&store.dir().join("undo"), &ask.turn_id.to_string());
    let resumed = record.as_ref().is_some_and(|record| record.state != State::Done);
    let undone = record.as_ref().is_some_and(journal::Record::undone);
    if !resumed && !ask.redo && undone {
        return Err(refused(UndoRefusalKind::Undone));
    }
    if !resumed && ask.redo && !undone {
        return Err(refused(UndoRefusalKind::NotUndone));
    }
    Ok((limits, pairs, record))
}

/// The plan of each root against the tree as it is now; a root gone, or changed while another turn ran, is noted.
fn plan_roots(
    store: &SnapshotStore,
    limits: &Limits,
    pairs: Vec<(Snapshot, Option<Snapshot>)>,
    ask: Ask,
    done: &mut Done,
) -> Vec<RootPlan> {
    let maybe_other = efr_snapshot::others::load(store.dir(), ask.turn_id);
    let mut plans: Vec<RootPlan> = Vec::new();
    for (index, (pre, post)) in pairs.into_iter().enumerate() {
        let Some(post) = post else { continue };
        let (from, to) = if ask.redo { (pre, post) } else { (post, pre) };
        let previous = store.last_of(&from.root);
        let Ok(current) = Snapshot::take(&from.root, limits, previous.as_deref()) else {
            done.notes
                .push(format!("{} is gone: nothing there was undone", from.root.display()));
            continue;
        };
        let current = store.remember(current);
        let others = relative_to(&from.root, &maybe_other);
        if !others.is_empty() {
            done.notes.push(format!(
                "{} changed while another turn ran in the project: those changes may be the other turn's, so they \
                 are conflicts (force moves what is there now to the trash)",
                plural(others.len(), "path")
            ));
        }
        let root_plan = plan(&from, &to, &current, store.blobs(), ask.force, &others);
        let refs = match (from.refs.clone(), to.refs.clone(), current.refs.clone()) {
            (Some(a), Some(b), Some(c)) => Some((a, b, c)),
            _ => None,
        };
        plans.push((index, root_plan, refs));
    }
    plans
}

/// The conflicts of every root, paths and refs, as shown.
fn conflicts_of(store: &SnapshotStore, plans: &[RootPlan], force: bool) -> Vec<String> {
    let mut conflicts: Vec<String> = Vec::new();
    for (index, root_plan, refs) in plans {
        let name = shown(*index, &root_plan.root);
        conflicts.extend(root_plan.conflicts.iter().map(|path| show(&name, path)));
        if let Some((from, to, current)) = refs {
            let moves = move_refs(&root_plan.root, &store.blobs(), from, to, current, force, false);
            conflicts.extend(
                moves
                    .iter()
                    .filter(|one| one.conflict)
                    .map(|one| format!("{name}: {}", one.name)),
            );
        }
    }
    conflicts
}

/// Whether the plans write a path or move a ref.
fn writes(store: &SnapshotStore, plans: &[RootPlan], force: bool) -> bool {
    plans.iter().any(|(_, root_plan, refs)| {
        root_plan.writes()
            || refs.as_ref().is_some_and(|(from, to, current)| {
                move_refs(&root_plan.root, &store.blobs(), from, to, current, force, false)
                    .iter()
                    .any(|one| one.to != current_value(current, &one.name))
            })
    })
}

/// A dry run: the entries and ref moves the plans would make.
fn dry_run(store: &SnapshotStore, plans: &[RootPlan], force: bool, done: &mut Done) {
    for (index, root_plan, refs) in plans {
        let name = shown(*index, &root_plan.root);
        done.entries.extend(
            root_plan
                .entries
                .iter()
                .map(|entry| wire_entry(&name, entry.action, &entry.path, entry.reason)),
        );
        if let Some((from, to, current)) = refs {
            let moves = move_refs(&root_plan.root, &store.blobs(), from, to, current, force, false);
            done.refs.extend(moves.into_iter().map(|one| wire_ref(&name, one)));
        }
    }
}

/// The writes: each root's plan applied with the journal (after a failed write, the rest is reported not done),
/// then its refs moved; the trash bounded and noted.
fn write(store: &SnapshotStore, plans: &[RootPlan], ask: Ask, done: &mut Done) {
    // A random id (the uuid of a fresh id of the protocol crate: v4).
    let undo_id = format!("undo-{}", efr_protocol::ids::CommandId::new().0.simple());
    let trash_dir = store.trash_dir();
    let Ok(mut journal) = Journal::begin(&store.dir().join("undo"), &ask.turn_id.to_string(), &undo_id, ask.redo)
    else {
        done.notes
            .push("the undo journal cannot be written: nothing was changed".to_owned());
        done.stopped = true;
        return;
    };
    for (index, root_plan, refs) in plans {
        let name = shown(*index, &root_plan.root);
        if done.stopped {
            done.entries.extend(root_plan.entries.iter().map(|entry| {
                let reason = matches!(entry.action, Action::Restore | Action::Delete | Action::Trash)
                    .then_some(Reason::NotDone)
                    .or(entry.reason);
                wire_entry(&name, entry.action, &entry.path, reason)
            }));
            continue;
        }
        let trash = Trash::new(&trash_dir, &undo_id, *index);
        let applied = super::apply(root_plan, &trash, &mut journal);
        if applied.trashed > 0 && done.trash.is_none() {
            done.trash = Some(trash.folder());
        }
        done.restored += applied.restored;
        done.trashed += applied.trashed;
        done.deleted += applied.deleted;
        done.stopped |= applied.stopped;
        done.entries.extend(
            applied
                .entries
                .iter()
                .map(|entry| wire_entry(&name, entry.action, &entry.path, entry.reason)),
        );
        if let (Some((from, to, current)), false) = (refs, applied.stopped) {
            let moves = move_refs(&root_plan.root, &store.blobs(), from, to, current, ask.force, true);
            done.refs.extend(moves.into_iter().map(|one| wire_ref(&name, one)));
        }
    }
    let state = if done.stopped { State::Stopped } else { State::Done };
    if journal.finish(state).is_err() {
        done.notes.push("the undo journal could not be closed".to_owned());
    }
    if let Some(folder) = done.trash.clone() {
        // The trash is bounded when it is written: the oldest undos' files go (never this undo's).
        trash::expire(&trash_dir, store.trash_bounds(), Some(&undo_id));
        done.notes.push(format!(
            "{} changed since the turn: {} in efr's trash, {}",
            if done.trashed == 1 { "a file" } else { "files" },
            if done.trashed == 1 {
                "its version is"
            } else {
                "their versions are"
            },
            folder.display()
        ));
    }
    done.undo_id = Some(undo_id);
    done.applied = done.restored + done.deleted + done.trashed > 0 || done.refs.iter().any(|one| one.applied);
}

/// Writes the home files' plan after the roots' (each write atomic; a failure is `failed`, the rest still tried).
fn write_home(store: &SnapshotStore, home: &HomePlan, ask: Ask, done: &mut Done) {
    if home.is_empty() {
        return;
    }
    let undo_id = done.undo_id.clone().unwrap_or_else(|| "undo".to_owned());
    let trash = Trash::new(&store.trash_dir(), &undo_id, HOME_TRASH_INDEX);
    for (entry, step) in home {
        let applied = super::home::apply(entry, *step, ask.redo, &trash);
        if applied.is_err() {
            done.stopped = true;
        } else if *step == super::home::Step::Conflict {
            done.trashed += 1;
            done.trash.get_or_insert_with(|| trash.folder());
        }
        let wrote = applied.is_ok() && *step != super::home::Step::Skip;
        if wrote {
            let to = if ask.redo { &entry.post } else { &entry.pre };
            if to.is_some() {
                done.restored += 1;
            } else {
                done.deleted += 1;
            }
            done.applied = true;
        }
        let mut shown = home_entry(entry, *step, ask.redo);
        if applied.is_err() {
            shown.reason = Some(UndoReason::Failed);
        }
        done.entries.push(shown);
    }
}

/// The trash folder number of the home files (the roots' are their index).
const HOME_TRASH_INDEX: usize = 1000;

/// The entry of one home file.
fn home_entry(entry: &super::home::Entry, step: super::home::Step, redo: bool) -> UndoEntry {
    let to = if redo { &entry.post } else { &entry.pre };
    let (action, reason) = match step {
        super::home::Step::Skip => (UndoAction::Skip, Some(UndoReason::Done)),
        super::home::Step::Conflict => (UndoAction::Trash, Some(UndoReason::Conflict)),
        super::home::Step::Write if to.is_some() => (UndoAction::Restore, None),
        super::home::Step::Write => (UndoAction::Delete, None),
    };
    UndoEntry {
        action,
        path: entry.path.display().to_string(),
        reason,
    }
}

fn current_value(current: &GitRefs, name: &str) -> Option<String> {
    match name {
        "HEAD" => Some(current.head.clone()),
        "index" => current.index.clone(),
        _ => current.refs.get(name).cloned(),
    }
}

fn count(done: &mut Done) {
    done.not_covered = done
        .entries
        .iter()
        .filter(|entry| entry.action == UndoAction::NotCovered)
        .count() as u64;
}

fn wire_entry(root: &str, action: Action, path: &str, reason: Option<Reason>) -> UndoEntry {
    UndoEntry {
        action: match action {
            Action::Restore => UndoAction::Restore,
            Action::Trash => UndoAction::Trash,
            Action::Delete => UndoAction::Delete,
            Action::Skip => UndoAction::Skip,
            Action::NotCovered => UndoAction::NotCovered,
        },
        path: show(root, path),
        reason: reason.map(wire_reason),
    }
}

fn wire_reason(reason: Reason) -> UndoReason {
    match reason {
        Reason::Done => UndoReason::Done,
        Reason::Conflict => UndoReason::Conflict,
        Reason::Size => UndoReason::Size,
        Reason::BuildOutput => UndoReason::BuildOutput,
        Reason::Bytes => UndoReason::Bytes,
        Reason::Unreadable => UndoReason::Unreadable,
        Reason::Truncated => UndoReason::Truncated,
        Reason::NotDone => UndoReason::NotDone,
        Reason::Failed => UndoReason::Failed,
    }
}

fn wire_ref(root: &str, one: super::refs::RefMove) -> UndoRef {
    UndoRef {
        root: root.to_owned(),
        name: one.name,
        from: one.from,
        to: one.to,
        applied: one.applied,
        reason: one.conflict.then_some(UndoReason::Conflict),
    }
}

/// The paths of `paths` (absolute) under `root`, relative to it and `/`-separated, as a snapshot names them.
fn relative_to(root: &std::path::Path, paths: &BTreeSet<PathBuf>) -> BTreeSet<String> {
    paths
        .iter()
        .filter_map(|path| path.strip_prefix(root).ok())
        .filter_map(|rest| rest.to_str())
        .map(str::to_owned)
        .collect()
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}
