//! Running `systemctl --user`, with errors that tell the user what to do instead.
//!
//! Two failures are told apart because their remedies differ: no `systemctl` at all (no systemd on this machine)
//! and a `systemctl --user` that cannot reach the user's manager (a container, a session without lingering, an
//! `su` shell without `XDG_RUNTIME_DIR`). Both suggest `efr daemon run`, which needs neither.

use std::ffi::OsStr;
use std::process::{Command, Output, Stdio};

/// The hint every error of this module ends with.
const RUN_HINT: &str = "run efrd in the foreground instead with `efr daemon run`";

/// Why a `systemctl --user` step failed.
#[derive(Debug, thiserror::Error)]
pub enum SystemctlError {
    /// `systemctl` is not on PATH (or cannot be started).
    #[error("systemctl cannot be started ({0}): this machine has no systemd for efrd's units; {RUN_HINT}")]
    Missing(std::io::Error),
    /// `systemctl --user` cannot talk to the user's manager.
    #[error(
        "`systemctl --user` cannot reach your systemd user manager ({0}); log in through a session that starts it \
         (or `loginctl enable-linger $USER`), or {RUN_HINT}"
    )]
    NoUserManager(String),
    /// A step ran but failed.
    #[error("`systemctl --user {args}` failed: {message}")]
    Failed {
        /// The arguments after `--user`.
        args: String,
        /// systemctl's stderr (or its exit status when it said nothing).
        message: String,
    },
}

/// Checks that `systemctl --user` reaches a user manager; call it before changing anything.
///
/// # Errors
/// [`SystemctlError::Missing`] or [`SystemctlError::NoUserManager`].
pub fn check_user_manager() -> Result<(), SystemctlError> {
    let output = output(&["show", "--property=Version"])?;
    if output.status.success() {
        Ok(())
    } else {
        Err(SystemctlError::NoUserManager(message(&output)))
    }
}

/// Runs `systemctl --user ARGS...` and waits for it.
///
/// # Errors
/// [`SystemctlError::Missing`], or [`SystemctlError::Failed`] with systemctl's own message.
pub fn run<S: AsRef<OsStr>>(args: &[S]) -> Result<(), SystemctlError> {
    let output = output(args)?;
    if output.status.success() {
        Ok(())
    } else {
        Err(SystemctlError::Failed {
            args: args
                .iter()
                .map(|arg| arg.as_ref().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" "),
            message: message(&output),
        })
    }
}

fn output<S: AsRef<OsStr>>(args: &[S]) -> Result<Output, SystemctlError> {
    Command::new("systemctl")
        .arg("--user")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(SystemctlError::Missing)
}

/// systemctl's stderr on one line, or its exit status when it wrote nothing.
fn message(output: &Output) -> String {
    let text = String::from_utf8_lossy(&output.stderr);
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        output.status.to_string()
    } else {
        text
    }
}
