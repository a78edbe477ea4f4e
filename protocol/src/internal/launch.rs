//! The launch plan: everything `efr-launcher` needs to run one contained call (docs/architecture.md, "The sandbox").
//!
//! efrd builds a plan from the call, the mode and the grants, and hands it to `efr-launcher` as one JSON object (on
//! an inherited fd, or in a one-time file). The launcher checks it with [`LaunchPlan::validate`]
//! ([`crate::internal::validate`]) before anything runs; a plan that does not pass is a setup error of stage `plan`,
//! and nothing is started.
//!
//! # Format
//!
//! ```json
//! {
//!   "bwrap": "/usr/bin/bwrap",
//!   "command": {"kind": "shell", "shell": "/bin/bash", "line": "cargo test"},
//!   "cwd": "/home/u/src/efr",
//!   "env": {"HOME": "/home/u", "PATH": "/usr/bin:/bin"},
//!   "writable": [{"path": "/home/u/src/efr", "source": "project"},
//!                {"path": "/home/u/.local/state/efr/scratch/0190…", "source": "scratch"}],
//!   "masks": [{"path": "/home/u/.ssh", "source": "default"}, {"path": "/run/user/1000", "source": "run_user"}],
//!   "protected": [{"path": "/home/u/src/efr/.git", "source": "git_dir"},
//!                 {"path": "/home/u/src/efr/.git/config", "source": "git_config"}],
//!   "grants": [{"kind": "write", "path": "/home/u/.cache/pip"}, {"kind": "host", "host": "pypi.org"}],
//!   "rlimits": [{"resource": "nofile", "soft": 1024, "hard": 4096}],
//!   "report": {"kind": "fd", "fd": 4},
//!   "proxy": "/run/user/1000/efr/proxy/7.sock"
//! }
//! ```
//!
//! # Rules
//!
//! - Every path is absolute and normal (no `.` or `..` component); no string holds a NUL byte, and no argument,
//!   command line or `NAME=value` is longer than an exec takes ([`crate::internal::MAX_EXEC_STRING`]).
//! - `/` itself is never writable, and nothing under `/proc` or `/dev` is (a device comes with a `device` grant).
//! - Grants: `write`, `device`, `unmask`, `socket`, `net_view`, `open_network`, `host`, `bus_filter`, `bus` and
//!   `desktop` have a plan step; an `unknown` grant is refused (docs/protocol.md, "The contract": "the network view
//!   (phase D1)").
//! - `bus_sockets` holds exactly one entry per `bus_filter` or `bus` grant, of the same bus, bound at the bus's usual
//!   address inside: for `bus_filter` the call's filtered socket of `efr-bus-proxy` on the host (docs/bus.md), for
//!   `bus` the real bus socket (the user approved the whole bus). A bus has at most one of the two grants. The rest
//!   of a masked `/run/user/$UID` stays masked.
//! - `desktop_sockets` holds the control sockets of the call's `desktop` grants ([`DesktopSocket`]), each bound at
//!   its own path; each `desktop` grant has at least one of its desktop, and each socket a grant. The launcher
//!   refuses a path that is not a socket when the call starts (docs/protocol.md, "The contract": "desktop grants").
//! - `net_view` and `open_network` exclude each other; an `unmask` names a path of `masks`.
//! - `proxy` (absolute and normal) is present exactly when the plan holds at least one `host` grant, and never with
//!   `net_view` or `open_network`: a call with host grants keeps its own network namespace and reaches `efr-proxy`
//!   only through the launcher's bridge (docs/adr/0011-the-proxy-bridge.md).
//! - A `host` grant names a host in normal form: not empty, lowercase ASCII (IDNA applied), without `/`, `:`,
//!   whitespace or control characters; its port is absent (443) or 1–65535.
//! - A `protected` path is not `/`; a `git_dir` (the one source that stays writable) lies strictly inside a writable
//!   root (a project root, `$SCRATCH` or a `write` grant), so a pin never makes a path writable.
//! - A `write` grant lies neither inside a `git_config`, `git_hooks`, `git_file` or `git_common_dir` path nor at a
//!   protected path itself, nor inside a mask that no `unmask` grant of the plan opens: whoever approved it, git's
//!   code and efr's roots stay out of a call's reach (docs/adr/0023-floors-that-hold.md). efrd's protect step lists
//!   the config and hooks of a git folder among a grant's ancestors, and a grant inside efr's roots, so the check
//!   sees them.
//! - The network follows from the grants ([`LaunchPlan::network`]): none (the sandbox's own network namespace),
//!   `net_view` (the host's namespace, Unix and netlink sockets only) or `open_network` (the host's network). With
//!   `proxy` it is none, and the launcher adds the bridge: a listener on the sandbox's loopback that forwards each
//!   connection to the proxy socket, named by `HTTPS_PROXY` and its kin in the command's environment.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::wire::{Bus, DesktopKind, Grant};

