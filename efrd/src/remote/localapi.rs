//! A client of tailscaled's LocalAPI: its Unix socket, HTTP/1.1 with `Host: local-tailscaled.sock`, and the two
//! answers efrd reads: `status` (this node: its address, its stable node id, its user, the tailnet) and `whois` (who a
//! peer address is).
//!
//! Only the members efrd needs are read; tailscaled's JSON has many more, and unknown members are ignored. The names
//! are tailscaled's own (`ipnstate.Status`, `apitype.WhoIsResponse`).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use http_body_util::{BodyExt, Empty, Limited};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use tokio::net::UnixStream;

/// The Host header that tailscaled's LocalAPI expects.
pub const LOCALAPI_HOST: &str = "local-tailscaled.sock";

/// How long one LocalAPI request may take.
const TIMEOUT: Duration = Duration::from_secs(5);

/// The most bytes of one answer efrd reads (a status of a large tailnet lists every peer).
const MAX_BODY: usize = 8 << 20;

/// Why a LocalAPI request failed.
#[derive(Debug, thiserror::Error)]
pub enum LocalApiError {
    /// The socket is absent or refused: tailscaled does not run.
    #[error("cannot reach tailscaled at {path}: {source}")]
    Unreachable {
        /// The socket.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The HTTP exchange failed or took too long.
    #[error("tailscaled's LocalAPI failed: {0}")]
    Http(String),
    /// whois: tailscaled does not know the peer.
    #[error("tailscaled does not know the peer")]
    NotFound,
    /// An answer other than 200 or 404.
    #[error("tailscaled answered {status}: {body}")]
    Status {
        /// The HTTP status.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// The body is not the JSON efrd expects.
    #[error("tailscaled's answer does not parse: {0}")]
    Json(#[from] serde_json::Error),
}

/// `GET /localapi/v0/status`, the members efrd reads.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Status {
    /// `Running` when this node is on the tailnet.
    #[serde(default)]
    pub backend_state: String,
    /// This node's Tailscale addresses.
    #[serde(default, rename = "TailscaleIPs")]
    pub tailscale_ips: Vec<IpAddr>,
    /// This node.
    #[serde(rename = "Self")]
    pub self_node: Option<SelfNode>,
    /// The tailnet.
    pub current_tailnet: Option<Tailnet>,
}

/// This node in a status (`ipnstate.PeerStatus`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct SelfNode {
    /// The stable node id, such as `n7fLaptop22CNTRL`.
    #[serde(rename = "ID")]
    pub id: String,
    /// The MagicDNS name with its final dot, such as `laptop.tail3f2a.ts.net.`; empty without MagicDNS.
    #[serde(default, rename = "DNSName")]
    pub dns_name: String,
    /// The user that owns this node.
    #[serde(rename = "UserID")]
    pub user_id: i64,
}

/// The tailnet in a status.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Tailnet {
    /// Its name, such as `ada.github`.
    pub name: String,
}

/// `GET /localapi/v0/whois?addr=ip:port`, the members efrd reads.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct WhoIs {
    /// The peer's node.
    pub node: WhoIsNode,
    /// The user the node belongs to.
    pub user_profile: UserProfile,
}

/// The node of a whois (`tailcfg.Node`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct WhoIsNode {
    /// The stable node id, such as `nKq3wPhone11CNTRL`.
    #[serde(rename = "StableID")]
    pub stable_id: String,
    /// The MagicDNS name with its final dot.
    #[serde(default)]
    pub name: String,
    /// The user that owns the node.
    pub user: i64,
    /// ACL tags; a tagged node belongs to no user.
    #[serde(default)]
    pub tags: Vec<String>,
    /// The user of another tailnet who shared the node into this one; absent or 0 for a node of this tailnet.
    #[serde(default)]
    pub sharer: i64,
    /// Facts the node reports about itself.
    #[serde(default)]
    pub hostinfo: HostInfo,
}

/// What a node reports about itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct HostInfo {
    /// Its OS, such as `android` or `iOS`.
    #[serde(default, rename = "OS")]
    pub os: String,
}

/// The user of a whois.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct UserProfile {
    /// The user id.
    #[serde(rename = "ID")]
    pub id: i64,
    /// The login, such as `ada@github`.
    #[serde(default)]
    pub login_name: String,
}

/// The facts of this node that the listener needs, read from a [`Status`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelfFacts {
    /// The tailnet IPv4 address, the only one efrd listens on.
    pub ipv4: Ipv4Addr,
    /// The stable node id (`prove.daemon_node`).
    pub node: String,
    /// The user that owns this node.
    pub user_id: i64,
    /// The tailnet's name (`prove.daemon_tailnet`).
    pub tailnet: String,
    /// The MagicDNS name without its final dot; `None` without MagicDNS.
    pub fqdn: Option<String>,
}

impl Status {
    /// This node's facts, `None` while it is not running on a tailnet with an IPv4 address.
    #[must_use]
    pub fn self_facts(&self) -> Option<SelfFacts> {
        if self.backend_state != "Running" {
            return None;
        }
        let node = self.self_node.as_ref()?;
        let ipv4 = self.tailscale_ips.iter().find_map(|ip| match ip {
            IpAddr::V4(v4) => Some(*v4),
            IpAddr::V6(_) => None,
        })?;
        let fqdn = node.dns_name.trim_end_matches('.');
        Some(SelfFacts {
            ipv4,
            node: node.id.clone(),
            user_id: node.user_id,
            tailnet: self.current_tailnet.as_ref()?.name.clone(),
            fqdn: (!fqdn.is_empty()).then(|| fqdn.to_owned()),
        })
    }
}

