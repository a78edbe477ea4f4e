//! The inner stage: runs as bubblewrap's child inside the namespaces and mounts, completes the sandbox, and execs
//! the command.
//!
//! In order: read the [`InnerSpec`]; put the user's stderr back on fd 2 (bubblewrap's own stderr is a pipe the outer
//! stage reads, so its setup messages can be reported); mark every other descriptor close-on-exec; set the resource
//! limits; empty every capability set; set no_new_privs; apply Landlock ([`crate::ruleset`]); load the seccomp
//! filters ([`crate::seccomp`]); with a bridge descriptor, make the listener on the sandbox's loopback and hand it
//! to the outer stage ([`crate::bridge::send_listener`]); report `ready`; exec (with the proxy variables). Any step that fails reports `refused` with its reason and
//! exits with [`SETUP_ERROR_EXIT`]: the command never runs in a weaker sandbox.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode};

use efr_helper::harden;
use efr_protocol::internal::{LaunchCommand, SETUP_ERROR_EXIT};

use crate::spec::{InnerSpec, InnerStatus};
use crate::{bridge, privileges, ruleset, seccomp};

/// The descriptors the outer stage hands the inner stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InnerFds {
    /// The spec pipe, read to its end.
    pub spec: RawFd,
    /// The status pipe, written with [`InnerStatus`] lines.
    pub status: RawFd,
    /// The user's stderr, put back on fd 2.
    pub stderr: RawFd,
    /// The outer stage's end of the bridge's socket pair, when the plan has a proxy.
    pub bridge: Option<RawFd>,
}

/// Runs the inner stage. Returns only when the command could not start.
pub fn run(fds: InnerFds) -> ExitCode {
    let (Some(spec_fd), Some(status_fd), Some(stderr_fd)) = (take(fds.spec), take(fds.status), take(fds.stderr)) else {
        eprintln!("efr-launcher: the inner stage was not given its descriptors; it runs only under the outer stage");
        return ExitCode::from(SETUP_ERROR_EXIT);
    };
    let mut status = File::from(status_fd);
    if let Err(err) = nix::unistd::dup2_stderr(&stderr_fd) {
        return refuse(&mut status, &format!("cannot restore stderr: {err}"));
    }
    drop(stderr_fd);
    let mut text = String::new();
    if let Err(err) = File::from(spec_fd).read_to_string(&mut text) {
        return refuse(&mut status, &format!("cannot read the inner spec: {err}"));
    }
    let spec: InnerSpec = match serde_json::from_str(&text) {
        Ok(spec) => spec,
        Err(err) => return refuse(&mut status, &format!("the inner spec does not parse: {err}")),
    };
    let enforced = match confine(&spec) {
        Ok(enforced) => enforced,
        Err(message) => return refuse(&mut status, &message),
    };
    // Made after the confinement (the socket is one the command could make itself) and closed before the exec.
    let proxy_port = match fds.bridge.map(|fd| take(fd).ok_or(fd)) {
        None => None,
        Some(Err(fd)) => return refuse(&mut status, &format!("the bridge descriptor {fd} is not open")),
        Some(Ok(control)) => match bridge::send_listener(&control) {
            Ok(port) => Some(port),
            Err(err) => {
                return refuse(
                    &mut status,
                    &format!("cannot hand the proxy bridge its listener on the sandbox's loopback: {err}"),
                );
            }
        },
    };
    send(
        &mut status,
        &InnerStatus::Ready {
            landlock_abi: enforced.abi,
            scoped: enforced.scoped,
        },
    );
    let mut command = match &spec.command {
        LaunchCommand::Argv { argv } => {
            let mut command = Command::new(argv.first().map_or("", String::as_str));
            command.args(argv.iter().skip(1));
            command
        }
        LaunchCommand::Shell { shell, line } => {
            let mut command = Command::new(shell);
            command.arg("-c").arg(line);
            command
        }
    };
    if let Some(port) = proxy_port {
        command.envs(bridge::proxy_env(port));
    }
    // Only returns on failure; on success the status pipe closes with the exec (close-on-exec).
    let err = command.exec();
    let program = match &spec.command {
        LaunchCommand::Argv { argv } => argv.first().cloned().unwrap_or_default(),
        LaunchCommand::Shell { shell, .. } => shell.display().to_string(),
    };
    let message = format!("cannot run {program}: {err}");
    send(
        &mut status,
        &InnerStatus::ExecFailed {
            message: message.clone(),
        },
    );
    eprintln!("efr-launcher: {message}");
    // The shell's convention: 127 not found, 126 found but not runnable.
    ExitCode::from(if err.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    })
}

/// Every step between bubblewrap and the exec.
fn confine(spec: &InnerSpec) -> Result<ruleset::Enforced, String> {
    privileges::cloexec_above_stderr().map_err(|e| format!("cannot mark descriptors close-on-exec: {e}"))?;
    privileges::set_limits(&spec.rlimits)?;
    match &spec.unshared {
        // Without a user namespace only a holder of CAP_SETPCAP (root) may empty the bounding set; for anyone else
        // it grants nothing, since no_new_privs keeps an exec from gaining a capability.
        Some(_) => {
            if caps::has_cap(None, caps::CapSet::Effective, caps::Capability::CAP_SETPCAP).unwrap_or(true) {
                harden::drop_bounding_set()?;
            }
            harden::clear_capabilities()?;
        }
        None => harden::drop_capabilities()?,
    }
    harden::set_no_new_privs()?;
    let (enforced, programs) = match &spec.unshared {
        // No namespace around the call: the cover's rules and no socket at all. It stays in the launcher's process
        // group, so an interrupt reaches it and its children as it reaches a direct command; typing into the
        // terminal (TIOCSTI) is refused by seccomp, as for every call.
        Some(unshared) => {
            let enforced = ruleset::apply_unshared(unshared)?;
            (enforced, seccomp::unshared_filters(enforced.scoped))
        }
        None => (
            ruleset::apply(spec.network, &spec.writable, &spec.devices)?,
            seccomp::filters(spec.network),
        ),
    };
    let programs = programs.map_err(|e| format!("cannot build the seccomp filters: {e}"))?;
    harden::seccomp::install(&programs)?;
    Ok(enforced)
}

/// Takes ownership of an inherited descriptor, if it is open and above stderr.
fn take(fd: RawFd) -> Option<OwnedFd> {
    // SAFETY: F_GETFD only reads the descriptor's flags; it fails with EBADF when `fd` is not open.
    let open = fd > 2 && unsafe { libc::fcntl(fd, libc::F_GETFD) } != -1;
    // SAFETY: the outer stage passes these descriptors to this process for its sole use (the `inner` command line is
    // its contract), and we checked that `fd` is open.
    open.then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

fn refuse(status: &mut File, message: &str) -> ExitCode {
    send(
        status,
        &InnerStatus::Refused {
            message: message.to_owned(),
        },
    );
    eprintln!("efr-launcher: the sandbox refused to start: {message}");
    ExitCode::from(SETUP_ERROR_EXIT)
}

/// Writes one status line. A failure means the outer stage is gone; --die-with-parent ends this process soon.
fn send(status: &mut File, line: &InnerStatus) {
    if let Ok(mut text) = serde_json::to_string(line) {
        text.push('\n');
        let _ = status.write_all(text.as_bytes());
    }
}
