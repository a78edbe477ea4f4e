//! Running one tool call of a turn: decide it ([`super::decide`]), record it, ask the user when the policy says so,
//! run it, and record `tool_call_started` … `tool_call_completed`.
//!
//! The order of events of a call: `tool_call_started` (with `launch` and `manual_input`), then, when the policy asks,
//! `approval_requested` and `approval_resolved`, then `tool_call_completed` (with `refusal` for a call the policy
//! refused, `status: denied` for one the user denied, `left_running` for a command that outlived its timeout, and
//! `changes` for a patch). A shell call runs in [`super::shell_call`] (direct, or contained: auto mode's calls, and
//! cautious's read-only ones in the read-only sandbox), a patch in
//! [`super::patch_call`].

use efr_policy::{Decision, LaunchKind};
use efr_protocol::events::{CallStatus, EventBody, ToolCallStarted};
use efr_protocol::ids::{CallId, TurnId};
use efr_protocol::wire::{ApprovalDecision, ExitKind, ExitRecord, Launch, Mode};
use serde_json::Value;

use super::decide::{CallWork, DecidedCall, decide_call};
use super::env::{CallOutput, ToolEnv, completed};
use super::exit_call;
use super::exits::{CallExits, ExitPlace, ExitVerdict, judge, union_needs, with_grants};
use super::patch_call::apply_patch;
use super::shell_call::{ShellRequest, execute, finish, run_shell};
use super::sink::Sink;
use crate::tools::shell::nested_shell;
use crate::tools::spec;

/// The input member of tool_call_started: the JSON the model wrote for a function tool, the text for a freeform one
/// (a JSON string with the raw input when a function tool's input is not JSON).
fn input_value(freeform: bool, input: &str) -> Value {
    if freeform {
        return Value::String(input.to_owned());
    }
    serde_json::from_str(input).unwrap_or_else(|_| Value::String(input.to_owned()))
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

/// Runs one call and records its events. Returns what the model gets, or `None` when the sink is gone.
/// `cancel` is the turn's interrupt: it stops a running shell command.
///
/// An auto call's exits (docs/adr/0016-exit-kinds.md) are found before it runs; `tool_call_started`'s `launch`
/// shows how it runs once they are approved (the base grants and the records' grants, or `unsandboxed`), then the
/// exits are judged ([`super::exits::judge`]) and a denied call completes `denied` with one line for the model.
pub async fn run_call(
    env: &ToolEnv,
    sink: &Sink,
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
    let DecidedCall { decision, work } = match decide_call(env, spec::read_call(tool, freeform, input)).await {
        Ok(decided) => decided,
        Err(message) => return finish_invalid(sink, turn_id, &call_id, model_call, message).await,
    };
    let kind = match &decision {
        Decision::Run { launch } => Some(*launch),
        Decision::Ask(question) => Some(question.launch),
        Decision::Refuse { .. } => None,
    };
    let full = efr_policy::effective_mode(env.mode, env.origin) == Mode::Full;
    let (exits, full_exits): (Vec<ExitRecord>, Vec<ExitRecord>) = match kind {
        Some(LaunchKind::Contained) => (found_exits(env, &work).await, Vec::new()),
        // Full mode runs every call as the user, but a floor file's edit still goes to the user alone, copied
        // before the write and undoable (docs/modes.md, "Full"); its other exits run, recorded as full's.
        Some(LaunchKind::Direct) if full => found_exits(env, &work)
            .await
            .into_iter()
            .partition(|record| record.kind == ExitKind::FloorEdit),
        _ => (Vec::new(), Vec::new()),
    };
    let launch = launch_of(env, kind, &work, &exits);
    let manual_input = matches!(&work, CallWork::Shell { command, job: None, .. } if !nested_shell(command));
    let started = EventBody::ToolCallStarted(ToolCallStarted {
        call_id: call_id.clone(),
        tool: tool.to_owned(),
        input: input_value(freeform, input),
        freeform,
        manual_input,
        launch: launch.clone(),
    });
    sink.record(turn_id, vec![started]).await.ok()?;

    let mut asked = matches!(decision, Decision::Ask(_));
    match decision {
        Decision::Refuse { refusal } => {
            let output = format!("efr refused this call before it ran: {refusal}");
            let completed = completed(&call_id, CallStatus::Failed, output.clone(), Some(refusal));
            sink.record(turn_id, vec![completed]).await.ok()?;
            return Some(CallOutput { output, is_error: true });
        }
        Decision::Ask(mut question) => {
            if question.expires_in_secs.is_some() {
                question.expires_in_secs = env.question_limit_secs.or(question.expires_in_secs);
            }
            let guarded = full && question.expires_in_secs.is_some();
            let answer = sink.ask(turn_id, call_id.clone(), question).await.ok()?;
            match answer.decision() {
                ApprovalDecision::Allow | ApprovalDecision::AllowAlways => {}
                _ => {
                    if guarded && matches!(answer, super::sink::Answer::Expired { .. }) {
                        super::full_exits::expired(env, sink, (turn_id, &call_id)).await?;
                    }
                    let output = "the user denied this call (or did not answer in time); it did not run".to_owned();
                    return denied(sink, turn_id, &call_id, output).await;
                }
            }
        }
        Decision::Run { .. } => {}
    }
    let words = call_words(env, &work);
    // Deletes in real caches alone run with their grants and no judge; they are measured instead.
    let caches = super::cache_deletes::before(&exits).await;
    if !exits.is_empty() && caches.is_none() {
        let call = CallExits {
            turn_id,
            call_id: &call_id,
            summary: &words,
            interactive: matches!(&work, CallWork::Shell { analysis, .. } if analysis.interactive),
        };
        match judge(env, sink, call, exits.clone()).await? {
            ExitVerdict::Run { by_user, .. } => asked |= by_user,
            ExitVerdict::Denied { line } => {
                env.exits.note_call(words);
                return denied(sink, turn_id, &call_id, line).await;
            }
        }
    }
    if !full_exits.is_empty() {
        super::full_exits::let_run(env, sink, (turn_id, &call_id), &full_exits).await?;
    }
    env.exits.note_call(words);
    let read_only = kind == Some(LaunchKind::ContainedReadOnly);
    let how = How {
        launch: launch.as_ref(),
        read_only,
        asked,
        exits: &exits,
    };
    // An approved floor file is copied before the write, or the call does not run (docs/auto.md, "Floor files").
    let backed = match super::home_files::before(env, turn_id, &exits).await {
        Ok(backed) => backed,
        Err(line) => {
            let completed = completed(&call_id, CallStatus::Failed, line.clone(), None);
            sink.record(turn_id, vec![completed]).await.ok()?;
            return Some(CallOutput {
                output: line,
                is_error: true,
            });
        }
    };
    let output = run_work(env, sink, (turn_id, &call_id), work, how, cancel).await;
    super::home_files::after(sink, turn_id, &call_id, backed).await?;
    if let Some(caches) = caches {
        super::cache_deletes::after(sink, turn_id, &call_id, caches).await?;
    }
    output
}

/// How a decided call runs.
#[derive(Debug, Clone, Copy)]
struct How<'a> {
    /// tool_call_started's launch.
    launch: Option<&'a Launch>,
    /// Cautious's read-only sandbox.
    read_only: bool,
    /// The user allowed it at a question.
    asked: bool,
    /// Its exits found before it ran (judged and approved).
    exits: &'a [ExitRecord],
}

