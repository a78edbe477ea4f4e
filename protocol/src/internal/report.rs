//! What `efr-launcher` reports about one launch: JSON lines on the plan's report channel, and its exit code.
//!
//! The lines come in this order; each is one JSON object tagged by `kind`:
//!
//! 1. `launched`: the launcher's pid and start time (field 22 of `/proc/<pid>/stat`, clock ticks after boot), so
//!    efrd can find the launcher again after its own restart (a pid alone may have been reused).
//! 2. `sandboxed`: the inner stage confirmed the sandbox (Landlock ABI in force, scopes, seccomp) just before it
//!    ran the command. Absent when the setup failed.
//! 3. The end, exactly one of:
//!    - `exited`: the command ran; `exit_code` is its status as a shell gives it (128 + the signal for a signal);
//!      `exec_error` says why the program could not start (127: not found, 126: not executable).
//!    - `setup_error`: the sandbox could not start and the command did not run; `stage` says which part failed and
//!      `message` is that part's own words, such as bubblewrap's `Can't find source path ...`.
//!
//! A launch whose report has no end line was itself killed (its terminal closed, SIGKILL); efrd treats the call as
//! ended without a status.
//!
//! Exit code: the command's own, passed through; [`SETUP_ERROR_EXIT`] after a setup error. A command can exit with
//! 125 too, so the report, not the code, tells the two apart.

use serde::{Deserialize, Serialize};

use crate::internal::launch::{Containment, Network};

/// The launcher's exit code after a setup error (as `env`, `chroot` and `docker run` use it for their own failures).
pub const SETUP_ERROR_EXIT: u8 = 125;

/// The prefix of a report line on standard error ([`crate::internal::ReportTo::Stderr`]).
pub const STDERR_PREFIX: &str = "efr-launcher: report ";

/// Which part of the launch failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SetupStage {
    /// The plan could not be read or broke a rule.
    Plan,
    /// bubblewrap could not build the sandbox (its status stream has no `exit-code`), or could not start.
    Bwrap,
    /// The inner stage refused: capabilities left, Landlock not fully enforced, seccomp not loaded.
    Inner,
}

/// One report line. See the module docs for the order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LaunchReport {
    /// The launcher started.
    Launched {
        /// The launcher's pid.
        launcher_pid: u32,
        /// Its start time, clock ticks after boot (`/proc/<pid>/stat` field 22).
        launcher_start: u64,
    },
    /// The sandbox is up; the command runs next.
    Sandboxed {
        /// The Landlock ABI in force (at most the pinned ABI).
        landlock_abi: u32,
        /// Abstract Unix sockets and signals are scoped to the sandbox (Landlock ABI 6).
        scoped: bool,
        /// The seccomp filters are loaded.
        seccomp: bool,
        /// The network the call sees.
        network: Network,
        /// What contains the call: bubblewrap (absent), or Landlock and seccomp alone.
        #[serde(default, skip_serializing_if = "Containment::is_bubblewrap")]
        containment: Containment,
    },
    /// The command ran and ended.
    Exited {
        /// Its exit status (128 + the signal when a signal ended it).
        exit_code: i32,
        /// Why the program could not start; absent when it started.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exec_error: Option<String>,
    },
    /// The sandbox could not start; the command did not run.
    SetupError {
        /// Which part failed.
        stage: SetupStage,
        /// That part's own message.
        message: String,
    },
}

impl LaunchReport {
    /// Parses report text: one JSON object per line; lines with [`STDERR_PREFIX`] are read without it, and other
    /// lines that do not start with `{` (a command's own output on a shared stderr) are skipped.
    ///
    /// # Errors
    ///
    /// A line that starts like a report and does not parse.
    pub fn parse_lines(text: &str) -> Result<Vec<Self>, serde_json::Error> {
        text.lines()
            .filter_map(|line| {
                let line = line.strip_prefix(STDERR_PREFIX).unwrap_or(line).trim();
                line.starts_with('{').then_some(line)
            })
            .map(serde_json::from_str)
            .collect()
    }

    /// The end line of a report (`exited` or `setup_error`), if it has one.
    pub fn end(lines: &[Self]) -> Option<&Self> {
        lines
            .iter()
            .rev()
            .find(|line| matches!(line, Self::Exited { .. } | Self::SetupError { .. }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_with_and_without_the_prefix() {
        let text = "efr-launcher: report {\"kind\":\"launched\",\"launcher_pid\":7,\"launcher_start\":99}\n\
                    some output of the command\n\
                    {\"kind\":\"setup_error\",\"stage\":\"bwrap\",\"message\":\"bwrap: Can't find source path /x\"}\n";
        let lines = LaunchReport::parse_lines(text).unwrap();
        assert_eq!(
            lines[0],
            LaunchReport::Launched {
                launcher_pid: 7,
                launcher_start: 99
            }
        );
        assert_eq!(
            LaunchReport::end(&lines),
            Some(&LaunchReport::SetupError {
                stage: SetupStage::Bwrap,
                message: "bwrap: Can't find source path /x".into()
            })
        );
        assert!(LaunchReport::parse_lines("{\"kind\":\"nope\"}").is_err());
    }

    #[test]
    fn exited_skips_an_absent_exec_error() {
        let line = LaunchReport::Exited {
            exit_code: 3,
            exec_error: None,
        };
        assert_eq!(
            serde_json::to_string(&line).unwrap(),
            r#"{"kind":"exited","exit_code":3}"#
        );
        assert_eq!(LaunchReport::end(std::slice::from_ref(&line)), Some(&line));
        assert_eq!(LaunchReport::end(&[]), None);
    }
}
