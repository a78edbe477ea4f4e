//! The exits of auto mode: a call that must leave the sandbox asks for an exit, efrd records it (`exit_record`) with
//! what it needs (`needs`), its targets and its facts, a chain of judges decides it (`judgement`), and a question to
//! the user shows it (`exit_info`, approval_requested's `exit`).
//!
//! Source: docs/protocol.md, "The contract": "the wire types of the auto sandbox (phase 1)" (exit_kind, exit_source,
//! needs, exit_info, the classifier's exit_record with its facts and judgement), "phase A" (action's `edit`, a
//! target's `backup_before_write` and `masked`, `denials_in_a_row`, `denials_this_turn`, the target classes `cache`,
//! `build_output` and `trash`, the source `cache_delete`, exit_judged's `chain_step` and the judge
//! `presence_expired`), "labels of exits and changed files" (`outside_commands`, `desktop_read`), "the proxy's refusals
//! and status (phase D2)" (`project_remote`), "the bus filter and always-allow (phase E)" (exit_info's `always`),
//! "full mode" (the judge `full`) and "the facts of an exit record gain git_code". The spec does not list the kinds;
//! docs/adr/0016-exit-kinds.md decides them, with each kind's grants, facts, judges and limits. Members that the spec
//! does not spell out (the base members of the action, a target's `path`, the host fact's `host` and `port`, the
//! facts' `bus_names`, exit_info's members but `always`, the judgement's members) are this project's choice and
//! documented on each item.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::sandbox::Grant;
use crate::macros::{is_false, is_zero, wire_enum};

wire_enum! {
    /// What an exit from auto mode's sandbox is, from the closed set of 17 (frozen in `exit_kinds.json`;
    /// docs/adr/0016-exit-kinds.md says what each means, which grants it produces, which facts it records, which
    /// judges may approve it and how a floor limits it).
    ///
    /// The set is closed: a kind that a reader does not know is an error, never `unknown`, because a judge that
    /// cannot name an exit must not pass it.
    pub enum ExitKind {
        /// A connection to a host that the proxy does not allow.
        Host = "host",
        /// The host's network, unfiltered. Only the user approves it.
        OpenNetwork = "open_network",
        /// A write outside the writable roots.
        Write = "write",
        /// A delete outside the writable roots.
        Delete = "delete",
        /// An edit of a floor file: a file in the home that runs code or sets policy outside the sandbox later
        /// (`~/.bashrc`, `~/.gitconfig`). Only the user approves it.
        FloorEdit = "floor_edit",
        /// A device node that the sandbox's `/dev` lacks.
        Device = "device",
        /// A Unix socket of the host.
        Socket = "socket",
        /// A D-Bus bus.
        Bus = "bus",
        /// The control socket of the desktop of the prompt's terminal.
        Desktop = "desktop",
        /// A credential store made visible. Only the user approves it.
        Unmask = "unmask",
        /// Data sent to a remote (`git push`, `scp`, `rsync` to a remote, `curl -T`, `curl --data @file`).
        Upload = "upload",
        /// A package installed outside the project, for the user or system-wide.
        PackageInstall = "package_install",
        /// Code that outlives the call outside the sandbox through a service manager or a scheduler. Only the user
        /// approves it.
        Service = "service",
        /// A signal to a process outside the sandbox.
        Kill = "kill",
        /// Commands that run outside the sandbox because they need the user's identity (`ssh host`, `gh`).
        Outside = "outside",
        /// The whole line runs outside the sandbox. Only the user approves it.
        Unsandboxed = "unsandboxed",
        /// A change of user (`sudo`, `pkexec`, `doas`). Only the user approves it.
        Privilege = "privilege",
    }
}

wire_enum! {
    /// Where efrd found an exit.
    pub enum ExitSource {
        /// The policy's parser read it on the line, before the contained call ran.
        Line = "line",
        /// The launcher's report after the call failed: a masked path, a refused write, a missing device or socket.
        Report = "report",
        /// efr-proxy refused a host.
        Proxy = "proxy",
        /// efr-bus-proxy refused a message.
        BusProxy = "bus_proxy",
        /// A file tool's edit outside the writable roots (the action's `edit`).
        Edit = "edit",
        /// A delete in a real cache that a contained call made (spec, "phase A").
        CacheDelete = "cache_delete",
    }
    unknown
}

/// What an exit needs: the grants of its contained re-run, or a run outside the sandbox.
///
/// An approved exit runs the call again with exactly these (docs/adr/0016-exit-kinds.md, "Decision"). Both members
/// are absent when empty or false; a record of an exit that needs nothing is never built.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Needs {
    /// The grants of the contained re-run, absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grants: Vec<Grant>,
    /// The re-run runs as the user, outside the sandbox (`launch: unsandboxed`); false when absent.
    #[serde(default, skip_serializing_if = "is_false")]
    pub unsandboxed: bool,
}

