//! Running one shell call in the conversation's hidden shell, direct or contained, and recording what it did.
//!
//! A direct call types the model's line into the hidden shell. A contained call (auto mode, and cautious's
//! read-only lines in the read-only sandbox) first asks the shell for
//! its working directory and exported environment (a short `env -0` run), writes the launch plan to a one-time file
//! in the shell's private folder ([`super::contained`]) and types `'<launcher>' --plan-file '<file>'` instead: the
//! launcher runs in the pty like any command, so its output, its input waits, the timeout, detaching and
//! `shell.interrupt` work as for a direct call (docs/adr/0004-contained-calls.md).
//!
//! Events: `tool_call_input_changed` while it runs; `tool_call_completed` with the exit code, `left_running`,
//! `changes` (what changed in the project and `$SCRATCH` while it ran, [`super::call_snapshots::CallSnapshots`]) and, for a contained
//! call, `sandbox` (with `setup_error` when the sandbox could not start: the command did not run, and the probe is
//! run again at the next need); then, for a command left running, `shell_command_detached`, its
//! `shell_command_input_changed` and `shell_command_ended` (with `contained` set for a contained call).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use efr_protocol::events::{CallStatus, EventBody, SandboxUnavailable, ToolCallCompleted, ToolCallInputChanged};
use efr_protocol::ids::{CallId, TurnId};
use efr_protocol::wire::{ApprovedBy, Grant, SandboxSummary};

use super::call_bus;
use super::call_network;
use super::call_snapshots::{BeforeCall, CallRoots};
use super::contained::ContainedEnd;
use super::env::{CallOutput, ToolEnv};
use super::left_running::{LeftRunning, follow_left_running, wire_wait};
use super::shell_prepare::{NotPrepared, Prepared, prepare};
use super::sink::Sink;
use crate::sandbox::git_link;
use crate::tools::shell::{Detached, EndCause, HiddenShell, OutputLimits, Run, RunAnswer};
use efr_patch::changes::Change;

/// What the model is told when the hidden shell itself ended during a call.
const SHELL_ENDED_NOTE: &str = "\n[the hidden shell itself ended during this command; the next call starts a new \
     shell, so variables, functions and the folder set before are gone]";

/// Told to the model after a contained call that failed: what the sandbox allows (ADR 0004).
const SANDBOX_NOTE: &str = "\n[this call ran in efr's sandbox: only the project, $SCRATCH and /tmp are writable, \
     but not the project's .git/config and .git/hooks (`git config` fails with \"Device or resource busy\" or \
     \"Read-only file system\"); credential stores read as empty, and there is no network; each call starts in a \
     fresh shell from the hidden shell's directory, so cd and export do not carry to the next call. A failure may \
     come from these limits]";

/// What [`SANDBOX_NOTE`] says of the network for a call that had a proxy plan.
const PROXIED_NETWORK: &str = "the network reaches only the hosts of the user's [network] allow list, over HTTPS \
     through efr's proxy";

/// Told to the model after a call of cautious's read-only sandbox that failed (docs/adr/0009-cautious-reads-contained.md).
const READ_ONLY_NOTE: &str = "\n[this read-only command ran in efr's read-only sandbox: nothing is writable but a \
     private /tmp, credential stores and efr's files read as empty, there is no network, and git runs none of a \
     repository's hooks, fsmonitor or pager. A failure may come from these limits; a command that \
     needs more runs after the user allows it]";

/// Where a shell call runs, for [`take_shell`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ShellLaunch {
    /// Typed into the hidden shell.
    Direct,
    /// Auto's sandbox.
    Contained,
    /// Cautious's read-only sandbox.
    ReadOnly,
}

/// What a shell call runs: its line, its timeout, and its grants (`Some` for a contained call).
#[derive(Debug, Clone, Copy)]
pub struct ShellRequest<'a> {
    /// The command line as the model wrote it.
    pub command: &'a str,
    /// When its call answers the model and leaves the command running.
    pub timeout: Duration,
    /// `Some` (possibly empty) for a contained call.
    pub grants: Option<&'a [Grant]>,
    /// A contained call in the read-only sandbox (cautious's reads): nothing writable but a private `/tmp`.
    pub read_only: bool,
    /// Who let it run outside the sandbox ([`efr_policy::approved_by`]); `None` when contained.
    pub approved_by: Option<ApprovedBy>,
}

