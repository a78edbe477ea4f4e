//! The refusal battery: each case through the real proxy, refused with its expected reason and counted in the
//! plan's tally.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::time::{Duration, Instant};

use efr_protocol::wire::{BlockReason, Blocked};

use super::harness::{Client, Proxy, World};

fn blocked(host: &str, port: u16, reason: BlockReason, count: u64) -> Blocked {
    Blocked {
        host: host.into(),
        port,
        reason,
        count,
    }
}

/// Asserts that the tally holds exactly `expected` (in any order).
fn assert_tally(mut got: Vec<Blocked>, mut expected: Vec<Blocked>) {
    let key = |b: &Blocked| (b.host.clone(), b.port, b.reason.as_str());
    got.sort_by_key(key);
    expected.sort_by_key(key);
    assert_eq!(got, expected);
}

/// Every IP form is refused before the `200` with `403` and `ip_literal`, even one the allow list names.
#[test]
fn ip_literals_in_every_form() {
    let world = World::new();
    let mut proxy = Proxy::start(&world.netns);
    let plan = proxy.open(&["*"], &[]);
    let literals = [
        ("1.1.1.1", "1.1.1.1"),
        ("16843009", "16843009"),
        ("0x01010101", "0x01010101"),
        ("0177.0.0.1", "0177.0.0.1"),
        ("127.1", "127.1"),
        ("0x7f.1", "0x7f.1"),
        ("127.0.0.1.", "127.0.0.1."),
        ("2130706433", "2130706433"),
        ("[::1]", "[::1]"),
        ("[::]", "[::]"),
        ("[::ffff:127.0.0.1]", "[::ffff:127.0.0.1]"),
        ("[fe80::1%25lo]", "[fe80::1%25lo]"),
        ("[64:ff9b::a9fe:a9fe]", "[64:ff9b::a9fe:a9fe]"),
        ("[2001:db8::1]", "[2001:db8::1]"),
        // Fullwidth digits and an ideographic full stop: an address once normalised.
        ("１２７。０.０.１", "127.0.0.1"),
    ];
    for (target, _) in literals {
        let mut client = Client::connect_to(&plan.socket, &format!("{target}:443"));
        let head = client.response_head();
        assert!(head.starts_with("HTTP/1.1 403 "), "{target}: {head}");
        let body = String::from_utf8(client.rest()).unwrap();
        assert!(body.contains("ip_literal"), "{target}: {body}");
    }
    let closed = proxy.close(plan.plan);
    let expected = literals
        .iter()
        .map(|(_, host)| blocked(host, 443, BlockReason::IpLiteral, 1))
        .collect();
    assert_tally(closed.blocked, expected);
    assert_eq!((closed.tunnels, closed.blocked_more), (0, 0));
}

/// A name whose address is not public is refused after the `200` (`denied`), whatever the allow list says; a name
/// with one public and one private address too.
#[test]
fn names_that_resolve_to_addresses_that_are_not_public() {
    let world = World::new();
    let mut proxy = Proxy::start(&world.netns);
    let plan = proxy.open(&["*.test"], &[]);
    let names = [
        "loop.test",
        "private.test",
        "cgnat.test",
        "metadata.test",
        "v6loop.test",
        "mixed.test",
    ];
    for name in names {
        let mut client = Client::connect_to(&plan.socket, &format!("{name}:443"));
        assert_eq!(client.response_head(), "HTTP/1.1 200 Connection established\r\n\r\n");
        client.send(&world.hello(name, true));
        assert_eq!(
            client.rest(),
            b"",
            "{name}: the proxy must close without a byte from any host"
        );
    }
    let closed = proxy.close(plan.plan);
    let expected = names
        .iter()
        .map(|name| blocked(name, 443, BlockReason::Denied, 1))
        .collect();
    assert_tally(closed.blocked, expected);
    assert_eq!(closed.tunnels, 0);
    assert_eq!(
        world.server.requests(),
        0,
        "mixed.test must not reach the server at its public address"
    );
}