/// Runs a decided call's work.
async fn run_work(
    env: &ToolEnv,
    sink: &Sink,
    (turn_id, call_id): (TurnId, &CallId),
    work: CallWork,
    how: How<'_>,
    cancel: &tokio_util::sync::CancellationToken,
) -> Option<CallOutput> {
    let How {
        launch,
        read_only,
        asked,
        exits,
    } = how;
    let grants = match launch {
        Some(Launch::Contained { grants }) => Some(grants.as_slice()),
        _ => None,
    };
    let unsandboxed = matches!(launch, Some(Launch::Unsandboxed));
    match work {
        CallWork::Shell {
            command,
            job: Some(job),
            ..
        } => {
            let call = super::job_call::JobCall {
                command: &command,
                job,
                launch: launch.cloned().unwrap_or(Launch::Direct),
                read_only,
            };
            super::job_call::start(env, sink, (turn_id, call_id), call).await
        }
        CallWork::Shell { command, timeout, .. } => {
            let approved_by = if unsandboxed {
                Some(exit_call::approved_by(asked))
            } else {
                efr_policy::approved_by(env.mode, grants.is_some(), asked)
            };
            let request = ShellRequest {
                command: &command,
                timeout,
                grants,
                read_only,
                approved_by,
            };
            if unsandboxed {
                let mut executed = execute(env, sink, turn_id, call_id, request, cancel).await?;
                super::survivors::after_unsandboxed(env, &mut executed).await;
                finish(env, sink, turn_id, executed).await
            } else if grants.is_some() && !read_only {
                exit_call::run_contained_shell(env, sink, (turn_id, call_id), request, exits, cancel).await
            } else {
                run_shell(env, sink, turn_id, call_id, request, cancel).await
            }
        }
        CallWork::Patch { plan, changes, .. } => apply_patch(env, sink, turn_id, call_id, plan, &changes, grants).await,
    }
}