/// Runs a shell call and records its events; returns what the model gets, or `None` when the sink is gone.
/// `cancel` is the turn's interrupt: it stops the running command with SIGINT.
pub async fn run_shell(
    env: &ToolEnv,
    sink: &Sink,
    turn_id: TurnId,
    call_id: &CallId,
    request: ShellRequest<'_>,
    cancel: &tokio_util::sync::CancellationToken,
) -> Option<CallOutput> {
    let executed = execute(env, sink, turn_id, call_id, request, cancel).await?;
    finish(env, sink, turn_id, executed).await
}

/// A shell call that ran (or could not start), its `tool_call_completed` not recorded yet: an auto call that failed
/// may still run again with an exit's grants ([`super::exit_call`]).
pub struct Executed<'a> {
    /// The completion to record.
    pub completed: ToolCallCompleted,
    /// What the model gets.
    pub output: CallOutput,
    /// The command still runs past its timeout.
    detached: Option<Detached>,
    /// A contained call's launch files.
    prepared: Option<Prepared>,
    command: &'a str,
    approved_by: Option<ApprovedBy>,
    /// A contained call's changes, for the surface check once its completion is recorded.
    surface: Option<SurfaceCheck>,
}

/// What the surface check of a contained call reads ([`super::surface::after_call`]).
struct SurfaceCheck {
    /// The project root of the call, if any.
    project: Option<PathBuf>,
    /// Every file the call changed, in every root.
    raw: Vec<Change>,
}

impl std::fmt::Debug for Executed<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executed")
            .field("completed", &self.completed)
            .field("output", &self.output)
            .finish_non_exhaustive()
    }
}

impl Executed<'_> {
    /// The command still runs past its call's timeout.
    #[must_use]
    pub fn left_running(&self) -> bool {
        self.detached.is_some()
    }

    /// Takes over the surface changes of an earlier run of the same call that is not recorded (a run that failed and
    /// runs again with an exit's grants): what that run wrote stays, so the surface check must see it too.
    pub fn carry_surface_of(&mut self, earlier: &mut Executed<'_>) {
        let Some(earlier) = earlier.surface.take() else {
            return;
        };
        match &mut self.surface {
            Some(check) => {
                let seen: std::collections::HashSet<PathBuf> = check.raw.iter().map(|c| c.path.clone()).collect();
                check
                    .raw
                    .extend(earlier.raw.into_iter().filter(|c| !seen.contains(&c.path)));
            }
            None => self.surface = Some(earlier),
        }
    }

    /// The command ran in a sandbox that started, ended (not left running, not interrupted) and failed: a call whose
    /// report may show an exit it needs.
    #[must_use]
    pub fn failed_inside(&self) -> bool {
        self.output.is_error
            && self.detached.is_none()
            && self.completed.exit_code.is_some()
            && self.completed.sandbox.as_ref().is_some_and(|s| s.setup_error.is_none())
    }
}

/// Runs a shell call and records its events up to its completion, which it returns; `None` when the sink is gone.
/// Its phases: launch (the shell, the snapshots before, a contained call's launch files, the line typed), await (the
/// answer, its waits recorded), then close (a contained call's end and plans) and summarize (what the model reads).
pub async fn execute<'a>(
    env: &ToolEnv,
    sink: &Sink,
    turn_id: TurnId,
    call_id: &CallId,
    request: ShellRequest<'a>,
    cancel: &tokio_util::sync::CancellationToken,
) -> Option<Executed<'a>> {
    let launch = match (request.grants.is_some(), request.read_only) {
        (false, _) => ShellLaunch::Direct,
        (true, false) => ShellLaunch::Contained,
        (true, true) => ShellLaunch::ReadOnly,
    };
    let Launched {
        shell,
        before,
        prepared,
        run,
    } = match launch_call(env, sink, turn_id, call_id, request, launch).await? {
        Ok(launched) => launched,
        Err(output) => return Some(Executed::failed(call_id, request, output)),
    };
    let (answer, interrupted) = follow(&shell, run, sink, turn_id, call_id, cancel).await?;
    let (changes, raw_changes) = env.call_snapshots.changes_and_raw(before).await;
    let left_running = answer.left_running();
    let closed = close_contained(env, prepared.as_ref(), left_running, answer.exit_code).await;
    let setup_failed = closed.sandbox.as_ref().is_some_and(|s| s.setup_error.is_some());
    let ok = !setup_failed && !closed.connections_cut && (closed.exit_code == Some(0) || left_running);
    let model_text = summarize(env, &request, prepared.as_ref(), &answer, &closed, interrupted);
    let completed = ToolCallCompleted {
        call_id: call_id.clone(),
        status: if ok { CallStatus::Ok } else { CallStatus::Failed },
        output: answer.output.for_client(),
        exit_code: closed.exit_code,
        refusal: None,
        left_running,
        changes,
        diff: None,
        sandbox: closed.sandbox,
    };
    Some(Executed {
        completed,
        output: CallOutput {
            output: model_text,
            is_error: !ok,
        },
        detached: answer.detached,
        surface: (launch == ShellLaunch::Contained && prepared.is_some()).then(|| SurfaceCheck {
            project: call_roots(env).project,
            raw: raw_changes,
        }),
        prepared,
        command: request.command,
        approved_by: request.approved_by,
    })
}

