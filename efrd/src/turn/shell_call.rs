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

use efr_protocol::events::{
    CallStatus, EventBody, SandboxUnavailable, ShellCommandDetached, ShellCommandEnded, ShellCommandInputChanged,
    ToolCallCompleted, ToolCallInputChanged,
};
use efr_protocol::ids::{CallId, Timestamp, TurnId};
use efr_protocol::wire::{ApprovedBy, Grant, InputWait as WireInputWait, SandboxSummary};

use super::call_bus;
use super::call_network;
use super::call_snapshots::CallRoots;
use super::contained::Outcome;
use super::env::{CallOutput, ToolEnv};
use super::shell_prepare::{NotPrepared, Prepared, prepare};
use super::sink::Sink;
use crate::bus::BusSupervisor;
use crate::network::ProxySupervisor;
use crate::sandbox::git_link;
use crate::tools::shell::{Detached, EndCause, HiddenShell, InputKind, OutputLimits, Run, RunAnswer};
use efr_patch::changes::Change;

/// What the model is told when the hidden shell itself ended during a call.
const SHELL_ENDED_NOTE: &str = "\n[the hidden shell itself ended during this command; the next call starts a new \
     shell, so variables, functions and the folder set before are gone]";

/// The wire form of a wait's kind.
fn wire_wait(kind: InputKind) -> WireInputWait {
    match kind {
        InputKind::None => WireInputWait::None,
        InputKind::Visible => WireInputWait::Visible,
        InputKind::Hidden => WireInputWait::Hidden,
    }
}

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
pub async fn execute<'a>(
    env: &ToolEnv,
    sink: &Sink,
    turn_id: TurnId,
    call_id: &CallId,
    request: ShellRequest<'a>,
    cancel: &tokio_util::sync::CancellationToken,
) -> Option<Executed<'a>> {
    let ShellRequest {
        command,
        timeout,
        grants,
        read_only,
        approved_by,
    } = request;
    let failed = |output: String| Executed {
        completed: failed_completion(call_id, output.clone(), grants.is_some().then(SandboxSummary::default)),
        output: CallOutput { output, is_error: true },
        detached: None,
        prepared: None,
        command,
        approved_by,
        surface: None,
    };
    let launch = match (grants.is_some(), read_only) {
        (false, _) => ShellLaunch::Direct,
        (true, false) => ShellLaunch::Contained,
        (true, true) => ShellLaunch::ReadOnly,
    };
    let shell = match take_shell(env, launch).await {
        Ok(shell) => shell,
        Err(why) => return Some(failed(format!("the command did not run: {why}"))),
    };
    let before = env.call_snapshots.before(call_roots(env)).await;
    let prepared = match grants {
        None => None,
        Some(grants) => match prepare(env, &shell, call_id, command, grants, read_only).await {
            Ok(prepared) => Some(prepared),
            Err(NotPrepared::Unavailable(reason)) => {
                let unavailable = EventBody::SandboxUnavailable(SandboxUnavailable {
                    reason: reason.clone(),
                    call_id: Some(call_id.clone()),
                });
                sink.record(turn_id, vec![unavailable]).await.ok()?;
                return Some(failed(format!(
                    "the sandbox cannot run, so the command did not run: {reason}"
                )));
            }
            Err(NotPrepared::Failed(why)) => return Some(failed(format!("the command did not run: {why}"))),
        },
    };
    let line = prepared.as_ref().map_or(command, |p| p.line.as_str());
    let run = match shell.run_as(line, command, timeout).await {
        Ok(run) => run,
        Err(error) => {
            if let Some(prepared) = &prepared {
                let _ = std::fs::remove_file(&prepared.plan_file);
                prepared.close_plans(&env.network.proxy, &env.bus.proxy).await;
            }
            return Some(failed(format!("the command did not run: {error}")));
        }
    };
    let (answer, interrupted) = follow(&shell, run, sink, turn_id, call_id, cancel).await?;
    let (changes, raw_changes) = env.call_snapshots.changes_and_raw(before).await;
    let left_running = answer.left_running();
    let mut exit_code = answer.exit_code;
    let mut sandbox = prepared.as_ref().map(|_| SandboxSummary::default());
    let mut notes = Vec::new();
    if let Some(prepared) = prepared.as_ref().filter(|_| !left_running) {
        let _ = std::fs::remove_file(&prepared.plan_file);
        let ended = ContainedEnd::take(&prepared.report);
        if let Some(code) = ended.exit_code {
            exit_code = code;
        }
        notes.extend(ended.note);
        if let Some(message) = ended.setup_error {
            sandbox = Some(SandboxSummary {
                setup_error: Some(message),
                ..SandboxSummary::default()
            });
            // The sandbox may have changed under efrd: the next need probes again (docs/protocol.md, "The
            // contract": `setup_error`).
            env.sandbox.invalidate().await;
        }
    }
    let mut connections_cut = false;
    if let (Some(prepared), Some(summary)) = (prepared.as_ref(), sandbox.as_mut()) {
        notes.extend(prepared.network_note.clone());
        if let Some(plan) = &prepared.proxy {
            summary.proxied = true;
            if !left_running {
                match call_network::close(env, plan, summary).await {
                    Ok(line) => notes.extend(line),
                    Err(line) => {
                        connections_cut = true;
                        notes.push(line);
                    }
                }
            }
        }
        notes.extend(prepared.bus_note.clone());
        if let Some(plan) = prepared.bus.as_ref().filter(|_| !left_running) {
            match call_bus::close(env, plan, summary).await {
                Ok(line) => notes.extend(line),
                Err(line) => {
                    connections_cut = true;
                    notes.push(line);
                }
            }
        }
    }
    let setup_failed = sandbox.as_ref().is_some_and(|s| s.setup_error.is_some());
    let ok = !setup_failed && !connections_cut && (exit_code == Some(0) || left_running);
    let mut model_text = answer.output.for_model(OutputLimits::MODEL);
    if let Some(prepared) = &prepared {
        for note in git_link::put_back(&prepared.git_links) {
            model_text.push('\n');
            model_text.push_str(&note);
        }
        for removed in crate::sandbox::protect::remove_planted_commondirs(&env.roots) {
            model_text.push_str(&format!(
                "\n[efr removed {}: in a main .git folder it would point git outside the sandbox at other \
                 configuration]",
                removed.display()
            ));
        }
    }
    for note in notes {
        model_text.push('\n');
        model_text.push_str(&note);
    }
    if interrupted {
        // Otherwise the model sees only what the command printed (often nothing) and may run it again.
        model_text.push_str("\n[the user interrupted the turn: this command got SIGINT]");
    }
    if let Some(code) = exit_code.filter(|c| *c != 0) {
        model_text.push_str(&format!("\n[exit status {code}]"));
        if prepared.is_some() && !interrupted {
            // The model should know a failure may be the sandbox's, not the command's own.
            let proxied = prepared.as_ref().is_some_and(|p| p.proxy.is_some());
            if read_only {
                model_text.push_str(READ_ONLY_NOTE);
            } else if proxied {
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
    if left_running {
        model_text.push_str(&format!(
            "\n[the command still runs after {} s; the shell takes no other command until it ends]",
            timeout.as_secs()
        ));
    }
    let completed = ToolCallCompleted {
        call_id: call_id.clone(),
        status: if ok { CallStatus::Ok } else { CallStatus::Failed },
        output: answer.output.for_client(),
        exit_code,
        refusal: None,
        left_running,
        changes,
        diff: None,
        sandbox,
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
        command,
        approved_by,
    })
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

/// How a contained call ended, from the launcher's report.
#[derive(Debug, Default)]
struct ContainedEnd {
    /// The status to report instead of the shell's (`Some(None)`: none, the command did not run); `None` keeps the
    /// shell's.
    exit_code: Option<Option<i32>>,
    /// A line for the model.
    note: Option<String>,
    /// The sandbox could not start: its message.
    setup_error: Option<String>,
}

impl ContainedEnd {
    /// Reads (and removes) the launcher's report.
    fn take(report: &std::path::Path) -> Self {
        match Outcome::take(report) {
            Outcome::Exited { exit_code, exec_error } => Self {
                exit_code: Some(Some(exit_code)),
                note: exec_error.map(|e| format!("[the program could not start: {e}]")),
                setup_error: None,
            },
            // The command did not run: its status is the launcher's, not the command's.
            Outcome::SetupError { message } => Self {
                exit_code: Some(None),
                note: Some(format!(
                    "[efr's sandbox could not start, so the command did not run: {message}]"
                )),
                setup_error: Some(message),
            },
            Outcome::NoEnd => Self::default(),
        }
    }
}

/// A command left running past its call's timeout: what its events name.
struct LeftRunning<'a> {
    call_id: CallId,
    command: &'a str,
    approved_by: Option<ApprovedBy>,
    /// The contained call's launch files (`None` for a direct call).
    prepared: Option<Prepared>,
    roots: Vec<PathBuf>,
    /// Closes the command's proxy plan when it ends.
    proxy: Arc<ProxySupervisor>,
    /// Closes the command's bus plan when it ends.
    bus: Arc<BusSupervisor>,
}

/// Records `shell_command_detached` for a command left running, then follows it in a task of its own until it
/// ends: each change of its wait (`shell_command_input_changed`), then `shell_command_ended`. These events belong to
/// the conversation, not the turn. `None` when the sink is gone.
async fn follow_left_running(left: LeftRunning<'_>, detached: Detached, sink: &Sink) -> Option<()> {
    let LeftRunning {
        call_id,
        command,
        approved_by,
        prepared,
        roots,
        proxy,
        bus,
    } = left;
    let contained = prepared.is_some();
    let mut waits = detached.input();
    let wait = waits.borrow_and_update().clone();
    let body = EventBody::ShellCommandDetached(ShellCommandDetached {
        call_id: call_id.clone(),
        command: command.chars().take(200).collect(),
        since: Timestamp::now(),
        contained,
        input: wire_wait(wait.kind),
        looks_secret: wait.looks_secret,
        prompt: wait.prompt,
        approved_by,
    });
    // Recorded before its end can be: shell_command_ended always comes after shell_command_detached.
    sink.record_outside_turn(vec![body]).await.ok()?;
    let sink = Arc::clone(sink);
    tokio::spawn(async move {
        let end = detached.ended();
        tokio::pin!(end);
        let end = loop {
            tokio::select! {
                end = &mut end => break end,
                changed = waits.changed() => {
                    if changed.is_err() {
                        break end.await;
                    }
                    let wait = waits.borrow_and_update().clone();
                    let body = EventBody::ShellCommandInputChanged(ShellCommandInputChanged {
                        call_id: call_id.clone(),
                        input: wire_wait(wait.kind),
                        contained,
                        looks_secret: wait.looks_secret,
                        prompt: wait.prompt,
                    });
                    let _ = sink.record_outside_turn(vec![body]).await;
                }
            }
        };
        let mut exit_code = end.exit_code;
        if let Some(prepared) = prepared {
            crate::sandbox::protect::remove_planted_commondirs(&roots);
            git_link::put_back(&prepared.git_links);
            let _ = std::fs::remove_file(&prepared.plan_file);
            // Its refusals have no event to go to any more (tool_call_completed is recorded): the plans are closed
            // so that their sockets and tunnels go.
            prepared.close_plans(&proxy, &bus).await;
            if let Some(code) = ContainedEnd::take(&prepared.report).exit_code {
                exit_code = code;
            }
        }
        let ended = EventBody::ShellCommandEnded(ShellCommandEnded {
            call_id,
            how: wire_how(end.how),
            exit_code,
        });
        let _ = sink.record_outside_turn(vec![ended]).await;
    });
    Some(())
}

/// The wire form of how a command ended.
fn wire_how(cause: EndCause) -> efr_protocol::wire::How {
    match cause {
        EndCause::Ended => efr_protocol::wire::How::Ended,
        EndCause::Stopped => efr_protocol::wire::How::Stopped,
        EndCause::Limit => efr_protocol::wire::How::Limit,
        EndCause::Closed => efr_protocol::wire::How::Closed,
        EndCause::ShellExited => efr_protocol::wire::How::ShellExited,
    }
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
