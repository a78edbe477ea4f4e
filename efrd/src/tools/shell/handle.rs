//! The caller's side of a hidden shell: [`HiddenShell`], [`Run`], [`Detached`] and what they return.
//!
//! A `HiddenShell` is a cheap, cloneable handle to the task that owns the pty (see `actor`). Each method sends that
//! task one request and waits for its reply, so calls from several tasks are served one at a time, in order.

use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, oneshot, watch};

use super::ShellError;
use super::output::RunOutput;
use super::waits::InputWait;

/// How a run's command ended (spec wire enum `how`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndCause {
    /// The command ended by itself; `exit_code` is its status.
    Ended,
    /// The command ended after [`HiddenShell::interrupt`].
    Stopped,
    /// The command, left running, passed the shell's `detached_limit`: it was interrupted, and the shell closed 5 s
    /// later if it still ran.
    Limit,
    /// [`HiddenShell::close`] closed the shell (or every handle was dropped) while the command ran.
    Closed,
    /// The shell itself ended: `exit`, `exec` of a program that ended, a crash. `exit_code` is the shell's status.
    ShellExited,
    /// [`HiddenShell::release`] moved the command to a background job: it still runs, and [`RunEnd::moved`] says
    /// when it ends.
    Moved,
}

/// Whether the shell process still serves runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Life {
    /// It runs.
    Alive,
    /// The shell process ended with this status (128 + signal for a signal).
    Exited(Option<i32>),
    /// It was closed.
    Closed,
}

impl std::fmt::Display for Life {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Alive => f.write_str("is running"),
            Self::Exited(Some(code)) => write!(f, "exited with status {code}"),
            Self::Exited(None) => f.write_str("exited"),
            Self::Closed => f.write_str("been closed"),
        }
    }
}

/// The end of a run.
#[derive(Debug, Clone)]
pub struct RunEnd {
    /// How it ended.
    pub how: EndCause,
    /// The command's status (`$?`; 130 after SIGINT), or the shell's for [`EndCause::ShellExited`]; `None` when not known
    /// (closed).
    pub exit_code: Option<i32>,
    /// Everything the run printed, ANSI removed, bounded as [`RunOutput`] says.
    pub output: RunOutput,
    /// The shell's working directory after the run (`None` when the shell is gone).
    pub cwd: Option<PathBuf>,
    /// For [`EndCause::Moved`]: the command's real end, which comes later.
    pub moved: Option<MovedEnd>,
}

/// The end of a command that [`HiddenShell::release`] moved to a background job.
#[derive(Debug, Clone)]
pub struct MovedEnd(pub(crate) watch::Receiver<bool>);

impl MovedEnd {
    /// Waits until the moved command ended (or its shell was closed).
    pub async fn ended(mut self) {
        let _ = self.0.wait_for(|ended| *ended).await;
    }
}

/// A running command handed over by [`HiddenShell::release`]: what it prints from now on, its input waits and its
/// end. The shell takes no other run until the command ends; its owner closes it then.
#[derive(Debug)]
pub struct Released {
    /// The command's text from the move on (ANSI removed, `\r` dropped), in the order it came; closed at its end.
    pub text: mpsc::UnboundedReceiver<String>,
    /// Its input waits, as [`Run::input`].
    pub input: watch::Receiver<InputWait>,
    /// Its status when it ends (`None` when not known: the shell was closed).
    pub end: oneshot::Receiver<Option<i32>>,
    /// When the run started.
    pub since: DateTime<Utc>,
    /// The shell's working directory at the last run's end (or at its start).
    pub cwd: Option<PathBuf>,
}

/// What a run answers when it ends or when its timeout passes, whichever comes first.
#[derive(Debug)]
pub struct RunAnswer {
    /// The output so far (all of it when the run ended).
    pub output: RunOutput,
    /// The status, when the run ended.
    pub exit_code: Option<i32>,
    /// How it ended; `None` when it is still running (`left_running`).
    pub how: Option<EndCause>,
    /// The shell's working directory after the run; `None` while it runs or when the shell is gone.
    pub cwd: Option<PathBuf>,
    /// Set when the command still runs: await its end here. The shell takes no other run until then.
    pub detached: Option<Detached>,
    /// The command was moved to a background job before its timeout ([`HiddenShell::release`]).
    pub moved: bool,
}

impl RunAnswer {
    /// Whether the answer came at the timeout with the command still running (`tool_call_completed.left_running`).
    pub fn left_running(&self) -> bool {
        self.detached.is_some()
    }
}

/// The internal reply on a run's answer channel.
#[derive(Debug)]
pub(crate) enum Answer {
    Ended(RunEnd),
    LeftRunning(RunOutput),
    /// Left running because it was moved to a background job.
    Moved(RunOutput),
}

