//! Background jobs (docs/jobs.md, ADR 0021): shell calls that outlive their turn, each in a cgroup of its own.
//!
//! A turn starts a job with [`Jobs::start`] and a [`JobSpec`] (the program, its folder and environment, how it runs
//! on the wire, its watch and limits); efrd's other parts list and stop jobs through the same [`Jobs`]. A job
//! records its events through the [`JobSink`] it was given (this module owns the trait; the conversation implements
//! it, so the dependency goes conversation → turn → jobs only): job_started, then job_watch_matched for each
//! watched line, job_ended once none of its processes runs, and the notices of both, which the conversation turns
//! into a woken turn or keeps for the next prompt.
//!
//! Parts: `cgroup` (where a job's processes are kept together, their numbers, the kill; `scope` asks the systemd
//! user manager for a scope), `output` (the bounded file, the tail, the watch), `run` (the process and the task that
//! follows it to its end), `forward` (the port forwards of a contained job), `moved` (a running shell call moved
//! into a job: [`Jobs::adopt`]).

mod cgroup;
mod forward;
mod moved;
mod output;
mod run;
mod scope;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use efr_protocol::ErrorBody;
use efr_protocol::events::EventBody;
use efr_protocol::ids::{CallId, ConversationId, TurnId};
use efr_protocol::wire::{HeldReason, JobId, JobInfo, JobStopBy, JobWatch, JobsListResult, Launch, NoticeKind};
use tokio::sync::oneshot;

pub use cgroup::start_ticks;
pub use moved::{MOVED_OFF, MovedCommand, MovedSpec};

/// The bytes of a job's output file (its start; `tail` keeps the end).
pub const OUTPUT_FILE_BYTES: u64 = 8 * 1024 * 1024;
/// The most jobs that run at once in one conversation.
pub const MAX_RUNNING_PER_CONVERSATION: usize = 8;

/// Whether a job's notices may wake the model now (`[jobs] wakes`); asked at each notice, so a reload applies.
pub type Wakes = Arc<dyn Fn() -> bool + Send + Sync>;

/// A future a [`JobSink`] returns.
pub type SinkFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a job tells its conversation.
pub trait JobSink: Send + Sync + std::fmt::Debug {
    /// Records `bodies` as events of `turn_id` (or of the conversation outside any turn, for `None`); yields the seq
    /// of the last one.
    fn record_as(&self, turn_id: Option<TurnId>, bodies: Vec<EventBody>) -> SinkFuture<'_, Result<u64, ErrorBody>>;

    /// A notice for the model: the conversation wakes a turn with it (`wake`), or keeps it for the next prompt.
    fn notice(&self, notice: Notice) -> SinkFuture<'_, ()>;
}

/// A notice of a job for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// The job.
    pub job_id: JobId,
    /// What it tells.
    pub kind: NoticeKind,
    /// The seq of the event it tells of.
    pub source_seq: u64,
    /// The text the model reads.
    pub text: String,
    /// It may start a turn (otherwise it waits for the next prompt).
    pub wake: bool,
}

/// What every job starts from, a new process ([`JobSpec`]) or a running call moved into a job ([`MovedSpec`]): its
/// call and command, how it runs, its limit, and where its sandbox's ports are forwarded through.
#[derive(Debug, Clone)]
pub struct JobHead {
    /// The conversation.
    pub conversation_id: ConversationId,
    /// The turn of the call.
    pub turn_id: TurnId,
    /// The call.
    pub call_id: CallId,
    /// The command line as the model wrote it.
    pub command: String,
    /// How it runs, as tool_call_started showed it.
    pub launch: Launch,
    /// Its limit (from a move on, for a moved call).
    pub max_minutes: u32,
    /// A contained job's `efr-launcher`: the ports its sandbox listens on are forwarded to the host through it
    /// (`forward`). `None` for a direct job, which listens on the host already.
    pub forwards_through: Option<PathBuf>,
}

