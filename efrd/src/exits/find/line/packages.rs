//! The exits of package managers: a user-wide install (a write of its prefix and the registry's hosts), a
//! system-wide one (root, with the privilege exit), a publish (an upload of the project), or the registry's hosts.

use std::path::PathBuf;

use efr_protocol::wire::{ExitKind, Grant};

use super::{CRATES, Finder, GO, NPM, PYPI, RUBYGEMS, named};
use crate::exits::find::Exit;
use crate::exits::find::hosts::{NamedHost, url_host};
use efr_policy::SeenCommand;

impl Finder<'_> {
    /// A system package manager: a package installed system-wide runs as root (with the privilege exit); without
    /// one the install fails contained and the model hears the manager's own "are you root?".
    pub(super) fn system_install(&mut self, cmd: &SeenCommand, values: &[&str]) {
        const VERBS: &[&str] = &[
            "install",
            "reinstall",
            "remove",
            "purge",
            "upgrade",
            "dist-upgrade",
            "full-upgrade",
            "autoremove",
            "build-dep",
            "erase",
            "downgrade",
            "in",
            "rm",
            "up",
            "dup",
            "add",
            "del",
            "refresh",
            "uninstall",
        ];
        let first = values.iter().copied().find(|v| !v.starts_with('-'));
        let changes = match cmd.name.as_str() {
            "pacman" => values.iter().any(|v| {
                (v.starts_with("-S") && !v.contains(['s', 'i', 'l', 'g'])) || v.starts_with("-U") || v.starts_with("-R")
            }),
            "dpkg" => values
                .iter()
                .any(|v| matches!(*v, "-i" | "--install" | "-r" | "--remove" | "-P" | "--purge")),
            "rpm" => values
                .iter()
                .any(|v| v.starts_with("-i") || v.starts_with("-U") || v.starts_with("-e")),
            _ => first.is_some_and(|v| VERBS.contains(&v)),
        };
        if !changes || cmd.privileged.is_none() {
            return;
        }
        let target = self.ctx.target(&PathBuf::from("/usr"));
        let exit = Exit::unsandboxed(cmd.privileged.clone().unwrap_or_else(|| cmd.text())).targets(vec![target]);
        self.add(ExitKind::PackageInstall, exit);
    }

    /// A user-wide install: a write of its prefix and the registry's hosts; a privileged one runs as root.
    pub(super) fn user_install(&mut self, cmd: &SeenCommand, prefix: &str, registry: &[&str]) {
        if let Some(outer) = &cmd.privileged {
            let target = self.ctx.target(&PathBuf::from("/usr/local"));
            self.add(
                ExitKind::PackageInstall,
                Exit::unsandboxed(outer.clone()).targets(vec![target]),
            );
            return;
        }
        let Some(home) = self.ctx.home else { return };
        let path = home.join(prefix);
        if self.ctx.writable(&path) {
            self.registry(registry);
            return;
        }
        let mut exit = Exit::grants(vec![Grant::Write { path: path.clone() }]).targets(vec![self.ctx.target(&path)]);
        for host in registry {
            let named = super::named(host);
            if !self.ctx.allowed(&named) {
                exit.grants.push(super::host_grant(&named));
                exit.facts.hosts.push(self.ctx.host_fact(&named));
            }
        }
        self.add(ExitKind::PackageInstall, exit);
    }

    /// Package managers and registries: a user-wide install, a publish (an upload), or the registry's hosts.
    pub(super) fn packages(&mut self, cmd: &SeenCommand) {
        let values: Vec<&str> = cmd.values().collect();
        let operands: Vec<&str> = values.iter().copied().filter(|v| !v.starts_with('-')).collect();
        let has = |flags: &[&str]| values.iter().any(|v| flags.contains(v));
        let sub = operands.first().copied().unwrap_or_default();
        let name = cmd.name.as_str();
        let (name, sub) = match (name, operands.as_slice()) {
            ("python" | "python3", ["pip", sub, ..]) if values.first() == Some(&"-m") => ("pip", *sub),
            ("python" | "python3", _) => return self.local(cmd),
            _ => (name, sub),
        };
        let installs = |subs: &[&str]| subs.contains(&sub);
        if cmd.privileged.is_some() {
            // Run as root: a system-wide install, whatever the manager.
            if installs(&["install", "i", "add", "update", "upgrade", "uninstall", "remove"]) {
                self.user_install(cmd, "", &[]);
            }
            return;
        }
        match name {
            "pip" | "pip3" if installs(&["install"]) && has(&["--user"]) => self.user_install(cmd, ".local", PYPI),
            "pip" | "pip3" if installs(&["install", "download", "index", "wheel"]) => self.reach(&pip_indexes(&values)),
            "pipx" if installs(&["install", "upgrade", "inject", "reinstall", "run", "upgrade-all"]) => {
                self.user_install(cmd, ".local", PYPI);
            }
            "uv" if operands.starts_with(&["tool", "install"]) => self.user_install(cmd, ".local", PYPI),
            "uv" | "poetry" if installs(&["add", "sync", "lock", "install", "update", "tool", "run", "pip"]) => {
                self.registry(PYPI);
            }
            "uvx" => self.registry(PYPI),
            "poetry" | "twine" if installs(&["publish", "upload"]) => self.publish(cmd, &["upload.pypi.org"]),
            "npm" | "pnpm" | "yarn" | "bun" if installs(&["publish"]) => self.publish(cmd, NPM),
            "npm" | "pnpm" | "bun"
                if has(&["-g", "--global"])
                    && installs(&[
                        "install",
                        "i",
                        "add",
                        "update",
                        "up",
                        "uninstall",
                        "remove",
                        "rm",
                        "link",
                    ]) =>
            {
                let prefix = match name {
                    "pnpm" => ".local/share/pnpm",
                    "bun" => ".bun",
                    _ => ".npm-global",
                };
                self.user_install(cmd, prefix, NPM);
            }
            "yarn" if sub == "global" => self.user_install(cmd, ".config/yarn/global", NPM),
            "npm" | "pnpm" | "yarn" | "bun" | "npx" | "pnpx" | "bunx" => {
                if efr_policy::readonly::kinds::network(name, &cmd.args) {
                    self.registry(NPM);
                }
            }
            "cargo" if installs(&["install"]) => self.user_install(cmd, ".cargo", CRATES),
            "cargo" if installs(&["publish"]) => self.publish(cmd, &["crates.io", "static.crates.io"]),
            "cargo"
                if installs(&[
                    "add",
                    "fetch",
                    "update",
                    "search",
                    "build",
                    "check",
                    "test",
                    "run",
                    "generate-lockfile",
                ]) =>
            {
                if efr_policy::readonly::kinds::network(name, &cmd.args) {
                    self.registry(CRATES);
                }
            }
            "go" if installs(&["install"]) => self.user_install(cmd, "go", GO),
            "go" if installs(&["get", "mod"]) => self.registry(GO),
            "gem" if installs(&["install"]) && has(&["--user-install"]) => {
                self.user_install(cmd, ".local/share/gem", RUBYGEMS);
            }
            "gem" if installs(&["push"]) => self.publish(cmd, RUBYGEMS),
            "gem" if installs(&["install", "fetch", "update"]) => self.registry(RUBYGEMS),
            _ => self.local(cmd),
        }
    }

    /// Publishing a package: an upload of the project to a registry (never a project remote), even to a registry
    /// the proxy allows (what leaves is the project).
    fn publish(&mut self, cmd: &SeenCommand, registry: &[&str]) {
        self.sends = true;
        if cmd.privileged.is_some() {
            return;
        }
        let hosts: Vec<super::NamedHost> = registry.iter().map(|h| super::named(h)).collect();
        let facts = hosts.iter().map(|h| self.ctx.host_fact(h)).collect();
        let targets = self.ctx.project_roots.iter().map(|p| self.ctx.target(p)).collect();
        let grants = hosts
            .iter()
            .filter(|h| !self.ctx.allowed(h))
            .map(super::host_grant)
            .collect();
        self.add(ExitKind::Upload, Exit::grants(grants).hosts(facts).targets(targets));
    }
}

/// The index hosts of a pip line: PyPI's, or the host of `-i`/`--index-url` instead, plus each `--extra-index-url`'s
/// (`--flag=url` or `--flag url`); none with `--no-index`. A URL that does not read leaves PyPI's.
fn pip_indexes(values: &[&str]) -> Vec<NamedHost> {
    if values.contains(&"--no-index") {
        return Vec::new();
    }
    let mut index: Option<NamedHost> = None;
    let mut extra: Vec<NamedHost> = Vec::new();
    for (i, value) in values.iter().enumerate() {
        let (flag, url) = match value.split_once('=') {
            Some((flag, url)) if flag.starts_with("--") => (flag, Some(url)),
            _ => (*value, values.get(i + 1).copied()),
        };
        let host = || url.and_then(url_host);
        match flag {
            "-i" | "--index-url" => index = host().or(index),
            "--extra-index-url" => extra.extend(host()),
            _ => {}
        }
    }
    let mut hosts = index.map_or_else(|| PYPI.iter().map(|h| named(h)).collect(), |host| vec![host]);
    hosts.extend(extra);
    hosts
}
