//! A run's timers and waits: the answer deadline, the detached limit, the interrupt and the resync after it, the
//! interrupt followed into the next foreground group, and the looks for an input wait.

use std::time::Duration;

use nix::pty::PtyMaster;
use nix::sys::signal::{self, Signal};
use nix::unistd::Pid;
use tokio::time::Instant;

use super::{Actor, RUN_FILE_NAME};
use crate::tools::shell::ShellError;
use crate::tools::shell::handle::{Answer, EndCause, Life};
use crate::tools::shell::pty;
use crate::tools::shell::rc;
use crate::tools::shell::waits::{self, Sleep};

/// After an interrupt, how long to wait for the end marker before checking whether the shell sits at its prompt.
const RESYNC_AFTER: Duration = Duration::from_millis(1500);
/// After an interrupt, how often and how long the actor looks for a foreground group that the SIGINT missed: a shell
/// that had forked the command but not yet made it the terminal's foreground group took the SIGINT itself and
/// (waiting for a foreground job) ignored it; a child between fork and exec still had the shell's handler, which
/// only notes the signal. Either way the command then runs as if no one had asked it to stop.
const FOLLOW_EVERY: Duration = Duration::from_millis(20);

const FOLLOW_FOR: Duration = Duration::from_millis(1500);

/// After the detached limit's interrupt, how long the command has to end before the shell is closed.
const LIMIT_GRACE: Duration = Duration::from_secs(5);

/// One look after an interrupt: a foreground group that is not the shell's gets a SIGINT too when it is not the
/// group interrupted last, or when its leader has run another program since (it was between fork and exec).
/// Returns the next look, or `None` once [`FOLLOW_FOR`] is over.
fn follow_interrupt(follow: Follow, now: Instant, master: &PtyMaster, shell: i32) -> Option<Follow> {
    let mut next = Follow {
        next: now + FOLLOW_EVERY,
        ..follow
    };
    if let Ok(state) = pty::tty_state(master)
        && state.foreground != shell
    {
        let program = program_of(state.foreground);
        // A leader that is gone (a pipeline's first program ended) is no exec: its group had the SIGINT.
        let exec = program.is_some() && follow.program.is_some() && program != follow.program;
        if state.foreground != follow.group || exec {
            match signal::killpg(Pid::from_raw(state.foreground), Signal::SIGINT) {
                Ok(()) => (next.group, next.program) = (state.foreground, program),
                Err(error) => tracing::debug!(shell, %error, "hidden shell: the followed interrupt failed"),
            }
        }
    }
    (now < follow.until).then_some(next)
}

/// The name of the program a process runs now (`/proc/<pid>/comm`, at most 16 bytes), to see an exec; `None` when
/// the process is gone.
fn program_of(pid: i32) -> Option<[u8; 16]> {
    let name = std::fs::read(format!("/proc/{pid}/comm")).ok()?;
    let mut program = [0_u8; 16];
    let len = name.len().min(program.len());
    program[..len].copy_from_slice(&name[..len]);
    Some(program)
}

/// An interrupt being followed into the foreground group that comes next ([`FOLLOW_FOR`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Follow {
    group: i32,
    /// The program of the group's leader when it was interrupted ([`program_of`]).
    program: Option<[u8; 16]>,
    next: Instant,
    until: Instant,
}

/// `now + after`, saturating at a year (an `Instant` overflows on `Duration::MAX`).
pub(super) fn later(now: Instant, after: Duration) -> Instant {
    now + after.min(Duration::from_secs(365 * 24 * 3600))
}

impl Actor {
    /// Interrupts the active run as Ctrl+C would. Before its start marker the shell has not read the run's line
    /// yet: a SIGINT then would only drop an empty prompt line and the command would run in full afterwards, so the
    /// interrupt is held and sent when the start marker comes.
    pub(super) fn interrupt(&mut self) -> Result<(), ShellError> {
        let Some(active) = self.active.as_mut() else {
            return Err(ShellError::NoRun);
        };
        if !active.started {
            active.interrupted = true;
            return Ok(());
        }
        self.send_interrupt()
    }

