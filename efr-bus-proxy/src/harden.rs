//! The bus proxy's hardening, applied once at start before it starts any thread (so every thread inherits it): a
//! socket helper's layers ([`efr_helper::harden::apply`]) with the bus proxy's own policy (ADR 0013).
//!
//! - **Capabilities** emptied and read back; **no_new_privs**; **Landlock**: only making a socket and removing a
//!   file beneath the sockets folder.
//! - **seccomp**: an allow-list: the runtime's calls ([`efr_helper::harden::seccomp::RUNTIME_CALLS`]), a socket
//!   server's ([`SOCKET_SERVER_CALLS`]: listeners, the upstream connections, messages with their descriptors), and
//!   `socket` for `AF_UNIX` only: the plans' listeners and the connections to the real bus are all Unix sockets.
//!   Every other call fails with `EPERM`; the batched sends of DNS that efr-proxy adds are not allowed here.

use std::path::Path;

use efr_helper::harden::seccomp::{Policy, SOCKET_SERVER_CALLS};

/// Applies every layer, in order; the calling thread must be the only one.
///
/// # Errors
/// The layer that failed, in a sentence: the proxy must not serve without it.
pub fn apply(sockets: &Path) -> Result<(), String> {
    let policy = Policy {
        calls: &[SOCKET_SERVER_CALLS],
        families: &[libc::AF_UNIX],
    };
    efr_helper::harden::apply(sockets, &policy)
}
