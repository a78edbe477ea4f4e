//! `efr-proxy`: the egress proxy of contained calls (docs/network.md, ADR 0010).
//!
//! efrd starts it with one end of a socket pair (`--control-fd`) and a folder for its sockets (`--sockets`). For
//! each call efrd opens a plan ([`plans`]): a listening Unix socket whose connections are HTTP/1.1 CONNECT tunnels
//! checked in the order of [`tunnel`]. The proxy hardens itself at start ([`harden`]) and ends when efrd's end of
//! the pair closes ([`control`]).

pub mod address;
pub mod connect;
pub mod control;
pub mod harden;
pub mod hello;
pub mod plan;
pub mod plans;
pub mod resolve;
pub mod tunnel;

use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::path::Path;

use nix::sys::resource::{Resource, getrlimit, setrlimit};

/// The worker threads of the runtime: copying bytes needs few, and the machine is shared with the call.
const WORKER_THREADS: usize = 2;

/// Runs the proxy: reads what it needs, hardens itself, then serves the control socket until it ends.
///
/// # Errors
/// A sentence for efrd's log: a bad argument, a file that could not be read, a layer of hardening that failed.
pub fn run(control_fd: RawFd, sockets: &Path) -> Result<(), String> {
    let control = take_socket(control_fd)?;
    let sockets = sockets
        .canonicalize()
        .map_err(|e| format!("the sockets folder {}: {e}", sockets.display()))?;
    if !sockets.is_dir() {
        return Err(format!("the sockets folder {} is not a folder", sockets.display()));
    }
    let system = resolve::SystemConfig::read()?;
    raise_nofile()?;
    // Sockets are made 0600: only the user (efrd and the launcher it starts) can connect.
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o177));
    harden::apply(&sockets)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKER_THREADS)
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(async move {
        let resolver = resolve::Resolver::new(system)?;
        let control = std::os::unix::net::UnixStream::from(control);
        control
            .set_nonblocking(true)
            .map_err(|e| format!("the control socket: {e}"))?;
        let control = tokio::net::UnixStream::from_std(control).map_err(|e| format!("the control socket: {e}"))?;
        let (reader, writer) = control.into_split();
        let mut plans = plans::Plans::new(sockets, resolver);
        control::serve(reader, writer, &mut plans)
            .await
            .map_err(|e| format!("the control socket: {e}"))
    })
}

/// Takes the inherited control descriptor `fd` (3 or more), after checking that it is an open socket, and marks it
/// close-on-exec. Shared with efr-bus-proxy, which inherits its control socket the same way.
///
/// # Errors
/// A standard stream, a closed descriptor or one that is not a socket, in words naming `--control-fd`.
pub fn take_socket(fd: RawFd) -> Result<OwnedFd, String> {
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

/// Raises the soft limit of descriptors to the hard one: each tunnel holds two.
fn raise_nofile() -> Result<(), String> {
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).map_err(|e| format!("getrlimit: {e}"))?;
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard).map_err(|e| format!("cannot raise the descriptor limit: {e}"))
}