/// What a turn hands over to start a job.
pub struct JobSpec {
    /// The call, the command, its limit and forwards.
    pub head: JobHead,
    /// The program and its arguments (`efr-launcher --plan-file F`, or the user's shell `-c LINE`).
    pub argv: Vec<std::ffi::OsString>,
    /// The folder it starts in.
    pub cwd: PathBuf,
    /// Its whole environment.
    pub env: Vec<(String, String)>,
    /// Its watch, checked already.
    pub watch: Option<JobWatch>,
    /// Its notices may wake a turn.
    pub wake_turn: bool,
    /// The turn was woken by a notice: the job's own notices wake no turn (`wake_turn_job`).
    pub in_woken_turn: bool,
    /// Run once the job's processes ended, before job_ended: a contained job's report and plans.
    pub on_end: Option<EndHook>,
    /// A call of full mode started it: a reload that turns full mode off stops it (job_stop_by `full_off`).
    pub full: bool,
}

impl std::fmt::Debug for JobSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobSpec")
            .field("command", &self.head.command)
            .finish_non_exhaustive()
    }
}

/// What a job's end hook adds to job_ended: the exit status a contained job's launcher reported, and the refusals
/// of its proxies.
#[derive(Debug, Default)]
pub struct EndExtras {
    /// The command's status as the launcher reported it (`Some(None)`: it reported none).
    pub exit_code: Option<Option<i32>>,
    /// The proxies' refusals (`blocked`, `bus_refused` and their counts).
    pub summary: efr_protocol::wire::SandboxSummary,
    /// What the job changed that code outside the sandbox runs from (a contained job's surface check).
    pub surface_changes: Vec<efr_protocol::wire::SurfaceChange>,
    /// The files of `surface_changes` whose executable bits efrd removed.
    pub quarantined: Vec<PathBuf>,
}

/// The end hook of a job.
pub type EndHook = Box<dyn FnOnce() -> SinkFuture<'static, EndExtras> + Send + Sync>;

/// Why a job did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Too many jobs run in the conversation.
    #[error("{0} jobs already run in this conversation; stop one first (efr jobs stop ID)")]
    TooMany(usize),
    /// The watch pattern is not a regular expression.
    #[error("the watch pattern is not valid: {0}")]
    Watch(String),
    /// The process could not start.
    #[error("the job could not start: {0}")]
    Spawn(String),
    /// job_started could not be recorded; the job was stopped.
    #[error("the job's start could not be recorded: {0}")]
    Record(String),
}

/// One job in the registry.
#[derive(Debug)]
struct Entry {
    /// A call of full mode started it ([`JobSpec::full`]).
    full: bool,
    info: Arc<Mutex<JobInfo>>,
    placement: Arc<cgroup::Placement>,
    stop: run::StopTx,
}

/// The jobs of this efrd: running ones, and those that ended while it ran.
#[derive(Default)]
pub struct Jobs {
    entries: Mutex<BTreeMap<(ConversationId, u64), Entry>>,
    /// The next number per conversation, at least one above any job seen in its log.
    next: Mutex<BTreeMap<ConversationId, u64>>,
    /// Where the output files go (`<state>/jobs`).
    root: PathBuf,
    /// `$XDG_RUNTIME_DIR`, where the user manager's private socket is.
    runtime_dir: Option<PathBuf>,
    /// Jobs get no cgroup of their own (the jobs bench's other side).
    no_cgroups: bool,
    /// The host ports that jobs forward.
    forwarded: forward::Held,
    /// `[jobs] wakes`; on when not set.
    wakes: Option<Wakes>,
}

impl std::fmt::Debug for Jobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jobs")
            .field("root", &self.root)
            .field("no_cgroups", &self.no_cgroups)
            .finish_non_exhaustive()
    }
}

impl Jobs {
    /// The registry of a daemon whose job files go under `root`.
    #[must_use]
    pub fn new(root: PathBuf, runtime_dir: Option<PathBuf>) -> Self {
        Self {
            root,
            runtime_dir,
            ..Self::default()
        }
    }

