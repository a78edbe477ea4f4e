//! Finding a call's exits: from its line before the contained call runs ([`line_exits`], [`patch_exits`]), and
//! from its report after it failed ([`report_exits`]): the proxy's blocked hosts, the bus proxy's refusals, what the
//! launcher reported. Pure: no file, clock or process is read (the context's functions are the caller's), so a table
//! of lines pins every rule (`tests/table.rs`).
//!
//! Each function returns one [`ExitRecord`] per exit (docs/adr/0016-exit-kinds.md, "Decision" 2), not judged yet,
//! with `facts.denials_*` left at 0 (the turn fills them), and `git_code` left absent (the turn checks the
//! repositories). An empty list: the call needs no exit. Exits of one kind that a call asks for several times are one
//! record (two hosts of a line are one `host` exit with two grants).
//!
//! - `line`: the rules of each command a line runs;
//! - `places`: a target's class, its mask, the floor files and the narrowest write grant;
//! - `hosts`: hosts of URLs, ssh targets and git remotes ([`remote_hosts`]);
//! - `patch`, `report`: the exits of a patch and of a failed call's report.
//!
//! docs/auto.md, "Finding an exit", says the same for a user.

mod hosts;
mod line;
mod patch;
mod places;
mod report;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

use efr_protocol::wire::{
    Desktop, ExitAction, ExitFacts, ExitKind, ExitRecord, ExitSource, ExitTarget, Grant, HostFact, Needs,
    SandboxSummary,
};

pub use hosts::{NamedHost, remote_hosts, scp_host, ssh_host, url_host};
pub use places::FLOOR_FILES;

use efr_policy::{EfrDirs, LineAnalysis, PatchChange, ShellCall};

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
    /// The hosts that `[network] allow` lets through the proxy without an exit: `(host, port)`, the host lowercase.
    pub allowed_hosts: &'a dyn Fn(&str, u16) -> bool,
    /// The hosts of the remotes of the project's pinned git dirs (`project_remote`), lowercase ([`remote_hosts`]
    /// of each config).
    pub project_remotes: &'a [String],
    /// The desktop of the prompt's terminal (its shell_context), `None` when the shell has none.
    pub desktop: Option<&'a Desktop>,
    /// efrd runs the filtered bus proxy (admin.status `sandbox.bus_proxy`): a bus exit whose names are known then
    /// needs `bus_filter`, else the whole `bus`.
    pub bus_filter: bool,
    /// The program of a process of the user, by pid (`/proc/<pid>/exe`), `None` when there is no such process or
    /// it is not the user's: a kill exit's targets. The caller reads `/proc`; finding stays pure.
    pub program_of: &'a dyn Fn(u32) -> Option<PathBuf>,
}

impl std::fmt::Debug for ExitContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExitContext")
            .field("cwd", &self.cwd)
            .field("project_roots", &self.project_roots)
            .field("writable_roots", &self.writable_roots)
            .field("masked", &self.masked)
            .field("project_remotes", &self.project_remotes)
            .field("bus_filter", &self.bus_filter)
            .finish_non_exhaustive()
    }
}

/// The exits of a shell line, read before the contained call runs (source `line`). `analysis` is the policy's
/// analysis of the same line in the same context (the turn parses a line once). A line the parser cannot read, or
/// that hits a floor, has none: the sandbox still holds, and a failure comes back through [`report_exits`].
#[must_use]
pub fn line_exits(call: &ShellCall, analysis: &LineAnalysis, ctx: &ExitContext<'_>) -> Vec<ExitRecord> {
    line::exits(call, analysis, ctx)
}

/// The exits of a patch (source `edit`): a file outside the writable roots (`write`, `delete`), a floor file
/// (`floor_edit`, with the payload in the action's `edit`), a masked file (`unmask` too). `patch_text` is the patch
/// as the model sent it: a floor edit's payload, cut at [`ExitAction::MAX_EDIT_BYTES`].
#[must_use]
pub fn patch_exits(changes: &[PatchChange], patch_text: &str, ctx: &ExitContext<'_>) -> Vec<ExitRecord> {
    patch::exits(changes, patch_text, ctx)
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
    report::exits(call, summary, output, already, ctx)
}

/// The exits found so far for one call, one record per kind.
struct Found {
    action: ExitAction,
    records: Vec<ExitRecord>,
}

/// One exit to add to [`Found`].
#[derive(Default)]
struct Exit {
    grants: Vec<Grant>,
    unsandboxed: bool,
    targets: Vec<ExitTarget>,
    facts: ExitFacts,
}

impl Exit {
    fn grants(grants: Vec<Grant>) -> Self {
        Self {
            grants,
            ..Self::default()
        }
    }

    fn unsandboxed(outside: String) -> Self {
        Self {
            unsandboxed: true,
            facts: ExitFacts {
                outside_commands: vec![outside],
                ..ExitFacts::default()
            },
            ..Self::default()
        }
    }

    fn hosts(mut self, hosts: Vec<HostFact>) -> Self {
        self.facts.hosts = hosts;
        self
    }

    fn targets(mut self, targets: Vec<ExitTarget>) -> Self {
        self.targets = targets;
        self
    }
}

impl Found {
    fn new(action: ExitAction) -> Self {
        Self {
            action,
            records: Vec::new(),
        }
    }

    /// Adds an exit, merged into the record of its kind and source when there is one.
    fn add(&mut self, kind: ExitKind, source: ExitSource, exit: Exit) {
        let Exit {
            grants,
            unsandboxed,
            targets,
            facts,
        } = exit;
        let at = match self.records.iter().position(|r| r.kind == kind && r.source == source) {
            Some(at) => {
                self.records[at].facts.desktop_read &= facts.desktop_read;
                at
            }
            None => {
                self.records.push(ExitRecord {
                    kind,
                    source,
                    action: self.action.clone(),
                    needs: Needs::default(),
                    targets: Vec::new(),
                    facts: ExitFacts {
                        desktop_read: facts.desktop_read,
                        ..ExitFacts::default()
                    },
                    judgement: None,
                });
                self.records.len() - 1
            }
        };
        let record = &mut self.records[at];
        record.needs.unsandboxed |= unsandboxed;
        extend_new(&mut record.needs.grants, grants);
        for target in targets {
            if !record.targets.iter().any(|t| t.path == target.path) {
                record.targets.push(target);
            }
        }
        for host in facts.hosts {
            match record
                .facts
                .hosts
                .iter_mut()
                .find(|h| h.host == host.host && h.port == host.port)
            {
                Some(known) => known.project_remote |= host.project_remote,
                None => record.facts.hosts.push(host),
            }
        }
        extend_new(&mut record.facts.outside_commands, facts.outside_commands);
        extend_new(&mut record.facts.bus_names, facts.bus_names);
    }

    fn into_records(self) -> Vec<ExitRecord> {
        self.records
    }
}

/// Appends the items of `more` that `list` lacks.
fn extend_new<T: PartialEq>(list: &mut Vec<T>, more: Vec<T>) {
    for item in more {
        if !list.contains(&item) {
            list.push(item);
        }
    }
}

impl ExitContext<'_> {
    /// The host fact of a named host.
    fn host_fact(&self, host: &NamedHost) -> HostFact {
        HostFact {
            host: host.host.clone(),
            port: host.port,
            project_remote: self.project_remotes.contains(&host.host),
        }
    }

    /// Whether the proxy lets `host` through without an exit.
    fn allowed(&self, host: &NamedHost) -> bool {
        (self.allowed_hosts)(&host.host, host.port_or_default())
    }
}