/// The size bound of a contained call's private `/dev/shm`, in bytes (256 MiB): POSIX semaphores and shared memory
/// (`sem_open`, `shm_open`, Python's `multiprocessing`, pytest-xdist) need a writable `/dev/shm`, and a tmpfs without
/// a bound could take half the host's memory. 256 MiB is four times Docker's default (64 MiB, which Chromium finds
/// too small) and far more than locks and worker queues use; a call that needs more gets `ENOSPC`.
pub const SHM_SIZE: u64 = 256 * 1024 * 1024;

/// One contained call, as efrd hands it to `efr-launcher`. See the module docs for the format and the rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchPlan {
    /// The bubblewrap program, absolute (efrd's probe found it; the launcher searches no `PATH`).
    pub bwrap: PathBuf,
    /// What runs inside.
    pub command: LaunchCommand,
    /// The working directory inside the sandbox, absolute.
    pub cwd: PathBuf,
    /// The whole environment of the command (bubblewrap clears the rest).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The writable roots: the call's project roots and `$SCRATCH`.
    #[serde(default)]
    pub writable: Vec<Writable>,
    /// The masked paths (credential stores, efr's own roots, `/run/user/$UID`); see [`crate::internal::masks`].
    #[serde(default)]
    pub masks: Vec<Mask>,
    /// Paths inside the writable roots that the call may not change or move: git's configuration and hooks, efr's own
    /// roots when a writable root holds them ([`Protected`]).
    #[serde(default)]
    pub protected: Vec<Protected>,
    /// The call's grants (the wire type of tool_call_started `launch`).
    #[serde(default)]
    pub grants: Vec<Grant>,
    /// Resource limits set on the command before it runs.
    #[serde(default)]
    pub rlimits: Vec<Rlimit>,
    /// Where the launcher writes its [`crate::internal::LaunchReport`] lines.
    #[serde(default)]
    pub report: ReportTo,
    /// The listening socket of the call's `efr-proxy` plan ([`crate::internal::proxy::Opened::socket`]), absolute;
    /// present exactly when the grants hold a `host` grant. The call keeps its own network namespace and reaches
    /// the proxy through a bridge on its loopback, named by the proxy variables of its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<PathBuf>,
    /// The filtered bus sockets of the call's `bus_filter` grants ([`BusSocket`]), one per grant.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bus_sockets: Vec<BusSocket>,
    /// The control sockets of the call's `desktop` grants ([`DesktopSocket`]); the variables that name them inside
    /// are in `env`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub desktop_sockets: Vec<DesktopSocket>,
    /// The bound of the private `/dev/shm`, bytes ([`SHM_SIZE`] unless efrd's probe found a
    /// bubblewrap older than 0.7, which has no `--size`: then `None`, and the tmpfs has the kernel's default bound,
    /// half the memory; docs/adr/0004-contained-calls.md, decision 10).
    #[serde(default = "default_shm_size")]
    pub shm_size: Option<u64>,
    /// Whether bubblewrap gets `--disable-userns`, which a bubblewrap older than 0.8 does not have. Without it a
    /// nested user namespace is still refused: the inner stage's seccomp filter refuses `unshare` and `clone` with
    /// `CLONE_NEWUSER` and `clone3` on every version (docs/adr/0007-denied-system-calls.md); the flag adds
    /// bubblewrap's own refusal (`user.max_user_namespaces` = 1 inside) on top.
    #[serde(default = "default_disable_userns")]
    pub disable_userns: bool,
    /// Folders shown read-only over the private `/tmp`: the project root and start folder of a read-only call that
    /// lie under `/tmp`, which the private `/tmp` would hide (docs/adr/0009-cautious-reads-contained.md). Each is
    /// absolute, normal and under `/tmp`; a link among them refuses the call (the bind would land on its target).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_only_roots: Vec<PathBuf>,
    /// What contains the call ([`Containment`]): bubblewrap with Landlock and seccomp inside, or, for a read-only
    /// call where bubblewrap cannot start, Landlock and seccomp alone.
    #[serde(default, skip_serializing_if = "Containment::is_bubblewrap")]
    pub containment: Containment,
}

