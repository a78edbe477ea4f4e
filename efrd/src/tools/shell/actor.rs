//! The task that owns one hidden shell: its pty, screen, runs, timers and input-wait looks.
//!
//! One tokio task per shell serves the handle's requests and the pty in one loop, so the order of bytes, markers and
//! requests is the order in which things happened, and no lock is shared. The loop never blocks on the shell: the
//! master is non-blocking, the child's exit comes from a waiter task, and writes give up after [`WRITE_TIMEOUT`].
//!
//! Timers, per run: the answer deadline (the run's timeout: answer with what there is, keep running), the detached
//! limit (interrupt, then close after [`LIMIT_GRACE`]) and the resync after an interrupt: when the shell is back at
//! its prompt (it is the foreground group and reads the terminal) but no end marker came (a command had removed the
//! prompt hook), the actor types a line that prints the end marker itself.

use std::io;
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
use super::capture::{Capture, Marker, OscGuard};
use super::handle::{Answer, Busy, EndCause, Life, Request, Run, RunEnd, ShellStatus};
use super::pty::{self, TtyId};
use super::rc;
use super::screen::Screen;
use super::waits::{self, InputWait, Sleep};

/// What a run's output says instead of the path of its run file (a shell's syntax error names the file it sources).
const RUN_FILE_NAME: &str = "command";
/// How long a write to the terminal may wait for room.
const WRITE_TIMEOUT: Duration = Duration::from_secs(2);
/// After an interrupt, how long to wait for the end marker before checking whether the shell sits at its prompt.
const RESYNC_AFTER: Duration = Duration::from_millis(1500);
/// After an interrupt, how often and how long the actor looks for a foreground group that the SIGINT missed: a shell
/// that had forked the command but not yet made it the terminal's foreground group took the SIGINT itself and
/// (waiting for a foreground job) ignored it; a child between fork and exec still had the shell's handler, which
/// only notes the signal. Either way the command then runs as if no one had asked it to stop.
const FOLLOW_EVERY: Duration = Duration::from_millis(20);
const FOLLOW_FOR: Duration = Duration::from_millis(1500);
/// After the detached limit's interrupt, how long the command has to end before the shell is closed.
const LIMIT_GRACE: Duration = Duration::from_secs(5);
/// How long a closing shell has to end after SIGHUP before SIGKILL.
const HANGUP_GRACE: Duration = Duration::from_millis(500);
/// Bytes read from the master per read, and reads per wake-up before the loop looks at its other work.
const READ_CHUNK: usize = 64 * 1024;
const READS_PER_WAKE: usize = 16;
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

/// One look after an interrupt: a foreground group that is not the shell's gets a SIGINT too when it is not the
/// group interrupted last, or when its leader has run another program since (it was between fork and exec).
/// Returns the next look, or `None` once [`FOLLOW_FOR`] is over.
fn follow_interrupt(follow: Follow, now: Instant, master: &PtyMaster, shell: i32) -> Option<Follow> {
    let mut next = Follow {
        next: now + FOLLOW_EVERY,
        ..follow
    };
    if let Ok(state) = pty::tty_state(master)
        && state.foreground != shell
    {
        let program = program_of(state.foreground);
        // A leader that is gone (a pipeline's first program ended) is no exec: its group had the SIGINT.
        let exec = program.is_some() && follow.program.is_some() && program != follow.program;
        if state.foreground != follow.group || exec {
            match signal::killpg(Pid::from_raw(state.foreground), Signal::SIGINT) {
                Ok(()) => (next.group, next.program) = (state.foreground, program),
                Err(error) => tracing::debug!(shell, %error, "hidden shell: the followed interrupt failed"),
            }
        }
    }
    (now < follow.until).then_some(next)
}

/// The name of the program a process runs now (`/proc/<pid>/comm`, at most 16 bytes), to see an exec; `None` when
/// the process is gone.
fn program_of(pid: i32) -> Option<[u8; 16]> {
    let name = std::fs::read(format!("/proc/{pid}/comm")).ok()?;
    let mut program = [0_u8; 16];
    let len = name.len().min(program.len());
    program[..len].copy_from_slice(&name[..len]);
    Some(program)
}

/// An interrupt being followed into the foreground group that comes next ([`FOLLOW_FOR`]).
#[derive(Debug, Clone, Copy)]
struct Follow {
    group: i32,
    /// The program of the group's leader when it was interrupted ([`program_of`]).
    program: Option<[u8; 16]>,
    next: Instant,
    until: Instant,
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

    /// Reads what the master holds, a bounded number of times so the loop's other work is not starved by a
    /// command that prints without pause. `EIO` (no process holds the terminal any more) or end of file closes it.
    fn read_ready(&mut self, mut guard: tokio::io::unix::AsyncFdReadyGuard<'_, PtyMaster>, buf: &mut [u8]) {
        for _ in 0..READS_PER_WAKE {
            match guard.try_io(|fd| nix::unistd::read(fd.get_ref(), buf).map_err(io::Error::from)) {
                Ok(Ok(0) | Err(_)) => {
                    self.master_closed = true;
                    return;
                }
                Ok(Ok(n)) => self.feed(&buf[..n]),
                Err(_would_block) => return,
            }
        }
    }

