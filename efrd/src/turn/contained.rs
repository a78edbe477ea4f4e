//! A contained call's launch plan, its one-time files and the launcher's report (docs/architecture.md,
//! "The sandbox"; docs/adr/0004-contained-calls.md).
//!
//! A contained call runs as `efr-launcher`'s command inside the conversation's hidden shell: efrd writes the plan to
//! a one-time file in the shell's private folder and types `'<launcher>' --plan-file '<file>'` as the call's command
//! line, so output, input waits, timeouts, detaching and `shell.interrupt` work as for a direct call. The plan is
//! made here, from:
//!
//! - the sandbox's base plan ([`crate::sandbox::plan::base_plan`]: the project root and `$SCRATCH` writable, the
//!   default masks and efr's own roots masked, no network), plus the turn's other project roots;
//! - the command: the line run by the user's shell as `shell -c line` (the launcher has no shell of its own);
//! - the working directory and the exported environment of the hidden shell at the call's start (so `cd` and
//!   `export` of earlier calls carry over), without the keys efrd holds ([`HELD_SECRETS`]), with `SCRATCH` set;
//! - the call's grants (none yet: grants come with the exits issue);
//! - the protected paths of all those writable roots ([`crate::sandbox::protect`]: git's folder, config and hooks,
//!   the folder that holds efr's roots), made again once the turn's other roots and the grants are in;
//! - the report going to a file next to the plan ([`ReportTo::File`]), read when the call ends ([`Outcome`]).
//!
//! Everything here but the file helpers is pure and unit-tested; the run itself is in `shell_call`.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use efr_protocol::internal::{
    LaunchCommand, LaunchPlan, LaunchReport, MAX_EXEC_STRING, MountKind, ReportTo, Writable, WritableSource,
};
use efr_protocol::wire::Grant;

use crate::sandbox::plan::{Layout, base_plan};
use crate::sandbox::protect::protect;
use efr_policy::paths::normalize_from_root;

/// The environment variables that hold keys efrd holds itself (model/keys.rs reads them). Neither the hidden shell
/// nor a contained call gets them (docs/architecture.md, "Processes and trust boundaries").
pub const HELD_SECRETS: &[&str] = &["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_COMPAT_API_KEY"];

/// `env` without the variables of [`HELD_SECRETS`].
pub fn without_held_secrets<K: AsRef<std::ffi::OsStr>, V>(env: impl IntoIterator<Item = (K, V)>) -> Vec<(K, V)> {
    env.into_iter()
        .filter(|(name, _)| !HELD_SECRETS.iter().any(|held| name.as_ref() == *held))
        .collect()
}

/// Parses the output of `env -0` (`NAME=value` entries, each ended by a NUL byte). An entry without `=`, with an
/// empty name, or that is not UTF-8 is left out (a launch plan holds UTF-8 strings).
pub fn parse_env(bytes: &[u8]) -> Vec<(String, String)> {
    bytes
        .split(|b| *b == 0)
        .filter_map(|entry| {
            let entry = std::str::from_utf8(entry).ok()?;
            let (name, value) = entry.split_once('=')?;
            (!name.is_empty()).then(|| (name.to_owned(), value.to_owned()))
        })
        .collect()
}

/// What one contained call's plan is made of.
#[derive(Debug, Clone)]
pub struct CallPlan<'a> {
    /// The folders of the base plan (home, runtime folder, efr's roots, the config's masks).
    pub layout: &'a Layout,
    /// bubblewrap, absolute (the probe found it).
    pub bwrap: &'a Path,
    /// The user's shell that runs the line, absolute (the hidden shell's own program).
    pub shell: &'a Path,
    /// The model's command line.
    pub line: &'a str,
    /// The hidden shell's working directory at the call's start.
    pub cwd: &'a Path,
    /// The hidden shell's exported environment at the call's start.
    pub env: &'a [(String, String)],
    /// The turn's project roots (writable); empty for a conversation without a project.
    pub project_roots: &'a [PathBuf],
    /// The conversation's `$SCRATCH` (writable, exported as `SCRATCH`).
    pub scratch: &'a Path,
    /// The call's grants.
    pub grants: &'a [Grant],
    /// Where the launcher writes its report.
    pub report: &'a Path,
    /// The read-only sandbox of cautious's reads (docs/adr/0009-cautious-reads-contained.md): no project root and no
    /// `$SCRATCH` writable (nothing but the private `/tmp`), no `SCRATCH` variable, and git's config that can start
    /// a program neutralised (`git_neutral`). The masks and the network are as for any contained call.
    pub read_only: bool,
    /// The desktop of the prompt's terminal (`shell_context.desktop`), whose control socket a `desktop` grant binds
    /// ([`crate::sandbox::grants`]); `None`: a `desktop` grant finds no socket and the launcher refuses the call.
    pub desktop: Option<&'a efr_protocol::wire::Desktop>,
}

