//! The outer stage: reads and checks the plan, runs bubblewrap around the inner stage, and reports the outcome.
//!
//! Descriptors bubblewrap gets (each a pipe; the launcher's own ends are close-on-exec):
//!
//! | to | what |
//! |---|---|
//! | bubblewrap `--args` | the options of [`crate::bwrap::bwrap_args`], NUL-separated (the environment never shows in a command line) |
//! | bubblewrap `--json-status-fd` | its JSON status: `child-pid`, then `exit-code` once the command ended |
//! | bubblewrap's stderr | its own messages, such as `bwrap: Can't find source path /x: No such file or directory` |
//! | inner `--spec-fd` | the [`InnerSpec`] |
//! | inner `--status-fd` | [`InnerStatus`] lines; closes when the command execs |
//! | inner `--stderr-fd` | a copy of the user's stderr, which the inner stage puts back on fd 2 for the command |
//! | inner `--bridge-fd` | with a proxy: one end of a socket pair, on which the inner stage sends the bridge's listener ([`crate::bridge`]) |
//!
//! The outcome: `exit-code` in bubblewrap's status and `ready` from the inner stage → `exited` with the command's
//! code; `refused` from the inner stage → `setup_error` (stage `inner`); no `exit-code` → `setup_error` (stage
//! `bwrap`) with bubblewrap's own message. See [`efr_protocol::internal::report`] for the lines and exit codes.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::thread;

use efr_protocol::internal::{Containment, LaunchPlan, LaunchReport, MountKind, SETUP_ERROR_EXIT, SetupStage};
use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl};

use crate::bridge::{self, Bridge};
use crate::bwrap::{HostFacts, bwrap_args, encode_args};
use crate::reporter::{self, Reporter};
use crate::spec::{InnerSpec, InnerStatus};
use crate::watch::{Watched, watch};

/// Where the plan comes from.
#[derive(Debug, Clone)]
pub enum PlanSource {
    /// An inherited descriptor, read to its end.
    Fd(RawFd),
    /// A one-time file: read, then removed.
    File(PathBuf),
}

/// Runs one launch and returns the launcher's exit code.
pub fn run(source: &PlanSource) -> ExitCode {
    let early = Reporter::stderr();
    let plan = match read_plan(source) {
        Ok(plan) => plan,
        Err(message) => return setup_error(&early, SetupStage::Plan, &message),
    };
    let reporter = match Reporter::open(&plan.report) {
        Ok(reporter) => reporter,
        Err(err) => {
            return setup_error(
                &early,
                SetupStage::Plan,
                &format!("cannot open the report channel: {err}"),
            );
        }
    };
    match reporter::self_start() {
        Ok((launcher_pid, launcher_start)) => reporter.send(&LaunchReport::Launched {
            launcher_pid,
            launcher_start,
        }),
        Err(err) => {
            return setup_error(
                &reporter,
                SetupStage::Plan,
                &format!("cannot read /proc/self/stat: {err}"),
            );
        }
    }
    // Checked once the report channel is open, so a plan that breaks a rule is reported where efrd looks.
    if let Err(err) = plan.validate() {
        return setup_error(&reporter, SetupStage::Plan, &err.to_string());
    }
    let launched = if plan.containment == Containment::Landlock {
        crate::unshared::launch(&plan, &reporter)
    } else {
        launch(&plan, &reporter)
    };
    match launched {
        Ok(code) => code,
        Err((stage, message)) => setup_error(&reporter, stage, &message),
    }
}

fn read_plan(source: &PlanSource) -> Result<LaunchPlan, String> {
    let mut text = String::new();
    match source {
        PlanSource::Fd(fd) => {
            // SAFETY: F_GETFD only reads the flags; it fails with EBADF when the descriptor is not open.
            if *fd < 3 || unsafe { libc::fcntl(*fd, libc::F_GETFD) } == -1 {
                return Err(format!("the plan fd {fd} is not open"));
            }
            // SAFETY: `--plan-fd` hands this descriptor to the launcher for the plan alone, and it is open.
            let mut file = File::from(unsafe { OwnedFd::from_raw_fd(*fd) });
            file.read_to_string(&mut text)
                .map_err(|e| format!("cannot read the plan from fd {fd}: {e}"))?;
        }
        PlanSource::File(path) => {
            text =
                std::fs::read_to_string(path).map_err(|e| format!("cannot read the plan {}: {e}", path.display()))?;
            std::fs::remove_file(path)
                .map_err(|e| format!("cannot remove the one-time plan {}: {e}", path.display()))?;
        }
    }
    serde_json::from_str(&text).map_err(|e| format!("the plan does not parse: {e}"))
}

