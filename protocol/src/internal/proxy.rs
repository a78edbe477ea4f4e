//! The control messages between efrd and `efr-proxy` (docs/network.md, ADR 0010).
//!
//! efrd starts `efr-proxy --control-fd 3 --sockets <dir>` with one end of a Unix socket pair on fd 3 and talks to it
//! with the public protocol's byte framing ([`crate::codec`]) and request frames ([`crate::frame`]): each request
//! `{"id", "method", "params"}` gets one `{"id", "item"}` and then `{"id", "end": {}}`, or `{"id", "error"}`. There is
//! no `hello`; the pair is private to the two processes, and the proxy ends when efrd's end closes.
//!
//! - [`OPEN`] with [`OpenPlan`] → [`Opened`]: a listening Unix socket (mode 0600, in the sockets folder) that
//!   serves one call's connections under that call's lists.
//! - [`CLOSE`] with [`ClosePlan`] → [`Closed`]: the socket is removed, the plan's open tunnels are cut, and its
//!   refusals and byte counts are returned.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::host::HostPattern;
use crate::wire::Blocked;

/// `proxy.open`: params [`OpenPlan`], item [`Opened`].
pub const OPEN: &str = "proxy.open";
/// `proxy.close`: params [`ClosePlan`], item [`Closed`].
pub const CLOSE: &str = "proxy.close";

/// The rules of one call's connections.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenPlan {
    /// Who the plan is for, for the proxy's log (a call id); never a secret.
    pub call: String,
    /// Hosts the call may reach. A host no entry matches is refused `not_allowed`.
    pub allow: Vec<HostPattern>,
    /// Hosts the call may never reach; checked first, refused `denied`.
    pub deny: Vec<HostPattern>,
}

/// An open plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Opened {
    /// The plan's number, for [`ClosePlan`].
    pub plan: u64,
    /// The plan's listening socket, absolute.
    pub socket: PathBuf,
}

/// Which plan to close.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClosePlan {
    /// From [`Opened::plan`].
    pub plan: u64,
}

/// What one plan's connections did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Closed {
    /// Refusals by host, port and reason, most frequent first, at most
    /// [`crate::wire::SandboxSummary::MAX_BLOCKED`].
    pub blocked: Vec<Blocked>,
    /// Refusals that `blocked` leaves out.
    pub blocked_more: u64,
    /// Tunnels that were opened.
    pub tunnels: u64,
    /// Bytes from the call to the hosts.
    pub bytes_sent: u64,
    /// Bytes from the hosts to the call.
    pub bytes_received: u64,
}
