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
use crate::wire::{BlockReason, Blocked};

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

/// What a plan's lists decide for one host on one port, with the entry that decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListDecision<'a> {
    /// The first deny entry that matches: refused `denied`.
    Denied(&'a HostPattern),
    /// No deny entry matches, and this is the first allow entry that does.
    Allowed(&'a HostPattern),
    /// No entry of either list matches: refused `not_allowed`.
    NotAllowed,
}

impl ListDecision<'_> {
    /// The refusal, or `Ok` when allowed.
    ///
    /// # Errors
    /// `denied` or `not_allowed`.
    pub fn refusal(self) -> Result<(), BlockReason> {
        match self {
            Self::Denied(_) => Err(BlockReason::Denied),
            Self::Allowed(_) => Ok(()),
            Self::NotAllowed => Err(BlockReason::NotAllowed),
        }
    }
}

/// The decision of a plan's lists for `host` (normal form) on `port`: `deny` first, so deny wins (a deny entry
/// without a port refuses every port), then `allow` (docs/network.md, "The rules, in order", rules 4 and 5). `efr-proxy` and efrd's `sandbox.explain_host` both
/// call this.
#[must_use]
pub fn decide<'a>(allow: &'a [HostPattern], deny: &'a [HostPattern], host: &str, port: u16) -> ListDecision<'a> {
    if let Some(entry) = deny.iter().find(|pattern| pattern.denies(host, port)) {
        return ListDecision::Denied(entry);
    }
    allow
        .iter()
        .find(|pattern| pattern.matches(host, port))
        .map_or(ListDecision::NotAllowed, ListDecision::Allowed)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn patterns(list: &[&str]) -> Vec<HostPattern> {
        list.iter().map(|p| p.parse().unwrap()).collect()
    }

    #[test]
    fn deny_wins_and_the_first_matching_entry_decides() {
        let allow = patterns(&["**.github.com", "github.com", "*:8443"]);
        let deny = patterns(&["gist.github.com", "*.gist.github.com"]);
        assert_eq!(
            decide(&allow, &deny, "github.com", 443),
            ListDecision::Allowed(&allow[0])
        );
        assert_eq!(
            decide(&allow, &deny, "gist.github.com", 443),
            ListDecision::Denied(&deny[0])
        );
        assert_eq!(
            decide(&allow, &deny, "a.gist.github.com", 443),
            ListDecision::Denied(&deny[1])
        );
        assert_eq!(decide(&allow, &deny, "example.org", 443), ListDecision::NotAllowed);
        assert_eq!(
            decide(&allow, &deny, "example.org", 8443),
            ListDecision::Allowed(&allow[2])
        );
        assert_eq!(
            decide(&allow, &deny, "example.org", 443).refusal(),
            Err(BlockReason::NotAllowed)
        );
        // `deny = ["*"]` with an allow entry refuses everything.
        let everything = patterns(&["*"]);
        assert_eq!(
            decide(&allow, &everything, "github.com", 443).refusal(),
            Err(BlockReason::Denied)
        );
    }
}
