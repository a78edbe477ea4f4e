//! Why a launch plan is refused ([`PlanError`]): a leaf, so that the plan's types, its check and its mounts all
//! name the error without naming each other.

use std::path::PathBuf;

use crate::internal::launch::RlimitResource;

/// The longest string an exec takes (`MAX_ARG_STRLEN`: 32 pages of 4 KiB, with the closing NUL).
pub const MAX_EXEC_STRING: usize = 32 * 4096 - 1;

/// Why a plan is refused. The launcher reports it as a setup error of stage `plan`; nothing ran.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// A path is relative.
    #[error("the {what} {path:?} is not an absolute path")]
    NotAbsolute {
        /// Which member.
        what: &'static str,
        /// The path.
        path: PathBuf,
    },
    /// A path has a `.` or `..` component.
    #[error("the {what} {path:?} has a `.` or `..` component")]
    NotNormal {
        /// Which member.
        what: &'static str,
        /// The path.
        path: PathBuf,
    },
    /// A string holds a NUL byte.
    #[error("the {what} holds a NUL byte")]
    Nul {
        /// Which member.
        what: &'static str,
    },
    /// The argv is empty.
    #[error("the command's argv is empty")]
    EmptyArgv,
    /// One argument or `NAME=value` string longer than the kernel takes in an exec (`MAX_ARG_STRLEN`).
    #[error("the {what} is {bytes} bytes; the kernel takes at most {MAX_EXEC_STRING} bytes per string")]
    TooLong {
        /// Which member (the variable's name for the environment).
        what: String,
        /// Its length in bytes.
        bytes: usize,
    },
    /// An environment variable's name is empty or holds `=`.
    #[error("the environment variable name {name:?} is not valid")]
    BadEnvName {
        /// The name.
        name: String,
    },
    /// A grant has no plan step yet, or is unknown.
    #[error("the {kind} grant is refused: {reason}")]
    RefusedGrant {
        /// The grant's kind.
        kind: &'static str,
        /// Why, in a few words.
        reason: &'static str,
    },
    /// Both `net_view` and `open_network`.
    #[error("the net_view and open_network grants exclude each other")]
    NetworkConflict,
    /// A `host` grant, but no `proxy` socket to reach the host through.
    #[error("the host grants need the plan's proxy socket, and the plan names none")]
    ProxyMissing,
    /// A `proxy` socket, but no `host` grant that it would serve.
    #[error("the plan names a proxy socket but holds no host grant")]
    ProxyUnused,
    /// A `proxy` socket together with a grant that keeps the host's network (`net_view` or `open_network`): the
    /// proxy's calls stay in their own network namespace, where the bridge to the proxy is their only way out.
    #[error("the proxy and the {kind} grant exclude each other (the proxy keeps the call in its own network)")]
    ProxyConflict {
        /// The other grant's kind.
        kind: &'static str,
    },
    /// A `host` grant whose host or port is not valid.
    #[error("the host grant {host:?} is not valid: {reason}")]
    BadHostGrant {
        /// The host as the grant names it.
        host: String,
        /// Why, in a few words.
        reason: &'static str,
    },
    /// An `unmask` grant names a path that `masks` does not hold.
    #[error("the unmask grant names {path:?}, which is not masked")]
    UnmaskNotMasked {
        /// The path.
        path: PathBuf,
    },
    /// A path may not be writable.
    #[error("{path:?} may not be writable: {reason}")]
    WritableForbidden {
        /// The path.
        path: PathBuf,
        /// Why.
        reason: &'static str,
    },
    /// A path may not be masked.
    #[error("{path:?} may not be masked: {reason}")]
    MaskForbidden {
        /// The path.
        path: PathBuf,
        /// Why.
        reason: &'static str,
    },
    /// A protected path that may not be protected (`/`), or a pinned one outside every writable root.
    #[error("{path:?} may not be protected: {reason}")]
    ProtectedForbidden {
        /// The path.
        path: PathBuf,
        /// Why.
        reason: &'static str,
    },
    /// A soft limit above its hard limit.
    #[error("the {resource:?} limit has soft {soft} above hard {hard}")]
    BadRlimit {
        /// Which resource.
        resource: RlimitResource,
        /// The soft limit.
        soft: u64,
        /// The hard limit.
        hard: u64,
    },
    /// A report fd below 3.
    #[error("the report fd {fd} is not 3 or more")]
    BadReportFd {
        /// The fd.
        fd: i32,
    },
}