    /// Feeds pty bytes to the screen and the capture, then acts on the markers they held.
    fn feed(&mut self, bytes: &[u8]) {
        let bytes = self.guard.filter(bytes);
        let mut rest: &[u8] = &bytes;
        while !rest.is_empty() {
            // The capture stops right after a start marker: the screen takes the bytes up to there, then the row
            // under the cursor is cleared, so `prompt` shows what the command printed and not a shell prompt that
            // raced the echo of the typed line.
            let n = self.parser.advance_until_terminated(&mut self.capture, rest);
            self.screen.process(&rest[..n]);
            if std::mem::take(&mut self.capture.paused) {
                self.screen.clear_cursor_row();
            }
            rest = &rest[n..];
        }
        if self.capture.captured_since > 0 {
            self.capture.captured_since = 0;
            if let Some(active) = self.active.as_mut() {
                active.last_output = Instant::now();
            }
        }
        for marker in std::mem::take(&mut self.capture.markers) {
            match marker {
                Marker::Ready => {
                    if self.settings.is_none() {
                        self.settings = nix::sys::termios::tcgetattr(self.master.get_ref())
                            .ok()
                            .map(libc::termios::from);
                    }
                    if let Some(ready) = self.ready.take() {
                        let _ = ready.send(Ok(()));
                    }
                }
                Marker::Start(_) => {
                    let Some(active) = self.active.as_mut() else {
                        continue;
                    };
                    active.started = true;
                    if active.interrupted
                        && let Err(error) = self.send_interrupt()
                    {
                        tracing::debug!(pid = self.pid, %error, "hidden shell: the held interrupt failed");
                    }
                }
                Marker::End(_, status) => self.finish(None, Some(status)),
            }
        }
    }

    /// Reads whatever the master holds now, without waiting.
    fn drain(&mut self, buf: &mut [u8]) {
        while !self.master_closed {
            match nix::unistd::read(self.master.get_ref(), buf) {
                Ok(0) | Err(nix::errno::Errno::EIO) => self.master_closed = true,
                Ok(n) => self.feed(&buf[..n]),
                Err(_) => return,
            }
        }
    }

