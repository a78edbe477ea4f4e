//! Faults: the bus going away, the bus missing, the proxy killed. Each ends the call's bus connection, and the
//! filter goes on serving new connections.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::num::NonZeroU32;

use efr_protocol::wire::Bus;
use tokio::io::AsyncWriteExt;

use super::harness::{Filtered, Raw, RealBus, call, error_name, service, wait_for};

const NOTIFICATIONS: &str = "org.freedesktop.Notifications";
const PATH: &str = "/org/freedesktop/Notifications";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bus_that_restarts_closes_the_filtered_connection() {
    let mut bus = RealBus::start(Bus::Session);
    let filtered = Filtered::default_on(&bus);
    let (mut raw, _) = Raw::pipelined(&filtered.socket).await;
    bus.stop();
    assert!(raw.message().await.is_none(), "the filtered connection is closed");
    // While the bus is away a new client is closed during its authentication.
    let mut early = Raw::connect(&filtered.socket).await;
    let _ = early.stream.write_all(b"\0AUTH EXTERNAL 30\r\n").await;
    assert!(early.message().await.is_none());
    // The bus back on the same socket: the filter serves again.
    let restarted = RealBus::start_at(Bus::Session, &bus.socket);
    let _service = service(&restarted, NOTIFICATIONS).await;
    let (mut raw, _) = Raw::pipelined(&filtered.socket).await;
    raw.send(&call(NOTIFICATIONS, PATH, NOTIFICATIONS, "GetServerInformation", 2))
        .await;
    let reply = raw.message().await.expect("a reply");
    assert_eq!(error_name(&reply), None);
    assert_eq!(reply.header().reply_serial(), NonZeroU32::new(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_proxy_ends_the_calls_bus() {
    let bus = RealBus::start(Bus::Session);
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("filtered");
    let mut proxy = std::process::Command::new(env!("CARGO_BIN_EXE_efr-bus-proxy"))
        .args([
            "--listen",
            socket.to_str().unwrap(),
            "--upstream",
            &bus.address(),
            "--default",
        ])
        .spawn()
        .unwrap();
    wait_for(&socket);
    let (mut raw, _) = Raw::pipelined(&socket).await;
    proxy.kill().unwrap();
    proxy.wait().unwrap();
    assert!(
        raw.message().await.is_none(),
        "the call's bus connection ends with the proxy"
    );
    assert!(
        tokio::net::UnixStream::connect(&socket).await.is_err(),
        "nobody listens any more"
    );
}
