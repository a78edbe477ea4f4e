//! The params and results of `admin.sandbox_check` (scope admin, local only), `sandbox.explain` and
//! `sandbox.explain_host` (scope read).
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
    /// The narrowest fix of the cause, for a person (such as `run efr sandbox setup-apparmor as root`); absent when
    /// the step passed or no known cause explains the failure (docs/protocol.md, "The sandbox check and explain").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
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

/// sandbox.explain_host params (scope read): which rule of the network of contained calls decides one host
/// (docs/protocol.md, "The sandbox check and explain"; docs/network.md, "Which rule decides a host").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SandboxExplainHostParams {
    /// The host as a client would write it in a `CONNECT` target, without a port: a name in any spelling
    /// (`GitHub.COM.`, a Unicode name) or an address (`127.1`, `[::1]`, which explain refuses as the proxy does).
    pub host: String,
    /// The port, 1 to 65535; absent: 443.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
}

wire_enum! {
    /// What the network rules decide for a host before any connection: `allowed`, or the refusal that the proxy
    /// would count (the [`super::BlockReason`] of the same name).
    pub enum HostVerdict {
        /// No deny entry names it and an allow entry does: the proxy goes on to its connect-time checks.
        Allowed = "allowed",
        /// It is an IP address in any form.
        IpLiteral = "ip_literal",
        /// A deny entry, or a credential file or helper, names it.
        Denied = "denied",
        /// No allow entry names it.
        NotAllowed = "not_allowed",
        /// It is not a name the proxy accepts (it has no normal form).
        BadRequest = "bad_request",
    }
    unknown
}

wire_enum! {
    /// Where the rule that decides a host comes from.
    pub enum HostRuleSource {
        /// An entry of the config's `[network] deny`.
        ConfigDeny = "config_deny",
        /// An entry of the config's `[network] allow`.
        ConfigAllow = "config_allow",
        /// A host that one of the user's credential files or helpers can give a token for.
        Credentials = "credentials",
        /// No list entry: the host is not a name the rules take, or no entry names it.
        NoRule = "none",
    }
    unknown
}

/// sandbox.explain_host result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SandboxExplainHostResult {
    /// The host in normal form (lowercase, no trailing dot, IDNA to ASCII); as asked when it has none
    /// (`bad_request`) or is an address as written.
    pub host: String,
    /// The port.
    pub port: u16,
    /// What the rules decide.
    pub verdict: HostVerdict,
    /// The entry that decides, in its written form (such as `**.github.com` or `registry.example.com:8443`);
    /// absent when none does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Where that entry comes from.
    pub source: HostRuleSource,
    /// When a credential file or helper names the host: the file's path, or `git credential helper` for a
    /// `credential.<url>` section of git's config. Never anything the file holds but the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential_file: Option<String>,
    /// The decision in one sentence.
    pub reason: String,
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
    fn unknown_verdicts_and_sources_read_as_unknown() {
        let result: SandboxExplainHostResult = serde_json::from_str(
            r#"{"host":"github.com","port":443,"verdict":"quarantined","source":"policy_server","reason":"x"}"#,
        )
        .unwrap();
        assert_eq!(
            (result.verdict, result.source, result.rule, result.credential_file),
            (HostVerdict::Unknown, HostRuleSource::Unknown, None, None)
        );
    }

    #[test]
    fn explain_host_params_need_a_host_and_default_the_port() {
        let error = serde_json::from_str::<SandboxExplainHostParams>(r#"{"port":443}"#).unwrap_err();
        assert!(error.to_string().contains("host"), "{error}");
        let params: SandboxExplainHostParams = serde_json::from_str(r#"{"host":"github.com"}"#).unwrap();
        assert_eq!(params.port, None);
        assert!(serde_json::from_str::<SandboxExplainHostParams>(r#"{"host":"a","port":65536}"#).is_err());
    }

    #[test]
    fn explain_params_need_a_path() {
        let error = serde_json::from_str::<SandboxExplainParams>(r#"{"cwd":"/src"}"#).unwrap_err();
        assert!(error.to_string().contains("path"), "{error}");
        let params: SandboxExplainParams = serde_json::from_str(r#"{"path":"src/main.rs"}"#).unwrap();
        assert_eq!(params.cwd, None);
    }
}