    /// The same registry, whose jobs get no cgroup of their own, as on a machine without one: the jobs bench measures
    /// what a cgroup costs against it.
    #[must_use]
    pub fn without_cgroups(mut self) -> Self {
        self.no_cgroups = true;
        self
    }

    /// The same registry, whose jobs ask `wakes` whether a notice may wake the model (`[jobs] wakes`).
    #[must_use]
    pub fn with_wakes(mut self, wakes: Wakes) -> Self {
        self.wakes = Some(wakes);
        self
    }

    fn wakes(&self) -> Wakes {
        self.wakes.clone().unwrap_or_else(|| Arc::new(|| true))
    }

    /// Notes that the log of `conversation` holds jobs up to number `last` (after a restart).
    pub fn seen(&self, conversation: ConversationId, last: u64) {
        let mut next = lock(&self.next);
        let n = next.entry(conversation).or_insert(1);
        *n = (*n).max(last + 1);
    }

    /// Starts a job: its process at its gate, its cgroup, job_started recorded, then the task that follows it.
    ///
    /// # Errors
    /// [`StartError`]: nothing runs.
    pub async fn start(&self, spec: JobSpec, sink: Arc<dyn JobSink>) -> Result<JobInfo, StartError> {
        let running = self.running_in(spec.head.conversation_id);
        if running >= MAX_RUNNING_PER_CONVERSATION {
            return Err(StartError::TooMany(running));
        }
        let watch = match &spec.watch {
            Some(w) => Some(regex::Regex::new(&w.pattern).map_err(|e| StartError::Watch(e.to_string()))?),
            None => None,
        };
        let number = {
            let mut next = lock(&self.next);
            let n = next.entry(spec.head.conversation_id).or_insert(1);
            let number = *n;
            *n += 1;
            number
        };
        let job_id = JobId::nth(number);
        let full = spec.full;
        let folder = self.root.join(spec.head.conversation_id.to_string());
        crate::config::ensure_private_dir(&folder).map_err(|e| StartError::Spawn(e.to_string()))?;
        let unit = format!("efr-job-{}-{}", &spec.head.conversation_id.to_string()[..8], job_id);
        let placement = if self.no_cgroups {
            cgroup::Placement::Off {
                reason: "this efrd runs jobs without cgroups".to_owned(),
            }
        } else {
            cgroup::Placement::choose(self.runtime_dir.as_deref(), &unit)
        };
        let output = folder.join(format!("{job_id}.log"));
        let started = run::start(
            run::Start {
                spec,
                job_id: job_id.clone(),
                output,
                placement,
                watch,
                forwarded: Arc::clone(&self.forwarded),
                wakes: self.wakes(),
            },
            sink,
        )
        .await?;
        let info = lock(&started.info).clone();
        lock(&self.entries).insert(
            (info.conversation_id, number),
            Entry {
                full,
                info: started.info,
                placement: started.placement,
                stop: started.stop,
            },
        );
        Ok(info)
    }

    /// Whether `conversation` may start one more job.
    ///
    /// # Errors
    /// [`StartError::TooMany`].
    pub fn room(&self, conversation: ConversationId) -> Result<(), StartError> {
        let running = self.running_in(conversation);
        if running >= MAX_RUNNING_PER_CONVERSATION {
            return Err(StartError::TooMany(running));
        }
        Ok(())
    }

    /// Makes a running shell call a job: job_started recorded (with `moved_from`), then the task that follows the
    /// command to its end.
    ///
    /// # Errors
    /// [`StartError`]: the command's shell was closed.
    pub async fn adopt(
        &self,
        spec: MovedSpec,
        command: MovedCommand,
        sink: Arc<dyn JobSink>,
    ) -> Result<JobInfo, StartError> {
        if let Err(error) = self.room(spec.head.conversation_id) {
            command.shell.kill().await;
            return Err(error);
        }
        let (number, output) = match self.next_output(spec.head.conversation_id) {
            Ok(next) => next,
            Err(error) => {
                command.shell.kill().await;
                return Err(error);
            }
        };
        let conversation = spec.head.conversation_id;
        let started = moved::adopt(
            (JobId::nth(number), output),
            spec,
            command,
            sink,
            (self.wakes(), Arc::clone(&self.forwarded)),
        )
        .await?;
        let info = lock(&started.info).clone();
        lock(&self.entries).insert(
            (conversation, number),
            Entry {
                // A moved call stays its turn's: only a job that a full call started as one is full's.
                full: false,
                info: started.info,
                placement: started.placement,
                stop: started.stop,
            },
        );
        Ok(info)
    }

