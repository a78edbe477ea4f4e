//! A contained shell call made ready to type (docs/adr/0004-contained-calls.md): the sandbox's probe, the hidden
//! shell's working directory and exported environment (a short `env -0` run), the launch plan with the call's
//! `efr-proxy` and `efr-bus-proxy` plans ([`super::call_network`], [`super::call_bus`]), written to a one-time file
//! in the shell's private folder; and the plans closed when the command does not run.

use std::path::PathBuf;
use std::time::Duration;

use efr_protocol::ids::CallId;
use efr_protocol::internal::Containment;
use efr_protocol::wire::Grant;

use super::contained::{self, CallPlan};
use super::env::ToolEnv;
use super::{call_bus, call_network};
use crate::bus::{BusPlan, BusSupervisor};
use crate::network::{ProxyPlan, ProxySupervisor};
use crate::sandbox::git_link::{self, GitLink};
use crate::tools::shell::{HiddenShell, OutputLimits};

/// How long the `env -0` run before a contained call may take.
const PREPARE_TIMEOUT: Duration = Duration::from_secs(10);

/// A contained call made ready to type: the launcher's line and its report file.
pub(super) struct Prepared {
    pub(super) line: String,
    pub(super) report: PathBuf,
    pub(super) plan_file: PathBuf,
    /// The project roots' `.git` links when the plan was made: put back after the call if it changed them.
    pub(super) git_links: Vec<GitLink>,
    /// The call's open `efr-proxy` plan, when its grants hold a `host` grant and the proxy took the plan.
    pub(super) proxy: Option<ProxyPlan>,
    /// Why the call runs without the network its grants asked for (the proxy could not take its plan).
    pub(super) network_note: Option<String>,
    /// The call's open `efr-bus-proxy` plan, when its grants hold a `bus_filter` grant and the proxy took the plan.
    pub(super) bus: Option<BusPlan>,
    /// Why the call runs without the bus its grants asked for.
    pub(super) bus_note: Option<String>,
    /// The shell's PATH and working folder, for the call's surface changes ([`super::surface`]).
    pub(super) shell: super::surface::CallShell,
}

impl Prepared {
    /// Closes the call's proxy and bus plans without reading them (the command did not run, or its end has no
    /// event to report to any more), so that their sockets go.
    pub(super) async fn close_plans(&self, proxy: &ProxySupervisor, bus: &BusSupervisor) {
        if let Some(plan) = &self.proxy
            && let Err(error) = proxy.close(plan).await
        {
            tracing::debug!(%error, "a call's proxy plan did not close cleanly");
        }
        if let Some(plan) = &self.bus
            && let Err(error) = bus.close(plan).await
        {
            tracing::debug!(%error, "a call's bus plan did not close cleanly");
        }
    }
}

/// Why a contained call could not be made ready; the command did not run.
pub(super) enum NotPrepared {
    /// The sandbox cannot run (the probe says why): `sandbox_unavailable` is recorded for the call.
    Unavailable(String),
    /// Anything else (the shell is busy or gone, a file could not be written).
    Failed(String),
}

/// Makes a contained call ready: the sandbox's probe, the shell's cwd and environment, the plan file; `read_only`
/// for cautious's read-only sandbox.
pub(super) async fn prepare(
    env: &ToolEnv,
    shell: &HiddenShell,
    call_id: &CallId,
    line: &str,
    grants: &[Grant],
    read_only: bool,
) -> Result<Prepared, NotPrepared> {
    let probe = env.sandbox.current().await;
    let (bwrap, containment) = match (&probe.paths.bwrap, probe.status.available) {
        (Some(bwrap), true) => (bwrap.clone(), Containment::Bubblewrap),
        // A read-only call where bubblewrap cannot start: Landlock and seccomp alone, which need no bubblewrap
        // (the plan names one all the same).
        (bwrap, false) if read_only && probe.landlock_only => (
            bwrap.clone().unwrap_or_else(|| PathBuf::from("/usr/bin/bwrap")),
            Containment::Landlock,
        ),
        _ => {
            let reason = probe
                .status
                .reason
                .clone()
                .unwrap_or_else(|| "the sandbox probe failed and said no more".to_owned());
            return Err(NotPrepared::Unavailable(reason));
        }
    };
    let work = shell.work_dir().to_path_buf();
    let id = format!("{:016x}", rand::random::<u64>());
    let ShellState { exported, cwd, program } = shell_state(shell, &work, &id).await?;
    let report = work.join(format!("report-{id}"));
    let plan_file = work.join(format!("plan-{id}.json"));
    let project_roots: Vec<PathBuf> = if env.snapshots.is_some() {
        env.roots.clone()
    } else {
        Vec::new()
    };
    // Read with the plan, which protects the links' targets as they are now.
    let git_links = git_link::git_links(&project_roots);
    let mut plan = contained::call_plan(&CallPlan {
        layout: &env.layout,
        bwrap: &bwrap,
        shell: &program,
        line,
        cwd: &cwd,
        env: &exported,
        project_roots: &project_roots,
        scratch: &env.scratch,
        grants,
        report: &report,
        read_only,
        desktop: env.desktop.as_ref(),
    });
    probe.fit(&mut plan);
    plan.containment = containment;
    let (proxy, network_note) = call_network::open(env, call_id, &mut plan).await;
    let (bus, bus_note) = call_bus::open(env, call_id, &mut plan).await;
    let written = serde_json::to_vec(&plan)
        .map_err(|e| format!("cannot encode the launch plan: {e}"))
        .and_then(|bytes| {
            contained::write_private(&plan_file, &bytes)
                .map_err(|e| format!("cannot write the launch plan {}: {e}", plan_file.display()))
        });
    let shell_facts = super::surface::CallShell {
        path_var: exported
            .iter()
            .find(|(name, _)| name == "PATH")
            .map(|(_, value)| value.clone()),
        cwd: Some(cwd.clone()),
    };
    let prepared = Prepared {
        shell: shell_facts,
        line: contained::launcher_line(&env.sandbox.options().launcher, &plan_file),
        report,
        plan_file,
        git_links,
        proxy,
        network_note,
        bus,
        bus_note,
    };
    if let Err(why) = written {
        prepared.close_plans(&env.network.proxy, &env.bus.proxy).await;
        return Err(NotPrepared::Failed(why));
    }
    Ok(prepared)
}

