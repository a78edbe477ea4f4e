//! How a call runs (`launch`, `grant`), what its sandbox reported (`sandbox_summary`), and the sandbox's state in
//! admin.status (`sandbox_status`, `sandbox_paths`).
//!
//! Source: docs/protocol.md, "The contract": "the wire types of the auto sandbox (phase 1)", "the network view (phase
//! D1)", "the proxy's refusals and status (phase D2)", "the bus filter and always-allow (phase E)" and "desktop
//! grants". Members that the spec does not spell out (the path of a write grant, the host of a host grant, the base
//! members of the sandbox status) are this project's choice and documented on each item.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::macros::{is_false, is_one, is_zero, one, wire_enum};

wire_enum! {
    /// A D-Bus bus.
    pub enum Bus {
        /// The user's session bus.
        Session = "session",
        /// The system bus.
        System = "system",
    }
}

wire_enum! {
    /// A desktop whose control socket a `desktop` grant binds (docs/protocol.md, "The contract": "desktop grants").
    pub enum DesktopKind {
        /// `$WAYLAND_DISPLAY`.
        Wayland = "wayland",
        /// `$DISPLAY` (with `$XAUTHORITY` when the shell has it).
        X11 = "x11",
        /// `$HYPRLAND_INSTANCE_SIGNATURE`.
        Hyprland = "hyprland",
        /// `$SWAYSOCK`.
        Sway = "sway",
        /// `$I3SOCK`.
        I3 = "i3",
        /// `$NIRI_SOCKET`.
        Niri = "niri",
    }
}

/// One permission of a contained call beyond the sandbox's defaults, tagged by `kind`.
///
/// A kind that a reader does not know reads as `unknown` (efrd never sends one, and the launcher refuses a call
/// that holds one). `net_view` and `bus_filter` are views: the call sees a filtered part of the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Grant {
    /// Write access to a path outside the call's project roots.
    Write {
        /// The path, absolute.
        path: PathBuf,
    },
    /// Network access to one host, or the hosts of a pattern, through efr's proxy.
    Host {
        /// The host name, normalized (lowercase, no trailing dot), or the written form of a host pattern of the
        /// config's `[network] allow` (`*.example.com`: its subdomains; `**.example.com`: the name and its
        /// subdomains; `*`: every host).
        host: String,
        /// The port; absent: 443.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        port: Option<u16>,
    },
    /// The host's network, unfiltered.
    OpenNetwork,
    /// A Unix socket of the host, bound into the sandbox.
    Socket {
        /// The socket's path, absolute.
        path: PathBuf,
    },
    /// A whole D-Bus bus, unfiltered.
    Bus {
        /// Which bus.
        bus: Bus,
    },
    /// A device node.
    Device {
        /// The device's path, such as `/dev/kvm`.
        path: PathBuf,
    },
    /// A masked path (a credential store) made visible.
    Unmask {
        /// The path, absolute.
        path: PathBuf,
    },
    /// The one control socket of the desktop of the prompt's terminal.
    Desktop {
        /// Which desktop.
        desktop: DesktopKind,
    },
    /// The host's network namespace, with only Unix and netlink sockets.
    NetView,
    /// The call's own filtered socket of a bus.
    BusFilter {
        /// Which bus.
        bus: Bus,
    },
    /// A kind that this reader does not know. Never sent.
    #[serde(other)]
    Unknown,
}

/// How a call runs, tagged by `kind` (tool_call_started `launch`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Launch {
    /// Typed into the hidden shell as the user.
    Direct,
    /// Run by efr-launcher inside the sandbox.
    Contained {
        /// The call's grants, absent when none.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        grants: Vec<Grant>,
    },
    /// An approved exit from auto mode: run as the user, outside the sandbox.
    Unsandboxed,
}

