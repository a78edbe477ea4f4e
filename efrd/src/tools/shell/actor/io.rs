//! The shell's pty read: bytes to the screen and the capture, the markers they hold acted on, and a run's end.

use std::io;

use nix::pty::PtyMaster;
use tokio::time::Instant;

use super::{Actor, RUN_FILE_NAME};
use crate::tools::shell::capture::Marker;
use crate::tools::shell::handle::{Answer, EndCause, RunEnd};
use crate::tools::shell::waits::InputWait;

/// Reads per wake-up before the loop looks at its other work.
const READS_PER_WAKE: usize = 16;

impl Actor {
    /// Reads what the master holds, a bounded number of times so the loop's other work is not starved by a
    /// command that prints without pause. `EIO` (no process holds the terminal any more) or end of file closes it.
    pub(super) fn read_ready(&mut self, mut guard: tokio::io::unix::AsyncFdReadyGuard<'_, PtyMaster>, buf: &mut [u8]) {
        for _ in 0..READS_PER_WAKE {
            match guard.try_io(|fd| nix::unistd::read(fd.get_ref(), buf).map_err(io::Error::from)) {
                Ok(Ok(0) | Err(_)) => {
                    self.master_closed = true;
                    return;
                }
                Ok(Ok(n)) => self.feed(&buf[..n]),
                Err(_would_block) => return,
            }
        }
    }

    /// Feeds pty bytes to the screen and the capture, then acts on the markers they held.
    pub(super) fn feed(&mut self, bytes: &[u8]) {
        let bytes = self.guard.filter(bytes);
        let mut rest: &[u8] = &bytes;
        while !rest.is_empty() {
            // The capture stops right after a start marker: the screen takes the bytes up to there, then the row
            // under the cursor is cleared, so `prompt` shows what the command printed and not a shell prompt that
            // raced the echo of the typed line.
            let n = self.parser.advance_until_terminated(&mut self.capture, rest);
            self.screen.process(&rest[..n]);
            if std::mem::take(&mut self.capture.paused) {
                self.screen.clear_cursor_row();
            }
            rest = &rest[n..];
        }
        if let Some(moving) = &self.moved
            && !self.capture.tapped.is_empty()
        {
            let _ = moving.text.send(std::mem::take(&mut self.capture.tapped));
        }
        if self.capture.captured_since > 0 {
            self.capture.captured_since = 0;
            if let Some(active) = self.active.as_mut() {
                active.last_output = Instant::now();
            }
        }
        for marker in std::mem::take(&mut self.capture.markers) {
            match marker {
                Marker::Ready => {
                    if self.settings.is_none() {
                        self.settings = nix::sys::termios::tcgetattr(self.master.get_ref())
                            .ok()
                            .map(libc::termios::from);
                    }
                    if let Some(ready) = self.ready.take() {
                        let _ = ready.send(Ok(()));
                    }
                }
                Marker::Start(_) => {
                    let Some(active) = self.active.as_mut() else {
                        continue;
                    };
                    active.started = true;
                    if active.interrupted
                        && let Err(error) = self.send_interrupt()
                    {
                        tracing::debug!(pid = self.pid, %error, "hidden shell: the held interrupt failed");
                    }
                }
                Marker::End(_, status) => self.finish(None, Some(status)),
            }
        }
    }

    /// Reads whatever the master holds now, without waiting.
    pub(super) fn drain(&mut self, buf: &mut [u8]) {
        while !self.master_closed {
            match nix::unistd::read(self.master.get_ref(), buf) {
                Ok(0) | Err(nix::errno::Errno::EIO) => self.master_closed = true,
                Ok(n) => self.feed(&buf[..n]),
                Err(_) => return,
            }
        }
    }

    /// Ends the active run. `how` overrides what the run's flags say (closed, shell exited).
    pub(super) fn finish(&mut self, how: Option<EndCause>, exit_code: Option<i32>) {
        let Some(mut active) = self.active.take() else {
            return;
        };
        let output = self
            .capture
            .window
            .snapshot()
            .replaced(&active.file.to_string_lossy(), RUN_FILE_NAME);
        self.capture.finish();
        let _ = std::fs::remove_file(&active.file);
        let alive = how.is_none();
        if alive {
            self.cwd = std::fs::read_link(format!("/proc/{}/cwd", self.pid))
                .ok()
                .or(self.cwd.take());
        }
        let how = how.unwrap_or(if active.limit_close_at.is_some() {
            EndCause::Limit
        } else if active.interrupted {
            EndCause::Stopped
        } else {
            EndCause::Ended
        });
        if let Some(moving) = self.moved.take() {
            let rest = std::mem::take(&mut self.capture.tapped);
            if !rest.is_empty() {
                let _ = moving.text.send(rest);
            }
            let _ = moving.end.send(exit_code);
            moving.done.send_replace(true);
        }
        let end = RunEnd {
            how,
            exit_code,
            output,
            cwd: if alive { self.cwd.clone() } else { None },
            moved: None,
        };
        active
            .input
            .send_if_modified(|wait| std::mem::replace(wait, InputWait::NONE) != InputWait::NONE);
        if let Some(answer) = active.answer.take() {
            let _ = answer.send(Answer::Ended(end));
        } else if let Some(ended) = active.end.take() {
            let _ = ended.send(end);
        }
    }
}
