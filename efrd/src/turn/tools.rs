//! Running one tool call of a turn: read it, ask the policy, ask the user when the policy says so, run it, and record
//! `tool_call_started` … `tool_call_completed`.
//!
//! The order of events of a call: `tool_call_started` (with `launch` and `manual_input`), then, when the policy asks,
//! `approval_requested` and `approval_resolved`, then `tool_call_completed` (with `refusal` for a call the policy
//! refused, `status: denied` for one the user denied, `left_running` for a command that outlived its timeout, and
//! `changes` for a patch). A shell call runs in [`super::shell_call`] (direct, or contained in auto mode); a patch of
//! a contained call applies only where a contained call may write (the project roots and `$SCRATCH`), else it fails
//! as the same write inside the sandbox would.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use efr_protocol::events::{CallStatus, EventBody, ToolCallCompleted, ToolCallStarted};
use efr_protocol::ids::{CallId, TurnId};
use efr_protocol::wire::{ApprovalDecision, FileChangeKind, FileChanges, Launch, Mode, Origin};
use serde_json::Value;
use tokio::sync::Mutex;

use super::contained;
use super::git_check;
use super::patch_paths::{resolved_change, resolved_dirs, resolved_roots, touched};
use super::shell_call::run_shell;
use super::snapshots::CallSnapshots;
use crate::conversation::Recorder;
use crate::policy::{self, Call, Decision, PatchCall, PatchChange, PolicyContext, ShellCall};
use crate::sandbox::SandboxState;
use crate::sandbox::plan::Layout;
use crate::snapshot::SnapshotStore;
use crate::tools::changes::{Change, DisplayRoots, IgnoreRules, TOOL_CALL_DIFF_LINES, file_changes, unified_diff};
use crate::tools::patch::{self, Plan};
use crate::tools::shell::{ShellSlot, nested_shell};
use crate::tools::spec::{self, ToolCall};

/// What a turn's tool calls share: the conversation's hidden shell, where the project is, and the turn's mode.
#[derive(Debug, Clone)]
pub struct ToolEnv {
    /// efr's own roots, for the floors (a call that touches them is refused in every mode).
    pub efr_dirs: crate::policy::EfrDirs,
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
    /// The sandbox of contained calls: the cached probe, the launcher's path.
    pub sandbox: Arc<SandboxState>,
    /// The folders of a contained call's base plan.
    pub layout: Layout,
    /// The conversation's `$SCRATCH` (`<state root>/scratch/<conversation id>`), made (mode 0700) by the first
    /// contained call.
    pub scratch: PathBuf,
}

/// What goes back to the model for one call.
#[derive(Debug)]
pub struct CallOutput {
    /// The output text for the model (bounded).
    pub output: String,
    /// Whether the call failed (a refusal, a denial, an error, a non-zero exit).
    pub is_error: bool,
}

/// The input member of tool_call_started: the JSON the model wrote for a function tool, the text for a freeform one
/// (a JSON string with the raw input when a function tool's input is not JSON).
fn input_value(freeform: bool, input: &str) -> Value {
    if freeform {
        return Value::String(input.to_owned());
    }
    serde_json::from_str(input).unwrap_or_else(|_| Value::String(input.to_owned()))
}

/// The changes and the unified diff of an applied patch, with paths as a client shows them (spec, file_change).
fn changes_of(results: Vec<patch::FileResult>, env: &ToolEnv) -> (FileChanges, String) {
    let project = env.roots.first().map(PathBuf::as_path);
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let roots = DisplayRoots {
        project,
        scratch: None,
        home: home.as_deref(),
    };
    let mut ignore = project.map(IgnoreRules::new);
    let changes: Vec<Change> = results
        .into_iter()
        .map(|result| {
            let ignored = ignore
                .as_mut()
                .is_some_and(|rules| rules.is_ignored(&result.path, false));
            Change::from_patch(result, ignored)
        })
        .collect();
    (
        file_changes(&changes, &roots),
        unified_diff(&changes, &roots, TOOL_CALL_DIFF_LINES),
    )
}

/// One tool call as the model made it.
#[derive(Debug, Clone, Copy)]
pub struct ModelCall<'a> {
    /// The provider's id of the call.
    pub call_id: &'a str,
    /// The tool's name (`shell`, `apply_patch`, or one the model made up).
    pub tool: &'a str,
    /// The input is freeform text (a custom tool), not JSON.
    pub freeform: bool,
    /// The input as the model wrote it.
    pub input: &'a str,
}