/// A shell call whose line was typed.
struct Launched {
    shell: HiddenShell,
    before: BeforeCall,
    /// A contained call's launch files.
    prepared: Option<Prepared>,
    run: Run,
}

impl<'a> Executed<'a> {
    /// A call that did not run: `output` says why.
    fn failed(call_id: &CallId, request: ShellRequest<'a>, output: String) -> Self {
        let sandbox = request.grants.is_some().then(SandboxSummary::default);
        Executed {
            completed: failed_completion(call_id, output.clone(), sandbox),
            output: CallOutput { output, is_error: true },
            detached: None,
            prepared: None,
            command: request.command,
            approved_by: request.approved_by,
            surface: None,
        }
    }
}

/// Takes the shell, snapshots the call's roots, prepares a contained call's launch files and types the line. `Err`
/// is why the command did not run (a sandbox that cannot run is recorded as `sandbox_unavailable`); `None` when the
/// sink is gone.
async fn launch_call(
    env: &ToolEnv,
    sink: &Sink,
    turn_id: TurnId,
    call_id: &CallId,
    request: ShellRequest<'_>,
    launch: ShellLaunch,
) -> Option<Result<Launched, String>> {
    let command = request.command;
    let shell = match take_shell(env, launch).await {
        Ok(shell) => shell,
        Err(why) => return Some(Err(format!("the command did not run: {why}"))),
    };
    let before = env.call_snapshots.before(call_roots(env)).await;
    let prepared = match request.grants {
        None => None,
        Some(grants) => match prepare(env, &shell, call_id, command, grants, request.read_only).await {
            Ok(prepared) => Some(prepared),
            Err(NotPrepared::Unavailable(reason)) => {
                let unavailable = EventBody::SandboxUnavailable(SandboxUnavailable {
                    reason: reason.clone(),
                    call_id: Some(call_id.clone()),
                });
                sink.record(turn_id, vec![unavailable]).await.ok()?;
                return Some(Err(format!(
                    "the sandbox cannot run, so the command did not run: {reason}"
                )));
            }
            Err(NotPrepared::Failed(why)) => return Some(Err(format!("the command did not run: {why}"))),
        },
    };
    let line = prepared.as_ref().map_or(command, |p| p.line.as_str());
    let run = match shell.run_as(line, command, request.timeout).await {
        Ok(run) => run,
        Err(error) => {
            if let Some(prepared) = &prepared {
                let _ = std::fs::remove_file(&prepared.plan_file);
                prepared.close_plans(&env.network.proxy, &env.bus.proxy).await;
            }
            return Some(Err(format!("the command did not run: {error}")));
        }
    };
    Some(Ok(Launched {
        shell,
        before,
        prepared,
        run,
    }))
}

/// A call's end as reported: its status, its sandbox summary, notes for the model, and whether a plan had to cut
/// connections.
struct Closed {
    exit_code: Option<i32>,
    sandbox: Option<SandboxSummary>,
    notes: Vec<String>,
    connections_cut: bool,
}