wire_enum! {
    /// Why the proxy refused a connection.
    pub enum BlockReason {
        /// The host is not on the call's allow list.
        NotAllowed = "not_allowed",
        /// The host is on the deny list, or efrd denies it for the call (a file or credential helper could hand the
        /// call a token for it). No host grant opens it.
        Denied = "denied",
        /// The target was an IP address in any form.
        IpLiteral = "ip_literal",
        /// Not TLS, or a ClientHello without a matching SNI.
        NotTls = "not_tls",
        /// The CONNECT request did not parse.
        BadRequest = "bad_request",
        /// The request head was too large or too slow.
        Limit = "limit",
    }
    unknown
}

/// Connections the proxy refused for one host, port and reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Blocked {
    /// The host as the call asked for it.
    pub host: String,
    /// The port.
    pub port: u16,
    /// Why.
    pub reason: BlockReason,
    /// How many connections (1 when absent; sent only when it is not 1).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub count: u64,
}

/// Messages the bus proxy refused for one bus, name, member and path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BusRefusal {
    /// Which bus.
    pub bus: Bus,
    /// The bus name the call addressed.
    pub name: String,
    /// The interface member, absent when the message had none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member: Option<String>,
    /// The object path, absent when the message had none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// How many messages (1 when absent).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub count: u64,
}

/// What the sandbox of one call reported (tool_call_completed `sandbox`). It holds names (hosts, bus names,
/// programs), never the content of a file or a message. Every member is absent when empty, zero or false.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SandboxSummary {
    /// Why the sandbox could not start (such as bubblewrap's setup message); the command did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup_error: Option<String>,
    /// The call ran with a proxy plan.
    #[serde(default, skip_serializing_if = "is_false")]
    pub proxied: bool,
    /// The proxy's refusals, at most 32.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocked: Vec<Blocked>,
    /// Refusals that `blocked` leaves out.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub blocked_more: u64,
    /// The bus proxy's refusals, at most 16.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bus_refused: Vec<BusRefusal>,
    /// Bus refusals that `bus_refused` leaves out.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bus_refused_more: u64,
    /// Programs of an approved exit's descendants that efr could not end (the hidden shell is then closed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub survivors: Vec<String>,
}

impl SandboxSummary {
    /// The most entries of `blocked` (spec: "it lists at most 32").
    pub const MAX_BLOCKED: usize = 32;
    /// The most entries of `bus_refused` (spec: "at most 16 entries").
    pub const MAX_BUS_REFUSED: usize = 16;
}

wire_enum! {
    /// Why efrd runs no filtered bus proxy.
    pub enum BusProxyOff {
        /// The config turned it off.
        Config = "config",
        /// efr-bus-proxy is not installed.
        NoProgram = "no_program",
        /// Its self-test failed.
        SelfTest = "self_test",
        /// The installed efr-bus-proxy is older than efrd.
        OldVersion = "old_version",
    }
    unknown
}

wire_enum! {
    /// The state of efrd's `efr-proxy` process (admin.status `proxy`).
    pub enum ProxyState {
        /// No contained call has needed it yet.
        NotStarted = "not_started",
        /// It runs (`pid`).
        Running = "running",
        /// It ended (`last_error` says how); efrd starts it again after a backoff, or at the next call.
        Restarting = "restarting",
        /// The program is not where efrd looks (`sandbox_paths.proxy` is absent): contained calls have no network.
        NotInstalled = "not_installed",
    }
    unknown
}

/// efrd's `efr-proxy` process, which alone gives contained calls their network (admin.status `proxy`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProxyProcess {
    /// Its state.
    pub state: ProxyState,
    /// Its process id while it runs; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// How many times efrd started it again after it ended (0 when absent).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub restarts: u64,
    /// Why it last ended or could not start, or why it is not installed; absent when nothing went wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// The sandbox's state as the last probe saw it (admin.status `sandbox`).
