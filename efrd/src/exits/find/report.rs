//! The exits of a contained call that failed, from what its sandbox reported:
//!
//! - each host the proxy refused as not allowed: a `host` exit (source `proxy`), an `upload` when the line sends a
//!   file to it; an IP address or a connection that is not TLS: `open_network`; a host the proxy denies: none (no
//!   grant opens it);
//! - the bus proxy's refusals: a `bus` exit (source `bus_proxy`) with their names, per bus; a bus that went away
//!   (`org.freedesktop.DBus`) is none;
//! - a write the sandbox refused, from the output's `Read-only file system`, or `Permission denied` on a line that
//!   creates, writes, removes or renames: a `write`, `delete` or `floor_edit` (source `report`), or `unmask` for a
//!   masked path;
//! - a read of a masked path, which inside the sandbox is not there (`No such file or directory` naming a path under
//!   a mask of the home, such as a credential store): an `unmask` (source `report`). A mask that holds one of efr's
//!   roots (the runtime folder) is never unmasked this way.
//!
//! A path in the output is a fact the call itself printed, never trusted: the grant is at most its parent folder
//! ([`ExitContext::write_grant`]), never a writable root's, a floor's or a system folder's.
//! Exits in `already` (the line's) are not repeated.

use std::path::PathBuf;

use efr_protocol::wire::{BlockReason, Bus, ExitAction, ExitKind, ExitRecord, ExitSource, Grant, SandboxSummary};

use super::hosts::NamedHost;
use super::{Exit, ExitContext, Found};
use efr_policy::analysis::{Scope, analyse};
use efr_policy::paths::normalize;
use efr_policy::{ShellCall, floors};

/// The bus names of the secret service (the filter refuses them whatever the grant: only the whole bus).
const SECRET_NAMES: &[&str] = &[
    "org.freedesktop.secrets",
    "org.gnome.keyring",
    "org.kde.kwalletd5",
    "org.kde.kwalletd6",
];

/// See [`super::report_exits`].
pub(super) fn exits(
    call: &ShellCall,
    summary: &SandboxSummary,
    output: &str,
    already: &[ExitRecord],
    ctx: &ExitContext<'_>,
) -> Vec<ExitRecord> {
    let mut found = Found::new(ExitAction {
        tool: "shell".to_owned(),
        command: Some(call.command.clone()),
        edit: None,
        ..Default::default()
    });
    let asked_host = |host: &str| already.iter().any(|r| r.facts.hosts.iter().any(|h| h.host == host));
    let upload = !summary.blocked.is_empty()
        && (already.iter().any(|r| r.kind == ExitKind::Upload) || line_sends_data(call, ctx));
    for blocked in &summary.blocked {
        let host = NamedHost {
            host: blocked.host.trim_end_matches('.').to_ascii_lowercase(),
            port: Some(blocked.port).filter(|p| *p != 443),
            plain: false,
        };
        if asked_host(&host.host) {
            continue;
        }
        let fact = ctx.host_fact(&host);
        match blocked.reason {
            BlockReason::NotAllowed if !ctx.allowed(&host) => {
                let grant = Grant::Host {
                    host: host.host.clone(),
                    port: host.port,
                };
                let kind = if upload { ExitKind::Upload } else { ExitKind::Host };
                found.add(kind, ExitSource::Proxy, Exit::grants(vec![grant]).hosts(vec![fact]));
            }
            BlockReason::IpLiteral | BlockReason::NotTls => {
                found.add(
                    ExitKind::OpenNetwork,
                    ExitSource::Proxy,
                    Exit::grants(vec![Grant::OpenNetwork]).hosts(vec![fact]),
                );
            }
            _ => {}
        }
    }
    for bus in [Bus::Session, Bus::System] {
        let names: Vec<&str> = summary
            .bus_refused
            .iter()
            .filter(|r| r.bus == bus && r.name != "org.freedesktop.DBus")
            .map(|r| r.name.as_str())
            .filter(|name| !already.iter().any(|r| r.facts.bus_names.iter().any(|n| n == name)))
            .collect();
        if names.is_empty() {
            continue;
        }
        let secret = names.iter().any(|n| SECRET_NAMES.contains(n));
        let grant = if ctx.bus_filter && !secret {
            Grant::BusFilter { bus }
        } else {
            Grant::Bus { bus }
        };
        let mut exit = Exit::grants(vec![grant]);
        for name in names {
            if !exit.facts.bus_names.iter().any(|n| n == name) {
                exit.facts.bus_names.push(name.to_owned());
            }
        }
        found.add(ExitKind::Bus, ExitSource::BusProxy, exit);
    }
    for (path, delete) in refused_writes(output) {
        refused_write(&mut found, &path, delete, already, ctx);
    }
    for path in missing_paths(output) {
        masked_read(&mut found, &path, already, ctx);
    }
    found.into_records()
}