/// A contained call that ended: the launcher's report read (its status replaces the shell's), then its network and
/// bus plans closed and read. A command left running keeps its plans open ([`super::left_running`]).
async fn close_contained(
    env: &ToolEnv,
    prepared: Option<&Prepared>,
    left_running: bool,
    exit_code: Option<i32>,
) -> Closed {
    let mut closed = Closed {
        exit_code,
        sandbox: prepared.map(|_| SandboxSummary::default()),
        notes: Vec::new(),
        connections_cut: false,
    };
    if let Some(prepared) = prepared.filter(|_| !left_running) {
        let _ = std::fs::remove_file(&prepared.plan_file);
        let ended = ContainedEnd::take(&prepared.report);
        if let Some(code) = ended.exit_code {
            closed.exit_code = code;
        }
        closed.notes.extend(ended.note);
        if let Some(message) = ended.setup_error {
            closed.sandbox = Some(SandboxSummary {
                setup_error: Some(message),
                ..SandboxSummary::default()
            });
            // The sandbox may have changed under efrd: the next need probes again (docs/protocol.md, "The
            // contract": `setup_error`).
            env.sandbox.invalidate().await;
        }
    }
    let (Some(prepared), Some(summary)) = (prepared, closed.sandbox.as_mut()) else {
        return closed;
    };
    closed.notes.extend(prepared.network_note.clone());
    if let Some(plan) = &prepared.proxy {
        summary.proxied = true;
        if !left_running {
            match call_network::close(env, plan, summary).await {
                Ok(line) => closed.notes.extend(line),
                Err(line) => {
                    closed.connections_cut = true;
                    closed.notes.push(line);
                }
            }
        }
    }
    closed.notes.extend(prepared.bus_note.clone());
    if let Some(plan) = prepared.bus.as_ref().filter(|_| !left_running) {
        match call_bus::close(env, plan, summary).await {
            Ok(line) => closed.notes.extend(line),
            Err(line) => {
                closed.connections_cut = true;
                closed.notes.push(line);
            }
        }
    }
    closed
}

/// What the model reads of a call: its output, then what efr put back or removed, the notes, and a line each for an
/// interrupt, a failure (with what the sandbox allows), a shell that ended and a command left running.
fn summarize(
    env: &ToolEnv,
    request: &ShellRequest<'_>,
    prepared: Option<&Prepared>,
    answer: &RunAnswer,
    closed: &Closed,
    interrupted: bool,
) -> String {
    let mut model_text = answer.output.for_model(OutputLimits::MODEL);
    if let Some(prepared) = prepared {
        for note in git_link::put_back(&prepared.git_links) {
            model_text.push('\n');
            model_text.push_str(&note);
        }
        for removed in crate::sandbox::protect::remove_planted_commondirs(&env.roots) {
            model_text.push('\n');
            model_text.push_str(&crate::sandbox::protect::removed_commondir_note(&removed));
        }
    }
    for note in &closed.notes {
        model_text.push('\n');
        model_text.push_str(note);
    }
    if interrupted {
        // Otherwise the model sees only what the command printed (often nothing) and may run it again.
        model_text.push_str("\n[the user interrupted the turn: this command got SIGINT]");
    }
    if let Some(code) = closed.exit_code.filter(|c| *c != 0) {
        model_text.push_str(&format!("\n[exit status {code}]"));
        if let Some(prepared) = prepared.filter(|_| !interrupted) {
            // The model should know a failure may be the sandbox's, not the command's own.
            if request.read_only {
                model_text.push_str(READ_ONLY_NOTE);
            } else if prepared.proxy.is_some() {
                model_text.push_str(&SANDBOX_NOTE.replace("there is no network", PROXIED_NETWORK));
            } else {
                model_text.push_str(SANDBOX_NOTE);
            }
        }
    }
    if answer.how == Some(EndCause::ShellExited) {
        // A killed shell (out of memory, a stray `kill`) looks like a failed command otherwise.
        model_text.push_str(SHELL_ENDED_NOTE);
    }
    if answer.moved {
        model_text.push_str(
            "\n[the user moved this command to a background job: it runs on, its output goes to the job's file, \
             and its end tells you; the shell takes commands again]",
        );
    } else if answer.left_running() {
        model_text.push_str(&format!(
            "\n[the command still runs after {} s; the shell takes no other command until it ends]",
            request.timeout.as_secs()
        ));
    }
    model_text
}

