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

use std::os::fd::RawFd;
use std::path::Path;

/// Runs the supervised proxy: checks its arguments, hardens itself, then serves the control socket until it ends.
///
/// # Errors
/// A sentence for efrd's log: a bad argument or a layer of hardening that failed.
pub fn run(control_fd: RawFd, sockets: &Path) -> Result<(), String> {
    let control = efr_proxy::take_socket(control_fd)?;
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