/// What contains a call (docs/adr/0020-landlock-only-reads.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Containment {
    /// bubblewrap's namespaces and mounts, then Landlock and seccomp in the inner stage.
    #[default]
    Bubblewrap,
    /// Landlock and seccomp alone, no namespace: for a read-only call only (no writable root, grant, proxy or
    /// socket). Landlock grants reading everything but the masks (and the host's `/tmp`, `/dev/shm` and other
    /// processes' `/proc`), writing only a private scratch folder; seccomp refuses every socket.
    Landlock,
}

impl Containment {
    /// Whether this is the default, [`Containment::Bubblewrap`].
    #[must_use]
    pub fn is_bubblewrap(&self) -> bool {
        *self == Self::Bubblewrap
    }
}

fn default_shm_size() -> Option<u64> {
    Some(SHM_SIZE)
}

fn default_disable_userns() -> bool {
    true
}

/// What runs inside the sandbox. The launcher execs it directly: it has no shell of its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LaunchCommand {
    /// A program and its arguments; `argv[0]` is searched in the plan's `PATH` when it has no `/`.
    Argv {
        /// At least one element.
        argv: Vec<String>,
    },
    /// A command line for the user's shell, run as `shell -c line`.
    Shell {
        /// The shell, absolute (such as `/bin/bash`).
        shell: PathBuf,
        /// The command line.
        line: String,
    },
}

/// The filtered socket of one `bus_filter` grant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BusSocket {
    /// Which bus (the grant's).
    pub bus: Bus,
    /// The listening socket of the call's `efr-bus-proxy` plan on the host
    /// ([`crate::internal::bus_proxy::OpenedBus::socket`]), absolute.
    pub socket: PathBuf,
    /// Where the call finds it, absolute: `/run/user/$UID/bus` for the session bus,
    /// `/run/dbus/system_bus_socket` for the system bus. The command's environment names it
    /// (`DBUS_SESSION_BUS_ADDRESS`, `DBUS_SYSTEM_BUS_ADDRESS`).
    pub path: PathBuf,
}

/// One control socket of a `desktop` grant: the desktop of the prompt's terminal (`$XDG_RUNTIME_DIR/$WAYLAND_DISPLAY`,
/// Hyprland's `.socket.sock` and `.socket2.sock`, `$SWAYSOCK`, `$I3SOCK`, `$NIRI_SOCKET`, `/tmp/.X11-unix/X<n>`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DesktopSocket {
    /// Which desktop (the grant's).
    pub desktop: DesktopKind,
    /// The socket on the host, absolute; bound at the same path inside. The launcher refuses the call when it is not
    /// a socket.
    pub path: PathBuf,
}

/// Why a path is writable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WritableSource {
    /// A project root of the call.
    Project,
    /// The conversation's `$SCRATCH` folder.
    Scratch,
}

/// A writable root of the call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Writable {
    /// The path, absolute; it must exist (else bubblewrap's setup fails and says so).
    pub path: PathBuf,
    /// Why it is writable.
    pub source: WritableSource,
}

/// Why a path is masked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MaskSource {
    /// The default list of credential stores ([`crate::internal::DEFAULT_HOME_MASKS`]).
    Default,
    /// The user's config added it.
    Config,
    /// One of efr's own roots (config, data, state: keys, the event log).
    EfrRoot,
    /// The user's runtime folder, `/run/user/$UID` (the session bus, the agent sockets).
    RunUser,
}

/// A masked path: a folder shows as an empty read-only folder, a file as an empty file. A path that does not exist
/// when the call starts is left out (there is nothing to hide, and `/` is read-only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mask {
    /// The path, absolute.
    pub path: PathBuf,
    /// Why it is masked.
    pub source: MaskSource,
}

