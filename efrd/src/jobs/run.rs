//! A job's process and the task that follows it: the gate, the cgroup, job_started; then its output, its watch,
//! its limit and the stops asked for, to job_ended and its notice.
//!
//! The first process is `/bin/sh -c 'read -r _ || exit 125; exec "$@" </dev/null'` with the job's program as its
//! arguments: it waits at that `read` (its standard input is a pipe of efrd's) until efrd has put it into its
//! cgroup, so that nothing the job forks starts outside it; then it becomes the program. No `fork` runs code in
//! efrd's threaded process (std spawns with `posix_spawn`).

use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use efr_protocol::events::{EventBody, JobEnded, JobNoticeHeld, JobStarted, JobWatchMatched};
use efr_protocol::ids::{ConversationId, Timestamp};
use efr_protocol::wire::{JobCgroup, JobId, JobInfo, JobState, JobStopBy, NoticeKind};
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot};

use super::cgroup::{Placement, start_ticks};
use super::forward::{ForwardJob, Forwarder};
use super::output::{self, Matched, OutputBound, OutputEnd};
use super::{JobHead, JobSink, JobSpec, Notice, StartError, held_reason};

/// The gate: waits for efrd's line on standard input, then becomes the job's program.
const GATE: &str = "read -r _ || exit 125; exec \"$@\" </dev/null";
/// How long the processes of a stopped job may take to go.
const END_WAIT: Duration = Duration::from_secs(2);

/// A started job: its info (kept up to date by its task), where its processes are, and its stop requests.
pub(super) struct Started {
    pub(super) info: Arc<Mutex<JobInfo>>,
    pub(super) placement: Arc<Placement>,
    pub(super) stop: StopTx,
}

/// The stop requests of a job: who stops it, and who waits for job_ended.
pub(super) type StopTx = mpsc::UnboundedSender<(JobStopBy, oneshot::Sender<()>)>;

/// What [`start`] needs beside the spec.
pub(super) struct Start {
    pub(super) spec: JobSpec,
    pub(super) job_id: JobId,
    pub(super) output: std::path::PathBuf,
    pub(super) placement: Placement,
    pub(super) watch: Option<regex::Regex>,
    pub(super) forwarded: super::forward::Held,
    pub(super) wakes: super::Wakes,
}

/// Starts the process, places it, records job_started and spawns the task that follows it.
pub(super) async fn start(start: Start, sink: Arc<dyn JobSink>) -> Result<Started, StartError> {
    let Start {
        mut spec,
        job_id,
        output,
        mut placement,
        watch,
        forwarded,
        wakes,
    } = start;
    let (mut child, pipe_rx) = spawn(&spec)?;
    let pid = child
        .id()
        .ok_or_else(|| StartError::Spawn("the job ended at once".to_owned()))?;
    if let Err(reason) = placement.place(pid).await {
        placement = Placement::Off { reason };
    }
    let launcher_start = start_ticks(pid).unwrap_or(0);
    let mut info = running_info(job_id, &spec.head, output.clone(), &placement);
    info.watch = spec.watch.clone();
    let started = EventBody::JobStarted(JobStarted {
        call_id: spec.head.call_id.clone(),
        job: info.clone(),
        launcher_pid: pid,
        launcher_start,
    });
    if let Err(error) = sink.record_as(Some(spec.head.turn_id), vec![started]).await {
        let _ = kill(&placement, pid).await;
        let _ = child.wait().await;
        placement.remove();
        return Err(StartError::Record(error.message));
    }
    // The gate opens only now: the job's first line cannot come before job_started.
    if let Some(mut gate) = child.stdin.take() {
        let _ = gate.write_all(b"\n").await;
    }
    let info = Arc::new(Mutex::new(info));
    let (stop_tx, stop_rx) = mpsc::unbounded_channel();
    let shared = Arc::new(placement);
    let follow = Follow {
        info: Arc::clone(&info),
        sink,
        placement: Arc::clone(&shared),
        pid,
        on_end: Mutex::new(spec.on_end.take()),
        forwarded,
        spec: Follows::of(spec.head, spec.wake_turn, spec.in_woken_turn),
        wakes,
    };
    tokio::spawn(follow.run(Process::Child(child), pipe_rx, output, watch, stop_rx));
    Ok(Started {
        info,
        placement: shared,
        stop: stop_tx,
    })
}

