//! Undo of a whole turn from its covered snapshots (`docs/undo.md`, `docs/adr/0014-undo.md`).
//!
//! A turn's pre and post snapshots (taken with [`efr_snapshot::Cover`]) hold every covered file's bytes, mode and
//! symlink target. Undo moves each path the turn changed from its post state back to its pre state; redo is the same
//! move the other way. [`plan()`] compares the two snapshots with a snapshot of the tree as it is now:
//!
//! - a path as it is in the target state already: `skip` (done);
//! - a path as the turn left it: `restore` (write the target bytes and mode, or recreate a deleted file) or `delete`
//!   (a file the turn added);
//! - a path changed since (by the user or another turn): a conflict. The plan refuses it unless `force`; with force
//!   the current file goes to efr's trash first (`trash`), never away;
//! - a path whose bytes a bound left out on either side: `not_covered`, left as it is.
//!
//! [`apply()`] writes the plan path by path, each write atomic (a temporary file renamed into place), and journals
//! each path done ([`journal`]), so an undo killed midway is reported after a restart and a second undo, planned
//! afresh against the tree, finishes it: what was done is now `skip` (done).

pub mod apply;
pub mod collect;
pub mod home;
pub mod journal;
pub mod plan;
pub mod refs;
pub mod summary;
pub mod trash;
pub mod turn;
pub mod turns;

#[cfg(test)]
mod tests;

pub use apply::{Applied, apply};
pub use plan::{Action, Entry, Plan, Reason, plan};

use efr_protocol::events::SnapshotPhase;
use efr_protocol::ids::TurnId;

/// The id of a turn's snapshot of its root number `index` in the snapshot store (0: the project, `<turn_id>-pre` and
/// `<turn_id>-post`, the ids conversation.diff reads; then `$SCRATCH` and the approved write targets,
/// `<turn_id>-pre-<index>`).
#[must_use]
pub fn root_id(turn_id: TurnId, phase: SnapshotPhase, index: usize) -> String {
    let phase = if phase == SnapshotPhase::Post { "post" } else { "pre" };
    if index == 0 {
        format!("{turn_id}-{phase}")
    } else {
        format!("{turn_id}-{phase}-{index}")
    }
}
