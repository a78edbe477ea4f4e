//! The params and results of `admin.sandbox_check` (scope admin, local only) and `sandbox.explain` (scope read).
//!
//! Source: docs/protocol.md, "The contract": "the wire types of the auto sandbox (phase 1)" (sandbox_check;
//! sandbox.explain with path and an optional cwd), "the network view (phase D1)" (`admin_sandbox_check_result.json`
//! sets netview) and docs/architecture.md, "The sandbox" (what the check reports: bubblewrap's version and path, user
//! namespaces, Landlock ABI and enforcement, seccomp, the net_view self-test, sandbox_paths; what explain says:
//! writable, read-only, masked or hidden, and which rule decides). The exact shapes are this project's choice,
//! documented in docs/protocol.md ("The sandbox check and explain").

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::sandbox::{SandboxPaths, SandboxStatus};
use crate::macros::wire_enum;

/// admin.sandbox_check params: none, so `{}` or absent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AdminSandboxCheckParams {}

wire_enum! {
    /// One step of the sandbox probe, in the order the probe takes them.
    pub enum ProbeName {
        /// bubblewrap is installed and answers `--version`.
        Bwrap = "bwrap",
        /// efr-launcher is installed.
        Launcher = "launcher",
        /// The kernel allows user namespaces (`user.max_user_namespaces` above 0).
        UserNamespaces = "user_namespaces",
        /// A real contained `true` ran and exited 0.
        ContainedRun = "contained_run",
        /// Landlock was enforced in that run, at the ABI of `detail`.
        Landlock = "landlock",
        /// Landlock scoped abstract Unix sockets and signals in that run (ABI 6 and later).
        LandlockScope = "landlock_scope",
        /// The seccomp filters were loaded in that run.
        Seccomp = "seccomp",
        /// The network-view self-test: under a `net_view` grant, an abstract socket of the host stays out of reach.
        NetView = "net_view",
        /// The proxy self-test: a contained call reaches an allowed host through efr-proxy (its CONNECT is
        /// answered 200) and is refused for a denied one (403, counted as `denied`).
        Proxy = "proxy",
    }
    unknown
}

/// The outcome of one probe step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SandboxProbe {
    /// Which step.
    pub name: ProbeName,
    /// It passed. A step that did not run because an earlier one failed did not pass, and its `reason` says so.
    pub passed: bool,
    /// What the step found, for a person (such as `0.8.0 at /usr/bin/bwrap` or `ABI 6`); absent when nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Why it did not pass, one sentence; absent when it passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// admin.sandbox_check result: the probe just run again (the spec's sandbox_check). `sandbox` and `sandbox_paths`
/// are what admin.status reports from then on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AdminSandboxCheckResult {
    /// The sandbox's state (`available` and, when not, `reason`).
    pub sandbox: SandboxStatus,
    /// The programs and folders of the sandbox.
    pub sandbox_paths: SandboxPaths,
    /// bubblewrap's version, such as `0.8.0`; absent when it was not found or did not answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bwrap_version: Option<String>,
    /// Every step of the probe, in [`ProbeName`]'s order.
    pub probes: Vec<SandboxProbe>,
}

/// sandbox.explain params (scope read).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SandboxExplainParams {
    /// The path to explain; a relative path needs `cwd`. It need not exist (explain reads no file).
    pub path: PathBuf,
    /// The working directory of the call: it resolves a relative `path`, and its project (the nearest git root
    /// above it, or itself) is the call's writable project root. Absent: a call with no project root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
}

wire_enum! {
    /// What a contained call sees at a path.
    pub enum PathView {
        /// It can read and write there.
        Writable = "writable",
        /// It can read there.
        ReadOnly = "read_only",
        /// The path shows empty: a credential store, efr's own state, `/run/user/$UID` or a path the config masks.
        Masked = "masked",
        /// The host's file there is not seen: the sandbox has its own `/dev` and `/tmp`.
        Hidden = "hidden",
    }
    unknown
}

/// sandbox.explain result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SandboxExplainResult {
    /// The path asked about, absolute and without `.` and `..` (links are not followed).
    pub path: PathBuf,
    /// What a contained call sees there.
    pub view: PathView,
    /// The path of the rule that decides: the deepest mount that holds `path` (such as the project root).
    pub rule_path: PathBuf,
    /// The rule, in words (such as `masked: a credential store of the default list`).
    pub rule: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_views_and_probe_names_read_as_unknown() {
        let view: PathView = serde_json::from_str(r#""frozen""#).unwrap();
        assert_eq!(view, PathView::Unknown);
        let probe: SandboxProbe = serde_json::from_str(r#"{"name":"apparmor","passed":true}"#).unwrap();
        assert_eq!(
            (probe.name, probe.detail, probe.reason),
            (ProbeName::Unknown, None, None)
        );
    }

    #[test]
    fn explain_params_need_a_path() {
        let error = serde_json::from_str::<SandboxExplainParams>(r#"{"cwd":"/src"}"#).unwrap_err();
        assert!(error.to_string().contains("path"), "{error}");
        let params: SandboxExplainParams = serde_json::from_str(r#"{"path":"src/main.rs"}"#).unwrap();
        assert_eq!(params.cwd, None);
    }
}