type Failure = (SetupStage, String);

fn launch(plan: &LaunchPlan, reporter: &Reporter) -> Result<ExitCode, Failure> {
    let plan_err = |message: String| (SetupStage::Plan, message);
    let host = HostFacts::read(plan).map_err(|e| plan_err(e.to_string()))?;
    let exe = std::env::current_exe().map_err(|e| plan_err(format!("cannot find the launcher's own path: {e}")))?;
    check_visible(plan, &exe).map_err(plan_err)?;
    let spec = InnerSpec::from_plan(plan).map_err(|e| plan_err(e.to_string()))?;
    let spec = serde_json::to_vec(&spec).map_err(|e| plan_err(format!("cannot encode the inner spec: {e}")))?;

    let io_err = |what: &str, err: &dyn std::fmt::Display| (SetupStage::Bwrap, format!("{what}: {err}"));
    let (args_r, args_w) = pipe().map_err(|e| io_err("pipe", &e))?;
    let (status_r, status_w) = pipe().map_err(|e| io_err("pipe", &e))?;
    let (err_r, err_w) = pipe().map_err(|e| io_err("pipe", &e))?;
    let (spec_r, spec_w) = pipe().map_err(|e| io_err("pipe", &e))?;
    let (inner_r, inner_w) = pipe().map_err(|e| io_err("pipe", &e))?;
    let user_stderr = nix::unistd::dup(io::stderr()).map_err(|e| io_err("dup stderr", &e))?;
    for fd in [&args_r, &status_w, &spec_r, &inner_w, &user_stderr] {
        inheritable(fd).map_err(|e| io_err("fcntl", &e))?;
    }
    let args = bwrap_args(plan, &host, status_w.as_raw_fd()).map_err(|e| plan_err(e.to_string()))?;
    // Started (and confined) before bubblewrap, so a bridge that cannot confine itself fails the call before
    // anything runs.
    let (bridge, bridge_fd) = match start_bridge(plan)? {
        Some((bridge, fd)) => (Some(bridge), Some(fd)),
        None => (None, None),
    };
    let mut inner: Vec<OsString> = vec![
        "--".into(),
        exe.into(),
        "inner".into(),
        "--spec-fd".into(),
        spec_r.as_raw_fd().to_string().into(),
        "--status-fd".into(),
        inner_w.as_raw_fd().to_string().into(),
        "--stderr-fd".into(),
        user_stderr.as_raw_fd().to_string().into(),
    ];
    if let Some(fd) = &bridge_fd {
        inner.extend(["--bridge-fd".into(), fd.as_raw_fd().to_string().into()]);
    }
    let mut child = Command::new(&plan.bwrap)
        .arg("--args")
        .arg(args_r.as_raw_fd().to_string())
        .args(&inner)
        .stderr(Stdio::from(err_w))
        .spawn()
        .map_err(|e| io_err(&format!("cannot run bubblewrap at {}", plan.bwrap.display()), &e))?;
    // The child's ends now live in bubblewrap only, so each pipe ends when its last holder is done.
    drop((args_r, status_w, spec_r, inner_w, user_stderr, bridge_fd));

    let writers = [feed(args_w, encode_args(&args)), feed(spec_w, spec)];
    let network = plan.network();
    let watched = watch(status_r, err_r, inner_r, |status| {
        if let InnerStatus::Ready { landlock_abi, scoped } = status {
            // Sent live: efrd learns that the sandbox is up while the command still runs.
            reporter.send(&LaunchReport::Sandboxed {
                landlock_abi: *landlock_abi,
                scoped: *scoped,
                seccomp: true,
                network,
                containment: Containment::Bubblewrap,
            });
        }
    });
    // The pipes end when the sandbox has ended, so this wait is short; it also reaps bubblewrap after a read error.
    let waited = child.wait();
    // The sandbox has ended: nothing is left to connect.
    let _bridge_end = bridge.map(Bridge::stop);
    for writer in writers.into_iter().flatten() {
        let _ = writer.join();
    }
    let Watched {
        exit_code,
        bwrap_message: message,
        inner,
    } = watched.map_err(|e| io_err("cannot read bubblewrap's status", &e))?;
    let waited = waited.map_err(|e| io_err("cannot wait for bubblewrap", &e))?;

    if let Some(InnerStatus::Refused { message }) = inner.iter().find(|s| matches!(s, InnerStatus::Refused { .. })) {
        return Err((SetupStage::Inner, message.clone()));
    }
    let Some(exit_code) = exit_code else {
        let message = message.trim();
        let message = if message.is_empty() {
            format!("bubblewrap ended ({waited}) before the sandbox started, and said nothing")
        } else {
            message.to_owned()
        };
        return Err((SetupStage::Bwrap, message));
    };
    // Anything bubblewrap said while the command ran still reaches the user.
    if !message.is_empty() {
        let _ = io::stderr().write_all(message.as_bytes());
    }
    if !inner.iter().any(|s| matches!(s, InnerStatus::Ready { .. })) {
        return Err((
            SetupStage::Inner,
            format!("the inner stage ended (exit code {exit_code}) before it confirmed the sandbox"),
        ));
    }
    let exec_error = inner.into_iter().find_map(|s| match s {
        InnerStatus::ExecFailed { message } => Some(message),
        _ => None,
    });
    reporter.send(&LaunchReport::Exited { exit_code, exec_error });
    Ok(ExitCode::from(u8::try_from(exit_code).unwrap_or(u8::MAX)))
}