/// A run in progress, from [`HiddenShell::run`].
#[derive(Debug)]
pub struct Run {
    pub(crate) command: String,
    pub(crate) input: watch::Receiver<InputWait>,
    pub(crate) answer: oneshot::Receiver<Answer>,
    pub(crate) end: oneshot::Receiver<RunEnd>,
}

impl Run {
    /// The command line as given.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// The run's input waits: the value changes (kind, `looks_secret` or prompt) each time the shell sees a change;
    /// it is [`InputWait::NONE`] at the start and again at the end. Intermediate values may be skipped when the
    /// receiver is slow; the current value is always the latest look.
    pub fn input(&self) -> watch::Receiver<InputWait> {
        self.input.clone()
    }

    /// Waits for the run to end or for its timeout, whichever comes first. With the command still running, the
    /// answer has `detached` set and the output printed so far. If the shell's task is gone, the answer says
    /// [`EndCause::Closed`].
    pub async fn answer(self) -> RunAnswer {
        match self.answer.await {
            Ok(Answer::Ended(end)) => RunAnswer {
                output: end.output,
                exit_code: end.exit_code,
                how: Some(end.how),
                cwd: end.cwd,
                detached: None,
                moved: false,
            },
            Ok(Answer::LeftRunning(output)) => RunAnswer {
                output,
                exit_code: None,
                how: None,
                cwd: None,
                detached: Some(Detached {
                    command: self.command,
                    input: self.input,
                    end: self.end,
                }),
                moved: false,
            },
            Ok(Answer::Moved(output)) => RunAnswer {
                output,
                exit_code: None,
                how: None,
                cwd: None,
                detached: Some(Detached {
                    command: self.command,
                    input: self.input,
                    end: self.end,
                }),
                moved: true,
            },
            Err(_) => RunAnswer {
                output: RunOutput::default(),
                exit_code: None,
                how: Some(EndCause::Closed),
                cwd: None,
                detached: None,
                moved: false,
            },
        }
    }
}

/// A command that outlived its run's timeout and still holds the shell.
#[derive(Debug)]
pub struct Detached {
    command: String,
    input: watch::Receiver<InputWait>,
    end: oneshot::Receiver<RunEnd>,
}

impl Detached {
    /// The command line as given.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// Its input waits (`shell_command_input_changed`), as [`Run::input`].
    pub fn input(&self) -> watch::Receiver<InputWait> {
        self.input.clone()
    }

    /// Waits for the command to end (`shell_command_ended`). The output is the whole run's, also what came before
    /// the timeout.
    pub async fn ended(self) -> RunEnd {
        self.end.await.unwrap_or(RunEnd {
            how: EndCause::Closed,
            exit_code: None,
            output: RunOutput::default(),
            cwd: None,
            moved: None,
        })
    }
}

/// The command that holds the shell (`shell.status` `busy`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Busy {
    /// The first 200 characters of the command line.
    pub command: String,
    /// When the run started.
    pub since: DateTime<Utc>,
    /// True once its run answered at the timeout (`shell_command_detached` was due).
    pub left_running: bool,
    /// Its input wait at the last look.
    pub input: InputWait,
    /// The row of the screen that holds the cursor now, at most 200 characters; `None` when blank
    /// (`shell_command_detached.prompt`).
    pub prompt: Option<String>,
}

/// What [`HiddenShell::status`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellStatus {
    /// The shell's process id.
    pub pid: u32,
    /// Its working directory after the last run (or at start).
    pub cwd: Option<PathBuf>,
    /// The run that holds it, if any.
    pub busy: Option<Busy>,
}

/// A request to the shell's task.
#[derive(Debug)]
pub(crate) enum Request {
    Run {
        command: String,
        shown: String,
        timeout: Duration,
        reply: oneshot::Sender<Result<Run, ShellError>>,
    },
    Input {
        bytes: Vec<u8>,
        reply: oneshot::Sender<Result<(), ShellError>>,
    },
    Interrupt {
        reply: oneshot::Sender<Result<(), ShellError>>,
    },
    Status {
        reply: oneshot::Sender<ShellStatus>,
    },
    Release {
        reply: oneshot::Sender<Result<Released, ShellError>>,
    },
    Close {
        /// SIGKILL at once instead of SIGHUP first.
        kill: bool,
        reply: oneshot::Sender<()>,
    },
}

/// One hidden shell: a bash or zsh in a pty that efrd owns (docs/architecture.md, "Tools"). Start it with
/// [`HiddenShell::start`](super::HiddenShell::start); clone the handle freely. When the last handle is dropped the
/// shell is closed.
#[derive(Debug, Clone)]
pub struct HiddenShell {
    pub(crate) requests: mpsc::Sender<Request>,
    pub(crate) life: watch::Receiver<Life>,
    pub(crate) pid: u32,
    pub(crate) work_dir: PathBuf,
}