/// Spawns the job's first process at its gate, its standard output and error into one pipe.
fn spawn(spec: &JobSpec) -> Result<(tokio::process::Child, tokio::net::unix::pipe::Receiver), StartError> {
    let (pipe_tx, pipe_rx) = tokio::net::unix::pipe::pipe().map_err(|e| StartError::Spawn(e.to_string()))?;
    let write_end: OwnedFd = pipe_tx
        .into_blocking_fd()
        .map_err(|e| StartError::Spawn(e.to_string()))?;
    let second = write_end.try_clone().map_err(|e| StartError::Spawn(e.to_string()))?;
    let mut argv: Vec<std::ffi::OsString> = ["/bin/sh", "-c", GATE, "efr-job"]
        .map(std::ffi::OsString::from)
        .to_vec();
    argv.extend(spec.argv.iter().cloned());
    let mut command = tokio::process::Command::new(&argv[0]);
    command
        .args(&argv[1..])
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::from(write_end))
        .stderr(std::process::Stdio::from(second))
        .process_group(0);
    let child = command
        .spawn()
        .map_err(|e| StartError::Spawn(format!("{}: {e}", argv[0].to_string_lossy())))?;
    Ok((child, pipe_rx))
}

/// The cgroup member of a job's info now.
pub(super) fn cgroup_info(placement: &Placement, peak: Option<u64>) -> JobCgroup {
    JobCgroup {
        off: placement.off_reason().map(str::to_owned),
        memory_bytes: placement.memory_bytes().map(|now| now.max(peak.unwrap_or(0))),
        cpu_usec: placement.cpu_usec(),
    }
}

/// Ends every process of a job: its cgroup, or its process group when it has none.
async fn kill(placement: &Placement, pid: u32) -> Result<(), String> {
    if let Err(why) = placement.kill().await {
        let group = nix::unistd::Pid::from_raw(i32::try_from(pid).map_err(|e| e.to_string())?);
        nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL).map_err(|e| format!("{why}; {e}"))?;
    }
    Ok(())
}

/// How the job's first process ended (its status, when known), or who stopped it.
enum Ending {
    Exited(Option<i32>),
    Stopped(JobStopBy),
}

/// What runs a job: the process efrd started, or a command moved from the hidden shell ([`super::moved`]).
pub(super) enum Process {
    /// efrd's child, at the job's gate.
    Child(tokio::process::Child),
    /// A moved command: its shell (closed when the job ends), its end and its input waits.
    Moved {
        shell: crate::tools::shell::HiddenShell,
        end: oneshot::Receiver<Option<i32>>,
        input: tokio::sync::watch::Receiver<crate::tools::shell::InputWait>,
    },
}

impl Process {
    /// Waits for the command's end; `Err` when it cannot be waited for.
    async fn wait(&mut self) -> Result<Option<i32>, ()> {
        match self {
            Self::Child(child) => child.wait().await.map(|s| s.code()).map_err(|_| ()),
            Self::Moved { end, .. } => Ok((&mut *end).await.unwrap_or(None)),
        }
    }

    /// Ends every process of the job: its cgroup (or process group), or the moved command's whole shell session.
    async fn kill(&self, placement: &Placement, pid: u32) -> Result<(), String> {
        match self {
            Self::Child(_) => kill(placement, pid).await,
            Self::Moved { shell, .. } => {
                let _ = placement.kill().await;
                shell.kill().await;
                Ok(())
            }
        }
    }

    /// A moved command's input waits (a child's standard input is closed: it has none).
    fn input(&self) -> Option<tokio::sync::watch::Receiver<crate::tools::shell::InputWait>> {
        match self {
            Self::Child(_) => None,
            Self::Moved { input, .. } => Some(input.clone()),
        }
    }
}

/// The next change of a moved command's wait for input: whether it waits for input that is not a secret
/// (`waits_input`). Never without waits.
async fn waits_input(input: &mut Option<tokio::sync::watch::Receiver<crate::tools::shell::InputWait>>) -> bool {
    let Some(waits) = input else {
        return std::future::pending().await;
    };
    if waits.changed().await.is_err() {
        *input = None;
        return std::future::pending().await;
    }
    let wait = waits.borrow_and_update();
    wait.kind != crate::tools::shell::InputKind::None && !wait.looks_secret
}