    /// The next job number of `conversation` and its output file (its folder made).
    fn next_output(&self, conversation: ConversationId) -> Result<(u64, PathBuf), StartError> {
        let number = {
            let mut next = lock(&self.next);
            let n = next.entry(conversation).or_insert(1);
            let number = *n;
            *n += 1;
            number
        };
        let folder = self.root.join(conversation.to_string());
        crate::config::ensure_private_dir(&folder).map_err(|e| StartError::Spawn(e.to_string()))?;
        Ok((number, folder.join(format!("{}.log", JobId::nth(number)))))
    }

    fn running_in(&self, conversation: ConversationId) -> usize {
        lock(&self.entries)
            .iter()
            .filter(|((c, _), e)| *c == conversation && e.is_running())
            .count()
    }

    /// The jobs, newest first, at most [`JobsListResult::MAX_JOBS`]; only `conversation`'s when given.
    #[must_use]
    pub fn list(&self, conversation: Option<ConversationId>) -> Vec<JobInfo> {
        let entries = lock(&self.entries);
        let mut jobs: Vec<JobInfo> = entries
            .iter()
            .filter(|((c, _), _)| conversation.is_none_or(|want| *c == want))
            .map(|(_, e)| e.snapshot())
            .collect();
        jobs.sort_by(|a, b| b.started_at.cmp(&a.started_at).then(b.id.number().cmp(&a.id.number())));
        jobs.truncate(JobsListResult::MAX_JOBS);
        jobs
    }

    /// The job `job_id` of `conversation` (or the only running job with that id when `conversation` is `None`).
    ///
    /// # Errors
    /// `not_found` when there is no such job, `invalid` when the id is ambiguous without a conversation.
    pub fn find(&self, conversation: Option<ConversationId>, job_id: &JobId) -> Result<JobInfo, ErrorBody> {
        let key = self.key(conversation, job_id)?;
        Ok(lock(&self.entries)[&key].snapshot())
    }

    fn key(&self, conversation: Option<ConversationId>, job_id: &JobId) -> Result<(ConversationId, u64), ErrorBody> {
        let entries = lock(&self.entries);
        let found: Vec<(ConversationId, u64)> = entries
            .keys()
            .filter(|(c, n)| *n == job_id.number() && conversation.is_none_or(|want| *c == want))
            .copied()
            .collect();
        match found.as_slice() {
            [one] => Ok(*one),
            [] => Err(ErrorBody::new(
                efr_protocol::ErrorCode::NotFound,
                format!(
                    "no job {job_id}{}",
                    conversation
                        .map(|c| format!(" in conversation {c}"))
                        .unwrap_or_default()
                ),
            )),
            _ => Err(ErrorBody::invalid(format!(
                "{job_id} names a job in more than one conversation: give conversation_id"
            ))),
        }
    }

    /// Stops a job (every process of its cgroup) and waits until job_ended is recorded; a job that ended already is
    /// returned as it is.
    ///
    /// # Errors
    /// As [`Jobs::find`].
    pub async fn stop(
        &self,
        conversation: Option<ConversationId>,
        job_id: &JobId,
        by: JobStopBy,
    ) -> Result<JobInfo, ErrorBody> {
        let key = self.key(conversation, job_id)?;
        let stop = lock(&self.entries).get(&key).map(|e| e.stop.clone());
        if let Some(stop) = stop {
            let (done, ended) = oneshot::channel();
            if stop.send((by, done)).is_ok() {
                let _ = ended.await;
            }
        }
        self.find(Some(key.0), job_id)
    }

