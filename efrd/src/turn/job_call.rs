//! A shell call that starts a background job (docs/jobs.md): the same decision, question and exits as any shell
//! call, then, instead of typing the line into the hidden shell, efrd starts the job itself ([`crate::jobs`]) from
//! the hidden shell's folder and environment: a contained job as `efr-launcher --plan-file F` with the call's plan
//! (its proxy and bus plans stay open until the job ends), a direct one as the user's shell `-c LINE`. The call
//! answers at once with the job's id and output file; job_started belongs to the call's turn.

use efr_protocol::events::CallStatus;
use efr_protocol::ids::{CallId, TurnId};
use efr_protocol::wire::{Grant, JobWatch, Launch};

use super::call_snapshots::CallRoots;
use super::contained::ContainedEnd;
use super::env::{CallOutput, ToolEnv, completed};
use super::shell_prepare::{NotPrepared, prepare, shell_state};
use super::sink::Sink;
use crate::jobs::{EndExtras, EndHook, JobHead, JobSpec};
use crate::tools::spec::JobRequest;

/// A decided shell call that starts a job.
#[derive(Debug)]
pub struct JobCall<'a> {
    /// The command line.
    pub command: &'a str,
    /// The job's watch and limits.
    pub job: JobRequest,
    /// How it runs, as tool_call_started showed it.
    pub launch: Launch,
    /// Cautious's read-only sandbox.
    pub read_only: bool,
}

/// Starts the job and records the call's completion; returns what the model gets, or `None` when the sink is gone.
pub async fn start(
    env: &ToolEnv,
    sink: &Sink,
    (turn_id, call_id): (TurnId, &CallId),
    call: JobCall<'_>,
) -> Option<CallOutput> {
    let (status, output) = match start_job(env, sink, turn_id, call_id, call).await {
        Ok(text) => (CallStatus::Ok, text),
        Err(text) => (CallStatus::Failed, text),
    };
    let is_error = status != CallStatus::Ok;
    sink.record(turn_id, vec![completed(call_id, status, output.clone(), None)])
        .await
        .ok()?;
    Some(CallOutput { output, is_error })
}

async fn start_job(
    env: &ToolEnv,
    sink: &Sink,
    turn_id: TurnId,
    call_id: &CallId,
    call: JobCall<'_>,
) -> Result<String, String> {
    let Some(jobs) = env.jobs.clone() else {
        return Err("background jobs are not available here; run the command without `background`".to_owned());
    };
    let Some(job_sink) = sink.job_sink() else {
        return Err("background jobs are not available here; run the command without `background`".to_owned());
    };
    let shell = {
        let mut slot = env.shell.lock().await;
        match &call.launch {
            Launch::Contained { .. } if !call.read_only => slot.shell_for_contained().await,
            Launch::Contained { .. } => slot.shell().await,
            _ => slot.shell_for_direct().await,
        }
        .map_err(|e| format!("the job did not start: {e}"))?
        .clone()
    };
    let (argv, cwd, environment, on_end) = match &call.launch {
        Launch::Contained { grants } => {
            contained_argv(env, &shell, call_id, call.command, grants, call.read_only).await?
        }
        _ => {
            let id = format!("{:016x}", rand::random::<u64>());
            let state = shell_state(&shell, shell.work_dir(), &id).await.map_err(not_prepared)?;
            let argv = vec![state.program.into_os_string(), "-c".into(), call.command.into()];
            (argv, state.cwd, state.exported, None)
        }
    };
    let spec = JobSpec {
        head: JobHead {
            conversation_id: jobs.conversation_id,
            turn_id,
            call_id: call_id.clone(),
            command: call.command.to_owned(),
            launch: call.launch.clone(),
            max_minutes: call.job.max_minutes,
            forwards_through: matches!(call.launch, Launch::Contained { .. })
                .then(|| env.sandbox.options().launcher.clone()),
        },
        argv,
        cwd,
        env: environment,
        watch: call.job.watch.clone().map(|pattern| JobWatch {
            pattern,
            max_wakes: call.job.max_wakes,
        }),
        wake_turn: call.job.max_wakes > 0,
        in_woken_turn: jobs.in_woken_turn,
        on_end,
        full: efr_policy::effective_mode(env.mode, env.origin) == efr_protocol::wire::Mode::Full,
    };
    let info = jobs.registry.start(spec, job_sink).await.map_err(|e| e.to_string())?;
    let watch = match &info.watch {
        Some(w) => format!(
            "; a line matching `{}` tells you (at most {} wakes)",
            w.pattern, w.max_wakes
        ),
        None => String::new(),
    };
    Ok(format!(
        "[started background job {} (runs until it ends, {} minutes pass, or the user stops it); its output goes \
         to {}{watch}; its end tells you]",
        info.id,
        call.job.max_minutes,
        info.output.display()
    ))
}

/// The launcher's argv for a contained job, with the hook that reads its report and closes its plans at its end.
async fn contained_argv(
    env: &ToolEnv,
    shell: &crate::tools::shell::HiddenShell,
    call_id: &CallId,
    command: &str,
    grants: &[Grant],
    read_only: bool,
) -> Result<
    (
        Vec<std::ffi::OsString>,
        std::path::PathBuf,
        Vec<(String, String)>,
        Option<EndHook>,
    ),
    String,
> {
    let prepared = prepare(env, shell, call_id, command, grants, read_only)
        .await
        .map_err(not_prepared)?;
    let launcher = env.sandbox.options().launcher.clone();
    let argv = vec![
        launcher.into_os_string(),
        "--plan-file".into(),
        prepared.plan_file.clone().into_os_string(),
    ];
    let cwd = prepared.shell.cwd.clone().unwrap_or_else(|| env.cwd.clone());
    let path = prepared
        .shell
        .path_var
        .clone()
        .unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".to_owned());
    let hook_env = env.clone();
    // The project as the job found it, for its surface check at its end.
    let project = env.snapshots.as_ref().and_then(|_| env.roots.first().cloned());
    let before = match &project {
        Some(project) => Some(
            env.call_snapshots
                .before(CallRoots {
                    project: Some(project.clone()),
                    scratch: None,
                    home: None,
                })
                .await,
        ),
        None => None,
    };
    let hook: EndHook = Box::new(move || {
        Box::pin(async move {
            let (surface_changes, quarantined) = match (project, before) {
                (Some(project), Some(before)) => {
                    let (_, raw) = hook_env.call_snapshots.changes_and_raw(before).await;
                    super::surface::at_job_end(&project, raw, prepared.shell.clone()).await
                }
                _ => (Vec::new(), Vec::new()),
            };
            let _ = std::fs::remove_file(&prepared.plan_file);
            let ended = ContainedEnd::take(&prepared.report);
            let mut summary = efr_protocol::wire::SandboxSummary::default();
            if let Some(plan) = &prepared.proxy {
                let _ = super::call_network::close(&hook_env, plan, &mut summary).await;
            }
            if let Some(plan) = &prepared.bus {
                let _ = super::call_bus::close(&hook_env, plan, &mut summary).await;
            }
            EndExtras {
                exit_code: ended.exit_code,
                summary,
                surface_changes,
                quarantined,
            }
        })
    });
    Ok((argv, cwd, vec![("PATH".to_owned(), path)], Some(hook)))
}

fn not_prepared(why: NotPrepared) -> String {
    match why {
        NotPrepared::Unavailable(reason) => format!("the sandbox cannot run, so the job did not start: {reason}"),
        NotPrepared::Failed(why) => format!("the job did not start: {why}"),
    }
}
