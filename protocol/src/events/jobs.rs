//! The events of background jobs: job_started and job_notice (which belong to their turn), job_watch_matched,
//! job_ended, job_notice_held and job_port_forwarded (which belong to the conversation, no turn).
//!
//! Source: docs/protocol.md, "The contract": "background jobs (phase C)", "the proxy's refusals and status" and
//! "the bus filter and always-allow" (job_ended's `blocked` and `bus_refused`), "port forwards of contained jobs".

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ids::CallId;
use crate::macros::{is_false, is_zero, yes};
use crate::wire::{
    Blocked, BusRefusal, ForwardOutcome, HeldReason, JobId, JobInfo, JobState, JobStopBy, NoticeKind, SurfaceChange,
};

/// job_started: a shell call started a job (or call.background moved one into a job). Its `turn_id` is the
/// envelope's: the turn of the call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JobStarted {
    /// The call.
    pub call_id: CallId,
    /// The job as it started.
    pub job: JobInfo,
    /// The pid of the job's first process (efr-launcher for a contained job, the shell otherwise).
    pub launcher_pid: u32,
    /// That process's start time in clock ticks since boot (`/proc/<pid>/stat` field 22): with the pid, it tells the
    /// process from a later one that reuses the pid.
    pub launcher_start: u64,
}

/// job_watch_matched: a line of the job's output matched its watch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JobWatchMatched {
    /// The job.
    pub job_id: JobId,
    /// The line, at most 500 bytes.
    pub line: String,
    /// How many more matches may wake the model.
    pub wakes_left: u32,
}

/// job_ended: the job ended; none of its processes runs any more.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JobEnded {
    /// The job.
    pub job_id: JobId,
    /// How it ended.
    pub state: JobState,
    /// The command's exit status, when it ended by itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Who stopped it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<JobStopBy>,
    /// The bytes of output it printed.
    pub output_bytes: u64,
    /// How long it ran, in seconds.
    pub ran_secs: u64,
    /// The last lines of its output, at most 2 KiB.
    pub tail: String,
    /// What a contained job changed that code outside the sandbox may run from; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub surface_changes: Vec<SurfaceChange>,
    /// The files of `surface_changes` whose executable bits efrd removed until the user keeps them; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quarantined: Vec<PathBuf>,
    /// Programs that efr could not end with the job; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub survivors: Vec<String>,
    /// efrd lost the job's processes (it restarted without a cgroup to find them by, or they were gone): the exit
    /// status is not known.
    #[serde(default, skip_serializing_if = "is_false")]
    pub launcher_lost: bool,
    /// The output file reached its bound: its start is kept, and the last lines (`tail`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub output_truncated: bool,
    /// The proxy's refusals, at most 32.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocked: Vec<Blocked>,
    /// Refusals that `blocked` leaves out.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub blocked_more: u64,
    /// The bus proxy's refusals, at most 16.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bus_refused: Vec<BusRefusal>,
    /// Bus refusals that `bus_refused` leaves out.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bus_refused_more: u64,
}

/// job_notice: what the model hears of a job (its end, or a watch's match), as input that the user did not type.
/// Its `conversation_id` and `turn_id` are the envelope's: the turn it goes to is the turn it woke, or the next
/// prompt's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JobNotice {
    /// The job.
    pub job_id: JobId,
    /// What it tells.
    pub notice_kind: NoticeKind,
    /// The notice started its turn (false: it waited for the next prompt).
    pub woke: bool,
    /// The seq of the job_ended or job_watch_matched it tells of.
    pub source_seq: u64,
    /// Always true: the model reads it as efr's input, never as the user's words.
    #[serde(default = "yes")]
    pub not_user_input: bool,
    /// The text the model reads.
    pub text: String,
}

/// job_notice_held: a notice that did not wake a turn; it waits for the next prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JobNoticeHeld {
    /// The job.
    pub job_id: JobId,
    /// The seq of the job_ended or job_watch_matched it tells of.
    pub source_seq: u64,
    /// Why it did not wake a turn.
    pub reason: HeldReason,
}

/// job_port_forwarded: what efr did with a port that a contained job listens on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JobPortForwarded {
    /// The job.
    pub job_id: JobId,
    /// The address the job listens on, as text (`127.0.0.1` or `::1`).
    pub listen: String,
    /// The port.
    pub port: u16,
    /// What became of it.
    pub outcome: ForwardOutcome,
    /// The job of the same conversation that holds the port (`in_use`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_job: Option<JobId>,
    /// A short text for `refused` and `limit`, such as `a service port`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}