///
/// `available` and `reason` are this project's base members; the flags come from the spec and are false when absent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SandboxStatus {
    /// Contained calls can run.
    pub available: bool,
    /// Why they cannot, one sentence; absent when available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The narrowest fix of `reason`'s cause, for a person; absent when available or when no known cause explains
    /// the failure (the same text as the failing step's `fix` of admin.sandbox_check).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// The Landlock ABI in force, absent when Landlock is unavailable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub landlock_abi: Option<u32>,
    /// The probe's network-view self-test passed.
    #[serde(default, skip_serializing_if = "is_false")]
    pub netview: bool,
    /// The user's `network.netview` is false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub netview_off: bool,
    /// The probe's proxy self-test passed.
    #[serde(default, skip_serializing_if = "is_false")]
    pub proxy: bool,
    /// efrd runs the filtered bus proxy.
    #[serde(default, skip_serializing_if = "is_false")]
    pub bus_proxy: bool,
    /// Why the bus filter is off; absent when it is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bus_proxy_off: Option<BusProxyOff>,
}

/// The paths of the sandbox (admin.status and admin.sandbox_check `sandbox_paths`): the programs it uses, each absent
/// when not found, and the folders a contained call gets, each absent (or empty) when not reported.
///
/// The spec's sandbox_paths carries scratch, masks and writable roots; this type began with the programs, so the
/// folders were added as optional members (docs/protocol.md, "The sandbox check and explain").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SandboxPaths {
    /// efr-launcher.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launcher: Option<PathBuf>,
    /// bubblewrap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bwrap: Option<PathBuf>,
    /// efr-proxy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<PathBuf>,
    /// efr-bus-proxy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bus_proxy: Option<PathBuf>,
    /// The folder that holds each conversation's `$SCRATCH` (`$state/scratch`; a call's own is
    /// `$state/scratch/<conversation_id>`, writable in the sandbox).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scratch: Option<PathBuf>,
    /// The paths every contained call sees masked, in the plan's order: the default credential stores under the
    /// home, the user's runtime folder, efr's own roots, then the config's additions. Absent when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub masks: Vec<PathBuf>,
    /// The project roots that contained calls write: the project of each recent conversation (the nearest git root
    /// of its working directory, or the directory itself), without repeats. Absent when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writable: Vec<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_grant_kinds_read_as_unknown_with_or_without_members() {
        let grant: Grant = serde_json::from_str(r#"{"kind":"gpu","index":0}"#).unwrap();
        assert_eq!(grant, Grant::Unknown);
        let grant: Grant = serde_json::from_str(r#"{"kind":"teleport"}"#).unwrap();
        assert_eq!(grant, Grant::Unknown);
        let grant: Grant = serde_json::from_str(r#"{"kind":"net_view"}"#).unwrap();
        assert_eq!(grant, Grant::NetView);
    }

    #[test]
    fn a_known_grant_with_a_bad_member_is_an_error_not_unknown() {
        assert!(serde_json::from_str::<Grant>(r#"{"kind":"write"}"#).is_err());
        assert!(serde_json::from_str::<Grant>(r#"{"kind":"bus","bus":"desktop"}"#).is_err());
    }

    #[test]
    fn counts_of_one_are_absent() {
        let blocked = Blocked {
            host: "example.com".into(),
            port: 443,
            reason: BlockReason::NotAllowed,
            count: 1,
        };
        let wire = serde_json::to_string(&blocked).unwrap();
        assert_eq!(wire, r#"{"host":"example.com","port":443,"reason":"not_allowed"}"#);
        assert_eq!(serde_json::from_str::<Blocked>(&wire).unwrap(), blocked);
        let blocked: Blocked = serde_json::from_str(r#"{"host":"h","port":1,"reason":"quota","count":3}"#).unwrap();
        assert_eq!((blocked.reason, blocked.count), (BlockReason::Unknown, 3));
    }

    #[test]
    fn launch_is_closed() {
        assert!(serde_json::from_str::<Launch>(r#"{"kind":"teleported"}"#).is_err());
        let launch: Launch = serde_json::from_str(r#"{"kind":"contained"}"#).unwrap();
        assert_eq!(launch, Launch::Contained { grants: Vec::new() });
    }
}