/// One path the call could not find: an `unmask` exit when it lies under a mask (what the sandbox hides reads as
/// not there), unless a mask holds efr's own roots or the line asked for it already.
fn masked_read(found: &mut Found, path: &std::path::Path, already: &[ExitRecord], ctx: &ExitContext<'_>) {
    let path = normalize(path);
    let Some(mask) = ctx.mask_of(&path) else { return };
    let efr = ctx.efr_dirs;
    let holds_efr = [&efr.config, &efr.data, &efr.state, &efr.runtime, &efr.scratch]
        .into_iter()
        .flatten()
        .any(|dir| efr_policy::paths::is_within(dir, &mask) || efr_policy::paths::is_within(&path, dir));
    let asked = already.iter().any(|r| r.kind == ExitKind::Unmask);
    if holds_efr || asked {
        return;
    }
    let exit = Exit::grants(vec![Grant::Unmask { path: mask }]).targets(vec![ctx.target(&path)]);
    found.add(ExitKind::Unmask, ExitSource::Report, exit);
}

/// The absolute paths an output says are not there (`No such file or directory`), at most 16.
#[must_use]
pub fn missing_paths(output: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for line in output.lines().take(4096) {
        if !line.to_ascii_lowercase().contains("no such file or directory") {
            continue;
        }
        for path in line_paths(line, &["no such file or directory"]) {
            if !out.contains(&path) && out.len() < 16 {
                out.push(path);
            }
        }
    }
    out
}

/// One write the sandbox refused: an exit unless the path is writable already, a floor, or asked for already.
fn refused_write(
    found: &mut Found,
    path: &std::path::Path,
    delete: bool,
    already: &[ExitRecord],
    ctx: &ExitContext<'_>,
) {
    let path = normalize(path);
    let asked = already
        .iter()
        .any(|r| r.targets.iter().any(|t| efr_policy::paths::is_within(&path, &t.path)));
    if asked
        || ctx.writable(&path)
        || path.starts_with("/tmp")
        || path.starts_with("/proc")
        || path.starts_with("/sys")
        || ctx.efr_dirs.write_refusal(&path, false).is_some()
        || floors::raw_device(&path)
    {
        return;
    }
    let source = ExitSource::Report;
    if let Some(mask) = ctx.mask_of(&path) {
        let exit = Exit::grants(vec![Grant::Unmask { path: mask }]).targets(vec![ctx.target(&path)]);
        found.add(ExitKind::Unmask, source, exit);
    }
    if ctx.floor_file(&path) {
        let mut target = ctx.target(&path);
        target.backup_before_write = true;
        let exit = Exit::grants(vec![Grant::Write { path: path.clone() }]).targets(vec![target]);
        found.add(ExitKind::FloorEdit, source, exit);
        return;
    }
    let kind = if delete { ExitKind::Delete } else { ExitKind::Write };
    let exit = Exit::grants(vec![Grant::Write {
        path: ctx.write_grant(&path),
    }])
    .targets(vec![ctx.target(&path)]);
    found.add(kind, source, exit);
}

