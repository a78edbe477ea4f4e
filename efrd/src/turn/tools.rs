//! Running one tool call of a turn: read it, ask the policy, ask the user when the policy says so, run it, and record
//! `tool_call_started` … `tool_call_completed`.
//!
//! The order of events of a call: `tool_call_started` (with `launch` and `manual_input`), then, when the policy asks,
//! `approval_requested` and `approval_resolved`, then `tool_call_completed` (with `refusal` for a call the policy
//! refused, `status: denied` for one the user denied, `left_running` for a command that outlived its timeout, and
//! `changes` for a patch). A command left running also records `shell_command_detached` now and
//! `shell_command_ended` when it ends; both belong to the conversation, not to the turn.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use efr_protocol::events::{
    CallStatus, EventBody, ShellCommandDetached, ShellCommandEnded, ShellCommandInputChanged, ToolCallCompleted,
    ToolCallInputChanged, ToolCallStarted,
};
use efr_protocol::ids::{CallId, Timestamp, TurnId};
use efr_protocol::wire::{ApprovalDecision, FileChangeKind, FileChanges, InputWait as WireInputWait, Mode, Origin};
use serde_json::Value;
use tokio::sync::Mutex;

use crate::conversation::Recorder;
use crate::policy::{self, Call, ChangeKind, Decision, PatchCall, PatchChange, PolicyContext, ShellCall};
use crate::snapshot::SnapshotStore;
use crate::tools::changes::{Change, DisplayRoots, IgnoreRules, TOOL_CALL_DIFF_LINES, file_changes, unified_diff};
use crate::tools::patch::{self, Plan};
use crate::tools::shell::{How, InputKind, OutputLimits, ShellSlot, nested_shell};
use crate::tools::spec::{self, ToolCall};