/// The git config that a read-only call runs with, on top of every config file git reads: [`efr_git::NO_PROGRAMS`]
/// (each key a repository's own config could set to make a read start a program) and no transport at all. Passed
/// as `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_<n>`/`GIT_CONFIG_VALUE_<n>` (git 2.31 and later), which git reads as
/// command-line config: it wins over the system, global, local and worktree files and their includes. `GIT_PAGER`
/// (set too) wins over `pager.<command>`. Some cannot be switched off this way: `diff.external` (an empty value
/// makes `git diff` fail, and git has no config that turns it off) and the drivers that `.gitattributes` names (a
/// filter's `clean`, a diff driver's `textconv`), whose names git does not fix. Those run only inside the read-only
/// sandbox, where they can read no more than the call itself.
fn git_neutral() -> impl Iterator<Item = (&'static str, &'static str)> {
    efr_git::NO_PROGRAMS
        .iter()
        .copied()
        .chain([("protocol.allow", "never")])
}

/// The launch plan of a contained call; see the module docs for what goes in. Environment entries that a plan may
/// not hold (a name with `=`, a string longer than an exec takes, a NUL byte) are left out, so the plan is refused
/// only for a reason of the call itself.
pub fn call_plan(call: &CallPlan<'_>) -> LaunchPlan {
    let project = call.project_roots.first().map(PathBuf::as_path);
    let mut plan = base_plan(call.layout, call.bwrap, Vec::new(), call.cwd, project, call.scratch);
    plan.command = LaunchCommand::Shell {
        shell: call.shell.to_path_buf(),
        line: call.line.to_owned(),
    };
    if call.read_only {
        plan.writable.clear();
        plan.read_only_roots = under_private_tmp(call.project_roots, call.cwd);
        plan.env = sandbox_env(call.env, call.cwd, None, &plan.env);
        neutralise_git(&mut plan.env);
    } else {
        for root in call.project_roots.iter().skip(1) {
            plan.writable.push(Writable {
                path: root.clone(),
                source: WritableSource::Project,
            });
        }
        plan.env = sandbox_env(call.env, call.cwd, Some(call.scratch), &plan.env);
    }
    plan.grants = call.grants.to_vec();
    let session_bus = call
        .env
        .iter()
        .find(|(name, _)| name == "DBUS_SESSION_BUS_ADDRESS")
        .map(|(_, value)| value.as_str());
    crate::sandbox::grants::resolve(&mut plan, call.desktop, &call.layout.runtime_dir, session_bus);
    protect(&mut plan, &call.layout.efr_roots);
    plan.report = ReportTo::File {
        path: call.report.to_path_buf(),
    };
    plan
}

/// The folders of a read-only call that its private `/tmp` would hide: its project roots and its start folder that
/// lie under `/tmp` (not `/tmp` itself), each once, a folder inside another left out. The plan shows them read-only.
fn under_private_tmp(project_roots: &[PathBuf], cwd: &Path) -> Vec<PathBuf> {
    let tmp = Path::new("/tmp");
    let mut found: Vec<PathBuf> = Vec::new();
    for path in project_roots.iter().map(PathBuf::as_path).chain([cwd]) {
        let path = efr_policy::paths::normalize(path);
        if path == tmp || !path.starts_with(tmp) || found.iter().any(|other| path.starts_with(other)) {
            continue;
        }
        found.retain(|other| !other.starts_with(&path));
        found.push(path);
    }
    found
}