/// With a proxy in the plan: the running, confined bridge, and the inner stage's end of its socket pair
/// (inheritable, for bubblewrap).
fn start_bridge(plan: &LaunchPlan) -> Result<Option<(Bridge, OwnedFd)>, Failure> {
    let Some(proxy) = &plan.proxy else { return Ok(None) };
    let io_err = |err: io::Error| {
        (
            SetupStage::Bwrap,
            format!("cannot make the bridge's socket pair: {err}"),
        )
    };
    let (outer_end, inner_end) = bridge::control_pair().map_err(io_err)?;
    inheritable(&inner_end).map_err(|e| io_err(e.into()))?;
    // A bridge that cannot confine itself is the sandbox refusing, as when the inner stage cannot.
    let bridge = Bridge::start(outer_end, proxy.clone()).map_err(|message| (SetupStage::Inner, message))?;
    Ok(Some((bridge, inner_end)))
}

/// The launcher must be visible inside the sandbox at the same path (it runs the inner stage).
fn check_visible(plan: &LaunchPlan, exe: &Path) -> Result<(), String> {
    let mounts = plan.mounts().map_err(|e| e.to_string())?;
    let decides = mounts.iter().rev().find(|mount| exe.starts_with(&mount.path));
    match decides.map(|mount| mount.kind) {
        Some(MountKind::RootReadOnly | MountKind::Writable | MountKind::Pinned | MountKind::ReadOnly(_)) => Ok(()),
        _ => Err(format!(
            "the launcher at {} would be hidden inside the sandbox (install it outside /tmp, /dev, /proc and the masks)",
            exe.display()
        )),
    }
}

/// What surely fits in a pipe's buffer (64 KiB on Linux) without a reader.
const PIPE_ROOM: usize = 60 * 1024;

/// Writes `bytes` to a pipe and closes it: at once when they fit in the pipe's buffer (the usual case, and one
/// thread less per launch), else on a thread, as the reader drains it. A write error means the reader is gone
/// (bubblewrap failed), which its own status reports.
fn feed(fd: OwnedFd, bytes: Vec<u8>) -> Option<thread::JoinHandle<()>> {
    if bytes.len() <= PIPE_ROOM {
        let _ = File::from(fd).write_all(&bytes);
        return None;
    }
    Some(thread::spawn(move || {
        let _ = File::from(fd).write_all(&bytes);
    }))
}

fn pipe() -> nix::Result<(OwnedFd, OwnedFd)> {
    nix::unistd::pipe2(OFlag::O_CLOEXEC)
}

/// Clears close-on-exec, so bubblewrap (and through it the inner stage) inherits the descriptor.
fn inheritable(fd: &OwnedFd) -> nix::Result<()> {
    fcntl(fd, FcntlArg::F_SETFD(FdFlag::empty())).map(|_| ())
}

fn setup_error(reporter: &Reporter, stage: SetupStage, message: &str) -> ExitCode {
    eprintln!("efr-launcher: setup error ({}): {message}", stage_name(stage));
    reporter.send(&LaunchReport::SetupError {
        stage,
        message: message.to_owned(),
    });
    ExitCode::from(SETUP_ERROR_EXIT)
}

fn stage_name(stage: SetupStage) -> &'static str {
    match stage {
        SetupStage::Plan => "plan",
        SetupStage::Bwrap => "bubblewrap",
        SetupStage::Inner => "inner stage",
    }
}