/// What a contained call starts from: the hidden shell's exported environment, working directory and program.
pub(super) struct ShellState {
    pub(super) exported: Vec<(String, String)>,
    pub(super) cwd: PathBuf,
    pub(super) program: PathBuf,
}

/// Asks the hidden shell for its exported environment and working directory now (a short `env -0` run), so `cd`
/// and `export` of earlier calls carry over.
pub(super) async fn shell_state(
    shell: &HiddenShell,
    work: &std::path::Path,
    id: &str,
) -> Result<ShellState, NotPrepared> {
    let failed = NotPrepared::Failed;
    let env_file = work.join(format!("env-{id}"));
    let run = shell
        .run(&contained::env_line(&env_file), PREPARE_TIMEOUT)
        .await
        .map_err(|e| failed(e.to_string()))?;
    let answer = run.answer().await;
    let exported = std::fs::read(&env_file);
    let _ = std::fs::remove_file(&env_file);
    if answer.left_running() {
        let _ = shell.interrupt().await;
        return Err(failed(
            "the hidden shell did not report its environment in time".to_owned(),
        ));
    }
    let exported = match (answer.exit_code, exported) {
        (Some(0), Ok(bytes)) => contained::parse_env(&bytes),
        (code, _) => {
            return Err(failed(format!(
                "the hidden shell could not report its environment (`env -0` ended with {code:?}): {}",
                answer.output.for_model(OutputLimits::MODEL)
            )));
        }
    };
    let cwd = answer
        .cwd
        .ok_or_else(|| failed("the hidden shell's working directory is not known".to_owned()))?;
    let program = std::fs::read_link(format!("/proc/{}/exe", shell.pid()))
        .map_err(|e| failed(format!("cannot find the hidden shell's program: {e}")))?;
    Ok(ShellState { exported, cwd, program })
}

#[cfg(test)]
mod tests {
    use efr_protocol::wire::Mode;

    use super::*;
    use crate::turn::testing::tool_env;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_sandbox_that_cannot_run_is_unavailable_and_the_shell_runs_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let env = tool_env(dir.path(), "/nonexistent/bwrap", Mode::Auto);
        let shell = env.shell.lock().await.shell().await.unwrap().clone();
        let marker = dir.path().join("home/ran");
        let line = format!("touch {}", marker.display());
        match prepare(&env, &shell, &CallId("c1".into()), &line, &[], false).await {
            Err(NotPrepared::Unavailable(reason)) => {
                assert_eq!(reason, "bubblewrap is not installed at /nonexistent/bwrap");
            }
            Err(NotPrepared::Failed(why)) => panic!("expected unavailable, got {why}"),
            Ok(prepared) => panic!("expected unavailable, got {}", prepared.line),
        }
        assert!(!marker.exists());
        let status = shell.status().await.unwrap();
        assert_eq!(status.busy, None);
        // No one-time file is left in the shell's folder.
        let left: Vec<_> = std::fs::read_dir(shell.work_dir())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with("plan-") || name.starts_with("env-") || name.starts_with("report-"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
        shell.close().await;
    }
}