/// The environment of a contained call: the shell's, without [`HELD_SECRETS`] and entries a plan may not hold, with
/// `PWD` the call's directory and `SCRATCH` set when there is one; the base's `PATH` when the shell has none.
fn sandbox_env(
    shell_env: &[(String, String)],
    cwd: &Path,
    scratch: Option<&Path>,
    base: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let fits = |name: &str, value: &str| {
        !name.contains('=')
            && !name.contains('\0')
            && !value.contains('\0')
            && name.len() + 1 + value.len() <= MAX_EXEC_STRING
    };
    let mut env: BTreeMap<String, String> = without_held_secrets(shell_env.iter().cloned())
        .into_iter()
        .filter(|(name, value)| fits(name, value))
        .collect();
    for (name, value) in base {
        env.entry(name.clone()).or_insert_with(|| value.clone());
    }
    env.insert("PWD".into(), cwd.display().to_string());
    match scratch {
        Some(scratch) => env.insert("SCRATCH".into(), scratch.display().to_string()),
        None => env.remove("SCRATCH"),
    };
    env.remove("OLDPWD");
    env
}

/// Adds [`git_neutral`] to `env` after the command-line config entries it already has (an export of the user's
/// `GIT_CONFIG_COUNT` keeps its entries; a count that does not parse is replaced), and sets `GIT_PAGER` to `cat`.
fn neutralise_git(env: &mut BTreeMap<String, String>) {
    let first = env
        .get("GIT_CONFIG_COUNT")
        .and_then(|count| count.trim().parse::<usize>().ok())
        .filter(|count| *count < 1000)
        .unwrap_or(0);
    let mut count = first;
    for (key, value) in git_neutral() {
        env.insert(format!("GIT_CONFIG_KEY_{count}"), key.to_owned());
        env.insert(format!("GIT_CONFIG_VALUE_{count}"), value.to_owned());
        count += 1;
    }
    env.insert("GIT_CONFIG_COUNT".into(), count.to_string());
    env.insert("GIT_PAGER".into(), "cat".into());
}

/// Quotes `text` as one word for bash and zsh.
pub fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The command line typed into the hidden shell for a contained call.
pub fn launcher_line(launcher: &Path, plan_file: &Path) -> String {
    format!(
        "{} --plan-file {}",
        quote(&launcher.to_string_lossy()),
        quote(&plan_file.to_string_lossy())
    )
}

/// The command line that writes the hidden shell's exported environment to `file` (NUL-separated). `\command`
/// skips an alias or a function named `env`.
pub fn env_line(file: &Path) -> String {
    format!("\\command env -0 >{}", quote(&file.to_string_lossy()))
}

/// Writes a one-time file readable by the owner only (mode 0600); fails when the file exists.
///
/// # Errors
/// The create or the write failed.
pub fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)
}

/// How a contained call ended, as its launcher reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The command ran and ended with this status; `exec_error` when the program could not start.
    Exited {
        /// The command's status (128 + the signal for a signal).
        exit_code: i32,
        /// Why the program could not start.
        exec_error: Option<String>,
    },
    /// The sandbox could not start; the command did not run.
    SetupError {
        /// The failing part's own words, such as bubblewrap's `Can't chdir to /tmp/x`.
        message: String,
    },
    /// The report has no end line: the launcher was ended (an interrupt, a closed shell) or never ran.
    NoEnd,
}

impl Outcome {
    /// The outcome of a report's text ([`LaunchReport::parse_lines`]); a report that does not parse has no end.
    pub fn of_report(text: &str) -> Self {
        let Ok(lines) = LaunchReport::parse_lines(text) else {
            return Self::NoEnd;
        };
        match LaunchReport::end(&lines) {
            Some(LaunchReport::Exited { exit_code, exec_error }) => Self::Exited {
                exit_code: *exit_code,
                exec_error: exec_error.clone(),
            },
            Some(LaunchReport::SetupError { message, .. }) => Self::SetupError {
                message: message.clone(),
            },
            _ => Self::NoEnd,
        }
    }

