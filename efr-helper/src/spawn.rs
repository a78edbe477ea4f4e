//! The parent's side: start a helper as `PROGRAM --control-fd 3 --sockets DIR` with one end of a fresh Unix socket
//! pair as its fd 3, and keep the other end.
//!
//! The parent may be threaded (efrd is), so the child comes from `std::process::Command`, whose `pre_exec` hook
//! only does async-signal-safe work between fork and exec: `dup2` of the child's end to fd 3, or, when that end is
//! fd 3 already, `fcntl` to clear its close-on-exec flag. Both ends are made close-on-exec, so no other child the
//! parent starts inherits them, and the parent drops the child's end once the child has it: the helper sees the end
//! of its control stream when the parent's end closes.

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use nix::fcntl::{FcntlArg, fcntl};

use crate::start::CONTROL_FD;

/// A helper to start: its command line, and its standard streams (stdin from `/dev/null`, stdout inherited unless
/// set, stderr inherited). Environment and the like are set on the `Command` given to [`Self::wrapping`].
#[derive(Debug)]
pub struct HelperCommand {
    command: Command,
}

impl HelperCommand {
    /// `program --control-fd 3 --sockets <sockets>`.
    #[must_use]
    pub fn new(program: impl AsRef<OsStr>, sockets: &Path) -> Self {
        Self::wrapping(Command::new(program), sockets)
    }

    /// `command` with `--control-fd 3 --sockets <sockets>` appended: a command whose last word is the helper's
    /// program, such as `ip netns exec NAME PROGRAM` (a wrapper that keeps fd 3 open for the program it runs).
    #[must_use]
    pub fn wrapping(mut command: Command, sockets: &Path) -> Self {
        command
            .arg("--control-fd")
            .arg(CONTROL_FD.to_string())
            .arg("--sockets")
            .arg(sockets)
            .stdin(Stdio::null());
        Self { command }
    }

    /// Sets the helper's stdout (inherited by default).
    #[must_use]
    pub fn stdout(mut self, stdout: Stdio) -> Self {
        self.command.stdout(stdout);
        self
    }

    /// Starts the helper; returns it and the parent's end of its control socket (blocking).
    ///
    /// # Errors
    /// The socket pair could not be made, or the program could not be started.
    pub fn spawn(self) -> io::Result<(Child, UnixStream)> {
        let (mut command, theirs, ours) = self.prepare()?;
        let child = command.spawn()?;
        drop(theirs);
        Ok((child, ours))
    }

    /// Starts the helper from a tokio runtime, killed when its [`tokio::process::Child`] is dropped; returns it and
    /// the parent's end of its control socket, registered with the runtime.
    ///
    /// # Errors
    /// The socket pair could not be made, the program could not be started, or the parent's end could not be
    /// registered with the runtime (the child is then killed).
    pub fn spawn_tokio(self) -> io::Result<(tokio::process::Child, tokio::net::UnixStream)> {
        let (command, theirs, ours) = self.prepare()?;
        let mut command = tokio::process::Command::from(command);
        command.kill_on_drop(true);
        let child = command.spawn()?;
        drop(theirs);
        ours.set_nonblocking(true)?;
        let ours = tokio::net::UnixStream::from_std(ours)?;
        Ok((child, ours))
    }

    /// The command with its `pre_exec` hook, the child's end (to drop once the child is started) and ours.
    fn prepare(self) -> io::Result<(Command, OwnedFd, UnixStream)> {
        let Self { mut command } = self;
        let (ours, theirs) = UnixStream::pair()?;
        let theirs = above_stdio(OwnedFd::from(theirs))?;
        let fd = theirs.as_raw_fd();
        // SAFETY: the hook runs in the child between fork and exec and calls only async-signal-safe functions (dup2,
        // fcntl); it allocates nothing and takes no lock.
        unsafe {
            command.pre_exec(move || move_to_control_fd(fd));
        }
        Ok((command, theirs, ours))
    }
}

/// `fd` itself when it is above the standard streams, else a copy that is (the child's stdio is set up before the
/// `pre_exec` hook runs, and would replace it). Close-on-exec either way.
fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    let copy = fcntl(&fd, FcntlArg::F_DUPFD_CLOEXEC(3))?;
    // SAFETY: F_DUPFD_CLOEXEC returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(copy) })
}

/// In the child: makes `fd` its fd 3, open across exec. Async-signal-safe.
fn move_to_control_fd(fd: RawFd) -> io::Result<()> {
    // SAFETY: dup2 and fcntl act on this process's descriptor table only and touch no memory.
    let rc = unsafe {
        if fd == CONTROL_FD {
            // Already in place: only its close-on-exec flag must go.
            libc::fcntl(CONTROL_FD, libc::F_SETFD, 0)
        } else {
            // dup2 leaves the copy without close-on-exec.
            libc::dup2(fd, CONTROL_FD)
        }
    };
    if rc == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

    use std::io::{Read, Write};

    use super::*;

    /// A shell that checks its arguments and that fd 3 is a socket, then says `ready` on it and echoes one line.
    const SCRIPT: &str = r#"[ "$0 $1 $2 $3" = "--control-fd 3 --sockets $EXPECTED" ] || exit 7
test -S /proc/self/fd/3 || exit 8
printf ready >&3
read -r line <&3
printf '%s' "$line" >&3"#;

    fn sh(sockets: &Path) -> HelperCommand {
        let mut command = Command::new("sh");
        command.args(["-c", SCRIPT]).env("EXPECTED", sockets);
        HelperCommand::wrapping(command, sockets)
    }

    #[test]
    fn the_child_gets_its_end_as_fd_3_and_its_arguments() {
        let sockets = tempfile::tempdir().unwrap();
        let (mut child, mut ours) = sh(sockets.path()).spawn().unwrap();
        let mut ready = [0_u8; 5];
        ours.read_exact(&mut ready).unwrap();
        assert_eq!(&ready, b"ready");
        ours.write_all(b"hello\n").unwrap();
        let mut line = String::new();
        ours.read_to_string(&mut line).unwrap();
        assert_eq!(line, "hello");
        assert!(child.wait().unwrap().success());
    }

    #[tokio::test]
    async fn the_tokio_child_gets_its_end_as_fd_3() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let sockets = tempfile::tempdir().unwrap();
        let (mut child, mut ours) = sh(sockets.path()).stdout(Stdio::null()).spawn_tokio().unwrap();
        let mut ready = [0_u8; 5];
        ours.read_exact(&mut ready).await.unwrap();
        assert_eq!(&ready, b"ready");
        ours.write_all(b"again\n").await.unwrap();
        let mut line = String::new();
        ours.read_to_string(&mut line).await.unwrap();
        assert_eq!(line, "again");
        assert!(child.wait().await.unwrap().success());
    }

    #[test]
    fn the_child_sees_the_end_when_the_parent_closes_its_end() {
        let sockets = tempfile::tempdir().unwrap();
        let mut command = Command::new("sh");
        // `cat` ends at the end of its input: only when no process holds the other end open any more.
        command.args(["-c", "exec cat <&3 >/dev/null"]);
        let (mut child, ours) = HelperCommand::wrapping(command, sockets.path()).spawn().unwrap();
        drop(ours);
        assert!(child.wait().unwrap().success());
    }

    #[test]
    fn a_missing_program_is_an_error() {
        let sockets = tempfile::tempdir().unwrap();
        let error = HelperCommand::new("/nonexistent/helper", sockets.path())
            .spawn()
            .unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::NotFound);
    }
}