/// The info of a job that starts now, in `placement`, writing `output`: running, no watch, nothing moved, no wake
/// and no forward yet (the caller sets what its kind of start knows beside).
pub(super) fn running_info(id: JobId, of: &JobHead, output: PathBuf, placement: &Placement) -> JobInfo {
    let now = Timestamp::now();
    let ends_by = Timestamp::from_millis(now.0.timestamp_millis() + i64::from(of.max_minutes) * 60_000).unwrap_or(now);
    JobInfo {
        id,
        conversation_id: of.conversation_id,
        turn_id: of.turn_id,
        call_id: of.call_id.clone(),
        command: of.command.clone(),
        launch: of.launch.clone(),
        state: JobState::Running,
        started_at: now,
        ends_by,
        ended_at: None,
        exit_code: None,
        stopped_by: None,
        watch: None,
        output,
        output_bytes: 0,
        wakes: 0,
        cgroup: Some(cgroup_info(placement, None)),
        moved_from: None,
        waits_input: false,
        forwards: Vec::new(),
    }
}

/// What a running job's task reads of the job's start.
pub(super) struct Follows {
    /// The conversation.
    pub(super) conversation_id: ConversationId,
    /// The command line as the model wrote it (the notices quote it).
    pub(super) command: String,
    /// Its limit.
    pub(super) max_minutes: u32,
    /// Its notices may wake a turn.
    pub(super) wake_turn: bool,
    /// It started in a turn that a notice woke (`wake_turn_job`).
    pub(super) in_woken_turn: bool,
    /// A contained job's `efr-launcher`, through which its sandbox's ports are forwarded.
    pub(super) forwards_through: Option<PathBuf>,
}

impl Follows {
    /// What the task of a job started from `head` reads; `wake_turn` and `in_woken_turn` as in [`super::JobSpec`].
    pub(super) fn of(head: JobHead, wake_turn: bool, in_woken_turn: bool) -> Self {
        Self {
            conversation_id: head.conversation_id,
            command: head.command,
            max_minutes: head.max_minutes,
            wake_turn,
            in_woken_turn,
            forwards_through: head.forwards_through,
        }
    }
}

/// The task of one running job.
pub(super) struct Follow {
    pub(super) info: Arc<Mutex<JobInfo>>,
    pub(super) sink: Arc<dyn JobSink>,
    pub(super) placement: Arc<Placement>,
    pub(super) pid: u32,
    pub(super) on_end: Mutex<Option<super::EndHook>>,
    /// The host ports that jobs forward (for a contained job's forwards).
    pub(super) forwarded: super::forward::Held,
    pub(super) spec: Follows,
    /// Whether `[jobs] wakes` is on now.
    pub(super) wakes: super::Wakes,
}