    /// Reads and removes the report file; a missing file has no end.
    pub fn take(report: &Path) -> Self {
        let text = std::fs::read_to_string(report).unwrap_or_default();
        let _ = std::fs::remove_file(report);
        Self::of_report(&text)
    }
}

/// How a contained call ended, from the launcher's report.
#[derive(Debug, Default)]
pub(super) struct ContainedEnd {
    /// The status to report instead of the shell's (`Some(None)`: none, the command did not run); `None` keeps the
    /// shell's.
    pub(super) exit_code: Option<Option<i32>>,
    /// A line for the model.
    pub(super) note: Option<String>,
    /// The sandbox could not start: its message.
    pub(super) setup_error: Option<String>,
}

impl ContainedEnd {
    /// Reads (and removes) the launcher's report.
    pub(super) fn take(report: &Path) -> Self {
        match Outcome::take(report) {
            Outcome::Exited { exit_code, exec_error } => Self {
                exit_code: Some(Some(exit_code)),
                note: exec_error.map(|e| format!("[the program could not start: {e}]")),
                setup_error: None,
            },
            // The command did not run: its status is the launcher's, not the command's.
            Outcome::SetupError { message } => Self {
                exit_code: Some(None),
                note: Some(format!(
                    "[efr's sandbox could not start, so the command did not run: {message}]"
                )),
                setup_error: Some(message),
            },
            Outcome::NoEnd => Self::default(),
        }
    }
}

/// The launch plan of a contained call of `env`'s turn with `grants`, for its mounts only (the shell, line and report
/// are placeholders): what efrd checks a patch or an exit's path against. The roots and `$SCRATCH` are resolved
/// through links like the paths they are checked against.
#[must_use]
pub fn mounts_plan(env: &super::env::ToolEnv, grants: &[Grant]) -> LaunchPlan {
    let roots = super::patch_paths::resolved_roots(&env.roots);
    let scratch = super::patch_paths::resolved_roots(std::slice::from_ref(&env.scratch)).remove(0);
    call_plan(&CallPlan {
        layout: &env.layout,
        bwrap: Path::new("/usr/bin/bwrap"),
        shell: Path::new("/bin/sh"),
        line: "true",
        cwd: &env.cwd,
        env: &[],
        project_roots: &roots,
        scratch: &scratch,
        grants,
        report: Path::new("/dev/null"),
        read_only: false,
        desktop: None,
    })
}

/// Whether a contained call may write at `path` (absolute): the deepest mount of `plan` that holds it is a writable
/// bind (a project root, `$SCRATCH`, a write grant, a pinned git folder). The private `/tmp`, masks, protected
/// read-only paths (`.git/config`) and everything read-only are not: a file tool's write there would not be what the
/// sandbox allows (the `/tmp` the call sees is its own).
pub fn writable_in(plan: &LaunchPlan, path: &Path) -> bool {
    deciding_mount(plan, path).is_some_and(|kind| matches!(kind, MountKind::Writable | MountKind::Pinned))
}

/// The kind of the mount that decides what a contained call sees at `path`: the last (deepest) one that holds it;
/// `None` for a plan that does not build.
fn deciding_mount(plan: &LaunchPlan, path: &Path) -> Option<MountKind> {
    let path = normalize_from_root(path);
    let mounts = plan.mounts().ok()?;
    mounts
        .iter()
        .rev()
        .find(|mount| path.starts_with(&mount.path))
        .map(|mount| mount.kind)
}

/// Whether a contained call under `plan` sees the host's content at `path` (read-only or writable), not a mask, a
/// private `/tmp`, its own `/dev` or `/proc`.
#[must_use]
pub fn readable_in(plan: &LaunchPlan, path: &Path) -> bool {
    deciding_mount(plan, path).is_some_and(|kind| {
        matches!(
            kind,
            MountKind::RootReadOnly | MountKind::Writable | MountKind::Pinned | MountKind::ReadOnly(_)
        )
    })
}

#[cfg(test)]
#[path = "contained_tests.rs"]
mod tests;
