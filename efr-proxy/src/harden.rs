//! The proxy's hardening, applied once at start, after it has read what it needs and before it starts any thread
//! (so every thread inherits it): a socket helper's layers ([`efr_helper::harden::apply`]) with the proxy's own
//! policy (ADR 0010, "Hardening").
//!
//! - **Capabilities**: all five sets emptied (bounding first) and read back.
//! - **no_new_privs**: set, so that nothing it could exec gains privileges (it execs nothing: `execve` is not in
//!   the allow-list).
//! - **Landlock**: every filesystem right of the ABI is handled and only two are granted, beneath the sockets
//!   folder: making a socket and removing a file. The proxy opens no file after start. With ABI 4 binding a TCP
//!   port is handled and never granted; with ABI 6 abstract Unix sockets and signals are scoped.
//! - **seccomp**: an allow-list: the runtime's calls ([`efr_helper::harden::seccomp::RUNTIME_CALLS`]), a socket
//!   server's, the proxy's [`ALLOWED_CALLS`] (DNS's batches, the relay's pipes and splices), `socket` for
//!   [`FAMILIES`] only (`AF_UNIX`, `AF_INET`, `AF_INET6`), `ioctl` for `FIONBIO` and `FIOCLEX` only, `socketpair`
//!   for `AF_UNIX` only; every other call fails with `EPERM`, and calls of another architecture (x32, i386) match no
//!   rule and fail the same way.

use std::path::Path;

use efr_helper::harden::seccomp::{Policy, SOCKET_SERVER_CALLS};

/// The system calls the proxy allows whatever their arguments, besides the runtime's and a socket server's
/// ([`efr_helper::harden::seccomp::SOCKET_SERVER_CALLS`]): the batched sends and receives of DNS, and the tunnels'
/// zero-copy relay ([`crate::relay`]): `pipe2` for a direction's pipe and `splice` to move bytes through it. Without
/// them the relay would fall back to copying every tunnel (seccomp answers `EPERM`), not fail; the pipe's size is
/// read with `fcntl`, which the runtime's calls allow already.
pub const ALLOWED_CALLS: &[(&str, i64)] = &[
    ("sendmmsg", libc::SYS_sendmmsg),
    ("recvmmsg", libc::SYS_recvmmsg),
    ("pipe2", libc::SYS_pipe2),
    ("splice", libc::SYS_splice),
];

/// The socket families the proxy opens: Unix (its plans' sockets), IPv4 and IPv6 (tunnels and DNS).
pub const FAMILIES: &[i32] = &[libc::AF_UNIX, libc::AF_INET, libc::AF_INET6];

/// Applies every layer, in order ([`efr_helper::harden::apply`]); the calling thread must be the only one.
///
/// # Errors
/// The layer that failed, in a sentence: the proxy must not serve without it.
pub fn apply(sockets: &Path) -> Result<(), String> {
    let policy = Policy {
        calls: &[SOCKET_SERVER_CALLS, ALLOWED_CALLS],
        families: FAMILIES,
    };
    efr_helper::harden::apply(sockets, &policy)
}