impl HiddenShell {
    /// The shell's process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The shell's private folder (mode 0700, in the options' `work_root`): where a caller keeps the one-time files
    /// of a run, such as a contained call's launch plan and report. Removed with everything in it when the shell
    /// ends.
    pub fn work_dir(&self) -> &std::path::Path {
        &self.work_dir
    }

    /// Whether the shell still runs; see [`Life`].
    pub fn life(&self) -> Life {
        *self.life.borrow()
    }

    /// Whether the shell still takes runs.
    pub fn is_alive(&self) -> bool {
        self.life() == Life::Alive
    }

    async fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Request) -> Result<T, ShellError> {
        let (reply, answer) = oneshot::channel();
        let gone = || {
            ShellError::Gone(match self.life() {
                Life::Alive => Life::Closed,
                life => life,
            })
        };
        self.requests.send(make(reply)).await.map_err(|_| gone())?;
        answer.await.map_err(|_| gone())
    }

    /// Types `command_line` into the shell and starts a run that answers at its end or after `timeout`
    /// ([`Run::answer`]).
    ///
    /// Errors: [`ShellError::InvalidCommand`] for an empty line or one with a NUL byte; [`ShellError::Busy`] while
    /// another run's command (also one left running) holds the shell, naming it; [`ShellError::Gone`] when the
    /// shell has exited or was closed (start a new one); [`ShellError::Io`] when the command file or the terminal
    /// cannot be written.
    pub async fn run(&self, command_line: &str, timeout: Duration) -> Result<Run, ShellError> {
        self.run_as(command_line, command_line, timeout).await
    }

    /// As [`HiddenShell::run`], but the run is named `shown` wherever it shows (a busy error, [`Busy::command`],
    /// [`Run::command`]) while `command_line` is what the shell runs: a contained call types the launcher's line and
    /// shows the model's.
    ///
    /// Errors: those of [`HiddenShell::run`].
    pub async fn run_as(&self, command_line: &str, shown: &str, timeout: Duration) -> Result<Run, ShellError> {
        if command_line.trim().is_empty() {
            return Err(ShellError::InvalidCommand("the command line is empty"));
        }
        if command_line.contains('\0') {
            return Err(ShellError::InvalidCommand("the command line holds a NUL byte"));
        }
        let command = command_line.to_owned();
        let shown = shown.to_owned();
        self.ask(|reply| Request::Run {
            command,
            shown,
            timeout,
            reply,
        })
        .await?
    }

    /// Writes `text` to the terminal of the running command, then Enter (`\r`) when `newline` is set. The text is
    /// never logged.
    ///
    /// Errors: [`ShellError::NoRun`] when no command runs, [`ShellError::Gone`], [`ShellError::Io`].
    pub async fn write_input(&self, text: &str, newline: bool) -> Result<(), ShellError> {
        let mut bytes = text.as_bytes().to_vec();
        if newline {
            bytes.push(b'\r');
        }
        self.ask(|reply| Request::Input { bytes, reply }).await?
    }

    /// Sends SIGINT to the terminal's foreground process group (the running command's); its run then ends with
    /// [`EndCause::Stopped`].
    ///
    /// Errors: [`ShellError::NoRun`] when no command runs, [`ShellError::Gone`], [`ShellError::Io`] when the signal
    /// cannot be sent.
    pub async fn interrupt(&self) -> Result<(), ShellError> {
        self.ask(|reply| Request::Interrupt { reply }).await?
    }

    /// The shell's state: pid, working directory and the run that holds it.
    ///
    /// Errors: [`ShellError::Gone`].
    pub async fn status(&self) -> Result<ShellStatus, ShellError> {
        self.ask(|reply| Request::Status { reply }).await
    }

    /// Moves the running command out of its run (a background job takes it): a run that has not answered answers
    /// now as left running, the run's end comes at once as [`EndCause::Moved`], no timeout or detached limit
    /// applies to it any more, and what it prints from now on goes to [`Released::text`].
    ///
    /// Errors: [`ShellError::NoRun`] when no command runs (or it was moved already), [`ShellError::Gone`].
    pub async fn release(&self) -> Result<Released, ShellError> {
        self.ask(|reply| Request::Release { reply }).await?
    }

    /// Closes the shell: a running command's run ends with [`EndCause::Closed`], and every process of the shell's
    /// session gets SIGHUP, then SIGKILL. Closing a shell that is gone does nothing.
    pub async fn close(&self) {
        // A shell that is gone is closed already.
        let _ = self.ask(|reply| Request::Close { reply, kill: false }).await;
    }

    /// Ends the shell with SIGKILL at once, so that nothing of it runs on its way out (no `EXIT` or `HUP` trap,
    /// no `zshexit`): for a shell a direct call used, closed before a contained call (`ShellSlot`).
    pub async fn kill(&self) {
        let _ = self.ask(|reply| Request::Close { reply, kill: true }).await;
    }
}
