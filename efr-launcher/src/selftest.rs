//! `efr-launcher self-test net-view`: run as the command of a contained call with the `net_view` grant, it checks
//! from inside what the view promises (docs/protocol.md, "The contract": "the network view (phase D1)"), for efrd's
//! sandbox probe:
//!
//! - an `AF_INET` socket cannot be opened (the seccomp family filter);
//! - an `AF_UNIX` and an `AF_NETLINK` (route) socket can;
//! - a connect to the abstract socket `--abstract NAME`, which the prober listens on in the host's namespace, is
//!   refused (Landlock's abstract-socket scope; without it the connect would succeed, as the namespace is shared).
//!
//! It prints one JSON object with each check and exits 0 only when all hold.

use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixStream};
use std::process::ExitCode;

use nix::sys::socket::{AddressFamily, SockFlag, SockProtocol, SockType, socket};
use serde::Serialize;

/// The checks of the net_view self-test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct NetViewChecks {
    /// `socket(AF_INET)` failed.
    pub inet_refused: bool,
    /// `socket(AF_UNIX)` worked.
    pub unix_open: bool,
    /// `socket(AF_NETLINK, NETLINK_ROUTE)` worked.
    pub netlink_open: bool,
    /// The connect to the prober's abstract socket failed.
    pub abstract_refused: bool,
}

impl NetViewChecks {
    /// Every check holds.
    pub fn passed(&self) -> bool {
        self.inet_refused && self.unix_open && self.netlink_open && self.abstract_refused
    }
}

/// Runs the checks against the abstract socket `name`.
pub fn net_view(name: &str) -> NetViewChecks {
    let inet_refused = socket(AddressFamily::Inet, SockType::Stream, SockFlag::SOCK_CLOEXEC, None).is_err();
    let unix_open = socket(AddressFamily::Unix, SockType::Stream, SockFlag::SOCK_CLOEXEC, None).is_ok();
    let netlink_open = socket(
        AddressFamily::Netlink,
        SockType::Raw,
        SockFlag::SOCK_CLOEXEC,
        SockProtocol::NetlinkRoute,
    )
    .is_ok();
    let abstract_refused = match SocketAddr::from_abstract_name(name.as_bytes()) {
        Ok(addr) => UnixStream::connect_addr(&addr).is_err(),
        Err(_) => false,
    };
    NetViewChecks {
        inet_refused,
        unix_open,
        netlink_open,
        abstract_refused,
    }
}

/// The `self-test net-view` command: prints the checks, exit 0 when they pass, 1 when not.
pub fn run_net_view(name: &str) -> ExitCode {
    let checks = net_view(name);
    println!("{}", serde_json::to_string(&checks).unwrap_or_default());
    if checks.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixListener;

    use super::*;

    #[test]
    fn outside_a_sandbox_the_view_is_wide_open() {
        // The control: without the sandbox every check that guards something fails, so the self-test can fail.
        let name = format!("efr-selftest-{}", std::process::id());
        let _listener = UnixListener::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap()).unwrap();
        let checks = net_view(&name);
        assert!(!checks.inet_refused && checks.unix_open && checks.netlink_open && !checks.abstract_refused);
        assert!(!checks.passed());
    }
}
