//! The hidden shell: one bash or zsh per conversation, in a pty that efrd owns, that runs the model's shell calls
//! (docs/architecture.md, "Tools").
//!
//! A shell call types its command line into the shell as a user would, so the working directory, exported variables,
//! functions and aliases carry from one call to the next, as in a terminal. The shell prints markers around each
//! run (a random per-shell nonce, the run's id, the exit status), and efrd reads the output between them, ANSI
//! removed, bounded. A VT parser keeps the screen, so efrd knows the row that holds the cursor (`prompt`). While a
//! command runs, efrd watches the terminal's foreground process group and termios flags to see a wait for input.
//!
//! # Use
//!
//! ```no_run
//! # async fn demo() -> Result<(), efrd::tools::shell::ShellError> {
//! use std::time::Duration;
//! use efrd::tools::shell::{HiddenShell, OutputLimits, ShellKind, ShellOptions};
//!
//! let shell = HiddenShell::start(ShellOptions::new(ShellKind::Bash, "/home/ana/project".into(), "/run/user/1000/efr".into())).await?;
//! let run = shell.run("cargo build", Duration::from_secs(120)).await?;
//! let mut input = run.input(); // tool_call_input_changed, while the call runs
//! let answer = run.answer().await;
//! let for_model = answer.output.for_model(OutputLimits::MODEL);
//! let for_clients = answer.output.for_client();
//! if let Some(detached) = answer.detached {
//!     // left_running: shell_command_detached now; shell_command_ended when this resolves.
//!     let end = detached.ended().await;
//! }
//! # Ok(()) }
//! ```
//!
//! A shell that exited or was closed answers every request with [`ShellError::Gone`]; [`ShellSlot`] keeps one shell
//! per conversation and starts a new one when the last is gone, which is what "the next call starts a new shell"
//! means.
//!
//! # Decisions, in short
//!
//! - The shell gets the caller's environment but none of the user's rc files (no prompt themes, hooks or greeters
//!   in the output); efr's own rc sets a plain prompt, no history file, no line editor, `PAGER=cat`. See `rc.rs`.
//! - Each run's command line goes to a private file that the shell sources from one typed line, which also prints
//!   the start and end markers (to `/dev/tty`): multi-line commands work, and `PS1`, `PROMPT_COMMAND`, `precmd` or
//!   `exec >/dev/null` cannot lose a marker. A prompt hook and a resync line cover an interrupt. See `rc.rs`.
//! - Output: clients get at most [`CLIENT_OUTPUT_CAP`] (1 MiB) of text per call, head and tail; the model gets what
//!   [`OutputLimits`] says. Memory per shell stays about that cap however much a command prints.
//! - Input waits: every [`POLL_EVERY`] while a command runs, a look at the terminal's foreground group, its termios
//!   flags and the group's system calls in `/proc` (a scan of `/proc/*/stat`, about a millisecond per hundred
//!   processes). See `waits.rs`.
//! - Closing a shell (or its exit) ends every process of its session: SIGHUP to the shell, SIGKILL after 0.5 s, then
//!   SIGKILL to what is left in the session. A process that left the session (`setsid`) is not tracked.
//!
//! # Modules
//!
//! - `pty`: the pty pair and the spawn (setsid, controlling terminal, no bare fork);
//! - `rc`: efr's own startup files and the typed line (what the shell loads, how markers survive);
//! - `capture`: pty bytes → markers and plain text; `output`: bounded text, [`bound_output`];
//! - `screen`: the VT screen and the cursor row; `waits`: input waits; `nested`: [`nested_shell`];
//! - `handle`: the caller's types; `actor`: the task that owns the shell.
//!
//! Runs stay free of protocol events: the caller maps [`RunAnswer`], [`RunEnd`], [`InputWait`] and [`ShellStatus`]
//! to `tool_call_*` and `shell_command_*` events.

mod actor;
mod capture;
mod handle;
mod nested;
mod output;
mod pty;
mod rc;
mod screen;
mod waits;

#[cfg(test)]
mod release_tests;
#[cfg(test)]
mod tests;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, Utc};
use rand::RngCore;
use tokio::io::unix::AsyncFd;
use tokio::sync::{mpsc, oneshot, watch};

