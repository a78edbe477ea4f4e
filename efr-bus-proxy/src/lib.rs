//! `efr-bus-proxy`: the D-Bus filter of contained calls (docs/bus.md, ADR 0013).
//!
//! Each call with a `bus_filter` grant gets its own listening socket ([`serve`]). A connection to it is
//! authenticated by hand ([`sasl`]), gets its own connection to the real bus as the user, and every message both
//! ways is framed ([`wire`]), parsed with zbus's message types, and checked against the call's [`policy`] by the
//! [`filter`]. Refusals are counted for `bus_refused` ([`report`]).
//!
//! efrd starts it with one end of a socket pair (`--control-fd`) and a folder for its sockets (`--sockets`), as it
//! starts efr-proxy; it opens a plan per call and bus ([`plans`], [`control`]). The proxy hardens itself at start
//! with efr-proxy's layers, Unix sockets only.

pub mod address;
pub mod control;
pub mod filter;
pub mod plans;
pub mod policy;
pub mod report;
pub mod sasl;
pub mod serve;
pub mod wire;

use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::path::Path;

/// Runs the supervised proxy: checks its arguments, hardens itself, then serves the control socket until it ends.
///
/// # Errors
/// A sentence for efrd's log: a bad argument or a layer of hardening that failed.
pub fn run(control_fd: RawFd, sockets: &Path) -> Result<(), String> {
    let control = take_socket(control_fd)?;
    let sockets = sockets
        .canonicalize()
        .map_err(|e| format!("the sockets folder {}: {e}", sockets.display()))?;
    if !sockets.is_dir() {
        return Err(format!("the sockets folder {} is not a folder", sockets.display()));
    }
    let uid = nix::unistd::getuid().as_raw();
    // Sockets are made 0600: only the user (efrd and the sandboxes it starts) can connect.
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o177));
    efr_proxy::harden::apply_with(&sockets, &[libc::AF_UNIX])?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_io()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(async move {
        let control = std::os::unix::net::UnixStream::from(control);
        control
            .set_nonblocking(true)
            .map_err(|e| format!("the control socket: {e}"))?;
        let control = tokio::net::UnixStream::from_std(control).map_err(|e| format!("the control socket: {e}"))?;
        let (reader, writer) = control.into_split();
        let mut plans = plans::Plans::new(sockets, uid);
        control::serve(reader, writer, &mut plans)
            .await
            .map_err(|e| format!("the control socket: {e}"))
    })
}

/// Takes the inherited control descriptor, after checking that it is a socket.
fn take_socket(fd: RawFd) -> Result<OwnedFd, String> {
    if fd < 3 {
        return Err(format!("--control-fd {fd} is a standard stream"));
    }
    // SAFETY: fstat writes only into `stat`; a closed descriptor makes it fail.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &raw mut stat) } != 0 {
        return Err(format!(
            "--control-fd {fd} is not open: {}",
            std::io::Error::last_os_error()
        ));
    }
    if stat.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        return Err(format!("--control-fd {fd} is not a socket"));
    }
    // SAFETY: the descriptor is open, is a socket, and nothing else in this process owns it.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    nix::fcntl::fcntl(&owned, nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC))
        .map_err(|e| format!("--control-fd {fd}: {e}"))?;
    Ok(owned)
}
