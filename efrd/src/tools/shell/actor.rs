//! The task that owns one hidden shell: its pty, screen, runs, timers and input-wait looks.
//!
//! One tokio task per shell serves the handle's requests and the pty in one loop, so the order of bytes, markers and
//! requests is the order in which things happened, and no lock is shared. The loop never blocks on the shell: the
//! master is non-blocking, the child's exit comes from a waiter task, and writes give up after [`WRITE_TIMEOUT`].
//!
//! Timers, per run: the answer deadline (the run's timeout: answer with what there is, keep running), the detached
//! limit (interrupt, then close after a grace) and the resync after an interrupt: when the shell is back at
//! its prompt (it is the foreground group and reads the terminal) but no end marker came (a command had removed the
//! prompt hook), the actor types a line that prints the end marker itself.
//!
//! Parts: `io` (the pty's bytes to the screen and the capture, a run's end), `timers` (the timers, the interrupt and
//! the looks for an input wait).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use nix::pty::PtyMaster;
use nix::sys::signal::{self, Signal};
use nix::unistd::Pid;
use tokio::io::unix::AsyncFd;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use super::ShellError;
use super::capture::{Capture, OscGuard};
use super::handle::{Answer, Busy, EndCause, Life, MovedEnd, Released, Request, Run, RunEnd, ShellStatus};
use super::pty::TtyId;
use super::rc;
use super::screen::Screen;
use super::waits::{self, InputWait};

mod io;
mod timers;
use timers::{Follow, later};

/// What a run's output says instead of the path of its run file (a shell's syntax error names the file it sources).
const RUN_FILE_NAME: &str = "command";
/// How long a write to the terminal may wait for room.
const WRITE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a closing shell has to end after SIGHUP before SIGKILL.
const HANGUP_GRACE: Duration = Duration::from_millis(500);
/// Bytes read from the master per read.
const READ_CHUNK: usize = 64 * 1024;
/// The most characters of `Busy::command` (spec: "the first 200 characters of the line").
const COMMAND_MAX_CHARS: usize = 200;

/// The run that holds the shell.
#[derive(Debug)]
struct Active {
    id: u64,
    command: String,
    since: SystemTime,
    file: PathBuf,
    deadline: Instant,
    answer: Option<oneshot::Sender<Answer>>,
    end: Option<oneshot::Sender<RunEnd>>,
    input: watch::Sender<InputWait>,
    started: bool,
    interrupted: bool,
    resync_at: Option<Instant>,
    /// The group the last SIGINT went to, the next look for a new foreground group, and the end of those looks.
    follow: Option<Follow>,
    limit_at: Option<Instant>,
    limit_close_at: Option<Instant>,
    last_output: Instant,
}

/// Everything the shell's task owns.
pub(crate) struct Actor {
    master: Arc<AsyncFd<PtyMaster>>,
    master_closed: bool,
    pid: i32,
    tty: TtyId,
    dir: tempfile::TempDir,
    nonce: String,
    screen: Screen,
    parser: vte::Parser,
    capture: Capture,
    guard: OscGuard,
    next_id: u64,
    active: Option<Active>,
    cwd: Option<PathBuf>,
    detached_limit: Option<Duration>,
    life: watch::Sender<Life>,
    exit: oneshot::Receiver<Option<i32>>,
    ready: Option<oneshot::Sender<Result<(), String>>>,
    /// The terminal's settings when the shell was first ready: put back before each line efrd types, since a
    /// command (a contained one too: it shares the terminal) can change them, and a changed `kill` or `eof`
    /// character would make the shell read another line than the one typed.
    /// (Kept as the plain C struct: nix's `Termios` is not `Sync`, and the actor's future must be `Send`.)
    settings: Option<libc::termios>,
    /// The active run's command, moved to a background job ([`super::HiddenShell::release`]).
    moved: Option<Moving>,
}

/// Where the text and the end of a moved command go.
#[derive(Debug)]
struct Moving {
    text: mpsc::UnboundedSender<String>,
    end: oneshot::Sender<Option<i32>>,
    done: watch::Sender<bool>,
}

/// What `HiddenShell::start` hands to the actor of a shell it just spawned.
pub(crate) struct Spawned {
    pub(crate) master: AsyncFd<PtyMaster>,
    pub(crate) pid: i32,
    pub(crate) tty: TtyId,
    /// The shell's private folder (rc files, command files); removed when the actor ends.
    pub(crate) dir: tempfile::TempDir,
    pub(crate) nonce: String,
    pub(crate) cwd: PathBuf,
    pub(crate) detached_limit: Option<Duration>,
    pub(crate) life: watch::Sender<Life>,
    /// The shell's exit status, from the task that waits for it.
    pub(crate) exit: oneshot::Receiver<Option<i32>>,
    /// `Ok` at the ready marker; `Err` with the screen when the shell ends first.
    pub(crate) ready: oneshot::Sender<Result<(), String>>,
}

