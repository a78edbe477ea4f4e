//! The outer stage's watch over a running sandbox: one `poll(2)` loop on the launcher's own thread over the three
//! pipes bubblewrap and the inner stage write to, until all three end (which is when the sandbox has ended).
//!
//! One loop rather than a thread per pipe: on a busy machine every thread that must wake at the end of a call adds
//! a scheduling delay to the launch, and a contained `true` has a budget (docs/architecture.md, "Budgets").

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, OwnedFd};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use crate::spec::InnerStatus;

/// The most of bubblewrap's stderr kept (for a setup error's message).
pub const MAX_BWRAP_MESSAGE: usize = 4096;
/// The most of bubblewrap's JSON status and the inner status kept (a few short lines in practice).
const MAX_STATUS: usize = 64 * 1024;

/// What the pipes said.
#[derive(Debug, Default)]
pub struct Watched {
    /// bubblewrap's `exit-code`, if its status stream had one.
    pub exit_code: Option<i32>,
    /// bubblewrap's own stderr (at most [`MAX_BWRAP_MESSAGE`] bytes).
    pub bwrap_message: String,
    /// The inner stage's status lines.
    pub inner: Vec<InnerStatus>,
}

/// Reads bubblewrap's JSON status, its stderr and the inner status pipe to their ends. `on_inner` sees each inner
/// status line as it arrives (the outer stage reports `sandboxed` live).
///
/// # Errors
///
/// `poll(2)` or a read failed.
pub fn watch(
    status: OwnedFd,
    stderr: OwnedFd,
    inner: OwnedFd,
    mut on_inner: impl FnMut(&InnerStatus),
) -> io::Result<Watched> {
    let mut pipes = [
        Pipe::new(status, MAX_STATUS),
        Pipe::new(stderr, MAX_BWRAP_MESSAGE),
        Pipe::new(inner, MAX_STATUS),
    ];
    let mut watched = Watched::default();
    let mut inner_seen = 0;
    while pipes.iter().any(|pipe| pipe.file.is_some()) {
        let ready: Vec<bool> = {
            let mut indices = Vec::new();
            let mut fds = Vec::new();
            for (i, pipe) in pipes.iter().enumerate() {
                if let Some(file) = &pipe.file {
                    indices.push(i);
                    fds.push(PollFd::new(file.as_fd(), PollFlags::POLLIN));
                }
            }
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) => {}
                Err(Errno::EINTR) => continue,
                Err(err) => return Err(err.into()),
            }
            let mut ready = vec![false; pipes.len()];
            for (i, fd) in indices.into_iter().zip(&fds) {
                ready[i] = fd.revents().is_some_and(|events| !events.is_empty());
            }
            ready
        };
        for (pipe, ready) in pipes.iter_mut().zip(ready) {
            if ready {
                pipe.read_once()?;
            }
        }
        // Inner status lines as they complete.
        let text = &pipes[2].kept;
        while let Some(end) = text[inner_seen..].iter().position(|b| *b == b'\n') {
            let line = &text[inner_seen..inner_seen + end];
            inner_seen += end + 1;
            if let Ok(status) = serde_json::from_slice::<InnerStatus>(line) {
                on_inner(&status);
                watched.inner.push(status);
            }
        }
    }
    let stream = serde_json::Deserializer::from_slice(&pipes[0].kept).into_iter::<serde_json::Value>();
    for value in stream.map_while(Result::ok) {
        if let Some(code) = value.get("exit-code").and_then(serde_json::Value::as_i64) {
            watched.exit_code = i32::try_from(code).ok();
        }
    }
    watched.bwrap_message = String::from_utf8_lossy(&pipes[1].kept).into_owned();
    Ok(watched)
}

/// One pipe being read: open until its end, keeping at most `cap` bytes.
struct Pipe {
    file: Option<File>,
    kept: Vec<u8>,
    cap: usize,
}

impl Pipe {
    fn new(fd: OwnedFd, cap: usize) -> Self {
        Self {
            file: Some(File::from(fd)),
            kept: Vec::new(),
            cap,
        }
    }

    /// One read after `poll` said the pipe is readable (so it does not block); closes it at its end.
    fn read_once(&mut self) -> io::Result<()> {
        let Some(file) = self.file.as_mut() else { return Ok(()) };
        let mut buf = [0_u8; 8192];
        match file.read(&mut buf) {
            Ok(0) => self.file = None,
            Ok(n) => {
                let room = self.cap.saturating_sub(self.kept.len());
                self.kept.extend_from_slice(&buf[..n.min(room)]);
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn the_three_pipes_are_read_to_their_ends() {
        let (status_r, status_w) = nix::unistd::pipe().unwrap();
        let (err_r, err_w) = nix::unistd::pipe().unwrap();
        let (inner_r, inner_w) = nix::unistd::pipe().unwrap();
        let writer = std::thread::spawn(move || {
            let mut inner = File::from(inner_w);
            inner
                .write_all(b"{\"kind\":\"ready\",\"landlock_abi\":6,\"scoped\":true}\n")
                .unwrap();
            drop(inner);
            let mut status = File::from(status_w);
            status.write_all(b"{ \"child-pid\": 12 }\n").unwrap();
            File::from(err_w).write_all(&[b'e'; 10_000]).unwrap();
            status.write_all(b"{ \"exit-code\": 3 }\n").unwrap();
        });
        let mut seen = Vec::new();
        let watched = watch(status_r, err_r, inner_r, |line| seen.push(line.clone())).unwrap();
        writer.join().unwrap();
        assert_eq!(watched.exit_code, Some(3));
        assert_eq!(watched.bwrap_message.len(), MAX_BWRAP_MESSAGE);
        assert_eq!(
            seen,
            [InnerStatus::Ready {
                landlock_abi: 6,
                scoped: true
            }]
        );
        assert_eq!(watched.inner, seen);
    }

    #[test]
    fn no_exit_code_when_the_status_has_none() {
        let (status_r, status_w) = nix::unistd::pipe().unwrap();
        let (err_r, err_w) = nix::unistd::pipe().unwrap();
        let (inner_r, inner_w) = nix::unistd::pipe().unwrap();
        File::from(err_w)
            .write_all(b"bwrap: Can't find source path /x\n")
            .unwrap();
        drop((status_w, inner_w));
        let watched = watch(status_r, err_r, inner_r, |_| {}).unwrap();
        assert_eq!(watched.exit_code, None);
        assert_eq!(watched.bwrap_message, "bwrap: Can't find source path /x\n");
        assert!(watched.inner.is_empty());
    }
}
