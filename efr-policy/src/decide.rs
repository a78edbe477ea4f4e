//! The decision: from a call, the turn's mode and its context to run, ask or refuse.
//!
//! [`decide`] is pure: it reads no file and no clock, so the same input always gives the same [`Decision`], and the
//! table tests in `policy/tests/` pin every rule. The caller (the turn loop) maps the decision to events:
//! [`Decision::Run`] to tool_call_started with its `launch`; [`Decision::Ask`] to approval_requested with the
//! question's members, and after `allow` runs the call with [`Question::launch`]; [`Decision::Refuse`] to
//! tool_call_completed with `refusal`, and the call never runs.

use std::path::PathBuf;

use efr_protocol::wire::common::{Mode, Origin};
use efr_protocol::wire::{ApprovedBy, ExitInfo, Launch};

use super::analysis::{Concern, LineAnalysis, Scope, analyse};
use super::floors::{self, EfrDirs};
use super::git_config::{self, GitPlace, GitTrust};
use super::paths::{display, is_within, normalize, root_of};

/// The longest summary of a shell call, in characters, before it is cut with `…`.
pub const SUMMARY_CHARS: usize = 200;

/// A call the model made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// A `shell` tool call.
    Shell(ShellCall),
    /// An `apply_patch` tool call.
    Patch(PatchCall),
}

/// A shell call: the command line and where it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellCall {
    /// The command line as the model wrote it (several lines and heredocs allowed).
    pub command: String,
    /// The hidden shell's working directory when the call starts (absolute; a relative one cannot place relative
    /// paths, which only makes the decision more careful).
    pub cwd: PathBuf,
}

/// A patch call: what it changes, as absolute paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PatchCall {
    /// Each file the patch touches. The caller makes each path absolute (against the call's directory) and should
    /// pass it through [`super::paths::resolve`], so that a symbolic link out of the project is seen.
    pub changes: Vec<PatchChange>,
}

/// One file of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchChange {
    /// The file (absolute).
    pub path: PathBuf,
    /// What the patch does to it.
    pub kind: ChangeKind,
}

/// What a patch does to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangeKind {
    /// Creates it.
    Add,
    /// Changes it.
    Update,
    /// Deletes it.
    Delete,
    /// Changes it and moves it to `to` (absolute).
    Move {
        /// The new path.
        to: PathBuf,
    },
}

/// What the decision needs besides the call and the mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyContext {
    /// The turn's project roots (absolute, resolved like patch paths). Empty outside any project.
    pub project_roots: Vec<PathBuf>,
    /// Where the turn's prompt came from. A phone's turn runs with at most cautious ([`effective_mode`]).
    pub origin: Origin,
    /// The user's home folder, for `~`, `$HOME` and the floors.
    pub home: Option<PathBuf>,
    /// efr's own roots, for the floors.
    pub efr_dirs: EfrDirs,
    /// The knobs of `[permissions]` in config.toml.
    pub config: PolicyConfig,
    /// What the caller found at the repositories of a shell line's git commands ([`analyse_call`]'s
    /// [`LineAnalysis::git`]), for cautious. A place missing here counts as unchecked: cautious asks.
    pub git: Vec<(GitPlace, GitTrust)>,
    /// efr's sandbox can run (the probe says so): cautious runs its read-only lines in the read-only sandbox
    /// ([`LaunchKind::ContainedReadOnly`]) and needs neither [`Self::git`] nor a question about a credential store
    /// (docs/adr/0009-cautious-reads-contained.md). `false`: they run direct, as the user.
    pub sandbox: bool,
    /// Nothing on this machine can contain a read (neither bubblewrap nor Landlock): cautious asks before every
    /// command instead of running its reads as the user (docs/adr/0020-landlock-only-reads.md).
    pub uncontained: bool,
    /// The config's `[sandbox] extra_masks` (absolute paths): the sandbox masks them, so without it cautious asks
    /// before reading one, as before reading a default credential store.
    pub extra_masks: Vec<PathBuf>,
}

impl PolicyContext {
    /// A context with these project roots and origin, no home, no efr roots and the default config.
    #[must_use]
    pub fn new(project_roots: Vec<PathBuf>, origin: Origin) -> Self {
        Self {
            project_roots,
            origin,
            home: None,
            efr_dirs: EfrDirs::default(),
            config: PolicyConfig::default(),
            git: Vec::new(),
            sandbox: false,
            uncontained: false,
            extra_masks: Vec::new(),
        }
    }
}

/// The policy's config knobs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicyConfig {
    /// More commands that cautious runs without a question, with any arguments (names such as `cargo-tree`).
    pub extra_read_only: Vec<String>,
}

