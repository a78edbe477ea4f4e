//! Background jobs: a shell call that outlives its turn, in a cgroup of its own (docs/jobs.md, ADR 0021).
//!
//! Source: docs/protocol.md, "The contract": "background jobs (phase C)", "the cgroup of a background job", "port
//! forwards of contained jobs", "the move of a running shell call to a background job" and job_stop_by `full_off`.
//! The methods: jobs.list (scope read), jobs.stop (scope operate, a command id) and call.background (scope terminal,
//! a command id); the events' members are in `crate::events::jobs`.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::exits::ExitRecord;
use super::sandbox::Launch;
pub use crate::ids::JobId;
use crate::ids::{CallId, CommandId, ConversationId, Timestamp, TurnId};
use crate::macros::{is_false, wire_enum};

wire_enum! {
    /// Where a job is (frozen in `job_states.json`).
    pub enum JobState {
        /// It runs.
        Running = "running",
        /// Its command ended by itself (`exit_code`).
        Exited = "exited",
        /// Someone stopped it (`stopped_by`).
        Stopped = "stopped",
        /// It ran past its `max_minutes` and efrd stopped it.
        TimedOut = "timed_out",
        /// It could not start, or efrd lost it (`launcher_lost`).
        Failed = "failed",
    }
    unknown
}

wire_enum! {
    /// Who or what stopped a job (frozen in `job_stop_causes.json`).
    pub enum JobStopBy {
        /// The model (a call that stopped it).
        Model = "model",
        /// The user (jobs.stop, or an interrupt of the turn that started it).
        User = "user",
        /// Its `max_minutes` ran out.
        TimeLimit = "time_limit",
        /// efrd stopped.
        DaemonStop = "daemon_stop",
        /// efrd restarted.
        DaemonRestart = "daemon_restart",
        /// A guard of efrd's (such as its output past every bound).
        Guard = "guard",
        /// A call of full mode started it, and a config reload turned full mode off.
        FullOff = "full_off",
    }
    unknown
}

wire_enum! {
    /// What a job notice tells (frozen in `notice_kinds.json`).
    pub enum NoticeKind {
        /// The job ended.
        Exited = "exited",
        /// The job printed a line its watch matches.
        Watch = "watch",
    }
    unknown
}

wire_enum! {
    /// Why a notice did not wake a turn and waits for the next prompt (frozen in `held_reasons.json`).
    pub enum HeldReason {
        /// The job used all of its `max_wakes`.
        WakeLimit = "wake_limit",
        /// The job was started by a turn that a notice woke: a woken turn's jobs wake no turn (no loop of wakes).
        WakeTurnJob = "wake_turn_job",
        /// The job ended because efrd restarted.
        DaemonRestart = "daemon_restart",
        /// `[jobs] wakes` is off, or the job asked for no wakes.
        WakesOff = "wakes_off",
        /// The conversation's mode is above auto (only older builds record it).
        NotAuto = "not_auto",
    }
    unknown
}

wire_enum! {
    /// What became of a port that a contained job listens on (frozen in `forward_outcomes.json`).
    pub enum ForwardOutcome {
        /// efrd forwards the port on the host.
        Forwarded = "forwarded",
        /// Another job of the conversation holds the port on the host (`by_job`), or another program does.
        InUse = "in_use",
        /// efr never forwards this port (`reason`: a port below 1024, one of efr's own listeners).
        Refused = "refused",
        /// The job holds as many forwards as efr gives one job (`reason`).
        Limit = "limit",
        /// The forward ended (the job stopped listening, or ended).
        Stopped = "stopped",
    }
    unknown
}

/// A job's watch: the pattern of the lines that wake the model, and how often they may.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JobWatch {
    /// The pattern (a regular expression of the Rust `regex` crate's syntax), matched against each output line.
    pub pattern: String,
    /// How many matches may wake the model.
    pub max_wakes: u32,
}

/// A job's cgroup: its memory and CPU, or why it has no cgroup of its own.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JobCgroup {
    /// Why the job has no cgroup of its own (then a stop ends its process group only); absent when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off: Option<String>,
    /// Memory in bytes: now while the job runs, the most it used at its end (`memory.current`, `memory.peak`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// CPU time in microseconds (`cpu.stat` `usage_usec`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_usec: Option<u64>,
}

/// A port that efr forwards for a job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JobForward {
    /// The address the job listens on, as text (`127.0.0.1` or `::1`); the host side listens on the same.
    pub listen: String,
    /// The port, the same on both sides.
    pub port: u16,
}

/// Where a moved job came from: the shell call that call.background moved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JobMovedFrom {
    /// The call.
    pub call_id: CallId,
    /// Its turn.
    pub turn_id: TurnId,
    /// How long the call had run when it moved, in seconds.
    pub after_secs: u64,
    /// The exits the call had (the move outside the sandbox asked the user); absent when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exits: Vec<ExitRecord>,
    /// The call ran through efr's sandbox launcher.
    #[serde(default, skip_serializing_if = "is_false")]
    pub launcher: bool,
}

