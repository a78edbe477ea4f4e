//! admin.status: the daemon's state for `efr status`.
//!
//! Source: docs/protocol.md, "The contract", the entries on admin.status (roots and config; sandbox status and paths;
//! providers with active, login, key_hint, key_refused_at and key_checked_at; the catalog) and docs/architecture.md,
//! "Configuration and roots" (roots and their sources). `version`, `pid` and `uptime_secs` are this project's base
//! members.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::config::ConfigError;
use super::models::Catalog;
use super::sandbox::{ProxyProcess, SandboxPaths, SandboxStatus};
use crate::ids::Timestamp;
use crate::macros::{is_false, wire_enum};

/// admin.status params (scope admin): none, so `{}` or absent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AdminStatusParams {}

wire_enum! {
    /// What set a root folder.
    pub enum RootSource {
        /// Its own variable (`EFR_CONFIG_DIR`, `EFR_DATA_DIR`, `EFR_STATE_DIR`, `EFR_RUNTIME_DIR`).
        DirVariable = "dir_variable",
        /// `EFR_HOME`.
        EfrHome = "efr_home",
        /// The XDG variable or its default.
        Xdg = "xdg",
        /// `/run/user/$UID`, with no `XDG_RUNTIME_DIR`.
        RunUser = "run_user",
    }
}

/// One root folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Root {
    /// The folder, absolute.
    pub path: PathBuf,
    /// What set it.
    pub source: RootSource,
}

/// The four roots of efrd.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Roots {
    /// `$XDG_CONFIG_HOME/efr`: config.toml.
    pub config: Root,
    /// `$XDG_DATA_HOME/efr`: the event store.
    pub data: Root,
    /// `$XDG_STATE_HOME/efr`: keys and state.
    pub state: Root,
    /// `$XDG_RUNTIME_DIR/efr`: the socket.
    pub runtime: Root,
}

/// The state of config.toml.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ConfigStatus {
    /// The path of config.toml.
    pub path: PathBuf,
    /// Whether it exists (without it, the defaults apply).
    pub exists: bool,
    /// Where it points when it is a symlink.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symlink_target: Option<PathBuf>,
    /// Why the last reload failed; absent when it applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reload_error: Option<ConfigError>,
    /// Dotted keys that wait for a restart; absent when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restart_needed: Vec<String>,
    /// A change that loosens permissions and waits while full mode runs; absent when nothing is held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<super::full::HeldConfig>,
}

wire_enum! {
    /// How the user logged in to a provider.
    pub enum LoginKind {
        /// A subscription login.
        Subscription = "subscription",
        /// An API key (admin.login_api_key).
        ApiKey = "api_key",
    }
}

/// One model provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProviderStatus {
    /// The provider, such as `openai-api` or `anthropic-api`.
    pub provider: String,
    /// It is the provider of new conversations (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub active: bool,
    /// How the user logged in; absent when not logged in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub login: Option<LoginKind>,
    /// The stored key's hint, such as `sk-ant-...a1b2`; absent without a key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_hint: Option<String>,
    /// When the provider last refused the stored key (a 401); absent while it works and after a new login.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_refused_at: Option<Timestamp>,
    /// When the provider last answered a request with the key since the daemon started, or a login checked it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_checked_at: Option<Timestamp>,
}

/// admin.status result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AdminStatusResult {
    /// efrd's version, such as `0.0.6`.
    pub version: String,
    /// efrd's process id.
    pub pid: u32,
    /// Seconds since efrd started.
    pub uptime_secs: u64,
    /// The root folders; absent from an earlier daemon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<Roots>,
    /// config.toml; absent from an earlier daemon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<ConfigStatus>,
    /// The model providers.
    pub providers: Vec<ProviderStatus>,
    /// The active provider's model catalog; absent when not reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog: Option<Catalog>,
    /// The sandbox's state; absent when not reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxStatus>,
    /// The sandbox's programs; absent when not reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_paths: Option<SandboxPaths>,
    /// efrd's `efr-proxy` process; absent from an earlier daemon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<ProxyProcess>,
    /// The tailnet listener of the phone (docs/remote.md); absent from an earlier daemon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<RemoteStatus>,
    /// Full mode: allowed by the config, and why the daemon refuses it; absent when not reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_mode: Option<super::full::FullModeStatus>,
}

wire_enum! {
    /// What the tailnet listener does (`state` of [`RemoteStatus`]).
    pub enum ListenerState {
        /// `[remote] enabled` is false.
        Off = "off",
        /// Enabled, but tailscaled is not there or this machine is not on a tailnet.
        NotListening = "not_listening",
        /// Listening on `address`:`port`.
        Listening = "listening",
    }
    unknown
}

/// The tailnet listener in admin.status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RemoteStatus {
    /// What it does.
    pub state: ListenerState,
    /// The tailnet IPv4 address it listens on; absent unless listening.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<std::net::Ipv4Addr>,
    /// The port; absent unless listening.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// How many phones are connected now.
    pub connections: u32,
}
