//! A shell command left running past its call's timeout: `shell_command_detached`, then, followed in a task of its
//! own, each change of its wait and `shell_command_ended`. These events belong to the conversation, not the turn; a
//! contained command's launch files and plans are cleaned up when it ends.

use std::path::PathBuf;
use std::sync::Arc;

use efr_protocol::events::{EventBody, ShellCommandDetached, ShellCommandEnded, ShellCommandInputChanged};
use efr_protocol::ids::{CallId, Timestamp};
use efr_protocol::wire::{ApprovedBy, InputWait as WireInputWait};

use super::contained::ContainedEnd;
use super::shell_prepare::Prepared;
use super::sink::Sink;
use crate::bus::BusSupervisor;
use crate::network::ProxySupervisor;
use crate::sandbox::git_link;
use crate::tools::shell::{Detached, EndCause, InputKind};

/// A command left running past its call's timeout: what its events name.
pub(super) struct LeftRunning<'a> {
    pub(super) call_id: CallId,
    pub(super) command: &'a str,
    pub(super) approved_by: Option<ApprovedBy>,
    /// The contained call's launch files (`None` for a direct call).
    pub(super) prepared: Option<Prepared>,
    pub(super) roots: Vec<PathBuf>,
    /// Closes the command's proxy plan when it ends.
    pub(super) proxy: Arc<ProxySupervisor>,
    /// Closes the command's bus plan when it ends.
    pub(super) bus: Arc<BusSupervisor>,
}

/// Records `shell_command_detached` for a command left running, then follows it in a task of its own until it
/// ends: each change of its wait (`shell_command_input_changed`), then `shell_command_ended`. These events belong to
/// the conversation, not the turn. `None` when the sink is gone.
pub(super) async fn follow_left_running(left: LeftRunning<'_>, detached: Detached, sink: &Sink) -> Option<()> {
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
        let mut notes = Vec::new();
        if let Some(moved) = end.moved.clone() {
            // Moved to a background job: the shell's part ends now; the sandbox's files and plans stay until the
            // command itself ends.
            let ended = EventBody::ShellCommandEnded(ShellCommandEnded {
                call_id,
                how: efr_protocol::wire::How::Moved,
                exit_code: None,
                notes,
            });
            let _ = sink.record_outside_turn(vec![ended]).await;
            moved.ended().await;
            if let Some(prepared) = prepared {
                let _ = git_link::put_back(&prepared.git_links);
                let _ = crate::sandbox::protect::remove_planted_commondirs(&roots);
                let _ = std::fs::remove_file(&prepared.plan_file);
                prepared.close_plans(&proxy, &bus).await;
            }
            return;
        }
        if let Some(prepared) = prepared {
            // What efrd puts right after the command is told to the model, as after a call that did not outlive
            // its timeout (turn/shell_call.rs): shell_command_ended carries the lines.
            notes = git_link::put_back(&prepared.git_links);
            notes.extend(
                crate::sandbox::protect::remove_planted_commondirs(&roots)
                    .iter()
                    .map(|removed| crate::sandbox::protect::removed_commondir_note(removed)),
            );
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
            notes,
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
        EndCause::Moved => efr_protocol::wire::How::Moved,
    }
}

/// The wire form of a wait's kind.
pub(super) fn wire_wait(kind: InputKind) -> WireInputWait {
    match kind {
        InputKind::None => WireInputWait::None,
        InputKind::Visible => WireInputWait::Visible,
        InputKind::Hidden => WireInputWait::Hidden,
    }
}