impl Actor {
    /// Builds the actor for a shell that was just spawned.
    pub(crate) fn new(spawned: Spawned) -> Self {
        Self {
            master: Arc::new(spawned.master),
            master_closed: false,
            pid: spawned.pid,
            tty: spawned.tty,
            dir: spawned.dir,
            capture: Capture::new(spawned.nonce.clone()),
            nonce: spawned.nonce,
            screen: Screen::new(),
            parser: vte::Parser::new(),
            guard: OscGuard::default(),
            next_id: 1,
            active: None,
            cwd: Some(spawned.cwd),
            detached_limit: spawned.detached_limit,
            life: spawned.life,
            exit: spawned.exit,
            ready: Some(spawned.ready),
            settings: None,
            moved: None,
        }
    }

    /// Puts the terminal's settings back as they were when the shell was ready (see the field), before a line is
    /// typed. A failure is ignored: the line is typed either way, as before this guard.
    fn reset_terminal(&self) {
        if let Some(settings) = self.settings {
            let _ = nix::sys::termios::tcsetattr(
                self.master.get_ref(),
                nix::sys::termios::SetArg::TCSANOW,
                &nix::sys::termios::Termios::from(settings),
            );
        }
    }

    /// Serves requests and the pty until the shell ends or is closed.
    pub(crate) async fn serve(mut self, mut requests: mpsc::Receiver<Request>) {
        let mut buf = vec![0u8; READ_CHUNK];
        let mut tick = tokio::time::interval(waits::POLL_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            let master = Arc::clone(&self.master);
            let timer = self.next_timer();
            let looking = self.active.as_ref().is_some_and(|a| a.started);
            tokio::select! {
                request = requests.recv() => match request {
                    Some(Request::Close { reply, kill }) => {
                        if kill {
                            // Before anything else: the shell gets no chance to run a trap.
                            let _ = signal::kill(Pid::from_raw(self.pid), Signal::SIGKILL);
                        }
                        self.shut(EndCause::Closed, None, Life::Closed).await;
                        let _ = reply.send(());
                        return;
                    }
                    Some(request) => self.handle(request).await,
                    None => {
                        self.shut(EndCause::Closed, None, Life::Closed).await;
                        return;
                    }
                },
                ready = master.readable(), if !self.master_closed => match ready {
                    Ok(guard) => self.read_ready(guard, &mut buf),
                    Err(_) => self.master_closed = true,
                },
                status = &mut self.exit => {
                    let code = status.ok().flatten();
                    self.drain(&mut buf);
                    self.shut(EndCause::ShellExited, code, Life::Exited(code)).await;
                    return;
                }
                () = tokio::time::sleep_until(timer.unwrap_or_else(Instant::now)), if timer.is_some() => {
                    if self.on_timer(&mut buf).await {
                        return;
                    }
                }
                _ = tick.tick(), if looking => self.look(&mut buf),
            }
        }
    }

    /// Ends the shell: the active run with `how`, the session's processes, the life state.
    async fn shut(&mut self, how: EndCause, exit_code: Option<i32>, life: Life) {
        // The life first: a caller that gets the run's end must see the shell gone.
        self.life.send_replace(life);
        self.finish(Some(how), exit_code);
        if let Some(ready) = self.ready.take() {
            let _ = ready.send(Err(self.screen_text()));
        }
        let pid = Pid::from_raw(self.pid);
        if life == Life::Closed {
            let _ = signal::kill(pid, Signal::SIGHUP);
            let _ = signal::kill(pid, Signal::SIGCONT);
            if tokio::time::timeout(HANGUP_GRACE, &mut self.exit).await.is_err() {
                let _ = signal::kill(pid, Signal::SIGKILL);
            }
        }
        // Whatever the shell left in its session (background jobs, a command left running) ends with it.
        for member in waits::session_members(self.pid) {
            let _ = signal::kill(Pid::from_raw(member), Signal::SIGKILL);
        }
    }

    fn screen_text(&self) -> String {
        self.screen.text()
    }

    async fn handle(&mut self, request: Request) {
        match request {
            Request::Run {
                command,
                shown,
                timeout,
                reply,
            } => {
                let result = self.start_run(command, shown, timeout).await;
                let _ = reply.send(result);
            }
            Request::Input { bytes, reply } => {
                let result = match self.active {
                    None => Err(ShellError::NoRun),
                    Some(_) => self.write(&bytes).await,
                };
                let _ = reply.send(result);
            }
            Request::Interrupt { reply } => {
                let _ = reply.send(self.interrupt());
            }
            Request::Status { reply } => {
                let busy = self.active.as_ref().map(|active| Busy {
                    command: active.command.chars().take(COMMAND_MAX_CHARS).collect(),
                    since: active.since.into(),
                    left_running: active.answer.is_none(),
                    input: active.input.borrow().clone(),
                    prompt: self.screen.prompt(),
                });
                let pid = u32::try_from(self.pid).unwrap_or_default();
                let _ = reply.send(ShellStatus {
                    pid,
                    cwd: self.cwd.clone(),
                    busy,
                });
            }
            Request::Release { reply } => {
                let _ = reply.send(self.release());
            }
            Request::Close { .. } => {}
        }
    }

