//! The bus proxy's hardening, applied once at start before it starts any thread (so every thread inherits it): a
//! socket helper's layers ([`efr_helper::harden::apply`]) with the bus proxy's own policy (ADR 0013).
//!
//! - **Capabilities** emptied and read back; **no_new_privs**; **Landlock**: only making a socket and removing a
//!   file beneath the sockets folder.
//! - **seccomp**: an allow-list: the runtime's calls ([`efr_helper::harden::seccomp::RUNTIME_CALLS`]), the bus
//!   proxy's [`ALLOWED_CALLS`], and `socket` for `AF_UNIX` only: the plans' listeners and the connections to the
//!   real bus are all Unix sockets. Every other call fails with `EPERM`.

use std::path::Path;

use efr_helper::harden::seccomp::Policy;

/// The system calls the bus proxy allows whatever their arguments, besides the runtime's: a plan's listener
/// (`bind`, `listen`, `accept4`), the upstream connection (`connect`), the messages both ways with the descriptors
/// they carry (`sendmsg`, `recvmsg`), the peer's credentials and socket options, and removing a plan's socket. It is
/// the list this proxy hardened with when it shared efr-proxy's; a shorter one (without the `mmsg` pair, which is
/// DNS's there) would need the supervised test to show it suffices.
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

/// Applies every layer, in order; the calling thread must be the only one.
///
/// # Errors
/// The layer that failed, in a sentence: the proxy must not serve without it.
pub fn apply(sockets: &Path) -> Result<(), String> {
    let policy = Policy {
        calls: ALLOWED_CALLS,
        families: &[libc::AF_UNIX],
    };
    efr_helper::harden::apply(sockets, &policy)
}