    /// Sends SIGINT to the terminal's foreground group and starts the resync timer.
    pub(super) fn send_interrupt(&mut self) -> Result<(), ShellError> {
        let Some(active) = self.active.as_mut() else {
            return Err(ShellError::NoRun);
        };
        let foreground = pty::tty_state(self.master.get_ref())
            .map_err(|source| ShellError::Io {
                context: "read the terminal's foreground group",
                source,
            })?
            .foreground;
        signal::killpg(Pid::from_raw(foreground), Signal::SIGINT).map_err(|e| ShellError::Io {
            context: "send SIGINT",
            source: e.into(),
        })?;
        active.interrupted = true;
        let now = Instant::now();
        active.resync_at = Some(now + RESYNC_AFTER);
        active.follow = Some(Follow {
            group: foreground,
            program: program_of(foreground),
            next: now + FOLLOW_EVERY,
            until: now + FOLLOW_FOR,
        });
        Ok(())
    }

    pub(super) fn next_timer(&self) -> Option<Instant> {
        let active = self.active.as_ref()?;
        let answer = active.answer.as_ref().map(|_| active.deadline);
        let follow = active.follow.map(|follow| follow.next);
        [answer, active.resync_at, follow, active.limit_at, active.limit_close_at]
            .into_iter()
            .flatten()
            .min()
    }

    /// Acts on the run's timers; returns `true` when the shell was closed and the task must end.
    pub(super) async fn on_timer(&mut self, buf: &mut [u8]) -> bool {
        // Take in what the shell printed first: the run may have ended just now.
        self.drain(buf);
        let now = Instant::now();
        let Some(active) = self.active.as_mut() else {
            return false;
        };
        if active.answer.is_some() && now >= active.deadline {
            if let Some(answer) = active.answer.take() {
                let output = self
                    .capture
                    .window
                    .snapshot()
                    .replaced(&active.file.to_string_lossy(), RUN_FILE_NAME);
                let _ = answer.send(Answer::LeftRunning(output));
            }
            active.limit_at = self.detached_limit.map(|limit| later(now, limit));
        }
        if active.limit_close_at.is_some_and(|at| now >= at) {
            self.shut(EndCause::Limit, None, Life::Closed).await;
            return true;
        }
        if active.limit_at.is_some_and(|at| now >= at) {
            active.limit_at = None;
            active.limit_close_at = Some(now + LIMIT_GRACE);
            // An interrupt that fails leaves the close above to end it.
            if let Err(error) = self.interrupt() {
                tracing::debug!(pid = self.pid, %error, "hidden shell: the detached limit's interrupt failed");
            }
            return false;
        }
        if let Some(follow) = active.follow.filter(|follow| now >= follow.next) {
            active.follow = follow_interrupt(follow, now, self.master.get_ref(), self.pid);
        }
        let resync = active.resync_at.is_some_and(|at| now >= at);
        if resync {
            active.resync_at = Some(now + RESYNC_AFTER);
            let id = active.id;
            let at_prompt = pty::tty_state(self.master.get_ref()).is_ok_and(|s| {
                s.foreground == self.pid
                    && matches!(
                        waits::foreground_sleep(s.foreground, self.tty, self.pid),
                        Sleep::Reading { .. }
                    )
            });
            if at_prompt {
                tracing::debug!(
                    pid = self.pid,
                    "hidden shell: end marker missing after an interrupt; typing a resync line"
                );
                self.reset_terminal();
                if let Err(error) = self.write(rc::resync_line(&self.nonce, id).as_bytes()).await {
                    tracing::debug!(pid = self.pid, %error, "hidden shell: resync line not written");
                }
            }
        }
        false
    }

    /// One look at the terminal for an input wait (see `waits`).
    pub(super) fn look(&mut self, buf: &mut [u8]) {
        let Ok(state) = pty::tty_state(self.master.get_ref()) else {
            return;
        };
        let sleep = waits::foreground_sleep(state.foreground, self.tty, self.pid);
        // The flags and the sleep are read at different moments; a program that changes its terminal modes right
        // then (`read -s` turns echo off, then reads) would mix two states. Decide only on a stable look.
        if pty::tty_state(self.master.get_ref()).ok() != Some(state) {
            return;
        }
        // A shell that printed its end marker and went back to read sleeps like a command reading; take in its
        // output before deciding.
        self.drain(buf);
        let prompt = self.screen.prompt();
        let Some(active) = self.active.as_ref() else {
            return;
        };
        let quiet = active.last_output.elapsed() >= waits::QUIET_FOR;
        let wait = waits::classify(state, sleep, quiet, prompt);
        active.input.send_if_modified(|current| {
            if *current == wait {
                return false;
            }
            *current = wait;
            true
        });
    }
}
