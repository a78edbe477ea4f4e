//! The vocabulary of a turn's tool calls, shared by the orchestrator ([`super::tools`]) and every call runtime
//! (shell, patch, exit, contained): what the calls share ([`ToolEnv`]), what goes back to the model
//! ([`CallOutput`]), and the plain `tool_call_completed` ([`completed`]). A leaf: it names no runtime, so the
//! runtimes and the orchestrator that calls them form no circle.

use std::path::PathBuf;
use std::sync::Arc;

use efr_protocol::events::{CallStatus, EventBody, ToolCallCompleted};
use efr_protocol::ids::CallId;
use efr_protocol::wire::{Mode, Origin};
use efr_snapshot::SnapshotStore;
use tokio::sync::Mutex;

use super::call_snapshots::CallSnapshots;
use crate::exits::judge::{Judges, TurnDenials};
use crate::network::CallNetwork;
use crate::sandbox::SandboxState;
use crate::sandbox::plan::Layout;
use crate::tools::shell::ShellSlot;

/// What a turn's tool calls share: the conversation's hidden shell, where the project is, and the turn's mode.
#[derive(Debug, Clone)]
pub struct ToolEnv {
    /// efr's own roots, for the floors (a call that touches them is refused in every mode).
    pub efr_dirs: efr_policy::EfrDirs,
    /// The user's home folder ([`crate::config::Roots::home`]): the policy's floors, and how paths are shown.
    pub home: Option<PathBuf>,
    /// The conversation's hidden shell (started on the first shell call).
    pub shell: Arc<Mutex<ShellSlot>>,
    /// The working directory of a patch call (the shell's start directory).
    pub cwd: PathBuf,
    /// The project roots of the turn.
    pub roots: Vec<PathBuf>,
    /// The turn's mode.
    pub mode: Mode,
    /// Where the prompt came from.
    pub origin: Origin,
    /// `[permissions] question_limit_secs`: replaces the limit of a question that has one.
    pub question_limit_secs: Option<u32>,
    /// Where the turn's first and last snapshots of the project go; `None` for a conversation without a project
    /// (no working directory), which gets no turn `changes` and no `changes` of a shell call in a project.
    pub snapshots: Option<Arc<SnapshotStore>>,
    /// The snapshots around the turn's shell calls (a call's own `changes`).
    pub call_snapshots: Arc<CallSnapshots>,
    /// The turn's place among the turns running in its project, and the files its calls are known to have changed;
    /// `None` without a project ([`super::overlap`]).
    pub presence: Option<Arc<super::overlap::Presence>>,
    /// The sandbox of contained calls: the cached probe, the launcher's path.
    pub sandbox: Arc<SandboxState>,
    /// The network of auto's contained calls: `[network]` as it was at the turn's start, and the proxy.
    pub network: CallNetwork,
    /// The D-Bus of auto's contained calls: `[bus]` and the session bus as they were at the turn's start, and the
    /// bus proxy.
    pub bus: crate::bus::CallBus,
    /// The folders of a contained call's base plan.
    pub layout: Layout,
    /// The conversation's `$SCRATCH` (`<state root>/scratch/<conversation id>`), made (mode 0700) by the first
    /// contained call.
    pub scratch: PathBuf,
    /// The desktop of the prompt's terminal (`shell_context.desktop`), whose control socket a `desktop` grant binds.
    pub desktop: Option<efr_protocol::wire::Desktop>,
    /// What auto's exits share in the turn: the judges, the denials, the prompt ([`super::exits`]).
    pub exits: TurnExits,
    /// Where the turn's background jobs go; `None` where jobs cannot run (a turn's unit tests).
    pub jobs: Option<TurnJobs>,
}

/// What a turn needs to start background jobs ([`super::job_call`]).
#[derive(Debug, Clone)]
pub struct TurnJobs {
    /// efrd's jobs.
    pub registry: Arc<crate::jobs::Jobs>,
    /// The turn's conversation.
    pub conversation_id: efr_protocol::ids::ConversationId,
    /// The turn was started by a job's notice: its own jobs wake no turn.
    pub in_woken_turn: bool,
}

/// The most recent calls a model judge sees (their lines or a patch's files, never their output).
pub const RECENT_CALLS: usize = 8;

/// What the exits of a turn's calls share: the judges, the turn's denials, and what finding and judging read of the
/// prompt.
#[derive(Debug, Clone, Default)]
pub struct TurnExits {
    /// The judges of the turn (the classifier, the turn's model).
    pub judges: Judges,
    /// The turn's count of denials: the chain pauses the classifier after too many.
    pub denials: Arc<Mutex<TurnDenials>>,
    /// The user's prompt of the turn, as typed (without efr's preamble).
    pub user_prompt: String,
    /// The hosts of the remotes of the project's git dir, lowercase (read once per turn).
    pub project_remotes: Vec<String>,
    /// The turn's calls so far, oldest first, at most [`RECENT_CALLS`]: a shell call's line, a patch's files.
    pub recent_calls: Arc<std::sync::Mutex<Vec<String>>>,
    /// The config: its always rules (read at each call, so a rule saved in this turn covers the next exit) and
    /// their save. `None`: no rule covers an exit and no question offers one.
    pub config: Option<Arc<crate::config::ConfigState>>,
    /// The turn's judged exits so far, oldest first, at most [`efr_protocol::events::MAX_PREVIOUS_EXITS`]:
    /// exit_requested's `previous_exits_this_turn`.
    pub judged: Arc<std::sync::Mutex<Vec<[String; 2]>>>,
}

impl TurnExits {
    /// Notes the exit_judged events among `bodies` (recorded for the turn) for later exit_requested events.
    pub fn note_judged(&self, bodies: &[efr_protocol::events::EventBody]) {
        let mut judged = self.judged.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for body in bodies {
            if let efr_protocol::events::EventBody::ExitJudged(j) = body {
                judged.push(efr_protocol::events::previous_exit(j.exit_kind, j.verdict));
            }
        }
        let over = judged.len().saturating_sub(efr_protocol::events::MAX_PREVIOUS_EXITS);
        judged.drain(..over);
    }

    /// The turn's judged exits so far, oldest first: exit_requested's `previous_exits_this_turn`.
    #[must_use]
    pub fn previous_judged(&self) -> Vec<[String; 2]> {
        self.judged
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Notes a call of the turn for the judges of later calls (at most [`RECENT_CALLS`] are kept).
    pub fn note_call(&self, call: String) {
        let mut recent = self
            .recent_calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        recent.push(call);
        let over = recent.len().saturating_sub(RECENT_CALLS);
        recent.drain(..over);
    }

    /// The turn's calls so far, oldest first (at most [`RECENT_CALLS`]).
    pub(super) fn recent(&self) -> Vec<String> {
        self.recent_calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// What goes back to the model for one call.
#[derive(Debug)]
pub struct CallOutput {
    /// The output text for the model (bounded).
    pub output: String,
    /// Whether the call failed (a refusal, a denial, an error, a non-zero exit).
    pub is_error: bool,
}

/// A `tool_call_completed` with no exit code, changes or sandbox summary.
pub fn completed(call_id: &CallId, status: CallStatus, output: String, refusal: Option<String>) -> EventBody {
    EventBody::ToolCallCompleted(ToolCallCompleted {
        call_id: call_id.clone(),
        status,
        output,
        exit_code: None,
        refusal,
        left_running: false,
        changes: None,
        diff: None,
        sandbox: None,
    })
}
