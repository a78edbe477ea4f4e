//! Admission on the tailnet listener, before efrd reads a byte: the peer's address range, then who tailscaled says
//! the peer is (docs/protocol.md, "Remote devices": the tailnet WebSocket).
//!
//! - An address outside 100.64.0.0/10 and fd7a:115c:a1e0::/48, such as a host behind a subnet route, is closed with
//!   no question to tailscaled.
//! - Then whois: this machine itself, a tagged node, a node that another tailnet shares in, a node of another user,
//!   and a peer tailscaled does not know are closed at once.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::localapi::{SelfFacts, WhoIs};

/// Why a peer is closed before a byte is read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The address is not one Tailscale gives to nodes.
    #[error("the address is outside Tailscale's ranges")]
    Range,
    /// The peer is this machine itself.
    #[error("the peer is this machine")]
    SelfNode,
    /// The peer carries ACL tags: it belongs to no user.
    #[error("the peer is a tagged node")]
    Tagged,
    /// Another tailnet shares the node into this one.
    #[error("the peer is a node shared in from another tailnet")]
    SharedIn,
    /// The node belongs to another user.
    #[error("the peer belongs to another user")]
    OtherUser,
    /// tailscaled does not know the peer, or could not be asked.
    #[error("tailscaled does not know the peer")]
    Unknown,
}

/// The facts of an admitted peer: what the hello's `prove` and the pairing's `pending` name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerFacts {
    /// The stable node id (`prove.peer_node`).
    pub node: String,
    /// The MagicDNS name without its final dot, for the terminal.
    pub node_name: String,
    /// The user's login, such as `ada@github`.
    pub user_login: String,
    /// The user id.
    pub user_id: i64,
    /// The OS the node reports; `None` when empty.
    pub os: Option<String>,
}

/// 100.64.0.0/10, Tailscale's IPv4 range (the shared address space of RFC 6598).
const V4_NET: Ipv4Addr = Ipv4Addr::new(100, 64, 0, 0);
/// fd7a:115c:a1e0::/48, Tailscale's IPv6 range.
const V6_NET: Ipv6Addr = Ipv6Addr::new(0xfd7a, 0x115c, 0xa1e0, 0, 0, 0, 0, 0);

/// Whether `ip` is in 100.64.0.0/10 or fd7a:115c:a1e0::/48. An IPv4-mapped IPv6 address counts as its IPv4.
#[must_use]
pub fn in_tailscale_range(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => u32::from(v4) >> 22 == u32::from(V4_NET) >> 22,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => in_tailscale_range(IpAddr::V4(v4)),
            None => u128::from(v6) >> 80 == u128::from(V6_NET) >> 80,
        },
    }
}

/// Judges a whois answer against this node.
///
/// # Errors
/// The [`Refusal`] that closes the connection.
pub fn judge(whois: &WhoIs, me: &SelfFacts) -> Result<PeerFacts, Refusal> {
    let node = &whois.node;
    if node.stable_id == me.node {
        return Err(Refusal::SelfNode);
    }
    if !node.tags.is_empty() {
        return Err(Refusal::Tagged);
    }
    if node.sharer != 0 {
        return Err(Refusal::SharedIn);
    }
    if node.user != me.user_id || whois.user_profile.id != me.user_id {
        return Err(Refusal::OtherUser);
    }
    let os = node.hostinfo.os.trim();
    Ok(PeerFacts {
        node: node.stable_id.clone(),
        node_name: node.name.trim_end_matches('.').to_owned(),
        user_login: whois.user_profile.login_name.clone(),
        user_id: node.user,
        os: (!os.is_empty()).then(|| os.to_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::localapi::{HostInfo, UserProfile, WhoIsNode};

    fn me() -> SelfFacts {
        SelfFacts {
            ipv4: Ipv4Addr::new(100, 101, 102, 103),
            node: "n7fLaptop22CNTRL".into(),
            user_id: 1,
            tailnet: "ada.github".into(),
            fqdn: None,
        }
    }

    fn phone() -> WhoIs {
        WhoIs {
            node: WhoIsNode {
                stable_id: "nKq3wPhone11CNTRL".into(),
                name: "ada-pixel.tail3f2a.ts.net.".into(),
                user: 1,
                tags: Vec::new(),
                sharer: 0,
                hostinfo: HostInfo { os: "android".into() },
            },
            user_profile: UserProfile {
                id: 1,
                login_name: "ada@github".into(),
            },
        }
    }

    #[test]
    fn the_ranges_are_tailscales_and_nothing_around_them() {
        for inside in [
            "100.64.0.0",
            "100.127.255.255",
            "100.101.102.103",
            "fd7a:115c:a1e0::1",
            "::ffff:100.64.0.1",
        ] {
            assert!(in_tailscale_range(inside.parse().unwrap()), "{inside}");
        }
        for outside in [
            "100.63.255.255",
            "100.128.0.0",
            "192.168.1.5",
            "127.0.0.1",
            "fd7a:115c:a1e1::1",
            "::1",
        ] {
            assert!(!in_tailscale_range(outside.parse().unwrap()), "{outside}");
        }
    }

    #[test]
    fn the_users_own_untagged_node_is_admitted_with_its_facts() {
        let facts = judge(&phone(), &me()).unwrap();
        assert_eq!(facts.node, "nKq3wPhone11CNTRL");
        assert_eq!(facts.node_name, "ada-pixel.tail3f2a.ts.net");
        assert_eq!(facts.user_login, "ada@github");
        assert_eq!(facts.os.as_deref(), Some("android"));
    }

    #[test]
    fn self_tagged_shared_in_and_another_user_are_refused() {
        let mut whois = phone();
        whois.node.stable_id = me().node;
        assert_eq!(judge(&whois, &me()), Err(Refusal::SelfNode));
        let mut whois = phone();
        whois.node.tags = vec!["tag:server".into()];
        assert_eq!(judge(&whois, &me()), Err(Refusal::Tagged));
        let mut whois = phone();
        whois.node.sharer = 42;
        assert_eq!(judge(&whois, &me()), Err(Refusal::SharedIn));
        let mut whois = phone();
        whois.node.user = 2;
        whois.user_profile.id = 2;
        assert_eq!(judge(&whois, &me()), Err(Refusal::OtherUser));
    }
}
