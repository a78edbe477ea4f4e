//! The exits a line shows (source `line`), from the policy's analysis of it: each command with its wrappers off
//! ([`SeenCommand`]), the privileged wrappers, the writes outside the project and every path it names.
//!
//! | what the line does | exit | module |
//! |---|---|---|
//! | a connection through the proxy to a host not allowed (`curl`, `wget`, `git fetch`, a registry) | `host` | [`remote`], [`packages`] |
//! | an IP address or `localhost` as a host; a tool that ignores the proxy (`ping`, `nc`, `dig`); `ssh` to an address | `open_network` | [`remote`] |
//! | sends a file or the repository (`git push`, `scp`/`rsync` to a remote, `curl -T`, `-d @f`, `-F x=@f`, `gh gist create`, `cargo publish`) | `upload` | [`remote`], [`packages`] |
//! | needs the user's identity (`ssh host`, `scp` from a remote, `git clone git@…`, `gh`, `gcloud`, `kubectl`) | `outside` | [`remote`] |
//! | runs as another user (`sudo`, `doas`, `pkexec`, `run0`, `su`) | `privilege` | here |
//! | installs a package for the user or system-wide | `package_install` | [`packages`] |
//! | the rest: services, kills, sockets, devices, buses, the desktop | … | [`local`] |
//!
//! Paths: a write or delete outside the writable roots is `write`, `delete` or (a floor file) `floor_edit`; a path
//! in a masked store is `unmask` too (here). A write to `/tmp` is none: the sandbox has a private `/tmp`.

mod local;
mod packages;
mod remote;

use std::path::PathBuf;

use efr_protocol::wire::{ExitAction, ExitKind, ExitSource, ExitTarget, Grant};

use super::hosts::{NamedHost, url_host};
use super::{Exit, ExitContext, Found};
use efr_policy::analysis::Concern;
use efr_policy::{LineAnalysis, SeenCommand, ShellCall};

const LINE: ExitSource = ExitSource::Line;

/// See [`super::line_exits`].
pub(super) fn exits(call: &ShellCall, analysis: &LineAnalysis, ctx: &ExitContext<'_>) -> Vec<ExitRecord> {
    let unparsed = analysis.concerns.iter().any(|c| matches!(c, Concern::Unparsed { .. }));
    if analysis.refusal.is_some() || unparsed {
        return Vec::new();
    }
    find(call, analysis, ctx).found.into_records()
}

/// Whether a line sends data to a remote (a file, the repository, a package), whatever its hosts: a host that the
/// proxy refused to such a line is an upload (`super::report`).
pub(super) fn sends_data(call: &ShellCall, analysis: &LineAnalysis, ctx: &ExitContext<'_>) -> bool {
    find(call, analysis, ctx).sends
}

fn find<'c>(call: &ShellCall, analysis: &LineAnalysis, ctx: &'c ExitContext<'c>) -> Finder<'c> {
    let mut finder = Finder {
        ctx,
        found: Found::new(ExitAction {
            tool: "shell".to_owned(),
            command: Some(call.command.clone()),
            edit: None,
            ..Default::default()
        }),
        sends: false,
    };
    for command in &analysis.commands {
        finder.command(command);
    }
    finder.paths(analysis);
    if !analysis.privileged_commands.is_empty() {
        let mut exit = Exit::unsandboxed(String::new());
        exit.facts.outside_commands.clone_from(&analysis.privileged_commands);
        finder.add(ExitKind::Privilege, exit);
    }
    finder
}

use efr_protocol::wire::ExitRecord;

/// The rules, applied to one line.
struct Finder<'c> {
    ctx: &'c ExitContext<'c>,
    found: Found,
    /// Some command sends data to a remote, even when it needs no exit (its host is allowed, or expands).
    sends: bool,
}

/// Registries that package managers reach through the proxy.
const PYPI: &[&str] = &["pypi.org", "files.pythonhosted.org"];
const NPM: &[&str] = &["registry.npmjs.org"];
const CRATES: &[&str] = &["crates.io", "index.crates.io", "static.crates.io"];
const GO: &[&str] = &["proxy.golang.org", "sum.golang.org"];
const RUBYGEMS: &[&str] = &["rubygems.org"];