/// Runs one call and records its events. Returns what the model gets, or `None` when the recorder is gone.
/// `cancel` is the turn's interrupt: it stops a running shell command.
pub async fn run_call(
    env: &ToolEnv,
    recorder: &Recorder,
    turn_id: TurnId,
    model_call: ModelCall<'_>,
    cancel: &tokio_util::sync::CancellationToken,
) -> Option<CallOutput> {
    let ModelCall {
        call_id,
        tool,
        freeform,
        input,
    } = model_call;
    let call_id = CallId(call_id.to_owned());
    let call = spec::read_call(tool, freeform, input);
    // The policy compares paths lexically: the roots and a patch's paths are resolved through links first.
    let mut ctx = PolicyContext::new(resolved_roots(&env.roots), env.origin);
    ctx.home = std::env::var_os("HOME").map(PathBuf::from);
    ctx.efr_dirs = resolved_dirs(&env.efr_dirs);
    // A patch is planned before the decision: the policy judges the paths it really touches.
    let (decision, plan) = match &call {
        ToolCall::Shell { command, .. } => {
            let shell = ShellCall {
                command: command.clone(),
                cwd: env.cwd.clone(),
            };
            let analysis = policy::analyse_call(&shell, &ctx);
            // Cautious runs a read-only git command only in a repository checked to run nothing of its own.
            if policy::effective_mode(env.mode, env.origin) == Mode::Cautious {
                ctx.git = git_check::inspect_unless_sandboxed(&analysis.git).await;
            }
            (Some(policy::decide_shell(&shell, &analysis, env.mode, &ctx)), None)
        }
        ToolCall::Patch { text } => match patch::parse(text).and_then_plan(&env.cwd).and_then(|plan| {
            let changes = plan
                .files()
                .iter()
                .map(resolved_change)
                .collect::<Result<Vec<_>, _>>()?;
            Ok((plan, changes))
        }) {
            Ok((plan, changes)) => {
                let decision = policy::decide(
                    &Call::Patch(PatchCall {
                        changes: changes.clone(),
                    }),
                    env.mode,
                    &ctx,
                );
                (Some(decision), Some((plan, changes)))
            }
            Err(message) => {
                return finish_invalid(recorder, turn_id, &call_id, tool, freeform, input, message).await;
            }
        },
        ToolCall::Invalid { message } => {
            return finish_invalid(recorder, turn_id, &call_id, tool, freeform, input, message.clone()).await;
        }
    };
    let decision = decision.unwrap_or(Decision::Refuse {
        refusal: "no decision".to_owned(),
    });
    let launch = match &decision {
        Decision::Run { launch } => Some(launch.to_wire()),
        Decision::Ask(question) => Some(question.launch.to_wire()),
        Decision::Refuse { .. } => None,
    };
    let asked = matches!(decision, Decision::Ask(_));
    let manual_input = matches!(&call, ToolCall::Shell { command, .. } if !nested_shell(command));
    let started = EventBody::ToolCallStarted(ToolCallStarted {
        call_id: call_id.clone(),
        tool: tool.to_owned(),
        input: input_value(freeform, input),
        freeform,
        manual_input,
        launch: launch.clone(),
    });
    recorder.record(turn_id, vec![started]).await.ok()?;

    match decision {
        Decision::Refuse { refusal } => {
            let output = format!("efr refused this call before it ran: {refusal}");
            let completed = completed(&call_id, CallStatus::Failed, output.clone(), Some(refusal));
            recorder.record(turn_id, vec![completed]).await.ok()?;
            return Some(CallOutput { output, is_error: true });
        }
        Decision::Ask(mut question) => {
            if question.expires_in_secs.is_some() {
                question.expires_in_secs = env.question_limit_secs.or(question.expires_in_secs);
            }
            match recorder.ask(turn_id, call_id.clone(), question).await.ok()? {
                ApprovalDecision::Allow | ApprovalDecision::AllowAlways => {}
                _ => {
                    let output = "the user denied this call (or did not answer in time); it did not run".to_owned();
                    let completed = completed(&call_id, CallStatus::Denied, output.clone(), None);
                    recorder.record(turn_id, vec![completed]).await.ok()?;
                    return Some(CallOutput { output, is_error: true });
                }
            }
        }
        Decision::Run { .. } => {}
    }

    match call {
        ToolCall::Shell { command, timeout } => {
            let grants = match &launch {
                Some(Launch::Contained { grants }) => Some(grants.as_slice()),
                _ => None,
            };
            let request = super::shell_call::ShellRequest {
                command: &command,
                timeout,
                grants,
                approved_by: crate::conversation::shell::approved_by(env.mode, grants.is_some(), asked),
            };
            run_shell(env, recorder, turn_id, &call_id, request, cancel).await
        }
        ToolCall::Patch { .. } => {
            let (plan, changes) = plan?;
            if let Some(Launch::Contained { grants }) = &launch
                && let Some(why) = sandbox_refusal(env, &plan, &changes, grants)
            {
                let output = format!("the patch did not apply, and no file changed: {why}");
                // efrd applies a patch itself, so it has no sandbox summary; it follows the sandbox's rules.
                let event = completed(&call_id, CallStatus::Failed, output.clone(), None);
                recorder.record(turn_id, vec![event]).await.ok()?;
                return Some(CallOutput { output, is_error: true });
            }
            // Written only where it was judged: a link swapped in since the decision fails the commit.
            let allowed: Vec<PathBuf> = touched(&changes).map(Path::to_path_buf).collect();
            let (event, output) = match plan.commit_within(&allowed) {
                Ok(results) => {
                    let (changes, diff) = changes_of(results, env);
                    let summary: Vec<String> = changes
                        .files
                        .iter()
                        .map(|f| format!("{} +{} -{}", f.path.display(), f.added, f.removed))
                        .collect();
                    let output = format!("the patch applied: {}", summary.join(", "));
                    let mut event = completed(&call_id, CallStatus::Ok, output.clone(), None);
                    if let EventBody::ToolCallCompleted(c) = &mut event {
                        c.changes = Some(changes);
                        c.diff = Some(diff);
                    }
                    (
                        event,
                        CallOutput {
                            output,
                            is_error: false,
                        },
                    )
                }
                Err(error) => {
                    let output = format!("the patch did not apply, and no file changed: {error}");
                    (
                        completed(&call_id, CallStatus::Failed, output.clone(), None),
                        CallOutput { output, is_error: true },
                    )
                }
            };
            recorder.record(turn_id, vec![event]).await.ok()?;
            Some(output)
        }
        ToolCall::Invalid { .. } => None,
    }
}