/// Records an executed call's completion and, for a command left running, follows it; returns what the model gets,
/// or `None` when the sink is gone.
pub async fn finish(env: &ToolEnv, sink: &Sink, turn_id: TurnId, executed: Executed<'_>) -> Option<CallOutput> {
    let Executed {
        completed,
        output,
        detached,
        prepared,
        command,
        approved_by,
        surface,
    } = executed;
    let call_id = completed.call_id.clone();
    // The completion belongs to the turn; the detached command belongs to the conversation (spec).
    sink.record(turn_id, vec![EventBody::ToolCallCompleted(completed)])
        .await
        .ok()?;
    let mut output = output;
    // What auto's call changed that code outside the sandbox runs from: recorded and held (docs/auto.md).
    if let (Some(check), Some(prepared)) = (surface, &prepared) {
        let shell = prepared.shell.clone();
        let project = check.project.as_deref();
        if let Some(note) = super::surface::after_call(sink, turn_id, &call_id, project, check.raw, shell).await? {
            output.output.push('\n');
            output.output.push_str(&note);
        }
    }
    if let Some(detached) = detached {
        let left = LeftRunning {
            call_id,
            command,
            approved_by,
            prepared,
            roots: env.roots.clone(),
            proxy: Arc::clone(&env.network.proxy),
            bus: Arc::clone(&env.bus.proxy),
        };
        follow_left_running(left, detached, sink).await?;
    }
    Some(output)
}

/// The conversation's hidden shell for a call: an auto contained call never runs in a shell that a direct call has
/// used (see [`ShellSlot`](crate::tools::shell::ShellSlot)). `$SCRATCH` is made for such a call before its first
/// snapshot, so what the call writes there is among its changes.
///
/// A read-only call of cautious keeps the shell as it is: in cautious every direct call was the user's yes, and
/// before the read-only sandbox these reads ran in that same shell, so its state (an export the user allowed) carries
/// over as it did (docs/adr/0009-cautious-reads-contained.md). It has no `$SCRATCH`.
async fn take_shell(env: &ToolEnv, launch: ShellLaunch) -> Result<HiddenShell, String> {
    let shell = {
        let mut slot = env.shell.lock().await;
        let shell = match launch {
            ShellLaunch::Direct => slot.shell_for_direct().await,
            ShellLaunch::Contained => slot.shell_for_contained().await,
            ShellLaunch::ReadOnly => slot.shell().await,
        };
        shell.map_err(|e| e.to_string())?.clone()
    };
    if launch == ShellLaunch::Contained {
        crate::config::ensure_private_dir(&env.scratch)
            .map_err(|e| format!("cannot make $SCRATCH {}: {e}", env.scratch.display()))?;
    }
    Ok(shell)
}

/// Follows a run to its answer: each change of its wait for input is recorded (tool_call_input_changed), and an
/// interrupt of the turn is a Ctrl+C for the command (SIGINT to its process group, once; its answer and status
/// then come as usual). Returns the answer and whether the turn interrupted it; `None` when the sink is gone.
async fn follow(
    shell: &HiddenShell,
    run: Run,
    sink: &Sink,
    turn_id: TurnId,
    call_id: &CallId,
    cancel: &tokio_util::sync::CancellationToken,
) -> Option<(RunAnswer, bool)> {
    let mut waits = run.input();
    let answer = run.answer();
    tokio::pin!(answer);
    let mut interrupted = false;
    let answer = loop {
        tokio::select! {
            answer = &mut answer => break answer,
            () = cancel.cancelled(), if !interrupted => {
                interrupted = true;
                if let Err(error) = shell.interrupt().await {
                    tracing::debug!(%error, "the interrupt of a turn found no command to stop");
                }
            }
            changed = waits.changed() => {
                if changed.is_err() {
                    break answer.await;
                }
                let wait = waits.borrow_and_update().clone();
                let body = EventBody::ToolCallInputChanged(ToolCallInputChanged {
                    call_id: call_id.clone(),
                    input: wire_wait(wait.kind),
                    looks_secret: wait.looks_secret,
                });
                sink.record(turn_id, vec![body]).await.ok()?;
            }
        }
    };
    Some((answer, interrupted))
}

/// The roots whose changes a shell call reports: the project (when the conversation has one) and `$SCRATCH` (when
/// it exists).
fn call_roots(env: &ToolEnv) -> CallRoots {
    CallRoots {
        project: env.snapshots.as_ref().and_then(|_| env.roots.first().cloned()),
        scratch: Some(env.scratch.clone()).filter(|s| s.is_dir()),
        home: env.home.clone(),
    }
}

fn failed_completion(call_id: &CallId, output: String, sandbox: Option<SandboxSummary>) -> ToolCallCompleted {
    ToolCallCompleted {
        call_id: call_id.clone(),
        status: CallStatus::Failed,
        output,
        exit_code: None,
        refusal: None,
        left_running: false,
        changes: None,
        diff: None,
        sandbox,
    }
}
