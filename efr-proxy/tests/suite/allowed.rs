//! The allowed path: a real TLS handshake and request through the proxy to the test server, and the proxy's own
//! hardening as the kernel reports it.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::path::Path;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::harness::{Proxy, World, status_field};

/// CONNECT, TLS with the test CA, a GET, and the whole response; returns the response.
pub async fn fetch(socket: &Path, host: &str, config: Arc<rustls::ClientConfig>) -> std::io::Result<String> {
    let mut stream = tokio::net::UnixStream::connect(socket).await?;
    stream
        .write_all(format!("CONNECT {host}:443 HTTP/1.1\r\nHost: {host}:443\r\n\r\n").as_bytes())
        .await?;
    let mut head = Vec::new();
    let mut byte = [0_u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await? == 0 {
            return Err(std::io::Error::other(format!(
                "closed after {:?}",
                String::from_utf8_lossy(&head)
            )));
        }
        head.push(byte[0]);
    }
    if head != b"HTTP/1.1 200 Connection established\r\n\r\n" {
        return Err(std::io::Error::other(String::from_utf8_lossy(&head).into_owned()));
    }
    let connector = tokio_rustls::TlsConnector::from(config);
    let name = rustls::pki_types::ServerName::try_from(host.to_owned()).map_err(std::io::Error::other)?;
    let mut tls = connector.connect(name, stream).await?;
    tls.write_all(format!("GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes())
        .await?;
    let mut response = String::new();
    tls.read_to_string(&mut response).await?;
    Ok(response)
}

#[tokio::test]
async fn a_tls_request_through_the_proxy_reaches_the_server_and_is_counted() {
    let world = World::new();
    let mut proxy = Proxy::start(&world.netns);
    let plan = proxy.open(&["allowed.test"], &[]);
    let response = fetch(&plan.socket, "allowed.test", world.client_config())
        .await
        .unwrap();
    assert!(response.starts_with("HTTP/1.1 200 OK"), "{response}");
    assert!(response.ends_with("hello from allowed.test\n"), "{response}");
    assert_eq!(world.server.requests(), 1);
    let closed = proxy.close(plan.plan);
    assert!(closed.blocked.is_empty(), "{:?}", closed.blocked);
    assert_eq!(closed.tunnels, 1);
    // A ClientHello and a GET one way; a certificate chain and the response the other.
    assert!(closed.bytes_sent > 300, "{closed:?}");
    assert!(closed.bytes_received > response.len() as u64 + 500, "{closed:?}");
    assert!(!plan.socket.exists(), "proxy.close removes the plan's socket");
}

#[test]
fn the_proxy_runs_hardened() {
    let world = World::new();
    let mut proxy = Proxy::start(&world.netns);
    // Served one request: the hardening is in place by then.
    let plan = proxy.open(&["allowed.test"], &[]);
    let pid = proxy.pid();
    assert_eq!(status_field(pid, "NoNewPrivs:"), "1");
    assert_eq!(status_field(pid, "Seccomp:"), "2", "a seccomp filter is loaded");
    for caps in ["CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:"] {
        assert_eq!(status_field(pid, caps), "0000000000000000", "{caps}");
    }
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&plan.socket).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600, "the plan's socket is the user's only");
    assert!(plan.socket.starts_with(proxy.sockets()));
    proxy.close(plan.plan);
}