/// Records a call that the user or a judge denied: `tool_call_completed` with `status: denied` and `output`.
async fn denied(sink: &Sink, turn_id: TurnId, call_id: &CallId, output: String) -> Option<CallOutput> {
    let completed = completed(call_id, CallStatus::Denied, output.clone(), None);
    sink.record(turn_id, vec![completed]).await.ok()?;
    Some(CallOutput { output, is_error: true })
}

/// The exits of an auto contained call, found before it runs: its line's (with the git code its outside commands
/// run, [`super::exit_git`]) or its patch's.
async fn found_exits(env: &ToolEnv, work: &CallWork) -> Vec<ExitRecord> {
    let place = ExitPlace::of(env);
    match work {
        CallWork::Shell {
            command, analysis, job, ..
        } => {
            let mut records = exit_call::line_exits(env, &place, command, analysis);
            if let Some(job) = job {
                // The judges see that the call starts a job, and for how long (spec: the exit action's members).
                for record in &mut records {
                    record.action.background = true;
                    record.action.watch = job.watch.is_some();
                    record.action.wake_turn = job.max_wakes > 0;
                    record.action.max_minutes = Some(job.max_minutes);
                }
            }
            let base: Vec<_> = env.network.grants().into_iter().chain(env.bus.grants()).collect();
            super::exits::drop_covered(&mut records, &base);
            super::exit_git::drop_ungrantable(env, &mut records);
            super::exit_git::add_git_code(env, analysis, &mut records).await;
            records
        }
        CallWork::Patch { changes, text, .. } => exit_call::patch_exits(&place, changes, text),
    }
}

/// tool_call_started's `launch`: the decision's; for auto's contained shell call, with the host grants of
/// `[network] allow` (through efr-proxy) and the session bus's filter grant; with exits, the records' grants added,
/// or `unsandboxed` when a record needs it.
fn launch_of(env: &ToolEnv, kind: Option<LaunchKind>, work: &CallWork, exits: &[ExitRecord]) -> Option<Launch> {
    let mut launch = kind.map(LaunchKind::to_wire);
    if kind == Some(LaunchKind::Contained)
        && matches!(work, CallWork::Shell { .. })
        && let Some(Launch::Contained { grants }) = launch.as_mut()
    {
        grants.extend(env.network.grants());
        grants.extend(env.bus.grants());
    }
    if exits.is_empty() {
        return launch;
    }
    let needs = union_needs(exits);
    if needs.unsandboxed {
        return Some(Launch::Unsandboxed);
    }
    if let Some(Launch::Contained { grants }) = launch.as_mut() {
        *grants = with_grants(grants, &needs);
    }
    launch
}

/// A call in a few words, for a question and for the judges' recent calls: a shell call's line, a patch's files.
fn call_words(env: &ToolEnv, work: &CallWork) -> String {
    match work {
        CallWork::Shell { command, .. } => efr_policy::decide::shell_summary(command),
        CallWork::Patch { changes, .. } => {
            let shown = |p: &std::path::Path| efr_policy::paths::display(p, &env.roots, env.home.as_deref());
            let files: Vec<String> = changes.iter().take(3).map(|c| shown(&c.path)).collect();
            let more = changes.len().saturating_sub(3);
            let mut words = format!("apply_patch {}", files.join(", "));
            if more > 0 {
                words.push_str(&format!(" and {more} more"));
            }
            words
        }
    }
}

/// Records a call that cannot run (an unknown tool, an input that does not parse, a patch that cannot apply): its
/// start and its failure with `message`, which the model gets.
async fn finish_invalid(
    sink: &Sink,
    turn_id: TurnId,
    call_id: &CallId,
    call: ModelCall<'_>,
    message: String,
) -> Option<CallOutput> {
    let started = EventBody::ToolCallStarted(ToolCallStarted {
        call_id: call_id.clone(),
        tool: call.tool.to_owned(),
        input: input_value(call.freeform, call.input),
        freeform: call.freeform,
        manual_input: false,
        launch: None,
    });
    let done = completed(call_id, CallStatus::Failed, message.clone(), None);
    sink.record(turn_id, vec![started, done]).await.ok()?;
    Some(CallOutput {
        output: message,
        is_error: true,
    })
}
