//! The floor files an approved exit writes: copied before the call runs, reported after it (home_file_changed), and
//! covered by the turn's undo ([`crate::undo::home`]; docs/auto.md, "Floor files").
//!
//! A target with `backup_before_write` (a floor file: a shell's startup file, `~/.gitconfig`, a user unit) is
//! copied before the call that writes it. A copy that cannot be made fails closed: the call does not run, since its
//! write could not be undone. The copies go into the turn's snapshot store (beside its project snapshots, so
//! turn.undo finds them); a conversation without a project has no store, and its copies go to
//! `<state root>/home-backups`, kept for the user but not covered by an undo.

use std::path::PathBuf;

use efr_protocol::events::{EventBody, HomeFileChanged};
use efr_protocol::ids::{CallId, TurnId};
use efr_protocol::wire::ExitRecord;

use super::env::ToolEnv;
use super::sink::Sink;
use crate::undo::home::{self, Entry};

/// The copies made before one call.
#[derive(Debug, Default)]
pub struct Backed {
    dir: Option<PathBuf>,
    covered: bool,
    entries: Vec<Entry>,
}

/// Copies each target of `records` with `backup_before_write` before the call runs.
///
/// # Errors
/// A copy that cannot be made: one line for the model (the call must not run).
pub async fn before(env: &ToolEnv, turn_id: TurnId, records: &[ExitRecord]) -> Result<Backed, String> {
    let mut paths: Vec<PathBuf> = records
        .iter()
        .flat_map(|record| &record.targets)
        .filter(|target| target.backup_before_write)
        .map(|target| target.path.clone())
        .collect();
    paths.dedup();
    if paths.is_empty() {
        return Ok(Backed::default());
    }
    let (dir, covered) = match &env.snapshots {
        Some(store) => (store.dir().to_path_buf(), store.undo_limits().is_some()),
        None => match &env.efr_dirs.state {
            Some(state) => (state.join("home-backups"), false),
            None => {
                return Err("efr has no folder for the copy of a file before its write; the call did not run".into());
            }
        },
    };
    let (folder, wanted) = (dir.clone(), paths.clone());
    let copied = tokio::task::spawn_blocking(move || {
        wanted
            .iter()
            .map(|path| home::back_up(&folder, turn_id, path).map_err(|error| format!("{}: {error}", path.display())))
            .collect::<Result<Vec<Entry>, String>>()
    })
    .await
    .map_err(|error| error.to_string())
    .and_then(|copied| copied);
    match copied {
        Ok(entries) => Ok(Backed {
            dir: Some(dir),
            covered,
            entries,
        }),
        Err(error) => Err(format!(
            "efr could not copy the file before its write ({error}), so the write could not be undone; the call did \
             not run"
        )),
    }
}

/// After the call: records home_file_changed for each copied file that changed. `None` when the sink is gone.
pub async fn after(sink: &Sink, turn_id: TurnId, call_id: &CallId, backed: Backed) -> Option<()> {
    let Some(dir) = backed.dir else { return Some(()) };
    let covered = backed.covered;
    let entries = backed.entries;
    let changed = tokio::task::spawn_blocking(move || {
        entries
            .into_iter()
            .filter_map(|entry| match home::after(&dir, turn_id, entry.clone()) {
                Ok(kept) => kept.map(|kept| (kept, true)),
                // The copy after the call failed: the change is reported, not covered.
                Err(_) => Some((entry, false)),
            })
            .collect::<Vec<_>>()
    })
    .await
    .ok()?;
    let events: Vec<EventBody> = changed
        .into_iter()
        .map(|(entry, kept)| {
            EventBody::HomeFileChanged(HomeFileChanged {
                call_id: call_id.clone(),
                covered: covered && kept,
                backup: entry.pre.clone(),
                real: entry.real.clone(),
                path: entry.path,
                floor: true,
            })
        })
        .collect();
    if !events.is_empty() {
        sink.record(turn_id, events).await.ok()?;
    }
    Some(())
}
