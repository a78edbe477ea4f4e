//! The TLS ClientHello at the start of a tunnel: read within bounds, parsed by rustls, its SNI taken
//! (docs/network.md, "Each connection").
//!
//! The proxy never terminates TLS: it reads the client's first flight up to the end of the ClientHello, asks
//! rustls's [`Acceptor`] (which parses the handshake and nothing more) for the server name, and later replays
//! exactly those bytes to the host. Bounds: [`MAX_HELLO`] bytes (a ClientHello with post-quantum key shares is about
//! 2 KiB; TLS allows one handshake message to span records, so the bound is a full record's worth) and
//! [`HELLO_TIME`].

use std::time::Duration;

use rustls::server::Acceptor;
use tokio::io::{AsyncRead, AsyncReadExt};

/// The most bytes read while looking for the end of the ClientHello.
pub const MAX_HELLO: usize = 16 * 1024 + 5;

/// How long the ClientHello may take to arrive.
pub const HELLO_TIME: Duration = Duration::from_secs(10);

/// The first byte of a TLS handshake record.
const HANDSHAKE: u8 = 0x16;

/// A ClientHello that names a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    /// Every byte read, to replay to the host.
    pub bytes: Vec<u8>,
    /// The SNI host name as sent.
    pub server_name: String,
}

/// Why there is no usable ClientHello.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HelloError {
    /// The bytes are not a TLS ClientHello (plain HTTP, a second CONNECT, garbage).
    #[error("the tunnel did not start with a TLS ClientHello")]
    NotTls,
    /// A ClientHello without a server name.
    #[error("the ClientHello has no server name (SNI)")]
    NoServerName,
    /// Over [`MAX_HELLO`], slower than [`HELLO_TIME`], or cut short.
    #[error("the ClientHello was too large, too slow or cut short")]
    Limit,
}

/// Reads the ClientHello, starting with `first` (bytes that came with the request head).
///
/// # Errors
/// [`HelloError`].
pub async fn read<S: AsyncRead + Unpin>(stream: &mut S, first: Vec<u8>) -> Result<Hello, HelloError> {
    tokio::time::timeout(HELLO_TIME, read_unbounded_in_time(stream, first))
        .await
        .map_err(|_| HelloError::Limit)?
}

async fn read_unbounded_in_time<S: AsyncRead + Unpin>(stream: &mut S, first: Vec<u8>) -> Result<Hello, HelloError> {
    let mut acceptor = Acceptor::default();
    let mut bytes = Vec::with_capacity(2048);
    let mut fresh = first;
    let mut chunk = vec![0_u8; 4096];
    loop {
        if !fresh.is_empty() {
            if bytes.is_empty() && fresh[0] != HANDSHAKE {
                return Err(HelloError::NotTls);
            }
            bytes.extend_from_slice(&fresh);
            let mut input = &fresh[..];
            while !input.is_empty() {
                if acceptor.read_tls(&mut input).map_err(|_| HelloError::NotTls)? == 0 {
                    return Err(HelloError::NotTls);
                }
            }
            match acceptor.accept() {
                Ok(Some(accepted)) => {
                    let server_name = accepted.client_hello().server_name().map(str::to_owned);
                    return server_name
                        .map(|server_name| Hello { bytes, server_name })
                        .ok_or(HelloError::NoServerName);
                }
                Ok(None) => {}
                Err(_) => return Err(HelloError::NotTls),
            }
        }
        if bytes.len() >= MAX_HELLO {
            return Err(HelloError::Limit);
        }
        let want = chunk.len().min(MAX_HELLO - bytes.len());
        let n = stream.read(&mut chunk[..want]).await.map_err(|_| HelloError::Limit)?;
        if n == 0 {
            return Err(HelloError::Limit);
        }
        fresh = chunk[..n].to_vec();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn client_hello(sni: bool) -> Vec<u8> {
        let mut config =
            rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth();
        config.enable_sni = sni;
        let mut client = rustls::ClientConnection::new(Arc::new(config), "Example.COM".try_into().unwrap()).unwrap();
        let mut bytes = Vec::new();
        client.write_tls(&mut bytes).unwrap();
        bytes
    }

    /// Feeds `bytes` one read of `step` bytes at a time.
    async fn feed(bytes: &[u8], first: usize, step: usize) -> Result<Hello, HelloError> {
        let (mut ours, mut theirs) = tokio::io::duplex(64 * 1024);
        let rest = bytes[first..].to_vec();
        let writer = tokio::spawn(async move {
            for chunk in rest.chunks(step) {
                use tokio::io::AsyncWriteExt;
                if theirs.write_all(chunk).await.is_err() {
                    return;
                }
                tokio::task::yield_now().await;
            }
        });
        let hello = read(&mut ours, bytes[..first].to_vec()).await;
        writer.abort();
        hello
    }

    #[tokio::test]
    async fn the_server_name_is_read_however_the_hello_arrives() {
        let bytes = client_hello(true);
        for (first, step) in [(0, bytes.len()), (0, 1), (10, 7), (bytes.len(), 1)] {
            let hello = feed(&bytes, first, step).await.unwrap();
            assert_eq!(hello.server_name.to_ascii_lowercase(), "example.com");
            assert_eq!(hello.bytes, bytes, "the replay is exactly what the client sent");
        }
    }

    #[tokio::test]
    async fn no_tls_no_server_name_or_a_cut_hello_are_refused() {
        assert_eq!(feed(b"GET / HTTP/1.1\r\n\r\n", 0, 4).await, Err(HelloError::NotTls));
        assert_eq!(feed(b"\x16\x03\x01\x00\x05hello", 0, 4).await, Err(HelloError::NotTls));
        assert_eq!(feed(&client_hello(false), 0, 100).await, Err(HelloError::NoServerName));
        let bytes = client_hello(true);
        let (mut ours, theirs) = tokio::io::duplex(64 * 1024);
        drop(theirs);
        assert_eq!(read(&mut ours, bytes[..20].to_vec()).await, Err(HelloError::Limit));
    }
}
