//! Taking the listening socket from systemd (socket activation, `sd_listen_fds(3)`).
//!
//! systemd passes the socket as fd 3 with `LISTEN_FDS=1`, `LISTEN_PID=<our pid>` and `LISTEN_FDNAMES=<name>`.
//! The `sd-notify` crate reads the variables, checks `LISTEN_PID` and sets `FD_CLOEXEC`; this module then checks that
//! the fd is what `efrd.socket` promises (a listening `AF_UNIX` stream socket), takes ownership of it, and removes
//! the three variables so that no child (the hidden shell, a launcher, a job) inherits them.
//!
//! Variables meant for another process (`LISTEN_PID` is not ours, as when a parent that was socket activated
//! leaked them) are removed too, and efrd binds its own socket.

use std::ffi::OsStr;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use nix::sys::socket::{SockType, SockaddrLike, SockaddrStorage, getsockname, getsockopt, sockopt};

use super::ListenError;

/// The variables of socket activation, removed from the environment once read.
pub const LISTEN_VARS: [&str; 3] = ["LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"];

/// A socket that systemd passed.
#[derive(Debug)]
pub struct Activated {
    /// The listening socket (already `FD_CLOEXEC`).
    pub fd: OwnedFd,
    /// Its name from `LISTEN_FDNAMES` (`FileDescriptorName=`, by default the socket unit's name), or `unknown`.
    pub name: String,
}

/// Removes each of `names` that is set. Nothing is written when none is set, so a process that was not started by
/// systemd never mutates its environment.
///
/// Must run at start, before efrd spawns threads that read the environment outside Rust's `std::env` lock
/// (C code calling `getenv`); `Listener::acquire` and `Notifier::from_env` are called there.
pub(crate) fn unset_env_at_start(names: &[&str]) {
    for name in names {
        if std::env::var_os(name).is_some() {
            // SAFETY: efrd calls this once, early at start, before any thread that could read the environment
            // without std's lock exists (documented on `Listener::acquire` and `Notifier::from_env`). Rust's own
            // readers are serialized with this write by std's environment lock.
            unsafe { std::env::remove_var(name) };
        }
    }
}

/// Takes the socket that systemd passed, if any, and removes the `LISTEN_*` variables.
///
/// Returns `None` when the variables are absent, or meant for another process, or `LISTEN_FDS=0`.
///
/// # Errors
/// [`ListenError::Env`] for variables that do not parse (or names that do not match the count), more than one
/// socket; [`ListenError::BadFd`] for an fd that is not a listening `AF_UNIX` stream socket.
pub fn take() -> Result<Option<Activated>, ListenError> {
    if LISTEN_VARS.iter().all(|v| std::env::var_os(v).is_none()) {
        return Ok(None);
    }
    let fds = sd_notify::listen_fds_with_names().map(Iterator::collect::<Vec<_>>);
    let count = std::env::var_os("LISTEN_FDS");
    unset_env_at_start(&LISTEN_VARS);
    let fds = fds.map_err(|e| ListenError::Env {
        var: "LISTEN_FDS",
        message: format!(
            "socket activation variables are not valid ({e}); LISTEN_FDS={}",
            show(count.as_deref())
        ),
    })?;
    match fds.as_slice() {
        [] => {
            tracing::debug!("LISTEN_* variables were meant for another process or passed no socket; ignoring them");
            Ok(None)
        }
        [(fd, name)] => check(*fd).map(|fd| Some(Activated { fd, name: name.clone() })),
        many => Err(ListenError::Env {
            var: "LISTEN_FDS",
            message: format!(
                "systemd passed {} sockets; efrd takes exactly one (efrd.socket has one ListenStream=)",
                many.len()
            ),
        }),
    }
}

fn show(value: Option<&OsStr>) -> String {
    value.map_or_else(|| "(unset)".to_owned(), |v| v.to_string_lossy().into_owned())
}

/// Owns `fd` and checks it is a listening `AF_UNIX` stream socket; on failure the fd is closed.
fn check(fd: RawFd) -> Result<OwnedFd, ListenError> {
    // SAFETY: `fd` comes from `sd_notify::listen_fds`, which checked it is open (fcntl F_GETFD) while
    // LISTEN_PID named this process, so systemd passed it to us; the variables are now unset, so no other part of
    // efrd can take it a second time, and nothing in the process opened it (it was inherited at exec).
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let bad = |message: String| ListenError::BadFd { fd, message };
    let ty = getsockopt(&owned, sockopt::SockType).map_err(|e| bad(format!("it is not a socket ({e})")))?;
    let addr: SockaddrStorage = getsockname(fd).map_err(|e| bad(format!("getsockname failed ({e})")))?;
    if addr.as_unix_addr().is_none() {
        return Err(bad(format!("it is not a Unix socket (family {:?})", addr.family())));
    }
    if ty != SockType::Stream {
        return Err(bad(format!("it is a {ty:?} socket, not a stream socket")));
    }
    let listening = getsockopt(&owned, sockopt::AcceptConn).map_err(|e| bad(format!("SO_ACCEPTCONN failed ({e})")))?;
    if !listening {
        return Err(bad("the socket is not listening".to_owned()));
    }
    Ok(owned)
}