/// Why a path inside a writable root is protected, and so what the sandbox does there.
///
/// | source | what the call sees | when the path is missing at launch |
/// |---|---|---|
/// | `git_dir` | writable, but a mount point: it cannot be renamed, replaced or removed | nothing |
/// | `git_file` | read-only | nothing |
/// | `git_common_dir` | read-only | nothing |
/// | `git_config` | read-only | an empty read-only file (created in the writable root) |
/// | `git_hooks` | read-only | an empty read-only folder (created in the writable root) |
/// | `efr_roots` | read-only | an empty read-only folder (created in the writable root) |
///
/// A missing config, hooks folder or efr folder would otherwise be the call's to create. A path that is a link when
/// the call starts is refused (its target could be bound, not the link, which the call could then replace).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProtectedSource {
    /// A git folder (`.git`, or the folder a `.git` file or a `commondir` names): git inside the sandbox writes
    /// objects, refs and the index there, but cannot swap the folder for one with another configuration.
    GitDir,
    /// A `.git` file of a worktree or submodule (`gitdir: ...`): it says which git folder, and so which configuration,
    /// git outside the sandbox uses.
    GitFile,
    /// The `commondir` file of a worktree's git folder: it says where the shared configuration is.
    GitCommonDir,
    /// git's configuration (`config`, and `config.worktree` when the repository turns it on): git outside the sandbox
    /// runs the commands it names (`core.fsmonitor`, `core.pager`, filters).
    GitConfig,
    /// git's hooks folder: its programs run outside the sandbox on commit, checkout and index updates.
    GitHooks,
    /// The topmost folder between a writable root and one of efr's own roots: so the call cannot move it aside and
    /// put a config of its own where efr looks.
    EfrRoots,
}

/// A path inside a writable root that the call may not change ([`ProtectedSource`] says how).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Protected {
    /// The path, absolute.
    pub path: PathBuf,
    /// Why it is protected.
    pub source: ProtectedSource,
}

/// The network a contained call sees; it follows from the grants ([`LaunchPlan::network`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Network {
    /// The sandbox's own network namespace: a loopback of its own and nothing else.
    #[default]
    None,
    /// The host's namespace with only Unix and netlink sockets (docs/protocol.md, "The contract": "the network view
    /// (phase D1)").
    NetView,
    /// The host's network, unfiltered.
    OpenNetwork,
}

/// A resource that an [`Rlimit`] limits (`setrlimit(2)`'s `RLIMIT_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RlimitResource {
    /// CPU time, seconds.
    Cpu,
    /// The largest file the command may write, bytes.
    Fsize,
    /// Open files.
    Nofile,
    /// Processes of the user.
    Nproc,
    /// Address space, bytes.
    As,
    /// Core file size, bytes.
    Core,
}

/// One resource limit. `u64::MAX` means no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rlimit {
    /// Which resource.
    pub resource: RlimitResource,
    /// The soft limit; at most `hard`.
    pub soft: u64,
    /// The hard limit.
    pub hard: u64,
}

/// Where `efr-launcher` writes its report lines.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ReportTo {
    /// Standard error, each line prefixed with `efr-launcher: report `.
    #[default]
    Stderr,
    /// An inherited file descriptor (3 or more), such as a pipe that efrd reads.
    Fd {
        /// The descriptor.
        fd: i32,
    },
    /// A file, created or appended to (mode 0600).
    File {
        /// The path, absolute.
        path: PathBuf,
    },
}

impl LaunchPlan {
    /// A plan with no roots, masks, grants or limits that runs `argv` in `cwd`, reporting to stderr. A base that
    /// callers fill in.
    pub fn new(bwrap: impl Into<PathBuf>, argv: Vec<String>, cwd: impl Into<PathBuf>) -> Self {
        Self {
            bwrap: bwrap.into(),
            command: LaunchCommand::Argv { argv },
            cwd: cwd.into(),
            env: BTreeMap::new(),
            writable: Vec::new(),
            masks: Vec::new(),
            protected: Vec::new(),
            grants: Vec::new(),
            rlimits: Vec::new(),
            report: ReportTo::Stderr,
            proxy: None,
            bus_sockets: Vec::new(),
            desktop_sockets: Vec::new(),
            shm_size: default_shm_size(),
            disable_userns: default_disable_userns(),
            read_only_roots: Vec::new(),
            containment: Containment::Bubblewrap,
        }
    }

    /// The network the call sees, from its grants. Call after [`LaunchPlan::validate`] (which refuses both).
    pub fn network(&self) -> Network {
        if self.grants.contains(&Grant::OpenNetwork) {
            Network::OpenNetwork
        } else if self.grants.contains(&Grant::NetView) {
            Network::NetView
        } else {
            Network::None
        }
    }
}
