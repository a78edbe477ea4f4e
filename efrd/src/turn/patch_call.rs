//! Applying a patch call that was allowed: efrd writes it as the user, only at the paths the policy judged, and
//! records `tool_call_completed` with the file changes and the diff.
//!
//! A contained call's patch (auto mode) applies only where a contained call may write and read: efrd follows the
//! sandbox's rules itself (`sandbox_refusal`), so the patch fails as the same write inside the sandbox would.

use std::path::{Path, PathBuf};

use efr_protocol::events::{CallStatus, EventBody};
use efr_protocol::ids::{CallId, TurnId};
use efr_protocol::wire::{FileChangeKind, FileChanges, Grant};

use super::contained;
use super::env::{CallOutput, ToolEnv, completed};
use super::patch_paths::touched;
use super::sink::Sink;
use efr_patch::changes::{Change, DisplayRoots, IgnoreRules, TOOL_CALL_DIFF_LINES, file_changes, unified_diff};
use efr_patch::{self as patch, Plan};
use efr_policy::PatchChange;

/// Applies an allowed patch and records its completion; `grants` is `Some` for a contained call. Returns what the
/// model gets, or `None` when the sink is gone.
pub async fn apply_patch(
    env: &ToolEnv,
    sink: &Sink,
    turn_id: TurnId,
    call_id: &CallId,
    plan: Plan,
    changes: &[PatchChange],
    grants: Option<&[Grant]>,
) -> Option<CallOutput> {
    if let Some(grants) = grants
        && let Some(why) = sandbox_refusal(env, &plan, changes, grants)
    {
        let output = format!("the patch did not apply, and no file changed: {why}");
        // efrd applies a patch itself, so it has no sandbox summary; it follows the sandbox's rules.
        let event = completed(call_id, CallStatus::Failed, output.clone(), None);
        sink.record(turn_id, vec![event]).await.ok()?;
        return Some(CallOutput { output, is_error: true });
    }
    // Written only where it was judged: a link swapped in since the decision fails the commit.
    let allowed: Vec<PathBuf> = touched(changes).map(Path::to_path_buf).collect();
    let mut written = Vec::new();
    let (event, mut output) = match plan.commit_within(&allowed) {
        Ok(results) => {
            let (changes, diff, raw) = changes_of(results, env);
            written = raw;
            let summary: Vec<String> = changes
                .files
                .iter()
                .map(|f| format!("{} +{} -{}", f.path.display(), f.added, f.removed))
                .collect();
            let output = format!("the patch applied: {}", summary.join(", "));
            let mut event = completed(call_id, CallStatus::Ok, output.clone(), None);
            if let EventBody::ToolCallCompleted(c) = &mut event {
                c.changes = Some(changes);
                c.diff = Some(diff);
            }
            (
                event,
                CallOutput {
                    output,
                    is_error: false,
                },
            )
        }
        Err(error) => {
            let output = format!("the patch did not apply, and no file changed: {error}");
            (
                completed(call_id, CallStatus::Failed, output.clone(), None),
                CallOutput { output, is_error: true },
            )
        }
    };
    sink.record(turn_id, vec![event]).await.ok()?;
    // A contained call's patch can write what code outside the sandbox runs from, as a shell call can
    // (docs/auto.md, "Surface changes"). A patch has no shell: no PATH folder is known, the rest is found.
    if grants.is_some() && !written.is_empty() {
        let project = env.snapshots.as_ref().and_then(|_| env.roots.first().cloned());
        let shell = super::surface::CallShell {
            path_var: None,
            cwd: Some(env.cwd.clone()),
        };
        if let Some(note) =
            super::surface::after_call(sink, turn_id, call_id, project.as_deref(), written, shell).await?
        {
            output.output.push('\n');
            output.output.push_str(&note);
        }
    }
    Some(output)
}

/// The changes and the unified diff of an applied patch, with paths as a client shows them (docs/protocol.md, "The
/// contract": "what the agent changed in files"), and the changes themselves (absolute paths).
fn changes_of(results: Vec<patch::FileResult>, env: &ToolEnv) -> (FileChanges, String, Vec<Change>) {
    let project = env.roots.first().map(PathBuf::as_path);
    let roots = DisplayRoots {
        project,
        scratch: None,
        home: env.home.as_deref(),
    };
    let mut ignore = project.map(IgnoreRules::new);
    let changes: Vec<Change> = results
        .into_iter()
        .map(|result| {
            let ignored = ignore
                .as_mut()
                .is_some_and(|rules| rules.is_ignored(&result.path, false));
            result.into_change(ignored)
        })
        .collect();
    if let Some(presence) = &env.presence {
        // A patch writes exactly these files: they are the turn's own, whoever else runs in the project.
        presence.claim(
            changes
                .iter()
                .flat_map(|c| std::iter::once(c.path.clone()).chain(c.from.clone())),
        );
    }
    (
        file_changes(&changes, &roots),
        unified_diff(&changes, &roots, TOOL_CALL_DIFF_LINES),
        changes,
    )
}

/// Why a contained call's patch may not apply, if it may not: a path it writes (a move's old path too) that a
/// contained call could not write, or a file it reads (an update's, a deletion's or a move's old content, through
/// its links) that a contained call could not read, such as a stored key behind a link in the project: efrd reads
/// and writes as the user, so it keeps the sandbox's rules itself.
fn sandbox_refusal(env: &ToolEnv, plan: &Plan, changes: &[PatchChange], grants: &[Grant]) -> Option<String> {
    let sandbox = contained::mounts_plan(env, grants);
    let unwritable = touched(changes).find(|path| !contained::writable_in(&sandbox, path));
    if let Some(path) = unwritable {
        return Some(format!(
            "{} is not writable in efr's sandbox (a contained call writes only in the project and $SCRATCH)",
            path.display()
        ));
    }
    plan.files()
        .iter()
        .filter_map(|file| match file.kind {
            FileChangeKind::Added => None,
            FileChangeKind::Renamed => file.from.as_ref(),
            _ => Some(&file.path),
        })
        .find_map(|source| {
            let real = efr_policy::paths::resolve(source).unwrap_or_else(|_| source.clone());
            (!contained::readable_in(&sandbox, &real)).then(|| {
                format!(
                    "{} leads to {}, which efr's sandbox hides from a contained call",
                    source.display(),
                    real.display()
                )
            })
        })
}