    /// Stops the running jobs that `turn` started (an interrupt of that turn), and waits for their ends.
    pub async fn stop_turn(&self, conversation: ConversationId, turn: TurnId, by: JobStopBy) {
        let ids: Vec<JobId> = self
            .list(Some(conversation))
            .into_iter()
            .filter(|j| j.turn_id == turn && j.moved_from.is_none() && j.state == efr_protocol::wire::JobState::Running)
            .map(|j| j.id)
            .collect();
        for id in ids {
            let _ = self.stop(Some(conversation), &id, by).await;
        }
    }

    /// Stops every running job (efrd stops or restarts) and waits for their ends.
    pub async fn stop_all(&self, by: JobStopBy) {
        let running: Vec<(ConversationId, JobId)> = lock(&self.entries)
            .iter()
            .filter(|(_, e)| e.is_running())
            .map(|((c, n), _)| (*c, JobId::nth(*n)))
            .collect();
        let stops = running.iter().map(|(c, id)| self.stop(Some(*c), id, by));
        futures::future::join_all(stops).await;
    }

    /// Stops the running jobs that calls of full mode started (a reload turned full mode off: `full_off`), and
    /// waits for their ends. Their notices wake no turn: a stop by someone is told at the next prompt.
    pub async fn stop_full(&self) {
        let running: Vec<(ConversationId, JobId)> = lock(&self.entries)
            .iter()
            .filter(|(_, e)| e.full && e.is_running())
            .map(|((c, n), _)| (*c, JobId::nth(*n)))
            .collect();
        let stops = running
            .iter()
            .map(|(c, id)| self.stop(Some(*c), id, JobStopBy::FullOff));
        futures::future::join_all(stops).await;
    }

    /// How many jobs run.
    #[must_use]
    pub fn running(&self) -> usize {
        lock(&self.entries).values().filter(|e| e.is_running()).count()
    }
}

impl Entry {
    fn is_running(&self) -> bool {
        lock(&self.info).state == efr_protocol::wire::JobState::Running
    }

    /// The job's info; a running job's memory and CPU read now.
    fn snapshot(&self) -> JobInfo {
        let mut info = lock(&self.info).clone();
        if info.state == efr_protocol::wire::JobState::Running {
            info.cgroup = Some(run::cgroup_info(&self.placement, None));
        }
        info
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Kills what is left of a job whose efrd died: when `pid` still runs and started at `start` (so it is that job's
/// process, not a later one with its pid), every process of its cgroup (found by the job's cgroup name), its
/// process group, and the session that it leads (a moved job's hidden shell).
pub fn kill_leftover(pid: u32, start: u64) {
    if start == 0 || cgroup::start_ticks(pid) != Some(start) {
        return;
    }
    if let Some(dir) = cgroup::job_dir_of(pid) {
        let _ = std::fs::write(dir.join("cgroup.kill"), "1");
    }
    if let Ok(group) = i32::try_from(pid) {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(group), nix::sys::signal::Signal::SIGKILL);
        // A moved job's first pid is its hidden shell, the leader of a session: what its command left in that
        // session goes too (a job that efrd started is in efrd's session, whose leader it is not).
        for member in crate::tools::shell::session_members(group) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(member), nix::sys::signal::Signal::SIGKILL);
        }
    }
}

/// Why a notice of a job that may wake does not: the limits, in the order they are checked.
#[must_use]
pub fn held_reason(in_woken_turn: bool, wakes: u32, max_wakes: u32, wakes_on: bool) -> Option<HeldReason> {
    if !wakes_on {
        Some(HeldReason::WakesOff)
    } else if in_woken_turn {
        Some(HeldReason::WakeTurnJob)
    } else if wakes >= max_wakes {
        Some(HeldReason::WakeLimit)
    } else {
        None
    }
}
