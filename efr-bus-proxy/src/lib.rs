//! `efr-bus-proxy`: the D-Bus filter of contained calls (docs/bus.md, ADR 0013).
//!
//! Each call with a `bus_filter` grant gets its own listening socket ([`serve`]). A connection to it is
//! authenticated by hand ([`sasl`]), gets its own connection to the real bus as the user, and every message both
//! ways is framed ([`wire`]), its header read and checked in one walk ([`header`]), and checked against the call's
//! [`policy`] by the [`filter`]; a message that passes goes on as the bytes it came as, renumbered in place (zbus's
//! message types parse a body and write the answers the filter makes). Refusals are counted for `bus_refused`
//! ([`report`]).
//!
//! efrd starts it with one end of a socket pair (`--control-fd`) and a folder for its sockets (`--sockets`), as it
//! starts efr-proxy; it opens a plan per call and bus ([`plans`], [`control`]). The proxy hardens itself at start
//! ([`harden`]) with the layers efr-proxy has too, Unix sockets only; the mechanism of both is [`efr_helper`]'s.

pub mod address;
pub mod control;
pub mod filter;
pub mod harden;
pub mod header;
pub mod plans;
pub mod policy;
pub mod report;
pub mod sasl;
pub mod serve;
pub mod wire;

use std::os::fd::RawFd;
use std::path::Path;

use efr_helper::start::Handover;

/// Runs the supervised proxy: checks its arguments, hardens itself, then serves the control socket until it ends.
///
/// # Errors
/// A sentence for efrd's log: a bad argument or a layer of hardening that failed.
pub fn run(control_fd: RawFd, sockets: &Path) -> Result<(), String> {
    let Handover { control, sockets } = efr_helper::start::take_over(control_fd, sockets)?;
    let uid = nix::unistd::getuid().as_raw();
    harden::apply(&sockets)?;
    // One thread: a message's relay is a few microseconds of work between two wakeups, and a wakeup that crosses to
    // another worker thread costs more than the work (docs/bus.md, "Cost").
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(async move {
        let mut plans = plans::Plans::new(sockets, uid);
        efr_helper::control::serve_socket(control, &mut plans).await
    })
}
