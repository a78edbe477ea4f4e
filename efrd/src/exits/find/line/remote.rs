//! The exits of commands that reach other machines: HTTP clients (hosts, and uploads of files), git, ssh, scp,
//! sftp and rsync, tools that ignore the proxy, and the forges' and clouds' tools.

use std::path::PathBuf;

use efr_protocol::wire::{ExitKind, Grant, HostFact};

use super::{Finder, host_grant, named};
use crate::exits::find::Exit;
use crate::exits::find::hosts::{NamedHost, scp_host, ssh_host, url_host};
use efr_policy::SeenCommand;
use efr_policy::floors::{Place, place};
use efr_policy::readonly::git;
use efr_policy::shell::Word;

impl Finder<'_> {
    /// `curl`, `wget` and the HTTP clients: the hosts of their URLs, and an upload when they send a file.
    pub(super) fn http(&mut self, cmd: &SeenCommand) {
        let mut hosts: Vec<NamedHost> = Vec::new();
        let mut files: Vec<Option<PathBuf>> = Vec::new();
        let mut socket = None;
        let values: Vec<Option<&str>> = cmd.args.iter().map(|w| w.value.as_deref()).collect();
        let mut i = 0;
        while i < values.len() {
            let word = &cmd.args[i];
            let next = values.get(i + 1).copied().flatten();
            let value = values[i].unwrap_or_default();
            let (option, attached) = split_option(value);
            let data = match option {
                "-T" | "--upload-file" | "--post-file" | "--body-file" => DataKind::File,
                "-d" | "--data" | "--data-binary" | "--data-ascii" | "--json" => DataKind::At,
                "--data-urlencode" => DataKind::UrlEncode,
                "-F" | "--form" => DataKind::Form,
                "--unix-socket" | "--abstract-unix-socket" => DataKind::Socket,
                "--url" => DataKind::Url,
                _ => DataKind::None,
            };
            let payload = match (data, attached) {
                (DataKind::None, _) => None,
                (_, Some(attached)) => Some(attached),
                (_, None) => {
                    i += 1;
                    Some(next.unwrap_or_default())
                }
            };
            match (data, payload) {
                (DataKind::File, Some(file)) => files.push(self.data_file(file, cmd, word)),
                (DataKind::At, Some(text)) => {
                    if let Some(file) = text.strip_prefix('@').filter(|f| *f != "-") {
                        files.push(self.data_file(file, cmd, word));
                    }
                }
                (DataKind::UrlEncode, Some(text)) => {
                    if let Some((_, file)) = text
                        .split_once('@')
                        .filter(|(name, f)| !name.contains('=') && *f != "-")
                    {
                        files.push(self.data_file(file, cmd, word));
                    }
                }
                (DataKind::Form, Some(text)) => {
                    let file = text.split_once("=@").or_else(|| text.split_once("=<"));
                    if let Some((_, file)) = file {
                        let file = file.split(';').next().unwrap_or_default();
                        files.push(self.data_file(file, cmd, word));
                    }
                }
                (DataKind::Socket, Some(path)) => socket = Some(PathBuf::from(path)),
                (DataKind::Url, Some(url)) => hosts.extend(url_host(url)),
                _ => {
                    if values[i].is_none() && word.source.contains("://") {
                        // A URL that expands: its host is not known until it runs; the proxy reports it.
                    } else if let Some(host) = url_host(value) {
                        hosts.push(host);
                    }
                }
            }
            i += 1;
        }
        if let Some(path) = socket {
            self.socket(path);
            return;
        }
        if files.is_empty() {
            self.reach(&hosts);
        } else {
            self.upload(&hosts, &files, None);
        }
    }

    /// A file that a command sends: placed against its directory, with `~/` of the home (also after `@`, where
    /// bash does not expand it and the model usually means it). `None`: a file efr cannot place.
    fn data_file(&self, file: &str, cmd: &SeenCommand, word: &Word) -> Option<PathBuf> {
        word.value.as_ref()?;
        if let Some(rest) = file.strip_prefix("~/") {
            return self.ctx.home.map(|home| home.join(rest));
        }
        match place(&Word::literal(file), &cmd.cwd, self.ctx.home) {
            Place::At(paths) => paths.into_iter().next(),
            Place::Unknown => None,
        }
    }

    /// An upload: the destinations' host grants (none for one that runs outside), `unmask` of each masked file.
    /// `outside`: the command that runs unsandboxed because it needs the user's identity (a push, scp).
    pub(super) fn upload(&mut self, hosts: &[NamedHost], files: &[Option<PathBuf>], outside: Option<String>) {
        self.sends = true;
        let mut exit = Exit::default();
        for file in files.iter().flatten() {
            let target = self.ctx.target(file);
            if let Some(mask) = self.ctx.mask_of(file) {
                exit.grants.push(Grant::Unmask { path: mask });
            }
            exit.targets.push(target);
        }
        let contained = outside.is_none();
        for host in hosts {
            if contained && (host.literal_or_local() || host.plain) {
                self.add(
                    ExitKind::OpenNetwork,
                    Exit::grants(vec![Grant::OpenNetwork]).hosts(vec![self.ctx.host_fact(host)]),
                );
                continue;
            }
            exit.facts.hosts.push(self.ctx.host_fact(host));
            if contained && !self.ctx.allowed(host) {
                exit.grants.push(host_grant(host));
            }
        }
        if let Some(command) = outside {
            exit.unsandboxed = true;
            exit.facts.outside_commands.push(command);
        }
        if exit.grants.is_empty() && !exit.unsandboxed {
            return;
        }
        self.add(ExitKind::Upload, exit);
    }

    /// git: a push is an upload (outside: it needs the user's identity); a fetch, pull or clone reaches its
    /// remote's hosts, over ssh from outside.
    pub(super) fn git(&mut self, cmd: &SeenCommand) {
        let sub = git::subcommand(&cmd.args).or_else(|| subcommand_after_config(cmd));
        match sub {
            Some("config") => self.git_config(cmd),
            // `git -c x push` is not read by the policy's git reader, which stops at `-c`; the subcommand still is.
            Some("push" | "fetch" | "pull" | "clone" | "ls-remote") => self.git_network(cmd, sub),
            _ if efr_policy::readonly::kinds::network("git", &cmd.args) => self.git_network(cmd, sub),
            _ => {}
        }
    }

    /// A git command that reaches a remote.
    fn git_network(&mut self, cmd: &SeenCommand, sub: Option<&str>) {
        match sub {
            Some("push") => {
                let hosts = self.git_hosts(cmd);
                self.upload(&hosts, &[], Some(cmd.text()));
            }
            _ => {
                let urls: Vec<&str> = cmd.values().filter(|v| remote_url(v)).collect();
                let hosts = self.git_hosts(cmd);
                // ssh (`ssh://`, `git@host:path`) needs the user's keys; the rest goes through the proxy or not at all.
                let ssh =
                    |url: &&str| url.starts_with("ssh://") || url.starts_with("git+ssh://") || !url.contains("://");
                if urls.iter().any(ssh) {
                    self.outside(cmd, &hosts);
                } else {
                    self.reach(&hosts);
                }
            }
        }
    }

    /// The hosts a git command reaches: those of the URLs it names, else the project's remotes.
    fn git_hosts(&self, cmd: &SeenCommand) -> Vec<NamedHost> {
        let named: Vec<NamedHost> = cmd
            .values()
            .filter(|v| remote_url(v))
            .filter_map(|v| if v.contains("://") { url_host(v) } else { scp_host(v) })
            .collect();
        if !named.is_empty() {
            return named;
        }
        self.ctx.project_remotes.iter().map(|h| super::named(h)).collect()
    }

    /// `git config --global …` writes `~/.gitconfig`, a floor file.
    fn git_config(&mut self, cmd: &SeenCommand) {
        let global = cmd.values().any(|v| v == "--global");
        let reads = cmd.values().any(|v| {
            matches!(
                v,
                "--get" | "--get-all" | "--list" | "-l" | "--get-regexp" | "get" | "list"
            )
        });
        if let (true, false, Some(home)) = (global, reads, self.ctx.home) {
            self.floor_edit(home.join(".gitconfig"));
        }
    }

    /// ssh and mosh: outside (the user's keys and agent), and `open_network` to an address.
    pub(super) fn ssh(&mut self, cmd: &SeenCommand) {
        const VALUED: &str = "bcDEeFIiJLlmOopQRSWwB";
        let mut port = None;
        let mut destination = None;
        let mut skip = false;
        let values: Vec<&str> = cmd.args.iter().map(|w| w.value.as_deref().unwrap_or("?")).collect();
        for (i, value) in values.iter().enumerate() {
            if skip {
                skip = false;
                continue;
            }
            if let Some(letters) = value.strip_prefix('-') {
                if let Some(rest) = letters.strip_prefix('p') {
                    port = if rest.is_empty() {
                        values.get(i + 1)
                    } else {
                        Some(&rest)
                    }
                    .and_then(|p| p.parse().ok());
                }
                skip = letters.len() == 1 && VALUED.contains(letters);
                continue;
            }
            destination = Some(*value);
            break;
        }
        let Some(host) = destination.and_then(|d| ssh_host(d, port)) else {
            return;
        };
        if host.literal_or_local() {
            self.add(
                ExitKind::OpenNetwork,
                Exit::grants(vec![Grant::OpenNetwork]).hosts(vec![self.ctx.host_fact(&host)]),
            );
        }
        self.outside(cmd, &[host]);
    }

    /// scp, sftp and rsync: to a remote is an upload, from one is outside; rsync's own protocol is open network.
    pub(super) fn copy(&mut self, cmd: &SeenCommand) {
        let valued: &[&str] = match cmd.name.as_str() {
            "rsync" => &["-e", "-f", "-B", "-T", "--rsh"],
            _ => &["-c", "-F", "-i", "-l", "-o", "-P", "-S", "-J", "-D", "-X"],
        };
        let mut operands: Vec<&Word> = Vec::new();
        let mut skip = false;
        for word in &cmd.args {
            let value = word.value.as_deref().unwrap_or_default();
            if skip {
                skip = false;
            } else if value.starts_with('-') {
                skip = valued.contains(&value);
            } else {
                operands.push(word);
            }
        }
        let remote = |w: &Word| w.value.as_deref().and_then(scp_host);
        if cmd.name == "sftp" {
            let hosts: Vec<NamedHost> = operands
                .iter()
                .filter_map(|w| w.value.as_deref())
                .filter_map(|v| ssh_host(v, None))
                .take(1)
                .collect();
            self.outside(cmd, &hosts);
            return;
        }
        let Some((last, sources)) = operands.split_last() else {
            return;
        };
        if cmd.values().any(|v| v.starts_with("rsync://")) {
            let hosts: Vec<HostFact> = operands
                .iter()
                .filter_map(|w| w.value.as_deref().and_then(url_host))
                .map(|h| self.ctx.host_fact(&h))
                .collect();
            self.add(
                ExitKind::OpenNetwork,
                Exit::grants(vec![Grant::OpenNetwork]).hosts(hosts),
            );
            return;
        }
        match remote(last) {
            Some(host) => {
                let files: Vec<Option<PathBuf>> = sources
                    .iter()
                    .filter(|w| remote(w).is_none())
                    .map(|w| match place(w, &cmd.cwd, self.ctx.home) {
                        Place::At(paths) => paths.into_iter().next(),
                        Place::Unknown => None,
                    })
                    .collect();
                self.upload(&[host], &files, Some(cmd.text()));
            }
            None => {
                let hosts: Vec<NamedHost> = sources.iter().filter_map(|w| remote(w)).collect();
                if !hosts.is_empty() {
                    self.outside(cmd, &hosts);
                }
            }
        }
    }

    /// Tools that do not honour the proxy: the whole network, with the hosts the line names.
    pub(super) fn raw_network(&mut self, cmd: &SeenCommand) {
        let hosts: Vec<HostFact> = cmd
            .values()
            .filter(|v| !v.starts_with('-') && (v.contains('.') || v.contains(':') || *v == "localhost"))
            .filter_map(|v| url_host(v).or_else(|| NamedHost::plain(v)))
            .map(|h| self.ctx.host_fact(&h))
            .collect();
        self.add(
            ExitKind::OpenNetwork,
            Exit::grants(vec![Grant::OpenNetwork]).hosts(hosts),
        );
    }

    /// Forges' and clouds' tools: outside (their tokens are the user's); `gh gist create` uploads its files; `gh
    /// auth token` prints a secret, which is what `unmask` is for.
    pub(super) fn forge(&mut self, cmd: &SeenCommand) {
        let values: Vec<&str> = cmd.values().collect();
        let host = match cmd.name.as_str() {
            "gh" => Some("github.com"),
            "glab" => Some("gitlab.com"),
            _ => None,
        };
        let hosts: Vec<NamedHost> = host.map(named).into_iter().collect();
        if cmd.name == "gh" && values.starts_with(&["gist", "create"]) {
            let files: Vec<Option<PathBuf>> = cmd.args[2..]
                .iter()
                .filter(|w| !w.value.as_deref().is_some_and(|v| v.starts_with('-')))
                .map(|w| match place(w, &cmd.cwd, self.ctx.home) {
                    Place::At(paths) => paths.into_iter().next(),
                    Place::Unknown => None,
                })
                .collect();
            self.upload(&hosts, &files, Some(cmd.text()));
            return;
        }
        if cmd.name == "gh"
            && values.first() == Some(&"auth")
            && let Some(store) = self.ctx.home.map(|h| h.join(".config/gh"))
        {
            self.unmask(&store);
        }
        self.outside(cmd, &hosts);
    }

    /// An outside exit: the command runs unsandboxed, as the user.
    pub(super) fn outside(&mut self, cmd: &SeenCommand, hosts: &[NamedHost]) {
        let facts = hosts.iter().map(|h| self.ctx.host_fact(h)).collect();
        self.add(ExitKind::Outside, Exit::unsandboxed(cmd.text()).hosts(facts));
    }
}