    /// Ends the active run. `how` overrides what the run's flags say (closed, shell exited).
    fn finish(&mut self, how: Option<EndCause>, exit_code: Option<i32>) {
        let Some(mut active) = self.active.take() else {
            return;
        };
        let output = self
            .capture
            .window
            .snapshot()
            .replaced(&active.file.to_string_lossy(), RUN_FILE_NAME);
        self.capture.finish();
        let _ = std::fs::remove_file(&active.file);
        let alive = how.is_none();
        if alive {
            self.cwd = std::fs::read_link(format!("/proc/{}/cwd", self.pid))
                .ok()
                .or(self.cwd.take());
        }
        let how = how.unwrap_or(if active.limit_close_at.is_some() {
            EndCause::Limit
        } else if active.interrupted {
            EndCause::Stopped
        } else {
            EndCause::Ended
        });
        let end = RunEnd {
            how,
            exit_code,
            output,
            cwd: if alive { self.cwd.clone() } else { None },
        };
        active
            .input
            .send_if_modified(|wait| std::mem::replace(wait, InputWait::NONE) != InputWait::NONE);
        if let Some(answer) = active.answer.take() {
            let _ = answer.send(Answer::Ended(end));
        } else if let Some(ended) = active.end.take() {
            let _ = ended.send(end);
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
            Request::Close { .. } => {}
        }
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
                match guard.try_io(|fd| nix::unistd::write(fd.get_ref(), rest).map_err(io::Error::from)) {
                    Ok(Ok(n)) => rest = &rest[n..],
                    Ok(Err(e)) => return Err(e),
                    Err(_would_block) => {}
                }
            }
            Ok(())
        };
        match tokio::time::timeout(WRITE_TIMEOUT, write).await {
            Ok(result) => result.map_err(io_error),
            Err(_) => Err(io_error(io::Error::new(
                io::ErrorKind::TimedOut,
                "the terminal takes no input",
            ))),
        }
    }

    /// Interrupts the active run as Ctrl+C would. Before its start marker the shell has not read the run's line
    /// yet: a SIGINT then would only drop an empty prompt line and the command would run in full afterwards, so the
    /// interrupt is held and sent when the start marker comes.
    fn interrupt(&mut self) -> Result<(), ShellError> {
        let Some(active) = self.active.as_mut() else {
            return Err(ShellError::NoRun);
        };
        if !active.started {
            active.interrupted = true;
            return Ok(());
        }
        self.send_interrupt()
    }

    /// Sends SIGINT to the terminal's foreground group and starts the resync timer.
    fn send_interrupt(&mut self) -> Result<(), ShellError> {
        let Some(active) = self.active.as_mut() else {
            return Err(ShellError::NoRun);
        };
        let foreground = pty::tty_state(self.master.get_ref())
            .map_err(|source| ShellError::Io {
                context: "read the terminal's foreground group",
                source,
            })?
            .foreground;
        signal::killpg(Pid::from_raw(foreground), Signal::SIGINT).map_err(|e| ShellError::Io {
            context: "send SIGINT",
            source: e.into(),
        })?;
        active.interrupted = true;
        let now = Instant::now();
        active.resync_at = Some(now + RESYNC_AFTER);
        active.follow = Some(Follow {
            group: foreground,
            program: program_of(foreground),
            next: now + FOLLOW_EVERY,
            until: now + FOLLOW_FOR,
        });
        Ok(())
    }

    fn next_timer(&self) -> Option<Instant> {
        let active = self.active.as_ref()?;
        let answer = active.answer.as_ref().map(|_| active.deadline);
        let follow = active.follow.map(|follow| follow.next);
        [answer, active.resync_at, follow, active.limit_at, active.limit_close_at]
            .into_iter()
            .flatten()
            .min()
    }

    /// Acts on the run's timers; returns `true` when the shell was closed and the task must end.
    async fn on_timer(&mut self, buf: &mut [u8]) -> bool {
        // Take in what the shell printed first: the run may have ended just now.
        self.drain(buf);
        let now = Instant::now();
        let Some(active) = self.active.as_mut() else {
            return false;
        };
        if active.answer.is_some() && now >= active.deadline {
            if let Some(answer) = active.answer.take() {
                let output = self
                    .capture
                    .window
                    .snapshot()
                    .replaced(&active.file.to_string_lossy(), RUN_FILE_NAME);
                let _ = answer.send(Answer::LeftRunning(output));
            }
            active.limit_at = self.detached_limit.map(|limit| later(now, limit));
        }
        if active.limit_close_at.is_some_and(|at| now >= at) {
            self.shut(EndCause::Limit, None, Life::Closed).await;
            return true;
        }
        if active.limit_at.is_some_and(|at| now >= at) {
            active.limit_at = None;
            active.limit_close_at = Some(now + LIMIT_GRACE);
            // An interrupt that fails leaves the close above to end it.
            if let Err(error) = self.interrupt() {
                tracing::debug!(pid = self.pid, %error, "hidden shell: the detached limit's interrupt failed");
            }
            return false;
        }
        if let Some(follow) = active.follow.filter(|follow| now >= follow.next) {
            active.follow = follow_interrupt(follow, now, self.master.get_ref(), self.pid);
        }
        let resync = active.resync_at.is_some_and(|at| now >= at);
        if resync {
            active.resync_at = Some(now + RESYNC_AFTER);
            let id = active.id;
            let at_prompt = pty::tty_state(self.master.get_ref()).is_ok_and(|s| {
                s.foreground == self.pid
                    && matches!(
                        waits::foreground_sleep(s.foreground, self.tty, self.pid),
                        Sleep::Reading { .. }
                    )
            });
            if at_prompt {
                tracing::debug!(
                    pid = self.pid,
                    "hidden shell: end marker missing after an interrupt; typing a resync line"
                );
                self.reset_terminal();
                if let Err(error) = self.write(rc::resync_line(&self.nonce, id).as_bytes()).await {
                    tracing::debug!(pid = self.pid, %error, "hidden shell: resync line not written");
                }
            }
        }
        false
    }

    /// One look at the terminal for an input wait (see `waits`).
    fn look(&mut self, buf: &mut [u8]) {
        let Ok(state) = pty::tty_state(self.master.get_ref()) else {
            return;
        };
        let sleep = waits::foreground_sleep(state.foreground, self.tty, self.pid);
        // The flags and the sleep are read at different moments; a program that changes its terminal modes right
        // then (`read -s` turns echo off, then reads) would mix two states. Decide only on a stable look.
        if pty::tty_state(self.master.get_ref()).ok() != Some(state) {
            return;
        }
        // A shell that printed its end marker and went back to read sleeps like a command reading; take in its
        // output before deciding.
        self.drain(buf);
        let prompt = self.screen.prompt();
        let Some(active) = self.active.as_ref() else {
            return;
        };
        let quiet = active.last_output.elapsed() >= waits::QUIET_FOR;
        let wait = waits::classify(state, sleep, quiet, prompt);
        active.input.send_if_modified(|current| {
            if *current == wait {
                return false;
            }
            *current = wait;
            true
        });
    }
}

/// `now + after`, saturating at a year (an `Instant` overflows on `Duration::MAX`).
fn later(now: Instant, after: Duration) -> Instant {
    now + after.min(Duration::from_secs(365 * 24 * 3600))
}

/// Writes `text` to a new file readable by the owner only.
fn write_private(path: &std::path::Path, text: &str) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(text.as_bytes())
}