/// A job, as jobs.list and jobs.stop show it and job_started carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JobInfo {
    /// The job.
    pub id: JobId,
    /// Its conversation.
    pub conversation_id: ConversationId,
    /// The turn that started it.
    pub turn_id: TurnId,
    /// The shell call that started it.
    pub call_id: CallId,
    /// The command line.
    pub command: String,
    /// How it runs (contained with its grants, direct, or unsandboxed).
    pub launch: Launch,
    /// Where it is.
    pub state: JobState,
    /// When it started.
    pub started_at: Timestamp,
    /// When efrd stops it at the latest (its `max_minutes`).
    pub ends_by: Timestamp,
    /// When it ended; absent while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<Timestamp>,
    /// The command's exit status, when it ended by itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Who stopped it, for a stopped or timed out job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<JobStopBy>,
    /// Its watch; absent when it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch: Option<JobWatch>,
    /// The file that holds its output (stdout and stderr as they came), readable while it runs.
    pub output: PathBuf,
    /// The bytes of output so far (the file keeps at most the job's bound; see `job_ended`'s `output_truncated`).
    pub output_bytes: u64,
    /// How many times it woke the model.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub wakes: u32,
    /// Its cgroup; absent from an efrd before 0.0.5.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<JobCgroup>,
    /// The call it was moved from; absent for a job that the model started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moved_from: Option<JobMovedFrom>,
    /// The command of a running moved job waits for input that is not a secret.
    #[serde(default, skip_serializing_if = "is_false")]
    pub waits_input: bool,
    /// The ports efr forwards for it; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forwards: Vec<JobForward>,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde passes a reference.
fn is_zero_u32(value: &u32) -> bool {
    *value == 0
}

/// jobs.list params (scope read).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JobsListParams {
    /// Only this conversation's jobs; absent for every conversation's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<ConversationId>,
}

/// jobs.list result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JobsListResult {
    /// The jobs, newest first, at most [`JobsListResult::MAX_JOBS`]; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<JobInfo>,
}

impl JobsListResult {
    /// The most jobs a list holds (spec: "at most 200").
    pub const MAX_JOBS: usize = 200;
}

/// jobs.stop params (scope operate).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JobsStopParams {
    /// The write's id: a repeat returns the stored outcome and stops nothing.
    pub command_id: CommandId,
    /// The job's conversation; absent when the job id is unique among the running jobs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<ConversationId>,
    /// The job.
    pub job_id: JobId,
}

/// jobs.stop result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct JobsStopResult {
    /// The job as it is after the stop.
    pub job: JobInfo,
}

/// call.background params (scope terminal, the Unix socket only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CallBackgroundParams {
    /// The write's id.
    pub command_id: CommandId,
    /// The conversation.
    pub conversation_id: ConversationId,
    /// The running shell call, or the call whose command was left running in the hidden shell.
    pub call_id: CallId,
    /// The token of a preview the user said yes to; absent for the first ask.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<String>,
}

/// call.background result, tagged by `kind`. A kind that a reader does not know reads as `unknown`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CallBackgroundResult {
    /// The call is now the job `job_id`.
    Moved {
        /// The job.
        job_id: JobId,
    },
    /// The call runs outside the sandbox: the client asks the user, and a yes sends the method again with `token`.
    Preview {
        /// The one-time token of this preview.
        token: String,
        /// The command line.
        command: String,
        /// When the job would be stopped at the latest, in minutes from the move.
        max_minutes: u32,
        /// The exits the call has; absent when empty.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        exits: Vec<ExitRecord>,
    },
    /// A kind that this reader does not know. Never sent.
    #[serde(other)]
    Unknown,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_ids_are_j_and_a_number() {
        for good in ["j1", "j2", "j10", "j987"] {
            assert_eq!(good.parse::<JobId>().unwrap().as_str(), good);
        }
        for bad in ["", "j", "j0", "j01", "J1", "1", "job1", "j1a", "j-1"] {
            assert!(bad.parse::<JobId>().is_err(), "{bad}");
            assert!(serde_json::from_str::<JobId>(&format!("\"{bad}\"")).is_err(), "{bad}");
        }
        assert_eq!(JobId::nth(7).number(), 7);
    }

    #[test]
    fn unknown_values_read_as_unknown() {
        let state: JobState = serde_json::from_str("\"paused\"").unwrap();
        assert_eq!(state, JobState::Unknown);
        let by: JobStopBy = serde_json::from_str("\"alien\"").unwrap();
        assert_eq!(by, JobStopBy::Unknown);
        let result: CallBackgroundResult = serde_json::from_str(r#"{"kind":"later","at":3}"#).unwrap();
        assert_eq!(result, CallBackgroundResult::Unknown);
    }
}
