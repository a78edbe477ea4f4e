//! The tailnet listener: bound to the tailnet IPv4 address while tailscaled says this node is on the tailnet.
//!
//! It asks tailscaled's status every [`POLL_INTERVAL`]. A change of the address, the node or the tailnet, or
//! tailscaled going away, closes the listener and its connections with 1001; it listens again when the tailnet is
//! back. Each accepted peer is admitted ([`crate::remote::admission`]) before a byte is read, then gets the HTTP
//! upgrade ([`crate::remote::handshake`]) and its WebSocket ([`super::websocket`]).

use std::net::{SocketAddr, SocketAddrV4};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, info, warn};

use super::session::Session;
use super::websocket;
use crate::daemon::Daemon;
use crate::remote::admission::{self, PeerFacts, Refusal};
use crate::remote::localapi::{LocalApi, LocalApiError, SelfFacts};
use crate::remote::sniff::NoFragments;
use crate::remote::{ListenerState, RemotePeer, handshake};

/// How often the listener asks tailscaled whether the tailnet changed.
pub const POLL_INTERVAL: Duration = Duration::from_secs(2);

/// How long a client may take to send its upgrade request.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What the listener needs from `[remote]`.
#[derive(Debug, Clone)]
pub struct Options {
    /// The port on the tailnet address.
    pub port: u16,
    /// tailscaled's LocalAPI socket.
    pub tailscaled_socket: PathBuf,
}

/// Runs the listener until `shutdown`: listens while the tailnet is there, and waits for it otherwise.
pub async fn run(daemon: Arc<Daemon>, options: Options, shutdown: CancellationToken) {
    let api = LocalApi::new(&options.tailscaled_socket);
    let tracker = TaskTracker::new();
    let mut last_problem = String::new();
    while !shutdown.is_cancelled() {
        let me = match learn(&api).await {
            Ok(me) => me,
            Err(problem) => {
                if problem != last_problem {
                    info!(%problem, "the tailnet listener waits for the tailnet");
                    last_problem = problem;
                }
                daemon.remote.set_state(ListenerState::NotListening);
                pause(&shutdown).await;
                continue;
            }
        };
        let addr = SocketAddrV4::new(me.ipv4, options.port);
        let listener = match TcpListener::bind(addr).await {
            Ok(listener) => listener,
            Err(error) => {
                let problem = format!("cannot listen on {addr}: {error}");
                if problem != last_problem {
                    warn!(%problem, "the tailnet listener waits");
                    last_problem = problem;
                }
                daemon.remote.set_state(ListenerState::NotListening);
                pause(&shutdown).await;
                continue;
            }
        };
        last_problem.clear();
        info!(%addr, tailnet = %me.tailnet, "the tailnet listener listens");
        daemon
            .remote
            .set_state(ListenerState::Listening { addr, me: me.clone() });
        // Cancelled when the tailnet changes or efrd stops: every connection of this address closes with 1001.
        let generation = shutdown.child_token();
        let closing = tokio::select! {
            () = accept(&listener, &api, &me, &daemon, &generation, &tracker) => Closing::Stop,
            closing = watch_change(&api, &me, &shutdown) => closing,
        };
        match &closing {
            Closing::Stop => info!(%addr, "efrd stops: closing the tailnet listener"),
            Closing::Changed => info!(%addr, "the tailnet changed: closing the listener"),
            Closing::Gone(problem) => {
                info!(%addr, %problem, "tailscaled no longer says this node is on the tailnet: closing the listener");
            }
        }
        // The socket closes before the connections do: a client that saw its 1001 cannot connect to it any more.
        drop(listener);
        generation.cancel();
        daemon.remote.set_state(ListenerState::NotListening);
    }
    daemon.remote.set_state(ListenerState::Off);
    tracker.close();
    let _ = tokio::time::timeout(crate::server::DRAIN_TIMEOUT, tracker.wait()).await;
}

/// This node's facts, or why there are none.
async fn learn(api: &LocalApi) -> Result<SelfFacts, String> {
    let status = api.status().await.map_err(|e| e.to_string())?;
    status.self_facts().ok_or_else(|| {
        format!(
            "this node is not on a tailnet with an IPv4 address ({})",
            status.backend_state
        )
    })
}

/// Waits one poll interval, or less at shutdown.
async fn pause(shutdown: &CancellationToken) {
    tokio::select! {
        () = tokio::time::sleep(POLL_INTERVAL) => {}
        () = shutdown.cancelled() => {}
    }
}

/// Why the listener of one address closes, as its log line says.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Closing {
    /// efrd stops.
    Stop,
    /// tailscaled gives this node other facts (an address, a node, a tailnet).
    Changed,
    /// tailscaled does not answer, or says the node is not on a tailnet: why.
    Gone(String),
}

/// Returns when efrd stops, tailscaled goes away or its facts are no longer `me`, and says which.
async fn watch_change(api: &LocalApi, me: &SelfFacts, shutdown: &CancellationToken) -> Closing {
    loop {
        pause(shutdown).await;
        if shutdown.is_cancelled() {
            return Closing::Stop;
        }
        match learn(api).await {
            Ok(now) if now == *me => {}
            Ok(_) => return Closing::Changed,
            Err(problem) => return Closing::Gone(problem),
        }
    }
}