wire_enum! {
    /// What kind of place a target is.
    pub enum TargetClass {
        /// Under the user's home, and no other class fits.
        Home = "home",
        /// Another project: a git work tree outside the call's writable roots.
        Project = "project",
        /// Outside the home and the temporary folders (`/etc`, `/usr`, `/opt`).
        System = "system",
        /// The host's `/tmp` or `/var/tmp` (the sandbox has a private `/tmp`).
        Temp = "temp",
        /// A device node.
        Device = "device",
        /// A Unix socket.
        Socket = "socket",
        /// A process outside the sandbox (the path is its program).
        Process = "process",
        /// A cache that a tool fills again by itself (`~/.cache`, `~/.cargo/registry`).
        Cache = "cache",
        /// A build's output (`target/`, `node_modules/`, `dist/`).
        BuildOutput = "build_output",
        /// The user's trash.
        Trash = "trash",
    }
    unknown
}

/// A path that an exit touches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExitTarget {
    /// The path, absolute (for a file that an upload sends, the file; for a kill, the process's program).
    pub path: PathBuf,
    /// What kind of place it is.
    pub class: TargetClass,
    /// A path that the sandbox hides, such as a credential store (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub masked: bool,
    /// efrd copies the file before the re-run writes it (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub backup_before_write: bool,
}

/// A host that an exit connects to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HostFact {
    /// The host name, normalized (lowercase, no trailing dot).
    pub host: String,
    /// The port; absent: 443.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// The host of a remote of a pinned project git dir (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub project_remote: bool,
}

/// The git code that an outside or upload exit of a git or gh line runs outside the sandbox, recorded when it made
/// the exit one that only the user may approve (spec: "the facts of an exit record gain git_code").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GitCode {
    /// efrd could check the repositories' code; false when it could not (then only the user approves).
    pub checked: bool,
    /// The writable items, absent when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<GitCodeItem>,
}

/// One piece of git code that a line runs outside the sandbox. It never holds the user name or password of a URL in
/// a config key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GitCodeItem {
    /// The repository's git dir.
    pub repo: PathBuf,
    /// The item, such as `hooks/pre-push` or `core.sshcommand`.
    pub item: String,
    /// The file that defines it.
    pub file: PathBuf,
    /// A contained call can write the file.
    pub writable: bool,
}

/// What efrd knows of an exit beyond its kind, needs and targets, for the judges. Every member is absent when empty,
/// false or 0.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExitFacts {
    /// The hosts that the exit connects to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<HostFact>,
    /// The commands of an outside exit that run outside the sandbox.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outside_commands: Vec<String>,
    /// A desktop command that only reads the desktop's state or reloads its config.
    #[serde(default, skip_serializing_if = "is_false")]
    pub desktop_read: bool,
    /// The D-Bus names that a bus exit addresses (this project's member).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bus_names: Vec<String>,
    /// The git code that the line runs outside the sandbox.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_code: Option<GitCode>,
    /// The exits of the turn that judges denied in a row before this one.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub denials_in_a_row: u64,
    /// The exits of the turn that judges denied before this one.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub denials_this_turn: u64,
}

/// The call that asks for an exit.
///
/// `tool` and `command` are this project's members; the spec names `edit`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExitAction {
    /// The tool, such as `shell` or `apply_patch`.
    pub tool: String,
    /// The shell call's line; absent for a file tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The payload of a file tool's edit of a floor file, at most [`ExitAction::MAX_EDIT_BYTES`]; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edit: Option<String>,
    /// The call starts a background job (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub background: bool,
    /// The job has a watch (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub watch: bool,
    /// The job's notices may wake a turn (false when absent).
    #[serde(default, skip_serializing_if = "is_false")]
    pub wake_turn: bool,
    /// The job's limit in minutes; absent when the call starts no job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_minutes: Option<u32>,
}

impl ExitAction {
    /// The most bytes of `edit` (spec, "phase A": "at most 8 KiB").
    pub const MAX_EDIT_BYTES: usize = 8 * 1024;
}

wire_enum! {
    /// Who decided an exit (frozen in `judge_kinds.json`).
    pub enum JudgeKind {
        /// The classifier model (`[auto] classifier_model`).
        Classifier = "classifier",
        /// The turn's own model.
        TurnModel = "turn_model",
        /// The user, answering approval_requested.
        User = "user",
        /// A rule that the user saved with allow_always.
        AlwaysRule = "always_rule",
        /// The question to the user expired while the user was away.
        PresenceExpired = "presence_expired",
        /// Full mode let the exit run with no review and no question, or a question of full mode expired.
        Full = "full",
    }
    unknown
}

wire_enum! {
    /// A step of the judge chain.
    pub enum ChainStep {
        /// The classifier model.
        ClassifierModel = "classifier_model",
        /// The turn's own model.
        TurnModel = "turn_model",
        /// The user.
        User = "user",
    }
    unknown
}