/// A LocalAPI client for one socket path. Each request opens its own connection, as the `tailscale` CLI does.
#[derive(Debug, Clone)]
pub struct LocalApi {
    socket: PathBuf,
}

impl LocalApi {
    /// A client of the LocalAPI at `socket`.
    #[must_use]
    pub fn new(socket: &Path) -> Self {
        Self {
            socket: socket.to_owned(),
        }
    }

    /// This node's status.
    ///
    /// # Errors
    /// [`LocalApiError`] when tailscaled cannot be reached or answers badly.
    pub async fn status(&self) -> Result<Status, LocalApiError> {
        self.get("/localapi/v0/status").await
    }

    /// Who `peer` is.
    ///
    /// # Errors
    /// [`LocalApiError::NotFound`] for a peer tailscaled does not know; others when it cannot be asked.
    pub async fn whois(&self, peer: SocketAddr) -> Result<WhoIs, LocalApiError> {
        // The address has only digits, dots, colons and brackets: nothing to escape but the brackets of IPv6.
        let addr = peer.to_string().replace('[', "%5B").replace(']', "%5D");
        self.get(&format!("/localapi/v0/whois?addr={addr}")).await
    }

    async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, LocalApiError> {
        tokio::time::timeout(TIMEOUT, self.get_inner(path))
            .await
            .map_err(|_| LocalApiError::Http(format!("no answer within {TIMEOUT:?}")))?
    }

    async fn get_inner<T: DeserializeOwned>(&self, path: &str) -> Result<T, LocalApiError> {
        let stream = UnixStream::connect(&self.socket)
            .await
            .map_err(|source| LocalApiError::Unreachable {
                path: self.socket.clone(),
                source,
            })?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| LocalApiError::Http(e.to_string()))?;
        let driver = tokio::spawn(connection);
        let request = hyper::Request::get(path)
            .header(hyper::header::HOST, LOCALAPI_HOST)
            .body(Empty::<Bytes>::new())
            .map_err(|e| LocalApiError::Http(e.to_string()))?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| LocalApiError::Http(e.to_string()))?;
        let status = response.status();
        let body = Limited::new(response.into_body(), MAX_BODY)
            .collect()
            .await
            .map_err(|e| LocalApiError::Http(e.to_string()))?
            .to_bytes();
        driver.abort();
        match status.as_u16() {
            200 => Ok(serde_json::from_slice(&body)?),
            404 => Err(LocalApiError::NotFound),
            code => Err(LocalApiError::Status {
                status: code,
                body: String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape of tailscaled's status, trimmed to what matters and a few members efrd ignores.
    const STATUS: &str = r#"{
        "Version": "1.76.1-t1234",
        "BackendState": "Running",
        "TailscaleIPs": ["fd7a:115c:a1e0::1234:5678", "100.101.102.103"],
        "Self": {"ID": "n7fLaptop22CNTRL", "PublicKey": "nodekey:ab", "HostName": "laptop",
                 "DNSName": "laptop.tail3f2a.ts.net.", "OS": "linux", "UserID": 12345,
                 "TailscaleIPs": ["100.101.102.103"], "Online": true},
        "CurrentTailnet": {"Name": "ada.github", "MagicDNSSuffix": "tail3f2a.ts.net", "MagicDNSEnabled": true},
        "User": {"12345": {"ID": 12345, "LoginName": "ada@github", "DisplayName": "Ada"}}
    }"#;

    #[test]
    fn the_status_gives_the_ipv4_node_user_tailnet_and_name() {
        let status: Status = serde_json::from_str(STATUS).unwrap();
        assert_eq!(
            status.self_facts(),
            Some(SelfFacts {
                ipv4: Ipv4Addr::new(100, 101, 102, 103),
                node: "n7fLaptop22CNTRL".into(),
                user_id: 12345,
                tailnet: "ada.github".into(),
                fqdn: Some("laptop.tail3f2a.ts.net".into()),
            })
        );
    }

    #[test]
    fn a_node_that_is_not_running_or_has_no_ipv4_has_no_facts() {
        let stopped = STATUS.replace("\"Running\"", "\"Stopped\"");
        assert_eq!(serde_json::from_str::<Status>(&stopped).unwrap().self_facts(), None);
        let v6_only = STATUS.replace(", \"100.101.102.103\"]", "]");
        assert_eq!(serde_json::from_str::<Status>(&v6_only).unwrap().self_facts(), None);
    }

    #[test]
    fn a_whois_reads_node_user_tags_sharer_and_os() {
        let whois: WhoIs = serde_json::from_str(
            r#"{"Node": {"ID": 77, "StableID": "nKq3wPhone11CNTRL", "Name": "ada-pixel.tail3f2a.ts.net.",
                         "User": 12345, "Tags": ["tag:ci"], "Sharer": 999, "Hostinfo": {"OS": "android"}},
                "UserProfile": {"ID": 12345, "LoginName": "ada@github", "DisplayName": "Ada"},
                "CapMap": {}}"#,
        )
        .unwrap();
        assert_eq!(whois.node.stable_id, "nKq3wPhone11CNTRL");
        assert_eq!(whois.node.tags, ["tag:ci"]);
        assert_eq!(whois.node.sharer, 999);
        assert_eq!(whois.node.hostinfo.os, "android");
        assert_eq!(whois.user_profile.login_name, "ada@github");
    }
}
