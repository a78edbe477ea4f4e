//! Finding a call's exits: from its line before the contained call runs ([`line_exits`], [`patch_exits`]), and
//! from its report after it failed ([`report_exits`]): the proxy's blocked hosts, the bus proxy's refusals, what the
//! launcher reported. Pure: no file, clock or process is read, so a table of lines pins every rule.
//!
//! Each function returns one [`ExitRecord`] per exit (docs/adr/0016-exit-kinds.md, "Decision" 2), not judged yet,
//! with `facts.denials_*` left at 0 (the turn fills them). An empty list: the call needs no exit.

use std::path::{Path, PathBuf};

use efr_protocol::wire::{Desktop, ExitRecord, SandboxSummary};

use crate::policy::{EfrDirs, LineAnalysis, PatchChange, ShellCall};

/// What finding needs besides the call: where the sandbox's walls are.
#[derive(Clone, Copy)]
pub struct ExitContext<'a> {
    /// The call's working directory (absolute).
    pub cwd: &'a Path,
    /// The turn's project roots (absolute, resolved).
    pub project_roots: &'a [PathBuf],
    /// Where a contained call may write: the project roots, `$SCRATCH`, and the turn's approved write targets.
    pub writable_roots: &'a [PathBuf],
    /// The user's home.
    pub home: Option<&'a Path>,
    /// efr's own roots (floors: never an exit).
    pub efr_dirs: &'a EfrDirs,
    /// The masked paths of the sandbox (the credential stores and the config's extra masks).
    pub masked: &'a [PathBuf],
    /// The hosts that `[network] allow` lets through the proxy without an exit.
    pub allowed_hosts: &'a dyn Fn(&str, u16) -> bool,
    /// The hosts of the remotes of the project's pinned git dirs (`project_remote`), lowercase.
    pub project_remotes: &'a [String],
    /// The desktop of the prompt's terminal (its shell_context), `None` when the shell has none.
    pub desktop: Option<&'a Desktop>,
}

impl std::fmt::Debug for ExitContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExitContext")
            .field("cwd", &self.cwd)
            .field("project_roots", &self.project_roots)
            .field("writable_roots", &self.writable_roots)
            .field("masked", &self.masked)
            .field("project_remotes", &self.project_remotes)
            .finish_non_exhaustive()
    }
}

/// The exits of a shell line, read before the contained call runs (source `line`). `analysis` is the policy's
/// analysis of the same line in the same context (the turn parses a line once).
#[must_use]
pub fn line_exits(call: &ShellCall, analysis: &LineAnalysis, ctx: &ExitContext<'_>) -> Vec<ExitRecord> {
    let _ = (call, analysis, ctx);
    Vec::new()
}

/// The exits of a patch (source `edit`): a file outside the writable roots (`write`, `delete`), a floor file
/// (`floor_edit`, with the payload in the action's `edit`).
#[must_use]
pub fn patch_exits(changes: &[PatchChange], ctx: &ExitContext<'_>) -> Vec<ExitRecord> {
    let _ = (changes, ctx);
    Vec::new()
}

/// The exits of a contained shell call that failed, from what its sandbox reported (sources `proxy`, `bus_proxy`,
/// `report`): `summary` is the call's sandbox summary, `output` the text the model gets (a refused write's
/// "Read-only file system" names its path). Exits the line already asked for are not repeated: `already` lists them.
#[must_use]
pub fn report_exits(
    call: &ShellCall,
    summary: &SandboxSummary,
    output: &str,
    already: &[ExitRecord],
    ctx: &ExitContext<'_>,
) -> Vec<ExitRecord> {
    let _ = (call, summary, output, already, ctx);
    Vec::new()
}