/// How a call runs (docs/architecture.md, "Policy and modes").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchKind {
    /// Typed into the hidden shell as the user (a patch: applied by efrd as the user).
    Direct,
    /// In the sandbox, by efr-launcher (a patch: applied only where a contained call may write, the project roots
    /// and `$SCRATCH`; elsewhere it fails as it would inside the sandbox).
    Contained,
    /// An approved exit from auto mode: as the user, outside the sandbox.
    Unsandboxed,
    /// Cautious's read-only line, in the read-only sandbox: the same masks and no network as
    /// [`Self::Contained`], but nothing writable except a private `/tmp`, and git's config that can start a
    /// program neutralised (docs/adr/0009-cautious-reads-contained.md). On the wire it is `contained` with no grants.
    ContainedReadOnly,
}

impl LaunchKind {
    /// The wire form (tool_call_started `launch`), with no grants.
    #[must_use]
    pub fn to_wire(self) -> Launch {
        match self {
            Self::Direct => Launch::Direct,
            Self::Contained | Self::ContainedReadOnly => Launch::Contained { grants: Vec::new() },
            Self::Unsandboxed => Launch::Unsandboxed,
        }
    }
}

/// A question for the user (the approval_requested event).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// What the call would do, one line: the command (cut at [`SUMMARY_CHARS`]) or the patch's files.
    pub summary: String,
    /// Why the mode asks, one plain line, such as "cautious asks before any network access".
    pub reason: String,
    /// The call may wait for input at the terminal (a sudo password, an editor, a REPL).
    pub interactive: bool,
    /// Only the user's own machine may answer: set for an interactive call (a phone cannot type its input), a
    /// privileged one, and a guarded delete.
    pub local_only: bool,
    /// Seconds to answer; `None` when the question has no fixed limit. Full mode's guarded deletes have
    /// [`floors::GUARDED_DELETE_SECS`].
    pub expires_in_secs: Option<u32>,
    /// How the call runs once allowed.
    pub launch: LaunchKind,
    /// The exit of auto mode that the question is about (approval_requested's `exit`); `None` for a question of
    /// another mode. The turn sets it when the judge chain passes a call's exits to the user
    /// (docs/adr/0016-exit-kinds.md).
    pub exit: Option<ExitInfo>,
}

/// The decision about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run at once.
    Run {
        /// How.
        launch: LaunchKind,
    },
    /// Ask the user first.
    Ask(Question),
    /// Never run: tool_call_completed carries the refusal.
    Refuse {
        /// A few words, such as "efr's config (floor)".
        refusal: String,
    },
}

/// The mode a call is decided in. A phone's turn runs with at most cautious (docs/protocol.md, "The contract": "Remote
/// devices": "A prompt.send from a phone runs with a mode of at most cautious"), and a turn the daemon starts for a job
/// notice with at most auto (docs/protocol.md, "The contract": "full mode"); the caller already records those modes,
/// and this repeats the rules so that no path around them exists. A mode this build does not know is decided as manual.
#[must_use]
pub fn effective_mode(mode: Mode, origin: Origin) -> Mode {
    match (mode, origin) {
        (Mode::Auto | Mode::Full, Origin::Phone) => Mode::Cautious,
        (Mode::Full, Origin::Daemon) => Mode::Auto,
        (Mode::Unknown, _) => Mode::Manual,
        (mode, _) => mode,
    }
}

/// Who let a shell call run outside the sandbox (shell_command_detached's and shell.status's `approved_by`):
/// `you` when the user allowed it at an approval question, `full_mode` when full mode ran it without one; `None`
/// for a contained call and for one that ran without a question in another mode (cautious runs read-only commands
/// as they are). `your_rule` and `reviewer` wait for saved rules and the reviewer.
#[must_use]
pub fn approved_by(mode: Mode, contained: bool, allowed_by_user: bool) -> Option<ApprovedBy> {
    match (contained, allowed_by_user, mode) {
        (true, _, _) => None,
        (false, true, _) => Some(ApprovedBy::You),
        (false, false, Mode::Full) => Some(ApprovedBy::FullMode),
        (false, false, _) => None,
    }
}

/// Cautious's question for a read when nothing on this machine can contain it.
pub const UNCONTAINED: &str = "cautious asks before every command when neither bubblewrap nor Landlock can contain \
                               a read on this machine";

