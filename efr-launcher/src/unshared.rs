//! The outer stage of a read-only call contained by Landlock and seccomp alone, where bubblewrap cannot start
//! (docs/adr/0020-landlock-only-reads.md): no namespace and no mount, so nothing is needed that AppArmor's
//! restriction of user namespaces takes away.
//!
//! The outer stage makes a private scratch folder (`/tmp/efr-ro-XXXXXX`, mode 0700, the call's `TMPDIR`) and starts
//! the inner stage itself, with the plan's environment, in the plan's folder, killed if the launcher dies, in the
//! launcher's process group (an interrupt reaches the command as it reaches a direct one). The inner stage applies
//! the cover's Landlock rules ([`crate::cover`],
//! [`crate::ruleset::apply_unshared`]) and the seccomp filters without sockets
//! ([`crate::seccomp::unshared_filters`]), then execs the command. The report says `containment: landlock`. The
//! scratch folder is removed when the command ends.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use efr_protocol::internal::{Containment, LaunchPlan, LaunchReport, MountKind, SetupStage};
use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl};

use crate::cover::Unshared;
use crate::reporter::Reporter;
use crate::spec::{InnerSpec, InnerStatus};

type Failure = (SetupStage, String);

/// Runs `plan` (containment `landlock`) and returns the launcher's exit code, or why the call could not start.
///
/// # Errors
///
/// The stage and message of a setup error; the command did not run.
pub fn launch(plan: &LaunchPlan, reporter: &Reporter) -> Result<ExitCode, Failure> {
    let plan_err = |message: String| (SetupStage::Plan, message);
    let inner_err = |what: &str, err: &dyn std::fmt::Display| (SetupStage::Inner, format!("{what}: {err}"));
    let mounts = plan.mounts().map_err(|e| plan_err(e.to_string()))?;
    let exe = std::env::current_exe().map_err(|e| plan_err(format!("cannot find the launcher's own path: {e}")))?;
    let scratch =
        nix::unistd::mkdtemp("/tmp/efr-ro-XXXXXX").map_err(|e| inner_err("cannot make the scratch folder", &e))?;
    let _scratch = Scratch(scratch.clone());
    let mut spec = InnerSpec::from_plan(plan).map_err(|e| plan_err(e.to_string()))?;
    spec.writable = vec![scratch.clone()];
    spec.devices = Vec::new();
    spec.unshared = Some(Unshared {
        masks: mounts
            .iter()
            .filter(|mount| mount.kind == MountKind::Mask)
            .map(|mount| mount.path.clone())
            .collect(),
        read: plan.read_only_roots.clone(),
        scratch: scratch.clone(),
    });
    let spec = serde_json::to_vec(&spec).map_err(|e| plan_err(format!("cannot encode the inner spec: {e}")))?;

    let (spec_r, spec_w) = pipe().map_err(|e| inner_err("pipe", &e))?;
    let (inner_r, inner_w) = pipe().map_err(|e| inner_err("pipe", &e))?;
    let user_stderr = nix::unistd::dup(io::stderr()).map_err(|e| inner_err("dup stderr", &e))?;
    for fd in [&spec_r, &inner_w, &user_stderr] {
        fcntl(fd, FcntlArg::F_SETFD(FdFlag::empty())).map_err(|e| inner_err("fcntl", &e))?;
    }
    let mut command = Command::new(&exe);
    command
        .arg("inner")
        .arg("--spec-fd")
        .arg(spec_r.as_raw_fd().to_string())
        .arg("--status-fd")
        .arg(inner_w.as_raw_fd().to_string())
        .arg("--stderr-fd")
        .arg(user_stderr.as_raw_fd().to_string())
        .env_clear()
        .envs(&plan.env)
        .env("TMPDIR", &scratch)
        .current_dir(&plan.cwd);
    // SAFETY: prctl(PR_SET_PDEATHSIG) is async-signal-safe and touches no memory of the parent.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = command
        .spawn()
        .map_err(|e| inner_err(&format!("cannot start the inner stage {}", exe.display()), &e))?;
    drop((spec_r, inner_w, user_stderr));
    // The spec is small: it fits in the pipe's buffer.
    let _ = File::from(spec_w).write_all(&spec);
    let network = plan.network();
    let mut statuses = Vec::new();
    for line in BufReader::new(File::from(inner_r)).lines() {
        let Ok(line) = line else { break };
        let Ok(status) = serde_json::from_str::<InnerStatus>(&line) else {
            continue;
        };
        if let InnerStatus::Ready { landlock_abi, scoped } = &status {
            reporter.send(&LaunchReport::Sandboxed {
                landlock_abi: *landlock_abi,
                scoped: *scoped,
                seccomp: true,
                network,
                containment: Containment::Landlock,
            });
        }
        statuses.push(status);
    }
    let waited = child.wait().map_err(|e| inner_err("cannot wait for the command", &e))?;
    if let Some(InnerStatus::Refused { message }) = statuses.iter().find(|s| matches!(s, InnerStatus::Refused { .. })) {
        return Err((SetupStage::Inner, message.clone()));
    }
    let exit_code = waited
        .code()
        .or_else(|| waited.signal().map(|signal| 128 + signal))
        .unwrap_or(1);
    if !statuses.iter().any(|s| matches!(s, InnerStatus::Ready { .. })) {
        return Err((
            SetupStage::Inner,
            format!("the inner stage ended (exit code {exit_code}) before it confirmed the containment"),
        ));
    }
    let exec_error = statuses.into_iter().find_map(|s| match s {
        InnerStatus::ExecFailed { message } => Some(message),
        _ => None,
    });
    reporter.send(&LaunchReport::Exited { exit_code, exec_error });
    Ok(ExitCode::from(u8::try_from(exit_code).unwrap_or(u8::MAX)))
}

/// The call's scratch folder, removed with what the call left in it when the launch ends.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(Path::new(&self.0));
    }
}

fn pipe() -> nix::Result<(OwnedFd, OwnedFd)> {
    nix::unistd::pipe2(OFlag::O_CLOEXEC)
}