/// Whether the call's line sends data to a remote ([`super::line::sends_data`]); the line is parsed again, which
/// only happens after a call that failed with a refused host.
fn line_sends_data(call: &ShellCall, ctx: &ExitContext<'_>) -> bool {
    let scope = Scope {
        cwd: &call.cwd,
        project_roots: ctx.project_roots,
        home: ctx.home,
        efr: ctx.efr_dirs,
        extra_read_only: &[],
        extra_masks: &[],
    };
    let analysis = analyse(&call.command, &scope);
    super::line::sends_data(call, &analysis, ctx)
}

/// The paths of the writes that an output says were refused, with whether each was a delete. A line counts when it
/// says `Read-only file system`, or `Permission denied` (any case) next to a verb that writes.
#[must_use]
pub fn refused_writes(output: &str) -> Vec<(PathBuf, bool)> {
    const WRITE_VERBS: &[&str] = &[
        "cannot create",
        "cannot touch",
        "cannot make directory",
        "cannot remove",
        "cannot move",
        "cannot open",
        "cannot overwrite",
        "cannot unlink",
        "cannot rename",
        "failed to create",
        "failed to write",
        "failed to open",
        "could not create",
        "could not write",
        "couldn't create",
        "unable to create",
        "unable to write",
        "eacces: permission denied, mkdir",
        "eacces: permission denied, open",
        "eacces: permission denied, rename",
        "eacces: permission denied, unlink",
        "eacces: permission denied, rmdir",
        "eacces: permission denied, symlink",
        "eacces: permission denied, copyfile",
        "[errno 13]",
    ];
    let mut out: Vec<(PathBuf, bool)> = Vec::new();
    for line in output.lines().take(4096) {
        let lower = line.to_ascii_lowercase();
        let read_only = lower.contains("read-only file system") || lower.contains("[errno 30]");
        let denied = lower.contains("permission denied") && WRITE_VERBS.iter().any(|v| lower.contains(v));
        if !(read_only || denied) {
            continue;
        }
        let delete = ["cannot remove", "cannot unlink", "unlink '", "rmdir '"]
            .iter()
            .any(|v| lower.contains(v));
        for path in line_paths(line, &["read-only file system", "permission denied"]) {
            if !out.iter().any(|(p, _)| *p == path) {
                out.push((path, delete));
            }
        }
    }
    out
}

/// The absolute paths a message line names for one of `errors` (lowercase): quoted (`'…'`, `"…"`, `` `…` ``, `‘…’`), or else the part just before
/// the error in a shell's `program: [line N: ]path: error` form (`bash: /etc/x: Read-only file system`), or that
/// part's last word when it is a path (`sed: couldn't open temporary file /x: …`). Never the
/// program's own path (`/usr/bin/bash: line 1: .git/config: Read-only file system` names no absolute path).
fn line_paths(line: &str, errors: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for (open, close) in [('\'', '\''), ('"', '"'), ('`', '`'), ('‘', '’')] {
        let mut rest = line;
        while let Some(start) = rest.find(open) {
            let after = &rest[start + open.len_utf8()..];
            let Some(end) = after.find(close) else { break };
            let inner = &after[..end];
            if inner.starts_with('/') && !inner.contains('\n') {
                out.push(PathBuf::from(inner));
            }
            rest = &after[end + close.len_utf8()..];
        }
    }
    if out.is_empty() {
        let parts: Vec<&str> = line.split(": ").collect();
        let error = parts.iter().position(|part| {
            let lower = part.to_ascii_lowercase();
            errors.iter().any(|e| lower.contains(e))
        });
        // The part before the error is the path, or ends with it (`sed: couldn't open temporary file /x: …`).
        let before = error.filter(|i| *i > 0).map(|i| parts[i - 1].trim());
        let path = before.map(|part| {
            if part.starts_with('/') {
                part
            } else {
                part.rsplit(' ').next().unwrap_or_default()
            }
        });
        if let Some(path) = path.filter(|p| p.starts_with('/') && p.len() > 1) {
            out.push(PathBuf::from(path));
        }
    }
    out
}