/// Decides one call.
///
/// Rules (docs/architecture.md, "Policy and modes"; the floors and the guarded delete are in [`super::floors`]):
/// - a floor refuses in every mode;
/// - manual asks before every shell call ("manual asks before every command") and every patch ("manual asks before
///   every file change");
/// - cautious runs a read-only line (wherever it runs) [`LaunchKind::ContainedReadOnly`] when the sandbox can run
///   ([`PolicyContext::sandbox`]), asks when nothing can contain it ([`PolicyContext::uncontained`]), else
///   [`LaunchKind::Direct`] unless it reads a credential store
///   ([`LineAnalysis::store_reads`]) or uses a repository not found plain in [`PolicyContext::git`]; and it runs a
///   patch whose every path is inside a project root and not inside a `.git` folder direct; with the sandbox, a
///   line it cannot analyse that shows no need of more than reading ([`Concern::needs_only_reading`]) runs
///   [`LaunchKind::ContainedReadOnly`] too; anything else asks, naming the first concern (network first);
/// - auto runs every call [`LaunchKind::Contained`]; its exits are the turn's ([`decide_auto`]);
/// - full runs every call [`LaunchKind::Direct`], except a guarded delete, which asks for
///   [`floors::GUARDED_DELETE_SECS`] seconds.
#[must_use]
pub fn decide(call: &Call, mode: Mode, ctx: &PolicyContext) -> Decision {
    let mode = effective_mode(mode, ctx.origin);
    match call {
        Call::Shell(shell) => decide_shell(shell, &analyse_call(shell, ctx), mode, ctx),
        Call::Patch(patch) => decide_patch(patch, mode, ctx),
    }
}

/// The analysis of a shell call in this context (public for callers that need the facts, such as whether the line
/// starts a shell or a REPL).
#[must_use]
pub fn analyse_call(call: &ShellCall, ctx: &PolicyContext) -> LineAnalysis {
    let scope = Scope {
        cwd: &call.cwd,
        project_roots: &ctx.project_roots,
        home: ctx.home.as_deref(),
        efr: &ctx.efr_dirs,
        extra_read_only: &ctx.config.extra_read_only,
        extra_masks: &ctx.extra_masks,
    };
    analyse(&call.command, &scope)
}

/// [`decide`] for a shell call whose line the caller has already analysed with [`analyse_call`] in this `ctx` (the
/// turn reads the analysis's git places before it decides, so the line is parsed once).
#[must_use]
pub fn decide_shell(call: &ShellCall, analysis: &LineAnalysis, mode: Mode, ctx: &PolicyContext) -> Decision {
    let mode = effective_mode(mode, ctx.origin);
    if let Some(refusal) = analysis.refusal {
        return Decision::Refuse {
            refusal: refusal.to_owned(),
        };
    }
    let summary = shell_summary(&call.command);
    let ask = |reason: String, expires_in_secs: Option<u32>, local: bool| {
        Decision::Ask(Question {
            summary: summary.clone(),
            reason,
            interactive: analysis.interactive,
            local_only: analysis.interactive || analysis.privileged || local,
            expires_in_secs,
            launch: LaunchKind::Direct,
            exit: None,
        })
    };
    match mode {
        Mode::Cautious => match analysis.first_concern() {
            None if ctx.sandbox => Decision::Run {
                launch: LaunchKind::ContainedReadOnly,
            },
            None if ctx.uncontained => ask(UNCONTAINED.to_owned(), None, false),
            None if !analysis.store_reads.is_empty() => ask(
                format!(
                    "cautious asks before reading a credential store when efr's sandbox is not available ({})",
                    analysis.store_reads[0]
                ),
                None,
                false,
            ),
            None => {
                let show = |path: &std::path::Path| display(path, &ctx.project_roots, ctx.home.as_deref());
                match git_config::cautious_reason(&analysis.git, &ctx.git, show) {
                    None => Decision::Run {
                        launch: LaunchKind::Direct,
                    },
                    Some(reason) => ask(reason, None, false),
                }
            }
            // A line efr cannot analyse but that shows no need of more than reading runs in the read-only sandbox
            // without a question: the sandbox, not the analysis, is what keeps it from writing, the network and
            // the credential stores. What it needed beyond reading fails there, and the model is told so.
            Some(_) if ctx.sandbox && analysis.concerns.iter().all(Concern::needs_only_reading) => Decision::Run {
                launch: LaunchKind::ContainedReadOnly,
            },
            Some(concern) => ask(concern.cautious_reason(), None, false),
        },
        Mode::Auto => decide_auto(Some(analysis)),
        Mode::Full => match analysis.guarded_deletes.first() {
            None => Decision::Run {
                launch: LaunchKind::Direct,
            },
            Some(target) => {
                let summary = format!("delete {target} and all it holds: {summary}");
                Decision::Ask(Question {
                    summary,
                    reason: "full mode asks before a delete outside the project".to_owned(),
                    interactive: analysis.interactive,
                    local_only: true,
                    expires_in_secs: Some(floors::GUARDED_DELETE_SECS),
                    launch: LaunchKind::Direct,
                    exit: None,
                })
            }
        },
        // Manual, and Unknown (already mapped to manual by effective_mode).
        _ => ask("manual asks before every command".to_owned(), None, false),
    }
}