impl Finder<'_> {
    fn add(&mut self, kind: ExitKind, exit: Exit) {
        self.found.add(kind, LINE, exit);
    }

    fn command(&mut self, cmd: &SeenCommand) {
        let privileged = cmd.privileged.is_some();
        // A command run as another user runs outside the sandbox with the privilege exit: what it reaches needs no
        // grant. Only what it does for a judge to weigh is named (an install, a service, a kill).
        if privileged {
            match cmd.name.as_str() {
                "cargo" | "npm" | "pnpm" | "yarn" | "bun" | "pip" | "pip3" | "pipx" | "uv" | "go" | "gem"
                | "python" | "python3" => self.packages(cmd),
                _ => self.local(cmd),
            }
            return;
        }
        match cmd.name.as_str() {
            "curl" | "wget" | "http" | "https" | "xh" | "aria2c" => self.http(cmd),
            "git" => self.git(cmd),
            "ssh" | "mosh" => self.ssh(cmd),
            "scp" | "sftp" | "rsync" => self.copy(cmd),
            "ping" | "ping6" | "traceroute" | "tracepath" | "mtr" | "nc" | "ncat" | "netcat" | "socat" | "telnet"
            | "nmap" | "dig" | "nslookup" | "host" | "whois" | "websocat" | "wscat" => self.raw_network(cmd),
            "gh" | "glab" | "gcloud" | "kubectl" | "helm" | "az" | "doctl" | "heroku" | "flyctl" | "fly" => {
                self.forge(cmd);
            }
            "cargo" | "npm" | "pnpm" | "yarn" | "bun" | "npx" | "pnpx" | "bunx" | "pip" | "pip3" | "pipx" | "uv"
            | "uvx" | "poetry" | "go" | "gem" | "twine" | "python" | "python3" => self.packages(cmd),
            _ => self.local(cmd),
        }
    }

    /// `host` exits for the hosts a command reaches through the proxy, `open_network` for addresses.
    fn reach(&mut self, hosts: &[NamedHost]) {
        let mut grants = Vec::new();
        let mut facts = Vec::new();
        for host in hosts {
            if host.literal_or_local() || host.plain {
                self.add(
                    ExitKind::OpenNetwork,
                    Exit::grants(vec![Grant::OpenNetwork]).hosts(vec![self.ctx.host_fact(host)]),
                );
            } else if !self.ctx.allowed(host) {
                grants.push(host_grant(host));
                facts.push(self.ctx.host_fact(host));
            }
        }
        if !grants.is_empty() {
            self.add(ExitKind::Host, Exit::grants(grants).hosts(facts));
        }
    }

    /// `host` exits for a registry's hosts.
    fn registry(&mut self, hosts: &[&str]) {
        let hosts: Vec<NamedHost> = hosts.iter().map(|h| named(h)).collect();
        self.reach(&hosts);
    }

    /// The writes outside the writable roots and the paths in masked stores.
    fn paths(&mut self, analysis: &LineAnalysis) {
        for write in &analysis.outside_writes {
            let path = &write.path;
            if self.ctx.writable(path) || path.starts_with("/tmp") {
                continue;
            }
            if self.ctx.floor_file(path) {
                self.floor_edit(path.clone());
                continue;
            }
            let kind = if write.delete {
                ExitKind::Delete
            } else {
                ExitKind::Write
            };
            let grant = Grant::Write {
                path: self.ctx.write_grant(path),
            };
            self.add(kind, Exit::grants(vec![grant]).targets(vec![self.ctx.target(path)]));
        }
        // An upload of a masked file holds its unmask already.
        let sent = |path: &std::path::Path| {
            self.found
                .records
                .iter()
                .any(|r| r.kind == ExitKind::Upload && r.targets.iter().any(|t| t.path == path))
        };
        let masked: Vec<&PathBuf> = analysis
            .paths
            .iter()
            .filter(|p| self.ctx.masked_path(p) && !self.ctx.writable(p) && !sent(p))
            .collect();
        for path in masked {
            self.unmask(path);
        }
    }

    /// An edit of a floor file: a write of the file alone, backed up first.
    fn floor_edit(&mut self, path: PathBuf) {
        let mut target = self.ctx.target(&path);
        target.backup_before_write = true;
        let exit = Exit::grants(vec![Grant::Write { path }]).targets(vec![target]);
        self.add(ExitKind::FloorEdit, exit);
    }

    /// A masked store made visible: the grant names the mask that holds `path`.
    fn unmask(&mut self, path: &std::path::Path) {
        let Some(mask) = self.ctx.mask_of(path) else {
            return;
        };
        let target: ExitTarget = self.ctx.target(path);
        self.add(
            ExitKind::Unmask,
            Exit::grants(vec![Grant::Unmask { path: mask }]).targets(vec![target]),
        );
    }

    /// A Unix socket of the host.
    fn socket(&mut self, path: PathBuf) {
        let target = ExitTarget {
            path: path.clone(),
            class: efr_protocol::wire::TargetClass::Socket,
            masked: self.ctx.masked_path(&path),
            backup_before_write: false,
        };
        self.add(
            ExitKind::Socket,
            Exit::grants(vec![Grant::Socket { path }]).targets(vec![target]),
        );
    }
}

/// The host grant of a named host.
fn host_grant(host: &NamedHost) -> Grant {
    Grant::Host {
        host: host.host.clone(),
        port: host.port,
    }
}

/// A host named on port 443.
fn named(host: &str) -> NamedHost {
    NamedHost {
        host: host.to_owned(),
        port: None,
        plain: false,
    }
}
