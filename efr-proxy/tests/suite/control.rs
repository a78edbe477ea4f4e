//! The control socket: bad input gets a clear error and the proxy keeps serving; its end ends the proxy.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use efr_protocol::error::ErrorCode;
use efr_protocol::frame::ServerFrame;
use serde_json::json;

use super::harness::{Proxy, World};

#[test]
fn a_proxy_run_by_an_unprivileged_user_hardens_itself_and_serves() {
    // A user's efrd has no capability, yet its bounding set is full: the proxy cannot empty it and must not need to.
    let world = World::new();
    let mut proxy = Proxy::start_unprivileged(&world.netns);
    let plan = proxy.open(&["allowed.test"], &[]);
    assert!(plan.socket.exists());
    let status = std::fs::read_to_string(format!("/proc/{}/status", proxy.pid())).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(str::trim)
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(field("NoNewPrivs:"), "1", "{status}");
    assert_eq!(field("CapEff:"), "0000000000000000", "{status}");
    assert_eq!(field("CapPrm:"), "0000000000000000", "{status}");
    proxy.close(plan.plan);
}

#[test]
fn bad_control_input_gets_an_error_and_the_proxy_keeps_serving() {
    let world = World::new();
    let mut proxy = Proxy::start(&world.netns);

    let error = proxy.request("proxy.nope", &json!({})).unwrap_err();
    assert_eq!(error.code, ErrorCode::Invalid);
    assert!(error.message.contains("proxy.nope"), "{}", error.message);

    let error = proxy
        .request("proxy.open", &json!({"call": "c", "allow": ["10.0.0.1"], "deny": []}))
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Invalid);
    assert!(error.message.contains("10.0.0.1"), "{}", error.message);

    let error = proxy.request("proxy.open", &json!({"allow": []})).unwrap_err();
    assert_eq!(error.code, ErrorCode::Invalid);

    let error = proxy.request("proxy.close", &json!({"plan": 999})).unwrap_err();
    assert_eq!(error.code, ErrorCode::NotFound);

    // 2 MiB: over the control socket's 1 MiB limit. The body is read and dropped; the stream stays in step.
    let len = 2 * 1024 * 1024_u32;
    let mut frame = len.to_be_bytes().to_vec();
    frame.extend(std::iter::repeat_n(b' ', len as usize));
    proxy.send_raw(&frame);
    match proxy.read() {
        ServerFrame::Error { id: None, error } => assert_eq!(error.code, ErrorCode::TooLarge),
        other => panic!("expected too_large, got {other:?}"),
    }

    proxy.send_raw(&[0, 0, 0, 5, b'n', b'o', b'p', b'e', b'!']);
    match proxy.read() {
        ServerFrame::Error { id: None, error } => assert_eq!(error.code, ErrorCode::Invalid),
        other => panic!("expected invalid, got {other:?}"),
    }

    let plan = proxy.open(&["allowed.test"], &[]);
    assert!(plan.socket.exists());
    let closed = proxy.close(plan.plan);
    assert_eq!(closed.tunnels, 0);
}

#[test]
fn the_end_of_the_control_socket_ends_the_proxy_and_removes_its_sockets() {
    let world = World::new();
    let mut proxy = Proxy::start(&world.netns);
    let first = proxy.open(&["allowed.test"], &[]);
    let second = proxy.open(&[], &[]);
    assert!(first.socket.exists() && second.socket.exists());
    let status = proxy.end();
    assert!(status.success(), "{status:?}");
    assert!(!first.socket.exists() && !second.socket.exists());
}
