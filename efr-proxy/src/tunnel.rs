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
//! 7. a connection to a checked address (never a second resolution), the hello replayed, bytes relayed both ways,
//!    zero-copy where the kernel allows ([`relay`]).
//!
//! A refusal before step 4 is answered `403` (`400` for `bad_request`) with one line naming the reason; after it,
//! the connection is closed. Every refusal is counted in the plan's tally.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use efr_protocol::internal::host::{TargetRefusal, normalise, target_host};
use efr_protocol::wire::BlockReason;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::address::is_public;
use crate::connect;
use crate::hello::{self, HelloError};
use crate::plan::{Rules, Tally};
use crate::relay::{self, Counts, Socket};
use crate::resolve::Resolver;

/// How long a connection to one address of the host may take.
pub const CONNECT_TIME: Duration = Duration::from_secs(10);

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
pub async fn serve<S: AsyncRead + AsyncWrite + Socket + Unpin>(mut client: S, context: &Context) {
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
    relay_to_host(&client, &upstream, &hello.bytes, &context.tally).await;
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

/// Replays the bytes the checks read to the host, then relays both ways ([`relay`]) until the tunnel ends.
async fn relay_to_host<S: Socket>(client: &S, host: &TcpStream, first: &[u8], tally: &Tally) {
    let counts = Counts {
        sent: tally.sent(),
        received: tally.received(),
    };
    // An error ends the tunnel as the end of both directions does: both sockets are closed when `serve` returns.
    let _ = relay::relay(client, host, first, counts).await;
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