/// What comes after the `200` must be a ClientHello whose SNI is the CONNECT host: fronting, no SNI, plain HTTP and
/// a CONNECT to a second proxy are `not_tls`; an absolute-form GET is refused `not_tls` before any `200`.
#[test]
fn tls_with_the_connect_host_as_sni() {
    let world = World::new();
    let mut proxy = Proxy::start(&world.netns);
    let plan = proxy.open(&["allowed.test", "other.test"], &[]);
    let after_200: [(&str, Vec<u8>); 4] = [
        ("fronting", world.hello("other.test", true)),
        ("no SNI", world.hello("allowed.test", false)),
        ("plain HTTP", b"GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n".to_vec()),
        (
            "a second proxy",
            b"CONNECT other.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n".to_vec(),
        ),
    ];
    for (case, bytes) in &after_200 {
        let mut client = Client::connect_to(&plan.socket, "allowed.test:443");
        assert_eq!(
            client.response_head(),
            "HTTP/1.1 200 Connection established\r\n\r\n",
            "{case}"
        );
        client.send(bytes);
        assert_eq!(client.rest(), b"", "{case}: closed without a byte from the host");
    }
    let mut client = Client::connect(&plan.socket);
    client.send(b"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n");
    assert!(client.response_head().starts_with("HTTP/1.1 403 "));
    let closed = proxy.close(plan.plan);
    assert_tally(
        closed.blocked,
        vec![
            blocked("allowed.test", 443, BlockReason::NotTls, 4),
            blocked("", 0, BlockReason::NotTls, 1),
        ],
    );
    assert_eq!(world.server.requests(), 0);
}

/// A head over 8 KiB and a head slower than 10 s are `limit`; two Host headers are `bad_request` (`400`).
#[test]
fn heads_over_their_limits_or_not_strict() {
    let world = World::new();
    let mut proxy = Proxy::start(&world.netns);
    let plan = proxy.open(&["allowed.test"], &[]);

    let mut slow = Client::connect(&plan.socket);
    let started = Instant::now();
    slow.send(b"CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n");

    let mut big = Client::connect(&plan.socket);
    let mut head = b"CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\nX-Pad: ".to_vec();
    head.extend(std::iter::repeat_n(b'a', 9 * 1024));
    head.extend_from_slice(b"\r\n\r\n");
    // The proxy stops reading at 8 KiB and answers; the rest of the write may meet a closed socket.
    let _ = std::io::Write::write_all(&mut big.stream, &head);
    assert!(big.response_head().starts_with("HTTP/1.1 403 "));

    let mut two = Client::connect(&plan.socket);
    two.send(b"CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\nHost: other.test:443\r\n\r\n");
    assert!(two.response_head().starts_with("HTTP/1.1 400 "));

    let head = slow.response_head();
    let waited = started.elapsed();
    assert!(head.starts_with("HTTP/1.1 403 "), "{head}");
    assert!(
        waited >= Duration::from_secs(9) && waited < Duration::from_secs(20),
        "the slow head was refused after {waited:?}"
    );
    let closed = proxy.close(plan.plan);
    assert_tally(
        closed.blocked,
        vec![
            blocked("", 0, BlockReason::Limit, 2),
            blocked("allowed.test", 443, BlockReason::BadRequest, 1),
        ],
    );
}

/// Deny wins: a Unicode spelling that normalises to a denied host is `denied`, and `*` on the deny list refuses a
/// host the allow list names.
#[test]
fn deny_wins_over_spellings_and_allow_entries() {
    let world = World::new();
    let mut proxy = Proxy::start(&world.netns);
    let plan = proxy.open(&["**.test"], &["allowed.test"]);
    for target in ["ＡＬＬＯＷＥＤ.test:443", "Allowed.Test.:443", "allowed.test:443"] {
        let mut client = Client::connect_to(&plan.socket, target);
        assert!(client.response_head().starts_with("HTTP/1.1 403 "), "{target}");
    }
    let mut client = Client::connect_to(&plan.socket, "not-listed.example:443");
    assert!(client.response_head().starts_with("HTTP/1.1 403 "));
    let closed = proxy.close(plan.plan);
    assert_tally(
        closed.blocked,
        vec![
            blocked("allowed.test", 443, BlockReason::Denied, 3),
            blocked("not-listed.example", 443, BlockReason::NotAllowed, 1),
        ],
    );

    let plan = proxy.open(&["allowed.test"], &["*"]);
    let mut client = Client::connect_to(&plan.socket, "allowed.test:443");
    let head = client.response_head();
    assert!(head.starts_with("HTTP/1.1 403 "), "{head}");
    assert!(String::from_utf8(client.rest()).unwrap().contains("denied"));
    let closed = proxy.close(plan.plan);
    assert_tally(
        closed.blocked,
        vec![blocked("allowed.test", 443, BlockReason::Denied, 1)],
    );
}
