//! The pseudo-terminal that efrd owns, and the shell started in it as a session leader.
//!
//! efrd is a threaded process, so a child is never made with a bare `fork()`: the shell starts through
//! `std::process::Command` (by way of tokio's), whose `pre_exec` hook runs only async-signal-safe calls in the
//! child: `setsid()` (a new session, so the shell owns a terminal of its own), `ioctl(TIOCSCTTY)` (the pty becomes
//! its controlling terminal) and `sigaction(SIG_DFL)` for the job-control signals (an ignored signal would stay
//! ignored across `exec`, and `interrupt()` must reach the command).
//!
//! Both ends are opened with `O_CLOEXEC` from the start (`posix_openpt` + `open`), so no other child that efrd starts
//! at the same moment inherits them. efrd closes its copy of the slave once the shell runs: reads of the master then
//! fail with `EIO` when the last process holding the terminal has gone.

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::process::Stdio;

use nix::fcntl::{FcntlArg, OFlag};
use nix::pty::PtyMaster;
use nix::sys::stat::Mode;
use nix::sys::termios::{self, InputFlags, LocalFlags, SetArg};

/// Identifies the terminal device across mount namespaces: the slave's (st_dev, st_ino), as `stat` of a
/// `/proc/<pid>/fd/<n>` link gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TtyId {
    dev: u64,
    ino: u64,
}

impl TtyId {
    /// Whether `path` (a `/proc/<pid>/fd/<n>` link) names this terminal.
    pub(crate) fn is(&self, path: &std::path::Path) -> bool {
        std::fs::metadata(path).is_ok_and(|m| m.dev() == self.dev && m.ino() == self.ino)
    }
}

/// An open pty pair, before the shell starts.
#[derive(Debug)]
pub(crate) struct PtyPair {
    pub(crate) master: PtyMaster,
    pub(crate) slave: OwnedFd,
    pub(crate) tty: TtyId,
    /// The slave's path (`/dev/pts/N`): where the shell reopens a standard descriptor a command closed. Not
    /// `/dev/tty`, whose descriptors stat as `/dev/tty` and so would not count as the terminal for the input-wait
    /// looks (see `waits`).
    pub(crate) path: std::path::PathBuf,
}

/// Opens a pty of `rows` × `cols` with UTF-8 input editing, and makes the master non-blocking.
pub(crate) fn open(rows: u16, cols: u16) -> io::Result<PtyPair> {
    let master = nix::pty::posix_openpt(OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_CLOEXEC)?;
    nix::pty::grantpt(&master)?;
    nix::pty::unlockpt(&master)?;
    let name = nix::pty::ptsname_r(&master)?;
    let slave = nix::fcntl::open(
        name.as_str(),
        OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    let size = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCSWINSZ reads one `winsize` through the pointer, which is valid for the call.
    if unsafe { libc::ioctl(master.as_raw_fd(), libc::TIOCSWINSZ, &raw const size) } == -1 {
        return Err(io::Error::last_os_error());
    }
    let mut attrs = termios::tcgetattr(&slave)?;
    attrs.input_flags |= InputFlags::IUTF8;
    // Line mode and echo are the defaults already; say so, since the input-wait rules read them.
    attrs.local_flags |= LocalFlags::ICANON | LocalFlags::ECHO | LocalFlags::ISIG;
    termios::tcsetattr(&slave, SetArg::TCSANOW, &attrs)?;
    let meta = std::fs::File::from(slave.try_clone()?).metadata()?;
    let tty = TtyId {
        dev: meta.dev(),
        ino: meta.ino(),
    };
    let flags = OFlag::from_bits_truncate(nix::fcntl::fcntl(&master, FcntlArg::F_GETFL)?);
    nix::fcntl::fcntl(&master, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
    Ok(PtyPair {
        master,
        slave,
        tty,
        path: name.into(),
    })
}

/// Starts `command` with the pty slave as stdin, stdout, stderr and controlling terminal, in a session of its own.
pub(crate) fn spawn(command: &mut tokio::process::Command, slave: &OwnedFd) -> io::Result<tokio::process::Child> {
    command
        .stdin(Stdio::from(slave.try_clone()?))
        .stdout(Stdio::from(slave.try_clone()?))
        .stderr(Stdio::from(slave.try_clone()?))
        .kill_on_drop(false);
    // SAFETY: the hook runs in the child between fork and exec and calls only async-signal-safe functions
    // (setsid, ioctl, sigaction); it allocates nothing and touches no lock.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(io::Error::last_os_error());
            }
            // stdin is the slave by now; make it the controlling terminal of the new session.
            if libc::ioctl(0, libc::TIOCSCTTY, 0) == -1 {
                return Err(io::Error::last_os_error());
            }
            for signal in [
                libc::SIGINT,
                libc::SIGQUIT,
                libc::SIGHUP,
                libc::SIGTERM,
                libc::SIGTSTP,
                libc::SIGTTIN,
                libc::SIGTTOU,
                libc::SIGPIPE,
                libc::SIGCHLD,
            ] {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = libc::SIG_DFL;
                if libc::sigaction(signal, &raw const action, std::ptr::null_mut()) == -1 {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    command.spawn()
}

/// The terminal's foreground process group and its line mode and echo flags, read through the master.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TtyState {
    pub(crate) foreground: i32,
    /// ICANON: the kernel collects a line before a read returns ("line mode").
    pub(crate) line_mode: bool,
    /// ECHO: the kernel echoes what is typed.
    pub(crate) echo: bool,
}

pub(crate) fn tty_state(master: impl AsFd) -> io::Result<TtyState> {
    let foreground = nix::unistd::tcgetpgrp(master.as_fd())?.as_raw();
    let attrs = termios::tcgetattr(master)?;
    Ok(TtyState {
        foreground,
        line_mode: attrs.local_flags.contains(LocalFlags::ICANON),
        echo: attrs.local_flags.contains(LocalFlags::ECHO),
    })
}