    /// Moves the active run's command to a background job (see [`super::HiddenShell::release`]).
    fn release(&mut self) -> Result<Released, ShellError> {
        // A run whose start marker has not come yet is released too: its line is typed, and its text is captured
        // (and tapped) from the start marker on.
        let Some(active) = self.active.as_mut().filter(|_| self.moved.is_none()) else {
            return Err(ShellError::NoRun);
        };
        let output = self
            .capture
            .window
            .snapshot()
            .replaced(&active.file.to_string_lossy(), RUN_FILE_NAME);
        if let Some(answer) = active.answer.take() {
            let _ = answer.send(Answer::Moved(output.clone()));
        }
        // The job has its own limit: the run's timers end here.
        active.limit_at = None;
        active.limit_close_at = None;
        self.detached_limit = None;
        let (done, done_rx) = watch::channel(false);
        if let Some(end) = active.end.take() {
            let _ = end.send(RunEnd {
                how: EndCause::Moved,
                exit_code: None,
                output,
                cwd: None,
                moved: Some(MovedEnd(done_rx)),
            });
        }
        let (text, text_rx) = mpsc::unbounded_channel();
        let (end, end_rx) = oneshot::channel();
        self.capture.tap = true;
        self.moved = Some(Moving { text, end, done });
        Ok(Released {
            text: text_rx,
            input: active.input.subscribe(),
            end: end_rx,
            since: active.since.into(),
            cwd: self.cwd.clone(),
        })
    }

    /// Starts a run of `command`; `shown` is what [`Busy`], a busy error and the [`Run`] name as its command.
    async fn start_run(&mut self, command: String, shown: String, timeout: Duration) -> Result<Run, ShellError> {
        if let Some(active) = &self.active {
            return Err(ShellError::Busy {
                command: active.command.chars().take(COMMAND_MAX_CHARS).collect(),
                since: active.since.into(),
            });
        }
        let id = self.next_id;
        self.next_id += 1;
        let file = self.dir.path().join(format!("run-{id}"));
        write_private(&file, &format!("{command}\n")).map_err(|source| ShellError::Io {
            context: "write the command file",
            source,
        })?;
        let (input, input_rx) = watch::channel(InputWait::NONE);
        let (answer, answer_rx) = oneshot::channel();
        let (end, end_rx) = oneshot::channel();
        let now = Instant::now();
        self.capture.begin(id);
        self.active = Some(Active {
            id,
            command: shown.clone(),
            since: SystemTime::now(),
            file: file.clone(),
            deadline: later(now, timeout),
            answer: Some(answer),
            end: Some(end),
            input,
            started: false,
            interrupted: false,
            resync_at: None,
            follow: None,
            limit_at: None,
            limit_close_at: None,
            last_output: now,
        });
        self.reset_terminal();
        if let Err(error) = self.write(rc::run_line(&self.nonce, id, &file).as_bytes()).await {
            self.active = None;
            self.capture.finish();
            let _ = std::fs::remove_file(&file);
            return Err(error);
        }
        Ok(Run {
            command: shown,
            input: input_rx,
            answer: answer_rx,
            end: end_rx,
        })
    }

    /// Writes all of `bytes` to the terminal, waiting at most [`WRITE_TIMEOUT`] for room.
    async fn write(&self, bytes: &[u8]) -> Result<(), ShellError> {
        let io_error = |source| ShellError::Io {
            context: "write to the terminal",
            source,
        };
        let write = async {
            let mut rest = bytes;
            while !rest.is_empty() {
                let mut guard = self.master.writable().await?;
                match guard.try_io(|fd| nix::unistd::write(fd.get_ref(), rest).map_err(std::io::Error::from)) {
                    Ok(Ok(n)) => rest = &rest[n..],
                    Ok(Err(e)) => return Err(e),
                    Err(_would_block) => {}
                }
            }
            Ok(())
        };
        match tokio::time::timeout(WRITE_TIMEOUT, write).await {
            Ok(result) => result.map_err(io_error),
            Err(_) => Err(io_error(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the terminal takes no input",
            ))),
        }
    }
}

/// Writes `text` to a new file readable by the owner only.
fn write_private(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(text.as_bytes())
}