/// Auto mode: every call runs contained with the mode's base plan.
///
/// A call that must leave the sandbox is not decided here: the turn finds its exits (efrd's `exits::find`) before it
/// runs and after it failed, and the judge chain decides them (docs/adr/0016-exit-kinds.md); an approved exit runs
/// with its grants, or [`LaunchKind::Unsandboxed`]. `analysis` is `None` for a patch.
#[must_use]
pub fn decide_auto(analysis: Option<&LineAnalysis>) -> Decision {
    let _ = analysis;
    Decision::Run {
        launch: LaunchKind::Contained,
    }
}

fn decide_patch(call: &PatchCall, mode: Mode, ctx: &PolicyContext) -> Decision {
    let paths: Vec<&PathBuf> = call
        .changes
        .iter()
        .flat_map(|c| match &c.kind {
            ChangeKind::Move { to } => vec![&c.path, to],
            _ => vec![&c.path],
        })
        .collect();
    for path in &paths {
        let path = normalize(path);
        if let Some(refusal) = ctx.efr_dirs.write_refusal(&path, false) {
            return Decision::Refuse {
                refusal: refusal.to_owned(),
            };
        }
        if floors::raw_device(&path) {
            return Decision::Refuse {
                refusal: floors::DEVICE.to_owned(),
            };
        }
    }
    let ask = |reason: &str| {
        Decision::Ask(Question {
            summary: patch_summary(call, ctx),
            reason: reason.to_owned(),
            interactive: false,
            local_only: false,
            expires_in_secs: None,
            launch: LaunchKind::Direct,
            exit: None,
        })
    };
    match mode {
        Mode::Cautious => {
            if let Some(outside) = paths.iter().find(|p| root_of(p, &ctx.project_roots).is_none()) {
                let shown = display(outside, &ctx.project_roots, ctx.home.as_deref());
                return ask(&format!(
                    "cautious asks before changing files outside the project ({shown})"
                ));
            }
            if let Some(git) = paths.iter().find(|p| in_git_dir(p, &ctx.project_roots)) {
                let shown = display(git, &ctx.project_roots, ctx.home.as_deref());
                return ask(&format!("cautious asks before changing git's own files ({shown})"));
            }
            Decision::Run {
                launch: LaunchKind::Direct,
            }
        }
        Mode::Auto => decide_auto(None),
        Mode::Full => Decision::Run {
            launch: LaunchKind::Direct,
        },
        _ => ask("manual asks before every file change"),
    }
}

/// Whether a path inside a project lies in a `.git` folder (hooks and config there run programs on later git
/// commands, which cautious runs without a question).
fn in_git_dir(path: &std::path::Path, roots: &[PathBuf]) -> bool {
    let path = normalize(path);
    roots.iter().filter(|root| is_within(&path, root)).any(|root| {
        path.strip_prefix(root)
            .is_ok_and(|rest| rest.components().any(|c| c.as_os_str() == ".git"))
    })
}

/// A shell call's summary: the line's first line, cut at [`SUMMARY_CHARS`], with `…` when anything was left out.
#[must_use]
pub fn shell_summary(command: &str) -> String {
    let trimmed = command.trim();
    let first = trimmed.lines().next().unwrap_or_default();
    let mut out: String = first.chars().take(SUMMARY_CHARS).collect();
    if out.len() < trimmed.len() {
        out.push_str(" …");
    }
    out
}

/// A patch's summary: up to three files with what happens to each, then how many more.
#[must_use]
pub fn patch_summary(call: &PatchCall, ctx: &PolicyContext) -> String {
    let show = |p: &PathBuf| display(p, &ctx.project_roots, ctx.home.as_deref());
    let items: Vec<String> = call
        .changes
        .iter()
        .take(3)
        .map(|c| match &c.kind {
            ChangeKind::Add => format!("add {}", show(&c.path)),
            ChangeKind::Update => format!("change {}", show(&c.path)),
            ChangeKind::Delete => format!("delete {}", show(&c.path)),
            ChangeKind::Move { to } => format!("move {} to {}", show(&c.path), show(to)),
        })
        .collect();
    let mut out = items.join(", ");
    if call.changes.len() > 3 {
        out.push_str(&format!(" and {} more", call.changes.len() - 3));
    }
    if out.is_empty() {
        out.push_str("an empty patch");
    }
    out
}
