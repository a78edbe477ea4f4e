//! Running an auto call with its exits (docs/auto.md, "Applying a verdict"): the exits of a line or a patch found
//! before the contained call runs ([`line_exits`], [`patch_exits`]), and a contained shell call that failed inside
//! the sandbox ([`run_contained_shell`]): the exits its report shows are judged, and when approved the call runs
//! again as a new launch with exactly the records' grants (or unsandboxed, as the user); the re-run's completion
//! replaces the first run's. When denied, the model gets the first run's output and one line.
//!
//! An unsandboxed run's descendants that still run after it are ended ([`super::survivors`]).

use std::fmt::Write as _;

use efr_protocol::ids::{CallId, TurnId};
use efr_protocol::wire::{ApprovedBy, ExitRecord, Grant};

use super::env::{CallOutput, ToolEnv};
use super::exits::{CallExits, ExitPlace, ExitVerdict, judge, with_grants};
use super::shell_call::{Executed, ShellRequest, execute, finish};
use super::sink::Sink;
use crate::exits::find;
use efr_policy::{LineAnalysis, PatchChange, ShellCall};

/// The exits of a shell line, before its contained call runs.
#[must_use]
pub fn line_exits(env: &ToolEnv, place: &ExitPlace, command: &str, analysis: &LineAnalysis) -> Vec<ExitRecord> {
    let call = ShellCall {
        command: command.to_owned(),
        cwd: env.cwd.clone(),
    };
    place.with(|ctx| find::line_exits(&call, analysis, ctx))
}

/// The exits of a patch, before it applies; `text` is the patch as the model sent it.
#[must_use]
pub fn patch_exits(place: &ExitPlace, changes: &[PatchChange], text: &str) -> Vec<ExitRecord> {
    place.with(|ctx| find::patch_exits(changes, text, ctx))
}

/// Who let an exit's run out of the sandbox (shell_command_detached's `approved_by`).
#[must_use]
pub fn approved_by(by_user: bool) -> ApprovedBy {
    if by_user { ApprovedBy::You } else { ApprovedBy::Reviewer }
}

/// Runs an auto contained shell call whose line's exits (`already`) were judged; see the module docs. Returns what
/// the model gets, or `None` when the sink is gone.
pub async fn run_contained_shell(
    env: &ToolEnv,
    sink: &Sink,
    call: (TurnId, &CallId),
    request: ShellRequest<'_>,
    already: &[ExitRecord],
    cancel: &tokio_util::sync::CancellationToken,
) -> Option<CallOutput> {
    let (turn_id, call_id) = call;
    let mut first = execute(env, sink, turn_id, call_id, request, cancel).await?;
    if !first.failed_inside() || cancel.is_cancelled() {
        return finish(env, sink, turn_id, first).await;
    }
    let summary = first.completed.sandbox.clone().unwrap_or_default();
    let shell_call = ShellCall {
        command: request.command.to_owned(),
        cwd: env.cwd.clone(),
    };
    let place = ExitPlace::of(env);
    let records = place.with(|ctx| find::report_exits(&shell_call, &summary, &first.output.output, already, ctx));
    if records.is_empty() {
        return finish(env, sink, turn_id, first).await;
    }
    let exits = CallExits {
        turn_id,
        call_id,
        summary: &efr_policy::decide::shell_summary(request.command),
        interactive: false,
    };
    match judge(env, sink, exits, records.clone()).await? {
        ExitVerdict::Denied { line } => {
            first.output.output.push('\n');
            first.output.output.push_str(&line);
            finish(env, sink, turn_id, first).await
        }
        ExitVerdict::Run { needs, by_user } => {
            // The first run's completion is never recorded: the re-run's replaces it (its surface changes are
            // carried over below).
            let base = request.grants.unwrap_or_default();
            let grants = with_grants(base, &needs);
            let again = if needs.unsandboxed {
                ShellRequest {
                    grants: None,
                    read_only: false,
                    approved_by: Some(approved_by(by_user)),
                    ..request
                }
            } else {
                ShellRequest {
                    grants: Some(&grants),
                    ..request
                }
            };
            let note = rerun_note(needs.unsandboxed, &needs.grants);
            // A floor file is copied before the re-run writes it, or the re-run does not happen.
            let backed = match super::home_files::before(env, turn_id, &records).await {
                Ok(backed) => backed,
                Err(line) => {
                    first.output.output.push('\n');
                    first.output.output.push_str(&line);
                    return finish(env, sink, turn_id, first).await;
                }
            };
            let mut second = execute(env, sink, turn_id, call_id, again, cancel).await?;
            second.carry_surface_of(&mut first);
            if needs.unsandboxed {
                super::survivors::after_unsandboxed(env, &mut second).await;
            }
            prepend(&mut second, &note);
            let output = finish(env, sink, turn_id, second).await;
            super::home_files::after(sink, turn_id, call_id, backed).await?;
            output
        }
    }
}

/// Puts `note` before the output of `executed`, for the model and the client.
fn prepend(executed: &mut Executed<'_>, note: &str) {
    executed.output.output = format!("{note}\n{}", executed.output.output);
    executed.completed.output = format!("{note}\n{}", executed.completed.output);
}

/// The note of a re-run: that the call ran again, and with what.
#[must_use]
pub fn rerun_note(unsandboxed: bool, grants: &[Grant]) -> String {
    if unsandboxed {
        return "[the command failed in efr's sandbox; its exit was approved, so efr ran it again outside the \
                sandbox, as the user; this is the second run's output]"
            .to_owned();
    }
    let mut words = String::new();
    for (i, grant) in grants.iter().enumerate() {
        if i > 0 {
            words.push_str(", ");
        }
        let _ = write!(words, "{}", grant_words(grant));
    }
    format!(
        "[the command failed in efr's sandbox; its exit was approved, so efr ran it again in the sandbox with the \
         grants {words}; this is the second run's output]"
    )
}

/// A grant in a few words, such as `host github.com` or `write ~/.cache/pip`.
#[must_use]
pub fn grant_words(grant: &Grant) -> String {
    match grant {
        Grant::Write { path } => format!("write {}", path.display()),
        Grant::Host { host, port: None } => format!("host {host}"),
        Grant::Host { host, port: Some(port) } => format!("host {host}:{port}"),
        Grant::OpenNetwork => "open network".to_owned(),
        Grant::Socket { path } => format!("socket {}", path.display()),
        Grant::Bus { bus } | Grant::BusFilter { bus } => format!("bus {bus}"),
        Grant::Device { path } => format!("device {}", path.display()),
        Grant::Unmask { path } => format!("unmask {}", path.display()),
        Grant::Desktop { desktop } => format!("desktop {desktop}"),
        Grant::NetView => "net view".to_owned(),
        Grant::Unknown => "unknown".to_owned(),
    }
}