pub use handle::{
    Busy, Detached, EndCause, HiddenShell, Life, MovedEnd, Released, Run, RunAnswer, RunEnd, ShellStatus,
};
pub use nested::nested_shell;
pub use output::{CLIENT_OUTPUT_CAP, MAX_LINE_BYTES, OutputLimits, RunOutput, bound_output};
pub use rc::ShellKind;
pub use screen::{PROMPT_MAX_CHARS, SCREEN_COLS, SCREEN_ROWS};
pub(crate) use waits::session_members;
pub use waits::{InputKind, InputWait, POLL_EVERY, QUIET_FOR, looks_like_password_prompt};

/// How long [`HiddenShell::start`] waits for the shell's ready marker by default.
pub const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// Errors of the hidden shell. Each method says which it returns.
#[derive(Debug, thiserror::Error)]
pub enum ShellError {
    /// The shell could not be started: bad options, no such program, pty or spawn failure.
    #[error("cannot start the hidden shell: {0}")]
    Start(String),
    /// The shell started but did not print its ready marker in time, or ended first; `screen` is what its screen
    /// showed (non-blank rows, at most 1000 characters).
    #[error("the hidden shell did not get ready within {waited:?} (its screen shows {screen:?})")]
    NotReady {
        /// How long it waited.
        waited: Duration,
        /// What the screen showed.
        screen: String,
    },
    /// Another run's command holds the shell (also one left running).
    #[error(
        "the hidden shell is busy with `{command}` (running since {}); wait for it to end, or stop it with `efr shell \
         stop`",
        since.format("%Y-%m-%d %H:%M:%S UTC")
    )]
    Busy {
        /// The first 200 characters of the command that holds the shell.
        command: String,
        /// When its run started.
        since: DateTime<Utc>,
    },
    /// No command runs, so there is nothing to answer or interrupt.
    #[error("no command runs in the hidden shell")]
    NoRun,
    /// The shell exited or was closed; start a new one.
    #[error("the hidden shell has {0}; the next call starts a new one")]
    Gone(Life),
    /// The command line cannot be run.
    #[error("invalid command line: {0}")]
    InvalidCommand(&'static str),
    /// A system call failed.
    #[error("cannot {context}: {source}")]
    Io {
        /// What efrd was doing.
        context: &'static str,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// How to start a hidden shell.
#[derive(Debug, Clone)]
pub struct ShellOptions {
    /// bash or zsh.
    pub kind: ShellKind,
    /// The program; `None` looks up `bash` or `zsh` in the `PATH` of `env`.
    pub program: Option<PathBuf>,
    /// The working directory the shell starts in.
    pub cwd: PathBuf,
    /// The whole environment of the shell (efrd's own is not inherited); `TERM` is set to `xterm-256color`, and
    /// the rc sets `PAGER` and `GIT_PAGER` to `cat`.
    pub env: Vec<(OsString, OsString)>,
    /// A folder efrd owns (the runtime root); each shell makes a private folder in it (mode 0700) for its rc files
    /// and its runs' command files, removed when the shell ends.
    pub work_root: PathBuf,
    /// The longest a command left running may hold the shell after its run answered; then it is interrupted, and
    /// closed 5 s later if still running ([`EndCause::Limit`]). `None`: no limit.
    pub detached_limit: Option<Duration>,
    /// How long to wait for the shell to get ready ([`READY_TIMEOUT`] by default).
    pub ready_timeout: Duration,
}

impl ShellOptions {
    /// Options for `kind` in `cwd` with efrd's environment, no detached limit, the default ready timeout.
    pub fn new(kind: ShellKind, cwd: PathBuf, work_root: PathBuf) -> Self {
        Self {
            kind,
            program: None,
            cwd,
            env: std::env::vars_os().collect(),
            work_root,
            detached_limit: None,
            ready_timeout: READY_TIMEOUT,
        }
    }
}

impl HiddenShell {
    /// Starts a shell and waits until its rc ran (its ready marker).
    ///
    /// Errors: [`ShellError::Start`] when `cwd` or `work_root` is not a folder, the program cannot be started, or
    /// the pty cannot be opened; [`ShellError::NotReady`] when it does not get ready within `ready_timeout` or ends
    /// first.
    pub async fn start(opts: ShellOptions) -> Result<Self, ShellError> {
        if !opts.cwd.is_dir() {
            return Err(ShellError::Start(format!(
                "the working directory {} is not a folder",
                opts.cwd.display()
            )));
        }
        let dir = tempfile::Builder::new()
            .prefix("shell-")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir_in(&opts.work_root)
            .map_err(|e| ShellError::Start(format!("cannot make a folder in {}: {e}", opts.work_root.display())))?;
        let mut nonce = [0u8; 12];
        rand::rng().fill_bytes(&mut nonce);
        let nonce: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
        let user_zdotdir = opts
            .env
            .iter()
            .find(|(k, _)| k == "ZDOTDIR")
            .map(|(_, v)| v.to_string_lossy().into_owned());
        let pair =
            pty::open(SCREEN_ROWS, SCREEN_COLS).map_err(|e| ShellError::Start(format!("cannot open a pty: {e}")))?;
        for (name, text) in rc::startup_files(opts.kind, &nonce, user_zdotdir.as_deref(), &pair.path) {
            std::fs::write(dir.path().join(name), text)
                .map_err(|e| ShellError::Start(format!("cannot write the shell's rc file: {e}")))?;
        }
        let program = opts.program.clone().unwrap_or_else(|| opts.kind.program().into());
        let mut command = tokio::process::Command::new(&program);
        command
            .args(rc::shell_args(opts.kind, dir.path()))
            .env_clear()
            .envs(opts.env.iter().map(|(k, v)| (k, v)));
        command.env("TERM", "xterm-256color").current_dir(&opts.cwd);
        if opts.kind == ShellKind::Zsh {
            command.env("ZDOTDIR", dir.path());
        }
        let mut child = pty::spawn(&mut command, &pair.slave)
            .map_err(|e| ShellError::Start(format!("cannot start {}: {e}", program.display())))?;
        // Only the shell holds the terminal now: reads of the master end with EIO when the session is gone.
        drop(pair.slave);
        let pid = child.id().and_then(|id| i32::try_from(id).ok()).unwrap_or_default();
        let (exit_tx, exit_rx) = oneshot::channel();
        tokio::spawn(async move {
            let status = child.wait().await.ok().and_then(|s| {
                use std::os::unix::process::ExitStatusExt;
                s.code().or_else(|| s.signal().map(|sig| 128 + sig))
            });
            let _ = exit_tx.send(status);
        });
        // SAFETY: the PtyMaster owns its descriptor for as long as the AsyncFd holds it, and `as_raw_fd` always
        // returns that one.
        let master = unsafe { AsyncFd::register(pair.master) }
            .map_err(|e| ShellError::Start(format!("cannot watch the pty: {e}")))?;
        let (life_tx, life) = watch::channel(Life::Alive);
        let (ready_tx, ready_rx) = oneshot::channel();
        let (requests, requests_rx) = mpsc::channel(16);
        let work_dir = dir.path().to_path_buf();
        let actor = actor::Actor::new(actor::Spawned {
            master,
            pid,
            tty: pair.tty,
            dir,
            nonce,
            cwd: opts.cwd.clone(),
            detached_limit: opts.detached_limit,
            life: life_tx,
            exit: exit_rx,
            ready: ready_tx,
        });
        tokio::spawn(actor.serve(requests_rx));
        let shell = Self {
            requests,
            life,
            pid: u32::try_from(pid).unwrap_or_default(),
            work_dir,
        };
        match tokio::time::timeout(opts.ready_timeout, ready_rx).await {
            Ok(Ok(Ok(()))) => Ok(shell),
            Ok(Ok(Err(screen))) => Err(ShellError::NotReady {
                waited: opts.ready_timeout,
                screen,
            }),
            Ok(Err(_)) => Err(ShellError::NotReady {
                waited: opts.ready_timeout,
                screen: String::new(),
            }),
            Err(_) => {
                shell.close().await;
                Err(ShellError::NotReady {
                    waited: opts.ready_timeout,
                    screen: String::new(),
                })
            }
        }
    }
}

/// Removes the `shell-*` folders in `work_root` that an earlier efrd left (one killed before it could close its
/// shells); returns how many went. Call it at start, under the single-instance lock, before any shell of this efrd
/// starts: the earlier efrd's shells ended with it (their pty closed), and nothing else reads their command files.
pub fn remove_leftovers(work_root: &std::path::Path) -> usize {
    let Ok(entries) = std::fs::read_dir(work_root) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("shell-"))
        .filter(|entry| std::fs::remove_dir_all(entry.path()).is_ok())
        .count()
}

/// One conversation's hidden shell: started on first use, and again after the last one exited or was closed.
///
/// A contained call runs as a child of the hidden shell, so whatever the shell itself runs around it (a `DEBUG` trap,
/// `PROMPT_COMMAND`, `precmd`, a function named like a command of the run line) runs outside the sandbox. Only a
/// direct call (full or cautious mode, or an approved exit) can set such state; so an auto contained call never runs
/// in a shell that a direct call has used: [`ShellSlot::shell_for_contained`] starts a new one first, in the old one's
/// working directory. Cautious's read-only contained calls take [`ShellSlot::shell`] as it is: there every direct
/// call was the user's yes (docs/adr/0009-cautious-reads-contained.md).
#[derive(Debug)]
pub struct ShellSlot {
    opts: ShellOptions,
    shell: Option<HiddenShell>,
    /// A direct call ran in the current shell since it started.
    direct_ran: bool,
}

impl ShellSlot {
    /// A slot that starts shells with `opts`; none runs yet.
    pub fn new(opts: ShellOptions) -> Self {
        Self {
            opts,
            shell: None,
            direct_ran: false,
        }
    }

    /// The live shell for a direct call (see [`ShellSlot::shell`]); the shell then counts as used by a direct call.
    ///
    /// Errors: those of [`HiddenShell::start`].
    pub async fn shell_for_direct(&mut self) -> Result<&HiddenShell, ShellError> {
        self.shell().await?;
        self.direct_ran = true;
        self.shell.as_ref().ok_or(ShellError::Gone(Life::Closed))
    }

    /// The live shell for a contained call: a new one when a direct call has used the current shell (see the type's
    /// doc), started in its working directory; its other state (variables, functions, traps) does not carry. A shell
    /// that still runs a command is kept: the call is then refused as busy, as any other call.
    ///
    /// Errors: those of [`HiddenShell::start`].
    pub async fn shell_for_contained(&mut self) -> Result<&HiddenShell, ShellError> {
        if self.direct_ran
            && let Some(old) = self.shell.take()
        {
            match old.status().await {
                Ok(status) if status.busy.is_some() => self.shell = Some(old),
                Ok(status) => {
                    if let Some(cwd) = status.cwd.filter(|cwd| cwd.is_dir()) {
                        self.opts.cwd = cwd;
                    }
                    // SIGKILL: a hangup would run the used shell's EXIT or HUP traps, outside the sandbox.
                    old.kill().await;
                }
                Err(_) => old.kill().await,
            }
        }
        if self.shell.is_none() {
            self.direct_ran = false;
        }
        self.shell().await
    }

    /// The live shell, started now if there is none or the last one is gone. A new shell starts in the options'
    /// `cwd`, like a new terminal.
    ///
    /// Errors: those of [`HiddenShell::start`].
    pub async fn shell(&mut self) -> Result<&HiddenShell, ShellError> {
        if !self.shell.as_ref().is_some_and(HiddenShell::is_alive) {
            self.shell = Some(HiddenShell::start(self.opts.clone()).await?);
            self.direct_ran = false;
        }
        self.shell.as_ref().ok_or(ShellError::Gone(Life::Closed))
    }

    /// The current shell, alive or not, without starting one.
    pub fn current(&self) -> Option<&HiddenShell> {
        self.shell.as_ref()
    }

    /// Forgets the current shell when its pid is `pid` (a background job took it over with its running command):
    /// the next [`ShellSlot::shell`] starts a new one, in `cwd` when that is a folder.
    pub fn hand_over(&mut self, pid: u32, cwd: Option<PathBuf>) {
        if self.shell.as_ref().is_some_and(|s| s.pid() == pid) {
            self.shell = None;
            self.direct_ran = false;
            if let Some(cwd) = cwd.filter(|cwd| cwd.is_dir()) {
                self.opts.cwd = cwd;
            }
        }
    }

    /// Closes the current shell, if any; the next [`ShellSlot::shell`] starts a new one.
    pub async fn close(&mut self) {
        if let Some(shell) = self.shell.take() {
            shell.close().await;
        }
    }
}