impl Follow {
    pub(super) async fn run(
        self,
        mut child: Process,
        pipe: tokio::net::unix::pipe::Receiver,
        output: std::path::PathBuf,
        watch: Option<regex::Regex>,
        mut stops: mpsc::UnboundedReceiver<(JobStopBy, oneshot::Sender<()>)>,
    ) {
        let (match_tx, mut matches) = mpsc::unbounded_channel();
        let (progress_tx, mut progress) = tokio::sync::watch::channel(0_u64);
        let bound = OutputBound {
            file_bytes: super::OUTPUT_FILE_BYTES,
        };
        let mut reader =
            tokio::spawn(async move { output::follow(pipe, &output, bound, watch, match_tx, progress_tx).await });
        let forwarder = self.spec.forwards_through.clone().map(|launcher| {
            Forwarder::start(ForwardJob {
                launcher,
                pid: self.pid,
                conversation_id: self.spec.conversation_id,
                job_id: super::lock(&self.info).id.clone(),
                info: Arc::clone(&self.info),
                sink: Arc::clone(&self.sink),
                held: Arc::clone(&self.forwarded),
            })
        });
        let limit = tokio::time::sleep(Duration::from_secs(u64::from(self.spec.max_minutes) * 60));
        tokio::pin!(limit);
        let mut waiters = Vec::new();
        let mut peak = None;
        let mut input = child.input();
        let ending = loop {
            tokio::select! {
                status = child.wait() => match status {
                    Ok(status) => break Ending::Exited(status),
                    Err(()) => break Ending::Stopped(JobStopBy::Guard),
                },
                waits = waits_input(&mut input) => super::lock(&self.info).waits_input = waits,
                Some((by, done)) = stops.recv() => {
                    waiters.push(done);
                    break Ending::Stopped(by);
                }
                () = &mut limit => break Ending::Stopped(JobStopBy::TimeLimit),
                Some(matched) = matches.recv() => self.watched(matched).await,
                Ok(()) = progress.changed() => {
                    let bytes = *progress.borrow_and_update();
                    peak = peak.max(self.placement.memory_bytes());
                    let mut info = super::lock(&self.info);
                    info.output_bytes = bytes;
                    info.cgroup = Some(cgroup_info(&self.placement, peak));
                }
            }
        };
        // The forwards end first: their `stopped` comes before job_ended.
        if let Some(forwarder) = forwarder {
            forwarder.stop().await;
        }
        let numbers = cgroup_info(&self.placement, peak);
        if let Err(error) = child.kill(&self.placement, self.pid).await {
            tracing::debug!(%error, "a job's processes could not all be signalled");
        }
        let status = match &ending {
            Ending::Exited(status) => *status,
            Ending::Stopped(_) => child.wait().await.ok().flatten(),
        };
        super::lock(&self.info).waits_input = false;
        let survivors = self.wait_empty().await;
        let end = match tokio::time::timeout(END_WAIT, &mut reader).await {
            Ok(Ok(end)) => end,
            _ => {
                reader.abort();
                OutputEnd::default()
            }
        };
        while let Ok(matched) = matches.try_recv() {
            self.watched(matched).await;
        }
        self.placement.remove();
        let hook = super::lock(&self.on_end).take();
        let extras = match hook {
            Some(hook) => hook().await,
            None => super::EndExtras::default(),
        };
        self.ended(ending, status, extras, end, numbers, survivors).await;
        for waiter in waiters {
            let _ = waiter.send(());
        }
        // A stop that came while the job ended is answered too.
        stops.close();
        while let Some((_, done)) = stops.recv().await {
            let _ = done.send(());
        }
    }