/// Parses and plans a patch in one step, with the error as text for the model.
trait AndThenPlan {
    fn and_then_plan(self, cwd: &Path) -> Result<Plan, String>;
}

impl AndThenPlan for Result<patch::Patch, patch::ParseError> {
    fn and_then_plan(self, cwd: &Path) -> Result<Plan, String> {
        let parsed = self.map_err(|e| e.to_string())?;
        Plan::new(&parsed, cwd).map_err(|e| format!("the patch cannot apply, and no file changed: {e}"))
    }
}

fn completed(call_id: &CallId, status: CallStatus, output: String, refusal: Option<String>) -> EventBody {
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

async fn finish_invalid(
    recorder: &Recorder,
    turn_id: TurnId,
    call_id: &CallId,
    tool: &str,
    freeform: bool,
    input: &str,
    message: String,
) -> Option<CallOutput> {
    let started = EventBody::ToolCallStarted(ToolCallStarted {
        call_id: call_id.clone(),
        tool: tool.to_owned(),
        input: input_value(freeform, input),
        freeform,
        manual_input: false,
        launch: None,
    });
    let done = completed(call_id, CallStatus::Failed, message.clone(), None);
    recorder.record(turn_id, vec![started, done]).await.ok()?;
    Some(CallOutput {
        output: message,
        is_error: true,
    })
}

/// Why a contained call's patch may not apply, if it may not: a path it writes (a move's old path too) that a
/// contained call could not write, or a file it reads (an update's, a deletion's or a move's old content, through
/// its links) that a contained call could not read, such as a stored key behind a link in the project: efrd reads
/// and writes as the user, so it keeps the sandbox's rules itself.
fn sandbox_refusal(
    env: &ToolEnv,
    plan: &Plan,
    changes: &[PatchChange],
    grants: &[efr_protocol::wire::Grant],
) -> Option<String> {
    // Resolved like the changes' paths (see `patch_paths`).
    let roots: Vec<PathBuf> = if env.snapshots.is_some() {
        resolved_roots(&env.roots)
    } else {
        Vec::new()
    };
    let scratch = resolved_roots(std::slice::from_ref(&env.scratch)).remove(0);
    // Only the mounts matter here: the shell, line and report are placeholders.
    let sandbox = contained::call_plan(&contained::CallPlan {
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
    });
    let unwritable = touched(changes).find(|path| !contained::writable_in(&sandbox, path));
    if let Some(path) = unwritable {
        return Some(format!(
            "{} is not writable in efr's sandbox (a contained call writes only in the project and $SCRATCH)",
            path.display()
        ));
    }
    plan.files()
        .iter()
        .filter_map(|file| match file.kind {
            FileChangeKind::Added => None,
            FileChangeKind::Renamed => file.from.as_ref(),
            _ => Some(&file.path),
        })
        .find_map(|source| {
            let real = crate::policy::paths::resolve(source).unwrap_or_else(|_| source.clone());
            (!contained::readable_in(&sandbox, &real)).then(|| {
                format!(
                    "{} leads to {}, which efr's sandbox hides from a contained call",
                    source.display(),
                    real.display()
                )
            })
        })
}
