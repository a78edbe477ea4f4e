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
//! - **seccomp**: an allow-list: the runtime's calls ([`efr_helper::harden::seccomp::RUNTIME_CALLS`]), the
//!   proxy's [`ALLOWED_CALLS`], `socket` for [`FAMILIES`] only (`AF_UNIX`, `AF_INET`, `AF_INET6`), `ioctl` for
//!   `FIONBIO` and `FIOCLEX` only, `socketpair` for `AF_UNIX` only; every other call fails with `EPERM`, and calls
//!   of another architecture (x32, i386) match no rule and fail the same way.

use std::path::Path;

use efr_helper::harden::seccomp::Policy;

/// The system calls the proxy allows whatever their arguments, besides the runtime's: sockets (the plans'
/// listeners, the tunnels, DNS) and removing a plan's socket.
pub const ALLOWED_CALLS: &[(&str, i64)] = &[
    ("connect", libc::SYS_connect),
    ("bind", libc::SYS_bind),
    ("listen", libc::SYS_listen),
    ("accept4", libc::SYS_accept4),
    ("getsockopt", libc::SYS_getsockopt),
    ("setsockopt", libc::SYS_setsockopt),
    ("getsockname", libc::SYS_getsockname),
    ("getpeername", libc::SYS_getpeername),
    ("shutdown", libc::SYS_shutdown),
    ("sendto", libc::SYS_sendto),
    ("recvfrom", libc::SYS_recvfrom),
    ("sendmsg", libc::SYS_sendmsg),
    ("recvmsg", libc::SYS_recvmsg),
    ("sendmmsg", libc::SYS_sendmmsg),
    ("recvmmsg", libc::SYS_recvmmsg),
    ("unlinkat", libc::SYS_unlinkat),
    #[cfg(target_arch = "x86_64")]
    ("unlink", libc::SYS_unlink),
];

/// The socket families the proxy opens: Unix (its plans' sockets), IPv4 and IPv6 (tunnels and DNS).
pub const FAMILIES: &[i32] = &[libc::AF_UNIX, libc::AF_INET, libc::AF_INET6];

/// Applies every layer, in order ([`efr_helper::harden::apply`]); the calling thread must be the only one.
///
/// # Errors
/// The layer that failed, in a sentence: the proxy must not serve without it.
pub fn apply(sockets: &Path) -> Result<(), String> {
    let policy = Policy {
        calls: ALLOWED_CALLS,
        families: FAMILIES,
    };
    efr_helper::harden::apply(sockets, &policy)
}