    /// Waits until the cgroup is empty; the names of the processes still in it after [`END_WAIT`].
    async fn wait_empty(&self) -> Vec<String> {
        let start = Instant::now();
        loop {
            let pids = self.placement.pids();
            if pids.is_empty() {
                return Vec::new();
            }
            if start.elapsed() > END_WAIT {
                return pids
                    .iter()
                    .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/comm")).ok())
                    .map(|name| name.trim().to_owned())
                    .collect();
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// A watched line: job_watch_matched, then its notice (a wake, or held with its reason).
    async fn watched(&self, matched: Matched) {
        let (id, wakes, max_wakes) = {
            let info = super::lock(&self.info);
            (
                info.id.clone(),
                info.wakes,
                info.watch.as_ref().map_or(0, |w| w.max_wakes),
            )
        };
        let held = self
            .spec
            .wake_turn
            .then(|| held_reason(self.spec.in_woken_turn, wakes, max_wakes, (self.wakes)()))
            .flatten();
        let wakes_now = if self.spec.wake_turn && held.is_none() {
            wakes + 1
        } else {
            wakes
        };
        let body = EventBody::JobWatchMatched(JobWatchMatched {
            job_id: id.clone(),
            line: matched.line.clone(),
            wakes_left: max_wakes.saturating_sub(wakes_now),
        });
        let Ok(seq) = self.sink.record_as(None, vec![body]).await else {
            return;
        };
        super::lock(&self.info).wakes = wakes_now;
        let text = format!(
            "[job {id} (`{}`) printed a line its watch matches: `{}`; {} wakes left]",
            short(&self.spec.command),
            matched.line,
            max_wakes.saturating_sub(wakes_now)
        );
        self.notify(id, NoticeKind::Watch, seq, text, self.spec.wake_turn, held)
            .await;
    }

    async fn notify(
        &self,
        job_id: JobId,
        kind: NoticeKind,
        seq: u64,
        text: String,
        may_wake: bool,
        held: Option<efr_protocol::wire::HeldReason>,
    ) {
        if let Some(reason) = held {
            let body = EventBody::JobNoticeHeld(JobNoticeHeld {
                job_id: job_id.clone(),
                source_seq: seq,
                reason,
            });
            let _ = self.sink.record_as(None, vec![body]).await;
        }
        let notice = Notice {
            job_id,
            kind,
            source_seq: seq,
            text,
            wake: may_wake && held.is_none(),
        };
        self.sink.notice(notice).await;
    }

    /// Records job_ended, updates the info, and gives the model its notice.
    async fn ended(
        &self,
        ending: Ending,
        status: Option<i32>,
        extras: super::EndExtras,
        end: OutputEnd,
        numbers: JobCgroup,
        survivors: Vec<String>,
    ) {
        let (state, stopped_by) = match ending {
            Ending::Exited(_) => (JobState::Exited, None),
            Ending::Stopped(JobStopBy::TimeLimit) => (JobState::TimedOut, Some(JobStopBy::TimeLimit)),
            Ending::Stopped(by) => (JobState::Stopped, Some(by)),
        };
        let mut exit_code = match state {
            JobState::Exited => status,
            _ => None,
        };
        if state == JobState::Exited
            && let Some(reported) = extras.exit_code
        {
            exit_code = reported;
        }
        let state = if state == JobState::Exited && exit_code == Some(125) && end.bytes == 0 {
            JobState::Failed
        } else {
            state
        };
        let (id, started_at) = {
            let info = super::lock(&self.info);
            (info.id.clone(), info.started_at)
        };
        let ended_at = Timestamp::now();
        let ran_secs = u64::try_from((ended_at.0 - started_at.0).num_seconds()).unwrap_or(0);
        let summary = extras.summary;
        let body = EventBody::JobEnded(JobEnded {
            job_id: id.clone(),
            state,
            exit_code,
            stopped_by,
            output_bytes: end.bytes,
            ran_secs,
            tail: end.tail.clone(),
            surface_changes: extras.surface_changes,
            quarantined: extras.quarantined,
            survivors,
            launcher_lost: false,
            output_truncated: end.truncated,
            blocked: summary.blocked,
            blocked_more: summary.blocked_more,
            bus_refused: summary.bus_refused,
            bus_refused_more: summary.bus_refused_more,
        });
        let seq = self.sink.record_as(None, vec![body]).await;
        {
            let mut info = super::lock(&self.info);
            info.state = state;
            info.ended_at = Some(ended_at);
            info.exit_code = exit_code;
            info.stopped_by = stopped_by;
            info.output_bytes = end.bytes;
            info.cgroup = Some(numbers);
        }
        let Ok(seq) = seq else { return };
        let how = match (state, exit_code, stopped_by) {
            (_, _, Some(by)) => format!("was stopped ({by})"),
            (_, Some(code), None) => format!("ended with exit status {code}"),
            _ => "ended".to_owned(),
        };
        let text = format!(
            "[job {id} (`{}`) {how} after {ran_secs} s; its last lines:\n{}]",
            short(&self.spec.command),
            last_lines(&end.tail, 10)
        );
        // A job that ended by itself may wake the model; a stop by someone is told at the next prompt.
        let by_itself = stopped_by.is_none() || stopped_by == Some(JobStopBy::TimeLimit);
        let held = match stopped_by {
            Some(JobStopBy::DaemonStop | JobStopBy::DaemonRestart) => {
                Some(efr_protocol::wire::HeldReason::DaemonRestart)
            }
            _ if by_itself && self.spec.wake_turn => held_reason(self.spec.in_woken_turn, 0, 1, (self.wakes)()),
            _ => None,
        };
        self.notify(
            id,
            NoticeKind::Exited,
            seq,
            text,
            by_itself && self.spec.wake_turn,
            held,
        )
        .await;
    }
}

/// The first 80 characters of a command line.
fn short(command: &str) -> String {
    let mut short: String = command.chars().take(80).collect();
    if short.len() < command.len() {
        short.push('…');
    }
    short
}

/// The last `n` lines of `text`.
fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
