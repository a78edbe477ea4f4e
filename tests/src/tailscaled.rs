//! A double of tailscaled's LocalAPI: a Unix socket that answers `status` and `whois` in tailscaled's JSON shape
//! (`ipnstate.Status`, `apitype.WhoIsResponse`), and only to requests with `Host: local-tailscaled.sock`, as
//! tailscaled does.
//!
//! The test sets the status (this node, its address, its tailnet) and who each peer address is; it can change the
//! tailnet, stop the double (tailscaled gone) and start it again.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{Context as _, Result};
use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};
use tokio::net::UnixListener;
use tokio::task::JoinHandle;

/// What the double answers.
#[derive(Debug, Default)]
struct Answers {
    status: Value,
    whois: HashMap<IpAddr, Value>,
}

/// The state shared with the server.
#[derive(Debug, Default)]
struct Shared {
    answers: Mutex<Answers>,
    wrong_host: AtomicUsize,
    whois_asked: AtomicUsize,
}

/// A running LocalAPI double.
#[derive(Debug)]
pub struct LocalApiDouble {
    path: PathBuf,
    shared: Arc<Shared>,
    server: Option<JoinHandle<()>>,
}

/// This node's status as tailscaled gives it: running, with `ipv4` and a Tailscale IPv6 address.
#[must_use]
pub fn status_json(ipv4: Ipv4Addr, node: &str, user_id: i64, tailnet: &str, dns_name: &str) -> Value {
    json!({
        "Version": "1.76.1-t0123456789",
        "BackendState": "Running",
        "TailscaleIPs": [ipv4.to_string(), "fd7a:115c:a1e0::1"],
        "Self": {
            "ID": node, "PublicKey": "nodekey:00", "HostName": "laptop", "DNSName": dns_name, "OS": "linux",
            "UserID": user_id, "TailscaleIPs": [ipv4.to_string()], "Online": true
        },
        "CurrentTailnet": {"Name": tailnet, "MagicDNSSuffix": "tail3f2a.ts.net", "MagicDNSEnabled": true},
        "User": {user_id.to_string(): {"ID": user_id, "LoginName": "ada@github", "DisplayName": "Ada"}}
    })
}

/// A whois answer: a node with its stable id, name, owner, tags, sharer (0: none) and OS.
#[must_use]
pub fn whois_json(stable_id: &str, name: &str, user: i64, login: &str, tags: &[&str], sharer: i64, os: &str) -> Value {
    let mut node = json!({
        "ID": 4242, "StableID": stable_id, "Name": name, "User": user, "Addresses": [],
        "Hostinfo": {"OS": os, "Hostname": "phone"}
    });
    if !tags.is_empty() {
        node["Tags"] = json!(tags);
    }
    if sharer != 0 {
        node["Sharer"] = json!(sharer);
    }
    json!({"Node": node, "UserProfile": {"ID": user, "LoginName": login, "DisplayName": "Someone"}, "CapMap": {}})
}

impl LocalApiDouble {
    /// Starts the double at `path` with `status`. Call it inside a tokio runtime.
    ///
    /// # Errors
    /// The socket cannot be bound.
    pub fn start(path: &Path, status: Value) -> Result<Self> {
        let shared = Arc::new(Shared::default());
        shared.answers.lock().unwrap_or_else(PoisonError::into_inner).status = status;
        let mut double = Self {
            path: path.to_owned(),
            shared,
            server: None,
        };
        double.resume()?;
        Ok(double)
    }

    /// Starts answering again after [`Self::stop`].
    ///
    /// # Errors
    /// The socket cannot be bound.
    pub fn resume(&mut self) -> Result<()> {
        let _ = std::fs::remove_file(&self.path);
        let listener =
            UnixListener::bind(&self.path).with_context(|| format!("cannot bind {}", self.path.display()))?;
        let app = Router::new()
            .route("/localapi/v0/status", get(status))
            .route("/localapi/v0/whois", get(whois))
            .with_state(Arc::clone(&self.shared));
        self.server = Some(tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        }));
        Ok(())
    }

    /// tailscaled goes away: the socket is removed and nothing answers.
    pub fn stop(&mut self) {
        if let Some(server) = self.server.take() {
            server.abort();
        }
        let _ = std::fs::remove_file(&self.path);
    }

    /// The socket's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Replaces the status (a change of the tailnet, for instance).
    pub fn set_status(&self, status: Value) {
        self.shared
            .answers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .status = status;
    }

    /// Says who `ip` is; a peer without an answer is unknown (404, as tailscaled answers).
    pub fn set_whois(&self, ip: IpAddr, answer: Value) {
        self.shared
            .answers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .whois
            .insert(ip, answer);
    }

    /// How many requests came without `Host: local-tailscaled.sock`.
    #[must_use]
    pub fn wrong_host(&self) -> usize {
        self.shared.wrong_host.load(Ordering::Relaxed)
    }

    /// How many whois requests came.
    #[must_use]
    pub fn whois_asked(&self) -> usize {
        self.shared.whois_asked.load(Ordering::Relaxed)
    }
}

impl Drop for LocalApiDouble {
    fn drop(&mut self) {
        self.stop();
    }
}

fn host_ok(shared: &Shared, headers: &HeaderMap) -> bool {
    let ok = headers.get("host").is_some_and(|host| host == "local-tailscaled.sock");
    if !ok {
        shared.wrong_host.fetch_add(1, Ordering::Relaxed);
    }
    ok
}

async fn status(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    if !host_ok(&shared, &headers) {
        return (StatusCode::FORBIDDEN, "invalid Host header").into_response();
    }
    let status = shared
        .answers
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .status
        .clone();
    axum::Json(status).into_response()
}

async fn whois(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if !host_ok(&shared, &headers) {
        return (StatusCode::FORBIDDEN, "invalid Host header").into_response();
    }
    shared.whois_asked.fetch_add(1, Ordering::Relaxed);
    let Some(ip) = query.get("addr").and_then(|addr| {
        addr.parse::<std::net::SocketAddr>()
            .ok()
            .map(|a| a.ip())
            .or_else(|| addr.parse().ok())
    }) else {
        return (StatusCode::BAD_REQUEST, "invalid 'addr' parameter").into_response();
    };
    let answer = shared
        .answers
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .whois
        .get(&ip)
        .cloned();
    match answer {
        Some(answer) => axum::Json(answer).into_response(),
        None => (StatusCode::NOT_FOUND, format!("no match for IP:port {ip}")).into_response(),
    }
}