/// What a turn's tool calls share: the conversation's hidden shell, where the project is, and the turn's mode.
#[derive(Debug, Clone)]
pub struct ToolEnv {
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
    /// (no working directory), which gets no turn `changes`.
    pub snapshots: Option<Arc<SnapshotStore>>,
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

/// What the policy judges of one file of a planned patch: a move is judged at its old path, with its new one.
fn patch_change(result: &patch::FileResult) -> PatchChange {
    match (result.kind, &result.from) {
        (FileChangeKind::Added, _) => PatchChange {
            path: result.path.clone(),
            kind: ChangeKind::Add,
        },
        (FileChangeKind::Deleted, _) => PatchChange {
            path: result.path.clone(),
            kind: ChangeKind::Delete,
        },
        (FileChangeKind::Renamed, Some(from)) => PatchChange {
            path: from.clone(),
            kind: ChangeKind::Move {
                to: result.path.clone(),
            },
        },
        _ => PatchChange {
            path: result.path.clone(),
            kind: ChangeKind::Update,
        },
    }
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

/// The wire form of a wait's kind.
fn wire_wait(kind: InputKind) -> WireInputWait {
    match kind {
        InputKind::None => WireInputWait::None,
        InputKind::Visible => WireInputWait::Visible,
        InputKind::Hidden => WireInputWait::Hidden,
    }
}

/// Runs one call and records its events. Returns what the model gets, or `None` when the recorder is gone.
pub async fn run_call(
    env: &ToolEnv,
    recorder: &Recorder,
    turn_id: TurnId,
    call_id: &str,
    tool: &str,
    freeform: bool,
    input: &str,
) -> Option<CallOutput> {
    let call_id = CallId(call_id.to_owned());
    let call = spec::read_call(tool, freeform, input);
    let mut ctx = PolicyContext::new(env.roots.clone(), env.origin);
    ctx.home = std::env::var_os("HOME").map(PathBuf::from);
    // A patch is planned before the decision: the policy judges the paths it really touches.
    let (decision, plan) = match &call {
        ToolCall::Shell { command, .. } => {
            let shell = Call::Shell(ShellCall {
                command: command.clone(),
                cwd: env.cwd.clone(),
            });
            (Some(policy::decide(&shell, env.mode, &ctx)), None)
        }
        ToolCall::Patch { text } => match patch::parse(text).and_then_plan(&env.cwd) {
            Ok(plan) => {
                let changes = plan.files().iter().map(patch_change).collect();
                (
                    Some(policy::decide(&Call::Patch(PatchCall { changes }), env.mode, &ctx)),
                    Some(plan),
                )
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
    let manual_input = matches!(&call, ToolCall::Shell { command, .. } if !nested_shell(command));
    let started = EventBody::ToolCallStarted(ToolCallStarted {
        call_id: call_id.clone(),
        tool: tool.to_owned(),
        input: input_value(freeform, input),
        freeform,
        manual_input,
        launch,
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
        ToolCall::Shell { command, timeout } => run_shell(env, recorder, turn_id, &call_id, &command, timeout).await,
        ToolCall::Patch { .. } => {
            let plan = plan?;
            let (event, output) = match plan.commit() {
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

async fn run_shell(
    env: &ToolEnv,
    recorder: &Recorder,
    turn_id: TurnId,
    call_id: &CallId,
    command: &str,
    timeout: std::time::Duration,
) -> Option<CallOutput> {
    let run = {
        let mut slot = env.shell.lock().await;
        match slot.shell().await {
            Ok(shell) => shell.run(command, timeout).await,
            Err(error) => Err(error),
        }
    };
    let run = match run {
        Ok(run) => run,
        Err(error) => {
            let output = format!("the command did not run: {error}");
            recorder
                .record(
                    turn_id,
                    vec![completed(call_id, CallStatus::Failed, output.clone(), None)],
                )
                .await
                .ok()?;
            return Some(CallOutput { output, is_error: true });
        }
    };
    // While the command runs, each change of its wait for input is recorded (tool_call_input_changed).
    let mut waits = run.input();
    let answer = run.answer();
    tokio::pin!(answer);
    let answer = loop {
        tokio::select! {
            answer = &mut answer => break answer,
            changed = waits.changed() => {
                if changed.is_err() {
                    break answer.await;
                }
                let wait = waits.borrow_and_update().clone();
                let body = EventBody::ToolCallInputChanged(ToolCallInputChanged {
                    call_id: call_id.clone(),
                    input: wire_wait(wait.kind),
                    looks_secret: wait.looks_secret,
                });
                recorder.record(turn_id, vec![body]).await.ok()?;
            }
        }
    };
    let for_model = answer.output.for_model(OutputLimits::MODEL);
    let left_running = answer.left_running();
    let ok = answer.exit_code == Some(0) || left_running;
    let mut model_text = for_model;
    if let Some(code) = answer.exit_code.filter(|c| *c != 0) {
        model_text.push_str(&format!("\n[exit status {code}]"));
    }
    if left_running {
        model_text.push_str(&format!(
            "\n[the command still runs after {} s; the shell takes no other command until it ends]",
            timeout.as_secs()
        ));
    }
    let mut bodies = vec![EventBody::ToolCallCompleted(ToolCallCompleted {
        call_id: call_id.clone(),
        status: if ok { CallStatus::Ok } else { CallStatus::Failed },
        output: answer.output.for_client(),
        exit_code: answer.exit_code,
        refusal: None,
        left_running,
        changes: None,
        diff: None,
        sandbox: None,
    })];
    // The completion belongs to the turn; the detached command belongs to the conversation (spec).
    recorder.record(turn_id, std::mem::take(&mut bodies)).await.ok()?;
    if let Some(detached) = answer.detached {
        let mut waits = detached.input();
        let wait = waits.borrow_and_update().clone();
        bodies.push(EventBody::ShellCommandDetached(ShellCommandDetached {
            call_id: call_id.clone(),
            command: command.chars().take(200).collect(),
            since: Timestamp::now(),
            contained: false,
            input: wire_wait(wait.kind),
            looks_secret: wait.looks_secret,
            prompt: wait.prompt,
            approved_by: None,
        }));
        // Recorded before its end can be: shell_command_ended always comes after shell_command_detached.
        recorder.record_outside_turn(std::mem::take(&mut bodies)).await.ok()?;
        let recorder = recorder.clone();
        let call_id = call_id.clone();
        tokio::spawn(async move {
            let end = detached.ended();
            tokio::pin!(end);
            // Each change of the left-running command's wait for input is recorded until it ends.
            let end = loop {
                tokio::select! {
                    end = &mut end => break end,
                    changed = waits.changed() => {
                        if changed.is_err() {
                            break end.await;
                        }
                        let wait = waits.borrow_and_update().clone();
                        let body = EventBody::ShellCommandInputChanged(ShellCommandInputChanged {
                            call_id: call_id.clone(),
                            input: wire_wait(wait.kind),
                            contained: false,
                            looks_secret: wait.looks_secret,
                            prompt: wait.prompt,
                        });
                        let _ = recorder.record_outside_turn(vec![body]).await;
                    }
                }
            };
            let how = match end.how {
                How::Ended => efr_protocol::wire::How::Ended,
                How::Stopped => efr_protocol::wire::How::Stopped,
                How::Limit => efr_protocol::wire::How::Limit,
                How::Closed => efr_protocol::wire::How::Closed,
                How::ShellExited => efr_protocol::wire::How::ShellExited,
            };
            let ended = EventBody::ShellCommandEnded(ShellCommandEnded {
                call_id,
                how,
                exit_code: end.exit_code,
            });
            let _ = recorder.record_outside_turn(vec![ended]).await;
        });
    }
    Some(CallOutput {
        output: model_text,
        is_error: !ok,
    })
}
