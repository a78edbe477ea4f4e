//! `hello`: the first request of every connection.
//!
//! Both sides send [`PROTOCOL_VERSION`](crate::PROTOCOL_VERSION); a mismatch fails with `protocol_mismatch` and no
//! other method runs on that connection (docs/protocol.md, "Summary"). The result tells the client which daemon it
//! reached (a phone stops when `daemon_id` or `protocol` is not the one it expects), what the daemon can do
//! (`capabilities`, each false when absent), and where its folders are (`paths`, empty on the tailnet listener). For a
//! remote connection it also carries the `challenge` and the `prove` facts that the device signs for device.prove
//! (docs/protocol.md, "The contract": "Remote devices"; see [`crate::device::prove_message`]).

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::DaemonId;
use crate::macros::is_false;

/// The client program that says hello.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClientInfo {
    /// Its name, such as `efr` or `efr-phone`.
    pub name: String,
    /// Its version, such as `0.0.6`.
    pub version: String,
}

/// hello params (scope read).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HelloParams {
    /// The client's protocol version; it must be the daemon's.
    pub protocol: u32,
    /// The client program.
    pub client: ClientInfo,
    /// The client's terminal, such as `/dev/pts/3`: methods that default to "the hello's terminal" use it. The
    /// tailnet listener ignores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tty: Option<String>,
}

/// What the daemon can do; each flag is false when absent, so a client can tell an older daemon.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Capabilities {
    /// conversations.search and conversation.search.
    #[serde(default, skip_serializing_if = "is_false")]
    pub search: bool,
    /// A slow subscriber gets merged drafts, not gaps.
    #[serde(default, skip_serializing_if = "is_false")]
    pub drafts_coalesced: bool,
    /// The snapshot of conversation.subscribe has `live`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub snapshot_live: bool,
    /// The approval_requested event has `local_only`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub approval_local_only: bool,
    /// The connection takes device.enroll and device.prove.
    #[serde(default, skip_serializing_if = "is_false")]
    pub device_prove: bool,
    /// conversations.watch.
    #[serde(default, skip_serializing_if = "is_false")]
    pub conversations_watch: bool,
}

/// The daemon's folders and socket; each absent when not reported (all absent on the tailnet listener).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HelloPaths {
    /// The Unix socket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket: Option<PathBuf>,
    /// The config root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<PathBuf>,
    /// The data root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<PathBuf>,
    /// The state root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<PathBuf>,
    /// The runtime root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<PathBuf>,
}

/// The Tailscale facts of a remote connection that the device signs (hello `prove`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Prove {
    /// The stable node id of the peer (the phone), as tailscaled's whois gave it.
    pub peer_node: String,
    /// The stable node id of the daemon's machine.
    pub daemon_node: String,
    /// The daemon's tailnet name.
    pub daemon_tailnet: String,
}

/// hello result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HelloResult {
    /// The daemon's identity, stable across restarts.
    pub daemon_id: DaemonId,
    /// efrd's version, such as `0.0.6`.
    pub version: String,
    /// The daemon's protocol version.
    pub protocol: u32,
    /// What it can do.
    pub capabilities: Capabilities,
    /// Its folders; empty on the tailnet listener.
    pub paths: HelloPaths,
    /// The string a device signs for device.prove; only on a remote connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub challenge: Option<String>,
    /// The Tailscale facts a device signs; only on a remote connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prove: Option<Prove>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_are_false_when_absent() {
        let caps: Capabilities = serde_json::from_str(r#"{"search":true,"telepathy":true}"#).unwrap();
        assert!(caps.search && !caps.device_prove && !caps.conversations_watch);
        assert_eq!(serde_json::to_string(&caps).unwrap(), r#"{"search":true}"#);
    }

    #[test]
    fn hello_needs_protocol_and_client() {
        let err = serde_json::from_str::<HelloParams>(r#"{"client":{"name":"efr","version":"1"}}"#).unwrap_err();
        assert!(err.to_string().contains("protocol"), "{err}");
        assert!(
            serde_json::from_str::<HelloParams>(r#"{"protocol":-1,"client":{"name":"efr","version":"1"}}"#).is_err()
        );
    }
}
