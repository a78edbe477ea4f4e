//! One connection of a call, from its request head to the end of its tunnel, with the checks in the order of
//! ADR 0010 ("The order of checks"):
//!
//! 1. the request head, within its limits (`limit`), parsed strictly (`bad_request`; `not_tls` for plain HTTP);
//! 2. the host as written, then in normal form, refused if it is an address in any form (`ip_literal`); a host
//!    with no normal form is `bad_request`;
//! 3. the deny list (`denied`), then the allow list (`not_allowed`);
//! 4. `HTTP/1.1 200 Connection established`;
//! 5. the ClientHello, bounded (`limit`), with an SNI equal to the host in normal form (`not_tls` otherwise);
//! 6. the name resolved once; any address that is not public refuses the name (`denied`);
//! 7. a connection to a checked address (never a second resolution), the hello replayed, bytes copied both ways.
//!
//! A refusal before step 4 is answered `403` (`400` for `bad_request`) with one line naming the reason; after it,
//! the connection is closed. Every refusal is counted in the plan's tally.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;
use std::time::Duration;

use efr_protocol::internal::host::{TargetRefusal, normalise, target_host};
use efr_protocol::wire::BlockReason;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

use crate::address::is_public;
use crate::connect;
use crate::hello::{self, HelloError};
use crate::plan::{Rules, Tally};
use crate::resolve::Resolver;

/// How long a connection to one address of the host may take.
pub const CONNECT_TIME: Duration = Duration::from_secs(10);

/// The size of each direction's copy buffer, in bytes: larger buffers mean fewer system calls per byte (the
/// bench measured 32 KiB at about a third of a direct copy); a buffer's pages are touched only as data passes, so
/// an idle tunnel costs far less (about 30 KiB in all).
pub const COPY_BUFFER: usize = 64 * 1024;

/// How long a refusal's response may take to write.
const REPLY_TIME: Duration = Duration::from_secs(5);

/// What a plan's connections share.
#[derive(Debug)]
pub struct Context {
    /// The plan's rules.
    pub rules: Rules,
    /// The plan's tally.
    pub tally: Arc<Tally>,
    /// The proxy's resolver.
    pub resolver: Resolver,
}

/// Serves one connection to its end.
pub async fn serve<S: AsyncRead + AsyncWrite + Unpin>(mut client: S, context: &Context) {
    let (target, rest) = match connect::read(&mut client).await {
        Ok(read) => read,
        Err(error) => {
            let (host, port) = error.target.map(|t| (t.host, t.port)).unwrap_or_default();
            return refuse_before(&mut client, context, &host, port, error.reason, error.detail).await;
        }
    };
    let port = target.port;
    let host = match target_host(&target.host) {
        Ok(host) => host,
        Err(refusal) => {
            let (counted, reason, detail) = match refusal {
                TargetRefusal::IpLiteral(host) => (
                    host,
                    BlockReason::IpLiteral,
                    "the target is an IP address; only names are proxied",
                ),
                TargetRefusal::NoNormalForm(_) => (
                    target.host.clone(),
                    BlockReason::BadRequest,
                    "the host is not a valid domain name",
                ),
            };
            return refuse_before(&mut client, context, &counted, port, reason, detail).await;
        }
    };
    if let Err(reason) = context.rules.check(&host, port) {
        let detail = match reason {
            BlockReason::Denied => "the host is on the deny list",
            _ => "the host is not on the allow list",
        };
        return refuse_before(&mut client, context, &host, port, reason, detail).await;
    }
    if client
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await
        .is_err()
    {
        return;
    }
    let hello = match hello::read(&mut client, rest).await {
        Ok(hello) => hello,
        Err(error) => {
            let reason = match error {
                HelloError::Limit => BlockReason::Limit,
                HelloError::NotTls | HelloError::NoServerName => BlockReason::NotTls,
            };
            return context.tally.refuse(&host, port, reason);
        }
    };
    // Domain fronting: the TLS server name must be the host that the rules allowed.
    if normalise(&hello.server_name).as_deref() != Ok(host.as_str()) {
        return context.tally.refuse(&host, port, BlockReason::NotTls);
    }
    let addresses = match context.resolver.lookup(&host).await {
        Ok(addresses) => addresses,
        Err(error) => {
            eprintln!("efr-proxy: {error}");
            return;
        }
    };
    if addresses.iter().any(|address| !is_public(*address)) {
        return context.tally.refuse(&host, port, BlockReason::Denied);
    }
    let Some(upstream) = connect_any(&addresses, port).await else {
        eprintln!("efr-proxy: cannot connect to {host}:{port}");
        return;
    };
    context.tally.tunnel();
    relay(client, upstream, &hello.bytes, &context.tally).await;
}

/// Connects to the first of `addresses` that answers: the checked addresses, never a new resolution.
async fn connect_any(addresses: &[IpAddr], port: u16) -> Option<TcpStream> {
    for address in addresses {
        let connect = TcpStream::connect(SocketAddr::new(*address, port));
        if let Ok(Ok(stream)) = tokio::time::timeout(CONNECT_TIME, connect).await {
            let _ = stream.set_nodelay(true);
            return Some(stream);
        }
    }
    None
}

/// Replays the hello to the host and copies both ways until either side ends, counting bytes.
async fn relay<S: AsyncRead + AsyncWrite + Unpin>(mut client: S, upstream: TcpStream, hello: &[u8], tally: &Tally) {
    let mut upstream = Counted {
        inner: upstream,
        read: tally.received(),
        written: tally.sent(),
    };
    if upstream.write_all(hello).await.is_err() {
        return;
    }
    let _ = tokio::io::copy_bidirectional_with_sizes(&mut client, &mut upstream, COPY_BUFFER, COPY_BUFFER).await;
}

/// Counts, refuses and answers a connection before the `200`.
async fn refuse_before<S: AsyncWrite + Unpin>(
    client: &mut S,
    context: &Context,
    host: &str,
    port: u16,
    reason: BlockReason,
    detail: &str,
) {
    context.tally.refuse(host, port, reason);
    let status = if reason == BlockReason::BadRequest {
        "400 Bad Request"
    } else {
        "403 Forbidden"
    };
    let body = format!("efr-proxy refused the connection ({}): {detail}\n", reason.as_str());
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let reply = async {
        client.write_all(response.as_bytes()).await?;
        client.shutdown().await
    };
    let _ = tokio::time::timeout(REPLY_TIME, reply).await;
}

/// A stream that adds what it reads and writes to two counters, so the counts hold even when a tunnel is cut.
struct Counted<'a, S> {
    inner: S,
    read: &'a AtomicU64,
    written: &'a AtomicU64,
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<'_, S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        poll
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<'_, S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = poll {
            self.written.fetch_add(n as u64, Ordering::Relaxed);
        }
        poll
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
