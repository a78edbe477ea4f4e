//! The two command lines every contained call uses, read without clap: `--plan-file PATH` or `--plan-fd N` (the
//! outer stage, as efrd's hidden shell types it) and `inner --spec-fd N --status-fd N --stderr-fd N [--bridge-fd N]`
//! (the inner stage, as the outer stage writes it).
//!
//! Each contained call starts the launcher twice, and clap builds its whole command tree before it reads an argument
//! (about 0.07 ms a start on the development machine, docs/adr/0031-contained-true-breakdown.md). Only these exact
//! shapes are read here; any other command line, `--help` and every error go to clap (`main.rs`), which stays the
//! one definition of the command line.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::inner::InnerFds;

/// A command line read without clap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Common {
    /// `--plan-file PATH`.
    PlanFile(PathBuf),
    /// `--plan-fd N`.
    PlanFd(i32),
    /// `inner --spec-fd N --status-fd N --stderr-fd N [--bridge-fd N]`, in that order.
    Inner(InnerFds),
}

/// Reads `args` (without the program's name) when it is one of the [`Common`] shapes; `None` for anything else.
#[must_use]
pub fn common(args: &[OsString]) -> Option<Common> {
    let text: Vec<&str> = args.iter().map(|arg| arg.to_str()).collect::<Option<_>>()?;
    match text.as_slice() {
        ["--plan-file", path] if !path.is_empty() && !path.starts_with('-') => {
            Some(Common::PlanFile(args[1].clone().into()))
        }
        ["--plan-fd", fd] => Some(Common::PlanFd(fd.parse().ok()?)),
        [
            "inner",
            "--spec-fd",
            spec,
            "--status-fd",
            status,
            "--stderr-fd",
            stderr,
            rest @ ..,
        ] => {
            let bridge = match rest {
                [] => None,
                ["--bridge-fd", bridge] => Some(bridge.parse().ok()?),
                _ => return None,
            };
            Some(Common::Inner(InnerFds {
                spec: spec.parse().ok()?,
                status: status.parse().ok()?,
                stderr: stderr.parse().ok()?,
                bridge,
            }))
        }
        _ => None,
    }
}
