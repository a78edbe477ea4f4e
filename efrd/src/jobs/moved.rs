//! A running shell call moved into a job (call.background, Ctrl+B in efr; docs/jobs.md, "Moving a running call").
//!
//! The command keeps running where it is, in the hidden shell's pty: nothing of it is restarted, its terminal and
//! its input stay. The shell is handed to the job ([`crate::tools::shell::HiddenShell::release`]): the
//! conversation's next call starts a new one, what the command prints from the move on goes to the job's output
//! file, and the job ends with the command. A stop closes that shell, which ends every process of its session; a
//! process that left the session (`setsid`) is not the job's any more, as with a job without a cgroup
//! (`cgroup.off` says so).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use efr_protocol::events::{EventBody, JobStarted};
use efr_protocol::wire::{JobId, JobMovedFrom};
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

use super::cgroup::{Placement, start_ticks};
use super::run::{Follow, Follows, Process, Started, running_info};
use super::{JobHead, JobSink, StartError};
use crate::tools::shell::{HiddenShell, Released};

/// Why a moved job has no cgroup of its own (`cgroup.off`).
pub const MOVED_OFF: &str = "a moved call stays in its hidden shell's session: a stop ends that session";

/// What the conversation hands over to move a running call into a job.
#[derive(Debug)]
pub struct MovedSpec {
    /// The call, the command, its limit from the move on, and forwards (as for any contained job).
    pub head: JobHead,
    /// Where it came from (`moved_from`).
    pub moved_from: JobMovedFrom,
}

/// The command's shell and what [`HiddenShell::release`] handed over.
#[derive(Debug)]
pub struct MovedCommand {
    /// The shell that runs it (the job closes it at its end).
    pub shell: HiddenShell,
    /// Its text, input waits and end.
    pub released: Released,
}

/// Records job_started for a moved command and spawns the task that follows it.
pub(super) async fn adopt(
    (job_id, output): (JobId, PathBuf),
    spec: MovedSpec,
    command: MovedCommand,
    sink: Arc<dyn JobSink>,
    (wakes, forwarded): (super::Wakes, super::forward::Held),
) -> Result<Started, StartError> {
    let MovedCommand { shell, released } = command;
    let placement = Placement::Off {
        reason: MOVED_OFF.to_owned(),
    };
    let pid = shell.pid();
    let mut info = running_info(job_id, &spec.head, output.clone(), &placement);
    info.moved_from = Some(spec.moved_from);
    info.waits_input = {
        let wait = released.input.borrow();
        wait.kind != crate::tools::shell::InputKind::None && !wait.looks_secret
    };
    let started = EventBody::JobStarted(JobStarted {
        call_id: spec.head.call_id.clone(),
        job: info.clone(),
        launcher_pid: pid,
        launcher_start: start_ticks(pid).unwrap_or(0),
    });
    if let Err(error) = sink.record_as(Some(spec.head.turn_id), vec![started]).await {
        shell.kill().await;
        return Err(StartError::Record(error.message));
    }
    let (pipe_tx, pipe_rx) = tokio::net::unix::pipe::pipe().map_err(|e| StartError::Spawn(e.to_string()))?;
    let mut text = released.text;
    // The shell's actor never waits on the job: its text goes through an unbounded channel, then into the pipe that
    // the output reader reads as it reads any job's.
    tokio::spawn(async move {
        let mut pipe = pipe_tx;
        while let Some(chunk) = text.recv().await {
            if pipe.write_all(chunk.as_bytes()).await.is_err() {
                break;
            }
        }
    });
    let info = Arc::new(Mutex::new(info));
    let (stop_tx, stop_rx) = mpsc::unbounded_channel();
    let shared = Arc::new(placement);
    let follow = Follow {
        info: Arc::clone(&info),
        sink,
        placement: Arc::clone(&shared),
        pid,
        on_end: Mutex::new(None),
        // The model waited for this call: its end tells the model as any job's own end does.
        spec: Follows::of(spec.head, true, false),
        forwarded,
        wakes,
    };
    let process = Process::Moved {
        shell,
        end: released.end,
        input: released.input,
    };
    tokio::spawn(follow.run(process, pipe_rx, output, None, stop_rx));
    Ok(Started {
        info,
        placement: shared,
        stop: stop_tx,
    })
}
