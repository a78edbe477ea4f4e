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
