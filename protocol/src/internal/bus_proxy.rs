//! The control messages between efrd and `efr-bus-proxy` (docs/bus.md, ADR 0013): the same framing and request
//! frames as efr-proxy's ([`super::proxy`]), over a socket pair on the proxy's `--control-fd`.
//!
//! - [`OPEN`] with [`OpenBusPlan`] → [`OpenedBus`]: a listening Unix socket (mode 0600, in the sockets folder) whose
//!   every connection gets its own connection to the real bus as the user, filtered by the plan's rules.
//! - [`CLOSE`] with [`super::proxy::ClosePlan`] → [`ClosedBus`]: the socket is removed, the plan's connections are
//!   cut, and its refusals are returned.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::wire::{Bus, BusRefusal};

/// `bus.open`: params [`OpenBusPlan`], item [`OpenedBus`].
pub const OPEN: &str = "bus.open";
/// `bus.close`: params [`super::proxy::ClosePlan`], item [`ClosedBus`].
pub const CLOSE: &str = "bus.close";

/// The rules of one call's connections to one bus. Names are `org.foo.Bar` or `org.foo.*`; call and broadcast rules
/// are `NAME=INTERFACE.MEMBER@PATH` (docs/bus.md, "Policy").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenBusPlan {
    /// Who the plan is for, for the proxy's log (a call id); never a secret.
    pub call: String,
    /// Which bus, for the refusals' reports.
    pub bus: Bus,
    /// The real bus's address (`unix:path=...`).
    pub upstream: String,
    /// Names the call may see.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub see: Vec<String>,
    /// Names the call may talk to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub talk: Vec<String>,
    /// Names the call may own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub own: Vec<String>,
    /// Methods the call may call on names it may not talk to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub call_rules: Vec<String>,
    /// Signals the call may receive from names it may not talk to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub broadcast_rules: Vec<String>,
    /// Names to and from which descriptors may pass.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fds: Vec<String>,
}

/// An open bus plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenedBus {
    /// The plan's number, for [`super::proxy::ClosePlan`].
    pub plan: u64,
    /// The plan's listening socket, absolute.
    pub socket: PathBuf,
}

/// What one bus plan's connections were refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClosedBus {
    /// Refusals by bus, name, member and path, at most 16 (the bound of `bus_refused`).
    pub bus_refused: Vec<BusRefusal>,
    /// Refusals that `bus_refused` leaves out.
    pub bus_refused_more: u64,
    /// Connections served.
    pub connections: u64,
}