/// What an option of an HTTP client carries.
#[derive(Clone, Copy)]
enum DataKind {
    None,
    /// A file to send (`-T f`).
    File,
    /// Data, or `@file`.
    At,
    /// `--data-urlencode`'s `@file` or `name@file`.
    UrlEncode,
    /// A form field, `name=@file` or `name=<file`.
    Form,
    /// A Unix socket to connect to.
    Socket,
    /// A URL.
    Url,
}

/// An option and its attached value: `--data=x` is (`--data`, `x`), `-d@f` is (`-d`, `@f`), `-T` is (`-T`, none).
fn split_option(value: &str) -> (&str, Option<&str>) {
    if let Some((name, rest)) = value.split_once('=').filter(|(n, _)| n.starts_with("--")) {
        return (name, Some(rest));
    }
    if value.starts_with('-') && !value.starts_with("--") && value.len() > 2 {
        let (name, rest) = value.split_at(2);
        if matches!(name, "-d" | "-T" | "-F") {
            return (name, Some(rest));
        }
    }
    (value, None)
}

/// Whether a git operand is a remote's URL (not a remote's name or a refspec).
fn remote_url(value: &str) -> bool {
    value.contains("://") || (scp_host(value).is_some() && value.contains('@'))
}

/// The subcommand of a git line whose global options the policy's git reader stops at (`-c`, `--config-env`): the
/// first word that is not an option or an option's value.
fn subcommand_after_config(cmd: &SeenCommand) -> Option<&str> {
    let mut values = cmd.values();
    while let Some(value) = values.next() {
        match value {
            "-c" | "-C" | "--config-env" | "--git-dir" | "--work-tree" | "--namespace" => {
                values.next();
            }
            v if v.starts_with('-') => {}
            v => return Some(v),
        }
    }
    None
}