wire_enum! {
    /// A judge's answer.
    pub enum Verdict {
        /// The exit runs with its needs.
        Approve = "approve",
        /// The exit does not run; the model is told why.
        Deny = "deny",
        /// The judge leaves it to the next step of the chain.
        Abstain = "abstain",
    }
}

/// A judge's decision on an exit. Its members are this project's choice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Judgement {
    /// Who decided.
    pub judge: JudgeKind,
    /// The answer.
    pub verdict: Verdict,
    /// Why, one line that the model can act on when denied (empty when the judge gave none, such as the user).
    pub reason: String,
}

/// The record of one exit: what the call asks for, why, and how it was judged.
///
/// A call can ask for several exits (one record each); it runs again only when every one is approved, with the union
/// of their needs (docs/adr/0016-exit-kinds.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExitRecord {
    /// What kind of exit.
    pub kind: ExitKind,
    /// Where efrd found it.
    pub source: ExitSource,
    /// The call that asks for it.
    pub action: ExitAction,
    /// What it needs.
    pub needs: Needs,
    /// The paths it touches, absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<ExitTarget>,
    /// What else efrd knows of it.
    #[serde(default)]
    pub facts: ExitFacts,
    /// The decision; absent until judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judgement: Option<Judgement>,
}

impl ExitRecord {
    /// The target a client or a question names first: the first masked one (what a judge must see), else the first.
    #[must_use]
    pub fn main_target(&self) -> Option<&ExitTarget> {
        self.targets.iter().find(|t| t.masked).or_else(|| self.targets.first())
    }
}

/// The exit of a question (approval_requested's `exit`): what a client shows the user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExitInfo {
    /// The kind that the question is about: when the call has several exits, the first one that only the user may
    /// approve, or else the first one.
    pub kind: ExitKind,
    /// The call's other exits, absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<ExitKind>,
    /// What the call needs, for all its exits.
    pub needs: Needs,
    /// The target in a few words, such as `github.com` or `~/.ssh/id_ed25519`.
    pub target: String,
    /// Why the user is asked: the last judge's reason, or why only the user may approve the kind.
    pub reason: String,
    /// The step of the chain that passed the question on to the user; absent when it came to the user at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passed_on_by: Option<ChainStep>,
    /// The rule that allow_always would save, in words; absent when no rule may cover the call (then a client does
    /// not offer allow_always).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub always: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn there_are_17_kinds_and_an_unknown_kind_is_an_error() {
        assert_eq!(ExitKind::ALL.len(), 17);
        assert!(serde_json::from_str::<ExitKind>(r#""teleport""#).is_err());
        assert!(serde_json::from_str::<ExitKind>(r#""unknown""#).is_err());
        let kind: ExitKind = serde_json::from_str(r#""package_install""#).unwrap();
        assert_eq!(kind, ExitKind::PackageInstall);
    }

    #[test]
    fn members_that_are_absent_take_their_defaults() {
        let wire = r#"{"kind":"host","source":"proxy","action":{"tool":"shell","command":"curl https://x.org"},
            "needs":{"grants":[{"kind":"host","host":"x.org"}]}}"#;
        let record: ExitRecord = serde_json::from_str(wire).unwrap();
        assert_eq!(record.facts, ExitFacts::default());
        assert!(record.targets.is_empty() && record.judgement.is_none());
        assert!(!record.needs.unsandboxed);
        let target: ExitTarget = serde_json::from_str(r#"{"path":"/home/ada/.cache/pip","class":"cache"}"#).unwrap();
        assert!(!target.masked && !target.backup_before_write);
        let host: HostFact = serde_json::from_str(r#"{"host":"github.com"}"#).unwrap();
        assert_eq!((host.port, host.project_remote), (None, false));
    }

    #[test]
    fn empty_facts_and_needs_are_absent_on_the_wire() {
        assert_eq!(serde_json::to_string(&ExitFacts::default()).unwrap(), "{}");
        let needs = Needs {
            grants: Vec::new(),
            unsandboxed: true,
        };
        assert_eq!(serde_json::to_string(&needs).unwrap(), r#"{"unsandboxed":true}"#);
    }

    #[test]
    fn unknown_sources_classes_and_judges_read_as_unknown() {
        assert_eq!(
            serde_json::from_str::<ExitSource>(r#""ptrace""#).unwrap(),
            ExitSource::Unknown
        );
        assert_eq!(
            serde_json::from_str::<TargetClass>(r#""nfs""#).unwrap(),
            TargetClass::Unknown
        );
        assert_eq!(
            serde_json::from_str::<JudgeKind>(r#""oracle""#).unwrap(),
            JudgeKind::Unknown
        );
        assert_eq!(
            serde_json::from_str::<ChainStep>(r#""oracle""#).unwrap(),
            ChainStep::Unknown
        );
        assert!(serde_json::from_str::<Verdict>(r#""maybe""#).is_err());
    }
}