/// Accepts until the generation ends (the caller drops the future).
async fn accept(
    listener: &TcpListener,
    api: &LocalApi,
    me: &SelfFacts,
    daemon: &Arc<Daemon>,
    generation: &CancellationToken,
    tracker: &TaskTracker,
) {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                warn!(%error, "accept failed on the tailnet listener");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let api = api.clone();
        let me = me.clone();
        let daemon = Arc::clone(daemon);
        let kick = generation.clone();
        tracker.spawn(async move {
            match admit(&api, &me, peer).await {
                Ok(facts) => {
                    // The server's messages are small and each is due at once (a draft, an answer): Nagle's
                    // algorithm would hold one back until the peer acknowledges the last, up to its delayed ACK
                    // (40 ms on Linux), as the phone bench showed (docs/architecture.md, "Budgets").
                    if let Err(error) = stream.set_nodelay(true) {
                        debug!(%error, "cannot set TCP_NODELAY on a tailnet connection");
                    }
                    let local = local_of(&me, &stream);
                    let kick = kick.child_token();
                    serve_http(stream, RemotePeer::new(facts, me, local, kick.clone()), daemon, kick).await;
                }
                Err(refusal) => info!(%peer, %refusal, "closing a tailnet connection before reading a byte"),
            }
        });
    }
}

/// The listener's own address, for the Origin rule.
fn local_of(me: &SelfFacts, stream: &TcpStream) -> SocketAddrV4 {
    match stream.local_addr() {
        Ok(SocketAddr::V4(local)) => local,
        _ => SocketAddrV4::new(me.ipv4, 0),
    }
}

/// The range, then whois.
///
/// # Errors
/// The [`Refusal`] that closes the connection.
pub async fn admit(api: &LocalApi, me: &SelfFacts, peer: SocketAddr) -> Result<PeerFacts, Refusal> {
    if !admission::in_tailscale_range(peer.ip()) {
        return Err(Refusal::Range);
    }
    match api.whois(peer).await {
        Ok(whois) => admission::judge(&whois, me),
        Err(LocalApiError::NotFound) => Err(Refusal::Unknown),
        Err(error) => {
            warn!(%error, "whois failed: closing the connection");
            Err(Refusal::Unknown)
        }
    }
}

/// Reads the upgrade request and answers it: a plain HTTP error, or 101 and the WebSocket.
async fn serve_http(stream: TcpStream, remote: RemotePeer, daemon: Arc<Daemon>, kick: CancellationToken) {
    let local = remote.local;
    let slot = Arc::new(std::sync::Mutex::new(Some(remote)));
    let service = service_fn(move |mut request: hyper::Request<Incoming>| {
        let slot = Arc::clone(&slot);
        let daemon = Arc::clone(&daemon);
        let kick = kick.clone();
        async move {
            let accept = match handshake::check(&request, local) {
                Ok(accept) => accept,
                Err(refused) => {
                    debug!(status = %refused.status, reason = refused.reason, "refusing a tailnet request");
                    return Ok::<_, http::Error>(handshake::refusal_response(&refused));
                }
            };
            let Some(remote) = slot.lock().ok().and_then(|mut slot| slot.take()) else {
                return Ok(handshake::refusal_response(&handshake::Refused {
                    status: http::StatusCode::BAD_REQUEST,
                    reason: "one upgrade per connection",
                }));
            };
            let upgrade = hyper::upgrade::on(&mut request);
            tokio::spawn(async move {
                match upgrade.await {
                    Ok(upgraded) => {
                        let io = NoFragments::new(TokioIo::new(upgraded));
                        let ws = WebSocketStream::from_raw_socket(io, Role::Server, Some(websocket::config())).await;
                        let _open = daemon.remote.connection();
                        websocket::serve(ws, Session::remote(remote), Arc::clone(&daemon), kick).await;
                    }
                    Err(error) => debug!(%error, "the upgrade failed"),
                }
            });
            handshake::switching_response(&accept)
        }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HANDSHAKE_TIMEOUT)
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades();
    if let Err(error) = connection.await {
        debug!(%error, "a tailnet HTTP connection failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> SelfFacts {
        SelfFacts {
            ipv4: std::net::Ipv4Addr::new(100, 64, 0, 1),
            node: "n1".into(),
            user_id: 1,
            tailnet: "ada.github".into(),
            fqdn: None,
        }
    }

    #[tokio::test]
    async fn an_ordinary_stop_is_a_stop_and_tailscaled_gone_is_said_as_such() {
        let dir = tempfile::tempdir().unwrap();
        let api = LocalApi::new(&dir.path().join("no-tailscaled.sock"));
        let shutdown = CancellationToken::new();
        shutdown.cancel();
        assert_eq!(watch_change(&api, &me(), &shutdown).await, Closing::Stop);
        let running = CancellationToken::new();
        let closing = tokio::time::timeout(POLL_INTERVAL * 5, watch_change(&api, &me(), &running))
            .await
            .unwrap();
        assert!(matches!(closing, Closing::Gone(_)), "{closing:?}");
    }
}
