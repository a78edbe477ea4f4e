//! Which addresses a tunnel may reach: public unicast only (docs/network.md, "Addresses"; ADR 0010).
//!
//! A name is resolved once and refused when any of its addresses is not public, so a name cannot point a call at
//! the machine itself, its LAN, the cloud metadata service or the tailnet. The ranges are the IANA special-purpose
//! registries (RFC 6890 and its updates) that are not globally reachable, plus the tailnet's. An IPv6 address that
//! embeds an IPv4 one (mapped, compatible, NAT64, 6to4, Teredo) is judged by the IPv4 address it carries, because
//! that is where a translator or tunnel delivers it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Whether `address` is a public unicast address that a contained call may reach.
#[must_use]
pub fn is_public(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

/// IPv4 ranges that are not public, as (network, prefix length).
const NOT_PUBLIC_V4: &[([u8; 4], u8)] = &[
    ([0, 0, 0, 0], 8),       // "this network", unspecified
    ([10, 0, 0, 0], 8),      // private
    ([100, 64, 0, 0], 10),   // shared address space (CGNAT), and the tailnet's addresses
    ([127, 0, 0, 0], 8),     // loopback
    ([169, 254, 0, 0], 16),  // link-local, cloud metadata
    ([172, 16, 0, 0], 12),   // private
    ([192, 0, 0, 0], 24),    // IETF protocol assignments
    ([192, 0, 2, 0], 24),    // documentation (TEST-NET-1)
    ([192, 88, 99, 0], 24),  // 6to4 relay anycast (deprecated)
    ([192, 168, 0, 0], 16),  // private
    ([198, 18, 0, 0], 15),   // benchmarking
    ([198, 51, 100, 0], 24), // documentation (TEST-NET-2)
    ([203, 0, 113, 0], 24),  // documentation (TEST-NET-3)
    ([224, 0, 0, 0], 4),     // multicast
    ([240, 0, 0, 0], 4),     // reserved, and the broadcast address
];

/// IPv6 ranges that are not public (the embedded-IPv4 forms are handled before these).
const NOT_PUBLIC_V6: &[([u16; 8], u8)] = &[
    ([0, 0, 0, 0, 0, 0, 0, 0], 128),               // unspecified
    ([0, 0, 0, 0, 0, 0, 0, 1], 128),               // loopback
    ([0x0100, 0, 0, 0, 0, 0, 0, 0], 64),           // discard-only
    ([0x2001, 0, 0, 0, 0, 0, 0, 0], 23),           // IETF protocol assignments (Teredo is judged above)
    ([0x2001, 0x0db8, 0, 0, 0, 0, 0, 0], 32),      // documentation
    ([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20),           // documentation (RFC 9637)
    ([0x5f00, 0, 0, 0, 0, 0, 0, 0], 16),           // segment routing SIDs
    ([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7),            // unique local, and the tailnet's fd7a:115c:a1e0::/48
    ([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10),           // link-local
    ([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10),           // site-local (deprecated)
    ([0xff00, 0, 0, 0, 0, 0, 0, 0], 8),            // multicast
    ([0x0064, 0xff9b, 0x0001, 0, 0, 0, 0, 0], 48), // local-use NAT64
];

fn is_public_v4(address: Ipv4Addr) -> bool {
    let bits = u32::from(address);
    !NOT_PUBLIC_V4
        .iter()
        .any(|(network, len)| in_prefix(bits, u32::from(Ipv4Addr::from(*network)), *len))
}

fn in_prefix(bits: u32, network: u32, len: u8) -> bool {
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - u32::from(len)) };
    bits & mask == network & mask
}

fn in_prefix_v6(bits: u128, network: u128, len: u8) -> bool {
    let mask = if len == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(len))
    };
    bits & mask == network & mask
}

fn is_public_v6(address: Ipv6Addr) -> bool {
    if let Some(v4) = embedded_v4(address) {
        return is_public_v4(v4);
    }
    let bits = u128::from(address);
    !NOT_PUBLIC_V6
        .iter()
        .any(|(network, len)| in_prefix_v6(bits, u128::from(Ipv6Addr::from(*network)), *len))
}

/// The IPv4 address an IPv6 address delivers to: IPv4-mapped `::ffff:0:0/96`, IPv4-compatible `::/96` (but not
/// `::` and `::1`), IPv4-translated `::ffff:0:0:0/96`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16` (the gateway in bits
/// 16–47) and Teredo `2001::/32` (the server in bits 32–63; the client's address is obfuscated in the low 32 bits,
/// and both are judged: either being not public refuses).
fn embedded_v4(address: Ipv6Addr) -> Option<Ipv4Addr> {
    let bits = u128::from(address);
    let low32 = Ipv4Addr::from((bits & 0xffff_ffff) as u32);
    let segments = address.segments();
    if in_prefix_v6(bits, 0xffff_0000_0000, 96) || in_prefix_v6(bits, 0xffff_0000_0000_0000, 96) {
        return Some(low32);
    }
    if in_prefix_v6(bits, 0, 96) && bits > 1 {
        return Some(low32);
    }
    if in_prefix_v6(bits, 0x0064_ff9b_u128 << 96, 96) {
        return Some(low32);
    }
    if segments[0] == 0x2002 {
        return Some(Ipv4Addr::from((u32::from(segments[1]) << 16) | u32::from(segments[2])));
    }
    if segments[0] == 0x2001 && segments[1] == 0 {
        let server = Ipv4Addr::from((u32::from(segments[2]) << 16) | u32::from(segments[3]));
        let client = Ipv4Addr::from(!((bits & 0xffff_ffff) as u32));
        // Both ends must be public; report whichever is not, so the caller refuses.
        return Some(if is_public_v4(server) { client } else { server });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public(text: &str) -> bool {
        is_public(text.parse().unwrap())
    }

    #[test]
    fn not_public_v4() {
        for address in [
            "0.0.0.0",
            "0.1.2.3",
            "10.1.2.3",
            "100.64.0.1",
            "100.127.255.254",
            "127.0.0.1",
            "127.255.255.255",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "192.168.1.1",
            "198.18.0.1",
            "198.19.255.255",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
        ] {
            assert!(!public(address), "{address} is not public");
        }
        for address in [
            "1.1.1.1",
            "8.8.8.8",
            "11.0.0.1",
            "100.63.255.255",
            "100.128.0.0",
            "172.32.0.1",
            "198.20.0.1",
        ] {
            assert!(public(address), "{address} is public");
        }
    }

    #[test]
    fn not_public_v6() {
        for address in [
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "::ffff:0:7f00:1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::1",
            "2002:7f00:1::",
            "2002:0a00:0001::1",
            "2001:0:7f00:1::1",
            "2001:0:0101:0101::80ff:fefe",
            "2001:db8::1",
            "3fff::1",
            "fc00::1",
            "fd7a:115c:a1e0::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "100::1",
            "2001:2::1",
        ] {
            assert!(!public(address), "{address} is not public");
        }
        for address in [
            "2606:4700::1111",
            "2a00:1450:4001::1",
            "::ffff:1.1.1.1",
            "64:ff9b::101:101",
            "2002:0101:0101::1",
            "2001:0:0101:0101::fefe:fefe",
        ] {
            assert!(public(address), "{address} is public");
        }
    }
}
