//! `efr-proxy`: the egress proxy of contained calls (docs/network.md, ADR 0010).
//!
//! efrd starts it with one end of a socket pair (`--control-fd`) and a folder for its sockets (`--sockets`). For
//! each call efrd opens a plan ([`plans`]): a listening Unix socket whose connections are HTTP/1.1 CONNECT tunnels
//! checked in the order of [`tunnel`]. The proxy hardens itself at start ([`harden`]) and ends when efrd's end of
//! the pair closes ([`control`]); the mechanism of both, and of taking over the pair, is [`efr_helper`]'s.

pub mod address;
pub mod connect;
pub mod control;
pub mod harden;
pub mod hello;
pub mod plan;
pub mod plans;
pub mod relay;
pub mod resolve;
pub mod tunnel;

use std::os::fd::RawFd;
use std::path::Path;

use efr_helper::start::Handover;
use nix::sys::resource::{Resource, getrlimit, setrlimit};

/// The worker threads of the runtime: copying bytes needs few, and the machine is shared with the call.
const WORKER_THREADS: usize = 2;

/// Runs the proxy: reads what it needs, hardens itself, then serves the control socket until it ends.
///
/// # Errors
/// A sentence for efrd's log: a bad argument, a file that could not be read, a layer of hardening that failed.
pub fn run(control_fd: RawFd, sockets: &Path) -> Result<(), String> {
    let Handover { control, sockets } = efr_helper::start::take_over(control_fd, sockets)?;
    let system = resolve::SystemConfig::read()?;
    raise_nofile()?;
    harden::apply(&sockets)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKER_THREADS)
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(async move {
        let resolver = resolve::Resolver::new(system)?;
        let mut plans = plans::Plans::new(sockets, resolver);
        efr_helper::control::serve_socket(control, &mut plans).await
    })
}

/// Raises the soft limit of descriptors to the hard one: each tunnel holds two sockets and, while data flows, up to
/// two pipes (four descriptors).
fn raise_nofile() -> Result<(), String> {
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).map_err(|e| format!("getrlimit: {e}"))?;
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard).map_err(|e| format!("cannot raise the descriptor limit: {e}"))
}
